"""Prediction-powered estimates of a mean: human labels on a sample, a judge's predictions on every task.

A study quantity is a mean over the study's ``N`` tasks: the mean of a rating item, or the share
of tasks with a label (the mean of a 0/1 indicator). Humans label ``n`` of the tasks (``y``); a
judge predicts every task (``yhat``). Three estimates of the same mean:

- **human only**: the mean of ``y`` on the labelled tasks;
- **judge only**: the mean of ``yhat`` over all tasks, with its *bias* measured where both exist,
  ``mean(yhat - y)`` over the labelled tasks (the judge-only estimate has no valid interval);
- **prediction-powered** (PPI, Angelopoulos et al., Science 2023; PPI++, Angelopoulos, Duchi &
  Zrnic 2023): ``theta = lambda * mean_all(yhat) + mean_lab(y - lambda * yhat)``. The judge's
  errors are measured on the labelled tasks and removed, so the estimate is unbiased however bad
  the judge, and its variance ``var(y - lambda * yhat) / n + ...`` is small when the judge tracks
  the humans. ``lambda = 0`` is human-only; the power-tuned ``lambda`` minimises the variance,
  so a useless judge (``lambda ~ 0``) does not widen the interval.

"Worth N human labels" is the human-only sample size with the same interval width:
``n * (width_human / width_ppi) ** 2`` (widths scale as ``1 / sqrt(n)``).

Two methods:

- ``"ppi++"``: exactly ``ppi_py``'s ``ppi_mean_ci(..., lam=None)`` (labelled and unlabelled tasks
  disjoint, ``lambda = cov(y, yhat) / ((1 + n / N_u) var(yhat))`` clipped to ``[0, 1]``, normal
  quantile, ``np.std`` with ``ddof=0``), and ``classical_mean_ci`` for human only. Its coverage
  falls short at 10-20 labels and on skewed ratings.
- ``"adjusted"`` (the default): the same estimator over the pool of all tasks, with inverse
  probability weights ``1 / pi_i`` for tasks sampled with known inclusion probabilities ``pi_i``
  (active sampling, Zrnic & Candès, ICML 2024), and small-sample corrections that apply to the
  human-only interval too, so the two stay comparable and both stay honest:

  1. Student's ``t`` quantile with ``n - 1`` degrees of freedom (``n`` real labels);
  2. ``lambda`` minimises the estimated variance, and at ``lambda = 0`` that variance is exactly
     the human-only one, so the prediction-powered interval is never wider than the human-only
     interval: a useless judge costs nothing;
  3. *score intervals for a share*: when every label sits at one of the scale's ends (0/1 labels;
     or a sample with no spread at a bound), the interval is ``{theta: (est - theta)^2 <=
     t^2 g (theta - lo)(hi - theta) sum v_i^2 / n^2}``, the variance evaluated at the
     hypothesised mean rather than at the sample's (``(theta - lo)(hi - theta)`` is the largest
     variance a mean ``theta`` on ``[lo, hi]`` allows). Human only (``g = 1``) is Wilson's
     interval; prediction-powered, ``g = Var_ppi / Var_human <= 1`` is the judge's gain (Wilson's
     interval at ``n / g`` labels). Ten labels of one value still get an honest interval, and at
     ``p`` near 0.6 with 10-20 labels it is narrower than the classical ``p +- z s / sqrt(n)``;
  4. *the unseen-range floor* for ratings: the judge's spread over the tasks whose prediction lies
     outside the range of its predictions on the labelled tasks,
     ``D = sum_{j unseen} (yhat_j - hbar)^2 / N`` (:func:`unseen_spread`), joins the residual
     variance as ``(1 - lambda)^2 D`` (slope one: the humans' ratings there differ from the rest
     at least as much as the judge's do, the part of it ``lambda`` does not take over). A
     sample of 50 that holds none of the 27 in 990 summaries rated 1 (one in four) knows of them
     only through the judge: the human-only interval widens, and the power-tuned ``lambda``
     moves toward the judge, whose mean over all tasks includes them. ``D = 0`` when the labelled
     tasks span the judge's predictions.

  Intervals are clipped to ``[lo, hi]``. Estimating ``lambda`` on the same labels that measure the
  residuals makes the residual variance slightly optimistic; at 10-20 labels the ``t`` quantile
  covers that. Measured on ``bench/ppi_estimates.py`` (StorySumm, 8 judges, 10-40 labels; BASSE,
  5 criteria, 50-100 labels; 1,000 draws each) and rejected: one pseudo-task split between the
  scale's ends (coverage kept, but 1.25 times the classical width on BASSE's Consistency at 50
  labels, a mean of 4.7 pulled toward 1, and 1.10-1.13 at 10 StorySumm labels); a pseudo-task
  spread over the judge's predictions (Fluency at 50 labels: coverage 0.75-0.79 at weights 1-3);
  a floor scaled by the labelled slope or correlation of ``y`` on ``yhat`` (Fluency: 0.73, the
  slope measured on a sample without the tail is the bulk's); the floor ``Var_all(yhat) -
  Var_lab(yhat)`` over the whole range (as good on Fluency, 1.12 on Consistency); the unseen
  spread measured from the nearest seen prediction instead of ``hbar`` (Consistency 1.03, but
  Fluency's coverage 0.85); a pseudo-task of weight 0.25 at the ends on top of the floor
  (Coherence 0.88 of the classical width, Consistency 1.17); ``lambda`` tuned with the judge's
  variance over all tasks, as ``ppi_py`` does (Coherence 0.88, Fluency 0.77); a
  one-degree-of-freedom penalty for the fitted ``lambda`` (coverage moved by under 0.01) and
  two-fold cross-fitting (with the pseudo-task: +0.01 coverage, 0.91 of the human-only width on
  Fluency instead of 0.77). Even with the population's optimal ``lambda`` and its true
  variance, a symmetric ``+- z se`` interval covers Fluency's mean at 50 labels only 0.72 of the
  time (0.84 at 100): a skewed rating needs an interval that widens when the tail is missing.

Variance of the adjusted estimator (superpopulation, each task labelled independently with
probability ``pi_i``, Zrnic & Candès's ``Var(Z_i) / N`` with
``Z_i = c + lambda * yhat_i + xi_i (y_i - c - lambda * yhat_i) / pi_i`` and ``c`` the weighted
mean residual): with ``e_i = (y_i - ybar) - lambda (yhat_i - hbar)``, weights ``v_i`` normalised
to mean 1 over the labelled tasks and ``u_i = v_i N / n``,

``Var = sum_lab v_i^2 e_i^2 / (n' (n' - 1)) + lambda^2 var_all(yhat) / N
+ 2 lambda sum_lab u_i (yhat_i - mean_all(yhat)) e_i / N^2``,

a quadratic ``a0 - 2 lambda a1 + lambda^2 a2`` minimised at ``lambda = a1 / a2`` (the floor adds
``D sum v_i^2 / (n (n - 1))`` to each of ``a0``, ``a1``, ``a2``). With uniform sampling, no floor
and ``N -> inf`` this is PPI++'s ``var(y - lambda yhat) / n``. Optional pseudo-tasks
(``pseudo=``: that weight, half at each bound, joins the labelled tasks) are off by default. The
estimate targets the mean of the process that produced the tasks; as an interval for the mean
of the ``N`` tasks themselves it is conservative, and ``population="tasks"`` applies the
finite-population correction instead (:func:`pool_fit`'s ``finite``).

:func:`inclusion_probabilities` and :func:`draw_sample` choose the tasks for humans: uniform,
stratified, or active (more often where the judge is unsure, with a floor).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

METHODS = ("adjusted", "ppi++")
POPULATIONS = ("process", "tasks")


@dataclass(frozen=True)
class Interval:
    """An estimate with its ``(low, high)`` confidence interval and standard error.

    ``estimate +- quantile * se``; the adjusted method clips ``low`` and ``high`` to the scale's
    bounds (the mean cannot leave them), so ``width`` may be less than ``2 * quantile * se``. A
    score interval (0/1 labels, see the module) is not centred on the estimate; its ``se`` is its
    half-width over the quantile.
    """

    estimate: float
    low: float
    high: float
    se: float

    @property
    def width(self) -> float:
        return self.high - self.low


@dataclass(frozen=True)
class MeanEstimates:
    """Human-only, judge-only and prediction-powered estimates of one mean (see the module)."""

    alpha: float
    method: str
    n_labeled: int
    n_total: int
    human: Interval
    judge_estimate: float
    judge_bias: float  # mean(yhat - y) over the labelled tasks
    ppi: Interval
    lambda_: float
    worth_human_labels: float  # n_labeled * (width_human / width_ppi) ** 2, widths before clipping


# --------------------------------------------------------------------------------------------
# plain PPI++ (ppi_py's formulas), vectorised over leading axes


def ppi_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> np.ndarray:
    """PPI++'s power-tuning ``lambda = cov(y, yhat) / ((1 + n / N) var(yhat))`` clipped to ``[0, 1]``.

    ``cov`` is over the ``n`` labelled tasks (``ddof=0``), ``var`` over labelled and ``N``
    unlabelled predictions together (``ddof=1``), as ``ppi_py`` computes it. Works along the
    last axis. A judge that predicts a constant gets ``lambda = 0``.

    >>> y = np.array([1.0, 0, 1, 1, 0]); yhat = np.array([1.0, 0, 1, 0, 0])
    >>> round(float(ppi_lambda(y, yhat, np.array([1.0, 0, 0, 1, 1, 0]))), 4)
    0.32
    """
    y, yhat, yhat_unlabeled = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabeled))
    n, n_unlabeled = y.shape[-1], yhat_unlabeled.shape[-1]
    yc = y - y.mean(-1, keepdims=True)
    hc = yhat - yhat.mean(-1, keepdims=True)
    cov = (yc * hc).sum(-1) / n
    both = np.concatenate([yhat, np.broadcast_to(yhat_unlabeled, (*yhat.shape[:-1], n_unlabeled))], -1)
    var = both.var(-1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = cov / ((1 + n / n_unlabeled) * var)
    return np.clip(np.where(var > 0, lam, 0.0), 0.0, 1.0)


def ppi_plain(
    y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, lambda_: float | np.ndarray | str = "auto"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(estimate, standard error, lambda)`` of PPI++ as ``ppi_py`` computes them, along the last axis.

    ``theta = lambda mean(yhat_u) + mean(y - lambda yhat)``,
    ``se^2 = sd(lambda yhat_u)^2 / N + sd(y - lambda yhat)^2 / n`` (``ddof=0``).

    >>> est, se, lam = ppi_plain(np.array([1.0, 0, 1, 1]), np.array([1.0, 0, 1, 0]), np.array([1.0, 1, 0, 1, 1]), 1.0)
    >>> float(est), round(float(se), 4)
    (1.05, 0.2808)
    """
    y, yhat, yhat_unlabeled = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabeled))
    lam = ppi_lambda(y, yhat, yhat_unlabeled) if isinstance(lambda_, str) else np.asarray(lambda_, dtype=float)
    lam_ = lam[..., None]
    n, n_unlabeled = y.shape[-1], yhat_unlabeled.shape[-1]
    estimate = (lam_ * yhat_unlabeled).mean(-1) + (y - lam_ * yhat).mean(-1)
    se = np.sqrt((lam_ * yhat_unlabeled).std(-1) ** 2 / n_unlabeled + (y - lam_ * yhat).std(-1) ** 2 / n)
    return estimate, se, lam


