"""A teacher behind any OpenAI-compatible chat endpoint (a vLLM server, a hosted API).

Each episode's analysis prompt is POSTed to ``<base_url>/v1/chat/completions`` with the
standard library's ``urllib`` (no extra dependency), ``max_concurrency`` requests at a time.
Faults (the matrix in ``tests/reliability/test_teacher_faults.py``):

- One request is at most ``1 + max_retries`` attempts. Retried: connection refused or reset,
  a timeout (no data for ``timeout`` s, or a body still arriving ``timeout`` s after the
  attempt began), a truncated body, HTTP 408/409/425/429/5xx. Not retried (a retry would
  fail alike): other HTTP statuses (400, 401, 403, 404...), a 200 whose body is not JSON or
  has no ``choices[0].message.content``. Retry k waits ``backoff * 2**(k-1)`` s, so a request
  ends within about ``(1 + max_retries) * 2 * timeout + backoff * (2**max_retries - 1)`` s.
- An episode whose request fails for good got no answer: it gets the *fallback*, the
  ``fallback`` teacher's record (``skills.teacher_fallback: rule_miner``) or, without one, a
  ``parse_ok=False`` record (no skill). An answer holding no valid skill JSON is still the
  teacher's answer: ``parse_ok=False``, counted in the parse rate, no fallback.
- Circuit breaker: after ``circuit_breaker`` consecutive episodes without an answer the
  endpoint is taken as down: requests in flight stop retrying, the other episodes are not
  sent and get the fallback at once. With ``fail_when_down`` (``teacher_fallback: error``)
  the run stops instead with ``TeacherUnavailableError``. Down also means: nothing answered.
- Messages name the URL (user info and query left out), the failure, the HTTP status and the
  attempt count; never the API key.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Sequence

from hindsight.skills.analysis_prompt import DEFAULT_MAX_CHARS
from hindsight.skills.episode_views import EpisodeView
from hindsight.skills.records import SkillRecord, record_from_output
from hindsight.skills.teachers import Teacher, episode_analysis_prompt

if TYPE_CHECKING:
    from hindsight.policy.generation import SamplingConfig

logger = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
SNIPPET_CHARS = 120
"""How much of an error body (or of a body that is not JSON) a message quotes."""
STATUS_HINTS = {401: "check the api_key in teacher_credentials", 403: "check the api_key in teacher_credentials",
                404: "check skills.openai.base_url and model"}


class TeacherRequestError(RuntimeError):
    """A chat-completion request failed for good (after the retries, or not retryable).

    Attributes:
        kind: The failure: "HTTP <status>", "connection refused", "timeout", ...
        status: The HTTP status, if the server sent one.
        attempts: Attempts made.
        reason: The message without the URL.
    """

    def __init__(self, message: str, *, kind: str = "error", status: int | None = None, attempts: int = 0,
                 reason: str = "") -> None:
        super().__init__(message)
        self.kind, self.status, self.attempts, self.reason = kind, status, attempts, reason or message


class TeacherUnavailableError(TeacherRequestError):
    """The endpoint is down (the circuit breaker opened, or nothing answered) and the
    fallback is ``error``."""


class _AttemptFailed(Exception):
    """One attempt failed: what happened and whether another attempt may help."""

    def __init__(self, kind: str, *, retryable: bool, status: int | None = None, detail: str = "") -> None:
        super().__init__(kind)
        self.kind, self.retryable, self.status, self.detail = kind, retryable, status, detail

    def describe(self) -> str:
        return f"{self.kind} ({self.detail})" if self.detail else self.kind


def chat_completions_url(base_url: str) -> str:
    """``<base_url>/v1/chat/completions``; a base URL already ending in ``/v1`` is accepted."""
    root = base_url.rstrip("/")
    if root.endswith("/chat/completions"):
        return root
    if not root.endswith("/v1"):
        root += "/v1"
    return root + "/chat/completions"


def redacted_url(url: str) -> str:
    """The URL as messages show it: without user info, query or fragment (places a key may hide)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    netloc = f"***@{host}" if "@" in parts.netloc else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _snippet(data: bytes) -> str:
    text = data[:SNIPPET_CHARS].decode("utf-8", errors="replace")
    return " ".join(text.split()) + ("..." if len(data) > SNIPPET_CHARS else "")


def _connection_failure(error: BaseException, timeout: float) -> _AttemptFailed:
    """Classify a transport error (all retried)."""
    if isinstance(error, urllib.error.URLError) and isinstance(error.reason, BaseException):
        error = error.reason
    if isinstance(error, TimeoutError):
        detail = str(error) if str(error) not in ("", "timed out") else f"no data for {timeout:g} s"
        return _AttemptFailed("timeout", retryable=True, detail=detail)
    if isinstance(error, ConnectionRefusedError):
        return _AttemptFailed("connection refused", retryable=True)
    if isinstance(error, http.client.IncompleteRead):
        return _AttemptFailed("truncated response", retryable=True, detail=f"{len(error.partial)} bytes, then the end")
    if isinstance(error, ConnectionResetError):
        return _AttemptFailed("connection reset", retryable=True, detail=type(error).__name__)
    return _AttemptFailed("connection error", retryable=True, detail=f"{type(error).__name__}: {error}")


