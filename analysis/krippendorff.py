"""Krippendorff's alpha through the coincidence matrix, vectorised, with missing values.

The input is a units x raters reliability matrix (the transpose of the ``krippendorff``
package's ``reliability_data``): a float array with NaN for missing cells, or anything
``numpy.asarray`` turns into a 2-D array (lists with ``None``, object arrays of strings,
DataFrames). Nominal data may be any hashable values; ordinal data must be numbers or come
with an ordered ``value_domain``; interval and ratio data must be numbers.

How it is computed (Krippendorff 2011, *Computing Krippendorff's alpha-reliability*):

1. ``n[u, c]``: how many raters put unit ``u`` in value ``c``; ``m_u = sum_c n[u, c]``.
   Only *pairable* units (``m_u >= 2``) count.
2. Coincidences ``o[c, k] = sum_u n[u, c] (n[u, k] - [c == k]) / (m_u - 1)``: every ordered pair
   of ratings within a unit, each unit weighing ``m_u`` in total. One matrix product.
3. ``n_c = sum_k o[c, k]`` (pairable values per category), ``n = sum_c n_c``.
4. ``alpha = 1 - D_o / D_e = 1 - (n - 1) sum_ck o[c, k] d[c, k] / sum_ck n_c n_k d[c, k]``
   with the squared distance ``d`` of the level of measurement:

   - nominal: ``d = [c != k]``;
   - ordinal: ``d = (sum_{g=c..k} n_g - (n_c + n_k) / 2) ** 2``, which is the interval distance
     between the mid-ranks ``M_c = sum_{g<c} n_g + n_c / 2`` of the pairable values;
   - interval: ``d = (v_c - v_k) ** 2``;
   - ratio: ``d = ((v_c - v_k) / (v_c + v_k)) ** 2``.

Worked example (Krippendorff 2011, section B; 4 coders x 12 units, ``None`` = missing):

>>> data = [[1, 1, None, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2],
...         [1, 2, 3, 4], [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [None, 5, 5, 5],
...         [None, None, 1, 1], [None, None, 3, None]]
>>> [round(krippendorff_alpha(data, level).value, 3) for level in LEVELS]
[0.743, 0.815, 0.849, 0.797]
>>> krippendorff_alpha(data).n_units  # the last unit has one rating: not pairable
11
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from judgelab.analysis.agreement import AgreementResult, ArrayLike

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "ratio")
NUMERIC_INFERRED_TYPES = {"integer", "floating", "mixed-integer-float", "boolean"}


@dataclass(frozen=True)
class ValueCodes:
    """A reliability matrix as integer codes into its value domain.

    ``codes[u, r]`` is the index in ``values`` of rater ``r``'s value for unit ``u``, or ``-1``
    when missing. ``values`` is the value domain: the given ``value_domain`` in its order, else
    the distinct values present, sorted (numbers as float64). ``numeric`` says whether
    ``values`` are numbers.
    """

    codes: np.ndarray
    values: np.ndarray
    numeric: bool

    def counts(self) -> np.ndarray:
        """Units x values table ``n[u, c]`` (float64)."""
        n_units, n_values = self.codes.shape[0], len(self.values)
        cells = n_units * n_values  # missing cells go to one extra bin, dropped below
        flat = np.where(self.codes >= 0, self.codes + (np.arange(n_units) * n_values)[:, None], cells)
        counts = np.bincount(flat.reshape(-1), minlength=cells + 1)[:cells]
        return counts.reshape(n_units, n_values).astype(np.float64)


def value_codes(matrix: ArrayLike, value_domain: Sequence[object] | np.ndarray | None = None) -> ValueCodes:
    """Encode a units x raters matrix against its value domain.

    Numbers (any numeric dtype, or an object array holding only numbers) are compared as
    float64, so ``3`` and ``3.0`` are one value; anything else is compared as it is, so ``"3"``
    and ``3`` are two. Missing cells are NaN, ``None`` or ``pd.NA``. A ``value_domain`` fixes
    the values and their order (and may hold values nobody used); a value outside it raises
    ``ValueError``.

    >>> encoded = value_codes([[2, 1], [None, 2.0], [3, None]])
    >>> encoded.codes.tolist(), encoded.values.tolist(), encoded.numeric
    ([[1, 0], [-1, 1], [2, -1]], [1.0, 2.0, 3.0], True)
    >>> value_codes([["low", "high"]], value_domain=["low", "mid", "high"]).codes.tolist()
    [[0, 2]]
    """
    array = matrix.to_numpy() if isinstance(matrix, pd.DataFrame) else np.asarray(matrix)
    if array.ndim != 2:
        raise ValueError(f"a reliability matrix must be 2-D (units x raters), got {array.ndim}-D")
    if array.dtype.kind in "biuf":
        array = array.astype(np.float64, copy=False)
        present = ~np.isnan(array)
        numeric = True
    else:
        array = array.astype(object, copy=False)
        present = ~pd.isna(array)
        numeric = pd.api.types.infer_dtype(array[present], skipna=False) in NUMERIC_INFERRED_TYPES
        if numeric and present.any():
            array = np.where(present, array, np.nan).astype(np.float64)
    present_values = array[present]
    codes = np.full(array.shape, -1, dtype=np.int64)
    if value_domain is not None:
        domain = np.asarray(value_domain, dtype=object)
        if numeric:
            if pd.api.types.infer_dtype(domain, skipna=False) not in NUMERIC_INFERRED_TYPES:
                raise ValueError("numeric ratings need a numeric value_domain")
            domain = domain.astype(np.float64)
        if domain.ndim != 1 or len(pd.unique(domain)) != len(domain):
            raise ValueError("value_domain must be a 1-D sequence of distinct values")
        numeric = numeric and domain.dtype.kind == "f"
        indexer = pd.Index(domain).get_indexer(present_values)
        if (indexer < 0).any():
            outside = pd.unique(present_values[indexer < 0])[:5].tolist()
            raise ValueError(f"values outside value_domain: {outside}")
        codes[present] = indexer
        return ValueCodes(codes, domain, numeric)
    if numeric:
        values, inverse = _sorted_codes(present_values)
    else:
        try:
            inverse, values = pd.factorize(present_values, sort=True)
        except TypeError:  # values that do not sort together (e.g. str and int): nominal only
            inverse, values = pd.factorize(present_values, sort=False)
        values = np.asarray(values, dtype=object)
    codes[present] = inverse.reshape(-1)
    return ValueCodes(codes, np.asarray(values), numeric)


def _sorted_codes(numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(numbers, return_inverse=True)``, in linear time for a small integer range."""
    if numbers.size:
        low, high = numbers.min(), numbers.max()
        if high - low <= 4 * numbers.size + 1024 and np.array_equal(numbers, np.rint(numbers)):
            offsets = (numbers - low).astype(np.int64)
            used = np.bincount(offsets) > 0
            return low + np.flatnonzero(used).astype(np.float64), (np.cumsum(used) - 1)[offsets]
    return np.unique(numbers, return_inverse=True)


