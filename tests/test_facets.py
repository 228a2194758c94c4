"""Facets and filters (``--by``, ``--where``) on small hand-made tables whose coefficients are
worked out by hand in the comments; kinds of items are never lost when faceting."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from judgelab.analysis.facets import (
    FacetError,
    facet_cells,
    faceted_agreement,
    filter_tables,
    parse_where,
)
from judgelab.analysis.tables import KindWarning, per_item_agreement

SCALE_META = {"scales": {"SP": {"min": 1, "max": 3}}, "items": {"SP": {"kind": "ordinal"}}}

# model m1, three tasks, annotators x and y agree everywhere: exact 1, ordinal alpha 1.
# model m2, three tasks: (1, 2), (2, 1), (3, 3): exact 1/3; both use 1, 2, 3 once each, so
# Cohen's p_e = 3 * (1/3 * 1/3) = 1/3 and kappa = (1/3 - 1/3) / (2/3) = 0.
# Pooled over both models: 4 of 6 tasks agree, exact 2/3.
RATINGS = {
    ("m1", 1): ("1", "1"),
    ("m1", 2): ("2", "2"),
    ("m1", 3): ("3", "3"),
    ("m2", 4): ("1", "2"),
    ("m2", 5): ("2", "1"),
    ("m2", 6): ("3", "3"),
}


def tables() -> dict[str, pd.DataFrame]:
    tasks, judgments = [], []
    for (model, task), (x, y) in RATINGS.items():
        tasks.append({"project": "p", "task_id": task, "model": model, "round": float(task % 2), "split": "val"})
        for annotator, value in (("x", x), ("y", y)):
            judgments.append(
                {
                    "project": "p",
                    "task_id": task,
                    "annotation_id": f"{annotator}{task}",
                    "annotator": annotator,
                    "source": "human",
                    "item": "SP",
                    "value": value,
                    "was_cancelled": False,
                }
            )
    return {"tasks": pd.DataFrame(tasks), "judgments": pd.DataFrame(judgments)}


def test_faceted_coefficients_by_model_match_the_hand_computation() -> None:
    table = faceted_agreement(tables(), SCALE_META, by="model", total=True, n_boot=0).set_index("model")
    assert table.loc["m1", "exact_agreement"] == pytest.approx(1.0)
    assert table.loc["m1", "krippendorff_alpha"] == pytest.approx(1.0)
    assert table.loc["m2", "exact_agreement"] == pytest.approx(1 / 3)
    assert table.loc["m2", "cohen_kappa"] == pytest.approx(0.0)
    assert table.loc["(all)", "exact_agreement"] == pytest.approx(4 / 6)
    assert table["n_units"].tolist() == [3, 3, 6]
    assert set(table["kind"]) == {"ordinal"}


def test_where_filters_tasks_and_annotator_rows() -> None:
    only_m2 = faceted_agreement(tables(), SCALE_META, where="model != 'm1'", n_boot=0).iloc[0]
    assert only_m2["n_units"] == 3 and only_m2["exact_agreement"] == pytest.approx(1 / 3)
    # round is stored as 1.0 / 0.0: a number matches it; odd task ids are round 1
    odd = faceted_agreement(tables(), SCALE_META, where="round == 1 and model in ('m1', 'm2')", n_boot=0).iloc[0]
    assert odd["n_units"] == 3  # tasks 1, 3, 5
    assert odd["exact_agreement"] == pytest.approx(2 / 3)  # 1 and 3 agree, 5 does not
    # an annotator field drops one rater's answers: nothing is rated twice any more
    alone = faceted_agreement(tables(), SCALE_META, where="annotator != 'y'", n_boot=0).iloc[0]
    assert alone["n_units"] == 0 and alone["n_annotators"] == 1
    filtered = filter_tables(tables(), parse_where("not (model == 'm1' or annotator == 'y')"))
    assert set(filtered["tasks"]["model"]) == {"m2"}
    assert set(filtered["judgments"]["annotator"]) == {"x"}


def test_two_facets_make_one_cell_per_combination() -> None:
    cells = facet_cells(tables(), ["model", "round"])
    assert [cell.label for cell in cells] == [
        "model = m1, round = 0",
        "model = m1, round = 1",
        "model = m2, round = 0",
        "model = m2, round = 1",
    ]
    assert [cell.n_tasks for cell in cells] == [1, 2, 2, 1]


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("modle == 'm1'", r"--where: unknown field 'modle'; task fields: model, round, split"),
        ("__import__('os').system('true')", "Call is not allowed"),
        ("model == m1", "quote text values"),
        ("1 < round < 3", "one comparison at a time"),
        ("model.upper() == 'M1'", "a comparison starts with a field name"),
        ("model ==", "not a valid expression"),
        ("model in 'm1'", "'in' needs a list of values"),
    ],
)
def test_where_errors_are_clear(expression: str, message: str) -> None:
    with pytest.raises(FacetError, match=message):
        faceted_agreement(tables(), SCALE_META, where=expression, n_boot=0)


def test_unknown_by_field_is_named() -> None:
    with pytest.raises(FacetError, match=r"--by: unknown field 'language'"):
        faceted_agreement(tables(), SCALE_META, by="model,language", n_boot=0)


def test_backticks_name_fields_that_are_not_identifiers() -> None:
    data = tables()
    data["tasks"] = data["tasks"].rename(columns={"model": "story-model"})
    table = faceted_agreement(data, SCALE_META, where="`story-model` == 'm1'", n_boot=0)
    assert table["n_units"].tolist() == [3]


def test_agreement_without_a_schema_infers_rating_scales_and_says_so() -> None:
    """per_item_agreement(judgments, None) compared 1-3 ratings as nominal labels before."""
    judgments = tables()["judgments"]
    with pytest.warns(KindWarning, match="compared as rating scales .*: SP"):
        row = per_item_agreement(judgments, None, n_boot=0).iloc[0]
    assert row["kind"] == "ordinal" and row["kind_from"] == "inferred"
    assert row["alpha_level"] == "ordinal"
    assert row["adjacent_agreement"] == pytest.approx(1.0)  # every pair is at most one point apart
    declared = per_item_agreement(judgments, SCALE_META, n_boot=0).iloc[0]
    assert declared["kind_from"] == "schema"
    assert declared["krippendorff_alpha"] == pytest.approx(row["krippendorff_alpha"])
    as_labels = per_item_agreement(judgments, None, kinds={"SP": "nominal"}, n_boot=0).iloc[0]
    assert as_labels["kind"] == "nominal" and as_labels["kind_from"] == "given"


def test_a_cell_with_two_values_stays_a_rating_scale() -> None:
    """Kinds are decided on all the rows, not per cell: in m1's round-0 cell every answer is
    2, which alone would not look like a scale."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KindWarning)
        table = faceted_agreement(tables(), None, by="model,round", n_boot=0)
    assert set(table["kind"]) == {"ordinal"}
    assert set(table["kind_from"]) == {"inferred"}
