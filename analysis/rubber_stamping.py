"""Rubber-stamping: annotators who keep nearly every suggestion, much faster than they label alone.

Per project and annotator, from the review table (:mod:`analysis.review`) and the lead times
Label Studio records (:func:`analysis.suggestions.annotation_times`):

- ``n_suggested``: the annotator's annotations that started from a suggestion (at least one
  suggested unit), ``n_kept`` of them kept unchanged (:func:`analysis.review.annotation_outcomes`:
  every suggested unit kept, none added), ``kept_share`` with its 95% Wilson interval;
- ``kept_seconds``: the median lead time of those kept annotations (``n_kept_timed`` had one);
- the baseline: the median lead time of the annotator's own annotations made from scratch (no
  suggestion: the blind arm, or tasks without a prediction), ``baseline`` ``own``; when they
  have fewer than ``min_timed``, the median of the other annotators' from-scratch annotations of
  the project, ``baseline`` ``others``; ``none`` when neither has enough (``n_baseline`` says how
  many there were);
- ``time_ratio``: ``kept_seconds / baseline_seconds``.

The rule (each threshold a named constant and an argument): an annotator is ``flagged`` when
``kept_share >= KEPT_SHARE_MIN`` (0.9) and ``time_ratio <= TIME_RATIO_MAX`` (0.5), judged only
with at least ``MIN_SUGGESTED`` (10) annotations from a suggestion and ``MIN_TIMED`` (5) timed
annotations on each side of the ratio (kept ones, and the baseline's). ``status`` is ``flagged``,
``not flagged`` (``reason`` says which condition failed: a kept share below the threshold needs no
time to tell) or ``not judged`` (``reason`` says which side has too few annotations, with the n).
Annotations without an annotator's name are left out (nobody could be left out by name).

Keeping a suggestion quickly is not wrong in itself (a good model, an easy task); the flag says
that the annotator's kept suggestions cannot be told from no review at all, so labels they kept
should not stand as independent human labels. ``flagged_annotators`` gives the names, for an
estimate that leaves them out.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from judgelab.analysis.review import annotation_outcomes, review_table
from judgelab.analysis.suggestions import NO_SUGGESTION, annotation_times

KEPT_SHARE_MIN = 0.9  # flag at this share of suggestions kept unchanged, or more ...
TIME_RATIO_MAX = 0.5  # ... when a kept suggestion took at most this share of the from-scratch time
MIN_SUGGESTED = 10  # annotations from a suggestion an annotator needs to be judged
MIN_TIMED = 5  # timed annotations each side of the time ratio needs (kept ones; from scratch)
Z_95 = 1.959963984540054

FLAGGED, NOT_FLAGGED, NOT_JUDGED = "flagged", "not flagged", "not judged"
OWN, OTHERS, NONE = "own", "others", "none"
RUBBER_STAMPING_COLUMNS = [
    "project",
    "annotator",
    "n_suggested",
    "n_kept",
    "kept_share",
    "kept_low",
    "kept_high",
    "n_kept_timed",
    "kept_seconds",
    "baseline",
    "n_baseline",
    "baseline_seconds",
    "time_ratio",
    "status",
    "reason",
]


def wilson_interval(k: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson's score interval for ``k`` successes of ``n`` (95% by default); NaN for n = 0.

    >>> [round(x, 3) for x in wilson_interval(48, 50)]
    [0.865, 0.989]
    >>> [round(x, 3) for x in wilson_interval(10, 10)]
    [0.722, 1.0]
    >>> wilson_interval(0, 0)
    (nan, nan)
    """
    if n <= 0:
        return (math.nan, math.nan)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def _named(frame: pd.DataFrame) -> pd.DataFrame:
    name = frame["annotator"]
    return frame[name.notna() & (name.astype(str).str.strip() != "")]


