"""The built-in offline annotator: deterministic lexical heuristics, no model, no network.

It pre-annotates the five schemas of ``configs/`` from the guidelines' own rules of thumb:
a summary claim is suspect when its numbers, names or content words cannot be found in the
source (lexical *grounding*: folded words and 5-letter prefix stems, see ``grounding``); rubric
scores follow the cues the guidelines name (bullets, connectors, chatbot phrases, error counts).
It is a baseline: it catches invented numbers and names and obvious formatting problems, not
paraphrased contradictions.

Every ``annotate_*`` function takes the task's data dict and returns a :class:`Draft`; odd data
(missing fields, ``None``, numbers instead of text) gives a smaller draft, never an exception.
Spans are placed only on fields whose value is a string, in code points of that exact string.
"""

from __future__ import annotations

import logging
import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from judgelab.backend.annotators import grounding as g
from judgelab.backend.draft import Draft, SpanDraft
from judgelab.configs.schema import get_schema
from judgelab.configs.story_lines import story_lines as parse_story_lines
from judgelab.configs.story_lines import task_alternates

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------


def as_text(value: object) -> str:
    """Best-effort text of a task field: ``None`` -> "", numbers -> str, lists joined by lines."""
    if value is None or isinstance(value, bool):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value) if math.isfinite(value) else ""
    if isinstance(value, list | tuple):
        return "\n".join(t for t in (as_text(v) for v in value) if t)
    if isinstance(value, dict):
        return as_text(value.get("text"))
    return ""


#: Longest text analysed, in characters: a longer field is analysed on its beginning only
#: (``info["truncated"]``), so one huge task cannot stall a predict batch. Cutting the end
#: keeps the offsets of spans in the analysed part valid.
MAX_SOURCE_CHARS = 60_000
MAX_TARGET_CHARS = 10_000
_TARGET_FIELDS = ("summary",)


def read_text(data: dict, key: str, limit: int = MAX_SOURCE_CHARS) -> str:
    """A field's text, cut at ``limit`` characters."""
    return as_text(data.get(key))[:limit]


def truncated_fields(data: dict, keys: tuple[str, ...]) -> list[str]:
    """Those of ``keys`` whose text is longer than the analysed part."""
    return [
        key
        for key in keys
        if len(as_text(data.get(key))) > (MAX_TARGET_CHARS if key in _TARGET_FIELDS else MAX_SOURCE_CHARS)
    ]


