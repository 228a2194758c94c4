"""Chance-corrected agreement: weighted Cohen's kappa, Light's kappa, Scott's pi, Bennett's S,
Gwet's AC1 and AC2.

Every coefficient here is ``(p_a - p_e) / (1 - p_e)``: observed agreement ``p_a`` corrected by
the agreement ``p_e`` that chance alone would give. They differ in ``p_e`` only.

Notation (units x raters matrix, missing cells allowed): ``n[u, k]`` raters put unit ``u`` in
category ``k``, ``m_u = sum_k n[u, k]``; ``q`` categories (``categories`` when given, else the
distinct values present); agreement weights ``w[k, l]`` in ``[0, 1]`` with ``w[k, k] = 1``
(the identity when unweighted, see :func:`agreement_weights`); ``n*[u, k] = sum_l w[k, l] n[u, l]``.
The multi-rater definitions are those of Gwet's *Handbook of Inter-Rater Reliability* (4th ed.,
2014) as implemented by his irrCAC R package (``*.raw`` functions):

- ``p_a`` = mean over units with ``m_u >= 2`` of ``sum_k n[u, k] (n*[u, k] - 1) / (m_u (m_u - 1))``;
- ``pi_k`` = mean over units with ``m_u >= 1`` of ``n[u, k] / m_u``;
- Scott's pi (Fleiss' kappa): ``p_e = sum_kl w[k, l] pi_k pi_l``;
- Bennett's S (Brennan-Prediger): ``p_e = sum_kl w[k, l] / q ** 2`` (``1 / q`` unweighted);
- Gwet's AC1 / AC2: ``p_e = sum_kl w[k, l] / (q (q - 1)) * sum_k pi_k (1 - pi_k)``.

With two raters and no missing cell these are the textbook two-rater coefficients. Gwet (2008),
8 units both raters call 1, one both call 0, one they split:

>>> data = [[1, 1]] * 8 + [[0, 0], [1, 0]]
>>> [round(f(data).value, 4) for f in (scott_pi, bennett_s, gwet_ac1)]
[0.6078, 0.8, 0.8658]

Here ``p_a = 0.9`` and ``pi = (0.15, 0.85)``: Scott's ``p_e = 0.745``, Bennett's ``0.5``,
Gwet's ``2 * 0.15 * 0.85 = 0.255``.

Undefined (NaN with a reason, never an exception): fewer than two raters, no unit rated twice,
a single category (``q = 1``: pass ``categories`` to name the unused ones), or ``p_e = 1``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from judgelab.analysis.agreement import AgreementResult, ArrayLike
from judgelab.analysis.krippendorff import ValueCodes, value_codes

WeightName = Literal["identity", "linear", "quadratic", "ordinal"]
Weights = WeightName | np.ndarray | None
WEIGHT_NAMES: tuple[str, ...] = ("identity", "linear", "quadratic", "ordinal")
Categories = Sequence[object] | np.ndarray | None


def agreement_weights(values: Sequence[object] | np.ndarray, weights: Weights = None) -> np.ndarray:
    """``q x q`` agreement weights for an ordered category domain (irrCAC's weight functions).

    With ``x_k`` the category values (their ranks ``0..q-1`` when they are not numbers) and
    ``R = max(x) - min(x)``:

    - ``None`` / ``"identity"``: ``w = [k == l]`` (unweighted);
    - ``"linear"``: ``w = 1 - |x_k - x_l| / R``;
    - ``"quadratic"``: ``w = 1 - (x_k - x_l) ** 2 / R ** 2``;
    - ``"ordinal"``: ranks only; with ``M_kl = C(|k - l| + 1, 2)``, ``w = 1 - M_kl / max(M)``.

    A ``q x q`` array is taken as it is (it must be symmetric with ones on the diagonal).

    >>> agreement_weights([1, 2, 3], "linear").tolist()
    [[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]]
    >>> agreement_weights([1, 2, 3, 4], "ordinal")[0].tolist()
    [1.0, 0.8333333333333334, 0.5, 0.0]
    """
    domain = np.asarray(values)
    q = len(domain)
    if weights is None or (isinstance(weights, str) and weights == "identity"):
        return np.eye(q)
    if not isinstance(weights, str):
        matrix = np.asarray(weights, dtype=np.float64)
        if matrix.shape != (q, q) or not np.allclose(matrix, matrix.T) or not np.allclose(np.diag(matrix), 1.0):
            raise ValueError(f"weights must be a symmetric {q} x {q} matrix with ones on the diagonal")
        return matrix
    if weights not in WEIGHT_NAMES:
        raise ValueError(f"unknown weights {weights!r}; use one of {', '.join(WEIGHT_NAMES)} or a matrix")
    if q < 2:
        return np.eye(q)
    ranks = np.arange(q, dtype=np.float64)
    if weights == "ordinal":
        steps = np.abs(np.subtract.outer(ranks, ranks))
        disagreement = (steps + 1.0) * steps / 2.0
        return 1.0 - disagreement / disagreement.max()
    x = domain.astype(np.float64) if domain.dtype.kind in "biuf" else ranks
    span = x.max() - x.min()
    differences = np.abs(np.subtract.outer(x, x)) / span
    return 1.0 - (differences if weights == "linear" else differences**2)


def scott_pi(matrix: ArrayLike, weights: Weights = None, *, categories: Categories = None) -> AgreementResult:
    """Scott's (1955) pi, generalised to many raters and missing cells (= Fleiss' kappa).

    ``p_e = sum_kl w[k, l] pi_k pi_l``: chance agreement from the category shares pooled over
    all raters (irrCAC's ``fleiss.kappa.raw``). Unweighted it equals
    :func:`analysis.agreement.fleiss_kappa`. Artstein & Poesio (2008, p. 558): 100 items,
    ``p_a = 0.7``, ``pi = (0.35, 0.65)``, so ``p_e = 0.545``:

    >>> data = [[1, 1]] * 20 + [[2, 1]] * 20 + [[1, 2]] * 10 + [[2, 2]] * 50
    >>> round(scott_pi(data).value, 3)  # (0.7 - 0.545) / (1 - 0.545)
    0.341
    """
    return _chance_corrected(matrix, weights, categories, "Scott's pi", _scott_chance)


def bennett_s(matrix: ArrayLike, weights: Weights = None, *, categories: Categories = None) -> AgreementResult:
    """Bennett, Alpert & Goldstein's (1954) S, also Brennan & Prediger's (1981) kappa_n.

    Chance is a uniform draw among the ``q`` categories: ``p_e = sum_kl w[k, l] / q ** 2``
    (``1 / q`` unweighted; irrCAC's ``bp.coeff.raw``). ``q`` matters, so pass ``categories``
    when some categories of the scale were never used.

    >>> round(bennett_s([[1, 1], [2, 2], [1, 2], [3, 3]]).value, 4)  # (3/4 - 1/3) / (2/3)
    0.625
    >>> round(bennett_s([[1, 1], [2, 2], [1, 2], [3, 3]], categories=[1, 2, 3, 4]).value, 4)
    0.6667
    """
    return _chance_corrected(matrix, weights, categories, "Bennett's S", _bennett_chance)


def gwet_ac1(matrix: ArrayLike, *, categories: Categories = None) -> AgreementResult:
    """Gwet's (2008) AC1: ``p_e = sum_k pi_k (1 - pi_k) / (q - 1)`` (irrCAC's ``gwet.ac1.raw``).

    Unlike kappa and pi, AC1 stays high when raters agree on a very common category (the
    "kappa paradox"). Cohen's (1960) table, 200 items, ``p_a = 0.7``:

    >>> data = ([[1, 1]] * 88 + [[1, 2]] * 14 + [[1, 3]] * 18 + [[2, 1]] * 10 + [[2, 2]] * 40
    ...         + [[2, 3]] * 10 + [[3, 1]] * 2 + [[3, 2]] * 6 + [[3, 3]] * 12)
    >>> round(gwet_ac1(data).value, 3)
    0.576
    """
    return _chance_corrected(matrix, None, categories, "Gwet's AC1", _gwet_chance)


def gwet_ac2(matrix: ArrayLike, weights: Weights = "ordinal", *, categories: Categories = None) -> AgreementResult:
    """Gwet's AC2: AC1 with agreement weights for ordered categories.

    ``p_e = sum_kl w[k, l] / (q (q - 1)) * sum_k pi_k (1 - pi_k)`` and the weighted ``p_a`` (see
    the module docstring). The default ``"ordinal"`` weights use only the order of the
    categories; ``"linear"`` and ``"quadratic"`` use their values. Pass ``categories`` with the
    whole scale (e.g. ``range(1, 6)``): ``q`` and the weights depend on it.

    >>> data = [[1, 1], [2, 2], [2, 3], [3, 3], [3, 3]]
    >>> round(gwet_ac2(data, "quadratic").value, 4)  # p_a = 0.95, p_e = 6 / (3 * 2) * 0.62
    0.8684
    """
    return _chance_corrected(matrix, weights, categories, "Gwet's AC2", _gwet_chance)


def weighted_cohen_kappa(
    a: Sequence[object] | np.ndarray,
    b: Sequence[object] | np.ndarray,
    weights: Weights = "quadratic",
    *,
    categories: Categories = None,
) -> AgreementResult:
    """Cohen's (1968) weighted kappa between two raters, on the units both rated.

    With ``p[k, l]`` the share of those units rater ``a`` put in ``k`` and rater ``b`` in ``l``
    and ``p_k+``, ``p_+l`` its margins::

        kappa_w = (sum_kl w[k, l] p[k, l] - sum_kl w[k, l] p_k+ p_+l) / (1 - sum_kl w[k, l] p_k+ p_+l)

    ``"linear"`` and ``"quadratic"`` weights use the category values, so on a scale of
    consecutive integers they match ``sklearn.metrics.cohen_kappa_score(weights=...)`` (which
    uses the rank of each label among the labels present). ``weights=None`` is
    :func:`analysis.agreement.cohen_kappa`.

    >>> a, b = [1, 2, 3, 3, 2, 1], [1, 3, 3, 2, 2, 2]
    >>> round(weighted_cohen_kappa(a, b, "linear").value, 4)
    0.4
    >>> round(weighted_cohen_kappa(a, b, "quadratic").value, 4)
    0.5714
    """
    first, second = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    if first.ndim != 1 or second.ndim != 1 or first.shape != second.shape:
        raise ValueError(
            f"weighted_cohen_kappa needs two 1-D rating vectors of equal length, got {first.shape} and {second.shape}"
        )
    encoded = _encode(np.column_stack([first, second]), weights, categories)
    return _cohen_on_codes(encoded.codes, agreement_weights(encoded.values, weights))


def light_kappa(matrix: ArrayLike, weights: Weights = None, *, categories: Categories = None) -> AgreementResult:
    """Light's (1971) kappa: the mean of Cohen's kappa over all pairs of raters.

    Each pair's (weighted) kappa uses the units both raters rated and the whole matrix's
    category domain (for the weights); pairs without a shared unit or with an undefined kappa
    are left out of the mean. With two raters it is Cohen's kappa. ``n_units`` counts the units
    rated by two or more raters. Conger's (1980) kappa is a different generalisation.

    >>> data = [[1, 1, 1], [2, 2, 1], [1, 1, 2], [2, 2, 2]]  # pairs: 1.0, 0.0, 0.0
    >>> round(light_kappa(data).value, 4)
    0.3333
    """
    encoded = _encode(matrix, weights, categories)
    n_raters = encoded.codes.shape[1]
    if n_raters < 2:
        return _undefined(0, f"agreement needs at least two raters, the matrix has {n_raters}")
    n_units = int(((encoded.codes >= 0).sum(axis=1) >= 2).sum())
    if n_units == 0:
        return _undefined(0, "no unit was rated by two or more raters")
    w = agreement_weights(encoded.values, weights)
    results = [_cohen_on_codes(encoded.codes[:, [i, j]], w) for i, j in itertools.combinations(range(n_raters), 2)]
    defined = [result.value for result in results if result.is_defined]
    if not defined:
        reasons = sorted({result.reason for result in results if result.reason})
        return _undefined(n_units, "no pair of raters has a defined kappa: " + "; ".join(reasons))
    return AgreementResult(value=float(np.mean(defined)), n_units=n_units)


# -- shared machinery -----------------------------------------------------------------------


def _encode(matrix: ArrayLike, weights: Weights, categories: Categories) -> ValueCodes:
    encoded = value_codes(matrix, categories)
    value_based = isinstance(weights, str) and weights in ("linear", "quadratic")
    if value_based and not encoded.numeric and categories is None and encoded.values.size:
        raise ValueError(f"{weights} weights need numeric ratings or ordered categories")
    return encoded


def _cohen_on_codes(codes: np.ndarray, w: np.ndarray) -> AgreementResult:
    both = (codes >= 0).all(axis=1)
    n_units = int(both.sum())
    if n_units == 0:
        return _undefined(0, "no unit was rated by both raters")
    q = w.shape[0]
    joint = np.bincount(codes[both, 0] * q + codes[both, 1], minlength=q * q).reshape(q, q) / n_units
    observed = float((w * joint).sum())
    expected = float(joint.sum(axis=1) @ w @ joint.sum(axis=0))
    if math.isclose(expected, 1.0):
        return _undefined(
            n_units,
            "both raters gave the same single value to every unit, so kappa is undefined (chance agreement is 1)",
        )
    return AgreementResult(value=(observed - expected) / (1.0 - expected), n_units=n_units)


def _scott_chance(shares: np.ndarray, w: np.ndarray) -> float:
    return float(shares @ w @ shares)


def _bennett_chance(shares: np.ndarray, w: np.ndarray) -> float:
    return float(w.sum() / len(shares) ** 2)


def _gwet_chance(shares: np.ndarray, w: np.ndarray) -> float:
    q = len(shares)
    return float(w.sum() / (q * (q - 1)) * (shares * (1.0 - shares)).sum())


def _chance_corrected(
    matrix: ArrayLike,
    weights: Weights,
    categories: Categories,
    name: str,
    chance: Callable[[np.ndarray, np.ndarray], float],
) -> AgreementResult:
    encoded = _encode(matrix, weights, categories)
    n_raters = encoded.codes.shape[1]
    if n_raters < 2:
        return _undefined(0, f"agreement needs at least two raters, the matrix has {n_raters}")
    counts = encoded.counts()
    ratings = counts.sum(axis=1)
    pairable = ratings >= 2
    n_units = int(pairable.sum())
    if n_units == 0:
        return _undefined(0, "no unit was rated by two or more raters")
    if len(encoded.values) < 2:
        return _undefined(
            n_units, "every rating has the same value and no other category was given, so chance agreement is 1"
        )
    w = agreement_weights(encoded.values, weights)
    paired, m = counts[pairable], ratings[pairable]
    observed = float(((paired * (paired @ w.T - 1.0)).sum(axis=1) / (m * (m - 1.0))).mean())
    rated = ratings >= 1
    shares = (counts[rated] / ratings[rated, None]).mean(axis=0)
    expected = chance(shares, w)
    if math.isclose(expected, 1.0):
        return _undefined(n_units, f"every rating has the same value, so {name} is undefined (chance agreement is 1)")
    return AgreementResult(value=(observed - expected) / (1.0 - expected), n_units=n_units)


def _undefined(n_units: int, reason: str) -> AgreementResult:
    return AgreementResult(value=float("nan"), n_units=n_units, reason=reason)
