"""Prediction-powered estimates (``judgelab.analysis.ppi``): plain PPI++ equals ``ppi_py`` to 1e-9,
the adjusted estimator reduces to human only at ``lambda = 0``, is never wider than human only
(a useless judge costs nothing), is unbiased under inverse-probability weighting, and keeps its
coverage on small, lopsided samples. Simulations are small and seeded; nothing is timed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from shared_data import shared_path

from judgelab.analysis import ppi

ALPHA = 0.1


def binary_data(seed: int, n: int = 30, n_unlabeled: int = 200, accuracy: float = 0.8):
    rng = np.random.default_rng(seed)
    y_all = (rng.random(n + n_unlabeled) < 0.35).astype(float)
    flip = rng.random(n + n_unlabeled) > accuracy
    yhat_all = np.where(flip, 1 - y_all, y_all)
    return y_all[:n], yhat_all[:n], yhat_all[n:]


def rating_data(seed: int, n: int = 40, n_unlabeled: int = 300):
    rng = np.random.default_rng(seed)
    latent = rng.normal(3.5, 1.0, n + n_unlabeled)
    y_all = np.clip(np.round(latent + rng.normal(0, 0.5, latent.shape)), 1, 5)
    yhat_all = np.clip(np.round(latent + 0.4 + rng.normal(0, 0.7, latent.shape)), 1, 5)
    return y_all[:n], yhat_all[:n], yhat_all[n:]


DATASETS = [binary_data(0), binary_data(1, n=12, accuracy=0.6), rating_data(2), rating_data(3, n=15)]


# ---- plain PPI++ equals ppi_py ------------------------------------------------------------------


@pytest.mark.parametrize("data", DATASETS)
def test_plain_equals_ppi_py(data) -> None:
    ppi_py = pytest.importorskip("ppi_py")
    y, yhat, unlabeled = data
    lam = float(ppi.ppi_lambda(y, yhat, unlabeled))
    assert 0 <= lam <= 1
    # the point estimate, power-tuned and with a given lambda
    assert float(ppi.ppi_plain(y, yhat, unlabeled)[0]) == pytest.approx(
        float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, unlabeled))), abs=1e-9
    )
    for fixed in (0.0, 0.3, 1.0, lam):
        assert float(ppi.ppi_plain(y, yhat, unlabeled, fixed)[0]) == pytest.approx(
            float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, unlabeled, lam=fixed))), abs=1e-9
        )
    # the interval, power-tuned (lam=None, i.e. "auto") and with lhat
    result = ppi.mean_estimates(y, yhat, unlabeled, method="ppi++", alpha=ALPHA)
    low, high = ppi_py.ppi_mean_ci(y, yhat, unlabeled, alpha=ALPHA)
    assert (result.ppi.low, result.ppi.high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-9)
    assert result.lambda_ == pytest.approx(lam, abs=1e-12)
    fixed = ppi.mean_estimates(y, yhat, unlabeled, method="ppi++", lambda_=lam)
    low, high = ppi_py.ppi_mean_ci(y, yhat, unlabeled, alpha=ALPHA, lam=lam)
    assert (fixed.ppi.low, fixed.ppi.high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-9)
    # human only is the classical CLT interval
    low, high = ppi_py.classical_mean_ci(y, alpha=ALPHA)
    assert (result.human.low, result.human.high) == pytest.approx((float(low), float(high)), abs=1e-9)
    assert result.human.estimate == pytest.approx(float(np.mean(y)), abs=1e-12)


def test_plain_equals_ppi_py_on_storysumm() -> None:
    """A real sample: 20 StorySumm summaries labelled, FABLES' GPT-4 as the judge on the rest."""
    ppi_py = pytest.importorskip("ppi_py")
    folder = shared_path("storysumm")
    gold = json.loads((folder / "storysumm.json").read_text(encoding="utf-8"), strict=False)
    judge = json.loads((folder / "predictions" / "fables-gpt-4-turbo-preview.json").read_text(encoding="utf-8"))
    ids = sorted(gold)
    y_all = np.array([1.0 - int(gold[i]["label"]) for i in ids])
    yhat_all = np.array([1.0 - int(judge[i]["label"]) for i in ids])
    chosen = np.zeros(len(ids), bool)
    chosen[np.random.default_rng(7).choice(len(ids), 20, replace=False)] = True
    y, yhat, unlabeled = y_all[chosen], yhat_all[chosen], yhat_all[~chosen]
    result = ppi.mean_estimates(y, yhat, unlabeled, method="ppi++")
    low, high = ppi_py.ppi_mean_ci(y, yhat, unlabeled, alpha=ALPHA)
    assert (result.ppi.low, result.ppi.high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-9)
    assert result.ppi.estimate == pytest.approx(float(ppi_py.ppi_mean_pointestimate(y, yhat, unlabeled)[0]), abs=1e-9)
    adjusted = ppi.mean_estimates(y, yhat, unlabeled)
    assert adjusted.ppi.se <= adjusted.human.se
    assert adjusted.judge_estimate == pytest.approx(yhat_all.mean())


