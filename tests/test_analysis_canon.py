"""Every reliability case of the shared agreement canon, against its published values.

The matrices (units x coders, ``None`` = missing) and the values are copied from
``agreement_canon.json`` (textbook data from the agreement literature); the tests do not read
the shared folder. A published value is kept as printed, so its tolerance follows its digits:
0.0015 for values printed with two or three decimals (``max(0.0015, half a unit of the last
digit)``: 0.27 printed for 0.2727 is right), half a unit of the last digit for longer ones.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

from judgelab.analysis import (
    bennett_s,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    light_kappa,
    scott_pi,
    weighted_cohen_kappa,
)

# Krippendorff (2004) Content Analysis, 2nd ed., binary example
KRIPPENDORFF2004_EX1_BINARY = [
    [1, 0], [1, 1], [0, 1], [0, 0], [0, 0], [0, 1], [0, 0], [0, 1], [0, 0], [0, 0],
]  # fmt: skip

# Krippendorff (2004), nominal a/b/c example
KRIPPENDORFF2004_EX2_NOMINAL = [
    [1, 1], [1, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 3], [3, 3], [3, 3], [3, 3], [3, 3], [3, 3],
]  # fmt: skip

# Krippendorff (2004), 4 coders x 12 units with missing values
KRIPPENDORFF2004_EX3_MISSING = [
    [1, 1, None, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4], [4, 4, 4, 4], [1, 1, 2, 1],
    [2, 2, 2, 2], [None, 5, 5, 5], [None, None, 1, 1], [None, None, 3, None],
]  # fmt: skip

# Wikipedia 'Krippendorff's alpha' worked example; also the krippendorff package docstring
WIKIPEDIA_3X15 = [
    [None, 1, None], [None, None, None], [None, 2, 2], [None, 1, 1], [None, 3, 3], [3, 3, 4], [4, 4, 4], [1, 3, None],
    [2, None, 2], [1, None, 1], [1, None, 1], [3, None, 3], [3, None, 3], [None, None, None], [3, None, 4],
]  # fmt: skip

# Hayes & Krippendorff (2007) Communication Methods and Measures 1(1)
HAYES_KRIPPENDORFF2007_5X40 = [
    [1, 1, 2, None, 2], [1, 1, 0, 1, None], [2, 3, 3, 3, None], [None, 0, 0, None, 0], [0, 0, 0, None, 0],
    [0, 0, 0, None, 0], [1, 0, 2, None, 1], [1, None, 2, 0, None], [2, 2, 2, None, 2], [2, 1, 1, 1, None],
    [None, 1, 0, 0, None], [0, 0, 0, 0, None], [1, 2, 2, 2, None], [3, 3, 2, 2, 3], [1, 1, 1, None, 1],
    [1, 1, 1, None, 1], [2, 1, 2, None, 2], [1, 2, 3, 3, None], [1, 1, 0, 1, None], [0, 0, 0, None, 0],
    [0, 0, 1, 1, None], [0, 0, None, 0, 0], [2, 3, 3, 3, None], [0, 0, 0, 0, None], [1, 2, None, 2, 2],
    [0, 1, 1, 1, None], [0, 0, 0, 1, 0], [1, 2, 1, 2, None], [1, 1, 2, 2, None], [1, 1, 2, None, 2],
    [1, 1, 0, None, 0], [2, 1, 2, 1, None], [2, 2, None, 2, 2], [3, 2, 2, 2, None], [2, 2, 2, None, 2],
    [2, 2, 3, None, 2], [2, 2, 2, None, 2], [2, 2, None, 1, 2], [2, 2, 2, 2, None], [1, 1, 1, None, 1],
]  # fmt: skip

# Fleiss (1971) Psychological Bulletin 76(5)
FLEISS1971_30X6 = [
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5], [2, 2, 2, 4, 4, 4],
    [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4], [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5],
    [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4], [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5],
    [3, 3, 3, 3, 3, 5], [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4], [1, 4, 4, 4, 4, 5],
    [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4], [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
]  # fmt: skip

# Cohen (1960) p.45 table (200 items, 3 categories)
COHEN1960_P45 = [
    [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1],
    [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1],
    [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1],
    [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1],
    [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1],
    [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1],
    [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1],
    [1, 1], [1, 1], [1, 1], [1, 1], [1, 2], [1, 2], [1, 2], [1, 2], [1, 2], [1, 2], [1, 2], [1, 2],
    [1, 2], [1, 2], [1, 2], [1, 2], [1, 2], [1, 2], [1, 3], [1, 3], [1, 3], [1, 3], [1, 3], [1, 3],
    [1, 3], [1, 3], [1, 3], [1, 3], [1, 3], [1, 3], [1, 3], [1, 3], [1, 3], [1, 3], [1, 3], [1, 3],
    [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 2], [2, 2],
    [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2],
    [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2],
    [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2],
    [2, 2], [2, 2], [2, 3], [2, 3], [2, 3], [2, 3], [2, 3], [2, 3], [2, 3], [2, 3], [2, 3], [2, 3],
    [3, 1], [3, 1], [3, 2], [3, 2], [3, 2], [3, 2], [3, 2], [3, 2], [3, 3], [3, 3], [3, 3], [3, 3],
    [3, 3], [3, 3], [3, 3], [3, 3], [3, 3], [3, 3], [3, 3], [3, 3],
]  # fmt: skip

# Gwet (2008) BJMSP 61
GWET2008 = [
    [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [0, 0], [1, 0],
]  # fmt: skip

# Artstein & Poesio (2008) Computational Linguistics 34(4) p.558
ARTSTEIN_POESIO2008_P558 = [
    [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1],
    [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [2, 1], [2, 1], [2, 1], [2, 1],
    [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1],
    [2, 1], [2, 1], [2, 1], [2, 1], [1, 2], [1, 2], [1, 2], [1, 2], [1, 2], [1, 2], [1, 2], [1, 2],
    [1, 2], [1, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2],
    [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2],
    [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2],
    [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2],
    [2, 2], [2, 2], [2, 2], [2, 2],
]  # fmt: skip

# Brennan & Prediger (1981) p.689
BRENNAN_PREDIGER1981_P689 = [
    [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1],
    [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1],
    [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1],
    [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1],
    [1, 1], [1, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1], [2, 1],
    [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 2], [2, 3], [2, 3],
    [2, 3], [2, 3], [2, 3], [2, 3], [2, 3], [2, 3], [2, 3], [2, 3], [3, 1], [3, 1], [3, 1], [3, 1],
    [3, 1], [3, 1], [3, 1], [3, 1], [3, 1], [3, 1], [3, 1], [3, 1], [3, 1], [3, 1], [3, 1], [3, 1],
    [3, 1], [3, 1], [3, 1], [3, 1],
]  # fmt: skip


CASES = {
    "krippendorff2004_ex1_binary": (KRIPPENDORFF2004_EX1_BINARY, {"alpha_nominal": "0.095"}),
    "krippendorff2004_ex2_nominal": (KRIPPENDORFF2004_EX2_NOMINAL, {"alpha_nominal": "0.734"}),
    "krippendorff2004_ex3_missing": (
        KRIPPENDORFF2004_EX3_MISSING,
        {"alpha_nominal": "0.743", "alpha_ordinal": "0.815", "alpha_interval": "0.849", "alpha_ratio": "0.797"},
    ),
    "wikipedia_3x15": (WIKIPEDIA_3X15, {"alpha_nominal": "0.691358", "alpha_interval": "0.810845"}),
    "hayes_krippendorff2007_5x40": (HAYES_KRIPPENDORFF2007_5X40, {"alpha_ordinal": "0.7598"}),
    "fleiss1971_30x6": (FLEISS1971_30X6, {"fleiss_kappa": "0.43"}),
    "cohen1960_p45": (COHEN1960_P45, {"cohen_kappa": "0.492", "gwet_ac1": "0.576"}),
    "gwet2008": (GWET2008, {"gwet_ac1": "0.8658", "scott_pi": "0.6078"}),
    "artstein_poesio2008_p558": (
        ARTSTEIN_POESIO2008_P558,
        {"cohen_kappa": "0.348", "scott_pi": "0.341", "bennett_s": "0.4"},
    ),
    "brennan_prediger1981_p689": (BRENNAN_PREDIGER1981_P689, {"bennett_s": "0.4", "cohen_kappa": "0.27"}),
}
CATEGORIES = {"brennan_prediger1981_p689": [1, 2, 3]}  # the case names its category set


def two_raters(matrix: list[list[object]]) -> tuple[list[object], list[object]]:
    return [row[0] for row in matrix], [row[1] for row in matrix]


COEFFICIENTS = {
    "alpha_nominal": lambda matrix: krippendorff_alpha(matrix, "nominal"),
    "alpha_ordinal": lambda matrix: krippendorff_alpha(matrix, "ordinal"),
    "alpha_interval": lambda matrix: krippendorff_alpha(matrix, "interval"),
    "alpha_ratio": lambda matrix: krippendorff_alpha(matrix, "ratio"),
    "fleiss_kappa": fleiss_kappa,
    "cohen_kappa": lambda matrix: cohen_kappa(*two_raters(matrix)),
    "gwet_ac1": gwet_ac1,
    "scott_pi": scott_pi,
    "bennett_s": bennett_s,
}
PUBLISHED = [(case, key, value) for case, (_, expected) in CASES.items() for key, value in expected.items()]


def tolerance(published: str) -> float:
    """Half a unit of the last printed digit, and at least 0.0015 up to three decimals."""
    decimals = -Decimal(published).as_tuple().exponent
    half_unit = 0.5 * 10.0**-decimals
    return max(0.0015, half_unit) if decimals <= 3 else half_unit + 1e-12


def as_float_array(matrix: list[list[object]]) -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in matrix], dtype=np.float64)


@pytest.mark.parametrize(("case", "coefficient", "published"), PUBLISHED, ids=[f"{c}-{k}" for c, k, _ in PUBLISHED])
def test_published_value(case: str, coefficient: str, published: str) -> None:
    matrix, _ = CASES[case]
    result = COEFFICIENTS[coefficient](matrix)
    assert result.reason is None
    assert result.value == pytest.approx(float(published), abs=tolerance(published))


@pytest.mark.parametrize(("case", "coefficient", "published"), PUBLISHED, ids=[f"{c}-{k}" for c, k, _ in PUBLISHED])
def test_published_value_from_float_array_and_dataframe(case: str, coefficient: str, published: str) -> None:
    matrix, _ = CASES[case]
    expected = COEFFICIENTS[coefficient](matrix).value
    numbers = as_float_array(matrix)
    if coefficient == "cohen_kappa":  # takes two vectors, not a matrix
        assert cohen_kappa(numbers[:, 0], numbers[:, 1]).value == pytest.approx(expected, abs=1e-12)
        return
    assert COEFFICIENTS[coefficient](numbers).value == pytest.approx(expected, abs=1e-12)
    assert COEFFICIENTS[coefficient](pd.DataFrame(numbers)).value == pytest.approx(expected, abs=1e-12)


def test_tolerance_follows_the_printed_digits() -> None:
    assert tolerance("0.27") == 0.005 and tolerance("0.492") == 0.0015 and tolerance("0.4") == 0.05
    assert tolerance("0.7598") == pytest.approx(5e-5, rel=1e-4)
    assert tolerance("0.691358") == pytest.approx(5e-7, rel=1e-4)


def test_brennan_prediger_with_its_category_set() -> None:
    matrix, _ = CASES["brennan_prediger1981_p689"]
    categories = CATEGORIES["brennan_prediger1981_p689"]
    assert bennett_s(matrix, categories=categories).value == pytest.approx(0.4, abs=1e-12)
    # One more possible category lowers chance agreement to 1/4: S = (0.6 - 0.25) / 0.75.
    assert bennett_s(matrix, categories=[*categories, 4]).value == pytest.approx(0.35 / 0.75)


TWO_RATER_CASES = [case for case, (matrix, _) in CASES.items() if len(matrix[0]) == 2]


@pytest.mark.parametrize("case", TWO_RATER_CASES)
def test_two_rater_identities(case: str) -> None:
    """Light's kappa of two raters is Cohen's; Scott's pi is Fleiss' kappa; unweighted is unweighted."""
    matrix, _ = CASES[case]
    cohen = cohen_kappa(*two_raters(matrix)).value
    assert light_kappa(matrix).value == pytest.approx(cohen, abs=1e-12)
    assert weighted_cohen_kappa(*two_raters(matrix), weights=None).value == pytest.approx(cohen, abs=1e-12)
    assert scott_pi(matrix).value == pytest.approx(fleiss_kappa(matrix).value, abs=1e-12)


def test_every_canon_value_is_checked() -> None:
    checked = {(case, key) for case, key, _ in PUBLISHED}
    assert len(checked) == 19 and {key for _, key in checked} <= set(COEFFICIENTS)
    assert len(CASES) == 10