def as_float(value: object) -> float | None:
    """A number from ``7``, ``"9.8"``, ``"9.8/10"``; ``None`` when there is none."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    match = re.search(r"-?\d+(?:[.,]\d+)?", as_text(value))
    return float(match.group().replace(",", ".")) if match else None


def clamp(value: float, low: int, high: int) -> int:
    return int(max(low, min(high, round(value))))


def tokens_in(tokens: list[g.Token], start: int, end: int) -> list[g.Token]:
    return [t for t in tokens if t.start >= start and t.end <= end]


def quote_words(tokens: list[g.Token], limit: int = 4) -> str:
    words = list(dict.fromkeys(t.text for t in tokens))
    shown = ", ".join(f"'{w}'" for w in words[:limit])
    return shown + (", ..." if len(words) > limit else "")


def phrase_regex(phrases: list[str]) -> re.Pattern[str]:
    """A case-insensitive regex matching any phrase on word boundaries (on folded text)."""
    alternatives = sorted((re.escape(p) for p in phrases), key=len, reverse=True)
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)


def valid_span(text: str, start: int, end: int) -> bool:
    return 0 <= start < end <= len(text)


def drop_nested(spans: list[SpanDraft]) -> list[SpanDraft]:
    """Remove duplicates and spans lying inside another span with the same label."""
    kept: list[SpanDraft] = []
    for span in sorted(spans, key=lambda s: (s.start, -(s.end - s.start))):
        if any(k.label == span.label and k.start <= span.start and span.end <= k.end for k in kept):
            continue
        kept.append(span)
    return kept


def non_overlapping(spans: list[SpanDraft], priority: dict[str, int]) -> list[SpanDraft]:
    """Keep the most important, then shortest, spans so that no two spans overlap."""
    ranked = sorted(spans, key=lambda s: (priority.get(s.label, 9), s.end - s.start, s.start))
    kept: list[SpanDraft] = []
    for span in ranked:
        if all(span.end <= k.start or span.start >= k.end for k in kept):
            kept.append(span)
    return sorted(kept, key=lambda s: s.start)


# --------------------------------------------------------------------------------------------
# 1. summary_flaws (Reddit TL;DR, English)
# --------------------------------------------------------------------------------------------

FLAW_CONTROL = get_schema("summary_flaws").span_control()
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


def annotate_summary_flaws(data: dict) -> Draft:
    value = data.get("summary")
    summary = read_text(data, "summary", MAX_TARGET_CHARS)
    source = [read_text(data, k) for k in ("title", "post", "subreddit")]
    index = g.SourceIndex(source, lang="en")
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
    draft = Draft(spans=spans, score=round(index.grounding(content), 3))
    if not spans:
        empty = get_schema("summary_flaws").empty_answer
        draft.choices[empty["control"]] = [empty["value"]]
    draft.info = {
        "flaws": dict(Counter(s.label for s in spans)),
        "content_words": len(content),
        "hard_facts_only": hard_facts_only,
    }
    return draft


def number_flaws(summary: str, index: g.SourceIndex) -> list[SpanDraft]:
    """Numbers of the summary that the post never mentions (digits or number words)."""
    return [
        SpanDraft(
            FLAW_CONTROL, n.start, n.end, "Factually Incorrect", note=f"number {n.text} not in the post", score=0.7
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
                label, note = "Factually Incorrect", f"{quote_words(list(names[0].tokens))} is not in the post"
            else:
                label, note = "Irrelevant", f"{quote_words(missing)} not found in the post"
            spans.append(SpanDraft(FLAW_CONTROL, a, b, label, note=note, score=0.4))
    for name in unknown_names:
        if name not in covered:
            spans.append(
                SpanDraft(
                    FLAW_CONTROL,
                    name.start,
                    name.end,
                    "Factually Incorrect",
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
    """Clauses that only repeat an earlier sentence ("Other": redundant)."""
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
                SpanDraft(FLAW_CONTROL, run[0][0], run[-1][1], "Other", note="repeats an earlier sentence", score=0.5)
            )
        seen |= g.stem_set(summary[start:end], g.STOPWORDS_EN)
    return spans


def incoherence_flaws(summary: str, tokens: list[g.Token]) -> list[SpanDraft]:
    """Repeated words, impossible word pairs (``in do``, ``the of``), word salad."""
    spans = [
        SpanDraft(FLAW_CONTROL, left.start, right.end, "Incoherent", note=f"repeated word '{left.text}'", score=0.6)
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
                    FLAW_CONTROL,
                    left.start,
                    right.end,
                    "Incoherent",
                    note=f"'{left.text} {right.text}' is not grammatical",
                    score=0.5,
                )
            )
    for start, end in g.split_sentences(summary):
        words = tokens_in(tokens, start, end)
        if words and words[-1].folded in _EN_DETERMINERS:
            spans.append(
                SpanDraft(
                    FLAW_CONTROL,
                    words[-1].start,
                    words[-1].end,
                    "Incoherent",
                    note="sentence ends with an article",
                    score=0.5,
                )
            )
        alpha = [t for t in words if not t.has_digit]
        function_share = sum(t.folded in g.STOPWORDS_EN for t in alpha) / max(1, len(alpha))
        if len(alpha) >= WORD_SALAD_MIN_WORDS and function_share < WORD_SALAD_MAX_FUNCTION_SHARE:
            spans.append(
                SpanDraft(
                    FLAW_CONTROL,
                    start,
                    end,
                    "Incoherent",
                    note="hardly any function words: a word list, not a sentence",
                    score=0.4,
                )
            )
    return spans


# --------------------------------------------------------------------------------------------
# 2. augmentation_quality (Italian, SP and SC 1-3)
# --------------------------------------------------------------------------------------------

#: SP 3 needs this share of the original's content stems in the generated text (and no
#: number or name lost or added); SP 1 needs a lost number or three lost facts (numbers and
#: names) together with a share below SP_POOR_RECALL. Everything else is SP 2. The guidelines
#: expect SP 1 to be rare (< 10%): the lexical overlap alone never gives SP 1, because
#: rephrasing legitimately changes most words.
SP_FULL_RECALL = 0.5
SP_POOR_RECALL = 0.3

_IT_MASC_SING = frozenset("il del al dal nel sul col un uno dello allo dallo nello sullo".split())
_IT_FEM_SING = frozenset("una della alla dalla nella sulla".split())
_IT_PLURAL = frozenset("i dei ai dai nei sui coi degli agli dagli negli sugli delle alle dalle nelle sulle".split())
#: Invariable or irregular nouns that break the ending rules (i media, la mano, il brindisi).
_IT_INVARIABLE = frozenset(
    """media euro foto moto auto radio video cinema boa mila gorilla vaglia sosia boia
    mano dinamo libido eco crisi analisi tesi ipotesi sintesi bici brindisi bisturi alibi
    safari taxi bikini lunedi martedi mercoledi giovedi venerdi re gnu extra ultra pro""".split()
)
_IT_AUXILIARIES = frozenset("ha hanno ho abbiamo avete hai aveva avevano".split())
_IT_NOUN_SUFFIXES = ("zione", "sione", "mento", "enza", "anza", "ezza", "tura")
_IT_HA_IDIOMS = frozenset(
    """bisogno paura fame sete ragione torto intenzione diritto luogo senso voglia
    fretta freddo caldo sonno cura tendenza speranza fiducia occasione""".split()
)
_IT_DETERMINERS = _IT_MASC_SING | _IT_FEM_SING | _IT_PLURAL | {"la", "lo", "le", "gli", "l"}
#: Adverbs, prepositions and pronouns that end like nouns but never agree (contro, sopra).
_IT_NON_AGREEING = frozenset(
    """contro sopra sotto dentro fuori verso dopo senza presso lungo oltre circa tramite durante
    secondo mediante nonostante attraverso ora allora ancora sempre invece almeno ormai appena
    insieme proprio subito presto troppo tanto poco spesso quasi solo soltanto anzi infatti
    pure nemmeno neanche neppure mica forse magari davvero certo meno prima qui qua cosa
    come quanto tale tali stesso stessa altro altra altri altre primo prima ultimo ultima
    perfino persino intorno accanto davanti dietro vicino lontano oggi domani stasera""".split()
)
_IT_PARTICIPLE_SINGULAR = (
    "ato",
    "ata",
    "ito",
    "ita",
    "uto",
    "uta",
    "uso",
    "usa",
    "esso",
    "essa",
    "tto",
    "tta",
    "sto",
    "sta",
)
_IT_NUMERAL_CONTEXT = frozenset("articolo art comma legge numero n punto pagina ore capitolo decreto paragrafo".split())


def annotate_augmentation_quality(data: dict) -> Draft:
    original = read_text(data, "original")
    generated = read_text(data, "generated")
    if not generated.strip():
        info = {"empty_generated": True}
        return Draft(choices={"SP": ["1"]} if original.strip() else {}, score=0.0, info=info)
    sp, sp_info = semantic_preservation(original, generated)
    errors = syntax_errors(generated)
    sc = 3 if not errors else 2 if len(errors) <= 3 else 1
    return Draft(
        choices={"SP": [str(sp)], "SC": [str(sc)]},
        score=round(float(sp_info["recall"]), 3),
        info={**sp_info, "syntax_errors": [msg for _, _, msg in errors]},
    )


def semantic_preservation(original: str, generated: str) -> tuple[int, dict[str, object]]:
    """SP 1-3 from content-stem overlap and lost/added numbers and names."""
    stops = g.STOPWORDS_IT
    recall, precision = g.overlap(g.stem_set(original, stops), g.stem_set(generated, stops))
    orig_index = g.SourceIndex([original], lang="it")
    gen_index = g.SourceIndex([generated], lang="it")
    lost_numbers = [n.text for n in g.extract_numbers(original, "it") if not gen_index.has_number(n)]
    added_numbers = [n.text for n in g.extract_numbers(generated, "it") if not orig_index.has_number(n)]
    lost_names = [e.text for e in g.extract_entities(original, stops) if not gen_index.has_entity(e)]
    added_names = [e.text for e in g.extract_entities(generated, stops) if not orig_index.has_entity(e)]
    lost_facts = len(lost_numbers) + len(lost_names)
    if recall >= SP_FULL_RECALL and not (lost_facts or added_numbers or added_names):
        sp = 3
    elif recall < SP_POOR_RECALL and (lost_numbers or lost_facts >= 3):
        sp = 1
    else:
        sp = 2
    info: dict[str, object] = {
        "recall": round(recall, 3),
        "precision": round(precision, 3),
        "lost_numbers": lost_numbers,
        "added_numbers": added_numbers,
        "lost_names": lost_names,
        "added_names": added_names,
    }
    return sp, info


def syntax_errors(text: str) -> list[tuple[int, int, str]]:
    """Italian grammar slips an LLM makes: article-noun agreement, ``ha`` + noun, repeated
    words, singular noun after a numeral. Conservative: each rule skips known exceptions."""
    tokens = g.tokenize(text)
    errors = [(a.start, b.end, f"repeated word '{a.text}'") for a, b in g.repeated_words(tokens, text)]
    for i, token in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if nxt is None or not _same_phrase(text, token, nxt):
            continue
        third = tokens[i + 2] if i + 2 < len(tokens) else None
        if third is not None and not _same_phrase(text, nxt, third):
            third = None
        message = (
            _article_agreement(token, nxt, text[token.end : nxt.start] != " ")
            or _auxiliary_noun(token, nxt, third)
            or _numeral_agreement(tokens[i - 1] if i else None, token, nxt)
            or _modifier_agreement(token, nxt, third)
        )
        if message:
            end = third.end if message.startswith("modifier") and third else nxt.end
            errors.append((token.start, end, message))
    return errors


def _same_phrase(text: str, left: g.Token, right: g.Token) -> bool:
    """Only a space or an elision apostrophe between two words."""
    return text[left.end : right.start] in {" ", "'", "’"}


def _italian_word(token: g.Token) -> bool:
    return (
        len(token.text) > 3
        and token.text.isalpha()
        and token.text.islower()
        and token.folded not in g.STOPWORDS_IT
        and token.folded not in _IT_INVARIABLE
        and token.folded not in _IT_NON_AGREEING
        and token.text[-1] not in "àèéìòù"
    )


def _modifier_agreement(article: g.Token, noun: g.Token, word: g.Token | None) -> str | None:
    """``i dati diffuso``: a singular participle right after a plain plural article + noun.

    Only the plain articles ``i``/``gli``/``le`` (after ``dei``/``sui``... the participle may
    agree with an earlier noun: ``la nave dei migranti arrivata``) and only participle-like
    endings (a verb or a noun there is often correct: ``i toni danneggia``)."""
    if word is None or article.folded not in {"i", "gli", "le"}:
        return None
    if not (_italian_word(noun) and _italian_word(word)) or noun.folded[-1] not in "ie":
        return None
    if word.folded.endswith(_IT_PARTICIPLE_SINGULAR):
        return f"modifier '{word.text}' is singular after plural '{article.text} {noun.text}'"
    return None


def _article_agreement(article: g.Token, word: g.Token, elided: bool = False) -> str | None:
    art, noun = article.folded, word.folded
    if elided and art == "un":
        art = "una"  # un'invasione is the feminine article
    if art not in _IT_DETERMINERS or not _italian_word(word):
        return None
    if art in _IT_PLURAL and noun[-1] in "oa":
        return f"plural '{article.text}' before singular '{word.text}'"
    if art in _IT_MASC_SING and (noun[-1] == "i" or noun.endswith(("zione", "sione", "gione"))):
        return f"masculine singular '{article.text}' before '{word.text}'"
    if art in _IT_FEM_SING and noun[-1] in "oi":
        return f"feminine singular '{article.text}' before '{word.text}'"
    return None


def _auxiliary_noun(aux: g.Token, word: g.Token, after: g.Token | None) -> str | None:
    """``ha approvazione un piano``: a noun where the past participle should be."""
    if aux.folded not in _IT_AUXILIARIES or after is None or not _italian_word(word):
        return None
    noun = word.folded
    if noun in _IT_HA_IDIOMS or not noun.endswith(_IT_NOUN_SUFFIXES):
        return None
    if after.folded in _IT_DETERMINERS:
        return f"'{aux.text} {word.text}': noun where a past participle is expected"
    return None


def _numeral_agreement(before: g.Token | None, number: g.Token, word: g.Token) -> str | None:
    """``5 miliardo``: a singular noun after a numeral above one (years and article numbers
    such as ``articolo 5 comma`` excepted)."""
    value = g.NUMBER_WORDS["it"].get(number.folded)
    if value is None and number.text.isdigit():
        value = int(number.text)
        if 1800 <= value <= 2100 and len(number.text) == 4:
            return None
    if value is None or value <= 1 or not _italian_word(word) or word.folded[-1] not in "oa":
        return None
    if before is not None and (
        before.folded in _IT_NUMERAL_CONTEXT
        or before.folded in _IT_DETERMINERS
        or before.folded in {"tra", "fra", "dell", "all", "dall", "nell", "sull"}
    ):
        return None  # articolo 5 comma, dal 27 brigata (a date), una delle due usata
    return f"singular '{word.text}' after the numeral {number.text}"


# --------------------------------------------------------------------------------------------
# 3. story_consistency (line-by-line verdicts, swaps, ambiguous portions)
# --------------------------------------------------------------------------------------------

#: A line is Inconsistent when it names a person/place or a number the story lacks; or when
#: the story words it uses never occur together: fewer than STORY_MAX_COHESION of its
#: (at least STORY_COHESION_MIN_WORDS) grounded content stems fit in one window of
#: STORY_WINDOW_SHARE of the story (a line joining details from different places; the window
#: grows with the story because longer stories are compressed more); or when fewer
#: than STORY_MIN_GROUNDING of its content words are in the story at all, with at least
#: STORY_MIN_MISSING missing. Tuned on StorySumm "val" (bench/storysumm_offline.py --tune):
#: plain word grounding barely separates the classes there (AUC 0.52), co-occurrence does
#: better (0.67).
STORY_WINDOW_SHARE = 0.05  # the window is 5% of the story's tokens ...
STORY_WINDOW_MIN = 10  # ... and at least this many tokens
STORY_MAX_COHESION = 0.6
STORY_COHESION_MIN_WORDS = 2
STORY_MIN_GROUNDING = 0.6
STORY_MIN_MISSING = 5
#: An alternate replaces a line when it is this much better grounded (or names fewer unknowns).
SWAP_MARGIN = 0.05
#: Words that describe the summary or the story itself, not its content.
_STORY_META_WORDS = frozenset(
    """story tale narrative narrator protagonist character characters reader readers author
    summary plot ends end begins beginning finally eventually year years old time times
    first last""".split()
)
_COMMENTARY_STRONG = re.compile(
    r"\b(?:explores? (?:the )?themes?|themes? of|paints? an? |portrait of|"
    r"serves? as a (?:reminder|testament|cautionary)|a reminder that|poignant tale|"
    r"cautionary tale|thought-provoking|the author|the reader|overall, the|ultimately, the "
    r"(?:story|tale)|this (?:story|tale|narrative)|the (?:story|tale|narrative) (?:\w+ly )?"
    r"(?:is a|is an|explores|highlights|shows|depicts|portrays|illustrates|suggests|conveys|"
    r"appears|seems|reflects|captures|emphasi[sz]es|touches|deals|raises|examines|offers|"
    r"provides|leaves|ends on|is ultimately|is about))",
    re.IGNORECASE,
)
_COMMENTARY_ABSTRACT = re.compile(
    r"\b(?:themes?|symboli[sz]e|symbol of|metaphor|message|lesson|moral|human (?:nature|"
    r"condition|suffering)|the power of|the importance of|the dangers? of|the complexit(?:y|ies)"
    r"|grappling with|vivid|poignant|powerful|haunting|touching|heartwarming|bittersweet)\b",
    re.IGNORECASE,
)


@dataclass
class LineCheck:
    """How well one summary line is supported by the story."""

    text: str
    grounding: float = 1.0
    missing: list[g.Token] = field(default_factory=list)
    unknown_names: list[g.Entity] = field(default_factory=list)
    unknown_numbers: list[g.NumberMention] = field(default_factory=list)
    commentary: bool = False
    cohesion: float = 1.0  # share of the grounded stems found together in one story window
    grounded_stems: int = 0
    scattered: list[g.Token] = field(default_factory=list)  # grounded, outside that window

    @property
    def inconsistent(self) -> bool:
        return self.is_inconsistent()

    def is_inconsistent(
        self,
        min_grounding: float | None = None,
        min_missing: int | None = None,
        max_cohesion: float | None = None,
        use_facts: bool = True,
    ) -> bool:
        """The verdict rule; the thresholds default to the tuned module constants."""
        if self.commentary:
            return False
        if use_facts and (self.unknown_names or self.unknown_numbers):
            return True
        if self._scattered(STORY_MAX_COHESION if max_cohesion is None else max_cohesion):
            return True
        min_grounding = STORY_MIN_GROUNDING if min_grounding is None else min_grounding
        min_missing = STORY_MIN_MISSING if min_missing is None else min_missing
        return self.grounding < min_grounding and len(self.missing) >= min_missing

    def _scattered(self, max_cohesion: float) -> bool:
        return self.grounded_stems >= STORY_COHESION_MIN_WORDS and self.cohesion < max_cohesion

    @property
    def facts_missing(self) -> int:
        return len(self.unknown_names) + len(self.unknown_numbers)

    def explanation(self) -> str:
        parts = []
        if self.unknown_names:
            parts.append("names not in the story: " + ", ".join(f"'{e.text}'" for e in self.unknown_names))
        if self.unknown_numbers:
            parts.append("numbers not in the story: " + ", ".join(n.text for n in self.unknown_numbers))
        if self.missing and (self.grounding < STORY_MIN_GROUNDING or not parts):
            parts.append(f"words not supported by the story: {quote_words(self.missing, 6)}")
        if self.scattered and self._scattered(STORY_MAX_COHESION):
            parts.append(f"the story has {quote_words(self.scattered)} but not together with the line's other details")
        if not parts:
            return "Not supported by the story."
        text = "; ".join(parts)
        return text[0].upper() + text[1:] + "."


def is_commentary(line: str) -> bool:
    """A line about the story itself ("The story paints a vivid image ...")."""
    if _COMMENTARY_STRONG.search(line):
        return True
    mentions_story = re.search(r"\b(?:story|tale|narrative)\b", line, re.IGNORECASE)
    return bool(mentions_story and _COMMENTARY_ABSTRACT.search(line))


def story_window(index: g.SourceIndex) -> int:
    """Co-occurrence window for a story: a fixed share of its length, in tokens."""
    return max(STORY_WINDOW_MIN, round(STORY_WINDOW_SHARE * index.length))


def check_line(line: str, index: g.SourceIndex, window: int | None = None) -> LineCheck:
    """Ground one summary line against the story index."""
    check = LineCheck(text=line, commentary=is_commentary(line))
    tokens = g.tokenize(line)
    content = [t for t in tokens if g.is_content(t, g.STOPWORDS_EN) and t.folded not in _STORY_META_WORDS]
    check.missing = [t for t in content if not index.has_word(t.text)]
    check.grounding = 1 - len(check.missing) / len(content) if content else 1.0
    grounded = [t for t in content if g.stem(t.text) in index.positions]
    width = story_window(index) if window is None else window
    check.cohesion, together = index.cooccurrence((t.text for t in grounded), width)
    check.grounded_stems = len({g.stem(t.text) for t in grounded})
    check.scattered = [t for t in grounded if g.stem(t.text) not in together]
    names = (g.without_initial_word(line, e) for e in g.extract_entities(line, g.STOPWORDS_EN))
    check.unknown_names = [e for e in names if e is not None and not index.has_entity(e)]
    check.unknown_numbers = [n for n in g.extract_numbers(line, "en") if not index.has_number(n)]
    return check


def story_lines(data: dict) -> list[tuple[str, bool, str | None]]:
    """``(text, has_text, alternate)`` per line (:func:`judgelab.configs.story_lines.story_lines`)."""
    return [
        (
            line["text"][:MAX_TARGET_CHARS],
            bool(line["text"]),
            line["alternate"][:MAX_TARGET_CHARS] if "alternate" in line else None,
        )
        for line in parse_story_lines(data.get("lines"))
    ]


def annotate_story_consistency(data: dict) -> Draft:
    index = g.SourceIndex([read_text(data, "story")], lang="en")
    lines = story_lines(data)
    draft = Draft()
    verdicts: Counter[str] = Counter()
    groundings = []
    for i, (text, is_str, _) in enumerate(lines):
        check = check_line(text, index)
        if check.commentary:
            verdict = "N/A, just commentary"
        elif check.inconsistent:
            verdict = "Inconsistent"
            draft.texts[f"explanation_{i}"] = check.explanation()
            span = least_grounded_phrase(text, check) if is_str else None
            if span:
                draft.spans.append(
                    SpanDraft(
                        f"ambiguous_{i}",
                        span[0],
                        span[1],
                        "Ambiguous",
                        note="least supported portion of the line",
                        score=0.3,
                    )
                )
        else:
            verdict = "Consistent"
        draft.choices[f"verdict_{i}"] = [verdict]
        verdicts[verdict] += 1
        if not check.commentary:
            groundings.append(check.grounding)
    for k, alt in enumerate(task_alternates(data)):
        choice, why = swap_decision(alt, lines, index)
        draft.choices[f"swap_{k}"] = [choice]
        draft.texts[f"swap_explanation_{k}"] = why
    draft.score = round(sum(groundings) / len(groundings), 3) if groundings else None
    draft.info = {"lines": len(lines), "verdicts": dict(verdicts)}
    return draft


def least_grounded_phrase(line: str, check: LineCheck) -> tuple[int, int] | None:
    """The densest run of unsupported words (names count), as a span of ``line``."""
    marks = sorted(
        [(t.start, t.end) for t in check.missing + check.scattered]
        + [(e.start, e.end) for e in check.unknown_names]
        + [(n.start, n.end) for n in check.unknown_numbers]
    )
    if not marks:
        return None
    tokens = g.tokenize(line)
    position = {t.start: i for i, t in enumerate(tokens)}
    groups: list[list[tuple[int, int]]] = [[marks[0]]]
    for mark in marks[1:]:
        last = groups[-1][-1]
        gap = position.get(mark[0], 0) - position.get(last[0], 0)
        if mark[0] <= last[1] or gap <= 3:
            groups[-1].append(mark)
        else:
            groups.append([mark])
    best = max(groups, key=len)
    return g.trim_span(line, best[0][0], max(end for _, end in best))


def swap_decision(alt: dict, lines: list[tuple[str, bool, str | None]], index: g.SourceIndex) -> tuple[str, str]:
    """("Yes"|"No", explanation) for replacing a line by its alternate."""
    line_no = alt.get("line")
    text = as_text(alt.get("text"))
    if not text and isinstance(line_no, int) and 0 <= line_no < len(lines):
        text = lines[line_no][0]
    alternate = as_text(alt.get("alternate"))
    if not alternate.strip():
        return "No", "There is no alternate text to compare."
    old, new = check_line(text, index), check_line(alternate, index)
    dropped = [t for t in old.missing if t.folded not in {m.folded for m in new.missing}]
    added = [t for t in new.missing if t.folded not in {m.folded for m in old.missing}]
    better = new.facts_missing < old.facts_missing or (
        new.facts_missing == old.facts_missing and new.grounding > old.grounding + SWAP_MARGIN
    )
    if better:
        why = "Yes: the alternate is better supported by the story"
        why += f" (it drops {quote_words(dropped)})." if dropped else "."
        return "Yes", why
    if added:
        return "No", f"No: the alternate adds words the story does not support ({quote_words(added)})."
    return "No", "No: the alternate is not better supported by the story than the line."


# --------------------------------------------------------------------------------------------
# 4. likert_rubric_es (Spanish news summaries, 1-5 on five criteria)
# --------------------------------------------------------------------------------------------

_BULLET_RE = re.compile(r"^\s*(?:[-*•·–—]|\d{1,2}[.)])\s+")
#: Mean words per bullet: up to 3 = loose words (Coherence 1), up to 7 = fragments (2),
#: longer = developed points (3).
BULLET_LOOSE_WORDS = 3
BULLET_FRAGMENT_WORDS = 7
_ES_CONNECTORS = phrase_regex(
    [
        g.fold(p)
        for p in (
            "además",
            "sin embargo",
            "por otro lado",
            "por otra parte",
            "mientras",
            "tras",
            "después",
            "por ello",
            "por eso",
            "por lo tanto",
            "por tanto",
            "asimismo",
            "no obstante",
            "aunque",
            "porque",
            "ya que",
            "debido a",
            "finalmente",
            "por último",
            "en cambio",
            "luego",
            "entonces",
            "posteriormente",
            "a pesar de",
            "dado que",
            "de hecho",
            "por su parte",
            "antes de",
            "en primer lugar",
            "a su vez",
            "es decir",
            "de este modo",
            "de esta manera",
            "por consiguiente",
            "al mismo tiempo",
            "en este sentido",
            "sino",
            "incluso",
            "también",
            "así como",
            "con el objetivo de",
            "para ello",
            "mientras tanto",
            "gracias a",
            "por lo que",
            "de modo que",
            "de forma que",
            "en cuanto a",
            "a raíz de",
            "con todo",
        )
    ]
)
_ES_CHATBOT = phrase_regex(
    [
        g.fold(p)
        for p in (
            "te gustaría que",
            "le gustaría que",
            "quieres que",
            "quiere que",
            "desea que",
            "deseas que",
            "espero que",
            "si necesitas",
            "si necesita",
            "no dudes en",
            "no dude en",
            "puedo ayudarte",
            "puedo ayudar",
            "aquí tienes",
            "aquí tiene",
            "aquí está el resumen",
            "hay algo más",
            "como modelo de lenguaje",
            "como asistente",
            "este resumen",
            "el resumen anterior",
            "¿necesitas",
            "claro, aquí",
            "por supuesto, aquí",
            "te presento",
            "le presento",
            "resumen del texto",
            "resumen del artículo",
            "resumen de la noticia",
            "here's",
            "here is",
        )
    ]
)
_ES_SUBJECTIVE = [
    g.fold(p)
    for p in (
        "preocupante",
        "lamentable",
        "lamentablemente",
        "impresionante",
        "es importante destacar",
        "cabe destacar",
        "sin duda",
        "es fundamental",
        "es crucial",
        "es esencial",
        "alarmante",
        "increíble",
        "admirable",
        "vergonzoso",
        "sorprendente",
        "desafortunadamente",
        "afortunadamente",
        "fascinante",
        "inspirador",
        "conmovedor",
        "indignante",
        "escandaloso",
        "loable",
        "encomiable",
        "es evidente que",
        "no cabe duda",
    )
]
_EN_ONLY_WORDS = (g.STOPWORDS_EN - g.STOPWORDS_ES - g.STOPWORDS_IT) - {
    "s",
    "t",
    "d",
    "m",
    "re",
    "ve",
    "ll",
    "me",
    "no",
    "a",
    "he",
    "son",
    "once",
    "most",
}
_ES_MONTHS = frozenset(
    "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre".split()
)
_ES_PREPOSITIONS = frozenset(
    "a de en con por para sobre entre sin desde hasta tras hacia contra ante bajo según segun".split()
)
_ES_INVARIABLE_AFTER_ARTICLE = frozenset(
    "casi apenas menos tan solo sólo aun aún todavía cuales cuantas cuantos demas".split()
)
_ES_NOT_PARTICIPLES = frozenset(
    """lado grado sentido partido pedido cuidado periodo medido mercado estado resultado
    pasado contenido ruido vestido marido sonido apellido abogado soldado senado jurado""".split()
)
#: Summary nearly the article: longer than this share of it, or this share of its word
#: trigrams copied from the article (with at least half the length).
COPY_LENGTH_RATIO = 0.8
COPY_TRIGRAM_SHARE = 0.8
LONG_SUMMARY_RATIO = 0.5
#: Consistency: a sentence with this many content words and a smaller share of them in the
#: article counts as one invented statement (when it has no unknown number or name).
UNSUPPORTED_SENTENCE_MIN_WORDS = 4
UNSUPPORTED_SENTENCE_GROUNDING = 0.34
#: 5W: at most this many key entities and numbers of the article are checked.
KEY_ENTITIES = 5
KEY_NUMBERS = 2


def annotate_likert_rubric_es(data: dict) -> Draft:
    article = read_text(data, "article")
    summary = read_text(data, "summary", MAX_TARGET_CHARS)
    if not summary.strip():
        return Draft(info={"empty_summary": True})
    index = g.SourceIndex([article, read_text(data, "title")], lang="es")
    copy = is_near_copy(article, summary)
    coherence, coherence_info = coherence_score(summary)
    consistency, unsupported = consistency_score(summary, index)
    fluency, fluency_issues = fluency_score(summary)
    relevance, relevance_issues = relevance_score(article, summary, copy)
    five_w, key_info = five_w_score(article, summary, copy)
    content = [t for t in g.tokenize(summary) if g.is_content(t, g.STOPWORDS_ES)]
    return Draft(
        choices={
            "Coherence": [str(coherence)],
            "Consistency": [str(consistency)],
            "Fluency": [str(fluency)],
            "Relevance": [str(relevance)],
            "5W": [str(five_w)],
        },
        score=round(index.grounding(content), 3) if article.strip() else None,
        info={
            "coherence": coherence_info,
            "unsupported": unsupported,
            "fluency_issues": fluency_issues,
            "relevance_issues": relevance_issues,
            "five_w": key_info,
            "near_copy": copy,
        },
    )


def coherence_score(summary: str) -> tuple[int, dict[str, object]]:
    """Bullet lists score 1-3 by how developed the points are; prose 5 with connectors
    (explicit coherence), 4 without (implicit); a single sentence is not penalised (5)."""
    lines = [summary[a:b] for a, b in g.split_lines(summary)]
    bullets = [_BULLET_RE.sub("", line) for line in lines if _BULLET_RE.match(line)]
    connectors = sorted({m.group().lower() for m in _ES_CONNECTORS.finditer(g.fold(summary))})
    info: dict[str, object] = {"bullets": len(bullets), "connectors": connectors}
    if len(bullets) >= 2:
        mean_words = sum(len(g.tokenize(b)) for b in bullets) / len(bullets)
        info["mean_bullet_words"] = round(mean_words, 1)
        if mean_words <= BULLET_LOOSE_WORDS:
            return 1, info
        return (2 if mean_words <= BULLET_FRAGMENT_WORDS else 3), info
    sentences = g.split_sentences(summary)
    info["sentences"] = len(sentences)
    return (5 if len(sentences) <= 1 or connectors else 4), info


def consistency_score(summary: str, index: g.SourceIndex) -> tuple[int, list[str]]:
    """5 minus one per unsupported fact (number, name, or sentence with few known words);
    1 when almost nothing of the summary is in the article."""
    unsupported: list[str] = []
    grounded_words = total_words = 0
    tokens = g.tokenize(summary)
    for start, end in g.split_sentences(summary):
        sentence = summary[start:end]
        if _ES_CHATBOT.search(g.fold(sentence)):
            continue
        facts = [
            f"number {n.text}"
            for n in g.extract_numbers(sentence, "es")
            if not index.has_number(n) and not g.is_list_marker(sentence, n)
        ]
        names = (g.without_initial_word(sentence, e) for e in g.extract_entities(sentence, g.STOPWORDS_ES))
        facts += [f"name {e.text}" for e in names if e is not None and not _partly_known(e, index)]
        content = [t for t in tokens_in(tokens, start, end) if g.is_content(t, g.STOPWORDS_ES)]
        known = sum(index.has_word(t.text) for t in content)
        grounded_words += known
        total_words += len(content)
        if (
            not facts
            and len(content) >= UNSUPPORTED_SENTENCE_MIN_WORDS
            and known / len(content) < UNSUPPORTED_SENTENCE_GROUNDING
        ):
            facts.append(f"sentence '{sentence[:60]}'")
        unsupported.extend(facts)
    if total_words >= 5 and grounded_words / total_words < 0.2:
        return 1, unsupported
    return clamp(5 - len(unsupported), 2, 5), unsupported


def _partly_known(entity: g.Entity, index: g.SourceIndex) -> bool:
    """Some word of the name is in the source (``Ricky Rubio`` for an article naming
    ``Ricky``): completing a name is not inventing one."""
    return any(index.has_exact_word(k) for k in entity.keys if len(k) >= 3) or index.has_entity(entity)


def fluency_score(summary: str) -> tuple[int, list[str]]:
    """5 minus one per kind of surface problem; 1 when the summary is mostly English."""
    issues: list[str] = []
    tokens = g.tokenize(summary)
    repeats = g.repeated_words(tokens, summary)
    issues += [f"repeated word '{a.text}'" for a, _ in repeats[:2]]
    prose = [(a, b) for a, b in g.split_sentences(summary) if not _BULLET_RE.match(summary[a:b])]
    lower_starts = [summary[a:b] for a, b in prose if _first_letter(summary[a:b]).islower()]
    if lower_starts:
        issues.append(f"sentence starting in lowercase: '{lower_starts[0][:30]}'")
    english = [t.folded for t in tokens if t.text.islower() and t.folded in _EN_ONLY_WORDS]
    function_words = [t for t in tokens if t.folded in g.STOPWORDS]
    if len(english) >= 5 and len(english) > 0.5 * max(1, len(function_words)):
        return 1, ["written in English"]
    if len(set(english)) >= 2:
        issues.append(f"English words mixed in: {', '.join(sorted(set(english))[:4])}")
    last_line = summary.rstrip().rsplit("\n", 1)[-1]
    if not _BULLET_RE.match(last_line) and summary.rstrip()[-1:] not in tuple(".!?…\"»)”'"):
        issues.append("no final punctuation")
    if any("¿" not in m.group() for m in re.finditer(r"[^.!?\n]*\?", summary)):
        issues.append("question without opening '¿'")
    issues += [message for _, _, message in spanish_grammar_errors(summary)]
    if re.search(r"\s[,.;:](?!\d)|,,|\.\.(?!\.)", summary):
        issues.append("misplaced punctuation")
    return clamp(5 - len(issues), 1, 5), issues


def spanish_grammar_errors(text: str) -> list[tuple[int, int, str]]:
    """Frequent slips, conservatively: ``a lanzado`` (for ``ha``), ``los consumidor`` (plural
    article after a preposition, singular noun), ``El proyecto costaron`` (plural preterite
    after a sentence-initial singular article + noun)."""
    tokens = g.tokenize(text)
    errors = []
    for i, token in enumerate(tokens[:-1]):
        nxt = tokens[i + 1]
        if text[token.end : nxt.start] != " ":
            continue
        prev = tokens[i - 1].folded if i else ""
        word = nxt.folded
        plain = nxt.text.isalpha() and nxt.text.islower() and word not in g.STOPWORDS_ES
        if token.text == "a" and plain and word.endswith(("ado", "ido")) and word not in _ES_NOT_PARTICIPLES:
            errors.append((token.start, nxt.end, f"'a {nxt.text}' should be 'ha {nxt.text}'"))
        elif (
            token.folded in ("los", "las", "unos", "unas")
            and plain
            and len(word) > 3
            and word[-1] not in "sx"
            and word not in _ES_INVARIABLE_AFTER_ARTICLE
            and word not in g.NUMBER_WORDS["es"]
            and not word.endswith("mente")
            and (token.folded.startswith("un") or prev in _ES_PREPOSITIONS)
        ):
            errors.append((token.start, nxt.end, f"plural '{token.text}' before singular '{nxt.text}'"))
        elif (
            token.folded in ("el", "la")
            and plain
            and word[-1] not in "s"
            and g.is_sentence_initial(text, token.start)
            and i + 2 < len(tokens)
            and text[nxt.end : tokens[i + 2].start] == " "
            and tokens[i + 2].folded.endswith(("aron", "ieron", "yeron"))
        ):
            verb = tokens[i + 2]
            errors.append(
                (token.start, verb.end, f"plural verb '{verb.text}' after singular '{token.text} {nxt.text}'")
            )
    return errors


def _first_letter(text: str) -> str:
    stripped = _BULLET_RE.sub("", text)
    return next((ch for ch in stripped if ch.isalpha()), "A")


def relevance_score(article: str, summary: str, copy: bool) -> tuple[int, list[str]]:
    """5, minus 1 for chatbot phrases, 1 for subjective valuations the article does not make,
    1 for an overlong or redundant summary; 1 when the summary is (nearly) the article."""
    if copy:
        return 1, ["nearly the article itself"]
    issues = []
    folded, folded_article = g.fold(summary), g.fold(article)
    chatbot = _ES_CHATBOT.search(folded)
    if chatbot:
        issues.append(f"chatbot phrase '{chatbot.group()}'")
    valuations = [
        v
        for v in _ES_SUBJECTIVE
        if re.search(rf"(?<!\w){re.escape(v)}(?!\w)", folded)
        and not re.search(rf"(?<!\w){re.escape(v)}(?!\w)", folded_article)
    ]
    if valuations:
        issues.append(f"subjective valuation '{valuations[0]}'")
    ratio = _length_ratio(article, summary)
    if ratio > LONG_SUMMARY_RATIO:
        issues.append(f"long summary ({ratio:.0%} of the article)")
    if _has_redundant_sentences(summary):
        issues.append("redundant sentences")
    return clamp(5 - len(issues), 1, 5), issues


def _length_ratio(article: str, summary: str) -> float:
    words = len(g.tokenize(article))
    return len(g.tokenize(summary)) / words if words else 0.0


def is_near_copy(article: str, summary: str) -> bool:
    """The summary is (almost) the article: as long as it, or mostly copied trigrams."""
    ratio = _length_ratio(article, summary)
    if ratio > COPY_LENGTH_RATIO:
        return True
    summary_grams = g.word_ngrams(g.tokenize(summary), 3)
    if ratio < 0.5 or not summary_grams:
        return False
    copied = len(summary_grams & g.word_ngrams(g.tokenize(article), 3)) / len(summary_grams)
    return copied > COPY_TRIGRAM_SHARE


def _has_redundant_sentences(summary: str) -> bool:
    stems = [g.stem_set(summary[a:b], g.STOPWORDS_ES) for a, b in g.split_sentences(summary)]
    for i, left in enumerate(stems):
        for right in stems[i + 1 :]:
            union = left | right
            if len(union) >= 4 and len(left & right) / len(union) > 0.7:
                return True
    return False


def five_w_score(article: str, summary: str, copy: bool) -> tuple[int, dict[str, object]]:
    """Share of the article's key names, numbers and dates that the summary keeps."""
    if copy:
        return 5, {"near_copy": True}
    keys = key_facts(article)
    summary_index = g.SourceIndex([summary], lang="es")
    if keys:
        kept = [label for label, present in ((k, p(summary_index)) for k, p in keys) if present]
        share = len(kept) / len(keys)
        info: dict[str, object] = {"keys": [k for k, _ in keys], "kept": kept}
    else:
        frequent = [
            s for s, _ in Counter(g.stem(t.text) for t in g.content_tokens(article, g.STOPWORDS_ES)).most_common(10)
        ]
        share = g.overlap(set(frequent), g.stem_set(summary, g.STOPWORDS_ES))[0]
        info = {"frequent_stems": frequent}
    info["share"] = round(share, 3)
    score = 5 if share >= 0.85 else 4 if share >= 0.65 else 3 if share >= 0.4 else 2 if share > 0 else 1
    return score, info


