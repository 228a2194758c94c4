"""The ``judgelab`` command group and what its commands share: the connection, error messages,
project naming options, progress bars and ``--json`` output.

Library code raises :class:`~sync.client.SyncError` (and friends); only this package turns
them into messages and exit codes (1 for a problem the user must fix).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click
import httpx

from judgelab.configs.schema import Schema, SchemaError, all_schemas, get_schema
from judgelab.sync.client import Connection, SyncError

DEFAULT_HOME = Path(os.environ.get("JUDGELAB_HOME", ".judgelab"))
DEFAULT_BACKEND_URL = "http://127.0.0.1:9090"


def _fail(message: str) -> None:
    click.secho(f"error: {message}", fg="red", err=True)
    sys.exit(1)


class _Cli(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (SyncError, SchemaError) as exc:
            _fail(str(exc))
        except (FileExistsError, NotADirectoryError) as exc:  # an --out that is a file, or under one
            _fail(f"{exc.filename}: a file where a folder is needed: give a folder (--out)")
        except OSError as exc:
            if isinstance(exc, ConnectionError):
                raise
            where = f"{exc.filename}: " if exc.filename else ""
            _fail(f"{where}{exc.strerror or exc}")
        except httpx.HTTPError as exc:  # a request the library did not expect to fail (retries spent)
            _fail(f"{_request_of(exc)}failed: {type(exc).__name__}: {exc}; re-run the command to continue")
        except Exception as exc:
            api_error = getattr(sys.modules.get("label_studio_sdk.core.api_error"), "ApiError", None)
            if api_error is None or not isinstance(exc, api_error):
                raise
            from judgelab.sync.client import api_error_message

            _fail(f"Label Studio answered {api_error_message(exc)}; re-run the command to continue")


def _request_of(exc: httpx.HTTPError) -> str:
    try:
        request = exc.request
    except RuntimeError:  # no request attached
        return ""
    return f"{request.method} {request.url.copy_with(query=None)}: "


def _connection(ctx: click.Context) -> Connection:
    """--url/--token, else JUDGELAB_LS_URL/JUDGELAB_LS_TOKEN, else the local stack's login (at the
    Label Studio URL ``judgelab up`` ran it at)."""
    url, token = ctx.obj.get("url"), ctx.obj.get("token")
    conn = Connection.from_env(url, token)
    if not conn.token:
        from judgelab.sync.local_stack import StackSettings, load_credentials, recorded_ls_url

        home = ctx.obj["home"]
        if (home / "credentials.json").exists():
            ls_url = recorded_ls_url(home) or StackSettings(home=home).ls_url  # where `up` ran it
            conn = Connection(url=url or ls_url, token=load_credentials(home).token)
    return conn


def _schemas(names: tuple[str, ...]) -> list[Schema]:
    return [get_schema(n) for n in names] if names else list(all_schemas().values())


def judgelab_version() -> str:
    """The installed distribution's version (importlib.metadata), or ``unknown`` from a bare checkout."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("judgelab")
    except PackageNotFoundError:
        return "unknown"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"judgelab {judgelab_version()}")
        ctx.exit()


# --- project naming (see judgelab.sync.project_ref) -------------------------------------------


class RegistryChoice(click.Choice):
    """A choice among the names a registry has, asked for only when a value is checked or the help
    is shown (a registry imports every module of its layer on first use, which ``--help`` of
    another command should not pay for). ``names`` returns them."""

    def __init__(self, names: Callable[[], Iterable[str]]) -> None:
        self._names = names
        super().__init__(())

    @property  # type: ignore[override]
    def choices(self) -> tuple[str, ...]:
        return tuple(self._names())

    @choices.setter
    def choices(self, value: object) -> None:  # click's __init__ sets it; the registry decides
        pass


def project_options(*, multiple: bool, schema_help: str | None = None) -> Callable:
    """``--project ID``, ``--title TITLE`` and ``--schema NAME``, the same on every command.

    ``multiple``: repeatable (commands that may work on several projects); the parameters are
    then ``project_ids``, ``titles`` and ``schema_names`` (tuples), else ``project_id``,
    ``title`` and ``schema_name``.
    """
    suffix = " (repeatable)" if multiple else ""
    options = [
        click.option(
            "--project",
            "project_ids" if multiple else "project_id",
            type=int,
            multiple=multiple,
            metavar="ID",
            help=f"Label Studio project id{suffix}.",
        ),
        click.option(
            "--title",
            "titles" if multiple else "title",
            multiple=multiple,
            metavar="TITLE",
            help=f"Project title{suffix}.",
        ),
        click.option(
            "--schema",
            "schema_names" if multiple else "schema_name",
            multiple=multiple,
            metavar="NAME",
            help=schema_help or f"Schema of the project(s), checked against their label config{suffix}.",
        ),
    ]

    def decorate(func: Callable) -> Callable:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


# --- output ----------------------------------------------------------------------------------


def json_option(func: Callable) -> Callable:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON object on stdout instead of text (see the README)."
    )(func)


class Output:
    """What a command prints: text lines as it goes, or (``--json``) one JSON object at the end."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def line(self, text: str) -> None:
        if not self.as_json:
            click.echo(text)

    def note(self, text: str) -> None:
        """A remark for the person at the terminal (stderr, also with --json)."""
        click.echo(text, err=True)

    def result(self, data: dict[str, Any]) -> None:
        if self.as_json:
            click.echo(json.dumps(data, ensure_ascii=False, indent=1, default=str))


def progress_bar(total: int | None, desc: str, unit: str = "task", *, disable: bool | None = None):
    """A tqdm bar on stderr, silent when stderr is not a terminal (pipes, logs, CI) unless
    ``disable=False``. tqdm's own layout shows the rate, and the time left once the bar has its
    ``total``: a bar started without one gets it as soon as it is known (``bar.reset(total=...)``)."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        file=sys.stderr,
        disable=disable,
        dynamic_ncols=True,
        leave=False,
    )


def advance(bar: Any) -> Callable[[int], None]:
    """``bar.update`` as a plain callback for library code."""
    return lambda n=1: bar.update(n)


def names(items: Iterable[Any]) -> str:
    return ", ".join(str(i) for i in items)


@click.group(cls=_Cli)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Print judgelab's version and exit.",
)
@click.option(
    "--url",
    envvar="JUDGELAB_LS_URL",
    help="Label Studio URL (default: where judgelab up runs it, else http://127.0.0.1:8080).",
)
@click.option("--token", envvar="JUDGELAB_LS_TOKEN", help="Legacy token or personal access token.")
@click.option(
    "--home",
    type=click.Path(path_type=Path),
    default=DEFAULT_HOME,
    show_default=True,
    help="State folder of the local stack (logs, pids, preset login).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log what happens.")
@click.pass_context
def main(ctx: click.Context, url: str | None, token: str | None, home: Path, verbose: bool) -> None:
    """judgelab: Label Studio studies of generated text, pre-annotated and analysed."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    # httpx logs every request line at INFO; a sync's export URLs carry up to 900 task ids each
    logging.getLogger("httpx").setLevel(logging.WARNING)
    ctx.obj = {"url": url, "token": token, "home": home}
