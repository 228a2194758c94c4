"""The front page of a project's report, what a study lead reads first: how the report is cut,
how far the annotation has come against the overlap target, who annotates how fast, how often
the model's suggestions were accepted, and three to five key findings, each linking to the
section that holds its numbers.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from judgelab.analysis.report.blocks import Block, Finding, Paragraph, Section, Table
from judgelab.analysis.report.data import ProjectData, is_nan, number, percent, plural, with_project
from judgelab.analysis.tables import HUMAN_SOURCE, cancelled_mask, human_annotations

FRONT_PAGE_TITLE = "At a glance"
MAX_FINDINGS = 5
MAX_BUCKET = 3  # tasks with 0, 1, 2, 3+ annotations
TARGET_COLUMN = "project_max_annotations"
TARGET_PERCENT_COLUMN = "project_overlap_percent"
SUGGESTION_HOOK = "suggestion_headline"  # the review loop's function, found in the sections package when present


def front_page(
    data: ProjectData,
    sections: Sequence[Section],
    cut_sentences: Sequence[str],
    by: Sequence[str] = (),
    cells: pd.DataFrame | None = None,
) -> Section:
    """The 'At a glance' section of a project (``data`` is the whole project, every cell)."""
    blocks: list[Block] = [Paragraph(sentence) for sentence in cut_sentences]
    findings = key_findings(data, sections, by)
    if findings:
        blocks.append(Paragraph("Key findings (each links to the section with its numbers):"))
        blocks += findings
    per_task = annotations_per_task(data)
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
        typical = int(pd.Series(per_task[per_task > 0]).mode().iloc[0]) if (per_task > 0).any() else 0
        text += (
            " No overlap target is recorded for this project (judgelab sync reads Label Studio's annotations-per-task "
            f"setting); the most common number of annotations per annotated task is {typical}."
        )
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
            _time=pd.to_datetime(judgments.get("created_at"), errors="coerce", utc=True, format="ISO8601"),
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


# -- suggestions (the review loop's headline) -------------------------------------------------


def suggestion_function() -> Callable[[ProjectData], object] | None:
    """HOOK for the review loop: ``suggestion_headline(data)`` from any module of
    ``analysis.report.sections`` (where the Suggestions section registers), when one defines it."""
    package = "judgelab.analysis.report.sections"
    for name, module in sorted(sys.modules.items()):
        if name == package or name.startswith(package + "."):
            found = getattr(module, SUGGESTION_HOOK, None)
            if callable(found):
                return found
    return None


def suggestion_blocks(data: ProjectData) -> list[Block]:
    """The suggestion acceptance headline (HOOK: the review loop's ``suggestion_headline``), or a
    sentence saying why there is none."""
    headline = suggestion_function()
    if headline is not None:
        result = headline(data)
        if result is None:
            return []
        if isinstance(result, str):
            return [Paragraph(result)]
        if isinstance(result, list):
            return [block if not isinstance(block, str) else Paragraph(block) for block in result]
        return [result]  # a Block
    if not data.model_sources:
        return [Paragraph("Suggestions: this project has no model predictions, so there is no acceptance rate.")]
    return [
        Paragraph(
            f"Suggestions: predictions from {', '.join(data.model_sources)} are present; see 'Model predictions "
            "against humans' for how close they come to the annotators."
        )
    ]


# -- key findings ----------------------------------------------------------------------------


def key_findings(data: ProjectData, sections: Sequence[Section], by: Sequence[str]) -> list[Finding]:
    """Up to five sentences with their numbers, each pointing to its section."""
    findings: list[Finding] = []
    for extract in (_agreement_findings, _line_findings, _judge_findings, _span_findings, _pilot_findings):
        findings += extract(sections, list(by))
    return findings[:MAX_FINDINGS]


def _find(sections: Sequence[Section], name: str) -> tuple[Section, Table] | None:
    for section in sections:
        found = section.find(name)
        if found is not None:
            return found
    return None


def _cell(row: pd.Series, by: Sequence[str]) -> str:
    parts = [f"{name} = {row[name]}" for name in by if name in row.index and not is_nan(row[name])]
    return f" ({', '.join(parts)})" if parts else ""


def _pooled_rows(rows: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """The '(all)' rows of a faceted table when it has them, else every row."""
    if by and by[0] in rows.columns and (rows[by[0]].astype(str) == "(all)").any():
        return rows[rows[by[0]].astype(str) == "(all)"]
    return rows


def _agreement_findings(sections: Sequence[Section], by: list[str]) -> list[Finding]:
    found = _find(sections, "agreement")
    if found is None:
        return []
    section, table = found
    data = table.csv_data
    if "krippendorff_alpha" not in data.columns:
        return []
    rows = data.dropna(subset=["krippendorff_alpha"])
    rows = rows[~rows["item"].astype(str).str.match(r"^line_\d+$")]
    if by:
        rows = rows[~rows[[c for c in by if c in rows.columns]].astype(str).eq("(all)").any(axis=1)]
    if rows.empty:
        return []

    def describe(row: pd.Series) -> str:
        interval = ""
        if not (is_nan(row.get("alpha_ci_low")) or is_nan(row.get("alpha_ci_high"))):
            interval = f", 95% interval {number(row['alpha_ci_low'], 2)} to {number(row['alpha_ci_high'], 2)}"
        return (
            f"{row['item']}{_cell(row, by)}: Krippendorff's {row['alpha_level']} alpha "
            f"{number(row['krippendorff_alpha'], 2)}"
            f"{interval}, on {plural(int(row['n_units']), 'task')} rated twice or more"
        )

    low = rows.loc[rows["krippendorff_alpha"].idxmin()]
    high = rows.loc[rows["krippendorff_alpha"].idxmax()]
    reliable = int((rows["krippendorff_alpha"] >= 0.8).sum())
    findings = [Finding(f"Lowest agreement: {describe(low)}.", section)]
    if len(rows) > 1:
        findings.append(Finding(f"Highest agreement: {describe(high)}.", section))
    findings.append(
        Finding(
            f"{reliable} of {len(rows)} item rows reach Krippendorff's 0.800 for reliable data; "
            f"{int((rows['krippendorff_alpha'] < 0.667).sum())} are below the 0.667 minimum for tentative conclusions.",
            section,
        )
    )
    return findings


def _line_findings(sections: Sequence[Section], by: list[str]) -> list[Finding]:
    found = _find(sections, "line_agreement")
    if found is None:
        return []
    section, table = found
    rows = table.csv_data
    rows = rows[rows["scheme"].astype(str) == "three verdicts"] if "scheme" in rows else rows
    if rows.empty or "krippendorff_alpha" not in rows:
        return []
    rows = rows.dropna(subset=["krippendorff_alpha"])
    if rows.empty:
        return []
    rows = _pooled_rows(rows, by)
    row = rows.iloc[0]
    return [
        Finding(
            f"Line verdicts{_cell(row, by)}: nominal alpha {number(row['krippendorff_alpha'], 2)} over "
            f"{plural(int(row['n_units']), 'line')} judged twice or more; all annotators agree on "
            f"{percent(row['share_all_agree'])} of them.",
            section,
        )
    ]


def _judge_findings(sections: Sequence[Section], by: list[str]) -> list[Finding]:
    found = _find(sections, "judges_vs_gold")
    if found is None:
        return []
    section, table = found
    rows = table.csv_data
    rows = rows[(rows["level"] == "summary") & rows["source"].astype(str).str.startswith("model:")]
    rows = rows.dropna(subset=["balanced_accuracy"])
    if rows.empty:
        return []
    rows = _pooled_rows(rows, by)
    best = rows.loc[rows["balanced_accuracy"].idxmax()]
    return [
        Finding(
            f"Best model judge at summary level{_cell(best, by)}: {best['source']}, balanced accuracy "
            f"{number(best['balanced_accuracy'], 3)} on {plural(int(best['n_units']), 'summary', 'summaries')}.",
            section,
        )
    ]


def _span_findings(sections: Sequence[Section], by: list[str]) -> list[Finding]:
    found = _find(sections, "span_agreement")
    if found is None:
        return []
    section, table = found
    rows = table.csv_data
    rows = rows[(rows["comparison"] == "human – human") & (rows["form"] == "per span")]
    if rows.empty:
        return []
    row = rows.iloc[0]
    return [
        Finding(
            f"Span agreement between annotators{_cell(row, by)}: F1 {number(row['F1 soft'], 2)} ignoring labels and "
            f"{number(row['F1 hard'], 2)} with labels, mean over {plural(int(row['n_pairs']), 'pair')}.",
            section,
        )
    ]


def _pilot_findings(sections: Sequence[Section], by: list[str]) -> list[Finding]:
    found = _find(sections, "pilot_agreement")
    if found is None:
        return []
    section, table = found
    rows = table.csv_data
    if "passed" not in rows:
        return []
    rows = _pooled_rows(rows, by)
    failed = rows[~rows["passed"].astype(bool)]
    text = (
        f"The pilot passes every agreement target on {plural(len(rows), 'item')}."
        if failed.empty
        else f"The pilot misses a target on {', '.join(map(str, failed['item']))} (of {plural(len(rows), 'item')})."
    )
    return [Finding(text, section)]
