"""Krippendorff's unitizing alpha (u-alpha) for spans on continua with gaps.

Krippendorff (1995, "On the reliability of unitizing continuous data"; 2004, *Content
Analysis* 2nd ed., section 12.4) scores how well coders agree on where units of each
category begin and end on a continuum (here: one text field of one example, positions in
code points). For a category ``c`` every coder's continuum splits into *units* of ``c`` and
*gaps* (everything else). Between two coders' sections ``g`` and ``h`` the distance is

- both units and overlapping: ``(b_g - b_h)**2 + (e_g - e_h)**2`` (begin and end shifts);
- a unit lying wholly inside the other coder's gap: ``l_g**2`` (and the reverse);
- otherwise 0.

With ``m`` coders on a continuum of length ``L``, ``N = m L`` coder-positions, ``N_c`` units
of ``c`` of lengths ``l``, and ``G_c`` the gaps of ``c`` (all coders)::

    D_o(c) = sum_{i != j} sum_{g in i, h in j} distance(g, h) / (m (m - 1) L**2)
    D_e(c) = 2/L * sum_{g} [ (N_c - 1) (2 l**3 - 3 l**2 + l) / 3
                            + l**2 * sum_{h in G_c, l_h >= l} (l_h - l + 1) ]
             / (N (N - 1) - sum_g l (l - 1))
    alpha_c = 1 - D_o(c) / D_e(c)        alpha_u = 1 - sum_c D_o(c) / sum_c D_e(c)

This follows the DKPro Statistics implementation (``KrippendorffAlphaUnitizingAgreement``),
which reproduces Krippendorff's (2004, p. 254) example: ``alpha_c = 0.7286``,
``alpha_k = 1``, ``alpha_u = 0.8587``. The book prints ``0.8591`` because it divides the
*rounded* disagreements: ``1 - 0.0144 / (0.0532 + 0.0490) = 0.8591``.

Several examples (continua) are summed as one continuum made of the examples laid end to
end, except that a gap never runs from one example into the next: numerators add up over
examples, ``L`` is the total length and the chance model places a unit in any gap of its
category in any example. When examples have different numbers of coders, ``m (m - 1) L``
becomes ``sum_k m_k (m_k - 1) L_k`` and ``N`` becomes ``sum_k m_k L_k`` (the number of
coder pairs, and coders, per position; with one coder set this is exactly the formula above).
Continua with fewer than two coders are left out. A coder's overlapping units of one
category are merged into one (u-alpha assumes they do not overlap); units are clipped to
their continuum.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

import numpy as np
import pandas as pd

from judgelab.analysis.intervals import merge_intervals, overlapping_pairs
from judgelab.analysis.span_coding import (
    SpanDesign,
    _example_table,
    key_codes,
    span_design,
)

ALL_LABELS = "(all)"
ALPHA_COLUMNS = [
    "label",
    "alpha",
    "observed_disagreement",
    "expected_disagreement",
    "n_units",
    "n_continua",
    "n_coders",
    "reason",
]


def unitizing_alpha_units(
    units: pd.DataFrame,
    continua: pd.DataFrame | None = None,
    coders: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """u-alpha from a plain units table.

    - ``units``: columns ``continuum``, ``coder``, ``label``, ``start``, ``end`` (half-open).
    - ``continua``: ``continuum``, ``begin``, ``length``; a continuum missing here runs from
      0 to its last unit's end (which under-counts the trailing gap: pass real lengths).
    - ``coders``: ``continuum``, ``coder`` rows saying who coded which continuum; default:
      every coder in ``units`` coded every continuum.

    Returns one row per label and a last row ``label == "(all)"`` (u-alpha over all labels):
    label, alpha, observed_disagreement, expected_disagreement, n_units, n_continua, n_coders,
    reason. ``alpha`` is NaN, with ``reason``, when the expected disagreement is 0 (no units,
    fewer than two coders on every continuum, ...).

    >>> units = pd.DataFrame({"continuum": 0, "coder": ["a", "b"], "label": "x",
    ...                       "start": [0, 0], "end": [5, 5]})
    >>> unitizing_alpha_units(units, pd.DataFrame({"continuum": [0], "begin": [0], "length": [20]})).alpha.tolist()
    [1.0, 1.0]
    """
    units = units if not units.empty else pd.DataFrame(columns=["continuum", "coder", "label", "start", "end"])
    continuum_ids = list(dict.fromkeys([*units["continuum"], *([] if continua is None else continua["continuum"])]))
    continuum_index = pd.Index(continuum_ids)
    coder_ids = list(dict.fromkeys([*units["coder"], *([] if coders is None else coders["coder"])]))
    coder_index = pd.Index(coder_ids)
    label_ids = list(dict.fromkeys(units["label"]))

    start = pd.to_numeric(units["start"]).to_numpy(dtype=np.int64)
    end = pd.to_numeric(units["end"]).to_numpy(dtype=np.int64)
    unit_continuum = continuum_index.get_indexer(units["continuum"])
    begin, length = _extents(continuum_index, continua, unit_continuum, end)

    coded = np.zeros((len(continuum_ids), len(coder_ids)), dtype=bool)
    if coders is None:
        coded[:, :] = True
    else:
        coded[continuum_index.get_indexer(coders["continuum"]), coder_index.get_indexer(coders["coder"])] = True
    unit_coder = coder_index.get_indexer(units["coder"])
    coded[unit_continuum, unit_coder] = True
    return _unitizing_alpha(
        unit_continuum,
        unit_coder,
        pd.Index(label_ids).get_indexer(units["label"]),
        start,
        end,
        begin,
        length,
        coded,
        np.array(label_ids, dtype=object),
    )


def _extents(
    continuum_index: pd.Index, continua: pd.DataFrame | None, unit_continuum: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each continuum's (begin, length): as given, else from 0 to its last unit's end."""
    begin = np.zeros(len(continuum_index), dtype=np.int64)
    length = np.full(len(continuum_index), -1, dtype=np.int64)
    if continua is not None and not continua.empty:
        rows = continuum_index.get_indexer(continua["continuum"])
        begin[rows] = pd.to_numeric(continua["begin"]).to_numpy(dtype=np.int64)
        length[rows] = pd.to_numeric(continua["length"]).to_numpy(dtype=np.int64)
    unknown = length < 0
    if unknown.any():
        last_end = np.zeros(len(continuum_index), dtype=np.int64)
        np.maximum.at(last_end, unit_continuum, end)
        length[unknown] = np.maximum(last_end[unknown] - begin[unknown], 0)
    return begin, length