def test_vectorised_plain_matches_one_at_a_time() -> None:
    y, yhat, unlabeled = rating_data(5)
    stacked = np.stack([y, y[::-1]]), np.stack([yhat, yhat[::-1]])
    est, se, lam = ppi.ppi_plain(*stacked, unlabeled)
    for row in range(2):
        one = ppi.ppi_plain(stacked[0][row], stacked[1][row], unlabeled)
        assert (est[row], se[row], lam[row]) == pytest.approx((float(one[0]), float(one[1]), float(one[2])))


# ---- the adjusted estimator ---------------------------------------------------------------------


@pytest.mark.parametrize("method", ppi.METHODS)
@pytest.mark.parametrize("data", DATASETS)
def test_lambda_zero_is_human_only(data, method: str) -> None:
    y, yhat, unlabeled = data
    result = ppi.mean_estimates(y, yhat, unlabeled, lambda_=0, method=method)
    assert result.lambda_ == 0
    assert (result.ppi.estimate, result.ppi.low, result.ppi.high) == pytest.approx(
        (result.human.estimate, result.human.low, result.human.high), abs=1e-12
    )
    assert result.worth_human_labels == pytest.approx(result.n_labeled)


def test_adjusted_reduces_to_the_textbook_formulas() -> None:
    """No pseudo-task, lambda fixed, uniform sampling: the difference estimator and its variance."""
    y, yhat, unlabeled = rating_data(4)
    pool = np.concatenate([yhat, unlabeled])
    n, big_n, lam = len(y), len(pool), 0.6
    fit = ppi.pool_fit(
        y, yhat, np.ones(n, bool), np.ones(n), pool.mean(), pool.var(ddof=1), big_n, (1, 5), lambda_=lam, pseudo=0
    )
    resid = y - lam * yhat
    assert float(fit.ppi) == pytest.approx(lam * pool.mean() + resid.mean(), abs=1e-12)
    assert float(fit.human) == pytest.approx(y.mean(), abs=1e-12)
    assert float(fit.human_se) == pytest.approx(y.std(ddof=1) / np.sqrt(n), abs=1e-12)
    # superpopulation variance of lam * mean_all(yhat) + mean_lab(y - lam yhat), labelled tasks in the pool
    e = resid - resid.mean()
    expected = (
        e.var(ddof=1) / n + lam**2 * pool.var(ddof=1) / big_n + 2 * lam * np.sum((yhat - pool.mean()) * e) / (n * big_n)
    )
    assert float(fit.ppi_se) ** 2 == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_useless_judge_never_widens(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 60))
    y = (rng.random(n) < 0.3).astype(float) if seed % 2 else rng.integers(1, 6, n).astype(float)
    noise = rng.random(n + 300) if seed % 2 else rng.integers(1, 6, n + 300).astype(float)
    adjusted = ppi.mean_estimates(y, noise[:n], noise[n:])
    assert adjusted.ppi.se <= adjusted.human.se + 1e-12  # the widths before clipping to [lo, hi]
    assert adjusted.worth_human_labels >= n - 1e-9
    plain = ppi.mean_estimates(y, noise[:n], noise[n:], method="ppi++")
    assert plain.ppi.width <= 1.02 * plain.human.width


