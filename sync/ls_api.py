"""The few Label Studio REST reads that ``judgelab sync`` makes, over one httpx connection.

The sync does not need the SDK's models, and importing ``label_studio_sdk`` costs more than a
second of every run, so it talks to the API directly: the Data Manager task list, the quick
export, the predictions list, the project list and the user list. Authentication is the SDK's:
a legacy token is sent as ``Token``; a personal access token (a JWT refresh token) is exchanged
at ``/api/token/refresh/`` for an access token sent as ``Bearer``, and exchanged again when
Label Studio answers 401 (access tokens expire after minutes, a sync can take longer).

:func:`as_api` also wraps an SDK client (the tests and notebooks hold one) in the same interface.
"""

from __future__ import annotations

import base64
import json
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import ijson

from judgelab.sync.client import Connection, SyncError, body_summary, require_token
from judgelab.sync.http_retry import read_policy, retrying_client, tls_context

PROJECT_PAGE_SIZE = 100
#: Bytes read at a time from an answer spooled to a file (:meth:`LabelStudioAPI.iter_json_list`).
SPOOL_CHUNK_BYTES = 1 << 20
#: What judgelab reads of a project in a listing. Asked for by ``include``: without it Label Studio
#: counts every project's tasks, annotations and predictions for the listing, 3-4x the CPU of the
#: request (a version that does not know ``include`` ignores it and sends every field).
PROJECT_FIELDS = ("id", "title", "description", "label_config", "maximum_annotations", "overlap_cohort_percentage")


class NotFound(SyncError):
    """Label Studio answered 404 (a project or task that is gone, or a page past a listing's end)."""


class Unreachable(SyncError):
    """The request did not get an answer (connection refused or reset, timeout)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _jwt_type(token: str) -> str | None:
    """The ``token_type`` claim of a JWT, or None for a legacy token (not a JWT)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None
    return payload.get("token_type") if isinstance(payload, dict) else None


def _not_a_list(path: str, said: str) -> SyncError:
    return SyncError(f"Label Studio: GET {path} did not answer a JSON list: {said}")


class _Reads:
    """Reads built on :meth:`get_json` (shared by both clients)."""

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        raise NotImplementedError

    def iter_json_list(self, path: str, params: dict[str, Any] | None = None) -> Iterator[Any]:
        """The items of an answer that is a JSON list, one at a time. Here the answer is read
        whole first; :class:`LabelStudioAPI` streams it."""
        payload = self.get_json(path, params)
        if not isinstance(payload, list):
            raise _not_a_list(path, repr(body_summary(payload)))
        yield from payload

    def projects(self) -> list[dict[str, Any]]:
        """Every project the token can see, all pages, with the fields judgelab reads
        (:data:`PROJECT_FIELDS`)."""
        out: list[dict[str, Any]] = []
        page = 1
        while True:
            params = {"page": page, "page_size": PROJECT_PAGE_SIZE, "include": ",".join(PROJECT_FIELDS)}
            payload = self.get_json("api/projects/", params)
            if isinstance(payload, list):  # unpaginated answer
                return payload
            results = payload.get("results") or []
            out.extend(results)
            if not results or not payload.get("next") or len(out) >= int(payload.get("count") or 0):
                return out
            page += 1

    def user_emails(self) -> dict[int, str]:
        """User id -> email (or username), how annotators are named in the tables."""
        users = self.get_json("api/users/")
        if isinstance(users, dict):
            users = users.get("results") or []
        return {int(u["id"]): (u.get("email") or u.get("username") or str(u["id"])) for u in users}


