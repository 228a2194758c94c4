"""Connecting to Label Studio through ``label-studio-sdk``.

A legacy token is sent as ``Token``; a personal access token (a JWT) is refreshed by the SDK
and sent as ``Bearer``. :func:`connect` checks the connection once and turns the usual
failures (server down, wrong URL, wrong token) into one clear :class:`SyncError`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:  # the SDK takes over a second to import: only the commands that use it load it
    from label_studio_sdk import LabelStudio


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


def api_error_message(exc: Any) -> str:
    """What an SDK ``ApiError`` says, in one line."""
    body = exc.body
    if isinstance(body, dict):
        for key in ("validation_errors", "detail", "error", "message"):
            if key in body:
                return f"{key}: {body[key]}"
    return f"HTTP {exc.status_code}: {body}"


def require_token(conn: Connection) -> None:
    """A :class:`SyncError` saying how to give a token, when ``conn`` has none."""
    if not conn.token:
        raise SyncError(
            "no Label Studio token: pass --token or set JUDGELAB_LS_TOKEN "
            "(Account & Settings > Personal Access Token, or a legacy token)"
        )


def connect(conn: Connection, timeout: float = 60.0) -> LabelStudio:
    """A checked SDK client; raises :class:`SyncError` naming the URL and what went wrong."""
    require_token(conn)
    from label_studio_sdk import LabelStudio
    from label_studio_sdk.core.api_error import ApiError

    from judgelab.sync.http_retry import retrying_client

    # reads are retried by the transport (5xx, dropped connections); the SDK's own retries, which
    # repeat POSTs too (a second copy when only the answer was lost), are off
    client = LabelStudio(
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
