"""Texts behind Label Studio URLs in task data, as users of label-studio-ml-backend expect.

When people import ``.txt`` files as whole files, Label Studio stores each task as
``{"text": "/data/upload/3/1f2e3d4c-review.txt"}`` and a ``<Text ... valueType="url"/>`` shows the
file's content to annotators. The backend annotates what annotators see: a task field read by a
``Text`` or ``HyperText`` object with ``valueType="url"`` is replaced by the text of the Label
Studio file it names before the task is annotated. Span offsets then index that text, as in the
browser (UTF-8, a byte-order mark dropped, undecodable bytes as U+FFFD).

Where Label Studio is and how to log in, in pairs that never mix: ``LABEL_STUDIO_URL`` with
``LABEL_STUDIO_API_KEY`` (the variables label-studio-ml-backend reads) when both are set; else
the ``hostname`` and ``access_token`` that Label Studio sent with the project's ``/setup`` (with
``LABEL_STUDIO_URL`` set, only a ``/setup`` whose hostname is that URL lends its token). The
environment's key is never sent anywhere but ``LABEL_STUDIO_URL``, a ``/setup``'s token nowhere but
that ``/setup``'s hostname. A legacy token is sent as ``Token``; a personal access token (a JWT) is
exchanged at ``/api/token/refresh/`` for an access token sent as ``Bearer``.

A request that carries a token goes only to Label Studio's origin (scheme, host, port) and only to
a path that, percent-decoded, is Label Studio's own path prefix + ``/data/upload/<project id>/<file
name>`` (the project the task belongs to), or ``/data/local-files/?d=<relative path>`` when local
files are turned on (``JUDGELAB_FETCH_LOCAL_FILES``). The URL fetched is built from those checked
parts, never passed on as written; anything else (another host, a scheme-relative ``//host/...``,
``user@host``, ``..`` in any encoding, a backslash, a path prefix Label Studio's URL does not have)
is refused with a note on the task and never fetched. Redirects are not followed. Downloads are
bounded (``fetch_max_bytes``, ``fetch_timeout`` and the request's deadline) and kept in a cache
bounded by size (uploaded files do not change: their names are unique).
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
from urllib.parse import SplitResult, parse_qsl, quote, unquote, urlencode, urlsplit

import httpx

from judgelab.backend.http_tls import tls_context
from judgelab.configs.label_config import LabelConfig
from judgelab.configs.task_data import TaskDataError

log = logging.getLogger("judgelab.backend.files")

_JWT = re.compile(r"^eyJ[\w-]*\.[\w-]+\.[\w-]+$")
#: Characters no URL of a Label Studio file holds as written (Label Studio percent-encodes them).
_UNSAFE = re.compile(r"[\x00-\x20\x7f\\]")
#: What no decoded path segment may hold: control characters, a backslash, or a second layer of
#: percent-encoding (``%252e`` is ``%2e`` once decoded), which a proxy might decode again. A space
#: may (``%20``).
_UNSAFE_DECODED = re.compile(r"[\x00-\x1f\x7f\\]|%[0-9A-Fa-f]{2}")
URL_OBJECT_TAGS = ("Text", "HyperText")
MAX_PROJECT_LINKS = 1024
DEFAULT_PORTS = {"http": 80, "https": 443}


class FetchError(TaskDataError):
    """A task's Label Studio URL could not be turned into text (the task gets a placeholder)."""


class NotLabelStudioURL(ValueError):
    """A URL that is not Label Studio's (a base URL) or not one of its files (a task's value)."""


@dataclass(frozen=True)
class LabelStudioBase:
    """Label Studio's address: its origin and the path prefix it is served under (``""`` at the
    root). Made only by :func:`parse_base`, so two equal bases are the same server."""

    scheme: str
    host: str  # lower case; an IPv6 address without brackets
    port: int
    prefix: str  # "" or "/some/prefix", no trailing slash

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if DEFAULT_PORTS[self.scheme] == self.port else f":{self.port}"
        return f"{self.scheme}://{host}{port}{self.prefix}"

    @property
    def origin(self) -> tuple[str, str, int]:
        return self.scheme, self.host, self.port


