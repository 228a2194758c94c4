"""Incremental, idempotent and resumable sync of Label Studio projects into the tidy tables.

State lives with the tables, in ``<out>/judgelab.sqlite``:

- the tables ``tasks``, ``judgments``, ``spans`` and ``predictions`` themselves
  (:mod:`sync.table_store`), indexed by (project, task_id);
- ``sync_tasks``: per (project, task_id) the task's change signature (``updated_at``,
  ``total_annotations``, ``cancelled_annotations``, ``total_predictions``). A task is the unit
  of replacement: a changed task is exported again and all its rows in the four tables are
  replaced, so edited, added and deleted annotations and predictions of that task are
  reflected at once;
- ``sync_state``: per project its schema, when the last run started and finished, whether it
  completed, and the newest ``updated_at`` it saw (the watermark, on Label Studio's clock).

Finding what changed (:func:`plan_project`) costs what changed, not what the project holds:
the first sync exports id ranges without listing anything; later syncs list only the tasks
updated since the watermark (a Data Manager filter) and check the result against Label
Studio's own counts of tasks, annotations and predictions, listing every task only when those
disagree (deleted tasks, bulk actions) or the previous run did not complete. Label Studio 1.23
bumps ``Task.updated_at`` when an annotation of the task is created, updated (ground truth
included) or deleted, or a prediction is created or edited. Listings use ``review=1``, which skips the
Data Manager's "evaluate predictions automatically" branch, and ``GET /api/tasks/{id}`` (which
can call the ML backend) is never used: a sync never makes Label Studio call the backend.

Changed tasks are exported with the quick export filtered by ``ids[]``, one batch exported by
Label Studio while the previous one is turned into rows. Predictions come as ids there; their
bodies come from ``/api/predictions/`` for the whole project at once when many tasks need them,
else from one Data Manager page of each batch's tasks (see :class:`PredictionReader`).

Each batch's rows are written in one transaction together with its signatures, so a run
killed mid-way loses nothing: the next run sees the project as incomplete, lists every task and
exports those whose signature differs (replace-by-key makes redoing harmless). The Parquet
files are written from the SQLite tables, in chunks, at the end of a run that changed them.

The sync talks to Label Studio through :mod:`sync.ls_api` (plain HTTP, no SDK import) and loads
pandas and pyarrow, which only the Parquet writing needs, in the background while Label Studio
exports: a run's fixed cost stays well under a second.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from judgelab.configs.schema import Schema, all_schemas
from judgelab.sync import table_store
from judgelab.sync.client import SyncError
from judgelab.sync.ls_api import as_api
from judgelab.sync.projects import ProjectInfo, selected_project_info, selected_projects
from judgelab.sync.state_folder import folder_lock, prepare_out, storage_errors
from judgelab.sync.sync_reads import (
    MAX_EXPORT_IDS,
    PredictionReader,
    ProjectTotals,
    _first_task,
    _ids,
    _parse_time,
    _signature,
    export_tasks,
    list_task_signatures,
    project_totals,
)
from judgelab.sync.tidy import TidyTables, tidy_rows_from_export

log = logging.getLogger(__name__)

STATE_FILE = "judgelab.sqlite"
# Tasks per export request, the most Label Studio takes (:data:`MAX_EXPORT_IDS`): each request
# costs it a fixed part on top of its tasks (it counts the project's tasks and annotations and
# writes the export to its disk each time), so a full sync of 10,000 tasks on PostgreSQL took
# 18.2-18.8 s in batches of 900 against 19.8-20.5 s in batches of 500 (Label Studio's own export
# 15.2-16.1 s).
DEFAULT_BATCH_SIZE = MAX_EXPORT_IDS
RANGE_MIN_DENSITY = 0.25  # "ranges" mode when at least this share of the id range are the project's tasks
RECENT_MARGIN_SECONDS = 300  # "recent" mode lists tasks updated since the last run's newest update minus this
SQLITE_BUSY_SECONDS = 60  # a reader (judgelab report) may hold the file while a batch commits

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS sync_state (
    project INTEGER PRIMARY KEY,
    schema TEXT,
    last_sync_started_at TEXT,
    last_sync_finished_at TEXT,
    runs INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS sync_tasks (
    project INTEGER NOT NULL,
    task_id INTEGER NOT NULL,
    signature TEXT NOT NULL,
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
    tasks_planned: int = 0  # task ids asked for (in "ranges" mode some may be other projects')
    batches: int = 0
    mode: str = ""
    prediction_requests: int = 0


@dataclass
class SyncReport:
    full: bool
    projects: list[ProjectReport] = field(default_factory=list)
    tables_written: bool = False
    paths: list[Path] = field(default_factory=list)
    removed_projects: list[int] = field(default_factory=list)  # gone from Label Studio, rows removed
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


def batch_pause_from_env() -> float:
    """Seconds to wait after each batch (``JUDGELAB_SYNC_BATCH_PAUSE``: going easy on a busy Label
    Studio); 0 when unset."""
    try:
        return max(0.0, float(os.environ.get("JUDGELAB_SYNC_BATCH_PAUSE") or 0))
    except ValueError:
        raise SyncError("JUDGELAB_SYNC_BATCH_PAUSE must be a number of seconds") from None


# --- state ---------------------------------------------------------------------------------


def open_state(out_dir: Path) -> sqlite3.Connection:
    """The sync's SQLite file (created when absent), with state from an earlier judgelab migrated."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(out_dir / STATE_FILE, timeout=SQLITE_BUSY_SECONDS)
    db.executescript(SCHEMA_SQL)
    have = {row[1] for row in db.execute("PRAGMA table_info(sync_state)")}
    for column, kind in (("watermark", "TEXT"), ("complete", "INTEGER NOT NULL DEFAULT 0"), ("mode", "TEXT")):
        if column not in have:  # state written by an earlier judgelab
            db.execute(f"ALTER TABLE sync_state ADD COLUMN {column} {kind}")
    db.commit()
    with db:
        created = table_store.ensure_tables(db)
        if db.execute("SELECT 1 FROM sqlite_master WHERE name='sync_task_rows'").fetchone():
            _migrate_task_rows(db)
        elif created and db.execute("SELECT 1 FROM sync_tasks LIMIT 1").fetchone():
            # signatures without their rows: forget them, the next run exports everything again
            db.execute("DELETE FROM sync_tasks")
            db.execute("DELETE FROM sync_state")
    return db


