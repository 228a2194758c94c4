"""summary_flaws (Reddit TL;DR, English): flaw spans from numbers, names and word chunks the post
lacks, repeats and incoherent word pairs; "None identified" when there is none.
"""

from __future__ import annotations

from collections import Counter

from judgelab.backend.annotators import grounding as g
from judgelab.backend.annotators.offline.calibration import MOST_LIKELY, answer_score, prediction_score, score_spans
from judgelab.backend.annotators.offline.fitted import summary_flaws as fitted
from judgelab.backend.annotators.offline.heuristics import OFFLINE
from judgelab.backend.annotators.offline.text import (
    MAX_TARGET_CHARS,
    as_float,
    drop_nested,
    quote_words,
    read_text,
    tokens_in,
    valid_span,
)
from judgelab.backend.draft import Draft, SpanDraft
from judgelab.configs.schema import builtin_schema, get_schema

SCHEMA = "summary_flaws"
_FLAWS = builtin_schema(SCHEMA)
FACTUALLY_INCORRECT = _FLAWS.constant("factually_incorrect")
IRRELEVANT = _FLAWS.constant("irrelevant")
INCOHERENT = _FLAWS.constant("incoherent")
OTHER = _FLAWS.constant("other")


def flaw_control() -> str:
    """The schema's span control (its name comes from ``schema.yaml``)."""
    return get_schema(SCHEMA).span_control()


#: A clause with at least this many content words ...
IRRELEVANT_MIN_WORDS = 2
#: ... and at most this share of them found in the post is flagged.
IRRELEVANT_MAX_GROUNDING = 0.5
#: From this overlap score (/10) on, the summary matches the reference: flag only hard facts.
HIGH_OVERLAP_SCORE = 8.0
#: A clause with at least this many content words all seen in an earlier sentence is a repeat.
REDUNDANT_MIN_WORDS = 3
#: A sentence of at least this many words with a smaller share of function words is a
#: word list rather than a sentence.
WORD_SALAD_MIN_WORDS = 8
WORD_SALAD_MAX_FUNCTION_SHARE = 0.12

_EN_PREPOSITIONS = frozenset("in on at of with for from by about into onto".split())
_EN_DETERMINERS = frozenset("the a an".split())
_EN_AUXILIARIES = frozenset("do does did is are was were am".split())
_EN_NOT_AFTER_DETERMINER = _EN_AUXILIARIES | _EN_PREPOSITIONS | _EN_DETERMINERS | {"and", "but", "or", "to"}


@OFFLINE.register(SCHEMA, reads=("title", "post", "subreddit", "summary"))
def annotate_summary_flaws(data: dict) -> Draft:
    candidates, info = flaw_candidates(data)
    spans = score_spans(candidates, fitted.SPAN_HIT_RATE, fitted.UNSEEN_RATE, fitted.MIN_SPAN_SCORE)
    draft = Draft(spans=spans)
    empty_rate = fitted.EMPTY_RATE_CLEAN if not candidates else fitted.EMPTY_RATE_BELOW
    if not spans and empty_rate >= MOST_LIKELY:  # not required: ticked only when the more likely answer
        empty = get_schema(SCHEMA).empty_answer
        draft.choices[empty["control"]] = [empty["value"]]
        draft.scores[empty["control"]] = answer_score(empty_rate)
    draft.score = prediction_score(draft)
    draft.info = {
        **info,
        "flaws": dict(Counter(s.label for s in spans)),
        "below_threshold": len(candidates) - len(spans),
    }
    return draft


def flaw_candidates(data: dict) -> tuple[list[SpanDraft], dict[str, object]]:
    """Every flaw span the rules find, before scoring and the threshold (and counters for the logs)."""
    value = data.get("summary")
    summary = read_text(data, "summary", MAX_TARGET_CHARS)
    source = tuple(read_text(data, k) for k in ("title", "post", "subreddit"))
    index = g.shared_index(source, lang="en")
    tokens = g.tokenize(summary)
    content = [t for t in tokens if g.is_content(t, g.STOPWORDS_EN)]
    overlap_score = as_float(data.get("score"))
    hard_facts_only = overlap_score is not None and overlap_score >= HIGH_OVERLAP_SCORE

    spans = number_flaws(summary, index) + incoherence_flaws(summary, tokens)
    spans += redundancy_flaws(summary)
    spans += grounding_flaws(summary, tokens, index, with_chunks=not hard_facts_only)
    spans = drop_nested([s for s in spans if valid_span(summary, s.start, s.end)])
    if not isinstance(value, str):
        spans = []
    return spans, {"content_words": len(content), "hard_facts_only": hard_facts_only}


def number_flaws(summary: str, index: g.SourceIndex) -> list[SpanDraft]:
    """Numbers of the summary that the post never mentions (digits or number words)."""
    return [
        SpanDraft(
            flaw_control(), n.start, n.end, FACTUALLY_INCORRECT, note=f"number {n.text} not in the post", score=0.7
        )
        for n in g.extract_numbers(summary, lang="en")
        if not index.has_number(n) and not g.is_list_marker(summary, n)
    ]


