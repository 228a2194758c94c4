"""Report section "Study estimates": the study's numbers from the human labels and the judges.

For every quantity the humans answer (the mean of a rating, the share of tasks with a label, a
span, a flagged line), per value of the summariser field (the tasks' ``model``, when the schema
has that field) and per judge, :func:`analysis.estimates.estimate_table` gives the human-only
estimate, the judge's own estimate with its bias on the labelled tasks, and the
prediction-powered estimate with its 90% interval and what the judge is worth in human labels.
The section says, per summariser and quantity, the estimate of the judge worth the most labels,
lists every judge in a table (``estimates.csv`` has every row, unrounded), and gives the front
page one finding per quantity.

It runs on a project with model predictions and human labels, its own (those made without a
judge's suggestion on screen) or its linked human-sample project's; leaves out the annotators
the report's options name (``exclude_annotators``, and with ``exclude_rubber_stampers`` those
the project's rubber-stamping rule flags: ``sections.rubber_stamping.left_out_annotators``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from judgelab.analysis.estimates import (
    ALPHA,
    MEAN,
    MIN_LABELS,
    SUMMARISER_FIELD,
    WEIGHTED,
    anchored_annotations,
    estimate_table,
    gold_annotations,
    linked_sample_rows,
)
from judgelab.analysis.judges import JUDGE_MAJORITY
from judgelab.analysis.report.blocks import Block, Glance, Paragraph, Section
from judgelab.analysis.report.data import ProjectData, is_nan, plural, short_table, with_project
from judgelab.analysis.report.sections.rubber_stamping import left_out_annotators, left_out_sentence
from judgelab.analysis.tables import MODEL_SOURCE_PREFIX, human_annotations

TITLE = "Study estimates"
TOPIC = "Estimates"
MAX_SENTENCES = 12  # per cell; the table and estimates.csv have every row


def summariser_fields(data: ProjectData) -> tuple[str, ...]:
    """The summariser field the estimates are split by: the tasks' ``model`` when the schema declares
    it (a project without a schema: when the tasks have it), unless the report's cut already
    splits by it."""
    meta = data.schema_meta or {}
    fields = {*(meta.get("meta_fields") or []), *(meta.get("data_fields") or {})}
    declared = SUMMARISER_FIELD in fields
    if not declared and meta:
        return ()
    tasks = data.tasks
    if tasks.empty or SUMMARISER_FIELD not in tasks.columns or tasks[SUMMARISER_FIELD].dropna().empty:
        return ()
    if data.facet is not None and SUMMARISER_FIELD in {name for name, _ in data.facet.values}:
        return ()
    return (SUMMARISER_FIELD,)


def project_estimates(data: ProjectData) -> tuple[pd.DataFrame, tuple[str, ...], list[object]]:
    """The estimates of this project (or cell), the fields they are split by and the human-sample
    projects whose labels count."""

    def compute() -> tuple[pd.DataFrame, tuple[str, ...], list[object]]:
        sample_j, sample_s, samples = linked_sample_rows(data.tasks, data.project, data.peers)
        by = summariser_fields(data)
        table = estimate_table(
            data.tasks,
            data.judgments,
            data.spans,
            data.meta,
            sample_judgments=sample_j,
            sample_spans=sample_s,
            by=by,
            exclude_annotators=set(left_out_annotators(data)),
        )
        return table, by, samples

    return data.cached("estimates", compute)


def _name(judge: object) -> str:
    return str(judge).removeprefix(MODEL_SOURCE_PREFIX)


def _value(value: float, statistic: str) -> str:
    return f"{value:.2f}" if statistic == MEAN else f"{value:.0%}"


def _interval(low: float, high: float, statistic: str) -> str:
    return f"[{_value(low, statistic)}, {_value(high, statistic)}]"


def _with_ci(row: pd.Series, prefix: str) -> str:
    value, low, high = row[f"{prefix}_estimate"], row[f"{prefix}_low"], row[f"{prefix}_high"]
    if is_nan(value):
        return ""
    return f"{_value(value, row['statistic'])} {_interval(low, high, row['statistic'])}"


def _subject(row: pd.Series, by: Sequence[str]) -> str:
    groups = [f"{name} {row[name]}" for name in by]
    return str(row["description"]) + (f" for {', '.join(groups)}" if groups else "")


def _judge_words(row: pd.Series) -> str:
    return JUDGE_MAJORITY if row["judge"] == JUDGE_MAJORITY else f"judge {_name(row['judge'])}"


def _sentence(row: pd.Series, by: Sequence[str]) -> str:
    """One quantity's estimate with its numbers, or why there is none."""
    subject = _subject(row, by)
    subject = subject[:1].upper() + subject[1:]
    statistic = row["statistic"]
    n, judged = int(row["n_labeled"]), int(row["n_judged"])
    if is_nan(row["ppi_estimate"]):
        text = (
            f"{subject}: too few human labels for an interval ({plural(n, 'labelled task')}, at least {MIN_LABELS} "
            "needed)"
        )
        if not is_nan(row["judge_estimate"]):
            text += (
                f"; {_judge_words(row)} alone says {_value(row['judge_estimate'], statistic)} on "
                f"{plural(judged, 'task')}, uncorrected"
            )
        return text + "."
    text = (
        f"{subject}: {_with_ci(row, 'ppi')} from {plural(n, 'human label')} and {_judge_words(row)} on "
        f"{plural(judged, 'task')}; human-only {_with_ci(row, 'human')}"
    )
    if not is_nan(row["judge_estimate"]):
        text += f", judge-only {_value(row['judge_estimate'], statistic)}"
        if not is_nan(row["judge_bias"]):
            text += f" ({_bias_words(row['judge_bias'], statistic)} on the labelled tasks)"
    worth, lam = row["worth_human_labels"], row["lambda"]
    if n == judged:
        text += "; every task the judge answered has a human label, so the judge cannot add to them"
    elif not is_nan(lam) and lam <= 0:
        text += "; the judge does not narrow the interval here, so the estimate is the human-only one"
    elif not is_nan(worth) and math.isfinite(worth):
        text += f"; as precise as {round(worth):,} human labels alone"
    return text + "."


