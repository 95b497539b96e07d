"""Fault handling of the OpenAI-compatible teacher, measured: the fault matrix of
``tests/reliability/test_teacher_faults.py`` (a real HTTP server on 127.0.0.1 that refuses,
stalls, drips, fails with HTTP errors, answers malformed 200s, truncates or resets), each
case run once with one episode, plus a down endpoint in front of 100 episodes (the circuit
breaker). A benchmark, not a test (about 10 s on 2 CPU cores):

    python benchmarks/reliability_teacher.py

A case is handled when it neither hung, nor made more attempts than the documented bound
(``1 + max_retries``, or 1 for a non-retryable failure), nor took longer than that bound's
worst-case time (2 x timeout per attempt plus the backoffs) with a 3 s margin, and its
outcome is the expected one (the endpoint's skill, or the rule-miner fallback).
``measure()`` returns the figures as (name, value) text pairs for ``benchmarks/reliability.py``.
"""

from __future__ import annotations

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


def _case_figures() -> tuple[list[tuple[str, str]], int, int]:
    """Run each case: (per-case figures, cases handled, hung runs)."""
    figures, handled, hung = [], 0, 0
    for case in faults.CASES:
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


def _down_endpoint_figures() -> list[tuple[str, str]]:
    """A refused endpoint in front of ``DOWN_EPISODES`` episodes, with the default breaker (5)
    and without (0): attempts and seconds."""
    figures = []
    for breaker in (5, 0):
        teacher = faults.make(faults.closed_port_url(), circuit_breaker=breaker)
        started = time.monotonic()
        records, _, hung, _ = faults.run_teacher(teacher, episode_count=DOWN_EPISODES, watchdog_s=300)
        seconds = time.monotonic() - started
        fallback = sum(getattr(record, "teacher", "") == "rule_miner" for record in records or [])
        label = f"breaker {breaker}" if breaker else "no breaker"
        figures.append((f"down endpoint, {DOWN_EPISODES} episodes, {label}",
                        f"{int(teacher.last_run.get('attempts', -1))} attempts, {seconds:.2f} s, "
                        f"{fallback} rule-miner fallback skills{', HUNG' if hung else ''}"))
    return figures


def measure() -> list[tuple[str, str]]:
    """Run the teacher fault matrix and the down-endpoint comparison.

    Returns:
        (figure name, value as text) pairs, the totals first.
    """
    logging.getLogger("hindsight.skills.http_teacher").setLevel(logging.CRITICAL)  # the faults are expected
    logging.getLogger("hindsight.skills.rule_miner").setLevel(logging.WARNING)
    per_case, handled, hung = _case_figures()
    settings = (f"timeout {faults.TIMEOUT} s, max_retries {faults.RETRIES}, backoff {faults.BACKOFF} s, "
                f"bound {faults.request_bound_s(faults.ATTEMPTS):.2f} s per request")
    return [
        ("teacher fault cases handled", f"{handled}/{len(faults.CASES)}"),
        ("hung runs", str(hung)),
        ("teacher settings in the matrix", settings),
        *per_case,
        *_down_endpoint_figures(),
    ]


if __name__ == "__main__":
    for name, value in measure():
        print(f"{name}: {value}")
