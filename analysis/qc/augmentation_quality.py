"""Quality control for the Italian augmentation-quality study (seed 001: SP and SC, 1-3).

Targets come from the schema's metadata (``configs/augmentation_quality/schema.yaml``):

- ``agreement_targets``: pilot on units rated by both annotators, Cohen's kappa > 0.60,
  exact agreement > 60 %, adjacent (within one point) > 90 %; the disagreement rule (below
  20 % of samples disagreeing: average the scores, otherwise meet and discuss).
- ``calibration_markers``: expected shares of some scores (SP=3 in 40-50 % of rephrased
  texts, SP=1 under 10 %, SC=3 50-60 %, SC=1 10-15 %).
- ``drift_block_size``: the guideline's "pause every 20 annotations" check.

Functions:

- :func:`pilot_agreement` -> :class:`PilotAgreement` (per-item table, ``passed``);
- :func:`calibration_check` -> DataFrame with a ``passed`` column, overall, per model and
  per augmentation type (task meta columns ``model`` and ``augmentation_type``);
- :func:`resolve_disagreements` -> :class:`DisagreementResolution`;
- :func:`annotator_drift` -> DataFrame of mean scores per block of annotations.

A target's comparison is strict where the guideline says "more than" (kappa, exact,
adjacent: ``value > target``) and inclusive for calibration ranges (``min <= share <= max``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from judgelab.analysis.agreement import cohen_kappa, exact_agreement
from judgelab.analysis.qc.likert_rubric_es import adjacent_agreement, numeric_ratings, unit_keys
from judgelab.analysis.tables import HUMAN_SOURCE, natural_key

DEFAULT_ITEMS = ("SP", "SC")
DEFAULT_TARGETS = {
    "pilot_size": 30,
    "cohen_kappa": 0.60,
    "exact_agreement": 0.60,
    "adjacent_agreement": 0.90,
    "disagreement_rule": {"average_below": 0.20},
}
DEFAULT_BLOCK_SIZE = 20
META_COLUMNS = ("model", "augmentation_type")


def _ratings(
    judgments: pd.DataFrame, items: Sequence[str], source: str | None, ratings: pd.DataFrame | None
) -> pd.DataFrame:
    """``numeric_ratings`` of ``items``, or the rows of ``items`` of ratings computed beforehand
    (``ratings=``: the same ``numeric_ratings`` of more items, shared by several checks)."""
    if ratings is None:
        return numeric_ratings(judgments, items, source=source)
    return ratings[ratings["item"].isin(list(items))]


def _targets(schema_meta: Mapping[str, Any] | None) -> dict[str, Any]:
    return {**DEFAULT_TARGETS, **((schema_meta or {}).get("agreement_targets") or {})}


def _items(schema_meta: Mapping[str, Any] | None, items: Sequence[str] | None) -> list[str]:
    if items:
        return list(items)
    scales = (schema_meta or {}).get("scales") or {}
    return list(scales) or list(DEFAULT_ITEMS)


def pilot_annotators(ratings: pd.DataFrame, annotators: Sequence[str] | None = None) -> tuple[str, str]:
    """The two annotators of the pilot: the given ones, else the pair sharing the most tasks."""
    if annotators is not None:
        if len(annotators) != 2:
            raise ValueError(f"the pilot compares two annotators, got {len(annotators)}: {list(annotators)}")
        return str(annotators[0]), str(annotators[1])
    keys = unit_keys(ratings)
    units = pd.Series(list(zip(*(ratings[k] for k in keys), strict=True)), index=ratings.index)
    tasks_of = units.groupby(ratings["annotator"]).agg(lambda s: set(s))
    names = sorted(tasks_of.index, key=natural_key)
    if len(names) < 2:
        raise ValueError(f"the pilot needs two annotators, the judgments have {len(names)}: {names}")
    best = max(
        ((a, b) for i, a in enumerate(names) for b in names[i + 1 :]),
        key=lambda pair: len(tasks_of[pair[0]] & tasks_of[pair[1]]),
    )
    return str(best[0]), str(best[1])


@dataclass(frozen=True)
class PilotAgreement:
    """``table``: one row per item with ``n_units``, the coefficients, their targets and a
    pass flag each, and ``passed`` (all three met). ``passed`` is True when every item passed.
    ``annotators`` are the two compared; ``units`` the task ids they both rated."""

    table: pd.DataFrame
    passed: bool
    annotators: tuple[str, str]
    units: list[object] = field(default_factory=list)


def pilot_agreement(
    judgments: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None = None,
    *,
    items: Sequence[str] | None = None,
    annotators: Sequence[str] | None = None,
    tasks: Sequence[object] | None = None,
    source: str | None = HUMAN_SOURCE,
    ratings: pd.DataFrame | None = None,
) -> PilotAgreement:
    """Agreement of the two pilot annotators on the units both rated, against the targets.

    ``tasks`` restricts the pilot to those task ids (by default: every task both rated).
    Each item's ``n_units`` is the tasks both gave a score for that item; ``pilot_size`` is
    the target size, reported (``pilot_size_met``) but not part of ``passed``.
    """
    targets = _targets(schema_meta)
    criteria = _items(schema_meta, items)
    ratings = _ratings(judgments, criteria, source, ratings)
    if tasks is not None:
        ratings = ratings[ratings["task_id"].isin(list(tasks))]
    first, second = pilot_annotators(ratings, annotators)
    rows, shared_units = [], set()
    for item in criteria:
        wide = ratings[ratings["item"] == item].pivot_table(
            index=unit_keys(ratings), columns="annotator", values="score", aggfunc="last"
        )
        a = wide[first] if first in wide else pd.Series(dtype=float)
        b = wide[second] if second in wide else pd.Series(dtype=float)
        both = pd.concat([a.rename("a"), b.rename("b")], axis=1).dropna()
        shared_units |= set(both.index)
        pairs = both.astype(object).to_numpy()
        exact = exact_agreement(pairs) if len(both) else None
        adjacent = adjacent_agreement(both.to_numpy(dtype=float)) if len(both) else None
        kappa = cohen_kappa(pairs[:, 0], pairs[:, 1]) if len(both) else None
        row = {"item": item, "annotator_a": first, "annotator_b": second, "n_units": len(both)}
        for name, result in (("cohen_kappa", kappa), ("exact_agreement", exact), ("adjacent_agreement", adjacent)):
            value = result.value if result is not None else float("nan")
            target = float(targets[name])
            row[name] = value
            row[f"{name}_target"] = target
            row[f"{name}_passed"] = bool(not np.isnan(value) and value > target)
        row["passed"] = all(row[f"{n}_passed"] for n in ("cohen_kappa", "exact_agreement", "adjacent_agreement"))
        row["pilot_size"] = targets.get("pilot_size")
        row["pilot_size_met"] = bool(targets.get("pilot_size") is None or len(both) >= int(targets["pilot_size"]))
        rows.append(row)
    table = pd.DataFrame(rows)
    passed = bool(len(table) and table["passed"].all())
    return PilotAgreement(table=table, passed=passed, annotators=(first, second), units=sorted(shared_units, key=str))


def _with_meta(rows: pd.DataFrame, tasks: pd.DataFrame | None, columns: Sequence[str]) -> pd.DataFrame:
    if tasks is None:
        return rows
    present = [c for c in columns if c in tasks.columns and c not in rows.columns]
    if not present:
        return rows
    keys = ["project", "task_id"] if "project" in tasks.columns and "project" in rows.columns else ["task_id"]
    meta = tasks[[*keys, *present]].drop_duplicates(subset=keys)
    return rows.merge(meta, on=keys, how="left")


CALIBRATION_COLUMNS = [
    "scope",
    "group",
    "item",
    "value",
    "subset",
    "n_ratings",
    "n_value",
    "share",
    "min",
    "max",
    "passed",
]


def calibration_check(
    judgments: pd.DataFrame,
    tasks: pd.DataFrame | None,
    schema_meta: Mapping[str, Any] | None = None,
    *,
    markers: Sequence[Mapping[str, Any]] | None = None,
    by: Sequence[str] = META_COLUMNS,
    source: str | None = HUMAN_SOURCE,
    ratings: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Each calibration marker's share, overall and per value of each ``by`` column.

    A marker ``{item, value, subset?, min?, max?}`` asks what share of the ``item``'s ratings
    (within ``subset``: task meta conditions such as ``{augmentation_type: rephrased}``) equal
    ``value``; it passes when ``min <= share <= max`` (a missing bound is open). Every
    rating of every annotator counts. Groups where the subset leaves no rating are omitted.
    Columns: ``scope`` (``overall`` or the ``by`` column), ``group``, ``item``, ``value``,
    ``subset`` (text), ``n_ratings``, ``n_value``, ``share``, ``min``, ``max``, ``passed``.
    """
    markers = list(markers if markers is not None else (schema_meta or {}).get("calibration_markers") or [])
    items = sorted({str(m["item"]) for m in markers})
    needed = list(dict.fromkeys([*by, *(key for m in markers for key in (m.get("subset") or {}))]))
    ratings = _with_meta(_ratings(judgments, items, source, ratings), tasks, needed)
    rows: list[dict[str, Any]] = []
    scopes: list[tuple[str, str | None]] = [("overall", None)] + [(c, c) for c in by if c in ratings.columns]
    for marker in markers:
        subset = dict(marker.get("subset") or {})
        selected = ratings[ratings["item"] == marker["item"]]
        for column, wanted in subset.items():
            if column not in selected.columns:
                selected = selected.iloc[0:0]
                break
            selected = selected[selected[column].astype(str) == str(wanted)]
        for scope, column in scopes:
            groups = [("", selected)] if column is None else list(selected.groupby(column, sort=True))
            for group, rows_in_group in groups:
                if rows_in_group.empty:
                    continue
                n = len(rows_in_group)
                hits = int((rows_in_group["score"] == float(marker["value"])).sum())
                share = hits / n
                low, high = marker.get("min"), marker.get("max")
                rows.append(
                    {
                        "scope": scope,
                        "group": group,
                        "item": marker["item"],
                        "value": marker["value"],
                        "subset": ", ".join(f"{k}={v}" for k, v in subset.items()),
                        "n_ratings": n,
                        "n_value": hits,
                        "share": share,
                        "min": low,
                        "max": high,
                        "passed": bool(
                            (low is None or share >= low - 1e-12) and (high is None or share <= high + 1e-12)
                        ),
                    }
                )
    return pd.DataFrame(rows, columns=CALIBRATION_COLUMNS)


