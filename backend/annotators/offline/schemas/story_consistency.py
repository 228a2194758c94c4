"""story_consistency (line-by-line verdicts, swaps, ambiguous portions): each line is aligned with
the story (its best passage, how far apart its words are, unknown names and numbers) and gets a
calibrated probability of being inconsistent.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from judgelab.backend.annotators import grounding as g
from judgelab.backend.annotators.alignment import Passages, dispersion
from judgelab.backend.annotators.offline.calibration import answer_score, prediction_score
from judgelab.backend.annotators.offline.fitted import story_consistency as fitted
from judgelab.backend.annotators.offline.heuristics import OFFLINE
from judgelab.backend.annotators.offline.text import (
    MAX_TARGET_CHARS,
    as_text,
    quote_words,
    read_text,
    repeated,
)
from judgelab.backend.draft import Draft, SpanDraft
from judgelab.configs.schema import Schema, get_schema
from judgelab.configs.story_lines import story_lines as parse_story_lines
from judgelab.configs.story_lines import task_alternates
from judgelab.configs.story_words import AMBIGUOUS, CONSISTENT, INCONSISTENT, KEEP, NOT_APPLICABLE, SWAP

#: A line's probability of being inconsistent comes from a logistic model of two alignment
#: features (``alignment.Passages.coverage`` over PASSAGE_SENTENCES sentences, and
#: ``alignment.dispersion``), fitted on StorySumm's val split (``bench/fit_offline_storysumm.py``,
#: parameters in ``offline/fitted/story_consistency.py``). Lines naming a name or number the story
#: lacks get at least the val rate of such lines. "Inconsistent" is suggested from the val-chosen
#: threshold on; below it the (required) verdict is the most likely answer, with its low score.
PASSAGE_SENTENCES = 3
#: The explanation names the story words found only outside the densest window of this share of
#: the story's tokens (and at least STORY_WINDOW_MIN tokens).
STORY_WINDOW_SHARE = 0.05
STORY_WINDOW_MIN = 10
#: An alternate replaces a line when its probability of being inconsistent is this much lower.
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


_STORY_META_STEMS = frozenset(g.stem(w) for w in _STORY_META_WORDS)


@dataclass
class LineCheck:
    """How well one summary line is supported by the story, and how likely it is inconsistent."""

    text: str
    grounding: float = 1.0
    missing: list[g.Token] = field(default_factory=list)
    unknown_names: list[g.Entity] = field(default_factory=list)
    unknown_numbers: list[g.NumberMention] = field(default_factory=list)
    commentary: bool = False
    coverage: float = 1.0  # share of the line's content stems in its best passage of the story
    dispersion: float = 0.0  # shortest stretch of the story holding its grounded stems (share)
    scattered: list[g.Token] = field(default_factory=list)  # grounded, outside the densest window
    probability: float = 0.0  # P(inconsistent), calibrated on StorySumm val

    @property
    def facts_missing(self) -> int:
        return len(self.unknown_names) + len(self.unknown_numbers)

    def features(self) -> dict[str, float]:
        """The features of the fitted line model."""
        return {"coverage": self.coverage, "dispersion": self.dispersion}

    @property
    def inconsistent(self) -> bool:
        """At or above the val-chosen threshold: suggest "Inconsistent"."""
        return not self.commentary and self.probability >= fitted.INCONSISTENT_THRESHOLD

    def explanation(self) -> str:
        parts = []
        if self.unknown_names:
            parts.append("names not in the story: " + ", ".join(f"'{e.text}'" for e in self.unknown_names))
        if self.unknown_numbers:
            parts.append("numbers not in the story: " + ", ".join(n.text for n in self.unknown_numbers))
        if self.coverage < 1.0:
            parts.append(f"the closest passage of the story has only {self.coverage:.0%} of its words")
        if self.scattered:
            parts.append(f"the story has {quote_words(self.scattered)} but not together with the line's other details")
        if self.missing:
            parts.append(f"words not in the story: {quote_words(self.missing, 6)}")
        if not parts:
            return "Not clearly supported by the story."
        text = "; ".join(parts)
        return text[0].upper() + text[1:] + "."


def is_commentary(line: str) -> bool:
    """A line about the story itself ("The story paints a vivid image ...")."""
    if _COMMENTARY_STRONG.search(line):
        return True
    mentions_story = re.search(r"\b(?:story|tale|narrative)\b", line, re.IGNORECASE)
    return bool(mentions_story and _COMMENTARY_ABSTRACT.search(line))


def story_window(index: g.SourceIndex) -> int:
    """The window of the explanation's "not together": a fixed share of the story, in tokens."""
    return max(STORY_WINDOW_MIN, round(STORY_WINDOW_SHARE * index.length))


@dataclass(frozen=True)
class Story:
    """A story indexed once for checking all the lines of its summary, and of the other summaries
    of it: :meth:`of` keeps the last stories seen (only read once made)."""

    index: g.SourceIndex
    passages: Passages

    @classmethod
    @g.recent
    def of(cls, text: str) -> Story:
        return cls(g.SourceIndex([text], lang="en"), Passages(text))


