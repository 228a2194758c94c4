"""Shared fixtures. The integration fixtures start a real Label Studio (SQLite) and the real
judgelab backend once per test session, as separate processes on free local ports."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
ARTIFACTS = Path(os.environ.get("JUDGELAB_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "test-artifacts"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


@pytest.fixture(scope="session")
def live_stack(tmp_path_factory):
    """Label Studio + judgelab backend (offline annotator), started once, stopped at the end.

    ``JUDGELAB_TEST_HOME`` keeps the state folder between runs (a migrated database makes the
    next start take seconds instead of minutes); by default it is a fresh temporary folder.
    """
    from sync.client import Connection, connect
    from sync.local_stack import StackSettings, load_credentials, start_backend, start_label_studio, stop_stack

    home = Path(os.environ.get("JUDGELAB_TEST_HOME") or tmp_path_factory.mktemp("stack"))
    settings = StackSettings(home=home, ls_port=free_port(), backend_port=free_port())
    creds = load_credentials(home)
    try:
        start_label_studio(settings, creds)
        start_backend(settings)
        client = connect(Connection(url=settings.ls_url, token=creds.token))
        for project in client.projects.list():  # a kept state folder starts empty too
            client.projects.delete(id=project.id)
        yield LiveStack(settings=settings, creds=creds, client=client)
    finally:
        stop_stack(home)


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
