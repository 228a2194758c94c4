"""001 augmentation_quality: SP / SC / notes."""

from __future__ import annotations

from typing import Any

from judgelab.backend.draft import Draft
from judgelab.backend.llm.contracts import ParsedAnswer
from judgelab.backend.llm.tasks.api import Tally, free_text, lookup, scale_of
from judgelab.backend.llm.tasks.base import SchemaTask
from judgelab.backend.llm.tasks.schemas import LLM_TASKS
from judgelab.configs.schema import builtin_schema

RATED = builtin_schema("augmentation_quality").items_of_kind("ordinal")  # SP, SC


@LLM_TASKS.register("augmentation_quality")
class AugmentationQualityTask(SchemaTask):
    TASK_VERSION = "1"
    LABEL_NAMES = {0: "neutral", 1: "hyperpartisan"}

    def variables(self, data: dict[str, Any]) -> dict[str, Any]:
        values = super().variables(data)
        label = data.get("original_label")
        try:
            values["original_label_name"] = self.LABEL_NAMES.get(int(label), "unknown")
        except (TypeError, ValueError):
            values["original_label_name"] = "unknown"
        return values

    def output_schema(self) -> dict[str, Any] | None:
        props: dict[str, Any] = {}
        for name in RATED:
            low, high = scale_of(self.control(name), (1, 3))
            props[name] = {"type": "integer", "minimum": low, "maximum": high}
        props["notes"] = {"type": "string"}
        return {"type": "object", "properties": props, "required": list(RATED)}

    def build(self, answer: ParsedAnswer, data: dict[str, Any], tally: Tally) -> Draft:
        tally.answer(answer)
        draft = Draft()
        for name in RATED:
            found, value = lookup(answer.fields, name)
            if found:
                self.choice_from_rating(draft, name, value, tally, (1, 3))
            else:
                tally.counts["missing_ratings"] += 1
        found, notes = lookup(answer.fields, "notes", "note", "reason", "explanation")
        text = free_text(notes) if found else None
        if text:
            draft.texts["notes"] = text
        return draft
