"""Krippendorff's alpha, the chance-corrected family, adjacent agreement and the bootstrap.

Three kinds of checks: values published by Gwet's irrCAC (its vignette and the test suite of
its Python port, for the handbook's data sets, copied here), oracles on seeded random data
(the ``krippendorff`` package, statsmodels and scikit-learn, to 1e-9; test-only dependencies,
skipped when absent) and plain-loop re-implementations of the formulas in the docstrings.
"""

from __future__ import annotations

import doctest
import itertools
import math

import numpy as np
import pandas as pd
import pytest

from judgelab.analysis import (
    adjacent_agreement,
    agreement,
    agreement_weights,
    alpha_from_counts,
    bennett_s,
    bootstrap,
    bootstrap_alpha_ci,
    bootstrap_ci,
    chance_agreement,
    cohen_kappa,
    exact_agreement,
    fleiss_kappa,
    gwet_ac1,
    gwet_ac2,
    krippendorff,
    krippendorff_alpha,
    light_kappa,
    per_item_agreement,
    scott_pi,
    value_codes,
    weighted_cohen_kappa,
)
from judgelab.analysis.krippendorff import LEVELS
from judgelab.analysis.tables import AGREEMENT_COLUMNS

ORACLE = 1e-9


def columns(*raters: list[object]) -> list[list[object]]:
    """A units x raters matrix from one list of ratings per rater."""
    return [list(row) for row in zip(*raters, strict=True)]


def is_nan(value: float) -> bool:
    return isinstance(value, float) and math.isnan(value)


# -- irrCAC reference values ----------------------------------------------------------------
# Gwet's handbook data sets as shipped by irrCAC; values as asserted (3 decimals) by the test
# suite of its Python port, which reproduces the R package's output.

RAW_4RATERS = columns(
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, None],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, 3],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
)
RAW_5OBSERVERS = columns(
    [1, 1, 2, None, 0, 0, 1, 1, 2, 2, None, 0, 1, 3, 1],
    [1, 1, 3, 0, 0, 0, 0, None, 2, 1, 1, 0, 2, 3, 1],
    [2, 0, 3, 0, 0, 0, 2, 2, 2, 1, 0, 0, 2, 2, 1],
    [None, 1, 3, None, None, None, None, 0, None, 1, 0, 0, 2, 2, None],
    [2, None, None, 0, 0, 0, 1, None, 2, None, None, None, None, 3, 1],
)
RAW_BEN_GERRY = columns(
    ["a", "a", "b", "b", "d", "c", "c", "c", "e", "d", "d", "a"],
    ["b", "a", "b", "b", "b", "c", "c", "c", "e", None, "d", "d"],
)
RAW_G1G2 = columns(
    ["a", "b", "c", "c", "b", "a", "d", "a", "b", None, None, None, "b", "b"],
    ["a", "b", "c", "c", "b", "b", "d", "a", "b", "e", None, None, "b", "a"],
    [None, "c", "c", "c", "b", "c", "d", "b", "b", "e", "a", "c", "c", "c"],
    ["a", "b", "c", "c", "b", "d", "d", "a", "b", "e", "a", None, "b", "b"],
)
RAW_GENDER = columns(
    "a a a a a b b b c a a a a a b".split(),
    "a a a a b a b c c a a a a b a".split(),
    "a b b c a a b b c a b b c a a".split(),
    "c c c c a a b b c c c c c a a".split(),
)
# (data, weights) -> (Gwet's AC1/AC2, Fleiss' kappa = Scott's pi, Brennan-Prediger)
IRRCAC_RAW = [
    ("raw4raters", RAW_4RATERS, None, (0.775, 0.761, 0.773)),
    ("raw4raters", RAW_4RATERS, "linear", (0.859, 0.818, 0.848)),
    ("raw4raters", RAW_4RATERS, "quadratic", (0.914, 0.865, 0.902)),
    ("raw4raters", RAW_4RATERS, "ordinal", (0.899, 0.850, 0.886)),
    ("raw5observers", RAW_5OBSERVERS, None, (0.497, 0.458, 0.487)),
    ("ben_gerry", RAW_BEN_GERRY, None, (0.661, 0.649, 0.659)),
    ("g1g2", RAW_G1G2, None, (0.685, 0.657, 0.679)),
    ("gender", RAW_GENDER, None, (0.208, 0.129, 0.183)),
]


