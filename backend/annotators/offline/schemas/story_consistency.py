"""story_consistency (line-by-line verdicts, swaps, ambiguous portions): each line is aligned with
the story (its best passage, how far apart its words are, names found away from that passage,
unknown names and numbers, whether it keeps the story's order) and gets a calibrated probability
of being inconsistent; the summary's probability of holding an inconsistent line decides whether
its most suspicious line is suggested "Inconsistent".
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from dataclasses import dataclass, field

from judgelab.backend.annotators import grounding as g
from judgelab.backend.annotators.alignment import Passages, dispersion
from judgelab.backend.annotators.offline.calibration import answer_score, prediction_score
from judgelab.backend.annotators.offline.fitted import story_consistency as fitted
from judgelab.backend.annotators.offline.heuristics import heuristic
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

#: A line's probability of being inconsistent comes from a logistic model of its alignment with the
#: story, fitted on StorySumm's val split (``bench/fit_offline_storysumm.py``, parameters in
#: ``offline/fitted/story_consistency.py``; the model's weights name the features it uses among
#: :meth:`LineCheck.features`): passage coverage over PASSAGE_SENTENCES sentences and
#: ``alignment.dispersion``, each also relative to the summary's other lines (a summary's style,
#: close or loose, shifts every line alike), names of the story found only away from the line's
#: passage (who did what), and lines out of the story's order. Lines naming a name or number the
#: story lacks get at least the val rate of such lines.
#:
#: The summary decides: its probability of holding an inconsistent line (``1 - prod(1 - P)`` over
#: its lines) from the val-chosen threshold on makes its single most suspicious line
#: "Inconsistent"; every other (required) verdict is the most likely answer with its score.
PASSAGE_SENTENCES = 3
#: A line "breaks the story's order" by this share of the summary's other aligned lines, or more,
#: before the explanation says so.
ORDER_NOTE = 0.5
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
    names_elsewhere: list[g.Entity] = field(default_factory=list)  # in the story, not in the line's passage
    commentary: bool = False
    coverage: float = 1.0  # share of the line's content stems in its best passage of the story
    dispersion: float = 0.0  # shortest stretch of the story holding its grounded stems (share)
    passage: int | None = None  # first sentence of the line's best passage (None: no stem in the story)
    scattered: list[g.Token] = field(default_factory=list)  # grounded, outside the densest window
    coverage_rel: float = 0.0  # coverage minus the mean coverage of the summary's lines
    dispersion_rel: float = 0.0  # dispersion minus the mean dispersion of the summary's lines
    order: float = 0.0  # share of the summary's other aligned lines whose story order it breaks
    probability: float = 0.0  # P(inconsistent), calibrated on StorySumm val
    inconsistent: bool = False  # the summary's most suspicious line, in a summary likely unfaithful

    @property
    def facts_missing(self) -> int:
        return len(self.unknown_names) + len(self.unknown_numbers)

    @property
    def about_the_story(self) -> bool:
        """A line that states something of the story (not commentary, not empty): the ones judged."""
        return not self.commentary and bool(self.text.strip())

    def features(self) -> dict[str, float]:
        """Every feature a fitted line model may use (the model's weights name the ones it does)."""
        return {
            "coverage": self.coverage,
            "dispersion": self.dispersion,
            "coverage_rel": self.coverage_rel,
            "dispersion_rel": self.dispersion_rel,
            "names_elsewhere": float(bool(self.names_elsewhere)),
            "order": self.order,
        }

    def explanation(self) -> str:
        parts = []
        if self.unknown_names:
            parts.append("names not in the story: " + ", ".join(f"'{e.text}'" for e in self.unknown_names))
        if self.unknown_numbers:
            parts.append("numbers not in the story: " + ", ".join(n.text for n in self.unknown_numbers))
        if self.names_elsewhere:
            names = ", ".join(f"'{e.text}'" for e in self.names_elsewhere)
            parts.append(f"{names} appear in the story, but not in the passage closest to the line")
        if self.coverage < 1.0:
            parts.append(f"the closest passage of the story has only {self.coverage:.0%} of its words")
        if self.scattered:
            parts.append(f"the story has {quote_words(self.scattered)} but not together with the line's other details")
        if self.missing:
            parts.append(f"words not in the story: {quote_words(self.missing, 6)}")
        if self.order >= ORDER_NOTE:
            parts.append("its closest passage is out of the story's order with the summary's other lines")
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


@dataclass
class Story:
    """A story indexed once for checking all the lines of its summary."""

    index: g.SourceIndex
    passages: Passages

    @classmethod
    def of(cls, text: str) -> Story:
        return cls(g.SourceIndex([text], lang="en"), Passages(text))


def ground_line(line: str, story: Story) -> LineCheck:
    """The line's own evidence against the story (no probability yet: see :func:`check_lines`)."""
    index = story.index
    check = LineCheck(text=line, commentary=is_commentary(line))
    tokens = g.tokenize(line)
    content = [t for t in tokens if g.is_content(t, g.STOPWORDS_EN) and t.folded not in _STORY_META_WORDS]
    check.missing = [t for t in content if not index.has_word(t.text)]
    check.grounding = 1 - len(check.missing) / len(content) if content else 1.0
    stems = {g.stem(t.text) for t in content} - _STORY_META_STEMS
    check.coverage, check.passage = story.passages.best_window(stems, PASSAGE_SENTENCES)
    check.dispersion = dispersion(index, stems)
    grounded = [t for t in content if g.stem(t.text) in index.positions]
    _, together = index.cooccurrence((t.text for t in grounded), story_window(index))
    check.scattered = [t for t in grounded if g.stem(t.text) not in together]
    names = [e for e in (g.without_initial_word(line, e) for e in g.extract_entities(line, g.STOPWORDS_EN)) if e]
    check.unknown_names = [e for e in names if not index.has_entity(e)]
    check.unknown_numbers = [n for n in g.extract_numbers(line, "en") if not index.has_number(n)]
    if check.passage is not None:
        window = set(range(check.passage, check.passage + PASSAGE_SENTENCES))
        check.names_elsewhere = [
            e
            for e in names
            if index.has_entity(e) and not story.passages.sentences_of(g.stem_set(e.text, g.STOPWORDS_EN)) & window
        ]
    return check


def relate(checks: list[LineCheck]) -> list[LineCheck]:
    """Set each line's evidence relative to the summary's other lines and its probability.

    Only lines about the story count (commentary and empty lines keep zeros)."""
    judged = [c for c in checks if c.about_the_story]
    if judged:
        mean_coverage = sum(c.coverage for c in judged) / len(judged)
        mean_dispersion = sum(c.dispersion for c in judged) / len(judged)
        for c in judged:
            c.coverage_rel = c.coverage - mean_coverage
            c.dispersion_rel = c.dispersion - mean_dispersion
    placed = [(k, c.passage) for k, c in enumerate(judged) if c.passage is not None]
    for k, c in enumerate(judged):
        others = [(j, p) for j, p in placed if j != k]
        if c.passage is None or not others:
            continue
        broken = sum(1 for j, p in others if (j < k and p > c.passage) or (j > k and p < c.passage))
        c.order = broken / len(others)
    for c in checks:
        c.probability = fitted.LINE_MODEL.probability(c.features())
        if c.facts_missing:
            c.probability = max(c.probability, fitted.UNKNOWN_FACT_RATE)
    return checks


def summary_probability(checks: list[LineCheck]) -> float:
    """P(at least one line is inconsistent), the lines taken as independent."""
    return 1.0 - math.prod(1.0 - c.probability for c in checks if c.about_the_story)


def most_suspicious(checks: list[LineCheck]) -> int | None:
    """The index of the line to suggest "Inconsistent": the summary's most likely inconsistent line
    when the summary's probability reaches the fitted threshold (``None`` otherwise)."""
    judged = [k for k, c in enumerate(checks) if c.about_the_story]
    if not judged or summary_probability(checks) < fitted.SUMMARY_THRESHOLD:
        return None
    return max(judged, key=lambda k: checks[k].probability)  # the first of equals


def check_lines(lines: list[str], story: Story) -> list[LineCheck]:
    """Ground every line of a summary, relate them, and mark the one to suggest "Inconsistent"."""
    checks = relate([ground_line(line, story) for line in lines])
    suspect = most_suspicious(checks)
    if suspect is not None:
        checks[suspect].inconsistent = True
    return checks


def check_line(line: str, story: Story) -> LineCheck:
    """A one-line summary's check (:func:`check_lines`)."""
    return check_lines([line], story)[0]


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
            verdict=schema.item_control("line_{i}"),
            explanation=schema.item_control("line_{i}.explanation"),
            ambiguous=schema.span_control("line_{i}"),
            swap=schema.item_control("alternate_{i}.swap"),
            swap_explanation=schema.item_control("alternate_{i}.explanation"),
        )


