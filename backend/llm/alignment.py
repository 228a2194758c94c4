"""Place the span texts a model quoted on the task text, in Python code points.

factgenie maps a span's text to its first exact match, silently drops what it cannot find
and its overlap filter does nothing. Here every span is either placed or counted:

1. match kinds, tried in order (``AlignedSpan.match``):

   - ``exact``: the text as given (then without surrounding whitespace/quotes/ellipsis);
   - ``case``: case-insensitive (``str.casefold`` per character, offsets mapped back);
   - ``normalized``: Unicode NFKC, case, whitespace runs, curly/straight quotes and
     apostrophes, dashes (– — ‑ -) and ``…`` unified, zero-width characters ignored, on a
     normalised copy of the text whose index map gives offsets in the original;
   - ``fuzzy``: the best window of whole tokens whose similarity with the span text is at
     least ``fuzzy_threshold`` (rapidfuzz's Indel similarity, 2 x the longest common
     subsequence over both lengths: what ``difflib``'s ratio approximates, computed exactly
     and in C; on characters, on tokens for spans over :data:`LONG_NEEDLE` code points).
     Windows are only tried around anchor tokens (the span's rarest tokens that occur in the
     text) and ranked by a cheap bag-of-words Dice first, so long texts stay fast. A match
     that cuts a word short (``"scored two goa"``, a model truncating) is extended to the word's boundary
     (at most :data:`MAX_WORD_EXTENSION` code points) and counted as ``fuzzy`` too.

2. repeats: with ``occurrence_index`` that occurrence (0-based, among the matches of the
   first kind that has that many) is used; otherwise a left-to-right cursor per span text:
   the first occurrence at or after the end of the previously placed span with the same text
   (models list spans in reading order), then any other free occurrence. Among the
   occurrences past that cursor, one at or after the start of the previously placed span
   (of any text) comes first: a model that marks only the second "Ponte Preta" lists it
   after the spans before it (on the span_annotation bench this places 90 % of repeated
   spans without an occurrence index at the human offsets, against 66 % for the cursor
   alone). Whole-word occurrences come before ones inside a longer word.

3. overlaps: ``overlap="allow"`` keeps overlapping spans; ``"forbid"`` keeps the
   earlier-listed span and tries the later span's other occurrences before dropping it
   (``overlap_dropped``).

``report.counts`` has one entry per span: a match kind, ``unmatched`` or ``overlap_dropped``.
Every emitted span satisfies ``text[span.start:span.end] == span.text`` and is never empty or
whitespace only.

>>> text = "The team won. The team lost. The Team drew."
>>> report = align_spans(text, [RawSpan("The team"), RawSpan("the team"), RawSpan("team  drew")])
>>> [(s.start, s.end, s.match) for s in report.spans]
[(0, 8, 'exact'), (14, 22, 'case'), (33, 42, 'normalized')]
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from rapidfuzz.distance import Indel

from judgelab.backend.llm.contracts import AlignedSpan, AlignmentReport, RawSpan

__all__ = ["align_spans", "match_counts", "normalize_with_map", "MAX_WORD_EXTENSION"]

OVERLAP_POLICIES = ("allow", "forbid")
MAX_WORD_EXTENSION = 12  # code points a word-cutting match may grow by to reach the word's edge
MAX_OCCURRENCES = 2000  # per span and kind; more than this in one text is not a span worth placing
MAX_FUZZY_PLACES = 60  # places in the text tried per fuzzy span
FUZZY_WINDOWS_PER_PLACE = 3  # windows per place given the real measure
MAX_FUZZY_RATIOS = 24  # real-measure computations per fuzzy span
LONG_NEEDLE = 200  # code points; longer spans are compared token by token
ANCHORS = 3  # rarest span tokens used to propose fuzzy windows

_QUOTE_CHARS = " \t\r\n\u00a0\"'`“”‘’„‟«»‹›"
_ELLIPSIS = ("...", "…")
_ZERO_WIDTH = {"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"}
_SINGLE_QUOTES = {"‘", "’", "‚", "‛", "′", "`", "´", "ʼ", "‹", "›"}
_DOUBLE_QUOTES = {"“", "”", "„", "‟", "″", "«", "»", "〝", "〞", "＂"}
_DASHES = {"‐", "‑", "‒", "–", "—", "―", "−", "﹘", "﹣", "－", "⁃"}
_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass
class _View:
    """A transformed copy of a text; ``starts[i]``/``ends[i]`` is the original range of char i."""

    text: str
    starts: Sequence[int]
    ends: Sequence[int]

    def original(self, a: int, b: int) -> tuple[int, int]:
        return self.starts[a], self.ends[b - 1]


def _casefold_view(text: str) -> _View:
    folded = text.casefold()
    if len(folded) == len(text):  # no character changes length: the map is the identity
        return _View(folded, range(len(text)), range(1, len(text) + 1))
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for i, c in enumerate(text):
        f = c.casefold()
        out.append(f)
        starts.extend([i] * len(f))
        ends.extend([i + 1] * len(f))
    return _View("".join(out), starts, ends)


@lru_cache(maxsize=8192)
def _normalize_piece(chunk: str) -> str:
    """One cluster (a character and its combining marks), normalised."""
    chunk = unicodedata.normalize("NFKC", chunk).casefold()
    out = []
    for c in chunk:
        if c in _ZERO_WIDTH:
            continue
        if c in _SINGLE_QUOTES:
            out.append("'")
        elif c in _DOUBLE_QUOTES:
            out.append('"')
        elif c in _DASHES:
            out.append("-")
        elif c.isspace():
            out.append(" ")
        else:
            out.append(c)
    return "".join(out)


_SPECIAL = re.compile(r"\s+|[^\x00-\x7f]|`")  # everything else is ASCII: lower() is the whole job


def normalize_with_map(text: str) -> _View:
    """The normalised copy of ``text`` used by the ``normalized`` and ``fuzzy`` kinds.

    Works on clusters (a character plus its combining marks) so that composed and decomposed
    accents agree; whitespace runs collapse to one space mapped to the whole run.

    >>> v = normalize_with_map("Don’t  stop—now")
    >>> v.text, v.original(0, 5)
    ("don't stop-now", (0, 5))
    """
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    n = len(text)
    pos = 0

    def emit(piece: str, i: int, j: int) -> None:
        for c in piece:
            if c == " " and out and out[-1].endswith(" "):
                ends[-1] = j  # extend the collapsed whitespace run
                continue
            out.append(c)
            starts.append(i)
            ends.append(j)

    for m in _SPECIAL.finditer(text):
        i = m.start()
        if i < pos:  # swallowed as a combining mark of the previous cluster
            continue
        c = m.group()
        if i > pos and unicodedata.combining(c[0]):
            i -= 1  # an ASCII base letter with a combining mark: one cluster
        if i > pos:  # plain ASCII run
            out.append(text[pos:i].lower())
            starts.extend(range(pos, i))
            ends.extend(range(pos + 1, i + 1))
        if c[0].isspace():
            emit(" ", i, m.end())
            pos = m.end()
            continue
        j = i + 1
        while j < n and unicodedata.combining(text[j]):
            j += 1
        emit(_normalize_piece(text[i:j]), i, j)
        pos = j
    if pos < n:
        out.append(text[pos:].lower())
        starts.extend(range(pos, n))
        ends.extend(range(pos + 1, n + 1))
    return _View("".join(out), starts, ends)


@lru_cache(maxsize=4096)
def _normalize_needle(needle: str) -> str:
    return re.sub(r" +", " ", normalize_with_map(needle).text).strip()


def _strip_needle(needle: str) -> str:
    """Without surrounding whitespace, quotes and ellipses (a model's marks of a cut)."""
    prev = None
    while prev != needle:
        prev = needle
        needle = needle.strip(_QUOTE_CHARS)
        for e in _ELLIPSIS:
            if needle.endswith(e):
                needle = needle[: -len(e)]
            if needle.startswith(e):
                needle = needle[len(e) :]
    return needle


def _find_all(haystack: str, needle: str) -> list[int]:
    out: list[int] = []
    if not needle:
        return out
    i = haystack.find(needle)
    while i >= 0 and len(out) < MAX_OCCURRENCES:
        out.append(i)
        i = haystack.find(needle, i + 1)
    return out


def similarity(a: str | Sequence[str], b: str | Sequence[str], cutoff: float = 0.0) -> float:
    """2 x the longest common subsequence of ``a`` and ``b`` over their total length (characters
    or tokens), 0.0 below ``cutoff``: rapidfuzz's Indel similarity (the length of both minus
    their Indel distance), divided here as difflib divides its ratio, so that a score exactly at
    the cutoff passes (rapidfuzz's normalized score and ``score_cutoff`` round it away).

    >>> round(similarity("sunny with strong wind", "sunny with strong winds"), 3)
    0.978
    >>> similarity("goal came from", "goal to from", 20 / 26) == 20 / 26  # 2 x 10 of 26 characters
    True
    """
    total = len(a) + len(b)
    score = Indel.similarity(a, b) / total if total else 1.0
    return score if score >= cutoff else 0.0


def _is_word(c: str) -> bool:
    return c.isalnum()


def _cuts_word(text: str, start: int, end: int) -> bool:
    return (start > 0 and _is_word(text[start - 1]) and _is_word(text[start])) or (
        end < len(text) and _is_word(text[end - 1]) and _is_word(text[end])
    )


def _extend_to_words(text: str, start: int, end: int) -> tuple[int, int] | None:
    """Grow a word-cutting range to the word edges, or None when a word is too long."""
    s = start
    while s > 0 and _is_word(text[s - 1]) and _is_word(text[s]) and start - s < MAX_WORD_EXTENSION:
        s -= 1
    e = end
    while e < len(text) and _is_word(text[e - 1]) and _is_word(text[e]) and e - end < MAX_WORD_EXTENSION:
        e += 1
    if _cuts_word(text, s, e):
        return None
    return s, e


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


@dataclass
class _Candidate:
    start: int
    end: int
    kind: str
    score: float = 1.0


_Token = tuple[int, int, str]  # start, end and text of a token of the normalised text
_Anchor = tuple[int, int, int, str]  # occurrences in the text, minus its length, position in the span, key


def _anchors(
    ntoks: list[str], tokens: list[_Token], index: dict[str, list[int]]
) -> tuple[list[_Anchor], dict[str, list[int]]]:
    """The span's tokens that occur in the text, rarest first (longer first on ties), and where
    each occurs (token positions by key). With no token in common, the 3-letter prefixes of the
    span's tokens of 4 letters or more stand in (a model's misspelling)."""
    present = sorted(
        {(len(index[t]), -len(t), j, t) for j, t in enumerate(ntoks) if t in index},
    )
    if present:
        return present, index
    prefixes: dict[str, list[int]] = {}
    for k, (_s, _e, tok) in enumerate(tokens):
        if len(tok) >= 4:
            prefixes.setdefault(tok[:3], []).append(k)
    present = sorted(
        {(len(prefixes[t[:3]]), -len(t), j, t[:3]) for j, t in enumerate(ntoks) if len(t) >= 4 and t[:3] in prefixes}
    )
    return present, prefixes


def _fuzzy_places(present: list[_Anchor], positions: dict[str, list[int]]) -> list[int]:
    """Token positions where the rarest ``ANCHORS`` anchors say the span would start; places more
    anchors agree on first, at most ``MAX_FUZZY_PLACES``."""
    hits: Counter = Counter()
    for _count, _neglen, j, key in present[:ANCHORS]:
        for t in positions[key][:MAX_OCCURRENCES]:
            hits[t - j] += 1
    best_hits = max(hits.values(), default=0)
    places = sorted((b for b in hits if hits[b] >= best_hits - 1), key=lambda b: (-hits[b], b))
    return places[:MAX_FUZZY_PLACES]


def _window_shortlist(places: list[int], tokens: list[_Token], ntoks: list[str]) -> list[tuple[int, int]]:
    """The windows (first and last token) worth the real measure: windows of whole tokens around
    each place, a token shorter to two longer than the span, ranked by a cheap bag-of-word-starts
    Dice (robust to typos and endings); within 0.2 of the best, ``FUZZY_WINDOWS_PER_PLACE`` per
    place and ``MAX_FUZZY_RATIOS`` in all."""
    m = len(ntoks)
    needle_bag = Counter(t[:4] for t in ntoks)
    windows = []
    for base in places:
        for s in (base, base - 1, base + 1):
            for length in (m, m - 1, m + 1, m - 2, m + 2):
                e = s + length - 1
                if length >= 1 and s >= 0 and e < len(tokens):
                    bag = Counter(tok[:4] for _a, _b, tok in tokens[s : e + 1])
                    dice = 2 * sum((bag & needle_bag).values()) / (length + m)
                    windows.append((dice, -abs(length - m), s, e, base))
    windows.sort(reverse=True)
    best_dice = windows[0][0] if windows else 0.0
    per_place: Counter = Counter()
    shortlist = []
    for dice, _dl, s, e, base in windows:
        if dice < best_dice - 0.2 or len(shortlist) >= MAX_FUZZY_RATIOS:
            break
        if per_place[base] < FUZZY_WINDOWS_PER_PLACE:
            per_place[base] += 1
            shortlist.append((s, e))
    return shortlist


def _best_per_place(scored: list[_Candidate]) -> list[_Candidate]:
    """One candidate per place: the best-scoring window among overlapping ones (earlier, then
    shorter, on ties)."""
    scored.sort(key=lambda c: (-c.score, c.start, c.end - c.start))
    chosen: list[_Candidate] = []
    for c in scored:
        if all(c.end <= o.start or c.start >= o.end for o in chosen):
            chosen.append(c)
    return chosen


class _Aligner:
    def __init__(self, text: str, overlap: str, fuzzy_threshold: float, snap_words: bool) -> None:
        self.text = text
        self.overlap = overlap
        self.threshold = fuzzy_threshold
        self.snap_words = snap_words
        self._case: _View | None = None
        self._norm: _View | None = None
        self._tokens: list[tuple[int, int, str]] | None = None
        self._token_index: dict[str, list[int]] | None = None
        self.placed: list[tuple[int, int]] = []  # for overlap checks
        self.cursor: dict[str, int] = {}  # normalised span text -> end of its last placement
        self.taken: dict[str, set[tuple[int, int]]] = {}
        self.last_start = 0  # where the previously placed span (any text) starts

    # lazily built views ---------------------------------------------------------------
    @property
    def case_view(self) -> _View:
        if self._case is None:
            self._case = _casefold_view(self.text)
        return self._case

    @property
    def norm_view(self) -> _View:
        if self._norm is None:
            self._norm = normalize_with_map(self.text)
        return self._norm

    @property
    def tokens(self) -> list[tuple[int, int, str]]:
        if self._tokens is None:
            self._tokens = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(self.norm_view.text)]
            index: dict[str, list[int]] = {}
            for k, (_s, _e, tok) in enumerate(self._tokens):
                index.setdefault(tok, []).append(k)
            self._token_index = index
        return self._tokens

    # candidates per kind --------------------------------------------------------------
    def _ranges(self, view: _View | None, needle: str, kind: str) -> list[_Candidate]:
        if view is None:
            hits = _find_all(self.text, needle)
            return [_Candidate(h, h + len(needle), kind) for h in hits]
        out = []
        for h in _find_all(view.text, needle):
            start, end = view.original(h, h + len(needle))
            start, end = _trim(self.text, start, end)
            if start < end:
                out.append(_Candidate(start, end, kind))
        return out

    def exact(self, needle: str) -> list[_Candidate]:
        return self._ranges(None, needle, "exact") if needle.strip() else []

    def case(self, core: str) -> list[_Candidate]:
        folded = core.casefold()
        return self._ranges(self.case_view, folded, "case")

    def normalized(self, core: str) -> list[_Candidate]:
        needle = _normalize_needle(core)
        return self._ranges(self.norm_view, needle, "normalized") if needle else []

    def fuzzy(self, core: str) -> list[_Candidate]:
        needle = _normalize_needle(core)
        ntoks = _TOKEN.findall(needle)
        if not ntoks or not needle.strip():
            return []
        tokens = self.tokens
        index = self._token_index or {}
        if not tokens:
            return []
        present, positions = _anchors(ntoks, tokens, index)
        places = _fuzzy_places(present, positions)
        shortlist = _window_shortlist(places, tokens, ntoks)
        norm = self.norm_view.text
        # the measure: on characters; on tokens for long spans, where the character-level
        # measure is slow and a one-word change barely moves it anyway
        long_needle = len(needle) > LONG_NEEDLE
        target: str | list[str] = ntoks if long_needle else needle
        scored: list[_Candidate] = []
        for s, e in shortlist:
            if long_needle:
                window: str | list[str] = [tok for _a, _b, tok in tokens[s : e + 1]]
            else:
                window = norm[tokens[s][0] : tokens[e][1]]
            ratio = similarity(window, target, self.threshold)
            if ratio >= self.threshold:
                start, end = self.norm_view.original(tokens[s][0], tokens[e][1])
                start, end = _trim(self.text, start, end)
                if start < end:
                    scored.append(_Candidate(start, end, "fuzzy", ratio))
        return _best_per_place(scored)

    # placement ------------------------------------------------------------------------
    def overlaps(self, start: int, end: int) -> bool:
        return any(start < e and s < end for s, e in self.placed)

    def _dedupe(self, cands: list[_Candidate]) -> list[_Candidate]:
        seen: set[tuple[int, int]] = set()
        out = []
        for c in sorted(cands, key=lambda c: (c.start, c.end)):
            if (c.start, c.end) not in seen:
                seen.add((c.start, c.end))
                out.append(c)
        return out

    def by_occurrence(self, cands: list[_Candidate], occurrence: int) -> list[_Candidate]:
        """The ``occurrence``-th candidate, then the later ones, then the earlier ones."""
        return [*cands[occurrence:], *cands[:occurrence]]

    def by_cursor(self, cands: list[_Candidate], key: str) -> list[_Candidate]:
        """Left to right from the end of the last span with the same text, then the rest."""
        cursor = self.cursor.get(key, 0)
        taken = self.taken.get(key, set())
        hint = self.last_start

        def sort_key(c: _Candidate) -> tuple:
            cut = self.snap_words and c.kind != "fuzzy" and _cuts_word(self.text, c.start, c.end)
            return (-round(c.score, 2), cut, (c.start, c.end) in taken, c.start < cursor, c.start < hint, c.start)

        return sorted(cands, key=sort_key)

    def try_place(self, span: RawSpan, key: str, ordered: list[_Candidate]) -> AlignedSpan | None:
        for c in ordered:
            start, end, kind = c.start, c.end, c.kind
            if self.snap_words and kind != "fuzzy" and _cuts_word(self.text, start, end):
                grown = _extend_to_words(self.text, start, end)
                if grown is not None:
                    start, end = grown
                    kind = "fuzzy"  # the span text was cut short: it no longer equals the text
            if self.overlap == "forbid" and self.overlaps(start, end):
                continue
            piece = self.text[start:end]
            if not piece.strip():
                continue
            self.placed.append((start, end))
            self.last_start = start
            self.cursor[key] = end
            self.taken.setdefault(key, set()).add((start, end))
            return AlignedSpan(start, end, span.label, span.reason, kind, piece)
        return None

    def place(self, span: RawSpan) -> tuple[AlignedSpan | None, str]:
        raw = span.text if isinstance(span.text, str) else ("" if span.text is None else str(span.text))
        raw = raw.strip()  # never emit surrounding whitespace
        if not raw:
            return None, "unmatched"
        core = _strip_needle(raw) or raw  # a span of only quotes or dots is searched as given
        key = _normalize_needle(core)
        occurrence = span.occurrence_index
        if isinstance(occurrence, bool) or not isinstance(occurrence, int) or occurrence < 0:
            occurrence = None
        # the text as the model gave it first (quotes may belong to the span), then stripped
        needles = [raw, core] if core != raw else [raw]
        finders = [
            finder
            for needle in needles
            for finder in (
                lambda n=needle: self.exact(n),
                lambda n=needle: self.case(n),
                lambda n=needle: self.normalized(n),
            )
        ]
        lists: list[list[_Candidate]] = []

        def kind_list(k: int) -> list[_Candidate]:
            while len(lists) <= k:
                lists.append(self._dedupe(finders[len(lists)]()))
            return lists[k]

        if occurrence is not None:
            # the index counts occurrences of the first kind that has that many
            for k in range(len(finders)):
                cands = kind_list(k)
                if occurrence < len(cands):
                    placed = self.try_place(span, key, self.by_occurrence(cands, occurrence))
                    if placed is not None:
                        return placed, placed.match
                    break
        found_any = False
        for k in range(len(finders)):
            cands = kind_list(k)
            if cands:
                found_any = True
                placed = self.try_place(span, key, self.by_cursor(cands, key))
                if placed is not None:
                    return placed, placed.match
        if found_any:
            return None, "overlap_dropped"
        cands = self.fuzzy(core)
        if not cands:
            return None, "unmatched"
        if occurrence is not None and occurrence < len(cands):
            ordered = self.by_occurrence(self._dedupe(cands), occurrence)
        else:
            ordered = self.by_cursor(cands, key)
        placed = self.try_place(span, key, ordered)
        if placed is not None:
            return placed, placed.match
        return None, "overlap_dropped"


