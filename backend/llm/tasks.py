"""LLM tasks: one per schema (spacy-llm style), registered by name, plus a generic task.

A task renders the chat messages for one Label Studio task and turns the model's answer into a
:class:`~backend.draft.Draft`; it knows nothing about the model client. ``task_for`` picks the
task for a project::

    task = task_for(get_schema("hotel_spans"), project_label_config, variant="less_strict")
    messages = task.messages(data)              # -> client
    draft = task.to_draft(answer_text, data)    # -> backend.results.build_results

Templates are files (``configs/<schema>/prompt.txt``, see :mod:`backend.llm.prompting`);
``version`` is a short hash of the template text(s), the expected output (format and JSON
schema) and the task class version, so editing a prompt changes the prediction version.

``to_draft`` never raises. Each answer goes through the same steps: parse
(:mod:`backend.llm.answers`), map labels and values onto the config's own labels, choices and
scales, place quoted spans on the task text (:mod:`backend.llm.alignment`), then check the
draft with :func:`backend.results.build_results`. What was repaired, dropped, clamped or is
missing is counted in ``Draft.info``; nothing is invented (a line without a verdict stays
without one, for the annotator).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from label_studio_sdk.label_interface import LabelInterface

from judgelab.backend.draft import Draft, SpanDraft
from judgelab.backend.llm.alignment import align_spans
from judgelab.backend.llm.answers import extract_json, parse_json_answer, parse_rating, parse_span_lines, resolve_label
from judgelab.backend.llm.contracts import MATCH_KINDS, LLMTask, ParsedAnswer, RawSpan
from judgelab.backend.llm.prompting import PromptError, PromptTemplate, find_template, load_template, short_hash
from judgelab.backend.results import build_results
from judgelab.configs.label_config import Control, LabelConfig, parse_label_config
from judgelab.configs.schema import Schema
from judgelab.configs.story_lines import story_lines, task_alternates

log = logging.getLogger(__name__)

__all__ = ["TASKS", "GenericTask", "PromptError", "SchemaTask", "register_task", "task_for"]

OUTPUT_FORMATS = ("json", "span_lines")
MAX_PROBLEMS_KEPT = 20  # repair/drop messages kept in Draft.info


# --------------------------------------------------------------------------------------------
# registry


TASKS: dict[str, type[SchemaTask]] = {}


def register_task(name: str) -> Callable[[type[SchemaTask]], type[SchemaTask]]:
    """Class decorator: the task used for the schema called ``name``."""

    def decorate(cls: type[SchemaTask]) -> type[SchemaTask]:
        cls.name = name
        TASKS[name] = cls
        return cls

    return decorate


def task_for(schema: Schema | None, label_config_xml: str, variant: str | None = None) -> LLMTask:
    """The task for a project: the schema's registered task, else the generic one.

    ``variant`` picks a prompt variant (hotel_spans: ``"main"`` or ``"less_strict"``); by
    default the schema's ``prompt.prompt_variant``. Raises :class:`PromptError` when a
    template is missing or a variant is unknown, and ``LabelConfigError`` for a bad config.
    """
    cls = TASKS.get(schema.name) if schema is not None else None
    if cls is None:
        return GenericTask(schema, label_config_xml, variant)
    return cls(schema, label_config_xml, variant)


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


# --------------------------------------------------------------------------------------------
# 000 summary_flaws: the few-shot flaw prompt, span lines


@register_task("summary_flaws")
class SummaryFlawsTask(SchemaTask):
    """Seed 000's few-shot prompt; ``Span N: <text> (Label: X)`` lines or ``None identified``."""

    TASK_VERSION = "1"
    DEFAULT_OUTPUT = "span_lines"
    FALLBACK_LABEL = "Other"

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

    def build(self, answer: ParsedAnswer, data: dict[str, Any], tally: _Tally) -> Draft:
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
            for s in _align(summary, raw, overlap, tally):
                draft.spans.append(SpanDraft(self.span_control, s.start, s.end, str(s.label), note=s.reason))
        elif raw:
            tally.counts["no_summary_text"] += 1
        if answer.none_identified and not answer.spans:
            empty = self.schema.meta.get("empty_answer") or {}
            draft.choices[str(empty["control"])] = [str(empty["value"])]
        return draft


