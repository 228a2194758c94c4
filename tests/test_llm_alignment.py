"""backend.llm.alignment: every match kind, repeats, overlaps, and fuzz invariants."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from judgelab.backend.llm.alignment import align_spans, match_counts, normalize_with_map
from judgelab.backend.llm.contracts import MATCH_KINDS, AlignmentReport, RawSpan

OUTCOMES = set(MATCH_KINDS) | {"overlap_dropped"}


def check(text: str, spans: list[RawSpan], report: AlignmentReport, overlap: str = "forbid") -> None:
    """The invariants every report keeps."""
    assert sum(report.counts.values()) == len(spans)
    assert set(report.counts) <= OUTCOMES
    assert sum(report.counts[k] for k in ("exact", "case", "normalized", "fuzzy")) == len(report.spans)
    for s in report.spans:
        assert 0 <= s.start < s.end <= len(text)
        assert text[s.start : s.end] == s.text
        assert s.text.strip()
        assert s.match in MATCH_KINDS and s.match != "unmatched"
    assert [(s.start, s.end) for s in report.spans] == sorted((s.start, s.end) for s in report.spans)
    if overlap == "forbid":
        for a, b in zip(report.spans, report.spans[1:], strict=False):
            assert a.end <= b.start


def one(text: str, span: str | RawSpan, **kwargs) -> tuple[int, int, str] | None:
    raw = span if isinstance(span, RawSpan) else RawSpan(span)
    report = align_spans(text, [raw], **kwargs)
    check(text, [raw], report, kwargs.get("overlap", "forbid"))
    if not report.spans:
        return None
    s = report.spans[0]
    return s.start, s.end, s.match


# ------------------------------------------------------------------------------------------
# match kinds


def test_exact():
    assert one("The team won 3-0 at home.", "won 3-0") == (9, 16, "exact")


def test_offsets_are_code_points_with_emoji():
    text = "Great 😀😀 game, Café crème! 👍🏽 again"
    start, end, kind = one(text, "game, Café")
    assert (start, end, kind) == (text.index("game"), text.index("game") + len("game, Café"), "exact")
    assert one(text, "👍🏽 again") == (text.index("👍"), len(text), "exact")


def test_case():
    text = "Sport Recife won. SPORT RECIFE lost."
    assert one(text, "sport recife won") == (0, 16, "case")
    assert one(text, "Sport Recife lost") == (18, 35, "case")


def test_case_with_length_changing_fold():
    text = "Die STRASSE ist lang, die Straße auch."
    assert one(text, "straße ist") == (4, 15, "case")  # "STRASSE" casefolds like "straße"
    text = "the ﬁnal whistle"
    assert one(text, "FINAL whistle") == (4, 16, "case")  # the ligature casefolds to "fi"


@pytest.mark.parametrize(
    ("text", "span", "expected"),
    [
        ("his team’s early success", "team's early", "team’s early"),  # curly apostrophe
        ("it said “final” today", '"final" today', "“final” today"),  # curly double quotes
        ("scores 3–0 and 2—1", "3-0 and 2-1", "3–0 and 2—1"),  # en/em dash vs hyphen
        ("a non‑breaking hyphen", "non-breaking", "non‑breaking"),  # U+2011
        ("scored  two   goals", "scored two goals", "scored  two   goals"),  # double spaces
        ("scored\ntwo goals", "scored two goals", "scored\ntwo goals"),  # newline
        ("wait… what", "wait... what", "wait… what"),  # ellipsis
        ("the ﬁnal “whistle”", 'final "whistle"', "ﬁnal “whistle”"),  # NFKC ligature
        ("ＡＢＣ corp", "abc corp", "ＡＢＣ corp"),  # full width
        ("zero\u200bwidth joiner", "zerowidth joiner", "zero\u200bwidth joiner"),
        ("Cafe\u0301 crème", "Café crème", "Cafe\u0301 crème"),  # decomposed accent in the text
        ("Café crème", "Cafe\u0301 crème", "Café crème"),  # decomposed accent in the span
        ("a\u00a0non-breaking space", "a non-breaking", "a\u00a0non-breaking"),
    ],
)
def test_normalized(text, span, expected):
    start, end, kind = one(text, span)
    assert kind == "normalized"
    assert text[start:end] == expected


def test_normalized_offsets_map_back_after_emoji_and_accents():
    text = "😀 Dvořák’s “Symphony”   no. 9 — in E minor 😀"
    start, end, kind = one(text, 'dvořák\'s "symphony" no. 9 - in e minor')
    assert kind == "normalized"
    assert (start, end) == (2, len(text) - 2)


def test_normalize_with_map():
    view = normalize_with_map("Don’t  STOP—now")
    assert view.text == "don't stop-now"
    assert view.original(5, 6) == (5, 7)  # the collapsed space covers both spaces


def test_fuzzy_paraphrase():
    text = "Chrystian Barletta from Sport Recife scored two goals and assisted another one."
    start, end, kind = one(text, "scored goals and assisted")
    assert kind == "fuzzy"
    assert text[start:end] == "scored two goals and assisted"
    start, end, kind = one(text, "Barleta from Sport Recif")  # misspelled
    assert (text[start:end], kind) == ("Barletta from Sport Recife", "fuzzy")


def test_fuzzy_threshold():
    text = "The weather will be sunny with light winds in the afternoon."
    assert one(text, "sunny with strong winds", fuzzy_threshold=0.95) is None
    assert one(text, "sunny with strong winds", fuzzy_threshold=0.7)[2] == "fuzzy"
    assert one(text, "completely unrelated sentence here") is None


def test_truncated_span_text_snaps_to_the_word():
    text = "Barletta scored two goals and assisted another one before the break."
    assert one(text, "scored two goa") == (9, 25, "fuzzy")  # cut at the end
    assert one(text, "cored two goals") == (9, 25, "fuzzy")  # cut at the start
    assert one(text, "assisted another one...") == (30, 50, "exact")  # an ellipsis marks the cut
    assert one(text, "scored two go…") == (9, 25, "fuzzy")
    # character-level schemas keep the partial word
    assert one(text, "scored two goa", snap_words=False) == (9, 23, "exact")


def test_whole_word_occurrence_preferred():
    text = "Start the art show: art is here."
    assert one(text, "art") == (10, 13, "exact")  # not inside "Start"


def test_surrounding_whitespace_and_quotes():
    text = 'He said "no" and left.'
    assert one(text, '  "no"  ') == (8, 12, "exact")  # quotes that are in the text stay
    assert one(text, '"and left"') == (13, 21, "exact")  # quotes that are not are stripped
    assert one(text, "“and left.”") == (13, 22, "exact")
    assert one(text, "   ") is None
    assert one(text, '""') is None


def test_unmatched_and_empty_inputs():
    report = align_spans("", [RawSpan("x")])
    assert report.counts == {"unmatched": 1}
    report = align_spans("some text", [])
    assert report.spans == [] and sum(report.counts.values()) == 0
    report = align_spans("some text", [RawSpan("")])
    assert report.counts == {"unmatched": 1}


def test_labels_and_reasons_pass_through():
    report = align_spans("a b c", [RawSpan("b", label=2, reason="why")])
    s = report.spans[0]
    assert (s.label, s.reason, s.text) == (2, "why", "b")


def test_bad_overlap_policy():
    with pytest.raises(ValueError, match="overlap"):
        align_spans("x", [RawSpan("x")], overlap="merge")


def test_match_counts_has_every_kind():
    counts = match_counts(align_spans("a b", [RawSpan("a"), RawSpan("zzz")]))
    assert counts == {"exact": 1, "case": 0, "normalized": 0, "fuzzy": 0, "unmatched": 1, "overlap_dropped": 0}


# ------------------------------------------------------------------------------------------
# repeats

REPEATED = "illegal aliens came. Then illegal aliens left. Later illegal aliens returned."
POSITIONS = [0, 26, 53]


@pytest.mark.parametrize("index", [0, 1, 2])
def test_occurrence_index(index):
    assert one(REPEATED, RawSpan("illegal aliens", occurrence_index=index))[:2] == (
        POSITIONS[index],
        POSITIONS[index] + 14,
    )


def test_occurrence_index_out_of_range_falls_back():
    assert one(REPEATED, RawSpan("illegal aliens", occurrence_index=7))[:2] == (0, 14)


def test_occurrence_index_counts_case_insensitive_matches_when_needed():
    text = "Rain today. rain tomorrow. RAIN later."
    assert one(text, RawSpan("rain", occurrence_index=2))[:2] == (27, 31)


def test_repeats_without_index_go_left_to_right():
    spans = [RawSpan("illegal aliens", label=i) for i in range(3)]
    report = align_spans(REPEATED, spans)
    check(REPEATED, spans, report)
    assert [(s.start, s.label) for s in report.spans] == [(0, 0), (26, 1), (53, 2)]


def test_repeat_after_other_spans_uses_their_order():
    # a model that marks only the second repeat lists it after the spans before it
    text = "The team won. The crowd cheered. The team celebrated."
    spans = [RawSpan("crowd cheered"), RawSpan("The team")]
    report = align_spans(text, spans)
    assert [(s.text, s.start) for s in report.spans] == [("crowd cheered", 18), ("The team", 33)]


def test_repeat_listed_first_still_finds_the_first():
    text = "The team won. The crowd cheered. The team celebrated."
    report = align_spans(text, [RawSpan("The team"), RawSpan("crowd cheered")])
    assert [s.start for s in report.spans] == [0, 18]


def test_more_repeats_than_occurrences():
    spans = [RawSpan("illegal aliens")] * 4
    report = align_spans(REPEATED, spans, overlap="forbid")
    check(REPEATED, spans, report)
    assert report.counts == {"exact": 3, "overlap_dropped": 1}
    report = align_spans(REPEATED, spans, overlap="allow")
    check(REPEATED, spans, report, "allow")
    assert report.counts == {"exact": 4}  # the fourth marks the same place again (e.g. a second label)


def test_repeated_phrase_with_normalized_and_fuzzy_kinds():
    text = "He’s late. Then he’s late again."
    spans = [RawSpan("he's late"), RawSpan("he's late")]
    report = align_spans(text, spans)
    assert [(s.start, s.match) for s in report.spans] == [(0, "normalized"), (16, "normalized")]


# ------------------------------------------------------------------------------------------
# overlaps


def test_overlap_allow_keeps_both():
    text = "Sport Recife scored two goals in the second half."
    spans = [RawSpan("scored two goals"), RawSpan("two goals in the second half")]
    report = align_spans(text, spans, overlap="allow")
    check(text, spans, report, "allow")
    assert [(s.start, s.end) for s in report.spans] == [(13, 29), (20, 48)]


def test_overlap_forbid_keeps_the_earlier_listed():
    text = "Sport Recife scored two goals in the second half."
    spans = [RawSpan("two goals in the second half"), RawSpan("scored two goals")]
    report = align_spans(text, spans, overlap="forbid")
    check(text, spans, report)
    assert [s.text for s in report.spans] == ["two goals in the second half"]
    assert report.counts == {"exact": 1, "overlap_dropped": 1}


def test_overlap_forbid_tries_the_next_occurrence():
    text = "two goals here, and two goals there"
    spans = [RawSpan("goals here"), RawSpan("two goals")]
    report = align_spans(text, spans, overlap="forbid")
    check(text, spans, report)
    assert [(s.text, s.start) for s in report.spans] == [("goals here", 4), ("two goals", 20)]


def test_overlap_forbid_same_span_twice():
    text = "only once"
    spans = [RawSpan("only once", label="A"), RawSpan("only once", label="B")]
    assert align_spans(text, spans).counts == {"exact": 1, "overlap_dropped": 1}
    assert align_spans(text, spans, overlap="allow").counts == {"exact": 2}


# ------------------------------------------------------------------------------------------
# long texts


def test_a_long_text_places_every_span_by_its_match_kind():
    # how the time grows with the text is measured in bench/span_alignment.py, not asserted here
    words = [f"word{i % 997}" for i in range(6000)]
    text = " ".join(words)
    spans = [RawSpan(" ".join(words[i : i + 6]).upper()) for i in range(0, 6000, 120)]
    spans += [RawSpan(" ".join(words[i : i + 8]).replace("word", "wrd", 1)) for i in range(60, 6000, 300)]
    report = align_spans(text, spans)
    check(text, spans, report)
    assert report.counts["case"] == 50 and report.counts["fuzzy"] == 20


# ------------------------------------------------------------------------------------------
# fuzz

ALPHABET = "abcAB  \n.,'’\"“”-–—…😀éé\u0301ß"
texts = st.text(alphabet=st.sampled_from(list(ALPHABET)) | st.characters(), max_size=80)
raw_spans = st.builds(
    RawSpan,
    text=st.one_of(st.text(max_size=20), st.text(alphabet=list(ALPHABET), max_size=12)),
    label=st.one_of(st.none(), st.integers(0, 5), st.text(max_size=5)),
    reason=st.one_of(st.none(), st.text(max_size=5)),
    occurrence_index=st.one_of(st.none(), st.integers(-2, 5)),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, st.lists(raw_spans, max_size=6), st.sampled_from(["allow", "forbid"]), st.booleans())
def test_fuzz_never_raises_and_keeps_invariants(text, spans, overlap, snap):
    report = align_spans(text, spans, overlap=overlap, snap_words=snap)
    check(text, spans, report, overlap)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, st.data())
def test_fuzz_substrings_of_the_text(text, data):
    """A span that quotes the text (with its spans picked from the text) is always placed."""
    picks = data.draw(st.lists(st.tuples(st.integers(0, len(text)), st.integers(0, len(text))), max_size=4))
    spans = [RawSpan(text[min(a, b) : max(a, b)]) for a, b in picks]
    report = align_spans(text, spans, overlap="allow", snap_words=data.draw(st.booleans()))
    check(text, spans, report, "allow")
    placeable = [s for s in spans if s.text.strip()]
    assert len(report.spans) == len(placeable)


def occurrences(text: str, sub: str) -> list[int]:
    out, i = [], text.find(sub)
    while i >= 0:
        out.append(i)
        i = text.find(sub, i + 1)
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from([*"ab ab.’😀é\u0301", "ab", "ba "]), min_size=1, max_size=40).map("".join),
    st.data(),
)
def test_fuzz_exact_substrings_found_at_their_offsets(text, data):
    """True substrings (repeats included) land exactly where they were taken, via occurrence_index."""
    picks = data.draw(st.lists(st.tuples(st.integers(0, len(text)), st.integers(0, len(text))), min_size=1, max_size=5))
    spans, truth = [], []
    for a, b in picks:
        start, end = min(a, b), max(a, b)
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        sub = text[start:end]
        if not sub:
            continue
        hits = occurrences(text, sub)
        index = hits.index(start)
        spans.append(RawSpan(sub, label=len(spans), occurrence_index=index if len(hits) > 1 else None))
        truth.append((start, end))
    assume(spans)
    # one span per call: without occurrence_index, the first occurrence is the right answer
    for span, (start, end) in zip(spans, truth, strict=True):
        if span.occurrence_index is None:
            assert occurrences(text, span.text)[0] == start
        report = align_spans(text, [span], overlap="allow", snap_words=False)
        assert [(s.start, s.end, s.match) for s in report.spans] == [(start, end, "exact")]
    # all together (overlaps allowed): every span at its own offsets
    report = align_spans(text, spans, overlap="allow", snap_words=False)
    check(text, spans, report, "allow")
    assert sorted((s.start, s.end, s.label) for s in report.spans) == sorted(
        (start, end, span.label) for span, (start, end) in zip(spans, truth, strict=True)
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["alpha", "beta", "gamma", "Delta", "ep’s", "😀", "x–y", "beta"]), min_size=1, max_size=30
    ),
    st.data(),
)
def test_fuzz_word_spans_in_reading_order_without_index(words, data):
    """Word-aligned spans listed in reading order, no occurrence index: each lands on the first
    occurrence after the previous span (the reading-order rule)."""
    text = " ".join(words)
    starts = [sum(len(w) + 1 for w in words[:i]) for i in range(len(words))]
    chosen = sorted(set(data.draw(st.lists(st.integers(0, len(words) - 1), min_size=1, max_size=8))))
    spans, expected, previous_end = [], [], 0
    for i in chosen:
        n = data.draw(st.integers(1, min(3, len(words) - i)))
        if starts[i] < previous_end:
            continue
        end = starts[i + n - 1] + len(words[i + n - 1])
        sub = text[starts[i] : end]
        spans.append(RawSpan(sub))
        first = text.find(sub, previous_end)  # never after starts[i], maybe before it
        expected.append((first, first + len(sub)))
        previous_end = first + len(sub)
    report = align_spans(text, spans, overlap="forbid")
    check(text, spans, report)
    assert [(s.start, s.end) for s in report.spans] == expected
