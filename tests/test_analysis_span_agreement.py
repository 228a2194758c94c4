"""Span precision/recall/F1 (per-span and character forms), empty-example policies, pairs.

Small cases are computed by hand (the arithmetic is in the comments); property tests compare
the vectorised code with straightforward loops on random spans.
"""

from __future__ import annotations

import doctest
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgelab.analysis import (
    annotator_pairs,
    intervals,
    mean_span_agreement,
    pairwise_span_agreement,
    span_agreement,
    span_agreement_table,
    span_coding,
    span_prf,
)
from judgelab.analysis.intervals import covered_length, merge_intervals, overlapping_pairs

# One example. Reference: r1 = [0, 10) I, r2 = [20, 30) M.
# Hypothesis: h1 = [5, 15) I, h2 = [20, 25) I, h3 = [40, 50) M.
CASE_REF = [[(0, 10, "I"), (20, 30, "M")]]
CASE_HYP = [[(5, 15, "I"), (20, 25, "I"), (40, 50, "M")]]


def test_doctests() -> None:
    assert doctest.testmod(span_agreement).failed == 0
    assert doctest.testmod(intervals).failed == 0
    assert doctest.testmod(span_coding).failed == 0


# ---- hand-computed cases ---------------------------------------------------------------


def test_per_span_soft_by_hand() -> None:
    # h1 ∩ r1 = [5, 10) = 5 chars -> 5/|h1| = 5/10; h2 ∩ r2 = [20, 25) -> 5/5; h3 -> 0
    # P = (0.5 + 1 + 0) / 3 = 0.5
    # r1 ∩ h1 = 5 -> 5/10; r2 ∩ h2 = 5 -> 5/10;  R = (0.5 + 0.5) / 2 = 0.5;  F1 = 0.5
    score = span_prf(CASE_REF, CASE_HYP, form="per_span", match="soft")
    assert (score.precision, score.recall, score.f1) == pytest.approx((0.5, 0.5, 0.5))
    assert (score.n_examples, score.n_reference_spans, score.n_hypothesis_spans) == (1, 2, 3)


def test_per_span_hard_by_hand() -> None:
    # only same-label overlaps count: h1 (I) ∩ r1 (I) = 5 -> 0.5; h2 (I) vs r2 (M) -> 0; h3 -> 0
    # P = 0.5 / 3 = 1/6;  R: r1 -> 0.5, r2 (M) meets no M span -> 0;  R = 0.5 / 2 = 1/4
    # F1 = 2 * (1/6) * (1/4) / (1/6 + 1/4) = (1/12) / (5/12) = 0.2
    score = span_prf(CASE_REF, CASE_HYP, form="per_span", match="hard")
    assert (score.precision, score.recall, score.f1) == pytest.approx((1 / 6, 1 / 4, 0.2))


def test_character_soft_by_hand() -> None:
    # overlap characters: h1 5 + h2 5 + h3 0 = 10 over hypothesis characters 10 + 5 + 10 = 25
    # P = 10/25 = 0.4;  R = (5 + 5) / (10 + 10) = 0.5;  F1 = 2 * 0.4 * 0.5 / 0.9 = 4/9
    score = span_prf(CASE_REF, CASE_HYP, form="character", match="soft")
    assert (score.precision, score.recall, score.f1) == pytest.approx((0.4, 0.5, 4 / 9))


def test_character_hard_by_hand() -> None:
    # only h1 ∩ r1 (both I) counts: P = 5/25 = 0.2, R = 5/20 = 0.25, F1 = 0.1 / 0.45 = 2/9
    score = span_prf(CASE_REF, CASE_HYP, form="character", match="hard")
    assert (score.precision, score.recall, score.f1) == pytest.approx((0.2, 0.25, 2 / 9))


def test_character_form_matches_factgenie_test_case() -> None:
    # factgenie's tests/test_f1.py: ref typeA [0,10) and typeB [5,15) in two examples,
    # hyp typeA [0,5) and typeA [0,10): hard P = 5/15 = 0.333, R = 5/20 = 0.25, F1 = 0.286
    reference = [[(0, 10, "typeA")], [(5, 15, "typeB")]]
    hypothesis = [[(0, 5, "typeA")], [(0, 10, "typeA")]]
    score = span_prf(reference, hypothesis, form="character", match="hard")
    assert (round(score.precision, 3), round(score.recall, 3), round(score.f1, 3)) == (0.333, 0.25, 0.286)