# --------------------------------------------------------------------------------------------
# 004 hotel_spans: factgenie JSON annotations (+ impression)


@register_task("hotel_spans")
class HotelSpansTask(SchemaTask):
    """Seed 004's main prompt (or the less-strict variant); JSON ``annotations`` + ``impression``."""

    TASK_VERSION = "1"
    #: The names the prompt's list uses, mapped to the config's labels.
    PROMPT_NAMES = {"Not checkable": "Not Checkable", "Incorrect fact": "Incorrect", "Misleading": "Misleading"}
    DEFAULT_TYPES = {0: "Not Checkable", 1: "Misleading", 2: "Incorrect"}

    def variables(self, data: dict[str, Any]) -> dict[str, Any]:
        values = super().variables(data)
        values["data"] = data.get("descriptions", "")
        values["text"] = data.get("summary", "")
        return values

    def output_schema(self) -> dict[str, Any] | None:
        low, high = _scale(self.control("impression"), (1, 7))
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
                "impression": {"type": "integer", "minimum": low, "maximum": high},
            },
            "required": ["annotations", "impression"],
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

    def build(self, answer: ParsedAnswer, data: dict[str, Any], tally: _Tally) -> Draft:
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
            for s in _align(summary, raw, overlap, tally):
                draft.spans.append(SpanDraft(self.span_control, s.start, s.end, str(s.label), note=s.reason))
        elif raw:
            tally.counts["no_summary_text"] += 1
        if answer.none_identified and not answer.spans:
            value = _no_errors_value(data)
            if value is not None:
                draft.choices["no_errors"] = [value]
        found, impression = _lookup(answer.fields, "impression", "overall_impression")
        if found:
            low, high = _scale(self.control("impression"), (1, 7))
            rating, status = parse_rating(impression, low, high)
            tally.rating(status)
            if rating is not None:
                draft.ratings["impression"] = rating
        return draft


def _no_errors_value(data: dict[str, Any]) -> str | None:
    options = data.get("no_errors_options")
    if isinstance(options, list) and options:
        first = options[0]
        value = first.get("value") if isinstance(first, dict) else first
        if isinstance(value, str) and value.strip():
            return value
    return None


# --------------------------------------------------------------------------------------------
# 001 augmentation_quality: SP / SC / notes


@register_task("augmentation_quality")
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
        for name in ("SP", "SC"):
            low, high = _scale(self.control(name), (1, 3))
            props[name] = {"type": "integer", "minimum": low, "maximum": high}
        props["notes"] = {"type": "string"}
        return {"type": "object", "properties": props, "required": ["SP", "SC"]}

    def build(self, answer: ParsedAnswer, data: dict[str, Any], tally: _Tally) -> Draft:
        tally.answer(answer)
        draft = Draft()
        for name in ("SP", "SC"):
            found, value = _lookup(answer.fields, name)
            if found:
                self.choice_from_rating(draft, name, value, tally, (1, 3))
            else:
                tally.counts["missing_ratings"] += 1
        found, notes = _lookup(answer.fields, "notes", "note", "reason", "explanation")
        text = _text(notes) if found else None
        if text:
            draft.texts["notes"] = text
        return draft


# --------------------------------------------------------------------------------------------
# 003 likert_rubric_es: five criteria, 1-5


