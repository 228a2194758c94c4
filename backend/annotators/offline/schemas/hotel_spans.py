"""hotel_spans (HotelCheckSpan): distances, travel times, proximity wording, amenities, places and
counts of the summary checked against the hotel descriptions.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from judgelab.backend.annotators import grounding as g
from judgelab.backend.annotators.offline.calibration import MOST_LIKELY, answer_score, prediction_score, score_spans
from judgelab.backend.annotators.offline.fitted import hotel_spans as fitted
from judgelab.backend.annotators.offline.heuristics import OFFLINE
from judgelab.backend.annotators.offline.hotel_measures import (
    GENERIC_TRAVEL_STEMS,
    HotelSource,
    Measure,
    context_stems,
    find_measures,
    hotel_source,
    nouns_after,
)
from judgelab.backend.annotators.offline.text import (
    MAX_TARGET_CHARS,
    clamp,
    non_overlapping,
    phrase_regex,
    read_text,
    valid_span,
)
from judgelab.backend.draft import Draft, SpanDraft
from judgelab.configs.schema import builtin_schema, get_schema

SCHEMA = "hotel_spans"
_HOTEL = builtin_schema(SCHEMA)
NOT_CHECKABLE = _HOTEL.constant("not_checkable")
MISLEADING = _HOTEL.constant("misleading")
INCORRECT = _HOTEL.constant("incorrect")
HOTEL_PRIORITY = {INCORRECT: 0, MISLEADING: 1, NOT_CHECKABLE: 2}
#: Impression: 6 for a clean summary, minus a cost per error (Incorrect costs most).
IMPRESSION_CLEAN = 6
IMPRESSION_COST = {INCORRECT: 1.6, MISLEADING: 1.2, NOT_CHECKABLE: 1.0}
#: Proximity wording is Misleading when the descriptions give more than this distance (km).
NEAR_KM = 1.0
CLOSE_KM = 5.0

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


#: A walk of at most this many minutes is "near".
NEAR_WALK_MINUTES = 15


@OFFLINE.register(SCHEMA, reads=("descriptions", "summary"))
def annotate_hotel_spans(data: dict) -> Draft:
    candidates = error_candidates(data)
    spans = score_spans(candidates, fitted.SPAN_HIT_RATE, fitted.UNSEEN_RATE, fitted.MIN_SPAN_SCORE)
    draft = Draft(spans=spans)
    schema = get_schema(SCHEMA)
    empty_rate = fitted.EMPTY_RATE_CLEAN if not candidates else fitted.EMPTY_RATE_BELOW
    if not spans and empty_rate >= MOST_LIKELY:  # not required: ticked only when the more likely answer
        empty = schema.empty_answer["control"]
        draft.choices[empty] = [no_errors_value(data)]
        draft.scores[empty] = answer_score(empty_rate)
    cost = sum(IMPRESSION_COST.get(s.label, 1.0) for s in spans)
    impression = schema.item_control(schema.constant("impression_item"))
    draft.ratings[impression] = clamp(IMPRESSION_CLEAN - cost, 1, 7)
    draft.scores[impression] = answer_score(fitted.IMPRESSION_RATE)
    draft.score = prediction_score(draft)
    draft.info = {
        "errors": dict(Counter(s.label for s in spans)),
        "candidates": len(candidates),
        "below_threshold": len(candidates) - len(spans),
        "descriptions_empty": not read_text(data, "descriptions").strip(),
    }
    return draft


def error_candidates(data: dict) -> list[SpanDraft]:
    """Every error span the rules find (no overlaps), before scoring and the threshold."""
    value = data.get("summary")
    summary = read_text(data, "summary", MAX_TARGET_CHARS)
    source = hotel_source(read_text(data, "descriptions"))
    candidates: list[SpanDraft] = []
    if isinstance(value, str) and source.text.strip():
        candidates += measure_errors(summary, source)
        candidates += proximity_errors(summary, source)
        candidates += amenity_errors(summary, source)
        candidates += place_errors(summary, source)
        candidates += count_errors(summary, source, candidates)
    spans = non_overlapping([s for s in candidates if valid_span(summary, s.start, s.end)], HOTEL_PRIORITY)
    return merge_adjacent(summary, spans)


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
    """The no-errors box's value for this task: the first of the options the task carries (the
    schema's ``empty_answer.from_data`` field), else the first value the schema declares for it."""
    empty = get_schema(SCHEMA).empty_answer
    options = data.get(str(empty.get("from_data")))
    if isinstance(options, list) and options:
        first = options[0]
        label = first.get("value") if isinstance(first, dict) else first
        if isinstance(label, str) and label.strip():
            return label
    declared = get_schema(SCHEMA).items.get(str(empty.get("control")), {}).get("values") or [""]
    return str(declared[0])


