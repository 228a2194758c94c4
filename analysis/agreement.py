"""Agreement coefficients on a units x raters reliability matrix.

A *reliability matrix* has one row per unit (a task, or one line of a task) and one column
per rater. A cell holds the value the rater gave, or a missing marker (``None``, ``NaN``,
``pd.NA``) when that rater did not rate that unit. Values are treated as nominal categories
and compared for equality: ``3`` and ``3.0`` are the same category, ``"3"`` and ``3`` are not
(``analysis.tables`` normalises values before building a matrix).

Every coefficient returns an :class:`AgreementResult` and never raises on degenerate data:
when a coefficient is undefined (no unit rated twice, a single category used throughout,
fewer than two raters) its value is NaN and ``reason`` says why. Malformed input (a matrix
that is not two-dimensional, rater vectors of different lengths) raises ``ValueError``.

All counting goes through one units x categories table ``n[u, c]`` (how many raters put
unit ``u`` in category ``c``), built once with numpy and reused by every coefficient.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

ArrayLike = np.ndarray | pd.DataFrame | Sequence[Sequence[object]]


@dataclass(frozen=True)
class AgreementResult:
    """One agreement coefficient and what it rests on.

    ``value`` is NaN when the coefficient is undefined for the data; ``reason`` then says
    why in one sentence a reader can act on. ``n_units`` counts the units the value
    rests on (for pairwise coefficients: units with at least two ratings).
    """

    value: float
    n_units: int
    reason: str | None = None

    @property
    def is_defined(self) -> bool:
        """True when ``value`` is a number, not NaN."""
        return not math.isnan(self.value)


def _undefined(n_units: int, reason: str) -> AgreementResult:
    return AgreementResult(value=float("nan"), n_units=n_units, reason=reason)


def encode_categories(matrix: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes for a reliability matrix: ``(codes, categories)``.

    ``codes`` has the matrix's shape, ``-1`` where the cell is missing, otherwise the index
    of the cell's value in ``categories`` (in order of first appearance, row by row).

    >>> codes, categories = encode_categories([["a", "b"], [None, "a"]])
    >>> codes.tolist(), categories.tolist()
    ([[0, 1], [-1, 0]], ['a', 'b'])
    """
    values = np.asarray(matrix, dtype=object)
    if values.ndim != 2:
        raise ValueError(f"a reliability matrix must be 2-D (units x raters), got {values.ndim}-D")
    present = ~pd.isna(values)
    codes = np.full(values.shape, -1, dtype=np.int64)
    if not present.any():
        return codes, np.array([], dtype=object)
    present_codes, categories = pd.factorize(values[present])
    codes[present] = present_codes
    return codes, np.asarray(categories, dtype=object)


def category_counts(matrix: ArrayLike) -> np.ndarray:
    """Units x categories table ``n[u, c]``: how many raters put unit ``u`` in category ``c``.

    >>> category_counts([[1, 1, 2], [2, None, 2], [None, None, 3]]).tolist()
    [[2, 1, 0], [0, 2, 0], [0, 0, 1]]
    """
    codes, categories = encode_categories(matrix)
    counts = np.zeros((codes.shape[0], len(categories)), dtype=np.int64)
    units, raters = np.nonzero(codes >= 0)
    np.add.at(counts, (units, codes[units, raters]), 1)
    return counts


def exact_agreement(matrix: ArrayLike) -> AgreementResult:
    """Share of rater pairs that gave the same value to the same unit.

    Within each unit ``u`` rated by ``m_u >= 2`` raters there are ``m_u (m_u - 1) / 2``
    pairs of ratings, of which ``sum_c n_uc (n_uc - 1) / 2`` agree. The result pools all
    pairs of all such units::

        exact_agreement = sum_u sum_c n_uc (n_uc - 1) / sum_u m_u (m_u - 1)

    so a unit rated by more raters weighs more (it has more pairs). Units with fewer than
    two ratings are ignored; ``n_units`` counts the units used. With two raters this is the
    share of jointly rated units on which they agree (Cohen's ``p_o``).

    >>> matrix = [[3, 3], [2, 3], [1, 1], [3, None]]  # 4 units x 2 raters
    >>> exact_agreement(matrix)  # 2 of the 3 jointly rated units agree
    AgreementResult(value=0.6666666666666666, n_units=3, reason=None)
    >>> exact_agreement([[1, 1, 2]])  # 3 pairs, only (rater 0, rater 1) agree
    AgreementResult(value=0.3333333333333333, n_units=1, reason=None)
    """
    counts = category_counts(matrix)
    ratings_per_unit = counts.sum(axis=1)
    pairable = ratings_per_unit >= 2
    n_units = int(pairable.sum())
    if n_units == 0:
        return _undefined(0, _no_pairable_units_reason(np.asarray(matrix, dtype=object)))
    pairs = ratings_per_unit[pairable] * (ratings_per_unit[pairable] - 1)
    agreeing_pairs = (counts[pairable] * (counts[pairable] - 1)).sum(axis=1)
    return AgreementResult(value=float(agreeing_pairs.sum() / pairs.sum()), n_units=n_units)


