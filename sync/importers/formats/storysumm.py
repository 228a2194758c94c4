"""Seed 002: StorySumm-style JSON into ``story_consistency`` tasks (summary lines + alternates).

Input: a JSON object mapping an id to an item (StorySumm's ``storysumm.json``), a JSON list
of items (each with ``id``), or JSON Lines of items. An item has:

- ``story`` (required) and ``summary``: a list of lines, the string repr of a list
  (``"['A.', 'B.']"``), or plain text (split into sentences);
- optional ``title``; else ``story <story-id>`` when ``story-id`` is present;
- optional ``model``;
- alternates for Format 2 (swap questions), accepted as:
  ``alternates``: a dict ``{line index: alternate}`` or a list aligned with the lines
  (``null``/``""`` for lines without one); ``alt_summary``: a list aligned with the lines,
  where an entry equal to its line is no alternate; or lines that are already
  ``{"text", "alternate"}`` objects.

Everything else (``errors``, ``label``, ``explanations``, ``split``...) is gold data, not task
data, and is not imported. StorySumm's item whose line count differs from its ``errors``
count therefore imports like any other (its lines are what the annotators judge): 96 tasks.
The JSON may contain raw control characters (read with ``strict=False``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgelab.configs.schema import Schema, get_schema
from judgelab.configs.story_lines import line_texts
from judgelab.sync.importers.records import read_records
from judgelab.sync.importers.registry import IMPORTERS
from judgelab.sync.importers.rows import Rows, checked_rows


class _BadItem(ValueError):
    pass


def _index(key: Any, n_lines: int) -> int:
    try:
        index = int(key)
    except (TypeError, ValueError):
        raise _BadItem(f"alternates key {key!r} is not a line index") from None
    if not 0 <= index < n_lines:
        raise _BadItem(f"alternate for line {index} but the summary has {n_lines} lines")
    return index


def _alternates(item: dict[str, Any], lines: list[str]) -> dict[int, str]:
    found: dict[int, str] = {}
    given = item.get("alternates")
    if isinstance(given, dict):
        found.update({_index(k, len(lines)): v for k, v in given.items() if isinstance(v, str) and v.strip()})
    elif isinstance(given, list):
        if len(given) != len(lines):
            raise _BadItem(f"{len(given)} alternates for {len(lines)} summary lines")
        found.update({i: v for i, v in enumerate(given) if isinstance(v, str) and v.strip()})
    elif given is not None:
        raise _BadItem("alternates must be an object {line index: text} or a list aligned with the lines")
    alt = item.get("alt_summary")
    if alt is not None:
        alt_lines, _ = line_texts(alt)
        if alt_lines is None or len(alt_lines) != len(lines):
            raise _BadItem(f"alt_summary must be a list of {len(lines)} lines (one per summary line)")
        for i, (line, other) in enumerate(zip(lines, alt_lines, strict=True)):
            if other.strip() and other.strip() != line.strip():
                found.setdefault(i, other)
    return found


def story_task(key: str, item: dict[str, Any]) -> dict[str, Any]:
    """One item's task data; raises ``_BadItem`` for an item that cannot be a task."""
    summary = item.get("summary", item.get("lines"))
    objects = isinstance(summary, list) and any(isinstance(x, dict) for x in summary)
    if objects:
        lines_data = summary  # [{"text", "alternate"}], checked by the schema
    else:
        lines, how = line_texts(summary)
        if lines is None:
            raise _BadItem(f"summary: {how}")
        alternates = _alternates(item, lines)
        lines_data = [
            {"text": t, **({"alternate": alternates[i]} if i in alternates else {})} for i, t in enumerate(lines)
        ]
    title = item.get("title")
    if title is None and item.get("story-id") is not None:
        title = f"story {item['story-id']}"
    data = {"id": str(item.get("id") or key), "story": item.get("story"), "lines": lines_data}
    if title is not None:
        data["title"] = str(title)
    if item.get("model") is not None:
        data["model"] = str(item["model"])
    return data


def looks_like_storysumm(first: dict[str, Any]) -> bool:
    """A story with its summary (or lines), not a Label Studio task."""
    return "story" in first and ("summary" in first or "lines" in first) and "data" not in first


@IMPORTERS.register(
    "storysumm",
    schema="story_consistency",
    detect=looks_like_storysumm,
    description="seed 002: StorySumm-style stories with summary lines and alternates",
)
def read_storysumm(path: Path, schema: Schema | None = None, *, skip_bad: bool = False) -> Rows:
    """``story_consistency`` tasks of a StorySumm-style file; see the module doc."""
    schema = schema or get_schema("story_consistency")
    bad: list[str] = []
    records = []
    for where, item in read_records(Path(path), skip_bad=skip_bad, bad=bad):
        if not isinstance(item, dict):
            bad.append(f"{where}: expected an object, got {type(item).__name__}")
            continue
        key = str(item.get("id") or where)
        try:
            records.append((where, story_task(key, item)))
        except _BadItem as exc:
            bad.append(f"{where}: {exc}")
    return checked_rows(records, schema, skip_bad=skip_bad, bad=bad)
