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
first pause in seconds, doubled each time, default 0.5) configure it. The policy
(:func:`read_policy`, built on ``tenacity``) is also the one judgelab's client of the ML backend
uses (:mod:`judgelab.sync.backend_client`).
"""

from __future__ import annotations

import functools
import logging
import os
import ssl
import time
from collections.abc import Callable
from typing import TypeVar

import httpx
import tenacity

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


def _wait(pause: float | None) -> tenacity.wait_base:
    """A pause of ``pause`` (default ``$JUDGELAB_HTTP_RETRY_PAUSE``), doubled each time up to a cap."""
    pause = max(0.0, pause if pause is not None else _setting("JUDGELAB_HTTP_RETRY_PAUSE", 0.5))
    return tenacity.wait_exponential(multiplier=pause, max=MAX_PAUSE_SECONDS)


def retry_attempts(attempts: int | None = None) -> int:
    """Attempts in all: ``attempts``, else ``$JUDGELAB_HTTP_RETRIES`` (default 5); at least 1."""
    return max(1, int(attempts if attempts is not None else _setting("JUDGELAB_HTTP_RETRIES", 5)))


def read_policy(
    what: str,
    attempts: int | None = None,
    pause: float | None = None,
    *,
    on_retry: Callable[[], None] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> tenacity.Retrying:
    """The retries of a read (see the module doc) around a call that returns an ``httpx.Response``
    with its body read: a refused connection is tried :data:`CONNECT_ATTEMPTS` times, a dropped
    one and the :data:`RETRIED_STATUS` answers ``attempts`` times; the last answer is returned as
    it came, the last error raised as it came. ``what`` names the request in the log."""
    attempts = retry_attempts(attempts)

    def refused(state: tenacity.RetryCallState) -> bool:  # a server that is down stays down
        return isinstance(state.outcome.exception(), CONNECT_ERRORS) and state.attempt_number >= CONNECT_ATTEMPTS

    def before_sleep(state: tenacity.RetryCallState) -> None:
        if state.outcome.failed:
            why = f"{type(state.outcome.exception()).__name__}: {state.outcome.exception()}"
        else:
            state.outcome.result().close()
            why = f"HTTP {state.outcome.result().status_code}"
        log.info("%s: %s; trying again (%d/%d)", what, why, state.attempt_number + 1, attempts)
        if on_retry:
            on_retry()

    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts) | refused,
        wait=_wait(pause),
        retry=tenacity.retry_if_exception_type((*CONNECT_ERRORS, *RETRIED_ERRORS))
        | tenacity.retry_if_result(lambda response: response.status_code in RETRIED_STATUS),
        before_sleep=before_sleep,
        retry_error_callback=lambda state: state.outcome.result(),  # the last answer, or its error raised
        sleep=sleep or time.sleep,
    )


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS settings every HTTP client of this process shares (httpx's defaults: certifi's
    certificate authorities, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``). httpx builds its own for each
    client it makes, for an ``http://`` URL too, reading the authorities' bundle each time: 40-50 ms
    of CPU per client, the same again for each one-off ``httpx.get``. A poll of a server's
    ``/health`` every 0.2 s spent a fifth of a core on it; with this, a client costs under 1 ms."""
    return httpx.create_ssl_context()


class RetryingTransport(httpx.BaseTransport):
    """An httpx transport that repeats failed reads (see the module doc)."""

    def __init__(
        self, inner: httpx.BaseTransport | None = None, attempts: int | None = None, pause: float | None = None
    ) -> None:
        self.inner = inner or httpx.HTTPTransport(verify=tls_context())
        self.attempts, self.pause = attempts, pause
        self.retries = 0  # requests repeated so far (for tests and -v)

    def _counted(self) -> None:
        self.retries += 1

    def _send(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        response.read()  # a body cut in the middle fails here, where it can be retried
        return response

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method not in RETRIED_METHODS:
            return self.inner.handle_request(request)
        policy = read_policy(f"{request.method} {request.url.path}", self.attempts, self.pause, on_retry=self._counted)
        return policy(self._send, request)

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

    attempts = retry_attempts()

    def retried(exc: BaseException) -> bool:
        return isinstance(exc, LOST_ANSWER_ERRORS) or (isinstance(exc, ApiError) and exc.status_code in RETRIED_STATUS)

    def before_sleep(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception()
        why = f"HTTP {exc.status_code}" if isinstance(exc, ApiError) else type(exc).__name__
        then = f"looking whether it landed, then trying again ({state.attempt_number + 1}/{attempts})"
        log.info("%s: %s; %s", what, why, then)

    policy = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        wait=_wait(None),
        retry=tenacity.retry_if_exception(retried),
        before_sleep=before_sleep,
        reraise=True,
    )
    for attempt in policy:
        if attempt.retry_state.attempt_number > 1:
            found = landed()  # outside the attempt: its own failure is raised as it came
            if found is not None:
                return found
        with attempt:
            return send()
    raise AssertionError("unreachable")  # pragma: no cover
