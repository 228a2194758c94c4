"""Turn a model's answer text into a :class:`ParsedAnswer`; nothing here raises.

Two answer shapes are understood:

- JSON, factgenie style: ``{"annotations": [{"reason", "text", "annotation_type"}], ...}``
  (also ``errors`` / ``spans`` or a bare list), plus any other top-level keys (ratings,
  verdicts), which are kept untouched in :attr:`ParsedAnswer.fields`;
- span lines, as in the TL;DR flaw prompt: ``Span 1: <text> (Label: Irrelevant)`` or
  ``None identified``.

Models wrap JSON in fences and prose, cut it off at the token limit, use Python literals or
single quotes and leave trailing commas; :func:`extract_json` (:mod:`.json_repair`) repairs all
of these and says what it repaired. Malformed span items are dropped one by one and counted, never the answer.

>>> answer = parse_answer('Sure!\\n```json\\n{"annotations": [{"text": "two goals", '
...                       '"annotation_type": 1, "reason": "only one"},]}\\n```')
>>> answer.spans[0].text, answer.spans[0].label
('two goals', 1)
>>> resolve_label("not_checkable", ["Contradictory", "Not Checkable"])
'Not Checkable'
>>> parse_rating("3/5", 1, 5)
(3, 'ok')
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from judgelab.backend.llm.contracts import ParsedAnswer, RawSpan
from judgelab.backend.llm.json_repair import answer_text, extract_json, extract_json_noting

__all__ = [
    "extract_json",
    "parse_answer",
    "parse_json_answer",
    "parse_rating",
    "parse_span_lines",
    "resolve_label",
]

SPAN_LIST_KEYS = ("annotations", "errors", "spans")
TEXT_KEYS = ("text", "span")
LABEL_KEYS = ("annotation_type", "type", "label", "category")
REASON_KEYS = ("reason", "explanation", "note")
OCCURRENCE_KEYS = ("occurrence_index", "occurence_index")  # the second is factgenie's spelling
NONE_WORDS = {"none", "none identified", "no errors", "no spans", "no issues", "nothing", "n/a"}


# --------------------------------------------------------------------------------------------
# JSON answers


def _get(item: dict[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    """The first of ``keys`` present (exact, then case-insensitive) with a non-null value."""
    for key in keys:
        if key in item and item[key] is not None:
            return key, item[key]
    lowered = {str(k).strip().lower(): k for k in item}
    for key in keys:
        real = lowered.get(key)
        if real is not None and item[real] is not None:
            return real, item[real]
    return None, None


def _as_label(value: Any, problems: list[str], pos: int) -> str | int | None:
    if isinstance(value, bool):
        problems.append(f"item {pos}: boolean label ignored")
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value):
            return int(value)
        problems.append(f"item {pos}: label {value!r} is not an index")
        return str(value)
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, list | tuple):
        if value:
            problems.append(f"item {pos}: several labels, kept the first")
            return _as_label(value[0], problems, pos)
        return None
    if isinstance(value, dict):
        _k, inner = _get(value, ("name", "label", "value", "type"))
        return _as_label(inner, problems, pos) if inner is not None else None
    return str(value)


def _as_occurrence(value: Any, problems: list[str], pos: int) -> int | None:
    if isinstance(value, bool):
        value = None
    elif isinstance(value, float) and math.isfinite(value) and value == int(value):
        value = int(value)
    elif isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and 0 <= value < 1_000_000:
        return value
    problems.append(f"item {pos}: occurrence index {value!r} ignored")
    return None


def _as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return str(value)
    return None


def _span_from_item(item: Any, pos: int, problems: list[str]) -> RawSpan | None:
    if isinstance(item, str) and item.strip():
        problems.append(f"item {pos}: a bare string, not an object: dropped")
        return None
    if not isinstance(item, dict):
        problems.append(f"item {pos}: {type(item).__name__}, not an object: dropped")
        return None
    _k, raw_text = _get(item, TEXT_KEYS)
    text = _as_text(raw_text)
    if text is None:
        problems.append(f"item {pos}: no usable text: dropped")
        return None
    _k, raw_label = _get(item, LABEL_KEYS)
    label = _as_label(raw_label, problems, pos) if raw_label is not None else None
    _k, raw_reason = _get(item, REASON_KEYS)
    reason: str | None
    if raw_reason is None or isinstance(raw_reason, str):
        reason = raw_reason.strip() if isinstance(raw_reason, str) and raw_reason.strip() else None
    else:
        reason = json.dumps(raw_reason, ensure_ascii=False, default=str)
    _k, raw_occ = _get(item, OCCURRENCE_KEYS)
    occurrence = _as_occurrence(raw_occ, problems, pos) if raw_occ is not None else None
    _k, raw_field = _get(item, ("field",))
    field = raw_field if isinstance(raw_field, str) and raw_field.strip() else None
    return RawSpan(text=text, label=label, reason=reason, occurrence_index=occurrence, field=field)


def _is_none_word(value: Any) -> bool:
    return isinstance(value, str) and value.strip().strip(".!").lower() in NONE_WORDS


def parse_json_answer(text: str) -> ParsedAnswer:
    """Parse a JSON answer (see :func:`extract_json`) into spans and other fields.

    Spans come from ``annotations`` (or ``errors``, ``spans``, or a top-level list); every
    other top-level key goes to ``fields`` untouched. Items that are not objects or have no
    usable text are dropped one at a time (``dropped``, ``problems``). An explicitly empty
    span list sets ``none_identified``.

    >>> a = parse_json_answer('{"annotations": [], "SP": 3}')
    >>> a.spans, a.fields, a.none_identified
    ([], {'SP': 3}, True)
    """
    try:
        problems: list[str] = []
        info: dict[str, Any] = {}
        value, problems = extract_json_noting(text, problems, info)
        return _answer_from_value(value, problems, info)
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises"
        return ParsedAnswer(problems=[f"parse failed: {type(exc).__name__}"])


def _answer_from_value(value: Any, problems: list[str], info: dict[str, Any]) -> ParsedAnswer:
    answer = ParsedAnswer(problems=list(problems))
    items: list[Any] | None = None
    if isinstance(value, list):
        items = value
    elif isinstance(value, dict):
        span_key = None
        lowered = {str(k).strip().lower(): k for k in value}
        for key in SPAN_LIST_KEYS:
            real = key if key in value else lowered.get(key)
            if real is None:
                continue
            inner = value[real]
            if isinstance(inner, list):
                items, span_key = inner, real
                break
            if isinstance(inner, dict):
                items, span_key = [inner], real
                answer.problems.append(f"{real!r} was a single object, read as a list of one")
                break
            if inner is None or inner == "" or _is_none_word(inner):
                items, span_key = [], real
                break
        answer.fields = {k: v for k, v in value.items() if k != span_key}
    elif value is not None:
        answer.problems.append(f"JSON answer is a {type(value).__name__}, not an object or list")
        return answer
    else:
        return answer
    if items is None:
        return answer
    if info.get("dropped_in") is not None and info["dropped_in"] is items:
        answer.dropped += 1  # the answer was cut off inside this item
    if not items:
        answer.none_identified = not info.get("truncated")
        return answer
    for pos, item in enumerate(items):
        span = _span_from_item(item, pos, answer.problems)
        if span is None:
            answer.dropped += 1
        else:
            answer.spans.append(span)
    return answer


# --------------------------------------------------------------------------------------------
# span lines ("Span 1: <text> (Label: Irrelevant)")

_BULLET = r"^\s*(?:[-*•·>]+\s*|\(?\d{1,3}[.)\]:]\s+|#+\s*)?"
_SPAN_PREFIX = re.compile(
    _BULLET + r"(?:\*\*|__)?\s*span\s*(?:#\s*)?(?P<num>\d{1,4})?\s*(?:\*\*|__)?\s*[:.)\-–—]\s*(?:\*\*|__)?",
    re.IGNORECASE,
)
_NUMBERED = re.compile(_BULLET, re.IGNORECASE)
_LABEL = re.compile(
    r"^(?P<body>.*)[(\[]\s*(?:\*\*)?\s*(?:label|category|type)\s*(?:\*\*)?\s*[:=\-]?\s*(?P<label>[^()\[\]]*?)\s*[)\]]"
    r"(?P<rest>[^()\[\]]*)$",
    re.IGNORECASE,
)
_TRAILING_LABEL = re.compile(r"^(?P<body>.*?)\s*[-–—|,;]\s*(?:label|category)\s*[:=]\s*(?P<label>.+?)\s*$", re.I)
_FOLLOW_UP = re.compile(
    r"^[-*•\s]*(?:\*\*)?(?P<key>label|category|type|reason|explanation|note)(?:\*\*)?\s*[:=]\s*(?:\*\*)?(?P<value>.+)$",
    re.IGNORECASE,
)
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "«": "»", "„": "“", "`": "`", "”": "”"}
_NONE_LINE = re.compile(r"^\W*(?:none(?:\s+identified)?|no (?:problematic )?spans?(?: identified)?|n/a)\W*$", re.I)


def _unquote(body: str) -> str:
    body = body.strip()
    for _ in range(2):
        while body.startswith(("**", "__")) and body.endswith(("**", "__")) and len(body) > 4:
            body = body[2:-2].strip()
        if len(body) >= 2 and body[0] in _QUOTES and body[-1] == _QUOTES[body[0]]:
            body = body[1:-1]
        elif len(body) >= 2 and body[0] in '"“' and body[-1] in '"”':
            body = body[1:-1]
    return body


def parse_span_lines(text: str) -> ParsedAnswer:
    """Parse the span-line format: ``Span 1: <text> (Label: Irrelevant)``, one per line.

    Tolerates quotes around the text, any case and spacing in ``(Label:X)``, bullets and
    numbering (``1.``, ``-``, ``**Span 1:**``), ``[Label: X]`` and a trailing ``- Label: X``.
    Text after the label becomes the span's reason. ``None identified`` (any case) sets
    ``none_identified`` when no span was found.

    >>> parse_span_lines('Span 1: "why did you decide" (label:irrelevant)').spans[0]
    RawSpan(text='why did you decide', label='irrelevant', reason=None, occurrence_index=None, field=None)
    """
    try:
        return _parse_span_lines(text)
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises"
        return ParsedAnswer(problems=[f"span lines parse failed: {type(exc).__name__}"])


def _parse_span_lines(text: Any) -> ParsedAnswer:
    problems: list[str] = []
    text = answer_text(text, problems)
    answer = ParsedAnswer(problems=problems)
    saw_none = False
    for line_no, raw_line in enumerate(text.splitlines()):
        line = raw_line.strip()
        if not line:
            continue
        if _NONE_LINE.match(line) or re.search(r"\bnone identified\b", line, re.I):
            saw_none = True
            continue
        follow = _FOLLOW_UP.match(line)
        if follow and answer.spans:  # "Label: X" / "Reason: ..." on the line after the span
            last = answer.spans[-1]
            value = follow.group("value").strip().strip("*\"'`“”").strip()
            if follow.group("key").lower() in ("label", "category", "type") and last.label is None and value:
                last.label = value
                continue
            if follow.group("key").lower() not in ("label", "category", "type") and last.reason is None and value:
                last.reason = value
                continue
        prefix = _SPAN_PREFIX.match(line)
        rest = line[prefix.end() :] if prefix else line[_NUMBERED.match(line).end() :]
        label: str | None = None
        reason: str | None = None
        m = _LABEL.match(rest)
        if m:
            body, label, tail = m.group("body"), m.group("label"), m.group("rest")
            tail = tail.strip().lstrip("-–—:;,.").strip()
            reason = tail or None
        else:
            t = _TRAILING_LABEL.match(rest)
            if t:
                body, label = t.group("body"), t.group("label")
            elif prefix:
                body = rest
            else:
                continue  # prose, headings: not a span line
        body = _unquote(body.strip().rstrip(":-–—").strip())
        label = label.strip().strip("*\"'`“”").strip() if label else None
        if not body.strip():
            answer.dropped += 1
            answer.problems.append(f"line {line_no + 1}: span without text: dropped")
            continue
        if label is None:
            answer.problems.append(f"line {line_no + 1}: span without a label")
        answer.spans.append(RawSpan(text=body, label=label or None, reason=reason))
    if saw_none:
        if answer.spans:
            answer.problems.append("'None identified' next to spans: kept the spans")
        else:
            answer.none_identified = True
    elif not answer.spans and not answer.dropped:
        answer.problems.append("no span lines found")
    return answer


def parse_answer(text: str) -> ParsedAnswer:
    """JSON when the answer holds a usable JSON object or list, otherwise span lines.

    A JSON value that yields nothing (no span, no other field, not explicitly empty, e.g. a
    ``[1, 2]`` in the prose around span lines) gives way to span lines when those are found.
    Never raises.
    """
    try:
        problems: list[str] = []
        info: dict[str, Any] = {}
        value, problems = extract_json_noting(text, problems, info)
        json_answer = None
        if isinstance(value, dict | list):
            json_answer = _answer_from_value(value, problems, info)
            if json_answer.spans or json_answer.fields or json_answer.none_identified:
                return json_answer
        lines = parse_span_lines(text)
        if lines.spans or lines.none_identified:
            if json_answer is not None:
                lines.problems.insert(0, "JSON found but unusable: read span lines instead")
            return lines
        if json_answer is not None:
            return json_answer
        lines.problems = problems + lines.problems
        return lines
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises"
        return ParsedAnswer(problems=[f"parse failed: {type(exc).__name__}"])


# --------------------------------------------------------------------------------------------
# labels and ratings


def _squash(label: str) -> str:
    return re.sub(r"[\s_\-–—./]+", "", label).casefold()


def resolve_label(label: Any, labels: list[str], index_map: dict[int, str] | None = None) -> str | None:
    """The label of ``labels`` the model meant, or None.

    Tried in order: exact name; case-insensitive; ignoring spaces, underscores and hyphens
    (``not_checkable`` -> ``Not Checkable``); an index through ``index_map`` (an int or a
    digit string, e.g. factgenie's ``annotation_type: 2``); a unique prefix (``Incoh``).

    >>> resolve_label(2, ["Contradictory", "Not checkable", "Misleading"], {0: "Contradictory", 2: "Misleading"})
    'Misleading'
    >>> resolve_label("In", ["Incoherent", "Incorrect"]) is None  # ambiguous prefix
    True
    """
    try:
        return _resolve_label(label, labels, index_map)
    except Exception:  # noqa: BLE001
        return None


def _resolve_label(label: Any, labels: list[str], index_map: dict[int, str] | None) -> str | None:
    if label is None or isinstance(label, bool):
        return None
    labels = [x for x in labels if isinstance(x, str)]
    index: int | None = None
    if isinstance(label, int):
        index = label
    elif isinstance(label, float) and math.isfinite(label) and label == int(label):
        index = int(label)
    elif isinstance(label, str):
        name = label.strip().strip("\"'`“”*").strip()
        if name in labels:
            return name
        if re.fullmatch(r"[+-]?\d+", name):
            index = int(name)
        else:
            folded = [x for x in labels if x.casefold() == name.casefold()]
            if len(folded) == 1:
                return folded[0]
            key = _squash(name)
            if not key:
                return None
            squashed = [x for x in labels if _squash(x) == key]
            if len(squashed) == 1:
                return squashed[0]
            prefixed = [x for x in labels if _squash(x).startswith(key)]
            if len(prefixed) == 1:
                return prefixed[0]
            return None
    else:
        return None
    if index is not None and index_map:
        resolved = index_map.get(index)
        if resolved is None:
            resolved = index_map.get(str(index))  # type: ignore[call-overload]
        return resolved if isinstance(resolved, str) else None
    return None


_WORD_NUMBERS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_RATING = re.compile(
    r"^\s*(?:[A-Za-z][A-Za-z ]{0,24}[:=]\s*)?[*_\[(\"']*\s*(?P<num>[+-]?(?:\d+(?:[.,]\d+)?|[.,]\d+))(?![\d])"
)


def parse_rating(value: Any, low: int, high: int) -> tuple[int | None, str]:
    """A model's rating on the integer scale ``low..high``, with what was done to it.

    Rule: read a number from an int, a float, or a string that starts with one (``"3"``,
    ``"3/5"``, ``"3 - Full Preservation"``, ``"Score: 4"``, ``"**4**"``, ``"four"``); a
    decimal is rounded half up (``"4.6"`` -> 5, status ``"rounded"``). A value inside the
    scale is ``"ok"``; one at most one step outside (``0`` or ``6`` on 1..5) is clamped to
    the nearest end (``"clamped"``); anything further out, booleans, None, NaN and text
    without a leading number give ``(None, "dropped")``. Callers count the statuses.

    >>> parse_rating("3 - Full Preservation", 1, 5), parse_rating(6, 1, 5), parse_rating(9, 1, 5)
    ((3, 'ok'), (5, 'clamped'), (None, 'dropped'))
    """
    try:
        return _parse_rating(value, low, high)
    except Exception:  # noqa: BLE001
        return None, "dropped"


def _parse_rating(value: Any, low: int, high: int) -> tuple[int | None, str]:
    if low > high:
        low, high = high, low
    number: float | None = None
    if isinstance(value, bool) or value is None:
        return None, "dropped"
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        number = value
    elif isinstance(value, str):
        s = value.strip()
        m = _RATING.match(s)
        if m:
            number = float(m.group("num").replace(",", "."))
        else:
            word = re.match(r"^\W*([A-Za-z]+)\b", s)
            if word and word.group(1).lower() in _WORD_NUMBERS:
                number = _WORD_NUMBERS[word.group(1).lower()]
    if number is None or not math.isfinite(number):
        return None, "dropped"
    rounded = int(math.floor(number + 0.5))
    status = "ok" if rounded == number else "rounded"
    if low <= rounded <= high:
        return rounded, status
    if low - 1 <= rounded < low:
        return low, "clamped"
    if high < rounded <= high + 1:
        return high, "clamped"
    return None, "dropped"