def test_useful_judge_narrows_and_is_worth_more_labels() -> None:
    y, yhat, unlabeled = binary_data(11, n=40, accuracy=0.95)
    result = ppi.mean_estimates(y, yhat, unlabeled)
    assert result.ppi.width < 0.7 * result.human.width
    assert result.worth_human_labels == pytest.approx(40 * (result.human.se / result.ppi.se) ** 2)
    assert result.worth_human_labels > 80
    assert result.judge_bias == pytest.approx(float(np.mean(yhat - y)))


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_labels_with_no_spread_still_get_an_interval(value: float) -> None:
    """Ten identical labels (all faithful; or all flagged): the classical interval has width 0."""
    y = np.full(10, value)
    yhat = np.array([value] * 8 + [1 - value] * 2)
    unlabeled = np.tile([0.0, 1.0, 1.0, 0.0, 1.0], 20)
    plain = ppi.mean_estimates(y, yhat, unlabeled, method="ppi++")
    assert plain.human.width == 0
    result = ppi.mean_estimates(y, yhat, unlabeled)
    assert result.human.width > 0.1 and result.ppi.width > 0.1
    assert result.human.low <= value <= result.human.high
    assert 0 <= result.human.low and result.human.high <= 1  # clipped to the scale


def test_intervals_stay_on_the_scale() -> None:
    result = ppi.mean_estimates(np.array([1.0, 3]), np.array([1.0, 1]), np.ones(50), bounds=(1, 5))
    assert (result.human.low, result.human.high) == (1.0, 5.0)
    assert 2 * result.human.se * ppi.t_quantile(ALPHA, 1) > 8  # the unclipped interval is far wider
    share = ppi.mean_estimates(np.array([1.0, 0]), np.array([1.0, 1]), np.ones(50))
    assert 0 <= share.human.low < share.human.high <= 1 and 0 <= share.ppi.low < share.ppi.high <= 1


def test_a_share_gets_wilson_score_intervals() -> None:
    """0/1 labels: human only is Wilson's score interval (with the t quantile), whatever the sample."""
    rng = np.random.default_rng(21)
    for n, positives in ((10, 0), (10, 6), (25, 3), (40, 40)):
        y = np.r_[np.ones(positives), np.zeros(n - positives)]
        yhat = np.where(rng.random(n) < 0.8, y, 1 - y)
        unlabeled = (rng.random(200) < 0.4).astype(float)
        result = ppi.mean_estimates(y, yhat, unlabeled)
        q, p = float(ppi.t_quantile(ALPHA, n - 1)), positives / n
        centre = (p + q**2 / (2 * n)) / (1 + q**2 / n)
        half = q / (1 + q**2 / n) * np.sqrt(p * (1 - p) / n + q**2 / (4 * n**2))
        assert (result.human.low, result.human.high) == pytest.approx(
            (max(centre - half, 0), min(centre + half, 1)), abs=1e-12
        )
        assert result.human.width > 0.05  # no spread still gets an interval
        assert result.ppi.width <= result.human.width + 1e-12
    # labels all at 0 or 1 make a score interval; a fractional one (half the annotators gave the label) does not
    fit = ppi.pool_fit(
        np.array([[0.0, 1, 1], [0.0, 0.5, 1]]),
        np.ones((2, 3)),
        np.ones((2, 3), bool),
        np.ones((2, 3)),
        0.5,
        0.25,
        20,
        (0, 1),
    )
    assert fit.score.tolist() == [True, False]


def test_a_good_judge_narrows_a_share_and_keeps_coverage() -> None:
    """12 labels, a label on 30% of 400 tasks, a judge right 90% of the time."""
    rng = np.random.default_rng(22)
    big_n, n, draws = 400, 12, 2000
    y = (rng.random(big_n) < 0.3).astype(float)
    yhat = np.where(rng.random(big_n) < 0.9, y, 1 - y)
    lab = np.argsort(rng.random((draws, big_n)), axis=1)[:, :n]
    fit = ppi.pool_fit(
        y[lab],
        yhat[lab],
        np.ones((draws, n), bool),
        np.ones((draws, n)),
        yhat.mean(),
        yhat.var(ddof=1),
        big_n,
        (0, 1),
        yhat_all=yhat,
    )
    truth = y.mean()
    assert np.mean((fit.ppi_low <= truth) & (truth <= fit.ppi_high)) >= 0.88
    assert np.mean((fit.human_low <= truth) & (truth <= fit.human_high)) >= 0.88
    assert np.mean(fit.ppi_high - fit.ppi_low) < 0.7 * np.mean(fit.human_high - fit.human_low)
    assert np.all(fit.ppi_high - fit.ppi_low <= fit.human_high - fit.human_low + 1e-12)