def align_spans(
    text: str,
    spans: list[RawSpan],
    overlap: str = "forbid",
    fuzzy_threshold: float = 0.85,
    *,
    snap_words: bool = True,
) -> AlignmentReport:
    """Place each span's text on ``text`` (see the module docstring for the rules).

    ``overlap`` is ``"allow"`` or ``"forbid"`` (the schema's rule). ``fuzzy_threshold`` is the
    minimum similarity (:func:`similarity`) of a fuzzy window (clamped to 0.5..1; 1 turns fuzzy matching
    off in practice). ``snap_words=False`` keeps matches that cut words (character-level
    schemas such as MT error spans). Spans come back sorted by position; ``report.counts``
    counts every input span once. Raises only ``ValueError`` for an unknown ``overlap``.
    """
    if overlap not in OVERLAP_POLICIES:
        raise ValueError(f"overlap must be one of {OVERLAP_POLICIES}, not {overlap!r}")
    report = AlignmentReport()
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    try:
        threshold = float(fuzzy_threshold)
    except (TypeError, ValueError):
        threshold = 0.85
    threshold = min(max(threshold, 0.5), 1.0)  # below 0.5 a "match" is noise
    aligner = _Aligner(text, overlap, threshold, snap_words)
    placed: list[AlignedSpan] = []
    for span in spans or []:
        try:
            aligned, outcome = aligner.place(span)
        except Exception:  # noqa: BLE001 - a span that breaks the aligner is counted, not raised
            aligned, outcome = None, "unmatched"
        report.counts[outcome] += 1
        if aligned is not None:
            placed.append(aligned)
    placed.sort(key=lambda s: (s.start, s.end))
    report.spans = placed
    return report


def match_counts(report: AlignmentReport) -> Counter:
    """``report.counts`` with every kind present (zeros included), for logs and ``Draft.info``."""
    counts = Counter({k: 0 for k in ("exact", "case", "normalized", "fuzzy", "unmatched", "overlap_dropped")})
    counts.update(report.counts)
    return counts