@register_task("likert_rubric_es")
class LikertRubricTask(SchemaTask):
    TASK_VERSION = "1"
    CRITERIA = ("Coherence", "Consistency", "Fluency", "Relevance", "5W")
    SPANISH = {
        "Coherence": ("Coherencia",),
        "Consistency": ("Consistencia",),
        "Fluency": ("Fluidez",),
        "Relevance": ("Relevancia",),
        "5W": ("5 W", "cinco W"),
    }

    def output_schema(self) -> dict[str, Any] | None:
        props = {}
        for name in self.CRITERIA:
            low, high = _scale(self.control(name), (1, 5))
            props[name] = {"type": "integer", "minimum": low, "maximum": high}
        return {"type": "object", "properties": props, "required": list(self.CRITERIA)}

    def build(self, answer: ParsedAnswer, data: dict[str, Any], tally: _Tally) -> Draft:
        tally.answer(answer)
        draft = Draft()
        for name in self.CRITERIA:
            found, value = _lookup(answer.fields, name, *self.SPANISH[name])
            if found:
                self.choice_from_rating(draft, name, value, tally, (1, 5))
            else:
                tally.counts["missing_ratings"] += 1
        return draft


# --------------------------------------------------------------------------------------------
# 002 story_consistency: verdict per line, swaps, ambiguous portions

VERDICTS = ("Consistent", "Inconsistent", "N/A, just commentary")


def verdict_of(value: Any) -> str | None:
    """``Consistent`` / ``Inconsistent`` / ``N/A, just commentary`` from the ways models say it.

    >>> [verdict_of(v) for v in ("yes", "NO", True, "not consistent", "N/A", "commentary", "maybe")]
    ['Consistent', 'Inconsistent', 'Consistent', 'Inconsistent', 'N/A, just commentary', 'N/A, just commentary', None]
    """
    if isinstance(value, bool):
        return "Consistent" if value else "Inconsistent"
    if not isinstance(value, str):
        return None
    words = re.sub(r"[^a-z/]+", " ", value.casefold()).split()
    if not words:
        return None
    phrase = " ".join(words)
    if words[0] in ("n/a", "na", "n/a,") or phrase.startswith("not applicable") or "commentary" in words:
        return "N/A, just commentary"
    if words[0] in ("inconsistent", "no", "false", "incorrect", "unsupported") or phrase.startswith("not consistent"):
        return "Inconsistent"
    if words[0] in ("consistent", "yes", "true", "correct", "supported"):
        return "Consistent"
    return None


def yes_no_of(value: Any) -> str | None:
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, str):
        words = re.sub(r"[^a-z]+", " ", value.casefold()).split()
        if words and words[0] in ("yes", "y", "true", "swap"):
            return "Yes"
        if words and words[0] in ("no", "n", "false", "keep"):
            return "No"
    return None