def _origin_of(parts: Any, what: str) -> tuple[str, str, int]:
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise NotLabelStudioURL(f"{what} is not an http(s) URL")
    if "@" in parts.netloc:
        raise NotLabelStudioURL(f"{what} has a user name in its host part")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        raise NotLabelStudioURL(f"{what} has an invalid port") from None
    if not host:
        raise NotLabelStudioURL(f"{what} has no host")
    return scheme, host, DEFAULT_PORTS[scheme] if port is None else port


def parse_base(url: str) -> LabelStudioBase:
    """Label Studio's address from ``LABEL_STUDIO_URL`` or a ``/setup`` hostname.

    >>> parse_base("HTTP://LS.example:80/studio/").url
    'http://ls.example/studio'
    >>> parse_base("http://user@ls.example")
    Traceback (most recent call last):
    ...
    judgelab.backend.ls_files.NotLabelStudioURL: 'http://user@ls.example' has a user name in its host part
    """
    what = repr(url[:200])
    if not isinstance(url, str) or _UNSAFE.search(url.strip()):
        raise NotLabelStudioURL(f"{what} is not a URL (spaces, control characters or backslashes)")
    parts = urlsplit(url.strip())
    scheme, host, port = _origin_of(parts, what)
    if parts.query or parts.fragment:
        raise NotLabelStudioURL(f"{what} has a query or fragment")
    segments = [unquote(s) for s in parts.path.split("/") if s]
    if any(s in (".", "..") or "/" in s or _UNSAFE_DECODED.search(s) for s in segments):
        raise NotLabelStudioURL(f"{what} has '.', '..' or encoded separators in its path")
    prefix = "".join("/" + quote(s, safe="") for s in segments)
    return LabelStudioBase(scheme, host, port, prefix)


def _segments(path: str, what: str) -> list[str]:
    """A path's segments, percent-decoded; refuses ``.``/``..`` and separators hidden by encoding."""
    decoded = [unquote(s, errors="strict") for s in path.split("/")]
    if decoded[0] != "":
        raise NotLabelStudioURL(f"{what}: the path is not absolute")
    for s in decoded[1:]:
        if s in (".", "..") or "/" in s or _UNSAFE_DECODED.search(s):
            raise NotLabelStudioURL(f"{what}: '.', '..', a backslash or an encoded '/' in the path")
    return decoded[1:]


def file_url(value: str, base: LabelStudioBase, project_id: str = "", local_files: bool = False) -> str:
    """The URL to fetch for a task's ``value``, rebuilt from its checked parts on ``base``.

    ``value`` is a path (``/data/upload/3/a-b.txt``) or an absolute URL on ``base``'s origin; its
    path, percent-decoded, must be ``base``'s prefix + ``/data/upload/<project>/<name>`` (the task's
    project when known) or, with ``local_files``, ``/data/local-files/?d=<relative path>``.

    >>> ls = parse_base("http://127.0.0.1:8080")
    >>> file_url("/data/upload/3/1f-review%20A.txt", ls, "3")
    'http://127.0.0.1:8080/data/upload/3/1f-review%20A.txt'
    >>> file_url("//evil.example/data/upload/3/x.txt", ls, "3")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    judgelab.backend.ls_files.NotLabelStudioURL: '//evil...' names another host (scheme-relative URL)
    >>> file_url("/data/upload/3/%2e%2e/%2e%2e/api/users/", ls, "3")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    judgelab.backend.ls_files.NotLabelStudioURL: '/data/upload/...': '.', '..', a backslash or an encoded '/' in...
    """
    what = repr(value[:200])
    parts, rest = _path_under_base(value.strip(), base, what)
    if len(rest) == 4 and rest[:2] == ["data", "upload"] and not parts.query:
        return _upload_url(rest[2], rest[3], base, project_id, what)
    if rest[:2] == ["data", "local-files"] and rest[2:] in ([], [""]):
        return _local_file_url(parts.query, base, local_files, what)
    raise NotLabelStudioURL(
        f"{what} is not a Label Studio file ({base.prefix}/data/upload/<project>/<file name>"
        + (f" or {base.prefix}/data/local-files/?d=<path>)" if local_files else ")")
    )