def test_micro_and_macro_by_hand() -> None:
    # ex0: ref [0,10), hyp [0,5):  P = 5/5 = 1, R = 5/10 = 0.5, F1 = 2/3
    # ex1: ref [0,4),  hyp [0,4):  P = R = F1 = 1
    # macro: P = 1, R = 0.75, F1 = (2/3 + 1) / 2 = 5/6
    # micro (per span pooled): P = (1 + 1)/2 = 1, R = (0.5 + 1)/2 = 0.75, F1 = 1.5/1.75 = 6/7
    reference = [[(0, 10, "x")], [(0, 4, "x")]]
    hypothesis = [[(0, 5, "x")], [(0, 4, "x")]]
    macro = span_prf(reference, hypothesis, average="macro")
    micro = span_prf(reference, hypothesis, average="micro")
    assert (macro.precision, macro.recall, macro.f1) == pytest.approx((1, 0.75, 5 / 6))
    assert (micro.precision, micro.recall, micro.f1) == pytest.approx((1, 0.75, 6 / 7))


def test_hypothesis_span_covering_two_references() -> None:
    # h = [0, 30) meets r1 = [0, 10) and r2 = [20, 30): P = (10 + 10)/30 = 2/3; R = (1 + 1)/2 = 1
    score = span_prf([[(0, 10, "x"), (20, 30, "x")]], [[(0, 30, "x")]], match="soft")
    assert (score.precision, score.recall) == pytest.approx((2 / 3, 1.0))


# ---- empty-example policies ------------------------------------------------------------

# ex0: both mark [0,10) x (perfect); ex1: only the reference marks; ex2: only the hypothesis
# marks; ex3: neither marks anything.
POLICY_REF = [[(0, 10, "x")], [(0, 10, "x")], [], []]
POLICY_HYP = [[(0, 10, "x")], [], [(0, 10, "x")], []]


def test_policy_zero_micro() -> None:
    # hypothesis spans: ex0 (credit 1) and ex2 (credit 0) -> P = 1/2; reference spans: ex0 (1),
    # ex1 (0) -> R = 1/2; F1 = 1/2; ex3 has no spans and contributes nothing: 3 examples used
    score = span_prf(POLICY_REF, POLICY_HYP, empty="zero")
    assert (score.precision, score.recall, score.f1, score.n_examples) == pytest.approx((0.5, 0.5, 0.5, 3))


def test_policy_skip_micro() -> None:
    # only ex0 has spans on both sides: P = R = F1 = 1 on 1 example
    score = span_prf(POLICY_REF, POLICY_HYP, empty="skip")
    assert (score.precision, score.recall, score.f1, score.n_examples) == (1.0, 1.0, 1.0, 1)


def test_policy_zero_macro() -> None:
    # ex0: 1, 1, 1; ex1: P undefined -> 0, R = 0, F1 = 0; ex2: P = 0, R undefined -> 0, F1 = 0
    # ex3 left out: mean over 3 examples = 1/3 each
    score = span_prf(POLICY_REF, POLICY_HYP, average="macro", empty="zero")
    assert (score.precision, score.recall, score.f1, score.n_examples) == pytest.approx((1 / 3, 1 / 3, 1 / 3, 3))


def test_policy_skip_macro() -> None:
    score = span_prf(POLICY_REF, POLICY_HYP, average="macro", empty="skip")
    assert (score.precision, score.recall, score.f1, score.n_examples) == (1.0, 1.0, 1.0, 1)


def test_policy_one_macro() -> None:
    # ex3 (both empty) counts as perfect: (1 + 0 + 0 + 1) / 4 = 0.5 for P, R and F1
    score = span_prf(POLICY_REF, POLICY_HYP, average="macro", empty="one")
    assert (score.precision, score.recall, score.f1, score.n_examples) == pytest.approx((0.5, 0.5, 0.5, 4))


def test_policy_one_needs_macro() -> None:
    with pytest.raises(ValueError, match="macro"):
        span_prf(POLICY_REF, POLICY_HYP, empty="one")


def test_nothing_marked_anywhere() -> None:
    zero = span_prf([[], []], [[], []])
    assert math.isnan(zero.f1) and "neither annotator marked" in zero.reason
    skip = span_prf([[(0, 3, "x")], []], [[], [(0, 3, "x")]], empty="skip")
    assert math.isnan(skip.f1) and "empty='skip'" in skip.reason
    assert span_prf([[], []], [[], []], average="macro", empty="one").f1 == 1.0
    no_examples = span_prf([], [])
    assert math.isnan(no_examples.precision) and no_examples.reason


