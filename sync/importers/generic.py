"""The generic format: any CSV/TSV/JSONL/JSON file, fields taken as they are or from ``--map``.

:class:`FileRows` reads a file a record at a time and never holds it: the first pass checks every
record (all or nothing, or ``--skip-bad``), keeps only the task keys, and writes each good row as
the import will send it to a temporary file (:meth:`FileRows.import_lines` reads them back, so
the import neither reads nor encodes the file again while Label Studio works); iterating reads
and checks the file again and yields the rows. Memory follows the largest record and the number
of tasks, not the size of the file.

File-level problems are reported as such instead of once per row: a required field that no
column holds (with the file's columns and a ``--map`` suggestion), a mapped column the file does
not have, and a JSON file that is one object where a list of tasks is expected.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from judgelab.configs.schema import Schema
from judgelab.sync.client import SyncError
from judgelab.sync.importers.mapping import (
    apply_mapping,
    check_mapped_fields,
    is_present,
    missing_columns_error,
    record_columns,
    required_fields,
    unmapped_columns_error,
)
from judgelab.sync.importers.records import FileInfo, Record, file_info, iter_records
from judgelab.sync.importers.rows import (
    BadRow,
    ImportLine,
    Rows,
    TaskRow,
    annotator_emails,
    checked,
    listing,
    rows_summary,
)

MAX_ERRORS_KEPT = 1000  # without --skip-bad the first ones are shown and the rest counted
MAX_COLUMNS_KEPT = 200


class _ColumnWatch:
    """Watches the records of a first pass for problems of the file rather than of a row."""

    def __init__(self, schema: Schema, mapping: Mapping[str, str], info: FileInfo) -> None:
        self.schema, self.mapping, self.info = schema, mapping, info
        self.required = [f for f in required_fields(schema) if f not in mapping]
        self.absent = dict.fromkeys(self.required, 0)
        self.unseen = dict(mapping)  # mapped columns not found in any record yet
        self.columns: dict[str, None] = {}
        self.count = 0

    def watch(self, records: Iterator[Record]) -> Iterator[Record]:
        for where, record in records:
            if self.count == 0 and self.info.columns is not None:
                self._check_header(self.info.columns)
            self.count += 1
            names = record_columns(record)
            for name in names[:MAX_COLUMNS_KEPT]:
                if len(self.columns) < MAX_COLUMNS_KEPT:
                    self.columns.setdefault(name)
            data = record.get("data") if isinstance(record, dict) and isinstance(record.get("data"), dict) else record
            if isinstance(data, dict):
                for field in self.required:
                    if field not in data:
                        self.absent[field] += 1
            for field, column in list(self.unseen.items()):
                if is_present(record, column):
                    del self.unseen[field]
            yield where, record

    def _check_header(self, header: list[str]) -> None:
        """A CSV's header says at once which columns the file has."""
        missing = [f"{field}={column}" for field, column in self.mapping.items() if column not in header]
        if missing:
            raise unmapped_columns_error(self.info.name, missing, header)
        self.unseen = {}
        absent = [field for field in self.required if field not in header]
        if absent:
            raise missing_columns_error(self.info.name, absent, header, self.schema)

    def finish(self) -> None:
        if not self.count:
            return
        if self.unseen:
            missing = [f"{field}={column}" for field, column in self.unseen.items()]
            raise unmapped_columns_error(self.info.name, missing, list(self.columns))
        absent = [field for field, n in self.absent.items() if n == self.count]
        if absent:
            raise missing_columns_error(self.info.name, absent, list(self.columns), self.schema)


def one_object_error(info: FileInfo, problem: str) -> SyncError:
    """A JSON file that is one object which is not a task (``{"tasks": [...]}``, say)."""
    obj = info.one_object or {}
    lists = [
        f"its key {key!r} holds a list of {len(value)} objects: save that list as the file"
        for key, value in obj.items()
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value)
    ]
    keys = ", ".join(map(str, list(obj)[:20]))
    return SyncError(
        f"{info.name} is one JSON object (keys: {keys}), read as one task, and it is not one ({problem}). "
        "A file of tasks is a JSON list [{...}, {...}] or JSON Lines (one object per line)"
        + (f"; {lists[0]}" if lists else "")
    )


def _stamp(path: Path) -> tuple[int, int]:
    stat = os.stat(path)
    return stat.st_size, stat.st_mtime_ns


