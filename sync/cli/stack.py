"""The local stack of scripts/up.sh (up, down) and the ML backend on its own (serve)."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import click

from judgelab.configs.schema import all_schemas
from judgelab.sync.cli.base import main
from judgelab.sync.client import Connection, SyncError, connect
from judgelab.sync.importers import rows_from_records


@main.command("up")
@click.option(
    "--ls-port",
    type=int,
    help="Label Studio's port  [default: the port this folder's running stack uses, else 8080]",
)
@click.option(
    "--backend-port",
    type=int,
    help="The ML backend's port  [default: the port this folder's running stack uses, else 9090]",
)
@click.option(
    "--database-url",
    envvar="JUDGELAB_LS_DATABASE_URL",
    help="Label Studio's PostgreSQL database (postgresql://user:password@host:5432/name); default SQLite.",
)
@click.pass_context
def up_cmd(ctx: click.Context, ls_port: int | None, backend_port: int | None, database_url: str | None) -> None:
    """Start Label Studio and the backend, create the five projects with their samples, pre-annotate."""
    from judgelab.sync.local_stack import (
        claim_backend_port,
        claim_label_studio_port,
        record_stack,
        start_backend,
        start_label_studio,
    )

    settings, creds = _up_settings(ctx.obj["home"], ls_port, backend_port, database_url)
    # both ports first: one that another program holds stops `up` here, before anything starts
    claim_label_studio_port(settings, creds)
    claim_backend_port(settings)
    where = f"on {settings.database.display_url}" if settings.database else "on SQLite"
    click.echo(f"Label Studio at {settings.ls_url} {where} (a first start migrates the database: 1-3 minutes)...")
    started = start_label_studio(settings, creds)
    click.echo("  started" if started else "  already running: reused")
    started = start_backend(settings)
    click.echo(f"ML backend at {settings.backend_url}: {'started' if started else 'already running: reused'}")
    record_stack(settings)  # the other commands reach this Label Studio without --url
    _sample_projects(connect(Connection(url=settings.ls_url, token=creds.token)), settings.backend_url)
    click.secho(f"\nOpen {settings.ls_url}/projects/", fg="green", bold=True)
    click.echo(f"Log in as {creds.username} / {creds.password}   (API token in {settings.home / 'credentials.json'})")
    click.echo(f"Invite annotators (a sign-up link): {stack_command(settings.home, 'invite', url=settings.ls_url)}")
    click.echo(f"Stop the servers with: {stop_command(settings.home)}")


def _up_settings(home: Path, ls_port: int | None, backend_port: int | None, database_url: str | None) -> tuple:
    """The stack's settings (the ports given, else those of this folder's running stack, else the
    defaults) and its credentials. Label Studio running for this folder on another port than the one
    asked for is refused: two Label Studios on one data folder, never."""
    from judgelab.sync.local_stack import (
        PostgresSettings,
        StackSettings,
        label_studio_is_ours,
        load_credentials,
        recorded_ports,
    )

    database = PostgresSettings.from_url(database_url) if database_url else None
    running_ls, running_backend = recorded_ports(home)  # run again, `up` finds its stack
    settings = StackSettings(
        home=home,
        ls_port=ls_port or running_ls or StackSettings.ls_port,
        backend_port=backend_port or running_backend or StackSettings.backend_port,
        database=database,
    )
    creds = load_credentials(settings.home)
    if running_ls and settings.ls_port != running_ls:
        running = replace(settings, ls_port=running_ls)
        if label_studio_is_ours(running, creds):  # two Label Studios on one data folder: never
            raise SyncError(
                f"this folder's Label Studio runs at {running.ls_url}: stop it first "
                f"(judgelab --home {settings.home} down) to start it on port {settings.ls_port}"
            )
    return settings, creds


def _sample_projects(client, backend_url: str) -> None:
    """A project per schema (made, or its instructions refreshed) with the schema's samples,
    connected to the backend and pre-annotated; a line per project says how far."""
    from judgelab.sync.backend_link import connect_backend, prediction_counts, retrieve_predictions
    from judgelab.sync.projects import ensure_project, import_rows, refresh_instructions

    for schema in all_schemas().values():
        project = ensure_project(client, schema)
        if not project.created:
            refresh_instructions(client, project.id, schema)
        rows = rows_from_records([(f"samples.json item {i}", t) for i, t in enumerate(schema.samples())], schema)
        report = import_rows(client, project.id, rows)
        link = connect_backend(client, project.id, backend_url)
        retrieve_predictions(client, project.id)
        total, done = prediction_counts(client, project.id, link.model_version)
        click.echo(
            f"  {schema.name:22} project {project.id:3}  tasks {total:3} (+{report.imported} new)  "
            f"pre-annotated {done}/{total}"
        )


def stop_command(home: Path, cwd: Path | None = None, path: str | None = None) -> str:
    """``judgelab --home HOME down`` as it runs when typed in ``cwd`` (see :func:`stack_command`)."""
    return stack_command(home, "down", cwd=cwd, path=path)


def stack_command(
    home: Path, command: str, *, url: str | None = None, cwd: Path | None = None, path: str | None = None
) -> str:
    """``judgelab --home HOME [--url URL] COMMAND`` as it runs when typed in ``cwd`` (default: here): ``judgelab``
    when the one on ``path`` (default: $PATH) is this installation's, else this installation's
    script by its path (``.venv/bin/judgelab`` after scripts/up.sh, which does not activate the
    virtual environment); paths under ``cwd`` are relative to it."""
    cwd = Path.cwd() if cwd is None else cwd
    script = Path(sys.executable).parent / "judgelab"
    found = shutil.which("judgelab", path=path)
    if not script.exists():  # run by other means: the module itself
        program = f"{shlex.quote(sys.executable)} -m judgelab.sync.cli"
    elif found and Path(found).resolve() == script.resolve():
        program = "judgelab"
    else:
        program = shlex.quote(_shown_path(script, cwd))
    where = f" --url {shlex.quote(url)}" if url else ""
    return f"{program} --home {shlex.quote(_shown_path(home, cwd))}{where} {command}"


def _shown_path(path: Path, cwd: Path) -> str:
    """``path`` relative to ``cwd`` when it lies under it, else absolute."""
    absolute = Path(os.path.normpath(cwd / path))
    try:
        return str(absolute.relative_to(os.path.normpath(cwd)))
    except ValueError:
        return str(absolute)


@main.command("down")
@click.pass_context
def down_cmd(ctx: click.Context) -> None:
    """Stop the local Label Studio and backend started by 'judgelab up'."""
    from judgelab.sync.local_stack import stop_stack

    stopped = stop_stack(ctx.obj["home"])
    click.echo(f"stopped: {', '.join(stopped) or 'nothing was running'}")


@main.command(
    "serve",
    add_help_option=False,
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.argument("backend_args", nargs=-1, type=click.UNPROCESSED)
def serve_cmd(backend_args: tuple[str, ...]) -> None:
    """Serve the ML backend: python -m judgelab.backend with these flags (judgelab serve --help)."""
    # the sync side never imports the backend: it becomes the backend's process (same pid, so
    # signals and exit codes are the backend's own)
    command = [sys.executable, "-m", "judgelab.backend", *backend_args]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, command)