def classical_plain(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, sd / sqrt(n))`` along the last axis (``ddof=0``, as ``ppi_py.classical_mean_ci``)."""
    y = np.asarray(y, dtype=float)
    return y.mean(-1), y.std(-1) / np.sqrt(y.shape[-1])


# --------------------------------------------------------------------------------------------
# the adjusted, inverse-probability-weighted pool estimator, vectorised over leading axes


@dataclass(frozen=True)
class PoolFit:
    """Arrays (one value per leading index) of :func:`pool_fit`."""

    n: np.ndarray  # real labels
    human: np.ndarray
    human_se: np.ndarray
    human_df: np.ndarray
    ppi: np.ndarray
    ppi_se: np.ndarray
    ppi_df: np.ndarray
    lambda_: np.ndarray
    human_low: np.ndarray
    human_high: np.ndarray
    ppi_low: np.ndarray
    ppi_high: np.ndarray
    score: np.ndarray  # the labels took only the scale's two ends: score (Wilson-type) intervals
    unseen: np.ndarray  # the floor D: the judge's spread where the labelled tasks show none of its predictions


def unseen_spread(yhat: np.ndarray, mask: np.ndarray, yhat_all: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """``D = sum_{j: yhat_j outside the labelled range} (yhat_j - centre)^2 / N`` along the last axis.

    The judge's spread over the tasks whose prediction lies below the smallest or above the
    largest prediction on a labelled task: the part of the judge's distribution the labelled
    sample never shows (the rare tail a small sample misses).

    >>> pool = np.array([1.0, 5, 5, 5, 4, 5, 5, 5, 4, 5])
    >>> float(unseen_spread(np.array([5.0, 4, 5]), np.ones(3, bool), pool, np.array(4.8)))
    1.444
    """
    m = np.asarray(mask, dtype=bool)
    yhat = np.asarray(yhat, dtype=float)
    pool = np.sort(np.asarray(yhat_all, dtype=float).ravel())
    big_n = len(pool)
    s1 = np.r_[0.0, np.cumsum(pool)]
    s2 = np.r_[0.0, np.cumsum(pool**2)]
    low = np.where(m, yhat, np.inf).min(-1)
    high = np.where(m, yhat, -np.inf).max(-1)
    below = np.searchsorted(pool, low, "left")
    above = np.searchsorted(pool, high, "right")
    count = below + (big_n - above)
    first = s1[below] + (s1[-1] - s1[above])
    second = s2[below] + (s2[-1] - s2[above])
    return np.maximum(second - 2 * centre * first + centre**2 * count, 0.0) / big_n


def score_interval(
    estimate: np.ndarray, offset: np.ndarray, scale: np.ndarray, quantile: np.ndarray, bounds: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """``{theta: (estimate - theta)^2 <= q^2 (offset + scale (theta - lo)(hi - theta))}``, in ``[lo, hi]``.

    With ``offset = 0`` and ``scale = 1 / n`` on a 0/1 scale, Wilson's score interval.

    >>> low, high = score_interval(np.array(0.0), np.array(0.0), np.array(0.1), np.array(1.6449), (0, 1))
    >>> round(float(low), 3), round(float(high), 3)
    (0.0, 0.213)
    """
    lo, hi = bounds
    q2 = np.asarray(quantile, dtype=float) ** 2
    a = 1 + q2 * scale
    b = -(2 * estimate + q2 * scale * (lo + hi))
    c = estimate**2 - q2 * (offset - scale * lo * hi)
    root = np.sqrt(np.maximum(b**2 - 4 * a * c, 0.0))
    return np.clip((-b - root) / (2 * a), lo, hi), np.clip((-b + root) / (2 * a), lo, hi)


def pool_fit(
    y: np.ndarray,
    yhat: np.ndarray,
    mask: np.ndarray,
    weights: np.ndarray,
    yhat_mean: float,
    yhat_var: float,
    n_total: int,
    bounds: tuple[float, float],
    *,
    lambda_: float | str = "auto",
    pseudo: float = 0.0,
    finite: bool = False,
    alpha: float = 0.1,
    yhat_all: np.ndarray | None = None,
    score: bool = True,
) -> PoolFit:
    """The adjusted estimator on labelled tasks (last axis; ``mask`` marks the real ones).

    ``weights`` are ``1 / pi_i`` (any positive scale); ``yhat_mean`` and ``yhat_var`` are the
    mean and variance (``ddof=1``) of the judge over all ``n_total`` tasks; ``pseudo`` is the
    total weight of optional pseudo-tasks (half at each bound; none by default). See the module
    docstring for the variance. ``lambda_="auto"`` power-tunes; a number fixes it. ``alpha``
    sets the level of the intervals (``human_low`` ... ``ppi_high``, clipped to ``bounds``).

    ``yhat_all`` (the judge's prediction on every task) turns on the *unseen-range floor*
    (:func:`unseen_spread`): ``(1 - lambda)^2 D`` joins the residual variance, for human only
    (``lambda = 0``) too. ``score=True`` gives a labelled sample whose labels are all at the
    scale's ends (a 0/1 share; or no spread at a bound) score intervals instead of
    ``estimate +- t se`` (module docstring); ``human_se`` and ``ppi_se`` are then the half-widths
    over ``t``.

    With no pseudo-task the estimate is
    ``theta = lambda mean_all(yhat) + sum_lab w_i (y_i - lambda yhat_i) / sum_lab w_i``, the Hajek
    form of the inverse-probability-weighted
    ``mean_all(lambda yhat_i + (y_i - lambda yhat_i) xi_i / pi_i)`` (``xi_i = 1`` for a labelled
    task): the two agree whenever ``sum_lab 1 / pi_i = N`` (a fixed-size uniform or stratified
    sample), and the Hajek form does not pay for the random size of a Poisson sample.

    ``finite=True`` estimates the mean of the ``N`` tasks themselves (``weights`` must then be
    exactly ``1 / pi_i``): the judge's mean over the pool is known exactly, and each labelled
    task's squared residual counts ``1 - pi_i`` times (the finite-population correction,
    ``(1 - n / N) s^2 / n`` for a uniform sample), so ``Var = sum_lab (1 - pi_i) v_i^2 e_i^2 /
    (n' (n' - 1))`` and the power-tuned ``lambda`` is the weighted least-squares slope; the
    pseudo-tasks weigh ``pseudo * (1 - n / N)``, so labelling every task gives the exact mean.

    >>> y, yhat, pool = np.array([4.0, 2, 5]), np.array([4.0, 3, 5]), np.array([4.0, 3, 5, 3, 1, 5])
    >>> pi = np.full(3, 0.5)
    >>> fit = pool_fit(y, yhat, np.ones(3, bool), 1 / pi, pool.mean(), pool.var(ddof=1), 6, (1, 5),
    ...                lambda_=0.8, pseudo=0)
    >>> xi = np.r_[1.0, 1, 1, 0, 0, 0]; y_pool = np.r_[y, 0, 0, 0]; pi_pool = np.full(6, 0.5)
    >>> bool(np.isclose(fit.ppi, np.mean(0.8 * pool + (y_pool - 0.8 * pool) * xi / pi_pool)))
    True
    """
    lo, hi = (float(b) for b in bounds)
    pool = _weighted_pool(y, yhat, mask, weights, yhat_mean, n_total, (lo, hi), pseudo, finite)
    m, n = pool.mask, pool.n
    # the labels only at the scale's ends (a share): score intervals, with no floor (the hypothesised
    # (theta - lo)(hi - theta) is the largest variance a mean theta on [lo, hi] allows)
    ends = np.all(~m | (pool.y == lo) | (pool.y == hi), -1) if score else np.zeros(n.shape, bool)
    floor = unseen_spread(pool.yhat, m, yhat_all, pool.hbar) if yhat_all is not None else np.zeros(n.shape)
    floor = np.where(ends, 0.0, floor)
    a0, a1, a2, sum_v2 = _variance_quadratic(pool, floor, (lo, hi), yhat_mean, yhat_var, n_total, finite)
    lam, var_ppi = _power_tuned(a0, a1, a2, lambda_, n.shape)
    human = pool.ybar
    ppi = lam * yhat_mean + pool.ybar - lam * pool.hbar
    df = np.maximum(n - 1, 1)
    q = t_quantile(alpha, df)
    human_se, ppi_se = np.sqrt(np.maximum(a0, 0)), np.sqrt(np.maximum(var_ppi, 0))
    human_low, human_high = np.clip(human - q * human_se, lo, hi), np.clip(human + q * human_se, lo, hi)
    ppi_low, ppi_high = np.clip(ppi - q * ppi_se, lo, hi), np.clip(ppi + q * ppi_se, lo, hi)
    fit = PoolFit(n, human, human_se, df, ppi, ppi_se, df, lam, human_low, human_high, ppi_low, ppi_high, ends, floor)
    if ends.any():
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = sum_v2 / pool.n_aug**2  # ddof 0, as Wilson's p (1 - p) / n
        fit = _with_score_intervals(fit, a0, var_ppi, scale, q, (lo, hi), tuned=isinstance(lambda_, str))
    return fit


@dataclass(frozen=True)
class _WeightedPool:
    """The labelled tasks of :func:`pool_fit`, weighted and centred (arrays along the last axis)."""

    mask: np.ndarray
    y: np.ndarray  # 0 where not labelled
    yhat: np.ndarray  # 0 where not labelled
    n: np.ndarray  # real labels
    n_aug: np.ndarray  # real labels and the pseudo-tasks' weight
    u: np.ndarray  # the weights scaled to sum to N
    v2: np.ndarray  # each labelled task's squared weight (times 1 - pi_i when finite)
    kp_sq: np.ndarray  # the squared-weight counterpart of each bound's pseudo-task
    ybar: np.ndarray
    hbar: np.ndarray
    yt: np.ndarray  # y - ybar on the labelled tasks, else 0
    ht: np.ndarray  # yhat - hbar on the labelled tasks, else 0


def _weighted_pool(
    y: np.ndarray,
    yhat: np.ndarray,
    mask: np.ndarray,
    weights: np.ndarray,
    yhat_mean: float,
    n_total: int,
    bounds: tuple[float, float],
    pseudo: float,
    finite: bool,
) -> _WeightedPool:
    """The weights and the weighted means ``ybar``, ``hbar`` of :func:`pool_fit`'s labelled tasks.

    The weights are normalised to mean 1 over the labelled tasks (``v``) and to sum to ``N``
    (``u``); the pseudo-tasks (total weight ``pseudo``, half at each bound; with ``finite`` only
    in the unlabelled share) join the means. With ``finite`` each squared weight counts
    ``1 - pi_i`` times, the finite-population correction the variance needs.
    """
    y, yhat, weights = (np.asarray(a, dtype=float) for a in (y, yhat, weights))
    m = np.asarray(mask, dtype=bool)
    y, yhat, w = np.where(m, y, 0.0), np.where(m, yhat, 0.0), np.where(m, weights, 0.0)
    lo, hi = bounds
    big_n = float(n_total)
    n = m.sum(-1).astype(float)
    unlabeled_share = np.clip(1 - n / big_n, 0.0, 1.0)
    # pseudo-tasks stand for what the labels may have missed: with finite=True, in the unlabelled share only
    k = float(pseudo) * unlabeled_share if finite else np.full(n.shape, float(pseudo))
    v = w * (n / w.sum(-1))[..., None]  # mean 1 over the labelled tasks
    u = v * (big_n / n)[..., None]  # sums to N
    n_aug = n + k
    kp = k / 2
    ybar = ((v * y).sum(-1) + kp * (lo + hi)) / n_aug
    hbar = ((v * yhat).sum(-1) + k * yhat_mean) / n_aug
    yt = np.where(m, y - ybar[..., None], 0.0)
    ht = np.where(m, yhat - hbar[..., None], 0.0)
    if finite:  # 1 - pi_i per labelled task; the pseudo-tasks get the mean sampling fraction's
        with np.errstate(divide="ignore"):
            v2 = v**2 * np.where(m, np.clip(1 - 1 / np.where(m, w, 1.0), 0.0, 1.0), 0.0)
        kp_sq = kp * unlabeled_share
    else:
        v2, kp_sq = v**2, kp
    return _WeightedPool(m, y, yhat, n, n_aug, u, v2, kp_sq, ybar, hbar, yt, ht)


def _variance_quadratic(
    pool: _WeightedPool,
    floor: np.ndarray,
    bounds: tuple[float, float],
    yhat_mean: float,
    yhat_var: float,
    n_total: int,
    finite: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(a0, a1, a2, sum v^2)``: the estimate's variance is ``a0 - 2 lambda a1 + lambda^2 a2``.

    The residual terms over the labelled tasks and the pseudo-tasks, each with the unseen-range
    ``floor`` (module docstring); without ``finite``, the judge's own spread over the ``N``
    tasks and its covariance with the residuals (with ``finite`` the judge's mean is exact).
    ``sum v^2`` scales the score intervals.
    """
    lo, hi = bounds
    big_n = float(n_total)
    m, v2, kp_sq, yt, ht = pool.mask, pool.v2, pool.kp_sq, pool.yt, pool.ht
    y_lo, y_hi, h_p = lo - pool.ybar, hi - pool.ybar, yhat_mean - pool.hbar
    sum_v2 = v2.sum(-1) + 2 * kp_sq
    a_yy = (v2 * yt**2).sum(-1) + kp_sq * (y_lo**2 + y_hi**2) + floor * sum_v2
    a_yh = (v2 * yt * ht).sum(-1) + kp_sq * h_p * (y_lo + y_hi) + floor * sum_v2
    a_hh = (v2 * ht**2).sum(-1) + 2 * kp_sq * h_p**2 + floor * sum_v2
    with np.errstate(invalid="ignore", divide="ignore"):
        denom = pool.n_aug * (pool.n_aug - 1)
        centred = np.where(m, pool.yhat - yhat_mean, 0.0)
        c_y = (pool.u * centred * yt).sum(-1) / big_n**2
        c_h = (pool.u * centred * ht).sum(-1) / big_n**2
        spread = yhat_var / big_n
        if finite:
            c_y, c_h, spread = 0.0 * c_y, 0.0 * c_h, 0.0
        a0 = a_yy / denom
        a1 = a_yh / denom - c_y
        a2 = a_hh / denom + spread - 2 * c_h
    return a0, a1, a2, sum_v2


