"""What the suggestions did, measured on the review table (:mod:`analysis.review`).

- :func:`suggestion_agreement`: the suggestion against the final human annotation on the same
  units, per model source: Cohen's kappa for choices (a choice the reviewer removed, or added
  where the model chose nothing, counts as the answer "(none)" on the other side),
  Krippendorff's ordinal alpha for rating scales (over the ratings both have), span F1 (per-span form, hard and soft) of
  the suggested spans against the final ones, pooled over the reviewed annotations (a deleted
  suggestion lowers precision, an added span lowers recall);
- :func:`edit_directions`: what edits did: which label or choice became which, and for ratings
  how many were raised or lowered and by how much on average;
- :func:`annotation_times`, :func:`lead_time_comparison`: lead time per annotation with and
  without a suggestion, overall and on the tasks that have both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from judgelab.analysis.agreement import cohen_kappa
from judgelab.analysis.krippendorff import krippendorff_alpha
from judgelab.analysis.review import ADDED, DELETED, EDITED, KEPT, SPAN, UNKNOWN_SOURCE, prediction_sources
from judgelab.analysis.span_agreement import pairwise_span_agreement
from judgelab.analysis.tables import HUMAN_SOURCE, cancelled_mask
from judgelab.configs.items import item_kind
from judgelab.configs.tables import PREDICTION_PREFIX

SUGGESTION, FINAL = "suggestion", "final"
NO_SUGGESTION = "(no suggestion)"
NO_CHOICE = "(none)"


def _kind(meta: Mapping[str, Any] | None, category: str) -> str:
    kind = item_kind(meta, category)
    return "nominal" if kind == "flag" else kind


def suggestion_agreement(review: pd.DataFrame, schema_meta: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """One row per (model, unit, category): ``measure``, ``value``, ``n_units`` (units compared)."""
    columns = ["model", "unit", "category", "kind", "measure", "value", "n_units"]
    rows: list[dict[str, object]] = []
    items = review[review["unit"] != SPAN]
    for (model, category), part in items.groupby(["suggestion_source", "category"], sort=True):
        kind = _kind(schema_meta, str(category))
        if kind == "text":
            continue
        if kind == "ordinal":  # the ratings both have
            both = part[part["outcome"].isin([KEPT, EDITED])]
            matrix = both[["suggested", "final"]].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
            result = krippendorff_alpha(matrix, "ordinal")
            measure = "Krippendorff's alpha (ordinal)"
        else:  # a choice removed or added is an answer too: no choice
            suggested = part["suggested"].fillna(NO_CHOICE).astype(str).to_numpy(object)
            final = part["final"].fillna(NO_CHOICE).astype(str).to_numpy(object)
            result = cohen_kappa(suggested, final)
            measure = "Cohen's kappa"
        rows.append({"model": model, "unit": "item", "category": category, "kind": kind, "measure": measure,
                     "value": result.value, "n_units": result.n_units})  # fmt: skip
    spans = review[review["unit"] == SPAN]
    for model, part in spans.groupby("suggestion_source", sort=True):
        scores = _span_scores(part)
        for match in ("hard", "soft"):
            row = scores[scores["match"] == match]
            rows.append({"model": model, "unit": SPAN, "category": "(all labels)", "kind": "span",
                         "measure": f"span F1 {match}", "value": float(row["f1"].iloc[0]) if len(row) else np.nan,
                         "n_units": int(part["annotation_id"].nunique())})  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def _span_scores(part: pd.DataFrame) -> pd.DataFrame:
    """Per-span F1 of the suggested spans (hypothesis) against the final ones (reference)."""
    suggested = part[part["outcome"].isin([KEPT, EDITED, DELETED])]
    final = part[part["outcome"].isin([KEPT, EDITED, ADDED])]
    frame = pd.concat(
        [
            pd.DataFrame(
                {
                    "annotation_id": suggested["annotation_id"],
                    "annotator": SUGGESTION,
                    "field": suggested["field"],
                    "start": suggested["suggested_start"],
                    "end": suggested["suggested_end"],
                    "label": suggested["suggested"],
                }
            ),  # fmt: skip
            pd.DataFrame(
                {
                    "annotation_id": final["annotation_id"],
                    "annotator": FINAL,
                    "field": final["field"],
                    "start": final["final_start"],
                    "end": final["final_end"],
                    "label": final["final"],
                }
            ),  # fmt: skip
        ],
        ignore_index=True,
    )
    examples = pd.DataFrame({"annotation_id": part["annotation_id"].unique()})
    return pairwise_span_agreement(
        frame, examples, [FINAL, SUGGESTION], pairs=[(FINAL, SUGGESTION)], forms=("per_span",),
        example_key=["annotation_id"],
    )  # fmt: skip


def edit_directions(
    review: pd.DataFrame, schema_meta: Mapping[str, Any] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(changes, ratings)``.

    ``changes``: model, unit, category, suggested, final, n: edited choices and span labels (a
    span only moved keeps its label and is not listed). ``ratings``: model, category, n_edited,
    n_raised, n_lowered, mean_change (final minus suggested, over the edited ratings).
    """
    edited = review[review["outcome"] == EDITED]
    pairs = edited[["unit", "category"]].drop_duplicates()
    kinds = {c: _kind(schema_meta, str(c)) for c in pairs.loc[pairs["unit"] != SPAN, "category"].tolist()}
    kind = edited["category"].map(kinds).where(edited["unit"] != SPAN, SPAN)
    labels = edited[kind.isin(["nominal", SPAN]) & (edited["suggested"] != edited["final"])]
    changes = (
        labels.groupby(["suggestion_source", "unit", "category", "suggested", "final"], sort=True)
        .size()
        .rename("n")
        .reset_index()
        .rename(columns={"suggestion_source": "model"})
        .sort_values(["model", "n"], ascending=[True, False], kind="stable")
        .reset_index(drop=True)
    )
    scales = edited[kind == "ordinal"]
    change = pd.to_numeric(scales["final"], errors="coerce") - pd.to_numeric(scales["suggested"], errors="coerce")
    ratings = (
        scales.assign(change=change)
        .groupby(["suggestion_source", "category"], sort=True)["change"]
        .agg(
            n_edited="size",
            n_raised=lambda c: int((c > 0).sum()),
            n_lowered=lambda c: int((c < 0).sum()),
            mean_change="mean",
        )  # fmt: skip
        .reset_index()
        .rename(columns={"suggestion_source": "model"})
    )
    return changes, ratings