def test_unseen_spread() -> None:
    pool = np.array([1.0, 1, 4, 4, 5, 5, 5, 5])
    labelled = np.array([[4.0, 5, 5], [1.0, 4, 5], [5.0, 5, 5]])
    floor = ppi.unseen_spread(labelled, np.ones((3, 3), bool), pool, np.array([4.5, 3.0, 5.0]))
    assert floor == pytest.approx([2 * 3.5**2 / 8, 0.0, (2 * 16 + 2 * 1) / 8])
    masked = ppi.unseen_spread(labelled, np.array([[True, True, False]] * 3), pool, np.array([4.5, 3.0, 5.0]))
    assert masked[1] == pytest.approx(4 * 2.0**2 / 8) and masked[0] == pytest.approx(2 * 3.5**2 / 8)  # [1, 4] seen


def test_a_missed_tail_widens_both_intervals() -> None:
    """Ratings of 5 and 4 with a rare tail of 1s the judge sees too: a sample of 40 often has no 1,
    and its classical interval misses; the unseen-range floor keeps both intervals' coverage."""
    rng = np.random.default_rng(23)
    big_n, n, draws = 600, 40, 2000
    y = np.where(rng.random(big_n) < 0.03, 1.0, np.where(rng.random(big_n) < 0.8, 5.0, 4.0))
    yhat = np.where(y == 1, np.where(rng.random(big_n) < 0.85, 1.0, 3.0), np.clip(y + rng.integers(-1, 2, big_n), 1, 5))
    lab = np.argsort(rng.random((draws, big_n)), axis=1)[:, :n]
    truth = y.mean()
    common = (
        y[lab],
        yhat[lab],
        np.ones((draws, n), bool),
        np.ones((draws, n)),
        yhat.mean(),
        yhat.var(ddof=1),
        big_n,
        (1, 5),
    )
    without, fit = ppi.pool_fit(*common), ppi.pool_fit(*common, yhat_all=yhat)
    assert np.mean((without.human_low <= truth) & (truth <= without.human_high)) < 0.85
    assert np.mean((fit.human_low <= truth) & (truth <= fit.human_high)) >= 0.88
    assert np.mean((fit.ppi_low <= truth) & (truth <= fit.ppi_high)) >= 0.88
    missed = (y[lab] == 1).sum(-1) == 0
    assert missed.mean() > 0.2 and (fit.unseen[missed] > 0).mean() > 0.5
    assert np.all(fit.ppi_se <= fit.human_se + 1e-12)


def test_finite_population_correction() -> None:
    """Humans label 30 of 50 tasks: the interval for these 50 tasks' mean is narrower by about
    sqrt(1 - 30 / 50), and with lambda = 0 it is the textbook (1 - n / N) s^2 / n."""
    rng = np.random.default_rng(15)
    yhat_all = rng.integers(1, 6, 50).astype(float)
    y = np.clip(yhat_all[:30] + rng.integers(-1, 2, 30), 1, 5)
    process = ppi.mean_estimates(y, yhat_all[:30], yhat_all=yhat_all, pseudo=0)
    tasks = ppi.mean_estimates(y, yhat_all[:30], yhat_all=yhat_all, pseudo=0, population="tasks")
    assert tasks.ppi.se < 0.75 * process.ppi.se
    assert tasks.human.se == pytest.approx(np.sqrt((1 - 30 / 50) * y.var(ddof=1) / 30), rel=1e-12)
    assert tasks.ppi.se <= tasks.human.se
    resid = y - tasks.lambda_ * yhat_all[:30]
    assert tasks.ppi.se == pytest.approx(np.sqrt((1 - 30 / 50) * resid.var(ddof=1) / 30), rel=1e-12)
    slope = np.cov(y, yhat_all[:30])[0, 1] / yhat_all[:30].var(ddof=1)
    assert tasks.lambda_ == pytest.approx(min(max(slope, 0), 1), rel=1e-12)
    everything = ppi.mean_estimates(y, yhat_all[:30], yhat_all=yhat_all[:30], population="tasks")
    assert everything.human.se == 0 and everything.human.estimate == pytest.approx(y.mean())


