"""Incremental, idempotent and resumable sync of Label Studio projects into the tidy tables.

State lives next to the tables, in ``<out>/judgelab.sqlite``:

- ``sync_task_rows``: per (project, task_id) the task's change signature and its tidy rows
  (tasks, judgments, spans, predictions) as JSON. A task is the unit of replacement: a changed
  task is exported again and all its rows are replaced, so edited, added and deleted
  annotations and predictions of that task are reflected at once.
- ``sync_state``: per project its schema, when the last run started (server clock) and finished.

Change detection lists the project's tasks through the Data Manager API with only
``id, updated_at, total_annotations, cancelled_annotations, total_predictions`` and ``review=1``
(which skips the "evaluate predictions automatically" branch, so listing never calls the ML
backend). Label Studio 1.23 bumps ``Task.updated_at`` when an annotation or a prediction of the
task is created, updated (ground truth included) or deleted, and the counters catch bulk
operations. Changed tasks are exported with the quick export filtered by ``ids[]`` (predictions
come as ids there) and their predictions read from ``/api/predictions/`` (per task, or the whole
project at once when many tasks changed). Neither calls the ML backend; ``GET /api/tasks/{id}``,
which can, is never used.

Each batch of tasks is written in one transaction together with its signatures, so a run
killed mid-way loses nothing: the next run sees the unwritten tasks as still changed and redoes
them (replace-by-key makes redoing harmless). Tasks no longer listed are deleted with their rows.
At the end the ``tasks``, ``judgments``, ``spans`` (and ``predictions``) tables are materialised
into the same SQLite file and as Parquet files, only when something changed.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from label_studio_sdk import LabelStudio
from label_studio_sdk.core.api_error import ApiError

from backend.schemas import all_schemas
from sync.client import SyncError, api_error_message
from sync.projects import selected_projects
from sync.tidy import TidyTables, concat_tables, tidy_from_export

STATE_FILE = "judgelab.sqlite"
DEFAULT_BATCH_SIZE = 200
PREDICTIONS_BULK_THRESHOLD = 20  # more changed tasks with predictions than this: read the project's at once
LIST_PAGE_SIZE = 1000
PREDICTION_COLUMNS = ["project", "task_id", "prediction_id", "model_version", "score", "created_at", "updated_at"]
SIGNATURE_FIELDS = ("updated_at", "total_annotations", "cancelled_annotations", "total_predictions")

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS sync_state (
    project INTEGER PRIMARY KEY,
    schema TEXT,
    last_sync_started_at TEXT,
    last_sync_finished_at TEXT,
    runs INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS sync_task_rows (
    project INTEGER NOT NULL,
    task_id INTEGER NOT NULL,
    signature TEXT NOT NULL,
    rows TEXT NOT NULL,
    PRIMARY KEY (project, task_id)
);
CREATE TABLE IF NOT EXISTS sync_meta (key TEXT PRIMARY KEY, value TEXT);
"""


@dataclass
class ProjectReport:
    project: int
    schema: str
    tasks_listed: int = 0
    tasks_exported: int = 0
    tasks_deleted: int = 0
    batches: int = 0


@dataclass
class SyncReport:
    full: bool
    projects: list[ProjectReport] = field(default_factory=list)
    tables_written: bool = False
    paths: list[Path] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def tasks_exported(self) -> int:
        return sum(p.tasks_exported for p in self.projects)

    @property
    def tasks_deleted(self) -> int:
        return sum(p.tasks_deleted for p in self.projects)

    @property
    def changed(self) -> bool:
        return self.tasks_exported > 0 or self.tasks_deleted > 0


def has_state(out_dir: Path) -> bool:
    path = Path(out_dir) / STATE_FILE
    if not path.exists():
        return False
    with sqlite3.connect(path) as db:
        return db.execute("SELECT 1 FROM sqlite_master WHERE name='sync_state'").fetchone() is not None


def batch_size_from_env() -> int:
    try:
        return max(1, int(os.environ.get("JUDGELAB_SYNC_BATCH_SIZE", DEFAULT_BATCH_SIZE)))
    except ValueError:
        raise SyncError("JUDGELAB_SYNC_BATCH_SIZE must be a whole number") from None


# --- talking to Label Studio -----------------------------------------------------------------


