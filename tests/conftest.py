"""Shared fixtures. The integration fixtures start a real Label Studio (on SQLite; and, for the
tests that ask for ``live_stack_postgres``, a second one on a throwaway PostgreSQL server) and the
real judgelab backend once per test session, as separate processes on free local ports."""

from __future__ import annotations

import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from judgelab.sync.local_stack import free_port  # tests import it from here too

ARTIFACTS = Path(os.environ.get("JUDGELAB_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "test-artifacts"))


@dataclass
class LiveStack:
    settings: object
    creds: object
    client: object

    @property
    def url(self) -> str:
        return self.settings.ls_url

    @property
    def backend_url(self) -> str:
        return self.settings.backend_url


class _Boot:
    """A Label Studio whose process was started early (when the session's tests were collected), so
    its first boot's migrations (1-2 minutes on 2 cores) overlap with the unit tests that run first.
    ``result()`` waits for it; an error while starting is raised there, in the test that needs it."""

    def __init__(self, start):
        self._done = threading.Event()
        self._value = None
        self._error: BaseException | None = None

        def run():
            try:
                self._value = start()
            except BaseException as exc:  # noqa: BLE001 - handed to the fixture that waits
                self._error = exc
            finally:
                self._done.set()

        threading.Thread(target=run, daemon=True).start()

    def result(self):
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


_BOOTS: dict[str, _Boot] = {}


def _spawn_stack(settings):
    """Start Label Studio's process for ``settings`` (not waiting for it); (settings, creds, proc)."""
    from judgelab.sync.local_stack import healthy, load_credentials, spawn_label_studio

    creds = load_credentials(settings.home)
    proc = None if healthy(settings.ls_url) else spawn_label_studio(settings, creds)
    return settings, creds, proc


def _sqlite_stack():
    from judgelab.sync.local_stack import StackSettings

    home = Path(os.environ.get("JUDGELAB_TEST_HOME") or tempfile.mkdtemp(prefix="judgelab-stack-"))
    return _spawn_stack(StackSettings(home=home, ls_port=free_port(), backend_port=free_port()))


def _postgres_stack():
    """The throwaway PostgreSQL server and a Label Studio starting on a fresh database of it; a
    reason string instead when PostgreSQL's binaries are missing."""
    from judgelab.sync.client import SyncError
    from judgelab.sync.local_stack import StackSettings
    from judgelab.sync.postgres_server import PostgresServer, find_postgres_bindir

    try:
        find_postgres_bindir()
    except SyncError as exc:
        return str(exc)
    server = PostgresServer(port=free_port()).start()
    database = server.create_database("labelstudio")
    home = Path(tempfile.mkdtemp(prefix="judgelab-stack-postgres-"))
    settings = StackSettings(home=home, ls_port=free_port(), backend_port=free_port(), database=database)
    return server, _spawn_stack(settings)


def pytest_collection_finish(session):
    """Start the Label Studio servers the selected tests will need, in the background."""
    if session.config.getoption("collectonly"):
        return
    wanted = set()
    for item in session.items:
        wanted.update(getattr(item, "fixturenames", ()))
    if "live_stack" in wanted:
        _BOOTS["sqlite"] = _Boot(_sqlite_stack)
    if "live_stack_postgres" in wanted or "postgres_server" in wanted:
        _BOOTS["postgres"] = _Boot(_postgres_stack)


def _run_stack(spawned):
    """Wait for the Label Studio of ``spawned``, start the backend; yield the LiveStack; stop both."""
    from judgelab.sync.client import Connection, connect
    from judgelab.sync.local_stack import start_backend, stop_stack, wait_label_studio

    settings, creds, proc = spawned
    try:
        if proc is not None:
            wait_label_studio(settings, proc)
        start_backend(settings)
        client = connect(Connection(url=settings.ls_url, token=creds.token))
        for project in client.projects.list():  # a kept state folder starts empty too
            client.projects.delete(id=project.id)
        yield LiveStack(settings=settings, creds=creds, client=client)
    finally:
        stop_stack(settings.home)


@pytest.fixture(scope="session")
def live_stack():
    """Label Studio on SQLite + judgelab backend (offline annotator), started once, stopped at the end.

    ``JUDGELAB_TEST_HOME`` keeps the state folder between runs (a migrated database makes the
    next start take seconds instead of minutes); by default it is a fresh temporary folder.
    """
    boot = _BOOTS.pop("sqlite", None)
    yield from _run_stack(boot.result() if boot else _sqlite_stack())


@pytest.fixture(scope="session")
def _postgres_boot():
    """(server, spawned stack) of the throwaway PostgreSQL server; stops the server at the end.

    Without PostgreSQL's binaries the tests that need it skip, except as root on Debian (CI, where
    scripts/test.sh installs Debian's postgresql): there they fail, so they cannot silently vanish.
    """
    boot = _BOOTS.pop("postgres", None)
    started = boot.result() if boot else _postgres_stack()
    if isinstance(started, str):
        if os.geteuid() == 0 and Path("/etc/debian_version").exists():
            pytest.fail(f"{started}; as root on Debian scripts/test.sh installs it", pytrace=False)
        pytest.skip(f"Label Studio on PostgreSQL: {started}")
    server, spawned = started
    try:
        yield server, spawned
    finally:
        from judgelab.sync.local_stack import stop_stack

        stop_stack(spawned[0].home)
        server.stop()


@pytest.fixture(scope="session")
def postgres_server(_postgres_boot):
    """A throwaway PostgreSQL server (sync/postgres_server.py), stopped and removed at the end."""
    return _postgres_boot[0]


@pytest.fixture(scope="session")
def live_stack_postgres(_postgres_boot):
    """Like ``live_stack``, with Label Studio on a fresh database of the throwaway PostgreSQL server
    (its first start runs all of Label Studio's migrations there: 1-3 minutes)."""
    yield from _run_stack(_postgres_boot[1])


def pytest_sessionfinish(session):
    """Stop what was started early for tests that were then not run (deselected, -x)."""
    from judgelab.sync.local_stack import stop_stack

    for name, boot in list(_BOOTS.items()):
        started = boot.result()
        if name == "postgres" and not isinstance(started, str):
            server, spawned = started
            stop_stack(spawned[0].home)
            server.stop()
        elif name == "sqlite":
            stop_stack(started[0].home)
        _BOOTS.pop(name, None)


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
