"""Vote tables, dataset counts, label confusion and models against the human majority."""

from __future__ import annotations

import doctest
import math

import pandas as pd
import pytest

from judgelab.analysis import (
    alignment_paradox,
    campaign_span_counts,
    example_votes,
    format_campaign_counts,
    format_vote_table,
    label_confusion,
    matched_spans,
    model_majority_agreement,
    span_tables,
    vote_table,
)

HUMANS = ["h1", "h2", "h3", "h4"]
TYPES = ["I", "M", "NC"]


def spans_table(rows) -> pd.DataFrame:
    """rows: (task_id, annotator, label[, start, end])."""
    records = []
    for row in rows:
        task_id, annotator, label, *offsets = row
        start, end = offsets if offsets else (0, 5)
        records.append(
            {
                "project": "p",
                "task_id": task_id,
                "annotation_id": task_id * 10,
                "annotator": annotator,
                "source": "human" if annotator.startswith("h") else f"model:{annotator}",
                "field": "summary",
                "start": start,
                "end": end,
                "text": "",
                "label": label,
                "note": None,
            }
        )
    return pd.DataFrame(records)


# Ten examples, four human annotators:
#   ex1..ex6: h1 marks I, h2 marks M, h3 marks NC, h4 nothing   (1 vote per type, 3 for any)
#   ex7, ex8: nobody marks anything
#   ex9:      h1, h2 and h3 mark I                               (3 votes for I and any)
#   ex10:     h1 marks I, h2 marks M                             (any: 2-2, no clear majority)
# Two models: "silent" marks nothing; "eager" marks I in every example.
HUMAN_ROWS = (
    [(t, a, lab) for t in range(1, 7) for a, lab in (("h1", "I"), ("h2", "M"), ("h3", "NC"))]
    + [(9, "h1", "I"), (9, "h2", "I"), (9, "h3", "I")]
    + [(10, "h1", "I"), (10, "h2", "M")]
)
MODEL_ROWS = [(t, "eager", "I") for t in range(1, 11)]
SPANS = spans_table(HUMAN_ROWS + MODEL_ROWS)
EXAMPLES = list(range(1, 11))


def test_doctests() -> None:
    assert doctest.testmod(span_tables).failed == 0


# ---- example-level votes (Table 5) ---------------------------------------------------------


def test_example_votes() -> None:
    votes = example_votes(SPANS, EXAMPLES, HUMANS, labels=TYPES)
    assert len(votes) == 10 * 4 and set(votes.n_annotators) == {4}
    by = votes.set_index(["task_id", "label"])["votes"]
    assert (by[(1, "I")], by[(1, "M")], by[(1, "NC")], by[(1, "(any)")]) == (1, 1, 1, 3)
    assert (by[(9, "I")], by[(9, "(any)")], by[(7, "(any)")], by[(10, "(any)")]) == (3, 3, 0, 2)


def test_vote_table_by_hand() -> None:
    table = vote_table(SPANS, EXAMPLES, HUMANS, labels=TYPES)
    counts = table.pivot(index="votes", columns="label", values="n_examples")
    # I:   0 votes ex7, ex8; 1 vote ex1-6 and ex10; 3 votes ex9
    assert counts["I"].tolist() == [2, 7, 0, 1, 0]
    # M:   1 vote ex1-6 and ex10; NC: 1 vote ex1-6
    assert counts["M"].tolist() == [3, 7, 0, 0, 0]
    assert counts["NC"].tolist() == [4, 6, 0, 0, 0]
    # any: 0 votes ex7, ex8; 2 votes ex10; 3 votes ex1-6 and ex9
    assert counts["(any)"].tolist() == [2, 0, 1, 7, 0]
    assert table.groupby("label")["share"].sum().tolist() == pytest.approx([1.0] * 4)
    assert table.set_index(["votes", "label"]).at[(1, "I"), "share"] == pytest.approx(0.7)
    wide = format_vote_table(table)
    assert wide.columns.tolist() == ["E", "I", "M", "NC", "(any)"]
    assert wide.set_index("E").at[3, "(any)"] == "7 (70%)"
    assert wide.set_index("E").at[0, "NC"] == "4 (40%)"


def test_vote_table_blocks_by_number_of_annotators() -> None:
    design = pd.DataFrame(
        {"project": "p", "task_id": [1, 1, 1, 2, 2], "annotator": ["h1", "h2", "h3", "h1", "h2"]},
    )
    table = vote_table(spans_table([(1, "h1", "I"), (2, "h1", "I"), (2, "h2", "I")]), design, labels=["I"])
    assert sorted(set(table.n_annotators)) == [2, 3]
    two = table[(table.n_annotators == 2) & (table.label == "I")]
    assert two.n_examples.tolist() == [0, 0, 1]


