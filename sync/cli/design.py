"""Study design: judgelab design batches|qualification|groups|pilot|arms|overlap."""

from __future__ import annotations

from pathlib import Path

import click

from judgelab.configs.schema import Schema, get_schema
from judgelab.sync.cli.base import _Cli, _connection, _fail, main
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


def _read_design_tasks(path: Path | None) -> list[dict]:
    """Tasks of a JSON/JSONL/CSV file as dicts (unchecked: the schema checks them at import)."""
    from judgelab.sync.importers.records import iter_records

    if path is None:
        return []
    tasks = []
    for where, record in iter_records(Path(path)):
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
    """Study design: attention checks, qualification, groups A/B, pilot, anchoring arms, overlap.

    The design is written into each task's data (batch, position, check, reference_*,
    qualification, group, pilot, arm), which the tidy tables and analysis.qc_hotel read.
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


@design_group.command("arms")
@click.argument("tasks_file", type=click.Path(path_type=Path))
@click.option("--strata", default="", help="Comma-separated fields to stratify by (e.g. model,split).")
@click.option("--blind-share", default=0.5, show_default=True, help="Share of the tasks in the blind arm.")
@click.option("--both", is_flag=True, help="Every task in both arms (copies <id>@suggested and <id>@blind).")
@click.option("--seed", default=0, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), required=True)
@click.option("--schema", "schema_name", help="Schema of the tasks (needed for --split-projects).")
@click.option("--split-projects", is_flag=True, help="One project per arm: '<title> (suggested)', '<title> (blind)'.")
@click.option("--title", help="Base project title (default: the schema's).")
@click.pass_context
def design_arms_cmd(
    ctx: click.Context,
    tasks_file: Path,
    strata: str,
    blind_share: float,
    both: bool,
    seed: int,
    out: Path,
    schema_name: str | None,
    split_projects: bool,
    title: str | None,
) -> None:
    """Anchoring study: tasks in a 'suggested' and a 'blind' arm (stratified, seeded).

    The arm is written into each task's data (arm: suggested|blind). Blind tasks never get a
    model suggestion: 'judgelab preannotate' skips them and the backend answers them without one,
    also when Label Studio asks on its own. The report compares the arms.
    """
    from judgelab.sync.study_design import assign_arms, split_by_arm, suffixed_title

    if split_projects and not schema_name:
        raise SyncError("--split-projects needs --schema")
    fields = [f.strip() for f in strata.split(",") if f.strip()]
    tasks = assign_arms(_read_design_tasks(tasks_file), strata=fields, blind_share=blind_share, seed=seed, both=both)
    _write_design_tasks(out, tasks)
    by_arm = split_by_arm(t for t in tasks if (t.get("data", t)).get("arm"))
    click.echo(
        f"{out}: "
        + ", ".join(f"{arm}: {len(ts)} task(s)" for arm, ts in by_arm.items())
        + (f" (stratified by {' x '.join(fields)})" if fields else "")
    )
    if split_projects:
        schema = get_schema(schema_name)
        for arm, arm_tasks in by_arm.items():
            _import_design_project(ctx, schema, suffixed_title(title or schema.title, arm), arm_tasks)


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
