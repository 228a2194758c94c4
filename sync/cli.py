"""The ``judgelab`` command line.

Library code raises :class:`~sync.client.SyncError` (and friends); only this module turns
them into messages and exit codes (1 for a problem the user must fix).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import click

from backend.schemas import Schema, SchemaError, all_schemas, get_schema
from sync.client import Connection, SyncError, connect
from sync.importers import read_task_file, rows_from_records

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


def _connection(ctx: click.Context) -> Connection:
    """--url/--token, else JUDGELAB_LS_URL/JUDGELAB_LS_TOKEN, else the local stack's login."""
    url, token = ctx.obj.get("url"), ctx.obj.get("token")
    conn = Connection.from_env(url, token)
    if not conn.token:
        from sync.local_stack import StackSettings, load_credentials

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
    ctx.obj = {"url": url, "token": token, "home": home}


@main.command("schemas")
def schemas_cmd() -> None:
    """List the study schemas in configs/."""
    for schema in all_schemas().values():
        click.echo(f"{schema.name:22} seed {schema.meta.get('seed', '?')}  {schema.language}  {schema.title}")


@main.command("create")
@click.option("--schema", "names", multiple=True, help="Schema name (repeatable); default: all.")
@click.option("--samples/--no-samples", default=False, help="Also import the schema's sample tasks.")
@click.pass_context
def create_cmd(ctx: click.Context, names: tuple[str, ...], samples: bool) -> None:
    """Create a project per schema (idempotent)."""
    from sync.projects import ensure_project, import_rows

    schemas = _schemas(names)  # an unknown name is reported before connecting
    client = connect(_connection(ctx))
    for schema in schemas:
        project = ensure_project(client, schema)
        line = f"{schema.name}: project {project.id} {'created' if project.created else 'exists'}"
        if samples:
            rows = rows_from_records([(f"samples.json item {i}", t) for i, t in enumerate(schema.samples())], schema)
            report = import_rows(client, project.id, rows)
            line += f", {report.imported} sample task(s) imported, {report.skipped_existing} already there"
        click.echo(line)


@main.command("import")
@click.option("--schema", "name", required=True, help="Schema of the tasks.")
@click.option("--title", help="Project title (default: the schema's).")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.pass_context
def import_cmd(ctx: click.Context, name: str, title: str | None, files: tuple[Path, ...]) -> None:
    """Import tasks from JSON, JSONL or CSV files (each file checked whole first)."""
    from sync.projects import ensure_project, import_rows

    schema = get_schema(name)
    checked = [(path, read_task_file(path, schema)) for path in files]  # all files checked before any import
    client = connect(_connection(ctx))
    project = ensure_project(client, schema, title)
    for path, rows in checked:
        report = import_rows(client, project.id, rows)
        click.echo(f"{path}: {report.imported} imported, {report.skipped_existing} already in project {project.id}")


@main.command("connect")
@click.option("--backend-url", default="http://127.0.0.1:9090", show_default=True)
@click.option("--schema", "names", multiple=True)
@click.option("--basic-auth", help="user:password for the backend's HTTP basic auth.")
@click.pass_context
def connect_cmd(ctx: click.Context, backend_url: str, names: tuple[str, ...], basic_auth: str | None) -> None:
    """Connect the ML backend to the schemas' projects."""
    from sync.backend_link import connect_backend
    from sync.projects import ensure_project

    schemas = _schemas(names)
    client = connect(_connection(ctx))
    auth = tuple(basic_auth.split(":", 1)) if basic_auth else None
    for schema in schemas:
        project = ensure_project(client, schema)
        link = connect_backend(client, project.id, backend_url, auth=auth)  # type: ignore[arg-type]
        click.echo(f"{schema.name}: project {project.id} -> {backend_url} ({link.model_version})")


@main.command("preannotate")
@click.option("--schema", "names", multiple=True)
@click.option("--backend-url", default="http://127.0.0.1:9090", show_default=True)
@click.option(
    "--push",
    is_flag=True,
    help="Big projects: call the backend in chunks and import the predictions "
    "through the SDK (resumable) instead of Label Studio's one-request 'Retrieve predictions'.",
)
@click.option("--chunk-size", default=50, show_default=True, help="Tasks per backend request with --push.")
@click.option("--basic-auth", help="user:password for the backend's HTTP basic auth.")
@click.pass_context
def preannotate_cmd(
    ctx: click.Context, names: tuple[str, ...], backend_url: str, push: bool, chunk_size: int, basic_auth: str | None
) -> None:
    """Pre-annotate every task that has no prediction of the backend's current model version."""
    from tqdm import tqdm

    from sync.backend_link import connect_backend, prediction_counts, retrieve_predictions
    from sync.bulk_predict import push_predictions, tasks_missing_version
    from sync.projects import ensure_project

    schemas = _schemas(names)
    client = connect(_connection(ctx))
    auth = tuple(basic_auth.split(":", 1)) if basic_auth else None
    for schema in schemas:
        project = ensure_project(client, schema)
        link = connect_backend(client, project.id, backend_url, auth=auth)  # type: ignore[arg-type]
        if not push:
            retrieve_predictions(client, project.id)
            total, done = prediction_counts(client, project.id, link.model_version)
            click.echo(f"{schema.name}: {done}/{total} tasks have a prediction of {link.model_version}")
            continue
        missing, total = tasks_missing_version(client, project.id, link.model_version)
        with tqdm(total=len(missing), desc=schema.name, unit="task") as bar:
            report = push_predictions(
                client,
                project.id,
                backend_url,
                link.model_version,
                chunk_size=chunk_size,
                auth=auth,  # type: ignore[arg-type]
                progress=bar.update,
            )
        click.echo(
            f"{schema.name}: {report.already + report.pushed}/{report.tasks} tasks have a prediction of "
            f"{report.model_version} ({report.pushed} new, {report.unfinished} unfinished"
            + (f", failures {report.failures}" if report.failures else "")
            + ")"
        )


