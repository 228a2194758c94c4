"""The local stack's process handling: `judgelab down` stops what `judgelab up` started, and
`judgelab up` uses only servers of its own state folder: a port that another program holds (a
stand-in answering like a Label Studio, another folder's judgelab backend) stops it with a
message naming the port and that program, before anything is started."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest
from backend_process import ROOT, CountingBackend, clean_env, start_backend
from click.testing import CliRunner

from judgelab.sync.cli import main
from judgelab.sync.client import SyncError
from judgelab.sync.local_stack import StackSettings, free_port, healthy, load_credentials, record_stack
from judgelab.sync.local_stack import start_backend as start_stack_backend

JUDGELAB = str(Path(sys.executable).parent / "judgelab")

# A server answering every GET 200 with Label Studio's /health body and every token with 401:
# what another Label Studio on the port looks like to this folder's login.
LOOKALIKE = """
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        status, body = (401, {"detail": "Invalid token."}) if self.path.startswith("/api/") else (200, {"status": "UP"})
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass

HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


@pytest.fixture
def lookalike():
    """(port, pid) of a foreign server that answers like a Label Studio, stopped at the end."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", LOOKALIKE, str(port)], start_new_session=True)
    deadline = time.monotonic() + 30
    while not healthy(f"http://127.0.0.1:{port}", timeout=0.5):
        assert proc.poll() is None and time.monotonic() < deadline, "the stand-in server did not start"
        time.sleep(0.1)
    yield port, proc.pid
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


def _up(home: Path, ls_port: int, backend_port: int) -> tuple[subprocess.CompletedProcess, list[str]]:
    """`judgelab up` on these ports: its run and the servers it started (their pid files), which
    `judgelab down` then stops."""
    command = [JUDGELAB, "--home", str(home), "up", "--ls-port", str(ls_port), "--backend-port", str(backend_port)]
    try:
        done = subprocess.run(command, cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=600)
        return done, sorted(path.stem for path in home.glob("*.pid"))
    finally:
        CliRunner().invoke(main, ["--home", str(home), "down"])


def test_down_stops_the_backend_that_up_started(tmp_path):
    settings = StackSettings(home=tmp_path, ls_port=free_port(), backend_port=free_port())
    assert start_stack_backend(settings)
    assert healthy(settings.backend_url)
    result = CliRunner().invoke(main, ["--home", str(tmp_path), "down"])
    assert result.exit_code == 0, result.output
    assert "backend" in result.output
    deadline = time.monotonic() + 30
    while healthy(settings.backend_url, timeout=0.5) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not healthy(settings.backend_url, timeout=0.5)
    assert not list(tmp_path.glob("*.pid"))


def test_up_stops_at_a_label_studio_port_another_program_holds(tmp_path, lookalike):
    port, pid = lookalike
    backend_port = free_port()
    done, started = _up(tmp_path / "stack", port, backend_port)
    assert done.returncode == 1, done.stdout + done.stderr
    message = done.stderr.strip().splitlines()
    assert len(message) == 1 and message[0].startswith("error: "), done.stderr
    assert f"port {port}, where Label Studio should listen, is taken by pid {pid} (" in message[0]
    assert "answering like a Label Studio that does not know this folder's admin token" in message[0]
    assert "--ls-port " in message[0]
    # it neither took the other server for its own nor started anything
    assert "reused" not in done.stdout and "started" not in done.stdout and "refused the token" not in done.stderr
    assert started == [] and not healthy(f"http://127.0.0.1:{backend_port}", 0.5)


def test_up_stops_at_a_backend_port_another_stacks_backend_holds(tmp_path):
    with start_backend(tmp_path / "other.log", JUDGELAB_STACK_ID="another-stack") as other:
        backend_port = int(other.url.rsplit(":", 1)[1])
        done, started = _up(tmp_path / "stack", free_port(), backend_port)
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"port {backend_port}, where the ML backend should listen, is taken by pid {other.proc.pid} (" in (
            done.stderr
        )
        assert "a judgelab backend of another state folder" in done.stderr and "--backend-port " in done.stderr
        assert "ML backend at" not in done.stdout  # nothing was reported as this stack's
        assert started == []  # the ports were checked before Label Studio started
        assert healthy(other.url)  # the other stack's backend is left alone


def test_a_folder_reuses_its_own_backend_and_never_one_of_another_folder(tmp_path):
    port = free_port()
    ours = StackSettings(home=tmp_path / "ours", ls_port=free_port(), backend_port=port)
    try:
        assert start_stack_backend(ours)  # started now
        assert not start_stack_backend(ours)  # found again: reused
        with pytest.raises(SyncError, match=f"port {port}, where the ML backend should listen, is taken by pid"):
            start_stack_backend(StackSettings(home=tmp_path / "theirs", ls_port=free_port(), backend_port=port))
    finally:
        CliRunner().invoke(main, ["--home", str(ours.home), "down"])


def test_two_starts_of_a_folder_backend_at_once_share_one_backend(tmp_path):
    """Two starts at once (two `judgelab up`, two test workers sharing a stack): the second waits for
    the first, then reuses its backend. Both used to find the port free while the first backend was
    loading, and the second backend failed on the taken port."""
    ours = StackSettings(home=tmp_path / "ours", ls_port=free_port(), backend_port=free_port())
    outcomes: list = []

    def start() -> None:
        try:
            outcomes.append(start_stack_backend(ours))
        except Exception as exc:  # noqa: BLE001 - the test reports it
            outcomes.append(exc)

    threads = [threading.Thread(target=start) for _ in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert sorted(outcomes, key=str) == [False, True], outcomes  # one started it, one reused it
        assert healthy(ours.backend_url)
    finally:
        CliRunner().invoke(main, ["--home", str(ours.home), "down"])


def test_the_commands_after_up_reach_label_studio_where_up_ran_it(tmp_path, lookalike):
    """`up --ls-port N` notes the port in the state folder; a command without --url goes there
    (here to a server refusing the folder's token, so the message shows where it went)."""
    port, _ = lookalike
    load_credentials(tmp_path)
    record_stack(StackSettings(home=tmp_path, ls_port=port, backend_port=free_port()))
    done = subprocess.run(
        [JUDGELAB, "--home", str(tmp_path), "create"], cwd=ROOT, env=clean_env(), capture_output=True, text=True
    )
    assert done.returncode == 1 and f"Label Studio at http://127.0.0.1:{port} refused the token" in done.stderr


def test_the_stop_command_up_prints_works_as_printed_without_judgelab_on_the_path(tmp_path):
    """scripts/up.sh runs .venv/bin/judgelab without activating the virtual environment: the
    command `up` ends with must not rely on `judgelab` being on the PATH."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from judgelab.sync.cli.stack import stop_command

    venv_bin = Path(sys.executable).parent
    bare_path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != venv_bin)
    env = {**os.environ, "PATH": bare_path}
    env.pop("JUDGELAB_HOME", None)
    # typed in the folder that holds the virtual environment (the checkout, after up.sh)
    checkout = venv_bin.parent.parent
    home = tmp_path / "state"
    settings = StackSettings(home=home, ls_port=free_port(), backend_port=free_port())
    assert start_stack_backend(settings)
    printed = stop_command(home, cwd=checkout, path=bare_path)
    assert printed.startswith(f"{venv_bin.parent.name}/bin/judgelab --home ")
    done = subprocess.run(["bash", "-c", printed], cwd=checkout, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "stopped: backend" in done.stdout, (printed, done.stderr)
    # typed elsewhere: absolute paths; with this judgelab on the PATH: the bare name
    assert stop_command(home, cwd=tmp_path, path=bare_path).startswith(f"{venv_bin / 'judgelab'} --home state ")
    assert stop_command(Path(".judgelab"), cwd=checkout, path=str(venv_bin)) == "judgelab --home .judgelab down"


def _probe(*setup: str) -> subprocess.CompletedProcess:
    """The launcher's ``main`` run in a fresh Python after ``setup`` (lines run first, with
    ``label_studio.server`` imported as ``server``: they replace what Label Studio would run)."""
    probe = "\n".join(
        ["import label_studio.server as server", *setup, "from judgelab.sync.label_studio_server import main", "main()"]
    )
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)


def _launched(*setup: str) -> str:
    """What :func:`_probe` prints, the probe having succeeded."""
    shown = _probe(*setup)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def _django_on(database: Path, **options: object) -> list[str]:
    """Probe lines that set Django up on a SQLite database of its own (``options``: its OPTIONS)
    and import `runserver`, whose ``run`` the launcher wraps."""
    settings = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(database), "OPTIONS": options}
    return [
        "import django",
        "from django.conf import settings",
        f"settings.configure(DATABASES={{'default': {settings!r}}})",
        "django.setup()",
        "from django.core.management.commands import runserver",
    ]


def test_label_studio_runs_through_the_launcher_that_sets_tcp_nodelay_and_tunes_its_collector(live_stack):
    """Django's development server, which `label-studio start` uses, sends a response's headers and
    body in two writes: without TCP_NODELAY each request waited for the client's delayed
    acknowledgement (40 ms). judgelab starts Label Studio through its launcher, which sets the
    option on the server's connections and runs `label-studio` with the same arguments."""
    from judgelab.sync.local_stack import label_studio_command

    assert label_studio_command() == [sys.executable, "-m", "judgelab.sync.label_studio_server"]
    # the option, as the launcher leaves it when Label Studio's own main takes over
    shown = _launched(
        "from django.core.servers import basehttp",
        "server.main = lambda: print('nodelay', basehttp.WSGIRequestHandler.disable_nagle_algorithm) or 0",
    )
    assert "nodelay True" in shown
    # when `runserver` starts serving: the objects loaded so far frozen out of the collector's
    # walks, the youngest collected every 10,000 allocations (a full walk took 200-250 ms of a
    # request); the server it runs is Django's own
    shown = _launched(
        "import gc",
        "from django.core.management.commands import runserver",
        "runserver.run = lambda *a, **k: print('serving', a, gc.get_freeze_count() > 1000, gc.get_threshold())",
        "server.main = lambda: runserver.run('127.0.0.1', 8080) or 0",
    )
    assert "serving ('127.0.0.1', 8080) True (10000, 10, 10)" in shown
    # and the arguments reach Label Studio unchanged: `version` answers as `label-studio version` does
    # (given the same git search as the launcher's, below: else it reads a checkout around it). Both
    # on the test stack's migrated data folder: `version` sets up Label Studio's database first, and
    # its default folder's first setup is its migrations (over two minutes on a loaded machine)
    data = {"LABEL_STUDIO_BASE_DATA_DIR": str(live_stack.settings.home / "label-studio")}
    ours = subprocess.run(
        [*label_studio_command(), "version"], capture_output=True, text=True, timeout=120, env={**os.environ, **data}
    )
    theirs = subprocess.run(
        [str(Path(sys.executable).parent / "label-studio"), "version"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **data, "GIT_CEILING_DIRECTORIES": str(_label_studio_folder().parent)},
    )
    assert ours.returncode == theirs.returncode == 0, ours.stderr + theirs.stderr
    assert '"label-studio-os-package"' in ours.stdout and ours.stdout == theirs.stdout


