"""SIGKILL resume, measured: does a training run killed at a random moment and started again
end exactly where an uninterrupted run ends?

In a temporary project copy (``tests/pipelines/kedro_project.py`` plus a snapshot of the code;
``conf/test``, ``training.rl.updates=<updates>``) the prerequisite pipelines run once, then
``kedro run --pipeline training`` runs uninterrupted: its final ``training_history`` and the
SHA-256 of its ``rl_policy`` tensors are the reference. Each of ``kills`` seeded kill points
is an update k (uniform) and a moment inside it (a uniform fraction of the run's shortest
update after checkpoint k-1 appeared, or after the training node started for k = 1): the
checkpoints are cleared, the command starts, its whole process group (Python and the JVM)
is SIGKILLed at that point, and it starts again; the final history (``charts/update_seconds``
aside) and weights must equal the reference's bit for bit (on CPU with the same seeds
nothing may differ). A last trial kills the run while checkpoint 2 is being written (its
staging directory exists): checkpoint 1 must be complete and loadable, the rerun identical,
and no staging directory left.

Time lost by a kill = the work redone (from the last complete checkpoint, or the training
node's start, to the kill) + the restart (the rerun's start-up until its training node
starts), each timed within its own attempt, so that the load of a shared machine, which
differs between attempts, does not enter.

Run from the project root (about 6-9 minutes on 2 cores with the defaults):

    HINDSIGHT_TORCH_THREADS=1 python benchmarks/reliability_resume.py --kills 5 --seed 0
"""

from __future__ import annotations

GROUP = "reliability"
REPRODUCES = ("docs/reliability.md#reliability",)
MEASURED = "6-9 min on a shared 2-core machine with the defaults (docs/reliability.md; CPU not named)"
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/reliability.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "pipelines"))

from kedro_project import VERSION_PATTERN, KedroProject  # noqa: E402

PREREQUISITES = "ingestion,behaviour_cloning,skills,stage1"
TRAINING_STARTED = "checkpoints in"
"""A log line of the training node (``RL (<algorithm>) checkpoints in <directory>``)."""
WALL_CLOCK_COLUMNS = ("charts/update_seconds",)
"""With every ``time/*`` phase timing: what differs between two runs by nature."""
CHECKPOINT_ROOT = Path("data/06_models/rl_checkpoints")


@dataclass
class Attempt:
    """One ``kedro run`` subprocess."""

    returncode: int
    seconds: float
    killed_at: float | None = None
    """Seconds after the start when the process group was killed (None: ran to the end)."""
    training_started: float | None = None
    """Seconds after the start when the training node logged its checkpoint directory."""
    checkpoints: dict[int, float] = field(default_factory=dict)
    """Update -> seconds after the start when its checkpoint was first seen complete."""
    log: str = ""
    partial_seen: list[str] = field(default_factory=list)
    """Staging directories present at the moment of the kill (a checkpoint being written)."""

    def redone(self) -> float:
        """Seconds of work the kill threw away (since the last checkpoint or the training start)."""
        anchors = [t for t in self.checkpoints.values() if t <= self.killed_at] + [self.training_started or 0.0]
        return self.killed_at - max(anchors)


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("HINDSIGHT_TORCH_THREADS", "1")
    env["KEDRO_DISABLE_TELEMETRY"] = "1"
    env["COLUMNS"] = "400"  # rich logging: one log record per line
    return env


def _checkpoint_runs(project: Path) -> list[Path]:
    root = project / CHECKPOINT_ROOT
    return [run for run in root.iterdir() if run.is_dir()] if root.is_dir() else []


def _partials(project: Path, update: int | None = None) -> list[str]:
    """Checkpoint staging directories (``.update_<N>.partial-*``; of ``update`` if given)."""
    pattern = f".update_{update:06d}.partial-*" if update is not None else ".update_*.partial-*"
    return [f"{run.name}/{p.name}" for run in _checkpoint_runs(project) for p in run.glob(pattern)]


def _complete_checkpoints(project: Path) -> list[int]:
    """Update numbers of the complete checkpoints on disk."""
    return [int(p.name[7:]) for run in _checkpoint_runs(project) for p in run.glob("update_*") if (p / "state.pt").exists()]


