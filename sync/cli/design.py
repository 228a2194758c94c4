"""Study design: judgelab design batches|qualification|groups|pilot|sample|arms|overlap."""

from __future__ import annotations

from pathlib import Path

import click

from judgelab.configs.schema import Schema, get_schema
from judgelab.sync.cli.base import (
    Output,
    RegistryChoice,
    _Cli,
    _connection,
    _fail,
    advance,
    json_option,
    main,
    progress_bar,
    project_options,
)
from judgelab.sync.cli.projects import _format_names
from judgelab.sync.client import SyncError, connect
from judgelab.sync.importers import rows_from_records

# --- study design ------------------------------------------------------------------------


class _DesignCli(_Cli):
    def invoke(self, ctx: click.Context):
        from judgelab.sync.study_design import StudyDesignError

        try:
            return super().invoke(ctx)
        except StudyDesignError as exc:
            _fail(str(exc))


def design_input_options(func):
    """``--schema``, ``--format`` and ``--map``: a task file is read as ``judgelab import`` reads it."""
    func = click.option(
        "--map", "maps", multiple=True, metavar="FIELD=COLUMN", help="Schema field from a column (as for import)."
    )(func)
    func = click.option(
        "--format",
        "fmt",
        type=RegistryChoice(_format_names),
        default="auto",
        show_default=True,
        help="File layout, as for import (seed formats imply their schema).",
    )(func)
    return click.option(
        "--schema", "schema_name", help="Schema of the tasks (default: implied by the format, or by the fields)."
    )(func)


def _design_tasks(
    path: Path | None, schema: Schema | None, fmt: str = "auto", maps: tuple[str, ...] = ()
) -> tuple[Schema | None, list[dict]]:
    """The tasks of a file read as ``judgelab import`` reads it (checked against the schema) as
    ``{"data": ...}`` dicts, derived fields left out (the import derives them again)."""
    from judgelab.sync.importers import detect_format, parse_mapping, read_tasks
    from judgelab.sync.importers.records import iter_records
    from judgelab.sync.study_design import schemas_fitting

    if path is None:
        return schema, []
    mapping = parse_mapping(maps)
    if schema is None and (fmt == "generic" or (fmt == "auto" and (mapping or detect_format(path) == "generic"))):
        first = next(iter_records(Path(path)), None)
        fitting = schemas_fitting(first[1]) if first else []
        if len(fitting) != 1:
            fits = f"its fields fit {', '.join(s.name for s in fitting)}" if fitting else "its fields fit no schema"
            raise SyncError(f"{Path(path).name}: give --schema ({fits})")
        schema = fitting[0]
    schema, rows = read_tasks(Path(path), schema, fmt, mapping)  # held in memory: the design reorders them
    derived = set(schema.meta.get("derived_fields") or {})
    return schema, [{"data": {k: v for k, v in row.data.items() if k not in derived}} for row in rows]