class FileRows:
    """The checked rows of one file, read as a stream (see the module doc).

    Like :class:`~judgelab.sync.importers.rows.Rows`: ``len()``, iteration, ``skipped``,
    ``notes`` and ``summary()``; iterating reads the file again.
    """

    def __init__(
        self, path: Path, schema: Schema, mapping: Mapping[str, str] | None = None, *, skip_bad: bool = False
    ) -> None:
        self.path, self.schema, self.skip_bad = Path(path), schema, skip_bad
        self.mapping = dict(mapping or {})
        check_mapped_fields(self.mapping, schema)
        self.skipped: list[str] = []
        self.notes: dict[str, int] = {}
        self.info = file_info(self.path)
        self.annotators: set[str] = set()  # of the annotations the rows carry
        self._count = 0
        self._stamp = _stamp(self.path)
        self._check()

    def _stream(self, info: FileInfo, records: Iterator[Record] | None = None) -> Iterator[TaskRow | str]:
        records = records if records is not None else iter_records(self.path, skip_bad=self.skip_bad, info=info)
        return checked(((where, apply_mapping(r, self.mapping)) for where, r in records), self.schema)

    def _check(self) -> None:
        info = self.info
        watch = _ColumnWatch(self.schema, self.mapping, info)
        errors: list[str] = []
        bad_rows = 0
        self._spool = tempfile.TemporaryFile(prefix="judgelab-import-")  # gone when closed or killed
        records = watch.watch(iter_records(self.path, skip_bad=self.skip_bad, info=info))
        for item in self._stream(info, records):
            problem = item if isinstance(item, str) else self._spooled(item)
            if problem is not None:
                bad_rows += 1
                if self.skip_bad or len(errors) < MAX_ERRORS_KEPT:
                    errors.append(problem)
            elif isinstance(item, TaskRow):
                self._count += 1
                if item.annotations:
                    self.annotators |= annotator_emails([item])
        if info.one_object is not None and errors:
            raise one_object_error(info, errors[0].split(": ", 1)[-1])
        watch.finish()
        if (errors or info.bad) and not self.skip_bad:
            raise SyncError(listing(info.bad + errors, self.schema, len(info.bad) + bad_rows))
        self.skipped = info.bad + errors

    def _spooled(self, row: TaskRow) -> str | None:
        """Write ``row`` as the import sends it; what makes it unsendable, if anything."""
        try:
            line = ImportLine.of(row)
        except BadRow as exc:
            return str(exc)
        head = json.dumps([line.key, line.where, line.annotations], ensure_ascii=False).encode("utf-8")
        self._spool.write(head + b"\t" + line.body + b"\n")  # JSON holds no raw tab nor newline
        return None

    def import_lines(self) -> Iterator[ImportLine]:
        """The checked rows as the import sends them, read back from what the check wrote (the
        file itself is not read again)."""
        self._spool.flush()
        self._spool.seek(0)
        for raw in self._spool:
            head, body = raw.rstrip(b"\n").split(b"\t", 1)
            key, where, annotations = json.loads(head)
            yield ImportLine(key, where, annotations, body)

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[TaskRow]:
        changed = SyncError(
            f"{self.path.name} changed while it was being imported: import it again "
            "(the tasks already imported are recognised by their key and not imported twice)"
        )
        if _stamp(self.path) != self._stamp:
            raise changed
        count = 0
        for item in self._stream(file_info(self.path)):
            if isinstance(item, TaskRow):
                count += 1
                yield item
        if count != self._count or _stamp(self.path) != self._stamp:
            raise changed

    def summary(self) -> str:
        return rows_summary(len(self), self.skipped, self.notes)

    def materialized(self) -> Rows:
        """Every row at once (for small files and callers that change rows)."""
        return Rows(list(self), skipped=self.skipped, notes=self.notes)


def read_generic(
    path: Path, schema: Schema, mapping: Mapping[str, str] | None = None, *, skip_bad: bool = False
) -> Rows:
    """Tasks from any CSV/TSV/JSONL/JSON file, fields taken from ``mapping`` (field -> column)."""
    return FileRows(path, schema, mapping, skip_bad=skip_bad).materialized()


def stream_generic(
    path: Path, schema: Schema, mapping: Mapping[str, str] | None = None, *, skip_bad: bool = False
) -> FileRows:
    """Like :func:`read_generic`, as a :class:`FileRows` that reads the file again when iterated."""
    return FileRows(path, schema, mapping, skip_bad=skip_bad)
