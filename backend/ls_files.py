"""Texts behind Label Studio URLs in task data, as users of label-studio-ml-backend expect.

When people import ``.txt`` files as whole files, Label Studio stores each task as
``{"text": "/data/upload/3/1f2e3d4c-review.txt"}`` and a ``<Text ... valueType="url"/>`` shows the
file's content to annotators. The backend annotates what annotators see: a task field read by a
``Text`` or ``HyperText`` object with ``valueType="url"`` that holds a Label Studio URL (a path
under ``/data/upload/`` or ``/data/local-files/``, or an absolute URL on the Label Studio host) is
replaced by the file's text before the task is annotated. Span offsets then index that text, as in
the browser (UTF-8, a byte-order mark dropped, undecodable bytes as U+FFFD).

Where Label Studio is and how to log in: ``LABEL_STUDIO_URL`` and ``LABEL_STUDIO_API_KEY`` (the
variables label-studio-ml-backend reads) when set, else what Label Studio sent with the project's
``/setup`` (``hostname``, ``access_token``). A legacy token is sent as ``Token``; a personal access
token (a JWT) is exchanged at ``/api/token/refresh/`` for an access token sent as ``Bearer``. The
token only ever goes to that host, URLs on other hosts are not fetched, and redirects are not
followed. Downloads are bounded (``fetch_max_bytes``, ``fetch_timeout`` and the request's deadline)
and kept in a cache bounded by size (uploaded files do not change: their names are unique).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from judgelab.configs.label_config import LabelConfig
from judgelab.configs.task_data import TaskDataError

log = logging.getLogger("judgelab.backend.files")

#: Paths of Label Studio that serve files of a project (``/data/upload/<project>/<name>``,
#: local storage ``/data/local-files/?d=<path>``), possibly under a script prefix.
_LS_FILE_PATH = re.compile(r"^/(?:[^?#]*/)?data/(?:upload/|local-files/?\?)")
_JWT = re.compile(r"^eyJ[\w-]*\.[\w-]+\.[\w-]+$")
URL_OBJECT_TAGS = ("Text", "HyperText")
MAX_PROJECT_LINKS = 1024


class FetchError(TaskDataError):
    """A task's Label Studio URL could not be turned into text (the task gets a placeholder)."""


@dataclass(frozen=True)
class LabelStudioLink:
    """Where a project's Label Studio is and the token to use there."""

    url: str  # no trailing slash
    token: str | None = field(default=None, repr=False)

    @property
    def origin(self) -> tuple[str, str]:
        parts = urlsplit(self.url)
        return parts.scheme, parts.netloc


def url_fields(config: LabelConfig) -> list[str]:
    """The task data keys whose value a ``valueType="url"`` text object loads from a URL."""
    fields = []
    for obj in config.objects.values():
        if obj.tag in URL_OBJECT_TAGS and obj.value_type == "url" and re.fullmatch(r"\$[\w-]+", obj.value):
            fields.append(obj.value[1:])
    return sorted(set(fields))


def is_jwt(token: str) -> bool:
    return bool(_JWT.match(token))


