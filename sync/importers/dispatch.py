"""Which reader a file goes to: ``--format`` (or detection from the first record) through the
registry of seed formats, else the generic reader. A file that gives no task is refused here,
before anything is created in Label Studio."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from judgelab.configs.schema import Schema, get_schema
from judgelab.sync.client import SyncError
from judgelab.sync.importers.generic import FileRows, read_generic, stream_generic
from judgelab.sync.importers.records import file_info, iter_records
from judgelab.sync.importers.registry import IMPORTERS
from judgelab.sync.importers.rows import Rows, TaskRow, rows_from_records

AUTO, GENERIC = "auto", "generic"


def format_names() -> list[str]:
    """``auto``, ``generic`` and every registered seed format."""
    return [AUTO, GENERIC, *IMPORTERS.names()]


def detect_format(path: Path) -> str:
    """The seed format a file looks like, else ``generic`` (from its first record and columns)."""
    first = None
    try:
        for _, record in iter_records(Path(path), skip_bad=True):
            if isinstance(record, dict):
                first = record
                break
    except SyncError:
        return GENERIC
    if first is None:
        return GENERIC
    matches = [name for name, importer in IMPORTERS.items() if importer.detect(first)]
    if len(matches) > 1:
        raise SyncError(f"{Path(path).name} looks like formats {' and '.join(matches)}: choose one with --format")
    return matches[0] if matches else GENERIC


def no_tasks_error(path: Path, rows: Rows | FileRows) -> SyncError:
    """Why a file gave no task (empty, a header line only, every row bad, nothing to make a task of)."""
    info = file_info(path)
    for _ in iter_records(path, skip_bad=True, info=info):
        break
    if rows.skipped:
        detail = f"every row is bad: {len(rows.skipped)} skipped, e.g. {rows.skipped[0]}"
    elif info.records == 0 and info.columns:
        detail = f"it has a header line ({', '.join(info.columns)}) but no rows"
    elif info.records == 0:
        detail = "it holds no records"
    elif any(rows.notes.values()):
        detail = ", ".join(f"{n} {what}" for what, n in rows.notes.items() if n)
    else:
        detail = "no record makes a task"
    return SyncError(f"{Path(path).name}: no tasks to import ({detail}); nothing was created in Label Studio")


def read_tasks(
    path: Path,
    schema: Schema | None,
    fmt: str = AUTO,
    mapping: Mapping[str, str] | None = None,
    *,
    skip_bad: bool = False,
    with_annotations: bool = False,
    stream: bool = False,
) -> tuple[Schema, Rows | FileRows]:
    """Rows of one file in format ``fmt`` (``auto`` detects it); returns the schema used too.

    Seed formats imply their schema: a different ``schema`` is an error. ``mapping`` applies
    to the generic format only; ``with_annotations`` to formats that read annotations. A file
    that gives no task raises :class:`SyncError`. ``stream``: a generic file's rows as a
    :class:`FileRows` (read again when iterated, never held whole) instead of a list.
    """
    if fmt not in format_names():
        raise SyncError(f"unknown format {fmt!r} (use {', '.join(format_names())})")
    path = Path(path)
    if fmt == AUTO:
        fmt = GENERIC if mapping else detect_format(path)
    if fmt == GENERIC:
        if schema is None:
            raise SyncError(f"{path.name}: --schema is required for the generic format")
        read = stream_generic if stream else read_generic
        rows: Rows | FileRows = read(path, schema, mapping, skip_bad=skip_bad)
    else:
        importer = IMPORTERS.get(fmt)
        assert importer is not None
        implied = get_schema(importer.schema)
        if schema is not None and schema.name != implied.name:
            raise SyncError(f"{path.name}: format {fmt} makes {implied.name} tasks, not {schema.name}")
        if mapping:
            raise SyncError("--map applies to the generic format only")
        options = {}
        if with_annotations:
            if "with_annotations" not in importer.options:
                readers = [name for name, other in IMPORTERS.items() if "with_annotations" in other.options]
                raise SyncError(
                    f"--with-annotations reads the ratings of {', '.join(readers)} files, not of format {fmt}"
                )
            options["with_annotations"] = True
        schema = implied
        rows = importer(path, implied, skip_bad=skip_bad, **options)
    if len(rows) == 0:
        raise no_tasks_error(path, rows)
    return schema, rows


def read_task_file(path: Path, schema: Schema) -> list[TaskRow]:
    """Every record of a file as checked rows of ``schema`` (fields as they are), all or nothing."""
    return rows_from_records(iter_records(Path(path)), schema)
