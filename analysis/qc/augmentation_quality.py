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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from judgelab.analysis.agreement import adjacent_agreement, cohen_kappa, exact_agreement
from judgelab.analysis.grouped import GROUP, RowGroups, group_keys, split_groups
from judgelab.analysis.ratings import INTEGER_SCORES, numeric_ratings_grouped, unit_keys
from judgelab.analysis.tables import HUMAN_SOURCE, natural_key, parsed_times
from judgelab.configs.schema import builtin_schema

DEFAULT_ITEMS = builtin_schema("augmentation_quality").items_of_kind("ordinal")
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
    judgments: pd.DataFrame,
    items: Sequence[str],
    source: str | None,
    ratings: pd.DataFrame | None,
    groups: RowGroups | None = None,
) -> pd.DataFrame:
    """``numeric_ratings`` of ``items`` (of every group, see ``numeric_ratings_grouped``), or the
    rows of ``items`` of ratings computed beforehand (``ratings=``: the same ratings of more items,
    shared by several checks; with their ``GROUP`` column when ``groups`` is given)."""
    if ratings is None:
        return numeric_ratings_grouped(judgments, groups, items, source=source)
    return ratings[ratings["item"].isin(list(items))]


def _size(groups: RowGroups | None) -> int:
    return 1 if groups is None else groups.size


def _group_codes(frame: pd.DataFrame, groups: RowGroups | None) -> np.ndarray:
    """Each row's group (all 0 without groups)."""
    if groups is None:
        return np.zeros(len(frame), dtype=np.int64)
    return frame[GROUP].to_numpy(dtype=np.int64)


def _targets(schema_meta: Mapping[str, Any] | None) -> dict[str, Any]:
    return {**DEFAULT_TARGETS, **((schema_meta or {}).get("agreement_targets") or {})}


def _items(schema_meta: Mapping[str, Any] | None, items: Sequence[str] | None) -> list[str]:
    if items:
        return list(items)
    scales = (schema_meta or {}).get("scales") or {}
    return list(scales) or list(DEFAULT_ITEMS)


def pilot_annotators_by_group(
    ratings: pd.DataFrame, groups: RowGroups | None, annotators: Sequence[str] | None = None
) -> list[tuple[str, str] | ValueError]:
    """The two annotators of the pilot in each group of ``ratings`` (``GROUP`` column when
    ``groups`` is given): the given ones, else the pair sharing the most tasks (of pairs sharing
    as many, the first by name); or the ``ValueError`` that says why a group has no pair."""
    return [
        choice if isinstance(choice, ValueError) else choice[0]
        for choice in _pilot_choices(ratings, groups, annotators)
    ]


def _pilot_choices(
    ratings: pd.DataFrame, groups: RowGroups | None, annotators: Sequence[str] | None
) -> list[tuple[tuple[str, str], int] | ValueError]:
    """:func:`pilot_annotators_by_group`'s pairs, each with how many pairs share as many tasks
    (1: it alone; 0: the annotators were given)."""
    size = _size(groups)
    if annotators is not None:
        if len(annotators) != 2:
            error = ValueError(f"the pilot compares two annotators, got {len(annotators)}: {list(annotators)}")
            return [error] * size
        return [((str(annotators[0]), str(annotators[1])), 0)] * size
    keys = unit_keys(ratings)
    units = pd.Series(list(zip(*(ratings[k] for k in keys), strict=True)), index=ratings.index)
    by = ratings["annotator"] if groups is None else [ratings[GROUP], ratings["annotator"]]
    tasks_of = units.groupby(by).agg(lambda s: set(s))
    per_group_tasks: list[dict[object, set]] = [{} for _ in range(size)]
    for key, tasks in tasks_of.items():
        group, name = (0, key) if groups is None else key
        per_group_tasks[int(group)][name] = tasks
    choices: list[tuple[tuple[str, str], int] | ValueError] = []
    for tasks_of_group in per_group_tasks:
        names = sorted(tasks_of_group, key=natural_key)
        if len(names) < 2:
            choices.append(ValueError(f"the pilot needs two annotators, the judgments have {len(names)}: {names}"))
            continue
        shared = {
            (a, b): len(tasks_of_group[a] & tasks_of_group[b]) for i, a in enumerate(names) for b in names[i + 1 :]
        }
        best = max(shared, key=shared.__getitem__)  # the first by name of the pairs sharing the most
        tied = sum(count == shared[best] for count in shared.values())
        choices.append(((str(best[0]), str(best[1])), tied))
    return choices


