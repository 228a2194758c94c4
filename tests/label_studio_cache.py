"""Label Studio's migrated state, kept on this machine from one run of the suite to the next.

Every run starts its Label Studio servers on new state: a SQLite folder that the workers copy
(``tests/conftest.py``) and a database on a new PostgreSQL server. Their first boots migrate the
database, about 40 s of CPU each on 2 cores, in every run, although nothing in them changes between
two runs with the same packages. What such a boot leaves is kept here and a later run starts from a
copy:

- **SQLite**: the migrated state folder (the database and the preset login), copied as the
  workers copy it;
- **PostgreSQL**: a dump of the migrated database (``pg_dump -Fc``) and the login it holds,
  restored into the new server's database before Label Studio starts on it.

Each is kept under a key made of the name and version of Label Studio and of every distribution
it requires, through their requirements, and of the code of judgelab's that starts Label Studio
(``sync/local_stack.py``, ``sync/label_studio_server.py``, ``tests/postgres_server.py``): a new
Label Studio, Django or launcher finds no copy and migrates again, and the copies of other keys
are removed, while a tool installed beside them (a profiler) keeps the key. Only a state a boot
finished is kept (written into a temporary folder and renamed into place), so a killed run leaves
nothing half-kept.

``JUDGELAB_TEST_CACHE`` sets the folder (default ``~/.cache/judgelab-tests``, or under
``$XDG_CACHE_HOME``); ``JUDGELAB_TEST_CACHE=off`` keeps nothing and makes every run migrate.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

CACHE_ENV = "JUDGELAB_TEST_CACHE"
ROOT = Path(__file__).resolve().parents[1]
# judgelab's code that decides what a first boot leaves (its settings, its login, its launcher)
BOOT_CODE = ("sync/local_stack.py", "sync/label_studio_server.py", "tests/postgres_server.py")
SQLITE = "sqlite"
POSTGRES = "postgres"
DUMP = "labelstudio.dump"
CREDENTIALS = "credentials.json"


def cache_folder() -> Path | None:
    """This machine's folder for the current key (None: ``JUDGELAB_TEST_CACHE=off``)."""
    value = os.environ.get(CACHE_ENV, "")
    if value.lower() in ("off", "0", "no", "false"):
        return None
    if value:
        base = Path(value)
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "judgelab-tests"
    return base / key()


def key() -> str:
    """Label Studio's version and a digest of what its first boot runs: the distributions of
    :func:`boot_distributions` and judgelab's boot code."""
    digest = hashlib.sha256()
    digest.update("\n".join(boot_distributions()).encode())
    for name in BOOT_CODE:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes())
    return f"label-studio-{importlib.metadata.version('label-studio')}-{digest.hexdigest()[:16]}"


def boot_distributions() -> list[str]:
    """``name==version`` of Label Studio and of every distribution it requires, their requirements'
    too (those whose markers hold here, extras left out), sorted; ``name absent`` for one that is
    required and not installed."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, str] = {}
    todo = ["label-studio"]
    while todo:
        name = canonicalize_name(todo.pop())
        if name in found:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = f"{name} absent"
            continue
        found[name] = f"{name}=={dist.version}"
        for line in dist.requires or ():
            required = Requirement(line)
            if required.marker is None or required.marker.evaluate({"extra": ""}):
                todo.append(required.name)
    return sorted(found.values())


def kept(kind: str) -> Path | None:
    """The kept state of ``kind`` (:data:`SQLITE`, :data:`POSTGRES`), when a run left one."""
    folder = cache_folder()
    if folder is None or not (folder / kind / CREDENTIALS).exists():
        return None
    return folder / kind


def keep(kind: str, write: Callable[[Path], None]) -> None:
    """Keep a state of ``kind``: ``write(folder)`` fills a new folder, which then takes the place
    (a state kept meanwhile by another run stays; the other keys' states are removed). Nothing is
    kept when the cache is off or its folder cannot be written."""
    folder = cache_folder()
    if folder is None or (folder / kind / CREDENTIALS).exists():
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for other in folder.parent.iterdir():
            if other != folder and other.name.startswith("label-studio-"):
                shutil.rmtree(other, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{kind}-", dir=folder))
    except OSError:
        return
    try:
        write(staging)
        if not (staging / CREDENTIALS).exists():
            raise OSError(f"{kind}: no {CREDENTIALS} written")
        os.rename(staging, folder / kind)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)


def forget(kind: str) -> None:
    """Drop the kept state of ``kind`` (one that did not restore): the next boot migrates and keeps anew."""
    state = kept(kind)
    if state is not None:
        shutil.rmtree(state, ignore_errors=True)


def keep_sqlite(home: Path, copy_home: Callable[[Path, Path], None]) -> None:
    """Keep a migrated SQLite state folder (copied with ``copy_home``, as the workers copy it)."""
    keep(SQLITE, lambda staging: copy_home(home, staging))


def keep_postgres(server, database, home: Path) -> None:
    """Keep a dump of the migrated PostgreSQL database ``database`` of ``server`` and ``home``'s login
    (a dump that fails keeps nothing: the next run migrates)."""
    from judgelab.sync.client import SyncError

    def write(staging: Path) -> None:
        try:
            server.dump(database.name, staging / DUMP)
        except SyncError as exc:
            raise OSError(str(exc)) from exc
        shutil.copy(home / CREDENTIALS, staging / CREDENTIALS)

    keep(POSTGRES, write)


def restore_postgres(server, database, home: Path) -> bool:
    """Restore the kept dump into ``database`` (empty, just created) and put its login in ``home``;
    False when none is kept (Label Studio's first boot then migrates). A dump that does not restore
    raises ``SyncError`` and leaves the database empty."""
    state = kept(POSTGRES)
    if state is None:
        return False
    server.restore(database, state / DUMP)
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(state / CREDENTIALS, home / CREDENTIALS)
    (home / CREDENTIALS).chmod(0o600)
    return True