def coincidence_matrix(counts: np.ndarray) -> np.ndarray:
    """Values x values coincidence matrix ``o`` from a units x values table ``n[u, c]``.

    ``o[c, k] = sum_u n[u, c] (n[u, k] - [c == k]) / (m_u - 1)`` over units with ``m_u >= 2``
    ratings. It is symmetric and sums to the number of pairable ratings.

    >>> coincidence_matrix(np.array([[2.0, 1.0], [0.0, 2.0], [1.0, 0.0]])).tolist()
    [[1.0, 1.0], [1.0, 2.0]]
    """
    counts = np.asarray(counts, dtype=np.float64)
    ratings = counts.sum(axis=1)
    weights = np.divide(1.0, ratings - 1.0, out=np.zeros_like(ratings), where=ratings >= 2)
    scaled = counts * weights[:, None]  # units with fewer than two ratings weigh 0
    return counts.T @ scaled - np.diag(scaled.sum(axis=0))


def distance_matrix(values: np.ndarray, level: Level, pairable_per_value: np.ndarray) -> np.ndarray:
    """Squared distances ``d[c, k]`` between the values of a domain at a level of measurement.

    ``pairable_per_value`` (``n_c``, the coincidence matrix's margins) is used by the ordinal
    level only; ``values`` by interval and ratio only; nominal needs neither.

    >>> n_c = np.array([2.0, 4.0, 2.0])
    >>> distance_matrix(np.array([1.0, 2.0, 4.0]), "ordinal", n_c)[0].tolist()  # mid-ranks 1, 4, 7
    [0.0, 9.0, 36.0]
    >>> distance_matrix(np.array([1.0, 2.0, 4.0]), "interval", n_c)[0].tolist()
    [0.0, 1.0, 9.0]
    """
    if level == "nominal":
        return 1.0 - np.eye(len(pairable_per_value))
    if level == "ordinal":
        mid_ranks = np.cumsum(pairable_per_value) - pairable_per_value / 2.0
        return np.subtract.outer(mid_ranks, mid_ranks) ** 2
    numbers = np.asarray(values, dtype=np.float64)
    differences = np.subtract.outer(numbers, numbers)
    if level == "interval":
        return differences**2
    if level == "ratio":
        sums = np.add.outer(numbers, numbers)
        ratios = np.divide(differences, sums, out=np.zeros_like(differences), where=sums != 0)
        return ratios**2
    raise ValueError(f"unknown level of measurement {level!r}; use one of {', '.join(LEVELS)}")


