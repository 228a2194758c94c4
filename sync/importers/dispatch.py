"""Which reader a file goes to: ``--format`` (or detection from the first record) through the
registry of seed formats, else the generic reader."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from judgelab.configs.schema import Schema, get_schema
from judgelab.sync.client import SyncError
from judgelab.sync.importers.generic import read_generic
from judgelab.sync.importers.records import _raw_rows, read_records
from judgelab.sync.importers.registry import IMPORTERS
from judgelab.sync.importers.rows import TaskRow, rows_from_records

AUTO, GENERIC = "auto", "generic"


def format_names() -> list[str]:
    """``auto``, ``generic`` and every registered seed format."""
    return [AUTO, GENERIC, *IMPORTERS.names()]


def detect_format(path: Path) -> str:
    """The seed format a file looks like, else ``generic`` (from its first record and columns)."""
    try:
        records = read_records(Path(path), skip_bad=True, bad=[])
    except SyncError:
        return GENERIC
    first = next((record for _, record in records if isinstance(record, dict)), None)
    if first is None:
        return GENERIC
    matches = [name for name, importer in IMPORTERS.items() if importer.detect(first)]
    if len(matches) > 1:
        raise SyncError(f"{Path(path).name} looks like formats {' and '.join(matches)}: choose one with --format")
    return matches[0] if matches else GENERIC


def read_tasks(
    path: Path,
    schema: Schema | None,
    fmt: str = AUTO,
    mapping: Mapping[str, str] | None = None,
    *,
    skip_bad: bool = False,
    with_annotations: bool = False,
) -> tuple[Schema, list[TaskRow]]:
    """Rows of one file in format ``fmt`` (``auto`` detects it); returns the schema used too.

    Seed formats imply their schema: a different ``schema`` is an error. ``mapping`` applies
    to the generic format only; ``with_annotations`` to formats that read annotations.
    """
    if fmt not in format_names():
        raise SyncError(f"unknown format {fmt!r} (use {', '.join(format_names())})")
    path = Path(path)
    if fmt == AUTO:
        fmt = GENERIC if mapping else detect_format(path)
    if fmt == GENERIC:
        if schema is None:
            raise SyncError(f"{path.name}: --schema is required for the generic format")
        return schema, read_generic(path, schema, mapping, skip_bad=skip_bad)
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
            raise SyncError(f"--with-annotations reads the ratings of {', '.join(readers)} files, not of format {fmt}")
        options["with_annotations"] = True
    return implied, importer(path, implied, skip_bad=skip_bad, **options)


def read_task_file(path: Path, schema: Schema) -> list[TaskRow]:
    return rows_from_records(_raw_rows(Path(path)), schema)
