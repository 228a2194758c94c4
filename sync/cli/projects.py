"""Commands on a study's projects: schemas, create, import, connect, preannotate."""

from __future__ import annotations

from pathlib import Path

import click

from judgelab.configs.schema import all_schemas, get_schema
from judgelab.sync.cli.base import _connection, _schemas, main
from judgelab.sync.client import SyncError, connect
from judgelab.sync.importers import rows_from_records


class _FormatChoice(click.Choice):
    """The import formats of the importers' registry, asked for only when a value is checked or
    the help is shown (the registry imports every format module)."""

    def __init__(self) -> None:
        super().__init__(())

    @property  # type: ignore[override]
    def choices(self) -> tuple[str, ...]:
        from judgelab.sync.importers import format_names

        return tuple(format_names())

    @choices.setter
    def choices(self, value: object) -> None:  # click's __init__ sets it; the registry decides
        pass


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
    type=_FormatChoice(),
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
    from judgelab.sync.importers import parse_mapping, read_tasks
    from judgelab.sync.importers.annotations import (
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
        file_schema, rows = read_tasks(
            path,
            schema,
            fmt,
            mapping,
            skip_bad=skip_bad,
            with_annotations=with_annotations,
            stream=annotations_file is None,  # annotations are attached to rows held in memory
        )
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
    ensure_annotators(client, set().union(*(rows.annotators for _, rows in checked)))
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


def _judge_options(command):
    """--model, --samples, --price-in, --price-out: the project's judges (the LLM backend)."""
    options = [
        click.option(
            "--model",
            "models",
            multiple=True,
            help="A judge: a model the LLM backend serves (repeatable: several judges, each with its own "
            "model_version). Default: the backend's JUDGELAB_LLM_MODEL.",
        ),
        click.option(
            "--samples",
            type=int,
            help="Answers per task and judge; the majority becomes the prediction and the share that agreed "
            "its score (self-consistency; use a temperature above 0).",
        ),
        click.option(
            "--price-in",
            multiple=True,
            metavar="PRICE|MODEL=PRICE",
            help="Money per million prompt tokens (repeatable as MODEL=PRICE).",
        ),
        click.option(
            "--price-out",
            multiple=True,
            metavar="PRICE|MODEL=PRICE",
            help="Money per million completion tokens (repeatable as MODEL=PRICE).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _show_judges(schema_name: str, link) -> None:
    if len(link.judges) > 1 or any(j.get("samples", 1) > 1 for j in link.judges):
        for judge in link.judges:
            click.echo(
                f"{schema_name}: judge {judge['model']} ({judge['samples']} sample(s)) -> {judge['model_version']}"
            )


@main.command("connect")
@click.option("--backend-url", envvar="JUDGELAB_BACKEND_URL", default="http://127.0.0.1:9090", show_default=True)
@click.option("--schema", "names", multiple=True)
@click.option("--basic-auth", help="user:password for the backend's HTTP basic auth.")
@_judge_options
@click.pass_context
def connect_cmd(
    ctx: click.Context,
    backend_url: str,
    names: tuple[str, ...],
    basic_auth: str | None,
    models: tuple[str, ...],
    samples: int | None,
    price_in: tuple[str, ...],
    price_out: tuple[str, ...],
) -> None:
    """Connect the ML backend to the schemas' projects (with --model/--samples/--price-*: their judges)."""
    from judgelab.sync.backend_link import connect_backend, judge_params
    from judgelab.sync.projects import ensure_project

    params = judge_params(models, samples, price_in, price_out)
    schemas = _schemas(names)
    client = connect(_connection(ctx))
    auth = tuple(basic_auth.split(":", 1)) if basic_auth else None
    for schema in schemas:
        project = ensure_project(client, schema)
        link = connect_backend(client, project.id, backend_url, auth=auth, extra_params=params)  # type: ignore[arg-type]
        click.echo(f"{schema.name}: project {project.id} -> {backend_url} ({link.model_version})")
        _show_judges(schema.name, link)


@main.command("preannotate")
@click.option("--schema", "names", multiple=True)
@click.option("--backend-url", envvar="JUDGELAB_BACKEND_URL", default="http://127.0.0.1:9090", show_default=True)
@click.option(
    "--push",
    is_flag=True,
    help="Big projects: call the backend in chunks and import the predictions "
    "through the SDK (resumable) instead of Label Studio's one-request 'Retrieve predictions'.",
)
@click.option("--chunk-size", default=50, show_default=True, help="Tasks per backend request with --push.")
@click.option("--basic-auth", help="user:password for the backend's HTTP basic auth.")
@_judge_options
@click.option(
    "--budget",
    type=float,
    help="With --push: stop before the run would cost more than this (at --price-in/--price-out); "
    "the tasks left are for a later run.",
)
@click.pass_context
def preannotate_cmd(
    ctx: click.Context,
    names: tuple[str, ...],
    backend_url: str,
    push: bool,
    chunk_size: int,
    basic_auth: str | None,
    models: tuple[str, ...],
    samples: int | None,
    price_in: tuple[str, ...],
    price_out: tuple[str, ...],
    budget: float | None,
) -> None:
    """Pre-annotate every task that has no prediction of the backend's current model version(s).

    Prints the tokens the LLM used in this run and, with prices, what they cost.
    """
    from tqdm import tqdm

    from judgelab.sync.backend_link import (
        backend_usage,
        blind_task_ids,
        connect_backend,
        judge_params,
        prediction_counts_by_version,
        retrieve_predictions,
    )
    from judgelab.sync.bulk_predict import Budget, push_predictions, tasks_missing_version
    from judgelab.sync.projects import ensure_project

    if budget is not None and not push:
        raise SyncError(
            "--budget needs --push (Label Studio's 'Retrieve predictions' is one request that cannot stop half-way)"
        )
    if budget is not None and budget <= 0:
        raise SyncError("--budget must be more than 0")
    params = judge_params(models, samples, price_in, price_out)
    schemas = _schemas(names)
    client = connect(_connection(ctx))
    auth = tuple(basic_auth.split(":", 1)) if basic_auth else None
    for schema in schemas:
        project = ensure_project(client, schema)
        link = connect_backend(client, project.id, backend_url, auth=auth, extra_params=params)  # type: ignore[arg-type]
        _show_judges(schema.name, link)
        stored = link.extra_params or {}
        if budget is not None and ("price_in" not in stored or "price_out" not in stored):
            raise SyncError("--budget needs --price-in and --price-out (per million tokens)")
        before = backend_usage(backend_url, project.id, auth)  # type: ignore[arg-type]

        def spent(project_id=project.id, since=before.last_id if before else 0):
            return backend_usage(backend_url, project_id, auth, after=since)  # type: ignore[arg-type]

        if not push:
            blind = blind_task_ids(client, project.id)  # the backend would answer them without one anyway
            retrieve_predictions(client, project.id, exclude=blind)
            total, counts = prediction_counts_by_version(client, project.id, link.model_versions)
            for version, done in counts.items():
                click.echo(f"{schema.name}: {done}/{total} tasks have a prediction of {version}")
            if blind:
                click.echo(f"{schema.name}: {len(blind)} blind-arm task(s) left without one by design")
            if len(counts) > 1 and len(set(counts.values())) > 1:
                click.echo(f"{schema.name}: some judges lack tasks; 'preannotate --push' completes them")
        else:
            missing, total = tasks_missing_version(client, project.id, link.model_versions)
            with tqdm(total=len(missing), desc=schema.name, unit="task") as bar:
                report = push_predictions(
                    client,
                    project.id,
                    backend_url,
                    link.model_versions,
                    chunk_size=chunk_size,
                    auth=auth,  # type: ignore[arg-type]
                    progress=bar.update,
                    extra_params=link.extra_params,
                    budget=Budget(budget, spent) if budget is not None else None,
                )
            versions = ", ".join(report.model_versions)
            click.echo(
                f"{schema.name}: {report.tasks - report.unfinished - report.blind}/{report.tasks} tasks have a "
                f"prediction of {versions} ({report.pushed} new, {report.unfinished} unfinished"
                + (f", {report.blind} blind-arm task(s) left without one by design" if report.blind else "")
                + (f", failures {report.failures}" if report.failures else "")
                + ")"
            )
            if report.budget_stopped:
                click.echo(
                    f"{schema.name}: stopped before passing the budget of {budget:g}; "
                    f"{report.unfinished} task(s) left for a later run"
                )
        if before is not None:
            usage = spent()
            if usage is not None:
                click.echo(f"{schema.name}: LLM usage of this run: {usage.describe()}")
