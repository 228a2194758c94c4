"""The plugin API of the LLM tasks: what a schema's task (a subclass of
:class:`~judgelab.backend.llm.tasks.base.SchemaTask`, registered with ``@LLM_TASKS.register``) and the
generic task use to turn a model's answer into a draft.

- :class:`Tally`: the counters of one answer (dropped items, span matches, rating statuses,
  problems) that end up in ``Draft.info``; :meth:`SchemaTask.build` receives one.
- :func:`lookup`, :func:`free_text`, :func:`list_index`: read an answer's values forgivingly (a key
  whatever its case and separators, text from a string or a list of strings, a list index from
  ``3``, ``"3"`` or ``"line 3"``).
- :func:`scale_of`: the ``(low, high)`` of a numbered Choices scale or a Rating.
- :func:`raw_spans` and :func:`align`: span objects of an answer, placed on the task's text.
- :func:`json_response_format`: the ``response_format`` asking for a JSON schema.
- :func:`checked`: a draft with what the backend would drop from it noted in its ``info``.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Any

from judgelab.backend.draft import Draft
from judgelab.backend.llm.alignment import align_spans
from judgelab.backend.llm.answers import parse_json_answer
from judgelab.backend.llm.contracts import MATCH_KINDS, ParsedAnswer, RawSpan
from judgelab.backend.results import build_results
from judgelab.configs.label_config import Control, LabelConfig

MAX_PROBLEMS_KEPT = 20  # repair/drop messages kept in Draft.info

__all__ = [
    "MAX_PROBLEMS_KEPT",
    "Tally",
    "align",
    "checked",
    "free_text",
    "json_response_format",
    "list_index",
    "lookup",
    "raw_spans",
    "scale_of",
]


def lookup(fields: dict[str, Any], *names: str) -> tuple[bool, Any]:
    """A top-level answer value by name: exact, then ignoring case, spaces, ``_`` and ``-``."""
    for name in names:
        if name in fields:
            return True, fields[name]
    squashed = {re.sub(r"[\s_\-]+", "", str(k)).casefold(): k for k in fields}
    for name in names:
        key = squashed.get(re.sub(r"[\s_\-]+", "", name).casefold())
        if key is not None:
            return True, fields[key]
    return False, None


def free_text(value: Any) -> str | None:
    """Free text from an answer value (a list of strings is joined), or None."""
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        joined = "\n".join(v.strip() for v in value if v.strip())
        return joined or None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def list_index(value: Any, count: int, one_based: bool = True) -> int | None:
    """A 0-based list index from ``3``, ``"3"``, ``"line 3"``, ``"line_3"`` (1-based when asked)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        value = int(value)
    if isinstance(value, str):
        m = re.search(r"\d+", value)
        if not m:
            return None
        value = int(m.group())
    if not isinstance(value, int):
        return None
    index = value - 1 if one_based else value
    return index if 0 <= index < count else None


def scale_of(control: Control | None, default: tuple[int, int]) -> tuple[int, int]:
    """``(low, high)`` of a Choices scale whose aliases are numbers, or of a Rating."""
    if control is None:
        return default
    if control.tag == "Rating":
        try:
            return 1, int(control.attrs.get("maxRating", "5"))
        except ValueError:
            return default
    numbers = [int(v) for v in control.labels if re.fullmatch(r"\d+", v)]
    return (min(numbers), max(numbers)) if numbers else default


class Tally:
    """Counters that end up in ``Draft.info``."""

    def __init__(self) -> None:
        self.match: Counter = Counter()
        self.counts: Counter = Counter()
        self.ratings: Counter = Counter()
        self.problems: list[str] = []

    def answer(self, answer: ParsedAnswer) -> None:
        self.counts["dropped_items"] += answer.dropped
        self.problems.extend(answer.problems)
        if answer.none_identified and not answer.spans:
            self.counts["none_identified"] = 1  # the model said explicitly: nothing to mark

    def rating(self, status: str) -> None:
        self.ratings[status] += 1

    def info(self) -> dict[str, Any]:
        info: dict[str, Any] = {k: v for k, v in self.counts.items() if v}
        if self.match:
            info["spans"] = {k: self.match.get(k, 0) for k in (*MATCH_KINDS, "overlap_dropped") if self.match.get(k)}
        if self.ratings:
            info["ratings"] = dict(self.ratings)
        if self.problems:
            info["problems"] = self.problems[:MAX_PROBLEMS_KEPT]
        return info


def align(text: str, spans: list[RawSpan], overlap: str, tally: Tally) -> list[Any]:
    if not spans:
        return []
    report = align_spans(text, spans, overlap=overlap)
    tally.match.update(report.counts)
    return [s for s in report.spans if 0 <= s.start < s.end <= len(text) and text[s.start : s.end] == s.text]


def raw_spans(items: list[Any], tally: Tally) -> list[RawSpan]:
    """Span objects (``text``/``label``/``reason``/``occurrence_index``) read by the answers module."""
    if not items:
        return []
    answer = parse_json_answer(json.dumps({"spans": items}, ensure_ascii=False, default=str))
    tally.answer(answer)
    return answer.spans


def json_response_format(name: str, schema: dict[str, Any] | None) -> dict[str, Any] | None:
    if schema is None:
        return None
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}


def checked(draft: Draft, config: LabelConfig, data: dict[str, Any]) -> Draft:
    """Build the results once, as the backend will: what it would drop is reported in info."""
    try:
        built = build_results(draft, config, data)
    except Exception as exc:  # noqa: BLE001 - never raise from to_draft
        draft.info["results_error"] = f"{type(exc).__name__}: {exc}"
        return draft
    if built.dropped:
        draft.info["results_dropped"] = dict(built.dropped)
    return draft
