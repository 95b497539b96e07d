"""Where a ``kedro run`` spends its time: per node and per phase, from a sampling profile.

Runs ``kedro run`` (any arguments after ``--`` are passed on; default: the embedded default
job) under ``py-spy`` (a sampling profiler: the run itself is not instrumented and runs at
its normal speed), then attributes every sample of the main thread to

- the Kedro node whose function is on the stack (else "outside nodes": the start-up's
  imports, session and catalog, dataset loads and saves, hooks), and
- a phase, by the innermost project or library frame that names one (``PHASES``, first match
  from the top of the stack): the environment's step, generation (the rollout engine's
  decoding), re-scoring (log-probs of recorded samples: SEED's skill-augmented pass, the
  reference, the old policy), the update (forward and backward of a training loss, the
  optimizer), tokenisation, dataset and checkpoint I/O, MLflow, and the rest.

It prints the table (seconds and share of the run, slowest node first), the command's
wall time, the run's own node table with its peak memory (Python and the JVM together,
``hindsight.hooks.resources``), and the CPU model, and writes the
raw samples next to ``--out`` for a flame graph (``py-spy``'s raw format, readable by
speedscope and inferno). It is the tool for the next regression: run it before and after a
change on the same machine.

    python benchmarks/profile_run.py                       # the default run (about 7 min)
    python benchmarks/profile_run.py -- --env test         # the test configuration
    python benchmarks/profile_run.py --raw data/profile.raw   # re-read a recorded profile

Needs ``py-spy`` (``pip install py-spy==0.4.1``; it reads the process's memory, so it needs
ptrace rights: root, or ``kernel.yama.ptrace_scope=0``).
"""

from __future__ import annotations

GROUP = "run-time"
REPRODUCES = (
    "docs/results.md#the-default-run-tiny-without-the-valid-action-list",
    "docs/benchmarks.md#the-default-run",
)
MEASURED = "434 s for the default run under py-spy, on an idle 2-core AMD EPYC without native bf16"
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/results.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import collections
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RATE = 50
"""Samples per second."""

IMPORTS = ("_find_and_load", "<frozen importlib")

LEAF_PHASES: list[tuple[str, tuple[str, ...]]] = [
    # (phase, frame substrings), matched from the innermost frame outwards: where the
    # sample's time went whatever called it.
    ("environment step", ("hindsight/envs/", "textworld_express", "scienceworld/", "py4j/")),
    ("tokenisation", ("tokenizers/", "tokenization_utils", "hindsight/policy/encoding.py", "hindsight/policy/prompts.py")),
    ("MLflow", ("mlflow/",)),
    ("checkpoint and dataset I/O", ("safetensors", "save_pretrained", "from_pretrained", "pyarrow", "kedro_datasets", "hindsight/datasets/")),
    ("optimizer", ("torch/optim/", "clip_grad_norm")),
]

OWNER_PHASES: list[tuple[str, tuple[str, ...]]] = [
    # (phase, frame substrings), matched from the outermost frame inwards: which activity
    # the model's compute served (a log-prob forward inside an SFT step is the update).
    ("update (forward + backward)", ("train_sft (", "update_policy (", "hindsight/training/update.py", "hindsight/training/espo_update.py")),
    ("re-scoring (no gradient)", ("hindsight/training/distillation.py", "hindsight/policy/prefix_scoring.py", "hindsight/stage1/premise.py", "score_batch (", "old_logprobs", "reference_logprobs")),
    ("generation (rollouts, skills)", ("run_rollouts (", "hindsight/policy/generation.py", "hindsight/policy/cached_generation.py", "hindsight/skills/compact_decoding.py", "write_skills (")),
]

KEDRO_NODE_RUN = "kedro/pipeline/node.py"
OUTSIDE = "outside nodes (start-up, loads, saves, hooks)"
FRAME = re.compile(r"^(?P<func>[\w<>]+) \((?P<file>[^:]*):\d+\)$")


def phase_of(frames: list[str]) -> str:
    """The phase of one stack (outermost frame first)."""
    if any(needle in frame for frame in frames for needle in IMPORTS):
        return "imports"
    for frame in reversed(frames):
        for phase, needles in LEAF_PHASES:
            if any(needle in frame for needle in needles):
                return phase
    for frame in frames:
        for phase, needles in OWNER_PHASES:
            if any(needle in frame for needle in needles):
                return phase
    return "other"


def node_of(frames: list[str]) -> str:
    """The Kedro node of one stack: the first project frame below Kedro's ``Node.run``
    (``<stage>.<function>`` for a pipeline's ``nodes.py``, else ``<module>.<function>``)."""
    last = max((i for i, frame in enumerate(frames) if KEDRO_NODE_RUN in frame), default=None)
    if last is None:
        return OUTSIDE
    for frame in frames[last + 1 :]:
        match = FRAME.match(frame.strip())
        if not match or "hindsight/" not in match["file"]:
            continue
        path = match["file"].split("hindsight/", 1)[1].removesuffix(".py").split("/")
        where = path[1] if path[0] == "pipelines" and len(path) > 2 else ".".join(path)
        return f"{where}.{match['func']}"
    return "kedro (node wrapper)"


