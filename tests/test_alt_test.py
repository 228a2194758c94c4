"""analysis.alt_test against the hand-worked examples of the Alternative Annotator Test (every
intermediate number computed by hand from the paper's formulas, and checked against the
authors' reference code): per-annotator advantage probabilities, t statistics, p-values,
Benjamini-Yekutieli decisions and adjusted p-values, omega and rho."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from judgelab.analysis.alt_test import alt_test, benjamini_yekutieli

# Example 1: discrete labels, accuracy; 3 annotators, 6 items, all annotated by everyone
EX1_HUMANS = {"h1": dict(enumerate("CABACB")), "h2": dict(enumerate("CCAABC")), "h3": dict(enumerate("BACBAA"))}
EX1_JUDGE = dict(enumerate("AABACB"))
# Example 2: 1-5 ratings, negative RMSE
EX2_HUMANS = {"h1": dict(enumerate([4, 2, 5, 1, 3, 4])), "h2": dict(enumerate([4, 3, 5, 2, 3, 5])),
              "h3": dict(enumerate([2, 5, 3, 1, 5, 2]))}  # fmt: skip
EX2_JUDGE = dict(enumerate([4, 3, 5, 3, 3, 4]))


def by_name(result):
    return {a.annotator: a for a in result.annotators}


def test_example_1_accuracy_every_number():
    result = alt_test(EX1_HUMANS, EX1_JUDGE, epsilon=0.2, min_items_per_annotator=1)
    tests = by_name(result)
    expected = {
        # rho_f, rho_h, mean d, t, p, BY-adjusted p, rejected
        "h1": (5 / 6, 1.0, 1 / 6, -0.200000, 0.424680, 0.778580, False),
        "h2": (5 / 6, 2 / 6, -0.5, -2.049390, 0.047859, 0.131611, False),
        "h3": (1.0, 2 / 6, -2 / 3, -4.110961, 0.004628, 0.025452, True),
    }
    for name, (rho_f, rho_h, mean_d, t, p, adjusted, rejected) in expected.items():
        test = tests[name]
        assert test.n_items == 6 and test.test == "t"
        assert test.rho_f == pytest.approx(rho_f) and test.rho_h == pytest.approx(rho_h)
        assert test.mean_d == pytest.approx(mean_d)
        assert test.statistic == pytest.approx(t, abs=1e-6)
        assert test.p_value == pytest.approx(p, abs=1e-6)
        assert test.p_adjusted == pytest.approx(adjusted, abs=1e-6)
        assert test.rejected is rejected
    assert tests["h1"].sd_d == pytest.approx(math.sqrt(1 / 6))
    assert tests["h2"].sd_d == pytest.approx(math.sqrt(0.7))
    assert result.omega == pytest.approx(1 / 3)
    assert result.rho == pytest.approx(0.888889, abs=1e-6)
    assert not result.passed and result.n_items == 6


def test_example_2_negative_rmse_every_number():
    result = alt_test(EX2_HUMANS, EX2_JUDGE, scoring="neg_rmse", epsilon=0.2, min_items_per_annotator=1)
    tests = by_name(result)
    for name in ("h1", "h2"):
        assert tests[name].rho_f == pytest.approx(5 / 6) and tests[name].rho_h == pytest.approx(5 / 6)
        assert tests[name].mean_d == pytest.approx(0.0) and tests[name].sd_d == pytest.approx(math.sqrt(0.4))
        assert tests[name].statistic == pytest.approx(-0.774597, abs=1e-6)
        assert tests[name].p_value == pytest.approx(0.236798, abs=1e-6)
    assert tests["h3"].rho_f == pytest.approx(5 / 6) and tests["h3"].rho_h == pytest.approx(1 / 6)
    assert tests["h3"].statistic == pytest.approx(-2.6, abs=1e-6)
    assert tests["h3"].p_value == pytest.approx(0.024125, abs=1e-6)
    assert not any(t.rejected for t in result.annotators)
    assert result.omega == 0.0 and result.rho == pytest.approx(0.833333, abs=1e-6) and not result.passed


@pytest.mark.parametrize(
    ("epsilon", "omega"), [(0.0, 0.0), (0.1, 1 / 3), (0.15, 1 / 3), (0.2, 1 / 3), (0.3, 1 / 3), (0.5, 2 / 3)]
)
def test_example_1_epsilon_sweep(epsilon, omega):
    result = alt_test(EX1_HUMANS, EX1_JUDGE, epsilon=epsilon, min_items_per_annotator=1)
    assert result.omega == pytest.approx(omega)
    assert result.rho == pytest.approx(0.888889, abs=1e-6)  # rho does not depend on epsilon


def test_example_1_with_wilcoxon_rejects_nothing():
    result = alt_test(EX1_HUMANS, EX1_JUDGE, test="wilcoxon", min_items_per_annotator=1)
    tests = by_name(result)
    assert [tests[n].statistic for n in ("h1", "h2", "h3")] == [6.0, 2.0, 0.0]
    assert [tests[n].p_value for n in ("h1", "h2", "h3")] == pytest.approx([0.265625, 0.046875, 0.015625])
    assert result.omega == 0.0  # 0.015625 > the first BY threshold 0.0090909
    auto = alt_test(EX1_HUMANS, EX1_JUDGE, test="auto", min_items_per_annotator=1)
    assert {a.test for a in auto.annotators} == {"wilcoxon"}  # 6 items < 30


@pytest.mark.parametrize(
    ("p", "rejected", "adjusted"),
    [
        ([0.012, 0.015, 0.5], [True, True, False], [0.04125, 0.04125, 0.916667]),  # step-up
        ([0.0, 0.3, 0.3], [True, False, False], None),
        ([0.009, 0.5, 0.6], [True, False, False], [0.0495, 1.0, 1.0]),  # 0.009 <= 0.0090909
        ([float("nan"), 0.001], [False, True], None),
    ],
)
def test_benjamini_yekutieli(p, rejected, adjusted):
    got_rejected, got_adjusted = benjamini_yekutieli(p, 0.05)
    assert got_rejected.tolist() == rejected
    if adjusted is not None:
        assert got_adjusted.tolist() == pytest.approx(adjusted, abs=1e-6)


def test_benjamini_yekutieli_matches_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.random.default_rng(3).uniform(0, 0.05, size=12)
    ours = benjamini_yekutieli(p, 0.05)
    theirs = multitest.multipletests(p, alpha=0.05, method="fdr_by")
    assert ours[0].tolist() == theirs[0].tolist()
    assert ours[1] == pytest.approx(theirs[1])


def test_a_judge_always_tied_with_an_annotator_wins_against_them():
    """Zero variance of d below epsilon: scipy gives p = 0, so H0 is rejected."""
    humans = {"a": dict(enumerate("xyxyxy")), "b": dict(enumerate("xyxyxy")), "c": dict(enumerate("xxxyyy"))}
    result = alt_test(humans, humans["a"], min_items_per_annotator=1)
    tests = by_name(result)
    assert tests["a"].mean_d == 0.0 and tests["a"].p_value == 0.0 and tests["a"].rejected


def test_the_optimal_judges_of_theorem_1_have_rho_one():
    rng = np.random.default_rng(0)
    labels = pd.DataFrame(rng.integers(0, 3, size=(40, 3)), columns=["h1", "h2", "h3"]).astype(str)
    majority = labels.mode(axis=1)[0]  # ties broken by the smallest label
    unanimous_or_majority = labels.apply(lambda r: r.value_counts().max() >= 2, axis=1)
    result = alt_test(labels[unanimous_or_majority], majority[unanimous_or_majority], min_items_per_annotator=1)
    assert result.rho == 1.0
    ratings = pd.DataFrame(rng.integers(1, 6, size=(40, 3)), columns=["h1", "h2", "h3"]).astype(float)
    mean = alt_test(ratings, ratings.mean(axis=1), scoring="neg_rmse", min_items_per_annotator=1)
    assert mean.rho == 1.0


def test_items_and_annotators_below_the_minimums_are_left_out():
    humans = {
        "a": {i: "x" for i in range(35)},
        "b": {i: "x" if i % 4 else "y" for i in range(35)},
        "pilot": {0: "y"},
        "alone": {99: "x"},  # no other annotator on item 99: the item is dropped
    }
    judge = {i: "x" for i in [*range(35), 99]}
    result = alt_test(humans, judge)
    assert result.n_items == 35
    assert {a.annotator for a in result.annotators} == {"a", "b"}
    assert set(result.skipped) == {"pilot", "alone"}
    long = pd.DataFrame(
        [(item, name, label) for name, labels in humans.items() for item, label in labels.items()],
        columns=["item", "annotator", "value"],
    )
    again = alt_test(long, pd.Series(judge))
    assert [a.p_value for a in again.annotators] == [a.p_value for a in result.annotators]


def test_the_t_test_is_scipys():
    from scipy import stats

    from judgelab.analysis.alt_test import _t_test_less

    rng = np.random.default_rng(5)
    for d in [rng.choice([-1.0, 0.0, 1.0], size=n) for n in (2, 5, 40, 300)]:
        expected = stats.ttest_1samp(d, 0.15, alternative="less")
        assert _t_test_less(d, 0.15) == pytest.approx((expected.statistic, expected.pvalue))
    for d, eps in (([0.0] * 6, 0.2), ([1.0] * 6, 0.2), ([0.0] * 6, 0.0)):
        expected = stats.ttest_1samp(d, eps, alternative="less")
        assert _t_test_less(np.array(d), eps) == pytest.approx((expected.statistic, expected.pvalue), nan_ok=True)
