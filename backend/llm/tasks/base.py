"""The base of the LLM tasks: the registry, ``task_for``, the helpers the tasks share and
:class:`SchemaTask`, the class a schema's task derives from (see :mod:`judgelab.backend.llm.tasks`)."""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from judgelab.backend.draft import Draft
from judgelab.backend.llm.alignment import align_spans
from judgelab.backend.llm.answers import parse_json_answer, parse_rating, parse_span_lines
from judgelab.backend.llm.contracts import MATCH_KINDS, ParsedAnswer, RawSpan
from judgelab.backend.llm.prompting import PromptError, PromptTemplate, load_template, short_hash
from judgelab.backend.llm.tasks.schemas import LLM_TASKS
from judgelab.backend.results import build_results
from judgelab.configs.label_config import Control, LabelConfig, parse_label_config
from judgelab.configs.plugins import Registry
from judgelab.configs.schema import Schema

log = logging.getLogger(__name__)

OUTPUT_FORMATS = ("json", "span_lines")
MAX_PROBLEMS_KEPT = 20  # repair/drop messages kept in Draft.info


# --------------------------------------------------------------------------------------------
# registry


#: The schema tasks by schema name: the modules of ``tasks/schemas/`` and a schema folder's
#: ``llm.py`` register theirs with :func:`register_task` (loaded on first use).
TASKS: Registry[type[SchemaTask]] = LLM_TASKS


def register_task(name: str) -> Callable[[type[SchemaTask]], type[SchemaTask]]:
    """Class decorator: the task used for the schema called ``name``::

    @register_task("my_schema")
    class MySchemaTask(SchemaTask): ...
    """

    def decorate(cls: type[SchemaTask]) -> type[SchemaTask]:
        cls.name = name
        LLM_TASKS.register(name, cls)
        return cls

    return decorate


# --------------------------------------------------------------------------------------------
# small helpers shared by the tasks


def _lookup(fields: dict[str, Any], *names: str) -> tuple[bool, Any]:
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


def _text(value: Any) -> str | None:
    """Free text from an answer value (a list of strings is joined), or None."""
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        joined = "\n".join(v.strip() for v in value if v.strip())
        return joined or None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def _index(value: Any, count: int, one_based: bool = True) -> int | None:
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


def _scale(control: Control | None, default: tuple[int, int]) -> tuple[int, int]:
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


class _Tally:
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


def _align(text: str, spans: list[RawSpan], overlap: str, tally: _Tally) -> list[Any]:
    if not spans:
        return []
    report = align_spans(text, spans, overlap=overlap)
    tally.match.update(report.counts)
    return [s for s in report.spans if 0 <= s.start < s.end <= len(text) and text[s.start : s.end] == s.text]


def _raw_spans(items: list[Any], tally: _Tally) -> list[RawSpan]:
    """Span objects (``text``/``label``/``reason``/``occurrence_index``) read by the answers module."""
    if not items:
        return []
    answer = parse_json_answer(json.dumps({"spans": items}, ensure_ascii=False, default=str))
    tally.answer(answer)
    return answer.spans


def _json_response_format(name: str, schema: dict[str, Any] | None) -> dict[str, Any] | None:
    if schema is None:
        return None
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}


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
        return _json_response_format(f"judgelab_{self.name}", self.output_schema())

    def to_draft(self, answer_text: str, data: dict[str, Any]) -> Draft:
        data = data if isinstance(data, dict) else {}
        tally = _Tally()
        try:
            draft = self.build(self.parse(answer_text), data, tally)
        except Exception as exc:  # a parsing bug must not fail a predict batch
            log.exception("%s: could not turn an answer into a draft", self.name)
            return Draft(info={"error": f"{type(exc).__name__}: {exc}"})
        draft.info.update(tally.info())
        return _checked(draft, self.config, data)

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

    def build(self, answer: ParsedAnswer, data: dict[str, Any], tally: _Tally) -> Draft:
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
        self, draft: Draft, control_name: str, value: Any, tally: _Tally, default: tuple[int, int]
    ) -> None:
        """A numbered-scale Choices control (aliases "1".."n") from a model's rating."""
        control = self.control(control_name)
        low, high = _scale(control, default)
        rating, status = parse_rating(value, low, high)
        tally.rating(status)
        if rating is None:
            return
        allowed = set(control.labels) if control is not None else None
        if allowed is not None and str(rating) not in allowed:
            tally.counts["unknown_choice"] += 1
            return
        draft.choices[control_name] = [str(rating)]


def _checked(draft: Draft, config: LabelConfig, data: dict[str, Any]) -> Draft:
    """Build the results once, as the backend will: what it would drop is reported in info."""
    try:
        built = build_results(draft, config, data)
    except Exception as exc:  # noqa: BLE001 - never raise from to_draft
        draft.info["results_error"] = f"{type(exc).__name__}: {exc}"
        return draft
    if built.dropped:
        draft.info["results_dropped"] = dict(built.dropped)
    return draft


def registered() -> Iterable[str]:
    """Names of the schemas that have their own task."""
    return LLM_TASKS.names()
