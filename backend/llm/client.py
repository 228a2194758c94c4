"""An async client for OpenAI-compatible chat endpoints (vLLM, Ollama, llama.cpp, hosted APIs).

``ChatClient(settings).complete(messages, response_format, deadline=...)`` POSTs to
``{base_url}/chat/completions`` and returns the answer's text; :meth:`ChatClient.chat` returns
the whole :class:`Completion` (every choice with its ``finish_reason``, and the token ``usage``
the server reported, if it did), for another model than the settings' and for ``n`` choices. It

- retries 429, 5xx, timeouts and connection errors with exponential backoff and jitter,
  waiting at least what ``Retry-After`` asks (seconds or an HTTP date), and gives up at once
  when that wait would pass the caller's deadline (the loop is ``tenacity``'s);
- asks for structured output (``response_format``) unless the JSON mode is ``off``; in ``auto``
  mode a server that refuses it (400/422 naming it) is asked again without, and remembered;
- turns every failure (HTTP error, HTML or empty body, malformed JSON, no choices) into an
  :class:`LLMError` with a ``kind`` for counting, and never lets the API key into a message;
- replaces lone surrogates (``"\\ud800"``, valid JSON but not encodable text) in answers with
  U+FFFD, so an answer can always be stored, logged and returned.
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import tenacity

from judgelab.backend.http_tls import tls_context
from judgelab.backend.settings import LLMSettings

log = logging.getLogger("judgelab.llm.client")

RETRY_STATUS = {408, 425, 429}  # and every 5xx
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 20.0
MIN_ATTEMPT_S = 0.05  # an attempt with less time left than this is not started
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured output", "guided_json")
_SURROGATES = re.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (other text unchanged).

    >>> without_surrogates("bad \\ud800 char") == "bad \\ufffd char"
    True
    """
    return _SURROGATES.sub("\ufffd", text)


@dataclass(frozen=True)
class Usage:
    """The tokens one request cost, as the server reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class Choice:
    text: str
    finish_reason: str | None = None

    @property
    def cut(self) -> bool:
        """The answer stopped at ``max_tokens`` (``finish_reason`` ``"length"``)."""
        return self.finish_reason == "length"


@dataclass(frozen=True)
class Completion:
    """One answered request: its choices (at least one, each with text) and its ``usage``
    (``None`` when the server did not report it: the usage log then counts tokens estimated from
    the text, see :mod:`judgelab.backend.llm.token_estimate`)."""

    choices: list[Choice] = field(default_factory=list)
    usage: Usage | None = None


def _usage(payload: dict[str, Any]) -> Usage | None:
    usage = payload.get("usage")
    if not isinstance(usage, dict):
        return None
    counts = [usage.get("prompt_tokens"), usage.get("completion_tokens")]
    if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
        return None
    return Usage(int(counts[0]), int(counts[1]))


class LLMError(Exception):
    """No usable answer. ``kind`` is one of: ``http_<status>``, ``rate_limited``, ``timeout``,
    ``connection``, ``bad_response``, ``deadline``, ``auth``, ``not_found``, ``format_rejected``."""

    def __init__(self, kind: str, message: str, status: int | None = None, attempts: int = 1):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.attempts = attempts

    def __repr__(self) -> str:
        return f"LLMError(kind={self.kind!r}, status={self.status!r}, message={str(self)!r})"


def parse_retry_after(headers: httpx.Headers, now: float | None = None) -> float | None:
    """Seconds a server asks to wait: ``Retry-After`` as seconds or an HTTP date, or
    ``retry-after-ms`` (OpenAI); None when absent or unreadable.

    >>> parse_retry_after(httpx.Headers({"Retry-After": "2"}))
    2.0
    >>> parse_retry_after(httpx.Headers({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}), now=1445412470.0)
    10.0
    """
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _snippet(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _message_text(content: Any) -> str | None:
    """The text of a message's content: a string, or a list of parts (``{"type": "text"}``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(parts) if parts else None
    return None


