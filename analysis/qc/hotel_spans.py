"""Quality control for span annotation of hotel summaries (seed 004, HotelCheckSpan).

The tidy tables of the ``hotel_spans`` schema: ``spans`` with labels ``Not Checkable``,
``Misleading``, ``Incorrect``; ``judgments`` items ``impression`` (1-7) and ``no_errors``
(a row exists when the box was ticked); ``tasks`` with ``descriptions``, ``summary``,
``group`` (A/B: the wording of the no-errors box), ``check`` (``error_free`` /
``obvious_incorrect`` attention checks) and optionally a reference error
(``reference_start``/``reference_end`` offsets into the summary, or ``reference_text``;
``reference_label``) and ``qualification`` (truthy for qualification examples).

- :func:`annotation_table`: one row per annotation (spans per label, box, impression, time).
- :func:`attention_checks`: pass/fail of every annotation of a check task, rates per annotator.
- :func:`qualification_scores`: 0-5 qualification score, pass at 3.
- :func:`quick_submissions`: implausibly quick annotations, for manual review.
- :func:`group_comparison`: group A vs B (spans per summary, share of no-error answers).
- :func:`impression_vs_errors`: impression with and without errors, per error type, and its
  correlation with the number of errors (the paper's section 6.5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from judgelab.analysis.ratings import welch_t_test
from judgelab.analysis.tables import HUMAN_SOURCE, cancelled_mask, natural_key, only_columns, rows_where
from judgelab.configs.schema import builtin_schema

_HOTEL = builtin_schema("hotel_spans")
ERROR_FREE = _HOTEL.constant("check_error_free")
OBVIOUS_INCORRECT = _HOTEL.constant("check_obvious_incorrect")
INCORRECT = _HOTEL.constant("incorrect")
IMPRESSION_ITEM = _HOTEL.constant("impression_item")  # also the column of an annotation's rating
NO_ERRORS_ITEM = _HOTEL.empty_answer["control"]
KEYS = ["project", "task_id", "annotation_id"]


def _truthy(value: object) -> bool:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return False
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "y", "x", "checked"}
    return bool(value)


def _ensure(frame: pd.DataFrame | None, columns: Sequence[str]) -> pd.DataFrame:
    frame = pd.DataFrame(columns=list(columns)) if frame is None else frame.copy(deep=False)  # copy on write
    for column in columns:
        if column not in frame.columns:
            frame[column] = None
    if "project" in frame.columns:
        frame["project"] = frame["project"].fillna("")
    return frame


def annotation_table(
    judgments: pd.DataFrame,
    spans: pd.DataFrame | None = None,
    *,
    source: str | None = HUMAN_SOURCE,
    impression_item: str = IMPRESSION_ITEM,
    no_errors_item: str = NO_ERRORS_ITEM,
) -> pd.DataFrame:
    """One row per annotation of ``source``: ``project, task_id, annotation_id, annotator,
    n_spans, labels`` (the labels used, ``; ``-joined, sorted), ``n_<label>`` per label,
    ``no_errors_box`` (ticked), ``impression`` (number or NaN), ``lead_time``, ``created_at``.

    An annotation is anything with a judgment row or a span; cancelled annotations (and
    their spans) are left out.
    """
    judgment_rows, span_rows = _kept_rows(judgments, spans, source)
    ids = pd.concat(
        [judgment_rows[[*KEYS, "annotator"]], span_rows[[*KEYS, "annotator"]]], ignore_index=True
    ).drop_duplicates(subset=KEYS)
    if ids.empty:
        return pd.DataFrame(
            columns=[
                *KEYS,
                "annotator",
                "n_spans",
                "labels",
                "no_errors_box",
                IMPRESSION_ITEM,
                "lead_time",
                "created_at",
            ]
        )
    table = ids.set_index(KEYS)
    _add_span_counts(table, span_rows)
    read = [*KEYS, "value"]  # of the rows of one item: a copy of each row's every column was 23 MiB
    box = judgment_rows.loc[judgment_rows["item"] == no_errors_item, read]
    box = box[box["value"].map(_box_ticked).astype(bool)]
    table["no_errors_box"] = table.index.isin(box.set_index(KEYS).index)
    impressions = judgment_rows.loc[judgment_rows["item"] == impression_item, read]
    impressions = impressions.assign(_score=pd.to_numeric(impressions["value"], errors="coerce"))
    table[IMPRESSION_ITEM] = impressions.groupby(KEYS)["_score"].last().reindex(table.index)
    box = impressions = None  # read: not held beside the times' grouping
    times = (
        judgment_rows[[*KEYS, "created_at"]]
        .assign(lead_time=pd.to_numeric(judgment_rows["lead_time"], errors="coerce"))
        .groupby(KEYS)
        .agg(lead_time=("lead_time", "max"), created_at=("created_at", "first"))
    )
    table["lead_time"] = times["lead_time"].reindex(table.index)
    table["created_at"] = times["created_at"].reindex(table.index)
    return table.reset_index()


def _annotations(
    annotations: pd.DataFrame | None, judgments: pd.DataFrame, spans: pd.DataFrame | None, source: str | None
) -> pd.DataFrame:
    """``annotations`` when a caller made them, else :func:`annotation_table` of the rows."""
    return annotations if annotations is not None else annotation_table(judgments, spans, source=source)


def _kept_rows(
    judgments: pd.DataFrame, spans: pd.DataFrame | None, source: str | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The judgment and span rows of ``source`` (every source with None), without those of
    cancelled annotations."""
    base_columns = [*KEYS, "annotator", "source", "item", "value", "lead_time", "created_at", "was_cancelled"]
    span_columns = [*KEYS, "annotator", "source", "label", "start", "end"]
    # the columns read, before the rows are filtered: every column's copy was most of the section's memory
    judgment_rows = _ensure(only_columns(judgments, *base_columns), base_columns)
    span_rows = _ensure(None if spans is None else only_columns(spans, *span_columns), span_columns)
    mine_j, mine_s = _of_source(judgment_rows, source), _of_source(span_rows, source)
    cancelled = set(judgment_rows.loc[mine_j & cancelled_mask(judgment_rows), "annotation_id"])
    # one filter each, and none where every row stays: each filter copies the rows it keeps
    return (
        rows_where(judgment_rows, mine_j & ~judgment_rows["annotation_id"].isin(cancelled)),
        rows_where(span_rows, mine_s & ~span_rows["annotation_id"].isin(cancelled)),
    )


