"""How much was annotated: counts per annotator, per item and per source."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

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


def annotation_counts_per_annotator(judgments: pd.DataFrame, spans: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per project, source and annotator: annotations, tasks, cancelled annotations,
    judgments (rows of non-cancelled annotations) and spans.

    An annotation counts when it has a judgment row or a span; ``n_cancelled`` counts the
    annotations marked ``was_cancelled`` (skipped tasks), which are left out of the rest.
    """
    frames = _with_defaults(judgments), _with_defaults(spans)
    judgment_rows, span_rows = frames
    keys = ["project", "source", "annotator"]
    cancelled = cancelled_mask(judgment_rows)
    kept = pd.concat([judgment_rows[~cancelled], span_rows], ignore_index=True)
    if kept.empty and not cancelled.any():
        return pd.DataFrame(columns=ANNOTATOR_COUNT_COLUMNS)
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
    return _sorted(counts, keys)[ANNOTATOR_COUNT_COLUMNS]


def judgment_counts_per_item(
    judgments: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None = None,
    *,
    source: str | None = HUMAN_SOURCE,
) -> pd.DataFrame:
    """Per project and item: judgments, annotators and tasks (one source, not cancelled)."""
    rows = usable_judgments(_with_defaults(judgments), source=source)
    if rows.empty:
        return pd.DataFrame(columns=ITEM_COUNT_COLUMNS)
    grouped = rows.groupby(["project", "item"])
    counts = pd.DataFrame(
        {
            "n_judgments": grouped.size(),
            "n_annotators": grouped["annotator"].nunique(),
            "n_tasks": grouped["task_id"].nunique(),
        }
    ).reset_index()
    counts["kind"] = [item_kind(schema_meta, str(item)) for item in counts["item"]]
    return _sorted(counts, ["project", "item"])[ITEM_COUNT_COLUMNS]


def counts_by_source(judgments: pd.DataFrame, spans: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per project and source (``human``, ``model:<version>``): tasks, annotations,
    judgments and spans, cancelled annotations left out."""
    judgment_rows = _with_defaults(judgments)
    judgment_rows = judgment_rows[~cancelled_mask(judgment_rows)]
    span_rows = _with_defaults(spans)
    kept = pd.concat([judgment_rows, span_rows], ignore_index=True)
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


def _with_defaults(frame: pd.DataFrame | None) -> pd.DataFrame:
    columns = ["project", "task_id", "annotation_id", "annotator", "source"]
    if frame is None:
        return pd.DataFrame(columns=[*columns, "was_cancelled"])
    frame = frame.copy()
    defaults = {"source": HUMAN_SOURCE, "was_cancelled": False, "annotator": None}
    for column, default in defaults.items():
        if column not in frame.columns:
            frame[column] = default
    frame["source"] = frame["source"].fillna(HUMAN_SOURCE)
    return frame


def _sorted(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    order = sorted(range(len(frame)), key=lambda i: tuple(natural_key(frame[k].iloc[i]) for k in keys))
    return frame.iloc[order].reset_index(drop=True)