def check_line(line: str, story: Story) -> LineCheck:
    """Ground one summary line against the story, with its calibrated probability."""
    index = story.index
    check = LineCheck(text=line, commentary=is_commentary(line))
    tokens = g.tokenize(line)
    content = [t for t in tokens if g.is_content(t, g.STOPWORDS_EN) and t.folded not in _STORY_META_WORDS]
    check.missing = [t for t in content if not index.has_word(t.text)]
    check.grounding = 1 - len(check.missing) / len(content) if content else 1.0
    stems = {g.stem(t.text) for t in content} - _STORY_META_STEMS
    check.coverage = story.passages.coverage(stems, PASSAGE_SENTENCES)
    check.dispersion = dispersion(index, stems)
    grounded = [t for t in content if g.stem(t.text) in index.positions]
    _, together = index.cooccurrence((t.text for t in grounded), story_window(index))
    check.scattered = [t for t in grounded if g.stem(t.text) not in together]
    names = (g.without_initial_word(line, e) for e in g.extract_entities(line, g.STOPWORDS_EN))
    check.unknown_names = [e for e in names if e is not None and not index.has_entity(e)]
    check.unknown_numbers = [n for n in g.extract_numbers(line, "en") if not index.has_number(n)]
    check.probability = fitted.LINE_MODEL.probability(check.features())
    if check.facts_missing:
        check.probability = max(check.probability, fitted.UNKNOWN_FACT_RATE)
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


SCHEMA = "story_consistency"


@dataclass(frozen=True)
class StoryControls:
    """The schema's Repeater control patterns (``verdict_{i}``...), read from ``schema.yaml``."""

    verdict: str
    explanation: str
    ambiguous: str
    swap: str
    swap_explanation: str

    @classmethod
    def of(cls, schema: Schema) -> StoryControls:
        return cls(
            verdict=schema.item_control(schema.constant("line_item")),
            explanation=schema.item_control(schema.constant("line_explanation_item")),
            ambiguous=schema.span_control(schema.constant("line_item")),
            swap=schema.item_control(schema.constant("swap_item")),
            swap_explanation=schema.item_control(schema.constant("swap_explanation_item")),
        )


@OFFLINE.register(SCHEMA, reads=("story",))
def annotate_story_consistency(data: dict) -> Draft:
    controls = StoryControls.of(get_schema(SCHEMA))
    story = Story.of(read_text(data, "story"))
    lines = story_lines(data)
    draft = Draft()
    verdicts: Counter[str] = Counter()
    for i, (text, is_str, _) in enumerate(lines):
        check = check_line(text, story)
        verdict_control = repeated(controls.verdict, i)
        if check.commentary:
            verdict, score = NOT_APPLICABLE, fitted.COMMENTARY_CONSISTENT_RATE
        elif check.inconsistent:
            verdict, score = INCONSISTENT, check.probability
            explanation = repeated(controls.explanation, i)
            draft.texts[explanation] = check.explanation()
            draft.scores[explanation] = answer_score(score)
            span = least_grounded_phrase(text, check) if is_str else None
            if span:
                draft.spans.append(
                    SpanDraft(
                        repeated(controls.ambiguous, i),
                        span[0],
                        span[1],
                        AMBIGUOUS,
                        note="least supported portion of the line",
                        score=answer_score(score),
                    )
                )
        else:  # the verdict is required: the most likely answer, with its (maybe low) score
            verdict, score = CONSISTENT, 1.0 - check.probability
        draft.choices[verdict_control] = [verdict]
        draft.scores[verdict_control] = answer_score(score)
        verdicts[verdict] += 1
    for k, alt in enumerate(task_alternates(data)):
        choice, why, score = swap_decision(alt, lines, story)
        swap, swap_explanation = repeated(controls.swap, k), repeated(controls.swap_explanation, k)
        draft.choices[swap] = [choice]
        draft.texts[swap_explanation] = why
        draft.scores[swap] = draft.scores[swap_explanation] = answer_score(score)
    draft.score = prediction_score(draft)
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


def swap_decision(alt: dict, lines: list[tuple[str, bool, str | None]], story: Story) -> tuple[str, str, float]:
    """("Yes"|"No", explanation, score) for replacing a line by its alternate.

    No public human swap labels exist to fit a score on: the score is derived from the line model,
    0.5 plus half the difference of the two lines' probabilities of being inconsistent."""
    line_no = alt.get("line")
    text = as_text(alt.get("text"))
    if not text and isinstance(line_no, int) and 0 <= line_no < len(lines):
        text = lines[line_no][0]
    alternate = as_text(alt.get("alternate"))
    if not alternate.strip():
        return KEEP, "There is no alternate text to compare.", 1.0
    old, new = check_line(text, story), check_line(alternate, story)
    gain = old.probability - new.probability
    score = 0.5 + abs(gain) / 2
    dropped = [t for t in old.missing if t.folded not in {m.folded for m in new.missing}]
    added = [t for t in new.missing if t.folded not in {m.folded for m in old.missing}]
    if gain > SWAP_MARGIN:
        why = "Yes: the alternate is better supported by the story"
        why += f" (it drops {quote_words(dropped)})." if dropped else "."
        return SWAP, why, score
    if added:
        return KEEP, f"No: the alternate adds words the story does not support ({quote_words(added)}).", score
    return KEEP, "No: the alternate is not better supported by the story than the line.", score
