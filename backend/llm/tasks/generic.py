"""The generic task: any label config made of the supported tags (Labels, Choices, Rating, Number, TextArea)."""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any

from judgelab.backend.draft import Draft, SpanDraft
from judgelab.backend.llm.answers import extract_json, parse_rating, resolve_label
from judgelab.backend.llm.contracts import RawSpan
from judgelab.backend.llm.prompting import PromptTemplate, find_template, short_hash
from judgelab.backend.llm.tasks.api import Tally, align, checked, free_text, json_response_format, lookup, raw_spans
from judgelab.configs.label_config import Control, parse_with_interface
from judgelab.configs.schema import Schema

log = logging.getLogger(__name__)

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
        # what the task needs of the SDK's parse is read here and the parse dropped: kept for a
        # config of many labels, it would take about 30 times the config's size
        self.config, interface = parse_with_interface(label_config_xml)
        self.variant = variant or "main"
        # control (template) name -> alias -> value, for the aliases whose value differs
        self.choice_values: dict[str, dict[str, str]] = {}
        for c in interface.controls:
            attrs = getattr(c, "labels_attrs", None) or {}
            aliases = ((str(k), str((getattr(v, "attr", None) or {}).get("value", k))) for k, v in attrs.items())
            self.choice_values[c.name] = {alias: value for alias, value in aliases if alias != value}
        try:
            properties = interface.to_json_schema().get("properties", {})
            self._json_properties: dict[str, Any] | None = {
                c.name: properties[c.name] for c in self.config.controls if c.tag != "Labels" and c.name in properties
            }
        except Exception:  # noqa: BLE001 - odd configs: no structured output, prompt only
            self._json_properties = None
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
        return json_response_format(f"judgelab_{re.sub(r'[^A-Za-z0-9_-]', '_', self.name)}", self.output_schema())

    def to_draft(self, answer_text: str, data: dict[str, Any]) -> Draft:
        data = data if isinstance(data, dict) else {}
        tally = Tally()
        try:
            draft = self._build(answer_text, data, tally)
        except Exception as exc:  # noqa: BLE001 - never raise from to_draft
            log.exception("%s: could not turn an answer into a draft", self.name)
            return Draft(info={"error": f"{type(exc).__name__}: {exc}"})
        draft.info.update(tally.info())
        return checked(draft, self.config, data)

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
        base = self._json_properties
        if base is None:
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
    def _build(self, answer_text: str, data: dict[str, Any], tally: Tally) -> Draft:
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
            found, given = lookup(value, c.name)
            if not found or given is None:
                continue
            self._set_value(draft, c, given, data, tally)
        self._set_spans(draft, [c for c in controls if c.tag == "Labels"], value, data, tally)
        return draft

    def _set_value(self, draft: Draft, c: Control, given: Any, data: dict[str, Any], tally: Tally) -> None:
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
            text = free_text(given)
            if text:
                draft.texts[c.name] = text

    def _set_spans(
        self, draft: Draft, span_controls: list[Control], value: dict[str, Any], data: dict[str, Any], tally: Tally
    ) -> None:
        if not span_controls:
            return
        items: list[tuple[Control | None, Any]] = []
        lists = []
        _, given = lookup(value, "spans", "annotations")
        for item in given if isinstance(given, list) else []:
            items.append((self._span_control(item, span_controls), item))
        lists.append(given)
        for c in span_controls:  # ``{"ner": [{"text", "label"}]}``, the to_json_schema shape
            found, per_control = lookup(value, c.name)
            if found and isinstance(per_control, list):
                items.extend((c, item) for item in per_control)
            lists.append(per_control if found else None)
        if not items and any(isinstance(given_list, list) for given_list in lists):
            tally.counts["none_identified"] = 1  # an explicitly empty span list
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
            for span in raw_spans(group, tally):
                label = resolve_label(span.label, list(control.labels))
                if label is None:
                    tally.counts["unknown_label"] += 1
                    continue
                raw.append(RawSpan(span.text, label, span.reason, span.occurrence_index))
            if text is None:
                tally.counts["no_target_text"] += len(raw)
                continue
            for s in align(text, raw, "allow", tally):
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