def adjacent_agreement(matrix: ArrayLike, within: float = 1.0) -> AgreementResult:
    """Share of rater pairs whose values for the same unit differ by at most ``within``.

    The pairs are those of :func:`exact_agreement` (every pair of ratings of a unit, units with
    two or more ratings, pooled), and a pair agrees when ``|x - y| <= within``: with the default
    ``within=1`` a 4 and a 5 on a 1-5 scale agree, a 3 and a 5 do not. ``within=0`` is exact
    agreement. Values must be numbers (``ValueError`` otherwise). In counts, with ``v_c`` the
    value of category ``c``::

        adjacent = sum_u sum_ck n_uc (n_uk - [c == k]) [|v_c - v_k| <= within] / sum_u m_u (m_u - 1)

    >>> matrix = [[3, 3], [2, 3], [1, 3], [3, None]]  # 2 of the 3 jointly rated units
    >>> adjacent_agreement(matrix)
    AgreementResult(value=0.6666666666666666, n_units=3, reason=None)
    >>> adjacent_agreement([[1, 2, 3]]).value  # pairs (1, 2) and (2, 3) agree, (1, 3) does not
    0.6666666666666666
    """
    values = np.asarray(matrix, dtype=object)
    codes, categories = encode_categories(values)
    numeric_kinds = {"integer", "floating", "mixed-integer-float", "boolean", "empty"}
    if pd.api.types.infer_dtype(categories, skipna=False) not in numeric_kinds:
        raise ValueError("adjacent agreement needs numeric ratings")
    counts = np.zeros((codes.shape[0], len(categories)), dtype=np.float64)
    units, raters = np.nonzero(codes >= 0)
    np.add.at(counts, (units, codes[units, raters]), 1.0)
    ratings_per_unit = counts.sum(axis=1)
    pairable = ratings_per_unit >= 2
    n_units = int(pairable.sum())
    if n_units == 0:
        return _undefined(0, _no_pairable_units_reason(values))
    numbers = categories.astype(np.float64)
    close = (np.abs(np.subtract.outer(numbers, numbers)) <= within + 1e-9).astype(np.float64)
    paired, m = counts[pairable], ratings_per_unit[pairable]
    agreeing_pairs = float(((paired @ close) * paired).sum() - m.sum())
    return AgreementResult(value=agreeing_pairs / float((m * (m - 1)).sum()), n_units=n_units)


