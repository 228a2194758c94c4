"""The generic format: any CSV/TSV/JSONL/JSON file, fields taken as they are or from ``--map``.

:class:`FileRows` reads a file a record at a time and never holds it: the first pass checks every
record (all or nothing, or ``--skip-bad``), keeps only the task keys, and writes each good row as
the import will send it to a temporary file (:meth:`FileRows.import_lines` reads them back, so
the import neither reads nor encodes the file again while Label Studio works); iterating reads
and checks the file again and yields the rows. Memory follows the largest record and the number
of tasks, not the size of the file.

The check is all computing, and Label Studio waits for it: a big JSON Lines file is checked in
parts side by side, one process per processor (the first part in this one), each writing its own
temporary file. Their results are taken only when every part is clean; anything to report (a bad
row, a key in two parts, a part that failed) is found again by the check of the whole file, which
words it as it always has.

File-level problems are reported as such instead of once per row: a required field that no
column holds (with the file's columns and a ``--map`` suggestion), a mapped column the file does
not have, and a JSON file that is one object where a list of tasks is expected.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

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
from judgelab.sync.importers.records import (
    FileInfo,
    Record,
    file_info,
    iter_records,
    jsonl_part_records,
    jsonl_parts,
)
from judgelab.sync.importers.rows import (
    BadRow,
    ImportLine,
    KeyCheck,
    Rows,
    TaskRow,
    checked,
    listing,
    raters,
    rows_summary,
)

MAX_ERRORS_KEPT = 1000  # without --skip-bad the first ones are shown and the rest counted
MAX_COLUMNS_KEPT = 200
#: A JSON Lines file from this size on is checked in parts side by side (a smaller one's check
#: takes well under a second: 10,000 tasks of 3 kB, 32 MB, took 3.2-3.8 s on one processor).
PARALLEL_CHECK_BYTES = 4 << 20
MAX_CHECK_PARTS = 4


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

    def state(self) -> tuple:
        """What :meth:`add` takes: this watch's findings, to be added to another's."""
        return self.count, self.absent, set(self.unseen), list(self.columns)

    def add(self, state: tuple) -> None:
        """Add the findings of a watch of the records that follow (:meth:`state`)."""
        count, absent, unseen, columns = state
        self.count += count
        for field, n in absent.items():
            self.absent[field] += n
        self.unseen = {field: column for field, column in self.unseen.items() if field in unseen}
        for name in columns:
            if len(self.columns) < MAX_COLUMNS_KEPT:
                self.columns.setdefault(name)

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


@dataclasses.dataclass
class _Part:
    """What the check of one part of a file found: all clean (else there is no part)."""

    count: int
    annotators: set[str]
    keys: set[str]
    records: int
    watch: tuple


def _spool() -> IO[bytes]:
    return tempfile.TemporaryFile(prefix="judgelab-import-")  # gone when closed or killed


def _check_parts(path: Path) -> int:
    """Parts to check ``path`` in: one per processor this process may use, for a big file on a
    system that forks (the parts' processes are copies of this one)."""
    if not sys.platform.startswith("linux") or os.stat(path).st_size < PARALLEL_CHECK_BYTES:
        return 1
    return min(MAX_CHECK_PARTS, len(os.sched_getaffinity(0)))


def _stamp(path: Path) -> tuple[int, int]:
    stat = os.stat(path)
    return stat.st_size, stat.st_mtime_ns


class FileRows:
    """The checked rows of one file, read as a stream (see the module doc).

    Like :class:`~judgelab.sync.importers.rows.Rows`: ``len()``, iteration, ``skipped``,
    ``notes`` and ``summary()``; iterating reads the file again.
    """

    def __init__(
        self,
        path: Path,
        schema: Schema,
        mapping: Mapping[str, str] | None = None,
        *,
        skip_bad: bool = False,
        check_parts: int | None = None,
    ) -> None:
        """``check_parts``: how many parts a JSON Lines file is checked in side by side (default:
        one per processor, up to :data:`MAX_CHECK_PARTS`, from :data:`PARALLEL_CHECK_BYTES` on)."""
        self.path, self.schema, self.skip_bad = Path(path), schema, skip_bad
        self.mapping = dict(mapping or {})
        check_mapped_fields(self.mapping, schema)
        self.skipped: list[str] = []
        self.notes: dict[str, int] = {}
        self.info = file_info(self.path)
        self.annotators: set[str] = set()  # of the annotations the rows carry
        self._count = 0
        self._stamp = _stamp(self.path)
        self._spools: list[IO[bytes]] = []
        parts = jsonl_parts(self.path, self.info, _check_parts(self.path) if check_parts is None else check_parts)
        if not (parts and self._check_in_parts(parts)):
            self._check()
        self.parts = len(self._spools)  # how many parts the file was checked in, side by side

    def _stream(
        self, info: FileInfo, records: Iterator[Record] | None = None, keys: KeyCheck | None = None
    ) -> Iterator[TaskRow | str]:
        records = records if records is not None else iter_records(self.path, skip_bad=self.skip_bad, info=info)
        return checked(((where, apply_mapping(r, self.mapping)) for where, r in records), self.schema, keys)

    def _check(self) -> None:
        info = self.info
        watch = _ColumnWatch(self.schema, self.mapping, info)
        errors: list[str] = []
        bad_rows = 0
        spool = _spool()
        self._spools = [spool]
        records = watch.watch(iter_records(self.path, skip_bad=self.skip_bad, info=info))
        for item in self._stream(info, records):
            problem = item if isinstance(item, str) else self._spooled(item, spool)
            if problem is not None:
                bad_rows += 1
                if self.skip_bad or len(errors) < MAX_ERRORS_KEPT:
                    errors.append(problem)
            elif isinstance(item, TaskRow):
                self._count += 1
                if item.annotations:
                    self.annotators |= raters(item.annotations)
        if info.one_object is not None and errors:
            raise one_object_error(info, errors[0].split(": ", 1)[-1])
        watch.finish()
        if (errors or info.bad) and not self.skip_bad:
            raise SyncError(listing(info.bad + errors, self.schema, len(info.bad) + bad_rows))
        self.skipped = info.bad + errors

    def _check_in_parts(self, parts: list[tuple[int, int, int]]) -> bool:
        """Check the file's ``parts`` (:func:`~judgelab.sync.importers.records.jsonl_parts`) side by
        side, the first here and each other in a forked process; True when every part is clean and
        their results are taken, False when there is something to report (see the module doc)."""
        context = multiprocessing.get_context("fork")
        spools = [_spool() for _ in parts]
        children = []
        try:
            for part, spool in zip(parts[1:], spools[1:], strict=True):
                receive, send = context.Pipe(duplex=False)
                child = context.Process(target=self._part_in_child, args=(part, spool, send), daemon=True)
                child.start()
                send.close()
                children.append((child, receive))
            results = [self._checked_part(parts[0], spools[0])]
            for _, receive in children:
                if results[-1] is None:
                    break  # something to report: the parts still running are not needed
                try:
                    results.append(receive.recv())
                except EOFError:  # the process ended without an answer
                    results.append(None)
        finally:
            for child, receive in children:
                receive.close()
                if child.is_alive():
                    child.kill()
                child.join()
        merged = None if None in results else self._merged(results)
        if merged is None:
            for spool in spools:
                spool.close()
            return False
        self._count, self.annotators, self.info.records = merged
        self._spools = spools
        return True

    def _part_in_child(self, part: tuple[int, int, int], spool: IO[bytes], send) -> None:
        try:
            send.send(self._checked_part(part, spool))
        finally:  # no exit handlers: this process's copies of the parent's files are not its own
            os._exit(0)

    def _checked_part(self, part: tuple[int, int, int], spool: IO[bytes]) -> _Part | None:
        """The check of one part into ``spool``; ``None`` when a row in it is to be reported."""
        info = dataclasses.replace(self.info, bad=[], records=0)
        watch = _ColumnWatch(self.schema, self.mapping, info)
        keys, count, annotators = KeyCheck(), 0, set()
        try:
            records = watch.watch(jsonl_part_records(self.path, info, part, self.skip_bad))
            for item in self._stream(info, records, keys):
                if isinstance(item, str) or self._spooled(item, spool) is not None:
                    return None
                count += 1
                if item.annotations:
                    annotators |= raters(item.annotations)
            spool.flush()
        except SyncError:
            return None
        if info.bad:
            return None
        return _Part(count, annotators, keys.keys(), info.records, watch.state())

    def _merged(self, results: list[_Part]) -> tuple[int, set[str], int] | None:
        """The parts' results as one file's (count, annotators, records); ``None`` when a key is in
        two parts or the file as a whole has a problem (of its columns, or no task at all)."""
        keys: set[str] = set()
        watch = _ColumnWatch(self.schema, self.mapping, self.info)
        for result in results:
            if not keys.isdisjoint(result.keys):
                return None
            keys |= result.keys
            watch.add(result.watch)
        try:
            watch.finish()
        except SyncError:
            return None
        count = sum(result.count for result in results)
        if not count:
            return None
        return count, set().union(*(result.annotators for result in results)), sum(r.records for r in results)

    def _spooled(self, row: TaskRow, spool: IO[bytes]) -> str | None:
        """Write ``row`` as the import sends it; what makes it unsendable, if anything."""
        try:
            line = ImportLine.of(row)
        except BadRow as exc:
            return str(exc)
        head = json.dumps([line.key, line.where, line.annotations], ensure_ascii=False).encode("utf-8")
        spool.write(head + b"\t" + line.body + b"\n")  # JSON holds no raw tab nor newline
        return None

    def import_lines(self) -> Iterator[ImportLine]:
        """The checked rows as the import sends them, read back from what the check wrote (the
        file itself is not read again)."""
        for spool in self._spools:
            spool.flush()
            spool.seek(0)
            for raw in spool:
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