def _migrate_task_rows(db: sqlite3.Connection) -> None:
    """State of judgelab before the tables were kept task by task: each task's rows were a JSON
    document next to its signature. They move into the tables; nothing is exported again."""
    for project, task_id, signature, rows in db.execute(
        "SELECT project, task_id, signature, rows FROM sync_task_rows ORDER BY project, task_id"
    ).fetchall():
        db.execute(
            "INSERT OR REPLACE INTO sync_tasks (project, task_id, signature) VALUES (?, ?, ?)",
            (project, task_id, signature),
        )
        table_store.replace_tasks(db, project, [task_id], json.loads(rows))
    db.execute("DROP TABLE sync_task_rows")
    _tables_changed(db)


def _tables_changed(db: sqlite3.Connection) -> None:
    """The Parquet files no longer match the tables (inside the transaction that changed them)."""
    db.execute("INSERT OR REPLACE INTO sync_meta (key, value) VALUES ('parquet_current', '0')")


def _drop_tasks(db: sqlite3.Connection, project: int, task_ids: list[int]) -> None:
    """Forget these tasks: their signatures and their rows (inside a transaction)."""
    db.executemany("DELETE FROM sync_tasks WHERE project=? AND task_id=?", [(project, t) for t in task_ids])
    table_store.delete_tasks(db, project, task_ids)


def _forget_project(db: sqlite3.Connection, project: int | None) -> None:
    """Forget a project (every project when None): state, signatures and rows."""
    where, args = ("", ()) if project is None else (" WHERE project=?", (project,))
    db.execute("DELETE FROM sync_tasks" + where, args)
    db.execute("DELETE FROM sync_state" + where, args)
    table_store.delete_project(db, project)
    _tables_changed(db)


def _parquet_current(db: sqlite3.Connection, paths: list[Path]) -> bool:
    return table_store.parquet_is_current(db) and all(p.exists() for p in paths)


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _watermark(signatures: Iterable[str]) -> str | None:
    """The latest ``updated_at`` among the signatures (Label Studio's clock, not ours)."""
    latest: datetime | None = None
    for signature in signatures:
        moment = _parse_time(json.loads(signature)[0])
        if moment is not None and (latest is None or moment > latest):
            latest = moment
    return latest.isoformat() if latest else None