KillRule = Callable[["Attempt", float], bool]
"""``(attempt so far, seconds since its start) -> kill now?``"""


def kedro_run(project: Path, args: list[str], kill_when: KillRule | None = None, poll_s: float = 0.02) -> Attempt:
    """Run ``kedro run --env test <args>`` in ``project`` (a new session, stdout and stderr to
    a log file); SIGKILL its whole process group (Python and the JVM) as soon as
    ``kill_when`` says so."""
    log_path = project / f"kedro-run-{time.time_ns()}.log"
    started = time.perf_counter()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            ["kedro", "run", "--env", "test", *args], cwd=project, env=_environment(),
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        attempt = Attempt(returncode=0, seconds=0.0)
        while process.poll() is None:
            now = time.perf_counter() - started
            if attempt.training_started is None and TRAINING_STARTED in log_path.read_text(errors="replace"):
                attempt.training_started = now
            for update in _complete_checkpoints(project):
                attempt.checkpoints.setdefault(update, now)
            if kill_when is not None and kill_when(attempt, now):
                os.killpg(process.pid, signal.SIGKILL)
                attempt.killed_at, attempt.partial_seen = now, _partials(project)
                break
            time.sleep(poll_s)
        attempt.returncode = process.wait()
    attempt.seconds = time.perf_counter() - started
    attempt.log = log_path.read_text(errors="replace")
    log_path.unlink()
    if attempt.killed_at is not None:
        _wait_for_group_exit(process.pid)
    return attempt


def in_update(update: int, seconds: float) -> KillRule:
    """Kill ``seconds`` into update ``update``: after checkpoint ``update - 1`` is complete (after
    the training node started, for the first update)."""

    def rule(attempt: Attempt, now: float) -> bool:
        anchor = attempt.training_started if update == 1 else attempt.checkpoints.get(update - 1)
        return anchor is not None and now >= anchor + seconds

    return rule


def during_checkpoint_write(project: Path, update: int) -> KillRule:
    """Kill while checkpoint ``update`` is being written (its staging directory exists)."""
    return lambda attempt, now: bool(_partials(project, update))


def after_checkpoint(project: Path, update: int) -> KillRule:
    """Kill as soon as checkpoint ``update`` is complete on disk."""
    return lambda attempt, now: update in attempt.checkpoints


def _wait_for_group_exit(pgid: int, timeout: float = 10.0) -> None:
    """Wait until no process of the killed group is left (the JVM included)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise RuntimeError(f"processes of group {pgid} survived SIGKILL for {timeout} s")


def newest_version(project: Path, dataset: str) -> Path:
    """The newest complete version of a versioned dataset (``"<layer>/<name>"``)."""
    name, root = Path(dataset).name, project / "data" / dataset
    versions = sorted(p for p in root.glob("*") if VERSION_PATTERN.match(p.name) and (p / name).exists())
    if not versions:
        raise FileNotFoundError(f"no version of {dataset} under {project / 'data'}")
    return versions[-1] / name


def weights_digest(policy_dir: Path) -> str:
    """SHA-256 of every tensor of a saved policy (names, dtypes, shapes and bytes)."""
    import torch
    from safetensors.torch import load_file

    digest = hashlib.sha256()
    files = sorted(policy_dir.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no safetensors weights in {policy_dir}")
    tensors = {name: t for path in files for name, t in load_file(str(path)).items()}
    for name in sorted(tensors):
        tensor = tensors[name].contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}".encode())
        digest.update(tensor.view(-1).view(dtype=torch.uint8).numpy().tobytes())
    return digest.hexdigest()


@dataclass
class Outcome:
    """The final outputs of a training run: its history and its weights' digest."""

    history: object
    weights: str


def final_outcome(project: Path, wall_clock: bool = False) -> Outcome:
    """The newest ``training_history`` (without its wall-clock column unless asked) and the
    digest of the newest ``rl_policy``."""
    import pandas as pd

    history = pd.read_parquet(newest_version(project, "07_model_output/training_history.parquet"))
    if not wall_clock:
        history = history.drop(columns=[c for c in history if c in WALL_CLOCK_COLUMNS or c.startswith("time/")]).reset_index(drop=True)
    return Outcome(history=history, weights=weights_digest(newest_version(project, "06_models/rl_policy")))


