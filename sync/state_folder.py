"""The sync's ``--out`` folder: checked before use, held by one sync at a time, and its storage
errors (disk full, read-only, not a folder) turned into clear messages.

Two ``judgelab sync`` runs into one folder would both read the stored state, both export, and
both write: rows doubled, or SQLite's ``database is locked``. So a run holds an exclusive lock on
``<out>/.judgelab-sync.lock`` (a ``filelock.FileLock``, ``flock`` underneath: the system releases it
when the process ends, however it ends) from before it reads the state until its last write. A
second run waits for the first to finish, saying so, and then does what is left (usually nothing:
the first run's changes are its state). Reading the tables (``judgelab report``) needs no lock:
SQLite keeps readers consistent.
"""

from __future__ import annotations

import errno
import hashlib
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from judgelab.sync.client import SyncError

LOCK_FILE = ".judgelab-sync.lock"


def prepare_out(out_dir: Path) -> Path:
    """``out_dir`` as a folder that exists (created if needed); a clear error when it cannot be."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise SyncError(f"--out {out_dir} is a file, not a folder: give a folder for the tables")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise storage_error(out_dir, exc) from None
    if not os.access(out_dir, os.W_OK):
        raise SyncError(f"cannot write to {out_dir}: permission denied")
    return out_dir


def storage_error(out_dir: Path, exc: BaseException) -> SyncError:
    """What a failed write into ``out_dir`` means for the user."""
    if isinstance(exc, sqlite3.Error):
        text = str(exc)
        if "full" in text:
            return SyncError(
                f"{out_dir}: the disk is full ({text}); what was stored before is intact: free space, re-run"
            )
        if "readonly" in text or "read-only" in text:
            return SyncError(f"cannot write to {out_dir}: {text}")
        return SyncError(f"{out_dir}: the sync's SQLite file: {text}")
    if isinstance(exc, OSError):
        if exc.errno in (errno.ENOSPC, errno.EDQUOT) or "No space left on device" in str(exc):
            return SyncError(f"{out_dir}: the disk is full; what was stored before is intact: free space, re-run")
        if exc.errno == errno.ENOTDIR:
            return SyncError(f"--out {out_dir}: a part of the path is a file, not a folder")
        reason = exc.strerror or str(exc)
        return SyncError(f"cannot write to {out_dir}: {reason}" + (f" ({exc.filename})" if exc.filename else ""))
    return SyncError(f"{out_dir}: {exc}")


@contextmanager
def storage_errors(out_dir: Path) -> Iterator[None]:
    """Turn SQLite's and the file system's write errors inside the block into :class:`SyncError`."""
    try:
        yield
    except (ConnectionError, TimeoutError):  # the network, not the folder
        raise
    except (sqlite3.OperationalError, sqlite3.DatabaseError, OSError) as exc:
        raise storage_error(Path(out_dir), exc) from None


def _holder(path: Path) -> str:
    try:
        pid = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


def _note_holder(path: Path, pid: str) -> None:
    """Write the holder's pid into the lock file (for the waiting run's message; best effort: the
    lock is the ``flock`` on the file, not its content)."""
    try:
        path.write_text(pid, encoding="ascii")
    except OSError:  # a full disk: the lock holds all the same
        pass


@contextmanager
def folder_lock(out_dir: Path, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the sync folder's lock; when another run holds it, tell ``on_wait`` and wait for it."""
    waiting = f"another judgelab sync{{holder}} into {out_dir} to finish (one sync at a time per folder)"
    with _held(Path(out_dir) / LOCK_FILE, waiting, on_wait, lambda exc: storage_error(Path(out_dir), exc)):
        yield


@contextmanager
def import_lock(url: str, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold this machine's lock on imports into the Label Studio at ``url``. Two imports at once
    would both list the project's task keys and annotations before either adds its own, and
    both add them (tasks, annotations and accounts twice); so a second run waits, saying so,
    and then finds what the first added. A file in the system's temporary folder, one per user
    and Label Studio URL."""
    waiting = f"another judgelab import{{holder}} into {url} to finish (one import at a time per Label Studio)"
    with _held(_machine_lock_path("import", url), waiting, on_wait, lambda exc: exc):
        yield


@contextmanager
def preannotate_lock(url: str, project_id: int, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold this machine's lock on pre-annotating project ``project_id`` of the Label Studio at
    ``url``. Two runs at once would list the same tasks as lacking a prediction, predict them side
    by side and check them in the same moment before either imports, so both would import one;
    a second run waits, saying so, then finds the first one's predictions and sends only what is
    left. (Each chunk is still checked before its import, for a run on another machine or Label
    Studio's own "Retrieve predictions".)"""
    waiting = f"another judgelab run{{holder}} pre-annotating project {project_id} at {url} to finish"
    with _held(_machine_lock_path("preannotate", url, project_id), waiting, on_wait, lambda exc: exc):
        yield


@contextmanager
def start_lock(home: Path, server: str) -> Iterator[None]:
    """Hold the state folder ``home``'s lock on starting its ``server``. Two starts at once (two
    ``judgelab up``, two test workers sharing a stack) would both find the port free while the
    first server loads, both start one, and the second would fail on the taken port; the second
    waits instead, then finds the first one answering."""
    Path(home).mkdir(parents=True, exist_ok=True)
    path = Path(home) / f".{server}-start.lock"
    with _held(path, f"another start of {server}{{holder}}", None, lambda exc: SyncError(f"{path}: {exc}")):
        yield


def _machine_lock_path(kind: str, url: str, project_id: int | None = None) -> Path:
    """The file of this user's ``kind`` lock on the Label Studio at ``url`` (however its URL is
    written: a trailing slash, capitals), or on its project ``project_id``, in the system's
    temporary folder."""
    folder = Path(tempfile.gettempdir()) / f"judgelab-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    key = url.rstrip("/").lower() + ("" if project_id is None else f" {project_id}")
    return folder / f"{kind}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.lock"


@contextmanager
def _held(
    path: Path,
    waiting: str,
    on_wait: Callable[[str], None] | None,
    failed: Callable[[OSError], BaseException],
) -> Iterator[None]:
    """An exclusive lock on the file ``path`` (kept on release, so every waiter locks the same
    file); ``waiting`` (with ``{holder}``) goes to ``on_wait`` when another process holds it, and
    ``failed`` says what a lock file that cannot be created or opened means."""
    lock = FileLock(path, preserve_lock_file=True)
    try:
        try:
            lock.acquire(blocking=False)
        except Timeout:
            if on_wait:
                on_wait("waiting for " + waiting.replace("{holder}", _holder(path)))
            lock.acquire()
    except OSError as exc:
        raise failed(exc) from None
    try:
        _note_holder(path, str(os.getpid()))
        try:
            yield
        finally:
            _note_holder(path, "")
    finally:
        lock.release()