@heuristic(SCHEMA, reads=("story",))
def annotate_story_consistency(data: dict) -> Draft:
    controls = StoryControls.of(get_schema(SCHEMA))
    story = Story.of(read_text(data, "story"))
    lines = story_lines(data)
    draft = Draft()
    verdicts: Counter[str] = Counter()
    grounded = [ground_line(text, story) for text, _, _ in lines]
    checks = relate([dataclasses.replace(c) for c in grounded])
    suspect = most_suspicious(checks)
    for i, ((text, is_str, _), check) in enumerate(zip(lines, checks, strict=True)):
        check.inconsistent = i == suspect
        verdict_control = repeated(controls.verdict, i)
        if check.commentary:
            verdict, score = "N/A, just commentary", fitted.COMMENTARY_CONSISTENT_RATE
        elif check.inconsistent:
            verdict, score = "Inconsistent", check.probability
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
                        "Ambiguous",
                        note="least supported portion of the line",
                        score=answer_score(score),
                    )
                )
        else:  # the verdict is required: the most likely answer, with its (maybe low) score
            verdict, score = "Consistent", 1.0 - check.probability
        draft.choices[verdict_control] = [verdict]
        draft.scores[verdict_control] = answer_score(score)
        verdicts[verdict] += 1
    for k, alt in enumerate(task_alternates(data)):
        choice, why, score = swap_decision(alt, lines, story, grounded)
        swap, swap_explanation = repeated(controls.swap, k), repeated(controls.swap_explanation, k)
        draft.choices[swap] = [choice]
        draft.texts[swap_explanation] = why
        draft.scores[swap] = draft.scores[swap_explanation] = answer_score(score)
    draft.score = prediction_score(draft)
    draft.info = {
        "lines": len(lines),
        "verdicts": dict(verdicts),
        "p_unfaithful": round(summary_probability(checks), 3),  # P(some line is inconsistent)
    }
    return draft


