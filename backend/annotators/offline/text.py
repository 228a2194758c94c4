"""Shared text helpers of the offline heuristics: reading task fields as text, truncation limits,
phrase regexes and span clean-up (nested and overlapping spans)."""

from __future__ import annotations

import math
import re

from judgelab.backend.annotators import grounding as g
from judgelab.backend.draft import SpanDraft
from judgelab.configs.items import REPEATER_INDEX


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


def repeated(pattern: str, index: int) -> str:
    """A Repeater control's name for one item: ``verdict_{i}`` and 3 give ``verdict_3``."""
    return pattern.replace(REPEATER_INDEX, str(index))