@register_task("story_consistency")
class StoryConsistencyTask(SchemaTask):
    """Seed 002's three formats. Lines and alternates are numbered from 1 in the prompt."""

    TASK_VERSION = "1"

    def variables(self, data: dict[str, Any]) -> dict[str, Any]:
        values = super().variables(data)
        lines = story_lines(data.get("lines"))
        alternates = task_alternates(data)
        values["numbered_lines"] = "\n".join(f"Line {i + 1}: {line.get('text', '')}" for i, line in enumerate(lines))
        values["line_count"] = len(lines)
        if alternates:
            rows = []
            for k, alt in enumerate(alternates):
                line_no = alt.get("line")
                where = f" (summary line {line_no + 1})" if isinstance(line_no, int) else ""
                rows.append(
                    f'Alternate {k + 1}{where}: line "{alt.get("text", "")}" -> alternate "{alt.get("alternate", "")}"'
                )
            values["alternates"] = "\n".join(rows)
        else:
            values["alternates"] = '(none for this summary: give an empty "swaps" list)'
        return values

    def output_schema(self) -> dict[str, Any] | None:
        return {
            "type": "object",
            "properties": {
                "lines": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "line": {"type": "integer", "minimum": 1},
                            "verdict": {"type": "string", "enum": list(VERDICTS)},
                            "explanation": {"type": "string"},
                        },
                        "required": ["line", "verdict"],
                    },
                },
                "swaps": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "alternate": {"type": "integer", "minimum": 1},
                            "swap": {"type": "string", "enum": ["Yes", "No"]},
                            "explanation": {"type": "string"},
                        },
                        "required": ["alternate", "swap", "explanation"],
                    },
                },
                "ambiguous": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "line": {"type": "integer", "minimum": 1},
                            "text": {"type": "string"},
                            "reason": {"type": "string"},
                        },
                        "required": ["line", "text", "reason"],
                    },
                },
            },
            "required": ["lines", "swaps"],
        }

    @staticmethod
    def _entries(value: Any, number_key: str) -> list[tuple[Any, Any]]:
        """``(number, entry)`` pairs from a list of objects, a list of verdicts, or a mapping."""
        if isinstance(value, dict):
            return [(k, v) for k, v in value.items()]
        if not isinstance(value, list):
            return []
        out = []
        for pos, item in enumerate(value):
            if isinstance(item, dict):
                found, number = _lookup(item, number_key, "index", "id")
                out.append((number if found else pos + 1, item))
            else:
                out.append((pos + 1, item))
        return out

    def build(self, answer: ParsedAnswer, data: dict[str, Any], tally: _Tally) -> Draft:
        tally.answer(answer)
        draft = Draft()
        lines = story_lines(data.get("lines"))
        alternates = task_alternates(data)
        n = len(lines)

        _, given_lines = _lookup(answer.fields, "lines", "verdicts")
        for number, entry in self._entries(given_lines, "line"):
            i = _index(number, n)
            if i is None:
                tally.counts["dropped_items"] += 1
                tally.problems.append(f"verdict for line {number!r}: no such line: dropped")
                continue
            if f"verdict_{i}" in draft.choices:
                tally.counts["duplicate_verdicts"] += 1
                continue
            if isinstance(entry, dict):
                _, raw_verdict = _lookup(entry, "verdict", "consistent", "answer", "label")
                _, explanation = _lookup(entry, "explanation", "reason", "note")
            else:
                raw_verdict, explanation = entry, None
            verdict = verdict_of(raw_verdict)
            if verdict is None:
                tally.counts["unreadable_verdicts"] += 1
                tally.problems.append(f"line {i + 1}: verdict {raw_verdict!r} not understood")
                continue
            draft.choices[f"verdict_{i}"] = [verdict]
            text = _text(explanation)
            if verdict == "Inconsistent":
                if text:
                    draft.texts[f"explanation_{i}"] = text
                else:
                    tally.counts["missing_explanations"] += 1
        missing = [i for i in range(n) if f"verdict_{i}" not in draft.choices]
        if missing:
            tally.counts["missing_verdicts"] = len(missing)
            tally.problems.append("no verdict for line(s) " + ", ".join(str(i + 1) for i in missing))

        _, given_swaps = _lookup(answer.fields, "swaps", "swap", "alternates")
        line_to_alt = {a.get("line"): k for k, a in enumerate(alternates) if isinstance(a.get("line"), int)}
        for number, entry in self._entries(given_swaps, "alternate"):
            k = _index(number, len(alternates))
            has_alternate = isinstance(entry, dict) and _lookup(entry, "alternate")[0]
            found, line_no = _lookup(entry, "line") if isinstance(entry, dict) else (False, None)
            if found and not has_alternate:  # {"line": 4, "swap": "Yes"}: the alternate of line 4
                li = _index(line_no, n)
                k = line_to_alt.get(li) if li is not None else None
            if k is None:
                tally.counts["dropped_items"] += 1
                continue
            if isinstance(entry, dict):
                _, raw_swap = _lookup(entry, "swap", "answer", "choice")
                _, explanation = _lookup(entry, "explanation", "reason", "note")
            else:
                raw_swap, explanation = entry, None
            choice = yes_no_of(raw_swap)
            if choice is None or f"swap_{k}" in draft.choices:
                tally.counts["dropped_items"] += 1
                continue
            draft.choices[f"swap_{k}"] = [choice]
            text = _text(explanation)
            if text:
                draft.texts[f"swap_explanation_{k}"] = text
        missing_swaps = len(alternates) - sum(1 for k in range(len(alternates)) if f"swap_{k}" in draft.choices)
        if missing_swaps:
            tally.counts["missing_swaps"] = missing_swaps

        _, given_ambiguous = _lookup(answer.fields, "ambiguous", "ambiguities")
        by_line: dict[int, list[Any]] = {}
        for number, entry in self._entries(given_ambiguous, "line"):
            i = _index(number, n)
            if i is None or not isinstance(entry, dict):
                tally.counts["dropped_items"] += 1
                continue
            by_line.setdefault(i, []).append({k: v for k, v in entry.items() if k not in ("line", "label")})
        for i, items in sorted(by_line.items()):
            text = lines[i].get("text")
            if not isinstance(text, str):
                continue
            for s in _align(text, _raw_spans(items, tally), "allow", tally):
                draft.spans.append(SpanDraft(f"ambiguous_{i}", s.start, s.end, "Ambiguous", note=s.reason))
        return draft


