"""Reads of Label Studio are retried when it answers 5xx or drops the connection; writes never are
(a repeated POST after a lost answer would add a second copy). A local HTTP server plays the
failing Label Studio; the fault-injection test does the same against the real one."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from judgelab.sync.client import Connection, SyncError, connect
from judgelab.sync.ls_api import LabelStudioAPI


class Flaky:
    """Answers each path's first ``failures`` requests with 500 (or by closing the connection)."""

    def __init__(self, failures: int, drop: bool = False, truncate: bool = False, payload: object = None) -> None:
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
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    monkeypatch.setenv("JUDGELAB_HTTP_RETRY_PAUSE", "0.01")


@pytest.mark.parametrize("how", ["500", "drop", "truncate"])
def test_the_syncs_reads_are_retried(how):
    server = Flaky(failures=2, drop=how == "drop", truncate=how == "truncate")
    try:
        api = LabelStudioAPI(server.url, "token")
        assert api.get_json("api/projects/1/export", {"ids[]": ["1"]})["ok"] is True
        assert server.seen["GET /api/projects/1/export"] == 3
    finally:
        server.close()


@pytest.mark.parametrize("how", ["500", "drop", "truncate"])
def test_a_streamed_list_is_read_again_when_its_answer_fails(how):
    """The project's predictions are streamed to a file and parsed from it: a body cut in the
    middle is asked for again and read from its start, never half parsed."""
    predictions = [{"id": i, "task": i // 2, "result": [{"value": {"rating": 3}}], "score": 0.5} for i in range(300)]
    server = Flaky(failures=2, drop=how == "drop", truncate=how == "truncate", payload=predictions)
    try:
        api = LabelStudioAPI(server.url, "token")
        assert list(api.iter_json_list("api/predictions/", {"project": 1})) == predictions
        assert server.seen["GET /api/predictions/"] == 3
    finally:
        server.close()


def test_a_streamed_answer_that_is_not_a_list_or_keeps_failing_is_a_clear_error():
    server = Flaky(failures=0)
    try:
        with pytest.raises(SyncError, match="did not answer a JSON list"):
            list(LabelStudioAPI(server.url, "token").iter_json_list("api/predictions/"))
    finally:
        server.close()
    server = Flaky(failures=100)
    try:
        with pytest.raises(SyncError, match=r"answered HTTP 500 \(after retries\)"):
            list(LabelStudioAPI(server.url, "token").iter_json_list("api/predictions/"))
        assert server.seen["GET /api/predictions/"] == 5
    finally:
        server.close()


def test_a_read_failing_every_time_is_a_clear_error():
    server = Flaky(failures=100)
    try:
        with pytest.raises(SyncError, match=r"answered HTTP 500 \(after retries\)"):
            LabelStudioAPI(server.url, "token").get_json("api/tasks/")
        assert server.seen["GET /api/tasks/"] == 5
    finally:
        server.close()


def test_the_sdk_client_retries_reads_and_never_repeats_a_write():
    server = Flaky(failures=1)
    try:
        client = connect(Connection(url=server.url, token="token"))  # whoami: a read, failed once
        assert server.seen["GET /api/current-user/whoami"] == 2
        with pytest.raises(Exception) as info:
            client.projects.import_predictions(id=3, request=[])
        assert "500" in str(info.value)
        assert server.seen["POST /api/projects/3/import/predictions"] == 1  # the SDK alone sends it 3 times
    finally:
        server.close()
