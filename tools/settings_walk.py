"""The walk of the training settings: from the Kedro node ``train_with_rl`` through the calls
that carry the settings (``TrainingConfig`` and every settings object inside it) to where
their fields are read, measured over one tiny RL update.

Dynamic, not static: the node runs one update of the default method (SEED) on the test
configuration (``conf/base`` with ``conf/test``; one update of one task played twice, 6 steps
at most, a tiny policy on TextWorldExpress) while every read of a settings field is watched
(the settings: by type, the classes of the objects reachable from the ``TrainingConfig`` and
the run's method settings). At each read, the chain of ``src/hindsight`` functions on the
call stack, from the node down to the reader, joins the walk (``read_walk``). With
``--carrying`` the walk is instead every call whose arguments carry a settings object or an
object holding one directly (``self.config``; ``sys.settrace``, ``trace_walk``), fields read
below it or not. Each function counts once, at its first appearance (a loop's repeats are
one visit), and the visits are kept in call order (depth first). Then:

- a *stay* is a run of consecutive visits in one file (``stays``; ``files``: distinct files);
- a *climb* is a call from a lower floor to a higher one (the floors are the layers of the
  import contract in ``pyproject.toml``; a method's hook called by the training loop is one);
- a *rise* is a stay on a higher floor than the stay before it (a climb, or the walk coming
  back up after a call below returned);
- a *return* is a stay in a file the walk had already left;
- *climbs back up* = climbs + returns.

Run from the project root (under a minute of CPU; the figures are printed, with the walk
itself under ``--show``)::

    python -m tools.settings_walk [--show] [--carrying]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "hindsight"


def floors() -> dict[str, int]:
    """Top-level module of ``hindsight`` -> its floor (0: the top), from the layers contract."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(contract["layers"] for contract in contracts if contract["type"] == "layers")
    return {name.strip().split(".")[1]: floor for floor, layer in enumerate(layers) for name in layer.split(":")}


def floor_of(path: str, table: dict[str, int]) -> int:
    """The floor of a source file of ``hindsight``."""
    top = Path(path).relative_to(SOURCE).parts[0].removesuffix(".py")
    return table.get(top, 0)  # the package root (__init__) counts as the top floor


def settings_types(root: Any) -> set[type]:
    """The classes of every dataclass object reachable from ``root`` (fields, lists, dicts)."""
    found: set[type] = set()

    def walk(value: Any) -> None:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            if type(value) in found:
                return
            found.add(type(value))
            for field in dataclasses.fields(value):
                walk(getattr(value, field.name))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)

    walk(root)
    return found


@dataclasses.dataclass
class Visit:
    """A function's first call on the walk."""

    file: str
    function: str
    floor: int
    caller_floor: int | None


def _carries(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, types):
        return True
    attributes = getattr(value, "__dict__", None)
    return isinstance(attributes, dict) and any(isinstance(item, types) for item in list(attributes.values()))


def trace_walk(run, types: tuple[type, ...]) -> list[Visit]:
    """Run ``run()`` under ``sys.settrace``; the first call of each hindsight function whose
    arguments carry a settings object, in call order."""
    table, source = floors(), str(SOURCE)
    seen: set[Any] = set()
    visits: list[Visit] = []

    def tracer(frame, event, arg):
        if event != "call":
            return None
        code = frame.f_code
        if code in seen or not code.co_filename.startswith(source):
            return None
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if not any(_carries(frame.f_locals.get(name), types) for name in names):
            return None
        seen.add(code)
        caller = frame.f_back
        while caller is not None and not caller.f_code.co_filename.startswith(source):
            caller = caller.f_back
        caller_floor = floor_of(caller.f_code.co_filename, table) if caller is not None else None
        visits.append(Visit(code.co_filename, code.co_qualname, floor_of(code.co_filename, table), caller_floor))
        return None

    sys.settrace(tracer)
    try:
        run()
    finally:
        sys.settrace(None)
    return visits


def read_walk(run, types: tuple[type, ...]) -> list[Visit]:
    """Run ``run()`` while every read of a field of the ``types`` is watched: at each read, the
    chain of hindsight functions on the call stack (outermost first) joins the walk, each
    function once, at its first appearance. Functions that carry the settings without
    reading a field below them are not part of this walk (``trace_walk`` counts them)."""
    table, source = floors(), str(SOURCE)
    seen: set[Any] = set()
    visits: list[Visit] = []

    def record() -> None:
        chain = []
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename.startswith(source):
                chain.append(frame.f_code)
            frame = frame.f_back
        chain.reverse()
        for index, code in enumerate(chain):
            if code in seen:
                continue
            seen.add(code)
            caller_floor = floor_of(chain[index - 1].co_filename, table) if index else None
            visits.append(Visit(code.co_filename, code.co_qualname, floor_of(code.co_filename, table), caller_floor))

    originals = {}
    for cls in types:
        names = {field.name for field in dataclasses.fields(cls)}
        original = cls.__getattribute__

        def getattribute(self, name, _original=original, _names=names):
            if name in _names:
                record()
            return _original(self, name)

        originals[cls] = cls.__dict__.get("__getattribute__")
        cls.__getattribute__ = getattribute
    try:
        run()
    finally:
        for cls, original in originals.items():
            if original is None:
                del cls.__getattribute__
            else:
                cls.__getattribute__ = original
    return visits


