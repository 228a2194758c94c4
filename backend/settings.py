"""Backend settings, each declared once: its default, its environment variable, its flag and what
it means (secrets are never logged, and have no flag: a command line is visible to every user).

``BackendSettings.from_env()`` reads the service's settings; its ``llm`` part
(:class:`LLMSettings`) configures the LLM annotator. A value that does not parse raises
:class:`SettingsError` naming the variable. ``judgelab serve``'s flags are made from these
declarations (:mod:`judgelab.backend.cli`); ``replace(settings, ...)`` (or
``LLMSettings.from_env(overrides)``) is how code overrides the environment.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from judgelab.backend.ls_files import NotLabelStudioURL, parse_base

#: Label Studio gives up on a /predict after ``ML_TIMEOUT_PREDICT`` (100 s by default): a batch
#: returns what it has after this many seconds, safely below that.
DEFAULT_PREDICT_DEADLINE = 80.0
DEFAULT_CACHE_PATH = ".judgelab/llm-cache.sqlite"
DEFAULT_CACHE_MAX_MB = 1024.0  # the response cache's size cap; the oldest answers go first
DEFAULT_CACHE_MAX_ANSWER_KB = 512.0  # a longer answer is used but never stored
JSON_MODES = ("auto", "on", "off")
CACHE_OFF = ("", "off", "none", "0", "false")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class SettingsError(ValueError):
    """A ``JUDGELAB_*`` variable has a value that cannot be used."""


def _number(name: str, raw: str, default: float, kind: type, minimum: float) -> float:
    if not raw.strip():
        return kind(default)
    try:
        value = kind(raw.strip())
    except ValueError:
        raise SettingsError(f"{name} must be {'an integer' if kind is int else 'a number'}, got {raw!r}") from None
    if value < minimum:
        raise SettingsError(f"{name} must be at least {minimum}, got {raw!r}")
    return value


def _flag(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise SettingsError(f"{name} must be true or false, got {raw!r}")


@dataclass(frozen=True)
class Variable:
    """Where a setting comes from: its environment variable and its flag (none: a secret, or a
    setting derived from another's variable)."""

    env: str
    help: str
    flag: str | None = None
    secret: bool = False
    minimum: float = 0  # numbers
    choices: tuple[str, ...] = ()  # the flag's; the variable's value is checked by the settings
    metavar: str | None = None
    read: Callable[[str], Any] | None = None  # a set variable's text to the value (default: by type)

    def value(self, env: Mapping[str, str], default: Any) -> Any:
        raw = env.get(self.env)
        if self.read is not None:
            return default if raw is None else self.read(raw)
        if isinstance(default, bool):
            return _flag(self.env, raw or "")
        if isinstance(default, (int, float)):
            return _number(self.env, raw or "", default, type(default), self.minimum)
        return default if raw is None else raw


def setting(default: Any, env: str, help: str, flag: str | None = None, **how: Any) -> Any:
    """A settings field read from ``env`` (and, with a ``flag``, set by it on the command line)."""
    variable = Variable(env, help, flag, **how)
    return field(default=default, repr=not variable.secret, metadata={"variable": variable})


def variables(cls: type) -> Iterator[tuple[str, Variable]]:
    """``(field name, variable)`` of each field of a settings class read from a variable."""
    for f in fields(cls):
        if "variable" in f.metadata:
            yield f.name, f.metadata["variable"]


def _read(cls: type, env: Mapping[str, str]) -> dict[str, Any]:
    defaults = {f.name: f.default for f in fields(cls)}
    return {name: variable.value(env, defaults[name]) for name, variable in variables(cls)}


def _strip_url(raw: str) -> str:
    return raw.strip().rstrip("/")


def _models(raw: str) -> tuple[str, ...]:
    return tuple(m.strip() for m in raw.split(",") if m.strip())


def _first_model(raw: str) -> str:
    return next(iter(_models(raw)), "")


def _or_none(raw: str) -> str | None:
    return raw or None


@dataclass(frozen=True)
class LLMSettings:
    """An OpenAI-compatible chat endpoint and how to call it."""

    base_url: str = setting(  # the part before /chat/completions
        "", "JUDGELAB_LLM_BASE_URL", "OpenAI-compatible endpoint, ending in /v1", "--llm-base-url", read=_strip_url
    )
    model: str = setting(  # the default judge
        "",
        "JUDGELAB_LLM_MODEL",
        "model name the endpoint serves; several, comma-separated, are the models a project may use as judges",
        "--llm-model",
        read=_first_model,
    )
    models: tuple[str, ...] = setting(  # every model this backend may call (default: just ``model``)
        (), "JUDGELAB_LLM_MODEL", "the models of --llm-model", read=_models
    )
    samples: int = setting(
        1,
        "JUDGELAB_LLM_SAMPLES",
        "answers asked per task (more than 1: the majority is the suggestion, its share the score)",
        "--llm-samples",
        minimum=1,
    )
    max_samples: int = setting(
        20,
        "JUDGELAB_LLM_MAX_SAMPLES",
        "the most samples a project may ask for (connect/preannotate --samples)",
        "--llm-max-samples",
        minimum=1,
    )
    api_key: str | None = setting(
        None, "JUDGELAB_LLM_API_KEY", "sent to the LLM endpoint as Authorization: Bearer", secret=True, read=_or_none
    )
    temperature: float = setting(0.0, "JUDGELAB_LLM_TEMPERATURE", "sampling temperature", "--llm-temperature")
    max_tokens: int = setting(
        1024, "JUDGELAB_LLM_MAX_TOKENS", "longest answer, in tokens", "--llm-max-tokens", minimum=1
    )
    concurrency: int = setting(  # per backend process
        8, "JUDGELAB_LLM_CONCURRENCY", "LLM requests in flight at once", "--llm-concurrency", minimum=1
    )
    timeout: float = setting(60.0, "JUDGELAB_LLM_TIMEOUT", "seconds per LLM request", "--llm-timeout", minimum=0.001)
    retries: int = setting(  # extra attempts after a 429, 5xx, timeout or connection error
        3, "JUDGELAB_LLM_RETRIES", "retries after a 429, 5xx or timeout", "--llm-retries"
    )
    json_mode: str = setting(
        "auto",
        "JUDGELAB_LLM_JSON_MODE",
        "ask for structured output (auto: drop it when the server refuses)",
        "--llm-json-mode",
        choices=JSON_MODES,
        read=lambda raw: raw.strip().lower() or "auto",
    )
    cache_path: str = setting(
        DEFAULT_CACHE_PATH,
        "JUDGELAB_CACHE_PATH",
        "SQLite file of the LLM response cache ('off': none)",
        "--cache-path",
        metavar="PATH",
        read=str.strip,
    )
    cache_max_mb: float = setting(
        DEFAULT_CACHE_MAX_MB,
        "JUDGELAB_CACHE_MAX_MB",
        "size cap of the cached answers (the oldest are evicted beyond)",
        "--cache-max-mb",
        minimum=0.001,
    )
    cache_max_answer_kb: float = setting(
        DEFAULT_CACHE_MAX_ANSWER_KB,
        "JUDGELAB_CACHE_MAX_ANSWER_KB",
        "longer answers are used but not cached",
        "--cache-max-answer-kb",
        minimum=0.001,
    )

    def __post_init__(self) -> None:
        if self.json_mode not in JSON_MODES:
            raise SettingsError(
                f"JUDGELAB_LLM_JSON_MODE must be one of {', '.join(JSON_MODES)}, got {self.json_mode!r}"
            )
        if self.concurrency < 1:
            raise SettingsError(f"JUDGELAB_LLM_CONCURRENCY must be at least 1, got {self.concurrency}")
        if self.timeout <= 0:
            raise SettingsError(f"JUDGELAB_LLM_TIMEOUT must be positive, got {self.timeout}")
        if not 1 <= self.samples <= self.max_samples:
            raise SettingsError(
                f"JUDGELAB_LLM_SAMPLES must be 1 to {self.max_samples} (JUDGELAB_LLM_MAX_SAMPLES), got {self.samples}"
            )

    @property
    def all_models(self) -> tuple[str, ...]:
        """The models this backend may call, the default one first."""
        return tuple(dict.fromkeys(m for m in (self.model, *self.models) if m))

    @property
    def cache_enabled(self) -> bool:
        return self.cache_path.strip().lower() not in CACHE_OFF

    def check_endpoint(self) -> None:
        """Raise :class:`SettingsError` unless an endpoint and a model are set."""
        if not self.base_url.strip():
            raise SettingsError("JUDGELAB_LLM_BASE_URL is not set (e.g. http://127.0.0.1:11434/v1)")
        if not self.base_url.startswith(("http://", "https://")):
            raise SettingsError(f"JUDGELAB_LLM_BASE_URL must start with http:// or https://, got {self.base_url!r}")
        if not self.model.strip():
            raise SettingsError("JUDGELAB_LLM_MODEL is not set (the model name the endpoint serves)")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LLMSettings:
        return cls(**_read(cls, os.environ if env is None else env))

    def cache_file(self) -> Path | None:
        return Path(self.cache_path).expanduser() if self.cache_enabled else None


#: Bounds of what one process keeps and accepts (memory must not grow with what
#: anyone can send to /setup, /webhook and /predict).
DEFAULT_MAX_BODY_MB = 200.0  # one request body ("Retrieve predictions" sends a whole project)
DEFAULT_MAX_CONFIG_MB = 1.0  # one label config (a big taxonomy is a few hundred kB)
DEFAULT_MODEL_CACHE_SIZE = 100  # projects (project, config) whose parsed config is kept
DEFAULT_MODEL_CACHE_MB = 256.0  # the memory they hold together (and the LLM annotator's prompt tasks)
DEFAULT_FETCH_TIMEOUT = 10.0  # one download of an uploaded text file from Label Studio
DEFAULT_FETCH_MAX_MB = 10.0  # one such file
DEFAULT_FETCH_CACHE_MB = 64.0  # the downloaded texts kept


def _auth_pair(user: str | None, password: str | None) -> None:
    """A user without a password would accept an empty password: refuse both halves alone."""
    if user and not password:
        raise SettingsError(
            "JUDGELAB_BASIC_AUTH_USER is set but JUDGELAB_BASIC_AUTH_PASS is empty: set JUDGELAB_BASIC_AUTH_PASS, "
            "or unset JUDGELAB_BASIC_AUTH_USER to run without authentication"
        )
    if password and not user:
        raise SettingsError(
            "JUDGELAB_BASIC_AUTH_PASS is set but JUDGELAB_BASIC_AUTH_USER is empty: set JUDGELAB_BASIC_AUTH_USER, "
            "or unset JUDGELAB_BASIC_AUTH_PASS to run without authentication"
        )


@dataclass(frozen=True)
class BackendSettings:
    annotator: str = setting(
        "offline",
        "JUDGELAB_ANNOTATOR",
        "which annotator pre-annotates (llm: set --llm-base-url and --llm-model)",
        "--annotator",
    )
    host: str = setting(
        "127.0.0.1", "JUDGELAB_BACKEND_HOST", "address to listen on (0.0.0.0: every interface)", "--host"
    )
    port: int = setting(9090, "JUDGELAB_BACKEND_PORT", "port to listen on", "--port")
    workers: int = setting(
        1,
        "JUDGELAB_WORKERS",
        "server processes; they share the LLM response cache file and /metrics' counts, each keeps its own models",
        "--workers",
        minimum=1,
        metavar="N",
    )
    basic_auth_user: str | None = setting(
        None,
        "JUDGELAB_BASIC_AUTH_USER",
        "require HTTP basic auth with this user (the password: JUDGELAB_BASIC_AUTH_PASS)",
        "--basic-auth-user",
        metavar="USER",
        read=_or_none,
    )
    basic_auth_pass: str | None = setting(
        None,
        "JUDGELAB_BASIC_AUTH_PASS",
        "the basic auth password (required with JUDGELAB_BASIC_AUTH_USER)",
        secret=True,
        read=_or_none,
    )
    log_level: str = setting(
        "INFO",
        "JUDGELAB_LOG_LEVEL",
        "log level",
        "--log-level",
        choices=LOG_LEVELS,
        read=lambda raw: raw.strip().upper() or "INFO",
    )
    predict_deadline: float = setting(
        DEFAULT_PREDICT_DEADLINE,
        "JUDGELAB_PREDICT_DEADLINE",
        "seconds from a /predict's arrival to its answer; unfinished tasks get placeholders (keep it "
        "below Label Studio's ML_TIMEOUT_PREDICT, 100 s)",
        "--predict-deadline",
        minimum=0.1,
        metavar="SECONDS",
    )
    max_body_mb: float = setting(
        DEFAULT_MAX_BODY_MB, "JUDGELAB_MAX_BODY_MB", "largest request body (413 beyond)", "--max-body-mb", minimum=0.001
    )
    max_config_mb: float = setting(
        DEFAULT_MAX_CONFIG_MB,
        "JUDGELAB_MAX_CONFIG_MB",
        "largest label config (413 beyond)",
        "--max-config-mb",
        minimum=0.001,
    )
    model_cache_size: int = setting(
        DEFAULT_MODEL_CACHE_SIZE,
        "JUDGELAB_MODEL_CACHE_SIZE",
        "projects whose parsed config is kept (least recently used out)",
        "--model-cache-size",
        minimum=1,
    )
    model_cache_mb: float = setting(
        DEFAULT_MODEL_CACHE_MB,
        "JUDGELAB_MODEL_CACHE_MB",
        "memory the parsed configs kept may hold, measured (the LLM annotator: half for its prompt tasks)",
        "--model-cache-mb",
        minimum=0.001,
    )
    label_studio_url: str = setting(  # else /setup's hostname
        "",
        "LABEL_STUDIO_URL",
        "Label Studio as the backend reaches it, to fetch uploaded text files in tasks (with the token "
        "LABEL_STUDIO_API_KEY, which goes nowhere else); default: what Label Studio sends with /setup",
        "--label-studio-url",
        metavar="URL",
        read=_strip_url,
    )
    label_studio_api_key: str | None = setting(  # else /setup's access_token
        None,
        "LABEL_STUDIO_API_KEY",
        "Label Studio token to fetch uploaded files (legacy token or personal access token)",
        secret=True,
        read=lambda raw: raw.strip() or None,
    )
    fetch_timeout: float = setting(
        DEFAULT_FETCH_TIMEOUT,
        "JUDGELAB_FETCH_TIMEOUT",
        "seconds per uploaded file fetched",
        "--fetch-timeout",
        minimum=0.001,
    )
    fetch_max_mb: float = setting(
        DEFAULT_FETCH_MAX_MB, "JUDGELAB_FETCH_MAX_MB", "largest uploaded file fetched", "--fetch-max-mb", minimum=0.001
    )
    fetch_cache_mb: float = setting(
        DEFAULT_FETCH_CACHE_MB, "JUDGELAB_FETCH_CACHE_MB", "fetched texts kept in memory", "--fetch-cache-mb"
    )
    fetch_local_files: bool = setting(
        False,
        "JUDGELAB_FETCH_LOCAL_FILES",
        "also fetch Label Studio's local-storage files (/data/local-files/?d=...) in tasks",
        "--fetch-local-files",
        metavar="true|false",
    )
    stack_id: str = setting(  # how `judgelab up` knows the backend it started
        "",
        "JUDGELAB_STACK_ID",
        "an id /health answers, by which 'judgelab up' tells the backend it started from another one on its port",
        "--stack-id",
        metavar="ID",
        read=str.strip,
    )
    llm: LLMSettings = field(default_factory=LLMSettings)

    def __post_init__(self) -> None:
        _auth_pair(self.basic_auth_user, self.basic_auth_pass)
        if self.log_level not in LOG_LEVELS:
            raise SettingsError(f"JUDGELAB_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, got {self.log_level!r}")
        if self.label_studio_url:
            try:
                parse_base(self.label_studio_url)
            except NotLabelStudioURL as exc:
                raise SettingsError(f"LABEL_STUDIO_URL: {exc} (e.g. http://127.0.0.1:8080)") from None

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_body_mb * 1024 * 1024)

    @property
    def max_config_bytes(self) -> int:
        return int(self.max_config_mb * 1024 * 1024)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BackendSettings:
        env = os.environ if env is None else env
        return cls(**_read(cls, env), llm=LLMSettings.from_env(env))