@dataclass(frozen=True)
class DisagreementResolution:
    """The guideline's rule on the samples two annotators both rated.

    - ``share_disagreeing``: samples (tasks) on which they differ on at least one item,
      over the samples both rated (NaN when none); ``threshold`` the rule's limit.
    - ``action``: ``"average"`` (share below the threshold), ``"discuss"``, or ``"none"``
      when the two annotators share no sample.
    - ``averaged``: when averaging, one row per (task, item) with ``score`` the mean of the
      two scores and ``n_raters``; empty otherwise.
    - ``to_discuss``: when discussing, the disagreements (task, item, the two scores); empty
      otherwise.
    - ``disagreements``: every disagreement, whatever the action.
    """

    share_disagreeing: float
    threshold: float
    action: str
    n_samples: int
    averaged: pd.DataFrame
    to_discuss: pd.DataFrame
    disagreements: pd.DataFrame


def resolve_disagreements(
    judgments: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None = None,
    *,
    items: Sequence[str] | None = None,
    annotators: Sequence[str] | None = None,
    source: str | None = HUMAN_SOURCE,
    ratings: pd.DataFrame | None = None,
) -> DisagreementResolution:
    """Apply the disagreement rule (``agreement_targets.disagreement_rule.average_below``)."""
    rule = _targets(schema_meta).get("disagreement_rule") or {}
    threshold = float(rule.get("average_below", 0.20))
    criteria = _items(schema_meta, items)
    ratings = _ratings(judgments, criteria, source, ratings)
    first, second = pilot_annotators(ratings, annotators)
    pair = ratings[ratings["annotator"].isin([first, second])]
    wide = pair.pivot_table(index=[*unit_keys(pair), "item"], columns="annotator", values="score", aggfunc="last")
    for name in (first, second):
        if name not in wide:
            wide[name] = np.nan
    keys = unit_keys(pair)
    both = wide[[first, second]].dropna().reset_index()
    both.columns.name = None
    both = both.rename(columns={first: "score_a", second: "score_b"})
    both = both.assign(annotator_a=first, annotator_b=second)[
        [*keys, "item", "annotator_a", "annotator_b", "score_a", "score_b"]
    ]
    differs = both["score_a"] != both["score_b"]
    disagreements = both[differs].reset_index(drop=True)
    samples = both[keys].drop_duplicates()
    disagreeing_samples = disagreements[keys].drop_duplicates()
    share = len(disagreeing_samples) / len(samples) if len(samples) else float("nan")
    action = "none" if np.isnan(share) else ("average" if share < threshold else "discuss")
    if action == "average":
        averaged = both[[*keys, "item"]].assign(score=(both["score_a"] + both["score_b"]) / 2.0, n_raters=2)
        to_discuss = disagreements.iloc[0:0]
    else:
        averaged = pd.DataFrame(columns=[*keys, "item", "score", "n_raters"])
        to_discuss = disagreements
    return DisagreementResolution(
        share_disagreeing=share,
        threshold=threshold,
        action=action,
        n_samples=len(samples),
        averaged=averaged.reset_index(drop=True),
        to_discuss=to_discuss.reset_index(drop=True),
        disagreements=disagreements,
    )


