"""Build the evaluation report: Markdown, one self-contained HTML page, and CSV tables.

``build_report`` splits the tidy tables by project, runs every builder of
``analysis.report.sections.SECTION_BUILDERS`` on each project, renders the sections and
writes each table's data to ``<table name>.csv`` (all projects in one file, with a
``project`` column).

``build_reports`` writes one such report per project or per schema into its own folder of
``out_dir`` and an ``index.html`` linking them.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.analysis.facets import cell_groups, empty_left_out, facet_cells, filter_tables
from judgelab.analysis.report.blocks import Paragraph, Section, Table, spool_tables
from judgelab.analysis.report.data import ProjectData, ReportOptions, with_project
from judgelab.analysis.report.faceting import (
    FacetPlan,
    cells_table,
    facet_plan,
    merge_cell_sections,
    plan_sentences,
    pooled_counts,
)
from judgelab.analysis.report.front_page import front_page
from judgelab.analysis.report.guide import guide_section
from judgelab.analysis.report.rendering import HTML_STYLE, render_html, render_markdown
from judgelab.analysis.report.safe_text import write_csv
from judgelab.analysis.report.sections import RELEASE_AFTER, SECTION_BUILDERS, SectionBuilder
from judgelab.analysis.report.versions import short_names, shorten, versions_table
from judgelab.analysis.review import foreign_parent_links, without_parents
from judgelab.analysis.tables import (
    HUMAN_SOURCE,
    cancelled_mask,
    human_annotations,
    natural_key,
    parsed_times,
    rows_where,
    shared_strings,
)

REPORT_TITLE = "Human evaluation report"
TABLE_NAMES = ("tasks", "judgments", "spans")
REQUIRED_COLUMNS = {
    "tasks": ("project", "task_id"),
    "judgments": ("project", "task_id", "annotation_id", "item", "value"),
    "spans": ("project", "task_id", "annotation_id", "label"),
}
PER_CHOICES = ("project", "schema")
UNKNOWN_SCHEMA = "unknown_schema"


@dataclass(frozen=True)
class ReportPaths:
    """Where ``build_report`` wrote its files; ``csv`` maps table name to path."""

    markdown: Path
    html: Path
    csv: dict[str, Path] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # what the report used (after each project's cut)


@dataclass(frozen=True)
class ReportEntry:
    """One report of a ``build_reports`` run: its name, schema(s), projects and files."""

    name: str
    schemas: list[str]
    projects: list[object]
    paths: ReportPaths
    counts: dict[str, int]


@dataclass(frozen=True)
class ReportIndex:
    """``index``: the index page; ``reports``: every report written."""

    index: Path
    reports: list[ReportEntry]


def build_report(
    tables: Mapping[str, pd.DataFrame],
    schemas: Mapping[str, Mapping[str, Any]],
    out_dir: Path,
    *,
    title: str = REPORT_TITLE,
    section_builders: list[SectionBuilder] | None = None,
    options: ReportOptions | None = None,
    context: Mapping[str, pd.DataFrame] | None = None,
    exclude_annotators: Collection[str] = (),
    on_section: Callable[[], None] | None = None,
) -> ReportPaths:
    """Write ``report.md``, ``report.html`` and one CSV per table into ``out_dir``.

    ``tables`` holds the tidy ``tasks``, ``judgments`` and ``spans`` frames (any may be
    absent) and optionally the loaders' ``problems``. ``schemas`` maps a schema name to its
    metadata; a project's schema is the ``schema`` column of its tasks, else the only schema
    given, else the schema named like the project. ``context`` (default: ``tables``) holds
    every project of the run: projects of the same schema see each other as ``peers``.
    ``exclude_annotators``: annotators the study's estimates leave out (added to the options';
    ``options.exclude_rubber_stampers`` leaves out those each project's rubber-stamping rule flags;
    the sections read both through ``sections.rubber_stamping.left_out_annotators``).
    ``on_section()`` is called after each builder has run on a project (a progress bar: a report
    of a big project spends minutes in its sections, a few of them most of it).
    Raises ``ValueError`` when a table lacks a required column.
    """
    frames = normalised_tables(tables)
    everything = frames if context is None else normalised_tables(context)
    builders = SECTION_BUILDERS if section_builders is None else section_builders
    options = _with_left_out(options or ReportOptions(), exclude_annotators)
    problems = tables.get("problems")
    usage = tables.get("usage")
    frames, foreign = _without_foreign_parents(frames, everything)
    sections: list[Section] = []
    used: dict[str, list[pd.DataFrame]] = {name: [] for name in TABLE_NAMES}
    for project in _projects(frames):
        data = _project_data(project, frames, everything, schemas, options, problems, usage)
        data = replace(data, notes=_foreign_parent_notes(foreign[foreign["project"] == project]))
        cut = project_cut(data)
        sections.append(project_section(data, builders, cut, on_section))
        for name in TABLE_NAMES:
            used[name].append(cut[1][name])
    sections.append(guide_section())

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = _counts({name: pd.concat(parts, ignore_index=True) if parts else frames[name].iloc[0:0]
                      for name, parts in used.items()})  # fmt: skip
    paths = ReportPaths(markdown=out_dir / "report.md", html=out_dir / "report.html", counts=counts)
    paths.markdown.write_text(render_markdown(title, sections), encoding="utf-8")
    paths.html.write_text(render_html(title, sections), encoding="utf-8")
    for name, data in _csv_tables(sections):
        paths.csv[name] = write_csv(data, out_dir / f"{name}.csv")  # formulas neutralised
        data = None  # a table read back from disk goes before the next is read
    return paths


def _with_left_out(options: ReportOptions, exclude_annotators: Collection[str]) -> ReportOptions:
    if isinstance(exclude_annotators, str):
        raise TypeError("exclude_annotators takes a collection of annotator names, not one string")
    names = frozenset(str(name) for name in exclude_annotators)
    return replace(options, exclude_annotators=options.exclude_annotators | names) if names else options


def project_section(
    data: ProjectData,
    builders: Sequence[SectionBuilder],
    cut: tuple[FacetPlan, dict[str, pd.DataFrame]] | None = None,
    on_section: Callable[[], None] | None = None,
) -> Section:
    """One project's part of the report: the front page, then every builder's sections, each
    run on the whole project (builders marked ``whole_project``) or once per facet cell and
    merged (see ``analysis.report.faceting``). ``cut``: :func:`project_cut` of ``data``, when
    the caller has it already; ``on_section()`` is called after each builder."""
    plan, filtered = cut if cut is not None else project_cut(data)
    whole = replace(data, tasks=filtered["tasks"], judgments=filtered["judgments"], spans=filtered["spans"], cache={})
    cells = facet_cells(filtered, plan.by, total=plan.total)
    faceted = len(cells) > 1 or bool(cells and cells[0].values)
    groups = cell_groups(cells, filtered) if faceted else None
    whole = replace(whole, groups=groups)  # grouped computations run once for every cell (ProjectData.per_cell)
    numbers = iter(range(groups.size if groups is not None else 0))
    cell_data = [
        replace(whole, tasks=c.tables["tasks"], judgments=c.tables["judgments"], spans=c.tables["spans"],
                facet=c, whole=whole, cache={}, groups=None,
                cell_number=None if c.is_total or groups is None else next(numbers))
        for c in cells
    ] if faceted else []  # fmt: skip
    built: list[Section] = []
    for build in builders:
        if not faceted or getattr(build, "whole_project", False):
            made = _as_list(build(whole))
        else:
            made = merge_cell_sections(
                [(cell, _as_list(build(part))) for cell, part in zip(cells, cell_data, strict=True)]
            )
            after_merge = getattr(build, "after_merge", None)
            if after_merge is not None:  # a builder's view across cells (agreement: a row per cell)
                after_merge(made, plan.by)
        spool_tables(made, data.options.spool_rows)  # a row per annotation: on disk until written
        built += made
        _release_cached(RELEASE_AFTER.get(build, ()), whole, cell_data)
        release_arrow_memory()
        if on_section is not None:
            on_section()
    n_left_out = _task_count(data.tasks) - _task_count(whole.tasks)
    sentences = plan_sentences(
        plan,
        cells or facet_cells(filtered, ()),
        n_left_out,
        _task_count(data.tasks),
        empty_left_out(plan.where, data.tasks, filtered["tasks"]),
    )
    if not faceted and plan.study_by:
        counts = pooled_counts(whole.tasks, plan.study_by)
        if counts:
            sentences[-1] = sentences[-1].rstrip(".") + f" (tasks per {', '.join(plan.study_by)}: {counts})."
    front = front_page(whole, built, sentences, plan.by if faceted else (), cells_table(cells) if faceted else None)
    names = short_names(whole.sources)
    shorten([front, *built], names)
    if names:  # after shortening: this table is where the full strings stay
        table = versions_table(names)
        front.blocks += [
            Paragraph("Model versions are named by a short name in this report; the full version strings:"),
            Table("model_versions", "Model versions", table, data=with_project(table, data.project)),
        ]
    return Section(_project_title(data), [], [front, *built])


def _release_cached(keys: Collection[str], whole: ProjectData, cells: Sequence[ProjectData]) -> None:
    """Drop ``keys`` (and their every-cell form) from the caches of the project and its cells."""
    for key in keys:
        whole.cache.pop(key, None)
        whole.cache.pop(f"{key} (every cell)", None)
        for cell in cells:
            cell.cache.pop(key, None)


def project_cut(data: ProjectData) -> tuple[FacetPlan, dict[str, pd.DataFrame]]:
    """The project's cut (:func:`facet_plan`) and its tables after the cut's filter."""
    kept = data.options.cuts.get(str(data.project))
    plan = facet_plan(data.schema_meta, data.tasks, data.options.by, data.options.where, kept)
    own = {"tasks": data.tasks, "judgments": data.judgments, "spans": data.spans}
    return plan, filter_tables(own, plan.where)


def arrow_memory_from_the_system() -> None:
    """Let Arrow (Parquet reads, text columns) allocate from the process's own allocator, not from
    its own pool. Arrow's pool keeps what Arrow frees for Arrow, which pandas and numpy then cannot
    reuse; with the system's allocator a section's passing text columns and the arrays after them
    share one heap. For a process that runs reports (the CLI): it changes Arrow's default pool for
    the whole process. At 100,000 tasks the report's peak went from 1,246 to 1,175 MiB, in the same
    time."""
    import pyarrow

    pyarrow.set_memory_pool(pyarrow.system_memory_pool())


def release_arrow_memory() -> None:
    """Hand the memory Arrow has freed back to the system. Text read from Parquet, and text
    columns pandas makes, live in Arrow's memory pool, which keeps what is freed for later: the
    report's tables as read, let go once converted (:func:`normalised_table`), stayed in the
    process, about 100 MiB at 30,000 tasks, and a section's passing text columns added to it."""
    import pyarrow

    pyarrow.default_memory_pool().release_unused()


