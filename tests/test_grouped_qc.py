"""The guideline checks of every facet cell in one grouped pass (``*_by_group`` in
``analysis.qc.augmentation_quality``): on a hand-built table of three cells, each cell's result
has the values worked out by hand and equals the check run on that cell's rows alone."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from judgelab.analysis.grouped import RowGroups
from judgelab.analysis.qc import augmentation_quality as qc
from judgelab.analysis.ratings import numeric_ratings, numeric_ratings_grouped, ratings_per_group
from judgelab.configs.schema import get_schema

META = get_schema("augmentation_quality").meta
MARKERS = [
    {"item": "SP", "value": 3, "min": 0.4, "max": 0.6},
    {"item": "SC", "value": 2, "subset": {"augmentation_type": "rephrased"}, "max": 0.5},
]


def _rows(cell: int, task: str, annotator: str, scores: dict[str, int], minute: int, annotation: str = "") -> list:
    created = f"2025-03-01T09:{minute:02d}:00Z"
    return [
        {
            "project": 1,
            "task_id": task,
            "annotation_id": annotation or f"{task}:{annotator}",
            "annotator": annotator,
            "source": "human",
            "item": item,
            "value": str(value),
            "created_at": created,
            "updated_at": created,
            "was_cancelled": False,
            "_cell": cell,
        }
        for item, value in scores.items()
    ]


def _table() -> tuple[pd.DataFrame, pd.DataFrame, RowGroups]:
    rows = []
    # cell 0 (model m1): a and b on t1..t5; SP a = 3 3 2 1 3, b = 3 2 2 1 1; SC the same for both
    for i, (sp_a, sp_b, sc) in enumerate(zip([3, 3, 2, 1, 3], [3, 2, 2, 1, 1], [3, 3, 3, 2, 2], strict=True)):
        rows += _rows(0, f"t{i + 1}", "a", {"SP": sp_a, "SC": sc}, minute=i)
        rows += _rows(0, f"t{i + 1}", "b", {"SP": sp_b, "SC": sc}, minute=10 + i)
    # cell 1 (model m2): x and y on u1..u4; SP x = 1 2 3 3, y = 1 2 3 2; SC 2 for all. x first rated
    # u1 SP 3 in an older annotation: only the latest counts.
    rows += _rows(1, "u1", "x", {"SP": 3, "SC": 2}, minute=0, annotation="u1:x:old")
    for i, (sp_x, sp_y) in enumerate(zip([1, 2, 3, 3], [1, 2, 3, 2], strict=True)):
        rows += _rows(1, f"u{i + 1}", "x", {"SP": sp_x, "SC": 2}, minute=20 + i)
        rows += _rows(1, f"u{i + 1}", "y", {"SP": sp_y, "SC": 2}, minute=30 + i)
    # cell 2 (model m3): z alone on v1, so no pilot pair
    rows += _rows(2, "v1", "z", {"SP": 2, "SC": 1}, minute=0)
    judgments = pd.DataFrame(rows)
    groups = RowGroups({"judgments": judgments.pop("_cell").to_numpy(dtype=np.int64)}, 3)
    tasks = judgments[["project", "task_id"]].drop_duplicates().reset_index(drop=True)
    tasks["model"] = tasks["task_id"].str[0].map({"t": "m1", "u": "m2", "v": "m3"})
    tasks["augmentation_type"] = np.where(tasks["task_id"].isin(["t1", "t2", "u1"]), "rephrased", "rewritten")
    return judgments, tasks, groups


def _cell_rows(judgments: pd.DataFrame, groups: RowGroups, cell: int) -> pd.DataFrame:
    return judgments[groups.codes["judgments"] == cell]


def test_numeric_ratings_of_every_cell_equal_each_cell_alone():
    judgments, _, groups = _table()
    grouped = numeric_ratings_grouped(judgments, groups)
    parts = ratings_per_group(grouped, groups.size)
    for cell, part in enumerate(parts):
        assert_frame_equal(part, numeric_ratings(_cell_rows(judgments, groups, cell)))
    assert "u1:x:old" not in set(parts[1]["annotation_id"])  # the older annotation is left out
    assert [len(part) for part in parts] == [20, 16, 2]


def test_pilot_agreement_per_cell():
    judgments, _, groups = _table()
    ratings = numeric_ratings_grouped(judgments, groups)
    results = qc.pilot_agreement_by_group(judgments, META, groups, ratings=ratings)
    first, second, third = results
    assert first.annotators == ("a", "b") and second.annotators == ("x", "y")
    exact = {row["item"]: row["exact_agreement"] for row in first.table.to_dict("records")}
    assert exact == {"SP": pytest.approx(3 / 5), "SC": pytest.approx(1.0)}  # SP differs on t2 and t5
    exact = {row["item"]: row["exact_agreement"] for row in second.table.to_dict("records")}
    assert exact == {"SP": pytest.approx(3 / 4), "SC": pytest.approx(1.0)}  # SP differs on u4 only
    assert list(second.table["n_units"]) == [4, 4]
    assert isinstance(third, ValueError) and "two annotators" in str(third)
    for cell, result in enumerate(results[:2]):
        alone = qc.pilot_agreement(_cell_rows(judgments, groups, cell), META)
        assert_frame_equal(result.table, alone.table)
        assert (result.passed, result.annotators, result.units) == (alone.passed, alone.annotators, alone.units)
    with pytest.raises(ValueError, match="two annotators"):
        qc.pilot_agreement(_cell_rows(judgments, groups, 2), META)


def test_disagreement_rule_per_cell():
    judgments, _, groups = _table()
    results = qc.resolve_disagreements_by_group(judgments, META, groups)
    # cell 0: a and b differ on 2 of 5 samples (t2, t5): 40 % >= 20 %, discuss; cell 1: 1 of 4 (u4), 25 %
    assert results[0].action == "discuss" and results[0].share_disagreeing == pytest.approx(0.4)
    assert results[1].action == "discuss" and list(results[1].to_discuss["task_id"]) == ["u4"]
    assert isinstance(results[2], ValueError)
    for cell, result in enumerate(results[:2]):
        alone = qc.resolve_disagreements(_cell_rows(judgments, groups, cell), META)
        assert (result.action, result.n_samples, result.share_disagreeing) == (
            alone.action,
            alone.n_samples,
            alone.share_disagreeing,
        )
        for name in ("averaged", "to_discuss", "disagreements"):
            assert_frame_equal(getattr(result, name), getattr(alone, name))


def test_annotator_drift_per_cell():
    judgments, _, groups = _table()
    results = qc.annotator_drift_by_group(judgments, META, groups, block_size=2)
    # cell 1, x: annotations u1..u4 in time order, blocks (u1, u2) and (u3, u4); SP means 1.5 and 3
    x_sp = results[1][(results[1]["annotator"] == "x") & (results[1]["item"] == "SP")]
    assert list(x_sp["mean"]) == [1.5, 3.0] and list(x_sp["change_vs_first_block"]) == [0.0, 1.5]
    assert list(results[2]["annotator"].unique()) == ["z"]
    for cell, result in enumerate(results):
        assert_frame_equal(result, qc.annotator_drift(_cell_rows(judgments, groups, cell), META, block_size=2))


def test_calibration_markers_per_cell():
    judgments, tasks, groups = _table()
    results = qc.calibration_check_by_group(judgments, tasks, META, groups, markers=MARKERS)
    overall = results[0][results[0]["scope"] == "overall"].set_index("item")
    assert overall.loc["SP", "share"] == pytest.approx(4 / 10)  # SP = 3: a on t1 t2 t5, b on t1
    assert overall.loc["SC", "n_ratings"] == 4 and overall.loc["SC", "n_value"] == 0  # rephrased t1, t2: SC 3
    for cell, result in enumerate(results):
        alone = qc.calibration_check(_cell_rows(judgments, groups, cell), tasks, META, markers=MARKERS)
        assert_frame_equal(result, alone)


def test_a_cell_with_fractional_scores_leaves_the_integer_scores_of_the_others():
    """One cell's 2.5 makes every score a float when parsed together; each other cell alone has
    integer scores, and its disagreements list them as integers, as its own report would."""
    judgments, _, groups = _table()
    extra = pd.DataFrame(_rows(2, "v1", "w", {"SP": "2.5", "SC": 1}, minute=5)).drop(columns=["_cell"])
    judgments = pd.concat([judgments, extra], ignore_index=True)
    groups = RowGroups({"judgments": np.append(groups.codes["judgments"], [2, 2])}, 3)
    grouped = numeric_ratings_grouped(judgments, groups)
    assert grouped["score"].dtype == float
    parts = ratings_per_group(grouped, groups.size)
    for cell, part in enumerate(parts):
        assert_frame_equal(part, numeric_ratings(_cell_rows(judgments, groups, cell)))
    assert [part["score"].dtype.kind for part in parts] == ["i", "i", "f"]
    results = qc.resolve_disagreements_by_group(judgments, META, groups, ratings=grouped)
    assert results[0].to_discuss["score_a"].dtype.kind == "i"
    assert list(results[2].to_discuss[["score_a", "score_b"]].iloc[0]) == [2.5, 2.0]  # w, z on v1 SP
    for cell, result in enumerate(results):
        alone = qc.resolve_disagreements(_cell_rows(judgments, groups, cell), META)
        for name in ("averaged", "to_discuss", "disagreements"):
            assert_frame_equal(getattr(result, name), getattr(alone, name))
    pilots = qc.pilot_agreement_by_group(judgments, META, groups, ratings=grouped)
    for cell, result in enumerate(pilots):
        assert_frame_equal(result.table, qc.pilot_agreement(_cell_rows(judgments, groups, cell), META).table)
