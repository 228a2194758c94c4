"""Retries of Label Studio's reads: a request that only reads (GET, HEAD, OPTIONS) is sent again
when Label Studio answers 429, 500, 502, 503 or 504 (its export answers 500 under concurrent
exports) or the connection drops (before the answer or in the middle of its body), a few times
with a growing pause. Requests that change something (POST, PATCH, PUT, DELETE) are never
repeated by the transport: a repeat after a lost answer could add a second copy; the commands
that send them find out what Label Studio already has when they are run again (task keys,
prediction versions).

A write that meets the same failures is repeated only through :func:`repeat_write`, which first
looks whether it landed all the same (the answer alone may have been lost) and sends it again only
if it did not: a 500 while Label Studio is busy (SQLite locked by another import) is ridden out as
for a read, and nothing is stored twice.

``JUDGELAB_HTTP_RETRIES`` (attempts in all, default 5) and ``JUDGELAB_HTTP_RETRY_PAUSE`` (the
first pause in seconds, doubled each time, default 0.5) configure it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import TypeVar

import httpx

log = logging.getLogger("judgelab.sync")

RETRIED_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
RETRIED_STATUS = frozenset({429, 500, 502, 503, 504})
RETRIED_ERRORS = (httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError)  # dropped mid-request
CONNECT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout)  # refused: a server that is down stays down
CONNECT_ATTEMPTS = 2
MAX_PAUSE_SECONDS = 8.0
#: A write whose answer did not come (cut off, timed out) may have landed: looked for, then repeated.
LOST_ANSWER_ERRORS = (*RETRIED_ERRORS, httpx.TimeoutException)
T = TypeVar("T")


def _setting(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


class RetryingTransport(httpx.BaseTransport):
    """An httpx transport that repeats failed reads (see the module doc)."""

    def __init__(
        self, inner: httpx.BaseTransport | None = None, attempts: int | None = None, pause: float | None = None
    ) -> None:
        self.inner = inner or httpx.HTTPTransport()
        self.attempts = max(1, int(attempts if attempts is not None else _setting("JUDGELAB_HTTP_RETRIES", 5)))
        self.pause = max(0.0, pause if pause is not None else _setting("JUDGELAB_HTTP_RETRY_PAUSE", 0.5))
        self.retries = 0  # requests repeated so far (for tests and -v)

    def _wait(self, attempt: int, request: httpx.Request, why: str) -> None:
        self.retries += 1
        log.info("%s %s: %s; trying again (%d/%d)", request.method, request.url.path, why, attempt + 1, self.attempts)
        time.sleep(min(self.pause * 2 ** (attempt - 1), MAX_PAUSE_SECONDS))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method not in RETRIED_METHODS:
            return self.inner.handle_request(request)
        for attempt in range(1, self.attempts + 1):
            try:
                response = self.inner.handle_request(request)
                response.read()  # a body cut in the middle fails here, where it can be retried
            except CONNECT_ERRORS as exc:
                if attempt >= min(self.attempts, CONNECT_ATTEMPTS):
                    raise
                self._wait(attempt, request, f"{type(exc).__name__}: {exc}")
                continue
            except RETRIED_ERRORS as exc:
                if attempt == self.attempts:
                    raise
                self._wait(attempt, request, f"{type(exc).__name__}: {exc}")
                continue
            if response.status_code in RETRIED_STATUS and attempt < self.attempts:
                response.close()
                self._wait(attempt, request, f"HTTP {response.status_code}")
                continue
            return response
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        self.inner.close()


def retrying_client(timeout: float, **kwargs: object) -> httpx.Client:
    """An ``httpx.Client`` whose reads are retried (:class:`RetryingTransport`)."""
    return httpx.Client(timeout=timeout, transport=RetryingTransport(), follow_redirects=True, **kwargs)


def repeat_write(send: Callable[[], T], landed: Callable[[], T | None], what: str) -> T:
    """``send()`` a write; when Label Studio answers 429 or 5xx or its answer is lost, wait as a
    read would, ask ``landed()`` whether the write is there all the same (its result, or None)
    and send it again only when it is not. The last failure is raised as it came."""
    from label_studio_sdk.core.api_error import ApiError

    attempts = max(1, int(_setting("JUDGELAB_HTTP_RETRIES", 5)))
    pause = max(0.0, _setting("JUDGELAB_HTTP_RETRY_PAUSE", 0.5))
    for attempt in range(1, attempts + 1):
        try:
            return send()
        except ApiError as exc:
            if exc.status_code not in RETRIED_STATUS or attempt == attempts:
                raise
            why = f"HTTP {exc.status_code}"
        except LOST_ANSWER_ERRORS as exc:
            if attempt == attempts:
                raise
            why = type(exc).__name__
        log.info("%s: %s; looking whether it landed, then trying again (%d/%d)", what, why, attempt + 1, attempts)
        time.sleep(min(pause * 2 ** (attempt - 1), MAX_PAUSE_SECONDS))
        found = landed()
        if found is not None:
            return found
    raise AssertionError("unreachable")  # pragma: no cover
