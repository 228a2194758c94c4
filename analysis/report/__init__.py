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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.analysis.report.blocks import Section
from judgelab.analysis.report.data import ProjectData, ReportOptions
from judgelab.analysis.report.guide import guide_section
from judgelab.analysis.report.rendering import HTML_STYLE, render_html, render_markdown
from judgelab.analysis.report.safe_text import write_csv
from judgelab.analysis.report.sections import SECTION_BUILDERS, SectionBuilder
from judgelab.analysis.tables import HUMAN_SOURCE, cancelled_mask, natural_key

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
) -> ReportPaths:
    """Write ``report.md``, ``report.html`` and one CSV per table into ``out_dir``.

    ``tables`` holds the tidy ``tasks``, ``judgments`` and ``spans`` frames (any may be
    absent) and optionally the loaders' ``problems``. ``schemas`` maps a schema name to its
    metadata; a project's schema is the ``schema`` column of its tasks, else the only schema
    given, else the schema named like the project. ``context`` (default: ``tables``) holds
    every project of the run: projects of the same schema see each other as ``peers``.
    Raises ``ValueError`` when a table lacks a required column.
    """
    frames = normalised_tables(tables)
    everything = frames if context is None else normalised_tables(context)
    builders = SECTION_BUILDERS if section_builders is None else section_builders
    options = options or ReportOptions()
    problems = tables.get("problems")
    usage = tables.get("usage")
    sections: list[Section] = [guide_section()]
    for project in _projects(frames):
        data = _project_data(project, frames, everything, schemas, options, problems, usage)
        subsections = [section for build in builders for section in _as_list(build(data))]
        sections.append(Section(_project_title(data), subsections=subsections))

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(markdown=out_dir / "report.md", html=out_dir / "report.html")
    paths.markdown.write_text(render_markdown(title, sections), encoding="utf-8")
    paths.html.write_text(render_html(title, sections), encoding="utf-8")
    for name, data in _csv_tables(sections).items():
        paths.csv[name] = write_csv(data, out_dir / f"{name}.csv")  # formulas neutralised
    return paths