@main.command("sync")
@click.option("--out", type=click.Path(path_type=Path), default=Path("judgelab-data"), show_default=True)
@click.option("--format", "fmt", type=click.Choice(["parquet", "sqlite"]), default="parquet", show_default=True)
@click.option("--project", "project_ids", type=int, multiple=True, help="Project id (default: all judgelab projects).")
@click.pass_context
def sync_cmd(ctx: click.Context, out: Path, fmt: str, project_ids: tuple[int, ...]) -> None:
    """Export annotations and predictions into tidy tables."""
    from sync.export import pull_tables, write_tables

    client = connect(_connection(ctx))
    tables = pull_tables(client, list(project_ids) or None)
    paths = write_tables(tables, out, fmt)
    click.echo(
        f"{len(tables.tasks)} tasks, {len(tables.judgments)} judgments, {len(tables.spans)} spans -> "
        + ", ".join(map(str, paths))
    )


@main.command("report")
@click.option(
    "--tables", "tables_dir", type=click.Path(path_type=Path), default=Path("judgelab-data"), show_default=True
)
@click.option("--out", type=click.Path(path_type=Path), default=Path("judgelab-report"), show_default=True)
def report_cmd(tables_dir: Path, out: Path) -> None:
    """Agreement and quality report (HTML, Markdown, CSV) from synced tables."""
    from analysis.report import build_report
    from sync.export import read_tables

    tables = read_tables(tables_dir)
    schemas = {name: schema.meta for name, schema in all_schemas().items()}
    paths = build_report(tables.as_dict(), schemas, out)
    click.echo(f"report written: {paths}")


@main.command("up")
@click.option("--ls-port", default=8080, show_default=True)
@click.option("--backend-port", default=9090, show_default=True)
@click.pass_context
def up_cmd(ctx: click.Context, ls_port: int, backend_port: int) -> None:
    """Start Label Studio and the backend, create the five projects with their samples, pre-annotate."""
    from sync.backend_link import connect_backend, prediction_counts, retrieve_predictions
    from sync.local_stack import StackSettings, load_credentials, start_backend, start_label_studio
    from sync.projects import ensure_project, import_rows

    settings = StackSettings(home=ctx.obj["home"], ls_port=ls_port, backend_port=backend_port)
    creds = load_credentials(settings.home)
    click.echo(f"Label Studio at {settings.ls_url} (a first start migrates the database: 1-3 minutes)...")
    started = start_label_studio(settings, creds)
    click.echo("  started" if started else "  already running: reused")
    started = start_backend(settings)
    click.echo(f"ML backend at {settings.backend_url}: {'started' if started else 'already running: reused'}")
    client = connect(Connection(url=settings.ls_url, token=creds.token))
    for schema in all_schemas().values():
        project = ensure_project(client, schema)
        rows = rows_from_records([(f"samples.json item {i}", t) for i, t in enumerate(schema.samples())], schema)
        report = import_rows(client, project.id, rows)
        link = connect_backend(client, project.id, settings.backend_url)
        retrieve_predictions(client, project.id)
        total, done = prediction_counts(client, project.id, link.model_version)
        click.echo(
            f"  {schema.name:22} project {project.id:3}  tasks {total:3} (+{report.imported} new)  "
            f"pre-annotated {done}/{total}"
        )
    click.secho(f"\nOpen {settings.ls_url}/projects/", fg="green", bold=True)
    click.echo(f"Log in as {creds.username} / {creds.password}   (API token in {settings.home / 'credentials.json'})")
    click.echo(f"Stop the servers with: judgelab --home {settings.home} down")


@main.command("down")
@click.pass_context
def down_cmd(ctx: click.Context) -> None:
    """Stop the local Label Studio and backend started by 'judgelab up'."""
    from sync.local_stack import stop_stack

    stopped = stop_stack(ctx.obj["home"])
    click.echo(f"stopped: {', '.join(stopped) or 'nothing was running'}")


if __name__ == "__main__":
    main()
