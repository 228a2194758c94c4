"""backend.llm.answers: JSON extraction and repair, span lines, labels, ratings."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgelab.backend.llm.answers import (
    extract_json,
    parse_answer,
    parse_json_answer,
    parse_rating,
    parse_span_lines,
    resolve_label,
)
from judgelab.backend.llm.contracts import ParsedAnswer, RawSpan

ANSWER = {"annotations": [{"reason": "r", "text": "two goals", "annotation_type": 1}]}

# ------------------------------------------------------------------------------------------
# extract_json: each repair case


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(ANSWER),
        "```json\n" + json.dumps(ANSWER) + "\n```",
        "```JSON\n" + json.dumps(ANSWER) + "\n```\nHope this helps.",
        "```\n" + json.dumps(ANSWER, indent=2) + "\n```",
        "Here is my analysis:\n" + json.dumps(ANSWER) + "\nLet me know if you need more.",
        "Sure [see below]: " + json.dumps(ANSWER) + " (done)",
        "  \ufeff" + json.dumps(ANSWER) + "\n",
    ],
    ids=["plain", "json-fence", "json-fence-prose", "bare-fence", "prose-around", "brackets-in-prose", "bom"],
)
def test_extract_json_finds_the_answer(text):
    value, _problems = extract_json(text)
    assert value == ANSWER


@pytest.mark.parametrize(
    ("text", "expected", "problem"),
    [
        ("{'annotations': [{'text': 'a', 'type': 0}]}", {"annotations": [{"text": "a", "type": 0}]}, "Python literal"),
        ('{"a": True, "b": None, "c": False}', {"a": True, "b": None, "c": False}, "Python literal"),
        ('{"a": [1, 2,], "b": {"c": 3,},}', {"a": [1, 2], "b": {"c": 3}}, "trailing commas"),
        ("{'a': true, 'b': [1,],}", {"a": True, "b": [1]}, "repaired"),
        ('{annotations: [{text: "x"}]}', {"annotations": [{"text": "x"}]}, "unquoted keys"),
        ('{"a": 1, // a comment\n "b": 2}', {"a": 1, "b": 2}, "comments"),
        ('{"a": "line\nbreak"}', {"a": "line\nbreak"}, None),  # raw control character
        ("{'text': \"don't\"}", {"text": "don't"}, "Python literal"),
    ],
)
def test_extract_json_repairs(text, expected, problem):
    value, problems = extract_json(text)
    assert value == expected
    if problem:
        assert any(problem in p for p in problems), problems


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # cut inside the second item: the incomplete item is dropped, the first kept
        ('{"annotations": [{"text": "a", "type": 0}, {"text": "b", "ty', {"annotations": [{"text": "a", "type": 0}]}),
        # cut inside a string of the only item
        ('{"annotations": [{"text": "abc de', {"annotations": []}),
        # cut after a complete item
        ('{"annotations": [{"text": "a"}, ', {"annotations": [{"text": "a"}]}),
        # cut in a top-level pair after the list: that pair goes, the list stays
        ('{"annotations": [], "SP": 3, "SC": "2', {"annotations": [], "SP": 3}),
        # a number at the very end may be incomplete ("3" of "35")
        ('{"SP": 4, "SC": 3', {"SP": 4}),
        # inside a fence that never closes
        ('```json\n{"annotations": [{"text": "a"}, {"text": "b"', {"annotations": [{"text": "a"}]}),
        # an escape cut in half
        ('{"annotations": [{"text": "a"}, {"text": "caf\\u00', {"annotations": [{"text": "a"}]}),
        ('[{"text": "a"}, {"text": "b"}', [{"text": "a"}, {"text": "b"}]),
    ],
)
def test_extract_json_truncated(text, expected):
    value, problems = extract_json(text)
    assert value == expected
    assert any("truncated" in p for p in problems)


@pytest.mark.parametrize("text", ["", "   ", "no json here", "{not json at all}", "[Label: X]", None, b"\xff\xfe", 42])
def test_extract_json_nothing_usable(text):
    value, problems = extract_json(text)  # type: ignore[arg-type]
    assert value is None
    assert problems


def test_extract_json_prefers_an_object_over_an_earlier_list():
    value, _ = extract_json('Scores [1, 2] then {"annotations": []}')
    assert value == {"annotations": []}


def test_extract_json_deep_nesting_does_not_raise():
    value, problems = extract_json("[" * 50_000 + "]" * 50_000)
    assert value is None or isinstance(value, list)
    value, problems = extract_json("{" * 5_000)
    assert isinstance(problems, list)


# ------------------------------------------------------------------------------------------
# parse_json_answer


def test_factgenie_answer():
    a = parse_json_answer(
        '{"annotations": [{"reason": "The data says 1.", "text": "two goals", "annotation_type": 0},'
        ' {"reason": "Not in the data", "text": "at home", "annotation_type": 1}]}'
    )
    assert a.spans == [
        RawSpan("two goals", 0, "The data says 1."),
        RawSpan("at home", 1, "Not in the data"),
    ]
    assert a.dropped == 0 and not a.none_identified and a.fields == {}


@pytest.mark.parametrize("key", ["annotations", "errors", "spans", "Annotations"])
def test_span_list_keys(key):
    a = parse_json_answer(json.dumps({key: [{"text": "x", "label": "Major"}], "SP": 3}))
    assert a.spans == [RawSpan("x", "Major")]
    assert a.fields == {"SP": 3}


def test_top_level_list():
    a = parse_json_answer('[{"span": "x", "category": "Minor", "explanation": "why"}]')
    assert a.spans == [RawSpan("x", "Minor", "why")]


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"text": "x", "annotation_type": 2}, RawSpan("x", 2)),
        ({"text": "x", "type": "Incoherent"}, RawSpan("x", "Incoherent")),
        ({"text": "x", "label": "Minor", "note": "n"}, RawSpan("x", "Minor", "n")),
        ({"text": "x", "category": "Other", "explanation": "e"}, RawSpan("x", "Other", "e")),
        ({"text": "x", "annotation_type": 2.0}, RawSpan("x", 2)),
        ({"text": "x", "occurrence_index": 1}, RawSpan("x", occurrence_index=1)),
        ({"text": "x", "occurence_index": "2"}, RawSpan("x", occurrence_index=2)),  # factgenie's spelling
        ({"text": "x", "occurrence_index": -1}, RawSpan("x")),
        ({"text": "x", "label": ["A", "B"]}, RawSpan("x", "A")),
        ({"TEXT": "x", "Label": "A"}, RawSpan("x", "A")),
        ({"text": 1999}, RawSpan("1999")),
        ({"text": "x", "reason": {"why": 1}}, RawSpan("x", reason='{"why": 1}')),
        ({"text": "x", "field": "line_3"}, RawSpan("x", field="line_3")),
    ],
)
def test_item_fields(item, expected):
    a = parse_json_answer(json.dumps({"annotations": [item]}))
    assert a.spans == [expected]


def test_bad_items_are_dropped_one_by_one():
    a = parse_json_answer(
        json.dumps(
            {
                "annotations": [
                    {"text": "kept", "annotation_type": 0},
                    "a bare string",
                    42,
                    None,
                    {"reason": "no text"},
                    {"text": "   "},
                    {"text": True},
                    {"text": "kept too"},
                ]
            }
        )
    )
    assert [s.text for s in a.spans] == ["kept", "kept too"]
    assert a.dropped == 6
    assert len([p for p in a.problems if "dropped" in p]) == 6
    assert not a.none_identified


def test_other_fields_untouched():
    payload = {"annotations": [], "SP": 3, "SC": "2", "verdicts": [{"line": 1, "v": "Yes"}], "lines": ["a", "b"]}
    a = parse_json_answer(json.dumps(payload))
    assert a.fields == {"SP": 3, "SC": "2", "verdicts": [{"line": 1, "v": "Yes"}], "lines": ["a", "b"]}
    assert a.none_identified


def test_ratings_only_answer():
    a = parse_json_answer('{"SP": 3, "SC": "2"}')
    assert a.spans == [] and a.fields == {"SP": 3, "SC": "2"} and not a.none_identified


@pytest.mark.parametrize("value", [[], None, "", "None identified", "none"])
def test_explicitly_empty(value):
    a = parse_json_answer(json.dumps({"annotations": value}))
    assert a.spans == [] and a.none_identified


def test_truncated_answer_is_not_none_identified():
    a = parse_json_answer('{"annotations": [{"text": "abc", "annotation_type": 1, "reason": "bla bla')
    assert a.spans == [] and not a.none_identified
    assert a.dropped == 1


def test_truncated_answer_keeps_complete_items():
    a = parse_json_answer('```json\n{"annotations": [{"text": "a", "annotation_type": 1}, {"text": "b", "annot')
    assert a.spans == [RawSpan("a", 1)]
    assert a.dropped == 1


def test_single_object_instead_of_list():
    a = parse_json_answer('{"annotations": {"text": "x", "type": 1}}')
    assert a.spans == [RawSpan("x", 1)]


# ------------------------------------------------------------------------------------------
# span lines (seed 000 format)

SEED_ANSWER = """Problematic Spans Identified in the Summary:
Span 1: only watch movies people with no skill in do (Label: Incoherent)
Span 2: I view her like I like people with no skill in do. (Label: Factually Incorrect)"""


def test_seed_format():
    a = parse_span_lines(SEED_ANSWER)
    assert a.spans == [
        RawSpan("only watch movies people with no skill in do", "Incoherent"),
        RawSpan("I view her like I like people with no skill in do.", "Factually Incorrect"),
    ]
    assert not a.none_identified


@pytest.mark.parametrize(
    ("line", "text", "label"),
    [
        ("Span 1: why did you decide to switch? (Label: Irrelevant)", "why did you decide to switch?", "Irrelevant"),
        ('Span 1: "why did you decide" (Label: Irrelevant)', "why did you decide", "Irrelevant"),
        ("Span 1: “why did you decide” (label: irrelevant)", "why did you decide", "irrelevant"),
        ("Span 1: 'why' (Label:Irrelevant)", "why", "Irrelevant"),
        ("span 2 - why did you (LABEL : Irrelevant)", "why did you", "Irrelevant"),
        ("- Span 3: why (Label: Irrelevant)", "why", "Irrelevant"),
        ("* Span #4: why (Label: Irrelevant)", "why", "Irrelevant"),
        ("1. Span 1: why (Label: Irrelevant)", "why", "Irrelevant"),
        ("**Span 1:** why (Label: Irrelevant)", "why", "Irrelevant"),
        ("Span 1) why [Label: Irrelevant]", "why", "Irrelevant"),
        ("1. why did you (Label: Irrelevant)", "why did you", "Irrelevant"),
        ("• why did you (Label: Irrelevant)", "why did you", "Irrelevant"),
        ("Span 1: why did you - Label: Irrelevant", "why did you", "Irrelevant"),
        ("Span 1: a (small) detail (Label: Irrelevant)", "a (small) detail", "Irrelevant"),
        ("Span 1: why did you", "why did you", None),
    ],
)
def test_span_line_variants(line, text, label):
    a = parse_span_lines(line)
    assert [(s.text, s.label) for s in a.spans] == [(text, label)]


def test_reason_after_label_and_on_next_lines():
    a = parse_span_lines(
        "Span 1: foo (Label: Irrelevant) - not in the post\nSpan 2: bar\nLabel: Incoherent\nReason: broken grammar"
    )
    assert a.spans == [
        RawSpan("foo", "Irrelevant", "not in the post"),
        RawSpan("bar", "Incoherent", "broken grammar"),
    ]


@pytest.mark.parametrize(
    "text",
    ["None identified", "none identified.", "NONE IDENTIFIED", "Problematic Spans Identified in the Summary:\nNone"],
)
def test_none_identified(text):
    a = parse_span_lines(text)
    assert a.none_identified and a.spans == []
    assert parse_answer(text).none_identified


def test_prose_is_not_a_span():
    a = parse_span_lines("The summary is mostly fine.\nOverall score: 7/10")
    assert a.spans == [] and not a.none_identified


# ------------------------------------------------------------------------------------------
# parse_answer


def test_parse_answer_prefers_json():
    a = parse_answer('Span 1: x (Label: A)\n```json\n{"annotations": [{"text": "y", "label": "B"}]}\n```')
    assert a.spans == [RawSpan("y", "B")]


def test_parse_answer_ignores_useless_json_next_to_span_lines():
    a = parse_answer("Span 1: foo (Label: A)\nScores per span: [1, 2]")
    assert a.spans == [RawSpan("foo", "A")]


def test_parse_answer_falls_back_to_lines():
    a = parse_answer("Span 1: the {team} won [twice] (Label: Irrelevant)")
    assert a.spans == [RawSpan("the {team} won [twice]", "Irrelevant")]


# ------------------------------------------------------------------------------------------
# resolve_label

LABELS = ["Contradictory", "Not Checkable", "Incorrect", "Incoherent", "Other"]
INDEX = dict(enumerate(LABELS))


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("Incorrect", "Incorrect"),
        ("incorrect", "Incorrect"),
        ("not_checkable", "Not Checkable"),
        ("NOT-CHECKABLE", "Not Checkable"),
        ("notcheckable", "Not Checkable"),
        (2, "Incorrect"),
        ("2", "Incorrect"),
        (2.0, "Incorrect"),
        ("Contra", "Contradictory"),
        ("Incoh", "Incoherent"),
        ("Inco", None),  # ambiguous prefix
        (99, None),
        ("Wrong", None),
        (None, None),
        (True, None),
        ("", None),
        ([1], None),
    ],
)
def test_resolve_label(label, expected):
    assert resolve_label(label, LABELS, INDEX) == expected


def test_resolve_label_index_needs_a_map():
    assert resolve_label(2, LABELS) is None
    assert resolve_label("2", ["1", "2", "3"]) == "2"  # a label that is itself a number


# ------------------------------------------------------------------------------------------
# parse_rating


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, (3, "ok")),
        ("3", (3, "ok")),
        ("3/5", (3, "ok")),
        ("3 - Full Preservation", (3, "ok")),
        ("Score: 4", (4, "ok")),
        ("**4**", (4, "ok")),
        ("four", (4, "ok")),
        (3.0, (3, "ok")),
        ("4.6", (5, "rounded")),
        (4.4, (4, "rounded")),
        (2.5, (3, "rounded")),  # half up, not banker's rounding
        ("4,6", (5, "rounded")),
        (0, (1, "clamped")),
        (6, (5, "clamped")),
        ("5.7", (5, "clamped")),
        (7, (None, "dropped")),
        (-3, (None, "dropped")),
        (True, (None, "dropped")),
        (None, (None, "dropped")),
        ("excellent", (None, "dropped")),
        ("", (None, "dropped")),
        (float("nan"), (None, "dropped")),
        (float("inf"), (None, "dropped")),
        ([3], (None, "dropped")),
        ({"score": 3}, (None, "dropped")),
    ],
)
def test_parse_rating(value, expected):
    assert parse_rating(value, 1, 5) == expected


def test_parse_rating_other_scales():
    assert parse_rating("0", 0, 4) == (0, "ok")
    assert parse_rating(-1, 0, 4) == (0, "clamped")
    assert parse_rating(3, 5, 1) == (3, "ok")  # reversed bounds


# ------------------------------------------------------------------------------------------
# fuzz

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def check_answer(a: ParsedAnswer) -> None:
    assert isinstance(a, ParsedAnswer)
    assert a.dropped >= 0
    assert isinstance(a.fields, dict)
    for s in a.spans:
        assert isinstance(s.text, str) and s.text.strip()
        assert s.label is None or isinstance(s.label, str | int)
        assert s.occurrence_index is None or s.occurrence_index >= 0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_fuzz_arbitrary_text(text):
    check_answer(parse_answer(text))
    check_answer(parse_json_answer(text))
    check_answer(parse_span_lines(text))
    value, problems = extract_json(text)
    assert isinstance(problems, list)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.text(max_size=20), st.text(max_size=20), st.sampled_from(["", "```json\n", "```\n"]))
def test_fuzz_arbitrary_json_in_prose(value, before, after, fence):
    body = json.dumps(value)
    text = before + "\n" + fence + body + ("\n```" if fence else "") + "\n" + after
    check_answer(parse_answer(text))
    if isinstance(value, dict | list) and not fence and not before.strip():
        assert extract_json(body)[0] == value


@settings(max_examples=200, deadline=None)
@given(json_values, st.data())
def test_fuzz_truncated_json(value, data):
    body = json.dumps({"annotations": [], "x": value}, ensure_ascii=data.draw(st.booleans()))
    cut = data.draw(st.integers(0, len(body)))
    check_answer(parse_answer(body[:cut]))


annotation_items = st.fixed_dictionaries(
    {
        "reason": st.text(max_size=10),
        "text": st.text(min_size=1, max_size=12).filter(str.strip),
        "annotation_type": st.integers(0, 5),
    }
)


@settings(max_examples=300, deadline=None)
@given(st.lists(annotation_items, max_size=6), st.booleans(), st.data())
def test_fuzz_truncation_keeps_a_prefix(items, ascii_only, data):
    """Cut anywhere, the spans read are exactly the first complete items."""
    body = json.dumps({"annotations": items}, ensure_ascii=ascii_only)
    cut = data.draw(st.integers(0, len(body)))
    a = parse_json_answer(body[:cut])
    got = [(s.text, s.label) for s in a.spans]
    want = [(i["text"], i["annotation_type"]) for i in items]
    assert got == want[: len(got)]
    if cut == len(body):
        assert got == want


span_texts = st.text(alphabet="abcXYZ019 .,;!?é😀", min_size=1, max_size=15).filter(str.strip)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(span_texts, st.sampled_from(["Irrelevant", "Incoherent", "Factually Incorrect"])), max_size=6)
)
def test_fuzz_span_lines_round_trip(spans):
    text = "\n".join(f"Span {i + 1}: {t} (Label: {label})" for i, (t, label) in enumerate(spans))
    a = parse_span_lines(text)
    check_answer(a)
    assert [(s.text, s.label) for s in a.spans] == [(t.strip(), label) for t, label in spans]


@settings(max_examples=200, deadline=None)
@given(st.one_of(json_values, st.text()), st.integers(-3, 3), st.integers(3, 10))
def test_fuzz_rating_and_label(value, low, high):
    rating, status = parse_rating(value, low, high)
    assert status in ("ok", "rounded", "clamped", "dropped")
    assert (rating is None) == (status == "dropped")
    if rating is not None:
        assert low <= rating <= high
    assert resolve_label(value, LABELS, INDEX) in (None, *LABELS)


def test_doctests_of_the_answer_modules():
    import doctest

    from judgelab.backend.llm import answers, json_repair

    assert doctest.testmod(answers).failed == 0
    assert doctest.testmod(json_repair).failed == 0
