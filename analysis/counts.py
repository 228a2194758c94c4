"""How much was annotated: counts per annotator, per item and per source."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from judgelab.analysis.grouped import GROUP, RowGroups, group_keys, split_groups, with_groups
from judgelab.analysis.tables import HUMAN_SOURCE, cancelled_mask, natural_key, usable_judgments
from judgelab.configs.items import item_kind

ANNOTATOR_COUNT_COLUMNS = [
    "project",
    "source",
    "annotator",
    "n_annotations",
    "n_tasks",
    "n_cancelled",
    "n_judgments",
    "n_spans",
]
ITEM_COUNT_COLUMNS = ["project", "item", "kind", "n_judgments", "n_annotators", "n_tasks"]
SOURCE_COUNT_COLUMNS = ["project", "source", "n_tasks", "n_annotations", "n_judgments", "n_spans"]
# what the annotation and source counts read of a table (GROUP: a grouped count's group)
COUNTED = ["project", "task_id", "annotation_id", "annotator", "source", "was_cancelled", GROUP]


def annotation_counts_per_annotator(judgments: pd.DataFrame, spans: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per project, source and annotator: annotations, tasks, cancelled annotations,
    judgments (rows of non-cancelled annotations) and spans.

    An annotation counts when it has a judgment row or a span; ``n_cancelled`` counts the
    annotations marked ``was_cancelled`` (skipped tasks), which are left out of the rest.
    """
    return annotation_counts_per_annotator_by_group(judgments, spans, None)[0]


def annotation_counts_per_annotator_by_group(
    judgments: pd.DataFrame, spans: pd.DataFrame | None, groups: RowGroups | None, *, source: str | None = None
) -> list[pd.DataFrame]:
    """:func:`annotation_counts_per_annotator` of each group of ``groups`` (see ``analysis.grouped``):
    one count of every row, keyed by the group first. ``source``: count only the rows of that
    source (``judgments`` and ``spans`` are the tables ``groups`` describes, unfiltered)."""
    size = 1 if groups is None else groups.size
    judgments = with_groups(judgments, groups, "judgments")
    spans = None if spans is None else with_groups(spans, groups, "spans")
    if source is not None:
        judgments = judgments[judgments["source"] == source]
        spans = None if spans is None else spans[spans["source"] == source]
    judgment_rows = _with_defaults(judgments, only=COUNTED)
    span_rows = _with_defaults(spans, groups, only=COUNTED)
    keys = [*group_keys(groups), "project", "source", "annotator"]
    cancelled = cancelled_mask(judgment_rows)
    kept = pd.concat([judgment_rows[~cancelled], span_rows], ignore_index=True)
    if kept.empty and not cancelled.any():
        return [pd.DataFrame(columns=ANNOTATOR_COUNT_COLUMNS) for _ in range(size)]
    grouped = kept.groupby(keys, dropna=False)
    counts = pd.DataFrame(
        {
            "n_annotations": grouped["annotation_id"].nunique(),
            "n_tasks": grouped["task_id"].nunique(),
        }
    )
    counts["n_cancelled"] = judgment_rows[cancelled].groupby(keys, dropna=False)["annotation_id"].nunique()
    counts["n_judgments"] = judgment_rows[~cancelled].groupby(keys, dropna=False).size()
    counts["n_spans"] = span_rows.groupby(keys, dropna=False).size()
    counts = counts.fillna(0).astype(int).reset_index()
    present = _present(judgment_rows, groups) | _present(span_rows, groups)
    results = _per_group(_sorted(counts, keys), groups, ANNOTATOR_COUNT_COLUMNS, present=present)
    for group in sorted(present - _present(kept, groups)):  # cancelled annotations only: counted alone,
        alone = judgment_rows[judgment_rows[GROUP] == group].drop(columns=[GROUP])  # as the group would be
        results[group] = annotation_counts_per_annotator_by_group(alone, None, None)[0]
    return results


def judgment_counts_per_item(
    judgments: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None = None,
    *,
    source: str | None = HUMAN_SOURCE,
) -> pd.DataFrame:
    """Per project and item: judgments, annotators and tasks (one source, not cancelled)."""
    return judgment_counts_per_item_by_group(judgments, schema_meta, None, source=source)[0]


