"""From tidy ``judgments`` to reliability matrices and a per-item agreement table.

A reliability matrix for one project and one item has one row per task and one column
per annotator (see ``analysis.agreement``). Building it makes four choices, all here:

- Only rows of one ``source`` (``"human"`` by default) that were not cancelled count.
- An annotator with several annotations of the same task counts once, with the most
  recent annotation (``updated_at``, else ``created_at``, else table order).
- Values are normalised per item kind: ordinal values become numbers (``"3"`` and
  ``"3.0"`` agree); nominal values are stripped strings, several values of one
  annotation (a multi-choice answer) become one sorted ``" | "``-joined category;
  a flag is ``"checked"`` when its row exists and ``"unchecked"`` when the annotator
  annotated the task without ticking it (Label Studio stores no row for an unticked box).
- Empty values are missing.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from judgelab.analysis.agreement import AgreementResult, adjacent_agreement, cohen_kappa, exact_agreement, fleiss_kappa
from judgelab.analysis.bootstrap import bootstrap_alpha_ci
from judgelab.analysis.chance_agreement import (
    bennett_s,
    gwet_ac1,
    gwet_ac2,
    light_kappa,
    scott_pi,
    weighted_cohen_kappa,
)
from judgelab.analysis.grouped import GROUP, RowGroups, group_keys, member, per_group, split_groups, with_groups
from judgelab.analysis.kinds import KIND_DEFAULT, KIND_INFERRED, effective_meta, item_kinds
from judgelab.analysis.krippendorff import LEVELS, NUMERIC_INFERRED_TYPES, krippendorff_alpha, value_codes
from judgelab.configs.items import is_declared, item_kind

HUMAN_SOURCE = "human"
MODEL_SOURCE_PREFIX = "model:"
FLAG_CHECKED = "checked"
FLAG_UNCHECKED = "unchecked"
MULTI_VALUE_SEPARATOR = " | "

AGREEMENT_COLUMNS = [
    "project",
    "item",
    "kind",
    "n_units",
    "n_annotators",
    "n_annotations",
    "exact_agreement",
    "cohen_kappa",
    "fleiss_kappa",
    "reason",
    # added later: after ``reason`` so that the original columns keep their positions
    "adjacent_agreement",
    "cohen_kappa_linear",
    "cohen_kappa_quadratic",
    "light_kappa",
    "scott_pi",
    "bennett_s",
    "gwet_ac1",
    "gwet_ac2",
    "alpha_level",
    "krippendorff_alpha",
    "alpha_ci_low",
    "alpha_ci_high",
    "kind_from",
    "light_kappa_quadratic",
    "n_pairs",
    "min_pair_units",
]
MAX_SCALE_POINTS = 101


def natural_key(text: object) -> tuple[object, ...]:
    """Sort key that puts ``line_2`` before ``line_10``."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(text)))


def shared_strings(values: pd.Series) -> pd.Series:
    """``values`` with one Python object for each distinct value, shared by its rows (missing
    values stay missing): pandas' own text is each row's bytes again, and a column of names or
    sources the report keeps or joins has hundreds of thousands of rows at 100,000 tasks."""
    return values.astype("category").astype(object)


def shared_text(values: pd.Series) -> pd.Series:
    """``values`` as text (``astype(str)``), one Python string for each distinct one (:func:`shared_strings`)."""
    return shared_strings(values.astype(str))


def rows_where(frame: pd.DataFrame, keep: pd.Series) -> pd.DataFrame:
    """The rows of ``frame`` that ``keep`` keeps: all of them without copying them when it keeps
    every row (a filter copies every row it keeps; a shallow copy here, so that a column set on
    it stays its own)."""
    return frame.copy(deep=False) if keep.all() else frame[keep]


def only_columns(frame: pd.DataFrame, *names: str) -> pd.DataFrame:
    """``frame``'s columns among ``names``, in its order, not copied: narrowed before a filter,
    the filter copies only the columns read (at 100,000 tasks the tables' texts, times and ids
    are hundreds of MiB).

    >>> list(only_columns(pd.DataFrame({"a": [1], "b": [2], "c": [3]}), "c", "a", "z").columns)
    ['a', 'c']
    """
    wanted = set(names)
    return frame[[column for column in frame.columns if column in wanted]]


