"""Start (or reuse) a local Label Studio (on SQLite, or on a PostgreSQL database) and the
judgelab ML backend.

Both run as background processes whose pids, logs and the preset admin login live in one
state folder (``.judgelab/`` by default). Running again finds them healthy and reuses them;
:func:`stop_stack` ends them. Label Studio keeps its data in SQLite inside that folder unless
:attr:`StackSettings.database` names a PostgreSQL database (:mod:`sync.postgres_server` starts a
throwaway PostgreSQL server for one).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import httpx

from judgelab.sync.client import SyncError

LS_FIRST_BOOT_TIMEOUT = 420.0  # migrations of a fresh data dir take 60-110 s on 2 cores
DATABASE_ENV_KEYS = ("DJANGO_DB", "POSTGRE_NAME", "POSTGRE_USER", "POSTGRE_PASSWORD", "POSTGRE_HOST", "POSTGRE_PORT")


@dataclass(frozen=True)
class PostgresSettings:
    """Where Label Studio keeps its data when it is not SQLite."""

    name: str
    user: str
    password: str = field(default="", repr=False)
    host: str = "127.0.0.1"
    port: int = 5432

    @classmethod
    def from_url(cls, url: str) -> PostgresSettings:
        """``postgresql://user:password@host:port/name`` (``postgres://`` too; port 5432 by default)."""
        try:
            parts = urlsplit(url)
            port = parts.port or 5432
        except ValueError as exc:
            raise SyncError(f"not a PostgreSQL URL: {exc}") from None
        name = unquote(parts.path.lstrip("/"))
        if parts.scheme not in ("postgresql", "postgres") or not parts.hostname or not name or not parts.username:
            raise SyncError("a PostgreSQL URL looks like postgresql://user:password@host:5432/name")
        return cls(
            name=name,
            user=unquote(parts.username),
            password=unquote(parts.password or ""),
            host=parts.hostname,
            port=port,
        )

    @property
    def display_url(self) -> str:
        """The URL without the password, for messages."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.name}"

    def label_studio_env(self) -> dict[str, str]:
        """The variables Label Studio 1.23 reads for its database (core/settings/base.py)."""
        return {
            "DJANGO_DB": "default",
            "POSTGRE_NAME": self.name,
            "POSTGRE_USER": self.user,
            "POSTGRE_PASSWORD": self.password,
            "POSTGRE_HOST": self.host,
            "POSTGRE_PORT": str(self.port),
        }


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (for servers started on loopback)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class StackSettings:
    home: Path
    ls_port: int = 8080
    backend_port: int = 9090
    host: str = "127.0.0.1"
    annotator: str = "offline"
    database: PostgresSettings | None = None  # None: SQLite in the state folder

    @property
    def ls_url(self) -> str:
        return f"http://{self.host}:{self.ls_port}"

    @property
    def backend_url(self) -> str:
        return f"http://{self.host}:{self.backend_port}"


@dataclass
class Credentials:
    username: str
    password: str
    token: str


def load_credentials(home: Path) -> Credentials:
    """The preset admin login (created once per state folder)."""
    path = home / "credentials.json"
    if path.exists():
        return Credentials(**json.loads(path.read_text()))
    home.mkdir(parents=True, exist_ok=True)
    creds = Credentials(
        username="admin@judgelab.local", password=secrets.token_urlsafe(12), token=secrets.token_hex(20)
    )
    path.write_text(json.dumps(asdict(creds)))
    path.chmod(0o600)
    return creds


def healthy(url: str, timeout: float = 2.0) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float, log: Path, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if healthy(url):
            return
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise SyncError(f"{what} exited with code {proc.returncode}; end of {log}:\n{tail}")
        time.sleep(1.0)
    raise SyncError(f"{what} did not answer at {url}/health within {timeout:.0f} s (log: {log})")


def _spawn(cmd: list[str], env: dict[str, str], log: Path, pid_file: Path) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    pid_file.write_text(str(proc.pid))
    return proc


def label_studio_env(settings: StackSettings, creds: Credentials) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "LABEL_STUDIO_BASE_DATA_DIR": str(settings.home / "label-studio"),
            "LABEL_STUDIO_USERNAME": creds.username,
            "LABEL_STUDIO_PASSWORD": creds.password,
            "LABEL_STUDIO_USER_TOKEN": creds.token,
            "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
            # the backend listens on 127.0.0.1, which Label Studio's SSRF guard refuses by default
            "USE_DEFAULT_BANNED_SUBNETS": "false",
            "SSRF_PROTECTION_ENABLED": "false",
            "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
        }
    )
    # Label Studio's own default reports errors (with request data: send_default_pii) and traces
    # to HumanSignal's Sentry. A local study stack does not send its annotators' data out, the
    # machine may be offline, and the per-request instrumentation made the sync's batched
    # exports about 20% slower (bench/sync_scale.py). Set SENTRY_DSN to keep it.
    for key in ("SENTRY_DSN", "FRONTEND_SENTRY_DSN"):
        env.setdefault(key, "")
    database = settings.database.label_studio_env() if settings.database else {"DJANGO_DB": "sqlite"}
    for key in DATABASE_ENV_KEYS:
        # Label Studio prefers LABEL_STUDIO_<key> and HEARTEX_<key> over <key>: ours must win
        for name in (f"LABEL_STUDIO_{key}", f"HEARTEX_{key}", key):
            env.pop(name, None)
    env.update(database)
    return env


def start_label_studio(settings: StackSettings, creds: Credentials) -> bool:
    """Start Label Studio unless it already answers; returns True when it was started now."""
    if healthy(settings.ls_url):
        return False
    wait_label_studio(settings, spawn_label_studio(settings, creds))
    return True


def spawn_label_studio(settings: StackSettings, creds: Credentials) -> subprocess.Popen:
    """Start Label Studio's process and return at once (its first boot migrates the database for a
    minute or two: :func:`wait_label_studio` waits for it)."""
    exe = shutil.which("label-studio", path=str(Path(sys.executable).parent)) or shutil.which("label-studio")
    if not exe:
        raise SyncError("the label-studio command is not installed: pip install 'judgelab[server]'")
    log = settings.home / "label-studio.log"
    cmd = [exe, "start", "--no-browser", "--port", str(settings.ls_port), "--internal-host", settings.host]
    return _spawn(cmd, label_studio_env(settings, creds), log, settings.home / "label-studio.pid")


def wait_label_studio(settings: StackSettings, proc: subprocess.Popen) -> None:
    """Wait until the Label Studio that ``proc`` runs answers (raises ``SyncError`` if it dies)."""
    _wait_healthy(settings.ls_url, proc, LS_FIRST_BOOT_TIMEOUT, settings.home / "label-studio.log", "Label Studio")


def start_backend(settings: StackSettings, extra_env: dict[str, str] | None = None) -> bool:
    if healthy(settings.backend_url):
        return False
    env = dict(os.environ)
    env.update(
        {
            "JUDGELAB_BACKEND_HOST": settings.host,
            "JUDGELAB_BACKEND_PORT": str(settings.backend_port),
            "JUDGELAB_ANNOTATOR": settings.annotator,
        }
    )
    env.update(extra_env or {})
    log = settings.home / "backend.log"
    proc = _spawn([sys.executable, "-m", "judgelab.backend"], env, log, settings.home / "backend.pid")
    _wait_healthy(settings.backend_url, proc, 60, log, "judgelab backend")
    return True


def stop_stack(home: Path) -> list[str]:
    stopped = []
    for name in ("backend", "label-studio"):
        pid_file = home / f"{name}.pid"
        if not pid_file.exists():
            continue
        try:
            os.killpg(int(pid_file.read_text()), signal.SIGTERM)
            stopped.append(name)
        except (ProcessLookupError, ValueError, PermissionError):
            pass
        pid_file.unlink(missing_ok=True)
    return stopped
