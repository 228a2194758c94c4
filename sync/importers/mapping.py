"""``--map schema_field=column``: a column being a header name or a dotted path ``a.b.c`` into
nested JSON."""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from judgelab.configs.schema import Schema
from judgelab.sync.client import SyncError

_MISSING = object()


def get_path(record: Any, path: str) -> Any:
    """The value at ``path`` in a record: a key as-is first, then a dotted path (``a.b.0.c``).

    >>> get_path({"meta": {"src": {"site": "booking"}}}, "meta.src.site")
    'booking'
    >>> get_path({"a.b": 1}, "a.b")
    1
    """
    if isinstance(record, Mapping) and path in record:
        return record[path]
    value: Any = record
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def parse_mapping(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``["summary=output.text", "post=input"]`` -> ``{"summary": "output.text", "post": "input"}``."""
    mapping: dict[str, str] = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise SyncError(f"--map {pair!r}: expected schema_field=column")
        mapping[field.strip()] = column.strip()
    return mapping


def _columns(record: Any, prefix: str = "") -> list[str]:
    """Column names and dotted paths of a record (for 'did you mean' messages)."""
    if not isinstance(record, Mapping):
        return []
    names = []
    for key, value in record.items():
        names.append(f"{prefix}{key}")
        if isinstance(value, Mapping):
            names += _columns(value, f"{prefix}{key}.")
    return names


def check_mapped_fields(mapping: Mapping[str, str], schema: Schema) -> None:
    """Raise when ``--map`` names a field the schema does not have."""
    unknown_fields = [f for f in mapping if f not in schema.data_fields and f != "id"]
    if unknown_fields:
        raise SyncError(
            f"--map names field(s) {', '.join(unknown_fields)} that schema {schema.name} does not have "
            f"(its fields: {', '.join(schema.data_fields)})"
        )


def unmapped_columns_error(name: str, missing: list[str], columns: list[str]) -> SyncError:
    """``--map`` named columns the file does not have."""
    return SyncError(f"{name}: mapped column(s) not found: {', '.join(missing)} (columns: {_shown(columns)})")


def is_present(record: Any, column: str) -> bool:
    """Whether ``record`` has ``column`` (a name or a dotted path), in itself or in its ``data``."""
    if get_path(record, column) is not _MISSING:
        return True
    return (
        isinstance(record, Mapping)
        and isinstance(record.get("data"), Mapping)
        and (get_path(record["data"], column) is not _MISSING)
    )


def record_columns(record: Any) -> list[str]:
    """The columns of a record as a user sees them (the fields of its ``data`` when it has one)."""
    if isinstance(record, Mapping) and isinstance(record.get("data"), Mapping):
        record = record["data"]
    return [str(key) for key in record] if isinstance(record, Mapping) else []


def required_fields(schema: Schema) -> list[str]:
    """The schema's fields a task must have (required and without a default)."""
    defaults = schema.meta.get("defaults") or {}
    return [name for name, spec in schema.data_fields.items() if spec.get("required") and name not in defaults]


def _words(text: Any) -> list[str]:
    plain = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode().lower()
    return re.findall(r"[a-z0-9]+", plain)


def _likeness(field: str, spec: Mapping[str, Any], column: str) -> float:
    """How much ``column`` looks like the schema's ``field``: its name in another case or
    accent, a word of the field's description (the schema's own language: ``texto`` for
    "Texto original de la noticia"), or a close spelling (``modelo`` for ``model``)."""
    name, wanted = "".join(_words(column)), "".join(_words(field))
    if not name:
        return 0.0
    if name == wanted:
        return 1.0
    described = {w for w in _words(spec.get("description", "")) if len(w) >= 4}
    if name in described:
        return 0.9
    if any(len(w) >= 4 and w in described for w in _words(column)):
        return 0.8
    close = difflib.SequenceMatcher(None, name, wanted).ratio()
    return close * 0.95 if close >= 0.75 else 0.0


def suggest_mapping(missing: list[str], columns: list[str], schema: Schema) -> dict[str, str]:
    """A ``--map`` suggestion (field -> column) for the required fields a file lacks."""
    free = [c for c in columns if c not in schema.data_fields and c != "id"]
    scored = sorted(
        ((_likeness(f, schema.data_fields.get(f) or {}, c), f, c) for f in missing for c in free),
        key=lambda item: -item[0],
    )
    chosen: dict[str, str] = {}
    for score, field, column in scored:
        if score >= 0.6 and field not in chosen and column not in chosen.values():
            chosen[field] = column
    left = [f for f in missing if f not in chosen]
    unused = [c for c in free if c not in chosen.values()]
    if len(left) == 1 and len(unused) == 1:  # one field without a column, one column without a field
        chosen[left[0]] = unused[0]
    return {field: chosen[field] for field in missing if field in chosen}


def _shown(columns: list[str], limit: int = 30) -> str:
    more = f", ... ({len(columns)} in all)" if len(columns) > limit else ""
    return ", ".join(columns[:limit]) + more


def missing_columns_error(name: str, missing: list[str], columns: list[str], schema: Schema) -> SyncError:
    """The file has no column for required fields: its columns and a ``--map`` suggestion."""
    suggestion = suggest_mapping(missing, columns, schema)
    if suggestion:
        hint = "map them with " + " ".join(f"--map {field}={column}" for field, column in suggestion.items())
    else:
        hint = "name the columns that hold them with --map FIELD=COLUMN"
    return SyncError(
        f"{name}: no column for the required field(s) {', '.join(missing)} of schema {schema.name} "
        f"(the file's columns: {_shown(columns) or 'none'}); {hint}; nothing was imported"
    )


def apply_mapping(record: Any, mapping: Mapping[str, str]) -> Any:
    """The record with each mapped field set from its column; unmapped keys are kept as they are."""
    if not mapping or not isinstance(record, Mapping):
        return record
    data = dict(record.get("data")) if isinstance(record.get("data"), Mapping) else dict(record)
    for field, column in mapping.items():
        value = get_path(record, column)
        if value is _MISSING and isinstance(record.get("data"), Mapping):
            value = get_path(record["data"], column)
        data[field] = None if value is _MISSING else value
    if isinstance(record.get("data"), Mapping):
        return {**record, "data": data}
    return data
