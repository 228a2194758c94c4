"""The ``judgelab`` CLI turns problems a user must fix into one message and exit code 1.
No Label Studio is needed: the servers here are a closed port and a tiny local HTTP listener
that only counts the requests it receives."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.sync.cli import main

GOOD_CSV = "article,summary\nEl pleno aprobó el plan de 42 millones.,Se aprueba un plan.\n"
BAD_CSV = "article,summary\nEl pleno aprobó el plan de 42 millones.,Se aprueba un plan.\n,Resumen sin noticia.\n"


@pytest.fixture(autouse=True)
def no_credentials_from_the_environment(monkeypatch):
    for name in ("JUDGELAB_LS_URL", "JUDGELAB_LS_TOKEN", "LABEL_STUDIO_URL", "LABEL_STUDIO_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Listener:
    """An HTTP server that answers every request 401 and counts them."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def _refuse(self) -> None:
                listener.requests.append(self.path)
                body = b'{"detail": "Invalid token."}'
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _refuse

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    server.thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def run_import(url: str, home: Path, schema: str, *files: Path):
    return run("--url", url, "--token", "abc", "--home", str(home), "import", "--schema", schema, *map(str, files))


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_unreachable_label_studio_names_the_url(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}"
    result = run("--url", url, "--token", "abc", "--home", str(tmp_path), "create", "--schema", "summary_flaws")
    assert result.exit_code == 1
    assert f"cannot reach Label Studio at {url}" in result.output
    assert "Traceback" not in result.output


def test_sync_names_an_unreachable_server_and_a_refused_token(tmp_path, listener):
    """The sync's own HTTP client (no SDK) gives the same messages as the other commands."""
    url = f"http://127.0.0.1:{closed_port()}"
    result = run("--url", url, "--token", "abc", "--home", str(tmp_path), "sync", "--out", str(tmp_path / "out"))
    assert result.exit_code == 1 and f"cannot reach Label Studio at {url}" in result.output
    result = run("--url", listener.url, "--token", "abc", "--home", str(tmp_path), "sync", "--out", str(tmp_path / "o"))
    assert result.exit_code == 1 and f"Label Studio at {listener.url} refused the token (HTTP 401)" in result.output
    assert "Traceback" not in result.output and listener.requests


def test_no_token_says_how_to_give_one(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}"
    result = run("--url", url, "--home", str(tmp_path), "sync", "--out", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert "no Label Studio token" in result.output
    assert "--token" in result.output and "JUDGELAB_LS_TOKEN" in result.output


def test_a_bad_row_stops_the_import_before_connecting(tmp_path, listener):
    bad = write(tmp_path / "bad.csv", BAD_CSV)
    result = run_import(listener.url, tmp_path, "likert_rubric_es", bad)
    assert result.exit_code == 1
    assert "bad.csv line 3" in result.output
    assert "'article'" in result.output
    assert "nothing was imported" in result.output
    assert listener.requests == []


def test_a_good_file_does_reach_the_server(tmp_path, listener):
    """The control for the test above: with a good file the CLI connects (and the listener,
    which refuses every token, makes it stop with a clear message)."""
    good = write(tmp_path / "good.csv", GOOD_CSV)
    result = run_import(listener.url, tmp_path, "likert_rubric_es", good)
    assert result.exit_code == 1
    assert listener.requests
    assert f"Label Studio at {listener.url} refused the token (HTTP 401)" in result.output


def test_every_file_is_checked_before_connecting(tmp_path, listener):
    good = write(tmp_path / "good.csv", GOOD_CSV)
    bad = write(tmp_path / "bad.csv", BAD_CSV)
    result = run_import(listener.url, tmp_path, "likert_rubric_es", good, bad)
    assert result.exit_code == 1
    assert "bad.csv line 3" in result.output
    assert listener.requests == []


def test_unknown_schema_is_a_clear_error(tmp_path, listener):
    good = write(tmp_path / "good.csv", GOOD_CSV)
    result = run_import(listener.url, tmp_path, "no_such_schema", good)
    assert result.exit_code == 1
    assert "unknown schema 'no_such_schema'" in result.output
    assert "likert_rubric_es" in result.output  # the known names are listed
    assert listener.requests == []


def test_unsupported_file_type(tmp_path, listener):
    notes = write(tmp_path / "tasks.txt", "article: x\nsummary: y\n")
    result = run_import(listener.url, tmp_path, "likert_rubric_es", notes)
    assert result.exit_code == 1
    assert "unsupported file type '.txt'" in result.output
    assert listener.requests == []


def test_missing_file(tmp_path):
    result = run(
        "--token",
        "abc",
        "--home",
        str(tmp_path),
        "import",
        "--schema",
        "likert_rubric_es",
        str(tmp_path / "absent.csv"),
    )
    assert result.exit_code == 1
    assert "absent.csv: no such file" in result.output


def test_non_utf8_file(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes(GOOD_CSV.encode("latin-1"))
    result = run("--token", "abc", "--home", str(tmp_path), "import", "--schema", "likert_rubric_es", str(path))
    assert result.exit_code == 1
    assert "not UTF-8" in result.output and "latin1.csv" in result.output


def test_a_chunk_size_below_one_is_refused_before_connecting(listener):
    """``--chunk-size 0`` once read as "the budget is reached" and crashed formatting a budget of
    None; it is a usage error (exit 2) naming the option, and nothing reaches Label Studio."""
    result = CliRunner().invoke(
        main, ["--url", listener.url, "--token", "t", "preannotate", "--push", "--chunk-size", "0"]
    )
    assert result.exit_code == 2
    assert "--chunk-size" in result.output and "0" in result.output
    assert listener.requests == []