def _of_source(rows: pd.DataFrame, source: str | None) -> pd.Series:
    """Whether each row is of ``source`` (every row with None; a row without one is human's)."""
    if source is None:
        return pd.Series(True, index=rows.index)
    return rows["source"].fillna(HUMAN_SOURCE) == source


def _add_span_counts(table: pd.DataFrame, span_rows: pd.DataFrame) -> None:
    """Each annotation's (``table``'s index) ``n_spans``, ``n_<label>`` per label (in natural
    order) and ``labels``, the labels it used joined with ``; ``."""
    labels = span_rows["label"].fillna("(no label)").astype(str)
    per_label = (
        span_rows.assign(label=labels).groupby([*KEYS, "label"]).size().unstack("label", fill_value=0)
        if not span_rows.empty
        else pd.DataFrame()
    )
    table["n_spans"] = per_label.sum(axis=1) if not per_label.empty else 0
    table["n_spans"] = table["n_spans"].fillna(0).astype(int)
    for label in sorted(per_label.columns, key=natural_key):
        table[f"n_{label}"] = per_label[label].reindex(table.index).fillna(0).astype(int)
    used = [c for c in table.columns if c.startswith("n_") and c != "n_spans"]
    names = [c[2:] for c in used]
    table["labels"] = ["; ".join(compress(names, row)) for row in (table[used].to_numpy() > 0)] if used else ""


def _box_ticked(value: object) -> bool:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return False
    text = str(value).strip().lower()
    return bool(text) and text not in {"false", "0", "no", "unchecked"}


def _task_meta(tasks: pd.DataFrame | None, columns: Sequence[str]) -> pd.DataFrame:
    tasks = _ensure(tasks, ["project", "task_id", *columns])
    return tasks[["project", "task_id", *columns]].drop_duplicates(subset=["project", "task_id"])