def usable_judgments(judgments: pd.DataFrame, *, source: str | None = HUMAN_SOURCE) -> pd.DataFrame:
    """Judgments of one ``source`` (all sources when ``None``) that were not cancelled.

    Rows without an annotator get ``"annotation <id>"`` as annotator, so that two unnamed
    annotations are never merged into one rater.
    """
    frame = judgments
    if source is not None and "source" in frame.columns:
        frame = frame[frame["source"] == source]
    frame = frame[~cancelled_mask(frame)]  # a frame of its own: the names set below never reach the caller's
    if "annotator" not in frame.columns:
        frame["annotator"] = None
    unnamed = frame["annotator"].isna() | (frame["annotator"].astype(str).str.strip() == "")
    frame.loc[unnamed, "annotator"] = "annotation " + frame.loc[unnamed, "annotation_id"].astype(str)
    return frame


def cancelled_mask(frame: pd.DataFrame) -> pd.Series:
    """True for rows of cancelled (skipped) annotations; all False without ``was_cancelled``.

    Booleans are taken as they are; other values count as true when they are the strings
    ``true``/``1``/``yes`` (any case) or truthy non-strings; missing values are false.
    """
    if "was_cancelled" not in frame.columns:
        return pd.Series(False, index=frame.index, dtype=bool)
    column = frame["was_cancelled"]
    if pd.api.types.is_bool_dtype(column):
        return column.fillna(False).astype(bool)
    return column.map(_is_true).astype(bool)


def human_annotations(judgments: pd.DataFrame, spans: pd.DataFrame) -> pd.DataFrame:
    """``project, task_id, annotation_id, annotator``: one row per human annotation that was not
    cancelled, whether it holds judgments, spans or both (a span-only annotation counts). The one
    definition every count of annotations and annotators uses.

    >>> j = pd.DataFrame({"project": 1, "task_id": [1, 2], "annotation_id": [10, 11], "annotator": ["a", "b"],
    ...                   "source": "human", "was_cancelled": [False, True]})
    >>> s = pd.DataFrame({"project": 1, "task_id": [2, 3], "annotation_id": [11, 12], "annotator": ["b", "c"],
    ...                   "source": "human"})
    >>> human_annotations(j, s)["annotation_id"].tolist()  # 11 was cancelled; 12 holds spans only
    [10, 12]
    """
    columns = ["project", "task_id", "annotation_id", "annotator"]
    cancelled = set(judgments.loc[cancelled_mask(judgments), "annotation_id"]) if not judgments.empty else set()
    parts = []
    for frame in (judgments, spans):
        if frame.empty or "annotation_id" not in frame.columns:
            continue
        source = frame["source"].fillna(HUMAN_SOURCE) if "source" in frame.columns else HUMAN_SOURCE
        kept = (source == HUMAN_SOURCE) & ~frame["annotation_id"].isin(cancelled)
        parts.append(frame.reindex(columns=columns)[kept])  # the four columns' rows, not every column's
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True).drop_duplicates(["project", "task_id", "annotation_id"])


def latest_annotations(annotation_rows: pd.DataFrame, *, keys: Sequence[str] = ()) -> pd.DataFrame:
    """One row per (task_id, annotator): the annotator's most recent annotation of the task.

    ``annotation_rows`` needs ``task_id``, ``annotator``, ``annotation_id`` and may have
    ``updated_at`` / ``created_at``. Returns columns ``task_id, annotator, annotation_id``.
    ``keys`` (columns of ``annotation_rows``) come first in the key and in the result: rows
    that differ in them never compete (the groups of ``analysis.grouped``).
    """
    columns = [*keys, "task_id", "annotator", "annotation_id"]
    if annotation_rows.empty:
        return pd.DataFrame(columns=columns)
    frame = annotation_rows.reset_index(drop=True)
    frame = frame.assign(_order=np.arange(len(frame)), _time=_annotation_time(frame))
    frame = frame.sort_values(["_time", "_order"], na_position="first", kind="stable")
    latest = frame.drop_duplicates(subset=[*keys, "task_id", "annotator"], keep="last")
    return latest[columns].reset_index(drop=True)


def latest_rows(rows: pd.DataFrame, by: Sequence[str] = ("annotator",)) -> pd.DataFrame:
    """``rows`` of each rater's latest annotation of a task, a rater being the columns ``by`` (the
    last is its name; rows differing in the others never compete), or ``rows`` itself when nobody
    annotated a task twice.

    Decided on one row per annotation (its last, so that annotations of the same time keep the
    order of the rows), not on every row of every item: at 100,000 tasks that sort was 80-100 MiB."""
    *keys, name = by
    times = [column for column in ("created_at", "updated_at") if column in rows.columns]
    annotations = rows[["task_id", "annotation_id", *times, *by]].drop_duplicates("annotation_id", keep="last")
    if not annotations.duplicated(["task_id", *by]).any():
        return rows
    latest = latest_annotations(annotations.rename(columns={name: "annotator"}), keys=keys)
    return rows[rows["annotation_id"].isin(latest["annotation_id"])]


