"""The one reader of users' files: CSV, TSV, JSON Lines and JSON into ``(where, record)`` pairs.

- JSON Lines: one object per line; bare ``NaN`` / ``Infinity`` tokens become missing values;
  raw control characters in strings are accepted; a Hugging Face datasets-style line
  ``{"row_idx": 3, "row": {...}}`` (the datasets-server ``/rows`` shape) is unwrapped.
- JSON: a list of objects, one object (one task), an object mapping ids to objects
  (``{"id1": {...}}``: the id becomes ``id`` unless the object has one), or the
  datasets-server answer ``{"rows": [{"row_idx", "row"}, ...]}``.
- CSV / TSV: a header line, then one row per line (quoted values may span lines).

Every record keeps where it came from (``file line N`` / ``file item N``).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from judgelab.sync.client import SyncError

Record = tuple[str, Any]  # (where, raw record)


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


def _raw_rows(path: Path) -> list[tuple[str, Any]]:
    """(where, raw record) pairs; raises SyncError for unreadable files."""
    name = path.name
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise SyncError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise SyncError(f"{path}: not UTF-8 text (byte {exc.start}): save it as UTF-8") from None
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append((f"{name} line {number}", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise SyncError(f"{name} line {number}: invalid JSON: {exc.msg} (column {exc.colno})") from None
        return rows
    if suffix == ".json":
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SyncError(f"{name} line {exc.lineno}: invalid JSON: {exc.msg}") from None
        if isinstance(loaded, dict):
            loaded = [loaded]
        if not isinstance(loaded, list):
            raise SyncError(f"{name}: expected a JSON list of tasks")
        return [(f"{name} item {i}", item) for i, item in enumerate(loaded)]
    if suffix in (".csv", ".tsv"):
        reader = csv.DictReader(io.StringIO(text), delimiter="\t" if suffix == ".tsv" else ",")
        rows = []
        for record in reader:
            if None in record:
                raise SyncError(f"{name} line {reader.line_num}: more values than header columns")
            rows.append((f"{name} line {reader.line_num}", {k: v for k, v in record.items() if k}))
        return rows
    raise SyncError(f"{path}: unsupported file type {path.suffix!r} (use .json, .jsonl, .csv or .tsv)")
