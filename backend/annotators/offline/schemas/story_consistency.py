"""story_consistency (line-by-line verdicts, swaps, ambiguous portions): a line is grounded
against the story (unknown names and numbers, missing words, details that never occur together).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from judgelab.backend.annotators import grounding as g
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
            draft.texts[repeated(controls.explanation, i)] = check.explanation()
            span = least_grounded_phrase(text, check) if is_str else None
            if span:
                draft.spans.append(
                    SpanDraft(
                        repeated(controls.ambiguous, i),
                        span[0],
                        span[1],
                        "Ambiguous",
                        note="least supported portion of the line",
                        score=0.3,
                    )
                )
        else:
            verdict = "Consistent"
        draft.choices[repeated(controls.verdict, i)] = [verdict]
        verdicts[verdict] += 1
        if not check.commentary:
            groundings.append(check.grounding)
    for k, alt in enumerate(task_alternates(data)):
        choice, why = swap_decision(alt, lines, index)
        draft.choices[repeated(controls.swap, k)] = [choice]
        draft.texts[repeated(controls.swap_explanation, k)] = why
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
