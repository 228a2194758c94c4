"""Checked task rows: each record of a file against its schema, with a stable key.

A whole file is read and checked before anything is sent: one bad row stops the import with
an error naming the file and line (or item), so a file is never half-imported. Each row gets a
stable key (its ``id`` field, else a hash of its data) that makes re-imports idempotent.
:func:`checked_rows` turns records into :class:`TaskRow` all or nothing, or, with ``skip_bad``,
skips bad records and counts them (:class:`Rows` ``.skipped``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from judgelab.configs.schema import Schema
from judgelab.configs.task_data import TaskDataError, prepare_task_data
from judgelab.sync.client import SyncError
from judgelab.sync.importers.records import Record

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


def stable_key(*parts: object) -> str:
    """A readable task id from parts (``doc#claude-base``), for idempotent re-imports."""
    return "#".join(str(p) for p in parts)


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


def rows_from_records(records: list[Record], schema: Schema) -> list[TaskRow]:
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


def checked_rows(
    records: list[Record], schema: Schema, *, skip_bad: bool = False, bad: list[str] | None = None
) -> Rows:
    """Records into checked rows: all or nothing, or (``skip_bad``) every good one plus a count.

    Without ``skip_bad`` this is :func:`rows_from_records` (one error listing every bad
    record, nothing kept). ``bad`` carries messages of records already dropped while reading;
    without ``skip_bad`` they are listed with the others and the file fails.
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