def key_facts(article: str) -> list[tuple[str, Callable[[g.SourceIndex], bool]]]:
    """The article's W's: its most frequent names, the numbers and dates of its lead."""
    entities = g.extract_entities(article, g.STOPWORDS_ES)
    counts = Counter(e.keys for e in entities)
    first: dict[tuple[str, ...], g.Entity] = {}
    for e in entities:
        first.setdefault(e.keys, e)
    ranked = sorted(counts, key=lambda k: (-counts[k], first[k].start))[:KEY_ENTITIES]
    facts: list[tuple[str, Callable[[g.SourceIndex], bool]]] = [
        (first[k].text, _entity_present(k)) for k in ranked if k
    ]
    sentences = g.split_sentences(article)[:3]
    lead = article[sentences[0][0] : sentences[-1][1]] if sentences else ""
    numbers = [n for n in g.extract_numbers(lead, "es", words=False)]
    seen: set[float] = set()
    for number in numbers:
        if number.value not in seen and len(seen) < KEY_NUMBERS:
            seen.add(number.value)
            facts.append((number.text, lambda idx, n=number: idx.has_number(n)))
    months = [t.folded for t in g.tokenize(lead) if t.folded in _ES_MONTHS]
    if months:
        facts.append((months[0], lambda idx, m=months[0]: m in idx.words))
    return facts


