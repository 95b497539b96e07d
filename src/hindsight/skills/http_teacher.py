"""A teacher behind any OpenAI-compatible chat endpoint (a vLLM server, a hosted API).

Each episode's analysis prompt is POSTed to ``<base_url>/v1/chat/completions`` with the
standard library's ``urllib`` (no extra dependency). Timeouts, connection errors, HTTP 5xx and
429 are retried up to ``max_retries`` times with exponential backoff (``backoff * 2**k``
seconds); other HTTP errors are not retried. At most ``max_concurrency`` requests are in
flight (a thread pool). A request that still fails gives a record with ``parse_ok=False``
and is logged: never fatal.
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from hindsight.skills.analysis_prompt import DEFAULT_MAX_CHARS
from hindsight.skills.episode_views import EpisodeView
from hindsight.skills.records import SkillRecord, record_from_output
from hindsight.skills.teachers import Teacher, episode_analysis_prompt

logger = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class TeacherRequestError(RuntimeError):
    """A chat-completion request failed for good (after the retries, or not retryable)."""


def chat_completions_url(base_url: str) -> str:
    """``<base_url>/v1/chat/completions``; a base URL already ending in ``/v1`` is accepted."""
    root = base_url.rstrip("/")
    if root.endswith("/chat/completions"):
        return root
    if not root.endswith("/v1"):
        root += "/v1"
    return root + "/chat/completions"


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
        temperature: float = 0.0,
        max_tokens: int = 512,
        max_prompt_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        """Configure the endpoint.

        Args:
            base_url: Server root, e.g. "http://127.0.0.1:8000" (or ".../v1").
            model: Model name sent in the request.
            api_key: Sent as a Bearer token when given (keep it in conf/local credentials).
            timeout: Seconds per request.
            max_retries: Retries after the first attempt, for retryable failures.
            backoff: First retry delay in seconds; doubles after each retry.
            max_concurrency: Requests in flight at once.
            temperature: Sampling temperature.
            max_tokens: Cap on the answer's length.
            max_prompt_chars: Cap on the analysis prompt's length.
        """
        if max_retries < 0 or max_concurrency < 1:
            raise ValueError("max_retries must be >= 0 and max_concurrency >= 1")
        self.url = chat_completions_url(base_url)
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_concurrency = max_concurrency
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_prompt_chars = max_prompt_chars

    def _post_once(self, prompt: str) -> str:
        body = json.dumps(
            {
                "model": self.model,
                "messages": [{"role": "user", "content": prompt}],
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
            }
        ).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            payload = json.loads(response.read().decode("utf-8"))
        try:
            return payload["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as error:
            raise TeacherRequestError(f"{self.url}: unexpected response shape ({error!r})") from error

    def complete(self, prompt: str) -> str:
        """Send one prompt, retrying retryable failures; raise ``TeacherRequestError`` at the end.

        Args:
            prompt: The user message.

        Returns:
            The assistant message's content.
        """
        for attempt in range(self.max_retries + 1):
            try:
                return self._post_once(prompt)
            except urllib.error.HTTPError as error:
                retryable = error.code in RETRYABLE_STATUS
                reason = f"HTTP {error.code}"
            except (urllib.error.URLError, http.client.HTTPException, socket.timeout, TimeoutError, ConnectionError) as error:
                retryable, reason = True, f"{type(error).__name__}: {error}"
            except (ValueError, TeacherRequestError) as error:  # bad JSON / bad shape: not retried
                raise TeacherRequestError(f"{self.url}: {error}") from error
            if not retryable or attempt == self.max_retries:
                raise TeacherRequestError(f"{self.url}: {reason} after {attempt + 1} attempt(s)")
            delay = self.backoff * (2**attempt)
            logger.warning("teacher request failed (%s); retry %d/%d in %.2fs", reason, attempt + 1,
                           self.max_retries, delay)
            time.sleep(delay)
        raise AssertionError("unreachable")

    def _record(self, episode: EpisodeView) -> SkillRecord:
        prompt = episode_analysis_prompt(episode, max_chars=self.max_prompt_chars)
        try:
            output = self.complete(prompt)
        except TeacherRequestError as error:
            logger.error("no skill for episode %s: %s", episode.episode_id, error)
            output = None
        except Exception:  # never fatal: an unexpected client error only costs this skill
            logger.exception("no skill for episode %s: unexpected error", episode.episode_id)
            output = None
        return record_from_output(episode, output, self.name)

    def write_skills(self, episodes: Sequence[EpisodeView]) -> list[SkillRecord]:
        """Ask the endpoint for every episode's skill, ``max_concurrency`` at a time.

        Args:
            episodes: Finished episodes.

        Returns:
            One record per episode, in order.
        """
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            records = list(pool.map(self._record, episodes))
        failed = sum(not record.parse_ok for record in records)
        logger.info("%s teacher: %d skills, %d without a parsed skill", self.url, len(records), failed)
        return records