def test_vote_table_degenerate() -> None:
    empty = pd.DataFrame(columns=SPANS.columns)
    assert vote_table(empty).empty and format_vote_table(vote_table(empty)).empty
    # examples nobody marked: every example has 0 votes
    table = vote_table(empty, examples=[1, 2], annotators=["h1", "h2"])
    assert table[table.votes == 0].n_examples.tolist() == [2]


# ---- dataset-level counts (Table 4) ----------------------------------------------------------


def test_campaign_span_counts() -> None:
    counts = campaign_span_counts(SPANS, "source", labels=TYPES)
    human = counts[counts.source == "human"].set_index("label")
    # humans: I = 6 + 3 + 1 = 10, M = 6 + 1 = 7, NC = 6; total 23
    assert human["n_spans"].to_dict() == {"I": 10, "M": 7, "NC": 6}
    assert set(human["total_spans"]) == {23}
    assert human.at["I", "share"] == pytest.approx(10 / 23)
    eager = counts[counts.source == "model:eager"].set_index("label")
    assert eager["n_spans"].to_dict() == {"I": 10, "M": 0, "NC": 0}
    # restricted to a subset of examples (Table 4 counts on Stage 2 examples only)
    subset = campaign_span_counts(SPANS, "source", labels=TYPES, examples=[9, 10])
    assert subset[subset.source == "human"].set_index("label")["n_spans"].to_dict() == {"I": 4, "M": 1, "NC": 0}
    wide = format_campaign_counts(counts).set_index("source")
    assert wide.at["human", "Total Spans"] == 23 and wide.at["human", "I"] == "10 (43%)"
    # campaign as several columns
    groups = SPANS.assign(group=SPANS.annotator.map({"h1": "A", "h2": "A", "h3": "B", "h4": "B"}).fillna("LLM"))
    by_group = campaign_span_counts(groups, ["source", "group"], labels=TYPES)
    assert set(by_group.columns) >= {"source", "group", "total_spans", "label", "n_spans", "share"}
    assert campaign_span_counts(pd.DataFrame(), "source").empty


# ---- matching and label confusion ------------------------------------------------------------


def test_greedy_matching_by_largest_overlap() -> None:
    spans = spans_table(
        [
            (1, "a", "I", 0, 10),  # r0
            (1, "a", "M", 8, 20),  # r1
            (1, "a", "NC", 30, 35),  # r2: nothing of b overlaps it
            (1, "b", "M", 5, 18),  # h0: overlaps r0 by 5 ([5,10)) and r1 by 10 ([8,18))
            (1, "b", "I", 0, 4),  # h1: overlaps r0 by 4
            (1, "b", "I", 40, 45),  # h2: overlaps nothing
        ]
    )
    matches = matched_spans(spans, "a", "b").sort_values(["reference_start", "hypothesis_start"], na_position="last")
    # largest overlap first: (r1, h0) = 10; then r0 can only take h1 (4); r2 and h2 stay unmatched
    labels = matches[["reference_label", "hypothesis_label"]].astype(object).where(matches.notna(), None)
    pairs = list(zip(labels.reference_label, labels.hypothesis_label, matches.overlap, strict=True))
    assert pairs == [("I", "I", 4), ("M", "M", 10), ("NC", None, 0), (None, "I", 0)]
    confusion = label_confusion(spans, "a", "b", labels=TYPES)
    assert confusion.index.tolist() == [*TYPES, "(unmatched)"]
    assert confusion.loc["I", "I"] == 1 and confusion.loc["M", "M"] == 1
    assert confusion.loc["NC", "(unmatched)"] == 1 and confusion.loc["(unmatched)", "I"] == 1
    assert int(confusion.to_numpy().sum()) == 4


def test_confusion_across_labels_and_groups() -> None:
    spans = spans_table([(1, "a", "I", 0, 5), (1, "b", "M", 0, 5), (1, "c", "M", 0, 5), (2, "a", "M", 0, 3)])
    confusion = label_confusion(spans, "a", ["b", "c"], examples=[1, 2])
    # a vs b and a vs c on task 1: I -> M twice; task 2: a's M is unmatched in both pairs
    assert confusion.loc["I", "M"] == 2 and confusion.loc["M", "(unmatched)"] == 2
    assert label_confusion(pd.DataFrame(columns=spans.columns), "a", "b").to_numpy().sum() == 0
    # the hypothesis annotator marked nothing: every reference span is unmatched
    only_a = label_confusion(spans, "a", "zed", examples=[1, 2])
    assert only_a.loc["I", "(unmatched)"] == 1 and only_a.loc["M", "(unmatched)"] == 1