def unitizing_alpha(
    spans: pd.DataFrame,
    examples: pd.DataFrame | Sequence[object] | None = None,
    annotators: Sequence[Hashable] | None = None,
    *,
    lengths: pd.DataFrame | Mapping[object, int] | None = None,
    example_key: Sequence[str] | None = None,
    annotator_col: str = "annotator",
    labels: Sequence[Hashable] | None = None,
) -> pd.DataFrame:
    """u-alpha of the tidy ``spans`` table: one continuum per example and text field.

    ``examples`` and ``annotators`` are as in :func:`analysis.span_agreement.span_design`
    (an annotator coded every example they are listed for, marked or not). ``lengths`` gives
    each text's length in code points: a DataFrame with the example key columns, optionally
    ``field``, and ``length``; or a mapping from example id to length. Without it a text
    ends at its last marked character, which leaves out the trailing unmarked text (the
    expected disagreement then comes out lower): pass lengths when you have the texts.
    Examples without spans count only when their length is known.

    Returns the table of :func:`unitizing_alpha_units`.
    """
    design = span_design(
        spans, examples, annotators, example_key=example_key, annotator_col=annotator_col, labels=labels
    )
    continua = design.continua.copy()
    continua["length"] = -1
    if lengths is not None:
        continua = _with_lengths(continua, design, _length_table(lengths, spans, design.key))
    length = continua["length"].to_numpy(dtype=np.int64, copy=True)
    positioned = design.positioned
    unit_continuum = design.continuum[positioned]
    unit_end = design.end[positioned]
    unknown = length < 0
    if unknown.any():
        last_end = np.zeros(len(continua), dtype=np.int64)
        np.maximum.at(last_end, unit_continuum, unit_end)
        length[unknown] = last_end[unknown]
    coded = design.coverage[continua["example"].to_numpy(dtype=np.int64)]
    return _unitizing_alpha(
        unit_continuum,
        design.annotator[positioned],
        design.label[positioned],
        design.start[positioned],
        unit_end,
        np.zeros(len(continua), dtype=np.int64),
        length,
        coded,
        design.labels,
    )