def test_hypothesis_marked_nothing_scores_zero() -> None:
    # the reference marked spans, the hypothesis nothing: "zero" gives P = R = F1 = 0
    score = span_prf([[(0, 5, "x")]], [[]])
    assert (score.precision, score.recall, score.f1) == (0.0, 0.0, 0.0)


def test_bad_options_raise() -> None:
    with pytest.raises(ValueError, match="form"):
        span_prf([], [], form="tokens")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="examples"):
        span_prf([[]], [[], []])


# ---- identity, disjointness, symmetry, hard <= soft -------------------------------------

spans_strategy = st.lists(
    st.tuples(st.integers(0, 40), st.integers(1, 12), st.sampled_from("ab")).map(lambda t: (t[0], t[0] + t[1], t[2])),
    max_size=5,
)
examples_strategy = st.integers(1, 5).flatmap(
    lambda n: st.tuples(
        st.lists(spans_strategy, min_size=n, max_size=n), st.lists(spans_strategy, min_size=n, max_size=n)
    )
)
OPTIONS = [
    (form, match, average, empty)
    for form, match, average, empty in itertools.product(
        ("per_span", "character"), ("hard", "soft"), ("micro", "macro"), ("zero", "skip", "one")
    )
    if not (empty == "one" and average == "micro")
]


@pytest.mark.parametrize(("form", "match", "average", "empty"), OPTIONS)
def test_identical_annotations_score_one(form, match, average, empty) -> None:
    annotations = [[(0, 5, "a"), (10, 20, "b")], [(3, 4, "a")], []]
    score = span_prf(annotations, annotations, form=form, match=match, average=average, empty=empty)
    assert (score.precision, score.recall, score.f1) == pytest.approx((1.0, 1.0, 1.0))


@pytest.mark.parametrize(("form", "match", "average", "empty"), OPTIONS)
def test_disjoint_annotations_score_zero(form, match, average, empty) -> None:
    reference = [[(0, 5, "a"), (10, 20, "b")], [(3, 4, "a")]]
    hypothesis = [[(5, 10, "a"), (20, 25, "b")], [(0, 3, "a")]]
    score = span_prf(reference, hypothesis, form=form, match=match, average=average, empty=empty)
    assert (score.precision, score.recall, score.f1) == (0.0, 0.0, 0.0)


@settings(max_examples=150, deadline=None)
@given(examples_strategy, st.sampled_from(OPTIONS[::3] + OPTIONS[1::3]))
def test_properties(data, options) -> None:
    reference, hypothesis = data
    form, _, average, empty = options
    kwargs = {"form": form, "average": average, "empty": empty}
    hard = span_prf(reference, hypothesis, match="hard", **kwargs)
    soft = span_prf(reference, hypothesis, match="soft", **kwargs)
    back = span_prf(hypothesis, reference, match="soft", **kwargs)
    if not soft.is_defined:
        assert not hard.is_defined and not back.is_defined and soft.reason
        return
    # hard <= soft
    assert hard.precision <= soft.precision + 1e-12
    assert hard.recall <= soft.recall + 1e-12
    # swapping reference and hypothesis swaps precision and recall and keeps F1, so the
    # average over both directions is symmetric
    assert back.precision == pytest.approx(soft.recall)
    assert back.recall == pytest.approx(soft.precision)
    assert back.f1 == pytest.approx(soft.f1)
    for value in (soft.precision, soft.recall, soft.f1, hard.f1):
        assert value >= 0


def naive_per_span(reference, hypothesis, hard: bool) -> tuple[float, float]:
    """Da San Martino et al. (2019) micro P and R, straight from the formula."""
    p_sum = r_sum = 0.0
    n_h = n_r = 0
    for ref, hyp in zip(reference, hypothesis, strict=True):
        if not ref and not hyp:
            continue
        for hs, he, hl in hyp:
            n_h += 1
            p_sum += sum(max(0, min(he, re) - max(hs, rs)) for rs, re, rl in ref if not hard or rl == hl) / (he - hs)
        for rs, re, rl in ref:
            n_r += 1
            r_sum += sum(max(0, min(he, re) - max(hs, rs)) for hs, he, hl in hyp if not hard or rl == hl) / (re - rs)
    return (p_sum / n_h if n_h else 0.0), (r_sum / n_r if n_r else 0.0)