def ratings_matrix(
    judgments: pd.DataFrame,
    project: object,
    item: str,
    *,
    kind: str = "nominal",
    source: str | None = HUMAN_SOURCE,
    annotations: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Tasks x annotators matrix of one item's values in one project.

    Rows are ``task_id``, columns ``annotator``; a cell is the normalised value (see the
    module docstring) or NaN/None when the annotator did not rate the task. ``kind`` picks
    the normalisation (``item_kind`` gives it). ``annotations`` (columns ``task_id``,
    ``annotator``, ``annotation_id``) lists who annotated what; for flags it decides where an
    absent row means ``"unchecked"``. By default it is every annotation of the project in
    ``judgments``.
    """
    project_rows = usable_judgments(judgments[judgments["project"] == project], source=source)
    if annotations is None:
        annotations = latest_annotations(project_rows)
    return _matrix_from_rows(project_rows[project_rows["item"] == item], annotations, kind)


def per_item_agreement(
    judgments: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None,
    *,
    spans: pd.DataFrame | None = None,
    source: str | None = HUMAN_SOURCE,
    alpha_levels: Mapping[str, str] | None = None,
    kinds: Mapping[str, str] | None = None,
    n_boot: int = 1000,
    ci_level: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Agreement per (project, item) for every non-text item in ``judgments``.

    Columns: ``project, item, kind, n_units`` (tasks rated by two or more annotators: what
    the coefficients rest on), ``n_annotators, n_annotations`` (ratings counted), the
    coefficients of :func:`item_agreement`, ``reason`` (why a coefficient is NaN,
    ``"; "``-joined, or empty) and ``kind_from``: where the item's kind came from. ``spans``
    adds the annotations that have spans but no judgment row, so that flags are counted as
    unticked there.

    The kind of an item (ordinal, nominal, flag, text) comes from ``kinds`` (item -> kind) when
    given, else from ``schema_meta`` (``scales``, ``items``; ``kind_from`` ``schema``); an item
    neither declares is a rating scale when its answers are whole numbers in a short range
    (``kind_from`` ``inferred``: BASSE's 1-5 criteria without a schema) and nominal otherwise
    (``default``). With ``schema_meta=None`` every kind is inferred so, and a :class:`KindWarning`
    names the items whose kind was inferred: ordinal items are never silently nominal.

    ``alpha_levels`` maps an item to the level of Krippendorff's alpha (``"interval"`` for a
    numeric scale whose points are equally spaced, say); by default ordinal items get
    ``"ordinal"`` and the others ``"nominal"``. ``n_boot`` (0 to skip), ``ci_level`` and
    ``seed`` set the bootstrap interval of alpha.
    """
    return per_item_agreement_by_group(
        judgments,
        schema_meta,
        None,
        spans=spans,
        source=source,
        alpha_levels=alpha_levels,
        kinds=kinds,
        n_boot=n_boot,
        ci_level=ci_level,
        seed=seed,
    )[0]


#: the judgments' columns :func:`per_item_agreement_by_group` reads (and the group's)
AGREEMENT_READS = ("project", "task_id", "annotation_id", "annotator", "source", "item", "value", "was_cancelled")


def per_item_agreement_by_group(
    judgments: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None,
    groups: RowGroups | None,
    *,
    spans: pd.DataFrame | None = None,
    source: str | None = HUMAN_SOURCE,
    alpha_levels: Mapping[str, str] | None = None,
    kinds: Mapping[str, str] | None = None,
    n_boot: int = 1000,
    ci_level: float = 0.95,
    seed: int = 0,
) -> list[pd.DataFrame]:
    """:func:`per_item_agreement` of each group of rows of ``groups`` (the ``judgments`` and
    ``spans`` codes; see ``analysis.grouped``), equal to it run on each group's rows alone, with
    the rows prepared once: usable rows, latest annotations and normalised values for every
    group together, then one matrix per group and item. ``groups=None``: one group, every row.
    """
    size = 1 if groups is None else groups.size
    keys = group_keys(groups)
    frame = with_groups(judgments, groups, "judgments")
    span_frame = None if spans is None else with_groups(spans, groups, "spans")
    present = _groups_present(frame, groups)
    if not present:
        return [pd.DataFrame(columns=AGREEMENT_COLUMNS) for _ in range(size)]
    rows: list[list[dict[str, object]]] = [[] for _ in range(size)]
    levels = alpha_levels or {}
    # the columns read below, narrowed before the filter copies the rows (every column of the
    # judgments was 44 MiB at 100,000 tasks); a one-project table's rows are not copied again
    usable = usable_judgments(only_columns(frame, *AGREEMENT_READS, *keys), source=source)
    resolved = _kinds_per_group(schema_meta, usable, kinds, groups)
    scales = _scales_per_group(schema_meta, usable, groups)
    for project in sorted(frame["project"].dropna().unique(), key=natural_key):
        project_rows = rows_where(usable, usable["project"] == project)
        annotations = latest_annotations(_annotation_rows(frame, span_frame, project, source, keys), keys=keys)
        by_item = project_rows.groupby("item", sort=False)  # an item's rows taken when it comes, not all at once
        for item in sorted(by_item.groups, key=natural_key):
            item_rows = by_item.get_group(item)
            in_item = [0] if groups is None else sorted({int(group) for group in item_rows[GROUP].unique()})
            kinds_of = {group: _kind(resolved[group], scales[group][1], item) for group in in_item}
            for kind in dict.fromkeys(kind for kind, _ in kinds_of.values()):
                if kind == "text":
                    continue
                wanted = [group for group in in_item if kinds_of[group][0] == kind]
                for group, matrix in _matrices(item_rows, annotations, kind, groups, wanted).items():
                    agreement = item_agreement(
                        matrix,
                        kind,
                        scale=scales[group][0].get(item),
                        alpha_level=levels.get(str(item)),
                        n_boot=n_boot,
                        ci_level=ci_level,
                        seed=seed,
                    )
                    row = {"project": project, "item": item, "kind": kind, **agreement, "kind_from": kinds_of[group][1]}
                    rows[group].append(row)
    return [
        pd.DataFrame(rows[group], columns=AGREEMENT_COLUMNS) if group in present
        else pd.DataFrame(columns=AGREEMENT_COLUMNS)
        for group in range(size)
    ]  # fmt: skip


def _kind(resolved: Mapping[str, tuple[str, str]], meta: Mapping[str, Any], item: object) -> tuple[str, str]:
    return resolved.get(str(item), (item_kind(meta, str(item)), KIND_DEFAULT))


def _groups_present(frame: pd.DataFrame, groups: RowGroups | None) -> set[int]:
    """The groups that have rows in ``frame`` (``{0}`` for a non-empty ungrouped frame)."""
    if frame.empty:
        return set()
    return {0} if groups is None else {int(group) for group in np.unique(frame[GROUP].to_numpy())}


def _kinds_per_group(
    schema_meta: Mapping[str, Any] | None,
    usable: pd.DataFrame,
    kinds: Mapping[str, str] | None,
    groups: RowGroups | None,
) -> list[dict[str, tuple[str, str]]]:
    """``item -> (kind, origin)`` of each group (see ``item_kinds``), ``kinds`` overriding."""
    given = {str(item): (str(kind), "given") for item, kind in (kinds or {}).items()}
    size = 1 if groups is None else groups.size
    if kinds is not None and {str(item) for item in usable["item"].dropna().unique()} <= set(given):
        return [given] * size  # every item is named: nothing to infer
    resolved = []
    for part in per_group(usable, groups):
        kinds_of = item_kinds(schema_meta, part) | given
        if schema_meta is None and kinds is None and not part.empty:
            warn_inferred_kinds(kinds_of, stacklevel=5)  # the caller of per_item_agreement
        resolved.append(kinds_of)
    return resolved


def _scales_per_group(
    schema_meta: Mapping[str, Any] | None, usable: pd.DataFrame, groups: RowGroups | None
) -> list[tuple[Mapping[str, Any], dict[str, Any]]]:
    """``(scales, meta)`` of each group: ``effective_meta`` of its usable rows. Only the items the
    schema does not declare can differ between groups, so only their rows are looked at."""
    if groups is None:
        meta = effective_meta(schema_meta, usable)
        return [(meta.get("scales") or {}, meta)]
    undeclared = [item for item in usable["item"].dropna().unique() if not _declared(schema_meta, str(item))]
    if not undeclared:
        meta = effective_meta(schema_meta, usable.iloc[0:0])
        return [(meta.get("scales") or {}, meta)] * groups.size
    metas = [effective_meta(schema_meta, part) for part in per_group(usable[usable["item"].isin(undeclared)], groups)]
    return [(meta.get("scales") or {}, meta) for meta in metas]


def _declared(schema_meta: Mapping[str, Any] | None, name: str) -> bool:
    """Whether ``effective_meta`` leaves the item as the schema says (it infers no scale for it)."""
    meta = schema_meta or {}
    return name in (meta.get("scales") or {}) or name.endswith(".explanation") or is_declared(meta, name)


class KindWarning(UserWarning):
    """``per_item_agreement`` had no schema and inferred how to compare some items."""


def warn_inferred_kinds(resolved: Mapping[str, tuple[str, str]], stacklevel: int = 3) -> None:
    ordinal = [item for item, (kind, origin) in resolved.items() if origin == KIND_INFERRED]
    nominal = [item for item, (kind, origin) in resolved.items() if origin == KIND_DEFAULT and kind == "nominal"]
    parts = []
    if ordinal:
        parts.append(f"compared as rating scales (whole-number answers): {', '.join(map(str, ordinal))}")
    if nominal:
        parts.append(f"compared as nominal labels: {', '.join(map(str, nominal))}")
    if parts:
        warnings.warn(
            "per_item_agreement without a schema: " + "; ".join(parts) + " (pass schema_meta or kinds to declare them)",
            KindWarning,
            stacklevel=stacklevel,
        )


def _as_numbers(values: np.ndarray, rated: np.ndarray, numeric: bool) -> np.ndarray:
    """The answers as floats, NaN where unrated: the values themselves when they are numbers, else
    category codes (every nominal coefficient is unchanged by relabelling)."""
    if numeric:
        return np.where(rated, values, np.nan).astype(np.float64)
    data = value_codes(values).codes.astype(np.float64)
    data[~rated] = np.nan
    return data


_NOT_NUMERIC = AgreementResult(float("nan"), 0, "the item has values that are not numbers")


def _every_kind_coefficients(
    values: np.ndarray, data: np.ndarray, categories: np.ndarray | None, cohen: AgreementResult
) -> dict[str, AgreementResult]:
    """The coefficients every kind of item has, in the output's column order, with NaN in the
    places of the ordinal ones and of alpha (not numbers, until computed)."""
    nan = AgreementResult(float("nan"), 0)
    return {
        "adjacent_agreement": nan,
        "cohen_kappa": cohen,
        "cohen_kappa_linear": nan,
        "cohen_kappa_quadratic": nan,
        "light_kappa": light_kappa(data),
        "light_kappa_quadratic": nan,
        "fleiss_kappa": fleiss_kappa(values),
        "scott_pi": scott_pi(data),
        "bennett_s": bennett_s(data, categories=categories),
        "gwet_ac1": gwet_ac1(data, categories=categories),
        "gwet_ac2": nan,
        "krippendorff_alpha": _NOT_NUMERIC,
    }


def _ordinal_coefficients(
    data: np.ndarray, rated: np.ndarray, numeric: bool, categories: np.ndarray | None, cohen_units: int
) -> dict[str, AgreementResult]:
    """The coefficients only ordinal items have: adjacent agreement, Gwet's AC2, the quadratic
    Light's kappa and the weighted Cohen's kappas of the two annotators who share the tasks; NaN
    with a reason when the answers are not numbers or there is no such pair."""
    results = dict.fromkeys(["adjacent_agreement", "gwet_ac2"], _NOT_NUMERIC)
    if numeric:
        results["adjacent_agreement"] = adjacent_agreement(data)
        results["gwet_ac2"] = gwet_ac2(data, "ordinal", categories=categories)
        results["light_kappa_quadratic"] = light_kappa(data, "quadratic")
    pair = _shared_pair(rated)
    for weights in ("linear", "quadratic"):
        if isinstance(pair, str):
            results[f"cohen_kappa_{weights}"] = AgreementResult(float("nan"), cohen_units, pair)
        elif numeric:
            results[f"cohen_kappa_{weights}"] = weighted_cohen_kappa(
                data[:, pair[0]], data[:, pair[1]], weights, categories=categories
            )
        else:
            results[f"cohen_kappa_{weights}"] = _NOT_NUMERIC
    return results


def _pair_units(rated: np.ndarray) -> tuple[int, int]:
    """(pairs of annotators who share a task, the fewest tasks such a pair shares; 0 without one)."""
    shared = rated.T.astype(np.int64) @ rated.astype(np.int64)
    pair_units = shared[np.triu_indices(shared.shape[0], k=1)]
    pair_units = pair_units[pair_units > 0]
    return int(len(pair_units)), int(pair_units.min()) if len(pair_units) else 0


def _alpha_level(alpha_level: str | None, ordinal: bool) -> str:
    """The level alpha is computed at: the one asked for, else ordinal for a rating scale and
    nominal for the rest; ``ValueError`` for an unknown level."""
    level = alpha_level or ("ordinal" if ordinal else "nominal")
    if level not in LEVELS:
        raise ValueError(f"unknown alpha level {level!r} for an item; use one of {', '.join(LEVELS)}")
    return level


def _alpha_interval(
    alpha: AgreementResult, data: np.ndarray, rated: np.ndarray, level: str, n_boot: int, ci_level: float, seed: int
) -> tuple[float, float]:
    """Alpha's percentile bootstrap interval over the tasks rated twice or more; NaN without
    replicates or without an alpha."""
    if n_boot > 0 and alpha.is_defined:
        pairable = rated.sum(axis=1) >= 2
        return bootstrap_alpha_ci(data[pairable], level, n_boot, 1.0 - ci_level, seed)
    return float("nan"), float("nan")


def item_agreement(
    matrix: pd.DataFrame,
    kind: str = "nominal",
    *,
    scale: Mapping[str, Any] | None = None,
    alpha_level: str | None = None,
    n_boot: int = 1000,
    ci_level: float = 0.95,
    seed: int = 0,
) -> dict[str, object]:
    """The agreement columns of ``per_item_agreement`` for one tasks x annotators matrix.

    Every kind: ``exact_agreement``; ``cohen_kappa`` (only when exactly two annotators rated
    the shared tasks); ``light_kappa`` (mean pairwise Cohen's kappa, any number of
    annotators; ``n_pairs`` pairs of annotators share a task, the fewest tasks a pair shares is
    ``min_pair_units``); ``fleiss_kappa`` and ``scott_pi`` (the same coefficient, irrCAC's
    generalisation); ``bennett_s``; ``gwet_ac1``; ``krippendorff_alpha`` at ``alpha_level``
    with its percentile bootstrap interval over tasks ``alpha_ci_low``/``alpha_ci_high``
    (``n_boot`` replicates of the tasks rated twice or more, ``seed``; NaN with ``n_boot=0``).

    Ordinal items with numeric values add ``adjacent_agreement`` (within one point),
    ``cohen_kappa_linear``/``cohen_kappa_quadratic`` (two annotators), ``light_kappa_quadratic``
    (their quadratic kappa averaged over pairs) and ``gwet_ac2`` (irrCAC's
    ordinal weights); alpha defaults to the ordinal level. For an ordinal item, ``scale``
    (``{"min": 1, "max": 5}``) gives the categories nobody used, which Bennett's S and Gwet's
    AC1/AC2 count. Coefficients that do not apply to the kind are NaN without a reason.
    """
    values = matrix.to_numpy(dtype=object)
    rated = ~pd.isna(values)
    numeric = pd.api.types.infer_dtype(values[rated], skipna=False) in NUMERIC_INFERRED_TYPES
    ordinal = kind == "ordinal"
    level = _alpha_level(alpha_level, ordinal)
    data = _as_numbers(values, rated, numeric)
    categories = _scale_categories(scale, data) if ordinal and numeric else None

    exact = exact_agreement(values)
    cohen = _cohen_on_shared_units(matrix, rated)
    results = _every_kind_coefficients(values, data, categories, cohen)
    if ordinal:
        results.update(_ordinal_coefficients(data, rated, numeric, categories, cohen.n_units))
    if numeric or level == "nominal":
        results["krippendorff_alpha"] = krippendorff_alpha(data, level)
    alpha = results["krippendorff_alpha"]
    low, high = _alpha_interval(alpha, data, rated, level, n_boot, ci_level, seed)
    n_pairs, min_pair_units = _pair_units(rated)
    return {
        "n_pairs": n_pairs,
        "min_pair_units": min_pair_units,
        "n_units": exact.n_units,
        "n_annotators": int(rated.any(axis=0).sum()),
        "n_annotations": int(rated.sum()),
        "exact_agreement": exact.value,
        **{name: result.value for name, result in results.items() if name != "krippendorff_alpha"},
        "alpha_level": level,
        "krippendorff_alpha": alpha.value,
        "alpha_ci_low": low,
        "alpha_ci_high": high,
        "reason": exact.reason or _single_value_reason(values[rated]) or _joined_reasons(results),
    }


COEFFICIENT_NAMES = {
    "adjacent_agreement": "adjacent agreement",
    "cohen_kappa": "Cohen's kappa",
    "cohen_kappa_linear": "linear weighted kappa",
    "cohen_kappa_quadratic": "quadratic weighted kappa",
    "light_kappa": "Light's kappa",
    "light_kappa_quadratic": "quadratic weighted Light's kappa",
    "fleiss_kappa": "Fleiss' kappa",
    "scott_pi": "Scott's pi",
    "bennett_s": "Bennett's S",
    "gwet_ac1": "Gwet's AC1",
    "gwet_ac2": "Gwet's AC2",
    "krippendorff_alpha": "Krippendorff's alpha",
}


def _joined_reasons(results: Mapping[str, AgreementResult]) -> str:
    """``"Cohen's kappa, Scott's pi: why; Krippendorff's alpha: why"`` for the NaN coefficients."""
    names_per_reason: dict[str, list[str]] = {}
    for column, result in results.items():
        if result.reason and not result.is_defined:
            names_per_reason.setdefault(result.reason, []).append(COEFFICIENT_NAMES[column])
    return "; ".join(f"{', '.join(names)}: {reason}" for reason, names in names_per_reason.items())


def _single_value_reason(ratings: np.ndarray) -> str:
    """One reason for all the chance-corrected NaNs when every rating is the same value."""
    distinct = pd.unique(ratings)
    if len(distinct) != 1:
        return ""
    value = distinct[0]
    shown = int(value) if isinstance(value, float) and value.is_integer() else value
    return (
        f"every rating has the same value ({shown!r}), so kappa, pi and alpha are undefined "
        "(chance agreement is 1); Bennett's S and Gwet's AC1/AC2 are defined when the scale names other values"
    )


def _scale_categories(scale: Mapping[str, Any] | None, data: np.ndarray) -> np.ndarray | None:
    """Every point of an integer scale ``{min, max}`` plus any value used outside it."""
    try:
        low, high = int(scale["min"]), int(scale["max"])  # type: ignore[index]
    except (KeyError, TypeError, ValueError):
        return None
    if not 0 < high - low < MAX_SCALE_POINTS:
        return None
    observed = data[~np.isnan(data)]
    return np.union1d(np.arange(low, high + 1, dtype=np.float64), observed)


def _shared_pair(rated: np.ndarray) -> tuple[int, int] | str:
    """The two columns that rated the shared tasks, or why there are not exactly two."""
    shared_units = rated.sum(axis=1) >= 2
    if not shared_units.any():
        return "no unit was rated by two or more raters"
    raters_on_shared = np.flatnonzero(rated[shared_units].any(axis=0))
    if len(raters_on_shared) != 2:
        return (
            f"{len(raters_on_shared)} annotators rated the shared tasks; it needs exactly two "
            "(see Light's and Fleiss' kappa)"
        )
    return int(raters_on_shared[0]), int(raters_on_shared[1])


def _cohen_on_shared_units(matrix: pd.DataFrame, rated: np.ndarray) -> AgreementResult:
    pair = _shared_pair(rated)
    if isinstance(pair, str):
        return AgreementResult(float("nan"), int((rated.sum(axis=1) >= 2).sum()), pair)
    first, second = (matrix.iloc[:, column].to_numpy(dtype=object) for column in pair)
    return cohen_kappa(first, second)


def _annotation_rows(
    judgments: pd.DataFrame,
    spans: pd.DataFrame | None,
    project: object,
    source: str | None,
    keys: Sequence[str] = (),
) -> pd.DataFrame:
    """Who annotated which task in ``project``: usable judgment rows plus span rows.

    Span rows of an annotation the judgments mark as cancelled are dropped too. ``keys`` (the
    group) are kept and come first in every key.
    """
    columns = [*keys, "task_id", "annotator", "annotation_id", "created_at", "updated_at"]
    read = [*columns, "source", "was_cancelled"]
    raw = only_columns(judgments, *read)[judgments["project"] == project]
    frames = [usable_judgments(raw, source=source)]
    if spans is not None and not spans.empty:
        cancelled = raw.loc[cancelled_mask(raw), [*keys, "annotation_id"]]
        span_rows = only_columns(spans, *read)[
            (spans["project"] == project) & ~member(spans, cancelled, [*keys, "annotation_id"])
        ]
        frames.append(usable_judgments(span_rows, source=source))
    rows = pd.concat([_reindexed_like(frame, columns, frames[0]) for frame in frames], ignore_index=True)
    return rows.drop_duplicates(subset=[*keys, "annotation_id"], keep="first")


def _reindexed_like(frame: pd.DataFrame, columns: Sequence[str], like: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ``columns``, a missing one empty in ``like``'s type where that is a time: the
    spans have no times, and a time column joined to a column of NaN became one Python object a
    row (90 MiB at 100,000 tasks)."""
    missing = [column for column in columns if column not in frame.columns]
    frame = frame.reindex(columns=columns)
    for column in missing:
        if column in like.columns and pd.api.types.is_datetime64_any_dtype(like[column].dtype):
            frame[column] = pd.Series(pd.NaT, index=frame.index, dtype=like[column].dtype)
    return frame


def _matrix_from_rows(item_rows: pd.DataFrame, annotations: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Tasks x annotators matrix from one item's usable rows and the kept annotations."""
    kept_rows = item_rows[item_rows["annotation_id"].isin(set(annotations["annotation_id"]))]
    cells = annotations.merge(_values_per_annotation(kept_rows, kind), on="annotation_id", how="left")
    return _matrix(cells, kind)


def _matrices(
    item_rows: pd.DataFrame, annotations: pd.DataFrame, kind: str, groups: RowGroups | None, wanted: list[int]
) -> dict[int, pd.DataFrame]:
    """:func:`_matrix_from_rows` of each ``wanted`` group (the values of every group normalised at once)."""
    if groups is None:
        return {0: _matrix_from_rows(item_rows, annotations, kind)}
    values = _values_per_annotation(item_rows, kind, keys=[GROUP])  # a value of no kept annotation joins nothing
    cells = annotations.merge(values, on=[GROUP, "annotation_id"], how="left")
    parts = split_groups(cells, groups.size)
    return {group: _matrix(parts[group], kind) for group in wanted}


def _matrix(cells: pd.DataFrame, kind: str) -> pd.DataFrame:
    if kind == "flag":
        cells["value"] = cells["value"].fillna(FLAG_UNCHECKED)
    cells = cells.dropna(subset=["value"])
    matrix = cells.pivot(index="task_id", columns="annotator", values="value")
    matrix = matrix.reindex(columns=sorted(matrix.columns, key=str))
    if pd.api.types.is_numeric_dtype(matrix.index):
        matrix = matrix.sort_index()
    else:
        matrix = matrix.reindex(index=sorted(matrix.index, key=natural_key))
    return matrix.astype(object)


def _values_per_annotation(item_rows: pd.DataFrame, kind: str, keys: Sequence[str] = ()) -> pd.DataFrame:
    """One normalised value per annotation: columns ``annotation_id, value`` (object), after ``keys``."""
    values = pd.DataFrame(
        {
            **{key: item_rows[key].to_numpy() for key in keys},
            "annotation_id": item_rows["annotation_id"].to_numpy(dtype=object),
            "value": normalised_values(item_rows["value"], kind).to_numpy(dtype=object),
        }
    )
    values = values.dropna(subset=["value"]).drop_duplicates()
    if kind == "flag":
        return values.drop_duplicates(subset=[*keys, "annotation_id"]).assign(value=FLAG_CHECKED)
    repeated = values.duplicated(subset=[*keys, "annotation_id"], keep=False)
    if not repeated.any():
        return values
    joined = (
        values[repeated]
        .assign(value=values.loc[repeated, "value"].astype(str))
        .sort_values("value")
        .groupby([*keys, "annotation_id"], sort=False)["value"]
        .agg(MULTI_VALUE_SEPARATOR.join)
        .reset_index()
    )
    return pd.concat([values[~repeated], joined], ignore_index=True).astype({"value": object})


def normalised_values(values: pd.Series, kind: str) -> pd.Series:
    """Values as compared by the agreement code: stripped strings, numbers for ordinal items
    (non-numeric ordinal values stay strings), and missing (None) for empty values.

    >>> normalised_values(pd.Series([" 3", "3.0", "", None, "n/a"]), "ordinal").tolist()
    [3.0, 3.0, None, None, 'n/a']
    """
    present = values.notna().to_numpy()
    text = values.astype(object).where(present, "").astype(str).str.strip()
    result = text.astype(object).where(text != "", None)
    if kind == "ordinal":
        numbers = pd.to_numeric(text.where(text != "", None), errors="coerce")
        result = result.where(numbers.isna(), numbers.astype(object))
    return result


def parsed_times(values: pd.Series | None) -> pd.Series:
    """Annotation times as UTC times, as every reader of ``created_at``/``updated_at`` takes them:
    ISO 8601 text (or times already), a value that is no time missing."""
    return pd.to_datetime(values, errors="coerce", utc=True, format="ISO8601")


def _annotation_time(frame: pd.DataFrame) -> pd.Series:
    time = pd.Series(pd.NaT, index=frame.index, dtype="datetime64[ns, UTC]")
    for column in ("created_at", "updated_at"):
        if column in frame.columns:
            parsed = parsed_times(frame[column])
            time = parsed.where(parsed.notna(), time)
    return time


def _is_true(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"true", "1", "yes"}
    return bool(value) if value is not None and not pd.isna(value) else False