@dataclass(frozen=True)
class PilotAgreement:
    """``table``: one row per item with ``n_units``, the coefficients, their targets and a
    pass flag each, and ``passed`` (all three met). ``passed`` is True when every item passed.
    ``annotators`` are the two compared; ``units`` the task ids they both rated; ``tied_pairs``
    how many pairs of annotators share as many tasks as they do (they are the first by name of
    those; 0: the two were given)."""

    table: pd.DataFrame
    passed: bool
    annotators: tuple[str, str]
    units: list[object] = field(default_factory=list)
    tied_pairs: int = 1


def _only(results: list[Any]) -> Any:
    """The one group's result of a ``*_by_group`` check run without groups (its error raised)."""
    (result,) = results
    if isinstance(result, ValueError):
        raise result
    return result


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
    return _only(
        pilot_agreement_by_group(
            judgments,
            schema_meta,
            None,
            items=items,
            annotators=annotators,
            tasks=tasks,
            source=source,
            ratings=ratings,
        )
    )


def pilot_agreement_by_group(
    judgments: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None,
    groups: RowGroups | None,
    *,
    items: Sequence[str] | None = None,
    annotators: Sequence[str] | None = None,
    tasks: Sequence[object] | None = None,
    source: str | None = HUMAN_SOURCE,
    ratings: pd.DataFrame | None = None,
) -> list[PilotAgreement | ValueError]:
    """:func:`pilot_agreement` of each group of ``groups`` (see ``analysis.grouped``; ``ratings``
    from ``numeric_ratings_grouped``), or the ``ValueError`` it raises for that group: one pivot
    per item for every group."""
    targets = _targets(schema_meta)
    criteria = _items(schema_meta, items)
    ratings = _ratings(judgments, criteria, source, ratings, groups)
    if tasks is not None:
        ratings = ratings[ratings["task_id"].isin(list(tasks))]
    choices = _pilot_choices(ratings, groups, annotators)
    if not any(isinstance(choice, tuple) for choice in choices):
        return list(choices)
    wide_of = {
        item: _pivot_per_group(ratings[ratings["item"] == item], groups, unit_keys(ratings)) for item in criteria
    }
    results: list[PilotAgreement | ValueError] = []
    for group, choice in enumerate(choices):
        if isinstance(choice, ValueError):
            results.append(choice)
            continue
        (first, second), tied = choice
        rows, shared_units = [], set()
        for item in criteria:
            scores, units = _both_scored(wide_of[item](group), first, second)
            shared_units |= set(units)
            pairs_of_scores = scores.astype(object)
            exact = exact_agreement(pairs_of_scores) if len(scores) else None
            adjacent = adjacent_agreement(scores.astype(float)) if len(scores) else None
            kappa = cohen_kappa(pairs_of_scores[:, 0], pairs_of_scores[:, 1]) if len(scores) else None
            row = {"item": item, "annotator_a": first, "annotator_b": second, "n_units": len(scores)}
            for name, result in (("cohen_kappa", kappa), ("exact_agreement", exact), ("adjacent_agreement", adjacent)):
                value = result.value if result is not None else float("nan")
                target = float(targets[name])
                row[name] = value
                row[f"{name}_target"] = target
                row[f"{name}_passed"] = bool(not np.isnan(value) and value > target)
            row["passed"] = all(row[f"{n}_passed"] for n in ("cohen_kappa", "exact_agreement", "adjacent_agreement"))
            row["pilot_size"] = targets.get("pilot_size")
            row["pilot_size_met"] = bool(targets.get("pilot_size") is None or len(scores) >= int(targets["pilot_size"]))
            rows.append(row)
        table = pd.DataFrame(rows)
        passed = bool(len(table) and table["passed"].all())
        units = sorted(shared_units, key=str)
        results.append(
            PilotAgreement(table=table, passed=passed, annotators=(first, second), units=units, tied_pairs=tied)
        )
    return results


