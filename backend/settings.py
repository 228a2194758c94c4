"""Backend settings from ``JUDGELAB_*`` environment variables (secrets are never logged).

``BackendSettings.from_env()`` reads the service's settings; its ``llm`` part
(:class:`LLMSettings`) configures the LLM annotator. A value that does not parse raises
:class:`SettingsError` naming the variable. ``replace(settings, ...)`` (or
``LLMSettings.from_env(overrides)``) is how CLI flags override the environment.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

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


def _number(env: dict[str, str], name: str, default: float, kind: type = float, minimum: float = 0) -> float:
    raw = env.get(name, "")
    if not raw.strip():
        return kind(default)
    try:
        value = kind(raw.strip())
    except ValueError:
        raise SettingsError(f"{name} must be {'an integer' if kind is int else 'a number'}, got {raw!r}") from None
    if value < minimum:
        raise SettingsError(f"{name} must be at least {minimum}, got {raw!r}")
    return value


def _flag(env: dict[str, str], name: str) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise SettingsError(f"{name} must be true or false, got {env[name]!r}")


@dataclass(frozen=True)
class LLMSettings:
    """An OpenAI-compatible chat endpoint and how to call it."""

    base_url: str = ""  # e.g. http://127.0.0.1:11434/v1 (the part before /chat/completions)
    model: str = ""  # the default judge
    models: tuple[str, ...] = ()  # every model this backend may call (default: just ``model``)
    samples: int = 1  # answers per task and model (more than one: self-consistency, majority vote)
    max_samples: int = 20  # the most samples a project may ask for
    api_key: str | None = field(default=None, repr=False)  # never logged, never returned
    temperature: float = 0.0
    max_tokens: int = 1024
    concurrency: int = 8  # requests in flight at once, per backend process
    timeout: float = 60.0  # one HTTP request, seconds
    retries: int = 3  # extra attempts after a 429, 5xx, timeout or connection error
    json_mode: str = "auto"  # auto: ask for JSON output, drop the request for it if the server refuses
    cache_path: str = DEFAULT_CACHE_PATH  # "" or "off": no response cache
    cache_max_mb: float = DEFAULT_CACHE_MAX_MB  # size cap of the cache file's answers
    cache_max_answer_kb: float = DEFAULT_CACHE_MAX_ANSWER_KB  # longer answers are not cached

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
    def from_env(cls, env: dict[str, str] | None = None) -> LLMSettings:
        env = dict(os.environ if env is None else env)
        cache_path = env.get("JUDGELAB_CACHE_PATH")
        models = tuple(m.strip() for m in env.get("JUDGELAB_LLM_MODEL", "").split(",") if m.strip())
        return cls(
            base_url=env.get("JUDGELAB_LLM_BASE_URL", "").strip().rstrip("/"),
            model=models[0] if models else "",
            models=models,
            samples=int(_number(env, "JUDGELAB_LLM_SAMPLES", 1, int, 1)),
            max_samples=int(_number(env, "JUDGELAB_LLM_MAX_SAMPLES", 20, int, 1)),
            api_key=env.get("JUDGELAB_LLM_API_KEY") or None,
            temperature=_number(env, "JUDGELAB_LLM_TEMPERATURE", 0.0),
            max_tokens=int(_number(env, "JUDGELAB_LLM_MAX_TOKENS", 1024, int, 1)),
            concurrency=int(_number(env, "JUDGELAB_LLM_CONCURRENCY", 8, int, 1)),
            timeout=_number(env, "JUDGELAB_LLM_TIMEOUT", 60.0, float, 0.001),
            retries=int(_number(env, "JUDGELAB_LLM_RETRIES", 3, int, 0)),
            json_mode=env.get("JUDGELAB_LLM_JSON_MODE", "auto").strip().lower() or "auto",
            cache_path=DEFAULT_CACHE_PATH if cache_path is None else cache_path.strip(),
            cache_max_mb=_number(env, "JUDGELAB_CACHE_MAX_MB", DEFAULT_CACHE_MAX_MB, float, 0.001),
            cache_max_answer_kb=_number(env, "JUDGELAB_CACHE_MAX_ANSWER_KB", DEFAULT_CACHE_MAX_ANSWER_KB, float, 0.001),
        )

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
    annotator: str = "offline"
    host: str = "127.0.0.1"
    port: int = 9090
    workers: int = 1  # server processes (uvicorn workers); they share the response cache file
    basic_auth_user: str | None = None
    basic_auth_pass: str | None = field(default=None, repr=False)
    log_level: str = "INFO"
    predict_deadline: float = DEFAULT_PREDICT_DEADLINE  # seconds one /predict may take, from its arrival
    max_body_mb: float = DEFAULT_MAX_BODY_MB
    max_config_mb: float = DEFAULT_MAX_CONFIG_MB
    model_cache_size: int = DEFAULT_MODEL_CACHE_SIZE
    model_cache_mb: float = DEFAULT_MODEL_CACHE_MB
    label_studio_url: str = ""  # LABEL_STUDIO_URL: where uploaded files are fetched (else /setup's hostname)
    label_studio_api_key: str | None = field(default=None, repr=False)  # LABEL_STUDIO_API_KEY (else /setup's)
    fetch_timeout: float = DEFAULT_FETCH_TIMEOUT
    fetch_max_mb: float = DEFAULT_FETCH_MAX_MB
    fetch_cache_mb: float = DEFAULT_FETCH_CACHE_MB
    fetch_local_files: bool = False  # also fetch Label Studio's /data/local-files/?d=... URLs
    stack_id: str = ""  # answered in /health: how `judgelab up` knows the backend it started
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
    def from_env(cls, env: dict[str, str] | None = None) -> BackendSettings:
        env = dict(os.environ if env is None else env)
        return cls(
            annotator=env.get("JUDGELAB_ANNOTATOR", "offline"),
            host=env.get("JUDGELAB_BACKEND_HOST", "127.0.0.1"),
            port=int(_number(env, "JUDGELAB_BACKEND_PORT", 9090, int, 0)),
            workers=int(_number(env, "JUDGELAB_WORKERS", 1, int, 1)),
            basic_auth_user=env.get("JUDGELAB_BASIC_AUTH_USER") or None,
            basic_auth_pass=env.get("JUDGELAB_BASIC_AUTH_PASS") or None,
            log_level=env.get("JUDGELAB_LOG_LEVEL", "INFO").strip().upper() or "INFO",
            predict_deadline=_number(env, "JUDGELAB_PREDICT_DEADLINE", DEFAULT_PREDICT_DEADLINE, float, 0.1),
            max_body_mb=_number(env, "JUDGELAB_MAX_BODY_MB", DEFAULT_MAX_BODY_MB, float, 0.001),
            max_config_mb=_number(env, "JUDGELAB_MAX_CONFIG_MB", DEFAULT_MAX_CONFIG_MB, float, 0.001),
            model_cache_size=int(_number(env, "JUDGELAB_MODEL_CACHE_SIZE", DEFAULT_MODEL_CACHE_SIZE, int, 1)),
            model_cache_mb=_number(env, "JUDGELAB_MODEL_CACHE_MB", DEFAULT_MODEL_CACHE_MB, float, 0.001),
            label_studio_url=env.get("LABEL_STUDIO_URL", "").strip().rstrip("/"),
            label_studio_api_key=env.get("LABEL_STUDIO_API_KEY", "").strip() or None,
            fetch_timeout=_number(env, "JUDGELAB_FETCH_TIMEOUT", DEFAULT_FETCH_TIMEOUT, float, 0.001),
            fetch_max_mb=_number(env, "JUDGELAB_FETCH_MAX_MB", DEFAULT_FETCH_MAX_MB, float, 0.001),
            fetch_cache_mb=_number(env, "JUDGELAB_FETCH_CACHE_MB", DEFAULT_FETCH_CACHE_MB, float, 0),
            fetch_local_files=_flag(env, "JUDGELAB_FETCH_LOCAL_FILES"),
            stack_id=env.get("JUDGELAB_STACK_ID", "").strip(),
            llm=LLMSettings.from_env(env),
        )