def krippendorff_alpha(
    matrix: ArrayLike,
    level: Level = "nominal",
    *,
    value_domain: Sequence[object] | np.ndarray | None = None,
) -> AgreementResult:
    """Krippendorff's alpha of a units x raters matrix at a level of measurement.

    ``level`` is ``"nominal"``, ``"ordinal"``, ``"interval"`` or ``"ratio"``; see the module
    docstring for the formula. Missing cells are allowed anywhere: a unit counts when at least
    two raters rated it (``n_units``). ``value_domain`` orders non-numeric ordinal values (e.g.
    ``["low", "mid", "high"]``); it never changes the value, since unused values have no
    pairable ratings. Equals the ``krippendorff`` package's ``alpha(matrix.T, ...)``.

    Undefined (NaN, with a reason) with fewer than two raters, no pairable unit, or when all
    pairable ratings share one value (no expected disagreement). Raises ``ValueError`` for an
    unknown level, or interval/ratio/ordinal on values that are not numbers (ordinal: unless a
    ``value_domain`` orders them).

    >>> wikipedia = [[None, 1, None], [None, None, None], [None, 2, 2], [None, 1, 1],
    ...              [None, 3, 3], [3, 3, 4], [4, 4, 4], [1, 3, None], [2, None, 2],
    ...              [1, None, 1], [1, None, 1], [3, None, 3], [3, None, 3],
    ...              [None, None, None], [3, None, 4]]
    >>> round(krippendorff_alpha(wikipedia).value, 6)
    0.691358
    >>> round(krippendorff_alpha(wikipedia, "interval").value, 6)
    0.810845
    >>> krippendorff_alpha([[2, 2], [2, 2]]).reason
    'every pairable rating has the same value, so alpha is undefined (no expected disagreement)'
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level of measurement {level!r}; use one of {', '.join(LEVELS)}")
    encoded = value_codes(matrix, value_domain)
    if level in ("interval", "ratio") and not encoded.numeric and encoded.values.size:
        raise ValueError(f"{level} alpha needs numeric values")
    if level == "ordinal" and not encoded.numeric and value_domain is None and encoded.values.size:
        raise ValueError("ordinal alpha on non-numeric values needs an ordered value_domain")
    n_raters = encoded.codes.shape[1]
    if n_raters < 2:
        return _undefined(0, f"agreement needs at least two raters, the matrix has {n_raters}")
    counts = encoded.counts()
    n_units = int((counts.sum(axis=1) >= 2).sum())
    if n_units == 0:
        return _undefined(0, "no unit was rated by two or more raters")
    return alpha_from_counts(counts, encoded.values, level, n_units=n_units)


def alpha_from_counts(
    counts: np.ndarray, values: np.ndarray, level: Level = "nominal", *, n_units: int | None = None
) -> AgreementResult:
    """Krippendorff's alpha from a units x values table ``n[u, c]`` (the package's ``value_counts``).

    ``values`` is the value domain of the columns (ordered for ordinal, numbers for
    interval/ratio). Units with fewer than two ratings are ignored.

    >>> round(alpha_from_counts(np.array([[2, 0], [1, 1], [0, 2]]), np.array([0, 1])).value, 4)
    0.4444
    """
    coincidences = coincidence_matrix(counts)
    if n_units is None:
        n_units = int((np.asarray(counts).sum(axis=1) >= 2).sum())
    if n_units == 0:
        return _undefined(0, "no unit was rated by two or more raters")
    pairable_per_value = coincidences.sum(axis=0)
    n_pairable = pairable_per_value.sum()
    distances = distance_matrix(values, level, pairable_per_value)
    expected = float(pairable_per_value @ distances @ pairable_per_value)
    if expected <= 0.0:
        return _undefined(
            n_units, "every pairable rating has the same value, so alpha is undefined (no expected disagreement)"
        )
    observed = float((coincidences * distances).sum())
    return AgreementResult(value=float(1.0 - (n_pairable - 1.0) * observed / expected), n_units=n_units)


def _undefined(n_units: int, reason: str) -> AgreementResult:
    return AgreementResult(value=float("nan"), n_units=n_units, reason=reason)