def _write_design_tasks(path: Path, tasks: list[dict]) -> None:
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(tasks, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def _import_design_project(ctx: click.Context, schema: Schema, title: str, tasks: list[dict]) -> int:
    """Ensure the project ``title`` of ``schema`` and import ``tasks`` (idempotent); its id."""
    from judgelab.sync.project_ref import ProjectRef, ensure_named_project
    from judgelab.sync.projects import import_rows

    rows = rows_from_records([(f"task {i}", t) for i, t in enumerate(tasks)], schema)
    client = connect(_connection(ctx))
    project = ensure_named_project(client, ProjectRef(title=title, schema=schema))
    report = import_rows(client, project.id, rows)
    click.echo(
        f"project {project.id} {title!r} {'created' if project.created else 'exists'}: "
        f"{report.imported} task(s) imported, {report.skipped_existing} already there"
    )
    return project.id


def _schema_of(name: str | None) -> Schema | None:
    return get_schema(name) if name else None


def _checked_design(problem: str | None) -> None:
    from judgelab.sync.study_design import StudyDesignError

    if problem:
        raise StudyDesignError(problem)


def _tasks_with_checks(
    tasks_file: Path, checks_file: Path | None, schema_name: str | None, fmt: str, maps: tuple[str, ...]
) -> tuple[Schema, list[dict], list[dict], tuple[str, str]]:
    """(schema, tasks, attention checks, (text field, span control) of the checks) for the helpers
    that add attention checks, refusing a schema whose tasks cannot carry them."""
    from judgelab.sync.study_design import checks_problem, checks_span

    schema, tasks = _design_tasks(tasks_file, _schema_of(schema_name), fmt, maps)
    assert schema is not None
    _checked_design(checks_problem(schema))
    _, checks = _design_tasks(checks_file, schema, "generic")
    return schema, tasks, checks, checks_span(schema) or ("", "")


@main.group("design", cls=_DesignCli)
def design_group() -> None:
    """Study design: attention checks, qualification, groups A/B, pilot, anchoring arms, overlap.

    Task files are read as 'judgelab import' reads them (--format, --map, --schema) and checked
    against their schema first; each helper says what it does for that schema and refuses a
    schema it cannot serve. The design is written into each task's data (batch, position,
    check, reference_*, qualification, group, pilot, arm), which the tidy tables and the report
    read.
    """


@design_group.command("batches")
@click.argument("tasks_file", type=click.Path(path_type=Path))
@click.option("--checks", "checks_file", type=click.Path(path_type=Path), help="Attention checks (tasks with 'check').")
@click.option("--batch-size", default=10, show_default=True, help="Tasks per batch, the two checks included.")
@click.option("--by", help="Keep tasks with the same value of this field together (e.g. model).")
@click.option("--shuffle", is_flag=True, help="Shuffle the tasks (seeded) before batching.")
@click.option("--seed", default=0, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), required=True)
@design_input_options
def design_batches_cmd(
    tasks_file: Path,
    checks_file: Path | None,
    batch_size: int,
    by: str | None,
    shuffle: bool,
    seed: int,
    out: Path,
    schema_name: str | None,
    fmt: str,
    maps: tuple[str, ...],
) -> None:
    """Batches with one error-free and one obvious-Incorrect attention check each (seed 004).

    Needs a schema with a 'check' field and an 'Incorrect' error-span label (hotel_spans).
    """
    from judgelab.sync.study_design import make_batches

    schema, tasks, checks, (field, control) = _tasks_with_checks(tasks_file, checks_file, schema_name, fmt, maps)
    if by and by not in schema.data_fields:
        raise SyncError(f"--by {by}: not a data field of schema {schema.name} ({', '.join(schema.data_fields)})")
    batched = make_batches(tasks, checks, batch_size=batch_size, seed=seed, by=by, shuffle=shuffle, text_field=field)
    _write_design_tasks(out, batched)
    n_batches = len({t.get("data", t)["batch"] for t in batched})
    click.echo(
        f"{out}: {len(batched)} task(s) of {schema.name} in {n_batches} batch(es), 2 attention checks each "
        f"(one error_free, one obvious_incorrect whose reference is an 'Incorrect' span of {control!r} in "
        f"{field!r}; the report scores them per annotator)"
    )


@design_group.command("qualification")
@click.argument("tasks_file", type=click.Path(path_type=Path))
@click.option("--checks", "checks_file", type=click.Path(path_type=Path), help="Attention checks (tasks with 'check').")
@click.option("--new", "n_new", default=3, show_default=True, help="New examples besides the two checks.")
@click.option("--seed", default=0, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="The qualification examples.")
@click.option("--rest", type=click.Path(path_type=Path), help="The tasks left after setting the new examples aside.")
@design_input_options
def design_qualification_cmd(
    tasks_file: Path,
    checks_file: Path | None,
    n_new: int,
    seed: int,
    out: Path,
    rest: Path | None,
    schema_name: str | None,
    fmt: str,
    maps: tuple[str, ...],
) -> None:
    """Qualification batch: the two attention checks and new examples with reference answers.

    Needs a schema with a 'check' field and an 'Incorrect' error-span label (hotel_spans).
    """
    from judgelab.sync.study_design import qualification_batch, task_data

    schema, tasks, checks, (field, _control) = _tasks_with_checks(tasks_file, checks_file, schema_name, fmt, maps)
    result = qualification_batch(tasks, checks, n_new=n_new, seed=seed, text_field=field)
    _write_design_tasks(out, result.tasks)
    if rest is not None:
        _write_design_tasks(rest, result.remaining)
    answers = ", ".join(f"{task_data(t).get('id')}={task_data(t).get('reference_answer')}" for t in result.tasks)
    click.echo(f"{out}: {len(result.tasks)} qualification example(s) of {schema.name}, scored 0-5: {answers}")