def reference_span(task: Mapping[str, Any] | pd.Series) -> tuple[int, int] | None:
    """The task's reference error as ``(start, end)`` in its summary, if it has one:
    ``reference_start``/``reference_end``, else ``reference_text`` found in ``summary``."""
    start, end = task.get("reference_start"), task.get("reference_end")
    if start is not None and end is not None and not pd.isna(start) and not pd.isna(end):
        return int(start), int(end)
    text, summary = task.get("reference_text"), task.get("summary")
    if isinstance(text, str) and text and isinstance(summary, str):
        at = summary.find(text)
        if at >= 0:
            return at, at + len(text)
    return None


def _with_references(meta: pd.DataFrame) -> pd.DataFrame:
    """``meta`` (a row per task) with its :func:`reference_span` as ``_has_reference``,
    ``_reference_start`` and ``_reference_end``."""
    references = [reference_span(task) for task in meta.to_dict("records")]
    return meta.assign(
        _has_reference=[reference is not None for reference in references],
        _reference_start=[reference[0] if reference else np.nan for reference in references],
        _reference_end=[reference[1] if reference else np.nan for reference in references],
    )


def _errors_found(annotations: pd.DataFrame, spans: pd.DataFrame | None) -> np.ndarray:
    """For each row of ``annotations`` (an annotation with its task's reference span, from
    :func:`_with_references`, and the ``_label`` looked for): whether it marked a ``_label`` span
    (any span when ``_label`` is empty) over the reference span, or anywhere when the task has
    none. One merge of the spans with the annotations, not a lookup per annotation."""
    found = np.zeros(len(annotations), dtype=bool)
    span_rows = _ensure(spans, [*KEYS, "label", "start", "end"])
    if span_rows.empty or annotations.empty:
        return found
    keyed = annotations[[*KEYS, "_label", "_has_reference", "_reference_start", "_reference_end"]]
    hits = (
        span_rows[[*KEYS, "label", "start", "end"]]
        .dropna(subset=KEYS)
        .merge(keyed.assign(_row=np.arange(len(annotations))), on=KEYS)
    )
    any_label = hits["_label"].isna() | (hits["_label"] == "")
    starts = pd.to_numeric(hits["start"], errors="coerce")
    ends = pd.to_numeric(hits["end"], errors="coerce")
    on_reference = (starts < hits["_reference_end"]) & (ends > hits["_reference_start"])
    hit = (any_label | (hits["label"] == hits["_label"])) & (on_reference | ~hits["_has_reference"].astype(bool))
    found[hits.loc[hit, "_row"].to_numpy(dtype=int)] = True
    return found


@dataclass(frozen=True)
class AttentionChecks:
    """``per_annotation``: every annotation of a check task with ``check``, ``passed``,
    ``reason``; ``per_annotator``: ``n_checks``, ``n_passed``, ``pass_rate``;
    ``pass_rate``: over all check annotations (NaN without any)."""

    per_annotation: pd.DataFrame
    per_annotator: pd.DataFrame
    pass_rate: float


def attention_checks(
    tasks: pd.DataFrame,
    judgments: pd.DataFrame,
    spans: pd.DataFrame | None = None,
    *,
    check_column: str = "check",
    incorrect_label: str = INCORRECT,
    source: str | None = HUMAN_SOURCE,
    annotations: pd.DataFrame | None = None,
) -> AttentionChecks:
    """Pass/fail of the attention checks.

    - ``error_free``: passed when the annotation has no span and the no-errors box ticked.
    - ``obvious_incorrect``: passed when an ``Incorrect`` span overlaps the task's reference
      span (:func:`reference_span`), or, without a reference, when any ``Incorrect`` span
      was marked.

    ``annotations``: the :func:`annotation_table` of ``judgments`` and ``spans`` for ``source``,
    when the caller has it (the report makes it once for its five checks).
    """
    meta = _task_meta(tasks, [check_column, "reference_start", "reference_end", "reference_text", "summary"])
    meta = meta[meta[check_column].isin([ERROR_FREE, OBVIOUS_INCORRECT])]
    annotations = _annotations(annotations, judgments, spans, source).merge(
        _with_references(meta), on=["project", "task_id"]
    )
    found = _errors_found(annotations.assign(_label=incorrect_label), spans)
    has_reference = annotations["_has_reference"].tolist()
    n_spans, boxes = annotations["n_spans"].tolist(), annotations["no_errors_box"].tolist()
    passed, reasons = [], []
    for row, check in enumerate(annotations[check_column].tolist()):
        if check == ERROR_FREE:
            ok = n_spans[row] == 0 and bool(boxes[row])
            why = "" if ok else ("marked spans" if n_spans[row] else "no-errors box not ticked")
        else:
            ok = bool(found[row])
            why = "" if ok else f"no {incorrect_label} span" + (" on the reference error" if has_reference[row] else "")
        passed.append(ok)
        reasons.append(why)
    per_annotation = annotations[[*KEYS, "annotator", check_column, "n_spans", "no_errors_box"]].assign(
        passed=passed, reason=reasons
    )
    per_annotator = (
        per_annotation.groupby("annotator").agg(n_checks=("passed", "size"), n_passed=("passed", "sum")).reset_index()
    )
    per_annotator["pass_rate"] = per_annotator["n_passed"] / per_annotator["n_checks"]
    rate = float(np.mean(passed)) if passed else float("nan")
    return AttentionChecks(per_annotation=per_annotation, per_annotator=per_annotator, pass_rate=rate)


