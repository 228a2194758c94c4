"""The front page of a project's report, what a study lead reads first: one table answering the
study lead's questions (completion, agreement per item with its interval, what reviewers did with
the suggestions, each judge against the humans, cost), each row linking to the section holding
its numbers; then how the report is cut, completion against the overlap target and who annotates
how fast.

The table is made of the sections' typed findings (:class:`~analysis.report.blocks.Glance`, which
each section builds from its own computed values), never of other sections' display tables.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from judgelab.analysis.estimates import linked_sample_rows
from judgelab.analysis.facets import TOTAL_LABEL
from judgelab.analysis.report.blocks import Block, Glance, GlanceTable, Paragraph, Section, Table
from judgelab.analysis.report.data import GOLD_SOURCE, ProjectData, listed, percent, plural, with_project
from judgelab.analysis.report.sections.suggestions import suggestion_headline
from judgelab.analysis.tables import HUMAN_SOURCE, cancelled_mask, human_annotations, parsed_times

FRONT_PAGE_TITLE = "At a glance"
MAX_BUCKET = 3  # tasks with 0, 1, 2, 3+ annotations
TARGET_COLUMN = "project_max_annotations"
TARGET_PERCENT_COLUMN = "project_overlap_percent"


def front_page(
    data: ProjectData,
    sections: Sequence[Section],
    cut_sentences: Sequence[str],
    by: Sequence[str] = (),
    cells: pd.DataFrame | None = None,
) -> Section:
    """The 'At a glance' section of a project (``data`` is the whole project, every cell): the
    summary table first, then the cut, completion, throughput and the rest."""
    per_task = annotations_per_task(data)
    rows = glance_rows(completion_glance(data, per_task), sections)
    pooled = any(g.cell == TOTAL_LABEL for g, _ in rows)
    caption = "The study at a glance" + (" (the '(all)' rows: every cell pooled)" if pooled else "")
    blocks: list[Block] = [
        GlanceTable(rows, caption),
        Table("at_a_glance", "The study at a glance", glance_csv(rows).assign(project=data.project), csv_only=True),
    ]
    blocks += [Paragraph(sentence) for sentence in cut_sentences]
    completion = completion_table(per_task)
    blocks += completion_blocks(data, per_task, completion)
    throughput = throughput_table(data)
    if not throughput.empty:
        blocks.append(
            Paragraph(
                "Per annotator: annotations submitted (cancelled ones apart), over how many days with at least one, "
                "and the time Label Studio recorded on each annotation (lead time: median and total)."
            )
        )
        blocks.append(
            Table(
                "annotator_throughput",
                "Throughput and lead time per annotator",
                throughput,
                data=with_project(throughput, data.project),
            )
        )
    blocks += suggestion_blocks(data)
    if cells is not None and not cells.empty:
        blocks.append(Table("cells", "Tasks per cell", cells, data=with_project(cells, data.project)))
    return Section(FRONT_PAGE_TITLE, blocks)


# -- completion ------------------------------------------------------------------------------


def overlap_target(tasks: pd.DataFrame) -> tuple[int | None, int | None]:
    """Label Studio's annotations-per-task setting and its share of tasks, when the sync recorded them."""

    def first(column: str) -> int | None:
        if column not in tasks.columns:
            return None
        values = pd.to_numeric(tasks[column], errors="coerce").dropna()
        return int(values.iloc[0]) if len(values) else None

    return first(TARGET_COLUMN), first(TARGET_PERCENT_COLUMN)


def annotations_per_task(data: ProjectData) -> np.ndarray:
    """The number of human annotations (not cancelled) of every task of the project."""
    per_task = human_annotations(data.judgments, data.spans).groupby(["project", "task_id"]).size()
    tasks = data.tasks[["project", "task_id"]].drop_duplicates() if not data.tasks.empty else per_task.index.to_frame()
    if tasks.empty:
        return np.array([], dtype=int)
    index = pd.MultiIndex.from_frame(tasks.astype(object))
    return per_task.reindex(index, fill_value=0).to_numpy(dtype=int)


