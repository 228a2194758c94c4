"""Seed 004: hotel descriptions aggregated per property into ``hotel_spans`` tasks.

Input (CSV, TSV, JSONL or JSON): one row per (property, source description). Columns:
``property_id`` (also ``hotel_id``, ``property``, ``hotel``), ``description`` (also
``text``), optional ``source`` (site), ``summary``, ``aspect``, ``hotel`` (a display name),
``check`` (attention-check kind). Rows of one property need not be adjacent.

One task per property (HotelCheckSpan, section 3.2):

- ``descriptions``: the property's descriptions in file order, split into segments
  (sentences, :func:`judgelab.configs.story_lines.split_sentences`), a segment dropped when its
  BLEU or ROUGE-L F1 against an already kept segment of the property exceeds 0.8
  (:mod:`sync.text_overlap`); kept segments of one description are joined by spaces,
  descriptions by a blank line;
- ``summary``: the property's summary (every row that gives one must give the same);
- ``split``: ``short`` / ``long`` by the aggregated description's length in words: the
  shorter half of the properties is ``short`` (ties broken by file order; with an odd
  count the extra property is ``long``);
- ``group``: ``A`` / ``B`` alternating in order of the properties' first row (balanced);
- ``hotel``: the display name if given, else the property id; id ``hotel-<property id>``.

``Rows.notes`` counts the segments dropped as near-duplicates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgelab.configs.schema import Schema, get_schema
from judgelab.configs.story_lines import split_sentences
from judgelab.sync.importers.records import read_records
from judgelab.sync.importers.registry import IMPORTERS
from judgelab.sync.importers.rows import Rows, checked_rows
from judgelab.sync.text_overlap import THRESHOLD, dedupe_segments, tokens

PROPERTY_COLUMNS = ("property_id", "hotel_id", "property", "hotel")
DESCRIPTION_COLUMNS = ("description", "text")
DROPPED = "near-duplicate segment(s) dropped"


def _first(record: dict[str, Any], names: tuple[str, ...]) -> Any:
    for name in names:
        value = record.get(name)
        if value not in (None, "") and not (isinstance(value, str) and not value.strip()):
            return value
    return None


def aggregate_descriptions(descriptions: list[str], threshold: float = THRESHOLD) -> tuple[str, int]:
    """The de-duplicated concatenation of one property's descriptions and how many segments went."""
    kept_all: list[str] = []
    paragraphs = []
    dropped = 0
    for description in descriptions:
        segments = [s for para in description.splitlines() for s in split_sentences(para) if s.strip()]
        survivors = dedupe_segments(kept_all + segments, threshold)[len(kept_all) :]
        dropped += len(segments) - len(survivors)
        kept_all += survivors
        if survivors:
            paragraphs.append(" ".join(survivors))
    return "\n\n".join(paragraphs), dropped


def looks_like_hotel(first: dict[str, Any]) -> bool:
    """A property's description."""
    return any(c in first for c in ("property_id", "hotel_id", "property")) and "description" in first


@IMPORTERS.register(
    "hotel",
    schema="hotel_spans",
    detect=looks_like_hotel,
    description="seed 004: hotel descriptions, one row per (property, source), aggregated per property",
)
def read_hotel(path: Path, schema: Schema | None = None, *, skip_bad: bool = False) -> Rows:
    """``hotel_spans`` tasks, one per property; see the module doc."""
    schema = schema or get_schema("hotel_spans")
    bad: list[str] = []
    properties: dict[str, dict[str, Any]] = {}
    for where, record in read_records(Path(path), skip_bad=skip_bad, bad=bad):
        if not isinstance(record, dict):
            bad.append(f"{where}: expected an object, got {type(record).__name__}")
            continue
        prop = _first(record, PROPERTY_COLUMNS)
        description = _first(record, DESCRIPTION_COLUMNS)
        if prop is None or description is None:
            bad.append(f"{where}: needs a property id ({'/'.join(PROPERTY_COLUMNS)}) and a description")
            continue
        entry = properties.setdefault(
            str(prop), {"where": where, "descriptions": [], "summary": None, "fields": {}, "lines": []}
        )
        entry["lines"].append(where)
        entry["descriptions"].append(str(description))
        summary = _first(record, ("summary",))
        if summary is not None:
            if entry["summary"] not in (None, summary):
                bad.append(f"{where}: property {prop} has another summary at {entry['summary_where']}")
                entry["bad"] = True
                continue
            entry["summary"], entry["summary_where"] = summary, where
        for name in ("aspect", "check", "hotel"):
            if record.get(name) not in (None, "") and name not in entry["fields"]:
                entry["fields"][name] = record[name]
    dropped = 0
    tasks = []
    for prop, entry in properties.items():
        if entry.get("bad"):
            continue
        text, gone = aggregate_descriptions(entry["descriptions"])
        dropped += gone
        data = {"id": f"hotel-{prop}", "hotel": str(entry["fields"].get("hotel") or prop), "descriptions": text}
        data["summary"] = entry["summary"]
        data.update({k: v for k, v in entry["fields"].items() if k != "hotel"})
        tasks.append((entry["where"], data))
    by_length = sorted(range(len(tasks)), key=lambda i: (len(tokens(tasks[i][1]["descriptions"])), i))
    short = set(by_length[: len(tasks) // 2])
    for i, (_, data) in enumerate(tasks):
        data["split"] = "short" if i in short else "long"
        data["group"] = "AB"[i % 2]
    rows = checked_rows(tasks, schema, skip_bad=skip_bad, bad=bad)
    rows.notes[DROPPED] = dropped
    return rows
