"""Connecting to Label Studio through ``label-studio-sdk``.

A legacy token is sent as ``Token``; a personal access token (a JWT) is refreshed by the SDK
and sent as ``Bearer``. :func:`connect` checks the connection once and turns the usual
failures (server down, wrong URL, wrong token) into one clear :class:`SyncError`.
"""

from __future__ import annotations

import html
import json
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:  # the SDK takes over a second to import: only the commands that use it load it
    from label_studio_sdk.base_client import LabelStudioBase


HTML_START = re.compile(r"<\s*(!doctype\s+html|html|head|body)\b", re.IGNORECASE)
HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


class SyncError(RuntimeError):
    """Something a user must fix (bad input, unreachable server, wrong token). The CLI prints it."""


@dataclass(frozen=True)
class Connection:
    url: str = "http://127.0.0.1:8080"
    token: str = field(default="", repr=False)

    @classmethod
    def from_env(cls, url: str | None = None, token: str | None = None) -> Connection:
        return cls(
            url=(url or os.environ.get("JUDGELAB_LS_URL") or os.environ.get("LABEL_STUDIO_URL") or cls.url).rstrip("/"),
            token=token or os.environ.get("JUDGELAB_LS_TOKEN") or os.environ.get("LABEL_STUDIO_API_KEY") or "",
        )


def body_summary(body: Any, limit: int = 200) -> str:
    """What the body of an error answer says, in one line: an HTML page (Label Studio's error
    pages run to dozens of lines) by its title, other text by its start."""
    text = body if isinstance(body, str) else "" if body is None else str(body)
    if HTML_START.search(text[:2000]):
        title = HTML_TITLE.search(text)
        said = " ".join(html.unescape(title.group(1)).split())[:limit] if title else ""
        return f"an error page ({said})" if said else "an error page"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def api_error_message(exc: Any) -> str:
    """What an SDK ``ApiError`` says, in one line (never a whole HTML page)."""
    body = exc.body
    if isinstance(body, dict):
        for key in ("validation_errors", "detail", "error", "message"):
            if key in body:
                return f"{key}: {body_summary(body[key], 500)}"
    said = body_summary(body)
    return f"HTTP {exc.status_code}: {said}" if said else f"HTTP {exc.status_code}"


def encode_json(body: Any) -> str:
    """``body`` as the bulk writes send it: the standard library's compact JSON, anything it cannot
    encode through the SDK's encoder; a float JSON cannot hold (``inf``, ``nan``) raises
    ``ValueError``."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_sdk_encoded)


def _sdk_encoded(value: Any) -> Any:
    from label_studio_sdk.core.jsonable_encoder import jsonable_encoder

    return jsonable_encoder(value)


def post_json(client: LabelStudioBase, path: str, body: Any, params: dict[str, str] | None = None) -> Any:
    """POST ``body`` as JSON to ``path`` through the SDK client's own HTTP client (its
    authentication and connection retries) and return the answer's JSON; a refusal raises the
    SDK's ``ApiError``, as the SDK's own methods do.

    For the bulk writes (tasks, predictions): the SDK's methods walk a request with their
    generic encoder before httpx encodes it, 80 ms for an import of 500 tasks, spent while
    Label Studio waits for the request. Here the body is encoded once by the standard library
    (:func:`encode_json`)."""
    return post_encoded(client, path, encode_json(body).encode("utf-8"), params)


def post_encoded(client: LabelStudioBase, path: str, content: bytes, params: dict[str, str] | None = None) -> Any:
    """:func:`post_json` for a body already encoded (``content``: UTF-8 JSON)."""
    from label_studio_sdk.core.api_error import ApiError

    response = client._client_wrapper.httpx_client.request(
        path,
        method="POST",
        params=params,
        content=content,
        headers={"content-type": "application/json"},
    )
    try:
        answer = response.json()
    except ValueError:
        raise ApiError(status_code=response.status_code, headers=dict(response.headers), body=response.text) from None
    if 200 <= response.status_code < 300:
        return answer
    raise ApiError(status_code=response.status_code, headers=dict(response.headers), body=answer)


def require_token(conn: Connection) -> None:
    """A :class:`SyncError` saying how to give a token, when ``conn`` has none."""
    if not conn.token:
        raise SyncError(
            "no Label Studio token: pass --token or set JUDGELAB_LS_TOKEN "
            "(Account & Settings > Personal Access Token, or a legacy token)"
        )


def connect(conn: Connection, timeout: float = 60.0) -> LabelStudioBase:
    """A checked SDK client; raises :class:`SyncError` naming the URL and what went wrong.

    The SDK's generated client, ``LabelStudioBase``: ``LabelStudio`` adds to it only listings
    judgelab does not use (``tasks.list`` with every field, pagers that end on a 404) and a
    project's ``get_label_interface()``, and its module imports the label interface, pandas and
    cloud storage clients, 0.75 s of CPU at the start of every command."""
    require_token(conn)
    from label_studio_sdk.base_client import LabelStudioBase
    from label_studio_sdk.core.api_error import ApiError

    from judgelab.sync.http_retry import retrying_client

    # reads are retried by the transport (5xx, dropped connections); the SDK's own retries, which
    # repeat POSTs too (a second copy when only the answer was lost), are off
    client = LabelStudioBase(
        base_url=conn.url, api_key=conn.token, timeout=timeout, max_retries=0, httpx_client=retrying_client(timeout)
    )
    try:
        client.users.whoami()
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise SyncError(f"cannot reach Label Studio at {conn.url}: {exc}") from None
    except ApiError as exc:
        if exc.status_code in (401, 403):
            raise SyncError(
                f"Label Studio at {conn.url} refused the token (HTTP {exc.status_code}): check --token"
            ) from None
        raise SyncError(f"Label Studio at {conn.url}: {api_error_message(exc)}") from None
    except httpx.HTTPError as exc:
        raise SyncError(f"Label Studio at {conn.url}: {exc}") from None
    return client