# ---- models against the human majority: the conservative alignment paradox -------------------


def test_conservative_alignment_paradox() -> None:
    table = model_majority_agreement(SPANS, EXAMPLES, HUMANS, ["silent", "eager"], labels=TYPES)
    rows = table.set_index(["model", "label"])
    # per type, all 30 (example, type) decisions have a clear majority (3-1 or 4-0); only
    # (ex9, I) says "error". silent agrees on the other 29
    assert rows.at[("silent", "(per type)"), "n_examples"] == 30
    assert rows.at[("silent", "(per type)"), "agreement"] == pytest.approx(29 / 30)
    # any error: ex10 is 2-2 (left out); 7 of the other 9 have a majority for "error"
    assert rows.at[("silent", "(any)"), "n_examples"] == 9
    assert rows.at[("silent", "(any)"), "agreement"] == pytest.approx(2 / 9)
    assert rows.at[("silent", "(any)"), "error_recall"] == 0.0
    # eager marks I everywhere: I agrees on ex9 only, M and NC everywhere: 21/30 per type;
    # any error: agrees on the 7 majority-error examples of 9
    assert rows.at[("eager", "I"), "agreement"] == pytest.approx(1 / 10)
    assert rows.at[("eager", "(per type)"), "agreement"] == pytest.approx(21 / 30)
    assert rows.at[("eager", "(any)"), "agreement"] == pytest.approx(7 / 9)
    assert rows.at[("eager", "(any)"), "error_recall"] == 1.0
    # the majority-class baseline is what the silent model gets
    baseline = table[table.model == "(always no error)"].reset_index(drop=True)
    silent = table[table.model == "silent"].reset_index(drop=True)
    assert baseline.agreement.tolist() == pytest.approx(silent.agreement.tolist())
    paradox = alignment_paradox(table).set_index("model")
    assert paradox.at["silent", "per_type_agreement"] > 0.95 > paradox.at["silent", "any_error_agreement"]
    assert paradox.at["silent", "drop"] == pytest.approx(29 / 30 - 2 / 9)
    assert paradox.at["eager", "per_type_agreement"] < paradox.at["eager", "any_error_agreement"]


def test_consensus_threshold() -> None:
    strict = model_majority_agreement(SPANS, EXAMPLES, HUMANS, ["silent"], consensus=1.0, labels=TYPES)
    by_count = model_majority_agreement(SPANS, EXAMPLES, HUMANS, ["silent"], consensus=4, labels=TYPES)
    pd.testing.assert_frame_equal(strict, by_count)
    rows = strict.set_index(["model", "label"])
    # 4-0 only (ex1-6 are 3-1 on every type and left out):
    # I: ex7, ex8 -> 2; M: ex7, ex8, ex9 -> 3; NC: ex7, ex8, ex9, ex10 -> 4; any: ex7, ex8 -> 2
    assert rows.at[("silent", "I"), "n_examples"] == 2
    assert rows.at[("silent", "M"), "n_examples"] == 3
    assert rows.at[("silent", "NC"), "n_examples"] == 4
    assert rows.at[("silent", "(any)"), "n_examples"] == 2


def test_model_that_did_not_annotate_and_degenerate() -> None:
    design = pd.DataFrame(
        {
            "project": "p",
            "task_id": [t for t in EXAMPLES for _ in range(5)],
            "annotator": [a for _ in EXAMPLES for a in [*HUMANS, "late"]],
        }
    )
    design = design[~((design.annotator == "late") & (design.task_id > 2))]
    table = model_majority_agreement(SPANS, design, HUMANS, ["late"], labels=TYPES).set_index(["model", "label"])
    assert table.at[("late", "(any)"), "n_examples"] == 2  # ex1 (3-1) and ex2 (3-1)
    empty = model_majority_agreement(pd.DataFrame(columns=SPANS.columns), None, HUMANS, ["m"])
    assert empty.agreement.isna().all() and empty.reason.notna().all()
    assert alignment_paradox(empty).per_type_agreement.isna().all()
    with pytest.raises(ValueError, match="both human and model"):
        model_majority_agreement(SPANS, EXAMPLES, HUMANS, ["h1"])
    assert math.isnan(model_majority_agreement(SPANS, EXAMPLES, [], ["eager"], labels=TYPES).agreement.iloc[0])
