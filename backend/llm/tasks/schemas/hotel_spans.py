"""004 hotel_spans: factgenie JSON annotations (+ impression)."""

from __future__ import annotations

from typing import Any

from judgelab.backend.draft import Draft, SpanDraft
from judgelab.backend.llm.answers import parse_rating, resolve_label
from judgelab.backend.llm.contracts import ParsedAnswer, RawSpan
from judgelab.backend.llm.tasks.api import Tally, align, lookup, scale_of
from judgelab.backend.llm.tasks.base import SchemaTask
from judgelab.backend.llm.tasks.schemas import LLM_TASKS
from judgelab.configs.schema import builtin_schema

_HOTEL = builtin_schema("hotel_spans")
IMPRESSION = _HOTEL.constant("impression_item")
NO_ERRORS = _HOTEL.empty_answer["control"]


@LLM_TASKS.register("hotel_spans")
class HotelSpansTask(SchemaTask):
    """Seed 004's main prompt (or the less-strict variant); JSON ``annotations`` + ``impression``."""

    TASK_VERSION = "1"
    #: The names the prompt's list uses, mapped to the config's labels.
    PROMPT_NAMES = dict(_HOTEL.constant("labels_in_answers"))
    DEFAULT_TYPES = dict(_HOTEL.span_controls[_HOTEL.span_control()]["annotation_types"])

    def variables(self, data: dict[str, Any]) -> dict[str, Any]:
        values = super().variables(data)
        values["data"] = data.get("descriptions", "")
        values["text"] = data.get("summary", "")
        return values

    def output_schema(self) -> dict[str, Any] | None:
        low, high = scale_of(self.control(IMPRESSION), (1, 7))
        return {
            "type": "object",
            "properties": {
                "annotations": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "reason": {"type": "string"},
                            "text": {"type": "string"},
                            "annotation_type": {"type": "integer", "enum": sorted(self.index_map())},
                            "occurrence_index": {"type": "integer", "minimum": 0},
                        },
                        "required": ["reason", "text", "annotation_type"],
                    },
                },
                IMPRESSION: {"type": "integer", "minimum": low, "maximum": high},
            },
            "required": ["annotations", IMPRESSION],
        }

    def index_map(self) -> dict[int, str]:
        types = self.span_rule(self.span_control).get("annotation_types") or self.DEFAULT_TYPES
        return {int(k): str(v) for k, v in types.items()}

    def label_for(self, value: Any, labels: list[str]) -> str | None:
        label = resolve_label(value, labels, self.index_map())
        if label is None:
            names = [n for n in self.PROMPT_NAMES if self.PROMPT_NAMES[n] in labels]
            alias = resolve_label(value, names)
            label = self.PROMPT_NAMES.get(alias) if alias else None
        return label

    def build(self, answer: ParsedAnswer, data: dict[str, Any], tally: Tally) -> Draft:
        tally.answer(answer)
        draft = Draft()
        control = self.control(self.span_control)
        labels = list(control.labels) if control else []
        raw: list[RawSpan] = []
        for span in answer.spans:
            label = self.label_for(span.label, labels)
            if label is None:
                tally.counts["unknown_label"] += 1
                tally.problems.append(f"span {span.text!r}: unknown annotation_type {span.label!r}: dropped")
                continue
            raw.append(RawSpan(span.text, label, span.reason, span.occurrence_index))
        summary = data.get("summary")
        if isinstance(summary, str):
            overlap = str(self.span_rule(self.span_control).get("overlap") or "forbid")
            for s in align(summary, raw, overlap, tally):
                draft.spans.append(SpanDraft(self.span_control, s.start, s.end, str(s.label), note=s.reason))
        elif raw:
            tally.counts["no_summary_text"] += 1
        if answer.none_identified and not answer.spans:
            value = _no_errors_value(data)
            if value is not None:
                draft.choices[NO_ERRORS] = [value]
        found, impression = lookup(answer.fields, IMPRESSION, "overall_impression")
        if found:
            low, high = scale_of(self.control(IMPRESSION), (1, 7))
            rating, status = parse_rating(impression, low, high)
            tally.rating(status)
            if rating is not None:
                draft.ratings[IMPRESSION] = rating
        return draft


def _no_errors_value(data: dict[str, Any]) -> str | None:
    options = data.get("no_errors_options")
    if isinstance(options, list) and options:
        first = options[0]
        value = first.get("value") if isinstance(first, dict) else first
        if isinstance(value, str) and value.strip():
            return value
    return None