def _entity_present(keys: tuple[str, ...]) -> Callable[[g.SourceIndex], bool]:
    """A name is kept when most of its words are (``Pedro Sánchez`` ~ ``Sánchez``)."""
    words = [k for k in keys if len(k) >= 3] or list(keys)

    def present(index: g.SourceIndex) -> bool:
        found = sum(index.has_word(w) for w in words)
        return found >= max(1, math.ceil(len(words) / 2))

    return present


# --------------------------------------------------------------------------------------------
# 5. hotel_spans (HotelCheckSpan)
# --------------------------------------------------------------------------------------------

HOTEL_CONTROL = get_schema("hotel_spans").span_control()
HOTEL_PRIORITY = {"Incorrect": 0, "Misleading": 1, "Not Checkable": 2}
#: Impression: 6 for a clean summary, minus a cost per error (Incorrect costs most).
IMPRESSION_CLEAN = 6
IMPRESSION_COST = {"Incorrect": 1.6, "Misleading": 1.2, "Not Checkable": 1.0}
DEFAULT_NO_ERRORS = "I did not find any errors in the summary"
#: Proximity wording is Misleading when the descriptions give more than this distance (km).
NEAR_KM = 1.0
CLOSE_KM = 5.0

_NUM = (
    r"\d+(?:[.,]\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"fifteen|twenty|twenty-five|thirty|forty|forty-five|fifty|sixty"
)
_MEASURE_RE = re.compile(
    rf"(?<![\w.])(?P<num>{_NUM})(?:\s*(?:-|–|to)\s*(?:{_NUM}))?[\s-]*"
    r"(?P<unit>minutes?|mins?|hours?|hrs?|km|kms|kilomet(?:er|re)s?|miles?|mi|meters?|metres?|"
    r"m|yards?|feet|ft)(?!\w)(?:['’]s?)?"
    r"(?P<mode>[\s-]+(?:walk|walking|drive|driving|ride|car ride|taxi ride|train ride|"
    r"bus ride|stroll))?",
    re.IGNORECASE,
)
_TRAVEL_HINT_RE = re.compile(
    r"^\W*(?:\w+\W+){0,3}?(?:walk|walking|drive|driving|ride|away|from|to|by car|by taxi|"
    r"by train|on foot|stroll)\b",
    re.IGNORECASE,
)
_UNIT_FACTORS = {  # to minutes for time, to km for distance
    "minute": ("time", 1.0),
    "min": ("time", 1.0),
    "hour": ("time", 60.0),
    "hr": ("time", 60.0),
    "km": ("distance", 1.0),
    "kilometer": ("distance", 1.0),
    "kilometre": ("distance", 1.0),
    "mile": ("distance", 1.609),
    "mi": ("distance", 1.609),
    "meter": ("distance", 0.001),
    "metre": ("distance", 0.001),
    "m": ("distance", 0.001),
    "yard": ("distance", 0.000914),
    "feet": ("distance", 0.000305),
    "ft": ("distance", 0.000305),
}
_PLACE_TYPES = {
    "airport": ("airport", "intl", "airfield", "aeroporto"),
    "station": ("station", "railway", "metro", "subway", "underground", "tube"),
    "beach": ("beach", "beaches"),
    "mall": ("mall", "shopping"),
    "museum": ("museum", "gallery"),
    "park": ("park",),
    "river": ("river",),
    "lake": ("lake",),
    "bay": ("bay",),
    "square": ("square", "plaza", "piazza"),
    "street": ("street", "avenue", "road", "boulevard", "strip"),
    "church": ("cathedral", "church", "temple", "mosque", "basilica", "shrine"),
    "university": ("university", "college", "campus"),
    "stadium": ("stadium", "arena"),
    "market": ("market",),
    "tower": ("tower",),
    "bridge": ("bridge",),
    "castle": ("castle", "palace"),
    "harbour": ("harbour", "harbor", "port", "marina", "pier", "wharf"),
    "island": ("island",),
    "zoo": ("zoo", "aquarium"),
    "theatre": ("theatre", "theater", "opera"),
    "hospital": ("hospital",),
}
_TYPE_OF_WORD = {w: kind for kind, words in _PLACE_TYPES.items() for w in words}
_AMENITIES: dict[str, tuple[str, ...]] = {
    "pool": ("pool", "pools", "swimming"),
    "spa": ("spa", "wellness", "massage", "massages"),
    "gym": ("gym", "fitness"),
    "fitness center": ("fitness", "gym"),
    "fitness centre": ("fitness", "gym"),
    "sauna": ("sauna", "steam room"),
    "hot tub": ("hot tub", "jacuzzi", "whirlpool"),
    "jacuzzi": ("hot tub", "jacuzzi", "whirlpool"),
    "pet-friendly": ("pet", "pets", "dog", "dogs"),
    "pet friendly": ("pet", "pets", "dog", "dogs"),
    "pets": ("pet", "pets", "dog", "dogs"),
    "rooftop": ("rooftop", "roof", "roof-top"),
    "terrace": ("terrace", "terraces", "patio"),
    "balcony": ("balcony", "balconies"),
    "garden": ("garden", "gardens"),
    "private beach": ("private beach",),
    "free wi-fi": ("wi-fi", "wifi", "wi fi", "internet", "wireless"),
    "wi-fi": ("wi-fi", "wifi", "wi fi", "internet", "wireless"),
    "wifi": ("wi-fi", "wifi", "wi fi", "internet", "wireless"),
    "parking": ("parking", "car park", "garage", "valet"),
    "shuttle": ("shuttle", "transfer", "transfers"),
    "breakfast": ("breakfast",),
    "restaurant": ("restaurant", "restaurants", "dining", "bistro", "eatery", "brasserie"),
    "kitchen": ("kitchen", "kitchenette", "kitchenettes", "cooking"),
    "kitchenette": ("kitchen", "kitchenette", "kitchenettes"),
    "room service": ("room service",),
    "concierge": ("concierge",),
    "playground": ("playground", "kids club", "children", "kids"),
    "kids club": ("kids club", "children", "kids"),
    "tennis": ("tennis",),
    "golf": ("golf",),
    "casino": ("casino",),
    "ocean views": ("ocean", "sea"),
    "ocean view": ("ocean", "sea"),
    "sea views": ("ocean", "sea"),
    "sea view": ("ocean", "sea"),
    "minibar": ("minibar", "mini-bar", "mini bar"),
    "air conditioning": ("air conditioning", "air-conditioned", "air conditioned", "a/c"),
    "laundry": ("laundry", "dry cleaning"),
    "business center": ("business",),
    "business centre": ("business",),
    "meeting rooms": ("meeting", "conference", "event"),
    "elevator": ("elevator", "lift"),
    "bathtub": ("bathtub", "tub", "bath"),
}
#: Words an amenity could be a stretch of: mentioning them makes the amenity Misleading.
_AMENITY_RELATED: dict[str, tuple[str, ...]] = {
    "terrace": ("roof", "rooftop", "deck", "balcony"),
    "balcony": ("terrace", "patio", "deck"),
    "garden": ("greenery", "lawn", "plants", "courtyard", "park"),
    "private beach": ("beach",),
    "rooftop": ("top floor", "upper floor"),
    "restaurant": ("café", "cafe", "bar", "breakfast room", "dining room"),
    "spa": ("sauna", "steam room", "hot tub", "jacuzzi"),
    "pool": ("hot tub", "jacuzzi", "whirlpool"),
    "kitchen": ("microwave", "refrigerator", "fridge"),
    "ocean views": ("lake", "river", "bay", "harbour", "harbor"),
    "sea views": ("lake", "river", "bay", "harbour", "harbor"),
}
_AMENITY_RE = re.compile(
    r"(?<!\w)(?:" + "|".join(sorted((re.escape(a) for a in _AMENITIES), key=len, reverse=True)) + r")(?:e?s)?(?!\w)",
    re.IGNORECASE,
)
_PROXIMITY_NEAR = (
    "steps from",
    "steps away from",
    "steps to",
    "steps away",
    "stone's throw",
    "stone’s throw",
    "next to",
    "right next to",
    "adjacent to",
    "walking distance",
    "short walk",
    "moments from",
    "moments away",
    "beachfront",
    "on the beach",
    "right on",
    "doorstep",
)
_PROXIMITY_CLOSE = (
    "close to",
    "near",
    "nearby",
    "minutes from",
    "minutes away",
    "a short drive",
    "short drive",
    "easy reach",
    "heart of",
)
_PROXIMITY_RE = phrase_regex(list(_PROXIMITY_NEAR + _PROXIMITY_CLOSE))
_INITIAL_WORDS = frozenset(
    """enjoy relax shop stay discover explore experience unwind savor savour indulge located
    situated nestled conveniently guests just take visit dine sip immerse escape perfect ideal
    boasting featuring offering set step wake treat start end find unwind benefit make""".split()
)