@design_group.command("groups")
@click.argument("tasks_file", type=click.Path(path_type=Path))
@click.option("--unit", type=click.Choice(["batch", "task"]), default="batch", show_default=True)
@click.option("--alternate", is_flag=True, help="A, B, A, B... instead of a seeded balanced assignment.")
@click.option("--both", is_flag=True, help="Every task once per group (one annotator of each group per task).")
@click.option("--seed", default=0, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), required=True)
@click.option("--split-projects", is_flag=True, help="One Label Studio project per group, with its tasks.")
@click.option("--title", help="Base project title (default: the schema's).")
@design_input_options
@click.pass_context
def design_groups_cmd(
    ctx: click.Context,
    tasks_file: Path,
    unit: str,
    alternate: bool,
    both: bool,
    seed: int,
    out: Path,
    split_projects: bool,
    title: str | None,
    schema_name: str | None,
    fmt: str,
    maps: tuple[str, ...],
) -> None:
    """Assign tasks to groups A/B (the wording of the no-errors box, seed 004).

    Needs a schema with a 'group' field (hotel_spans). Label Studio's community edition cannot
    assign tasks to users: with --split-projects each group gets its own project
    "<title> (group A)" / "(group B)"; give each annotator the project of their group.
    """
    from judgelab.sync.study_design import assign_groups, groups_problem, split_by_group, suffixed_title

    schema, tasks = _design_tasks(tasks_file, _schema_of(schema_name), fmt, maps)
    assert schema is not None
    _checked_design(groups_problem(schema))
    derived = schema.meta.get("derived_fields") or {}
    stale = [name for name, rule in derived.items() if rule.get("from") == "group"]
    tasks = assign_groups(tasks, unit=unit, alternate=alternate, both=both, seed=seed, stale_fields=stale)
    _write_design_tasks(out, tasks)
    by_group = split_by_group(tasks)
    click.echo(
        f"{out}: {schema.name} tasks, "
        + ", ".join(f"group {g}: {len(ts)} task(s)" for g, ts in by_group.items())
        + (f" (the group decides {', '.join(stale)})" if stale else "")
    )
    if split_projects:
        for group, group_tasks in by_group.items():
            _import_design_project(ctx, schema, suffixed_title(title or schema.title, f"group {group}"), group_tasks)


