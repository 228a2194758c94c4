"""The distances and travel times of hotel texts (``15-minute drive``, ``7.0 km``) and the hotel
descriptions indexed for the checks of ``schemas/hotel_spans.py``: which figure the descriptions
give for a place."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from judgelab.backend.annotators import grounding as g

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


@dataclass
class HotelSource:
    """The descriptions, indexed for the hotel checks. Read-only once made (its sequences are
    tuples): :func:`hotel_source` shares one between the tasks that show the same descriptions."""

    text: str
    index: g.SourceIndex = field(init=False)
    folded: str = field(init=False)
    compact: str = field(init=False)
    measures: tuple[Measure, ...] = field(init=False)
    tokens: tuple[g.Token, ...] = field(init=False)
    stems: tuple[str, ...] = field(init=False)
    starts: tuple[int, ...] = field(init=False)
    sentences: tuple[tuple[int, int], ...] = field(init=False)
    sentence_starts: tuple[int, ...] = field(init=False)
    measure_index: tuple[int, ...] = field(init=False)  # token position of each measure
    # each number with the stems of the words right after it: what it counts (``3 restaurants``)
    counted: tuple[tuple[g.NumberMention, frozenset[str]], ...] = field(init=False)

    def __post_init__(self) -> None:
        self.index = g.SourceIndex([self.text], lang="en")
        self.folded = g.fold(self.text)
        self.compact = re.sub(r"[^a-z0-9]", "", self.folded)
        self.measures = tuple(find_measures(self.text))
        self.tokens = tuple(g.tokenize(self.text))
        self.stems = tuple(g.stem(t.text) for t in self.tokens)
        self.starts = tuple(t.start for t in self.tokens)
        self.sentences = tuple(g.split_sentences(self.text))
        self.sentence_starts = tuple(a for a, _ in self.sentences)
        self.measure_index = tuple(bisect_left(self.starts, m.start) for m in self.measures)
        self.counted = tuple(
            (n, frozenset(g.stem(t.text) for t in nouns_after(self.text, self.tokens, self.starts, n.end)))
            for n in g.extract_numbers(self.text, "en")
        )

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


def nouns_after(text: str, tokens: Sequence[g.Token], starts: Sequence[int], position: int) -> list[g.Token]:
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


@g.recent
def hotel_source(text: str) -> HotelSource:
    """The :class:`HotelSource` of ``text``, kept for the last descriptions seen: a hotel's
    descriptions come with many summaries (its aspects, several models' summaries of each), and
    indexing them again for each was most of the annotator's time (2.55 ms a task, 0.48 with
    them kept, for summaries of ten hotels of 1.2 kB of descriptions each)."""
    return HotelSource(text)


def context_stems(text: str, tokens: list[g.Token], start: int, end: int) -> set[str]:
    """Stems of the content words within MEASURE_CONTEXT_TOKENS of ``text[start:end]``,
    not crossing a sentence end."""
    sentence = next(((a, b) for a, b in g.split_sentences(text) if a <= start < b), (0, len(text)))
    inside = [i for i, t in enumerate(tokens) if sentence[0] <= t.start and t.end <= sentence[1]]
    before = [i for i in inside if tokens[i].end <= start][-MEASURE_CONTEXT_TOKENS:]
    after = [i for i in inside if tokens[i].start >= end][:MEASURE_CONTEXT_TOKENS]
    return {
        g.stem(tokens[i].text) for i in before + after if g.is_content(tokens[i], g.STOPWORDS_EN)
    } - GENERIC_TRAVEL_STEMS


GENERIC_TRAVEL_STEMS = {
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
