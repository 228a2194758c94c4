"""Commands on a study's projects: schemas, create, import, connect, preannotate.

Projects are named the same way everywhere (:mod:`judgelab.sync.project_ref`): ``--project ID``,
``--title TITLE``, ``--schema NAME``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from judgelab.configs.schema import all_schemas, get_schema
from judgelab.sync.cli.base import (
    DEFAULT_BACKEND_URL,
    Output,
    RegistryChoice,
    _connection,
    _schemas,
    advance,
    json_option,
    main,
    progress_bar,
    project_options,
)
from judgelab.sync.client import SyncError, connect
from judgelab.sync.importers import rows_from_records

if TYPE_CHECKING:
    from judgelab.sync.preannotate import PreannotateOptions


def _format_names() -> list[str]:
    from judgelab.sync.importers import format_names

    return format_names()


@main.command("schemas")
@json_option
def schemas_cmd(as_json: bool) -> None:
    """List the study schemas in configs/."""
    out = Output(as_json)
    listed = []
    for schema in all_schemas().values():
        seed = schema.meta.get("seed", "?")
        out.line(f"{schema.name:22} seed {seed}  {schema.language}  {schema.title}")
        listed.append({"name": schema.name, "seed": seed, "language": schema.language, "title": schema.title})
    out.result({"schemas": listed})


def _sample_rows(schema):
    return rows_from_records([(f"samples.json item {i}", t) for i, t in enumerate(schema.samples())], schema)


def overlap_option(func):
    """``--overlap N``: annotations per task, set on the project(s) the command creates or imports into."""
    return click.option(
        "--overlap",
        type=click.IntRange(min=1),
        metavar="N",
        help="Annotations per task: N annotators label every task (Label Studio's maximum_annotations, on 100% "
        "of the tasks). Default: Label Studio's 1 for a new project, unchanged for one that exists.",
    )(func)


def _set_overlap(client, project, overlap: int | None, out: Output, entry: dict) -> None:
    """Set ``overlap`` annotations per task on every task of ``project`` (when given); say so."""
    if overlap is None:
        return
    from judgelab.sync.study_design import set_overlap

    settings = set_overlap(client, project.id, overlap, 100)
    out.line(
        f"{project.schema_name}: project {project.id} {project.title!r}: {settings.maximum_annotations} "
        f"annotation(s) per task on {settings.overlap_cohort_percentage}% of tasks"
    )
    entry["overlap"] = {
        "annotations_per_task": settings.maximum_annotations,
        "percent": settings.overlap_cohort_percentage,
    }


@main.command("create")
@project_options(multiple=True, schema_help="Schema (repeatable; default: all five, each its own project).")
@click.option("--samples/--no-samples", default=False, help="Also import the schema's sample tasks.")
@overlap_option
@json_option
@click.pass_context
def create_cmd(
    ctx: click.Context,
    project_ids: tuple[int, ...],
    titles: tuple[str, ...],
    schema_names: tuple[str, ...],
    samples: bool,
    overlap: int | None,
    as_json: bool,
) -> None:
    """Create the schemas' projects, or the projects named by --title (idempotent).

    Without --title or --project, each schema gets its own project (its default title);
    --title TITLE --schema NAME creates a project of that title; --project ID checks an
    existing one (and imports the samples of its schema into it with --samples).
    """
    from judgelab.sync.project_ref import ProjectRef, ensure_named_project, require_project
    from judgelab.sync.projects import import_rows, refresh_instructions

    schemas = _schemas(schema_names)  # an unknown name is reported before connecting
    if (project_ids or titles) and len(schema_names) > 1:
        raise SyncError("with --title or --project, give at most one --schema (the projects' schema)")
    schema = get_schema(schema_names[0]) if schema_names else None
    client = connect(_connection(ctx))
    if project_ids or titles:
        found = [require_project(client, ProjectRef(project_id=i, schema=schema)) for i in project_ids]
        found += [ensure_named_project(client, ProjectRef(title=t, schema=schema)) for t in titles]
    else:
        found = [ensure_named_project(client, ProjectRef(schema=s)) for s in schemas]
    out, listed = Output(as_json), []
    for project in found:
        entry = project.as_json()
        state = "created" if project.created else "exists"
        refreshed = not project.created and project.schema and refresh_instructions(client, project.id, project.schema)
        if refreshed:  # made by an earlier judgelab with <pre> instructions
            state += ", its instructions now shown as HTML"
        line = f"{project.schema_name}: project {project.id} {project.title!r} {state}"
        if samples:
            if project.schema is None:
                raise SyncError(f"{project.label()}: its label config is none of the schemas, which have the samples")
            report = import_rows(client, project.id, _sample_rows(project.schema))
            line += f", {report.imported} sample task(s) imported, {report.skipped_existing} already there"
            entry["samples"] = {"imported": report.imported, "already": report.skipped_existing}
        out.line(line)
        _set_overlap(client, project, overlap, out, entry)
        listed.append(entry)
    out.result({"projects": listed})


@main.command("import")
@project_options(
    multiple=False,
    schema_help="Schema of the tasks (required for --format generic unless the project is named; "
    "seed formats imply theirs).",
)
@click.option(
    "--format",
    "fmt",
    type=RegistryChoice(_format_names),
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
@overlap_option
@json_option
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.pass_context
def import_cmd(
    ctx: click.Context,
    project_id: int | None,
    title: str | None,
    schema_name: str | None,
    fmt: str,
    maps: tuple[str, ...],
    skip_bad: bool,
    with_annotations: bool,
    annotations_file: Path | None,
    overlap: int | None,
    as_json: bool,
    files: tuple[Path, ...],
) -> None:
    """Import tasks from JSON, JSONL, CSV or TSV files (each file checked whole first).

    Into --project ID, or the project --title TITLE (created when absent), else the schema's own
    project. Re-running imports nothing twice: tasks are known by their key, annotations by
    their rater and result.
    """
    from judgelab.sync.importers import parse_mapping
    from judgelab.sync.importers.annotations import (
        AnnotationOutcome,
        add_missing_annotations,
        ensure_users,
        read_annotations,
        task_refs,
    )
    from judgelab.sync.project_ref import ProjectRef, ensure_named_project, find_project, require_project
    from judgelab.sync.projects import task_keys
    from judgelab.sync.state_folder import import_lock
    from judgelab.sync.sync_reads import MAX_EXPORT_IDS

    mapping = parse_mapping(maps)
    given = get_schema(schema_name) if schema_name else None
    ref = ProjectRef(project_id=project_id, title=title, schema=given)
    schema, client = given, None
    if schema is None and ref.named and _generic(files, fmt, mapping):
        # the schema of a generic file is the named project's: ask Label Studio first
        client = connect(_connection(ctx))
        schema = require_project(client, ref, needed_for="importing tasks").schema
    # annotations are attached to rows held in memory; other files are read as a stream
    checked, schema = _checked_files(files, schema, fmt, mapping, skip_bad, with_annotations, annotations_file is None)
    annotations = read_annotations(annotations_file, schema, skip_bad=skip_bad) if annotations_file else None
    conn = _connection(ctx)
    client = client or connect(conn)
    # one import at a time into a Label Studio (from this machine): what a run lists as there
    # (task keys, annotations, accounts) stays true until it has added its own
    with import_lock(conn.url, on_wait=lambda message: click.echo(message, err=True)):
        existing = find_project(client, ProjectRef(project_id, title, given or schema), needed_for="importing tasks")
        keys = task_keys(client, existing.id) if existing else {}
        have = {key for key in keys.values() if key is not None}
        annotated = annotations is not None or any(rows.annotators for _, rows in checked)
        outcome = AnnotationOutcome()
        later, where, emails, streamed = _annotations_plan(
            checked, annotations, keys, have, existing.id if existing else 0
        )
        project = existing or ensure_named_project(client, ref, schema)
        if annotated:
            ensure_users(client, emails, outcome)
        out = Output(as_json)
        files_json = _import_files(client, project, checked, have, outcome if annotated else None, out)
        if later:
            outcome.merge(add_missing_annotations(client, project.id, later, where))
        if streamed:  # the files' annotations of tasks already there, a chunk of tasks at a time
            refs = task_refs(keys)
            # a chunk: as many tasks as one export by ids reads back from Label Studio (then the
            # missing annotations are created); a re-run of a big import holds this many
            with progress_bar(streamed, f"annotations of tasks already in project {project.id}") as bar:
                for chunk, chunk_where in _annotations_of_existing(checked, have, MAX_EXPORT_IDS):
                    outcome.merge(add_missing_annotations(client, project.id, chunk, chunk_where, tasks=refs))
                    bar.update(len(chunk))
        if annotated:
            source = f"{annotations_file}: " if annotations_file else "annotations: "
            skipped = f", {len(annotations.skipped)} bad row(s) skipped" if annotations and annotations.skipped else ""
            out.line(source + outcome.summary() + skipped)
        entry = project.as_json()
        _set_overlap(client, project, overlap, out, entry)
        out.result({"project": entry, "files": files_json, "annotations": outcome.as_json()})


def _annotations_plan(checked, annotations, keys: dict, have: set[str], project_id: int):
    """``(later, where, emails, streamed)``: the annotations of tasks the project has already (added
    one by one after the import, by task key, with the file line each came from), the annotators
    whose accounts the import needs, and how many tasks already there the files hold annotations
    of (read back after the import, a chunk at a time: :func:`_annotations_of_existing`).
    Annotations naming no task are refused here, before a project or a task is created; rows are
    held only when an annotations file needs them (they were read with it), else streamed."""
    from judgelab.sync.importers.annotations import annotations_for_existing_tasks
    from judgelab.sync.importers.rows import annotator_emails, raters
    from judgelab.sync.projects import carried_annotations

    later: dict[str, list[dict]] = {}
    where: dict[str, str] = {}
    if annotations is not None:
        all_rows = [row for _, rows in checked for row in rows]
        later, where = annotations_for_existing_tasks(all_rows, annotations, keys, project_id)
        return later, where, annotator_emails(row for row in all_rows if row.key not in have), 0
    if not any(rows.annotators for _, rows in checked):
        return later, where, set(), 0
    if not have:  # all for new tasks: their annotators were noted when the files were checked
        return later, where, set().union(*(rows.annotators for _, rows in checked)), 0
    emails: set[str] = set()
    there: set[str] = set()
    for _, rows in checked:
        for key, _, carried in carried_annotations(rows):
            if key in have:
                there.add(key)
            else:
                emails |= raters(carried())
    return later, where, emails, len(there)


def _annotations_of_existing(checked, have: set[str], size: int):
    """The files' annotations of tasks the project had before the import, ``(key -> annotations,
    key -> file line)`` for ``size`` tasks at a time (read back from what the files' check wrote,
    not held)."""
    from judgelab.sync.projects import carried_annotations

    later: dict[str, list[dict]] = {}
    where: dict[str, str] = {}
    for _, rows in checked:
        for key, line, carried in carried_annotations(rows):
            if key not in have:
                continue
            if key not in later and len(later) >= size:
                yield later, where
                later, where = {}, {}
            later.setdefault(key, []).extend(carried())
            where.setdefault(key, line)
    if later:
        yield later, where


def _import_files(client, project, checked, have: set[str], outcome, out: Output) -> list[dict]:
    """Import each checked file's rows (their annotations counted into ``outcome`` when given),
    a line per file; the files' part of the ``--json`` result."""
    from judgelab.sync.projects import import_rows

    files_json = []
    total = sum(len(rows) for _, rows in checked)
    with progress_bar(total, f"import into project {project.id}") as bar:
        for index, (path, rows) in enumerate(checked):
            sent = _annotations_counted(rows, have, outcome) if outcome is not None else rows
            report = import_rows(client, project.id, sent, have=have, progress=advance(bar))
            if report.imported and index < len(checked) - 1:  # a later file may repeat a key
                have |= {row.key for row in rows}
            out.line(
                f"{path}: {rows.summary()}; {report.imported} imported, {report.skipped_existing} already in "
                f"project {project.id} {project.title!r}"
            )
            files_json.append(
                {
                    "path": str(path),
                    "tasks": len(rows),
                    "skipped_bad": len(rows.skipped),
                    "imported": report.imported,
                    "already": report.skipped_existing,
                }
            )
    return files_json