def _path_under_base(value: str, base: LabelStudioBase, what: str) -> tuple[SplitResult, list[str]]:
    """``value`` split, and its path's decoded segments after ``base``'s prefix; refuses what is
    not a plain path or a URL on ``base``'s origin (another host, a fragment, unsafe characters or
    segments, a path outside the prefix)."""
    if not value:
        raise NotLabelStudioURL("the value is empty")
    if _UNSAFE.search(value):
        raise NotLabelStudioURL(f"{what} holds a space, a control character or a backslash")
    if value.startswith("//"):
        raise NotLabelStudioURL(f"{what} names another host (scheme-relative URL)")
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        if _origin_of(parts, what) != base.origin:
            raise NotLabelStudioURL(f"{what} is not on Label Studio at {base.url}")
    elif not value.startswith("/"):
        raise NotLabelStudioURL(f"{what} is not a Label Studio URL (a path or an http(s) URL)")
    if parts.fragment:
        raise NotLabelStudioURL(f"{what} has a fragment")
    try:
        segments = _segments(parts.path, what)
    except UnicodeDecodeError:
        raise NotLabelStudioURL(f"{what}: the path's percent-encoding is not UTF-8") from None
    prefix = [unquote(s) for s in base.prefix.split("/")[1:]]
    if segments[: len(prefix)] != prefix:
        raise NotLabelStudioURL(f"{what} is not under Label Studio's path {base.prefix or '/'}")
    return parts, segments[len(prefix) :]


def _upload_url(project: str, name: str, base: LabelStudioBase, project_id: str, what: str) -> str:
    """The URL of an uploaded file, ``/data/upload/<project>/<name>``: the project an id (the
    task's own when known), the name not empty and quoted whole."""
    if not project.isdecimal() or not project.isascii():
        raise NotLabelStudioURL(f"{what}: {project!r} is not a project id")
    if project_id.isdecimal() and project != project_id:
        raise NotLabelStudioURL(f"{what} is a file of project {project}, not of this project ({project_id})")
    if not name:
        raise NotLabelStudioURL(f"{what} names no file")
    return f"{base.url}/data/upload/{project}/{quote(name, safe='')}"


def _local_file_url(query: str, base: LabelStudioBase, local_files: bool, what: str) -> str:
    """The URL of a local-storage file, ``/data/local-files/?d=<relative path>``, when fetching
    those is on: one ``d`` parameter, a relative path without '.', '..' or backslashes."""
    if not local_files:
        raise NotLabelStudioURL(
            f"{what} is a local-storage file: fetching those is off (JUDGELAB_FETCH_LOCAL_FILES=true turns it on)"
        )
    pairs = parse_qsl(query, keep_blank_values=True)
    if len(pairs) != 1 or pairs[0][0] != "d" or not pairs[0][1]:
        raise NotLabelStudioURL(f"{what}: a local-storage URL takes one parameter, ?d=<path>")
    path = pairs[0][1]
    if path.startswith("/") or any(s in (".", "..") or _UNSAFE_DECODED.search(s) for s in path.split("/")):
        raise NotLabelStudioURL(f"{what}: ?d= must be a relative path without '.', '..' or backslashes")
    return f"{base.url}/data/local-files/?{urlencode({'d': path})}"