# --------------------------------------------------------------------------------------------
# generic task: any config made of the supported tags

GENERIC_TEMPLATE = """You are an expert annotator. Annotate the task below as a careful human annotator
would, following the instructions of each question.

## Task texts
{texts}

## Questions
{controls}

## Answer
Answer with one JSON object only, with these keys (leave out a key you cannot answer):
{answer_format}"""

_GENERIC_TAGS = ("Labels", "Choices", "Rating", "Number", "TextArea")


class GenericTask:
    """A task derived from the label config itself (custom projects, or a schema without a task).

    Objects: each ``Text`` (and ``HyperText``/``Paragraphs``) object's resolved text is shown with
    its name. Controls: ``Labels`` over a text -> ``"spans": [{"control", "text", "label"}]``;
    ``Choices`` -> one value (or a list when ``choice="multiple"``); ``Rating`` -> 1..maxRating;
    ``Number`` -> min..max; ``TextArea`` -> free text. Repeater controls are expanded per task.
    The template is ``$JUDGELAB_PROMPTS_DIR/<schema or "custom">/prompt.txt`` or the schema's
    own ``prompt.txt`` when present, else :data:`GENERIC_TEMPLATE`.
    """

    TASK_VERSION = "1"

    def __init__(self, schema: Schema | None, label_config_xml: str, variant: str | None = None):
        self.schema = schema
        self.name = schema.name if schema is not None else "custom"
        self.config = parse_label_config(label_config_xml)
        self.interface = LabelInterface(label_config_xml)
        self.variant = variant or "main"
        self.choice_values: dict[str, dict[str, str]] = {}  # control (template) name -> alias -> value
        for c in self.interface.controls:
            attrs = getattr(c, "labels_attrs", None) or {}
            self.choice_values[c.name] = {
                str(k): str((getattr(v, "attr", None) or {}).get("value", k)) for k, v in attrs.items()
            }
        options = (schema.meta.get("prompt") if schema is not None else None) or {}
        file_name = (
            options if isinstance(options, str) else (options.get("file") if isinstance(options, dict) else None)
        )
        found = find_template(self.name, str(file_name or "prompt.txt"), schema.folder if schema is not None else None)
        self.template = found or PromptTemplate(GENERIC_TEMPLATE, None)

    # what the config asks ------------------------------------------------------------------
    def _controls(self, data: dict[str, Any] | None) -> list[Control]:
        if data is None:
            controls = [c for c in self.config.controls if not c.flag]
        else:
            controls = list(self.config.expanded_controls(data).values())
        return [c for c in controls if c.tag in _GENERIC_TAGS and not (c.tag == "TextArea" and c.per_region)]

    def _choice_options(self, control: Control, data: dict[str, Any] | None) -> list[tuple[str, str]]:
        """``(what to answer, what it means)`` per choice: alias and value when they differ."""
        if control.dynamic:
            options = (data or {}).get(control.dynamic)
            if not isinstance(options, list):
                return []
            values = [str(o.get("value")) if isinstance(o, dict) else str(o) for o in options]
            return [(v, v) for v in values]
        values = self.choice_values.get(self._template_name(control), {})
        return [(label, values.get(label, label)) for label in control.labels]

    def _template_name(self, control: Control) -> str:
        """The config's name for a control (``verdict_{{idx}}`` for an expanded ``verdict_3``)."""
        if control.name in self.choice_values:
            return control.name
        for c in self.config.controls:
            if c.flag:
                pattern = re.escape(c.name).replace(re.escape("{{" + c.flag + "}}"), r"\d+")
                if re.fullmatch(pattern, control.name):
                    return c.name
        return control.name

    def _multiple(self, control: Control) -> bool:
        return control.attrs.get("choice", "single") == "multiple"

    def _rating_max(self, control: Control) -> int:
        try:
            return max(1, int(control.attrs.get("maxRating", "5")))
        except ValueError:
            return 5

    def _number_range(self, control: Control) -> tuple[float | None, float | None]:
        def num(key: str) -> float | None:
            try:
                return float(control.attrs[key])
            except (KeyError, ValueError):
                return None

        return num("min"), num("max")

    # LLMTask protocol ------------------------------------------------------------------------
    @property
    def version(self) -> str:
        described = [self._describe(c, None) for c in self._controls(None)]
        return short_hash(self.name, self.TASK_VERSION, self.template.text, described, self.output_schema())

    def messages(self, data: dict[str, Any]) -> list[dict[str, str]]:
        data = data if isinstance(data, dict) else {}
        values: dict[str, Any] = {k: v for k, v in data.items() if isinstance(k, str)}
        controls = self._controls(data)
        values["texts"] = "\n\n".join(f"### {name}\n{text}" for name, text in self._texts(data, controls))
        values["controls"] = "\n".join(self._describe(c, data) for c in controls)
        values["answer_format"] = self._answer_format(controls, data)
        return [{"role": "user", "content": self.template.render(values)}]

    def response_format(self) -> dict[str, Any] | None:
        return _json_response_format(f"judgelab_{re.sub(r'[^A-Za-z0-9_-]', '_', self.name)}", self.output_schema())

    def to_draft(self, answer_text: str, data: dict[str, Any]) -> Draft:
        data = data if isinstance(data, dict) else {}
        tally = _Tally()
        try:
            draft = self._build(answer_text, data, tally)
        except Exception as exc:  # noqa: BLE001 - never raise from to_draft
            log.exception("%s: could not turn an answer into a draft", self.name)
            return Draft(info={"error": f"{type(exc).__name__}: {exc}"})
        draft.info.update(tally.info())
        return _checked(draft, self.config, data)

    # prompt pieces ---------------------------------------------------------------------------
    def _texts(self, data: dict[str, Any], controls: list[Control]) -> list[tuple[str, str]]:
        names = [o.name for o in self.config.objects.values() if not o.flag]
        names += [c.to_name for c in controls if c.to_name not in names]
        out = []
        for name in names:
            text = self.config.object_text(name, data)
            if text is not None and text.strip():
                out.append((name, text))
        return out

    def _describe(self, control: Control, data: dict[str, Any] | None) -> str:
        head = f'- "{control.name}" ({control.tag} about "{control.to_name}")'
        if control.tag == "Labels":
            labels = ", ".join(f'"{v}"' for v in control.labels)
            return f"{head}: mark the exact passages of {control.to_name} that deserve one of the labels {labels}."
        if control.tag == "Choices":
            options = self._choice_options(control, data)
            shown = ", ".join(f'"{a}"' if a == v else f'"{a}" ({v})' for a, v in options)
            many = "one or more of" if self._multiple(control) else "exactly one of"
            return f"{head}: choose {many} {shown}."
        if control.tag == "Rating":
            return f"{head}: a rating from 1 to {self._rating_max(control)}."
        if control.tag == "Number":
            low, high = self._number_range(control)
            bounds = " ".join(
                p
                for p in (
                    f"at least {low:g}" if low is not None else "",
                    f"at most {high:g}" if high is not None else "",
                )
                if p
            )
            return f"{head}: a number{(' ' + bounds) if bounds else ''}."
        return f"{head}: free text."

    def _answer_format(self, controls: list[Control], data: dict[str, Any]) -> str:
        example: dict[str, Any] = {}
        for c in controls:
            if c.tag == "Choices":
                options = [a for a, _ in self._choice_options(c, data)]
                first = options[0] if options else "..."
                example[c.name] = [first] if self._multiple(c) else first
            elif c.tag == "Rating":
                example[c.name] = self._rating_max(c)
            elif c.tag == "Number":
                low, _high = self._number_range(c)
                example[c.name] = low if low is not None else 0
            elif c.tag == "TextArea":
                example[c.name] = "..."
        span_controls = [c for c in controls if c.tag == "Labels"]
        lines = [json.dumps(example, ensure_ascii=False)] if example else []
        if span_controls:
            c = span_controls[0]
            item = {
                "control": c.name,
                "text": f"<exact passage copied from {c.to_name}>",
                "label": c.labels[0] if c.labels else "...",
            }
            noted = {x.to_name for x in self.config.controls if x.tag == "TextArea" and x.per_region}
            if any(s.to_name in noted for s in span_controls):
                item["reason"] = "<why this passage gets this label>"
            lines.append(
                'and a key "spans" with every marked passage (an empty list if none): '
                + json.dumps({"spans": [item]}, ensure_ascii=False)
            )
            lines.append(
                'Copy each passage exactly; if it occurs more than once in its text, add "occurrence_index" '
                "(0 for the first occurrence)."
            )
        return "\n".join(lines) if lines else "{}"

    def output_schema(self) -> dict[str, Any] | None:
        """Per control, ``LabelInterface.to_json_schema()`` adapted to answers by text: ratings
        from 1, text areas as one string, spans by quoted text instead of offsets."""
        try:
            base = self.interface.to_json_schema().get("properties", {})
        except Exception:  # noqa: BLE001 - odd configs: no structured output, prompt only
            return None
        props: dict[str, Any] = {}
        span_controls = []
        for c in self._controls(None):
            if c.tag == "Labels":
                span_controls.append(c)
                continue
            schema = dict(base.get(c.name) or {})
            if c.tag == "Rating":
                schema = {"type": "integer", "minimum": 1, "maximum": self._rating_max(c)}
            elif c.tag == "TextArea":
                schema = {"type": "string"}
            elif c.tag == "Choices" and (c.dynamic or not schema):
                schema = {"type": "array", "items": {"type": "string"}} if self._multiple(c) else {"type": "string"}
            schema.pop("description", None)
            props[c.name] = schema
        if span_controls:
            labels = sorted({label for c in span_controls for label in c.labels})
            props["spans"] = {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "control": {"type": "string", "enum": [c.name for c in span_controls]},
                        "text": {"type": "string"},
                        "label": {"type": "string", "enum": labels} if labels else {"type": "string"},
                        "occurrence_index": {"type": "integer", "minimum": 0},
                    },
                    "required": ["control", "text", "label"],
                },
            }
        if not props:
            return None
        return {"type": "object", "properties": props}

    # parsing ----------------------------------------------------------------------------------
    def _build(self, answer_text: str, data: dict[str, Any], tally: _Tally) -> Draft:
        value, problems = extract_json(answer_text)
        tally.problems.extend(problems)
        draft = Draft()
        if isinstance(value, list):  # a bare list: spans only
            value = {"spans": value}
        if not isinstance(value, dict):
            tally.counts["no_json"] += 1
            return draft
        controls = self._controls(data)
        for c in controls:
            if c.tag == "Labels":
                continue
            found, given = _lookup(value, c.name)
            if not found or given is None:
                continue
            self._set_value(draft, c, given, data, tally)
        self._set_spans(draft, [c for c in controls if c.tag == "Labels"], value, data, tally)
        return draft

    def _set_value(self, draft: Draft, c: Control, given: Any, data: dict[str, Any], tally: _Tally) -> None:
        if c.tag == "Choices":
            options = self._choice_options(c, data)
            answers = [a for a, _ in options]
            by_value = {v: a for a, v in options}
            chosen = []
            for item in given if isinstance(given, list) else [given]:
                item = str(item) if isinstance(item, int | float) and not isinstance(item, bool) else item
                label = resolve_label(item, answers) or by_value.get(resolve_label(item, list(by_value)) or "")
                if label is None:
                    tally.counts["unknown_choice"] += 1
                elif label not in chosen:
                    chosen.append(label)
            if chosen:
                draft.choices[c.name] = chosen if self._multiple(c) else chosen[:1]
        elif c.tag == "Rating":
            rating, status = parse_rating(given, 1, self._rating_max(c))
            tally.rating(status)
            if rating is not None:
                draft.ratings[c.name] = rating
        elif c.tag == "Number":
            number = given if isinstance(given, int | float) and not isinstance(given, bool) else None
            if isinstance(given, str):
                m = re.search(r"-?\d+(?:\.\d+)?", given)
                number = float(m.group()) if m else None
            low, high = self._number_range(c)
            if number is None or not math.isfinite(number):
                tally.counts["dropped_numbers"] += 1
            elif (low is not None and number < low) or (high is not None and number > high):
                tally.counts["dropped_numbers"] += 1
            else:
                draft.numbers[c.name] = number
        elif c.tag == "TextArea":
            text = _text(given)
            if text:
                draft.texts[c.name] = text

    def _set_spans(
        self, draft: Draft, span_controls: list[Control], value: dict[str, Any], data: dict[str, Any], tally: _Tally
    ) -> None:
        if not span_controls:
            return
        items: list[tuple[Control | None, Any]] = []
        _, given = _lookup(value, "spans", "annotations")
        for item in given if isinstance(given, list) else []:
            items.append((self._span_control(item, span_controls), item))
        for c in span_controls:  # ``{"ner": [{"text", "label"}]}``, the to_json_schema shape
            found, per_control = _lookup(value, c.name)
            if found and isinstance(per_control, list):
                items.extend((c, item) for item in per_control)
        groups: dict[str, list[Any]] = {}
        for control, item in items:
            if control is None or not isinstance(item, dict):
                tally.counts["dropped_items"] += 1
                continue
            clean = {k: v for k, v in item.items() if k not in ("control", "labels", "start", "end")}
            if "label" not in clean and isinstance(item.get("labels"), list) and item["labels"]:
                clean["label"] = item["labels"][0]
            groups.setdefault(control.name, []).append(clean)
        by_name = {c.name: c for c in span_controls}
        for name, group in groups.items():
            control = by_name[name]
            text = self.config.object_text(control.to_name, data)
            raw = []
            for span in _raw_spans(group, tally):
                label = resolve_label(span.label, list(control.labels))
                if label is None:
                    tally.counts["unknown_label"] += 1
                    continue
                raw.append(RawSpan(span.text, label, span.reason, span.occurrence_index))
            if text is None:
                tally.counts["no_target_text"] += len(raw)
                continue
            for s in _align(text, raw, "allow", tally):
                draft.spans.append(SpanDraft(name, s.start, s.end, str(s.label), note=s.reason))

    @staticmethod
    def _span_control(item: Any, span_controls: list[Control]) -> Control | None:
        """The Labels control a span belongs to: named, else the only one with its label."""
        if not isinstance(item, dict):
            return None
        named = item.get("control") or item.get("from_name")
        for c in span_controls:
            if isinstance(named, str) and named.strip().casefold() == c.name.casefold():
                return c
        if len(span_controls) == 1:
            return span_controls[0]
        label = item.get("label")
        having = [c for c in span_controls if resolve_label(label, list(c.labels)) is not None]
        return having[0] if len(having) == 1 else None


def registered() -> Iterable[str]:
    """Names of the schemas that have their own task."""
    return sorted(TASKS)