def _task_count(tasks: pd.DataFrame) -> int:
    return 0 if tasks.empty else int(len(tasks[["project", "task_id"]].drop_duplicates()))


def build_reports(
    tables: Mapping[str, pd.DataFrame],
    schemas: Mapping[str, Mapping[str, Any]],
    out_dir: Path,
    *,
    per: str = "project",
    title: str = REPORT_TITLE,
    options: ReportOptions | None = None,
    section_builders: list[SectionBuilder] | None = None,
    on_report: Callable[[int, int], None] | None = None,
    exclude_annotators: Collection[str] = (),
    on_section: Callable[[int, int], None] | None = None,
) -> ReportIndex:
    """One report per project (``per="project"``) or per schema (``per="schema"``), each in
    ``out_dir/<name>/`` (``report.html``, ``report.md``, CSVs; a project's name is its Label
    Studio title, see :func:`project_title`), and ``out_dir/index.html``
    linking them with their counts. Every report sees the whole run as context, so a project
    can use the gold labels of another project of its schema. ``on_report(done, total)`` is
    called as the reports are written, ``on_section(done, total)`` as each builder has run on
    a project of one of them (``total``: builders times projects, every report's; a progress
    bar that moves while a big project's report is built). ``exclude_annotators``: as for
    :func:`build_report`."""
    options = _with_left_out(options or ReportOptions(), exclude_annotators)
    if per not in PER_CHOICES:
        raise ValueError(f"per must be one of {', '.join(PER_CHOICES)}, got {per!r}")
    frames = normalised_tables(tables)
    groups = _report_groups(frames, schemas, per)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    entries: list[ReportEntry] = []
    used: set[str] = set()
    builders = SECTION_BUILDERS if section_builders is None else section_builders
    total = len(builders) * sum(len(projects) for projects in groups.values())
    steps = _Steps(total, on_section) if on_section is not None else None
    for name, projects in groups.items():
        subset = _group_tables(frames, projects, tables.get("problems"), tables.get("usage"))
        folder = _unique_slug(name, used)
        schema_names = sorted(
            {_schema_name(p, subset["tasks"][subset["tasks"]["project"] == p], schemas) or "unknown" for p in projects}
        )
        titled = per == "project" and name != str(projects[0])
        label = name if per == "schema" or titled else f"project {name} ({', '.join(schema_names)})"
        paths = build_report(
            subset,
            schemas,
            out_dir / folder,
            title=f"{title}: {label}",
            section_builders=section_builders,
            options=options,
            context=frames,
            exclude_annotators=exclude_annotators,
            on_section=steps.advance if steps is not None else None,
        )
        entries.append(ReportEntry(name, schema_names, projects, paths, paths.counts))
        if on_report:
            on_report(len(entries), len(groups))
    index = out_dir / "index.html"
    index.write_text(render_index(title, entries, out_dir), encoding="utf-8")
    return ReportIndex(index=index, reports=entries)