@pytest.mark.parametrize(
    ("data", "weights", "expected"),
    [case[1:] for case in IRRCAC_RAW],
    ids=[f"{case[0]}-{case[2] or 'unweighted'}" for case in IRRCAC_RAW],
)
def test_irrcac_raw_data_values(data: list[list[object]], weights: str | None, expected: tuple[float, ...]) -> None:
    ac, pi, s = expected
    gwet = gwet_ac1(data) if weights is None else gwet_ac2(data, weights)
    assert gwet.value == pytest.approx(ac, abs=5e-4)
    assert scott_pi(data, weights).value == pytest.approx(pi, abs=5e-4)
    assert bennett_s(data, weights).value == pytest.approx(s, abs=5e-4)
    if weights is None:
        assert fleiss_kappa(data).value == pytest.approx(pi, abs=5e-4)


def test_irrcac_weights_match_its_weight_functions() -> None:
    # irrCAC's weighting vignette, linear/ordinal/quadratic.weights(1:3).
    assert agreement_weights([1, 2, 3], "linear")[0].tolist() == [1.0, 0.5, 0.0]
    assert agreement_weights([1, 2, 3], "ordinal")[0].tolist() == pytest.approx([1.0, 2 / 3, 0.0])
    assert agreement_weights([1, 2, 3], "quadratic")[0].tolist() == [1.0, 0.75, 0.0]
    assert agreement_weights(["lo", "mid", "hi"], "linear")[0].tolist() == [1.0, 0.5, 0.0]  # ranks


def test_irrcac_vignette_two_rater_table() -> None:
    # irrCAC overview vignette, cont3x3abstractors (rows: abstractor 1, columns: abstractor 2).
    cells = {("E", "E"): 13, ("A", "A"): 20, ("A", "N"): 7, ("N", "A"): 4, ("N", "N"): 56}
    data = [[a, b] for (a, b), count in cells.items() for _ in range(count)]
    first, second = zip(*data, strict=True)
    assert cohen_kappa(first, second).value == pytest.approx(0.7964094, abs=5e-8)
    assert scott_pi(data).value == pytest.approx(0.7962397, abs=5e-8)
    assert gwet_ac1(data).value == pytest.approx(0.8493305, abs=5e-8)
    assert bennett_s(data).value == pytest.approx(0.835, abs=5e-8)
    assert krippendorff_alpha(data).value == pytest.approx(0.7972585, abs=5e-8)
    assert exact_agreement(data).value == pytest.approx(0.89)


# -- oracles: the krippendorff package ------------------------------------------------------