def figures(visits: list[Visit]) -> dict[str, int]:
    """Stays, files, climbs, rises, returns and climbs back up of a walk (module docstring)."""
    stays: list[str] = []
    stay_floors: list[int] = []
    for visit in visits:
        if not stays or stays[-1] != visit.file:
            stays.append(visit.file)
            stay_floors.append(visit.floor)
    returns = sum(1 for index, file in enumerate(stays) if file in stays[:index])
    rises = sum(1 for before, after in zip(stay_floors, stay_floors[1:]) if after < before)
    climbs = sum(1 for visit in visits if visit.caller_floor is not None and visit.floor < visit.caller_floor)
    return {
        "calls": len(visits), "stays": len(stays), "files": len(set(stays)), "climbs": climbs,
        "rises": rises, "returns": returns, "climbs_back_up": climbs + returns,
    }


def _tiny_node_inputs(checkpoints: str):
    """What the Kedro node ``train_with_rl`` gets, at the test configuration's size: a tiny
    policy (its tokenizer trained on one gold episode per game), an empty skills table, the
    project and training settings (one update)."""
    import pandas as pd
    import yaml

    from hindsight.config import check_parameters
    from hindsight.data.expert import play_gold_episode
    from hindsight.envs import make_env
    from hindsight.policy.model import build_policy
    from hindsight.policy.tokenizer import train_tokenizer

    params: dict[str, Any] = {}
    for path in sorted((ROOT / "conf" / "base").glob("parameters*.yml")):
        params.update(yaml.safe_load(path.read_text()))
    params.update(yaml.safe_load((ROOT / "conf" / "test" / "parameters.yml").read_text()))
    params["training"]["rl"] = {**params["training"]["rl"], "updates": 1, "tasks_per_update": 1, "group_size": 2}
    params["environment"] = {**params["environment"], "max_steps": 6}
    params["training"]["checkpoint_root"] = checkpoints
    params["rollout"] = {**params["rollout"], "progress": False}
    settings = check_parameters(params)
    project, training = settings["project"], settings["training"]
    texts = []
    for spec in project.specs():
        env = make_env(spec)
        try:
            rows = play_gold_episode(env, spec, "train", env.seeds("train", 1)[0])
        finally:
            env.close()
        texts += [text for row in rows for text in (row["observation"], row["action"], *row["valid_actions"])]
    policy = build_policy("tiny", train_tokenizer(texts, vocab_size=600), seed=0, device="cpu")
    skills = pd.DataFrame({
        "group_id": pd.Series(dtype="str"), "skill": pd.Series(dtype="str"), "accepted": pd.Series(dtype="bool"),
        "parse_ok": pd.Series(dtype="bool"), "success": pd.Series(dtype="bool"),
    })  # no accepted Stage-1 skill: SEED's policy writes its own
    return policy, skills, project, training


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", action="store_true", help="print the walk, one visit a line")
    parser.add_argument(
        "--carrying", action="store_true",
        help="walk every call whose arguments carry the settings (sys.settrace), not only the paths to a field read",
    )
    args = parser.parse_args()

    import torch

    from hindsight.methods.registry import method_class
    from hindsight.pipelines.training.nodes import train_with_rl

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as checkpoints:
        policy, skills, project, training = _tiny_node_inputs(checkpoints)
        types = settings_types(training) | {method_class(training.rl.algorithm).Settings}
        types = {cls for cls in types if cls.__module__.startswith("hindsight.")}
        walk = trace_walk if args.carrying else read_walk
        visits = walk(lambda: train_with_rl(policy, policy, skills, project, training), tuple(types))
    if args.show:
        for visit in visits:
            relative = Path(visit.file).relative_to(SOURCE.parent)
            print(f"{visit.floor} {relative}: {visit.function}" + (" (climb)" if visit.caller_floor is not None and visit.floor < visit.caller_floor else ""))
    print(" ".join(f"{name}={value}" for name, value in figures(visits).items()))


if __name__ == "__main__":
    main()