def _get_json(client: LabelStudio, path: str, params: dict[str, Any]) -> Any:
    try:
        response = client._client_wrapper.httpx_client.request(path, method="GET", params=params)
    except Exception as exc:  # httpx errors: the server went away
        raise SyncError(f"Label Studio: GET {path} failed: {exc}") from None
    if response.status_code >= 400:
        raise SyncError(f"Label Studio: GET {path} answered HTTP {response.status_code}: {response.text[:300]}")
    return response.json()


def _signature(task: dict[str, Any]) -> str:
    return json.dumps([task.get(k) for k in SIGNATURE_FIELDS])


def list_task_signatures(client: LabelStudio, project_id: int) -> dict[int, str]:
    """Every task id of the project with its change signature, without task data.

    ``review=1`` makes the Data Manager skip its automatic prediction branch.
    """
    signatures: dict[int, str] = {}
    page = 1
    while True:
        payload = _get_json(
            client,
            "api/tasks/",
            {
                "project": project_id,
                "page": page,
                "page_size": LIST_PAGE_SIZE,
                "review": "true",
                "include": "id," + ",".join(SIGNATURE_FIELDS),
            },
        )
        tasks = payload.get("tasks") or []
        for task in tasks:
            signatures[int(task["id"])] = _signature(task)
        if not tasks or len(signatures) >= int(payload.get("total") or 0):
            return signatures
        page += 1


def export_tasks(client: LabelStudio, project_id: int, task_ids: list[int]) -> list[dict[str, Any]]:
    """The given tasks with annotations (the quick export's ``ids[]`` filter; the SDK's ``ids``
    parameter is not the name Label Studio reads, so the request is made directly)."""
    params = {"exportType": "JSON", "download_all_tasks": "true", "ids[]": [str(i) for i in task_ids]}
    exported = _get_json(client, f"api/projects/{project_id}/export", params)
    wanted = set(task_ids)
    return [t for t in exported if int(t["id"]) in wanted]


class PredictionReader:
    """Full predictions of tasks: per task, or all of the project's once when many are needed."""

    def __init__(self, client: LabelStudio, project_id: int, expected_tasks: int) -> None:
        self.client, self.project_id = client, project_id
        self.bulk = expected_tasks > PREDICTIONS_BULK_THRESHOLD
        self._by_task: dict[int, list[dict[str, Any]]] | None = None

    def _load_project(self) -> dict[int, list[dict[str, Any]]]:
        by_task: dict[int, list[dict[str, Any]]] = {}
        for pred in _get_json(self.client, "api/predictions/", {"project": self.project_id}):
            by_task.setdefault(int(pred["task"]), []).append(pred)
        return by_task

    def for_task(self, task_id: int, ids: list[int]) -> list[dict[str, Any]]:
        if not ids:
            return []
        if self.bulk:
            if self._by_task is None:
                self._by_task = self._load_project()
            found = {p["id"]: p for p in self._by_task.get(task_id, [])}
            if set(ids) <= set(found):
                return [found[i] for i in ids]
        # a prediction newer than the bulk read: ask for this task only
        found = {p["id"]: p for p in _get_json(self.client, "api/predictions/", {"task": task_id})}
        return [found[i] for i in ids if i in found]


def _ids(items: Iterable[Any]) -> list[int]:
    return [int(x["id"] if isinstance(x, dict) else x) for x in items or []]


# --- state ---------------------------------------------------------------------------------


def open_state(out_dir: Path) -> sqlite3.Connection:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(out_dir / STATE_FILE)
    db.executescript(SCHEMA_SQL)
    db.commit()
    return db


def _task_rows(tables: TidyTables, predictions: list[dict[str, Any]]) -> dict[int, str]:
    """Each task's tidy rows as one JSON document."""
    out: dict[int, dict[str, list]] = {}
    for name, frame in tables.as_dict().items():
        for record in frame.astype(object).where(frame.notna(), None).to_dict("records"):
            out.setdefault(int(record["task_id"]), {"tasks": [], "judgments": [], "spans": [], "predictions": []})[
                name
            ].append(record)
    for record in predictions:
        out.setdefault(int(record["task_id"]), {"tasks": [], "judgments": [], "spans": [], "predictions": []})[
            "predictions"
        ].append(record)
    return {task_id: json.dumps(rows, ensure_ascii=False, sort_keys=True, default=str) for task_id, rows in out.items()}


