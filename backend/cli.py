"""The ML backend's command line: ``python -m judgelab.backend [flags]`` (``judgelab serve [flags]``
runs exactly this), a click command whose options are the settings' own declarations
(:mod:`judgelab.backend.settings`): each flag has its environment variable (``envvar=``), the flag
wins; the secrets are read from the environment only (a command line is visible to every user of
the machine).

The flags given are written into their variables and the settings read from there, so a flag and
its variable can never mean two things, and the worker processes of ``--workers N`` (which read
the environment they inherit) get the same settings.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter

import click
from click.core import ParameterSource

from judgelab.backend.annotators.registry import ANNOTATORS
from judgelab.backend.settings import BackendSettings, LLMSettings, SettingsError, variables

PROG = "judgelab serve"


@dataclass(frozen=True)
class Option:
    """A flag and its variable: a setting's (``setting``: its dotted path in BackendSettings), or
    one passed on to the schema core and the prompts, which read their variable themselves."""

    flag: str
    env: str
    help: str
    setting: str | None = None
    default: str = ""  # shown when it sets no BackendSettings attribute
    metavar: str | None = None
    choices: tuple[str, ...] = ()


#: Variables the backend passes on: the schema core and the prompts read them.
PASSED_ON = (
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
)


def _setting_options(cls: type, prefix: str = "") -> list[Option]:
    return [
        Option(
            v.flag,
            v.env,
            v.help,
            prefix + name,
            metavar=v.metavar,
            choices=v.choices or (tuple(ANNOTATORS) if v.env == "JUDGELAB_ANNOTATOR" else ()),
        )
        for name, v in variables(cls)
        if v.flag
    ]


OPTIONS: tuple[Option, ...] = (*_setting_options(BackendSettings), *PASSED_ON, *_setting_options(LLMSettings, "llm."))

#: Read from the environment only, never from a flag.
SECRETS: dict[str, str] = {
    v.env: v.help for cls in (BackendSettings, LLMSettings) for _, v in variables(cls) if v.secret
}


def _shown_default(option: Option, defaults: BackendSettings) -> str:
    if option.setting is None:
        return option.default
    value = attrgetter(option.setting)(defaults)
    return "none" if value in (None, "") else str(value).lower() if isinstance(value, bool) else str(value)


class VariableOption(click.Option):
    """An option whose bad value, when it came from its variable, is blamed on the variable."""

    def get_error_hint(self, ctx: click.Context) -> str:
        if ctx.get_parameter_source(self.name) is ParameterSource.ENVIRONMENT:
            return str(self.envvar)
        return super().get_error_hint(ctx)


def _click_option(option: Option, defaults: BackendSettings) -> click.Option:
    return VariableOption(
        [option.flag, option.env],
        envvar=option.env,
        metavar=option.metavar or option.flag.rsplit("-", 1)[-1].upper(),
        type=click.Choice(option.choices, case_sensitive=False) if option.choices else str,
        help=f"{option.help} [{option.env}; default: {_shown_default(option, defaults)}]",
    )


def build_command() -> click.Command:
    defaults = BackendSettings()
    epilog = "\b\nread from the environment only:\n" + "\n".join(f"  {k:26} {v}" for k, v in SECRETS.items())
    return click.Command(
        PROG,
        params=[_click_option(o, defaults) for o in OPTIONS],
        callback=serve,
        help="Serve the judgelab ML backend for Label Studio (also: python -m judgelab.backend). "
        "Every flag has an environment variable; the flag wins.",
        epilog=epilog,
        context_settings={"max_content_width": 100},
    )


def flags_into(ctx: click.Context, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the flags given on the command line written into their variables."""
    merged = dict(env)
    for o in OPTIONS:
        if ctx.get_parameter_source(o.env) is ParameterSource.COMMANDLINE:
            merged[o.env] = ctx.params[o.env]
    return merged


def environment(argv: Sequence[str] | None, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the flags of ``argv`` written into their variables (a usage error raises)."""
    with build_command().make_context(PROG, list(argv or [])) as ctx:
        return flags_into(ctx, env)


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


def fail(exc: Exception) -> None:
    print(f"judgelab backend: {exc}", file=sys.stderr)
    sys.exit(2)


def serve(**_: str) -> None:
    import uvicorn

    env = flags_into(click.get_current_context(), os.environ)
    os.environ.update({o.env: env[o.env] for o in OPTIONS if o.env in env})  # what the workers inherit
    try:
        settings = BackendSettings.from_env(env)
        check(settings)
    except (SettingsError, ValueError) as exc:
        fail(exc)
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
        fail(exc)
    uvicorn.run(app, **common)


def main(argv: Sequence[str] | None = None) -> None:
    """Serve with the flags of ``argv`` (default: the command line's); a usage error exits with 2."""
    build_command().main(args=list(argv) if argv is not None else None, prog_name=PROG)
