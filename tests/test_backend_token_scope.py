"""Where the Label Studio token may go: a real backend (``python -m judgelab.backend``) fetches the
files of ``valueType="url"`` fields, and HTTP servers on loopback stand in for Label Studio and for
other hosts, recording every request they get. A generated grammar of URLs (hypothesis: schemes,
scheme-relative and ``user@host`` authorities, other hosts and ports, script prefixes, ``..`` and
its encodings, backslashes, queries) is sent as task data, after a ``/setup`` naming a hostname and
a token of its own. The property: every request the backend makes goes to the one Label Studio the
rules pair with the project (``LABEL_STUDIO_URL`` with ``LABEL_STUDIO_API_KEY``; else the ``/setup``'s
hostname with its own token), with that pair's token only, and to a path that is Label Studio's
prefix + ``/data/upload/<the project>/<one file name>``. Anything else is refused with a note on the
task and never fetched."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

import httpx
import pytest
from backend_process import start_backend
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_backend_uploaded_files import CONFIG  # a Text object that loads its value from a URL

from judgelab.sync.http_retry import tls_context

PROJECT = "7"
FILE_TEXT = "The staff were kind. Sadly the shower was cold every morning."
ENV_KEY = "env-key-0123456789abcdef"
NOT_FETCHED = "not fetched"


@dataclass(frozen=True)
class Seen:
    server: str  # which stand-in got it
    host_header: str
    method: str
    raw_path: str
    authorization: str


class Observer:
    """An HTTP server that answers every request with a text file and records it."""

    def __init__(self, name: str, address: str, port: int = 0):
        self.name = name
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                seen.append(
                    Seen(
                        name,
                        self.headers.get("Host", ""),
                        self.command,
                        self.path,
                        self.headers.get("Authorization", ""),
                    )
                )
                body = FILE_TEXT.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer((address, port), Handler)
        self.host, self.port = self.server.server_address[:2]
        self.netloc = f"{self.host}:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def servers():
    """Label Studio's stand-in on 127.0.0.1, another port on the same host, and the same port on
    another host (127.0.0.2)."""
    ls = Observer("label studio", "127.0.0.1")
    other_port = Observer("other port", "127.0.0.1")
    other_host = Observer("other host", "127.0.0.2", ls.port)
    yield {s.name: s for s in (ls, other_port, other_host)}
    for s in (ls, other_port, other_host):
        s.close()


# ---------------------------------------------------------------------------------------- grammar

#: placeholders filled in per run: {ls} Label Studio's host:port, {port} another port on its host,
#: {host} another host on its port
AUTHORITIES = (
    "{ls}",
    "localhost:{ls_port}",
    "{port}",
    "{host}",
    "user@{ls}",
    "{ls}@{host}",
    "{host}@{ls}",
    "{ls}#@{host}",
    "{ls}%2F@{host}",
    "{ls}\\@{host}",
    "{ls}:80",
    "[::1]:{ls_port}",
)
SCHEMES = ("", "//", "http://", "HTTP://", "https://", "ftp://", "javascript:", "http:")
PREFIXES = ("", "/ls", "/other", "/ls/..", "/LS", "/ls/.", "/%6cs")
ATOMS = (
    "data",
    "upload",
    "local-files",
    PROJECT,
    "8",
    "x.txt",
    "1f2e-review.txt",
    "a%20b.txt",
    "..",
    ".",
    "%2e%2e",
    "%2E%2e",
    ".%2e",
    "..%2f",
    "%2f",
    "..%5c",
    "%252e%252e",
    "\\..",
    "api",
    "current-user",
    "token",
    "users",
    "",
)
QUERIES = ("", "?d=x.txt", "?d=../../etc/passwd", "?x=1", "?d=%2e%2e/x.txt")
FRAGMENTS = ("", "#f")
MAX_SEGMENTS = 7
#: How many distinct URLs the grammar spells (before placeholders are filled in).
GRAMMAR_SIZE = (
    len(SCHEMES)
    * (len(AUTHORITIES) + 1)
    * len(PREFIXES)
    * sum(len(ATOMS) ** k for k in range(MAX_SEGMENTS + 1))
    * len(QUERIES)
    * len(FRAGMENTS)
)

segments = st.one_of(
    # near the one shape that is fetched, with a step changed, added or removed
    st.lists(st.sampled_from(ATOMS), min_size=0, max_size=2).flatmap(
        lambda extra: st.permutations(["data", "upload", PROJECT, "x.txt", *extra])
    ),
    st.just(["data", "upload", PROJECT, "1f2e-review.txt"]),
    st.lists(st.sampled_from(ATOMS), max_size=MAX_SEGMENTS),
)


@st.composite
def urls(draw) -> str:
    scheme = draw(st.sampled_from(SCHEMES))
    authority = draw(st.sampled_from(AUTHORITIES)) if scheme not in ("", "javascript:") else ""
    path = draw(st.sampled_from(PREFIXES)) + "/" + "/".join(draw(segments))
    return scheme + authority + path + draw(st.sampled_from(QUERIES)) + draw(st.sampled_from(FRAGMENTS))


HOSTNAMES = ("http://{ls}/ls", "http://{ls}", "http://{host}", "http://{port}/ls", "//{host}", "http://u@{host}", "")


def fill(template: str, servers) -> str:
    ls = servers["label studio"]
    return template.format(
        ls=ls.netloc, ls_port=ls.port, port=servers["other port"].netloc, host=servers["other host"].netloc
    )


# ---------------------------------------------------------------------------------------- the rules


@dataclass(frozen=True)
class Pair:
    """The one Label Studio a project's requests may go to, its path prefix and its token."""

    netloc: str
    prefix: str
    token: str | None