def materialise(db: sqlite3.Connection) -> dict[str, pd.DataFrame]:
    """The tidy tables (and predictions) from the state, in a stable order."""
    records: dict[str, list[dict[str, Any]]] = {"tasks": [], "judgments": [], "spans": [], "predictions": []}
    for (rows,) in db.execute("SELECT rows FROM sync_task_rows ORDER BY project, task_id"):
        for name, items in json.loads(rows).items():
            records[name].extend(items)
    from sync.tidy import JUDGMENT_COLUMNS, SPAN_COLUMNS, TASK_COLUMNS

    frames = {}
    for name, columns in (
        ("tasks", TASK_COLUMNS),
        ("judgments", JUDGMENT_COLUMNS),
        ("spans", SPAN_COLUMNS),
        ("predictions", PREDICTION_COLUMNS),
    ):
        frame = pd.DataFrame(records[name])
        for column in columns:
            if column not in frame:
                frame[column] = pd.Series(dtype="object")
        extra = [c for c in frame.columns if c not in columns]
        frames[name] = frame[columns + extra]
    for column in ("start", "end"):
        frames["spans"][column] = frames["spans"][column].astype("Int64")
    return frames


def _server_now(client: LabelStudio) -> str:
    """Start time of the run. Label Studio has no clock endpoint; the local UTC time is recorded."""
    return datetime.now(UTC).isoformat()


# --- the sync -------------------------------------------------------------------------------


def sync_project(
    client: LabelStudio,
    db: sqlite3.Connection,
    project_id: int,
    schema_name: str,
    users: dict[int, str],
    batch_size: int,
    on_batch: Callable[[ProjectReport], None] | None = None,
) -> ProjectReport:
    report = ProjectReport(project=project_id, schema=schema_name)
    pause = float(os.environ.get("JUDGELAB_SYNC_BATCH_PAUSE") or 0)  # throttling (and kill tests)
    schema = all_schemas().get(schema_name)
    db.execute(
        "INSERT INTO sync_state (project, schema, last_sync_started_at) VALUES (?, ?, ?) "
        "ON CONFLICT(project) DO UPDATE SET schema=excluded.schema, last_sync_started_at=excluded.last_sync_started_at",
        (project_id, schema_name, _server_now(client)),
    )
    db.commit()

    current = list_task_signatures(client, project_id)
    report.tasks_listed = len(current)
    stored = dict(db.execute("SELECT task_id, signature FROM sync_task_rows WHERE project=?", (project_id,)))

    gone = sorted(set(stored) - set(current))
    if gone:
        with db:
            db.executemany("DELETE FROM sync_task_rows WHERE project=? AND task_id=?", [(project_id, t) for t in gone])
        report.tasks_deleted = len(gone)

    changed = sorted(t for t, sig in current.items() if stored.get(t) != sig)
    predictions = PredictionReader(client, project_id, len(changed))
    for start in range(0, len(changed), batch_size):
        batch = changed[start : start + batch_size]
        exported = export_tasks(client, project_id, batch)
        pred_rows: list[dict[str, Any]] = []
        for task in exported:
            full = predictions.for_task(int(task["id"]), _ids(task.get("predictions")))
            task["predictions"] = full
            pred_rows.extend(
                {
                    "project": project_id,
                    "task_id": int(task["id"]),
                    "prediction_id": int(p["id"]),
                    "model_version": p.get("model_version"),
                    "score": p.get("score"),
                    "created_at": p.get("created_at"),
                    "updated_at": p.get("updated_at"),
                }
                for p in full
            )
        tables = tidy_from_export(project_id, schema_name, schema, exported, users)
        rows = _task_rows(tables, pred_rows)
        with db:  # one transaction: the batch's rows and signatures together
            present = set()
            for task in exported:
                task_id = int(task["id"])
                present.add(task_id)
                db.execute(
                    "INSERT OR REPLACE INTO sync_task_rows (project, task_id, signature, rows) VALUES (?, ?, ?, ?)",
                    (project_id, task_id, _signature(task), rows.get(task_id, json.dumps({}))),
                )
            # listed but deleted before the export: drop them
            vanished = [t for t in batch if t not in present]
            db.executemany(
                "DELETE FROM sync_task_rows WHERE project=? AND task_id=?", [(project_id, t) for t in vanished]
            )
            report.tasks_deleted += sum(1 for t in vanished if t in stored)
        report.tasks_exported += len(exported)
        report.batches += 1
        if on_batch:
            on_batch(report)
        if pause:
            time.sleep(pause)

    with db:
        db.execute(
            "UPDATE sync_state SET last_sync_finished_at=?, runs=runs+1 WHERE project=?",
            (_server_now(client), project_id),
        )
    return report