def compare(outcome: Outcome, reference: Outcome) -> str:
    """"identical" (history exactly equal, same weights digest) or what differs."""
    import numpy as np
    import pandas as pd

    if list(outcome.history.columns) != list(reference.history.columns) or len(outcome.history) != len(reference.history):
        return f"different history shape/columns: {outcome.history.shape} vs {reference.history.shape}"
    try:
        pd.testing.assert_frame_equal(outcome.history, reference.history, check_exact=True)
        same_history = True
    except AssertionError:
        same_history = False
    if same_history and outcome.weights == reference.weights:
        return "identical"
    numeric = reference.history.select_dtypes("number").columns
    gap = np.nanmax(np.abs(outcome.history[numeric].to_numpy(float) - reference.history[numeric].to_numpy(float)))
    return f"NOT identical (history max |diff| {gap:.3g}; weights {'same' if outcome.weights == reference.weights else 'differ'})"


def clear_checkpoints(project: Path) -> None:
    shutil.rmtree(project / CHECKPOINT_ROOT, ignore_errors=True)


def checkpoint_intact_after_kill(project: Path) -> str:
    """After a kill during a checkpoint write: is the latest complete checkpoint loadable?"""
    from hindsight.policy.model import load_policy
    from hindsight.training.checkpoint import latest_checkpoint, load_training_state

    runs = _checkpoint_runs(project)
    if len(runs) != 1:
        return f"expected one checkpoint run directory, found {len(runs)}"
    latest = latest_checkpoint(runs[0])
    if latest is None:
        return "no complete checkpoint (the kill came during the first write)"
    state = load_training_state(latest)
    load_policy(latest / "policy", device="cpu")
    return f"{latest.name} complete and loadable (update {state.update}, {len(state.extra.get('history', []))} history rows)"


def kill_during_checkpoint_write(project: Path, params: str, reference: Outcome, update: int) -> str:
    """Kill a run while it writes checkpoint ``update``; check the previous checkpoint, then
    rerun and compare with ``reference``."""
    clear_checkpoints(project)
    killed = kedro_run(
        project, ["--pipeline", "training", "--params", params], during_checkpoint_write(project, update), poll_s=0.002
    )
    if killed.killed_at is None:
        return f"not caught (no write of checkpoint {update} seen before the run ended)"
    intact = checkpoint_intact_after_kill(project)
    rerun = kedro_run(project, ["--pipeline", "training", "--params", params])
    if rerun.returncode != 0:
        return f"rerun failed (rc {rerun.returncode})"
    verdict = compare(final_outcome(project), reference)
    left = len(_partials(project, update))
    return (
        f"killed with {killed.partial_seen[0]} half-written; {intact}; rerun {_resumed_from(rerun.log)}: {verdict}; "
        f"{left} staging directories left after the rerun"
    )


def snapshot_source(project: Path) -> None:
    """Copy the ``hindsight`` package into the project's ``src/``: ``kedro run`` puts that
    folder first on ``sys.path``, so every run of a measurement uses the code as it was at
    its start, whatever happens to the working tree meanwhile."""
    shutil.copytree(ROOT / "src" / "hindsight", project / "src" / "hindsight", ignore=shutil.ignore_patterns("__pycache__"))


def prepare_project(directory: Path, params: str, prepared: Path | None = None) -> Path:
    """A project copy (with a snapshot of the code) with the prerequisite pipelines run once,
    or with the catalog of ``prepared`` (a project whose prerequisites ran; its training
    checkpoints cleared, so that the reference run starts afresh)."""
    if prepared is not None:
        KedroProject.copy_of(prepared, directory)
        snapshot_source(directory)
        clear_checkpoints(directory)
        return directory
    KedroProject(directory)
    snapshot_source(directory)
    attempt = kedro_run(directory, ["--pipelines", PREREQUISITES, "--params", params])
    if attempt.returncode != 0:
        raise RuntimeError(f"prerequisite pipelines failed (rc {attempt.returncode}):\n{attempt.log[-4000:]}")
    return directory