def test_pool_estimates_matches_mean_estimates() -> None:
    y, yhat, unlabeled = rating_data(6)
    pool_y = np.concatenate([y, np.full(len(unlabeled), np.nan)])
    pool_yhat = np.concatenate([yhat, unlabeled])
    assert ppi.pool_estimates(pool_y, pool_yhat) == ppi.mean_estimates(y, yhat, yhat_all=pool_yhat)
    assert ppi.pool_estimates(pool_y, pool_yhat) == ppi.mean_estimates(y, yhat, unlabeled)


def test_vectorised_pool_fit_matches_mean_estimates() -> None:
    rng = np.random.default_rng(8)
    y_all = rng.integers(1, 6, 120).astype(float)
    yhat_all = np.clip(y_all + rng.integers(-1, 2, 120), 1, 5)
    pi = ppi.inclusion_probabilities(30, np.abs(yhat_all - 3) + 0.5)
    chosen = rng.random((3, 120)) < pi
    full = chosen.shape
    fit = ppi.pool_fit(
        np.broadcast_to(y_all, full),
        np.broadcast_to(yhat_all, full),
        chosen,
        np.broadcast_to(1 / pi, full),
        yhat_all.mean(),
        yhat_all.var(ddof=1),
        120,
        (1, 5),
    )
    for row in range(3):
        one = ppi.pool_estimates(np.where(chosen[row], y_all, np.nan), yhat_all, pi, bounds=(1, 5))
        assert one.ppi.estimate == pytest.approx(fit.ppi[row], abs=1e-12)
        assert one.lambda_ == pytest.approx(fit.lambda_[row], abs=1e-12)
        assert one.ppi.se == pytest.approx(fit.ppi_se[row], abs=1e-12)
        half = ppi.t_quantile(ALPHA, fit.ppi_df[row]) * fit.ppi_se[row]
        assert one.ppi.high == pytest.approx(min(fit.ppi[row] + half, 5), abs=1e-12)
        assert one.ppi.low == pytest.approx(max(fit.ppi[row] - half, 1), abs=1e-12)


def test_bad_input_is_refused() -> None:
    y, yhat, unlabeled = rating_data(9)
    with pytest.raises(ValueError, match="one of them"):
        ppi.mean_estimates(y, yhat)
    with pytest.raises(ValueError, match="same length"):
        ppi.mean_estimates(y, yhat[:-1], unlabeled)
    with pytest.raises(ValueError, match="inclusion"):
        ppi.mean_estimates(y, yhat, unlabeled, inclusion=np.zeros(len(y)))
    with pytest.raises(ValueError, match="population"):
        ppi.mean_estimates(y, yhat, unlabeled, population="everyone")
    with pytest.raises(ValueError, match="uniform sampling"):
        ppi.mean_estimates(y, yhat, unlabeled, method="ppi++", inclusion=np.full(len(y), 0.1))
    with pytest.raises(ValueError, match="finite"):
        ppi.mean_estimates(np.r_[y[:-1], np.nan], yhat, unlabeled)


# ---- sampling and inverse-probability weighting --------------------------------------------------


def test_inclusion_probabilities() -> None:
    rng = np.random.default_rng(10)
    p = rng.random(500)
    uncertainty = np.sqrt(p * (1 - p))
    pi = ppi.inclusion_probabilities(60, uncertainty, floor=0.2)
    assert pi.sum() == pytest.approx(60)
    assert pi.min() >= 0.2 * 60 / 500 - 1e-12 and pi.max() <= 1
    assert np.corrcoef(pi, uncertainty)[0, 1] > 0.99
    capped = ppi.inclusion_probabilities(400, uncertainty, floor=0.0)
    assert capped.sum() == pytest.approx(400) and capped.max() == pytest.approx(1.0)
    strata = (p > 0.8).astype(int) + (p > 0.95)
    pi = ppi.inclusion_probabilities(50, uncertainty, design="stratified", strata=strata)
    assert pi.sum() == pytest.approx(50)
    chosen = ppi.draw_sample(pi, rng, strata=strata)
    for h in np.unique(strata):
        assert chosen[strata == h].sum() == round(pi[strata == h].sum()) >= 1
    assert ppi.draw_sample(np.full(500, 0.1), rng).sum() == 50