@dataclass
class _Steps:
    """Builders run so far of ``total``, told to ``tell(done, total)``."""

    total: int
    tell: Callable[[int, int], None]
    done: int = 0

    def advance(self) -> None:
        self.done += 1
        self.tell(self.done, self.total)


def _report_groups(
    frames: Mapping[str, pd.DataFrame], schemas: Mapping[str, Mapping[str, Any]], per: str
) -> dict[str, list[object]]:
    """The projects of each report, by the report's name: a project's title (two projects of one
    title told apart by id), or a schema's name."""
    groups: dict[str, list[object]] = {}
    for project in _projects(frames):
        tasks = frames["tasks"][frames["tasks"]["project"] == project]
        if per == "project":
            key = project_title(project, tasks)
            key = key if key not in groups else f"{key} ({project})"  # two projects of one title
        else:
            key = _schema_name(project, tasks, schemas) or UNKNOWN_SCHEMA
        groups.setdefault(key, []).append(project)
    return groups


def _group_tables(
    frames: Mapping[str, pd.DataFrame],
    projects: list[object],
    problems: pd.DataFrame | None,
    usage: pd.DataFrame | None,
) -> dict[str, pd.DataFrame]:
    """One report's tables: the rows of its ``projects`` (not copied when they are every row: a
    report of the run's one project shares the run's columns), with the whole run's problems and
    usage."""
    subset = {key: rows_where(frame, frame["project"].isin(projects)) for key, frame in frames.items()}
    if problems is not None:
        subset["problems"] = problems
    if usage is not None:
        subset["usage"] = usage
    return subset