def _both_scored(wide: pd.DataFrame, first: str, second: str) -> tuple[np.ndarray, pd.Index]:
    """The two annotators' scores (a row per unit both scored, in ``wide``'s order and dtype) and
    those units."""
    if first not in wide or second not in wide:
        return np.zeros((0, 2)), wide.index[:0]
    scores = wide[[first, second]].to_numpy()
    kept = ~pd.isna(scores).any(axis=1)
    return scores[kept], wide.index[kept]


def _scored_by_both(wide: pd.DataFrame, first: str, second: str, keys: list[str]) -> tuple[pd.DataFrame, int, int]:
    """The (unit, item) rows both annotators scored (``keys``, ``item``, ``annotator_a``,
    ``annotator_b``, ``score_a``, ``score_b``), the number of units among them and of units where
    the two differ on some item."""
    columns = [*keys, "item", "annotator_a", "annotator_b", "score_a", "score_b"]
    scores, units = _both_scored(wide, first, second)
    if not len(scores):  # nothing shared: the frame as the pandas steps shape it
        for name in (first, second):
            if name not in wide:
                wide[name] = np.nan
        both = wide[[first, second]].dropna().reset_index()
        both.columns.name = None
        both = both.rename(columns={first: "score_a", second: "score_b"})
        return both.assign(annotator_a=first, annotator_b=second)[columns], 0, 0
    both = units.to_frame(index=False).assign(
        annotator_a=first, annotator_b=second, score_a=scores[:, 0], score_b=scores[:, 1]
    )[columns]
    samples = np.column_stack([units.codes[level] for level in range(len(keys))])  # one row per unit and item
    differs = scores[:, 0] != scores[:, 1]
    return both, _n_distinct_rows(samples), _n_distinct_rows(samples[differs])


def _n_distinct_rows(codes: np.ndarray) -> int:
    return int(np.unique(codes, axis=0).shape[0]) if len(codes) else 0