def random_ratings(seed: int, missing: float = 0.3, n_values: int | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n_units, n_raters = int(rng.integers(5, 80)), int(rng.integers(2, 7))
    n_values = n_values or int(rng.integers(2, 8))
    truth = rng.integers(1, n_values + 1, size=(n_units, 1))
    noise = rng.integers(1, n_values + 1, size=(n_units, n_raters))
    ratings = np.where(rng.random((n_units, n_raters)) < 0.6, truth, noise).astype(np.float64)
    ratings[rng.random(ratings.shape) < missing] = np.nan
    return ratings


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("seed", range(12))
def test_alpha_matches_krippendorff_package(seed: int, level: str) -> None:
    krippendorff = pytest.importorskip("krippendorff")
    ratings = random_ratings(seed)
    expected = krippendorff.alpha(reliability_data=ratings.T, level_of_measurement=level)
    result = krippendorff_alpha(ratings, level)
    assert result.value == pytest.approx(expected, abs=ORACLE)
    assert result.n_units == int(((~np.isnan(ratings)).sum(axis=1) >= 2).sum())
    encoded = value_codes(ratings)
    from_counts = krippendorff.alpha(
        value_counts=encoded.counts(), value_domain=encoded.values, level_of_measurement=level
    )
    assert alpha_from_counts(encoded.counts(), encoded.values, level).value == pytest.approx(from_counts, abs=ORACLE)


@pytest.mark.parametrize("level", ["interval", "ratio"])
@pytest.mark.parametrize("seed", range(4))
def test_alpha_on_continuous_values_matches_krippendorff_package(seed: int, level: str) -> None:
    krippendorff = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(seed)
    truth = rng.uniform(1, 10, size=(60, 1))
    ratings = np.round(truth + rng.normal(0, 1.5, size=(60, 4)), 1).clip(0.1)
    ratings[rng.random(ratings.shape) < 0.2] = np.nan
    expected = krippendorff.alpha(reliability_data=ratings.T, level_of_measurement=level)
    assert krippendorff_alpha(ratings, level).value == pytest.approx(expected, abs=ORACLE)


@pytest.mark.parametrize("seed", range(4))
def test_alpha_on_strings_matches_krippendorff_package(seed: int) -> None:
    krippendorff = pytest.importorskip("krippendorff")
    ratings = random_ratings(seed, n_values=4)
    labels = np.array(["", "very low", "low", "high", "very high"], dtype=object)
    as_objects = np.where(np.isnan(ratings), None, labels[np.nan_to_num(ratings).astype(int)])
    as_strings = np.where(np.isnan(ratings), "nan", labels[np.nan_to_num(ratings).astype(int)]).astype(str)
    nominal = krippendorff.alpha(reliability_data=as_strings.T, level_of_measurement="nominal")
    assert krippendorff_alpha(as_objects, "nominal").value == pytest.approx(nominal, abs=ORACLE)
    domain = ["very low", "low", "high", "very high"]
    ordinal = krippendorff.alpha(reliability_data=as_strings.T, level_of_measurement="ordinal", value_domain=domain)
    assert krippendorff_alpha(as_objects, "ordinal", value_domain=domain).value == pytest.approx(ordinal, abs=ORACLE)
    # Ordinal alpha only needs the order: the numbers behind the labels give the same value.
    assert krippendorff_alpha(ratings, "ordinal").value == pytest.approx(ordinal, abs=ORACLE)


def test_alpha_on_a_large_matrix() -> None:
    # its speed against the reference package is measured in bench/krippendorff_bench.py
    rng = np.random.default_rng(0)
    ratings = rng.integers(1, 6, size=(20_000, 5)).astype(np.float64)
    ratings[rng.random(ratings.shape) < 0.1] = np.nan
    result = krippendorff_alpha(ratings, "ordinal")
    assert result.n_units == int(((~np.isnan(ratings)).sum(axis=1) >= 2).sum())
    assert abs(result.value) < 0.05  # independent raters


def test_value_domain_and_input_types() -> None:
    data = [[1, 1, None], [2, 2, 3], [3, 3, 3], [1, 2, None]]
    expected = krippendorff_alpha(data, "ordinal").value
    frame = pd.DataFrame(data, dtype=object)
    floats = np.array(data, dtype=object).astype(float)
    assert krippendorff_alpha(frame, "ordinal").value == pytest.approx(expected)
    assert krippendorff_alpha(floats, "ordinal").value == pytest.approx(expected)
    assert krippendorff_alpha(data, "ordinal", value_domain=[1, 2, 3, 4, 5]).value == pytest.approx(expected)
    with pytest.raises(ValueError, match="outside value_domain"):
        krippendorff_alpha(data, value_domain=[1, 2])
    with pytest.raises(ValueError, match="numeric"):
        krippendorff_alpha([["a", "b"], ["a", "a"]], "interval")
    with pytest.raises(ValueError, match="value_domain"):
        krippendorff_alpha([["a", "b"], ["a", "a"]], "ordinal")
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha(data, "cardinal")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="2-D"):
        krippendorff_alpha([1, 2, 3])


# -- oracles: statsmodels and scikit-learn ----------------------------------------------------