def run_until_done(project: Path, params: str, kill_when: KillRule | None = None) -> tuple[Attempt, Attempt | None]:
    """A training run (killed when ``kill_when`` says) and, if it was killed, its rerun."""
    first = kedro_run(project, ["--pipeline", "training", "--params", params], kill_when)
    if first.killed_at is None:
        if first.returncode != 0:
            raise RuntimeError(f"training failed (rc {first.returncode}):\n{first.log[-4000:]}")
        return first, None
    rerun = kedro_run(project, ["--pipeline", "training", "--params", params])
    if rerun.returncode != 0:
        raise RuntimeError(f"rerun after a kill failed (rc {rerun.returncode}):\n{rerun.log[-4000:]}")
    return first, rerun


def measure(
    kills: int = 5, seed: int = 0, updates: int = 6, workdir: str | None = None, prepared: Path | None = None, params: str = ""
) -> list[tuple[str, str]]:
    """Kill ``kills`` training runs at seeded random points (and one during a checkpoint
    write), rerun each and compare with an uninterrupted run (``params``: more ``--params``
    of every run; ``prepared``: ``prepare_project``'s).

    Returns:
        ``(figure, value)`` pairs; ``identical resumes`` is ``k/N`` over the kills that
        landed, ``kill during checkpoint write`` says how that trial went.
    """
    params = ",".join([f"training.rl.updates={updates}", *([params] if params else [])])
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="reliability_resume_", dir=workdir) as tmp:
        project = prepare_project(Path(tmp) / "project", params, prepared)
        reference_run, _ = run_until_done(project, params)
        reference, shortest = final_outcome(project), min(final_outcome(project, wall_clock=True).history[WALL_CLOCK_COLUMNS[0]])
        points = sorted((rng.randint(1, updates), round(rng.uniform(0.0, shortest), 2)) for _ in range(kills))
        rows, identical, landed, lost = [], 0, 0, []
        for update, seconds in points:
            clear_checkpoints(project)
            killed, rerun = run_until_done(project, params, in_update(update, seconds))
            verdict = compare(final_outcome(project), reference)
            if rerun is None:
                rows.append(f"update {update} + {seconds:.1f}s: not killed (the run finished first): {verdict}")
                continue
            landed += 1
            identical += verdict == "identical"
            lost.append((killed.redone(), rerun.training_started or rerun.seconds))
            rows.append(
                f"update {update} + {seconds:.1f}s -> {_resumed_from(rerun.log)}: {verdict}; "
                f"lost {sum(lost[-1]):.1f}s ({lost[-1][0]:.1f}s redone + {lost[-1][1]:.1f}s restart)"
            )
        write_verdict = kill_during_checkpoint_write(project, params, reference, update=2)
    totals = [sum(pair) for pair in lost]
    figures = [
        ("uninterrupted training run", f"{reference_run.seconds:.1f}s ({updates} updates; shortest update {shortest:.1f}s)"),
        ("identical resumes", f"{identical}/{landed}"),
        ("kills that landed inside training", f"{landed} of {kills}"),
        ("kill points (update + seconds into it)", ", ".join(f"{u}+{s:.1f}s" for u, s in points)),
        ("time lost per kill (s)", ", ".join(f"{x:.1f}" for x in totals) + f" (mean {sum(totals) / max(len(totals), 1):.1f})"),
    ]
    figures += [(f"kill {i + 1}", row) for i, row in enumerate(rows)]
    figures.append(("kill during checkpoint write", write_verdict))
    return figures


def _resumed_from(log: str) -> str:
    """"resumed at update N" from a rerun's log, or "started afresh"."""
    for line in log.splitlines():
        if "Resuming RL from" in line:
            return "resumed at update " + line.split("(update")[-1].split(")")[0].strip()
    return "started afresh"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--updates", type=int, default=6, help="RL updates of the test configuration's run")
    parser.add_argument("--params", default="", help="more kedro --params of every run (e.g. training.rl.tasks_per_update=1)")
    parser.add_argument("--prepared", type=Path, help="a project whose prerequisite pipelines ran: its catalog is copied instead")
    args = parser.parse_args()
    figures = measure(kills=args.kills, seed=args.seed, updates=args.updates, prepared=args.prepared, params=args.params)
    for label, value in figures:
        print(f"{label}: {value}")
    done, landed = (int(x) for x in dict(figures)["identical resumes"].split("/"))
    sys.exit(0 if done == landed > 0 and ": identical;" in dict(figures)["kill during checkpoint write"] else 1)


if __name__ == "__main__":
    main()