def rubber_stamping(
    judgments: pd.DataFrame,
    spans: pd.DataFrame,
    *,
    review: pd.DataFrame | None = None,
    times: pd.DataFrame | None = None,
    kept_share_min: float = KEPT_SHARE_MIN,
    time_ratio_max: float = TIME_RATIO_MAX,
    min_suggested: int = MIN_SUGGESTED,
    min_timed: int = MIN_TIMED,
) -> pd.DataFrame:
    """One row per (project, annotator) with an annotation started from a suggestion; the columns
    of :data:`RUBBER_STAMPING_COLUMNS` (see the module docstring). ``review`` and ``times``: the
    review table and :func:`annotation_times` of the same tables, when the caller has them.

    A rubber-stamper (kept 12 of 12 in 4 s each; 30 s on 6 tasks from scratch) and a careful
    reviewer (kept 3 of 12):

    >>> rows, n = [], 0
    >>> def add(who, task, value, seconds, parent):
    ...     global n
    ...     n += 1
    ...     rows.append({"project": 1, "task_id": task, "annotation_id": f"{who}{n}", "annotator": who,
    ...                  "source": "human", "item": "q", "value": value, "lead_time": seconds,
    ...                  "parent_prediction": parent, "was_cancelled": False})
    >>> for task in range(12):
    ...     rows.append({"project": 1, "task_id": task, "annotation_id": f"prediction:{task}", "annotator": None,
    ...                  "source": "model:m", "item": "q", "value": "yes", "lead_time": None,
    ...                  "parent_prediction": None, "was_cancelled": False})
    ...     add("ana", task, "yes", 4.0, task)
    ...     add("bo", task, "yes" if task < 3 else "no", 25.0, task)
    >>> for task in range(12, 18):
    ...     add("ana", task, "no", 30.0, None)
    ...     add("bo", task, "no", 28.0, None)
    >>> from judgelab.configs.tables import JUDGMENT_COLUMNS
    >>> table = rubber_stamping(pd.DataFrame(rows).reindex(columns=JUDGMENT_COLUMNS), pd.DataFrame())
    >>> print(table[["annotator", "n_kept", "n_suggested", "kept_seconds", "baseline", "baseline_seconds",
    ...              "time_ratio", "status"]].round(2).to_string(index=False))
    annotator  n_kept  n_suggested  kept_seconds baseline  baseline_seconds  time_ratio      status
          ana      12           12           4.0      own              30.0        0.13     flagged
           bo       3           12          25.0      own              28.0        0.89 not flagged
    >>> flagged_annotators(table)
    {'ana'}
    """
    outcomes = _from_suggestions(judgments, spans, review)
    if outcomes.empty:
        return pd.DataFrame(columns=RUBBER_STAMPING_COLUMNS)
    if times is None:
        times = annotation_times(judgments, spans)
    scratch = _named(times[times["suggestion"] == NO_SUGGESTION]) if not times.empty else times
    thresholds = (kept_share_min, time_ratio_max, min_suggested, min_timed)
    rows = [
        _annotator_row(project, annotator, part, scratch, *thresholds)
        for (project, annotator), part in outcomes.groupby(["project", "annotator"], sort=True)
    ]
    return pd.DataFrame(rows, columns=RUBBER_STAMPING_COLUMNS)


def _from_suggestions(judgments: pd.DataFrame, spans: pd.DataFrame, review: pd.DataFrame | None) -> pd.DataFrame:
    """The named annotators' annotations that started from a suggestion (:func:`annotation_outcomes`),
    with ``kept_lead``: the lead time of one kept unchanged (a positive one), else NaN."""
    if review is None:
        review = review_table(judgments, spans)
    outcomes = annotation_outcomes(review)
    outcomes = _named(outcomes[outcomes["n_suggested"] > 0])
    kept_lead = pd.to_numeric(outcomes["lead_time"], errors="coerce")
    return outcomes.assign(kept_lead=kept_lead.where(outcomes["unchanged"] & (kept_lead > 0)))


