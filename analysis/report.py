"""Build the evaluation report: Markdown, one self-contained HTML page, and CSV tables.

``build_report`` splits the tidy tables by project, runs every builder of
``analysis.report_sections.SECTION_BUILDERS`` on each project, renders the sections and
writes each table's data to ``<table name>.csv`` (all projects in one file, with a
``project`` column).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.report_blocks import Section
from analysis.report_rendering import render_html, render_markdown
from analysis.report_sections import SECTION_BUILDERS, ProjectData, SectionBuilder, guide_section
from analysis.tables import HUMAN_SOURCE, natural_key

REPORT_TITLE = "Human evaluation report"
TABLE_NAMES = ("tasks", "judgments", "spans")
REQUIRED_COLUMNS = {
    "tasks": ("project", "task_id"),
    "judgments": ("project", "task_id", "annotation_id", "item", "value"),
    "spans": ("project", "task_id", "annotation_id", "label"),
}


@dataclass(frozen=True)
class ReportPaths:
    """Where ``build_report`` wrote its files; ``csv`` maps table name to path."""

    markdown: Path
    html: Path
    csv: dict[str, Path] = field(default_factory=dict)


def build_report(
    tables: Mapping[str, pd.DataFrame],
    schemas: Mapping[str, Mapping[str, Any]],
    out_dir: Path,
    *,
    title: str = REPORT_TITLE,
    section_builders: list[SectionBuilder] | None = None,
) -> ReportPaths:
    """Write ``report.md``, ``report.html`` and one CSV per table into ``out_dir``.

    ``tables`` holds the tidy ``tasks``, ``judgments`` and ``spans`` frames (any may be
    absent). ``schemas`` maps a schema name to its metadata; a project's schema is the
    ``schema`` column of its tasks, else the only schema given, else the schema named like
    the project. Raises ``ValueError`` when a table lacks a required column.
    """
    frames = {name: _normalised_table(name, tables.get(name)) for name in TABLE_NAMES}
    builders = SECTION_BUILDERS if section_builders is None else section_builders
    sections: list[Section] = [guide_section()]
    for project in _projects(frames):
        data = _project_data(project, frames, schemas)
        subsections = [section for build in builders if (section := build(data)) is not None]
        sections.append(Section(_project_title(data), subsections=subsections))

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(markdown=out_dir / "report.md", html=out_dir / "report.html")
    paths.markdown.write_text(render_markdown(title, sections), encoding="utf-8")
    paths.html.write_text(render_html(title, sections), encoding="utf-8")
    for name, data in _csv_tables(sections).items():
        path = out_dir / f"{name}.csv"
        data.to_csv(path, index=False)
        paths.csv[name] = path
    return paths


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
    project: object, frames: Mapping[str, pd.DataFrame], schemas: Mapping[str, Mapping[str, Any]]
) -> ProjectData:
    own = {name: frame[frame["project"] == project] for name, frame in frames.items()}
    schema_name = _schema_name(project, own["tasks"], schemas)
    return ProjectData(
        project=project,
        schema_name=schema_name,
        schema_meta=schemas.get(schema_name, {}) if schema_name else {},
        tasks=own["tasks"],
        judgments=own["judgments"],
        spans=own["spans"],
    )


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