def cohen_kappa(a: Sequence[object] | np.ndarray, b: Sequence[object] | np.ndarray) -> AgreementResult:
    """Cohen's (1960) unweighted kappa between two raters.

    Uses the units both raters rated (``n_units``). With ``p_o`` the share of those units
    on which they agree and ``p_e = sum_c p_a(c) p_b(c)`` the agreement expected if each
    rater drew categories independently from their own marginal distribution::

        kappa = (p_o - p_e) / (1 - p_e)

    1 is perfect agreement, 0 is what chance alone gives, below 0 is worse than chance.
    Undefined (NaN) when no unit was rated by both, or when ``p_e == 1`` (both raters used
    one and the same category on every unit).

    >>> a = ["yes", "yes", "no", "no", "yes", None]
    >>> b = ["yes", "no", "no", "no", "yes", "no"]
    >>> result = cohen_kappa(a, b)  # p_o = 4/5, p_e = (3*2 + 2*3)/25 = 12/25
    >>> round(result.value, 4), result.n_units  # (0.8 - 0.48) / (1 - 0.48)
    (0.6154, 5)
    """
    first = np.asarray(a, dtype=object)
    second = np.asarray(b, dtype=object)
    if first.ndim != 1 or second.ndim != 1 or first.shape != second.shape:
        raise ValueError(
            f"cohen_kappa needs two 1-D rating vectors of equal length, got shapes {first.shape} and {second.shape}"
        )
    codes, categories = encode_categories(np.column_stack([first, second]))
    both_rated = (codes >= 0).all(axis=1)
    n_units = int(both_rated.sum())
    if n_units == 0:
        return _undefined(0, "no unit was rated by both raters")
    codes_a, codes_b = codes[both_rated, 0], codes[both_rated, 1]
    n_categories = len(categories)
    confusion = np.zeros((n_categories, n_categories), dtype=np.int64)
    np.add.at(confusion, (codes_a, codes_b), 1)
    observed = np.trace(confusion) / n_units
    expected = float(confusion.sum(axis=1) @ confusion.sum(axis=0)) / n_units**2
    if math.isclose(expected, 1.0):
        return _undefined(
            n_units,
            "both raters gave the same single value to every unit, so kappa is undefined (chance agreement is 1)",
        )
    return AgreementResult(value=float((observed - expected) / (1.0 - expected)), n_units=n_units)


def fleiss_kappa(matrix: ArrayLike) -> AgreementResult:
    """Fleiss' (1971) kappa for any number of raters, in its form for missing ratings.

    Fleiss defined kappa for units that all have the same number of ratings. This is the
    generalisation in Gwet's *Handbook of Inter-Rater Reliability* (``fleiss.kappa.raw`` in
    his irrCAC package), which equals Fleiss' kappa whenever every unit has the same number
    of ratings and uses every unit otherwise (nothing is thrown away):

    - observed agreement ``p_a``: mean over units with ``m_u >= 2`` ratings of
      ``sum_c n_uc (n_uc - 1) / (m_u (m_u - 1))`` (each unit weighs the same);
    - category shares ``pi_c``: mean over units with ``m_u >= 1`` of ``n_uc / m_u``;
    - chance agreement ``p_e = sum_c pi_c ** 2``; ``kappa = (p_a - p_e) / (1 - p_e)``.

    With two raters and no missing values this is Scott's pi. ``n_units`` counts the units
    with at least two ratings. Undefined (NaN) with fewer than two raters, no unit rated
    twice, or a single category used throughout (``p_e == 1``).

    >>> matrix = [[1, 1, 1], [1, 2, 2], [2, 2, 2], [1, 1, None]]
    >>> result = fleiss_kappa(matrix)
    >>> round(result.value, 4), result.n_units
    (0.6571, 4)

    Here ``p_a = (1 + 1/3 + 1 + 1) / 4 = 5/6``; the per-unit shares of category 1 are
    ``1, 1/3, 0, 1``, so ``pi = (7/12, 5/12)`` and ``p_e = 74/144``; kappa is
    ``(5/6 - 37/72) / (1 - 37/72) = 23/35``.
    """
    values = np.asarray(matrix, dtype=object)
    counts = category_counts(values)
    if values.shape[1] < 2:
        return _undefined(0, f"Fleiss' kappa needs at least two raters, the matrix has {values.shape[1]}")
    ratings_per_unit = counts.sum(axis=1)
    pairable = ratings_per_unit >= 2
    n_units = int(pairable.sum())
    if n_units == 0:
        return _undefined(0, _no_pairable_units_reason(values))
    m = ratings_per_unit[pairable]
    observed = float(((counts[pairable] * (counts[pairable] - 1)).sum(axis=1) / (m * (m - 1))).mean())
    rated = ratings_per_unit >= 1
    shares = (counts[rated] / ratings_per_unit[rated, None]).mean(axis=0)
    expected = float((shares**2).sum())
    if math.isclose(expected, 1.0):
        return _undefined(
            n_units,
            "every rating has the same value, so kappa is undefined (chance agreement is 1)",
        )
    return AgreementResult(value=(observed - expected) / (1.0 - expected), n_units=n_units)


def _no_pairable_units_reason(values: np.ndarray) -> str:
    if values.ndim == 2 and values.shape[1] < 2:
        return f"agreement needs at least two raters, the matrix has {values.shape[1]}"
    return "no unit was rated by two or more raters"
