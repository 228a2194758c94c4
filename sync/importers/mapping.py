"""``--map schema_field=column``: a column being a header name or a dotted path ``a.b.c`` into
nested JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgelab.configs.schema import Schema
from judgelab.sync.client import SyncError
from judgelab.sync.importers.records import Record

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


def check_mapping(records: list[Record], mapping: Mapping[str, str], schema: Schema) -> None:
    """Raise when a mapped field is not in the schema or a mapped column is in no record."""
    unknown_fields = [f for f in mapping if f not in schema.data_fields and f != "id"]
    if unknown_fields:
        raise SyncError(
            f"--map names field(s) {', '.join(unknown_fields)} that schema {schema.name} does not have "
            f"(its fields: {', '.join(schema.data_fields)})"
        )
    if not records:
        return
    missing = [
        f"{field}={column}"
        for field, column in mapping.items()
        if all(get_path(record, column) is _MISSING for _, record in records)
    ]
    if missing:
        where, first = records[0]
        available = ", ".join(_columns(first)[:30])
        raise SyncError(
            f"{where.rsplit(' ', 2)[0]}: mapped column(s) not found: {', '.join(missing)} (columns: {available})"
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