def least_grounded_phrase(line: str, check: LineCheck) -> tuple[int, int] | None:
    """The densest run of unsupported words (names count), as a span of ``line``."""
    marks = sorted(
        [(t.start, t.end) for t in check.missing + check.scattered]
        + [(e.start, e.end) for e in check.unknown_names + check.names_elsewhere]
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


def swap_decision(
    alt: dict, lines: list[tuple[str, bool, str | None]], story: Story, grounded: list[LineCheck] | None = None
) -> tuple[str, str, float]:
    """("Yes"|"No", explanation, score) for replacing a line by its alternate.

    Both versions are judged among the summary's other lines (``grounded``: their
    :func:`ground_line` checks) when the alternate names its line, alone otherwise.
    No public human swap labels exist to fit a score on: the score is derived from the line model,
    0.5 plus half the difference of the two lines' probabilities of being inconsistent."""
    line_no = alt.get("line")
    placed = isinstance(line_no, int) and not isinstance(line_no, bool) and 0 <= line_no < len(lines)
    text = as_text(alt.get("text"))
    if not text and placed:
        text = lines[line_no][0]
    alternate = as_text(alt.get("alternate"))
    if not alternate.strip():
        return "No", "There is no alternate text to compare.", 1.0
    if placed and grounded is not None and len(grounded) == len(lines):
        old, new = (
            in_summary(grounded, line_no, ground_line(text, story)),
            in_summary(grounded, line_no, ground_line(alternate, story)),
        )
    else:
        old, new = check_line(text, story), check_line(alternate, story)
    gain = old.probability - new.probability
    score = 0.5 + abs(gain) / 2
    dropped = [t for t in old.missing if t.folded not in {m.folded for m in new.missing}]
    added = [t for t in new.missing if t.folded not in {m.folded for m in old.missing}]
    if gain > SWAP_MARGIN:
        why = "Yes: the alternate is better supported by the story"
        why += f" (it drops {quote_words(dropped)})." if dropped else "."
        return "Yes", why, score
    if added:
        return "No", f"No: the alternate adds words the story does not support ({quote_words(added)}).", score
    return "No", "No: the alternate is not better supported by the story than the line.", score


def in_summary(grounded: list[LineCheck], position: int, line: LineCheck) -> LineCheck:
    """``line`` at ``position`` of the summary, related to the other lines (copies: nothing shared)."""
    checks = [dataclasses.replace(c) for c in grounded]
    checks[position] = line
    return relate(checks)[position]
