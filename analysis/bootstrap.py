"""Seeded percentile bootstrap confidence intervals for any agreement coefficient.

Units (rows of the units x raters matrix) are the sampling unit: a replicate draws as many
units as the matrix has, with replacement, keeps each drawn unit's whole row (its raters and
its missing cells), and recomputes the coefficient. Raters are held fixed. This is the unit
bootstrap of Hayes & Krippendorff (2007) in its plain percentile form, not their resampling
of coincidences, and it works the same for every coefficient.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from judgelab.analysis.agreement import AgreementResult, ArrayLike
from judgelab.analysis.krippendorff import Level, distance_matrix, krippendorff_alpha, value_codes

Coefficient = Callable[[np.ndarray], AgreementResult | float]
MAX_BATCH_CELLS = 4_000_000  # floats per block of replicates in bootstrap_alpha_ci


def bootstrap_ci(
    matrix: ArrayLike,
    coefficient: Coefficient,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int | None = 0,
) -> tuple[float, float]:
    """Percentile bootstrap ``(low, high)`` interval of ``coefficient(matrix)``, at level ``1 - alpha``.

    ``coefficient`` takes a units x raters array (the rows of ``matrix``, in its dtype) and
    returns an :class:`~analysis.agreement.AgreementResult` or a float; bind extra arguments
    with a lambda or ``functools.partial``. Units with no rating at all are dropped first (no
    coefficient uses them). ``low`` and ``high`` are the ``alpha / 2`` and ``1 - alpha / 2``
    quantiles (numpy's default linear interpolation) of the replicates whose value is defined:
    replicates where the coefficient is NaN (e.g. a draw with a single category) are left out,
    so on very small or lopsided data the interval describes the defined draws only. Returns
    ``(nan, nan)`` when no replicate is defined. The same ``seed`` gives the same interval.

    >>> from analysis.krippendorff import krippendorff_alpha
    >>> data = [[1, 1], [2, 2], [3, 3], [1, 2], [2, 2], [3, 2], [1, 1], [3, 3]]
    >>> low, high = bootstrap_ci(data, krippendorff_alpha, n_boot=200, seed=1)
    >>> bool(low < krippendorff_alpha(data).value < high)
    True
    >>> bootstrap_ci([[1, 1], [1, 1]], krippendorff_alpha, n_boot=50)  # one category: never defined
    (nan, nan)
    """
    rows = _rated_rows(matrix, n_boot, alpha)
    if len(rows) == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)  # a replicate's draw at a time: the same numbers as all at once
    draws = (rng.integers(0, len(rows), size=len(rows)) for _ in range(n_boot))
    values = np.array([_value(coefficient(rows[draw])) for draw in draws], dtype=np.float64)
    return _percentile_interval(values, alpha)


def bootstrap_alpha_ci(
    matrix: ArrayLike,
    level: Level = "nominal",
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int | None = 0,
    *,
    value_domain: np.ndarray | list[object] | None = None,
) -> tuple[float, float]:
    """``bootstrap_ci(matrix, krippendorff_alpha at level, ...)``, all replicates at once.

    Same draws, same replicates (to rounding), same interval as the generic function, but
    without a Python loop: a unit's share of the coincidence matrix is computed once, and a
    replicate's coincidence matrix is the draw counts times those shares (one matrix product
    per block of replicates). Falls back to the generic loop when the value domain is so large
    that the per-unit shares would not fit in memory comfortably.

    >>> data = [[1, 1], [2, 2], [3, 3], [1, 2], [2, 2], [3, 2], [1, 1], [3, 3]]
    >>> fast = bootstrap_alpha_ci(data, "ordinal", n_boot=200, seed=1)
    >>> slow = bootstrap_ci(data, lambda m: krippendorff_alpha(m, "ordinal"), n_boot=200, seed=1)
    >>> bool(np.allclose(fast, slow))
    True
    """
    rows = _rated_rows(matrix, n_boot, alpha)
    if len(rows) == 0:
        return float("nan"), float("nan")
    krippendorff_alpha(rows, level, value_domain=value_domain)  # raises on a bad level or values
    encoded = value_codes(rows, value_domain)
    n_units, n_values = len(rows), len(encoded.values)
    if n_units * n_values * n_values > MAX_BATCH_CELLS:
        return bootstrap_ci(
            rows, lambda m: krippendorff_alpha(m, level, value_domain=value_domain), n_boot, alpha, seed
        )
    # a block's draws at a time (the same numbers as all at once): all of them at once were n_boot x
    # units integers, 240 MB for 1,000 replicates of 30,000 units
    rng = np.random.default_rng(seed)
    shares = _coincidence_shares(encoded.counts())
    block = max(1, MAX_BATCH_CELLS // max(n_units, n_values * n_values))
    values = np.empty(n_boot)
    fixed = None if level == "ordinal" else distance_matrix(encoded.values, level, np.zeros(n_values))
    for start in range(0, n_boot, block):
        n_draws = min(block, n_boot - start)
        coincidences = (draw_counts(rng, n_units, n_draws) @ shares).reshape(n_draws, n_values, n_values)
        values[start : start + block] = _replicate_alphas(coincidences, fixed)
    return _percentile_interval(values, alpha)


def draw_counts(rng: np.random.Generator, n_units: int, size: int, *, units_first: bool = False) -> np.ndarray:
    """How often each of ``n_units`` units is drawn in each of ``size`` bootstrap replicates (each
    ``n_units`` draws with replacement), as floats: replicates x units, or units x replicates with
    ``units_first`` (contiguous either way, for the product that follows). The draws are
    ``rng.integers(0, n_units, size=(size, n_units))``; they are shifted in place and let go once
    counted, so two arrays of the block's size are held at a time, not four (about 30-60 MiB
    each at 100,000 units).

    >>> draw_counts(np.random.default_rng(0), 3, 2).sum(axis=1).tolist()
    [3.0, 3.0]
    """
    draws = rng.integers(0, n_units, size=(size, n_units))
    if units_first:  # cell unit * size + replicate
        draws *= size
        draws += np.arange(size)[:, None]
    else:  # cell replicate * n_units + unit
        draws += np.arange(size)[:, None] * n_units
    counts = np.bincount(draws.reshape(-1), minlength=n_units * size)
    draws = None
    return counts.astype(np.float64).reshape((n_units, size) if units_first else (size, n_units))


def _coincidence_shares(counts: np.ndarray) -> np.ndarray:
    """Units x (V x V): each unit's share of the coincidence matrix, from its counts per value
    (0 for a unit with fewer than two ratings)."""
    n_units, n_values = counts.shape
    ratings = counts.sum(axis=1)
    pairable = ratings >= 2
    shares = np.zeros((n_units, n_values, n_values))
    paired = counts[pairable]
    shares[pairable] = (paired[:, :, None] * paired[:, None, :] - paired[:, :, None] * np.eye(n_values)) / (
        ratings[pairable] - 1.0
    )[:, None, None]
    return shares.reshape(n_units, n_values * n_values)


def _replicate_alphas(coincidences: np.ndarray, fixed: np.ndarray | None) -> np.ndarray:
    """Alpha of each replicate's coincidence matrix (replicates x V x V): with the level's fixed
    distances, or ordinal ones from the replicate's own mid-ranks (``fixed`` None); NaN where the
    expected disagreement is 0."""
    per_value = coincidences.sum(axis=2)
    if fixed is None:
        mid_ranks = np.cumsum(per_value, axis=1) - per_value / 2.0
        distances = (mid_ranks[:, :, None] - mid_ranks[:, None, :]) ** 2
    else:
        distances = np.broadcast_to(fixed, coincidences.shape)
    observed = (coincidences * distances).sum(axis=(1, 2))
    expected = np.einsum("bi,bij,bj->b", per_value, distances, per_value)
    with np.errstate(divide="ignore", invalid="ignore"):
        replicate = 1.0 - (per_value.sum(axis=1) - 1.0) * observed / expected
    return np.where(expected > 0.0, replicate, np.nan)


def _rated_rows(matrix: ArrayLike, n_boot: int, alpha: float) -> np.ndarray:
    """The matrix's rows with at least one rating, after checking the arguments."""
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    rows = matrix.to_numpy() if isinstance(matrix, pd.DataFrame) else np.asarray(matrix)
    if rows.ndim != 2:
        raise ValueError(f"a reliability matrix must be 2-D (units x raters), got {rows.ndim}-D")
    missing = np.isnan(rows) if rows.dtype.kind == "f" else pd.isna(rows)
    return rows[~missing.all(axis=1)]


def _percentile_interval(values: np.ndarray, alpha: float) -> tuple[float, float]:
    defined = values[np.isfinite(values)]
    if defined.size == 0:
        return float("nan"), float("nan")
    low, high = np.quantile(defined, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)


def _value(result: AgreementResult | float) -> float:
    return result.value if isinstance(result, AgreementResult) else float(result)
