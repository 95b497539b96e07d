"""Fault matrix of the OpenAI-compatible teacher against a real HTTP server (``http.server``
in a thread on 127.0.0.1, an ephemeral port): down, slow, dripping, HTTP errors with and
without recovery, malformed 200s, truncated and reset responses; then the circuit breaker
and the ``skills.teacher_fallback`` choices at the teacher and at the pipeline node.

For each case: the attempts the server saw equal the documented bound, the wall time stays
under a generous bound derived from the timeout and backoff, the outcome is a parsed skill
or the documented fallback, and the error message names the URL, the failure and the
attempt count, never the API key. ``benchmarks/reliability_teacher.py`` runs the same
``CASES`` through ``run_case``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

import pandas as pd
import pytest

from hindsight.config import SkillsConfig
from hindsight.config.skill_stages import OpenAIEndpointConfig
from hindsight.pipelines.skills.nodes import make_teacher, write_hindsight_skills
from hindsight.skills import RuleMinerTeacher, episodes_from_table
from hindsight.skills.http_teacher import OpenAICompatibleTeacher, TeacherUnavailableError, redacted_url

SECRET = "sk-fault-matrix-4b1d"
TIMEOUT, RETRIES, BACKOFF = 0.4, 3, 0.05
ATTEMPTS = RETRIES + 1
SKILL = '{"episode_summary": "Put the sock away.", "episode_skill": "take <object> before put"}'


def request_bound_s(attempts: int, timeout: float = TIMEOUT, backoff: float = BACKOFF) -> float:
    """The documented worst case of one request (2 x timeout per attempt, the backoffs)."""
    return attempts * 2 * timeout + backoff * (2 ** (attempts - 1) - 1)


MARGIN_S = 3.0
"""Added to every wall-time bound: a shared, loaded machine, never tight timing."""


class FaultServer:
    """A chat-completion server on 127.0.0.1 whose ``behaviour(handler, n)`` answers the n-th
    request (1-based); counts requests and records their Authorization headers."""

    def __init__(self, behaviour: Callable[[BaseHTTPRequestHandler, int], None]) -> None:
        self.count, self.authorization = 0, []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server API)
                self.rfile.read(int(self.headers["Content-Length"]))
                with server.lock:
                    server.count += 1
                    number = server.count
                    server.authorization.append(self.headers.get("Authorization"))
                behaviour(self, number)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.handle_error = lambda *args: None  # a client that gave up is expected here
        self.httpd.stop = self.stop
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> FaultServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def send(handler, status: int, body: bytes, content_type: str = "application/json") -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def completion(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()


def answer(handler, n):
    send(handler, 200, completion(SKILL))


def statuses_then_answer(*statuses: int):
    def behaviour(handler, n):
        if n <= len(statuses):
            send(handler, statuses[n - 1], b'{"error": {"message": "try later"}}')
        else:
            answer(handler, n)
    return behaviour


def always(status: int, body: bytes = b'{"error": {"message": "nope"}}', content_type: str = "application/json"):
    return lambda handler, n: send(handler, status, body, content_type)


def slow(handler, n):
    handler.server.stop.wait(10 * TIMEOUT)  # far past the client timeout; ends at shutdown


def drip(handler, n):
    """Headers at once, then one byte of the body every TIMEOUT/4 s: never idle long enough
    for the socket timeout, only the attempt deadline ends it."""
    handler.send_response(200)
    handler.send_header("Content-Length", "1000")
    handler.end_headers()
    for _ in range(1000):
        handler.wfile.write(b" ")
        if handler.server.stop.wait(TIMEOUT / 4):
            return


def truncated(handler, n):
    handler.send_response(200)
    handler.send_header("Content-Length", "500")
    handler.end_headers()
    handler.wfile.write(b'{"choices": [{"message": ')
    handler.close_connection = True


def reset(handler, n):
    truncated(handler, n)
    handler.wfile.flush()
    handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    handler.connection.close()  # RST instead of FIN


@dataclass(frozen=True)
class Case:
    """One fault: the server's behaviour (None: no server, a closed port) and what must follow."""

    name: str
    behaviour: Callable | None
    attempts: int
    outcome: str
    """skill (the endpoint's parsed skill) | fallback (the rule miner's) | no_skill (the
    endpoint answered, but no valid skill JSON)."""
    kinds: tuple[str, ...] = ()
    """One of these failure kinds must be in the error message."""


