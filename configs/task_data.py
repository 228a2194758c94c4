"""Check and complete a task's data against its schema's ``data_fields``.

Used by the importers (so a bad row is refused before anything reaches Label Studio) and by
the backend (so a task imported by other means still gets the derived fields it needs).

Field types in ``schema.yaml``: ``text`` and ``string`` (a string), ``number`` (float),
``integer``, ``lines`` (a list of summary lines, each a string or ``{text, alternate}``).
Derived fields: ``map`` (look a field's value up in a table) and ``select_with`` (the items of a
list field that have a given key, with their index as ``line``).
"""

from __future__ import annotations

import math
from typing import Any

from judgelab.configs.schema import Schema
from judgelab.configs.story_lines import line_text, looks_like_a_list, parse_lines, story_lines


class TaskDataError(ValueError):
    """A task's data does not fit its schema. ``field`` names the offending field."""

    def __init__(self, field: str, message: str):
        super().__init__(f"field {field!r}: {message}")
        self.field = field


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def _coerce(name: str, spec: dict[str, Any], value: Any) -> Any:
    kind = spec.get("type", "string")
    if kind in ("text", "string"):
        if isinstance(value, (dict, list)):
            raise TaskDataError(name, f"expected a string, got {type(value).__name__}")
        return value if isinstance(value, str) else str(value)
    if kind in ("number", "integer"):
        if isinstance(value, bool):
            raise TaskDataError(name, f"expected a {kind}, got a boolean")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise TaskDataError(name, f"expected a {kind}, got {value!r}") from None
        if math.isnan(number) or math.isinf(number):
            raise TaskDataError(name, f"expected a {kind}, got {value!r}")
        if kind == "integer":
            if number != int(number):
                raise TaskDataError(name, f"expected an integer, got {value!r}")
            number = int(number)
        lo, hi = spec.get("min"), spec.get("max")
        if (lo is not None and number < lo) or (hi is not None and number > hi):
            raise TaskDataError(name, f"{number} is outside {lo}..{hi}")
        return number
    if kind == "lines":
        return _coerce_lines(name, value)
    raise TaskDataError(name, f"unknown field type {kind!r} in schema")


def _coerce_lines(name: str, value: Any) -> list[dict[str, str]]:
    items, how = parse_lines(value)
    if items is None and looks_like_a_list(value):
        raise TaskDataError(name, "looks like a JSON list but does not parse")
    if looks_like_a_list(value) and how != "repr":
        raise TaskDataError(name, "looks like a JSON list but does not parse")
    if not items:
        raise TaskDataError(name, "expected a non-empty list of lines")
    for i, item in enumerate(items):
        text = line_text(item)
        if text is None or not text.strip():
            raise TaskDataError(name, f"line {i} has no text")
    return story_lines(items)


def _derive(name: str, rule: dict[str, Any], data: dict[str, Any]) -> Any:
    source = data.get(rule["from"])
    if "map" in rule:
        table = rule["map"]
        if source not in table:
            raise TaskDataError(rule["from"], f"{source!r} is not one of {', '.join(map(str, table))}")
        return table[source]
    if "select_with" in rule:
        key = rule["select_with"]
        return [
            {"line": i, "text": item["text"], key: item[key]}
            for i, item in enumerate(source or [])
            if isinstance(item, dict) and item.get(key)
        ]
    raise TaskDataError(name, "derived field rule needs 'map' or 'select_with'")


def prepare_task_data(schema: Schema, data: dict[str, Any]) -> dict[str, Any]:
    """Return a checked copy of ``data`` with defaults, coerced types and derived fields.

    >>> from judgelab.configs.schema import get_schema
    >>> data = {"descriptions": "Near the sea.", "summary": "By the sea.", "group": "B"}
    >>> out = prepare_task_data(get_schema("hotel_spans"), data)
    >>> out["no_errors_options"]
    [{'value': 'There were no errors in the summary'}]
    """
    if not isinstance(data, dict):
        raise TaskDataError("data", f"expected an object, got {type(data).__name__}")
    out = dict(data)
    for key, value in (schema.meta.get("defaults") or {}).items():
        if _is_missing(out.get(key)):
            out[key] = value
    for name, spec in schema.data_fields.items():
        value = out.get(name)
        if _is_missing(value):
            if spec.get("required"):
                raise TaskDataError(name, "is required but missing or empty")
            if value is None:
                out.pop(name, None)
            continue
        value = _coerce(name, spec, value)
        allowed = spec.get("allowed")
        if allowed is not None and value not in allowed:
            raise TaskDataError(name, f"{value!r} is not one of {', '.join(map(repr, allowed))}")
        out[name] = value
    for name, rule in (schema.meta.get("derived_fields") or {}).items():
        if name not in out or not out[name]:
            out[name] = _derive(name, rule, out)
    return out