def naive_character(reference, hypothesis, hard: bool) -> tuple[float, float]:
    """Characters of each span covered by any span of the other side (of its label when hard)."""
    covered_h = total_h = covered_r = total_r = 0
    for ref, hyp in zip(reference, hypothesis, strict=True):
        for spans, others, kind in ((hyp, ref, "h"), (ref, hyp, "r")):
            for s, e, label in spans:
                marked = {c for os, oe, ol in others if not hard or ol == label for c in range(os, oe)}
                hits = sum(1 for c in range(s, e) if c in marked)
                if kind == "h":
                    covered_h, total_h = covered_h + hits, total_h + e - s
                else:
                    covered_r, total_r = covered_r + hits, total_r + e - s
    return (covered_h / total_h if total_h else 0.0), (covered_r / total_r if total_r else 0.0)


@settings(max_examples=200, deadline=None)
@given(examples_strategy, st.booleans())
def test_matches_straightforward_loops(data, hard) -> None:
    reference, hypothesis = data
    match = "hard" if hard else "soft"
    if not any(reference) and not any(hypothesis):
        return
    per_span = span_prf(reference, hypothesis, form="per_span", match=match)
    assert (per_span.precision, per_span.recall) == pytest.approx(naive_per_span(reference, hypothesis, hard))
    character = span_prf(reference, hypothesis, form="character", match=match)
    assert (character.precision, character.recall) == pytest.approx(naive_character(reference, hypothesis, hard))


# ---- interval helpers against brute force ----------------------------------------------

intervals_strategy = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 30), st.integers(1, 10)).map(lambda t: (t[0], t[1], t[1] + t[2])),
    max_size=12,
)


def as_arrays(intervals):
    array = np.array(intervals, dtype=np.int64).reshape(-1, 3)
    return array[:, 0], array[:, 1], array[:, 2]


@settings(max_examples=150, deadline=None)
@given(intervals_strategy, intervals_strategy)
def test_interval_helpers(first, second) -> None:
    a, b = as_arrays(first), as_arrays(second)
    expected_mass = [sum(max(0, min(e, oe) - max(s, os)) for og, os, oe in second if og == g) for g, s, e in first]
    assert covered_length(*a, *b).tolist() == expected_mass
    pairs = set(zip(*(x.tolist() for x in overlapping_pairs(*a, *b)), strict=True))
    expected_pairs = {
        (i, j)
        for i, (g, s, e) in enumerate(first)
        for j, (og, os, oe) in enumerate(second)
        if g == og and s < oe and os < e
    }
    assert pairs == expected_pairs
    groups, starts, ends, block = merge_intervals(*a)
    for g in range(3):
        chars = {c for ig, s, e in first if ig == g for c in range(s, e)}
        blocks = {c for bg, s, e in zip(groups, starts, ends, strict=True) if bg == g for c in range(s, e)}
        assert chars == blocks
    assert sum(int(e - s) for e, s in zip(ends, starts, strict=True)) == len(
        {(g, c) for g, s, e in first for c in range(s, e)}
    )
    if len(first):
        assert all(starts[block[i]] <= first[i][1] and first[i][2] <= ends[block[i]] for i in range(len(first)))


# ---- the tidy spans table ----------------------------------------------------------------


def tidy(rows) -> pd.DataFrame:
    """rows: (task_id, annotator, start, end, label[, field])."""
    records = []
    for row in rows:
        task_id, annotator, start, end, label, *rest = row
        records.append(
            {
                "project": "p",
                "task_id": task_id,
                "annotation_id": f"{task_id}-{annotator}",  # one per (task, annotator), the same in every run
                "annotator": annotator,
                "source": "human",
                "field": rest[0] if rest else "summary",
                "start": start,
                "end": end,
                "text": "",
                "label": label,
                "note": None,
            }
        )
    return pd.DataFrame(records)


SPANS = tidy(
    [
        (1, "a", 0, 10, "I"),
        (1, "a", 20, 30, "M"),
        (1, "b", 5, 15, "I"),
        (1, "b", 20, 25, "I"),
        (1, "b", 40, 50, "M"),
        (2, "a", 0, 4, "M"),
        (2, "c", 0, 4, "M"),
        (3, "b", 0, 6, "I"),
    ]
)


