"""Start (or reuse) a local Label Studio (on SQLite, or on a PostgreSQL database) and the
judgelab ML backend.

Both run as background processes whose pids, logs and the preset admin login live in one
state folder (``.judgelab/`` by default). Running again finds them and reuses them;
:func:`stop_stack` ends them. A server is reused only when it is this folder's own: its Label
Studio accepts the folder's admin token, its backend answers the folder's stack id in ``/health``.
A port held by anything else (another stack, another program) stops the start with a message
naming the port and the process that holds it.

Label Studio keeps its data in SQLite inside that folder unless :attr:`StackSettings.database`
names a PostgreSQL database (``judgelab up --database-url``: a server of the user's own, or
``docker-compose.yml``'s).
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import httpx

from judgelab.sync.client import SyncError
from judgelab.sync.http_retry import tls_context
from judgelab.sync.state_folder import start_lock

LS_FIRST_BOOT_TIMEOUT = 420.0  # migrations of a fresh data dir take 60-110 s on 2 cores
PREDICTION_IMPORT_FLAG = "fflag_fix_back_4620_memory_efficient_predictions_import_08012025_short"
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


EPHEMERAL_PORTS = Path("/proc/sys/net/ipv4/ip_local_port_range")
FREE_PORTS_BELOW = 12_000  # how many ports under the ephemeral range free_port draws from


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing uses right now, for a server started on loopback, drawn at random below
    the kernel's range of ephemeral ports. A port from ``bind(port 0)`` is one the kernel may hand
    to any other socket meanwhile (another ``bind(port 0)``, an outgoing connection's local port),
    and Label Studio binds its port only after its migrations, a minute or two later: in a test run
    of a fresh clone it found its port taken and exited with "That port is already in use". Where
    that range cannot be read, any port the kernel gives."""
    try:
        low = int(EPHEMERAL_PORTS.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 0
    if low - FREE_PORTS_BELOW >= 1024:
        for _ in range(200):
            port = secrets.randbelow(FREE_PORTS_BELOW) + low - FREE_PORTS_BELOW
            with socket.socket() as s:
                try:
                    s.bind((host, port))
                except OSError:
                    continue
                return port
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


def stack_id(home: Path) -> str:
    """This state folder's id (made once): the backend it starts answers it in ``/health``."""
    path = home / "stack-id"
    if path.exists() and path.read_text().strip():
        return path.read_text().strip()
    home.mkdir(parents=True, exist_ok=True)
    value = secrets.token_hex(8)
    path.write_text(value)
    return value


def record_stack(settings: StackSettings) -> None:
    """Note where ``judgelab up`` runs this folder's servers, for the commands that follow."""
    path = settings.home / "stack.json"
    path.write_text(json.dumps({"ls_url": settings.ls_url, "backend_url": settings.backend_url}))


def _recorded(home: Path) -> dict:
    try:
        recorded = json.loads((home / "stack.json").read_text())
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def recorded_ls_url(home: Path) -> str | None:
    """The Label Studio URL of this folder's running stack, as ``judgelab up`` noted it (None: none)."""
    url = _recorded(home).get("ls_url")
    return url if isinstance(url, str) and url else None


def recorded_ports(home: Path) -> tuple[int | None, int | None]:
    """The ports (Label Studio, backend) of this folder's running stack, as ``judgelab up`` noted them."""
    ports = []
    for key in ("ls_url", "backend_url"):
        try:
            ports.append(urlsplit(str(_recorded(home).get(key) or "")).port)
        except ValueError:
            ports.append(None)
    return ports[0], ports[1]


def healthy(url: str, timeout: float = 2.0) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=timeout, verify=tls_context()).status_code == 200
    except httpx.HTTPError:
        return False


def _health(url: str, timeout: float = 2.0) -> dict | None:
    """``/health``'s JSON object, or None (no answer, not 200, not a JSON object)."""
    try:
        response = httpx.get(f"{url}/health", timeout=timeout, verify=tls_context())
        payload = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    return payload if isinstance(payload, dict) else None


def label_studio_is_ours(settings: StackSettings, creds: Credentials) -> bool:
    """Whether the Label Studio at ``settings.ls_url`` is this state folder's: it knows the
    folder's admin by its token (a token is random: another Label Studio refuses it)."""
    try:
        response = httpx.get(
            f"{settings.ls_url}/api/current-user/whoami",
            headers={"Authorization": f"Token {creds.token}"},
            timeout=10,
            verify=tls_context(),
        )
        payload = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return False
    return isinstance(payload, dict) and payload.get("email") == creds.username


def backend_is_ours(settings: StackSettings) -> bool:
    """Whether the backend at ``settings.backend_url`` is the one this state folder started."""
    answer = _health(settings.backend_url)
    return answer is not None and answer.get("stack") == stack_id(settings.home)


def listening(host: str, port: int) -> bool:
    """Whether something accepts TCP connections at ``host:port``."""
    with socket.socket() as s:
        s.settimeout(2.0)
        return s.connect_ex((host, port)) == 0