def _targets_after(summary: str, end: int, limit: int = 5) -> set[str]:
    """Stems of the content words right after a position (what a distance is *to*)."""
    following = g.tokenize(summary[end : end + 80])[:limit]
    return {g.stem(t.text) for t in following if g.is_content(t, g.STOPWORDS_EN)} - GENERIC_TRAVEL_STEMS


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
            return [_hotel(m.start, m.end, MISLEADING, f"the descriptions say '{match.text}'")]
        return []
    swapped = [d for d in same_kind if _close(d.raw_value, m.raw_value) and d.unit != m.unit]
    if swapped:
        return [_hotel(m.start, m.end, INCORRECT, f"unit confusion: the descriptions say '{swapped[0].text}'")]
    elsewhere = [d for d in source.measures if d.kind == m.kind and _close(d.value, m.value)]
    if place is not None and elsewhere:
        return [
            _hotel(m.start, m.end, INCORRECT, f"'{elsewhere[0].text}' is said of another place, not of {place.text}")
        ]
    if same_kind:
        shown = ", ".join(f"'{d.text}'" for d in same_kind[:2])
        return [_hotel(m.start, m.end, INCORRECT, f"the descriptions give {shown}")]
    known = (
        "distances only"
        if m.kind == "time" and any(d.kind == "distance" for d in source.measures)
        else "no such figure"
    )
    return [_hotel(m.start, m.end, NOT_CHECKABLE, f"the descriptions give {known} for this")]


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
            spans.append(_hotel(m.start(), m.end(), MISLEADING, f"the descriptions give '{nearest.text}'"))
        elif walks and limit == NEAR_KM:
            spans.append(_hotel(m.start(), m.end(), MISLEADING, f"the descriptions give '{walks[0].text}'"))
        elif phrase == "beachfront" and not source.mentions("beach"):
            spans.append(_hotel(m.start(), m.end(), NOT_CHECKABLE, "the descriptions do not mention a beach"))
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
            spans.append(_hotel(m.start(), m.end(), MISLEADING, f"the descriptions mention '{related}', not a {key}"))
        else:
            spans.append(_hotel(m.start(), m.end(), NOT_CHECKABLE, f"no {key} mentioned in the descriptions"))
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
            spans.append(_hotel(place.start, place.end, INCORRECT, f"the descriptions name a different {kind}"))
        else:
            spans.append(
                _hotel(place.start, place.end, NOT_CHECKABLE, f"'{place.text}' is not mentioned in the descriptions")
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
    for number in g.extract_numbers(summary, "en"):
        if any(s.start <= number.start < s.end for s in taken) or number.value < 2:
            continue
        nouns = nouns_after(summary, tokens, starts, number.end)[:1]
        unit = nouns[0] if nouns and g.stem(nouns[0].text) in _NOT_COUNTED else None
        if unit is not None or not nouns:
            if not source.index.has_number(number):
                spans.append(
                    _hotel(
                        number.start,
                        unit.end if unit else number.end,
                        NOT_CHECKABLE,
                        f"the number {number.text} is not in the descriptions",
                    )
                )
            continue
        noun_stems = {g.stem(t.text) for t in nouns}
        counted = [n for n, after in source.counted if noun_stems & after]
        end = nouns[-1].end
        if any(_close(n.value, number.value) for n in counted):
            continue
        if counted:
            spans.append(_hotel(number.start, end, INCORRECT, f"the descriptions say '{counted[0].text}'"))
        else:
            spans.append(_hotel(number.start, end, NOT_CHECKABLE, "the descriptions do not give this count"))
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


def _hotel(start: int, end: int, label: str, note: str) -> SpanDraft:
    return SpanDraft(get_schema(SCHEMA).span_control(), start, end, label, note=note, score=0.5)
