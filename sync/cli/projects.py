"""Commands on a study's projects: schemas, create, import, connect, preannotate."""

from __future__ import annotations

from pathlib import Path

import click

from judgelab.configs.schema import all_schemas, get_schema
from judgelab.sync.cli.base import _connection, _schemas, main
from judgelab.sync.client import SyncError, connect
from judgelab.sync.importers import rows_from_records


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
    from judgelab.sync.projects import ensure_project, import_rows

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
@click.option(
    "--schema", "name", help="Schema of the tasks (required for --format generic; seed formats imply theirs)."
)
@click.option("--title", help="Project title (default: the schema's).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", "generic", "wide-augmentation", "storysumm", "basse", "hotel"]),
    default="auto",
    show_default=True,
    help="File layout; auto detects the seed formats from the first record.",
)
@click.option(
    "--map",
    "maps",
    multiple=True,
    metavar="FIELD=COLUMN",
    help="Schema field from a column or a.b.c path (repeatable).",
)
@click.option("--skip-bad", is_flag=True, help="Skip bad rows (and report how many) instead of refusing the file.")
@click.option("--with-annotations", is_flag=True, help="BASSE: import the raters' ratings as their annotations.")
@click.option(
    "--annotations",
    "annotations_file",
    type=click.Path(path_type=Path),
    help="Earlier-round annotations (task,annotator,item,value rows or a Label Studio JSON export).",
)
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.pass_context
def import_cmd(
    ctx: click.Context,
    name: str | None,
    title: str | None,
    fmt: str,
    maps: tuple[str, ...],
    skip_bad: bool,
    with_annotations: bool,
    annotations_file: Path | None,
    files: tuple[Path, ...],
) -> None:
    """Import tasks from JSON, JSONL, CSV or TSV files (each file checked whole first)."""
    from judgelab.sync.file_formats import parse_mapping, read_tasks
    from judgelab.sync.import_annotations import (
        annotation_emails,
        attach_annotations,
        ensure_annotators,
        post_annotations,
        read_annotations,
    )
    from judgelab.sync.projects import ensure_project, existing_keys, import_rows

    mapping = parse_mapping(maps)
    schema = get_schema(name) if name else None
    checked = []
    for path in files:  # every file is checked before anything is imported
        file_schema, rows = read_tasks(path, schema, fmt, mapping, skip_bad=skip_bad, with_annotations=with_annotations)
        if schema is not None and file_schema.name != schema.name:
            raise SyncError(f"{path}: {file_schema.name} tasks, but the other files are {schema.name} tasks")
        schema = file_schema
        checked.append((path, rows))
        if rows.skipped:
            click.echo(f"{path}: skipped {len(rows.skipped)} bad row(s), e.g. {rows.skipped[0]}", err=True)
    assert schema is not None
    annotations = read_annotations(annotations_file, schema, skip_bad=skip_bad) if annotations_file else None
    client = connect(_connection(ctx))
    project = ensure_project(client, schema, title)
    later: list[str] = []
    if annotations is not None:
        have = existing_keys(client, project.id)
        new_rows = [row for _, rows in checked for row in rows if row.key not in have]
        unmatched = attach_annotations(new_rows, annotations)
        missing = [ref for ref in unmatched if ref not in have and not ref.isdigit()]
        if missing:
            raise SyncError(
                f"{annotations_file}: annotations for task(s) in neither the files nor project {project.id}: "
                + ", ".join(missing[:10])
            )
        later = unmatched
    ensure_annotators(client, annotation_emails(row for _, rows in checked for row in rows))
    for path, rows in checked:
        report = import_rows(client, project.id, rows)
        annotated = sum(len(row.annotations or []) for row in rows)
        click.echo(
            f"{path}: {rows.summary()}; {report.imported} imported, {report.skipped_existing} already in project "
            f"{project.id}" + (f"; {annotated} annotation(s) in the file" if annotated else "")
        )
    if annotations is not None:
        posted = post_annotations(client, project.id, annotations, later)
        click.echo(
            f"{annotations_file}: {annotations.count} annotation(s), {posted} added to existing tasks"
            + (f", {len(annotations.skipped)} bad row(s) skipped" if annotations.skipped else "")
        )


@main.command("connect")
@click.option("--backend-url", default="http://127.0.0.1:9090", show_default=True)
@click.option("--schema", "names", multiple=True)
@click.option("--basic-auth", help="user:password for the backend's HTTP basic auth.")
@click.pass_context
def connect_cmd(ctx: click.Context, backend_url: str, names: tuple[str, ...], basic_auth: str | None) -> None:
    """Connect the ML backend to the schemas' projects."""
    from judgelab.sync.backend_link import connect_backend
    from judgelab.sync.projects import ensure_project

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

    from judgelab.sync.backend_link import blind_task_ids, connect_backend, prediction_counts, retrieve_predictions
    from judgelab.sync.bulk_predict import push_predictions, tasks_missing_version
    from judgelab.sync.projects import ensure_project

    schemas = _schemas(names)
    client = connect(_connection(ctx))
    auth = tuple(basic_auth.split(":", 1)) if basic_auth else None
    for schema in schemas:
        project = ensure_project(client, schema)
        link = connect_backend(client, project.id, backend_url, auth=auth)  # type: ignore[arg-type]
        if not push:
            blind = blind_task_ids(client, project.id)
            retrieve_predictions(client, project.id, exclude=blind)
            total, done = prediction_counts(client, project.id, link.model_version)
            click.echo(
                f"{schema.name}: {done}/{total} tasks have a prediction of {link.model_version}"
                + (f" ({len(blind)} blind-arm task(s) left without one by design)" if blind else "")
            )
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
            + (f", {report.blind} blind-arm task(s) left without one by design" if report.blind else "")
            + (f", failures {report.failures}" if report.failures else "")
            + ")"
        )