@dataclass(frozen=True)
class QualificationScores:
    """``per_example``: every (annotator, qualification example) with ``correct``,
    ``consistent_box``, ``points``; ``per_annotator``: ``score`` (sum of points; an
    unanswered example scores 0), ``n_answered``, ``max_score``, ``passed``."""

    per_example: pd.DataFrame
    per_annotator: pd.DataFrame
    pass_mark: float


def qualification_scores(
    tasks: pd.DataFrame,
    judgments: pd.DataFrame,
    spans: pd.DataFrame | None = None,
    *,
    task_ids: Sequence[object] | None = None,
    qualification_column: str = "qualification",
    check_column: str = "check",
    pass_mark: float = 3.0,
    partial_credit: float = 0.5,
    source: str | None = HUMAN_SOURCE,
    annotations: pd.DataFrame | None = None,
) -> QualificationScores:
    """The qualification score (0 to the number of examples, 0-5 in the paper), pass at ``pass_mark``.

    Qualification examples are ``task_ids``, else the tasks whose ``qualification`` column is
    truthy. An example is error-free when its ``check`` is ``error_free``; otherwise it has a
    reference error: the span of :func:`reference_span` (any position when absent) with
    ``reference_label`` (``Incorrect`` for ``obvious_incorrect`` checks; any label when
    absent). Per example:

    - *correct*: error-free example -> no span marked; reference error -> a span overlapping
      the reference with the reference label.
    - *consistent box*: the no-errors box is ticked exactly when no span is marked.
    - points: 1 when correct with a consistent box, ``partial_credit`` (0.5) when correct but
      the box contradicts the spans (no span and the box left empty, or the error found and
      the box ticked too), 0 when not correct.

    This reads the paper's "partial point assignment was possible for the consistent use of
    the no-errors checkbox" as: half of an example's point rests on using the box
    consistently, so answering "no errors" everywhere cannot reach the pass mark.

    ``annotations``: the :func:`annotation_table` of ``judgments`` and ``spans`` for ``source``,
    when the caller has it (the report makes it once for its five checks).
    """
    meta = _with_references(_qualification_examples(tasks, task_ids, qualification_column, check_column))
    annotations = _annotations(annotations, judgments, spans, source).merge(meta, on=["project", "task_id"])
    # the error an example's answer must find: its reference label, else Incorrect on an
    # obvious-error check, else any label
    looked_for = [
        label if isinstance(label, str) and label else (INCORRECT if check == OBVIOUS_INCORRECT else None)
        for label, check in zip(annotations["reference_label"], annotations[check_column], strict=True)
    ]
    found = _errors_found(annotations.assign(_label=looked_for), spans)
    records = [
        _example_points(row, bool(hit), check_column, partial_credit)
        for row, hit in zip(annotations.itertuples(index=False), found, strict=True)
    ]
    per_example = pd.DataFrame(records, columns=_PER_EXAMPLE_COLUMNS)
    # one answer per (annotator, example): the last one in table order
    per_example = per_example.drop_duplicates(subset=["annotator", "project", "task_id"], keep="last")
    max_score = float(len(meta))
    per_annotator = (
        per_example.groupby("annotator").agg(score=("points", "sum"), n_answered=("task_id", "size")).reset_index()
    )
    per_annotator["max_score"] = max_score
    per_annotator["passed"] = per_annotator["score"] >= pass_mark
    return QualificationScores(
        per_example=per_example.reset_index(drop=True), per_annotator=per_annotator, pass_mark=pass_mark
    )


