"""Shared fixtures. The integration fixtures start a real Label Studio (on SQLite; and, for the
tests that ask for ``live_stack_postgres``, a second one on a throwaway PostgreSQL server) and the
real judgelab backend once per test session, as separate processes on free local ports."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from judgelab.sync.local_stack import free_port  # tests import it from here too

# ../shared/data beside the checkout (a worktree elsewhere points to it with JUDGELAB_SHARED_DATA)
SHARED_DATA = Path(os.environ.get("JUDGELAB_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
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


def _run_stack(settings):
    """Start Label Studio and the backend for ``settings``; yield the LiveStack; stop both."""
    from judgelab.sync.client import Connection, connect
    from judgelab.sync.local_stack import load_credentials, start_backend, start_label_studio, stop_stack

    creds = load_credentials(settings.home)
    try:
        start_label_studio(settings, creds)
        start_backend(settings)
        client = connect(Connection(url=settings.ls_url, token=creds.token))
        for project in client.projects.list():  # a kept state folder starts empty too
            client.projects.delete(id=project.id)
        yield LiveStack(settings=settings, creds=creds, client=client)
    finally:
        stop_stack(settings.home)


@pytest.fixture(scope="session")
def live_stack(tmp_path_factory):
    """Label Studio on SQLite + judgelab backend (offline annotator), started once, stopped at the end.

    ``JUDGELAB_TEST_HOME`` keeps the state folder between runs (a migrated database makes the
    next start take seconds instead of minutes); by default it is a fresh temporary folder.
    """
    from judgelab.sync.local_stack import StackSettings

    home = Path(os.environ.get("JUDGELAB_TEST_HOME") or tmp_path_factory.mktemp("stack"))
    yield from _run_stack(StackSettings(home=home, ls_port=free_port(), backend_port=free_port()))


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL server (sync/postgres_server.py), stopped and removed at the end.

    Without PostgreSQL's binaries the tests that need it skip, except as root on Debian (CI, where
    scripts/test.sh installs Debian's postgresql): there they fail, so they cannot silently vanish.
    """
    from judgelab.sync.client import SyncError
    from judgelab.sync.postgres_server import PostgresServer, find_postgres_bindir

    try:
        find_postgres_bindir()
        missing = ""
    except SyncError as exc:
        missing = str(exc)
    if missing and os.geteuid() == 0 and Path("/etc/debian_version").exists():
        pytest.fail(f"{missing}; as root on Debian scripts/test.sh installs it", pytrace=False)
    if missing:
        pytest.skip(f"Label Studio on PostgreSQL: {missing}")
    server = PostgresServer(port=free_port()).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def live_stack_postgres(tmp_path_factory, postgres_server):
    """Like ``live_stack``, with Label Studio on a fresh database of the throwaway PostgreSQL server
    (its first start runs all of Label Studio's migrations there: 1-3 minutes)."""
    from judgelab.sync.local_stack import StackSettings

    database = postgres_server.create_database("labelstudio")
    settings = StackSettings(
        home=tmp_path_factory.mktemp("stack-postgres"), ls_port=free_port(), backend_port=free_port(), database=database
    )
    yield from _run_stack(settings)


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
