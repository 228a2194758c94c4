"""The ML backend's command line: ``python -m judgelab.backend [flags]`` (``judgelab serve [flags]``
runs exactly this). Every flag has an environment variable, the flag wins; the secrets are read
from the environment only (a command line is visible to every user of the machine).

The flags are written into their variables and the settings read from there, so a flag and its
variable can never mean two things, and the worker processes of ``--workers N`` (which read the
environment they inherit) get the same settings.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter

from judgelab.backend.annotators.registry import ANNOTATORS
from judgelab.backend.settings import LOG_LEVELS, BackendSettings, SettingsError

PROG = "judgelab serve"


@dataclass(frozen=True)
class Option:
    flag: str
    env: str
    help: str
    setting: str | None = None  # the BackendSettings attribute it sets (its default is shown)
    default: str = ""  # shown when it sets no BackendSettings attribute
    metavar: str | None = None
    choices: tuple[str, ...] = ()


OPTIONS: tuple[Option, ...] = (
    Option(
        "--annotator",
        "JUDGELAB_ANNOTATOR",
        "which annotator pre-annotates (llm: set --llm-base-url and --llm-model)",
        "annotator",
        choices=tuple(ANNOTATORS),
    ),
    Option("--host", "JUDGELAB_BACKEND_HOST", "address to listen on (0.0.0.0: every interface)", "host"),
    Option("--port", "JUDGELAB_BACKEND_PORT", "port to listen on", "port"),
    Option(
        "--workers",
        "JUDGELAB_WORKERS",
        "server processes; they share the LLM response cache file and /metrics' counts, each keeps its own models",
        "workers",
        metavar="N",
    ),
    Option("--log-level", "JUDGELAB_LOG_LEVEL", "log level", "log_level", choices=LOG_LEVELS),
    Option(
        "--predict-deadline",
        "JUDGELAB_PREDICT_DEADLINE",
        "seconds from a /predict's arrival to its answer; unfinished tasks get placeholders (keep it "
        "below Label Studio's ML_TIMEOUT_PREDICT, 100 s)",
        "predict_deadline",
        metavar="SECONDS",
    ),
    Option(
        "--basic-auth-user",
        "JUDGELAB_BASIC_AUTH_USER",
        "require HTTP basic auth with this user (the password: JUDGELAB_BASIC_AUTH_PASS)",
        "basic_auth_user",
        metavar="USER",
    ),
    Option(
        "--configs-dir",
        "JUDGELAB_CONFIGS_DIR",
        "folder of the schemas (replaces the built-in five)",
        default="the package's configs/",
        metavar="DIR",
    ),
    Option(
        "--extra-configs",
        "JUDGELAB_EXTRA_CONFIGS",
        f"folders of schemas of your own, read besides those ({os.pathsep!r}-separated)",
        default="none",
        metavar="DIRS",
    ),
    Option("--prompts-dir", "JUDGELAB_PROMPTS_DIR", "folder of prompt overrides (<schema>/prompt.txt)", default="none"),
    Option(
        "--cache-path",
        "JUDGELAB_CACHE_PATH",
        "SQLite file of the LLM response cache ('off': none)",
        "llm.cache_path",
        metavar="PATH",
    ),
    Option("--llm-base-url", "JUDGELAB_LLM_BASE_URL", "OpenAI-compatible endpoint, ending in /v1", "llm.base_url"),
    Option(
        "--llm-model",
        "JUDGELAB_LLM_MODEL",
        "model name the endpoint serves; several, comma-separated, are the models a project may use as judges",
        "llm.model",
    ),
    Option(
        "--llm-samples",
        "JUDGELAB_LLM_SAMPLES",
        "answers asked per task (more than 1: the majority is the suggestion, its share the score)",
        "llm.samples",
    ),
    Option(
        "--llm-max-samples",
        "JUDGELAB_LLM_MAX_SAMPLES",
        "the most samples a project may ask for (connect/preannotate --samples)",
        "llm.max_samples",
    ),
    Option("--llm-temperature", "JUDGELAB_LLM_TEMPERATURE", "sampling temperature", "llm.temperature"),
    Option("--llm-max-tokens", "JUDGELAB_LLM_MAX_TOKENS", "longest answer, in tokens", "llm.max_tokens"),
    Option("--llm-concurrency", "JUDGELAB_LLM_CONCURRENCY", "LLM requests in flight at once", "llm.concurrency"),
    Option("--llm-timeout", "JUDGELAB_LLM_TIMEOUT", "seconds per LLM request", "llm.timeout"),
    Option("--llm-retries", "JUDGELAB_LLM_RETRIES", "retries after a 429, 5xx or timeout", "llm.retries"),
    Option(
        "--llm-json-mode",
        "JUDGELAB_LLM_JSON_MODE",
        "ask for structured output (auto: drop it when the server refuses)",
        "llm.json_mode",
        choices=("auto", "on", "off"),
    ),
    Option(
        "--cache-max-mb",
        "JUDGELAB_CACHE_MAX_MB",
        "size cap of the cached answers (the oldest are evicted beyond)",
        "llm.cache_max_mb",
    ),
    Option(
        "--cache-max-answer-kb",
        "JUDGELAB_CACHE_MAX_ANSWER_KB",
        "longer answers are used but not cached",
        "llm.cache_max_answer_kb",
    ),
    Option("--max-body-mb", "JUDGELAB_MAX_BODY_MB", "largest request body (413 beyond)", "max_body_mb"),
    Option("--max-config-mb", "JUDGELAB_MAX_CONFIG_MB", "largest label config (413 beyond)", "max_config_mb"),
    Option(
        "--model-cache-size",
        "JUDGELAB_MODEL_CACHE_SIZE",
        "projects whose parsed config is kept (least recently used out)",
        "model_cache_size",
    ),
    Option(
        "--model-cache-mb",
        "JUDGELAB_MODEL_CACHE_MB",
        "memory the parsed configs kept may hold, measured (the LLM annotator: half for its prompt tasks)",
        "model_cache_mb",
    ),
    Option(
        "--label-studio-url",
        "LABEL_STUDIO_URL",
        "Label Studio as the backend reaches it, to fetch uploaded text files in tasks (with the token "
        "LABEL_STUDIO_API_KEY, which goes nowhere else); default: what Label Studio sends with /setup",
        "label_studio_url",
        metavar="URL",
    ),
    Option(
        "--fetch-local-files",
        "JUDGELAB_FETCH_LOCAL_FILES",
        "also fetch Label Studio's local-storage files (/data/local-files/?d=...) in tasks",
        "fetch_local_files",
        metavar="true|false",
        choices=("true", "false"),
    ),
    Option("--fetch-timeout", "JUDGELAB_FETCH_TIMEOUT", "seconds per uploaded file fetched", "fetch_timeout"),
    Option("--fetch-max-mb", "JUDGELAB_FETCH_MAX_MB", "largest uploaded file fetched", "fetch_max_mb"),
    Option("--fetch-cache-mb", "JUDGELAB_FETCH_CACHE_MB", "fetched texts kept in memory", "fetch_cache_mb"),
    Option(
        "--stack-id",
        "JUDGELAB_STACK_ID",
        "an id /health answers, by which 'judgelab up' tells the backend it started from another one on its port",
        "stack_id",
        metavar="ID",
    ),
)

#: Read from the environment only, never from a flag.
SECRETS: dict[str, str] = {
    "JUDGELAB_LLM_API_KEY": "sent to the LLM endpoint as Authorization: Bearer",
    "JUDGELAB_BASIC_AUTH_PASS": "the basic auth password (required with JUDGELAB_BASIC_AUTH_USER)",
    "LABEL_STUDIO_API_KEY": "Label Studio token to fetch uploaded files (legacy token or personal access token)",
}


def _shown_default(option: Option, defaults: BackendSettings) -> str:
    if option.setting is None:
        return option.default
    value = attrgetter(option.setting)(defaults)
    return "none" if value in (None, "") else str(value)


def build_parser() -> argparse.ArgumentParser:
    defaults = BackendSettings.from_env({})
    epilog = "read from the environment only:\n" + "\n".join(f"  {k:26} {v}" for k, v in SECRETS.items())
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Serve the judgelab ML backend for Label Studio (also: python -m judgelab.backend).\n"
        "Every flag has an environment variable; the flag wins.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for o in OPTIONS:
        parser.add_argument(
            o.flag,
            dest=o.env,
            metavar=o.metavar or o.flag.rsplit("-", 1)[-1].upper(),
            choices=o.choices or None,
            type=str.upper if o.env == "JUDGELAB_LOG_LEVEL" else str,
            help=f"{o.help} [{o.env}; default: {_shown_default(o, defaults)}]",
        )
    return parser


def environment(argv: Sequence[str] | None, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the flags of ``argv`` written into their variables (``--help`` exits)."""
    args = build_parser().parse_args(argv)
    merged = dict(env)
    for o in OPTIONS:
        value = getattr(args, o.env)
        if value is not None:
            merged[o.env] = value
    return merged