_PER_EXAMPLE_COLUMNS = [
    "annotator",
    "project",
    "task_id",
    "annotation_id",
    "error_free_example",
    "correct",
    "consistent_box",
    "points",
]


def _qualification_examples(
    tasks: pd.DataFrame, task_ids: Sequence[object] | None, qualification_column: str, check_column: str
) -> pd.DataFrame:
    """The qualification examples' task columns (check, reference error, summary): the tasks
    ``task_ids`` names, else those whose ``qualification_column`` is truthy."""
    columns = [
        qualification_column,
        check_column,
        "reference_start",
        "reference_end",
        "reference_text",
        "reference_label",
        "summary",
    ]
    meta = _task_meta(tasks, columns)
    if task_ids is not None:
        return meta[meta["task_id"].isin(list(task_ids))]
    return meta[meta[qualification_column].map(_truthy)]


def _example_points(row: Any, error_found: bool, check_column: str, partial_credit: float) -> dict[str, Any]:
    """One annotation of a qualification example scored (see :func:`qualification_scores`): whether
    it is correct (``error_found``: :func:`_errors_found`'s, for an example with an error), whether
    its no-errors box agrees with its spans, and its points."""
    error_free = row._asdict().get(check_column) == ERROR_FREE
    correct = row.n_spans == 0 if error_free else error_found
    consistent = bool(row.no_errors_box) == (row.n_spans == 0)
    points = (1.0 if consistent else partial_credit) if correct else 0.0
    return {
        "annotator": row.annotator,
        "project": row.project,
        "task_id": row.task_id,
        "annotation_id": row.annotation_id,
        "error_free_example": error_free,
        "correct": correct,
        "consistent_box": consistent,
        "points": points,
    }


@dataclass(frozen=True)
class QuickSubmissions:
    """``table``: every annotation with ``lead_time`` and text length: ``n_chars``,
    ``seconds_per_100_chars``, ``flagged``; ``flagged``: the rows to review;
    ``threshold``: seconds per 100 characters; ``rule``: how it was set."""

    table: pd.DataFrame
    flagged: pd.DataFrame
    threshold: float
    rule: str