def read_samples(raw: Path) -> list[tuple[list[str], int]]:
    """(frames outermost first, count) per line of py-spy's raw (collapsed) format, the
    main thread's only (helper threads wait on sockets and timers)."""
    samples = []
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [f for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        if frames and frames[0].startswith("_bootstrap ("):  # a helper thread (py4j, samplers)
            continue
        samples.append((frames, int(count)))
    return samples


def attribute(samples: list[tuple[list[str], int]]) -> dict[str, collections.Counter]:
    """Sample counts per node, then per phase."""
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for frames, count in samples:
        table[node_of(frames)][phase_of(frames)] += count
    return table


def cpu_model() -> str:
    """The CPU's model name, whether it does bf16 natively (``has_native_bf16``, the test
    the trainers use) and its core count."""
    import torch

    from hindsight.policy.model import has_native_bf16

    model = platform.processor() or "unknown CPU"
    try:
        model = re.search(r"model name\s*:\s*(.*)", Path("/proc/cpuinfo").read_text())[1]
    except (OSError, TypeError):
        pass
    bf16 = "native bf16" if has_native_bf16(torch.device("cpu")) else "no native bf16"
    return f"{model}, {bf16}, {os.cpu_count()} cores"


def print_table(table: dict[str, collections.Counter], wall_s: float | None, rate: int) -> None:
    total = sum(sum(c.values()) for c in table.values())
    if total == 0:
        raise SystemExit("the profile holds no sample of the main thread: was the run too short, or py-spy denied ptrace?")
    print(f"\nCPU: {cpu_model()}")
    if wall_s is not None:
        print(f"wall time of the whole command: {wall_s:.0f} s ({wall_s / 60:.1f} min)")
    print(f"sampled (main thread, {rate} Hz): {total / rate:.0f} s\n")
    print(f"| {'node':<40} | {'s':>6} | {'share':>5} | phases (s) |")
    print(f"|{'-' * 42}|{'-' * 8}|{'-' * 7}|---|")
    for node, counts in sorted(table.items(), key=lambda item: -sum(item[1].values())):
        seconds = sum(counts.values()) / rate
        if seconds < 1:
            continue
        phases = ", ".join(f"{phase} {count / rate:.0f}" for phase, count in counts.most_common() if count / rate >= 1)
        print(f"| {node:<40} | {seconds:6.0f} | {seconds * rate / total:5.0%} | {phases} |")
    overall = collections.Counter()
    for counts in table.values():
        overall.update(counts)
    print("\nBy phase over the whole run:")
    for phase, count in overall.most_common():
        print(f"  {phase:<30} {count / rate:7.0f} s  {count / total:5.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--raw", type=Path, help="read a recorded profile instead of running")
    parser.add_argument("--out", type=Path, default=Path("data/08_reporting/profile.raw"), help="where the raw samples go")
    parser.add_argument("--rate", type=int, default=RATE)
    parser.add_argument("kedro_args", nargs="*", help="after --: arguments of kedro run")
    args = parser.parse_args()
    if args.raw:
        if not args.raw.is_file():
            sys.exit(f"--raw {args.raw}: no such file (py-spy's raw output, written by a run of this script)")
        print_table(attribute(read_samples(args.raw)), None, args.rate)
        return
    py_spy = shutil.which("py-spy")
    if py_spy is None:
        sys.exit("py-spy is not installed: pip install py-spy==0.4.1")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false", "COLUMNS": "160"}
    command = [py_spy, "record", "--rate", str(args.rate), "--format", "raw", "--output", str(args.out), "--nonblocking", "--"]
    kedro = [sys.executable, "-m", "kedro", "run", *args.kedro_args]
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        started = time.perf_counter()
        result = subprocess.run([*command, *kedro], env=env, stderr=subprocess.STDOUT, stdout=log)
        wall_s = time.perf_counter() - started
        log.seek(0)
        text = log.read()
    if result.returncode != 0:
        print(text[-6000:])
        sys.exit(f"kedro run failed (exit {result.returncode})")
    print_table(attribute(read_samples(args.out)), wall_s, args.rate)
    node_table = text[text.rfind("Node times and peak memory") :] if "Node times and peak memory" in text else ""
    if node_table:
        print("\nThe run's own node table (wall seconds, peak resident MB of Python and the JVM together):")
        for line in node_table.splitlines()[1:40]:
            row = re.sub(r"\s+\S+\.py:\d+\s*$", "", line.split("INFO")[-1]).rstrip()
            if row.strip():
                print(row)
            if "pipeline (all nodes)" in line:
                break


if __name__ == "__main__":
    main()