def sync_tables(
    client: LabelStudio,
    out_dir: Path,
    project_ids: list[int] | None = None,
    full: bool = False,
    batch_size: int | None = None,
    write_parquet: bool = True,
    on_batch: Callable[[ProjectReport], None] | None = None,
) -> SyncReport:
    """Bring the tidy tables in ``out_dir`` up to date with Label Studio.

    ``full`` forgets the state first (every task is exported again). Projects that are no longer
    selected or no longer exist keep their rows only when ``project_ids`` names other projects;
    with the default selection (every judgelab project) rows of deleted projects are removed.
    """
    from sync.export import user_emails

    out_dir = Path(out_dir)
    batch_size = batch_size or batch_size_from_env()
    db = open_state(out_dir)
    try:
        report = SyncReport(full=full)
        projects = selected_projects(client, project_ids)
        if full:
            with db:
                selected = [p for p, _ in projects] if project_ids is not None else None
                if selected is None:
                    db.execute("DELETE FROM sync_task_rows")
                    db.execute("DELETE FROM sync_state")
                else:
                    for p in selected:
                        db.execute("DELETE FROM sync_task_rows WHERE project=?", (p,))
                        db.execute("DELETE FROM sync_state WHERE project=?", (p,))
        removed = 0
        if project_ids is None:  # projects deleted in Label Studio
            known = {p for (p,) in db.execute("SELECT DISTINCT project FROM sync_task_rows")}
            stale = known - {p for p, _ in projects}
            if stale:
                with db:
                    for p in stale:
                        removed += db.execute("DELETE FROM sync_task_rows WHERE project=?", (p,)).rowcount
                        db.execute("DELETE FROM sync_state WHERE project=?", (p,))
        users = user_emails(client)
        for project_id, schema_name in projects:
            report.projects.append(sync_project(client, db, project_id, schema_name, users, batch_size, on_batch))

        fingerprint = json.dumps(
            [list(r) for r in db.execute("SELECT project, task_id, signature FROM sync_task_rows ORDER BY 1, 2")]
        )
        previous = db.execute("SELECT value FROM sync_meta WHERE key='fingerprint'").fetchone()
        paths = [out_dir / STATE_FILE]
        if write_parquet:
            paths += [out_dir / f"{n}.parquet" for n in ("tasks", "judgments", "spans", "predictions")]
        up_to_date = previous is not None and previous[0] == fingerprint and all(p.exists() for p in paths)
        frames = materialise(db)
        report.counts = {name: len(frame) for name, frame in frames.items()}
        if not up_to_date or removed:
            _write_frames(db, frames, out_dir, write_parquet)
            with db:
                db.execute("INSERT OR REPLACE INTO sync_meta (key, value) VALUES ('fingerprint', ?)", (fingerprint,))
            report.tables_written = True
        report.paths = paths
        return report
    except ApiError as exc:
        raise SyncError(f"sync failed: {api_error_message(exc)}") from None
    finally:
        db.close()


def _write_frames(db: sqlite3.Connection, frames: dict[str, pd.DataFrame], out_dir: Path, parquet: bool) -> None:
    from sync.export import _storable

    with db:
        for name, frame in frames.items():
            _storable(frame).to_sql(name, db, if_exists="replace", index=False)
    if parquet:
        for name, frame in frames.items():
            tmp = out_dir / f".{name}.parquet.tmp"
            _storable(frame).to_parquet(tmp, index=False)
            tmp.replace(out_dir / f"{name}.parquet")


def tables_from_state(out_dir: Path) -> TidyTables:
    db = open_state(out_dir)
    try:
        frames = materialise(db)
    finally:
        db.close()
    return concat_tables([TidyTables(frames["tasks"], frames["judgments"], frames["spans"])])