def _annotator_row(
    project: object, annotator: object, part: pd.DataFrame, scratch: pd.DataFrame, kept_share_min: float,
    time_ratio_max: float, min_suggested: int, min_timed: int,
) -> dict:  # fmt: skip
    """One annotator's row of :func:`rubber_stamping`: ``part`` holds their annotations from a
    suggestion (``kept_lead``: the lead time of a kept one), ``scratch`` everyone's from scratch."""
    n, k = len(part), int(part["unchanged"].sum())
    low, high = wilson_interval(k, n)
    kept = part["kept_lead"].dropna()
    baseline, base, n_own, n_others = _baseline(scratch, project, annotator, min_timed)
    kept_seconds = float(kept.median()) if len(kept) else np.nan
    base_seconds = float(base.median()) if len(base) else np.nan
    ratio = kept_seconds / base_seconds if len(kept) and len(base) and base_seconds > 0 else np.nan
    row = {"project": project, "annotator": annotator, "n_suggested": n, "n_kept": k, "kept_share": k / n,
           "kept_low": low, "kept_high": high, "n_kept_timed": len(kept), "kept_seconds": kept_seconds,
           "baseline": baseline, "n_baseline": len(base), "baseline_seconds": base_seconds,
           "time_ratio": ratio}  # fmt: skip
    row["status"], row["reason"] = _verdict(row, n_own, n_others, kept_share_min, time_ratio_max, min_suggested,
                                            min_timed)  # fmt: skip
    return row


def _baseline(
    scratch: pd.DataFrame, project: object, annotator: object, min_timed: int
) -> tuple[str, pd.Series | pd.DataFrame, int, int]:
    """``(baseline, lead times, n own, n others)``: the from-scratch lead times an annotator's kept
    suggestions are compared with, their own when they have ``min_timed``, else the project's
    other annotators' (``others``), else ``none`` (with their own, too few)."""
    in_project = scratch[scratch["project"] == project] if not scratch.empty else scratch
    own = in_project.loc[in_project["annotator"] == annotator, "lead_time"] if len(in_project) else in_project
    others = in_project.loc[in_project["annotator"] != annotator, "lead_time"] if len(in_project) else in_project
    if len(own) >= min_timed:
        return OWN, own, len(own), len(others)
    if len(others) >= min_timed:
        return OTHERS, others, len(own), len(others)
    return NONE, own, len(own), len(others)


def _verdict(
    row: dict, n_own: int, n_others: int, kept_share_min: float, time_ratio_max: float, min_suggested: int,
    min_timed: int,
) -> tuple[str, str]:  # fmt: skip
    """``(status, reason)`` by the module's rule."""
    n, k = row["n_suggested"], row["n_kept"]
    if n < min_suggested:
        return NOT_JUDGED, f"{n} annotations from a suggestion, {min_suggested} needed"
    if row["kept_share"] < kept_share_min:
        return NOT_FLAGGED, f"kept share {row['kept_share']:.0%}, below {kept_share_min:.0%}"
    if row["baseline"] == NONE:
        return NOT_JUDGED, (
            f"{n_own} own annotations from scratch and {n_others} of the other annotators, {min_timed} needed"
        )
    if row["n_kept_timed"] < min_timed:
        return NOT_JUDGED, f"{row['n_kept_timed']} kept suggestions with a lead time, {min_timed} needed"
    if row["time_ratio"] > time_ratio_max:
        return NOT_FLAGGED, f"time ratio {row['time_ratio']:.2f}, above {time_ratio_max:.2f}"
    return FLAGGED, (
        f"kept {k} of {n} ({row['kept_share']:.0%}) at a time ratio of {row['time_ratio']:.2f} "
        f"(thresholds {kept_share_min:.0%} and {time_ratio_max:.2f})"
    )


def flagged_annotators(table: pd.DataFrame, project: object | None = None) -> set[str]:
    """The annotators a :func:`rubber_stamping` table flags (in ``project``, when given)."""
    if table.empty:
        return set()
    chosen = table[table["status"] == FLAGGED]
    if project is not None:
        chosen = chosen[chosen["project"].astype(str) == str(project)]
    return {str(name) for name in chosen["annotator"]}


__all__ = [
    "FLAGGED",
    "KEPT_SHARE_MIN",
    "MIN_SUGGESTED",
    "MIN_TIMED",
    "NOT_FLAGGED",
    "NOT_JUDGED",
    "RUBBER_STAMPING_COLUMNS",
    "TIME_RATIO_MAX",
    "flagged_annotators",
    "rubber_stamping",
    "wilson_interval",
]