CASES = [
    Case("refused (server down)", None, ATTEMPTS, "fallback", ("connection refused",)),
    Case("slow (past the timeout)", slow, ATTEMPTS, "fallback", ("timeout",)),
    Case("dripping body (past the deadline)", drip, ATTEMPTS, "fallback", ("timeout",)),
    Case("HTTP 500, 503, 429 then 200", statuses_then_answer(500, 503, 429), ATTEMPTS, "skill"),
    Case("HTTP 500 forever", always(500), ATTEMPTS, "fallback", ("HTTP 500",)),
    Case("HTTP 400 (not retried)", always(400), 1, "fallback", ("HTTP 400",)),
    Case("HTTP 401 (not retried)", always(401, f'{{"error": "Incorrect API key {SECRET}"}}'.encode()), 1, "fallback",
         ("HTTP 401 (",)),  # the body echoes the key: messages show *** instead
    Case("200, not JSON", always(200, b"<html>Bad gateway</html>", "text/html"), 1, "fallback", ("non-JSON",)),
    Case("200, JSON without choices", always(200, b'{"object": "error"}'), 1, "fallback", ("response shape",)),
    Case("200, content not a skill JSON", always(200, completion("I cannot help with that.")), 1, "no_skill"),
    Case("truncated body", truncated, ATTEMPTS, "fallback", ("truncated response",)),
    Case("connection reset mid-response", reset, ATTEMPTS, "fallback",
         ("connection reset", "truncated response", "connection error")),
]


@dataclass
class CaseResult:
    """What one case did: attempts seen (server side; client side for a closed port), the
    wall time, the record, the teacher's log lines, and whether it hung."""

    attempts: int
    seconds: float
    hung: bool
    record: object = None
    messages: list[str] = field(default_factory=list)
    url: str = ""