@design_group.command("pilot")
@click.argument("tasks_file", type=click.Path(path_type=Path))
@click.option("--size", type=int, help="Pilot size (default: the schema's agreement_targets.pilot_size, else 30).")
@click.option("--strata", help="Comma-separated fields (default: those of model, augmentation_type the schema has).")
@click.option("--seed", default=0, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), required=True)
@click.option("--only", is_flag=True, help="Write only the pilot tasks (default: all, marked pilot true/false).")
@click.option("--pilot-project", is_flag=True, help="Import the pilot into its own project '<title> (pilot)'.")
@click.option("--annotations-per-task", default=2, show_default=True, help="Overlap of the pilot project.")
@click.option("--title", help="Base project title (default: the schema's).")
@design_input_options
@click.pass_context
def design_pilot_cmd(
    ctx: click.Context,
    tasks_file: Path,
    size: int | None,
    strata: str | None,
    seed: int,
    out: Path,
    only: bool,
    pilot_project: bool,
    annotations_per_task: int,
    title: str | None,
    schema_name: str | None,
    fmt: str,
    maps: tuple[str, ...],
) -> None:
    """Seeded pilot subset, stratified (seed 001: 30 samples rated by both annotators); any schema."""
    from judgelab.sync.study_design import pilot_strata, pilot_subset, set_overlap, suffixed_title, task_data

    schema, tasks = _design_tasks(tasks_file, _schema_of(schema_name), fmt, maps)
    assert schema is not None
    if size is None:
        size = int((schema.meta.get("agreement_targets") or {}).get("pilot_size", 30))
    requested = [f.strip() for f in strata.split(",") if f.strip()] if strata else None
    fields = pilot_strata(schema, requested)
    tasks = pilot_subset(tasks, size=size, strata=fields, seed=seed)
    pilot = [t for t in tasks if task_data(t).get("pilot")]
    _write_design_tasks(out, pilot if only else tasks)
    click.echo(
        f"{out}: pilot of {len(pilot)} of {len(tasks)} {schema.name} task(s), "
        f"stratified by {' x '.join(fields) or 'nothing (no strata fields in the schema)'}"
    )
    if pilot_project:
        project_id = _import_design_project(ctx, schema, suffixed_title(title or schema.title, "pilot"), pilot)
        settings = set_overlap(connect(_connection(ctx)), project_id, annotations_per_task, 100)
        click.echo(f"project {project_id}: {settings.maximum_annotations} annotation(s) per task on 100% of tasks")


@design_group.command("sample")
@project_options(multiple=False)
@click.option("--budget", type=int, required=True, help="Tasks people label (the expected number for --design active).")
@click.option(
    "--design",
    type=click.Choice(["uniform", "stratified", "active"]),
    default="uniform",
    show_default=True,
    help="uniform; stratified by the study's cut (--by); active: more often where the judge is unsure.",
)
@click.option(
    "--judge", metavar="MODEL_VERSION", help="The judge's model version (default: the project's only or current one)."
)
@click.option("--by", help="Comma-separated fields to stratify by (default: the schema's suggested cut, else model).")
@click.option("--floor", default=0.2, show_default=True, help="Share of the budget spread evenly (--design active).")
@click.option("--seed", default=0, show_default=True)
@click.option("--overlap", type=int, help="Annotations per task in the sample project (default: the source's).")
@click.option("--replace", is_flag=True, help="Draw anew over a sample of other arguments nobody has labelled yet.")
@click.option("--out", type=click.Path(path_type=Path), help="Also write the draw (every task's probability) as JSON.")
@json_option
@click.pass_context
def design_sample_cmd(
    ctx: click.Context,
    project_id: int | None,
    title: str | None,
    schema_name: str | None,
    budget: int,
    design: str,
    judge: str | None,
    by: str | None,
    floor: float,
    seed: int,
    overlap: int | None,
    replace: bool,
    out: Path | None,
    as_json: bool,
) -> None:
    """A human sample for prediction-powered estimates: people label BUDGET tasks, the judge all.

    Reads the project's tasks and its judge's predictions (pre-annotate it first), gives each task
    an inclusion probability (summing to the budget; the judge's uncertainty is its prediction's
    score) and draws the sample, seeded. The sampled tasks record their probability in their
    meta (judgelab_sample; 'judgelab sync' makes it the tasks columns inclusion_probability
    and sampled; --out has every task's) and go, without predictions, into '<title> (human sample)',
    which no backend is connected to. The same command again finds the sample and adds nothing.
    """
    from judgelab.sync.human_sample import draw_human_sample
    from judgelab.sync.project_ref import ProjectRef, require_project

    output = Output(as_json)
    conn = _connection(ctx)
    client = connect(conn)
    source = require_project(client, ProjectRef(project_id=project_id, title=title, schema=_schema_of(schema_name)))
    fields = tuple(f.strip() for f in (by or "").split(",") if f.strip())
    with progress_bar(None, "meta of the tasks") as bar:
        result = draw_human_sample(
            client,
            source,
            budget=budget,
            design=design,
            judge=judge,
            seed=seed,
            by=fields,
            floor=floor,
            overlap=overlap,
            replace=replace,
            progress=advance(bar),
        )
    url = f"{conn.url.rstrip('/')}/projects/{result.project_id}"
    if out is not None:
        _write_sample_file(out, result)
    for line in _sample_lines(source.label(), result, url):
        output.line(line)
    output.result(result.as_json(url))