def _predicted(signature: str) -> bool:
    return bool(json.loads(signature)[3])


def _totals(signatures: dict[int, str]) -> ProjectTotals:
    annotations = predictions = 0
    for signature in signatures.values():
        _, total_annotations, _, total_predictions = json.loads(signature)
        annotations += int(total_annotations or 0)
        predictions += int(total_predictions or 0)
    return ProjectTotals(len(signatures), annotations, predictions)


# --- the sync -------------------------------------------------------------------------------


@dataclass
class Plan:
    """Which task ids to export and which stored tasks are gone, and how that was found."""

    mode: str  # "ranges" | "recent" | "listing"
    candidates: list[int]
    batches: list[list[int]] = field(default_factory=list)
    listed: int = 0  # tasks whose signature Label Studio listed
    with_predictions: int = 0  # candidates that have predictions (an upper bound in "ranges" mode)
    project_predictions: int = 0
    gone: list[int] = field(default_factory=list)


def _id_batches(ids: list[int], size: int) -> list[list[int]]:
    return [ids[i : i + size] for i in range(0, len(ids), size)]


def plan_project(
    client: Any,
    db: sqlite3.Connection,
    project_id: int,
    batch_size: int,
    stored: dict[int, str],
    margin_seconds: float = RECENT_MARGIN_SECONDS,
) -> Plan:
    """How this run finds the changed tasks of a project.

    - ``ranges`` (first sync, or ``--full``): no listing at all. The project's smallest and
      largest task ids come from two one-row listings and the export is asked for every id in
      between, batch by batch (ids of other projects come back empty). Used when at least a
      quarter of the ids in that range are the project's; otherwise ``listing``.
    - ``recent`` (the previous run finished): only tasks updated since the previous run's
      newest ``updated_at`` (minus a safety margin) are listed. Their signatures, merged with
      the stored ones, must add up to Label Studio's own counts of tasks, annotations and
      predictions; if they do not (a task was deleted, or a bulk action changed counters
      without touching ``updated_at``), the run falls back to ``listing``.
    - ``listing`` (the previous run was killed, or the counts disagree): every task's signature
      is listed; tasks no longer listed are deleted.
    """
    state = db.execute("SELECT watermark, complete FROM sync_state WHERE project=?", (project_id,)).fetchone()
    if not stored:
        totals, low = _first_task(client, project_id)
        high = _first_task(client, project_id, descending=True)[1] if low is not None else None
        if low is None or high is None:
            return Plan("ranges", [])
        if totals.tasks >= RANGE_MIN_DENSITY * (high - low + 1):
            ids = list(range(low, high + 1))
            needing = totals.tasks if totals.predictions else 0
            return Plan("ranges", ids, _id_batches(ids, batch_size), 0, needing, totals.predictions)
    elif state is not None and state[1] and state[0]:
        since = _parse_time(state[0]) - timedelta(seconds=margin_seconds)
        recent = list_task_signatures(client, project_id, since=since)
        totals = project_totals(client, project_id)
        merged = {**stored, **recent}
        if _totals(merged) == totals:
            changed = sorted(t for t, sig in recent.items() if stored.get(t) != sig)
            needing = sum(1 for t in changed if _predicted(recent[t]))
            return Plan("recent", changed, _id_batches(changed, batch_size), len(recent), needing, totals.predictions)
        log.info(
            "project %s: Label Studio counts %s, the stored state plus recent changes %s: listing every task",
            project_id,
            totals,
            _totals(merged),
        )
    current = list_task_signatures(client, project_id)
    changed = sorted(t for t, sig in current.items() if stored.get(t) != sig)
    gone = sorted(set(stored) - set(current))
    needing = sum(1 for t in changed if _predicted(current[t]))
    return Plan(
        "listing", changed, _id_batches(changed, batch_size), len(current), needing, _totals(current).predictions, gone
    )


def _prediction_rows(project_id: int, task_id: int, predictions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "project": project_id,
            "task_id": task_id,
            "prediction_id": int(p["id"]),
            "model_version": p.get("model_version"),
            "score": p.get("score"),
            "created_at": p.get("created_at"),
            "updated_at": p.get("updated_at"),
        }
        for p in predictions
    ]