@dataclass
class Measure:
    """A distance or travel time: ``15-minute drive``, ``7.0 km``."""

    start: int
    end: int
    text: str
    kind: str  # "time" | "distance"
    value: float  # minutes or km
    raw_value: float
    unit: str
    mode: str  # "walk" | "drive" | ""


def find_measures(text: str, travel_only: bool = False) -> list[Measure]:
    """Distances and times in ``text``; times count only with a travel hint
    (``walk``, ``away``, ``from``...) so ``24-hour front desk`` is not a travel time."""
    measures = []
    for m in _MEASURE_RE.finditer(text):
        raw = _number_value(m.group("num"))
        unit = _unit_key(m.group("unit"))
        kind, factor = _UNIT_FACTORS.get(unit, ("", 0.0))
        if raw is None or not kind:
            continue
        mode_text = (m.group("mode") or "").lower()
        mode = "walk" if ("walk" in mode_text or "stroll" in mode_text) else ("drive" if mode_text else "")
        if kind == "time":
            if not mode and not _TRAVEL_HINT_RE.match(text[m.end() : m.end() + 40]):
                if travel_only or not re.search(r"\b(?:within|in|just)\s*$", text[: m.start()]):
                    continue
            if not mode:
                mode = _mode_nearby(text[m.end() : m.end() + 40])
        measures.append(Measure(m.start(), m.end(), m.group(), kind, raw * factor, raw, unit, mode))
    return measures