def two_raters(seed: int, n_values: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n_values, size=200)
    b = np.clip(a + rng.integers(-1, 2, size=200) * (rng.random(200) < 0.5), 0, n_values - 1)
    a[:n_values], b[:n_values] = np.arange(n_values), np.arange(n_values)  # every value used
    return a, b


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
@pytest.mark.parametrize("seed", range(6))
def test_weighted_kappa_matches_sklearn_and_statsmodels(seed: int, weights: str) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    n_values = 3 + seed % 4
    a, b = two_raters(seed, n_values)
    ours = weighted_cohen_kappa(a + 1, b + 1, weights).value
    assert ours == pytest.approx(metrics.cohen_kappa_score(a, b, weights=weights), abs=ORACLE)
    table = np.zeros((n_values, n_values))
    np.add.at(table, (a, b), 1)
    assert ours == pytest.approx(inter_rater.cohens_kappa(table, wt=weights, return_results=False), abs=ORACLE)
    unweighted = inter_rater.cohens_kappa(table, return_results=False)
    assert weighted_cohen_kappa(a, b, None).value == pytest.approx(unweighted, abs=ORACLE)
    assert cohen_kappa(a, b).value == pytest.approx(unweighted, abs=ORACLE)


def test_weighted_kappa_uses_values_and_drops_units_missing_for_either_rater() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    a = np.array([1, 2, 3, 3, 2, 1, None, 2], dtype=object)
    b = np.array([1, 3, 3, 2, 2, 2, 1, None], dtype=object)
    expected = metrics.cohen_kappa_score(a[:6].astype(int), b[:6].astype(int), weights="quadratic")
    result = weighted_cohen_kappa(a, b, "quadratic")
    assert result.value == pytest.approx(expected, abs=ORACLE) and result.n_units == 6
    # Values, not ranks: on a 1/2/5 scale a 1-2 disagreement is a quarter of the range, not half.
    a, b = [1, 2, 5, 5, 1, 2], [2, 2, 5, 5, 1, 1]
    spaced = weighted_cohen_kappa(a, b, "linear").value
    ranked = metrics.cohen_kappa_score([0, 1, 2, 2, 0, 1], [1, 1, 2, 2, 0, 0], weights="linear")
    assert (spaced, ranked) == pytest.approx((0.8125, 0.625))
    assert weighted_cohen_kappa(a, b, "linear", categories=[1, 2, 5]).value == spaced


@pytest.mark.parametrize("seed", range(6))
def test_fleiss_and_randolph_match_statsmodels(seed: int) -> None:
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    ratings = random_ratings(seed, missing=0.0)
    table, _ = inter_rater.aggregate_raters(ratings)
    assert scott_pi(ratings).value == pytest.approx(inter_rater.fleiss_kappa(table, method="fleiss"), abs=ORACLE)
    # Randolph's free-marginal kappa is Bennett's S for many raters.
    assert bennett_s(ratings).value == pytest.approx(inter_rater.fleiss_kappa(table, method="randolph"), abs=ORACLE)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("seed", range(4))
def test_light_kappa_is_the_mean_of_sklearn_pairwise_kappas(seed: int, weights: str | None) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    ratings = random_ratings(seed, missing=0.2, n_values=4)
    ratings[:4, :] = np.arange(1, 5)[:, None]  # every value used by every rater
    kappas = []
    for i, j in itertools.combinations(range(ratings.shape[1]), 2):
        both = ~np.isnan(ratings[:, i]) & ~np.isnan(ratings[:, j])
        kappas.append(metrics.cohen_kappa_score(ratings[both, i], ratings[both, j], weights=weights))
    assert light_kappa(ratings, weights).value == pytest.approx(np.mean(kappas), abs=ORACLE)


# -- the irrCAC formulas as plain loops -----------------------------------------------------


