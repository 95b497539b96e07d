"""Fault handling of the OpenAI-compatible teacher, measured: its fault matrix, and a down
endpoint in front of 40 episodes (the circuit breaker).

The matrix is ``tests/reliability/test_teacher_faults.py``'s (a real HTTP server on
127.0.0.1 that refuses, stalls, drips, fails with HTTP errors, answers malformed 200s,
truncates or resets), each case run once with one episode. A benchmark, not a test (about
10 s on 2 CPU cores):

    python benchmarks/reliability_teacher.py
    python benchmarks/reliability_teacher.py --case "HTTP 400 (not retried)" --down-episodes 2   # one case, a short down run

A case is handled when it neither hung, nor made more attempts than the documented bound
(``1 + max_retries``, or 1 for a non-retryable failure), nor took longer than that bound's
worst-case time (2 x timeout per attempt plus the backoffs) with a 3 s margin, and its
outcome is the expected one (the endpoint's skill, or the rule-miner fallback).
``measure()`` returns the figures as (name, value) text pairs for ``benchmarks/reliability.py``.
"""

from __future__ import annotations

GROUP = "reliability"
REPRODUCES = ("docs/reliability.md#reliability",)
MEASURED = "about 10 s on 2 cores (the docstring; CPU not named)"
LAST_RUN = "by 2026-12-04 (git: the figures' lines in docs/reliability.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import logging
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")
PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "src"))
sys.path.insert(0, str(PROJECT_ROOT / "tests" / "reliability"))

import test_teacher_faults as faults  # noqa: E402  (the fault server and the case matrix)

DOWN_EPISODES = 40
"""Episodes sent to a down endpoint (connection refused) to show the circuit breaker's saving."""


def _case_figures(cases: list) -> tuple[list[tuple[str, str]], int, int]:
    """Run each case: (per-case figures, cases handled, hung runs)."""
    figures, handled, hung = [], 0, 0
    for case in cases:
        result = faults.run_case(case)
        bound = faults.request_bound_s(case.attempts) + faults.MARGIN_S
        ok = (not result.hung and result.attempts == case.attempts and result.seconds < bound
              and faults.outcome_of(result.record) == case.outcome
              and all(faults.SECRET not in line for line in result.messages))
        handled += ok
        hung += result.hung
        outcome = faults.outcome_of(result.record) if not result.hung else "hung"
        figures.append((f"teacher fault '{case.name}'",
                        f"{'ok' if ok else 'FAILED'}: {result.attempts} attempt(s), {result.seconds:.2f} s, {outcome}"))
    return figures, handled, hung


def _down_endpoint_figures(episodes: int) -> list[tuple[str, str]]:
    """A refused endpoint in front of ``episodes`` episodes, with the default breaker (5)
    and without (0): attempts and seconds."""
    figures = []
    for breaker in (5, 0):
        teacher = faults.make(faults.closed_port_url(), circuit_breaker=breaker)
        started = time.monotonic()
        records, _, hung, _ = faults.run_teacher(teacher, episode_count=episodes, watchdog_s=300)
        seconds = time.monotonic() - started
        fallback = sum(getattr(record, "teacher", "") == "rule_miner" for record in records or [])
        label = f"breaker {breaker}" if breaker else "no breaker"
        figures.append((f"down endpoint, {episodes} episodes, {label}",
                        f"{int(teacher.last_run.get('attempts', -1))} attempts, {seconds:.2f} s, "
                        f"{fallback} rule-miner fallback skills{', HUNG' if hung else ''}"))
    return figures


def measure(case_names: list[str] | None = None, down_episodes: int = DOWN_EPISODES) -> list[tuple[str, str]]:
    """Run the teacher fault matrix (the cases named, default all) and the down-endpoint
    comparison on ``down_episodes`` episodes.

    Returns:
        (figure name, value as text) pairs, the totals first.
    """
    logging.getLogger("hindsight.skills.http_teacher").setLevel(logging.CRITICAL)  # the faults are expected
    logging.getLogger("hindsight.skills.rule_miner").setLevel(logging.WARNING)
    cases = [case for case in faults.CASES if case_names is None or case.name in case_names]
    if case_names is not None and len(cases) != len(set(case_names)):
        raise SystemExit(f"no such case among {[case.name for case in faults.CASES]}: {case_names}")
    per_case, handled, hung = _case_figures(cases)
    settings = (f"timeout {faults.TIMEOUT} s, max_retries {faults.RETRIES}, backoff {faults.BACKOFF} s, "
                f"bound {faults.request_bound_s(faults.ATTEMPTS):.2f} s per request")
    return [
        ("teacher fault cases handled", f"{handled}/{len(cases)}"),
        ("hung runs", str(hung)),
        ("teacher settings in the matrix", settings),
        *per_case,
        *_down_endpoint_figures(down_episodes),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", help="run only this case of the matrix (repeatable; default: all)")
    parser.add_argument("--down-episodes", type=int, default=DOWN_EPISODES, help="episodes sent to the down endpoint")
    args = parser.parse_args()
    for name, value in measure(args.case, args.down_episodes):
        print(f"{name}: {value}")


if __name__ == "__main__":
    main()