def episodes(count: int) -> pd.DataFrame:
    """``count`` won two-step episodes of one task, as a trajectory table."""
    rows = [
        {"episode_id": f"e{k}", "group_id": "g", "task": "Put the sock in the drawer.", "step": step,
         "observation": f"You see a sock. obs {step}", "action": ["take sock", "put sock in drawer"][step],
         "response": "ok", "action_valid": True, "won": step == 1, "score": float(step)}
        for k in range(count) for step in range(2)
    ]
    return pd.DataFrame(rows)


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def closed_port_url() -> str:
    """A URL nothing listens on: a port bound, then released."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def run_teacher(teacher, episode_count: int = 1, watchdog_s: float = 60.0):
    """``write_skills`` in a thread, with a watchdog: (records or exception, seconds, hung, log lines)."""
    capture, log = _Capture(), logging.getLogger("hindsight.skills.http_teacher")
    log.addHandler(capture)
    previous = log.level
    log.setLevel(logging.DEBUG)
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(_call(teacher, episode_count)), daemon=True)
    started = time.monotonic()
    try:
        worker.start()
        worker.join(watchdog_s)
    finally:
        log.removeHandler(capture)
        log.setLevel(previous)
    return (outcome[0] if outcome else None), time.monotonic() - started, worker.is_alive(), capture.lines


def _call(teacher, episode_count):
    try:
        return teacher.write_skills(episodes_from_table(episodes(episode_count)))
    except Exception as error:  # noqa: BLE001 (handed back to the caller)
        return error


def make(url: str, **overrides) -> OpenAICompatibleTeacher:
    settings = dict(api_key=SECRET, timeout=TIMEOUT, max_retries=RETRIES, backoff=BACKOFF,
                    max_concurrency=1, fallback=RuleMinerTeacher())
    return OpenAICompatibleTeacher(url, "m", **{**settings, **overrides})


def run_case(case: Case) -> CaseResult:
    """Run one fault case with one episode."""
    server = FaultServer(case.behaviour) if case.behaviour else None
    with server or contextlib.nullcontext():
        teacher = make(server.url if server else closed_port_url())
        records, seconds, hung, lines = run_teacher(teacher, watchdog_s=request_bound_s(case.attempts) + 30)
    attempts = server.count if server else teacher.last_run.get("attempts", -1)  # a closed port: client side
    assert server is None or set(server.authorization) == {f"Bearer {SECRET}"}
    record = records[0] if isinstance(records, list) else records
    return CaseResult(attempts, seconds, hung, record, lines, teacher.safe_url)


def outcome_of(record) -> str:
    if not getattr(record, "parse_ok", False):
        return "no_skill"
    return "fallback" if record.teacher == "rule_miner" else "skill"


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_fault_case(case):
    result = run_case(case)
    assert not result.hung
    assert result.attempts == case.attempts
    assert result.seconds < request_bound_s(case.attempts) + MARGIN_S
    assert outcome_of(result.record) == case.outcome
    assert all(SECRET not in line for line in result.messages)
    if case.outcome == "skill":
        assert result.record.skill == "take <object> before put"
    if case.outcome == "no_skill":  # the teacher's own (bad) answer: kept, counted, no fallback
        assert result.record.raw_output == "I cannot help with that." and result.record.teacher == "openai_compatible"
    if case.kinds:
        [error] = [line for line in result.messages if line.startswith("no answer for episode e0")]
        assert result.url in error and f"after {case.attempts} attempt(s)" in error
        assert any(kind in error for kind in case.kinds), error
        assert "unavailable" in " ".join(result.messages)  # the one episode failed: the endpoint is down


def test_circuit_breaker_stops_calling_a_down_endpoint():
    with FaultServer(always(503)) as server:
        teacher = make(server.url, max_retries=1, circuit_breaker=3)
        records, seconds, hung, lines = run_teacher(teacher, episode_count=40)
    assert not hung and server.count == 3 * 2  # 3 episodes x 2 attempts, then nothing
    assert seconds < 3 * request_bound_s(2) + MARGIN_S
    assert all(record.parse_ok and record.teacher == "rule_miner" for record in records)
    assert teacher.last_run["not_sent"] == 37 and teacher.last_run["fallback_records"] == 40
    assert any("taken as down: 3 episodes in a row" in line for line in lines)


def test_circuit_breaker_with_concurrent_requests_is_bounded():
    with FaultServer(always(500)) as server:
        teacher = make(server.url, max_retries=2, circuit_breaker=4, max_concurrency=4)
        records, seconds, hung, _ = run_teacher(teacher, episode_count=50)
    assert not hung and server.count <= (4 + 4 - 1) * 3
    assert seconds < 3 * request_bound_s(3) + MARGIN_S
    assert len(records) == 50 and teacher.last_run["down"] == 1


def test_fallback_none_gives_no_skill_and_error_stops_with_a_clear_message():
    url = closed_port_url()
    records, _, _, lines = run_teacher(make(url, fallback=None, max_retries=1, circuit_breaker=2), episode_count=5)
    assert [record.parse_ok for record in records] == [False] * 5
    assert {record.teacher for record in records} == {"openai_compatible"}
    error, _, hung, lines = run_teacher(make(url, fallback=None, fail_when_down=True, max_retries=1), episode_count=2)
    assert not hung and isinstance(error, TeacherUnavailableError)
    message = str(error)
    assert message.startswith(f"teacher at {url}/v1/chat/completions unavailable:")
    assert "connection refused after 2 attempt(s)" in message and "2 of 2 episode(s) got no answer" in message
    assert SECRET not in message and all(SECRET not in line for line in lines)


def test_isolated_failures_are_not_an_outage():
    with FaultServer(lambda handler, n: always(400)(handler, n) if n == 2 else answer(handler, n)) as server:
        teacher = make(server.url, fallback=None, fail_when_down=True)
        records, _, _, _ = run_teacher(teacher, episode_count=4)
    assert [record.parse_ok for record in records] == [True, False, True, True]
    assert teacher.last_run["down"] == 0 and server.count == 4


def test_messages_leave_out_user_info_and_query():
    assert redacted_url("https://user:pw@api.example/v1/chat/completions?key=abc") == (
        "https://***@api.example/v1/chat/completions")


@pytest.mark.parametrize("fallback", ["rule_miner", "none", "error"])
def test_the_skills_node_with_the_teacher_down(fallback, caplog):
    endpoint = OpenAIEndpointConfig(base_url=closed_port_url(), timeout_s=TIMEOUT, max_retries=1, backoff_s=BACKOFF,
                                    max_concurrency=1)
    skills = SkillsConfig(teacher="openai", openai=endpoint, teacher_fallback=fallback)
    teacher = make_teacher(None, None, skills, {"api_key": SECRET})
    table = episodes(6)
    rollouts = table.assign(episode_id=table["episode_id"] + "r")
    with caplog.at_level(logging.INFO):
        if fallback == "error":
            with pytest.raises(TeacherUnavailableError, match="unavailable: .*connection refused"):
                write_hindsight_skills(table, rollouts, teacher)
        else:
            written = write_hindsight_skills(table, rollouts, teacher)
            assert len(written) == 12
            assert set(written["teacher"]) == {"rule_miner" if fallback == "rule_miner" else "openai_compatible"}
            assert list(written["parse_ok"]) == [fallback == "rule_miner"] * 12
    assert teacher.last_run["attempts"] == 5 * 2  # the breaker (5 episodes) with 2 attempts each
    assert SECRET not in caplog.text and SECRET not in repr(teacher)


def test_the_fallback_setting_is_checked():
    with pytest.raises(ValueError, match="teacher_fallback"):
        SkillsConfig(teacher_fallback="retry")
    with pytest.raises(ValueError, match="circuit_breaker"):
        OpenAIEndpointConfig(circuit_breaker=-1)