def irrcac_by_loops(matrix: np.ndarray, coefficient: str, weights: str | None) -> float:
    """Gwet's multi-rater coefficients (module docstring of chance_agreement), one unit at a time."""
    units = [[v for v in row if not math.isnan(v)] for row in matrix]
    categories = sorted({v for unit in units for v in unit})
    q, low, high = len(categories), categories[0], categories[-1]

    def w(k: int, m: int) -> float:
        if weights is None:
            return float(k == m)
        if weights == "linear":
            return 1 - abs(categories[k] - categories[m]) / (high - low)
        if weights == "quadratic":
            return 1 - (categories[k] - categories[m]) ** 2 / (high - low) ** 2
        steps = [(d + 1) * d / 2 for d in range(q)]  # ordinal
        return 1 - steps[abs(k - m)] / steps[-1]

    pairable = [unit for unit in units if len(unit) >= 2]
    observed = 0.0
    for unit in pairable:
        counts = [unit.count(c) for c in categories]
        weighted = [sum(w(k, m) * counts[m] for m in range(q)) for k in range(q)]
        observed += sum(counts[k] * (weighted[k] - 1) for k in range(q)) / (len(unit) * (len(unit) - 1))
    observed /= len(pairable)
    rated = [unit for unit in units if unit]
    shares = [sum(unit.count(c) / len(unit) for unit in rated) / len(rated) for c in categories]
    total_weight = sum(w(k, m) for k in range(q) for m in range(q))
    if coefficient == "scott":
        chance = sum(w(k, m) * shares[k] * shares[m] for k in range(q) for m in range(q))
    elif coefficient == "bennett":
        chance = total_weight / q**2
    else:
        chance = total_weight / (q * (q - 1)) * sum(p * (1 - p) for p in shares)
    return (observed - chance) / (1 - chance)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic", "ordinal"])
@pytest.mark.parametrize("seed", range(5))
def test_chance_corrected_family_matches_the_loops(seed: int, weights: str | None) -> None:
    ratings = random_ratings(seed + 100, missing=0.35)
    gwet = gwet_ac1(ratings) if weights is None else gwet_ac2(ratings, weights)
    assert gwet.value == pytest.approx(irrcac_by_loops(ratings, "gwet", weights), abs=ORACLE)
    assert scott_pi(ratings, weights).value == pytest.approx(irrcac_by_loops(ratings, "scott", weights), abs=ORACLE)
    assert bennett_s(ratings, weights).value == pytest.approx(irrcac_by_loops(ratings, "bennett", weights), abs=ORACLE)


def test_unused_categories_count_for_bennett_and_gwet_only() -> None:
    data = [[1, 1], [2, 2], [2, 3], [3, 3], [1, 2]]
    scale = [1, 2, 3, 4, 5]
    assert bennett_s(data, categories=scale).value > bennett_s(data).value
    assert gwet_ac1(data, categories=scale).value != gwet_ac1(data).value
    assert scott_pi(data, categories=scale).value == pytest.approx(scott_pi(data).value)
    assert krippendorff_alpha(data, "ordinal", value_domain=scale).value == pytest.approx(
        krippendorff_alpha(data, "ordinal").value
    )
    custom = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]])
    assert gwet_ac2(data, custom).value == pytest.approx(gwet_ac2(data, "linear").value)
    with pytest.raises(ValueError, match="symmetric"):
        gwet_ac2(data, np.eye(2))
    with pytest.raises(ValueError, match="unknown weights"):
        scott_pi(data, "cubic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ordered categories"):
        gwet_ac2([["a", "b"], ["b", "b"]], "linear")


# -- adjacent agreement ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_adjacent_agreement_counts_all_pairs_within_one_point(seed: int) -> None:
    ratings = random_ratings(seed, missing=0.3).astype(object)
    ratings[pd.isna(ratings)] = None
    close = total = 0
    for row in ratings:
        present = [v for v in row if v is not None]
        for x, y in itertools.combinations(present, 2):
            total += 1
            close += abs(x - y) <= 1
    assert adjacent_agreement(ratings).value == pytest.approx(close / total)
    assert adjacent_agreement(ratings, within=0).value == pytest.approx(exact_agreement(ratings).value)
    assert adjacent_agreement(ratings, within=10).value == 1.0


def test_adjacent_agreement_on_a_rating_scale() -> None:
    assert adjacent_agreement([[4, 5], [3, 5], [1, 1], [2, None]]) == agreement.AgreementResult(2 / 3, 3, None)
    assert adjacent_agreement([[0.5, 1.0], [1.0, 2.0]], within=0.5).value == 0.5
    with pytest.raises(ValueError, match="numeric"):
        adjacent_agreement([["a", "b"]])


# -- degenerate input -----------------------------------------------------------------------