def listener_pid(port: int) -> int | None:
    """The process listening on TCP ``port`` of this machine, from ``/proc`` (Linux; another
    user's process is seen only by root); None when it cannot be told."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cells = row.split()
            if len(cells) > 9 and cells[3] == "0A" and int(cells[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{cells[9]}]")
    if not inodes:
        return None
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                return int(proc.name)
        except OSError:
            continue
    return None


def port_owner(port: int) -> str | None:
    """``pid 1234 (python3 -m http.server 8080)``: who listens on ``port`` (see :func:`listener_pid`)."""
    pid = listener_pid(port)
    if pid is None:
        return None
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        command = ""
    command = " ".join(command.split())  # a `python -c` script's lines on one line
    return f"pid {pid} ({command[:200] or '?'})"


def started_here(home: Path, name: str, port: int) -> bool:
    """Whether the process listening on ``port`` is one this folder started as ``name`` (its pid
    file holds the process group judgelab started it in)."""
    pid = listener_pid(port)
    try:
        return pid is not None and os.getpgid(pid) == int((home / f"{name}.pid").read_text())
    except (OSError, ValueError):
        return False


def _next_free_port(host: str, port: int) -> int:
    """A port above ``port`` where nothing listens now (else any free one)."""
    for candidate in range(port + 1, min(port + 100, 65536)):
        if not listening(host, candidate):
            return candidate
    return free_port(host)


def _what_answers(url: str) -> str:
    """What the server at ``url`` says it is, for messages."""
    answer = _health(url)
    if answer is None:
        return ""
    if answer.get("model_class") == "JudgelabModel":
        return ", a judgelab backend of another state folder"
    if answer.get("status") == "UP":
        return ", answering like a Label Studio that does not know this folder's admin token"
    return ""


def claim_port(settings: StackSettings, what: str, port: int, option: str, ours: Callable[[], bool]) -> bool:
    """True when this folder's ``what`` already answers on ``port`` (reuse it), False when the
    port is free (start it); raises ``SyncError`` naming the port and what holds it otherwise."""
    if not listening(settings.host, port):
        return False
    if ours():
        return True
    owner = port_owner(port) or "another program"
    answer = _what_answers(f"http://{settings.host}:{port}")
    raise SyncError(
        f"port {port}, where {what} should listen, is taken by {owner}{answer}: not this state folder's "
        f"({settings.home}). Stop that program, or give {what} another port ({option} "
        f"{_next_free_port(settings.host, port)} is free)"
    )


def _wait_ours(
    url: str, ours: Callable[[], bool], proc: subprocess.Popen, timeout: float, log: Path, what: str
) -> None:
    """Wait until the server ``proc`` runs answers at ``url`` as ours (``ours()``); a server of
    someone else answering there meanwhile is not taken for it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise SyncError(f"{what} exited with code {proc.returncode}; end of {log}:\n{tail}")
        if healthy(url) and ours():
            return
        time.sleep(1.0)
    raise SyncError(f"{what} did not answer at {url}/health within {timeout:.0f} s (log: {log})")


def _spawn(cmd: list[str], env: dict[str, str], log: Path, pid_file: Path) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    pid_file.write_text(str(proc.pid))
    return proc


SETUP_TIMEOUT = 30  # s: Label Studio's ML_TIMEOUT_SETUP for the stack it starts (its default is 3)
HEALTH_TIMEOUT = 10  # s: Label Studio's ML_TIMEOUT_HEALTH for the stack it starts (its default is 1)


#: The names Label Studio 1.23 reads its analytics switch under (core/settings/base.py, get_env).
ANALYTICS_ENV_NAMES = (
    "LABEL_STUDIO_COLLECT_ANALYTICS",
    "HEARTEX_COLLECT_ANALYTICS",
    "COLLECT_ANALYTICS",
    "collect_analytics",
)


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
    # Its default also posts a record of most requests (the user's email and id, the client's
    # address, the URL with its query) to HumanSignal's telemetry server, from a thread started for
    # each request: 6-7 ms of Label Studio's CPU on a 12 ms request where the machine is offline
    # (the name lookup fails), a connection to the outside on each where it is not. Off, unless
    # set under any of the names Label Studio reads.
    if not any(name in env for name in ANALYTICS_ENV_NAMES):
        env["COLLECT_ANALYTICS"] = "false"
    # Label Studio gives the backend's /setup 3 s when a backend is connected or its settings are
    # saved, then calls it "not a valid ML backend". On a busy machine (the backend predicting on
    # the same cores, a test run) /setup took longer than that; 30 s, unless set.
    env.setdefault("ML_TIMEOUT_SETUP", str(SETUP_TIMEOUT))
    # Its /health check, before a backend is connected, gets 1 s: with both cores taken (a test run
    # beside a 100,000-task import) connecting failed with "health check failed ... Read timed out";
    # 10 s, unless set.
    env.setdefault("ML_TIMEOUT_HEALTH", str(HEALTH_TIMEOUT))
    # Label Studio 1.23's prediction import (POST /api/projects/{id}/import/predictions) updates
    # the counters of every task of the project on each request unless this flag is on: a chunk
    # of 100 predictions took 17 s at 10,000 tasks, so pre-annotating a project grew with the
    # square of its size (bench/scale_workflow.py). The flag's code updates only the tasks of the
    # request. Set it to false to keep Label Studio's default.
    env.setdefault(PREDICTION_IMPORT_FLAG, "true")
    database = settings.database.label_studio_env() if settings.database else {"DJANGO_DB": "sqlite"}
    for key in DATABASE_ENV_KEYS:
        # Label Studio prefers LABEL_STUDIO_<key> and HEARTEX_<key> over <key>: ours must win
        for name in (f"LABEL_STUDIO_{key}", f"HEARTEX_{key}", key):
            env.pop(name, None)
    env.update(database)
    return env