def _begin_run(db: sqlite3.Connection, project_id: int, schema_name: str, schema: Schema | None, plan: Plan) -> None:
    """Mark the project's state incomplete until the run ends (a run killed mid-way is then seen
    as incomplete), add the schema's task columns when tasks will be written, and drop the tasks
    gone from Label Studio."""
    with db:  # from here until the end of the run the state is "incomplete"
        if schema is not None and plan.batches:
            table_store.ensure_task_columns(db, [*schema.data_fields, *(schema.meta.get("derived_fields") or {})])
        db.execute(
            "INSERT INTO sync_state (project, schema, last_sync_started_at, complete, mode) VALUES (?, ?, ?, 0, ?) "
            "ON CONFLICT(project) DO UPDATE SET schema=excluded.schema, "
            "last_sync_started_at=excluded.last_sync_started_at, complete=0, mode=excluded.mode",
            (project_id, schema_name, _now(), plan.mode),
        )
    if plan.gone:
        with db:
            _drop_tasks(db, project_id, plan.gone)
            _tables_changed(db)


def _exported_batches(
    client: Any, project_id: int, plan: Plan, predictions: PredictionReader
) -> Iterator[tuple[list[int], list[dict[str, Any]], float]]:
    """Each planned batch's ids, its exported tasks and the seconds spent waiting for them.

    One request to Label Studio at a time, queued on one thread: the project's predictions (when
    read at once), then each batch's export while the caller turns the previous batch into rows.
    Close the generator (``contextlib.closing``) so that a failing caller still waits for the
    export under way."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="judgelab-export") as pool:
        preload = pool.submit(predictions.preload) if plan.batches and predictions.bulk else None
        pending = pool.submit(export_tasks, client, project_id, plan.batches[0]) if plan.batches else None
        for index, batch in enumerate(plan.batches):
            t0 = time.perf_counter()
            if preload is not None:
                preload.result()
                preload = None
            exported = pending.result()
            waited = time.perf_counter() - t0
            following = plan.batches[index + 1] if index + 1 < len(plan.batches) else None
            pending = pool.submit(export_tasks, client, project_id, following) if following else None
            yield batch, exported, waited


def _batch_rows(
    project_id: int,
    schema_name: str,
    schema: Schema | None,
    exported: list[dict[str, Any]],
    users: dict[int, str],
    settings: dict[str, Any] | None,
    predictions: PredictionReader,
) -> dict[str, list[dict[str, Any]]]:
    """A batch's rows of the four tables. The export names predictions by id: each task gets its
    predictions' bodies first, so that the judgments and spans of models are rows too."""
    pred_rows: list[dict[str, Any]] = []
    predictions.load_batch([int(t["id"]) for t in exported if t.get("predictions")])
    for task in exported:
        full = predictions.for_task(int(task["id"]), _ids(task.get("predictions")))
        task["predictions"] = full
        pred_rows.extend(_prediction_rows(project_id, int(task["id"]), full))
    task_rows, judgment_rows, span_rows = tidy_rows_from_export(
        project_id, schema_name, schema, exported, users, settings
    )
    return {"tasks": task_rows, "judgments": judgment_rows, "spans": span_rows, "predictions": pred_rows}


def _store_batch(
    db: sqlite3.Connection,
    project_id: int,
    batch: list[int],
    exported: list[dict[str, Any]],
    rows: dict[str, list[dict[str, Any]]],
    stored: dict[int, str],
) -> int:
    """Write a batch's rows and signatures in one transaction, and drop the stored tasks that were
    asked for but not exported (deleted meanwhile). Returns how many were dropped."""
    present = [int(task["id"]) for task in exported]
    # asked for but not exported: deleted meanwhile (or, in "ranges" mode, never a task here)
    vanished = sorted((set(batch) - set(present)) & set(stored))
    with db:  # one transaction: the batch's rows and signatures together
        _drop_tasks(db, project_id, vanished)
        # delete-then-insert whatever the state read at the start said: redoing a batch
        # (a run killed after it, a state that changed meanwhile) can never double rows
        table_store.replace_tasks(db, project_id, present, rows)
        db.executemany(
            "INSERT OR REPLACE INTO sync_tasks (project, task_id, signature) VALUES (?, ?, ?)",
            [(project_id, int(task["id"]), _signature(task)) for task in exported],
        )
        _tables_changed(db)
    return len(vanished)