def render_index(title: str, entries: list[ReportEntry], out_dir: Path) -> str:
    """The index page: one row per report with its counts and links."""
    rows = []
    for entry in entries:
        folder = entry.paths.html.parent.relative_to(out_dir).as_posix()
        links = (
            f'<a href="{html.escape(folder)}/report.html">HTML</a> · '
            f'<a href="{html.escape(folder)}/report.md">Markdown</a> · '
            f'<a href="{html.escape(folder)}/">CSV folder</a>'
        )
        cells = [
            f'<a href="{html.escape(folder)}/report.html">{html.escape(entry.name)}</a>',
            html.escape(", ".join(entry.schemas)),
            html.escape(", ".join(str(p) for p in entry.projects)),
            *(f'<td class="number">{entry.counts[key]}</td>' for key in INDEX_COUNTS),
            links,
        ]
        rows.append("<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in cells) + "</tr>")
    header = "".join(f"<th>{html.escape(h)}</th>" for h in ("report", "schema", "project ids", *INDEX_COUNTS, "files"))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{HTML_STYLE}</style>\n</head>\n<body>\n"
        f"<h1>{html.escape(title)}</h1>\n"
        f"<p>{len(entries)} report(s). Each report explains its numbers in sentences; its tables are also "
        "CSV files in its folder. tasks counts the items shown to annotators, annotators the human annotators, "
        "judgments their answers and spans their marked stretches of text (cancelled annotations left out).</p>\n"
        f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>\n</body>\n</html>\n"
    )