def grounding_flaws(
    summary: str, tokens: list[g.Token], index: g.SourceIndex, with_chunks: bool = True
) -> list[SpanDraft]:
    """Unknown names (Factually Incorrect) and poorly grounded word chunks (Irrelevant)."""
    names = (g.without_initial_word(summary, e) for e in g.extract_entities(summary, g.STOPWORDS_EN))
    unknown_names = [e for e in names if e is not None and not index.has_entity(e)]
    spans: list[SpanDraft] = []
    covered: list[g.Entity] = []
    for start, end in g.split_sentences(summary):
        for c_start, c_end in g.split_clauses(summary, start, end):
            chunk = ungrounded_chunk(summary, tokens_in(tokens, c_start, c_end), index)
            if chunk is None or not with_chunks:
                continue
            a, b, missing = chunk
            names = [e for e in unknown_names if a <= e.start and e.end <= b]
            covered.extend(names)
            if names:
                label, note = FACTUALLY_INCORRECT, f"{quote_words(list(names[0].tokens))} is not in the post"
            else:
                label, note = IRRELEVANT, f"{quote_words(missing)} not found in the post"
            spans.append(SpanDraft(flaw_control(), a, b, label, note=note, score=0.4))
    for name in unknown_names:
        if name not in covered:
            spans.append(
                SpanDraft(
                    flaw_control(),
                    name.start,
                    name.end,
                    FACTUALLY_INCORRECT,
                    note=f"'{name.text}' is not in the post",
                    score=0.6,
                )
            )
    return spans


def ungrounded_chunk(
    summary: str, clause_tokens: list[g.Token], index: g.SourceIndex
) -> tuple[int, int, list[g.Token]] | None:
    """The minimal phrase spanning a clause's unknown content words, if the clause is
    poorly grounded: ``(start, end, unknown words)``."""
    content = [t for t in clause_tokens if g.is_content(t, g.STOPWORDS_EN)]
    missing = [t for t in content if not index.has_word(t.text)]
    if len(content) < IRRELEVANT_MIN_WORDS or len(missing) < IRRELEVANT_MIN_WORDS:
        return None
    if 1 - len(missing) / len(content) > IRRELEVANT_MAX_GROUNDING:
        return None
    trimmed = g.trim_span(summary, missing[0].start, missing[-1].end)
    return (trimmed[0], trimmed[1], missing) if trimmed else None


def redundancy_flaws(summary: str) -> list[SpanDraft]:
    """Clauses that only repeat an earlier sentence (OTHER: redundant)."""
    spans = []
    seen: set[str] = set()
    for start, end in g.split_sentences(summary):
        run: list[tuple[int, int]] = []
        for c_start, c_end in g.split_clauses(summary, start, end):
            stems = g.stem_set(summary[c_start:c_end], g.STOPWORDS_EN)
            if len(stems) >= REDUNDANT_MIN_WORDS and stems <= seen:
                run.append((c_start, c_end))
            elif run:
                break
        if run:
            spans.append(
                SpanDraft(flaw_control(), run[0][0], run[-1][1], OTHER, note="repeats an earlier sentence", score=0.5)
            )
        seen |= g.stem_set(summary[start:end], g.STOPWORDS_EN)
    return spans


def incoherence_flaws(summary: str, tokens: list[g.Token]) -> list[SpanDraft]:
    """Repeated words, impossible word pairs (``in do``, ``the of``), word salad."""
    spans = [
        SpanDraft(flaw_control(), left.start, right.end, INCOHERENT, note=f"repeated word '{left.text}'", score=0.6)
        for left, right in g.repeated_words(tokens, summary)
    ]
    for left, right in zip(tokens, tokens[1:], strict=False):
        if summary[left.end : right.start].strip():
            continue
        a, b = left.folded, right.folded
        bad = (a in _EN_PREPOSITIONS and b in _EN_AUXILIARIES) or (
            a in _EN_DETERMINERS and b in _EN_NOT_AFTER_DETERMINER and a != b
        )
        if bad:
            spans.append(
                SpanDraft(
                    flaw_control(),
                    left.start,
                    right.end,
                    INCOHERENT,
                    note=f"'{left.text} {right.text}' is not grammatical",
                    score=0.5,
                )
            )
    for start, end in g.split_sentences(summary):
        words = tokens_in(tokens, start, end)
        if words and words[-1].folded in _EN_DETERMINERS:
            spans.append(
                SpanDraft(
                    flaw_control(),
                    words[-1].start,
                    words[-1].end,
                    INCOHERENT,
                    note="sentence ends with an article",
                    score=0.5,
                )
            )
        alpha = [t for t in words if not t.has_digit]
        function_share = sum(t.folded in g.STOPWORDS_EN for t in alpha) / max(1, len(alpha))
        if len(alpha) >= WORD_SALAD_MIN_WORDS and function_share < WORD_SALAD_MAX_FUNCTION_SHARE:
            spans.append(
                SpanDraft(
                    flaw_control(),
                    start,
                    end,
                    INCOHERENT,
                    note="hardly any function words: a word list, not a sentence",
                    score=0.4,
                )
            )
    return spans
