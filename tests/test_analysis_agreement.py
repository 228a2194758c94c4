"""Agreement coefficients, reliability matrices and per-item agreement.

Textbook matrices are copied from the agreement literature (``agreement_canon.json`` in the
shared data); published values are rounded, so they are compared within 0.0015.
"""

from __future__ import annotations

import doctest
import itertools
import math

import numpy as np
import pandas as pd
import pytest

from judgelab.analysis import (
    AgreementResult,
    agreement,
    cohen_kappa,
    exact_agreement,
    fleiss_kappa,
    item_kind,
    per_item_agreement,
    ratings_matrix,
)
from judgelab.configs import items

PUBLISHED = 0.0015

# Cohen (1960) p. 45: 200 items, 3 categories; (rater A, rater B) -> count. kappa = 0.492.
COHEN_1960_CELLS = {
    (1, 1): 88, (1, 2): 14, (1, 3): 18,
    (2, 1): 10, (2, 2): 40, (2, 3): 10,
    (3, 1): 2, (3, 2): 6, (3, 3): 12,
}  # fmt: skip
# Artstein & Poesio (2008) p. 558: kappa = 0.348, Scott's pi = 0.341.
ARTSTEIN_POESIO_2008_CELLS = {(1, 1): 20, (1, 2): 10, (2, 1): 20, (2, 2): 50}
# Gwet (2008): Scott's pi = 0.6078 (Fleiss' kappa with two raters).
GWET_2008 = [[1, 1]] * 8 + [[0, 0], [1, 0]]
# Fleiss (1971) Psychological Bulletin 76(5): 30 patients x 6 psychiatrists, 5 diagnoses.
FLEISS_1971 = [
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5],
    [2, 2, 2, 4, 4, 4], [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4],
    [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5], [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4],
    [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5], [3, 3, 3, 3, 3, 5],
    [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4],
    [1, 4, 4, 4, 4, 5], [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
]  # fmt: skip
# Krippendorff (2004): 4 coders x 12 units with missing values (None).
KRIPPENDORFF_2004_MISSING = [
    [1, 1, None, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
    [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [None, 5, 5, 5], [None, None, 1, 1],
    [None, None, 3, None],
]  # fmt: skip


def rater_pairs(cells: dict[tuple[int, int], int]) -> tuple[list[int], list[int]]:
    """Two rating vectors from a contingency table {(a, b): count}."""
    pairs = [pair for pair, count in cells.items() for _ in range(count)]
    return [a for a, _ in pairs], [b for _, b in pairs]


def is_nan(value: float) -> bool:
    return isinstance(value, float) and math.isnan(value)


# -- textbook values ------------------------------------------------------------------------


def test_cohen_1960_published_kappa() -> None:
    a, b = rater_pairs(COHEN_1960_CELLS)
    result = cohen_kappa(a, b)
    assert result.value == pytest.approx(0.492, abs=PUBLISHED)
    assert result.n_units == 200 and result.reason is None


def test_cohen_1960_exact_agreement_is_the_diagonal_share() -> None:
    a, b = rater_pairs(COHEN_1960_CELLS)
    result = exact_agreement(np.column_stack([a, b]))
    assert result.value == pytest.approx((88 + 40 + 12) / 200)
    assert result.n_units == 200


def test_artstein_poesio_2008_kappa_and_scott_pi() -> None:
    a, b = rater_pairs(ARTSTEIN_POESIO_2008_CELLS)
    assert cohen_kappa(a, b).value == pytest.approx(0.348, abs=PUBLISHED)
    assert fleiss_kappa(np.column_stack([a, b])).value == pytest.approx(0.341, abs=PUBLISHED)


def test_gwet_2008_scott_pi_is_fleiss_with_two_raters() -> None:
    assert fleiss_kappa(GWET_2008).value == pytest.approx(0.6078, abs=0.00015)


def test_fleiss_1971_published_kappa() -> None:
    result = fleiss_kappa(FLEISS_1971)
    assert result.value == pytest.approx(0.430, abs=PUBLISHED)
    assert result.n_units == 30


def test_fleiss_with_missing_ratings_matches_hand_computation() -> None:
    # p_a = (1 + 1/3 + 1 + 1) / 4; pi = (7/12, 5/12); kappa = 23/35 (see the docstring).
    result = fleiss_kappa([[1, 1, 1], [1, 2, 2], [2, 2, 2], [1, 1, None]])
    assert result.value == pytest.approx(23 / 35)
    assert result.n_units == 4


def test_fleiss_with_missing_ratings_matches_a_loop_implementation() -> None:
    assert fleiss_kappa(KRIPPENDORFF_2004_MISSING).value == pytest.approx(
        fleiss_kappa_by_loops(KRIPPENDORFF_2004_MISSING)
    )
    # The last unit has one rating: it counts in the category shares only.
    assert fleiss_kappa(KRIPPENDORFF_2004_MISSING).n_units == 11


def fleiss_kappa_by_loops(matrix: list[list[object]]) -> float:
    """Gwet's (2014) Fleiss' kappa for missing ratings, written as plain loops."""
    units = [[v for v in row if v is not None] for row in matrix]
    categories = sorted({v for unit in units for v in unit})
    pairable = [unit for unit in units if len(unit) >= 2]
    observed = sum(
        sum(unit.count(c) * (unit.count(c) - 1) for c in categories) / (len(unit) * (len(unit) - 1))
        for unit in pairable
    ) / len(pairable)
    rated = [unit for unit in units if unit]
    shares = [sum(unit.count(c) / len(unit) for unit in rated) / len(rated) for c in categories]
    expected = sum(share**2 for share in shares)
    return (observed - expected) / (1 - expected)


# -- oracles on random data -----------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_cohen_kappa_matches_sklearn(seed: int) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(seed)
    n_categories = int(rng.integers(2, 6))
    a = rng.integers(0, n_categories, size=60)
    b = np.where(rng.random(60) < 0.6, a, rng.integers(0, n_categories, size=60))
    expected = metrics.cohen_kappa_score(a, b)
    assert cohen_kappa(a, b).value == pytest.approx(expected, abs=1e-12)
    labels = np.array(["Consistent", "Inconsistent", "N/A", "x", "y"], dtype=object)
    assert cohen_kappa(labels[a], labels[b]).value == pytest.approx(expected, abs=1e-12)


def test_cohen_kappa_drops_units_missing_for_either_rater_like_sklearn_on_the_rest() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(7)
    a = rng.integers(1, 4, size=40).astype(object)
    b = rng.integers(1, 4, size=40).astype(object)
    a[:5] = None
    b[5:9] = np.nan
    both = np.arange(40) >= 9
    result = cohen_kappa(a, b)
    assert result.n_units == 31
    assert result.value == pytest.approx(metrics.cohen_kappa_score(a[both].astype(int), b[both].astype(int)), abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_fleiss_kappa_matches_statsmodels_on_complete_data(seed: int) -> None:
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = np.random.default_rng(seed)
    n_raters = int(rng.integers(2, 7))
    n_categories = int(rng.integers(2, 6))
    truth = rng.integers(0, n_categories, size=(50, 1))
    noise = rng.integers(0, n_categories, size=(50, n_raters))
    ratings = np.where(rng.random((50, n_raters)) < 0.5, truth, noise)
    table, _ = inter_rater.aggregate_raters(ratings)
    expected = inter_rater.fleiss_kappa(table, method="fleiss")
    assert fleiss_kappa(ratings).value == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_exact_agreement_equals_counting_all_pairs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ratings = rng.integers(1, 4, size=(30, 4)).astype(object)
    ratings[rng.random((30, 4)) < 0.35] = None
    agreeing = total = units = 0
    for row in ratings:
        present = [v for v in row if v is not None]
        if len(present) >= 2:
            units += 1
        for x, y in itertools.combinations(present, 2):
            total += 1
            agreeing += x == y
    result = exact_agreement(ratings)
    assert result.value == pytest.approx(agreeing / total)
    assert result.n_units == units


def test_docstring_examples() -> None:
    for module in (agreement, items):
        failures, attempted = doctest.testmod(module)
        assert attempted > 0 and failures == 0


# -- degenerate and malformed input ---------------------------------------------------------


def test_single_category_gives_nan_kappa_with_reason_but_full_exact_agreement() -> None:
    same = [["3", "3"], ["3", "3"], ["3", "3"]]
    assert exact_agreement(same) == AgreementResult(1.0, 3, None)
    cohen = cohen_kappa(["3"] * 3, ["3"] * 3)
    fleiss = fleiss_kappa(same)
    assert is_nan(cohen.value) and cohen.n_units == 3 and "same single value" in cohen.reason
    assert is_nan(fleiss.value) and fleiss.n_units == 3 and "same value" in fleiss.reason


def test_raters_each_stuck_on_a_different_value_give_kappa_zero() -> None:
    assert cohen_kappa([3, 3, 3], [2, 2, 2]).value == pytest.approx(0.0)


def test_fewer_than_two_raters() -> None:
    one_rater = [[1], [2], [3]]
    for result in (exact_agreement(one_rater), fleiss_kappa(one_rater)):
        assert is_nan(result.value) and result.n_units == 0
        assert "at least two raters" in result.reason


def test_no_overlapping_units() -> None:
    disjoint = [[1, None], [None, 2], [3, None]]
    for result in (
        exact_agreement(disjoint),
        fleiss_kappa(disjoint),
        cohen_kappa(*zip(*disjoint, strict=True)),
    ):
        assert is_nan(result.value) and result.n_units == 0 and result.reason


def test_empty_and_all_missing_matrices() -> None:
    for matrix in (np.empty((0, 3), dtype=object), [[None, np.nan], [pd.NA, None]]):
        for result in (exact_agreement(matrix), fleiss_kappa(matrix)):
            assert is_nan(result.value) and result.n_units == 0 and result.reason
    assert is_nan(cohen_kappa([], []).value)


def test_missing_markers_and_value_identity() -> None:
    # None, NaN and pd.NA are missing; 3 and 3.0 are one category; "3" and 3 are two.
    assert exact_agreement([[3, 3.0, None], [1, np.nan, pd.NA]]).n_units == 1
    assert exact_agreement([[3, 3.0]]).value == 1.0
    assert exact_agreement([["3", 3]]).value == 0.0


def test_malformed_input_raises() -> None:
    with pytest.raises(ValueError, match="equal length"):
        cohen_kappa([1, 2], [1])
    with pytest.raises(ValueError, match="2-D"):
        fleiss_kappa([1, 2, 3])


# -- item kinds -----------------------------------------------------------------------------

AUGMENTATION_META = {
    "scales": {"SP": {"min": 1, "max": 3}, "SC": {"min": 1, "max": 3}},
    "items": {"SP": {"kind": "ordinal"}, "flags": {"kind": "nominal"}, "notes": {"kind": "text"}},
}
STORY_META = {
    "items": {
        "verdict_{i}": {"kind": "nominal", "item": "line_{i}"},
        "explanation_{i}": {"kind": "text", "item": "line_{i}.explanation"},
        "swap_{i}": {"kind": "nominal", "item": "alternate_{i}.swap"},
        "swap_explanation_{i}": {"kind": "text", "item": "alternate_{i}.explanation"},
    }
}
HOTEL_META = {
    "scales": {"impression": {"min": 1, "max": 7}},
    "items": {"impression": {"kind": "ordinal"}, "no_errors": {"kind": "flag"}},
}


@pytest.mark.parametrize(
    ("meta", "item", "kind"),
    [
        (AUGMENTATION_META, "SP", "ordinal"),
        (AUGMENTATION_META, "SC", "ordinal"),
        (AUGMENTATION_META, "flags", "nominal"),
        (AUGMENTATION_META, "notes", "text"),
        (STORY_META, "line_3", "nominal"),
        (STORY_META, "line_12", "nominal"),
        (STORY_META, "line_3.explanation", "text"),
        (STORY_META, "alternate_2.swap", "nominal"),
        (STORY_META, "alternate_2.explanation", "text"),
        (STORY_META, "line_x", "nominal"),
        (HOTEL_META, "impression", "ordinal"),
        (HOTEL_META, "no_errors", "flag"),
        ({}, "something.explanation", "text"),
        (None, "Coherence", "nominal"),
    ],
)
def test_item_kind(meta: dict | None, item: str, kind: str) -> None:
    assert item_kind(meta, item) == kind


# -- reliability matrices and per-item agreement --------------------------------------------


def judgment(task: int, annotator: str, annotation: int, item: str, value: object, **extra: object):
    row = {
        "project": "p",
        "task_id": task,
        "annotation_id": annotation,
        "annotator": annotator,
        "source": "human",
        "item": item,
        "value": value,
        "created_at": "2025-01-01T10:00:00Z",
        "updated_at": None,
        "lead_time": 10.0,
        "was_cancelled": False,
        "ground_truth": False,
    }
    return row | extra


def test_ratings_matrix_filters_sources_cancellations_and_keeps_latest_annotation() -> None:
    judgments = pd.DataFrame(
        [
            judgment(1, "ann", 10, "SP", "3"),
            judgment(1, "bob", 11, "SP", "3.0"),
            judgment(2, "ann", 12, "SP", "1", updated_at="2025-01-02T00:00:00Z"),
            judgment(2, "ann", 13, "SP", "2"),  # older than annotation 12: ignored
            judgment(2, "bob", 14, "SP", "2", was_cancelled=True),
            judgment(2, "gpt", 15, "SP", "2", source="model:v1"),
            judgment(3, "bob", 16, "SP", ""),  # empty value: missing
        ]
    )
    matrix = ratings_matrix(judgments, "p", "SP", kind="ordinal")
    assert list(matrix.columns) == ["ann", "bob"]
    assert matrix.loc[1].tolist() == [3.0, 3.0]
    assert matrix.loc[2, "ann"] == 1.0 and pd.isna(matrix.loc[2, "bob"])
    assert 3 not in matrix.index
    with_models = ratings_matrix(judgments, "p", "SP", kind="ordinal", source=None)
    assert "gpt" in with_models.columns


def test_ratings_matrix_flags_and_multi_valued_answers() -> None:
    judgments = pd.DataFrame(
        [
            judgment(1, "ann", 10, "impression", "5"),
            judgment(1, "ann", 10, "no_errors", "I did not find any errors in the summary"),
            judgment(1, "bob", 11, "impression", "5"),
            judgment(2, "ann", 12, "flags", "b"),
            judgment(2, "ann", 12, "flags", "a"),
            judgment(2, "bob", 13, "flags", "a"),
            judgment(2, "bob", 13, "flags", "b"),
        ]
    )
    flags = ratings_matrix(judgments, "p", "no_errors", kind="flag")
    assert flags.loc[1].tolist() == ["checked", "unchecked"]
    assert flags.loc[2].tolist() == ["unchecked", "unchecked"]
    multi = ratings_matrix(judgments, "p", "flags")
    assert multi.loc[2].tolist() == ["a | b", "a | b"]


def test_per_item_agreement_two_annotators_by_hand() -> None:
    # SP: agree on tasks 1, 3, 4 of 4 -> exact 0.75. Confusion (ann rows, bob cols) over
    # {3, 2}: [[2, 0], [1, 1]]; p_o = 3/4, p_e = (2*3 + 2*1)/16 = 1/2 -> kappa = 0.5.
    sp = [(1, "3", "3"), (2, "2", "3"), (3, "3", "3"), (4, "2", "2")]
    rows = []
    for task, ann, bob in sp:
        rows += [judgment(task, "ann", task * 10, "SP", ann)]
        rows += [judgment(task, "bob", task * 10 + 1, "SP", bob)]
        rows += [judgment(task, "bob", task * 10 + 1, "notes", "free text")]
    rows.append(judgment(5, "ann", 50, "SP", "1"))  # rated once: not a unit
    table = per_item_agreement(pd.DataFrame(rows), AUGMENTATION_META)
    assert table["item"].tolist() == ["SP"]  # the text item is skipped
    row = table.iloc[0]
    assert (row.project, row.kind, row.n_units, row.n_annotators, row.n_annotations) == (
        "p",
        "ordinal",
        4,
        2,
        9,
    )
    assert row.exact_agreement == pytest.approx(0.75)
    assert row.cohen_kappa == pytest.approx(0.5)
    # Fleiss: p_a = 3/4; task 5's single rating counts in the category shares only:
    # pi = (1: 1/5, 2: 1.5/5, 3: 2.5/5), p_e = 0.38, kappa = (0.75 - 0.38) / 0.62.
    assert row.fleiss_kappa == pytest.approx((0.75 - 0.38) / 0.62)
    assert row.reason == ""


def test_per_item_agreement_three_annotators_has_no_cohen() -> None:
    rows = [
        judgment(task, name, task * 10 + offset, "line_0", value)
        for task, values in enumerate([("Consistent",) * 3, ("Consistent", "Inconsistent", "N/A")])
        for offset, (name, value) in enumerate(zip(["a", "b", "c"], values, strict=True))
    ]
    row = per_item_agreement(pd.DataFrame(rows), STORY_META).iloc[0]
    assert row.kind == "nominal" and row.n_units == 2 and row.n_annotators == 3
    assert row.exact_agreement == pytest.approx(3 / 6)
    assert is_nan(row.cohen_kappa) and "3 annotators" in row.reason
    assert not is_nan(row.fleiss_kappa)


def test_per_item_agreement_single_annotator_reports_why() -> None:
    rows = [judgment(task, "ann", task, "SP", "3") for task in range(3)]
    row = per_item_agreement(pd.DataFrame(rows), AUGMENTATION_META).iloc[0]
    assert row.n_units == 0 and row.n_annotators == 1 and row.n_annotations == 3
    assert is_nan(row.exact_agreement) and is_nan(row.cohen_kappa) and is_nan(row.fleiss_kappa)
    assert "two raters" in row.reason


def test_per_item_agreement_flag_counts_span_only_annotations_as_unticked() -> None:
    judgments = pd.DataFrame([judgment(1, "ann", 10, "no_errors", "There were no errors in the summary")])
    spans = pd.DataFrame(
        [
            {"project": "p", "task_id": 1, "annotation_id": 11, "annotator": "bob",
             "source": "human", "label": "Incorrect"},
        ]
    )  # fmt: skip
    without_spans = per_item_agreement(judgments, HOTEL_META).iloc[0]
    with_spans = per_item_agreement(judgments, HOTEL_META, spans=spans).iloc[0]
    assert without_spans.n_units == 0
    assert with_spans.n_units == 1 and with_spans.exact_agreement == 0.0


def test_per_item_agreement_on_empty_judgments() -> None:
    empty = pd.DataFrame(columns=["project", "task_id", "annotation_id", "item", "value"])
    assert per_item_agreement(empty, {}).empty
