"""A faceted report: which cut applies to a project, and how the sections of its cells become one.

The cut (:class:`analysis.facets.Cut`) comes from ``--by`` / ``--where`` (``ReportOptions.by`` /
``where``), else from the cut kept with the project's tables (``ReportOptions.cuts``: a published
data set's, which ``judgelab load`` records, or one a team kept with ``report --keep-cut``), else
there is none and the project is reported whole. A kept cut may name fields the project lacks:
those are left out, and the report says so. Fields given on the command line must exist
(:class:`analysis.facets.FacetError` otherwise). A schema's ``suggested_cut`` (the factors its
guideline's study is analysed by) is never applied by itself: the report only says how to apply it.

Every section builder runs once per cell; :func:`merge_cell_sections` then folds the cells'
sections into one: a table becomes one table with the cell's fields as its first columns (so
its CSV holds every cell), a figure appears once per cell side by side, a sentence all cells
share appears once, and the sentences that differ go under one fold per cell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from judgelab.analysis.facets import (
    TOTAL_LABEL,
    Cut,
    Expression,
    FacetCell,
    check_fields,
    expression_fields,
    parse_where,
    split_by,
)
from judgelab.analysis.report.blocks import Block, Details, Figure, Gallery, Paragraph, Section, Table
from judgelab.analysis.report.data import listed, plural

COMMAND_LINE = "as asked"
KEPT_CUT = "the cut kept with these tables"
MAX_LISTED_CELLS = 6  # more cells than this: their sizes go to cells.csv, not into the sentence


@dataclass(frozen=True)
class FacetPlan:
    """The cut of one project: ``by`` fields used, the ``where`` filter, what was left out, and
    where each came from (:data:`COMMAND_LINE`, or the kept cut's own words)."""

    by: tuple[str, ...] = ()
    where: Expression | None = None
    total: bool = False
    by_origin: str = KEPT_CUT
    where_origin: str = KEPT_CUT
    study_by: tuple[str, ...] = ()  # the kept cut's factors, whether or not used
    notes: list[str] = field(default_factory=list)
    suggested_by: tuple[str, ...] = ()  # the schema's suggested factors these tasks have, when nothing cuts


def facet_plan(
    schema_meta: Mapping[str, Any] | None,
    tasks: pd.DataFrame,
    by: Sequence[str] | str | None,
    where: str | None,
    kept: Cut | None = None,
) -> FacetPlan:
    """The cut for a project with these ``tasks``: ``by``/``where`` when given (``()`` and ``""``
    turn the kept cut off), else the ``kept`` cut, restricted to the fields the tasks have, else
    none."""
    kept = kept or Cut()
    origin = kept.origin or KEPT_CUT
    notes: list[str] = []
    if by is not None:
        chosen_by, by_origin = split_by(by), COMMAND_LINE
        check_fields(chosen_by, tasks, "--by")
    else:
        chosen_by, by_origin = tuple(name for name in kept.by if name in tasks.columns), origin
        missing = [name for name in kept.by if name not in tasks.columns]
        if missing:
            notes.append(
                f"The study is analysed by {listed(kept.by)} ({origin}), but these tasks have no "
                f"{listed(missing, 'or')} field, so "
                f"{'the tables are cut by ' + listed(chosen_by) + ' only' if chosen_by else 'nothing is cut'}."
            )
    expression, where_origin = None, origin
    if where is not None:
        where_origin = COMMAND_LINE
        if where.strip() and where.strip().lower() != "none":
            expression = parse_where(where)
            check_fields(expression_fields(expression), tasks, "--where")
    elif kept.where:
        candidate = parse_where(kept.where)
        missing = sorted(expression_fields(candidate) - set(tasks.columns) - {"annotator", "source"})
        if missing:
            notes.append(
                f"The study's filter ({candidate}; {origin}) needs the field(s) {', '.join(missing)}, which these "
                "tasks lack: every task is kept."
            )
        else:
            expression = candidate
    total = kept.total if by is None else False
    suggested: tuple[str, ...] = ()
    if not chosen_by and expression is None and by is None and where is None:
        wanted = split_by(((schema_meta or {}).get("suggested_cut") or {}).get("by"))
        suggested = tuple(
            name for name in wanted if name in tasks.columns and tasks[name].dropna().astype(str).nunique() > 1
        )
    return FacetPlan(chosen_by, expression, total, by_origin, where_origin, kept.by, notes, suggested)


def plan_sentences(
    plan: FacetPlan,
    cells: Sequence[FacetCell],
    n_filtered_out: int,
    n_tasks: int,
    empty_left_out: Mapping[str, int] | None = None,
) -> list[str]:
    """What the cut is, in sentences, with the number of tasks in each cell. ``empty_left_out``
    counts, per field of the filter, the tasks left out whose field is empty."""
    sentences = list(plan.notes)
    real = [cell for cell in cells if not cell.is_total]
    cutting = plan.by and len(real) >= 1
    # one origin for both the filter and the facets: said once, before them
    shared = plan.where is not None and cutting and plan.where_origin == plan.by_origin != COMMAND_LINE
    if shared:
        sentences.append(f"This report follows {plan.by_origin}.")
    if plan.where is not None:
        origin = "the filter given" if plan.where_origin == COMMAND_LINE else plan.where_origin
        text = (
            f"Only tasks and answers with {plan.where} are analysed{'' if shared else f' ({origin})'}: "
            f"{n_filtered_out} of the {n_tasks} tasks are left out."
        )
        empties = [f"{count} because their {name} is empty" for name, count in (empty_left_out or {}).items() if count]
        if empties:
            text = text.rstrip(".") + f", {listed(empties)}."
        sentences.append(text)
    if cutting:
        sizes = [cell.n_tasks for cell in real]
        if len(real) > MAX_LISTED_CELLS:
            spread = str(min(sizes)) if min(sizes) == max(sizes) else f"{min(sizes)} to {max(sizes)}"
            counts = f"{spread} tasks each (the table 'Tasks per cell' below lists them)"
        else:
            counts = "tasks per cell: " + "; ".join(f"{cell.short_label}: {cell.n_tasks}" for cell in real)
        text = (
            f"Every table and figure below is cut by {listed(plan.by)}{'' if shared else f' ({plan.by_origin})'}: "
            f"{plural(len(real), 'cell')}, {counts}."
        )
        if any(cell.is_total for cell in cells):
            text += " The '(all)' rows pool every cell."
        sentences.append(text)
    elif plan.study_by:
        sentences.append(
            f"This report pools all {cells[0].n_tasks if cells else 0} tasks in one: it is not cut by "
            f"{listed(plan.study_by)}, the study's factors."
        )
    elif plan.suggested_by:
        sentences.append(
            f"This report takes the project whole. The schema's guideline analyses its study by "
            f"{listed(plan.suggested_by)}: `judgelab report --by {','.join(plan.suggested_by)} --keep-cut` cuts "
            "this project's reports by them from now on."
        )
    return sentences


def cells_table(cells: Sequence[FacetCell]) -> pd.DataFrame:
    """One row per cell: its field values and its number of tasks."""
    return pd.DataFrame([{**cell.columns(), "n_tasks": cell.n_tasks} for cell in cells if not cell.is_total])


def pooled_counts(tasks: pd.DataFrame, fields: Sequence[str]) -> str:
    """``a: 12; b: 30`` tasks per value of the study's factors that the tasks have (for a pooled report)."""
    present = [name for name in fields if name in tasks.columns]
    if not present or tasks.empty:
        return ""
    counts = tasks.drop_duplicates(["project", "task_id"]).groupby(present, dropna=False).size()
    return "; ".join(
        f"{', '.join(map(str, key if isinstance(key, tuple) else (key,)))}: {count}" for key, count in counts.items()
    )


# -- merging the sections of the cells -------------------------------------------------------


def merge_cell_sections(parts: Sequence[tuple[FacetCell, list[Section]]]) -> list[Section]:
    """One list of sections from every cell's sections (see the module docstring)."""
    titles: list[str] = []
    members: dict[str, list[tuple[FacetCell, Section]]] = {}
    for cell, sections in parts:
        for section in sections:
            if section.title not in members:
                titles.append(section.title)
                members[section.title] = []
            members[section.title].append((cell, section))
    return [_merge_section(title, members[title], len(parts)) for title in titles]


def _merge_section(title: str, members: list[tuple[FacetCell, Section]], n_cells: int) -> Section:
    blocks: list[Block] = []
    if len(members) < n_cells:
        shown = ", ".join(cell.label for cell, _ in members)
        blocks.append(Paragraph(f"Only for {shown}: the other cells have nothing to show here."))
    blocks += _merge_blocks(members)
    children = merge_cell_sections([(cell, section.subsections) for cell, section in members])
    glance = [
        replace(g, cell=TOTAL_LABEL if cell.is_total else cell.short_label if cell.values else "")
        for cell, section in members
        for g in section.glance
    ]
    return Section(title, blocks, children, glance)


def _key(block: Block, shared: set[str]) -> tuple[str, ...] | None:
    if isinstance(block, Paragraph):
        return ("p", block.text) if block.text in shared else None
    if isinstance(block, Table):
        return ("t", block.name, block.caption)
    if isinstance(block, Figure):
        return ("f", block.caption)
    return None


def _merge_blocks(members: list[tuple[FacetCell, Section]]) -> list[Block]:
    texts = [{b.text for b in section.blocks if isinstance(b, Paragraph)} for _, section in members]
    shared = set.intersection(*texts) if len(members) > 1 else (texts[0] if texts else set())
    order: list[tuple[str, ...]] = []
    entries: dict[tuple[str, ...], list[tuple[FacetCell, Block]]] = {}
    notes: dict[str, tuple[FacetCell, list[Block]]] = {}
    for cell, section in members:
        position = -1
        for block in section.blocks:
            key = _key(block, shared)
            if key is None:
                notes.setdefault(cell.label, (cell, []))[1].append(block)
                continue
            if key in entries:
                position = order.index(key)
            else:
                position += 1
                order.insert(position, key)
                entries[key] = []
            entries[key].append((cell, block))
    out: list[Block] = []
    for key in order:
        found = entries[key]
        if key[0] == "p":
            out.append(found[0][1])
        elif key[0] == "t":
            out.append(_merged_table(found))
        else:
            out.append(_merged_figures(found))
    if notes:
        out.append(Paragraph("What the numbers say, cell by cell:") if len(members) > 1 else Paragraph(""))
        for label, (_, blocks) in notes.items():
            out.append(Details(label, blocks, open=len(notes) <= 2))
    return [block for block in out if not (isinstance(block, Paragraph) and not block.text)]


def _merged_table(found: list[tuple[FacetCell, Block]]) -> Table:
    first = found[0][1]
    assert isinstance(first, Table)
    cells = [cell for cell, _ in found]
    shown = _with_cells([table.shown for _, table in found if isinstance(table, Table)], cells)
    data = _with_cells([table.csv_data for _, table in found if isinstance(table, Table)], cells)
    constant = [  # one project, one language: said above the table, kept in the CSV
        name
        for name in ["project", *(field for field, _ in cells[0].values)]
        if name in shown.columns and len(shown) > 1 and shown[name].astype(str).nunique() == 1
    ]
    return Table(first.name, first.caption, shown.drop(columns=constant), data=data, csv_only=first.csv_only)


def _with_cells(parts: list[pd.DataFrame], cells: list[FacetCell]) -> pd.DataFrame:
    """The parts one below the other, each row with its cell's field values as the first columns
    (after ``project``): one concatenation, the cell columns built once."""
    frame = _concat(parts)
    names = [name for name, _ in cells[0].values if name not in frame.columns]
    if not names or frame.empty:
        return frame.reindex(columns=[*frame.columns, *[n for n in names if n not in frame.columns]])
    sizes = [len(part) if not part.empty else 0 for part in parts]
    cell_columns = {
        name: np.repeat(np.array([cell.columns()[name] for cell in cells], dtype=object), sizes) for name in names
    }
    front = [column for column in ("project",) if column in frame.columns]
    rest = [column for column in frame.columns if column not in front]
    return pd.concat([frame[front], pd.DataFrame(cell_columns, index=frame.index), frame[rest]], axis=1)


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    kept = [part for part in parts if not part.empty]
    if not kept:
        return parts[0]
    frame = pd.concat(kept, ignore_index=True) if len(kept) > 1 else kept[0].reset_index(drop=True)
    for column in frame.columns:  # a column some cells dropped (an empty note) is blank, not n/a
        if any(column not in part.columns for part in kept) and not pd.api.types.is_numeric_dtype(frame[column]):
            frame[column] = frame[column].where(frame[column].notna(), "")
    return frame


def _merged_figures(found: list[tuple[FacetCell, Block]]) -> Block:
    figures = [figure for _, figure in found if isinstance(figure, Figure)]
    combine = figures[0].combine
    if combine is not None and all(figure.combine is combine for figure in figures):
        parts = [(cell.short_label, figure.payload) for (cell, _), figure in zip(found, figures, strict=True)]
        names = ", ".join(name for name, _ in found[0][0].values)
        return Figure(f"{figures[0].caption}, per {names}", render=lambda: combine(parts))
    named = [
        Figure(f"{cell.label}: {figure.caption}" if cell.values else figure.caption, figure.png, figure.render)
        for (cell, _), figure in zip(found, figures, strict=True)
    ]
    return named[0] if len(named) == 1 else Gallery(named)