def completion_table(per_task: np.ndarray) -> pd.DataFrame:
    """Tasks per number of human annotations: rows 0, 1, 2, 3+."""
    values = np.minimum(per_task, MAX_BUCKET)
    rows = []
    for bucket in range(MAX_BUCKET + 1):
        n = int((values == bucket).sum())
        rows.append(
            {
                "annotations per task": f"{bucket}+" if bucket == MAX_BUCKET else str(bucket),
                "n_tasks": n,
                "share": n / len(values) if len(values) else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def sample_completion(data: ProjectData) -> str | None:
    """Where this project's tasks are labelled in its human-sample project(s): "12 of its tasks
    labelled in the human-sample project 7", or None without one. People label a sample there
    (blind to the judge), so this project's own completion alone would read as "nothing done"."""
    judgments, spans, samples = linked_sample_rows(data.tasks, data.project, data.peers)
    if not samples:
        return None
    labelled = set()
    for frame in (judgments, spans):
        if not frame.empty and "task_id" in frame.columns:
            labelled |= set(frame["task_id"])
    where = ", ".join(str(s) for s in samples)
    project = "project" if len(samples) == 1 else "projects"
    return f"{len(labelled)} of its tasks labelled in the human-sample {project} {where}"


def _typical_count(per_task: np.ndarray) -> str:
    """``; the most common number of annotations per annotated task is 3``, every number as common
    named (``are 2 and 3, on 6 tasks each``); nothing when no task is annotated."""
    annotated = per_task[per_task > 0]
    if not len(annotated):
        return ""
    modes = [int(value) for value in pd.Series(annotated).mode()]
    if len(modes) == 1:
        return f"; the most common number of annotations per annotated task is {modes[0]}"
    each = int((annotated == modes[0]).sum())
    return (
        f"; the most common numbers of annotations per annotated task are {listed([str(m) for m in modes])}, "
        f"on {each} tasks each"
    )


def completion_blocks(data: ProjectData, per_task: np.ndarray, completion: pd.DataFrame) -> list[Block]:
    n_tasks = len(per_task)
    if n_tasks == 0:
        return [Paragraph("The project has no tasks yet.")]
    target, percent_of_tasks = overlap_target(data.tasks)
    counts = completion.set_index("annotations per task")["n_tasks"]
    text = (
        f"Completion: of the {plural(n_tasks, 'task')}, {counts['0']} have no human annotation yet, {counts['1']} have "
        f"one, {counts['2']} two and {counts[f'{MAX_BUCKET}+']} three or more."
    )
    if target:
        reached = int((per_task >= target).sum())
        share = f" on {percent_of_tasks}% of the tasks" if percent_of_tasks not in (None, 100) else ""
        text += (
            f" The overlap target is {plural(target, 'annotation')} per task{share} (Label Studio's setting): "
            f"{reached} tasks ({percent(reached / n_tasks)}) have reached it."
        )
    else:
        text += (
            " No overlap target is recorded for this project (judgelab sync reads Label Studio's annotations-per-task "
            f"setting){_typical_count(per_task)}."
        )
    sampled = sample_completion(data)
    if sampled:
        text += f" Besides, {sampled} (see Study estimates)."
    return [
        Paragraph(text),
        Table(
            "completion",
            "Tasks per number of human annotations",
            completion,
            data=with_project(completion, data.project),
        ),
    ]


# -- throughput ------------------------------------------------------------------------------


def throughput_table(data: ProjectData) -> pd.DataFrame:
    """Per human annotator: annotations, tasks, first and last day, active days, annotations per
    active day, median and total lead time; empty without human annotations."""
    judgments = data.judgments[data.judgments["source"] == HUMAN_SOURCE]
    if judgments.empty or "annotator" not in judgments.columns:
        return pd.DataFrame()
    cancelled = cancelled_mask(judgments)
    per_annotation = (
        judgments.assign(
            _cancelled=cancelled,
            _time=parsed_times(judgments.get("created_at")),
            _lead=pd.to_numeric(judgments.get("lead_time"), errors="coerce"),
        )
        .groupby(["annotator", "annotation_id"], dropna=False)
        .agg(
            task_id=("task_id", "first"), cancelled=("_cancelled", "max"), time=("_time", "min"), lead=("_lead", "max")
        )
        .reset_index()
    )
    rows = []
    for annotator, group in per_annotation.groupby("annotator", sort=False):
        done = group[~group["cancelled"].astype(bool)]
        days = done["time"].dropna().dt.date
        active = int(days.nunique())
        lead = done["lead"].dropna()
        rows.append(
            {
                "annotator": annotator,
                "n_annotations": len(done),
                "n_cancelled": int(group["cancelled"].astype(bool).sum()),
                "first_day": str(days.min()) if active else "",
                "last_day": str(days.max()) if active else "",
                "active_days": active,
                "per_active_day": len(done) / active if active else float("nan"),
                "median_lead_time_s": float(lead.median()) if len(lead) else float("nan"),
                "total_hours": float(lead.sum() / 3600) if len(lead) else float("nan"),
            }
        )
    table = pd.DataFrame(rows).sort_values("n_annotations", ascending=False, kind="stable").reset_index(drop=True)
    if not (table["active_days"] > 0).any():
        table = table.drop(columns=["first_day", "last_day", "active_days", "per_active_day"])
    if table.get("median_lead_time_s", pd.Series(dtype=float)).isna().all():
        table = table.drop(columns=["median_lead_time_s", "total_hours"], errors="ignore")
    return table


# -- the summary table ------------------------------------------------------------------------

GLANCE_ORDER = (
    "Completion",
    "Agreement",
    "Span agreement",
    "Targets",
    "Suggestions",
    "Rubber-stamping",
    "Judges against gold",
    "Judges",
    "Estimates",
    "Cost",
)
MAX_GLANCE_ROWS = 8  # per topic; the rest are in the section the last row links to


def glance_rows(completion: Glance, sections: Sequence[Section]) -> list[tuple[Glance, Section | None]]:
    """The front page's summary: the sections' typed findings (:class:`Glance`), the pooled cell's
    only where a cut has one, in the order a study lead asks (completion, agreement, suggestions,
    judges, cost), at most :data:`MAX_GLANCE_ROWS` per topic."""
    found = [pair for section in sections for pair in section.glances()]
    rows: list[tuple[Glance, Section | None]] = [(completion, None)]
    topics = sorted({g.topic for g, _ in found}, key=lambda t: (GLANCE_ORDER.index(t) if t in GLANCE_ORDER else 99, t))
    for topic in topics:
        mine = [(g, s) for g, s in found if g.topic == topic]
        pooled = [(g, s) for g, s in mine if g.cell == TOTAL_LABEL]
        mine = pooled or _across_cells(mine)
        if len(mine) > MAX_GLANCE_ROWS:
            rest = len(mine) - MAX_GLANCE_ROWS + 1
            last = Glance(topic, f"{rest} more", "see the section", None)
            mine = [*mine[: MAX_GLANCE_ROWS - 1], (last, mine[-1][1])]
        rows += mine
    return rows


def _across_cells(rows: list[tuple[Glance, Section]]) -> list[tuple[Glance, Section]]:
    """One row per subject of a cut report without a pooled cell: the cell with the lowest value
    in full, and the highest value with its cell."""
    subjects: dict[str, list[tuple[Glance, Section]]] = {}
    for glance, section in rows:
        subjects.setdefault(glance.subject, []).append((glance, section))
    out = []
    for subject, mine in subjects.items():
        if len(mine) == 1:
            out.append(mine[0])
            continue
        valued = [(g, s) for g, s in mine if g.value is not None]
        if not valued:
            first, section = mine[0]
            out.append((Glance(first.topic, subject, f"{first.answer} ({len(mine)} cells)"), section))
            continue
        low = min(valued, key=lambda pair: pair[0].value)
        high = max(valued, key=lambda pair: pair[0].value)
        out.append((Glance(low[0].topic, subject, _cells_answer(mine, valued, low[0], high[0]), low[0].value), low[1]))
    return out


def _cells_answer(mine: list, valued: list, low: Glance, high: Glance) -> str:
    """``3 cells; lowest in A: <A's answer>; highest in B: 0.62``, the figure as it prints (two
    decimals): cells that print as low or as high as those are named with them, and cells that all
    print alike are said to ("the same in every cell"), not ranked by digits nobody sees."""
    shown = lambda value: f"{value:.2f}"  # noqa: E731
    if len(valued) == 1:
        return f"{len(mine)} cells; a figure in {low.cell} alone: {low.answer}"
    if shown(low.value) == shown(high.value):
        where = "every cell" if len(valued) == len(mine) else f"the {len(valued)} with a figure"
        return f"{len(mine)} cells; the same in {where} ({shown(low.value)}); in {low.cell}: {low.answer}"
    as_low = [g.cell for g, _ in valued if g is not low and shown(g.value) == shown(low.value)]
    highs = [g.cell for g, _ in valued if shown(g.value) == shown(high.value)]
    also = f" (as low in {listed(as_low)})" if as_low else ""
    return (
        f"{len(mine)} cells; lowest in {low.cell}{also}: {low.answer}; highest in {listed(highs)}: {shown(high.value)}"
    )


def completion_glance(data: ProjectData, per_task: np.ndarray) -> Glance:
    n_tasks = len(per_task)
    if not n_tasks:
        return Glance("Completion", "tasks", "the project has no tasks yet", None)
    target, _ = overlap_target(data.tasks)
    annotated = int((per_task > 0).sum())
    text = f"{annotated} of {plural(n_tasks, 'task')} annotated"
    gold = data.judgments.loc[data.judgments["source"] == GOLD_SOURCE, "task_id"].nunique()
    if not annotated and gold:
        return Glance("Completion", "tasks", f"{n_tasks} tasks with reference labels on {gold}; no human annotation")
    if target:
        reached = int((per_task >= target).sum())
        text += f"; {reached} ({percent(reached / n_tasks)}) reached the target of {plural(target, 'annotation')} each"
    else:
        text += f"; {int((per_task >= 2).sum())} by two or more annotators"
    sampled = sample_completion(data)
    if sampled:
        text += f"; {sampled}"
    return Glance("Completion", "tasks", text, annotated / n_tasks)


def glance_csv(rows: Sequence[tuple[Glance, Section | None]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"topic": g.topic, "subject": g.subject, "cell": g.cell, "answer": g.answer, "value": g.value,
             "section": s.title if s is not None else ""}
            for g, s in rows
        ]
    )  # fmt: skip


# -- suggestions -------------------------------------------------------------------------------


def suggestion_blocks(data: ProjectData) -> list[Block]:
    """The suggestion acceptance headline (the Suggestions section's), or a sentence saying why
    there is none."""
    headline = suggestion_headline(data)
    return [Paragraph(headline)] if headline else []
