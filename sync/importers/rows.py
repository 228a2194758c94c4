"""Users' files (JSON, JSONL, CSV) into checked task rows.

A whole file is read and checked before anything is sent: one bad row stops the import with
an error naming the file and line (or item), so a file is never half-imported. Each row gets a
stable key (its ``id`` field, else a hash of its data) that makes re-imports idempotent.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgelab.configs.schema import Schema
from judgelab.configs.task_data import TaskDataError, prepare_task_data
from judgelab.sync.client import SyncError

KEY_FIELD = "judgelab_key"
MAX_ERRORS_SHOWN = 10


@dataclass
class TaskRow:
    data: dict[str, Any]
    key: str
    where: str  # "file.csv line 4", "samples.json item 3"
    predictions: list[dict[str, Any]] | None = None
    annotations: list[dict[str, Any]] | None = None

    def as_import(self) -> dict[str, Any]:
        task: dict[str, Any] = {"data": self.data, "meta": {KEY_FIELD: self.key}}
        if self.predictions:
            task["predictions"] = self.predictions
        if self.annotations:
            task["annotations"] = self.annotations
        return task


def task_key(data: dict[str, Any]) -> str:
    """The row's ``id`` if it has one, else a content hash of its data."""
    if data.get("id") not in (None, ""):
        return str(data["id"])
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
    return "sha1:" + hashlib.sha1(canonical.encode("utf-8")).hexdigest()[:16]


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


def rows_from_records(records: list[tuple[str, Any]], schema: Schema) -> list[TaskRow]:
    """Check every record against the schema; raise one SyncError listing every bad row."""
    rows, errors, seen = [], [], {}
    for where, record in records:
        if not isinstance(record, dict):
            errors.append(f"{where}: expected an object, got {type(record).__name__}")
            continue
        data = record.get("data") if isinstance(record.get("data"), dict) else record
        try:
            prepared = prepare_task_data(schema, data)
        except TaskDataError as exc:
            errors.append(f"{where}: {exc}")
            continue
        key = task_key(prepared)
        if key in seen:
            errors.append(f"{where}: duplicate id {key!r} (first at {seen[key]})")
            continue
        seen[key] = where
        rows.append(
            TaskRow(
                data=prepared,
                key=key,
                where=where,
                predictions=record.get("predictions") if data is not record else None,
                annotations=record.get("annotations") if data is not record else None,
            )
        )
    if errors:
        shown = "\n  ".join(errors[:MAX_ERRORS_SHOWN])
        more = f"\n  ... and {len(errors) - MAX_ERRORS_SHOWN} more" if len(errors) > MAX_ERRORS_SHOWN else ""
        raise SyncError(f"{len(errors)} bad row(s) for schema {schema.name}; nothing was imported:\n  {shown}{more}")
    return rows


def read_task_file(path: Path, schema: Schema) -> list[TaskRow]:
    return rows_from_records(_raw_rows(Path(path)), schema)
