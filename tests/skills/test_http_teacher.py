"""The OpenAI-compatible teacher against a real HTTP server on 127.0.0.1 (a thread)."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

from hindsight.skills import OpenAICompatibleTeacher, episodes_from_table, parse_rate
from hindsight.skills.http_teacher import chat_completions_url

pytestmark = pytest.mark.unit

ANSWER = 'Sure:\n```json\n{"episode_summary": "Solved it.", "episode_skill": "take <object> before put",}\n```'


class ChatServer:
    """A tiny chat-completion server: fails the first ``fail_first`` requests with
    ``fail_status``, then answers ``ANSWER``; records requests and peak concurrency."""

    def __init__(self, fail_first: int = 0, fail_status: int = 500, delay: float = 0.0):
        self.fail_first, self.fail_status, self.delay = fail_first, fail_status, delay
        self.requests: list[dict] = []
        self.in_flight = self.peak = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server API)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append({"path": self.path, "body": body,
                                            "authorization": self.headers.get("Authorization")})
                    number = len(server.requests)
                    server.in_flight += 1
                    server.peak = max(server.peak, server.in_flight)
                time.sleep(server.delay)
                with server.lock:
                    server.in_flight -= 1
                if number <= server.fail_first:
                    self.send_response(server.fail_status)
                    self.end_headers()
                    self.wfile.write(b"error")
                    return
                payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": ANSWER}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _episodes(count: int):
    rows = [
        {"episode_id": f"e{k}", "group_id": "g", "task": "Tidy up.", "step": step,
         "observation": f"obs {step}", "action": "take sock", "response": "take sock",
         "action_valid": True, "won": step == 1}
        for k in range(count) for step in range(2)
    ]
    return episodes_from_table(pd.DataFrame(rows))


def test_retries_a_500_then_parses_the_answer():
    with ChatServer(fail_first=1) as server:
        teacher = OpenAICompatibleTeacher(server.url, "tiny-model", api_key="secret", timeout=5,
                                          max_retries=2, backoff=0.01, max_concurrency=1)
        [record] = teacher.write_skills(_episodes(1))
    assert len(server.requests) == 2  # the failed one and its retry
    assert record.parse_ok and record.skill == "take <object> before put"
    request = server.requests[-1]
    assert request["path"] == "/v1/chat/completions"
    assert request["authorization"] == "Bearer secret"
    assert request["body"]["model"] == "tiny-model"
    assert "episode_success: success" in request["body"]["messages"][0]["content"]


def test_gives_up_after_the_retries_without_raising():
    with ChatServer(fail_first=100, fail_status=503) as server:
        teacher = OpenAICompatibleTeacher(server.url + "/v1", "m", max_retries=2, backoff=0.01)
        records = teacher.write_skills(_episodes(1))
    assert len(server.requests) == 3
    assert not records[0].parse_ok and records[0].raw_output == ""
    assert parse_rate(records) == 0.0


def test_client_errors_are_not_retried():
    with ChatServer(fail_first=100, fail_status=400) as server:
        records = OpenAICompatibleTeacher(server.url, "m", max_retries=3, backoff=0.01).write_skills(_episodes(1))
    assert len(server.requests) == 1 and not records[0].parse_ok


def test_unreachable_server_is_not_fatal():
    with ChatServer() as server:
        url = server.url
    records = OpenAICompatibleTeacher(url, "m", timeout=1, max_retries=1, backoff=0.01).write_skills(_episodes(1))
    assert not records[0].parse_ok


def test_concurrency_is_bounded_and_order_kept():
    with ChatServer(delay=0.05) as server:
        records = OpenAICompatibleTeacher(server.url, "m", max_concurrency=2, backoff=0.01).write_skills(_episodes(6))
    assert [record.episode_id for record in records] == [f"e{k}" for k in range(6)]
    assert all(record.parse_ok for record in records)
    assert server.peak == 2


@pytest.mark.parametrize(
    ("base", "url"),
    [("http://h:1", "http://h:1/v1/chat/completions"), ("http://h:1/v1/", "http://h:1/v1/chat/completions")],
)
def test_chat_completions_url(base, url):
    assert chat_completions_url(base) == url