def _bias_words(value: float, statistic: str) -> str:
    """A judge's bias in words: ``off by +0.40`` (``no bias`` when it rounds to nothing)."""
    rounded = round(value, 2) if statistic == MEAN else round(100 * value)
    return "no bias" if rounded == 0 else f"off by {_bias(value, statistic)}"


def _bias(value: float, statistic: str) -> str:
    """A judge's bias: in points of the scale for a mean, in percentage points for a share."""
    return f"{value:+.2f}" if statistic == MEAN else f"{100 * value:+.0f} points"


def ranked(table: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """The rows with an interval first, then by group and quantity (as first found), the judge worth
    the most human labels first."""
    order = {quantity: i for i, quantity in enumerate(dict.fromkeys(table["quantity"]))}
    return (
        table.assign(
            _quantity=table["quantity"].map(order),
            _has=table["ppi_estimate"].notna(),
            _worth=table["worth_human_labels"].fillna(-1.0),
        )
        .sort_values(
            ["_has", *by, "_quantity", "_worth"], ascending=[False, *(True for _ in by), True, False], kind="stable"
        )
        .drop(columns=["_quantity", "_has", "_worth"])
        .reset_index(drop=True)
    )


def best_rows(table: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Per quantity and group, the row of the judge worth the most human labels (among those with an
    interval; else the first judge's), quantities in the order found."""
    best = ranked(table, by).drop_duplicates([*by, "quantity"])
    order = {quantity: i for i, quantity in enumerate(dict.fromkeys(table["quantity"]))}
    best = best.assign(_q=best["quantity"].map(order))
    return best.sort_values(["_q", *by], kind="stable").drop(columns="_q")


def _shown(table: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    rows = []
    for _, row in table.iterrows():
        few = is_nan(row["ppi_estimate"])
        shown = {
            "judge": _name(row["judge"]),
            **{name: row[name] for name in by},
            "quantity": row["quantity"],
            "human labels": int(row["n_labeled"]),
            "tasks judged": int(row["n_judged"]),
            "estimate [90%]": f"too few labels ({int(row['n_labeled'])})" if few else _with_ci(row, "ppi"),
            "human only [90%]": "" if few else _with_ci(row, "human"),
            "judge only": "" if is_nan(row["judge_estimate"]) else _value(row["judge_estimate"], row["statistic"]),
            "judge bias": "" if is_nan(row["judge_bias"]) else _bias(row["judge_bias"], row["statistic"]),
            "lambda": "" if is_nan(row["lambda"]) else f"{row['lambda']:.2f}",
            "worth (human labels)": ""
            if is_nan(row["worth_human_labels"]) or not math.isfinite(row["worth_human_labels"])
            else f"{round(row['worth_human_labels']):,}",
        }
        rows.append(shown)
    return pd.DataFrame(rows)


def estimates_section(data: ProjectData) -> Section | None:
    if not data.model_sources:
        return None
    table, by, samples = project_estimates(data)
    if table.empty:
        return _all_anchored(data)
    level = f"{1 - ALPHA:.0%}"
    blocks: list[Block] = [
        Paragraph(
            "The study's numbers, each from the human labels and a judge's answers on every task "
            "(prediction-powered inference): the judge's mean over all the tasks it answered, corrected by its "
            "error measured on the tasks humans labelled. The estimate is unbiased however wrong the judge is, and "
            "its interval is narrower than the humans' alone when the judge tracks them; it is never wider. "
            f"Intervals are {level}. A task's human value is the mean of its annotators' answers (for a label: the "
            "share of annotators who gave it); a gold (reference) answer replaces them; annotations made with a "
            "judge's suggestion on screen are left out. 'Worth' is the number of human labels alone that would "
            f"give as narrow an interval. Below {MIN_LABELS} labelled tasks there is no interval."
        )
    ]
    if samples:
        blocks.append(
            Paragraph(
                f"The labels of the human-sample project {', '.join(map(str, samples))} count here, joined on the "
                "task key."
            )
        )
    if WEIGHTED in set(table["weights"]):
        blocks.append(
            Paragraph(
                "The sampled tasks are weighted by their inclusion probabilities (the sample's design), so tasks "
                "sampled more often do not pull the estimates their way."
            )
        )
    left_out = left_out_sentence(data)
    if left_out:
        blocks.append(Paragraph(left_out))
    best = best_rows(table, by)
    for _, row in best.head(MAX_SENTENCES).iterrows():
        blocks.append(Paragraph(_sentence(row, by)))
    if len(best) > MAX_SENTENCES:
        blocks.append(Paragraph(f"{len(best) - MAX_SENTENCES} more estimates are in the table and estimates.csv."))
    blocks += short_table(
        "estimates",
        f"Estimates per judge ({level} intervals)",
        _shown(ranked(table, by), by),
        data.options.max_rows,
        data=with_project(ranked(table, by), data.project),
    )
    return Section(TITLE, blocks, [], _glances(best, by))


def _all_anchored(data: ProjectData) -> Section | None:
    """A section saying why there is no estimate when every human label was made with a judge's
    suggestion on screen (None otherwise: nothing to say)."""
    humans = human_annotations(data.judgments, data.spans)
    humans = humans[~humans["annotation_id"].isin(gold_annotations(data.judgments, data.spans))]
    if humans.empty:
        return None
    anchored = humans["annotation_id"].isin(anchored_annotations(data.judgments, data.spans))
    if not anchored.all():
        return None
    return Section(
        TITLE,
        [
            Paragraph(
                f"No study estimate: all {plural(len(humans), 'human annotation')} were made with a judge's suggestion "
                "on screen, so none is an independent label of the judge's errors. Have people label a sample of "
                "the tasks without the suggestions, and this section estimates the study's numbers from them and "
                "the judges."
            )
        ],
        [],
        [
            Glance(
                TOPIC,
                "human labels",
                f"none independent of the judges ({len(humans)} annotations saw their suggestions)",
            )
        ],
    )


def _glances(best: pd.DataFrame, by: Sequence[str]) -> list[Glance]:
    out = []
    for _, row in best.iterrows():
        subject = _subject(row, by)
        if is_nan(row["ppi_estimate"]):
            answer = f"too few human labels ({int(row['n_labeled'])}, at least {MIN_LABELS} needed)"
            out.append(Glance(TOPIC, subject, answer, None))
            continue
        answer = f"{_with_ci(row, 'ppi')} with {_judge_words(row)}, {plural(int(row['n_labeled']), 'human label')}"
        worth = row["worth_human_labels"]
        if int(row["n_labeled"]) == int(row["n_judged"]):
            answer += " (every task labelled)"
        elif not is_nan(row["lambda"]) and row["lambda"] <= 0:
            answer += "; the judge does not narrow it"
        elif not is_nan(worth) and math.isfinite(worth):
            answer += f", worth {round(worth):,}"
        out.append(Glance(TOPIC, subject, answer, float(row["ppi_estimate"])))
    return out


__all__ = ["estimates_section", "project_estimates", "summariser_fields"]