def test_label_studio_through_the_launcher_keeps_its_sqlite_database_in_write_ahead_log_mode(live_stack, tmp_path):
    """In SQLite's default rollback journal each commit created, synced and deleted a journal file
    (an annotation's save took 44-50 ms, 37.3-37.5 ms in this mode). Through the launcher, Label
    Studio's database is in write-ahead-log mode and each connection a request opens commits
    without waiting for the disk (synchronous NORMAL)."""
    database = live_stack.settings.home / "label-studio" / "label_studio.sqlite3"
    with closing(sqlite3.connect(database)) as db:  # the mode is kept in the file: any program sees it
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    # what the launcher sets when `runserver` starts serving, on a database of Django's own: the
    # connection of a request's thread, opened after, runs synchronous NORMAL (1; SQLite's default
    # is FULL, 2)
    shown = _launched(
        "import threading",
        *_django_on(tmp_path / "db.sqlite3"),
        "from django.db import connection",
        "def pragma(name):",
        "    cursor = connection.cursor()",
        "    cursor.execute(f'PRAGMA {name}')",
        "    return cursor.fetchone()[0]",
        "def served(*args, **kwargs):",
        "    seen = []",
        "    request = threading.Thread(target=lambda: seen.append(pragma('synchronous')))",
        "    request.start()",
        "    request.join()",
        "    print('journal', pragma('journal_mode'), 'synchronous', seen)",
        "runserver.run = served",
        "server.main = lambda: runserver.run('127.0.0.1', 8080) or 0",
    )
    assert "journal wal synchronous [1]" in shown, shown
    # a database another program holds locked (or a file system without shared memory) cannot
    # change its journal: Label Studio is served in the mode it has, and the launcher says so
    held = tmp_path / "held.sqlite3"
    with closing(sqlite3.connect(held, isolation_level=None)) as other:
        other.execute("CREATE TABLE t (x)")
        other.execute("BEGIN EXCLUSIVE")
        probe = _probe(
            *_django_on(held, timeout=0.2),
            "runserver.run = lambda *args, **kwargs: print('serving')",
            "server.main = lambda: runserver.run('127.0.0.1', 8080) or 0",
        )
        other.execute("ROLLBACK")
    assert probe.returncode == 0 and probe.stdout == "serving\n", probe.stderr
    assert "Label Studio's SQLite database stays in its journal mode (database is locked)" in probe.stderr


