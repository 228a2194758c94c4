"""Krippendorff's alpha for many pairs of raters at once, with one shared unit bootstrap.

For judge calibration the same units are compared pair by pair (the judge with each annotator,
with the human majority, each pair of annotators): each pair's alpha is the alpha of its two
columns (:func:`analysis.krippendorff.krippendorff_alpha` on ``matrix[:, [a, b]]``), and every
bootstrap replicate draws the units once for all pairs (Hayes and Krippendorff's unit bootstrap,
as :func:`analysis.bootstrap.bootstrap_alpha_ci`), so that the mean over a set of pairs, or the
difference between two sets (judge-vs-human against human-vs-human), gets an interval from the
same draws.

With two raters on a unit, its coincidences are the ordered pairs ``(a, b)`` and ``(b, a)`` with
weight one. A replicate's coincidence matrix is the draw counts of the units times those pairs: a
dense (replicates x units) by sparse (units x values^2) product, so the cost is replicates x units
per pair, whatever the number of values.

Units with the same answers from every rater (the same row of codes) are interchangeable: when
there are few such *types* (yes/no items), a replicate draws how many units of each type it
holds, ``Multinomial(n_units, type shares)``, which is the distribution of the unit bootstrap's
counts summed per type, at a cost that follows the number of types instead of the units.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from judgelab.analysis.bootstrap import draw_counts
from judgelab.analysis.krippendorff import Level, distance_matrix

MAX_BLOCK_CELLS = 8_000_000  # draw counts held at once (replicates x units)


@dataclass(frozen=True)
class PairAlphas:
    """``values[p]``: alpha of pair ``p``; ``n_units[p]``: units both raters rated;
    ``replicates[b, p]``: alpha of pair ``p`` in bootstrap replicate ``b`` (NaN where undefined)."""

    pairs: list[tuple[int, int]]
    values: np.ndarray
    n_units: np.ndarray
    replicates: np.ndarray


def _alphas(coincidences: np.ndarray, values: np.ndarray, level: Level) -> np.ndarray:
    """Alpha of each coincidence matrix (batch x V x V)."""
    per_value = coincidences.sum(axis=2)
    if level == "ordinal":
        mid_ranks = np.cumsum(per_value, axis=1) - per_value / 2.0
        distances = (mid_ranks[:, :, None] - mid_ranks[:, None, :]) ** 2
    else:
        distances = np.broadcast_to(distance_matrix(values, level, np.zeros(len(values))), coincidences.shape)
    observed = (coincidences * distances).sum(axis=(1, 2))
    expected = np.einsum("bi,bij,bj->b", per_value, distances, per_value)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (per_value.sum(axis=1) - 1.0) * observed / expected
    return np.where(expected > 0.0, alpha, np.nan)


def pair_alphas(
    codes: np.ndarray,
    values: np.ndarray,
    pairs: Sequence[tuple[int, int]],
    level: Level = "nominal",
    *,
    n_boot: int = 1000,
    seed: int | None = 0,
    by_type: bool | None = None,
) -> PairAlphas:
    """Alpha of each pair of columns of ``codes`` (units x raters: indices into ``values``, -1
    missing), and ``n_boot`` replicates drawing the units (rows) with replacement, shared by all
    pairs. ``n_boot=0`` gives no replicates. ``by_type`` draws per type of unit (see the module
    docstring); by default when the types are at most a quarter of the units. Otherwise the
    draws are those of :func:`analysis.bootstrap.bootstrap_alpha_ci` with the same seed.

    >>> codes = np.array([[0, 0, 1], [1, 1, 1], [2, 2, 0], [0, 1, 0], [2, 2, 2]])
    >>> result = pair_alphas(codes, np.array([1.0, 2.0, 3.0]), [(0, 1), (0, 2)], "ordinal", n_boot=0)
    >>> from judgelab.analysis.krippendorff import krippendorff_alpha
    >>> bool(np.isclose(result.values[0], krippendorff_alpha(codes[:, [0, 1]] + 1.0, "ordinal").value))
    True
    """
    codes = np.asarray(codes, dtype=np.int64)
    n_units, n_values = codes.shape[0], len(values)
    codes, weights = _unit_types(codes, by_type)
    matrices, n_pair_units = _pair_coincidences(codes, weights, pairs, n_values)
    ones = np.ones(codes.shape[0]) if weights is None else weights
    point = np.stack([(m.T @ ones).reshape(n_values, n_values) for m in matrices]) if pairs else None
    point_values = _alphas(point, values, level) if pairs else np.array([])
    replicates = np.full((n_boot, len(pairs)), np.nan)
    if n_boot and pairs and n_units:
        replicates = _replicates(matrices, weights, n_units, values, level, n_boot, seed)
    return PairAlphas(list(pairs), point_values, n_pair_units, replicates)


def _unit_types(codes: np.ndarray, by_type: bool | None) -> tuple[np.ndarray, np.ndarray | None]:
    """(rows, their weights): the distinct rows (types of unit) with how many units each stands
    for, when drawing per type (``by_type``, or by default when the types are at most a quarter of
    the units); else the units themselves, unweighted (None)."""
    n_units = codes.shape[0]
    if n_units and (by_type is None or by_type):
        types, inverse, type_counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
        if by_type or len(types) * 4 <= n_units:
            return types, type_counts.astype(np.float64)
    return codes, None


def _pair_coincidences(
    codes: np.ndarray, weights: np.ndarray | None, pairs: Sequence[tuple[int, int]], n_values: int
) -> tuple[list[sparse.csr_matrix], np.ndarray]:
    """Per pair, a rows x (V x V) sparse matrix of each row's coincidences (both orders), and the
    units the pair shares (weighted by type)."""
    n_rows = codes.shape[0]
    width = n_values * n_values
    matrices, n_pair_units = [], np.zeros(len(pairs), dtype=np.int64)
    for p, (a, b) in enumerate(pairs):
        both = (codes[:, a] >= 0) & (codes[:, b] >= 0)
        rows = np.flatnonzero(both)
        n_pair_units[p] = len(rows) if weights is None else int(weights[rows].sum())
        forward = codes[rows, a] * n_values + codes[rows, b]
        backward = codes[rows, b] * n_values + codes[rows, a]
        data = np.ones(2 * len(rows))
        matrices.append(
            sparse.csr_matrix(
                (data, (np.concatenate([rows, rows]), np.concatenate([forward, backward]))), shape=(n_rows, width)
            )
        )
    return matrices, n_pair_units


def _replicates(
    matrices: list[sparse.csr_matrix],
    weights: np.ndarray | None,
    n_units: int,
    values: np.ndarray,
    level: Level,
    n_boot: int,
    seed: int | None,
) -> np.ndarray:
    """``n_boot`` x pairs bootstrap alphas, every pair on the same draws of units (multinomial
    counts per type when weighted), computed in blocks of replicates to bound memory."""
    n_rows = matrices[0].shape[0]
    n_values = len(values)
    replicates = np.full((n_boot, len(matrices)), np.nan)
    rng = np.random.default_rng(seed)
    block = max(1, MAX_BLOCK_CELLS // n_rows)
    stacked = sparse.hstack(matrices).tocsc()  # rows x (pairs * V^2)
    for start in range(0, n_boot, block):
        size = min(block, n_boot - start)
        if weights is not None:  # units of each type in the replicate
            counts_t = rng.multinomial(n_units, weights / n_units, size=size).T.astype(np.float64)
        else:  # draw counts laid out units x replicates (contiguous for the product); a block's
            # draws at a time, the same numbers as all at once (n_boot x units integers)
            counts_t = draw_counts(rng, n_units, size, units_first=True)
        coincidences = np.asarray((stacked.T @ counts_t).T)  # size x (pairs * V^2)
        coincidences = coincidences.reshape(size, len(matrices), n_values, n_values)
        for p in range(len(matrices)):
            replicates[start : start + size, p] = _alphas(coincidences[:, p], values, level)
    return replicates


def interval(replicates: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """Percentile interval of the defined replicates (NaN, NaN when none is defined)."""
    defined = replicates[np.isfinite(replicates)]
    if defined.size == 0:
        return float("nan"), float("nan")
    low, high = np.quantile(defined, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)


def mean_of_pairs(result: PairAlphas, chosen: Sequence[int]) -> tuple[float, np.ndarray]:
    """The mean alpha over the chosen pairs (those defined) and its value in every replicate."""
    if not chosen:
        return float("nan"), np.full(result.replicates.shape[0], np.nan)
    values = result.values[list(chosen)]
    point = float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
    reps = result.replicates[:, list(chosen)]
    with warnings.catch_warnings():  # an all-NaN replicate is NaN, as meant
        warnings.simplefilter("ignore", RuntimeWarning)
        per_replicate = np.nanmean(reps, axis=1) if reps.size else np.full(reps.shape[0], np.nan)
    return point, per_replicate
