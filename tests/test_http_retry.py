"""Reads of Label Studio are retried when it answers 5xx or drops the connection; writes never are
(a repeated POST after a lost answer would add a second copy). A local HTTP server plays the
failing Label Studio; the fault-injection test does the same against the real one."""

from __future__ import annotations

import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from judgelab.sync.client import Connection, SyncError, connect
from judgelab.sync.ls_api import LabelStudioAPI


class Flaky:
    """Answers each path's first ``failures`` requests with 500 (or by closing the connection).
    ``tls``: (certificate file, key file) to serve HTTPS with."""

    def __init__(
        self,
        failures: int,
        drop: bool = False,
        truncate: bool = False,
        payload: object = None,
        tls: tuple[str, str] | None = None,
    ) -> None:
        self.failures, self.drop, self.truncate = failures, drop, truncate
        self.payload = payload if payload is not None else {"id": 1, "email": "a@b.c", "username": "a", "ok": True}
        self.seen: dict[str, int] = {}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                key = f"{self.command} {self.path.split('?')[0]}"
                outer.seen[key] = outer.seen.get(key, 0) + 1
                if outer.seen[key] <= outer.failures:
                    if outer.truncate:  # the headers promise more body than is sent
                        self.send_response(200)
                        self.send_header("Content-Length", "100")
                        self.end_headers()
                        self.wfile.write(b'{"ok": ')
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    if outer.drop:
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    self._answer(500, {"detail": "export failed: database is locked"})
                    return
                self._answer(200, outer.payload)

            def _answer(self, status: int, payload: object) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _handle

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        scheme = "http"
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Flaky:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    monkeypatch.setenv("JUDGELAB_HTTP_RETRY_PAUSE", "0.01")


#: The two ways the sync reads: an answer parsed whole, and a list streamed through a file (the
#: project's predictions), each a (path, read) pair.
READS = {
    "json": ("api/projects/1/export", lambda api, path: api.get_json(path, {"ids[]": ["1"]})),
    "streamed list": ("api/predictions/", lambda api, path: list(api.iter_json_list(path, {"project": 1}))),
}
PREDICTIONS = [{"id": i, "task": i // 2, "result": [{"value": {"rating": 3}}], "score": 0.5} for i in range(300)]


@pytest.mark.parametrize("read", READS)
@pytest.mark.parametrize("how", ["500", "drop", "truncate"])
def test_the_syncs_reads_are_retried(how, read):
    """A streamed list is spooled to a file and parsed from there: a body cut in the middle is
    asked for again and read from its start, never half parsed."""
    path, reader = READS[read]
    payload = PREDICTIONS if read == "streamed list" else None
    with Flaky(failures=2, drop=how == "drop", truncate=how == "truncate", payload=payload) as server:
        got = reader(LabelStudioAPI(server.url, "token"), path)
        assert (got == PREDICTIONS) if read == "streamed list" else (got["ok"] is True)
        assert server.seen[f"GET /{path}"] == 3


@pytest.mark.parametrize("read", READS)
def test_a_read_failing_every_time_is_a_clear_error(read):
    path, reader = READS[read]
    with Flaky(failures=100) as server:
        with pytest.raises(SyncError, match=r"answered HTTP 500 \(after retries\)"):
            reader(LabelStudioAPI(server.url, "token"), path)
        assert server.seen[f"GET /{path}"] == 5


def test_a_streamed_answer_that_is_not_a_list_is_a_clear_error():
    """An object where a list was asked for would give no items at all: an error, not an empty list."""
    with Flaky(failures=0) as server, pytest.raises(SyncError, match="did not answer a JSON list"):
        list(LabelStudioAPI(server.url, "token").iter_json_list("api/predictions/"))


def test_the_sdk_client_retries_reads_and_never_repeats_a_write():
    with Flaky(failures=1) as server:
        client = connect(Connection(url=server.url, token="token"))  # whoami: a read, failed once
        assert server.seen["GET /api/current-user/whoami"] == 2
        with pytest.raises(Exception) as info:
            client.projects.import_predictions(id=3, request=[])
        assert "500" in str(info.value)
        assert server.seen["POST /api/projects/3/import/predictions"] == 1  # the SDK alone sends it 3 times
