"""Users' files of any shape (CSV, TSV, JSON Lines, JSON) into records, and records into rows.

What :mod:`sync.importers` reads as-is, this module reads with a column mapping
(``--map schema_field=column``, a column being a header name or a dotted path ``a.b.c`` into
nested JSON) and tolerates what real files contain:

- JSON Lines: one object per line; bare ``NaN`` / ``Infinity`` tokens become missing values;
  raw control characters in strings are accepted; a Hugging Face datasets-style line
  ``{"row_idx": 3, "row": {...}}`` (the datasets-server ``/rows`` shape) is unwrapped.
- JSON: a list of objects, one object (one task), an object mapping ids to objects
  (``{"id1": {...}}``: the id becomes ``id`` unless the object has one), or the
  datasets-server answer ``{"rows": [{"row_idx", "row"}, ...]}``.
- CSV / TSV: a header line, then one row per line (quoted values may span lines).

Every record keeps where it came from (``file line N`` / ``file item N``), and
:func:`checked_rows` turns records into :class:`~sync.importers.TaskRow` all or nothing,
or, with ``skip_bad``, skips bad records and counts them (:class:`Rows` ``.skipped``).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgelab.configs.schema import Schema
from judgelab.sync.client import SyncError
from judgelab.sync.importers.rows import MAX_ERRORS_SHOWN, TaskRow, rows_from_records, task_key

Record = tuple[str, Any]  # (where, raw record)
FORMATS = ("auto", "generic", "wide-augmentation", "storysumm", "basse", "hotel")


class Rows(list):
    """A ``list[TaskRow]`` that also says what was left out.

    ``skipped`` holds one message per skipped record (``--skip-bad``) and ``notes`` counts of
    what was not turned into a task on purpose (``{"empty generated cell": 3}``).
    """

    def __init__(self, rows=(), skipped: list[str] | None = None, notes: dict[str, int] | None = None):
        super().__init__(rows)
        self.skipped: list[str] = list(skipped or [])
        self.notes: dict[str, int] = dict(notes or {})

    def summary(self) -> str:
        parts = [f"{len(self)} task(s)"]
        if self.skipped:
            parts.append(f"{len(self.skipped)} bad row(s) skipped")
        parts += [f"{count} {what}" for what, count in self.notes.items() if count]
        return ", ".join(parts)


def _nan_as_none(token: str) -> None:
    return None


def loads_lenient(text: str) -> Any:
    """``json.loads`` accepting raw control characters and bare ``NaN``/``Infinity`` (as ``None``)."""
    return json.loads(text, strict=False, parse_constant=_nan_as_none)


def read_text(path: Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise SyncError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SyncError(f"{path}: is a folder, not a file") from None
    except UnicodeDecodeError as exc:
        raise SyncError(f"{path}: not UTF-8 text (byte {exc.start}): save it as UTF-8") from None


def unwrap_hf_row(record: Any) -> Any:
    """``{"row_idx": 0, "row": {...}, "truncated_cells": []}`` -> the inner row; else unchanged."""
    if (
        isinstance(record, dict)
        and isinstance(record.get("row"), dict)
        and set(record)
        <= {
            "row",
            "row_idx",
            "truncated_cells",
        }
    ):
        return record["row"]
    return record


def read_records(path: Path, *, skip_bad: bool = False, bad: list[str] | None = None) -> list[Record]:
    """``(where, record)`` for every record of a CSV, TSV, JSONL or JSON file.

    An unparsable JSON Lines line raises :class:`SyncError` naming the file and line, unless
    ``skip_bad``: then its message is appended to ``bad`` and reading goes on.
    """
    path = Path(path)
    name, suffix, text = path.name, path.suffix.lower(), read_text(path)
    if suffix == ".jsonl":
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append((f"{name} line {number}", unwrap_hf_row(loads_lenient(line))))
            except json.JSONDecodeError as exc:
                message = f"{name} line {number}: invalid JSON: {exc.msg} (column {exc.colno})"
                if not skip_bad:
                    raise SyncError(message) from None
                if bad is not None:
                    bad.append(message)
        return records
    if suffix == ".json":
        try:
            loaded = loads_lenient(text)
        except json.JSONDecodeError as exc:
            raise SyncError(f"{name} line {exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})") from None
        if isinstance(loaded, dict) and isinstance(loaded.get("rows"), list):
            loaded = loaded["rows"]  # datasets-server answer
        if isinstance(loaded, dict) and loaded and all(isinstance(v, dict) for v in loaded.values()):
            if not ({"data"} & set(loaded)):  # an id -> object mapping, not one task
                return [(f"{name} item {key!r}", {"id": str(key), **value}) for key, value in loaded.items()]
        if isinstance(loaded, dict):
            loaded = [loaded]
        if not isinstance(loaded, list):
            raise SyncError(f"{name}: expected a JSON list of records, got {type(loaded).__name__}")
        return [(f"{name} item {i}", unwrap_hf_row(item)) for i, item in enumerate(loaded)]
    if suffix in (".csv", ".tsv"):
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t" if suffix == ".tsv" else ",")
        records = []
        start = 2
        for record in reader:
            where = f"{name} line {start}"
            start = reader.line_num + 1
            if None in record:
                message = f"{where}: more values than header columns"
                if not skip_bad:
                    raise SyncError(message)
                if bad is not None:
                    bad.append(message)
                continue
            records.append((where, {k: v for k, v in record.items() if k}))
        return records
    raise SyncError(f"{path}: unsupported file type {path.suffix!r} (use .json, .jsonl, .csv or .tsv)")


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


def checked_rows(
    records: list[Record], schema: Schema, *, skip_bad: bool = False, bad: list[str] | None = None
) -> Rows:
    """Records into checked rows: all or nothing, or (``skip_bad``) every good one plus a count.

    Without ``skip_bad`` this is :func:`sync.importers.rows_from_records` (one error listing
    every bad record, nothing kept). ``bad`` carries messages of records already dropped
    while reading; without ``skip_bad`` they are listed with the others and the file fails.
    """
    skipped = list(bad or [])
    if not skip_bad and not skipped:
        return Rows(rows_from_records(records, schema))
    rows: list[TaskRow] = []
    seen: dict[str, str] = {}
    for where, record in records:
        try:
            (row,) = rows_from_records([(where, record)], schema)
        except SyncError as exc:
            skipped.append(str(exc).split("\n  ", 1)[-1])
            continue
        if row.key in seen:
            skipped.append(f"{where}: duplicate id {row.key!r} (first at {seen[row.key]})")
            continue
        seen[row.key] = where
        rows.append(row)
    fail_or_skip(skipped, schema, skip_bad)
    return Rows(rows, skipped=skipped)


def _listing(errors: list[str], schema: Schema) -> str:
    shown = "\n  ".join(errors[:MAX_ERRORS_SHOWN])
    more = f"\n  ... and {len(errors) - MAX_ERRORS_SHOWN} more" if len(errors) > MAX_ERRORS_SHOWN else ""
    return f"{len(errors)} bad row(s) for schema {schema.name}; nothing was imported:\n  {shown}{more}"


def fail_or_skip(errors: list[str], schema: Schema, skip_bad: bool) -> None:
    """Raise the listing of ``errors`` unless ``skip_bad`` (then the caller counts them)."""
    if errors and not skip_bad:
        raise SyncError(_listing(errors, schema))


def read_generic(
    path: Path, schema: Schema, mapping: Mapping[str, str] | None = None, *, skip_bad: bool = False
) -> Rows:
    """Tasks from any CSV/TSV/JSONL/JSON file, fields taken from ``mapping`` (field -> column)."""
    bad: list[str] = []
    records = read_records(Path(path), skip_bad=skip_bad, bad=bad)
    mapping = dict(mapping or {})
    check_mapping(records, mapping, schema)
    mapped = [(where, apply_mapping(record, mapping)) for where, record in records]
    return checked_rows(mapped, schema, skip_bad=skip_bad, bad=bad)


def stable_key(*parts: object) -> str:
    """A readable task id from parts (``doc#claude-base``), for idempotent re-imports."""
    return "#".join(str(p) for p in parts)


__all__ = [
    "FORMATS",
    "Rows",
    "apply_mapping",
    "check_mapping",
    "checked_rows",
    "get_path",
    "loads_lenient",
    "parse_mapping",
    "read_generic",
    "read_records",
    "task_key",
    "unwrap_hf_row",
]


FORMAT_SCHEMAS = {
    "wide-augmentation": "augmentation_quality",
    "storysumm": "story_consistency",
    "basse": "likert_rubric_es",
    "hotel": "hotel_spans",
}


def detect_format(path: Path) -> str:
    """The seed format a file looks like, else ``generic`` (from its first record and columns)."""
    from judgelab.sync.importers.formats.wide_augmentation import _GENERATED

    try:
        records = read_records(Path(path), skip_bad=True, bad=[])
    except SyncError:
        return "generic"
    first = next((record for _, record in records if isinstance(record, dict)), None)
    if first is None:
        return "generic"
    if "model_summaries" in first and "original_document" in first:
        return "basse"
    if "story" in first and ("summary" in first or "lines" in first) and "data" not in first:
        return "storysumm"
    if any(_GENERATED.match(str(column)) for column in first):
        return "wide-augmentation"
    if any(c in first for c in ("property_id", "hotel_id", "property")) and "description" in first:
        return "hotel"
    return "generic"


def read_tasks(
    path: Path,
    schema: Schema | None,
    fmt: str = "auto",
    mapping: Mapping[str, str] | None = None,
    *,
    skip_bad: bool = False,
    with_annotations: bool = False,
) -> tuple[Schema, Rows]:
    """Rows of one file in format ``fmt`` (``auto`` detects it); returns the schema used too.

    Seed formats imply their schema: a different ``schema`` is an error. ``mapping`` applies
    to the generic format only; ``with_annotations`` to ``basse`` only.
    """
    from judgelab.configs.schema import get_schema

    if fmt not in FORMATS:
        raise SyncError(f"unknown format {fmt!r} (use {', '.join(FORMATS)})")
    path = Path(path)
    if fmt == "auto":
        fmt = "generic" if mapping else detect_format(path)
    if fmt == "generic":
        if schema is None:
            raise SyncError(f"{path.name}: --schema is required for the generic format")
        return schema, read_generic(path, schema, mapping, skip_bad=skip_bad)
    implied = get_schema(FORMAT_SCHEMAS[fmt])
    if schema is not None and schema.name != implied.name:
        raise SyncError(f"{path.name}: format {fmt} makes {implied.name} tasks, not {schema.name}")
    if mapping:
        raise SyncError("--map applies to the generic format only")
    if with_annotations and fmt != "basse":
        raise SyncError(f"--with-annotations reads the ratings of BASSE files, not of format {fmt}")
    if fmt == "wide-augmentation":
        from judgelab.sync.importers.formats.wide_augmentation import read_wide_augmentation

        return implied, read_wide_augmentation(path, implied, skip_bad=skip_bad)
    if fmt == "storysumm":
        from judgelab.sync.importers.formats.storysumm import read_storysumm

        return implied, read_storysumm(path, implied, skip_bad=skip_bad)
    if fmt == "basse":
        from judgelab.sync.importers.formats.basse import read_basse

        return implied, read_basse(path, implied, skip_bad=skip_bad, with_annotations=with_annotations)
    from judgelab.sync.importers.formats.hotel import read_hotel

    return implied, read_hotel(path, implied, skip_bad=skip_bad)
