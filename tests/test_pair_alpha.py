"""analysis.pair_alpha: each pair's alpha equals Krippendorff's alpha of its two columns, and a
pair's replicates are those of the one-pair unit bootstrap with the same seed."""

from __future__ import annotations

import numpy as np
import pytest

from judgelab.analysis.bootstrap import bootstrap_alpha_ci
from judgelab.analysis.krippendorff import krippendorff_alpha
from judgelab.analysis.pair_alpha import interval, mean_of_pairs, pair_alphas


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_each_pair_is_the_alpha_of_its_two_columns(level):
    rng = np.random.default_rng(1)
    codes = rng.integers(-1, 5, size=(60, 4))  # -1: missing
    values = np.array([1.0, 2.0, 3.0, 5.0, 8.0])
    pairs = [(0, 1), (0, 3), (2, 3), (1, 2)]
    result = pair_alphas(codes, values, pairs, level, n_boot=0)
    for p, (a, b) in enumerate(pairs):
        matrix = np.where(codes[:, [a, b]] >= 0, values[codes[:, [a, b]].clip(0)], np.nan)
        expected = krippendorff_alpha(matrix, level)
        assert result.values[p] == pytest.approx(expected.value)
        assert result.n_units[p] == expected.n_units


def test_replicates_match_the_one_pair_bootstrap():
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 3, size=(80, 2))
    codes[:, 1] = np.where(rng.random(80) < 0.7, codes[:, 0], codes[:, 1])
    result = pair_alphas(codes, np.array([1.0, 2.0, 3.0]), [(0, 1)], "ordinal", n_boot=300, seed=7, by_type=False)
    expected = bootstrap_alpha_ci(codes + 1.0, "ordinal", n_boot=300, seed=7)
    assert interval(result.replicates[:, 0]) == pytest.approx(expected)


def test_drawing_by_type_gives_the_same_values_and_a_like_interval():
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 2, size=(2000, 3))
    codes[:, 1] = np.where(rng.random(2000) < 0.8, codes[:, 0], codes[:, 1])
    pairs = [(0, 1), (0, 2)]
    direct = pair_alphas(codes, np.array([0.0, 1.0]), pairs, n_boot=2000, by_type=False)
    typed = pair_alphas(codes, np.array([0.0, 1.0]), pairs, n_boot=2000)  # 8 types for 2000 units
    assert typed.values == pytest.approx(direct.values) and list(typed.n_units) == list(direct.n_units)
    for p in range(2):
        assert interval(typed.replicates[:, p]) == pytest.approx(interval(direct.replicates[:, p]), abs=0.01)


def test_the_mean_over_pairs_uses_the_same_draws():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 2, size=(50, 3))
    result = pair_alphas(codes, np.array(["no", "yes"], dtype=object), [(0, 1), (0, 2), (1, 2)], n_boot=200)
    point, reps = mean_of_pairs(result, [0, 1])
    assert point == pytest.approx(np.mean(result.values[:2]))
    assert reps == pytest.approx(result.replicates[:, :2].mean(axis=1))
    assert np.isnan(mean_of_pairs(result, [])[0])
