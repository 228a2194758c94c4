"""Retries of Label Studio's reads: a request that only reads (GET, HEAD, OPTIONS) is sent again
when Label Studio answers 429, 500, 502, 503 or 504 (its export answers 500 under concurrent
exports) or the connection drops (before the answer or in the middle of its body), a few times
with a growing pause. Requests that change something (POST, PATCH, PUT, DELETE) are never
repeated by the transport: a repeat after a lost answer could add a second copy; the commands
that send them find out what Label Studio already has when they are run again (task keys,
prediction versions).

``JUDGELAB_HTTP_RETRIES`` (attempts in all, default 5) and ``JUDGELAB_HTTP_RETRY_PAUSE`` (the
first pause in seconds, doubled each time, default 0.5) configure it.
"""

from __future__ import annotations

import logging
import os
import time

import httpx

log = logging.getLogger("judgelab.sync")

RETRIED_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
RETRIED_STATUS = frozenset({429, 500, 502, 503, 504})
RETRIED_ERRORS = (httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError)  # dropped mid-request
CONNECT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout)  # refused: a server that is down stays down
CONNECT_ATTEMPTS = 2
MAX_PAUSE_SECONDS = 8.0


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