def _unit_key(unit: str) -> str:
    """``minutes`` -> ``minute``, ``kms`` -> ``km``: the key of ``_UNIT_FACTORS``."""
    unit = unit.lower()
    return unit if unit in _UNIT_FACTORS or not unit.endswith("s") else unit[:-1]


def _number_value(raw: str) -> float | None:
    """``17.5``, ``five``, ``twenty-five``, and ``one`` (a lone "one" is a number here)."""
    if raw.lower() == "one":
        return 1.0
    numbers = g.extract_numbers(raw, "en")
    return numbers[0].value if numbers else None


def _mode_nearby(after: str) -> str:
    if re.match(r"^\W*(?:\w+\W+){0,3}?(?:walk|walking|on foot|stroll)", after, re.IGNORECASE):
        return "walk"
    if re.match(r"^\W*(?:\w+\W+){0,3}?(?:drive|driving|by car|by taxi|ride)", after, re.IGNORECASE):
        return "drive"
    return ""


#: Words around a measure in the descriptions that tell what it is about (in tokens).
MEASURE_CONTEXT_TOKENS = 10
#: A walk of at most this many minutes is "near".
NEAR_WALK_MINUTES = 15


@dataclass
class HotelSource:
    """The descriptions, indexed for the hotel checks."""

    text: str
    index: g.SourceIndex = field(init=False)
    folded: str = field(init=False)
    compact: str = field(init=False)
    measures: list[Measure] = field(init=False)
    tokens: list[g.Token] = field(init=False)
    stems: list[str] = field(init=False)
    starts: list[int] = field(init=False)
    sentences: list[tuple[int, int]] = field(init=False)
    sentence_starts: list[int] = field(init=False)
    measure_index: list[int] = field(init=False)  # token position of each measure

    def __post_init__(self) -> None:
        self.index = g.SourceIndex([self.text], lang="en")
        self.folded = g.fold(self.text)
        self.compact = re.sub(r"[^a-z0-9]", "", self.folded)
        self.measures = find_measures(self.text)
        self.tokens = g.tokenize(self.text)
        self.stems = [g.stem(t.text) for t in self.tokens]
        self.starts = [t.start for t in self.tokens]
        self.sentences = g.split_sentences(self.text)
        self.sentence_starts = [a for a, _ in self.sentences]
        self.measure_index = [bisect_left(self.starts, m.start) for m in self.measures]

    def mentions(self, phrase: str) -> bool:
        return re.search(rf"(?<!\w){re.escape(g.fold(phrase))}(?!\w)", self.folded) is not None

    def measures_near(self, stems: set[str], require_all: bool = False) -> list[Measure]:
        """For each mention of the stems, the nearest measure of the same sentence (within
        MEASURE_CONTEXT_TOKENS): what the descriptions say about that place.
        With ``require_all``, only mentions of the whole name count (``Dubai Mall``)."""
        found: list[Measure] = []
        clauses: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for hit, token_stem in enumerate(self.stems):
            if token_stem not in stems or (require_all and not self._phrase_at(hit, stems)):
                continue
            sentence = self._sentence_of(self.tokens[hit].start)
            if sentence not in clauses:
                clauses[sentence] = g.split_clauses(self.text, *sentence)
            best = self._nearest(hit, sentence, clauses[sentence])
            if best is not None and best not in found:
                found.append(best)
        return found

    def _sentence_of(self, position: int) -> tuple[int, int]:
        k = bisect_right(self.sentence_starts, position) - 1
        if k >= 0 and position < self.sentences[k][1]:
            return self.sentences[k]
        return (position, position + 1)

    def _phrase_at(self, i: int, stems: set[str]) -> bool:
        """Token ``i`` belongs to a run of adjacent tokens covering all ``stems``
        (``Dubai Mall``, not ``Dubai`` ... ``Mall of the Emirates``)."""

        def part_of_name(j: int) -> bool:
            return 0 <= j < len(self.tokens) and (self.stems[j] in stems or self.tokens[j].folded in {"of", "the"})

        lo = hi = i
        while part_of_name(lo - 1):
            lo -= 1
        while part_of_name(hi + 1):
            hi += 1
        return stems <= set(self.stems[lo : hi + 1])

    def _nearest(self, hit: int, sentence: tuple[int, int], clauses: list[tuple[int, int]]) -> Measure | None:
        """The measure of the hit's clause, else the nearest one of its sentence."""
        position = self.tokens[hit].start
        clause = next(((c, d) for c, d in clauses if c <= position < d), None)
        for lo, hi in ([clause] if clause else []) + [sentence]:
            near = [
                (abs(index - hit), m)
                for m, index in zip(self.measures, self.measure_index, strict=True)
                if lo <= m.start < hi and abs(index - hit) <= MEASURE_CONTEXT_TOKENS
            ]
            if near:
                return min(near, key=lambda pair: pair[0])[1]
        return None


