"""Shared fixtures. The integration fixtures start a real Label Studio (on SQLite; and, for the
tests that ask for ``live_stack_postgres``, a second one on a throwaway PostgreSQL server) and the
real judgelab backend once per test session, as separate processes on free local ports.

With pytest-xdist (``-n N``, as scripts/test.sh runs the suite) every worker has its own Label
Studio on SQLite, started from a copy of one migrated state folder (the first worker to get there
migrates it while the others run unit tests; a copy starts in seconds), so the tests of one worker
never see another's projects. The PostgreSQL Label Studio is one for the whole run: the first
worker starts it, the worker that runs its tests uses it, the controller stops it at the end.
Files go to workers whole (``--dist loadfile``): a module's fixtures are set up once."""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import label_studio_cache
import pytest
from hypothesis import settings as hypothesis_settings

from judgelab.sync.local_stack import free_port  # tests import it from here too

# Property tests draw the same examples in every run, so that a failure on CI fails here too and
# a submission's result does not hang on a draw; HYPOTHESIS_PROFILE=explore draws new ones.
hypothesis_settings.register_profile("suite", derandomize=True)
hypothesis_settings.register_profile("explore", derandomize=False)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))

ARTIFACTS = Path(os.environ.get("JUDGELAB_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "test-artifacts"))
SHARED_ENV = "JUDGELAB_TEST_SHARED"  # the run's folder shared by the xdist controller and its workers
_WORKER: str | None = None  # this process's xdist worker id ("gw0"...), None without xdist


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
        _warm_up_boot()

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
# Label Studio state folders this process made in the temporary directory: removed at the end of a
# session whose tests all passed (kept when one failed: its logs say what Label Studio saw)
_MADE_HOMES: list[Path] = []
STACKS = ("live_stack", "live_stack_postgres")
_MODULES_USING: dict[str, set[str]] = {}  # fixture name -> test files that use it


def _spawn_stack(settings):
    """Start Label Studio's process for ``settings`` (not waiting for it); (settings, creds, proc)."""
    from judgelab.sync.local_stack import healthy, load_credentials, spawn_label_studio

    creds = load_credentials(settings.home)
    proc = None if healthy(settings.ls_url) else spawn_label_studio(settings, creds)
    return settings, creds, proc


def pytest_configure(config):
    """The xdist controller makes the run's shared folder (its workers inherit the variable)."""
    global _WORKER
    _WORKER = getattr(config, "workerinput", {}).get("workerid")
    if _WORKER is None and getattr(config.option, "numprocesses", None) and not os.environ.get(SHARED_ENV):
        os.environ[SHARED_ENV] = tempfile.mkdtemp(prefix="judgelab-pytest-")


def _shared() -> Path | None:
    value = os.environ.get(SHARED_ENV)
    return Path(value) if _WORKER and value else None


@contextmanager
def _locked(path: Path):
    """An exclusive lock on ``path`` across the run's processes."""
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _migrated(home: Path) -> bool:
    return (home / "label-studio" / "label_studio.sqlite3").exists() and (home / "credentials.json").exists()


def _copy_home(source: Path, target: Path) -> None:
    # a copy is a stack of its own: not the pids, logs, stack id or ports of the one it was copied from
    skip = shutil.ignore_patterns("*.pid", "*.log", "export", "media", "stack-id", "stack.json")
    shutil.copytree(source, target, ignore=skip, dirs_exist_ok=True)


PORT_TAKEN = "That port is already in use"  # Label Studio's words when it cannot bind its port


def _label_studio_up(settings, creds, proc, may_move: bool = True):
    """Wait for the Label Studio that ``proc`` runs; (settings, proc) of the one that answers.

    A port ``free_port`` gave can be taken before Label Studio binds it, which on a first boot is
    after its migrations, a minute or two later: Label Studio then exits saying so, and is started
    again on another port (its database is migrated by then: seconds). Not when other workers
    wait for it on its port (``may_move`` False: the shared PostgreSQL stack)."""
    from judgelab.sync.client import SyncError
    from judgelab.sync.local_stack import spawn_label_studio, wait_label_studio

    for _ in range(2 if may_move else 0):
        try:
            wait_label_studio(settings, proc)
            return settings, proc
        except SyncError as exc:
            if PORT_TAKEN not in str(exc):
                raise
        settings = dataclasses.replace(settings, ls_port=free_port())
        proc = spawn_label_studio(settings, creds)
    wait_label_studio(settings, proc)
    return settings, proc


def _template(shared: Path) -> Path:
    """A migrated Label Studio state folder for the workers to copy: made once per run (from
    ``JUDGELAB_TEST_HOME`` when that one is migrated, else from the folder an earlier run on this
    machine kept, ``tests/label_studio_cache.py``, else by a first start of Label Studio, whose
    folder is then kept for the next run)."""
    from judgelab.sync.local_stack import StackSettings, load_credentials, spawn_label_studio

    template = shared / "ls-template"
    with _locked(shared / "ls-template.lock"):
        if not (shared / "ls-template.ready").exists():
            kept = Path(os.environ["JUDGELAB_TEST_HOME"]) if os.environ.get("JUDGELAB_TEST_HOME") else None
            if kept is None or not _migrated(kept):
                kept = label_studio_cache.kept(label_studio_cache.SQLITE)  # an earlier run's, on this machine
            if kept is not None and _migrated(kept):
                _copy_home(kept, template)
            else:
                settings = StackSettings(home=template, ls_port=free_port(), backend_port=free_port())
                creds = load_credentials(template)
                proc = spawn_label_studio(settings, creds)
                try:
                    settings, proc = _label_studio_up(settings, creds, proc)
                finally:
                    with suppress(ProcessLookupError):  # it may have exited already
                        os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=60)
                    (template / "label-studio.pid").unlink(missing_ok=True)
                label_studio_cache.keep_sqlite(template, _copy_home)
            (shared / "ls-template.ready").touch()
    return template


def _made_home(prefix: str) -> Path:
    home = Path(tempfile.mkdtemp(prefix=prefix))
    _MADE_HOMES.append(home)
    return home


def _sqlite_stack():
    from judgelab.sync.local_stack import StackSettings

    kept = os.environ.get("JUDGELAB_TEST_HOME")
    shared = _shared()
    if shared is None:
        home = Path(kept) if kept else _made_home("judgelab-stack-")
    else:  # one Label Studio per worker, from a copy of a migrated folder
        home = Path(f"{kept}-{_WORKER}") if kept else _made_home(f"judgelab-stack-{_WORKER}-")
        if not _migrated(home):
            _copy_home(_template(shared), home)
    return _spawn_stack(StackSettings(home=home, ls_port=free_port(), backend_port=free_port()))


def _postgres_stack():
    """The throwaway PostgreSQL server and a Label Studio starting on a fresh database of it; a
    reason string instead when PostgreSQL's binaries are missing."""
    from postgres_server import PostgresServer, find_postgres_bindir

    from judgelab.sync.client import SyncError

    try:
        find_postgres_bindir()
    except SyncError as exc:
        return str(exc)
    shared = _shared()
    if shared is not None:
        with _locked(shared / "postgres.lock"):
            info = shared / "postgres.json"
            if info.exists():  # another worker started it: wait for it as for our own
                return None, _shared_postgres_stack(json.loads(info.read_text()))
            server = PostgresServer(port=free_port()).start()
            try:
                started = _new_postgres_stack(server)
            except BaseException:
                server.stop()
                raise
            settings = started[0]
            _MADE_HOMES.remove(settings.home)  # the controller stops this stack and removes its folder
            described = {
                "root": str(server.root),
                "bindir": str(server.bindir),
                "pg_port": server.port,
                "home": str(settings.home),
                "ls_port": settings.ls_port,
                "backend_port": settings.backend_port,
                "database": dataclasses.asdict(settings.database),
            }
            info.write_text(json.dumps(described))
            return None, started  # the controller stops it when every worker is done
    server = PostgresServer(port=free_port()).start()
    return server, _new_postgres_stack(server)


def _new_postgres_stack(server):
    """A Label Studio starting on a new database of ``server``: the migrated database an earlier run
    kept (``tests/label_studio_cache.py``), else a first boot that migrates it, waited for here so
    that its database is kept for the next run."""
    from judgelab.sync.client import SyncError
    from judgelab.sync.local_stack import StackSettings

    database = server.create_database("labelstudio")
    home = _made_home("judgelab-stack-postgres-")
    try:
        restored = label_studio_cache.restore_postgres(server, database, home)
    except SyncError as exc:  # restored in one transaction: the database is still empty
        label_studio_cache.forget(label_studio_cache.POSTGRES)
        print(f"the kept PostgreSQL state did not restore, migrating instead: {exc}", file=sys.stderr)
        restored = False
    settings = StackSettings(home=home, ls_port=free_port(), backend_port=free_port(), database=database)
    settings, creds, proc = _spawn_stack(settings)
    if not restored and proc is not None:
        settings, proc = _label_studio_up(settings, creds, proc)  # no worker waits on its port yet
        label_studio_cache.keep_postgres(server, database, home)
    return settings, creds, proc


def _shared_postgres_stack(described: dict):
    """(settings, creds, None) of the PostgreSQL Label Studio another worker started."""
    from judgelab.sync.local_stack import PostgresSettings, StackSettings, load_credentials

    home = Path(described["home"])
    settings = StackSettings(
        home=home,
        ls_port=described["ls_port"],
        backend_port=described["backend_port"],
        database=PostgresSettings(**described["database"]),
    )
    return settings, load_credentials(home), None


def _stop_shared_postgres(shared: Path, remove_home: bool) -> None:
    """The controller, at the end: stop the PostgreSQL Label Studio a worker started, and its server
    (and remove its state folder when ``remove_home``)."""
    import subprocess

    from judgelab.sync.local_stack import stop_stack

    info = shared / "postgres.json"
    if not info.exists():
        return
    described = json.loads(info.read_text())
    stop_stack(Path(described["home"]))
    server_dir = Path(described["root"])
    pg_ctl = [str(Path(described["bindir"]) / "pg_ctl"), "-D", str(server_dir / "data"), "-m", "fast", "-w", "stop"]
    as_user = {}
    if os.geteuid() == 0:
        import pwd

        account = pwd.getpwnam("postgres")
        as_user = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
    subprocess.run(pg_ctl, cwd=server_dir, capture_output=True, timeout=90, **as_user)
    shutil.rmtree(server_dir, ignore_errors=True)
    if remove_home:
        shutil.rmtree(described["home"], ignore_errors=True)


# Test files that take 20 s or more, longest first (measured one after another on 2 cores). Under
# xdist, files go to the workers in collection order: the files that need no Label Studio first
# (they run while it starts), then these, then the other integration files, so that no worker is
# left with a long file at the end. The PostgreSQL one comes after six others: its Label
# Studio's first start takes 3-4 minutes while the other workers are busy, and a worker that got
# it earlier waited idle. Only the order depends on this list, never a result.
LONG_FILES = (
    "test_readme.py",
    "test_llm_batch.py",
    "test_study_estimates.py",
    "test_llm_judges_e2e.py",
    "test_sync_hostile.py",
    "test_cli_projects.py",
    "test_sync_incremental.py",
    "test_integration_flow.py",
    "test_adjudication.py",
    "test_browser_ui.py",
    "test_roundtrip_hypothesis.py",
    "test_fault_injection.py",
    "test_llm_annotator.py",
)


def pytest_collection_modifyitems(config, items):
    """Under xdist, the order described at :data:`LONG_FILES` (a stable sort: a file's tests keep
    their order)."""
    if _WORKER is None:
        return
    stacked = {item.nodeid.split("::")[0] for item in items if set(STACKS) & set(getattr(item, "fixturenames", ()))}

    def rank(item) -> tuple[int, int]:
        path = item.nodeid.split("::")[0]
        name = path.rsplit("/", 1)[-1]
        if path not in stacked:
            return (0, 0)
        return (1, LONG_FILES.index(name)) if name in LONG_FILES else (2, 0)

    items.sort(key=rank)


@functools.cache
def _warm_up_boot() -> None:
    """Run the boot's lazy first steps in the main thread, once, before a boot thread starts.

    pytest attaches its log capture to every logger by iterating logging's dictionary of loggers
    without logging's lock (``catching_logs.__enter__``, before each test). A logger made by the boot
    thread meanwhile (httpx creates httpcore's loggers on its first request, modules create theirs
    on import) changes that dictionary under pytest's loop: "dictionary changed size during
    iteration", failing whichever unit test was starting. So the first request (to a closed port)
    and the boot's imports happen here; the thread then only finds loggers that exist."""
    import postgres_server  # noqa: F401 - imported for its side effects (its modules' loggers)

    from judgelab.sync.local_stack import healthy

    healthy(f"http://127.0.0.1:{free_port()}", timeout=0.5)


def pytest_collection_finish(session):
    """Start the Label Studio servers the selected tests will need, in the background."""
    if session.config.getoption("collectonly"):
        return
    wanted = set()
    for item in session.items:
        names = getattr(item, "fixturenames", ())
        wanted.update(names)
        for stack in STACKS:
            if stack in names:
                _MODULES_USING.setdefault(stack, set()).add(item.nodeid.split("::")[0])
    if "live_stack" in wanted:
        _BOOTS["sqlite"] = _Boot(_sqlite_stack)
    if "live_stack_postgres" in wanted or "postgres_server" in wanted:
        _BOOTS["postgres"] = _Boot(_postgres_stack)


def _wait_started_elsewhere(settings) -> None:
    """Wait for a Label Studio another process started (a worker's, still migrating maybe)."""
    import time

    from judgelab.sync.local_stack import LS_FIRST_BOOT_TIMEOUT, healthy

    deadline = time.monotonic() + LS_FIRST_BOOT_TIMEOUT
    while not healthy(settings.ls_url):
        if time.monotonic() > deadline:
            log = settings.home / "label-studio.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"Label Studio at {settings.ls_url} did not start:\n{tail}")
        time.sleep(1)


def sdk_client(url: str, token: str):
    """The SDK's ``LabelStudio`` client, as a team's notebook holds it (judgelab's commands use the
    SDK's base client, without the extensions' imports), with reads retried as judgelab retries
    them: a busy SQLite Label Studio answers 500 now and then on a loaded machine."""
    from label_studio_sdk import LabelStudio

    from judgelab.sync.http_retry import retrying_client

    return LabelStudio(base_url=url, api_key=token, timeout=60, max_retries=0, httpx_client=retrying_client(60))


def _run_stack(spawned, stop: bool = True):
    """Wait for the Label Studio of ``spawned``, start the backend; yield the LiveStack; stop both
    (unless ``stop`` is False: the xdist controller stops the shared PostgreSQL stack)."""
    from judgelab.sync.client import Connection, connect
    from judgelab.sync.local_stack import start_backend, stop_stack

    settings, creds, proc = spawned
    try:
        if proc is not None:
            settings, proc = _label_studio_up(settings, creds, proc, may_move=stop)
        else:
            _wait_started_elsewhere(settings)
        start_backend(settings)
        connect(Connection(url=settings.ls_url, token=creds.token))  # the checks judgelab's commands make
        client = sdk_client(settings.ls_url, creds.token)
        for project in client.projects.list(include="id"):  # a kept state folder starts empty too
            client.projects.delete(id=project.id)
        yield LiveStack(settings=settings, creds=creds, client=client)
    finally:
        if stop:
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

        if server is not None:  # None: shared by the xdist workers, the controller stops it
            stop_stack(spawned[0].home)
            server.stop()


@pytest.fixture(scope="session")
def postgres_server(_postgres_boot):
    """A throwaway PostgreSQL server (tests/postgres_server.py), stopped and removed at the end."""
    return _postgres_boot[0]


@pytest.fixture(scope="session")
def live_stack_postgres(_postgres_boot):
    """Like ``live_stack``, with Label Studio on a fresh database of the throwaway PostgreSQL server
    (its first start runs all of Label Studio's migrations there: 1-3 minutes)."""
    yield from _run_stack(_postgres_boot[1], stop=_postgres_boot[0] is not None)


def pytest_sessionfinish(session):
    """Stop what was started early for tests that were then not run (deselected, -x); the xdist
    controller stops the PostgreSQL stack its workers shared and removes the run's folder. The
    Label Studio state folders made in the temporary directory go too, unless a test failed."""
    from judgelab.sync.local_stack import stop_stack

    passed = session.testsfailed == 0
    if _WORKER is None and os.environ.get(SHARED_ENV):
        shared = Path(os.environ[SHARED_ENV])
        _stop_shared_postgres(shared, remove_home=passed)
        shutil.rmtree(shared, ignore_errors=True)
    for name, boot in list(_BOOTS.items()):
        started = boot.result()
        if name == "postgres" and not isinstance(started, str):
            server, spawned = started
            if server is not None:
                stop_stack(spawned[0].home)
                server.stop()
        elif name == "sqlite":
            stop_stack(started[0].home)
        _BOOTS.pop(name, None)
    if passed:
        for home in _MADE_HOMES:
            shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def _fresh_label_studio(request):
    """Every test file starts on a Label Studio without projects, as if it ran alone: files reach
    a worker in any order (xdist), and a file's tests may use a schema's default-titled project."""
    module = request.node.nodeid.split("::")[0]
    for stack in STACKS:
        if module in _MODULES_USING.get(stack, ()):
            client = request.getfixturevalue(stack).client
            for project in client.projects.list(include="id"):
                client.projects.delete(id=project.id)


@pytest.fixture
def closing():
    """LLM annotators a test makes (append them): closed at the end of the test."""
    made: list = []
    yield made
    for annotator in made:
        annotator.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