def claim_label_studio_port(settings: StackSettings, creds: Credentials) -> bool:
    """:func:`claim_port` for Label Studio: True when this folder's runs there already."""
    return claim_port(
        settings,
        "Label Studio",
        settings.ls_port,
        "--ls-port",
        lambda: label_studio_is_ours(settings, creds) or started_here(settings.home, "label-studio", settings.ls_port),
    )


def claim_backend_port(settings: StackSettings) -> bool:
    """:func:`claim_port` for the backend: True when this folder's runs there already."""
    return claim_port(
        settings,
        "the ML backend",
        settings.backend_port,
        "--backend-port",
        lambda: backend_is_ours(settings) or started_here(settings.home, "backend", settings.backend_port),
    )


def start_label_studio(settings: StackSettings, creds: Credentials) -> bool:
    """Start Label Studio unless this folder's already answers; returns True when it was started
    now (raises ``SyncError`` when another program holds its port)."""
    if claim_label_studio_port(settings, creds):
        return False
    wait_label_studio(settings, spawn_label_studio(settings, creds))
    return True


def label_studio_command() -> list[str]:
    """How to run ``label-studio``: through :mod:`judgelab.sync.label_studio_server` (the same
    command, its connections without the 40 ms delayed-acknowledgement wait per request) when
    Label Studio is installed in judgelab's Python, else the ``label-studio`` program found."""
    if importlib.util.find_spec("label_studio") is not None:
        return [sys.executable, "-m", "judgelab.sync.label_studio_server"]
    exe = shutil.which("label-studio", path=str(Path(sys.executable).parent)) or shutil.which("label-studio")
    if not exe:
        raise SyncError("the label-studio command is not installed: pip install 'judgelab[server]'")
    return [exe]


def spawn_label_studio(
    settings: StackSettings, creds: Credentials, command: list[str] | None = None
) -> subprocess.Popen:
    """Start Label Studio's process and return at once (its first boot migrates the database for a
    minute or two: :func:`wait_label_studio` waits for it). ``command``: how to run
    ``label-studio`` (:func:`label_studio_command` unless given)."""
    log = settings.home / "label-studio.log"
    # --debug: Label Studio 1.23 then fails on a taken port instead of moving to the next one
    # unannounced (the flag does nothing else in `start`; Django's DEBUG is its own variable)
    args = ["start", "--no-browser", "--debug", "--port", str(settings.ls_port), "--internal-host", settings.host]
    cmd = [*(command or label_studio_command()), *args]
    return _spawn(cmd, label_studio_env(settings, creds), log, settings.home / "label-studio.pid")


def wait_label_studio(settings: StackSettings, proc: subprocess.Popen) -> None:
    """Wait until the Label Studio that ``proc`` runs answers (raises ``SyncError`` if it dies)."""
    creds = load_credentials(settings.home)
    _wait_ours(
        settings.ls_url,
        lambda: label_studio_is_ours(settings, creds),
        proc,
        LS_FIRST_BOOT_TIMEOUT,
        settings.home / "label-studio.log",
        "Label Studio",
    )


def start_backend(settings: StackSettings, extra_env: dict[str, str] | None = None) -> bool:
    """Start the backend unless this folder's already answers; returns True when it was started
    now (raises ``SyncError`` when another program holds its port)."""
    with start_lock(settings.home, "backend"):
        return _start_backend(settings, extra_env)


def _start_backend(settings: StackSettings, extra_env: dict[str, str] | None) -> bool:
    if claim_backend_port(settings):
        return False
    env = dict(os.environ)
    env.update(
        {
            "JUDGELAB_BACKEND_HOST": settings.host,
            "JUDGELAB_BACKEND_PORT": str(settings.backend_port),
            "JUDGELAB_ANNOTATOR": settings.annotator,
            "JUDGELAB_STACK_ID": stack_id(settings.home),
        }
    )
    env.update(extra_env or {})
    log = settings.home / "backend.log"
    proc = _spawn([sys.executable, "-m", "judgelab.backend"], env, log, settings.home / "backend.pid")
    _wait_ours(settings.backend_url, lambda: backend_is_ours(settings), proc, 60, log, "judgelab backend")
    return True


def stop_stack(home: Path) -> list[str]:
    """End the servers of this folder's stack (and forget where they ran)."""
    (home / "stack.json").unlink(missing_ok=True)
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
