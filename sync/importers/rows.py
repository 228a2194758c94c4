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
import math
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from typing import Any

from judgelab.configs.schema import Schema
from judgelab.configs.task_data import TaskDataError, prepare_task_data
from judgelab.sync.client import SyncError, encode_json
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


@dataclass(frozen=True)
class ImportLine:
    """A row as the import sends it: its key, where it came from, how many annotations it carries,
    and the task already encoded as Label Studio's import API takes it (``body``, UTF-8 JSON)."""

    key: str
    where: str
    annotations: int
    body: bytes

    @classmethod
    def of(cls, row: TaskRow) -> ImportLine:
        """``row``'s line; a row JSON cannot carry raises :class:`BadRow` naming it (the check
        refuses what it knows of first: :func:`unsendable`)."""
        return cls.encoded(row.key, row.where, row.as_import(), len(row.annotations or []))

    @classmethod
    def encoded(cls, key: str, where: str, task: dict[str, Any], annotations: int = 0) -> ImportLine:
        """The line of ``task`` (as Label Studio's import API takes it); one JSON cannot carry
        raises :class:`BadRow` naming ``where``."""
        try:
            body = encode_json(task).encode("utf-8")
        except ValueError as exc:
            raise BadRow(f"{where}: JSON cannot carry this row ({exc})") from None
        return cls(key, where, annotations, body)


def task_key(data: dict[str, Any]) -> str:
    """The row's ``id`` if it has one, else a content hash of its data."""
    if data.get("id") not in (None, ""):
        return str(data["id"])
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
    return "sha1:" + hashlib.sha1(canonical.encode("utf-8")).hexdigest()[:16]


class BadRow(ValueError):
    """A record that cannot be a task; the message names the file and line (or item)."""


def unsendable(value: Any) -> str | None:
    """What in ``value`` (a string inside it, keys included, or a number) JSON cannot carry to
    Label Studio, if anything.

    A lone surrogate (``"\\ud800"`` in JSON) passes Python's json but no UTF-8 encoder, and a number
    out of a float's range (``1e999``) reads as infinity, which JSON has no way to write: sent to
    Label Studio either would break the import in the middle of a file.
    """
    if isinstance(value, str):
        if value.isascii():
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"character {exc.start} is a lone surrogate ({value[exc.start]!r}), not text"
        return None
    if isinstance(value, float):
        if math.isfinite(value):
            return None
        return f"{value!r} is a number JSON cannot carry" + (" (too large for a float)" if math.isinf(value) else "")
    if isinstance(value, dict):
        for key, item in value.items():
            problem = unsendable(key) or unsendable(item)
            if problem:
                return problem
    elif isinstance(value, list):
        for item in value:
            problem = unsendable(item)
            if problem:
                return problem
    return None


def check_record(where: str, record: Any, schema: Schema) -> TaskRow:
    """One record as a checked :class:`TaskRow`; raises :class:`BadRow` naming ``where``."""
    if not isinstance(record, dict):
        raise BadRow(f"{where}: expected an object, got {type(record).__name__}")
    data = record.get("data") if isinstance(record.get("data"), dict) else record
    outside = [] if data is record else [(k, v) for k, v in record.items() if k != "data"]
    for name, value in chain(data.items(), outside):
        problem = unsendable(name) or unsendable(value)
        if problem:
            raise BadRow(f"{where}: field {name!r}: {problem}")
    try:
        prepared = prepare_task_data(schema, data)
    except TaskDataError as exc:
        raise BadRow(f"{where}: {exc}") from None
    return TaskRow(
        data=prepared,
        key=task_key(prepared),
        where=where,
        predictions=record.get("predictions") if data is not record else None,
        annotations=record.get("annotations") if data is not record else None,
    )


def annotator_emails(rows: Iterable[TaskRow]) -> set[str]:
    """The annotators' emails of the rows' annotations."""
    return set().union(*(raters(row.annotations or []) for row in rows))


def raters(annotations: Iterable[dict[str, Any]]) -> set[str]:
    """The annotators' emails of annotations in import form (``completed_by: {"email": ...}``)."""
    emails = set()
    for annotation in annotations:
        who = annotation.get("completed_by")
        if isinstance(who, dict) and who.get("email"):
            emails.add(who["email"])
    return emails


def rows_summary(count: int, skipped: list[str], notes: dict[str, int]) -> str:
    parts = [f"{count} task(s)"]
    if skipped:
        parts.append(f"{len(skipped)} bad row(s) skipped")
    parts += [f"{n} {what}" for what, n in notes.items() if n]
    return ", ".join(parts)


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
        return rows_summary(len(self), self.skipped, self.notes)

    @property
    def annotators(self) -> set[str]:
        """The emails of the annotators of the rows' annotations."""
        return annotator_emails(self)


class KeyCheck:
    """Keys seen so far in a file: the second row with a key is a duplicate of the first."""

    def __init__(self) -> None:
        self._first: dict[str, str] = {}

    def duplicate(self, row: TaskRow) -> str | None:
        """The message for ``row`` if its key was seen (else remember it)."""
        first = self._first.get(row.key)
        if first is None:
            self._first[row.key] = row.where
            return None
        return f"{row.where}: duplicate id {row.key!r} (first at {first})"

    def keys(self) -> set[str]:
        """The keys seen."""
        return set(self._first)


def checked(records: Iterable[Record], schema: Schema, keys: KeyCheck | None = None) -> Iterable[TaskRow | str]:
    """Each record as a :class:`TaskRow`, or as the message saying why it cannot be one (a key
    already in ``keys`` is a duplicate)."""
    keys = KeyCheck() if keys is None else keys
    for where, record in records:
        try:
            row = check_record(where, record, schema)
        except BadRow as exc:
            yield str(exc)
            continue
        yield keys.duplicate(row) or row


def rows_from_records(records: Iterable[Record], schema: Schema) -> list[TaskRow]:
    """Check every record against the schema; raise one SyncError listing every bad row."""
    return checked_rows(records, schema)


def checked_rows(
    records: Iterable[Record], schema: Schema, *, skip_bad: bool = False, bad: list[str] | None = None
) -> Rows:
    """Records into checked rows: all or nothing, or (``skip_bad``) every good one plus a count.

    ``bad`` carries messages of records already dropped while reading; without ``skip_bad``
    they are listed with the others and the file fails.
    """
    skipped = list(bad or [])
    rows: list[TaskRow] = []
    for item in checked(records, schema):
        if isinstance(item, str):
            skipped.append(item)
        else:
            rows.append(item)
    fail_or_skip(skipped, schema, skip_bad)
    return Rows(rows, skipped=skipped)


def listing(errors: list[str], schema: Schema, count: int | None = None) -> str:
    """One message listing the first bad rows (``count``: how many there are in all)."""
    count = len(errors) if count is None else count
    shown = "\n  ".join(errors[:MAX_ERRORS_SHOWN])
    more = f"\n  ... and {count - MAX_ERRORS_SHOWN} more" if count > MAX_ERRORS_SHOWN else ""
    return f"{count} bad row(s) for schema {schema.name}; nothing was imported:\n  {shown}{more}"


def fail_or_skip(errors: list[str], schema: Schema, skip_bad: bool) -> None:
    """Raise the listing of ``errors`` unless ``skip_bad`` (then the caller counts them)."""
    if errors and not skip_bad:
        raise SyncError(listing(errors, schema))
