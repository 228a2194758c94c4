"""The LLM's token usage next to the tidy tables: ``judgelab sync`` asks each ML backend
connected to a synced project (its URL is in Label Studio) for the project's usage per task
and model version (``GET /usage?per=task``) and stores it as the ``usage`` table
(:data:`judgelab.configs.tables.USAGE_COLUMNS`) in ``judgelab.sqlite`` and ``usage.parquet``.

A backend that keeps no usage (the offline annotator) adds nothing; one that does not answer
leaves the project's earlier rows in place and is named in a warning. A backend behind basic
auth is asked with ``JUDGELAB_BACKEND_BASIC_AUTH`` (``user:password``). The backend is asked
through :class:`judgelab.sync.backend_client.BackendClient` (retried as Label Studio's reads are).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgelab.configs.tables import USAGE_COLUMNS
from judgelab.sync.backend_client import BackendClient, BackendError, auth_from_env
from judgelab.sync.ls_api import as_api

STATE_FILE = "judgelab.sqlite"
PARQUET_FILE = "usage.parquet"
_INTEGER = {"project", "task_id", "requests", "answers", "cached", "unreported", "unpriced"}
_INTEGER |= {"prompt_tokens", "completion_tokens", "estimated_tokens"}
_REAL = {"cost", "estimated_cost"}
_TYPES = {c: "INTEGER" if c in _INTEGER else "REAL" if c in _REAL else "TEXT" for c in USAGE_COLUMNS}
_SQL = ", ".join(f'"{c}" {t}' for c, t in _TYPES.items())
_INSERT = "INSERT INTO usage ({}) VALUES ({})".format(
    ", ".join(f'"{c}"' for c in USAGE_COLUMNS), ", ".join("?" for _ in USAGE_COLUMNS)
)


@dataclass
class UsageSync:
    rows: int = 0
    backends: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    path: Path | None = None


def _backend_urls(api: Any, project_id: int) -> list[str]:
    backends = api.get_json("api/ml/", {"project": project_id})
    if isinstance(backends, dict):
        backends = backends.get("results") or []
    return sorted({str(b["url"]).rstrip("/") for b in backends if isinstance(b, dict) and b.get("url")})


def fetch_usage(backend: BackendClient, project_id: int) -> list[dict[str, Any]] | None:
    """The project's usage rows from one backend (None: it keeps no usage). Raises
    :class:`~judgelab.sync.backend_client.BackendError` when it does not answer."""
    payload = backend.usage(project_id, per="task")
    rows = payload.get("rows") if payload is not None else None
    if not isinstance(rows, list):
        return None
    return [{**row, "project": project_id, "backend": backend.url} for row in rows if isinstance(row, dict)]


def sync_usage(client: Any, out_dir: Path, project_ids: list[int], write_parquet: bool = True) -> UsageSync:
    """Replace the ``usage`` rows of ``project_ids`` with what their backends report now."""
    api = as_api(client)
    auth = auth_from_env()
    report = UsageSync()
    fetched: dict[int, list[dict[str, Any]]] = {}
    for project_id in project_ids:
        rows: list[dict[str, Any]] = []
        complete = True
        for url in _backend_urls(api, project_id):
            try:
                with BackendClient(url, auth) as backend:
                    got = fetch_usage(backend, project_id)
            except BackendError as exc:
                report.warnings.append(
                    f"ML backend {url} did not report project {project_id}'s LLM usage: {exc.detail}"
                )
                complete = False
                continue
            if got is not None:
                rows.extend(got)
                if url not in report.backends:
                    report.backends.append(url)
        if complete:
            fetched[project_id] = rows
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(out_dir / STATE_FILE) as db:
        db.execute(f"CREATE TABLE IF NOT EXISTS usage ({_SQL})")
        present = {row[1] for row in db.execute("PRAGMA table_info(usage)")}
        for column in [c for c in USAGE_COLUMNS if c not in present]:  # a table written by an older judgelab
            db.execute(f'ALTER TABLE usage ADD COLUMN "{column}" {_TYPES[column]}')
        for project_id, rows in fetched.items():
            db.execute("DELETE FROM usage WHERE project = ?", (project_id,))
            db.executemany(_INSERT, [tuple(row.get(c) for c in USAGE_COLUMNS) for row in rows])
        report.rows = db.execute("SELECT COUNT(*) FROM usage").fetchone()[0]
    if write_parquet:
        frame = read_usage_table(out_dir / STATE_FILE)
        if frame is not None:
            frame.to_parquet(out_dir / PARQUET_FILE, index=False)
            report.path = out_dir / PARQUET_FILE
    return report


def read_usage_table(db_path: Path) -> Any:
    import pandas as pd

    if not Path(db_path).exists():
        return None
    with sqlite3.connect(db_path) as db:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'usage'").fetchone():
            return None
        frame = pd.read_sql("SELECT * FROM usage ORDER BY project, task_id", db)
    frame = frame.reindex(columns=[*frame.columns, *[c for c in USAGE_COLUMNS if c not in frame.columns]])
    for column in _INTEGER:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("Int64")
    for column in _REAL:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    return frame


def read_usage(folder: Path) -> Any:
    """The ``usage`` table of a tables folder (a DataFrame), or None when it has none."""
    import pandas as pd

    folder = Path(folder)
    if (folder / PARQUET_FILE).exists():
        return pd.read_parquet(folder / PARQUET_FILE)
    return read_usage_table(folder / STATE_FILE)