def _annotations_counted(rows, have: set[str], outcome) -> Iterator:
    """The rows as the import sends them, their annotations counted as added (those of rows the
    project has are added one by one later, and counted there)."""
    from judgelab.sync.projects import import_lines

    for line in import_lines(rows):
        if line.key not in have:
            outcome.added += line.annotations
        yield line


def _generic(files: tuple[Path, ...], fmt: str, mapping: dict[str, str]) -> bool:
    """Whether the files are read in the generic format (which needs a schema)."""
    from judgelab.sync.importers import detect_format

    if fmt != "auto":
        return fmt == "generic"
    return bool(mapping) or any(detect_format(path) == "generic" for path in files)


def _checked_files(files, schema, fmt, mapping, skip_bad, with_annotations, stream):
    """Every file read and checked (before anything is imported); the schema they share."""
    from judgelab.sync.importers import read_tasks

    checked = []
    for path in files:
        file_schema, rows = read_tasks(
            path, schema, fmt, mapping, skip_bad=skip_bad, with_annotations=with_annotations, stream=stream
        )
        if schema is not None and file_schema.name != schema.name:
            raise SyncError(f"{path}: {file_schema.name} tasks, but the other files are {schema.name} tasks")
        schema = file_schema
        checked.append((path, rows))
        if rows.skipped:
            click.echo(f"{path}: skipped {len(rows.skipped)} bad row(s), e.g. {rows.skipped[0]}", err=True)
    assert schema is not None
    return checked, schema