def build_reports(
    tables: Mapping[str, pd.DataFrame],
    schemas: Mapping[str, Mapping[str, Any]],
    out_dir: Path,
    *,
    per: str = "project",
    title: str = REPORT_TITLE,
    options: ReportOptions | None = None,
    section_builders: list[SectionBuilder] | None = None,
) -> ReportIndex:
    """One report per project (``per="project"``) or per schema (``per="schema"``), each in
    ``out_dir/<name>/`` (``report.html``, ``report.md``, CSVs), and ``out_dir/index.html``
    linking them with their counts. Every report sees the whole run as context, so a project
    can use the gold labels of another project of its schema."""
    if per not in PER_CHOICES:
        raise ValueError(f"per must be one of {', '.join(PER_CHOICES)}, got {per!r}")
    frames = normalised_tables(tables)
    problems = tables.get("problems")
    usage = tables.get("usage")
    groups: dict[str, list[object]] = {}
    for project in _projects(frames):
        tasks = frames["tasks"][frames["tasks"]["project"] == project]
        key = str(project) if per == "project" else (_schema_name(project, tasks, schemas) or UNKNOWN_SCHEMA)
        groups.setdefault(key, []).append(project)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    entries: list[ReportEntry] = []
    used: set[str] = set()
    for name, projects in groups.items():
        subset = {key: frame[frame["project"].isin(projects)] for key, frame in frames.items()}
        if problems is not None:
            subset["problems"] = problems
        if usage is not None:
            subset["usage"] = usage
        folder = _unique_slug(name, used)
        schema_names = sorted(
            {_schema_name(p, subset["tasks"][subset["tasks"]["project"] == p], schemas) or "unknown" for p in projects}
        )
        label = f"project {name} ({', '.join(schema_names)})" if per == "project" else name
        paths = build_report(
            subset,
            schemas,
            out_dir / folder,
            title=f"{title}: {label}",
            section_builders=section_builders,
            options=options,
            context=frames,
        )
        entries.append(ReportEntry(name, schema_names, projects, paths, _counts(subset)))
    index = out_dir / "index.html"
    index.write_text(render_index(title, entries, out_dir), encoding="utf-8")
    return ReportIndex(index=index, reports=entries)


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
    header = "".join(f"<th>{html.escape(h)}</th>" for h in ("report", "schema", "projects", *INDEX_COUNTS, "files"))
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
    judgments = judgments[~cancelled_mask(judgments) & (judgments["source"] == HUMAN_SOURCE)]
    spans = frames["spans"]
    tasks = frames["tasks"]
    keys = tasks[["project", "task_id"]] if not tasks.empty else judgments[["project", "task_id"]]
    annotators = judgments["annotator"] if "annotator" in judgments.columns else pd.Series(dtype=object)
    return {
        "tasks": len(keys.drop_duplicates()),
        "annotators": int(annotators.nunique()),
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
    return {name: _normalised_table(name, tables.get(name)) for name in TABLE_NAMES}


def _normalised_table(name: str, frame: pd.DataFrame | None) -> pd.DataFrame:
    if frame is None:
        return pd.DataFrame(columns=[*REQUIRED_COLUMNS[name], "source"])
    missing = [column for column in REQUIRED_COLUMNS[name] if column not in frame.columns]
    if missing and not frame.empty:
        raise ValueError(f"the {name} table lacks required column(s): {', '.join(missing)}")
    frame = frame.reindex(columns=[*frame.columns, *missing])
    if name != "tasks":
        frame = frame.assign(source=frame["source"].fillna(HUMAN_SOURCE) if "source" in frame else HUMAN_SOURCE)
    return frame


def _projects(frames: Mapping[str, pd.DataFrame]) -> list[object]:
    projects: set[object] = set()
    for frame in frames.values():
        projects |= set(frame["project"].dropna())
    return sorted(projects, key=natural_key)


def _project_data(
    project: object,
    frames: Mapping[str, pd.DataFrame],
    everything: Mapping[str, pd.DataFrame],
    schemas: Mapping[str, Mapping[str, Any]],
    options: ReportOptions,
    problems: pd.DataFrame | None,
    usage: pd.DataFrame | None = None,
) -> ProjectData:
    own = {name: frame[frame["project"] == project] for name, frame in frames.items()}
    schema_name = _schema_name(project, own["tasks"], schemas)
    peers = {}
    for other in _projects(everything):
        if other == project:
            continue
        theirs = {name: frame[frame["project"] == other] for name, frame in everything.items()}
        if schema_name is not None and _schema_name(other, theirs["tasks"], schemas) == schema_name:
            peers[other] = theirs
    return ProjectData(
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


def _project_usage(usage: pd.DataFrame | None, project: object) -> pd.DataFrame | None:
    """The project's rows of the ``usage`` table (project ids compared as text: Parquet keeps
    them as integers, a CSV may not)."""
    if usage is None or usage.empty or "project" not in usage.columns:
        return None
    own = usage[usage["project"].astype(str) == str(project)]
    return own if not own.empty else None


def problems_with_project(problems: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """A loader's ``problems`` with a first ``project`` column: the project of the problem's task
    when its id names one project, else the only project of ``tasks``, else empty (such rows are
    shown in every report of the run)."""
    projects = tasks.groupby("task_id")["project"].agg(lambda s: s.iloc[0] if s.nunique() == 1 else None)
    only = tasks["project"].dropna().unique()
    mapped = problems["task_id"].map(projects) if len(problems) else problems["task_id"]
    if len(only) == 1 and len(problems):
        mapped = mapped.where(mapped.notna(), only[0])
    return problems.assign(project=mapped)[["project", *problems.columns]]


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
    title = data.schema_meta.get("title")
    return f"Project {data.project}: {title}" if title else f"Project {data.project}"


def _csv_tables(sections: list[Section]) -> dict[str, pd.DataFrame]:
    grouped: dict[str, list[pd.DataFrame]] = {}
    for section in sections:
        for table in section.tables():
            grouped.setdefault(table.name, []).append(table.csv_data)
    return {
        name: pd.concat([frame for frame in parts if not frame.empty] or parts[:1], ignore_index=True)
        for name, parts in grouped.items()
    }


__all__ = [
    "REPORT_TITLE",
    "ReportEntry",
    "ReportIndex",
    "ReportOptions",
    "ReportPaths",
    "build_report",
    "build_reports",
    "guide_section",
    "normalised_tables",
    "problems_with_project",
    "render_index",
]


def _as_list(built: Section | list[Section] | None) -> list[Section]:
    """A builder's answer as a list: one section, several (the schema sections), or none."""
    if built is None:
        return []
    return built if isinstance(built, list) else [built]