def _finish_run(db: sqlite3.Connection, project_id: int, settings: dict[str, Any] | None) -> None:
    """Keep the project's columns (its title may have changed) and mark the state complete, with
    the watermark of every stored task's signature."""
    if settings is not None:  # a renamed project, or a store made before the title was kept
        with db:
            if table_store.set_project_columns(db, project_id, settings):
                _tables_changed(db)
    signatures = [sig for (sig,) in db.execute("SELECT signature FROM sync_tasks WHERE project=?", (project_id,))]
    with db:
        db.execute(
            "UPDATE sync_state SET last_sync_finished_at=?, runs=runs+1, complete=1, watermark=? WHERE project=?",
            (_now(), _watermark(signatures), project_id),
        )


def sync_project(
    client: Any,
    db: sqlite3.Connection,
    project_id: int,
    schema_name: str,
    users: dict[int, str],
    batch_size: int,
    on_batch: Callable[[ProjectReport], None] | None = None,
    margin_seconds: float = RECENT_MARGIN_SECONDS,
    warm: bool = False,
    info: ProjectInfo | None = None,
) -> ProjectReport:
    """Bring one project's rows in the state up to date with Label Studio: plan what changed
    (:func:`plan_project`), export it in batches, each batch's rows and signatures written in one
    transaction, and mark the project's state complete at the end."""
    report = ProjectReport(project=project_id, schema=schema_name)
    settings = info.task_columns() if info is not None else None
    started = time.perf_counter()
    pause = batch_pause_from_env()
    schema = all_schemas().get(schema_name)
    stored = dict(db.execute("SELECT task_id, signature FROM sync_tasks WHERE project=?", (project_id,)))
    plan = plan_project(client, db, project_id, batch_size, stored, margin_seconds)
    report.mode = plan.mode
    report.tasks_planned = len(plan.candidates)
    if warm and (plan.batches or plan.gone):  # the tables will change: Parquet will be written
        _warm_imports()
    log.info(
        "project %s: %s mode, %d task ids to export in %d batches (planned in %.2f s)",
        project_id,
        plan.mode,
        len(plan.candidates),
        len(plan.batches),
        time.perf_counter() - started,
    )
    _begin_run(db, project_id, schema_name, schema, plan)
    report.tasks_listed = plan.listed
    report.tasks_deleted = len(plan.gone)

    predictions = PredictionReader(client, project_id, plan.with_predictions, plan.project_predictions)
    waited = 0.0
    with closing(predictions), closing(_exported_batches(client, project_id, plan, predictions)) as batches:
        for batch, exported, wait in batches:
            waited += wait
            rows = _batch_rows(project_id, schema_name, schema, exported, users, settings, predictions)
            report.tasks_deleted += _store_batch(db, project_id, batch, exported, rows, stored)
            report.tasks_exported += len(exported)
            report.batches += 1
            if on_batch:
                on_batch(report)
            if pause:
                time.sleep(pause)
    report.prediction_requests = predictions.requests
    if plan.batches:
        _log_export(report, time.perf_counter() - started, waited, predictions)
    _finish_run(db, project_id, settings)
    return report


def _log_export(report: ProjectReport, seconds: float, waited: float, predictions: PredictionReader) -> None:
    """How long the export took, how much of it was waiting for Label Studio, and the prediction reads."""
    log.info(
        "project %s: %d tasks exported in %.1f s, %.1f s of it waiting for Label Studio; %d prediction reads (%.1f s)",
        report.project,
        report.tasks_exported,
        seconds,
        waited,
        predictions.requests,
        predictions.seconds,
    )


_warming = threading.Lock()
_warm_started = False


def _warm_imports() -> None:
    """Load what only the Parquet writing needs, on a background thread, once the run knows it
    will write Parquet: Label Studio is exporting then and the main thread mostly waits. (The
    import lock makes the later ``import`` at the point of use wait for this one.)"""
    global _warm_started
    with _warming:
        if _warm_started:
            return
        _warm_started = True

    def load() -> None:
        try:
            import pandas  # noqa: F401
            import pyarrow.parquet  # noqa: F401
        except Exception:  # noqa: BLE001 - the import at the point of use reports it
            pass

    threading.Thread(target=load, name="judgelab-imports", daemon=True).start()