class OpenAICompatibleTeacher(Teacher):
    """Teacher that asks a chat-completion endpoint for each episode's skill."""

    name = "openai_compatible"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_concurrency: int = 4,
        sampling: SamplingConfig | None = None,
        max_tokens: int = 512,
        max_prompt_chars: int = DEFAULT_MAX_CHARS,
        circuit_breaker: int = 5,
        fallback: Teacher | None = None,
        fail_when_down: bool = False,
    ) -> None:
        """Configure the endpoint.

        Args:
            base_url: Server root, e.g. "http://127.0.0.1:8000" (or ".../v1").
            model: Model name sent in the request.
            api_key: Sent as a Bearer token when given (keep it in conf/local credentials).
            timeout: Seconds without data before an attempt is given up (also the longest
                a body may take to arrive).
            max_retries: Retries after the first attempt, for retryable failures.
            backoff: First retry delay in seconds; doubles after each retry.
            max_concurrency: Requests in flight at once.
            sampling: How the endpoint decodes; its ``temperature`` is sent with each request
                (None: greedy, temperature 0).
            max_tokens: Cap on the answer's length.
            max_prompt_chars: Cap on the analysis prompt's length.
            circuit_breaker: Consecutive episodes without an answer after which the endpoint
                is taken as down (0: never; every episode is still tried).
            fallback: Teacher for the episodes that got no answer (None: no skill).
            fail_when_down: Raise ``TeacherUnavailableError`` when the endpoint is down
                instead of applying the fallback.
        """
        if max_retries < 0 or max_concurrency < 1 or circuit_breaker < 0:
            raise ValueError("max_retries and circuit_breaker must be >= 0 and max_concurrency >= 1")
        if timeout <= 0 or backoff < 0:
            raise ValueError(f"timeout must be > 0 and backoff >= 0, got {timeout} and {backoff}")
        self.url = chat_completions_url(base_url)
        self.safe_url = redacted_url(self.url)
        self.model, self.api_key, self.max_tokens = model, api_key, max_tokens
        self.temperature = 0.0 if sampling is None else sampling.temperature
        self.timeout, self.max_retries, self.backoff = timeout, max_retries, backoff
        self.max_concurrency, self.max_prompt_chars = max_concurrency, max_prompt_chars
        self.circuit_breaker, self.fallback, self.fail_when_down = circuit_breaker, fallback, fail_when_down
        self.last_run: dict[str, int] = {}
        """Counts of the last ``write_skills``: episodes, answered, no_answer, not_sent,
        fallback_records, attempts, down (1 when the endpoint was taken as down)."""
        self._lock = threading.Lock()
        self._down = threading.Event()
        self._attempts = self._consecutive_failures = self._not_sent = 0
        self._last_error: TeacherRequestError | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self.safe_url!r}, model={self.model!r})"  # never the key

    def _scrub(self, text: str) -> str:
        return text.replace(self.api_key, "***") if self.api_key else text

    def _read_body(self, response: http.client.HTTPResponse, deadline: float) -> bytes:
        """The whole body, or ``TimeoutError`` past the deadline, ``IncompleteRead`` if cut short."""
        chunks = []
        while chunk := response.read1(65536):
            chunks.append(chunk)
            if time.monotonic() > deadline:
                raise TimeoutError(f"body still arriving after {self.timeout:g} s")
        body = b"".join(chunks)
        if response.length:  # Content-Length promised more than came
            raise http.client.IncompleteRead(body, response.length)
        return body

    def _post_once(self, prompt: str) -> str:
        """One attempt; ``_AttemptFailed`` on any failure."""
        message = {"role": "user", "content": prompt}
        body = json.dumps({"model": self.model, "messages": [message], "temperature": self.temperature,
                           "max_tokens": self.max_tokens}).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        deadline = time.monotonic() + self.timeout
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = self._read_body(response, deadline)
        except urllib.error.HTTPError as error:
            try:  # one read at most (read1): a slow error body must not stall the retry
                read = getattr(error.fp, "read1", None) or error.read
                detail = _snippet(read(SNIPPET_CHARS + 1) or b"") or str(error.reason)
            except (OSError, ValueError, AttributeError, http.client.HTTPException):
                detail = str(error.reason)
            if error.code in STATUS_HINTS:
                detail += f"; {STATUS_HINTS[error.code]}"
            raise _AttemptFailed(f"HTTP {error.code}", retryable=error.code in RETRYABLE_STATUS,
                                 status=error.code, detail=self._scrub(detail)) from error
        except (OSError, http.client.HTTPException) as error:  # URLError, timeouts, resets
            raise _connection_failure(error, self.timeout) from error
        try:
            payload = json.loads(raw.decode("utf-8"))
        except ValueError as error:
            raise _AttemptFailed("non-JSON response", retryable=False, status=200,
                                 detail=self._scrub(f"{error}; body: {_snippet(raw)!r}")) from error
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as error:
            keys = sorted(payload) if isinstance(payload, dict) else type(payload).__name__
            raise _AttemptFailed("unexpected response shape", retryable=False, status=200,
                                 detail=f"no choices[0].message.content; got {keys}") from error
        if content is not None and not isinstance(content, str):
            raise _AttemptFailed("unexpected response shape", retryable=False, status=200,
                                 detail=f"message content is a {type(content).__name__}")
        return content or ""

    def complete(self, prompt: str) -> str:
        """Send one prompt, retrying retryable failures; raise ``TeacherRequestError`` at the end.

        Args:
            prompt: The user message.

        Returns:
            The assistant message's content.
        """
        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            with self._lock:
                self._attempts += 1
            try:
                return self._post_once(prompt)
            except _AttemptFailed as error:
                failure = error
            if not failure.retryable or attempt == attempts:
                note = "" if failure.retryable else " (not retried)"
                break
            delay = self.backoff * 2 ** (attempt - 1)
            logger.warning("teacher at %s: %s (attempt %d of %d); retrying in %.2f s", self.safe_url,
                           failure.describe(), attempt, attempts, delay)
            if self._down.wait(delay):  # the circuit breaker opened (now or before)
                note = " (endpoint taken as down: no more retries)"
                break
        reason = f"{failure.describe()} after {attempt} attempt(s){note}"
        raise TeacherRequestError(f"teacher at {self.safe_url}: {reason}", kind=failure.kind, status=failure.status,
                                  attempts=attempt, reason=reason)

    def _note(self, error: TeacherRequestError | None) -> None:
        """Count an episode's outcome; open the circuit breaker after too many failures in a row."""
        with self._lock:
            if error is None:
                self._consecutive_failures = 0
                return
            self._last_error = error
            self._consecutive_failures += 1
            if self.circuit_breaker and self._consecutive_failures >= self.circuit_breaker and not self._down.is_set():
                self._down.set()
                logger.error("teacher at %s taken as down: %d episodes in a row got no answer (last: %s); the "
                             "remaining episodes are not sent", self.safe_url, self._consecutive_failures, error.reason)

    def _ask(self, episode: EpisodeView) -> str | None:
        """The endpoint's answer for an episode, or None (no answer, or not sent)."""
        if self._down.is_set():
            with self._lock:
                self._not_sent += 1
            return None
        prompt = episode_analysis_prompt(episode, max_chars=self.max_prompt_chars)
        try:
            output = self.complete(prompt)
        except Exception as error:  # an unexpected client error, too, only costs this episode
            if not isinstance(error, TeacherRequestError):
                reason = f"unexpected {type(error).__name__}: {self._scrub(str(error))}"
                error = TeacherRequestError(f"teacher at {self.safe_url}: {reason}", kind="unexpected", reason=reason)
            logger.error("no answer for episode %s: %s", episode.episode_id, error)
            self._note(error)
            return None
        self._note(None)
        return output

    def write_skills(self, episodes: Sequence[EpisodeView]) -> list[SkillRecord]:
        """Ask the endpoint for every episode's skill, ``max_concurrency`` at a time; the
        episodes without an answer get the fallback (module docstring).

        Args:
            episodes: Finished episodes.

        Returns:
            One record per episode, in order.

        Raises:
            TeacherUnavailableError: The endpoint is down and ``fail_when_down`` is set.
        """
        episodes = list(episodes)
        self._down.clear()
        self._attempts, self._consecutive_failures, self._last_error, self._not_sent = 0, 0, None, 0
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            outputs = list(pool.map(self._ask, episodes))
        missing = [index for index, output in enumerate(outputs) if output is None]
        answered = len(episodes) - len(missing)
        down = self._down.is_set() or (bool(episodes) and answered == 0)
        records = [record_from_output(episode, output, self.name) for episode, output in zip(episodes, outputs)]
        self.last_run = {"episodes": len(episodes), "answered": answered, "no_answer": len(missing), "not_sent":
                         self._not_sent, "attempts": self._attempts, "fallback_records": 0, "down": int(down)}
        if down:
            fallback_name = self.fallback.name if self.fallback is not None else "none (no skill)"
            message = (f"teacher at {self.safe_url} unavailable: {self._last_error.reason}; "
                       f"{len(missing)} of {len(episodes)} episode(s) got no answer "
                       f"({self._not_sent} not sent, {self._attempts} attempts in all)")
            if self.fail_when_down:
                raise TeacherUnavailableError(
                    message + "; set skills.teacher_fallback to rule_miner or none to go on without the endpoint",
                    kind="unavailable", attempts=self._attempts)
            logger.error("%s; they get the fallback teacher: %s", message, fallback_name)
        if missing and self.fallback is not None:
            substitutes = self.fallback.write_skills([episodes[index] for index in missing])
            for index, record in zip(missing, substitutes, strict=True):
                records[index] = record
            self.last_run["fallback_records"] = len(missing)
        logger.info("teacher at %s: %d episodes, %d answered, %d parsed skills, %d from the fallback, %d attempts",
                    self.safe_url, len(records), answered, sum(record.parse_ok for record in records),
                    self.last_run["fallback_records"], self._attempts)
        return records