class LabelStudioAPI(_Reads):
    """A checked connection to Label Studio's REST API (see the module's docstring)."""

    def __init__(self, url: str, token: str, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self._bearer = _jwt_type(token) is not None
        self._access: str | None = None
        self._http = retrying_client(timeout, base_url=self.url + "/")  # reads retried on 5xx and drops
        # for answers streamed to a file: the retrying transport reads each body into memory first
        self._stream_http = httpx.Client(
            timeout=timeout, base_url=self.url + "/", follow_redirects=True, verify=tls_context()
        )

    def close(self) -> None:
        self._http.close()
        self._stream_http.close()

    def _refresh(self) -> None:
        try:
            response = self._http.post("api/token/refresh/", json={"refresh": self._token})
        except httpx.HTTPError as exc:
            raise SyncError(f"cannot reach Label Studio at {self.url}: {exc}") from None
        if response.status_code >= 400:
            raise SyncError(
                f"Label Studio at {self.url} refused the personal access token (HTTP {response.status_code}): "
                "check --token"
            )
        self._access = response.json()["access"]

    def _headers(self) -> dict[str, str]:
        if not self._bearer:
            return {"Authorization": f"Token {self._token}"}
        if self._access is None:
            self._refresh()
        return {"Authorization": f"Bearer {self._access}"}

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """GET ``path`` (relative to the server) as JSON; a clear :class:`SyncError` otherwise."""
        response = self._get(path, lambda: self._http.get(path, params=params, headers=self._headers()))
        try:
            return response.json()
        except ValueError:
            raise SyncError(f"Label Studio: GET {path} did not answer JSON: {body_summary(response.text)!r}") from None

    def iter_json_list(self, path: str, params: dict[str, Any] | None = None) -> Iterator[Any]:
        """The items of an answer that is a JSON list, one at a time, its body spooled to a
        temporary file as it comes and parsed from there: a big answer (a project's predictions)
        is never held in memory, neither as bytes nor as objects. Retried as reads are (a body
        cut in the middle is asked for again)."""
        with tempfile.TemporaryFile() as spool:

            def download() -> httpx.Response:
                spool.seek(0)
                spool.truncate()
                request = self._stream_http.build_request("GET", path, params=params, headers=self._headers())
                response = self._stream_http.send(request, stream=True)
                try:
                    if response.status_code < 400:
                        for chunk in response.iter_bytes(SPOOL_CHUNK_BYTES):
                            spool.write(chunk)
                    else:
                        response.read()  # an error's text, for the message
                finally:
                    response.close()
                return response

            self._get(path, lambda: read_policy(f"GET {path}")(download))
            spool.seek(0)
            head = spool.read(SPOOL_CHUNK_BYTES)
            spool.seek(0)
            if head.lstrip()[:1] != b"[":  # another shape (an object, a page) would give no items, silently
                raise _not_a_list(path, repr(body_summary(head[:300].decode("utf-8", "replace"))))
            try:
                yield from ijson.items(spool, "item", use_float=True)
            except ijson.JSONError as exc:
                raise _not_a_list(path, str(exc)) from None

    def _get(self, path: str, send: Callable[[], httpx.Response]) -> httpx.Response:
        """``send()`` a GET of ``path``, again once with a new access token when the one held
        expired; its answer when it is not an error, else a clear :class:`SyncError`."""
        for attempt in (1, 2):
            try:
                response = send()
            except httpx.HTTPError as exc:  # connection refused, reset, timed out
                raise Unreachable(f"Label Studio at {self.url}: GET {path} failed: {exc!r}", repr(exc)) from None
            if response.status_code == 401 and self._bearer and attempt == 1:
                self._access = None  # the access token expired: exchange the refresh token again
                continue
            break
        if response.status_code in (401, 403):
            raise SyncError(
                f"Label Studio at {self.url} refused the token (HTTP {response.status_code}): check --token"
            )
        if response.status_code >= 400:
            raise (NotFound if response.status_code == 404 else SyncError)(
                f"Label Studio: GET {path} answered HTTP {response.status_code}"
                + (" (after retries)" if response.status_code >= 500 else "")
                + f": {body_summary(response.text, 300)}"
            )
        return response


class _SdkAPI(_Reads):
    """The same reads through an SDK client's own HTTP client (its authentication included)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        try:
            response = self._client._client_wrapper.httpx_client.request(path, method="GET", params=params)
        except Exception as exc:  # httpx errors: the server went away
            raise SyncError(f"Label Studio: GET {path} failed: {exc}") from None
        if response.status_code >= 400:
            raise (NotFound if response.status_code == 404 else SyncError)(
                f"Label Studio: GET {path} answered HTTP {response.status_code}: {body_summary(response.text, 300)}"
            )
        return response.json()


def as_api(client: Any) -> _Reads:
    """``client`` as the sync's API: a :class:`LabelStudioAPI` as is, an SDK client wrapped."""
    return client if isinstance(client, _Reads) else _SdkAPI(client)


def connect_api(conn: Connection, timeout: float = 60.0) -> LabelStudioAPI:
    """A checked :class:`LabelStudioAPI`; raises :class:`SyncError` naming the URL and the problem."""
    require_token(conn)
    api = LabelStudioAPI(conn.url, conn.token, timeout=timeout)
    try:
        api.get_json("api/current-user/whoami")
    except Unreachable as exc:
        api.close()
        raise SyncError(f"cannot reach Label Studio at {conn.url}: {exc.reason}") from None
    except SyncError:
        api.close()
        raise
    return api