def _power_tuned(
    a0: np.ndarray, a1: np.ndarray, a2: np.ndarray, lambda_: float | str, shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """``(lambda, variance)``: ``lambda_`` itself when a number, else the minimiser ``a1 / a2``.

    The power-tuned ``lambda`` is clipped to ``[0, 1]`` and falls back to 0 (human only) where
    its variance is not below ``a0`` (rounding, or ``a2 <= 0`` on degenerate data).
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        if isinstance(lambda_, str):
            lam = np.clip(np.where(a2 > 0, a1 / a2, 0.0), 0.0, 1.0)
        else:
            lam = np.broadcast_to(np.asarray(float(lambda_)), shape)
        var_ppi = a0 - 2 * lam * a1 + lam**2 * a2
    if isinstance(lambda_, str):  # never worse than human only
        worse = ~(var_ppi < a0) | (lam <= 0)
        lam = np.where(worse, 0.0, lam)
        var_ppi = np.where(worse, a0, var_ppi)
    return lam, var_ppi


def _with_score_intervals(
    fit: PoolFit,
    a0: np.ndarray,
    var_ppi: np.ndarray,
    scale: np.ndarray,
    q: np.ndarray,
    bounds: tuple[float, float],
    *,
    tuned: bool,
) -> PoolFit:
    """``fit`` with score intervals where its labels sit only at the scale's ends (``fit.score``).

    Human only at ``scale`` (Wilson's interval for 0/1 labels); prediction-powered at ``scale``
    times the judge's gain ``var_ppi / a0``. A power-tuned (``tuned``) estimate whose score
    interval would be wider than the human-only one falls back to human only. The standard
    errors become the half-widths over ``q``.
    """
    ends = fit.score
    s_low, s_high = score_interval(fit.human, 0.0 * a0, scale, q, bounds)
    gain = np.where(a0 > 0, var_ppi / np.where(a0 > 0, a0, 1.0), 1.0)  # <= 1: the judge's share
    p_low, p_high = score_interval(fit.ppi, 0.0 * a0, scale * gain, q, bounds)
    ppi, lam = fit.ppi, fit.lambda_
    if tuned:  # the score interval of the power-tuned estimate: never wider than human only
        wider = (p_high - p_low) > (s_high - s_low)
        p_low, p_high = np.where(wider, s_low, p_low), np.where(wider, s_high, p_high)
        ppi = np.where(ends & wider, fit.human, ppi)
        lam = np.where(ends & wider, 0.0, lam)
    return replace(
        fit,
        ppi=ppi,
        lambda_=lam,
        human_low=np.where(ends, s_low, fit.human_low),
        human_high=np.where(ends, s_high, fit.human_high),
        ppi_low=np.where(ends, p_low, fit.ppi_low),
        ppi_high=np.where(ends, p_high, fit.ppi_high),
        human_se=np.where(ends, (s_high - s_low) / (2 * q), fit.human_se),
        ppi_se=np.where(ends, (p_high - p_low) / (2 * q), fit.ppi_se),
    )


def t_quantile(alpha: float, df: np.ndarray | float) -> np.ndarray:
    """The ``1 - alpha / 2`` quantile of Student's t (normal when ``df`` is infinite)."""
    return stats.t.ppf(1 - alpha / 2, df)


def _interval(estimate: float, se: float, quantile: float, bounds: tuple[float, float] = (-np.inf, np.inf)) -> Interval:
    low, high = max(estimate - quantile * se, bounds[0]), min(estimate + quantile * se, bounds[1])
    return Interval(float(estimate), float(low), float(high), float(se))


def mean_estimates(
    y_labeled: np.ndarray,
    yhat_labeled: np.ndarray,
    yhat_unlabeled: np.ndarray | None = None,
    *,
    yhat_all: np.ndarray | None = None,
    alpha: float = 0.1,
    inclusion: np.ndarray | None = None,
    lambda_: float | str = "auto",
    bounds: tuple[float, float] | None = None,
    method: str = "adjusted",
    pseudo: float = 0.0,
    population: str = "process",
    floor: bool = True,
    score: bool = True,
) -> MeanEstimates:
    """Human-only, judge-only and prediction-powered estimates of a mean, at level ``1 - alpha``.

    The judge's predictions on the other tasks come as ``yhat_unlabeled`` (the tasks humans did
    not label) or ``yhat_all`` (every task, the labelled ones included). ``inclusion`` holds each
    labelled task's probability of having been chosen for humans (``pi_i``; default ``n / N``,
    uniform sampling); the estimate weighs the task by ``1 / pi_i``, so tasks sampled actively
    (:func:`inclusion_probabilities`) still give an unbiased estimate. ``bounds`` is the scale of
    ``y`` (default: the smallest and largest value of ``y`` and ``yhat``). ``lambda_="auto"``
    power-tunes; ``0`` gives human only, ``1`` plain PPI. ``method="ppi++"`` is ``ppi_py``'s
    ``ppi_mean_ci`` and ``classical_mean_ci`` exactly (uniform sampling only).
    ``population="process"`` (default) targets the mean of the process that produced the tasks;
    ``"tasks"`` the mean of these ``N`` tasks, with the finite-population correction
    (:func:`pool_fit`'s ``finite``): narrower when humans label a large share of the tasks.

    Human only: ``ybar +- t_{n-1} s / sqrt(n)`` (weighted), Wilson's score interval for 0/1
    labels; prediction-powered: ``theta = lambda mean_all(yhat) + mean(y - lambda yhat)``
    (module docstring: score intervals, the unseen-range floor; ``floor=False`` and
    ``score=False`` turn them off); worth ``n * (width_human / width_ppi) ** 2`` human labels
    (widths before the adjusted method clips the intervals to ``bounds``; a score interval's
    ``se`` is its half-width over ``t``).

    >>> y = np.array([1.0, 1, 0, 1, 0, 1, 1, 0, 1, 1])
    >>> judge = np.array([1.0, 1, 0, 1, 0, 1, 0, 0, 1, 1])
    >>> others = np.tile([1.0, 0, 1, 1, 1], 18)
    >>> r = mean_estimates(y, judge, others)
    >>> round(r.human.estimate, 3), round(r.human.width, 3), round(r.ppi.estimate, 3), round(r.ppi.width, 3)
    (0.7, 0.471, 0.839, 0.265)
    >>> round(r.lambda_, 2), round(r.judge_bias, 2), round(r.worth_human_labels, 1)
    (0.77, -0.1, 31.5)
    >>> mean_estimates(y, judge, others, lambda_=0).ppi == mean_estimates(y, judge, others).human
    True
    """
    y, yhat, unlabeled, pool = _checked_inputs(y_labeled, yhat_labeled, yhat_unlabeled, yhat_all, method, population)
    n, n_total = len(y), len(pool)
    if method == "ppi++":
        human_i, ppi_i, lam, bias = _ppi_plus_plus(y, yhat, unlabeled, inclusion, population, alpha, lambda_)
    else:
        human_i, ppi_i, lam, bias = _adjusted(
            y, yhat, pool, inclusion, alpha=alpha, lambda_=lambda_, bounds=bounds, pseudo=pseudo,
            population=population, floor=floor, score=score,
        )  # fmt: skip
    worth = n * (human_i.se / ppi_i.se) ** 2 if ppi_i.se > 0 else float("inf")
    return MeanEstimates(alpha, method, n, n_total, human_i, float(pool.mean()), bias, ppi_i, float(lam), float(worth))


def _checked_inputs(
    y_labeled: np.ndarray,
    yhat_labeled: np.ndarray,
    yhat_unlabeled: np.ndarray | None,
    yhat_all: np.ndarray | None,
    method: str,
    population: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`mean_estimates`'s arguments checked, as ``(y, yhat, unlabelled, pool)`` flat float arrays.

    ``pool`` is the judge on every task; ``unlabelled`` is ``yhat_unlabeled`` when given, else
    the whole pool (as ``yhat_all`` came). Raises ``ValueError`` on an unknown method or
    population, mismatched or too short labels, both or neither of the judge's other
    predictions, and a missing value.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    if population not in POPULATIONS:
        raise ValueError(f"population must be one of {POPULATIONS}, not {population!r}")
    y = np.asarray(y_labeled, dtype=float).ravel()
    yhat = np.asarray(yhat_labeled, dtype=float).ravel()
    if y.shape != yhat.shape or len(y) < 2:
        raise ValueError("y_labeled and yhat_labeled need the same length, at least 2")
    if (yhat_unlabeled is None) == (yhat_all is None):
        raise ValueError("give the judge's other predictions as yhat_unlabeled or yhat_all (one of them)")
    if yhat_all is not None:
        pool = np.asarray(yhat_all, dtype=float).ravel()
        if len(pool) < len(y):
            raise ValueError("yhat_all must hold every task, the labelled ones too")
        unlabeled = pool
    else:
        unlabeled = np.asarray(yhat_unlabeled, dtype=float).ravel()
        pool = np.concatenate([yhat, unlabeled])
    if not (np.isfinite(y).all() and np.isfinite(yhat).all() and np.isfinite(pool).all()):
        raise ValueError("y and yhat must be finite (drop the tasks with a missing value first)")
    return y, yhat, unlabeled, pool


def _ppi_plus_plus(
    y: np.ndarray,
    yhat: np.ndarray,
    unlabeled: np.ndarray,
    inclusion: np.ndarray | None,
    population: str,
    alpha: float,
    lambda_: float | str,
) -> tuple[Interval, Interval, np.ndarray, float]:
    """``(human, ppi, lambda, judge bias)`` of ``method="ppi++"``: ``ppi_py``'s normal intervals.

    ``ppi_py`` knows only uniform sampling from a process: ``ValueError`` for ``inclusion`` or
    ``population="tasks"``.
    """
    if inclusion is not None or population != "process":
        raise ValueError('method="ppi++" assumes uniform sampling from a process: use method="adjusted"')
    z = float(stats.norm.ppf(1 - alpha / 2))
    est, se, lam = ppi_plain(y, yhat, unlabeled, lambda_)
    human, human_se = classical_plain(y)
    bias = float(np.mean(yhat - y))
    return _interval(human, human_se, z), _interval(est, se, z), lam, bias


def _adjusted(
    y: np.ndarray,
    yhat: np.ndarray,
    pool: np.ndarray,
    inclusion: np.ndarray | None,
    *,
    alpha: float,
    lambda_: float | str,
    bounds: tuple[float, float] | None,
    pseudo: float,
    population: str,
    floor: bool,
    score: bool,
) -> tuple[Interval, Interval, np.ndarray, float]:
    """``(human, ppi, lambda, judge bias)`` of ``method="adjusted"``: :func:`pool_fit` on the labels.

    Each labelled task weighs ``1 / pi_i`` (``inclusion``; default ``n / N``), in the estimates
    and in the judge's bias; ``bounds`` default to the smallest and largest value seen.
    """
    n, n_total = len(y), len(pool)
    pi = np.full(n, n / n_total) if inclusion is None else np.asarray(inclusion, dtype=float).ravel()
    if pi.shape != y.shape or not ((pi > 0) & (pi <= 1)).all():
        raise ValueError("inclusion must hold one probability in (0, 1] per labelled task")
    lo, hi = bounds if bounds is not None else (min(y.min(), pool.min()), max(y.max(), pool.max()))
    fit = pool_fit(
        y,
        yhat,
        np.ones(n, bool),
        1 / pi,
        float(pool.mean()),
        float(pool.var(ddof=1)),
        n_total,
        (lo, hi),
        lambda_=lambda_,
        pseudo=pseudo,
        finite=population == "tasks",
        alpha=alpha,
        yhat_all=pool if floor else None,
        score=score,
    )
    human_i = Interval(float(fit.human), float(fit.human_low), float(fit.human_high), float(fit.human_se))
    ppi_i = Interval(float(fit.ppi), float(fit.ppi_low), float(fit.ppi_high), float(fit.ppi_se))
    bias = float(np.sum((yhat - y) / pi) / np.sum(1 / pi))
    return human_i, ppi_i, fit.lambda_, bias


def pool_estimates(
    y: np.ndarray, yhat: np.ndarray, inclusion: np.ndarray | None = None, **options: object
) -> MeanEstimates:
    """:func:`mean_estimates` on a pool: ``y`` is NaN where no human labelled the task.

    ``inclusion`` is every task's ``pi_i`` (the labelled tasks' are used).

    >>> y = np.array([1.0, np.nan, 0, np.nan, 1, 1, np.nan, 0])
    >>> r = pool_estimates(y, np.array([1.0, 1, 0, 0, 1, 1, 0, 1]))
    >>> r.n_labeled, r.n_total
    (5, 8)
    """
    y, yhat = np.asarray(y, dtype=float), np.asarray(yhat, dtype=float)
    labeled = ~np.isnan(y)
    pi = None if inclusion is None else np.asarray(inclusion, dtype=float)[labeled]
    return mean_estimates(y[labeled], yhat[labeled], yhat_all=yhat, inclusion=pi, **options)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# which tasks humans label


def inclusion_probabilities(
    budget: float,
    uncertainty: np.ndarray | None = None,
    *,
    n_total: int | None = None,
    design: str = "active",
    floor: float = 0.2,
    strata: np.ndarray | None = None,
) -> np.ndarray:
    """Each task's probability ``pi_i`` of being given to humans, summing to ``budget``.

    - ``"uniform"``: ``pi_i = budget / N``;
    - ``"active"`` (Zrnic & Candès 2024): ``pi_i = budget ((1 - floor) u_i / sum u + floor / N)``,
      ``u_i`` the judge's uncertainty (``sqrt(p (1 - p))`` for a probability ``p`` of a label,
      the spread of repeated judgments, or ``sqrt(1 - P(judge right))``), capped at 1 with the
      excess spread over the others; the floor keeps every task reachable;
    - ``"stratified"``: ``pi_i = n_h / N_h`` in each stratum, ``n_h`` proportional to ``N_h``
      times the stratum's mean uncertainty (Neyman allocation; proportional without one), at
      least one per stratum; draw it with :func:`draw_sample` and the same ``strata``.

    >>> inclusion_probabilities(2, np.array([0.0, 0.5, 0.5, 0.0]), floor=0.2)
    array([0.1, 0.9, 0.9, 0.1])
    >>> inclusion_probabilities(3, n_total=6, design="uniform")
    array([0.5, 0.5, 0.5, 0.5, 0.5, 0.5])
    """
    if uncertainty is not None:
        u = np.clip(np.nan_to_num(np.asarray(uncertainty, dtype=float).ravel(), nan=0.0), 0, None)
        n_total = len(u)
    elif n_total is None:
        raise ValueError("give uncertainty or n_total")
    else:
        u = np.ones(n_total)
    if not 0 < budget <= n_total:
        raise ValueError(f"budget must be in (0, {n_total}]")
    if design == "uniform" or (design == "active" and u.sum() == 0):
        return np.full(n_total, budget / n_total)
    if design == "active":
        share = (1 - floor) * u / u.sum() + floor / n_total
        return _cap_at_one(budget * share, budget)
    if design == "stratified":
        if strata is None:
            raise ValueError("stratified design needs strata")
        keys, group = np.unique(np.asarray(strata).ravel(), return_inverse=True)
        sizes = np.bincount(group).astype(float)
        spread = np.bincount(group, weights=u) / sizes if uncertainty is not None else np.ones(len(keys))
        alloc = _allocate(budget, sizes, np.where(spread > 0, spread, spread[spread > 0].min(initial=1.0)))
        return (alloc / sizes)[group]
    raise ValueError(f"design must be uniform, active or stratified, not {design!r}")


def _cap_at_one(pi: np.ndarray, budget: float) -> np.ndarray:
    pi = pi.copy()
    for _ in range(len(pi)):
        over = pi > 1
        if not over.any():
            break
        free = ~over & (pi < 1)
        excess = (pi[over] - 1).sum()
        pi[over] = 1.0
        pi[free] += excess * pi[free] / pi[free].sum()
    return np.minimum(pi, 1.0)


def _allocate(budget: float, sizes: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """Integer ``n_h`` (largest remainders) proportional to ``N_h * spread_h``, in ``[1, N_h]``."""
    target = int(round(budget))
    alloc = np.minimum(np.ones_like(sizes), sizes)
    for _ in range(len(sizes) + 1):
        room = sizes - alloc
        left = target - alloc.sum()
        if left <= 0 or room.sum() == 0:
            break
        want = sizes * spread * (room > 0)
        share = np.minimum(left * want / want.sum(), room)
        alloc += np.floor(share)
        remainder = share - np.floor(share)
        extra = int(target - alloc.sum())
        if extra > 0 and share.sum() >= extra:
            for h in np.argsort(-remainder, kind="stable")[:extra]:
                if alloc[h] < sizes[h]:
                    alloc[h] += 1
    return alloc


def draw_sample(pi: np.ndarray, rng: np.random.Generator, strata: np.ndarray | None = None) -> np.ndarray:
    """Which tasks to give humans (a boolean mask) for inclusion probabilities ``pi``.

    With ``strata`` (or a constant ``pi``), exactly ``round(sum pi)`` tasks of each stratum
    without replacement, so ``pi`` is each task's exact probability; otherwise each task
    independently with probability ``pi_i`` (Poisson sampling, the budget met on average).

    >>> int(draw_sample(np.full(10, 0.3), np.random.default_rng(0)).sum())
    3
    """
    pi = np.asarray(pi, dtype=float).ravel()
    if strata is None and not np.allclose(pi, pi[0]):
        return rng.random(len(pi)) < pi
    groups = np.zeros(len(pi), int) if strata is None else np.unique(np.asarray(strata).ravel(), return_inverse=True)[1]
    chosen = np.zeros(len(pi), bool)
    order = rng.random(len(pi))
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g)
        take = int(round(pi[members].sum()))
        chosen[members[np.argsort(order[members])[:take]]] = True
    return chosen