class ChatClient:
    """One OpenAI-compatible server. Use as ``async with ChatClient(settings) as client``, or call
    :meth:`aclose`. Not shared across event loops (its connection pool belongs to one)."""

    def __init__(self, settings: LLMSettings, *, http: httpx.AsyncClient | None = None):
        settings.check_endpoint()
        self.settings = settings
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        self._http = http or httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(settings.timeout),
            verify=tls_context(),
            limits=httpx.Limits(
                max_connections=settings.concurrency + 4, max_keepalive_connections=settings.concurrency
            ),
        )
        self.format_supported = True  # set False when this server refused a response_format (auto mode)
        self.stats: Counter = Counter()  # requests, retries, errors by kind, format fallbacks

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    def redact(self, text: str) -> str:
        key = self.settings.api_key
        return text.replace(key, "***") if key else text

    def _error(self, kind: str, message: str, status: int | None = None, count: bool = True) -> LLMError:
        """An :class:`LLMError` with the API key redacted; counted unless it will be retried."""
        if count:
            self.stats[f"error: {kind}"] += 1
        return LLMError(kind, self.redact(message), status=status)

    async def models(self) -> list[str]:
        """The model ids the server lists (``GET {base_url}/models``)."""
        url = self.settings.base_url.rstrip("/") + "/models"
        try:
            response = await self._http.get(url)
        except httpx.HTTPError as exc:
            raise self._error("connection", f"GET {url}: {type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise self._error(f"http_{response.status_code}", f"GET {url}: HTTP {response.status_code}")
        try:
            return [str(m["id"]) for m in response.json()["data"]]
        except (ValueError, KeyError, TypeError):
            raise self._error("bad_response", f"GET {url}: not a model list: {_snippet(response.text)!r}") from None

    def payload(
        self,
        messages: list[dict[str, Any]],
        response_format: dict[str, Any] | None,
        model: str | None = None,
        n: int = 1,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model or self.settings.model,
            "messages": messages,
            "temperature": self.settings.temperature,
            "max_tokens": self.settings.max_tokens,
            "stream": False,
        }
        if n > 1:
            body["n"] = n
        if response_format is not None and self.settings.json_mode != "off" and self.format_supported:
            body["response_format"] = response_format
        return body

    async def complete(
        self,
        messages: list[dict[str, Any]],
        response_format: dict[str, Any] | None = None,
        *,
        deadline: float | None = None,
    ) -> str:
        """The answer's text. ``deadline`` is a :func:`time.monotonic` time after which no
        attempt starts and no backoff sleeps. Raises :class:`LLMError`."""
        completion = await self.chat(messages, response_format, deadline=deadline)
        return completion.choices[0].text

    async def chat(
        self,
        messages: list[dict[str, Any]],
        response_format: dict[str, Any] | None = None,
        *,
        deadline: float | None = None,
        model: str | None = None,
        n: int = 1,
    ) -> Completion:
        """The whole answer: up to ``n`` choices (a server may give fewer) and the usage,
        from ``model`` (default: the settings'). Retries and deadline as :meth:`complete`."""

        async def ask() -> Completion:  # one attempt; a server refusing response_format is asked again at once
            while True:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining < MIN_ATTEMPT_S:
                    raise self._error("deadline", "no time left before the deadline")
                try:
                    return await self._attempt(self.payload(messages, response_format, model, n), remaining)
                except _FormatRejected as rejected:
                    if self.settings.json_mode != "auto":
                        raise self._error(
                            "format_rejected",
                            f"the server refused response_format (JUDGELAB_LLM_JSON_MODE=on): {rejected}",
                            status=rejected.status,
                        ) from None
                    self.format_supported = False
                    self.stats["format fallback"] += 1
                    log.warning("the LLM server refused response_format (%s); asking without it from now on", rejected)

        def stop(state: tenacity.RetryCallState) -> bool:  # the wait is known: tenacity computes it first
            late = deadline is not None and time.monotonic() + state.upcoming_sleep + MIN_ATTEMPT_S > deadline
            return state.attempt_number > self.settings.retries or late

        def gave_up(state: tenacity.RetryCallState) -> Completion:
            error = _failure(state).error
            self.stats[f"error: {error.kind}"] += 1
            error.attempts = state.attempt_number
            if state.attempt_number <= self.settings.retries:  # stopped by the deadline
                wait = f"not retried: a {state.upcoming_sleep:.1f} s wait would pass the deadline"
                error = LLMError(error.kind, f"{error}; {wait}", status=error.status, attempts=error.attempts)
            raise error from None

        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(_Retryable),
            wait=lambda state: self._backoff(state.attempt_number, _failure(state).retry_after),
            stop=stop,
            before_sleep=self._before_retry,
            retry_error_callback=gave_up,
        )
        return await retrying(ask)

    def _before_retry(self, state: tenacity.RetryCallState) -> None:
        self.stats["retries"] += 1
        error, attempt, wait = _failure(state).error, state.attempt_number, state.upcoming_sleep
        log.info("LLM request failed (%s), attempt %d; retrying in %.2f s", error, attempt, wait)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after + random.uniform(0, min(1.0, 0.1 * retry_after + 0.05))
        return min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)

    async def _attempt(self, body: dict[str, Any], remaining: float | None) -> Completion:
        timeout = self.settings.timeout if remaining is None else min(self.settings.timeout, remaining)
        self.stats["requests"] += 1
        try:
            response = await self._http.post(self.url, json=body, timeout=timeout)
        except httpx.TimeoutException as exc:
            kind = "connection" if isinstance(exc, httpx.PoolTimeout) else "timeout"
            if kind == "timeout" and timeout < self.settings.timeout:
                # cut short by the caller's deadline, not by JUDGELAB_LLM_TIMEOUT: no time for a retry
                raise self._error(
                    "deadline", f"no answer from {self.url} in the {timeout:.1f} s left before the deadline"
                ) from None
            raise _Retryable(
                self._error(kind, f"no answer from {self.url} within {timeout:.1f} s", count=False)
            ) from None
        except (httpx.TransportError, OSError) as exc:  # refused, reset, DNS, protocol errors
            message = f"{self.url}: {type(exc).__name__}: {exc}"
            raise _Retryable(self._error("connection", message, count=False)) from None
        status = response.status_code
        if status != 200:
            text = self.redact(_snippet(response.text))
            if status in RETRY_STATUS or status >= 500:
                kind = "rate_limited" if status == 429 else f"http_{status}"
                raise _Retryable(
                    self._error(kind, f"HTTP {status} from {self.url}: {text!r}", status, count=False),
                    parse_retry_after(response.headers),
                )
            if status in (400, 422) and "response_format" in body and any(w in text.lower() for w in _FORMAT_WORDS):
                raise _FormatRejected(f"HTTP {status}: {text!r}", status)
            if status in (401, 403):
                raise self._error("auth", f"HTTP {status} from {self.url}: check JUDGELAB_LLM_API_KEY", status)
            if status == 404:
                raise self._error(
                    "not_found",
                    f"HTTP 404 from {self.url}: {text!r} (does JUDGELAB_LLM_BASE_URL end with /v1, "
                    f"and does the server serve model {body.get('model')!r}?)",
                    status,
                )
            raise self._error(f"http_{status}", f"HTTP {status} from {self.url}: {text!r}", status)
        return self._completion(response)

    def _completion(self, response: httpx.Response) -> Completion:
        raw = response.content
        if not raw.strip():
            raise self._error("bad_response", f"empty body from {self.url}")
        try:
            payload = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            kind = "HTML" if raw.lstrip()[:1] == b"<" else "not JSON"
            snippet = self.redact(_snippet(raw.decode("utf-8", "replace")))
            raise self._error("bad_response", f"{kind} body from {self.url}: {snippet!r}") from None
        choices = payload.get("choices") if isinstance(payload, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            detail = payload.get("error") if isinstance(payload, dict) and payload.get("error") else "no choices"
            raise self._error("bad_response", self.redact(f"answer from {self.url} has {_snippet(str(detail))}"))
        usage = _usage(payload)
        if usage is None:
            self.stats["answers without usage"] += 1
        answered = []
        for choice in choices:
            if not isinstance(choice, dict):
                continue
            message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
            text = _message_text(message.get("content"))
            if text is None and isinstance(choice.get("text"), str):  # completions-style servers
                text = choice["text"]
            if text is None or not text.strip():
                continue
            reason = choice.get("finish_reason")
            if reason == "length":
                self.stats["truncated (max_tokens)"] += 1
            answered.append(Choice(without_surrogates(text), reason if isinstance(reason, str) else None))
        if not answered:
            reason = choices[0].get("finish_reason")
            raise self._error("bad_response", f"answer from {self.url} has no text (finish_reason={reason!r})")
        return Completion(answered, usage)


class _Retryable(Exception):
    def __init__(self, error: LLMError, retry_after: float | None = None):
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


def _failure(state: tenacity.RetryCallState) -> _Retryable:
    """The failed attempt's :class:`_Retryable` (tenacity retries nothing else)."""
    return state.outcome.exception()  # type: ignore[union-attr,return-value]


class _FormatRejected(Exception):
    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status
