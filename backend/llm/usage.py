"""The token usage of the LLM requests, per request, task and model version, kept in the cache's
SQLite file (table ``usage``).

Every answer a task uses is one row: the row of the request that paid for it carries the
tokens the server reported (``prompt_tokens``, ``completion_tokens``) and their cost at the
judge's prices. When the server did not report usage, the tokens are estimated from the text
(:mod:`judgelab.backend.llm.token_estimate`) and the row has ``estimated`` = 1: the request was
paid for all the same, so it counts, and the summaries say how many requests, tokens and how
much of the cost were estimated (``unreported``, ``estimated_tokens``, ``estimated_cost``). Rows
written before estimates were made have NULL tokens; they count in ``unreported`` only. An
answer from the cache, or shared with another task of the same batch, is a row with ``cached`` =
1 and no tokens: it cost nothing. A :class:`UsageLog` is three methods, so the SQLite file can be
replaced by a shared store, like the cache.

Several processes may write one file (WAL, a busy timeout, one short transaction per batch).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import Any, Protocol

from judgelab.configs.tables import USAGE_COUNTS

log = logging.getLogger("judgelab.llm.usage")

SUMMARY_FIELDS = ("tasks", *USAGE_COUNTS)  # the counts of the tidy usage table, and the tasks


@dataclass(frozen=True)
class UsageRow:
    project: str | None
    task_id: int | None
    model: str
    model_version: str
    request: str | None  # the HTTP request that brought the answer (None: from the cache)
    sample: int
    prompt_tokens: int | None
    completion_tokens: int | None
    cached: bool
    cost: float | None
    estimated: bool = False  # the tokens (and cost) are estimated: the server reported no usage
    at: float = 0.0


COLUMNS = [f.name for f in fields(UsageRow)]


class UsageLog(Protocol):
    def record(self, rows: list[UsageRow]) -> None: ...

    def summary(self, project: str | None = None, after: int = 0) -> dict[str, Any]: ...

    def per_task(self, project: str) -> list[dict[str, Any]]: ...


class SQLiteUsage:
    """The usage table in a SQLite file (``":memory:"``: in this process only, when the response
    cache is off). A log that cannot be written logs a warning once and never fails a batch."""

    def __init__(self, path: str | Path, busy_timeout_s: float = 5.0):
        self.path = str(path) if str(path) == ":memory:" else str(Path(path).expanduser())
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
        self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
        if self.path != ":memory:":
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS usage (id INTEGER PRIMARY KEY AUTOINCREMENT, project TEXT, task_id INTEGER, "
            "model TEXT NOT NULL, model_version TEXT NOT NULL, request TEXT, sample INTEGER NOT NULL, "
            "prompt_tokens INTEGER, completion_tokens INTEGER, cached INTEGER NOT NULL, cost REAL, "
            "estimated INTEGER NOT NULL DEFAULT 0, at REAL NOT NULL)"
        )
        present = {row[1] for row in self._conn.execute("PRAGMA table_info(usage)")}
        if "estimated" not in present:  # a log written before estimates were made
            self._conn.execute("ALTER TABLE usage ADD COLUMN estimated INTEGER NOT NULL DEFAULT 0")
        self._conn.execute("CREATE INDEX IF NOT EXISTS usage_by_project ON usage (project, id)")
        self._warned = False

    def record(self, rows: list[UsageRow]) -> None:
        if not rows:
            return
        now = time.time()
        values = [(*astuple(row)[:-1], row.at or now) for row in rows]
        placeholders = ", ".join("?" for _ in COLUMNS)
        try:
            with self._lock:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    self._conn.executemany(f"INSERT INTO usage ({', '.join(COLUMNS)}) VALUES ({placeholders})", values)
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if not self._warned:
                log.warning("token usage %s: write failed (%s); usage is not recorded", self.path, exc)
                self._warned = True

    def _query(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    def last_id(self) -> int:
        return int(self._query("SELECT COALESCE(MAX(id), 0) FROM usage", ())[0][0])

    def summary(self, project: str | None = None, after: int = 0) -> dict[str, Any]:
        """Totals since row ``after`` (0: all), for one project or all, per model version and
        overall; ``last_id`` is the newest row (ask again with ``after=last_id`` for what comes
        next); ``max_task_cost`` is the dearest task (all its judges and samples)."""
        where, args = "id > ?", (int(after),)
        if project is not None:
            where, args = where + " AND project = ?", (*args, str(project))
        last_id = self.last_id()
        by_version = [
            dict(zip(("model_version", "model", *SUMMARY_FIELDS), row, strict=True))
            for row in self._query(
                f"SELECT model_version, model, {_AGGREGATES} FROM usage WHERE {where} "
                "GROUP BY model_version, model ORDER BY MIN(id)",
                args,
            )
        ]
        [total_row] = self._query(f"SELECT {_AGGREGATES} FROM usage WHERE {where}", args)
        [(max_task_cost,)] = self._query(
            f"SELECT MAX(c) FROM (SELECT SUM(cost) AS c FROM usage WHERE {where} GROUP BY project, task_id)", args
        )
        return {
            "last_id": last_id,
            "after": int(after),
            "project": project,
            "total": dict(zip(SUMMARY_FIELDS, total_row, strict=True)),
            "by_model_version": by_version,
            "max_task_cost": max_task_cost,
        }

    def per_task(self, project: str) -> list[dict[str, Any]]:
        """One row per task and model version of ``project`` (what ``judgelab sync`` stores)."""
        keys = ("task_id", "model_version", "model", *SUMMARY_FIELDS[1:])
        rows = self._query(
            f"SELECT task_id, model_version, model, {_AGGREGATES_NO_TASKS} FROM usage WHERE project = ? "
            "GROUP BY task_id, model_version, model ORDER BY task_id, MIN(id)",
            (str(project),),
        )
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()


_AGGREGATES_NO_TASKS = (
    "COUNT(DISTINCT CASE WHEN cached = 0 THEN request END), "
    "SUM(CASE WHEN cached = 0 THEN 1 ELSE 0 END), "
    "SUM(cached), "
    "COUNT(DISTINCT CASE WHEN cached = 0 AND (estimated = 1 OR prompt_tokens IS NULL) THEN request END), "
    "COUNT(DISTINCT CASE WHEN cached = 0 AND prompt_tokens IS NOT NULL AND cost IS NULL THEN request END), "
    "COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0), SUM(cost), "
    "COALESCE(SUM(CASE WHEN estimated = 1 THEN prompt_tokens + completion_tokens END), 0), "
    "SUM(CASE WHEN estimated = 1 THEN cost END)"
)
_AGGREGATES = "COUNT(DISTINCT task_id), " + _AGGREGATES_NO_TASKS


def open_usage(path: str | Path | None) -> SQLiteUsage:
    """The usage log in the cache's file (None: in memory); a file that cannot be opened gives an
    in-memory log and a warning, like the cache."""
    if path is None:
        return SQLiteUsage(":memory:")
    try:
        return SQLiteUsage(path)
    except (OSError, sqlite3.Error) as exc:
        log.warning("token usage %s cannot be opened (%s); usage is kept in memory", path, exc)
        return SQLiteUsage(":memory:")
