"""003 likert_rubric_es: five criteria, 1-5."""

from __future__ import annotations

from typing import Any

from judgelab.backend.draft import Draft
from judgelab.backend.llm.contracts import ParsedAnswer
from judgelab.backend.llm.tasks.api import Tally, lookup, scale_of
from judgelab.backend.llm.tasks.base import SchemaTask
from judgelab.backend.llm.tasks.schemas import LLM_TASKS
from judgelab.configs.schema import builtin_schema

_LIKERT = builtin_schema("likert_rubric_es")


@LLM_TASKS.register("likert_rubric_es")
class LikertRubricTask(SchemaTask):
    TASK_VERSION = "1"
    CRITERIA = _LIKERT.items_of_kind("ordinal")
    SPANISH = {name: tuple(other) for name, other in _LIKERT.constant("criteria_in_answers").items()}

    def output_schema(self) -> dict[str, Any] | None:
        props = {}
        for name in self.CRITERIA:
            low, high = scale_of(self.control(name), (1, 5))
            props[name] = {"type": "integer", "minimum": low, "maximum": high}
        return {"type": "object", "properties": props, "required": list(self.CRITERIA)}

    def build(self, answer: ParsedAnswer, data: dict[str, Any], tally: Tally) -> Draft:
        tally.answer(answer)
        draft = Draft()
        for name in self.CRITERIA:
            found, value = lookup(answer.fields, name, *self.SPANISH[name])
            if found:
                self.choice_from_rating(draft, name, value, tally, (1, 5))
            else:
                tally.counts["missing_ratings"] += 1
        return draft
