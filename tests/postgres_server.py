"""A throwaway PostgreSQL server on 127.0.0.1, for the tests' Label Studio on Postgres without a
system service (``judgelab up --database-url`` takes a server of the user's own).

PostgreSQL's own tools do the work: ``initdb`` makes a data folder in a temporary directory
(trust authentication, connections from 127.0.0.1 only, the unix socket inside that directory),
``pg_ctl`` starts the server on the given port and stops it. Durability is traded for speed
(``fsync`` off): the server is meant to live as long as a test session or a trial.

PostgreSQL refuses to run as root, so as root initdb and the server run as the ``postgres``
system user (which Debian's ``postgresql`` package creates) and the directory belongs to it::

    with PostgresServer(port=5433) as server:
        database = server.create_database("labelstudio")   # a PostgresSettings
        settings = StackSettings(home=Path(".judgelab"), database=database)

The binaries are looked for in ``$JUDGELAB_PG_BINDIR``, then on ``PATH``, then in
``/usr/lib/postgresql/<version>/bin`` (Debian, Ubuntu), newest version first.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from judgelab.sync.client import SyncError
from judgelab.sync.local_stack import PostgresSettings, free_port

BINDIR_ENV = "JUDGELAB_PG_BINDIR"
DEBIAN_BINDIRS = "/usr/lib/postgresql/*/bin"
NAME_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _has_tools(folder: Path) -> bool:
    return all(os.access(folder / tool, os.X_OK) for tool in ("initdb", "pg_ctl"))


def _version_key(bindir: str) -> tuple[int, ...]:
    version = Path(bindir).parent.name  # /usr/lib/postgresql/<version>/bin
    return tuple(int(part) for part in version.split(".")) if re.fullmatch(r"\d+(\.\d+)*", version) else (-1,)


def find_postgres_bindir() -> Path:
    """The folder holding initdb and pg_ctl; :class:`SyncError` when PostgreSQL is not installed."""
    explicit = os.environ.get(BINDIR_ENV)
    if explicit:
        if _has_tools(Path(explicit)):
            return Path(explicit)
        raise SyncError(f"{BINDIR_ENV}={explicit} holds no initdb and pg_ctl")
    on_path = shutil.which("initdb")
    if on_path:
        for folder in (Path(on_path).resolve().parent, Path(on_path).parent):
            if _has_tools(folder):
                return folder
    for folder in sorted(glob.glob(DEBIAN_BINDIRS), key=_version_key, reverse=True):
        if _has_tools(Path(folder)):
            return Path(folder)
    raise SyncError(
        f"PostgreSQL is not installed: no initdb and pg_ctl on PATH nor in {DEBIAN_BINDIRS} "
        f"(Debian/Ubuntu: apt-get install postgresql; elsewhere set {BINDIR_ENV} to the folder holding them)"
    )


def _traversable_by_others(path: Path) -> bool:
    return all(p.stat().st_mode & 0o001 for p in [path, *path.parents])


class PostgresServer:
    """One PostgreSQL server in its own temporary directory; :meth:`start`, :meth:`stop`."""

    def __init__(
        self,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        superuser: str = "judgelab",
        bindir: Path | None = None,
        os_user: str = "postgres",
    ) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.superuser = superuser
        self.bindir = bindir or find_postgres_bindir()
        self.root: Path | None = None
        self._account: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            try:
                self._account = pwd.getpwnam(os_user)
            except KeyError:
                raise SyncError(
                    f"PostgreSQL refuses to run as root and there is no '{os_user}' user to run it as "
                    "(Debian's postgresql package creates it; or run as a regular user)"
                ) from None

    @property
    def data_dir(self) -> Path:
        assert self.root is not None, "the server was not started"
        return self.root / "data"

    @property
    def log_file(self) -> Path:
        assert self.root is not None, "the server was not started"
        return self.root / "postgres.log"

    def _run(self, tool: str, *args: str, timeout: float = 120.0) -> str:
        """Run a PostgreSQL tool (as the postgres user when we are root); its output, or SyncError."""
        cmd = [str(self.bindir / tool), *args]
        as_user = {}
        if self._account is not None:
            as_user = {"user": self._account.pw_uid, "group": self._account.pw_gid, "extra_groups": []}
        env = {**os.environ, "LC_ALL": "C", "PGTZ": "UTC"}
        try:
            done = subprocess.run(
                cmd, cwd=self.root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, timeout=timeout, **as_user,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise SyncError(f"{tool} did not finish within {timeout:.0f} s: {' '.join(cmd)}") from None
        if done.returncode != 0:
            log = self.log_file.read_text(errors="replace")[-2000:] if self.log_file.exists() else ""
            raise SyncError(f"{tool} failed (exit {done.returncode}): {' '.join(cmd)}\n{done.stdout}{log}")
        return done.stdout

    def start(self, timeout: float = 60.0) -> PostgresServer:
        """initdb a fresh data folder and start the server; returns when it accepts connections."""
        parent = tempfile.gettempdir()
        if self._account is not None and not _traversable_by_others(Path(parent)):
            parent = "/tmp"  # the postgres user must reach the folder
        self.root = Path(tempfile.mkdtemp(prefix="judgelab-pg-", dir=parent))
        try:
            self.root.chmod(0o755)
            if self._account is not None:
                os.chown(self.root, self._account.pw_uid, self._account.pw_gid)
            args = ["-D", str(self.data_dir), "-U", self.superuser, "--auth=trust", "-E", "UTF8", "--locale=C"]
            self._run("initdb", *args, "--no-sync")
            with open(self.data_dir / "postgresql.conf", "a") as conf:
                conf.write(
                    f"\n# judgelab: a throwaway server\nlisten_addresses = '{self.host}'\nport = {self.port}\n"
                    f"unix_socket_directories = '{self.root}'\nfsync = off\nsynchronous_commit = off\n"
                    "full_page_writes = off\nmax_connections = 200\n"
                )
            wait = ["-w", "-t", str(int(timeout))]
            self._run(
                "pg_ctl", "-D", str(self.data_dir), "-l", str(self.log_file), *wait, "start", timeout=timeout + 10
            )
            self._wait_ready(timeout)
        except BaseException:
            with contextlib.suppress(Exception):
                self.stop()  # no server and no folder left behind
            raise
        return self

    def _connect(self, dbname: str = "postgres"):
        import psycopg  # Label Studio's own driver (installed with judgelab[server])

        return psycopg.connect(
            host=self.host, port=self.port, user=self.superuser, dbname=dbname, autocommit=True, connect_timeout=5
        )

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with self._connect() as conn:
                    conn.execute("SELECT 1")
                return
            except Exception as exc:  # psycopg.OperationalError, while the server comes up
                if time.monotonic() > deadline:
                    raise SyncError(f"PostgreSQL on {self.host}:{self.port} is not ready: {exc}") from None
                time.sleep(0.2)

    def create_database(
        self, name: str = "labelstudio", user: str | None = None, password: str | None = None
    ) -> PostgresSettings:
        """A database owned by its own login role (created when missing): Label Studio's settings."""
        from psycopg import sql

        user = user or name
        for ident in (name, user):
            if not NAME_RE.match(ident):
                raise SyncError(f"not a plain PostgreSQL name: {ident!r} (lower-case letters, digits, _)")
        password = password or secrets.token_urlsafe(16)
        with self._connect() as conn:
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (user,)).fetchone():
                conn.execute(sql.SQL("ALTER ROLE {} WITH LOGIN PASSWORD {}").format(sql.Identifier(user), password))
            else:
                conn.execute(sql.SQL("CREATE ROLE {} WITH LOGIN PASSWORD {}").format(sql.Identifier(user), password))
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(user)))
        return PostgresSettings(name=name, user=user, password=password, host=self.host, port=self.port)

    def dump(self, name: str, target: Path) -> None:
        """``pg_dump -Fc`` of database ``name`` (owners left out) into the file ``target``."""
        dumped = self.root / f"{name}.dump"  # the server's own folder: the tools may run as its user
        self._run("pg_dump", *self._tool_connection(name), "-Fc", "--no-owner", "-f", str(dumped))
        shutil.move(dumped, target)

    def restore(self, database: PostgresSettings, source: Path) -> None:
        """Restore the dump ``source`` into ``database`` (empty), its objects owned by its login role;
        in one transaction: on an error (``SyncError``) the database is left as it was."""
        copied = self.root / f"{database.name}.dump"
        shutil.copy(source, copied)
        if self._account is not None:
            os.chown(copied, self._account.pw_uid, self._account.pw_gid)
        try:
            self._run(
                "pg_restore", *self._tool_connection(database.name), "--no-owner", "--role", database.user,
                "--exit-on-error", "--single-transaction", str(copied),
            )  # fmt: skip
        finally:
            copied.unlink(missing_ok=True)

    def _tool_connection(self, name: str) -> list[str]:
        return ["-h", self.host, "-p", str(self.port), "-U", self.superuser, "-d", name]

    def stop(self) -> None:
        """Stop the server (fast: open sessions are ended) and remove its directory."""
        if self.root is None:
            return
        try:
            if (self.data_dir / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "-t", "60", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