def judgment_counts_per_item_by_group(
    judgments: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None,
    groups: RowGroups | None,
    *,
    source: str | None = HUMAN_SOURCE,
) -> list[pd.DataFrame]:
    """:func:`judgment_counts_per_item` of each group of ``groups``, keyed by the group first."""
    size = 1 if groups is None else groups.size
    rows = usable_judgments(_with_defaults(with_groups(judgments, groups, "judgments")), source=source)
    if rows.empty:
        return [pd.DataFrame(columns=ITEM_COUNT_COLUMNS) for _ in range(size)]
    keys = [*group_keys(groups), "project", "item"]
    grouped = rows.groupby(keys)
    counts = pd.DataFrame(
        {
            "n_judgments": grouped.size(),
            "n_annotators": grouped["annotator"].nunique(),
            "n_tasks": grouped["task_id"].nunique(),
        }
    ).reset_index()
    counts["kind"] = [item_kind(schema_meta, str(item)) for item in counts["item"]]
    return _per_group(_sorted(counts, keys), groups, ITEM_COUNT_COLUMNS, present=_present(rows, groups))


def _present(frame: pd.DataFrame, groups: RowGroups | None) -> set[int]:
    """The groups that have rows in ``frame``."""
    if groups is None or frame.empty:
        return {0} if groups is None else set()
    return set(np.unique(frame[GROUP].to_numpy(dtype=np.int64)).tolist())


def _per_group(
    counts: pd.DataFrame, groups: RowGroups | None, columns: list[str], present: set[int]
) -> list[pd.DataFrame]:
    """Each group's rows of ``counts`` (sorted, the group first), numbered from 0; a group without
    rows in the input gets the empty table the ungrouped count gives."""
    if groups is None:
        return [counts[columns]]
    parts = split_groups(counts, groups.size, keep_index=False)
    return [part[columns] if group in present else pd.DataFrame(columns=columns) for group, part in enumerate(parts)]


def counts_by_source(judgments: pd.DataFrame, spans: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per project and source (``human``, ``model:<version>``): tasks, annotations,
    judgments and spans, cancelled annotations left out."""
    judgment_rows = _with_defaults(judgments, only=COUNTED)
    judgment_rows = judgment_rows[~cancelled_mask(judgment_rows)]
    span_rows = _with_defaults(spans, only=COUNTED)
    counted = ["project", "source", "task_id", "annotation_id"]  # not every column of both tables
    kept = pd.concat([judgment_rows[counted], span_rows[counted]], ignore_index=True)
    if kept.empty:
        return pd.DataFrame(columns=SOURCE_COUNT_COLUMNS)
    keys = ["project", "source"]
    grouped = kept.groupby(keys, dropna=False)
    counts = pd.DataFrame(
        {
            "n_tasks": grouped["task_id"].nunique(),
            "n_annotations": grouped["annotation_id"].nunique(),
        }
    )
    counts["n_judgments"] = judgment_rows.groupby(keys, dropna=False).size()
    counts["n_spans"] = span_rows.groupby(keys, dropna=False).size()
    counts = counts.fillna(0).astype(int).reset_index()
    return _sorted(counts, keys)[SOURCE_COUNT_COLUMNS]


def _with_defaults(
    frame: pd.DataFrame | None, groups: RowGroups | None = None, *, only: list[str] | None = None
) -> pd.DataFrame:
    """A copy of ``frame`` with a source (human where missing), ``was_cancelled`` and ``annotator``.
    ``only``: the columns a count reads (those ``frame`` has): a copy of every column of both
    tables, the texts' included, was most of the counts' memory."""
    columns = ["project", "task_id", "annotation_id", "annotator", "source", *group_keys(groups)]
    if frame is None:
        return pd.DataFrame(columns=[*columns, "was_cancelled"])
    if only is not None:
        frame = frame[[column for column in only if column in frame.columns]]
    frame = frame.copy(deep=False)  # the columns set below are the copy's alone (copy on write)
    defaults = {"source": HUMAN_SOURCE, "was_cancelled": False, "annotator": None}
    for column, default in defaults.items():
        if column not in frame.columns:
            frame[column] = default
    frame["source"] = frame["source"].fillna(HUMAN_SOURCE)
    return frame


def _sorted(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    order = sorted(range(len(frame)), key=lambda i: tuple(natural_key(frame[k].iloc[i]) for k in keys))
    return frame.iloc[order].reset_index(drop=True)