DEGENERATE = {
    "one category": [[2, 2], [2, 2], [2, None]],
    "one rater": [[1], [2], [3]],
    "no overlapping units": [[1, None], [None, 2], [3, None]],
    "all missing": [[None, None], [np.nan, pd.NA]],
    "empty": np.empty((0, 3), dtype=object),
}
MATRIX_COEFFICIENTS = {
    **{f"alpha {level}": (lambda m, level=level: krippendorff_alpha(m, level)) for level in LEVELS},
    "scott_pi": scott_pi,
    "bennett_s": bennett_s,
    "gwet_ac1": gwet_ac1,
    "gwet_ac2": gwet_ac2,
    "light_kappa": light_kappa,
    "light_kappa quadratic": lambda m: light_kappa(m, "quadratic"),
}


@pytest.mark.parametrize("name", list(MATRIX_COEFFICIENTS))
@pytest.mark.parametrize("case", list(DEGENERATE))
def test_degenerate_input_gives_nan_and_a_reason(case: str, name: str) -> None:
    result = MATRIX_COEFFICIENTS[name](DEGENERATE[case])
    assert is_nan(result.value) and result.reason and not result.is_defined


@pytest.mark.parametrize("case", list(DEGENERATE))
def test_degenerate_input_for_two_rater_and_pooled_coefficients(case: str) -> None:
    matrix = np.asarray(DEGENERATE[case], dtype=object)
    if matrix.shape[1] >= 2:
        for weights in (None, "linear", "quadratic"):
            result = weighted_cohen_kappa(matrix[:, 0], matrix[:, 1], weights)
            assert is_nan(result.value) and result.reason
    adjacent = adjacent_agreement(matrix)
    assert adjacent.value == 1.0 if case == "one category" else (is_nan(adjacent.value) and adjacent.reason)
    low, high = bootstrap_ci(matrix, krippendorff_alpha, n_boot=20)
    assert is_nan(low) and is_nan(high)
    assert all(map(is_nan, bootstrap_alpha_ci(matrix, "nominal", n_boot=20)))


def test_a_named_scale_makes_one_used_category_defined_for_gwet_and_bennett() -> None:
    same = [[2, 2], [2, 2], [2, 2]]
    assert gwet_ac1(same, categories=[1, 2, 3]).value == 1.0  # Gwet: no paradox
    assert bennett_s(same, categories=[1, 2, 3]).value == 1.0
    assert is_nan(scott_pi(same, categories=[1, 2, 3]).value)  # chance agreement is 1


# -- bootstrap ------------------------------------------------------------------------------


def test_bootstrap_is_seeded_and_brackets_the_estimate() -> None:
    ratings = random_ratings(3, missing=0.2)
    estimate = krippendorff_alpha(ratings, "ordinal").value
    ordinal = lambda m: krippendorff_alpha(m, "ordinal")  # noqa: E731
    first = bootstrap_ci(ratings, ordinal, n_boot=300, seed=7)
    assert first == bootstrap_ci(ratings, ordinal, n_boot=300, seed=7)
    assert first != bootstrap_ci(ratings, ordinal, n_boot=300, seed=8)
    assert first[0] < estimate < first[1]
    narrower = bootstrap_ci(ratings, ordinal, n_boot=300, alpha=0.5, seed=7)
    assert first[0] < narrower[0] < narrower[1] < first[1]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("seed", range(3))
def test_vectorised_alpha_bootstrap_equals_the_generic_loop(seed: int, level: str) -> None:
    ratings = random_ratings(seed, missing=0.4)
    generic = bootstrap_ci(ratings, lambda m: krippendorff_alpha(m, level), n_boot=200, seed=seed)
    assert bootstrap_alpha_ci(ratings, level, n_boot=200, seed=seed) == pytest.approx(generic, abs=ORACLE)