@pytest.mark.parametrize("design", ["active", "stratified"])
def test_inverse_probability_weighting_is_unbiased(design: str) -> None:
    """Tasks the judge is unsure of are labelled more often; weighting by 1 / pi removes the bias
    that the plain mean of the labelled tasks has (lambda fixed, no pseudo-task)."""
    rng = np.random.default_rng(12)
    big_n, draws = 400, 4000
    p = rng.beta(0.4, 1.2, big_n)  # the judge's probability of the label
    y = (rng.random(big_n) < p).astype(float)
    yhat = p
    uncertainty = np.sqrt(p * (1 - p))
    strata = np.digitize(uncertainty, [0.2, 0.4])
    pi = ppi.inclusion_probabilities(40, uncertainty, design=design, strata=strata, floor=0.2)
    if design == "active":
        chosen = rng.random((draws, big_n)) < pi
    else:
        chosen = np.stack([ppi.draw_sample(pi, rng, strata=strata) for _ in range(draws)])
    full = chosen.shape
    fit = ppi.pool_fit(
        np.broadcast_to(y, full),
        np.broadcast_to(yhat, full),
        chosen,
        np.broadcast_to(1 / pi, full),
        yhat.mean(),
        yhat.var(ddof=1),
        big_n,
        (0, 1),
        lambda_=0.5,
        pseudo=0,
    )
    truth = y.mean()
    naive = np.array([y[c].mean() for c in chosen[:500]])
    assert naive.mean() - truth > 0.05  # the labelled tasks alone over-represent the uncertain ones
    # the weighted mean residual (Hajek form) has a bias of order 1 / n: below a tenth of the error's sd
    for error in (fit.ppi - truth, fit.human - truth):
        assert abs(error.mean()) < 0.1 * error.std()


def test_active_sampling_keeps_coverage() -> None:
    rng = np.random.default_rng(13)
    big_n, draws = 600, 2000
    p = rng.beta(0.5, 0.5, big_n)
    y = (rng.random(big_n) < p).astype(float)
    pi = ppi.inclusion_probabilities(40, np.sqrt(p * (1 - p)))
    chosen = rng.random((draws, big_n)) < pi
    full = chosen.shape
    fit = ppi.pool_fit(
        np.broadcast_to(y, full),
        np.broadcast_to(p, full),
        chosen,
        np.broadcast_to(1 / pi, full),
        p.mean(),
        p.var(ddof=1),
        big_n,
        (0, 1),
    )
    assert np.mean((fit.ppi_low <= y.mean()) & (y.mean() <= fit.ppi_high)) >= 0.87


def test_coverage_at_small_budgets_with_few_positives() -> None:
    """15 labels, a label on 8% of 300 tasks: the classical interval's coverage collapses (often
    no positive at all in the sample); the adjusted intervals keep theirs."""
    rng = np.random.default_rng(14)
    big_n, n, draws = 300, 15, 2000
    y = (rng.random(big_n) < 0.08).astype(float)
    yhat = np.where(rng.random(big_n) < 0.85, y, 1 - y)
    order = np.argsort(rng.random((draws, big_n)), axis=1)
    lab, unl = order[:, :n], order[:, n:]
    truth = y.mean()
    z = 1.6448536269514722
    est, se, _ = ppi.ppi_plain(y[lab], yhat[lab], yhat[unl])
    plain_coverage = np.mean(np.abs(est - truth) <= z * se)
    fit = ppi.pool_fit(
        y[lab], yhat[lab], np.ones((draws, n), bool), np.ones((draws, n)), yhat.mean(), yhat.var(ddof=1), big_n, (0, 1)
    )
    assert plain_coverage < 0.85
    assert np.mean((fit.ppi_low <= truth) & (truth <= fit.ppi_high)) >= 0.88
    assert np.mean((fit.human_low <= truth) & (truth <= fit.human_high)) >= 0.88
    assert np.all(fit.ppi_se <= fit.human_se + 1e-12)
