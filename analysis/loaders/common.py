"""What every loader shares: the tidy columns, errors, the ``problems`` table, JSON readers.

A loader returns ``{"tasks", "judgments", "spans", "problems"}``: the three tidy tables of the
contract (``docs``: design.md, "Tidy tables") and a ``problems`` table listing what was
skipped or looked wrong (columns ``project, file, line, task_id, kind, message``: the project is
the one the loader was filling, so a note lands on its file's project even when files share
task ids). Known quirks of
real data never raise: they become rows of ``problems`` (and a :class:`LoaderWarning` when
data is dropped). A file that cannot be parsed at all raises :class:`LoaderError`, whose
message names the file and, for JSON, the line.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.configs.tables import JUDGMENT_COLUMNS, SPAN_COLUMNS, TASK_COLUMNS

PROBLEM_COLUMNS = ["project", "file", "line", "task_id", "kind", "message"]

HUMAN = "human"
GOLD = "gold"


class LoaderError(ValueError):
    """A file that cannot be read as the format it should be in (names the file and line)."""


class LoaderWarning(UserWarning):
    """Data was skipped while loading; the ``problems`` table says what and why."""


@dataclass
class Collector:
    """Rows of the four tables, filled by a loader and turned into DataFrames at the end;
    ``project`` is written on every problem."""

    project: str | None = None
    tasks: list[dict[str, Any]] = field(default_factory=list)
    judgments: list[dict[str, Any]] = field(default_factory=list)
    spans: list[dict[str, Any]] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)

    def problem(
        self,
        file: Path | str,
        line: int | None,
        task_id: object,
        kind: str,
        message: str,
        *,
        warn: bool = False,
    ) -> None:
        """Record a problem; ``warn`` also emits a :class:`LoaderWarning` (for dropped data)."""
        where = {"project": self.project, "file": str(file), "line": line, "task_id": task_id}
        self.problems.append({**where, "kind": kind, "message": message})
        if warn:
            where_text = f"{file}" + (f": line {line}" if line is not None else "")
            warnings.warn(f"{where_text}: {message}", LoaderWarning, stacklevel=3)

    def judgment(self, base: dict[str, Any], item: str, value: object) -> None:
        self.judgments.append({**base, "item": item, "value": None if value is None else str(value)})

    def frames(self) -> dict[str, pd.DataFrame]:
        return tidy_frames(self.tasks, self.judgments, self.spans, self.problems)


def tidy_frames(
    tasks: list[dict[str, Any]],
    judgments: list[dict[str, Any]],
    spans: list[dict[str, Any]],
    problems: list[dict[str, Any]],
) -> dict[str, pd.DataFrame]:
    """The four DataFrames with the contract's columns first (tasks keep their extra columns)."""
    task_frame = pd.DataFrame(tasks)
    for column in TASK_COLUMNS:
        if column not in task_frame:
            task_frame[column] = pd.Series(dtype="float64" if column == "inclusion_probability" else "object")
    extra = [c for c in task_frame.columns if c not in TASK_COLUMNS]
    task_frame = task_frame[[*TASK_COLUMNS, *extra]]
    span_frame = pd.DataFrame(spans, columns=SPAN_COLUMNS)
    span_frame["start"] = span_frame["start"].astype("Int64")
    span_frame["end"] = span_frame["end"].astype("Int64")
    problem_frame = pd.DataFrame(problems, columns=PROBLEM_COLUMNS)
    problem_frame["line"] = problem_frame["line"].astype("Int64")
    return {
        "tasks": task_frame,
        "judgments": pd.DataFrame(judgments, columns=JUDGMENT_COLUMNS),
        "spans": span_frame,
        "problems": problem_frame,
    }


def concat_loaded(parts: list[dict[str, pd.DataFrame]]) -> dict[str, pd.DataFrame]:
    """Concatenate several loaders' results table by table."""
    columns = {"judgments": JUDGMENT_COLUMNS, "spans": SPAN_COLUMNS, "problems": PROBLEM_COLUMNS}
    result: dict[str, pd.DataFrame] = {}
    for name in ("tasks", "judgments", "spans", "problems"):
        frames = [p[name] for p in parts if name in p and not p[name].empty]
        if frames:
            result[name] = pd.concat(frames, ignore_index=True)
        else:
            empty = tidy_frames([], [], [], [])[name]
            result[name] = empty if name not in columns else empty.reindex(columns=columns[name])
    return result


def judgment_base(
    project: str,
    task_id: object,
    annotation_id: str,
    annotator: str,
    source: str = HUMAN,
    **extra: Any,
) -> dict[str, Any]:
    """The per-annotation columns of a judgment row (item and value come later)."""
    base = {
        "project": project,
        "task_id": task_id,
        "annotation_id": annotation_id,
        "annotator": annotator,
        "source": source,
        "created_at": None,
        "updated_at": None,
        "lead_time": None,
        "was_cancelled": False,
        "ground_truth": source == GOLD,
    }
    base.update(extra)
    return base


def read_json(path: Path, *, strict: bool = False) -> Any:
    """``json.load`` of a whole file; ``strict=False`` accepts raw control characters in strings.

    Raises :class:`LoaderError` naming the file, line and column of a syntax error.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LoaderError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise LoaderError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    try:
        return json.loads(text, strict=strict, parse_constant=_nan_as_none)
    except json.JSONDecodeError as exc:
        raise LoaderError(f"{path}: line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}") from exc


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line of a JSON Lines file.

    Bare ``NaN`` / ``Infinity`` tokens (not JSON, but written by Python's ``json.dumps``)
    become ``None``. A line that is not a JSON object raises :class:`LoaderError` with the
    file and line number.
    """
    path = Path(path)
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise LoaderError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line, strict=False, parse_constant=_nan_as_none)
                except json.JSONDecodeError as exc:
                    raise LoaderError(f"{path}: line {number}: invalid JSON: {exc.msg} (column {exc.colno})") from exc
                if not isinstance(record, dict):
                    raise LoaderError(f"{path}: line {number}: expected a JSON object, got {type(record).__name__}")
                yield number, record
        except UnicodeDecodeError as exc:
            raise LoaderError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def is_missing(value: object) -> bool:
    """True for ``None`` and float NaN."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def rating_text(value: object) -> str:
    """A rating as the tidy value string: ``5.0`` -> ``"5"``, ``4.5`` -> ``"4.5"``."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _nan_as_none(token: str) -> None:
    """``parse_constant`` hook: ``NaN``, ``Infinity`` and ``-Infinity`` become ``None``."""
    return None