INDEX_COUNTS = ("tasks", "annotators", "judgments", "spans")


def _counts(frames: Mapping[str, pd.DataFrame]) -> dict[str, int]:
    judgments = frames["judgments"]
    annotations = human_annotations(judgments, frames["spans"])
    judgments = judgments[~cancelled_mask(judgments) & (judgments["source"] == HUMAN_SOURCE)]
    spans = frames["spans"]
    tasks = frames["tasks"]
    keys = tasks[["project", "task_id"]] if not tasks.empty else annotations[["project", "task_id"]]
    return {
        "tasks": len(keys.drop_duplicates()),
        "annotators": int(annotations["annotator"].nunique()),
        "judgments": len(judgments),
        "spans": int((spans["source"] == HUMAN_SOURCE).sum()),
    }


def _unique_slug(name: str, used: set[str]) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "report"
    candidate, counter = slug, 2
    while candidate in used:
        candidate, counter = f"{slug}_{counter}", counter + 1
    used.add(candidate)
    return candidate


def normalised_tables(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The three tidy tables with their required columns and a ``source`` (default human)."""
    return {name: normalised_table(name, tables.get(name)) for name in TABLE_NAMES}


def normalised_table(name: str, frame: pd.DataFrame | None) -> pd.DataFrame:
    """One of :func:`normalised_tables` (``name``: tasks, judgments or spans)."""
    if frame is None:
        return pd.DataFrame(columns=[*REQUIRED_COLUMNS[name], "source"])
    missing = [column for column in REQUIRED_COLUMNS[name] if column not in frame.columns]
    if missing and not frame.empty:
        raise ValueError(f"the {name} table lacks required column(s): {', '.join(missing)}")
    frame = frame.reindex(columns=[*frame.columns, *missing])
    if name != "tasks":
        frame = frame.assign(source=frame["source"].fillna(HUMAN_SOURCE) if "source" in frame else HUMAN_SOURCE)
    return _python_strings(_parsed_times(frame))


TIME_COLUMNS = ("created_at", "updated_at")


def _parsed_times(frame: pd.DataFrame) -> pd.DataFrame:
    """An annotation's times as times (UTC), parsed once as every section reads them (ISO 8601, a
    text that is no time missing): as text they are one string per row, unlike every other column of
    the judgments, 67 of the report's MiB at 100,000 tasks."""
    text = [c for c in TIME_COLUMNS if c in frame.columns and not pd.api.types.is_datetime64_any_dtype(frame[c])]
    if not text:
        return frame
    return frame.assign(**{column: parsed_times(frame[column]) for column in text})


