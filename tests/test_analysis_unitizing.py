"""Krippendorff's unitizing alpha: the published example, hand-computed cases, a loop oracle."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgelab.analysis import unitizing, unitizing_alpha, unitizing_alpha_units

# Krippendorff (2004) Content Analysis p. 254, copied from agreement_canon.json ("unitizing",
# "krippendorff2004_p254"): continuum begins at 150, length 300; units are
# (begin, length, coder, category). Published: alpha_u 0.8591, alpha_c 0.7286, alpha_k 1.0
# (values as asserted by the DKPro Statistics test suite).
CANON_CONTINUUM = {"begin": 150, "length": 300}
CANON_UNITS = [
    [225, 70, 0, "c"],
    [370, 30, 0, "c"],
    [220, 80, 1, "c"],
    [355, 20, 1, "c"],
    [400, 20, 1, "c"],
    [180, 60, 0, "k"],
    [300, 50, 0, "k"],
    [180, 60, 1, "k"],
    [300, 50, 1, "k"],
]
CANON_EXPECTED = {"alpha_u": 0.8591, "category_alpha_c": 0.7286, "category_alpha_k": 1.0}


def units_frame(units, continuum=0) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"continuum": continuum, "coder": coder, "label": category, "start": begin, "end": begin + length}
            for begin, length, coder, category in units
        ]
    )


def one_continuum(begin: int, length: int, continuum=0) -> pd.DataFrame:
    return pd.DataFrame({"continuum": [continuum], "begin": [begin], "length": [length]})


def test_doctests() -> None:
    assert doctest.testmod(unitizing).failed == 0


def test_krippendorff_2004_published_example() -> None:
    table = unitizing_alpha_units(
        units_frame(CANON_UNITS), one_continuum(CANON_CONTINUUM["begin"], CANON_CONTINUUM["length"])
    ).set_index("label")
    assert table.at["c", "alpha"] == pytest.approx(CANON_EXPECTED["category_alpha_c"], abs=1e-4)
    assert table.at["k", "alpha"] == pytest.approx(CANON_EXPECTED["category_alpha_k"], abs=1e-4)
    # the intermediate values printed in the book (and asserted by DKPro)
    assert table.at["c", "observed_disagreement"] == pytest.approx(0.0144, abs=1e-4)
    assert table.at["c", "expected_disagreement"] == pytest.approx(0.0532, abs=1e-4)
    assert table.at["k", "observed_disagreement"] == 0.0
    assert table.at["k", "expected_disagreement"] == pytest.approx(0.0490, abs=1e-4)
    # exact u-alpha = 1 - 0.014444 / (0.053222 + 0.048979) = 0.85867; the book's 0.8591 divides
    # the rounded disagreements: 1 - 0.0144 / (0.0532 + 0.0490) = 0.85910
    alpha_u = table.at["(all)", "alpha"]
    assert alpha_u == pytest.approx(0.858665, abs=1e-6)
    assert alpha_u == pytest.approx(CANON_EXPECTED["alpha_u"], abs=0.0005)
    rounded = 1 - round(table.at["c", "observed_disagreement"], 4) / (
        round(table.at["c", "expected_disagreement"], 4) + round(table.at["k", "expected_disagreement"], 4)
    )
    assert round(rounded, 4) == CANON_EXPECTED["alpha_u"]


def test_overlapping_units_by_hand() -> None:
    # L = 10, coders a and b, label x: a marks [2, 5), b marks [3, 5).
    # D_o: one overlapping pair, distance (2-3)^2 + (5-5)^2 = 1, counted for (a,b) and (b,a):
    #      2 / (m (m-1) L^2) = 2 / (2 * 1 * 100) = 0.01
    # D_e: N = m L = 20, unit lengths 3 and 2 (N_c = 2), gaps a: 2, 5; b: 3, 5.
    #      l = 3: (N_c-1)(2*27 - 3*9 + 3)/3 = 10;  9 * [(5-3+1) + (3-3+1) + (5-3+1)] = 63  -> 73
    #      l = 2: (2*8 - 3*4 + 2)/3 = 2;  4 * [(2-2+1) + (5-2+1) + (3-2+1) + (5-2+1)] = 44  -> 46
    #      D_e = 2/10 * 119 / (20*19 - (3*2 + 2*1)) = 23.8 / 372
    #      alpha = 1 - 0.01 / (23.8/372) = 1 - 3.72/23.8
    units = units_frame([[2, 3, "a", "x"], [3, 2, "b", "x"]])
    row = unitizing_alpha_units(units, one_continuum(0, 10)).iloc[0]
    assert row.observed_disagreement == pytest.approx(0.01)
    assert row.expected_disagreement == pytest.approx(23.8 / 372)
    assert row.alpha == pytest.approx(1 - 3.72 / 23.8)


def test_unit_inside_a_gap_by_hand() -> None:
    # L = 10: a marks [2, 4), b marks nothing. D_o: a's unit lies in b's gap: 2^2 for (a,b)
    # and for (b,a): 8 / (2 * 100) = 0.04.  D_e: N_c = 1, gaps a: 2, 6; b: 10;
    # l = 2: 0 + 4 * [(2-2+1) + (6-2+1) + (10-2+1)] = 60;  D_e = 2/10 * 60 / (380 - 2) = 12/378
    # alpha = 1 - 0.04 * 378 / 12 = -0.26
    units = units_frame([[2, 2, "a", "x"]])
    coders = pd.DataFrame({"continuum": [0, 0], "coder": ["a", "b"]})
    row = unitizing_alpha_units(units, one_continuum(0, 10), coders).iloc[0]
    assert row.observed_disagreement == pytest.approx(0.04)
    assert row.expected_disagreement == pytest.approx(12 / 378)
    assert row.alpha == pytest.approx(-0.26)


def test_identical_coders_give_one_and_degenerate_cases_nan() -> None:
    same = units_frame([[0, 5, "a", "x"], [0, 5, "b", "x"], [8, 2, "a", "y"], [8, 2, "b", "y"]])
    assert unitizing_alpha_units(same, one_continuum(0, 20)).alpha.tolist() == [1.0, 1.0, 1.0]
    single = unitizing_alpha_units(units_frame([[0, 5, "a", "x"]]), one_continuum(0, 20))
    assert single.alpha.isna().all() and "two or more coders" in single.reason.iloc[-1]
    # units filling the whole text still leave chance disagreement (other unitizations exist)
    full = unitizing_alpha_units(units_frame([[0, 20, "a", "x"], [0, 20, "b", "x"]]), one_continuum(0, 20))
    assert full.alpha.iloc[0] == 1.0
    empty = unitizing_alpha_units(pd.DataFrame())
    assert empty.label.tolist() == ["(all)"] and empty.alpha.isna().all()


# ---- a loop oracle: Krippendorff's definition section by section ------------------------


def oracle(units, lengths: dict, coders: dict) -> dict:
    """u-alpha by looping over every pair of sections (the DKPro sweep, unvectorised),
    summed over continua: D_o numerators and gaps per continuum, normalised as documented."""
    labels = sorted({u[3] for u in units})
    total_length = sum(lengths[k] for k in lengths if len(coders[k]) >= 2)
    pairs = sum(len(coders[k]) * (len(coders[k]) - 1) * lengths[k] for k in lengths if len(coders[k]) >= 2)
    n_positions = sum(len(coders[k]) * lengths[k] for k in lengths if len(coders[k]) >= 2)

    def sections(k, coder, label):
        marked = sorted((s, e) for kk, s, e, lab, c in units if kk == k and c == coder and lab == label)
        out, pos = [], 0
        for s, e in marked:
            if s > pos:
                out.append((pos, s, False))
            out.append((s, e, True))
            pos = e
        if pos < lengths[k]:
            out.append((pos, lengths[k], False))
        return out

    def distance(a, b):
        (s1, e1, u1), (s2, e2, u2) = a, b
        if u1 and u2 and s1 < e2 and s2 < e1:
            return (s1 - s2) ** 2 + (e1 - e2) ** 2
        if u1 and not u2 and s1 >= s2 and e1 <= e2:
            return (e1 - s1) ** 2
        if u2 and not u1 and s2 >= s1 and e2 <= e1:
            return (e2 - s2) ** 2
        return 0

    if pairs == 0:
        return {label: math.nan for label in [*labels, "(all)"]}
    result = {}
    observed_total = expected_total = 0.0
    for label in labels:
        observed = 0.0
        lengths_c, gaps = [], []
        for k in lengths:
            if len(coders[k]) < 2:
                continue
            for i in coders[k]:
                for j in coders[k]:
                    if i != j:
                        for a in sections(k, i, label):
                            for b in sections(k, j, label):
                                observed += distance(a, b)
                for s, e, is_unit in sections(k, i, label):
                    (lengths_c if is_unit else gaps).append(e - s)
        n_c = len(lengths_c)
        expected = 0.0
        for length in lengths_c:
            expected += (n_c - 1) * (2 * length**3 - 3 * length**2 + length) / 3
            expected += length**2 * sum(g - length + 1 for g in gaps if g >= length)
        expected *= 2 / total_length
        expected /= n_positions * (n_positions - 1) - sum(x * (x - 1) for x in lengths_c)
        observed /= pairs * total_length
        observed_total += observed
        expected_total += expected
        result[label] = 1 - observed / expected if expected > 0 else math.nan
    result["(all)"] = 1 - observed_total / expected_total if expected_total > 0 else math.nan
    return result


# units of one coder and label never overlap (u-alpha's assumption): build them as a
# sequence of (gap, length) steps per coder, label and continuum
@st.composite
def studies(draw):
    n_continua = draw(st.integers(1, 3))
    lengths = {k: draw(st.integers(5, 40)) for k in range(n_continua)}
    coders = {k: draw(st.sets(st.sampled_from("abcd"), min_size=1, max_size=4)) for k in range(n_continua)}
    units = []
    for k in range(n_continua):
        for coder in sorted(coders[k]):
            for label in "xy":
                pos = draw(st.integers(0, 10))
                for _ in range(draw(st.integers(0, 3))):
                    length = draw(st.integers(1, 8))
                    if pos + length > lengths[k]:
                        break
                    units.append((k, pos, pos + length, label, coder))
                    pos += length + draw(st.integers(0, 6))
    return units, lengths, {k: sorted(v) for k, v in coders.items()}


@settings(max_examples=150, deadline=None)
@given(studies())
def test_matches_section_loop_oracle(study) -> None:
    units, lengths, coders = study
    frame = pd.DataFrame(units, columns=["continuum", "start", "end", "label", "coder"])
    continua = pd.DataFrame({"continuum": list(lengths), "begin": 0, "length": list(lengths.values())})
    coder_rows = pd.DataFrame([(k, c) for k, cs in coders.items() for c in cs], columns=["continuum", "coder"])
    table = unitizing_alpha_units(frame, continua, coder_rows).set_index("label")
    expected = oracle(units, lengths, coders)
    for label, value in expected.items():
        got = table.at[label, "alpha"]
        if math.isnan(value):
            assert math.isnan(got)
        else:
            assert got == pytest.approx(value, rel=1e-9, abs=1e-12)


# ---- from the tidy spans table ------------------------------------------------------------


def spans_table(rows) -> pd.DataFrame:
    """rows: (task_id, annotator, start, end, label)."""
    return pd.DataFrame(
        [
            {"project": "p", "task_id": t, "annotator": a, "field": "summary", "start": s, "end": e, "label": lab}
            for t, a, s, e, lab in rows
        ]
    )


def test_from_spans_matches_units() -> None:
    # the canonical example, shifted to start at 0, as example 7 of a spans table
    rows = [(7, f"coder{c}", b - 150, b - 150 + length, cat) for b, length, c, cat in CANON_UNITS]
    table = unitizing_alpha(spans_table(rows), lengths={7: 300}).set_index("label")
    assert table.at["(all)", "alpha"] == pytest.approx(0.858665, abs=1e-6)
    as_frame = unitizing_alpha(
        spans_table(rows),
        lengths=pd.DataFrame({"project": ["p"], "task_id": [7], "field": ["summary"], "length": [300]}),
    )
    assert as_frame.alpha.tolist() == pytest.approx(table.alpha.tolist())


def test_examples_without_spans_count_when_their_length_is_known() -> None:
    rows = [(1, "a", 0, 4, "x"), (1, "b", 1, 4, "x")]
    alone = unitizing_alpha(spans_table(rows), lengths={1: 10}).set_index("label")
    # a second 10-character text that both coders left unmarked: more agreement on gaps
    more = unitizing_alpha(spans_table(rows), examples=[1, 2], lengths={1: 10, 2: 10}).set_index("label")
    assert more.at["x", "n_continua"] == 2
    assert more.at["x", "alpha"] > alone.at["x", "alpha"]
    # without lengths the text ends at its last marked character
    guessed = unitizing_alpha(spans_table(rows)).set_index("label")
    assert guessed.at["x", "alpha"] == pytest.approx(
        unitizing_alpha(spans_table(rows), lengths={1: 4}).set_index("label").at["x", "alpha"]
    )


def test_overlapping_spans_of_one_coder_are_merged() -> None:
    rows = [(1, "a", 0, 4, "x"), (1, "a", 2, 6, "x"), (1, "b", 0, 6, "x")]
    table = unitizing_alpha(spans_table(rows), lengths={1: 20})
    assert table.alpha.iloc[0] == 1.0 and table.n_units.iloc[0] == 2


def test_coders_per_example_from_design() -> None:
    # c annotated only example 2; on example 1 only a and b count
    rows = [(1, "a", 0, 4, "x"), (1, "b", 0, 4, "x"), (2, "a", 0, 4, "x"), (2, "c", 5, 9, "x")]
    design = pd.DataFrame({"project": "p", "task_id": [1, 1, 2, 2], "annotator": ["a", "b", "a", "c"]})
    table = unitizing_alpha(spans_table(rows), examples=design, lengths={1: 10, 2: 10}).set_index("label")
    expected = oracle(
        [(1, 0, 4, "x", "a"), (1, 0, 4, "x", "b"), (2, 0, 4, "x", "a"), (2, 5, 9, "x", "c")],
        {1: 10, 2: 10},
        {1: ["a", "b"], 2: ["a", "c"]},
    )
    assert table.at["x", "alpha"] == pytest.approx(expected["x"])
    assert np.isfinite(table.at["(all)", "alpha"])