def _with_lengths(continua: pd.DataFrame, design: SpanDesign, length_table: pd.DataFrame) -> pd.DataFrame:
    """The continua with the lengths given (-1 where none is), plus a continuum for each text of a
    compared example that has a length but no span, so that it counts."""
    example_codes = key_codes(design.examples, length_table[design.key])
    length_table = length_table.assign(example=example_codes)[example_codes >= 0]
    if "field" in length_table.columns:
        length_table["field"] = length_table["field"].fillna("").astype(str)
        merged = continua.merge(length_table[["example", "field", "length"]], on=["example", "field"], how="left")
    else:
        merged = continua.merge(length_table[["example", "length"]], on="example", how="left")
    continua["length"] = merged["length_y"].fillna(-1).to_numpy(dtype=np.int64)
    known = set(continua["example"])
    extra = length_table[~length_table["example"].isin(known)]
    if extra.empty:
        return continua
    fields = extra["field"] if "field" in extra.columns else ""
    extra_continua = pd.DataFrame(
        {"example": extra["example"].to_numpy(), "field": fields, "length": extra["length"].to_numpy()}
    )
    return pd.concat([continua, extra_continua], ignore_index=True)


def _length_table(lengths: pd.DataFrame | Mapping[object, int], spans: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    if isinstance(lengths, pd.DataFrame):
        missing = [column for column in [*key, "length"] if column not in lengths.columns]
        if missing:
            raise ValueError(f"the lengths table lacks column(s) {missing}")
        columns = [*key, *(["field"] if "field" in lengths.columns else []), "length"]
        return lengths[columns].reset_index(drop=True)
    ids = list(lengths.keys())
    frame = spans if not spans.empty else pd.DataFrame(columns=key)
    table, _ = _example_table(frame, ids, key, "annotator")
    table["length"] = [int(lengths[i]) for i in ids]
    return table


def _unitizing_alpha(
    unit_continuum: np.ndarray,
    unit_coder: np.ndarray,
    unit_label: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    begin: np.ndarray,
    length: np.ndarray,
    coded: np.ndarray,
    label_names: np.ndarray,
) -> pd.DataFrame:
    """The computation on integer codes; ``coded[k, i]``: coder ``i`` coded continuum ``k``."""
    n_coders_per = coded.sum(axis=1)
    usable = (n_coders_per >= 2) & (length > 0)
    # clip to the continuum, drop units of unusable continua and empty units
    start = np.maximum(start, begin[unit_continuum]) if len(start) else start
    end = np.minimum(end, (begin + length)[unit_continuum]) if len(end) else end
    keep = usable[unit_continuum] & (end > start) if len(start) else np.zeros(0, dtype=bool)
    unit_continuum, unit_coder, unit_label = unit_continuum[keep], unit_coder[keep], unit_label[keep]
    start, end = start[keep], end[keep]

    m = n_coders_per[usable].astype(float)
    lengths_used = length[usable].astype(float)
    total_length = float(lengths_used.sum())
    pair_positions = float((m * (m - 1) * lengths_used).sum())
    coder_positions = float((m * lengths_used).sum())
    n_continua = int(usable.sum())
    n_coders = int(coded[usable].any(axis=0).sum())

    rows = []
    observed_sum = expected_sum = 0.0
    n_units_total = 0
    for code, name in enumerate(label_names):
        chosen = unit_label == code
        observed, expected, n_units = _category_disagreements(
            unit_continuum[chosen],
            unit_coder[chosen],
            start[chosen],
            end[chosen],
            begin,
            length,
            usable,
            coded,
            total_length,
            pair_positions,
            coder_positions,
        )
        observed_sum += observed
        expected_sum += expected
        n_units_total += n_units
        rows.append(_alpha_row(name, observed, expected, n_units, n_continua, n_coders))
    rows.append(_alpha_row(ALL_LABELS, observed_sum, expected_sum, n_units_total, n_continua, n_coders))
    return pd.DataFrame(rows, columns=ALPHA_COLUMNS)


def _alpha_row(label: object, observed: float, expected: float, n_units: int, n_continua: int, n_coders: int) -> dict:
    reason = None
    if n_continua == 0:
        reason = "no text of known, non-zero length was coded by two or more coders"
    elif n_units == 0:
        reason = "no coder marked a unit of this label"
    elif not expected > 0:
        reason = "the expected disagreement is 0 (units fill the continua), so alpha is undefined"
    alpha = 1.0 - observed / expected if reason is None else math.nan
    return {
        "label": label,
        "alpha": alpha,
        "observed_disagreement": observed if n_continua else math.nan,
        "expected_disagreement": expected if n_continua else math.nan,
        "n_units": n_units,
        "n_continua": n_continua,
        "n_coders": n_coders,
        "reason": reason,
    }


def _category_disagreements(
    continuum: np.ndarray,
    coder: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    begin: np.ndarray,
    length: np.ndarray,
    usable: np.ndarray,
    coded: np.ndarray,
    total_length: float,
    pair_positions: float,
    coder_positions: float,
) -> tuple[float, float, int]:
    """(D_o, D_e, number of units) of one category."""
    n_coders = coded.shape[1]
    if len(start):
        # one coder's overlapping units of the category become one unit
        slot = continuum * n_coders + coder
        slot, start, end, _ = merge_intervals(slot, start, end, touching=False)
        continuum, coder = slot // n_coders, slot % n_coders
    n_units = len(start)
    if n_units == 0 or total_length <= 0:
        return 0.0, 0.0, n_units
    unit_length = (end - start).astype(float)

    # observed: ordered pairs of overlapping units of different coders, then units that
    # lie inside a gap of each coder they overlap nothing of
    first, second = overlapping_pairs(continuum, start, end, continuum, start, end)
    cross = coder[first] != coder[second]
    first, second = first[cross], second[cross]
    shift = (start[first] - start[second]).astype(float) ** 2 + (end[first] - end[second]).astype(float) ** 2
    observed = float(shift.sum())
    met = np.unique(first * n_coders + coder[second])
    n_met = np.bincount(met // n_coders, minlength=n_units)
    isolated = coded.sum(axis=1)[continuum] - 1 - n_met
    observed += 2.0 * float((unit_length**2 * isolated).sum())

    # expected: every unit against every other unit and every gap of the category
    gaps = _gap_lengths(continuum, coder, start, end, begin, length, usable, coded)
    gaps = np.sort(gaps)
    suffix = np.concatenate([np.cumsum(gaps[::-1])[::-1], [0.0]])
    at = np.searchsorted(gaps, unit_length, side="left")
    n_fitting = len(gaps) - at
    fits = suffix[at] - (unit_length - 1) * n_fitting
    n_c = float(n_units)
    per_unit = (n_c - 1) * (2 * unit_length**3 - 3 * unit_length**2 + unit_length) / 3 + unit_length**2 * fits
    denominator = coder_positions * (coder_positions - 1) - float((unit_length * (unit_length - 1)).sum())
    expected = 2.0 / total_length * float(per_unit.sum()) / denominator if denominator > 0 else 0.0
    return observed / (pair_positions * total_length), expected, n_units


def _gap_lengths(
    continuum: np.ndarray,
    coder: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    begin: np.ndarray,
    length: np.ndarray,
    usable: np.ndarray,
    coded: np.ndarray,
) -> np.ndarray:
    """Lengths of the gaps between one category's units, per coder and continuum (> 0 only)."""
    n_coders = coded.shape[1]
    slot = continuum * n_coders + coder
    order = np.lexsort((start, slot))
    slot, start, end = slot[order], start[order], end[order]
    first = np.ones(len(slot), dtype=bool)
    first[1:] = slot[1:] != slot[:-1]
    last = np.ones(len(slot), dtype=bool)
    last[:-1] = slot[1:] != slot[:-1]
    cont = slot // n_coders
    between = start[1:][~first[1:]] - end[:-1][~first[1:]]
    leading = start[first] - begin[cont[first]]
    trailing = (begin + length)[cont[last]] - end[last]
    # coders of a usable continuum who marked nothing of the category: one gap of its length
    with_units = np.zeros(coded.shape, dtype=bool)
    with_units[cont, slot % n_coders] = True
    blank = coded & ~with_units & usable[:, None]
    whole = np.repeat(length, blank.sum(axis=1))
    gaps = np.concatenate([between, leading, trailing, whole]).astype(float)
    return gaps[gaps > 0]