def annotation_times(judgments: pd.DataFrame, spans: pd.DataFrame) -> pd.DataFrame:
    """One row per human annotation (not cancelled) with a lead time: project, task_id,
    annotation_id, annotator, lead_time, suggestion (the model source of its parent prediction,
    or ``(no suggestion)``)."""
    columns = ["project", "task_id", "annotation_id", "annotator", "lead_time", "parent_prediction"]
    frames = []
    for frame in (judgments, spans):
        if frame.empty:
            continue
        human = frame[(frame["source"].fillna(HUMAN_SOURCE) == HUMAN_SOURCE) & ~cancelled_mask(frame)]
        frames.append(human.reindex(columns=columns).drop_duplicates("annotation_id"))
    if not frames:
        return pd.DataFrame(columns=[*columns[:-1], "suggestion"])
    rows = pd.concat(frames, ignore_index=True)
    rows = rows.assign(lead_time=pd.to_numeric(rows["lead_time"], errors="coerce"),
                       parent_prediction=pd.to_numeric(rows["parent_prediction"], errors="coerce"))  # fmt: skip
    per = rows.sort_values("lead_time", na_position="first", kind="stable")
    per = per.drop_duplicates("annotation_id", keep="last")
    per = per[per["lead_time"].notna() & (per["lead_time"] > 0)]
    sources = prediction_sources(judgments, spans)
    keys = PREDICTION_PREFIX + per["parent_prediction"].astype("Int64").astype(str)
    suggestion = keys.map(sources).where(per["parent_prediction"].notna(), NO_SUGGESTION)
    per = per.assign(suggestion=suggestion.fillna(UNKNOWN_SOURCE))
    return per[["project", "task_id", "annotation_id", "annotator", "lead_time", "suggestion"]].reset_index(drop=True)


def lead_time_comparison(times: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, float]]:
    """``(per group, test)``: median, mean and count of lead times per ``suggestion`` value;
    and, when both kinds exist, the Mann-Whitney U p-value of with vs without a suggestion and
    the median over tasks with both of (mean time with) - (mean time without) (``paired_tasks``
    such tasks)."""
    table = (
        times.groupby("suggestion", sort=True)["lead_time"]
        .agg(n_annotations="size", median_seconds="median", mean_seconds="mean")
        .reset_index()
    )
    with_s = times[times["suggestion"] != NO_SUGGESTION]
    without = times[times["suggestion"] == NO_SUGGESTION]
    test: dict[str, float] = {}
    if len(with_s) and len(without):
        test["p_value"] = float(stats.mannwhitneyu(with_s["lead_time"], without["lead_time"]).pvalue)
        test["median_with"] = float(with_s["lead_time"].median())
        test["median_without"] = float(without["lead_time"].median())
        per_task = (
            times.assign(has=times["suggestion"] != NO_SUGGESTION).groupby(["task_id", "has"])["lead_time"].mean()
        )
        per_task = per_task.unstack("has").dropna()
        if len(per_task.columns) == 2 and len(per_task):
            test["paired_tasks"] = float(len(per_task))
            test["paired_median_difference"] = float((per_task[True] - per_task[False]).median())
    return table, test