def _sample_lines(label: str, result, url: str) -> list[str]:
    """What ``design sample`` says about a drawn human sample (``label``: the source project's)."""
    lines = [
        f"{label}: human sample {result.sample_id} of {result.n_sampled} of {result.n_tasks} task(s) "
        f"(budget {result.budget}, design {result.design}"
        + (f" by {' x '.join(result.by)}" if result.by else "")
        + f", seed {result.seed}, judge {result.judge})",
        f"inclusion probabilities from {result.min_inclusion:.3g} to {result.max_inclusion:.3g}; "
        f"{result.meta_updated} task(s) got their judgelab_sample meta"
        + (
            f"; {result.without_prediction} task(s) have no prediction of the judge"
            if result.without_prediction
            else ""
        ),
    ]
    if result.strata:
        lines.append("sampled per cell: " + ", ".join(f"{cell}: {n}" for cell, n in result.strata.items()))
    if result.replaced is not None:
        lines.append(f"project {result.replaced}, the earlier human sample (unlabelled), was removed")
    state = "created" if result.created else "exists"
    lines.append(
        f"project {result.project_id} {result.project_title!r} {state}: {result.imported} task(s) imported "
        f"(no backend, no predictions: label blind) {url}"
    )
    if result.already:
        lines.append("the same sample as before: nothing added")
    return lines