def _jwt_expiry(token: str) -> float:
    """The ``exp`` of a JWT (Unix time), or one minute from now when it cannot be read."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return float(claims["exp"])
    except (ValueError, KeyError, IndexError, TypeError):
        return time.time() + 60


class LabelStudioFiles:
    """Fetches (and keeps) the texts of Label Studio URLs for one backend process."""

    def __init__(
        self,
        url: str = "",
        api_key: str | None = None,
        timeout: float = 10.0,
        max_bytes: int = 10 * 1024 * 1024,
        cache_bytes: int = 64 * 1024 * 1024,
    ):
        self.url = url.rstrip("/")
        self._api_key = api_key
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.cache_bytes = cache_bytes
        self.stats: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._texts: OrderedDict[tuple[str, str], tuple[str, int]] = OrderedDict()  # -> (text, bytes)
        self._text_bytes = 0
        self._links: OrderedDict[str, LabelStudioLink] = OrderedDict()
        self._access: dict[str, tuple[str, float]] = {}  # refresh-token digest -> (access token, expiry)
        self._client: httpx.Client | None = None

    # ------------------------------------------------------------------ where Label Studio is

    def remember(self, project_id: str, hostname: Any, access_token: Any) -> None:
        """What ``/setup`` said about a project's Label Studio (the environment's settings win)."""
        url = self.url or (hostname.strip().rstrip("/") if isinstance(hostname, str) else "")
        if url and not url.startswith(("http://", "https://")):
            url = ""
        token = self._api_key or (access_token.strip() if isinstance(access_token, str) else "") or None
        if not url:
            return
        with self._lock:
            self._links[project_id] = LabelStudioLink(url, token)
            self._links.move_to_end(project_id)
            while len(self._links) > MAX_PROJECT_LINKS:
                self._links.popitem(last=False)

    def link_for(self, project_id: str) -> LabelStudioLink | None:
        with self._lock:
            link = self._links.get(project_id)
        if link is not None:
            return link
        return LabelStudioLink(self.url, self._api_key) if self.url else None

    # ------------------------------------------------------------------ task data

    def resolve(
        self, data: dict[str, Any], fields: list[str], project_id: str, deadline_at: float | None = None
    ) -> dict[str, Any]:
        """``data`` with each of ``fields`` that holds a Label Studio URL replaced by its text."""
        resolved = data
        for name in fields:
            value = data.get(name)
            if not isinstance(value, str) or not self._looks_like_ls_url(value):
                continue
            link = self.link_for(project_id)
            if link is None:
                raise FetchError(
                    name,
                    f"{value[:200]!r} is a Label Studio URL, but the backend does not know where Label Studio is: "
                    "set LABEL_STUDIO_URL and LABEL_STUDIO_API_KEY (or connect the backend from Label Studio, "
                    "which sends them with /setup)",
                )
            target = self._absolute(value, link)
            if target is None:
                raise FetchError(name, f"{value[:200]!r} is not on Label Studio at {link.url}: not fetched")
            if resolved is data:
                resolved = dict(data)
            resolved[name] = self.text(name, target, link, deadline_at)
        return resolved

    @staticmethod
    def _looks_like_ls_url(value: str) -> bool:
        value = value.strip()
        if value.startswith(("http://", "https://")):
            return bool(_LS_FILE_PATH.match(urlsplit(value).path + "?"))
        return bool(_LS_FILE_PATH.match(value))

    @staticmethod
    def _absolute(value: str, link: LabelStudioLink) -> str | None:
        """The URL to fetch: a path joined to Label Studio's origin; an absolute URL only on it."""
        value = value.strip()
        if value.startswith("/"):
            return urljoin(link.url + "/", value)
        parts = urlsplit(value)
        return value if (parts.scheme, parts.netloc) == link.origin else None

    # ------------------------------------------------------------------ fetching

    def text(self, name: str, url: str, link: LabelStudioLink, deadline_at: float | None = None) -> str:
        key = (url, hashlib.sha256((link.token or "").encode()).hexdigest())
        with self._lock:
            cached = self._texts.get(key)
            if cached is not None:
                self._texts.move_to_end(key)
                self.stats["cached"] += 1
                return cached[0]
        try:
            raw = self._download(name, url, link, deadline_at)
        except FetchError:
            self.stats["failed"] += 1
            raise
        text = raw.decode("utf-8-sig", errors="replace")
        self.stats["fetched"] += 1
        size = len(raw)
        with self._lock:
            if size <= self.cache_bytes and key not in self._texts:
                self._texts[key] = (text, size)
                self._text_bytes += size
                while self._text_bytes > self.cache_bytes:
                    _, (_, old_size) = self._texts.popitem(last=False)
                    self._text_bytes -= old_size
        return text

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(follow_redirects=False, trust_env=False)
            return self._client

    def _auth(self, link: LabelStudioLink, renew: bool = False) -> dict[str, str]:
        token = link.token
        if not token:
            return {}
        if not is_jwt(token):
            return {"Authorization": f"Token {token}"}
        digest = hashlib.sha256(token.encode()).hexdigest()
        with self._lock:
            access = self._access.get(digest)
        if renew or access is None or access[1] < time.time() + 10:
            response = self._http().post(
                urljoin(link.url + "/", "/api/token/refresh/"), json={"refresh": token}, timeout=self.timeout
            )
            if response.status_code != 200:
                raise httpx.HTTPStatusError("token refresh refused", request=response.request, response=response)
            fresh = str(response.json().get("access", ""))
            access = (fresh, _jwt_expiry(fresh))
            with self._lock:
                self._access[digest] = access
        return {"Authorization": f"Bearer {access[0]}"}

    def _download(self, name: str, url: str, link: LabelStudioLink, deadline_at: float | None) -> bytes:
        shown = urlsplit(url)._replace(query="", fragment="").geturl()
        started = time.monotonic()
        budget = self.timeout if deadline_at is None else min(self.timeout, deadline_at - started)
        if budget <= 0:
            raise FetchError(name, f"no time left before the deadline to fetch {shown}")
        try:
            for attempt in (0, 1):
                headers = self._auth(link, renew=attempt == 1)
                with self._http().stream("GET", url, headers=headers, timeout=budget) as response:
                    if response.status_code == 401 and attempt == 0 and link.token and is_jwt(link.token):
                        continue  # an access token that expired meanwhile: renew once
                    if response.status_code != 200:
                        hint = " (set LABEL_STUDIO_API_KEY?)" if response.status_code in (401, 403) else ""
                        raise FetchError(name, f"Label Studio answered HTTP {response.status_code} for {shown}{hint}")
                    declared = response.headers.get("content-length", "")
                    if declared.isdigit() and int(declared) > self.max_bytes:
                        raise self._too_big(name, shown)
                    chunks, size = [], 0
                    for chunk in response.iter_bytes():
                        size += len(chunk)
                        if size > self.max_bytes:
                            raise self._too_big(name, shown)
                        if time.monotonic() - started > budget:
                            raise FetchError(name, f"fetching {shown} took longer than {budget:.1f} s")
                        chunks.append(chunk)
                    return b"".join(chunks)
        except httpx.HTTPStatusError as exc:
            raise FetchError(
                name,
                f"Label Studio refused the access token (HTTP {exc.response.status_code} from /api/token/refresh/)",
            ) from None
        except httpx.HTTPError as exc:
            raise FetchError(name, f"cannot fetch {shown}: {type(exc).__name__}: {exc}") from None
        raise FetchError(name, f"Label Studio refused the renewed access token for {shown}")

    def _too_big(self, name: str, shown: str) -> FetchError:
        mb = self.max_bytes / 1024 / 1024
        return FetchError(name, f"{shown} is over {mb:g} MB (JUDGELAB_FETCH_MAX_MB): not annotated")

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