def context_stems(text: str, tokens: list[g.Token], start: int, end: int) -> set[str]:
    """Stems of the content words within MEASURE_CONTEXT_TOKENS of ``text[start:end]``,
    not crossing a sentence end."""
    sentence = next(((a, b) for a, b in g.split_sentences(text) if a <= start < b), (0, len(text)))
    inside = [i for i, t in enumerate(tokens) if sentence[0] <= t.start and t.end <= sentence[1]]
    before = [i for i in inside if tokens[i].end <= start][-MEASURE_CONTEXT_TOKENS:]
    after = [i for i in inside if tokens[i].start >= end][:MEASURE_CONTEXT_TOKENS]
    return {
        g.stem(tokens[i].text) for i in before + after if g.is_content(tokens[i], g.STOPWORDS_EN)
    } - _GENERIC_TRAVEL_STEMS


_GENERIC_TRAVEL_STEMS = {
    g.stem(w)
    for w in (
        "hotel",
        "minute",
        "walk",
        "drive",
        "away",
        "located",
        "short",
        "convenient",
        "guests",
        "enjoy",
        "property",
        "stay",
        "car",
        "km",
        "miles",
        "distance",
        "just",
        "from",
        "inn",
        "resort",
        "lodge",
        "apartment",
        "apartments",
        "nearby",
        "only",
        "approximately",
    )
}


def annotate_hotel_spans(data: dict) -> Draft:
    value = data.get("summary")
    summary = read_text(data, "summary", MAX_TARGET_CHARS)
    source = HotelSource(read_text(data, "descriptions"))
    candidates: list[SpanDraft] = []
    if isinstance(value, str) and source.text.strip():
        candidates += measure_errors(summary, source)
        candidates += proximity_errors(summary, source)
        candidates += amenity_errors(summary, source)
        candidates += place_errors(summary, source)
        candidates += count_errors(summary, source, candidates)
    spans = non_overlapping([s for s in candidates if valid_span(summary, s.start, s.end)], HOTEL_PRIORITY)
    spans = merge_adjacent(summary, spans)
    draft = Draft(spans=spans)
    if not spans:
        draft.choices["no_errors"] = [no_errors_value(data)]
    cost = sum(IMPRESSION_COST.get(s.label, 1.0) for s in spans)
    draft.ratings["impression"] = clamp(IMPRESSION_CLEAN - cost, 1, 7)
    content = [t for t in g.tokenize(summary) if g.is_content(t, g.STOPWORDS_EN)]
    draft.score = round(source.index.grounding(content), 3) if source.text.strip() else None
    draft.info = {
        "errors": dict(Counter(s.label for s in spans)),
        "candidates": len(candidates),
        "descriptions_empty": not source.text.strip(),
    }
    return draft


def merge_adjacent(text: str, spans: list[SpanDraft]) -> list[SpanDraft]:
    """Join same-label spans separated only by spaces or a hyphen (``24-hour`` +
    ``room service`` -> one error)."""
    merged: list[SpanDraft] = []
    for span in spans:
        last = merged[-1] if merged else None
        if last and last.label == span.label and text[last.end : span.start].strip(" -") == "":
            merged[-1] = SpanDraft(
                last.control, last.start, span.end, last.label, note=f"{last.note}; {span.note}", score=last.score
            )
        else:
            merged.append(span)
    return merged


def no_errors_value(data: dict) -> str:
    options = data.get("no_errors_options")
    if isinstance(options, list) and options:
        first = options[0]
        label = first.get("value") if isinstance(first, dict) else first
        if isinstance(label, str) and label.strip():
            return label
    return DEFAULT_NO_ERRORS


def _targets_after(summary: str, end: int, limit: int = 5) -> set[str]:
    """Stems of the content words right after a position (what a distance is *to*)."""
    following = g.tokenize(summary[end : end + 80])[:limit]
    return {g.stem(t.text) for t in following if g.is_content(t, g.STOPWORDS_EN)} - _GENERIC_TRAVEL_STEMS


def summary_places(summary: str) -> list[g.Entity]:
    """Capitalised names of the summary, without a sentence-initial ordinary word
    (``Enjoy``, ``Close``)."""
    places = []
    for entity in g.extract_entities(summary, g.STOPWORDS_EN):
        tokens = list(entity.tokens)
        if g.is_sentence_initial(summary, tokens[0].start) and _common_initial(tokens[0], summary):
            tokens = tokens[1:]
        while tokens and tokens[0].folded in {"of", "the", "de", "la"}:
            tokens = tokens[1:]
        if tokens:
            places.append(
                g.Entity(summary[tokens[0].start : tokens[-1].end], tokens[0].start, tokens[-1].end, tuple(tokens))
            )
    return places


def _measure_place(summary: str, m: Measure, places: list[g.Entity]) -> g.Entity | None:
    """The place a summary measure is about: the nearest name after it (``25 minutes from
    Heathrow Airport``) or right before it (``Heathrow is 25 minutes away``)."""
    after = [p for p in places if 0 <= p.start - m.end <= 25]
    before = [p for p in places if 0 <= m.start - p.end <= 20 and not re.search(r"[.;!?]", summary[p.end : m.start])]
    if after:
        return min(after, key=lambda p: p.start)
    return max(before, key=lambda p: p.end) if before else None


def measure_errors(summary: str, source: HotelSource) -> list[SpanDraft]:
    """Distances/times that contradict the descriptions (Incorrect: a different figure for
    the same place, or the figure of another place), or that they do not give (Not
    Checkable: ``15-minute drive`` when only kilometres are given)."""
    spans = []
    places = summary_places(summary)
    tokens = g.tokenize(summary)
    for m in find_measures(summary, travel_only=True):
        place = _measure_place(summary, m, places)
        if place is not None:
            keys = {g.stem(k) for k in place.keys if len(k) >= 3}
            about = source.measures_near(keys, require_all=True) if keys else []
        else:
            targets = context_stems(summary, tokens, m.start, m.end)
            about = source.measures_near(targets) if targets else source.measures
        spans.extend(_check_measure(m, place, about, source))
    return spans