def test_vectorised_alpha_bootstrap_on_strings_and_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    labels = np.array([None, "a", "b", "c"], dtype=object)
    ratings = labels[np.nan_to_num(random_ratings(5, n_values=3)).astype(int)]
    generic = bootstrap_ci(ratings, krippendorff_alpha, n_boot=100, seed=1)
    assert bootstrap_alpha_ci(ratings, n_boot=100, seed=1) == pytest.approx(generic, abs=ORACLE)
    monkeypatch.setattr(bootstrap, "MAX_BATCH_CELLS", 500)  # many small blocks
    assert bootstrap_alpha_ci(ratings, n_boot=100, seed=1) == pytest.approx(generic, abs=ORACLE)
    monkeypatch.setattr(bootstrap, "MAX_BATCH_CELLS", 10)  # falls back to the loop
    assert bootstrap_alpha_ci(ratings, n_boot=100, seed=1) == pytest.approx(generic, abs=ORACLE)


def test_bootstrap_is_nan_safe() -> None:
    ratings = random_ratings(4, missing=0.3)
    padded = np.vstack([ratings, np.full((5, ratings.shape[1]), np.nan)])
    assert bootstrap_ci(padded, gwet_ac1, n_boot=100) == bootstrap_ci(ratings, gwet_ac1, n_boot=100)
    # Replicates where the coefficient is undefined are left out, floats are accepted.
    calls = iter(range(10_000))
    half_undefined = lambda m: float("nan") if next(calls) % 2 else 0.5  # noqa: E731
    assert bootstrap_ci(ratings, half_undefined, n_boot=50) == (0.5, 0.5)
    # Two units, one of them split: many draws have a single category.
    low, high = bootstrap_ci([[1, 1], [1, 2]], krippendorff_alpha, n_boot=200)
    assert low <= high
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_ci(ratings, gwet_ac1, n_boot=0)
    with pytest.raises(ValueError, match="alpha"):
        bootstrap_ci(ratings, gwet_ac1, alpha=1.5)


# -- per-item table -------------------------------------------------------------------------


def judgment(task: int, annotator: str, item: str, value: object) -> dict[str, object]:
    return {
        "project": "p",
        "task_id": task,
        "annotation_id": task * 100 + ord(annotator[0]),
        "annotator": annotator,
        "source": "human",
        "item": item,
        "value": value,
        "created_at": "2025-01-01T10:00:00Z",
        "was_cancelled": False,
    }


META = {
    "scales": {"SP": {"min": 1, "max": 5}},
    "items": {"SP": {"kind": "ordinal"}, "label": {"kind": "nominal"}},
}
SP = columns([3, 2, 3, 2, 5, 4, 1, 3, 4, 2], [3, 3, 3, 2, 4, 4, 3, 3, 5, 1])
LABELS = columns(list("aabbcabcaa"), list("abbbcabcab"), list("aabbccbcaa"))


def item_table(**options: object) -> pd.DataFrame:
    rows = [
        judgment(task, name, "SP", str(value))
        for task, values in enumerate(SP)
        for name, value in zip(["ann", "bob"], values, strict=True)
    ] + [
        judgment(task, name, "label", value)
        for task, values in enumerate(LABELS)
        for name, value in zip(["ann", "bob", "cy"], values, strict=True)
    ]
    return per_item_agreement(pd.DataFrame(rows), META, **options).set_index("item")


def test_per_item_agreement_keeps_the_original_columns_first() -> None:
    original = ["project", "item", "kind", "n_units", "n_annotators", "n_annotations"]
    assert AGREEMENT_COLUMNS[:10] == [*original, "exact_agreement", "cohen_kappa", "fleiss_kappa", "reason"]


def test_per_item_agreement_ordinal_item_with_two_annotators() -> None:
    row = item_table().loc["SP"]
    sp, scale = np.array(SP, dtype=float), [1, 2, 3, 4, 5]
    assert row.alpha_level == "ordinal" and row.reason == ""
    assert row.adjacent_agreement == pytest.approx(adjacent_agreement(sp).value) == 0.9
    assert row.cohen_kappa_linear == pytest.approx(weighted_cohen_kappa(sp[:, 0], sp[:, 1], "linear").value)
    assert row.cohen_kappa_quadratic == pytest.approx(weighted_cohen_kappa(sp[:, 0], sp[:, 1], "quadratic").value)
    assert row.light_kappa == pytest.approx(row.cohen_kappa)
    assert row.scott_pi == pytest.approx(row.fleiss_kappa)
    assert row.bennett_s == pytest.approx(bennett_s(sp, categories=scale).value)
    assert row.gwet_ac1 == pytest.approx(gwet_ac1(sp, categories=scale).value)
    assert row.gwet_ac2 == pytest.approx(gwet_ac2(sp, "ordinal", categories=scale).value)
    assert row.krippendorff_alpha == pytest.approx(krippendorff_alpha(sp, "ordinal").value)
    assert row.alpha_ci_low < row.krippendorff_alpha < row.alpha_ci_high
    assert (row.alpha_ci_low, row.alpha_ci_high) == pytest.approx(bootstrap_alpha_ci(sp, "ordinal"))