def _python_strings(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns as Python objects: pandas 3 reads text as Arrow-backed strings, whose ``isin``
    converts every value it is given one by one (0.7 s for 30,000 annotation ids against 0.03 s
    for objects); the report tests membership of ids everywhere. A value that repeats (an
    annotator, an item, a label, an annotation id) is one Python string shared by its rows, not
    one per row: at 100,000 tasks the judgments' text took about 80 bytes a cell as one string
    per row."""
    text = [column for column in frame.columns if pd.api.types.is_string_dtype(frame[column].dtype)]
    text = [column for column in text if frame[column].dtype != object]
    return frame.assign(**{column: shared_strings(frame[column]) for column in text}) if text else frame


def _projects(frames: Mapping[str, pd.DataFrame]) -> list[object]:
    projects: set[object] = set()
    for frame in frames.values():
        projects |= set(frame["project"].dropna())
    return sorted(projects, key=natural_key)


def _rows_of(frame: pd.DataFrame, project: object) -> pd.DataFrame:
    """The rows of ``project`` (:func:`analysis.tables.rows_where`)."""
    return rows_where(frame, frame["project"] == project)


def _project_data(
    project: object,
    frames: Mapping[str, pd.DataFrame],
    everything: Mapping[str, pd.DataFrame],
    schemas: Mapping[str, Mapping[str, Any]],
    options: ReportOptions,
    problems: pd.DataFrame | None,
    usage: pd.DataFrame | None = None,
) -> ProjectData:
    own = {name: _rows_of(frame, project) for name, frame in frames.items()}
    schema_name = _schema_name(project, own["tasks"], schemas)
    peers = {}
    for other in _projects(everything):
        if other == project:
            continue
        theirs = {name: frame[frame["project"] == other] for name, frame in everything.items()}
        if schema_name is not None and _schema_name(other, theirs["tasks"], schemas) == schema_name:
            peers[other] = theirs
    return ProjectData(
        title=project_title(project, own["tasks"]),
        project=project,
        schema_name=schema_name,
        schema_meta=schemas.get(schema_name, {}) if schema_name else {},
        tasks=own["tasks"],
        judgments=own["judgments"],
        spans=own["spans"],
        options=options,
        peers=peers,
        problems=_project_problems(problems, project),
        usage=_project_usage(usage, project),
    )


def _without_foreign_parents(
    frames: dict[str, pd.DataFrame], context: Mapping[str, pd.DataFrame]
) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """The tables with every ``parent_prediction`` that names a prediction of another task emptied
    (the annotation counts as not started from a suggestion), and those links (see
    :func:`judgelab.analysis.review.foreign_parent_links`)."""
    foreign = foreign_parent_links(frames["judgments"], frames["spans"], [context["judgments"], context["spans"]])
    if foreign.empty:
        return frames, foreign
    ids = foreign["annotation_id"]
    cleaned = {**frames, "judgments": without_parents(frames["judgments"], ids)}
    return {**cleaned, "spans": without_parents(frames["spans"], ids)}, foreign


def _foreign_parent_notes(links: pd.DataFrame) -> tuple[str, ...]:
    """The report's note on annotations whose parent_prediction is a prediction of another task."""
    if links.empty:
        return ()
    shown = [
        f"{row.annotation_id} (task {row.task_id}; prediction {row.parent_prediction} is task {row.parent_task_id}'s)"
        for row in links.head(10).itertuples()
    ]
    more = f" and {len(links) - 10} more" if len(links) > 10 else ""
    return (
        f"{len(links)} annotation(s) name as their parent_prediction a prediction of another task (Label Studio's "
        "API accepts such a link): the link is ignored, and these annotations count as not started from a "
        "suggestion (in the suggestions kept, edited and deleted, the lead times and the judges' comparison). "
        f"Annotation ids: {', '.join(shown)}{more}.",
    )


def _project_usage(usage: pd.DataFrame | None, project: object) -> pd.DataFrame | None:
    """The project's rows of the ``usage`` table (project ids compared as text: Parquet keeps
    them as integers, a CSV may not)."""
    if usage is None or usage.empty or "project" not in usage.columns:
        return None
    own = usage[usage["project"].astype(str) == str(project)]
    return own if not own.empty else None


def problems_with_project(problems: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """A loader's ``problems`` with a first ``project`` column. The loaders write the project of
    the file a problem comes from; for a row without one (problems.csv of an older judgelab),
    the project of its task when the task id names exactly one project, else the only project
    of ``tasks``, else empty (such a row is shown in every report of the run, saying so)."""
    given = problems["project"] if "project" in problems.columns else pd.Series(None, index=problems.index)
    projects = tasks.groupby("task_id")["project"].agg(lambda s: s.iloc[0] if s.nunique() == 1 else None)
    only = tasks["project"].dropna().unique()
    mapped = problems["task_id"].map(projects) if len(problems) else problems["task_id"]
    if len(only) == 1 and len(problems):
        mapped = mapped.where(mapped.notna(), only[0])
    project = given.where(given.notna() & (given.astype(str) != ""), mapped)
    rest = [column for column in problems.columns if column != "project"]
    return problems.assign(project=project)[["project", *rest]]


def _project_problems(problems: pd.DataFrame | None, project: object) -> pd.DataFrame:
    if problems is None or problems.empty:
        return pd.DataFrame()
    if "project" not in problems.columns:
        return problems
    mine = problems["project"].astype(str) == str(project)
    unassigned = problems["project"].isna() | (problems["project"].astype(str) == "")
    return problems[mine | unassigned].reset_index(drop=True)


def _schema_name(project: object, tasks: pd.DataFrame, schemas: Mapping[str, Any]) -> str | None:
    if "schema" in tasks.columns and tasks["schema"].notna().any():
        return str(tasks["schema"].dropna().iloc[0])
    if len(schemas) == 1:
        return next(iter(schemas))
    return str(project) if str(project) in schemas else None


def _project_title(data: ProjectData) -> str:
    """The project's heading: its Label Studio title (``Project <name>`` for loaded data sets),
    then the schema's title when that says more."""
    titled = data.title is not None and data.title != str(data.project)
    name = data.title if titled else f"Project {data.project}"
    schema_title = data.schema_meta.get("title")
    return f"{name}: {schema_title}" if schema_title and schema_title != name else str(name)


def project_title(project: object, tasks: pd.DataFrame) -> str:
    """The ``project_title`` the sync recorded for the project, else the project's name or id."""
    if "project_title" in tasks.columns:
        titles = tasks.loc[tasks["project"] == project, "project_title"].dropna().astype(str)
        titles = titles[titles.str.strip() != ""]
        if len(titles):
            return str(titles.iloc[-1])
    return str(project)


def _csv_tables(sections: list[Section]) -> Iterator[tuple[str, pd.DataFrame]]:
    """Each CSV's name and data (the tables of that name from every project), one at a time:
    a table kept on disk is read when its CSV is written."""
    grouped: dict[str, list[Table]] = {}
    for section in sections:
        for table in section.tables():
            grouped.setdefault(table.name, []).append(table)
    for name, tables in grouped.items():
        parts = [table.csv_data for table in tables]
        yield name, pd.concat([frame for frame in parts if not frame.empty] or parts[:1], ignore_index=True)
        parts = None


__all__ = [
    "REPORT_TITLE",
    "ReportEntry",
    "ReportIndex",
    "ReportOptions",
    "ReportPaths",
    "build_report",
    "build_reports",
    "guide_section",
    "normalised_table",
    "normalised_tables",
    "problems_with_project",
    "project_section",
    "project_title",
    "render_index",
]


def _as_list(built: Section | list[Section] | None) -> list[Section]:
    """A builder's answer as a list: one section, several (the schema sections), or none."""
    if built is None:
        return []
    return built if isinstance(built, list) else [built]
