"""Scores of rated items, read from the tidy judgments, and how two sets of scores compare.

Every schema with rating scales (the Likert rubric, the augmentation scales, a hotel summary's
overall impression) reads its scores the same way: the usable human rows of the items, the latest
annotation per task and annotator (within each project: task ids repeat across projects), the
value as a number. :func:`numeric_ratings_grouped` does it for every facet cell at once
(``analysis.grouped``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from judgelab.analysis.grouped import (
    GROUP,
    RowGroups,
    group_keys,
    member,
    positions_per_group,
    split_groups,
    with_groups,
)
from judgelab.analysis.tables import HUMAN_SOURCE, latest_annotations, usable_judgments


def numeric_ratings(judgments: pd.DataFrame, items: Iterable[str] | None = None, *, source: str | None = HUMAN_SOURCE):
    """Usable rows of ``items`` with a numeric ``score`` column, one annotation per
    (task, annotator) (the latest); rows whose value is not a number are dropped."""
    return numeric_ratings_grouped(judgments, None, items, source=source)


def numeric_ratings_grouped(
    judgments: pd.DataFrame,
    groups: RowGroups | None,
    items: Iterable[str] | None = None,
    *,
    source: str | None = HUMAN_SOURCE,
) -> pd.DataFrame:
    """:func:`numeric_ratings` of every group of ``groups`` at once (see ``analysis.grouped``):
    the rows of all groups, each with its group in the ``GROUP`` column, the latest annotation
    chosen within each group. Whether a group's scores are whole numbers alone (``numeric_ratings``
    of its rows gives integer scores) is in :data:`INTEGER_SCORES`; :func:`ratings_per_group` gives
    each group's rows as ``numeric_ratings`` of its rows alone. ``groups=None``: :func:`numeric_ratings`."""
    rows = usable_judgments(with_groups(judgments, groups, "judgments"), source=source)
    if items is not None:
        rows = rows[rows["item"].isin(list(items))]
    if rows.empty:
        rows = rows.assign(score=pd.Series(dtype=float))
        return rows if groups is None else rows.assign(**{INTEGER_SCORES: pd.Series(dtype=bool)})
    rows = latest_per_task(rows, keys=group_keys(groups))
    rows = rows.assign(score=pd.to_numeric(rows["value"], errors="coerce"))
    if groups is not None:
        rows[INTEGER_SCORES] = _integer_scores(rows, groups)
    return rows.dropna(subset=["score"])


INTEGER_SCORES = "_integer_scores"  # a grouped ratings column: its group's scores are integers when alone


def _integer_scores(rows: pd.DataFrame, groups: RowGroups) -> np.ndarray:
    """Per row: whether ``pd.to_numeric`` of its group's values alone gives integers (all groups
    do when every value does; otherwise each group is parsed alone)."""
    if pd.api.types.is_integer_dtype(rows["score"]):
        return np.ones(len(rows), dtype=bool)
    codes = rows[GROUP].to_numpy(dtype=np.int64)
    values = rows["value"]
    integer = np.array(
        [
            pd.api.types.is_integer_dtype(pd.to_numeric(values.iloc[positions], errors="coerce"))
            for positions in positions_per_group(codes, groups.size)
        ],
        dtype=bool,
    )
    return integer[codes]


def ratings_per_group(ratings: pd.DataFrame, size: int) -> list[pd.DataFrame]:
    """Each group's rows of :func:`numeric_ratings_grouped` ratings, as ``numeric_ratings`` gives
    them for that group's rows alone (integer scores where the group's are)."""
    parts = split_groups(ratings, size)
    out = []
    for part in parts:
        integer = bool(part[INTEGER_SCORES].all()) if len(part) else False
        part = part.drop(columns=[INTEGER_SCORES])
        out.append(part.assign(score=part["score"].astype(np.int64 if integer else float)))
    return out


def unit_keys(frame: pd.DataFrame) -> list[str]:
    """``["project", "task_id"]`` when the frame has a project column, else ``["task_id"]``:
    task ids are only unique within a project (BASSE's Spanish and Basque files share them)."""
    return ["project", "task_id"] if "project" in frame.columns else ["task_id"]


def latest_per_task(rows: pd.DataFrame, *, keys: Sequence[str] = ()) -> pd.DataFrame:
    """Rows of the latest annotation per (project, task, annotator) (``analysis.tables``'s
    rule, applied within each project); ``keys`` (a group column) come first in the key, so that
    rows differing in them never compete."""
    if rows.empty:
        return rows
    keys = list(keys)
    if "project" not in rows.columns:
        latest = latest_annotations(rows, keys=keys)
    else:
        latest = pd.concat(
            [latest_annotations(group, keys=keys) for _, group in rows.groupby(rows["project"].astype(str), sort=False)]
        )
    return rows[member(rows, latest, [*keys, "annotation_id"])]


def welch_t_test(first: Iterable[float], second: Iterable[float]) -> tuple[float, float]:
    """Welch's t statistic and two-sided p (scipy); NaNs when a side has fewer than two values
    or both sides have no variance."""
    a = np.asarray(list(first), dtype=float)
    b = np.asarray(list(second), dtype=float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if len(a) < 2 or len(b) < 2 or (np.var(a) == 0 and np.var(b) == 0):
        return float("nan"), float("nan")
    result = stats.ttest_ind(a, b, equal_var=False)
    return float(result.statistic), float(result.pvalue)
