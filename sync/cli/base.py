"""The ``judgelab`` command group and what its commands share (connection, errors).

Library code raises :class:`~sync.client.SyncError` (and friends); only this module turns
them into messages and exit codes (1 for a problem the user must fix).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import click
import httpx

from judgelab.configs.schema import Schema, SchemaError, all_schemas, get_schema
from judgelab.sync.client import Connection, SyncError

DEFAULT_HOME = Path(os.environ.get("JUDGELAB_HOME", ".judgelab"))


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
    """--url/--token, else JUDGELAB_LS_URL/JUDGELAB_LS_TOKEN, else the local stack's login."""
    url, token = ctx.obj.get("url"), ctx.obj.get("token")
    conn = Connection.from_env(url, token)
    if not conn.token:
        from judgelab.sync.local_stack import StackSettings, load_credentials

        home = ctx.obj["home"]
        if (home / "credentials.json").exists():
            settings = StackSettings(home=home)
            conn = Connection(url=url or settings.ls_url, token=load_credentials(home).token)
    return conn


def _schemas(names: tuple[str, ...]) -> list[Schema]:
    return [get_schema(n) for n in names] if names else list(all_schemas().values())


@click.group(cls=_Cli)
@click.option("--url", envvar="JUDGELAB_LS_URL", help="Label Studio URL (default http://127.0.0.1:8080).")
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