def _label_studio_folder() -> Path:
    import label_studio

    return Path(label_studio.__file__).parent


def test_label_studio_through_the_launcher_does_not_take_a_checkout_around_its_install_for_its_own():
    """Label Studio asks git for its version from its package's folder on every export request (five
    git commands) and writes the answer over its version file. Installed in a virtualenv inside a
    checkout (judgelab's `.venv`), git found the checkout: Label Studio called itself by the
    checkout's commit, each export spending about 17 ms in git. Through the launcher, git finds no
    repository from there, wherever the virtualenv is."""
    core = _label_studio_folder() / "core"
    git = f"subprocess.run(['git', 'rev-parse', '--git-dir'], cwd={str(core)!r}, capture_output=True)"
    shown = _launched("import subprocess", f"server.main = lambda: print('git', {git}.returncode) or 0")
    assert shown.startswith("git ") and "git 0" not in shown, shown
    # the same Python without the launcher: a checkout around the virtualenv (as here) is found
    checkout = Path(sys.prefix).parent
    if (checkout / ".git").exists():
        around = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=core, capture_output=True)
        assert around.returncode == 0


def test_label_studio_of_the_stack_waits_for_a_slow_backend_setup(live_stack):
    """Label Studio gives a backend's /setup 3 s by default when the backend is connected, then
    refuses it as "not a valid ML backend"; a backend busy predicting took longer. The stack's Label
    Studio waits up to 30 s: a backend whose /setup takes 5 s is connected."""
    slow = CountingBackend(setup_seconds=5)  # what a busy backend's /setup looked like to Label Studio
    try:
        client = live_stack.client
        config = '<View><Text name="t" value="$text"/><Choices name="c" toName="t"><Choice value="a"/></Choices></View>'
        project = client.projects.create(title="slow setup", label_config=config)
        started = time.monotonic()
        ml = client.ml.create(url=slow.url, project=project.id, title="slow", is_interactive=False)
        assert time.monotonic() - started >= 5  # it did wait for /setup
        assert ml.id in [backend.id for backend in client.ml.list(project=project.id)]
        client.projects.delete(id=project.id)
    finally:
        slow.close()
