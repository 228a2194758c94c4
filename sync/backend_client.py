"""judgelab's one client of the ML backend, at the URL *judgelab* reaches it (which need not be the
one Label Studio has): ``/health``, ``/setup``, ``/predict``, ``/usage`` and the batch routes
(``/batch/requests``, ``/batch/results``, ``/batch/submit``, ``/batch/status``), with the
backend's basic auth and a timeout per request.

Every request is retried as Label Studio's reads are (:func:`judgelab.sync.http_retry.read_policy`:
429 and 5xx answers and dropped connections a few times, a refused connection twice, with a
growing pause; ``JUDGELAB_HTTP_RETRIES`` and ``JUDGELAB_HTTP_RETRY_PAUSE``). That is safe for the
two POSTs too: ``/setup`` only computes the project's model versions, and ``/predict`` is
idempotent: the backend stores nothing (judgelab imports the predictions itself, after asking
Label Studio which tasks already have one) and answers a task it has seen from its cache of the
LLM's answers (``JUDGELAB_CACHE_PATH``, on by default), so a request sent again after a lost answer
neither adds a second prediction nor, with the cache, pays the LLM twice. A timeout is never
retried: a backend still working on it would be given the same work again.

A failure is a :class:`BackendError` (:class:`BackendUnreachable` when no answer came), a
:class:`~judgelab.sync.client.SyncError` whose ``detail`` is what went wrong underneath.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import httpx

from judgelab.sync.client import SyncError
from judgelab.sync.http_retry import read_policy, tls_context

AUTH_ENV = "JUDGELAB_BACKEND_BASIC_AUTH"  # user:password, for a backend behind basic auth
HEALTH_TIMEOUT = 5.0
SETUP_TIMEOUT = 10.0
USAGE_TIMEOUT = 60.0
PREDICT_TIMEOUT = 120.0


class BackendError(SyncError):
    """The backend gave no usable answer; ``detail`` says what went wrong underneath."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail or message


class BackendUnreachable(BackendError):
    """judgelab gets no answer from the backend at the URL it was given (Label Studio may)."""


def auth_from_env() -> tuple[str, str] | None:
    """``$JUDGELAB_BACKEND_BASIC_AUTH`` (``user:password``) as basic auth, or None."""
    value = os.environ.get(AUTH_ENV, "")
    if ":" not in value:
        return None
    user, password = value.split(":", 1)
    return user, password