def _write_sample_file(path: Path, result) -> None:
    """The draw: every source task's id, key, inclusion probability and whether it was drawn."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    body = {**result.as_json(None), "draw": result.draw}
    path.write_text(json.dumps(body, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


@design_group.command("arms")
@click.argument("tasks_file", type=click.Path(path_type=Path))
@click.option("--strata", default="", help="Comma-separated fields to stratify by (e.g. model,split).")
@click.option("--blind-share", default=0.5, show_default=True, help="Share of the tasks in the blind arm.")
@click.option("--both", is_flag=True, help="Every task in both arms (copies <id>@suggested and <id>@blind).")
@click.option("--seed", default=0, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), required=True)
@click.option("--split-projects", is_flag=True, help="One project per arm: '<title> (suggested)', '<title> (blind)'.")
@click.option("--title", help="Base project title (default: the schema's).")
@design_input_options
@click.pass_context
def design_arms_cmd(
    ctx: click.Context,
    tasks_file: Path,
    strata: str,
    blind_share: float,
    both: bool,
    seed: int,
    out: Path,
    split_projects: bool,
    title: str | None,
    schema_name: str | None,
    fmt: str,
    maps: tuple[str, ...],
) -> None:
    """Anchoring study: tasks in a 'suggested' and a 'blind' arm (stratified, seeded).

    Any schema. The arm is written into each task's data (arm: suggested|blind). Blind tasks
    never get a model suggestion: 'judgelab preannotate' skips them and the backend answers them
    without one, also when Label Studio asks on its own. The report compares the arms.
    """
    from judgelab.sync.study_design import assign_arms, split_by_arm, suffixed_title

    schema, tasks = _design_tasks(tasks_file, _schema_of(schema_name), fmt, maps)
    assert schema is not None
    fields = [f.strip() for f in strata.split(",") if f.strip()]
    unknown = [f for f in fields if tasks and all(f not in t["data"] for t in tasks)]
    if unknown:
        raise SyncError(f"{tasks_file}: --strata {', '.join(unknown)}: no task has such a field")
    tasks = assign_arms(tasks, strata=fields, blind_share=blind_share, seed=seed, both=both)
    _write_design_tasks(out, tasks)
    by_arm = split_by_arm(t for t in tasks if t["data"].get("arm"))
    click.echo(
        f"{out}: {schema.name} tasks, "
        + ", ".join(f"{arm}: {len(ts)} task(s)" for arm, ts in by_arm.items())
        + (f" (stratified by {' x '.join(fields)})" if fields else "")
    )
    if not both:
        click.echo(
            "note: each task is in one arm, so the report can tell whether the suggestions moved the answers only "
            "against reference answers (annotations marked as ground truth in Label Studio) or the model's answers "
            "on the blind tasks (predicted after the study); without either it compares time and each arm's own "
            "agreement. --both puts every task in both arms, so each arm is compared with the other's majority."
        )
    if split_projects:
        for arm, arm_tasks in by_arm.items():
            _import_design_project(ctx, schema, suffixed_title(title or schema.title, arm), arm_tasks)


@design_group.command("overlap")
@project_options(multiple=False)
@click.option("--pilot-project", is_flag=True, help="The '<title> (pilot)' project (with --title or --schema).")
@click.option("--annotations-per-task", default=2, show_default=True)
@click.option("--percent", default=100, show_default=True, help="Share of tasks that get the overlap.")
@click.pass_context
def design_overlap_cmd(
    ctx: click.Context,
    project_id: int | None,
    title: str | None,
    schema_name: str | None,
    pilot_project: bool,
    annotations_per_task: int,
    percent: int,
) -> None:
    """Double (or more) annotation: Label Studio's maximum_annotations and overlap percentage.

    Label Studio applies the overlap to a percentage of a project's tasks, not to chosen
    ones: for a pilot rated by everyone, use its own project (--pilot-project).
    """
    from judgelab.sync.project_ref import ProjectRef, require_project
    from judgelab.sync.study_design import set_overlap, suffixed_title

    schema = _schema_of(schema_name)
    if pilot_project:
        if project_id is not None:
            raise SyncError("--pilot-project names the project by its title: give --title or --schema, not --project")
        base = title or (schema.title if schema else None)
        if base is None:
            raise SyncError("--pilot-project needs --title or --schema (the pilot's base title)")
        title = suffixed_title(base, "pilot")
    client = connect(_connection(ctx))
    project = require_project(client, ProjectRef(project_id=project_id, title=title, schema=schema))
    settings = set_overlap(client, project.id, annotations_per_task, percent)
    click.echo(
        f"{project.label()}: {settings.maximum_annotations} annotation(s) per task "
        f"on {settings.overlap_cohort_percentage}% of tasks"
    )


@design_group.command("adjudicate")
@project_options(multiple=False)
@click.option(
    "--where", help="Which tasks: a rule, 'ITEM differs' or 'max-min>=N on ITEM' joined by or/and (see above)."
)
@click.option(
    "--with-judge",
    "judge",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[MODEL_VERSION]",
    help="Show the judge's prediction too (that model version's; alone: each task's latest).",
)
@click.option("--adjudicator", metavar="EMAIL", help="Whose answers --collect copies (default: whoever answered).")
@click.option("--prefill", is_flag=True, help="Also add each annotator's answer as a prediction to start from.")
@click.option("--collect", is_flag=True, help="Copy the adjudicated answers back as ground-truth annotations.")
@json_option
@click.pass_context
def design_adjudicate_cmd(
    ctx: click.Context,
    project_id: int | None,
    title: str | None,
    schema_name: str | None,
    where: str | None,
    judge: str | None,
    adjudicator: str | None,
    prefill: bool,
    collect: bool,
    as_json: bool,
) -> None:
    """Review step: the tasks where annotators disagree, in a project '<title> (adjudication)'.

    Each adjudication task shows every annotator's answer (and with --with-judge the judge's)
    in a read-only panel beside the form; the adjudicator answers on the same form. Tasks: those
    the rule --where picks, else the schema's rule (schema.yaml 'adjudicate: {rule: ...}'), else
    'any differs' (a choice, rating or number item, or the span labels an annotator marked,
    differ between two annotators of a task with two or more). Rules: 'ITEM differs',
    'max-min>=N on ITEM' (OP one of >= > <= < ==; ITEM a control or item name, or 'any'),
    joined by 'or' / 'and'. Run again, it adds the tasks that disagree since.

    --collect copies each adjudicated answer into the source project as an annotation with Label
    Studio's ground-truth flag, by the adjudicator's account; run again it adds nothing, and a
    changed adjudication replaces the earlier ground truth. 'judgelab sync' then has them
    (ground_truth column of the judgments table).
    """
    from judgelab.sync.adjudication import collect as collect_answers
    from judgelab.sync.adjudication import ensure_adjudication
    from judgelab.sync.ls_api import as_api
    from judgelab.sync.project_ref import ProjectRef, require_project

    out = Output(as_json)
    client = connect(_connection(ctx))
    listed = as_api(client).projects()
    found = require_project(
        client, ProjectRef(project_id=project_id, title=title, schema=_schema_of(schema_name)), projects=listed
    )
    source, found = _adjudicated_source(client, listed, found)
    if collect:
        if where or judge is not None or prefill:
            raise SyncError("--collect copies answers back: --where, --with-judge and --prefill are for creating")
        outcome = collect_answers(client, found.id, adjudicator)
        out.line(f"adjudication project {outcome.project_id}: {outcome.summary()}")
        out.result(outcome.as_json())
        return
    made = ensure_adjudication(
        client, source, found.schema, where=where, judge=judge, adjudicator=adjudicator, prefill=prefill
    )
    for line in _adjudication_lines(found, made, judge, prefill):
        out.line(line)
    out.result(made.as_json())


def _adjudicated_source(client, listed: list[dict], found):
    """``(listed project, resolved project)`` to adjudicate: named by its adjudication project, its source."""
    from judgelab.sync.adjudication import adjudication_of
    from judgelab.sync.project_ref import ProjectRef, require_project

    source = next(p for p in listed if int(p["id"]) == found.id)
    if adjudication_of(source) is not None:  # named by the adjudication project: its source is meant
        source_id = adjudication_of(source)
        source = next((p for p in listed if int(p["id"]) == source_id), None)
        if source is None:
            raise SyncError(f"{found.label()} adjudicates project {source_id}, which is no longer in Label Studio")
        found = require_project(client, ProjectRef(project_id=source_id), projects=listed)
    return source, found


def _adjudication_lines(found, made, judge: str | None, prefill: bool) -> list[str]:
    """What ``design adjudicate`` says about the project it made: the rule's share of the tasks, the
    tasks added, and (when the schema's guideline has a disagreement rate to meet) the rate."""
    share = made.found
    lines = [
        f"{found.label()}: {len(share.tasks)} of {share.compared} task(s) with two answers or more meet the rule "
        f"{share.rule.text!r} ({share.rule_from})",
        f"project {made.project_id} {made.title!r} {'created' if made.created else 'exists'}: "
        f"{made.added} task(s) added, {made.already} already there"
        + (f"; the judge's prediction shown on {made.judged}" if judge is not None else "")
        + (f"; each annotator's answer pre-filled as a prediction on {made.prefilled}" if prefill else ""),
    ]
    target = (found.schema.meta.get("agreement_targets") or {}) if found.schema else {}
    rule = target.get("disagreement_rule") if isinstance(target, dict) else None
    if isinstance(rule, dict) and "average_below" in rule and share.compared:
        limit = float(rule["average_below"])
        rate = len(share.tasks) / share.compared
        lines.append(
            f"disagreement on {rate:.0%} of the tasks with two answers; the guideline averages the scores below "
            f"{limit:.0%} and meets to recalibrate above"
        )
    lines.append("answer the tasks in Label Studio, then copy the answers back with --collect")
    return lines


if __name__ == "__main__":
    main()