def test_pairwise_matches_lists() -> None:
    table = pairwise_span_agreement(SPANS, examples=[1, 2, 3, 4], annotators=["a", "b", "c"])
    assert len(table) == 6 * 4  # 6 ordered pairs x 2 forms x 2 matches
    row = table[(table.reference == "a") & (table.hypothesis == "b") & (table.form == "per_span")]
    soft = row[row.match == "soft"].iloc[0]
    # task 1 is CASE_REF vs CASE_HYP; task 2: a marked, b nothing; task 3: b marked, a nothing
    expected = span_prf(CASE_REF + [[(0, 4, "M")], [], []], CASE_HYP + [[], [(0, 6, "I")], []], match="soft")
    assert (soft.precision, soft.recall, soft.f1) == pytest.approx((expected.precision, expected.recall, expected.f1))
    assert soft.n_examples == 3 and soft.n_reference_spans == 3 and soft.n_hypothesis_spans == 4
    reverse = table[(table.reference == "b") & (table.hypothesis == "a") & (table.form == "per_span")]
    reverse_soft = reverse[reverse.match == "soft"].iloc[0]
    assert (reverse_soft.precision, reverse_soft.recall) == pytest.approx((soft.recall, soft.precision))


def test_design_with_annotator_coverage() -> None:
    # c only annotated task 2; a and c share task 2 (identical spans) -> F1 = 1 on 1 example
    design = pd.DataFrame(
        {"project": "p", "task_id": [1, 1, 2, 2, 3], "annotator": ["a", "b", "a", "c", "b"]},
    )
    table = pairwise_span_agreement(SPANS, examples=design, pairs=[("a", "c"), ("b", "c")], forms=("per_span",))
    ac = table[(table.reference == "a") & (table.match == "hard")].iloc[0]
    assert (ac.f1, ac.n_examples) == (1.0, 1)
    bc = table[(table.reference == "b")].iloc[0]
    assert math.isnan(bc.f1) and "share no annotated example" in bc.reason


def test_fields_are_separate_texts() -> None:
    spans = tidy([(1, "a", 0, 5, "I", "summary"), (1, "b", 0, 5, "I", "title")])
    table = pairwise_span_agreement(spans, pairs=[("a", "b")], forms=("character",), matches=("soft",))
    assert table.f1.iloc[0] == 0.0


def test_spans_without_offsets_are_left_out() -> None:
    spans = tidy([(1, "a", 0, 5, "I"), (1, "b", 0, 5, "I"), (1, "b", None, None, "M"), (1, "b", 4, 4, "M")])
    table = pairwise_span_agreement(spans, pairs=[("a", "b")], forms=("per_span",), matches=("soft",))
    assert table.f1.iloc[0] == 1.0 and table.n_hypothesis_spans.iloc[0] == 1


def test_mean_over_both_directions_is_symmetric() -> None:
    table = pairwise_span_agreement(SPANS, examples=[1, 2, 3], annotators=["a", "b", "c"])
    means = mean_span_agreement(table).set_index(["form", "match"])
    # every ordered pair appears in both directions, so mean precision == mean recall
    assert np.allclose(means["precision"], means["recall"])
    assert (means["n_pairs"] + means["n_pairs_undefined"] == 6).all()
    hard = means.xs("hard", level="match")["f1"]
    soft = means.xs("soft", level="match")["f1"]
    assert (hard <= soft + 1e-12).all()


def test_span_agreement_table() -> None:
    comparisons = {
        "a-b": annotator_pairs(["a"], ["b"]),
        "humans-c": annotator_pairs(["a", "b"], ["c"], both_directions=False),
        "nobody": [],
    }
    table = span_agreement_table(SPANS, comparisons, examples=[1, 2, 3]).set_index("comparison")
    pairwise = pairwise_span_agreement(SPANS, examples=[1, 2, 3], pairs=[("a", "b"), ("b", "a")], forms=("per_span",))
    soft = pairwise[pairwise.match == "soft"]
    assert table.at["a-b", "f1_soft"] == pytest.approx(soft.f1.mean())
    assert table.at["a-b", "precision_soft"] == pytest.approx(soft.precision.mean())
    # a vs c: task 2 identical (M), tasks 1 and 3 only a/b marked; b vs c never overlap
    assert table.at["humans-c", "n_pairs"] == 2
    assert math.isnan(table.at["nobody", "f1_hard"]) and table.at["nobody", "reason"] == "no pairs"


def test_degenerate_tables() -> None:
    empty = pd.DataFrame(columns=SPANS.columns)
    assert pairwise_span_agreement(empty).empty
    table = pairwise_span_agreement(empty, examples=[1, 2], annotators=["a", "b"], forms=("per_span",))
    assert table.f1.isna().all() and table.reason.notna().all()
    assert mean_span_agreement(table).f1.isna().all()
    with pytest.raises(ValueError, match="unknown annotator"):
        pairwise_span_agreement(SPANS, annotators=["a", "b"], pairs=[("a", "zed")])
