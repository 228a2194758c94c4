"""A small HTTP proxy in front of a real Label Studio that fails on purpose (localhost only).

Each request is, by a seeded random draw, passed through or failed in one of five ways:

- ``500``: answered 500 without reaching Label Studio;
- ``drop``: the connection closed without an answer, before reaching Label Studio;
- ``500-after``: sent to Label Studio (a write happens), then answered 500: the answer is lost;
- ``drop-after``: sent to Label Studio, then the connection closed without an answer;
- ``truncated``: Label Studio's answer cut in the middle of its body.

No (method, path) fails more than ``max_in_a_row`` times in a row, so a client that repeats a
request a few times always gets through; what it does not repeat (writes) it must recover from
by being run again. ``faults`` counts what was injected.
"""

from __future__ import annotations

import http.client
import random
import socket
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

KINDS = ("500", "drop", "500-after", "drop-after", "truncated")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class FaultProxy:
    def __init__(self, target: str, rate: float = 0.3, seed: int = 15, max_in_a_row: int = 2) -> None:
        parts = urlsplit(target)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.rate, self.max_in_a_row = rate, max_in_a_row
        self.random = random.Random(seed)
        self.faults: Counter[str] = Counter()
        self.passed = 0
        self.enabled = True
        self.error_body = ("application/json", b'{"detail": "injected failure"}')  # what a 500 says
        self._in_a_row: Counter[str] = Counter()
        self._lock = threading.Lock()
        # set to a list to keep every answer passed through: (method, path with query, status, body)
        self.answers: list[tuple[str, str, int, bytes]] | None = None
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fault = proxy._draw(f"{self.command} {urlsplit(self.path).path}")
                if fault in ("500", "drop"):
                    return self._fail(fault)
                status, reason, headers, payload = proxy._forward(self.command, self.path, self.headers, body)
                if fault in ("500-after", "drop-after"):
                    return self._fail(fault)
                if proxy.answers is not None:
                    proxy.answers.append((self.command, self.path, status, payload))
                self.send_response(status, reason)
                for name, value in headers:
                    if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if fault == "truncated" and len(payload) > 1:
                    self.wfile.write(payload[: len(payload) // 2])
                    self.wfile.flush()
                    self._close()
                    return
                self.wfile.write(payload)

            def _fail(self, fault: str) -> None:
                if fault.startswith("500"):
                    content_type, body = proxy.error_body
                    self.send_response(500)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    self._close()

            def _close(self) -> None:
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _draw(self, key: str) -> str | None:
        with self._lock:
            if not self.enabled or self._in_a_row[key] >= self.max_in_a_row or self.random.random() >= self.rate:
                self._in_a_row[key] = 0
                self.passed += 1
                return None
            fault = self.random.choice(KINDS)
            self._in_a_row[key] += 1
            self.faults[fault] += 1
            return fault

    def _forward(self, method: str, path: str, headers, body: bytes) -> tuple[int, str, list, bytes]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=120)
        try:
            sent = {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "host"}
            sent["Host"] = f"{self.host}:{self.port}"
            connection.request(method, path, body=body or None, headers=sent)
            response = connection.getresponse()
            return response.status, response.reason, response.getheaders(), response.read()
        finally:
            connection.close()

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


#: The shape of Label Studio's own error page for a 500 (Django's technical page: dozens of lines).
ERROR_PAGE = (
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n  <meta http-equiv="content-type" content="text/html">\n'
    "  <title>OperationalError\n          at /api/injected/</title>\n"
    "  <style>body { font: small sans-serif; }</style>\n"
    "</head>\n<body>\n"
    + "".join(f'<div id="frame{i}">\n  <pre>database is locked</pre>\n</div>\n' for i in range(16))
    + "</body>\n</html>\n"
)


class ScriptedFaultProxy(FaultProxy):
    """A :class:`FaultProxy` whose faults are chosen by ``script(method, path)`` (a kind of
    ``KINDS`` or None: passed through), answering its 500s with Label Studio's HTML error page."""

    def __init__(self, target: str, script) -> None:
        super().__init__(target, rate=0.0)
        self.script = script
        self.error_body = ("text/html; charset=utf-8", ERROR_PAGE.encode())

    def _draw(self, key: str) -> str | None:
        method, _, path = key.partition(" ")
        with self._lock:
            fault = self.script(method, path) if self.enabled else None
            if fault is None:
                self.passed += 1
            else:
                self.faults[fault] += 1
            return fault