def test_per_item_agreement_nominal_item_with_three_annotators() -> None:
    row = item_table().loc["label"]
    codes = value_codes(LABELS).codes.astype(float)
    assert row.alpha_level == "nominal" and row.n_annotators == 3
    assert is_nan(row.cohen_kappa) and "3 annotators" in row.reason
    for column in ("adjacent_agreement", "cohen_kappa_linear", "cohen_kappa_quadratic", "gwet_ac2"):
        assert is_nan(row[column])
    assert row.light_kappa == pytest.approx(light_kappa(LABELS).value)
    assert row.gwet_ac1 == pytest.approx(gwet_ac1(LABELS).value)
    assert row.krippendorff_alpha == pytest.approx(krippendorff_alpha(codes).value)
    assert row.krippendorff_alpha == pytest.approx(krippendorff_alpha(LABELS).value)


def test_per_item_agreement_options() -> None:
    table = item_table(alpha_levels={"SP": "interval"}, n_boot=0)
    sp = np.array(SP, dtype=float)
    assert table.loc["SP", "alpha_level"] == "interval"
    assert table.loc["SP", "krippendorff_alpha"] == pytest.approx(krippendorff_alpha(sp, "interval").value)
    assert is_nan(table.loc["SP", "alpha_ci_low"]) and is_nan(table.loc["SP", "alpha_ci_high"])
    seeded = item_table(seed=3, n_boot=200, ci_level=0.9).loc["SP"]
    assert (seeded.alpha_ci_low, seeded.alpha_ci_high) == pytest.approx(
        bootstrap_alpha_ci(sp, "ordinal", n_boot=200, alpha=0.1, seed=3)
    )
    with pytest.raises(ValueError, match="alpha level"):
        item_table(alpha_levels={"SP": "cardinal"})


def test_per_item_agreement_ordinal_item_with_text_values_explains_the_gaps() -> None:
    rows = [judgment(0, "ann", "SP", "3"), judgment(0, "bob", "SP", "n/a"), judgment(1, "ann", "SP", "2")]
    rows += [judgment(1, "bob", "SP", "2"), judgment(2, "ann", "SP", "1"), judgment(2, "bob", "SP", "1")]
    row = per_item_agreement(pd.DataFrame(rows), META).iloc[0]
    assert not is_nan(row.exact_agreement) and not is_nan(row.cohen_kappa)
    assert is_nan(row.krippendorff_alpha) and is_nan(row.adjacent_agreement) and is_nan(row.gwet_ac2)
    assert "Krippendorff's alpha" in row.reason and "not numbers" in row.reason


# -- docstrings -----------------------------------------------------------------------------


def test_docstring_examples() -> None:
    for module in (krippendorff, chance_agreement, bootstrap, agreement):
        failures, attempted = doctest.testmod(module)
        assert attempted > 0 and failures == 0, module.__name__


def test_per_item_agreement_single_value_gives_one_reason() -> None:
    rows = [judgment(task, name, "SP", "3") for task in range(4) for name in ("ann", "bob")]
    row = per_item_agreement(pd.DataFrame(rows), META).iloc[0]
    assert row.reason.startswith("every rating has the same value (3), so kappa, pi and alpha are undefined")
    assert is_nan(row.cohen_kappa) and is_nan(row.scott_pi) and is_nan(row.krippendorff_alpha)
    assert row.bennett_s == row.gwet_ac1 == row.gwet_ac2 == row.adjacent_agreement == 1.0  # the 1-5 scale