def _pivot_per_group(rows: pd.DataFrame, groups: RowGroups | None, index: list[str]) -> Callable[[int], pd.DataFrame]:
    """``group -> rows.pivot_table(index=index, columns="annotator", values="score", aggfunc="last")``
    of that group's rows alone (``rows`` from ``numeric_ratings_grouped``), from one pivot of every
    group's rows with the group first in its index: a group's part keeps the annotators it has, and
    its integer scores when it has every (unit, annotator) score, as its own pivot would."""

    def pivot(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
        return frame.pivot_table(index=[*keys, *index], columns="annotator", values="score", aggfunc="last")

    if groups is None:
        wide = pivot(rows, [])
        return lambda group: wide
    integer_groups = set(rows.loc[rows[INTEGER_SCORES].to_numpy(dtype=bool), GROUP].unique().tolist())
    parts = {}
    for group, part in pivot(rows, [GROUP]).groupby(level=0, sort=False):
        part = part.droplevel(0)
        part = part.loc[:, part.notna().any(axis=0).to_numpy()]
        if int(group) in integer_groups and not part.isna().to_numpy().any():
            part = part.astype(np.int64)
        parts[int(group)] = part
    empty = rows.iloc[0:0].drop(columns=[GROUP, INTEGER_SCORES])
    return lambda group: parts[group] if group in parts else pivot(empty, [])


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
    return calibration_check_by_group(
        judgments, tasks, schema_meta, None, markers=markers, by=by, source=source, ratings=ratings
    )[0]


def calibration_check_by_group(
    judgments: pd.DataFrame,
    tasks: pd.DataFrame | None,
    schema_meta: Mapping[str, Any] | None,
    groups: RowGroups | None,
    *,
    markers: Sequence[Mapping[str, Any]] | None = None,
    by: Sequence[str] = META_COLUMNS,
    source: str | None = HUMAN_SOURCE,
    ratings: pd.DataFrame | None = None,
) -> list[pd.DataFrame]:
    """:func:`calibration_check` of each group of ``groups`` (``ratings`` from
    ``numeric_ratings_grouped``; ``tasks`` those of every group): every count keyed by the group."""
    markers = list(markers if markers is not None else (schema_meta or {}).get("calibration_markers") or [])
    items = sorted({str(m["item"]) for m in markers})
    needed = list(dict.fromkeys([*by, *(key for m in markers for key in (m.get("subset") or {}))]))
    ratings = _with_meta(_ratings(judgments, items, source, ratings, groups), tasks, needed)
    keys = group_keys(groups)
    rows: list[list[dict[str, Any]]] = [[] for _ in range(_size(groups))]
    scopes: list[tuple[str, str | None]] = [("overall", None)] + [(c, c) for c in by if c in ratings.columns]
    for marker in markers:
        subset = dict(marker.get("subset") or {})
        selected = ratings[ratings["item"] == marker["item"]]
        for column, wanted in subset.items():
            if column not in selected.columns:
                selected = selected.iloc[0:0]
                break
            selected = selected[selected[column].astype(str) == str(wanted)]
        hit = (selected["score"] == float(marker["value"])).to_numpy()
        for scope, column in scopes:
            for group, found, n, hits in _counts(selected, hit, keys, column):
                share = hits / n
                low, high = marker.get("min"), marker.get("max")
                rows[group].append(
                    {
                        "scope": scope,
                        "group": found,
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
    return [pd.DataFrame(part, columns=CALIBRATION_COLUMNS) for part in rows]


def _counts(
    selected: pd.DataFrame, hit: np.ndarray, keys: list[str], column: str | None
) -> list[tuple[int, object, int, int]]:
    """``(group, value of column or '', rows, hits)`` for every non-empty (group, value), in order."""
    by = [*keys, *([column] if column is not None else [])]
    if selected.empty:
        return []
    if not by:
        return [(0, "", len(selected), int(hit.sum()))]
    hits_per_row = pd.Series(hit, index=selected.index)
    counted = hits_per_row.groupby([selected[name] for name in by], sort=True).agg(["size", "sum"])
    out = []
    for key, n, hits in zip(counted.index, counted["size"], counted["sum"], strict=True):
        parts = key if isinstance(key, tuple) else (key,)
        group = int(parts[0]) if keys else 0
        found = parts[-1] if column is not None else ""
        out.append((group, found, int(n), int(hits)))
    return out


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
    return _only(
        resolve_disagreements_by_group(
            judgments, schema_meta, None, items=items, annotators=annotators, source=source, ratings=ratings
        )
    )


def resolve_disagreements_by_group(
    judgments: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None,
    groups: RowGroups | None,
    *,
    items: Sequence[str] | None = None,
    annotators: Sequence[str] | None = None,
    source: str | None = HUMAN_SOURCE,
    ratings: pd.DataFrame | None = None,
) -> list[DisagreementResolution | ValueError]:
    """:func:`resolve_disagreements` of each group of ``groups`` (``ratings`` from
    ``numeric_ratings_grouped``), or the ``ValueError`` it raises for that group."""
    rule = _targets(schema_meta).get("disagreement_rule") or {}
    threshold = float(rule.get("average_below", 0.20))
    criteria = _items(schema_meta, items)
    ratings = _ratings(judgments, criteria, source, ratings, groups)
    pairs = pilot_annotators_by_group(ratings, groups, annotators)
    if not any(isinstance(pair, tuple) for pair in pairs):
        return list(pairs)
    codes = _group_codes(ratings, groups)
    in_pair = np.zeros(len(ratings), dtype=bool)
    for pair in dict.fromkeys(pair for pair in pairs if isinstance(pair, tuple)):
        wanted = np.array([isinstance(p, tuple) and p == pair for p in pairs], dtype=bool)
        in_pair |= wanted[codes] & ratings["annotator"].isin(list(pair)).to_numpy(dtype=bool)
    keys = unit_keys(ratings)
    wide_of = _pivot_per_group(ratings[in_pair], groups, [*keys, "item"])
    results: list[DisagreementResolution | ValueError] = []
    for group, pair in enumerate(pairs):
        if isinstance(pair, ValueError):
            results.append(pair)
            continue
        first, second = pair
        both, n_samples, n_disagreeing = _scored_by_both(wide_of(group), first, second, keys)
        differs = both["score_a"] != both["score_b"]
        disagreements = both[differs].reset_index(drop=True)
        share = n_disagreeing / n_samples if n_samples else float("nan")
        action = "none" if np.isnan(share) else ("average" if share < threshold else "discuss")
        if action == "average":
            averaged = both[[*keys, "item"]].assign(score=(both["score_a"] + both["score_b"]) / 2.0, n_raters=2)
            to_discuss = disagreements.iloc[0:0]
        else:
            averaged = pd.DataFrame(columns=[*keys, "item", "score", "n_raters"])
            to_discuss = disagreements
        results.append(
            DisagreementResolution(
                share_disagreeing=share,
                threshold=threshold,
                action=action,
                n_samples=n_samples,
                averaged=averaged.reset_index(drop=True),
                to_discuss=to_discuss.reset_index(drop=True),
                disagreements=disagreements,
            )
        )
    return results


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
    return annotator_drift_by_group(
        judgments, schema_meta, None, items=items, block_size=block_size, source=source, ratings=ratings
    )[0]


def annotator_drift_by_group(
    judgments: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None,
    groups: RowGroups | None,
    *,
    items: Sequence[str] | None = None,
    block_size: int | None = None,
    source: str | None = HUMAN_SOURCE,
    ratings: pd.DataFrame | None = None,
) -> list[pd.DataFrame]:
    """:func:`annotator_drift` of each group of ``groups`` (``ratings`` from
    ``numeric_ratings_grouped``): every step keyed by the group first."""
    size = int(block_size or (schema_meta or {}).get("drift_block_size") or DEFAULT_BLOCK_SIZE)
    if size < 1:
        raise ValueError(f"block_size must be at least 1, got {size}")
    criteria = _items(schema_meta, items)
    ratings = _ratings(judgments, criteria, source, ratings, groups)
    n_groups = _size(groups)
    if ratings.empty:
        return [pd.DataFrame(columns=DRIFT_COLUMNS) for _ in range(n_groups)]
    keys = group_keys(groups)
    ratings, annotations = _in_blocks(ratings, keys, size)
    blocks = (
        annotations.groupby([*keys, "annotator", "block"])
        .agg(
            first_annotation=("_time", "min"),
            last_annotation=("_time", "max"),
            n_annotations=("annotation_id", "size"),
        )
        .reset_index()
    )
    result = blocks.merge(_block_means(ratings, keys), on=[*keys, "annotator", "block"])
    codes = _group_codes(result, groups)
    annotator_names, block_numbers = result["annotator"].to_numpy(dtype=object), result["block"].to_numpy()
    order = sorted(range(len(result)), key=lambda i: (codes[i], natural_key(annotator_names[i]), block_numbers[i]))
    result = result.iloc[order].reset_index(drop=True)
    if groups is None:
        return [result[DRIFT_COLUMNS]]
    present = set(np.unique(codes).tolist())
    return [
        part[DRIFT_COLUMNS] if group in present else pd.DataFrame(columns=DRIFT_COLUMNS)
        for group, part in enumerate(split_groups(result, n_groups, keep_index=False))
    ]


def _in_blocks(ratings: pd.DataFrame, keys: list[str], size: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each annotator's annotations in the order they were made (creation time, then table order;
    no time last), cut into blocks of ``size``: the ratings with their annotation's ``block`` and
    ``_time``, and one row per annotation."""
    ratings = ratings.reset_index(drop=True)
    ratings["_order"] = np.arange(len(ratings))
    created = ratings["created_at"] if "created_at" in ratings else pd.Series(None, index=ratings.index)
    ratings["_time"] = parsed_times(created)
    annotations = (
        ratings.groupby([*keys, "annotator", "annotation_id"], sort=False)
        .agg(_time=("_time", "min"), _order=("_order", "min"))
        .reset_index()
        .sort_values([*keys, "annotator", "_time", "_order"], na_position="last", kind="stable")
    )
    annotations["block"] = annotations.groupby([*keys, "annotator"]).cumcount() // size
    ratings = ratings.drop(columns=["_time"]).merge(
        annotations[[*keys, "annotation_id", "annotator", "block", "_time"]], on=[*keys, "annotator", "annotation_id"]
    )
    return ratings, annotations


def _block_means(ratings: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Each annotator's mean score per block and item, and its change from their first block."""
    means = (
        ratings.groupby([*keys, "annotator", "block", "item"])["score"].agg(n_ratings="size", mean="mean").reset_index()
    )
    first = means[means["block"] == 0][[*keys, "annotator", "item", "mean"]].rename(columns={"mean": "_first"})
    means = means.merge(first, on=[*keys, "annotator", "item"], how="left")
    means["change_vs_first_block"] = means["mean"] - means["_first"]
    return means.drop(columns=["_first"])