def _auth(basic_auth: str | None) -> tuple[str, str] | None:
    if not basic_auth:
        return None
    user, sep, password = basic_auth.partition(":")
    if not sep:
        raise SyncError("--basic-auth expects user:password")
    return user, password


_BACKEND_URL_HELP = (
    "The ML backend's URL as judgelab reaches it (env JUDGELAB_BACKEND_URL; default " + DEFAULT_BACKEND_URL + ")."
)
_LS_BACKEND_URL_HELP = (
    "The backend's URL as Label Studio reaches it, when that differs (Docker: http://judgelab-backend:9090); "
    "default: --backend-url."
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
        click.option(
            "--price-batch-in",
            multiple=True,
            metavar="PRICE|MODEL=PRICE",
            help="Money per million prompt tokens of a batch API's answers (default: half --price-in).",
        ),
        click.option(
            "--price-batch-out",
            multiple=True,
            metavar="PRICE|MODEL=PRICE",
            help="Money per million completion tokens of a batch API's answers (default: half --price-out).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _show_judges(out: Output, project, link) -> None:
    if len(link.judges) > 1 or any(j.get("samples", 1) > 1 for j in link.judges):
        for judge in link.judges:
            samples = f"{judge['samples']} sample(s)"
            out.line(f"{project.schema_name}: judge {judge['model']} ({samples}) -> {judge['model_version']}")
    if not link.judges_known:
        out.note(
            f"note: judgelab cannot reach the backend at {link.url} (only Label Studio does): judges other than the "
            f"first and the LLM's usage are not shown; give --backend-url as judgelab reaches it"
        )


@main.command("connect")
@project_options(multiple=True)
@click.option("--backend-url", envvar="JUDGELAB_BACKEND_URL", help=_BACKEND_URL_HELP)
@click.option("--ls-backend-url", help=_LS_BACKEND_URL_HELP)
@click.option("--basic-auth", help="user:password for the backend's HTTP basic auth.")
@_judge_options
@json_option
@click.pass_context
def connect_cmd(
    ctx: click.Context,
    project_ids: tuple[int, ...],
    titles: tuple[str, ...],
    schema_names: tuple[str, ...],
    backend_url: str | None,
    ls_backend_url: str | None,
    basic_auth: str | None,
    models: tuple[str, ...],
    samples: int | None,
    price_in: tuple[str, ...],
    price_out: tuple[str, ...],
    price_batch_in: tuple[str, ...],
    price_batch_out: tuple[str, ...],
    as_json: bool,
) -> None:
    """Connect the ML backend to projects (with --model/--samples/--price-*: their judges).

    Default: the schemas' own projects that exist (--schema NAME: that schema's own project). Label Studio checks
    the backend and asks it for its model version itself: judgelab does not need to reach the
    URL Label Studio is given.
    """
    from judgelab.sync.backend_client import BackendClient
    from judgelab.sync.backend_link import connect_backend, judge_params
    from judgelab.sync.project_ref import resolve_projects

    params = judge_params(models, samples, price_in, price_out, price_batch_in, price_batch_out)
    schemas = [get_schema(n) for n in schema_names]
    auth = _auth(basic_auth)
    client = connect(_connection(ctx))
    ls_url = ls_backend_url or backend_url or DEFAULT_BACKEND_URL
    out, listed = Output(as_json), []
    with BackendClient(backend_url or ls_url, auth) as backend:
        for project in resolve_projects(client, project_ids, titles, schemas, default="schemas"):
            link = connect_backend(client, project.id, ls_url, auth=auth, extra_params=params, backend=backend)
            line = f"{project.schema_name}: project {project.id} {project.title!r} -> {ls_url} ({link.model_version})"
            out.line(line)
            _show_judges(out, project, link)
            listed.append(
                {
                    **project.as_json(),
                    "backend_url": ls_url,
                    "model_version": link.model_version,
                    "model_versions": link.model_versions,
                }
            )
    out.result({"projects": listed})


def _preannotate_options(command):
    """The options of ``preannotate`` (where the backend is, how to pre-annotate, the judges, the
    budget), handed to the command as one :class:`~judgelab.sync.preannotate.PreannotateOptions`."""

    @functools.wraps(command)
    def run(
        *args,
        backend_url: str | None,
        ls_backend_url: str | None,
        push: bool,
        chunk_size: int,
        basic_auth: str | None,
        models: tuple[str, ...],
        samples: int | None,
        price_in: tuple[str, ...],
        price_out: tuple[str, ...],
        price_batch_in: tuple[str, ...],
        price_batch_out: tuple[str, ...],
        budget: float | None,
        batch: bool,
        batch_file: Path | None,
        batch_results: Path | None,
        **kwargs,
    ):
        from judgelab.sync.backend_link import judge_params
        from judgelab.sync.preannotate import PreannotateOptions

        method = "push" if push else "auto"
        routes = [(batch, "api", None), (batch_file, "file", batch_file), (batch_results, "results", batch_results)]
        chosen = [(mode, path) for given, mode, path in routes if given]
        if len(chosen) > 1:
            raise SyncError("give one of --batch, --batch-file and --batch-results")
        mode, path = chosen[0] if chosen else (None, None)
        if mode is not None and budget is not None:
            raise SyncError("--budget needs --push (a batch is sent whole; its answers are counted at the batch price)")
        # --budget's needs are checked first, then the judges and the auth
        options = PreannotateOptions(method, chunk_size, budget=budget, backend_url=backend_url)
        options = dataclasses.replace(
            options,
            ls_backend_url=ls_backend_url,
            judges=judge_params(models, samples, price_in, price_out, price_batch_in, price_batch_out),
            auth=_auth(basic_auth),
            batch=mode,
            batch_path=str(path) if path is not None else None,
        )
        return command(*args, options=options, **kwargs)

    options = [
        click.option("--backend-url", envvar="JUDGELAB_BACKEND_URL", help=_BACKEND_URL_HELP),
        click.option("--ls-backend-url", help=_LS_BACKEND_URL_HELP),
        click.option(
            "--push",
            is_flag=True,
            help="Call the backend from judgelab in chunks and import the predictions (resumable); "
            "the default does so by itself for projects too big for one 'Retrieve predictions'.",
        ),
        click.option(
            "--chunk-size",
            type=click.IntRange(min=1),
            default=100,
            show_default=True,
            help="Tasks per request when working in chunks.",
        ),
        click.option("--basic-auth", help="user:password for the backend's HTTP basic auth."),
        _judge_options,
        click.option(
            "--budget",
            type=float,
            help="With --push: stop before the run would cost more than this (at --price-in/--price-out); "
            "the tasks left are for a later run.",
        ),
        click.option(
            "--batch",
            is_flag=True,
            help="Through the LLM provider's Batch API (answered within 24 h, at the batch price): send the "
            "prompts not yet answered as one batch and return; run again to see its progress, or to collect it "
            "and push the predictions.",
        ),
        click.option(
            "--batch-file",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Write the prompts not yet answered as a batch requests file (JSONL, for vllm run-batch or "
            "any tool of OpenAI's batch format) instead of sending them.",
        ),
        click.option(
            "--batch-results",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Read a batch results file (vllm run-batch's output) and push the predictions it answers.",
        ),
    ]
    for option in reversed(options):
        run = option(run)
    return run


@main.command("preannotate")
@project_options(multiple=True)
@_preannotate_options
@json_option
@click.pass_context
def preannotate_cmd(
    ctx: click.Context,
    project_ids: tuple[int, ...],
    titles: tuple[str, ...],
    schema_names: tuple[str, ...],
    options: PreannotateOptions,
    as_json: bool,
) -> None:
    """Pre-annotate every task without a prediction of the backend's current model version(s).

    Projects as for connect. A project already connected keeps the URL Label Studio has for its
    backend unless --ls-backend-url is given; one that is not is connected as 'connect' would.
    Up to 200 tasks go in one Label Studio "Retrieve predictions"; more are sent in chunks with
    a progress bar (--push, or Label Studio in chunks when judgelab cannot reach the backend).
    Prints the tokens the LLM used in this run and, with prices, what they cost. --batch,
    --batch-file and --batch-results go through a batch API instead (docs: LLM pre-annotation).
    """
    from judgelab.sync.backend_link import connect_backend, linked_backend
    from judgelab.sync.preannotate import preannotate_project
    from judgelab.sync.project_ref import resolve_projects
    from judgelab.sync.state_folder import preannotate_lock

    schemas = [get_schema(n) for n in schema_names]
    conn = _connection(ctx)
    client = connect(conn)
    out, listed = Output(as_json), []
    requests: list[dict] = []  # --batch-file: every project's request lines, written at the end
    for project in resolve_projects(client, project_ids, titles, schemas, default="schemas"):
        current = linked_backend(client, project.id)
        # a project's connection stays as it is unless --ls-backend-url (or 'connect') changes it
        ls_url = options.ls_backend_url or (current.url if current else None) or options.backend_url
        ls_url = ls_url or DEFAULT_BACKEND_URL
        # one run at a time per project (from this machine): two would connect it and list its
        # unpredicted tasks side by side, and both predict and import them
        one_run = preannotate_lock(conn.url, project.id, on_wait=lambda message: click.echo(message, err=True))
        with one_run, options.backend_for(ls_url) as backend:
            link = connect_backend(
                client, project.id, ls_url, auth=options.auth, extra_params=options.judges, backend=backend
            )
            _show_judges(out, project, link)
            with progress_bar(None, f"project {project.id}") as bar:
                report = preannotate_project(
                    client,
                    project.id,
                    link.model_versions,
                    options,
                    backend=backend,
                    extra_params=link.extra_params,
                    on_plan=lambda n, bar=bar: bar.reset(total=n),
                    progress=advance(bar),
                )
        _say_preannotated(out, project, report, options.budget)
        if report.batch is not None:
            for line in report.batch.lines_to_say(report.unfinished):
                out.line(f"{project.schema_name}: project {project.id}: {line}")
            seen = {line["custom_id"] for line in requests}
            requests += [line for line in report.batch.lines if line["custom_id"] not in seen]
        entry = {**project.as_json(), **report.as_json()}
        if (usage := report.usage) is not None:
            out.line(f"{project.schema_name}: LLM usage of this run: {usage.describe()}")
            entry["usage"] = {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}
            entry["usage"] |= {"requests": usage.requests, "cached": usage.cached, "cost": usage.cost}
            entry["usage"] |= {"unreported": usage.unreported, "estimated_tokens": usage.estimated_tokens}
            entry["usage"] |= {"estimated_cost": usage.estimated_cost}
        listed.append(entry)
    result: dict = {"projects": listed}
    if options.batch == "file":
        _write_batch_file(out, Path(str(options.batch_path)), requests)
        result["requests_file"] = {"path": str(options.batch_path), "requests": len(requests)}
    out.result(result)


def _write_batch_file(out: Output, path: Path, requests: list[dict]) -> None:
    from judgelab.sync.batch_predict import write_requests

    write_requests(path, requests)
    if not requests:
        out.line(f"{path}: no request to write (every task left has its answers)")
        return
    models = sorted({line["body"]["model"] for line in requests})
    out.line(
        f"wrote {len(requests)} request(s) to {path}; answer them with e.g. `vllm run-batch -i {path} -o results.jsonl "
        f"--model {models[0]}` (one run per model: {', '.join(models)}), then run judgelab preannotate "
        "--batch-results results.jsonl"
    )


HOW = {
    "retrieve": "via Label Studio's 'Retrieve predictions'",
    "push": "pushed by judgelab in chunks",
    "chunks": "via 'Retrieve predictions' in chunks",
    "batch": "from the answers the backend holds (cache and batch APIs)",
}


def _say_preannotated(out: Output, project, report, budget: float | None) -> None:
    name = f"{project.schema_name}: project {project.id} {project.title!r}"
    failures = f", failures {report.failures}" if report.failures else ""
    how = HOW[report.method]
    if report.method in ("push", "batch") or len(report.model_versions) == 1:
        versions = ", ".join(report.model_versions)
        added = f"{report.added} prediction{'' if report.added == 1 else 's'}"
        out.line(
            f"{name}: {report.predicted}/{report.tasks} tasks have a prediction of {versions} {how}; this run added "
            f"{added}, {report.unfinished} task(s) still without one{failures}"
        )
    else:  # Label Studio's own action: one line per judge
        for version, done in report.per_version.items():
            out.line(f"{name}: {done}/{report.tasks} tasks have a prediction of {version} {how}")
        if len(set(report.per_version.values())) > 1:
            out.line(f"{name}: some judges lack tasks; 'preannotate --push' completes them")
    if report.seconds and report.added:
        took = report.seconds
        out.line(
            f"{name}: time spent: Label Studio reading tasks {took['reading']:.1f} s, the backend predicting "
            f"{took['predicting']:.1f} s, Label Studio checking and importing predictions {took['importing']:.1f} s "
            "(the backend predicts some chunks while Label Studio imports those before and reads those after, in turn)"
        )
    if report.blind:
        out.line(f"{name}: {report.blind} blind-arm task(s) left without one by design")
    if report.budget_stopped:
        out.line(
            f"{name}: stopped before passing the budget of {budget:g}; {report.unfinished} task(s) left for a later run"
        )
