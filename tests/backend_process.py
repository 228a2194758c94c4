"""Start the real ML backend as a process for tests: ``python -m judgelab.backend`` (or any
command line that ends up serving it, e.g. ``judgelab serve ...``) on a free local port, with
only the ``JUDGELAB_*`` variables a test gives (the caller's are dropped)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from judgelab.sync.http_retry import tls_context
from judgelab.sync.local_stack import free_port

ROOT = Path(__file__).resolve().parents[1]
BACKEND = (sys.executable, "-m", "judgelab.backend")
OWN_PREFIXES = ("JUDGELAB_", "LABEL_STUDIO_URL", "LABEL_STUDIO_API_KEY")


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without the caller's backend settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(OWN_PREFIXES)}
    env.update(extra)
    return env


@dataclass
class BackendProcess:
    proc: subprocess.Popen
    url: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        stop(self.proc)

    def __enter__(self) -> BackendProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_backend(
    log_path: Path,
    command: Sequence[str] = BACKEND,
    port: int | None = None,
    cwd: Path = ROOT,
    timeout: float = 60,
    **env_vars: str,
) -> BackendProcess:
    """Start ``command`` with ``JUDGELAB_BACKEND_PORT`` set to a free port (unless the command or
    ``env_vars`` say otherwise); wait for ``/health``. Offline annotator and WARNING logs unless
    ``env_vars`` set them."""
    port = port or free_port()
    env = clean_env(
        JUDGELAB_BACKEND_HOST="127.0.0.1",
        JUDGELAB_BACKEND_PORT=str(port),
        JUDGELAB_ANNOTATOR="offline",
        JUDGELAB_LOG_LEVEL="WARNING",
    )
    env.update(env_vars)
    url = f"http://127.0.0.1:{env['JUDGELAB_BACKEND_PORT']}"
    log = log_path.open("wb")
    # a session of its own: stop() ends the command and whatever it started (a shell, workers)
    proc = subprocess.Popen(
        list(command), cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    log.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"backend exited with {proc.returncode}:\n{log_path.read_text(errors='replace')}")
        try:
            if httpx.get(f"{url}/health", timeout=1, verify=tls_context()).status_code == 200:
                return BackendProcess(proc, url, log_path)
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    stop(proc)
    raise RuntimeError(f"backend did not answer /health in {timeout} s:\n{log_path.read_text(errors='replace')}")


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group (the backend and its workers), SIGKILL after 15 s."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    try:  # workers that outlived their supervisor
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def rss_mb(pid: int) -> float:
    """Resident memory of a process (Linux), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


class CountingBackend:
    """A minimal ML backend in a thread: answers /health and /setup (after ``setup_seconds``, as a
    busy backend would) and counts every request."""

    def __init__(self, setup_seconds: float = 0.0) -> None:
        self.requests: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, payload: dict) -> None:
                body = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):  # noqa: N802
                outer.requests.append(f"GET {self.path}")
                self._answer({"status": "UP", "model_class": "Counter"})

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                outer.requests.append(f"POST {self.path}")
                if self.path.startswith("/setup"):
                    time.sleep(setup_seconds)
                    self._answer({"model_version": "counter-1"})
                else:
                    self._answer({"results": []})

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def predict_calls(self) -> int:
        return sum(1 for r in self.requests if "/predict" in r)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
