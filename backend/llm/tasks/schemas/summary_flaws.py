"""000 summary_flaws: the few-shot flaw prompt, span lines."""

from __future__ import annotations

from typing import Any

from judgelab.backend.draft import Draft, SpanDraft
from judgelab.backend.llm.answers import resolve_label
from judgelab.backend.llm.contracts import ParsedAnswer, RawSpan
from judgelab.backend.llm.tasks.api import Tally, align
from judgelab.backend.llm.tasks.base import SchemaTask
from judgelab.backend.llm.tasks.schemas import LLM_TASKS
from judgelab.configs.schema import builtin_schema


@LLM_TASKS.register("summary_flaws")
class SummaryFlawsTask(SchemaTask):
    """Seed 000's few-shot prompt; ``Span N: <text> (Label: X)`` lines or ``None identified``."""

    TASK_VERSION = "1"
    DEFAULT_OUTPUT = "span_lines"
    FALLBACK_LABEL = builtin_schema("summary_flaws").constant("other")

    def variables(self, data: dict[str, Any]) -> dict[str, Any]:
        values = super().variables(data)
        parts = []
        for key, title in (("subreddit", "SUBREDDIT"), ("title", "TITLE"), ("post", "POST")):
            value = data.get(key)
            if value not in (None, ""):
                parts.append(f"{title}: {value}")
        values["source"] = " ".join(parts)
        values.setdefault("summary", "")
        values.setdefault("score", "")
        return values

    def output_schema(self) -> dict[str, Any] | None:
        return None  # plain text answer lines

    def output_signature(self) -> Any:
        control = self.control(self.span_control)
        return {"output": self.output, "labels": list(control.labels) if control else []}

    def build(self, answer: ParsedAnswer, data: dict[str, Any], tally: Tally) -> Draft:
        tally.answer(answer)
        draft = Draft()
        summary = data.get("summary")
        control = self.control(self.span_control)
        labels = list(control.labels) if control else []
        raw: list[RawSpan] = []
        for span in answer.spans:
            label = resolve_label(span.label, labels)
            note = span.reason
            if label is None:
                fallback = self.FALLBACK_LABEL if self.FALLBACK_LABEL in labels else None
                if fallback is None:
                    tally.counts["unknown_label"] += 1
                    continue
                tally.counts["label_to_other"] += 1
                given = str(span.label).strip() if span.label not in (None, "") else ""
                note = "; ".join(p for p in (given, span.reason or "") if p) or None
                label = fallback
            raw.append(RawSpan(span.text, label, note, span.occurrence_index))
        if isinstance(summary, str):
            overlap = str(self.span_rule(self.span_control).get("overlap") or "allow")
            for s in align(summary, raw, overlap, tally):
                draft.spans.append(SpanDraft(self.span_control, s.start, s.end, str(s.label), note=s.reason))
        elif raw:
            tally.counts["no_summary_text"] += 1
        if answer.none_identified and not answer.spans:
            empty = self.schema.meta.get("empty_answer") or {}
            draft.choices[str(empty["control"])] = [str(empty["value"])]
        return draft