def sync_tables(
    client: Any,
    out_dir: Path,
    project_ids: list[int] | None = None,
    full: bool = False,
    batch_size: int | None = None,
    write_parquet: bool = True,
    on_batch: Callable[[ProjectReport], None] | None = None,
    margin_seconds: float | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> SyncReport:
    """Bring the tidy tables in ``out_dir`` up to date with Label Studio.

    ``client``: a :class:`sync.ls_api.LabelStudioAPI` or an SDK client. ``full`` forgets the
    state first (every task is exported again). Rows of a project that no longer exists in Label
    Studio are removed when it is named in ``project_ids`` or, with the default selection (every
    judgelab project), when it is gone; a named project that Label Studio does not have and the
    folder never held raises :class:`SyncError` before anything changes.

    One run at a time per folder (:func:`sync.state_folder.folder_lock`): a second run waits,
    telling ``on_wait`` why, and then syncs what is left. Write errors (a full disk, a read-only
    or missing folder) raise :class:`SyncError`; each batch is one transaction, so what was
    stored before stays intact.
    """
    api = as_api(client)
    out_dir = prepare_out(Path(out_dir))
    batch_size = min(batch_size or batch_size_from_env(), MAX_EXPORT_IDS)
    margin = RECENT_MARGIN_SECONDS if margin_seconds is None else max(0.0, margin_seconds)
    with folder_lock(out_dir, on_wait), storage_errors(out_dir):
        first = not has_state(out_dir)
        db = open_state(out_dir)
        try:
            return _sync_locked(
                api, db, out_dir, project_ids, full or first, batch_size, write_parquet, on_batch, margin
            )
        finally:
            db.close()


def _gone_projects(api: Any, db: sqlite3.Connection, project_ids: list[int] | None, listed: list[int]) -> list[int]:
    """Projects the folder holds that Label Studio no longer has (among ``project_ids`` when given);
    raises for a named project that neither has."""
    stored = {p for (p,) in db.execute("SELECT project FROM sync_state UNION SELECT project FROM sync_tasks")}
    if project_ids is None:
        return sorted(stored - set(listed))
    missing = [p for p in project_ids if p not in set(listed)]
    unknown = [p for p in missing if p not in stored]
    if unknown:
        where = getattr(api, "url", "Label Studio")
        have = ", ".join(f"{pid} ({schema})" for pid, schema in selected_projects(api)[:10]) or "none"
        raise SyncError(
            f"project {', '.join(map(str, unknown))}: no such project in Label Studio at {where} "
            f"(its judgelab projects: {have}); nothing was changed"
        )
    return sorted(missing)


def _sync_locked(
    api: Any,
    db: sqlite3.Connection,
    out_dir: Path,
    project_ids: list[int] | None,
    full: bool,
    batch_size: int,
    write_parquet: bool,
    on_batch: Callable[[ProjectReport], None] | None,
    margin: float,
) -> SyncReport:
    paths = [out_dir / STATE_FILE]
    if write_parquet:
        paths += [out_dir / f"{n}.parquet" for n in table_store.TABLES]
    if write_parquet and not _parquet_current(db, paths[1:]):
        _warm_imports()
    report = SyncReport(full=full)
    infos = selected_project_info(api, project_ids)
    projects = [(info.id, info.schema) for info in infos]
    gone = _gone_projects(api, db, project_ids, [p for p, _ in projects])
    changed = False
    if full:
        with db:
            for p in [None] if project_ids is None else [p for p, _ in projects]:
                _forget_project(db, p)
        changed = True
    if gone:  # deleted in Label Studio: their rows leave the tables
        with db:
            for p in gone:
                _forget_project(db, p)
        report.removed_projects = gone
        changed = True
    users = api.user_emails()
    for info in infos:
        report.projects.append(
            sync_project(
                api, db, info.id, info.schema, users, batch_size, on_batch, margin, warm=write_parquet, info=info
            )
        )
    changed = changed or report.changed
    if write_parquet and not _parquet_current(db, paths[1:]):
        t0 = time.perf_counter()
        table_store.write_parquet(db, out_dir)
        log.info("Parquet files written in %.2f s", time.perf_counter() - t0)
        with db:
            db.execute("INSERT OR REPLACE INTO sync_meta (key, value) VALUES ('parquet_current', '1')")
        changed = True
    report.counts = table_store.counts(db)
    report.tables_written = changed
    report.paths = paths
    return report


def tables_from_state(out_dir: Path) -> TidyTables:
    db = open_state(out_dir)
    try:
        frames = table_store.read_frames(db)
    finally:
        db.close()
    return TidyTables(frames["tasks"], frames["judgments"], frames["spans"])