DRIFT_COLUMNS = [
    "annotator",
    "block",
    "first_annotation",
    "last_annotation",
    "n_annotations",
    "item",
    "n_ratings",
    "mean",
    "change_vs_first_block",
]


def annotator_drift(
    judgments: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None = None,
    *,
    items: Sequence[str] | None = None,
    block_size: int | None = None,
    source: str | None = HUMAN_SOURCE,
    ratings: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Mean score per block of ``block_size`` annotations, per annotator and item.

    Each annotator's annotations are ordered by ``created_at`` (then table order) and cut
    into consecutive blocks of ``block_size`` (``drift_block_size`` of the schema, else 20);
    block 0 holds the first ``block_size`` annotations, the last block may be shorter.
    ``change_vs_first_block`` is the block's mean minus the annotator's block-0 mean for the
    item. ``first_annotation`` / ``last_annotation`` are the block's first and last
    ``created_at``.
    """
    size = int(block_size or (schema_meta or {}).get("drift_block_size") or DEFAULT_BLOCK_SIZE)
    if size < 1:
        raise ValueError(f"block_size must be at least 1, got {size}")
    criteria = _items(schema_meta, items)
    ratings = _ratings(judgments, criteria, source, ratings)
    if ratings.empty:
        return pd.DataFrame(columns=DRIFT_COLUMNS)
    ratings = ratings.reset_index(drop=True)
    ratings["_order"] = np.arange(len(ratings))
    created = ratings["created_at"] if "created_at" in ratings else pd.Series(None, index=ratings.index)
    ratings["_time"] = pd.to_datetime(created, errors="coerce", utc=True, format="ISO8601")
    annotations = (
        ratings.groupby(["annotator", "annotation_id"], sort=False)
        .agg(_time=("_time", "min"), _order=("_order", "min"))
        .reset_index()
        .sort_values(["annotator", "_time", "_order"], na_position="last", kind="stable")
    )
    annotations["block"] = annotations.groupby("annotator").cumcount() // size
    ratings = ratings.drop(columns=["_time"]).merge(
        annotations[["annotation_id", "annotator", "block", "_time"]], on=["annotator", "annotation_id"]
    )
    blocks = (
        annotations.groupby(["annotator", "block"])
        .agg(
            first_annotation=("_time", "min"),
            last_annotation=("_time", "max"),
            n_annotations=("annotation_id", "size"),
        )
        .reset_index()
    )
    means = ratings.groupby(["annotator", "block", "item"])["score"].agg(n_ratings="size", mean="mean").reset_index()
    first = means[means["block"] == 0][["annotator", "item", "mean"]].rename(columns={"mean": "_first"})
    means = means.merge(first, on=["annotator", "item"], how="left")
    means["change_vs_first_block"] = means["mean"] - means["_first"]
    result = blocks.merge(means.drop(columns=["_first"]), on=["annotator", "block"])
    annotator_names, block_numbers = result["annotator"].to_numpy(dtype=object), result["block"].to_numpy()
    order = sorted(range(len(result)), key=lambda i: (natural_key(annotator_names[i]), block_numbers[i]))
    return result.iloc[order].reset_index(drop=True)[DRIFT_COLUMNS]