def check(settings: BackendSettings) -> None:
    """What would stop a worker from starting, found before any worker starts."""
    if settings.annotator not in ANNOTATORS:
        raise SettingsError(f"unknown annotator {settings.annotator!r}; choose one of {', '.join(ANNOTATORS)}")
    if settings.annotator == "llm":
        settings.llm.check_endpoint()


@contextlib.contextmanager
def metrics_folder() -> Iterator[None]:
    """The workers' shared counts for ``/metrics``: the folder of ``PROMETHEUS_MULTIPROC_DIR``, or a
    temporary one for as long as they serve (prometheus-client's multiprocess mode)."""
    from judgelab.backend.metrics import MULTIPROC_DIR

    if os.environ.get(MULTIPROC_DIR):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="judgelab-metrics-") as folder:
        os.environ[MULTIPROC_DIR] = folder  # what the workers inherit
        try:
            yield
        finally:
            del os.environ[MULTIPROC_DIR]


def main(argv: Sequence[str] | None = None) -> None:
    import uvicorn

    env = environment(argv, os.environ)
    os.environ.update({o.env: env[o.env] for o in OPTIONS if o.env in env})  # what the workers inherit
    try:
        settings = BackendSettings.from_env(env)
        check(settings)
    except (SettingsError, ValueError) as exc:
        print(f"judgelab backend: {exc}", file=sys.stderr)
        sys.exit(2)
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    common = {"host": settings.host, "port": settings.port, "log_level": settings.log_level.lower()}
    if settings.workers > 1:
        with metrics_folder():
            uvicorn.run("judgelab.backend.app:create_app", factory=True, workers=settings.workers, **common)
        return
    from judgelab.backend.app import create_app

    try:
        app = create_app(settings)
    except (SettingsError, ValueError) as exc:
        print(f"judgelab backend: {exc}", file=sys.stderr)
        sys.exit(2)
    uvicorn.run(app, **common)