def expected_pair(mode: str, servers, hostname: str, setup_token: str) -> Pair | None:
    ls = servers["label studio"]
    env = Pair(ls.netloc, "/ls", ENV_KEY if mode == "url and key" else None)
    parts = urlsplit(hostname)
    setup = (
        Pair(parts.netloc, parts.path.rstrip("/"), setup_token)
        if parts.scheme == "http" and parts.netloc and "@" not in parts.netloc
        else None
    )
    if mode == "url and key":
        return env
    if mode == "url only":
        return Pair(env.netloc, env.prefix, setup_token) if setup == Pair(env.netloc, "/ls", setup_token) else env
    return setup  # "key only" and "nothing": the /setup pair alone


def canonical(path: str, prefix: str) -> bool:
    """Label Studio's prefix + /data/upload/<the project>/<one file name>, percent-decoded."""
    match = re.fullmatch(re.escape(prefix) + r"/data/upload/" + PROJECT + r"/([^/?#]+)", path)
    if match is None:
        return False
    name = unquote(match.group(1))
    return name not in (".", "..") and not re.search(r"[/\\]|%[0-9A-Fa-f]{2}", name)


MODES = {
    "url and key": {"LABEL_STUDIO_URL": "http://{ls}/ls", "LABEL_STUDIO_API_KEY": ENV_KEY},
    "url only": {"LABEL_STUDIO_URL": "http://{ls}/ls"},
    "key only": {"LABEL_STUDIO_API_KEY": ENV_KEY},
    "nothing": {},
}


@pytest.fixture(scope="module", params=list(MODES))
def backend(request, servers, tmp_path_factory):
    mode = request.param
    env = {k: fill(v, servers) for k, v in MODES[mode].items()}
    log = tmp_path_factory.mktemp("token-scope") / "backend.log"
    with start_backend(log, JUDGELAB_FETCH_TIMEOUT="5", **env) as process:
        yield mode, process


def run(backend, servers, hostname: str, values: list[str], setup_token: str):
    """/setup with ``hostname`` and ``setup_token``, then /predict of one task per value; the
    predictions and every request the stand-ins received meanwhile."""
    _, process = backend
    for s in servers.values():
        s.seen.clear()
    setup = {"project": f"{PROJECT}.1", "schema": CONFIG, "hostname": hostname, "access_token": setup_token}
    httpx.post(f"{process.url}/setup", json=setup, timeout=30, verify=tls_context()).raise_for_status()
    tasks = [{"id": i, "data": {"text": v}} for i, v in enumerate(values)]
    body = {"tasks": tasks, "project": f"{PROJECT}.1", "label_config": CONFIG}
    answer = httpx.post(f"{process.url}/predict", json=body, timeout=60, verify=tls_context())
    answer.raise_for_status()
    return answer.json()["results"], [r for s in servers.values() for r in s.seen]