@dataclass(frozen=True)
class LabelStudioLink:
    """Where a project's Label Studio is and the token that goes with that address."""

    base: LabelStudioBase
    token: str | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return self.base.url


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
        local_files: bool = False,
    ):
        #: ``LABEL_STUDIO_URL``: with ``api_key``, the one place that key is ever sent
        self.base = parse_base(url) if url.strip() else None
        self._api_key = api_key if self.base is not None else None
        if api_key and self.base is None:
            log.warning(
                "LABEL_STUDIO_API_KEY is set without LABEL_STUDIO_URL: it is not used (the key is only sent to "
                "LABEL_STUDIO_URL); uploaded files are fetched with the token Label Studio sends with /setup"
            )
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.cache_bytes = cache_bytes
        self.local_files = local_files
        self.stats: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._texts: OrderedDict[tuple[str, str], tuple[str, int]] = OrderedDict()  # -> (text, bytes)
        self._text_bytes = 0
        self._links: OrderedDict[str, LabelStudioLink] = OrderedDict()
        self._access: dict[tuple[str, str], tuple[str, float]] = {}  # (base, token digest) -> access token, expiry
        self._client: httpx.Client | None = None

    # ------------------------------------------------------------------ where Label Studio is

    def remember(self, project_id: str, hostname: Any, access_token: Any) -> None:
        """What ``/setup`` said about a project's Label Studio. Its token is kept only with its own
        hostname; with ``LABEL_STUDIO_URL`` set, only a ``/setup`` from that address counts, and
        with ``LABEL_STUDIO_API_KEY`` too, the environment's pair is used for every project."""
        try:
            base = parse_base(hostname) if isinstance(hostname, str) and hostname.strip() else None
        except NotLabelStudioURL as exc:
            log.warning("project %s: /setup's hostname is not used: %s", project_id, exc)
            base = None
        token = access_token.strip() if isinstance(access_token, str) and access_token.strip() else None
        if base is None or (self.base is not None and (self._api_key or base != self.base)):
            with self._lock:  # a project's earlier /setup no longer holds
                self._links.pop(project_id, None)
            return
        with self._lock:
            self._links[project_id] = LabelStudioLink(base, token)
            self._links.move_to_end(project_id)
            while len(self._links) > MAX_PROJECT_LINKS:
                self._links.popitem(last=False)

    def link_for(self, project_id: str) -> LabelStudioLink | None:
        with self._lock:
            link = self._links.get(project_id)
        if link is not None:
            return link
        return LabelStudioLink(self.base, self._api_key) if self.base is not None else None

    # ------------------------------------------------------------------ task data

    def resolve(
        self, data: dict[str, Any], fields: list[str], project_id: str, deadline_at: float | None = None
    ) -> dict[str, Any]:
        """``data`` with each of ``fields`` replaced by the text of the Label Studio file it names;
        a value that is not one of Label Studio's files is refused (:class:`FetchError`)."""
        resolved = data
        for name in fields:
            value = data.get(name)
            if value is None:
                continue
            if not isinstance(value, str):
                raise FetchError(name, f"a URL field holds {type(value).__name__}, not a URL")
            link = self.link_for(project_id)
            if link is None:
                raise FetchError(
                    name,
                    f"{value[:200]!r}: the backend does not know where Label Studio is: set LABEL_STUDIO_URL and "
                    "LABEL_STUDIO_API_KEY (or connect the backend from Label Studio, which sends them with /setup)",
                )
            try:
                target = file_url(value, link.base, project_id, self.local_files)
            except NotLabelStudioURL as exc:
                self.stats["refused"] += 1
                raise FetchError(name, f"not fetched: {exc}") from None
            if resolved is data:
                resolved = dict(data)
            resolved[name] = self.text(name, target, link, deadline_at)
        return resolved

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
                self._client = httpx.Client(follow_redirects=False, trust_env=False, verify=tls_context())
            return self._client

    def _auth(self, link: LabelStudioLink, renew: bool = False) -> dict[str, str]:
        token = link.token
        if not token:
            return {}
        if not is_jwt(token):
            return {"Authorization": f"Token {token}"}
        digest = (link.url, hashlib.sha256(token.encode()).hexdigest())
        with self._lock:
            access = self._access.get(digest)
        if renew or access is None or access[1] < time.time() + 10:
            response = self._http().post(
                f"{link.url}/api/token/refresh/", json={"refresh": token}, timeout=self.timeout
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
