"""Counts of labelled spans from the tidy ``spans`` table."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

NO_LABEL = "(no label)"


@dataclass(frozen=True)
class SpanCounts:
    """Span counts at three levels; every frame is long (tidy) and sorted.

    - ``per_project``: project, source, n_spans, n_annotations (annotations with at least
      one span), n_tasks_with_spans, and n_tasks / share_tasks_with_spans when the
      ``tasks`` table was given (the share is of the project's tasks).
    - ``by_label``: project, source, label, n_spans, n_annotations, n_tasks.
    - ``by_annotator``: project, source, annotator, label, n_spans.
    """

    per_project: pd.DataFrame
    by_label: pd.DataFrame
    by_annotator: pd.DataFrame


def span_counts(spans: pd.DataFrame, tasks: pd.DataFrame | None = None) -> SpanCounts:
    """Count spans per project, per label and per annotator (kept apart by ``source``).

    A task "has spans" when at least one annotation of it (of that source) has one.

    >>> spans = pd.DataFrame({"project": ["p"] * 3, "task_id": [1, 1, 2],
    ...     "annotation_id": [10, 11, 12], "annotator": ["ann", "bob", "ann"],
    ...     "source": ["human"] * 3, "label": ["Incorrect", "Incorrect", "Misleading"]})
    >>> span_counts(spans).by_label[["label", "n_spans", "n_tasks"]].to_dict("list")
    {'label': ['Incorrect', 'Misleading'], 'n_spans': [2, 1], 'n_tasks': [1, 1]}
    """
    frame = spans.copy()
    if "source" not in frame.columns:
        frame["source"] = "human"
    frame["label"] = frame["label"].fillna(NO_LABEL).replace("", NO_LABEL) if "label" in frame else NO_LABEL
    frame["source"] = frame["source"].fillna("human")
    project_keys = ["project", "source"]
    per_project = _counts(frame, project_keys).rename(columns={"n_tasks": "n_tasks_with_spans"})
    if tasks is not None and not tasks.empty and not per_project.empty:
        task_totals = tasks.groupby("project")["task_id"].nunique().rename("n_tasks").reset_index()
        per_project = per_project.merge(task_totals, on="project", how="left")
        per_project["share_tasks_with_spans"] = per_project["n_tasks_with_spans"] / per_project["n_tasks"]
    by_label = _counts(frame, [*project_keys, "label"])
    by_annotator = (
        frame.groupby([*project_keys, "annotator", "label"], dropna=False).size().rename("n_spans").reset_index()
    )
    return SpanCounts(per_project=per_project, by_label=by_label, by_annotator=by_annotator)


def _counts(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    columns = [*keys, "n_spans", "n_annotations", "n_tasks"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    grouped = frame.groupby(keys, dropna=False)
    counts = pd.DataFrame(
        {
            "n_spans": grouped.size(),
            "n_annotations": grouped["annotation_id"].nunique(),
            "n_tasks": grouped["task_id"].nunique(),
        }
    )
    return counts.reset_index()[columns]