def check_scope(seen: list[Seen], pair: Pair | None, servers) -> None:
    for request in seen:
        where = f"{request.method} {request.raw_path} at {request.server} (Host {request.host_header})"
        assert pair is not None, f"fetched with no Label Studio known: {where}"
        assert request.host_header == pair.netloc, f"went to another host than {pair.netloc}: {where}"
        assert servers["label studio"].netloc == pair.netloc or request.server != "label studio", where
        assert canonical(request.raw_path, pair.prefix), f"not a file of the project: {where}"
        expected = f"Token {pair.token}" if pair.token else ""
        assert request.authorization == expected, f"sent {request.authorization!r}, not its pair's token: {where}"


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    values=st.lists(urls(), min_size=1, max_size=6),
    hostname=st.sampled_from(HOSTNAMES),
    token=st.sampled_from(["setup-token-A", "setup-token-B"]),
)
@example(values=["//{ls}/data/upload/7/x.txt", "//{host}/data/upload/7/x.txt"], hostname="http://{ls}/ls", token="T")
@example(values=["/data/upload/3/review.txt", "/ls/data/upload/7/r.txt"], hostname="http://{host}", token="T")
@example(
    values=[
        "/ls/data/upload/../../api/current-user/token",
        "/ls/data/upload/7/../../../api/users/",
        "/ls/data/upload/7/%2e%2e/%2e%2e/api/users/",
        "/ls/data/upload/7/..%2f..%2fapi%2fusers",
        "/ls/data/upload/7\\..\\..\\api\\users",
        "http://{ls}@{host}/ls/data/upload/7/x.txt",
        "/prefix/ls/data/upload/7/x.txt",
    ],
    hostname="http://{ls}/ls",
    token="T",
)
def test_a_token_reaches_its_own_label_studio_files_only(backend, servers, values, hostname, token):
    mode = backend[0]
    values = [fill(v, servers) for v in values]
    hostname = fill(hostname, servers)
    pair = expected_pair(mode, servers, hostname, token)
    results, seen = run(backend, servers, hostname, values, token)
    assert len(results) == len(values)
    check_scope(seen, pair, servers)
    refused = [v for v, r in zip(values, results, strict=True) if NOT_FETCHED in r.get("error", "")]
    assert len(seen) <= len(values) - len(refused), "a refused value was fetched"
    assert ENV_KEY not in repr(results)


def test_the_project_files_are_fetched_with_their_token(backend, servers):
    """The other side of the rule: the project's own files are fetched, as written or as absolute
    URLs, with the token of the pair."""
    mode = backend[0]
    hostname = fill("http://{ls}/ls", servers)
    pair = expected_pair(mode, servers, hostname, "setup-token-C")
    ls = servers["label studio"]
    values = ["/ls/data/upload/7/9a-review%20one.txt", f"http://{ls.netloc}/ls/data/upload/7/9b-review.txt"]
    results, seen = run(backend, servers, hostname, values, "setup-token-C")
    check_scope(seen, pair, servers)
    assert [NOT_FETCHED in r.get("error", "") for r in results] == [False, False], results
    assert sorted(r.raw_path for r in seen) == [
        "/ls/data/upload/7/9a-review%20one.txt",
        "/ls/data/upload/7/9b-review.txt",
    ]
    token = {
        "url and key": ENV_KEY,
        "url only": "setup-token-C",
        "key only": "setup-token-C",
        "nothing": "setup-token-C",
    }
    assert {r.authorization for r in seen} == {f"Token {token[mode]}"}


def test_local_files_are_fetched_only_when_turned_on(servers, tmp_path):
    ls = servers["label studio"]
    env = {"LABEL_STUDIO_URL": f"http://{ls.netloc}", "LABEL_STUDIO_API_KEY": ENV_KEY}
    values = ["/data/local-files/?d=reviews/r1.txt", "/data/local-files/?d=../../etc/passwd"]
    body = {"tasks": [{"id": i, "data": {"text": v}} for i, v in enumerate(values)], "label_config": CONFIG}
    outcomes = {}
    for on in ("false", "true"):
        ls.seen.clear()
        with start_backend(tmp_path / f"local-{on}.log", JUDGELAB_FETCH_LOCAL_FILES=on, **env) as process:
            results = httpx.post(f"{process.url}/predict", json=body, timeout=60, verify=tls_context()).json()[
                "results"
            ]
        outcomes[on] = ([NOT_FETCHED in r.get("error", "") for r in results], [r.raw_path for r in ls.seen])
    assert outcomes["false"] == ([True, True], [])
    assert outcomes["true"] == ([False, True], ["/data/local-files/?d=reviews%2Fr1.txt"])


@pytest.mark.parametrize("url", ["http://user@127.0.0.1:8080", "//127.0.0.1:8080", "http://127.0.0.1:8080/ls/../api"])
def test_a_label_studio_url_that_could_mislead_stops_the_backend_at_start(url, tmp_path):
    with pytest.raises(RuntimeError, match=r"exited with 2[\s\S]*LABEL_STUDIO_URL"):
        start_backend(tmp_path / "backend.log", LABEL_STUDIO_URL=url, LABEL_STUDIO_API_KEY=ENV_KEY, timeout=30)
