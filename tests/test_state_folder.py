"""The sync folder's lock (sync/state_folder.py), between real processes: a second holder waits,
says whom it waits for, and gets the lock when the first lets go; a lock file that cannot be opened
is a clear SyncError."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from judgelab.sync.client import SyncError
from judgelab.sync.state_folder import LOCK_FILE, folder_lock, import_lock, preannotate_lock

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from judgelab.sync.state_folder import folder_lock, import_lock, preannotate_lock
    kind, where, flag = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    locks = {"folder": lambda: folder_lock(Path(where)), "import": lambda: import_lock(where)}
    lock = locks.get(kind, lambda: preannotate_lock(where, 7))()
    with lock:
        (flag.parent / "held").write_text("yes")
        while not flag.exists():
            time.sleep(0.02)
    """
)


def _hold_in_another_process(kind: str, where: str, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    release = tmp_path / "release"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, kind, where, str(release)], env=os.environ.copy())
    deadline = time.monotonic() + 60
    while not (tmp_path / "held").exists():
        assert proc.poll() is None, "the holder exited before taking the lock"
        assert time.monotonic() < deadline, "the holder never took the lock"
        time.sleep(0.02)
    return proc, release


@pytest.mark.parametrize("kind", ["folder", "import", "preannotate"])
def test_a_second_holder_waits_names_the_first_and_then_gets_the_lock(tmp_path, kind):
    out = tmp_path / "tables"
    out.mkdir()
    where = str(out) if kind == "folder" else f"http://localhost:1/{tmp_path.name}"
    proc, release = _hold_in_another_process(kind, where, tmp_path)
    messages: list[str] = []

    def on_wait(message: str) -> None:
        messages.append(message)
        release.write_text("go")  # the first lets go only once the second waits

    locks = {"folder": lambda: folder_lock(out, on_wait), "import": lambda: import_lock(where, on_wait)}
    lock = locks.get(kind, lambda: preannotate_lock(where, 7, on_wait))()
    with lock:
        assert proc.wait(timeout=60) == 0  # the first finished before the second got the lock
    assert len(messages) == 1
    said = {"folder": "sync", "import": "import", "preannotate": "run"}[kind]
    assert messages[0].startswith(f"waiting for another judgelab {said}")
    if kind == "preannotate":
        assert f"pre-annotating project 7 at {where}" in messages[0]
    assert f"(pid {proc.pid})" in messages[0]


def test_an_unheld_lock_is_taken_without_waiting_and_kept_on_disk(tmp_path):
    messages: list[str] = []
    with folder_lock(tmp_path, messages.append):
        assert (tmp_path / LOCK_FILE).read_text() == str(os.getpid())
    with folder_lock(tmp_path, messages.append):  # released: taken again at once
        pass
    assert messages == []
    assert (tmp_path / LOCK_FILE).exists() and (tmp_path / LOCK_FILE).read_text() == ""


def test_a_lock_file_that_cannot_be_opened_is_a_sync_error(tmp_path):
    (tmp_path / LOCK_FILE).mkdir()  # a folder where the lock file should be
    with pytest.raises(SyncError, match=str(tmp_path)):
        with folder_lock(tmp_path):
            pass


def test_network_errors_inside_the_lock_are_not_storage_errors(tmp_path):
    with pytest.raises(ConnectionError):
        with folder_lock(tmp_path):
            raise ConnectionError("Label Studio went away")