class BackendClient:
    """The ML backend at ``url``. ``timeout``: for one ``/predict`` (the other requests have their
    own, shorter ones). ``attempts``, ``pause`` and ``sleep`` override the retry policy's
    (:mod:`judgelab.sync.http_retry`). Use as a context manager, or call :meth:`close`."""

    def __init__(
        self,
        url: str,
        auth: tuple[str, str] | None = None,
        timeout: float = PREDICT_TIMEOUT,
        *,
        attempts: int | None = None,
        pause: float | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.auth = auth
        self.timeout = timeout
        self.attempts, self.pause, self._sleep = attempts, pause, sleep
        self.requests = 0  # attempts sent, retries included (for tests and -v)
        self.retries = 0
        self._http = httpx.Client(auth=auth, timeout=timeout, verify=tls_context())

    def __enter__(self) -> BackendClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def __repr__(self) -> str:
        return f"BackendClient({self.url!r})"

    def _counted(self) -> None:
        self.retries += 1

    def _send(self, method: str, path: str, timeout: float, kwargs: dict[str, Any]) -> httpx.Response:
        self.requests += 1
        return self._http.request(method, self.url + path, timeout=timeout, **kwargs)  # its body read

    def _request(self, method: str, path: str, timeout: float, **kwargs: Any) -> httpx.Response:
        """One request, retried (see the module doc); the last answer, or the last httpx error raised."""
        policy = read_policy(
            f"{method} {self.url}{path}", self.attempts, self.pause, on_retry=self._counted, sleep=self._sleep
        )
        return policy(self._send, method, path, timeout, kwargs)

    def health(self, timeout: float = HEALTH_TIMEOUT) -> bool:
        """Whether judgelab (not Label Studio) gets an answer from the backend's ``/health``."""
        try:
            return self._request("GET", "/health", min(timeout, self.timeout)).status_code == 200
        except httpx.HTTPError:
            return False

    def setup(self, project_id: int, label_config: str, extra_params: dict[str, Any] | None) -> dict[str, Any]:
        """The backend's ``/setup`` answer for the project (``model_version``, and per judge with the
        LLM). Raises :class:`BackendUnreachable` when no answer comes, :class:`BackendError` when
        the backend refuses the project's settings or answers something else."""
        body = {"project": f"{project_id}.0", "schema": label_config, "extra_params": extra_params}
        try:
            response = self._request("POST", "/setup", min(SETUP_TIMEOUT, self.timeout), json=body)
        except httpx.HTTPError as exc:
            raise BackendUnreachable(f"ML backend at {self.url} did not answer /setup: {exc}", str(exc)) from None
        if response.status_code == 400:
            try:
                said = response.json().get("error")
            except ValueError:
                said = response.text[:300]
            raise BackendError(f"ML backend at {self.url} refused project {project_id}'s settings: {said}", str(said))
        try:
            response.raise_for_status()
            answer = response.json()
            str(answer["model_version"])
        except (httpx.HTTPError, KeyError, ValueError, TypeError) as exc:
            raise BackendError(f"ML backend at {self.url} did not answer /setup: {exc}", str(exc)) from None
        return answer

    def predict(self, body: dict[str, Any]) -> Any:
        """``/predict``'s ``results`` for ``body`` (as Label Studio sends it: ``tasks``, ``project``,
        ``label_config``, ``params``), whatever their shape. Raises :class:`BackendUnreachable` when
        the connection is refused, :class:`BackendError` for any other failure."""
        # ASCII escapes, as Label Studio sends it: text that is not valid Unicode cannot fail the request
        payload = json.dumps(body).encode("ascii")
        headers = {"Content-Type": "application/json"}
        try:
            response = self._request("POST", "/predict", self.timeout, content=payload, headers=headers)
            response.raise_for_status()
            return response.json().get("results")
        except httpx.ConnectError as exc:
            raise BackendUnreachable(f"ML backend at {self.url} did not answer /predict: {exc}", str(exc)) from None
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            raise BackendError(f"ML backend at {self.url} did not answer /predict: {exc}", str(exc)) from None

    def usage(self, project_id: int, *, after: int | None = None, per: str | None = None) -> dict[str, Any] | None:
        """``/usage`` for the project: the totals since row ``after``, or with ``per="task"`` its
        ``rows``. None when the backend keeps no usage (it answers 404, or 400 to ``per``: an older
        judgelab). Raises :class:`BackendUnreachable` when no answer comes, :class:`BackendError`
        when the answer is not a JSON object."""
        params: dict[str, str] = {"project": str(project_id)}
        if after is not None:
            params["after"] = str(after)
        if per is not None:
            params["per"] = per
        try:
            response = self._request("GET", "/usage", min(USAGE_TIMEOUT, self.timeout), params=params)
        except httpx.HTTPError as exc:
            raise BackendUnreachable(f"ML backend at {self.url} did not answer /usage: {exc}", str(exc)) from None
        if response.status_code in (400, 404):
            return None
        try:
            response.raise_for_status()
            payload = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise BackendError(f"ML backend at {self.url} did not answer /usage: {exc}", str(exc)) from None
        if not isinstance(payload, dict):
            raise BackendError(
                f"ML backend at {self.url} did not answer /usage: not a JSON object", "not a JSON object"
            )
        return payload

    def _batch(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """A batch route's JSON answer; the backend's refusal as a :class:`BackendError` in its words."""
        try:
            response = self._request(method, path, self.timeout, **kwargs)
        except httpx.HTTPError as exc:
            raise BackendUnreachable(f"ML backend at {self.url} did not answer {path}: {exc}", str(exc)) from None
        if response.status_code == 404:
            raise BackendError(f"ML backend at {self.url} has no {path}: is it an older judgelab?", "404")
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if response.status_code != 200:
            said = payload.get("error") if isinstance(payload, dict) else response.text[:300]
            raise BackendError(f"ML backend at {self.url} refused {path}: {said}", str(said))
        if not isinstance(payload, dict):
            raise BackendError(f"ML backend at {self.url} did not answer {path}: not a JSON object")
        return payload

    def batch_requests(self, body: dict[str, Any]) -> dict[str, Any]:
        """``/batch/requests`` for ``body`` (as ``/predict``'s): the batch API request lines of the
        tasks' prompts not yet answered, and the counts."""
        payload = json.dumps(body).encode("ascii")
        return self._batch("POST", "/batch/requests", content=payload, headers={"Content-Type": "application/json"})

    def batch_results(self, text: str, source: str, first_line: int = 1) -> dict[str, Any]:
        """``/batch/results``: a results file's answers (``text``: its lines from ``first_line`` on)
        kept by the backend."""
        body = {"results": text, "source": source, "first_line": first_line}
        return self._batch("POST", "/batch/results", json=body)

    def batch_submit(self, project_id: int, keys: list[str]) -> dict[str, Any]:
        """``/batch/submit``: the request lines of ``keys`` sent to the LLM provider's Batch API."""
        return self._batch("POST", "/batch/submit", json={"project": f"{project_id}.0", "keys": keys})

    def batch_status(self, project_id: int) -> dict[str, Any]:
        """``/batch/status``: the project's open batches, the finished ones collected."""
        return self._batch("GET", "/batch/status", params={"project": str(project_id)})
