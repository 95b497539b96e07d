"""Faults and bad input: what a run survives, measured. The umbrella script (docs/reliability.md).

Runs each section's ``measure()`` and prints its figures under a heading:

- ``inputs``: malformed trajectory files through ingestion (``reliability_inputs.py``);
- ``envs``: environment faults during rollouts (``reliability_envs.py``);
- ``teacher``: the OpenAI-compatible teacher's fault matrix (``reliability_teacher.py``);
- ``resume``: training runs SIGKILLed at random moments and restarted (``reliability_resume.py``).

Each module is imported only when its section runs; one that is missing or fails to import
prints ``not available: <reason>`` and does not fail the run. The exit status is non-zero
when a section raised or a must-be figure failed (``MUST_BE`` below, matched on the figure's
name: a ``k/N`` figure of a "handled / identical / rejected / survived / recovered" kind
must have k = N; a count of hung, leaked or crashed runs, or of dataset versions written on
bad input, must be 0; a value that starts with ``FAILED`` fails), and the failing figures
are listed at the end.

Run from the project root (the resume section alone takes about 10 minutes on 2 cores):

    HINDSIGHT_TORCH_THREADS=1 python benchmarks/reliability.py
    python benchmarks/reliability.py --skip resume          # the quick sections only
    python benchmarks/reliability.py --only resume --kills 5 --seed 0
"""

from __future__ import annotations

GROUP = "reliability"
REPRODUCES = ("docs/reliability.md#reliability",)
MEASURED = (
    "the resume section 6-9 min on a shared 2-core machine (docs/reliability.md; CPU not named), the "
    "others about a minute each"
)
LAST_RUN = "by 2026-12-04 (git: the figures' lines in docs/reliability.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import importlib
import logging
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Callable

BENCHMARKS = Path(__file__).resolve().parent
SECTIONS = {
    "inputs": ("reliability_inputs", "Bad input: malformed trajectory files"),
    "envs": ("reliability_envs", "Environment faults during rollouts"),
    "teacher": ("reliability_teacher", "Teacher faults (OpenAI-compatible endpoint)"),
    "resume": ("reliability_resume", "SIGKILL and resume of a training run"),
}

FRACTION = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\b")


def _all_of(value: str) -> bool:
    """``k/N`` with k = N > 0."""
    match = FRACTION.match(value)
    return bool(match) and match.group(1) == match.group(2) != "0"


COUNT = re.compile(r"^\s*(\d+|none)\b")


def _zero(value: str) -> bool:
    """A count of 0 (or "none")."""
    match = COUNT.match(value)
    return bool(match) and match.group(1) in {"0", "none"}


MUST_BE: list[tuple[str, Callable[[str], bool], str]] = [
    ("dataset versions written on bad input", _zero, "0"),
    ("previous version loadable", lambda v: v.strip().startswith("yes"), "yes"),
    ("accepted although malformed", lambda v: v.strip() == "none", "none"),
    ("hung", _zero, "0"),
    ("leaked", _zero, "0"),
    ("crashed", _zero, "0"),
    ("kill during checkpoint write", lambda v: "NOT identical" not in v and "failed" not in v, "an identical rerun"),
    ("identical", _all_of, "k/N with k = N > 0"),
    ("handled", _all_of, "k/N with k = N > 0"),
    ("rejected with", _all_of, "k/N with k = N > 0"),
    ("survived", _all_of, "k/N with k = N > 0"),
    ("recovered", _all_of, "k/N with k = N > 0"),
]
"""(words in the figure's name, check of its value, what it must be). The first rule whose
words the name contains applies; a ``k/N`` rule only to a ``k/N`` value, a count rule only
to a value that starts with a count. Besides, a value starting with ``FAILED`` fails."""


def must_be_failures(section: str, figures: list[tuple[str, str]]) -> list[str]:
    """The figures of a section that fail their must-be rule, as printable lines."""
    failures = []
    for name, value in figures:
        value = str(value)
        if value.lstrip().upper().startswith("FAILED"):
            failures.append(f"[{section}] {name}: {value}")
            continue
        for words, check, expected in MUST_BE:
            if words not in name.lower():
                continue
            applies = {_all_of: FRACTION.match(value), _zero: COUNT.match(value)}.get(check, True)
            if applies and not check(value):
                failures.append(f"[{section}] {name}: {value} (must be {expected})")
            break
    return failures


def load_section(module_name: str):
    """Import ``benchmarks/<module_name>.py``; (module, None) or (None, why it is not available)."""
    if not (BENCHMARKS / f"{module_name}.py").is_file():
        return None, f"benchmarks/{module_name}.py does not exist yet"
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # noqa: BLE001 - any import failure makes the section unavailable
        return None, f"import failed: {type(error).__name__}: {error}"
    if not callable(getattr(module, "measure", None)):
        return None, f"benchmarks/{module_name}.py has no measure()"
    return module, None


def run_section(key: str, options: argparse.Namespace) -> tuple[list[str], bool]:
    """Print one section; (must-be failures, whether it raised)."""
    module_name, title = SECTIONS[key]
    print(f"\n## {title} ({module_name}.py)\n", flush=True)
    module, why = load_section(module_name)
    if module is None:
        print(f"not available: {why}")
        return [], False
    kwargs = {"kills": options.kills, "seed": options.seed} if key == "resume" else {}
    started = time.perf_counter()
    if not options.verbose:  # the faults a section provokes log warnings and errors by design
        logging.disable(logging.CRITICAL)
    try:
        figures = module.measure(**kwargs)
    except Exception as error:  # noqa: BLE001 - report the section's failure, run the others
        traceback.print_exc()
        print(f"failed: {type(error).__name__}: {error}")
        return [f"[{key}] measure() raised {type(error).__name__}: {error}"], True
    finally:
        logging.disable(logging.NOTSET)
    width = max((len(name) for name, _ in figures), default=0)
    for name, value in figures:
        print(f"{name:<{width}}  {value}")
    print(f"({time.perf_counter() - started:.0f} s)", flush=True)
    return must_be_failures(key, figures), False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Faults and bad input: what a run survives, measured.")
    parser.add_argument("--skip", action="append", default=[], choices=sorted(SECTIONS), help="leave a section out (repeatable)")
    parser.add_argument("--only", action="append", default=[], choices=sorted(SECTIONS), help="run only these sections")
    parser.add_argument("--skip-resume", action="store_true", help="same as --skip resume (the long section)")
    parser.add_argument("--kills", type=int, default=5, help="resume: random kill points (at least 5 for the figure)")
    parser.add_argument("--seed", type=int, default=0, help="resume: seed of the kill points")
    parser.add_argument("--verbose", action="store_true", help="let the sections' own logging through")
    options = parser.parse_args(argv)
    skipped = set(options.skip) | ({"resume"} if options.skip_resume else set())
    chosen = [key for key in SECTIONS if (not options.only or key in options.only) and key not in skipped]
    failures: list[str] = []
    for key in chosen:
        failures += run_section(key, options)[0]
    print("\n## Verdict\n")
    if failures:
        print("FAILED must-be figures:")
        for line in failures:
            print(f"  {line}")
        return 1
    print(f"all must-be figures hold ({', '.join(chosen) or 'no sections run'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