def _check_measure(m: Measure, place: g.Entity | None, about: list[Measure], source: HotelSource) -> list[SpanDraft]:
    same_kind = [d for d in about if d.kind == m.kind]
    match = next((d for d in same_kind if _close(d.value, m.value)), None)
    if match is not None:
        if m.mode and match.mode and m.mode != match.mode:
            return [_hotel(m.start, m.end, "Misleading", f"the descriptions say '{match.text}'")]
        return []
    swapped = [d for d in same_kind if _close(d.raw_value, m.raw_value) and d.unit != m.unit]
    if swapped:
        return [_hotel(m.start, m.end, "Incorrect", f"unit confusion: the descriptions say '{swapped[0].text}'")]
    elsewhere = [d for d in source.measures if d.kind == m.kind and _close(d.value, m.value)]
    if place is not None and elsewhere:
        return [
            _hotel(m.start, m.end, "Incorrect", f"'{elsewhere[0].text}' is said of another place, not of {place.text}")
        ]
    if same_kind:
        shown = ", ".join(f"'{d.text}'" for d in same_kind[:2])
        return [_hotel(m.start, m.end, "Incorrect", f"the descriptions give {shown}")]
    known = (
        "distances only"
        if m.kind == "time" and any(d.kind == "distance" for d in source.measures)
        else "no such figure"
    )
    return [_hotel(m.start, m.end, "Not Checkable", f"the descriptions give {known} for this")]


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=0.06, abs_tol=0.05)


def proximity_errors(summary: str, source: HotelSource) -> list[SpanDraft]:
    """ "steps from the beach" when every figure the descriptions give for the beach is
    kilometres away (a near figure, such as a 5-minute walk, clears it)."""
    spans = []
    places = summary_places(summary)
    for m in _PROXIMITY_RE.finditer(g.fold_aligned(summary)):
        phrase = m.group().lower()
        limit = NEAR_KM if phrase in _PROXIMITY_NEAR else CLOSE_KM
        place = next((p for p in places if 0 <= p.start - m.end() <= 6), None)
        if phrase in ("beachfront", "on the beach"):
            about = source.measures_near({"beach"})
        elif place is not None:
            about = source.measures_near({g.stem(k) for k in place.keys if len(k) >= 3}, require_all=True)
        else:
            about = source.measures_near(_targets_after(summary, m.end()))
        distances = [d for d in about if d.kind == "distance"]
        walks = [d for d in about if d.kind == "time" and d.mode == "walk"]
        near = any(d.value <= limit for d in distances) or any(d.value <= NEAR_WALK_MINUTES for d in walks)
        if near:
            continue
        if distances:
            nearest = min(distances, key=lambda d: d.value)
            spans.append(_hotel(m.start(), m.end(), "Misleading", f"the descriptions give '{nearest.text}'"))
        elif walks and limit == NEAR_KM:
            spans.append(_hotel(m.start(), m.end(), "Misleading", f"the descriptions give '{walks[0].text}'"))
        elif phrase == "beachfront" and not source.mentions("beach"):
            spans.append(_hotel(m.start(), m.end(), "Not Checkable", "the descriptions do not mention a beach"))
    return spans


def amenity_errors(summary: str, source: HotelSource) -> list[SpanDraft]:
    """Amenities the descriptions never mention: Not Checkable, or Misleading when they
    mention something it could be stretched from (``garden`` for ``greenery``)."""
    spans = []
    for m in _AMENITY_RE.finditer(summary):
        key = _amenity_key(m.group())
        synonyms = _AMENITIES.get(key, (key,))
        if any(source.mentions(s) for s in synonyms) or source.mentions(m.group()):
            continue
        related = next((w for w in _AMENITY_RELATED.get(key, ()) if source.mentions(w)), None)
        if related:
            spans.append(_hotel(m.start(), m.end(), "Misleading", f"the descriptions mention '{related}', not a {key}"))
        else:
            spans.append(_hotel(m.start(), m.end(), "Not Checkable", f"no {key} mentioned in the descriptions"))
    return spans


def _amenity_key(matched: str) -> str:
    lowered = matched.lower()
    for candidate in (lowered, lowered[:-1], lowered[:-2]):
        if candidate in _AMENITIES:
            return candidate
    return lowered


def place_errors(summary: str, source: HotelSource) -> list[SpanDraft]:
    """Named places absent from the descriptions: Incorrect when the descriptions name
    another place of the same type (another airport), else Not Checkable."""
    spans = []
    for place in summary_places(summary):
        keys = [k for k in place.keys if k not in {"of", "the", "de", "la"}]
        if _known_name(keys, source):
            continue
        kind = _place_kind(keys, summary[place.end : place.end + 30])
        if kind and any(source.mentions(w) for w in _PLACE_TYPES[kind]):
            spans.append(_hotel(place.start, place.end, "Incorrect", f"the descriptions name a different {kind}"))
        else:
            spans.append(
                _hotel(place.start, place.end, "Not Checkable", f"'{place.text}' is not mentioned in the descriptions")
            )
    return spans


def _common_initial(token: g.Token, summary: str) -> bool:
    """A sentence-initial capitalised word that is an ordinary word (``Enjoy``, ``Nestled``)."""
    word = token.folded
    return (
        word in _INITIAL_WORDS
        or word in g.STOPWORDS_EN
        or word.endswith(("ly", "ed", "ing"))
        or re.search(rf"(?<![\w]){re.escape(word)}(?!\w)", summary[token.end :]) is not None
    )


def _known_name(keys: list[str], source: HotelSource) -> bool:
    if not keys:
        return True
    if all(source.index.has_exact_word(k) or source.index.has_word(k) for k in keys):
        return True
    return "".join(keys) in source.compact


def _place_kind(keys: list[str], after: str) -> str | None:
    for word in keys + [t.folded for t in g.tokenize(after)[:1]]:
        if word in _TYPE_OF_WORD:
            return _TYPE_OF_WORD[word]
    return None


def count_errors(summary: str, source: HotelSource, taken: list[SpanDraft]) -> list[SpanDraft]:
    """Counts (``three restaurants``): Incorrect when the descriptions give another number for
    the same thing, Not Checkable when they give none for it."""
    spans = []
    tokens = g.tokenize(summary)
    starts = [t.start for t in tokens]
    source_counts = [
        (n, _nouns_after(source.text, source.tokens, source.starts, n.end))
        for n in g.extract_numbers(source.text, "en")
    ]
    for number in g.extract_numbers(summary, "en"):
        if any(s.start <= number.start < s.end for s in taken) or number.value < 2:
            continue
        nouns = _nouns_after(summary, tokens, starts, number.end)[:1]
        unit = nouns[0] if nouns and g.stem(nouns[0].text) in _NOT_COUNTED else None
        if unit is not None or not nouns:
            if not source.index.has_number(number):
                spans.append(
                    _hotel(
                        number.start,
                        unit.end if unit else number.end,
                        "Not Checkable",
                        f"the number {number.text} is not in the descriptions",
                    )
                )
            continue
        noun_stems = {g.stem(t.text) for t in nouns}
        counted = [n for n, after in source_counts if noun_stems & {g.stem(t.text) for t in after}]
        end = nouns[-1].end
        if any(_close(n.value, number.value) for n in counted):
            continue
        if counted:
            spans.append(_hotel(number.start, end, "Incorrect", f"the descriptions say '{counted[0].text}'"))
        else:
            spans.append(_hotel(number.start, end, "Not Checkable", "the descriptions do not give this count"))
    return spans


_NOT_COUNTED = {
    g.stem(w)
    for w in (
        "hour",
        "day",
        "night",
        "minute",
        "year",
        "star",
        "floor",
        "storey",
        "inch",
        "metre",
        "meter",
        "percent",
        "am",
        "pm",
        "km",
        "mile",
    )
}


def _nouns_after(text: str, tokens: list[g.Token], starts: list[int], position: int) -> list[g.Token]:
    """Up to two content words right after a number, before any punctuation."""
    first = bisect_left(starts, position)
    following = tokens[first : first + 3]
    nouns = []
    for token in following:
        gap_start = nouns[-1].end if nouns else position
        if re.search(r"[.,;:!?()]", text[gap_start : token.start]) or token.has_digit:
            break
        if g.is_content(token, g.STOPWORDS_EN):
            nouns.append(token)
        if len(nouns) == 2:
            break
    return nouns


def _hotel(start: int, end: int, label: str, note: str) -> SpanDraft:
    return SpanDraft(HOTEL_CONTROL, start, end, label, note=note, score=0.5)


# --------------------------------------------------------------------------------------------
# The annotator
# --------------------------------------------------------------------------------------------

ANNOTATORS: dict[str, Callable[[dict], Draft]] = {
    "summary_flaws": annotate_summary_flaws,
    "augmentation_quality": annotate_augmentation_quality,
    "story_consistency": annotate_story_consistency,
    "likert_rubric_es": annotate_likert_rubric_es,
    "hotel_spans": annotate_hotel_spans,
}


#: The text fields each schema reads (for the ``truncated`` report).
FIELDS_READ: dict[str, tuple[str, ...]] = {
    "summary_flaws": ("title", "post", "subreddit", "summary"),
    "augmentation_quality": ("original", "generated"),
    "story_consistency": ("story",),
    "likert_rubric_es": ("title", "article", "summary"),
    "hotel_spans": ("descriptions", "summary"),
}


class OfflineAnnotator:
    """Deterministic lexical baseline for the five built-in schemas (no model, no network)."""

    name = "offline"
    version = "1"  # bump when heuristics change

    def annotate(self, schema: str, data: dict) -> Draft:
        """A draft for one task; an unknown schema or unusable data gives an empty draft."""
        handler = ANNOTATORS.get(schema) if isinstance(schema, str) else None
        if handler is None:
            return Draft(info={"unsupported_schema": str(schema)})
        data = data if isinstance(data, dict) else {}
        try:
            draft = handler(data)
        except Exception as exc:  # a heuristic bug must not fail a whole predict batch
            log.exception("offline annotator failed on a %s task", schema)
            return Draft(info={"error": f"{type(exc).__name__}: {exc}"})
        truncated = truncated_fields(data, FIELDS_READ[schema])
        if truncated:
            draft.info["truncated"] = truncated
        return draft
