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
  (active sampling, Zrnic & Candès, ICML 2024), and three small-sample corrections that apply
  to the human-only interval too, so the two stay comparable:

  1. *pseudo-observations*, after Agresti & Coull's "add z^2/2 successes and z^2/2 failures",
     generalised to a bounded scale ``[lo, hi]``: one pseudo-task, half with ``y = lo`` and half
     with ``y = hi``, both with the judge's mean prediction, joins the labelled tasks
     (``pseudo=`` sets its weight; Agresti & Coull's ``z^2`` is wider). A sample with no spread
     (ten "faithful" labels, fifty ratings of 5) then still gets an honest interval, and a
     sample that missed a rare tail is pulled back toward the middle;
  2. Student's ``t`` quantile with ``n - 1`` degrees of freedom (``n`` real labels);
  3. ``lambda`` minimises the estimated variance of the same (augmented) sample, and at
     ``lambda = 0`` that variance is exactly the human-only one, so the prediction-powered
     interval is never wider than the human-only interval: a useless judge costs nothing.

  Intervals are clipped to ``[lo, hi]``. Estimating ``lambda`` on the same labels that measure the
  residuals makes the residual variance slightly optimistic; at 10-20 labels the ``t`` quantile
  covers that. On the data of ``bench/ppi_estimates.py``, a one-degree-of-freedom penalty for
  the fitted ``lambda`` moved coverage by under 0.01, and two-fold cross-fitting (each half's
  residuals with the other half's ``lambda``) raised it by about 0.01 but made the interval
  wider (Fluency at 50 labels: 0.91 of the human-only width instead of 0.77; FABLES' GPT-4 on
  StorySumm at 10: 1.00 instead of 0.92), so neither is used.

Variance of the adjusted estimator (superpopulation, each task labelled independently with
probability ``pi_i``, Zrnic & Candès's ``Var(Z_i) / N`` with
``Z_i = c + lambda * yhat_i + xi_i (y_i - c - lambda * yhat_i) / pi_i`` and ``c`` the weighted
mean residual): with ``e_i = (y_i - ybar) - lambda (yhat_i - hbar)``, weights ``v_i`` normalised
to mean 1 over the labelled tasks and ``u_i = v_i N / n``,

``Var = sum_lab v_i^2 e_i^2 / (n' (n' - 1)) + lambda^2 var_all(yhat) / N
+ 2 lambda sum_lab u_i (yhat_i - mean_all(yhat)) e_i / N^2``,

a quadratic ``a0 - 2 lambda a1 + lambda^2 a2`` minimised at ``lambda = a1 / a2``. With uniform
sampling, no pseudo-tasks and ``N -> inf`` this is PPI++'s ``var(y - lambda yhat) / n``. The
estimate targets the mean of the process that produced the tasks; as an interval for the mean
of the ``N`` tasks themselves it is conservative, and ``population="tasks"`` applies the
finite-population correction instead (:func:`pool_fit`'s ``finite``).

:func:`inclusion_probabilities` and :func:`draw_sample` choose the tasks for humans: uniform,
stratified, or active (more often where the judge is unsure, with a floor).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

METHODS = ("adjusted", "ppi++")
POPULATIONS = ("process", "tasks")


@dataclass(frozen=True)
class Interval:
    """An estimate with its ``(low, high)`` confidence interval and standard error.

    ``estimate +- quantile * se``; the adjusted method clips ``low`` and ``high`` to the scale's
    bounds (the mean cannot leave them), so ``width`` may be less than ``2 * quantile * se``.
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
    pseudo: float = 1.0,
    finite: bool = False,
) -> PoolFit:
    """The adjusted estimator on labelled tasks (last axis; ``mask`` marks the real ones).

    ``weights`` are ``1 / pi_i`` (any positive scale); ``yhat_mean`` and ``yhat_var`` are the
    mean and variance (``ddof=1``) of the judge over all ``n_total`` tasks; ``pseudo`` is the
    total weight of the pseudo-tasks (half at each bound). See the module
    docstring for the variance. ``lambda_="auto"`` power-tunes; a number fixes it.

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
    y, yhat, weights = (np.asarray(a, dtype=float) for a in (y, yhat, weights))
    m = np.asarray(mask, dtype=bool)
    y, yhat, w = np.where(m, y, 0.0), np.where(m, yhat, 0.0), np.where(m, weights, 0.0)
    lo, hi = (float(b) for b in bounds)
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
    y_lo, y_hi, h_p = lo - ybar, hi - ybar, yhat_mean - hbar
    if finite:  # 1 - pi_i per labelled task; the pseudo-tasks get the mean sampling fraction's
        with np.errstate(divide="ignore"):
            v2 = v**2 * np.where(m, np.clip(1 - 1 / np.where(m, w, 1.0), 0.0, 1.0), 0.0)
        kp_sq = kp * unlabeled_share
    else:
        v2, kp_sq = v**2, kp
    a_yy = (v2 * yt**2).sum(-1) + kp_sq * (y_lo**2 + y_hi**2)
    a_yh = (v2 * yt * ht).sum(-1) + kp_sq * h_p * (y_lo + y_hi)
    a_hh = (v2 * ht**2).sum(-1) + 2 * kp_sq * h_p**2
    with np.errstate(invalid="ignore", divide="ignore"):
        denom = n_aug * (n_aug - 1)
        centred = np.where(m, yhat - yhat_mean, 0.0)
        c_y = (u * centred * yt).sum(-1) / big_n**2
        c_h = (u * centred * ht).sum(-1) / big_n**2
        spread = yhat_var / big_n
        if finite:
            c_y, c_h, spread = 0.0 * c_y, 0.0 * c_h, 0.0
        a0 = a_yy / denom
        a1 = a_yh / denom - c_y
        a2 = a_hh / denom + spread - 2 * c_h
        if isinstance(lambda_, str):
            lam = np.clip(np.where(a2 > 0, a1 / a2, 0.0), 0.0, 1.0)
        else:
            lam = np.broadcast_to(np.asarray(float(lambda_)), n.shape)
        var_ppi = a0 - 2 * lam * a1 + lam**2 * a2
    if isinstance(lambda_, str):  # rounding, or a2 <= 0 on degenerate data: never worse than human only
        worse = ~(var_ppi < a0) | (lam <= 0)
        lam = np.where(worse, 0.0, lam)
        var_ppi = np.where(worse, a0, var_ppi)
    human = ybar
    ppi = lam * yhat_mean + ybar - lam * hbar
    df = np.maximum(n - 1, 1)
    return PoolFit(n, human, np.sqrt(np.maximum(a0, 0)), df, ppi, np.sqrt(np.maximum(var_ppi, 0)), df, lam)


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
    pseudo: float = 1.0,
    population: str = "process",
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

    Human only: ``ybar' = (sum_lab v_i y_i + (lo + hi) / 2) / (n + 1)`` (one pseudo-task, half at
    each bound), ``ybar' +- t_{n-1} s / sqrt(n + 1)``; prediction-powered:
    ``theta = lambda mean_all(yhat) + mean'(y - lambda yhat)``; worth
    ``n * (width_human / width_ppi) ** 2`` human labels (widths before the adjusted method clips
    the intervals to ``bounds``).

    >>> y = np.array([1.0, 1, 0, 1, 0, 1, 1, 0, 1, 1])
    >>> judge = np.array([1.0, 1, 0, 1, 0, 1, 0, 0, 1, 1])
    >>> others = np.tile([1.0, 0, 1, 1, 1], 18)
    >>> r = mean_estimates(y, judge, others)
    >>> round(r.human.estimate, 3), round(r.human.width, 3), round(r.ppi.estimate, 3), round(r.ppi.width, 3)
    (0.682, 0.54, 0.805, 0.383)
    >>> round(r.lambda_, 2), round(r.judge_bias, 2), round(r.worth_human_labels, 1)
    (0.75, -0.1, 19.9)
    >>> mean_estimates(y, judge, others, lambda_=0).ppi == mean_estimates(y, judge, others).human
    True
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
    n, n_total = len(y), len(pool)
    if method == "ppi++":
        if inclusion is not None or population != "process":
            raise ValueError('method="ppi++" assumes uniform sampling from a process: use method="adjusted"')
        z = float(stats.norm.ppf(1 - alpha / 2))
        est, se, lam = ppi_plain(y, yhat, unlabeled, lambda_)
        human, human_se = classical_plain(y)
        human_i, ppi_i = _interval(human, human_se, z), _interval(est, se, z)
        bias = float(np.mean(yhat - y))
    else:
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
        )
        q = float(t_quantile(alpha, fit.human_df))
        human_i = _interval(fit.human, fit.human_se, q, (lo, hi))
        ppi_i = _interval(fit.ppi, fit.ppi_se, q, (lo, hi))
        lam = fit.lambda_
        bias = float(np.sum((yhat - y) / pi) / np.sum(1 / pi))
    worth = n * (human_i.se / ppi_i.se) ** 2 if ppi_i.se > 0 else float("inf")
    return MeanEstimates(alpha, method, n, n_total, human_i, float(pool.mean()), bias, ppi_i, float(lam), float(worth))


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
            for h in np.argsort(-remainder)[:extra]:
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
