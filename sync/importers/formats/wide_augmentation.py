"""Seed 001: wide augmentation files (one row per original) into one task per generated text.

A wide file (CSV, TSV, JSONL or JSON) has one row per original paragraph:

- ``text`` or ``original``: the original Italian paragraph;
- ``label`` (or ``original_label``): 1 hyperpartisan, 0 neutral;
- ``entry_id`` or ``id`` (optional; else the row number);
- up to nine ``{model}_{type}`` columns for the models ``Llama3.1-8b``, ``Mistral-Nemo``,
  ``Qwen2.5-14b`` and the types ``rephrased``, ``it_perturbed``, ``rewritten_text``
  (model names matched without regard to case).

Each non-empty generated cell becomes an ``augmentation_quality`` task with ``entry_id``,
``original``, ``original_label``, ``generated``, ``model`` and ``augmentation_type``
(``rewritten`` for ``rewritten_text``), id ``<entry_id>#<model>#<type>``. Tasks are ordered in
batches by model (every Llama task, then every Mistral one, ...; within a model by type,
then file order), as the guidelines ask ("batch by model"). Empty or missing generated
cells are not tasks: they are counted (``Rows.notes``). A column that looks like a
generated column of an unknown model (``Gemma_rephrased``) is an error.
"""

from __future__ import annotations

import re
from pathlib import Path

from judgelab.configs.schema import Schema, get_schema
from judgelab.sync.client import SyncError
from judgelab.sync.importers.records import read_records
from judgelab.sync.importers.registry import IMPORTERS
from judgelab.sync.importers.rows import Rows, checked_rows

MODELS = ("Llama3.1-8b", "Mistral-Nemo", "Qwen2.5-14b")
TYPES = {"rephrased": "rephrased", "it_perturbed": "it_perturbed", "rewritten_text": "rewritten"}
GENERATED_COLUMN = re.compile(r"^(?P<model>.+?)_(?P<type>rephrased|it_perturbed|rewritten_text)$", re.IGNORECASE)
EMPTY_CELLS = "empty generated cell(s) skipped"


def generated_columns(columns: list[str], where: str) -> dict[tuple[str, str], str]:
    """``(model, type) -> column`` for the wide columns among ``columns``."""
    by_lower = {m.lower(): m for m in MODELS}
    found: dict[tuple[str, str], str] = {}
    unknown = []
    for column in columns:
        match = GENERATED_COLUMN.match(column.strip())
        if not match:
            continue
        model = by_lower.get(match["model"].lower())
        if model is None:
            unknown.append(column)
            continue
        found[(model, TYPES[match["type"].lower()])] = column
    if unknown:
        raise SyncError(
            f"{where}: column(s) {', '.join(unknown)} name an unknown model (expected one of {', '.join(MODELS)})"
        )
    if not found:
        raise SyncError(
            f"{where}: no generated columns; expected {{model}}_rephrased, {{model}}_it_perturbed or "
            f"{{model}}_rewritten_text for {', '.join(MODELS)}"
        )
    return found


def _first(record: dict, *names: str):
    for name in names:
        if record.get(name) not in (None, ""):
            return record[name]
    return None


def looks_wide(first: dict) -> bool:
    """A record with a ``{model}_{type}`` column."""
    return any(GENERATED_COLUMN.match(str(column)) for column in first)


@IMPORTERS.register(
    "wide-augmentation",
    schema="augmentation_quality",
    detect=looks_wide,
    description="seed 001: one row per original with {model}_{type} columns",
)
def read_wide_augmentation(path: Path, schema: Schema | None = None, *, skip_bad: bool = False) -> Rows:
    """Tasks of a wide augmentation file, ordered by model; see the module doc."""
    schema = schema or get_schema("augmentation_quality")
    path = Path(path)
    bad: list[str] = []
    records = read_records(path, skip_bad=skip_bad, bad=bad)
    columns: list[str] = []
    for _, record in records:
        if isinstance(record, dict):
            columns += [c for c in record if c not in columns]
    wide = generated_columns(columns, path.name)
    order = sorted(wide, key=lambda mt: (MODELS.index(mt[0]), list(TYPES.values()).index(mt[1])))
    per_task: list[tuple[tuple[int, int, int], tuple[str, dict]]] = []
    empty = 0
    for number, (where, record) in enumerate(records, start=1):
        if not isinstance(record, dict):
            bad.append(f"{where}: expected an object, got {type(record).__name__}")
            continue
        entry_id = _first(record, "entry_id", "id")
        entry_id = str(entry_id) if entry_id is not None else f"row{number}"
        original = _first(record, "text", "original")
        label = _first(record, "label", "original_label")
        for rank, (model, kind) in enumerate(order):
            generated = record.get(wide[(model, kind)])
            if generated is None or (isinstance(generated, str) and not generated.strip()):
                empty += 1
                continue
            data = {
                "id": f"{entry_id}#{model}#{kind}",
                "entry_id": entry_id,
                "original": original,
                "original_label": label,
                "generated": generated,
                "model": model,
                "augmentation_type": kind,
            }
            per_task.append(((MODELS.index(model), rank, number), (where, data)))
    per_task.sort(key=lambda item: item[0])
    rows = checked_rows([record for _, record in per_task], schema, skip_bad=skip_bad, bad=bad)
    rows.notes[EMPTY_CELLS] = empty
    return rows
