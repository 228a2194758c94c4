"""The base of the LLM tasks: :class:`SchemaTask`, the class a schema's task derives from and
registers with ``@LLM_TASKS.register("<schema>")`` (see :mod:`judgelab.backend.llm.tasks`); the
helpers a task's :meth:`~SchemaTask.build` uses are the plugin API of :mod:`.api`."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, ClassVar

from judgelab.backend.draft import Draft
from judgelab.backend.llm.answers import parse_json_answer, parse_rating, parse_span_lines
from judgelab.backend.llm.contracts import ParsedAnswer
from judgelab.backend.llm.prompting import PromptError, PromptTemplate, load_template, short_hash
from judgelab.backend.llm.tasks.api import Tally, checked, json_response_format, scale_of
from judgelab.backend.llm.tasks.schemas import LLM_TASKS
from judgelab.configs.label_config import Control, LabelConfig, parse_label_config
from judgelab.configs.schema import Schema

log = logging.getLogger(__name__)

OUTPUT_FORMATS = ("json", "span_lines")


# --------------------------------------------------------------------------------------------
# the schema tasks


class SchemaTask:
    """A schema's task: its template(s) from ``configs/<schema>/`` and its answer handling.

    Subclasses set :attr:`TASK_VERSION` (bump when the parsing or prompt variables change),
    implement :meth:`variables`, :meth:`output_schema` and :meth:`build`.
    """

    name: ClassVar[str] = ""
    TASK_VERSION: ClassVar[str] = "1"
    DEFAULT_OUTPUT: ClassVar[str] = "json"

    def __init__(self, schema: Schema, label_config_xml: str, variant: str | None = None):
        self.schema = schema
        self.config: LabelConfig = parse_label_config(label_config_xml)
        options = schema.meta.get("prompt") or {}
        if isinstance(options, str):  # ``prompt: my_prompt.txt``
            options = {"file": options}
        if not isinstance(options, dict):
            raise PromptError(f"{schema.name}: 'prompt' in schema.yaml must be a file name or a mapping")
        self.output = str(options.get("output") or self.DEFAULT_OUTPUT)
        if self.output not in OUTPUT_FORMATS:
            raise PromptError(f"{schema.name}: prompt output must be one of {OUTPUT_FORMATS}, not {self.output!r}")
        self.variant = str(variant or options.get("prompt_variant") or "main")
        files = dict(options.get("variants") or {})
        files.setdefault("main", options.get("file") or "prompt.txt")
        if self.variant not in files:
            raise PromptError(f"{schema.name}: unknown prompt variant {self.variant!r}; known: {', '.join(files)}")
        self.template: PromptTemplate = load_template(schema.name, str(files[self.variant]), schema.folder)

    # LLMTask protocol ---------------------------------------------------------------------
    @property
    def version(self) -> str:
        return short_hash(self.name, self.TASK_VERSION, self.variant, self.template.text, self.output_signature())

    def messages(self, data: dict[str, Any]) -> list[dict[str, str]]:
        data = data if isinstance(data, dict) else {}
        return [{"role": "user", "content": self.template.render(self.variables(data))}]

    def response_format(self) -> dict[str, Any] | None:
        if self.output != "json":
            return None
        return json_response_format(f"judgelab_{self.name}", self.output_schema())

    def to_draft(self, answer_text: str, data: dict[str, Any]) -> Draft:
        data = data if isinstance(data, dict) else {}
        tally = Tally()
        try:
            draft = self.build(self.parse(answer_text), data, tally)
        except Exception as exc:  # a parsing bug must not fail a predict batch
            log.exception("%s: could not turn an answer into a draft", self.name)
            return Draft(info={"error": f"{type(exc).__name__}: {exc}"})
        draft.info.update(tally.info())
        return checked(draft, self.config, data)

    # to implement --------------------------------------------------------------------------
    def variables(self, data: dict[str, Any]) -> dict[str, Any]:
        """Template values: every top-level data field, plus what the task derives."""
        return {k: v for k, v in data.items() if isinstance(k, str)}

    def output_schema(self) -> dict[str, Any] | None:
        return None

    def output_signature(self) -> Any:
        return {"output": self.output, "schema": self.output_schema()}

    def parse(self, answer_text: str) -> ParsedAnswer:
        if self.output == "span_lines":
            answer = parse_span_lines(answer_text)
            if answer.spans or answer.none_identified:
                return answer
            as_json = parse_json_answer(answer_text)  # a model that answered in JSON anyway
            return as_json if (as_json.spans or as_json.none_identified) else answer
        return parse_json_answer(answer_text)

    def build(self, answer: ParsedAnswer, data: dict[str, Any], tally: Tally) -> Draft:
        raise NotImplementedError

    # shared pieces ---------------------------------------------------------------------------
    @property
    def span_control(self) -> str:
        """The schema's span control (its name comes from ``schema.yaml``)."""
        return self.schema.span_control()

    def control(self, name: str) -> Control | None:
        return next((c for c in self.config.controls if c.name == name), None)

    def span_rule(self, control: str) -> dict[str, Any]:
        return dict(self.schema.span_controls.get(control) or {})

    def choice_from_rating(
        self, draft: Draft, control_name: str, value: Any, tally: Tally, default: tuple[int, int]
    ) -> None:
        """A numbered-scale Choices control (aliases "1".."n") from a model's rating."""
        control = self.control(control_name)
        low, high = scale_of(control, default)
        rating, status = parse_rating(value, low, high)
        tally.rating(status)
        if rating is None:
            return
        allowed = set(control.labels) if control is not None else None
        if allowed is not None and str(rating) not in allowed:
            tally.counts["unknown_choice"] += 1
            return
        draft.choices[control_name] = [str(rating)]


def registered() -> Iterable[str]:
    """Names of the schemas that have their own task."""
    return LLM_TASKS.names()