def quick_submissions(
    tasks: pd.DataFrame,
    judgments: pd.DataFrame,
    spans: pd.DataFrame | None = None,
    *,
    text_columns: Sequence[str] = ("descriptions", "summary"),
    seconds_per_100_chars: float | None = None,
    reading_chars_per_second: float | None = None,
    quantile: float = 0.05,
    source: str | None = HUMAN_SOURCE,
    annotations: pd.DataFrame | None = None,
) -> QuickSubmissions:
    """Annotations submitted implausibly quickly for the amount of text, listed for review.

    Speed is ``lead_time`` (seconds) per 100 characters of ``text_columns`` (descriptions +
    summary). An annotation is flagged when strictly below the threshold, taken from (first
    given wins):

    1. ``seconds_per_100_chars``: a fixed bound;
    2. ``reading_chars_per_second``: a reading-speed bound, threshold ``100 / speed``. Skim
       reading runs at about 500-700 words a minute, i.e. roughly 40-60 characters a second
       of English: ``reading_chars_per_second=50`` flags anyone who spent under 2 s per 100
       characters, who cannot have read the descriptions;
    3. otherwise the ``quantile`` (default 5th percentile) of the observed speeds: always
       flags the fastest few percent, to be reviewed by hand rather than rejected.

    Annotations without a positive ``lead_time`` or text are left out of ``table``.

    ``annotations``: the :func:`annotation_table` of ``judgments`` and ``spans`` for ``source``,
    when the caller has it (the report makes it once for its five checks).
    """
    meta = _task_meta(tasks, list(text_columns))
    annotations = _annotations(annotations, judgments, spans, source).merge(meta, on=["project", "task_id"])
    n_chars = sum(annotations[c].map(lambda t: len(t) if isinstance(t, str) else 0) for c in text_columns)
    annotations = annotations.assign(
        n_chars=n_chars, lead_time=pd.to_numeric(annotations["lead_time"], errors="coerce")
    )
    usable = annotations[(annotations["lead_time"] > 0) & (annotations["n_chars"] > 0)].copy()
    usable["seconds_per_100_chars"] = usable["lead_time"] / usable["n_chars"] * 100.0
    if seconds_per_100_chars is not None:
        threshold, rule = float(seconds_per_100_chars), f"fixed bound: {seconds_per_100_chars:g} s per 100 characters"
    elif reading_chars_per_second is not None:
        if reading_chars_per_second <= 0:
            raise ValueError("reading_chars_per_second must be positive")
        threshold = 100.0 / reading_chars_per_second
        rule = f"reading-speed bound: {reading_chars_per_second:g} characters/s = {threshold:.3g} s per 100 characters"
    elif len(usable):
        threshold = float(usable["seconds_per_100_chars"].quantile(quantile))
        rule = f"{quantile:.0%} quantile of the observed speeds: {threshold:.3g} s per 100 characters"
    else:
        threshold, rule = float("nan"), "no annotation with a lead time"
    usable["flagged"] = usable["seconds_per_100_chars"] < threshold
    columns = [*KEYS, "annotator", "lead_time", "n_chars", "seconds_per_100_chars", "flagged"]
    # stable: tied speeds (common: lead times in hundredths of a second) keep the table's order, the
    # same on every machine (numpy's default sort is not stable and has per-CPU variants)
    table = usable[columns].sort_values("seconds_per_100_chars", kind="stable").reset_index(drop=True)
    return QuickSubmissions(
        table=table, flagged=table[table["flagged"]].reset_index(drop=True), threshold=threshold, rule=rule
    )


@dataclass(frozen=True)
class GroupComparison:
    """``per_group``: ``group, n_annotations, n_annotators, spans_per_summary,
    share_no_error`` (annotations without spans), ``share_box_ticked``; ``tests``: Welch's
    t-test between the two groups on ``spans_per_summary`` and ``no_error`` (0/1 per
    annotation): ``metric, group_a, group_b, mean_a, mean_b, welch_t, p_value``."""

    per_group: pd.DataFrame
    tests: pd.DataFrame


def group_comparison(
    tasks: pd.DataFrame,
    judgments: pd.DataFrame,
    spans: pd.DataFrame | None = None,
    *,
    group_column: str = "group",
    groups: tuple[str, str] | None = None,
    source: str | None = HUMAN_SOURCE,
    annotations: pd.DataFrame | None = None,
) -> GroupComparison:
    """Group A vs B: do the two wordings of the no-errors box change how much is marked?

    ``groups`` names the two groups to test (default: the first two in sorted order).

    ``annotations``: the :func:`annotation_table` of ``judgments`` and ``spans`` for ``source``,
    when the caller has it (the report makes it once for its five checks).
    """
    meta = _task_meta(tasks, [group_column])
    annotations = _annotations(annotations, judgments, spans, source).merge(meta, on=["project", "task_id"])
    annotations = annotations.dropna(subset=[group_column])
    annotations = annotations.assign(no_error=(annotations["n_spans"] == 0).astype(float))
    per_group = (
        annotations.groupby(group_column)
        .agg(
            n_annotations=("annotation_id", "size"),
            n_annotators=("annotator", "nunique"),
            spans_per_summary=("n_spans", "mean"),
            share_no_error=("no_error", "mean"),
            share_box_ticked=("no_errors_box", "mean"),
        )
        .reset_index()
        .rename(columns={group_column: "group"})
    )
    names = list(groups) if groups else sorted(per_group["group"].astype(str), key=natural_key)[:2]
    tests = []
    if len(names) == 2:
        a = annotations[annotations[group_column].astype(str) == str(names[0])]
        b = annotations[annotations[group_column].astype(str) == str(names[1])]
        for metric, column in (("spans_per_summary", "n_spans"), ("share_no_error", "no_error")):
            t, p = welch_t_test(a[column], b[column])
            tests.append(
                {
                    "metric": metric,
                    "group_a": names[0],
                    "group_b": names[1],
                    "mean_a": a[column].mean() if len(a) else float("nan"),
                    "mean_b": b[column].mean() if len(b) else float("nan"),
                    "welch_t": t,
                    "p_value": p,
                }
            )
    return GroupComparison(
        per_group=per_group,
        tests=pd.DataFrame(tests, columns=["metric", "group_a", "group_b", "mean_a", "mean_b", "welch_t", "p_value"]),
    )


