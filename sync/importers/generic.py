"""The generic format: any CSV/TSV/JSONL/JSON file, fields taken as they are or from ``--map``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from judgelab.configs.schema import Schema
from judgelab.sync.importers.mapping import apply_mapping, check_mapping
from judgelab.sync.importers.records import read_records
from judgelab.sync.importers.rows import Rows, checked_rows


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