@dataclass(frozen=True)
class ImpressionVsErrors:
    """How errors relate to the overall impression (one value per annotation).

    - ``summary``: rows ``without errors`` / ``with errors`` (``n``, ``mean``) and the Welch
      t-test between them (``welch_t`` positive when summaries without errors score higher).
    - ``by_type``: per label: ``n`` annotations with at least one span of it, ``mean``,
      ``drop`` (no-error mean minus this mean), ``welch_t``, ``p_value`` against the
      no-error annotations.
    - ``by_count``: mean impression per number of spans.
    - ``correlation``: Pearson's r between the number of spans and the impression, its p
      value and ``n``.
    """

    summary: pd.DataFrame
    by_type: pd.DataFrame
    by_count: pd.DataFrame
    correlation: dict[str, float]


def impression_vs_errors(
    judgments: pd.DataFrame,
    spans: pd.DataFrame | None = None,
    *,
    impression_item: str = IMPRESSION_ITEM,
    source: str | None = HUMAN_SOURCE,
    annotations: pd.DataFrame | None = None,
) -> ImpressionVsErrors:
    """Impression scores of annotations with and without errors, per error type, by count.

    ``annotations``: the :func:`annotation_table` of ``judgments`` and ``spans`` for ``source`` and
    ``impression_item``, when the caller has it (the report makes it once for its five checks)."""
    annotations = (
        annotation_table(judgments, spans, source=source, impression_item=impression_item)
        if annotations is None
        else annotations
    )
    rated = annotations.dropna(subset=[IMPRESSION_ITEM])
    clean = rated[rated["n_spans"] == 0][IMPRESSION_ITEM]
    errors = rated[rated["n_spans"] > 0][IMPRESSION_ITEM]
    t, p = welch_t_test(clean, errors)
    summary = pd.DataFrame(
        [
            {"annotations": "without errors", "n": len(clean), "mean": clean.mean() if len(clean) else np.nan},
            {"annotations": "with errors", "n": len(errors), "mean": errors.mean() if len(errors) else np.nan},
        ]
    ).assign(welch_t=t, p_value=p)
    type_rows = []
    for column in sorted((c for c in rated.columns if c.startswith("n_") and c != "n_spans"), key=natural_key):
        with_type = rated[rated[column] > 0][IMPRESSION_ITEM]
        t_type, p_type = welch_t_test(clean, with_type)
        mean = with_type.mean() if len(with_type) else np.nan
        type_rows.append(
            {
                "label": column[2:],
                "n": len(with_type),
                "mean": mean,
                "drop": (clean.mean() - mean) if len(clean) and len(with_type) else np.nan,
                "welch_t": t_type,
                "p_value": p_type,
            }
        )
    by_type = pd.DataFrame(type_rows, columns=["label", "n", "mean", "drop", "welch_t", "p_value"])
    by_count = (
        rated.groupby("n_spans")[IMPRESSION_ITEM]
        .agg(n="size", mean="mean")
        .reset_index()
        .rename(columns={"n_spans": "n_errors"})
    )
    if len(rated) >= 3 and rated["n_spans"].nunique() > 1 and rated[IMPRESSION_ITEM].nunique() > 1:
        r = stats.pearsonr(rated["n_spans"].astype(float), rated[IMPRESSION_ITEM].astype(float))
        correlation = {"r": float(r.statistic), "p_value": float(r.pvalue), "n": float(len(rated))}
    else:
        correlation = {"r": float("nan"), "p_value": float("nan"), "n": float(len(rated))}
    return ImpressionVsErrors(summary=summary, by_type=by_type, by_count=by_count, correlation=correlation)
