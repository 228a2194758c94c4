"""The tidy tables in a local folder: written as Parquet files or one SQLite database, read back
(the newest copy), and the cut kept for each project (``cut.json``). ``judgelab sync``
(:mod:`sync.incremental`) fills the folder from Label Studio, ``judgelab load`` from a published
data set.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path

import pandas as pd

from judgelab.analysis.facets import Cut
from judgelab.sync.client import SyncError
from judgelab.sync.tidy import TidyTables


def write_tables(tables: TidyTables, out_dir: Path, fmt: str = "parquet") -> list[Path]:
    """Write the tables as Parquet files or one SQLite database; returns the paths written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    if fmt == "parquet":
        for name, frame in tables.as_dict().items():
            path = out_dir / f"{name}.parquet"
            _storable(frame).to_parquet(path, index=False)
            written.append(path)
    elif fmt == "sqlite":
        path = out_dir / "judgelab.sqlite"
        with sqlite3.connect(path) as db:
            for name, frame in tables.as_dict().items():
                _storable(frame).to_sql(name, db, if_exists="replace", index=False)
        written.append(path)
    else:
        raise SyncError(f"unknown table format {fmt!r} (use parquet or sqlite)")
    return written


def read_tables(folder: Path) -> TidyTables:
    """The tidy tables of a folder written by ``judgelab sync`` or ``judgelab load``, the newest copy.

    A sync keeps its tables in SQLite and writes Parquet from them at the end of a run: its
    Parquet files are read only when the store says they match the tables (after a
    ``--format sqlite`` run, or a run killed before its Parquet step, the SQLite tables are
    newer). For ``load``'s files, the more recently written of the two.
    """
    from judgelab.sync import table_store

    folder = Path(folder)
    parquet, db_path = folder / "tasks.parquet", folder / "judgelab.sqlite"
    names = ("tasks", "judgments", "spans")
    if db_path.exists():
        with closing(sqlite3.connect(db_path, timeout=60)) as db:
            if table_store.is_store(db):  # kept by 'judgelab sync': column types and order from the store
                if table_store.parquet_is_current(db) and all((folder / f"{n}.parquet").exists() for n in names):
                    return TidyTables(*(pd.read_parquet(folder / f"{n}.parquet") for n in names))
                frames = table_store.read_frames(db)
                return TidyTables(frames["tasks"], frames["judgments"], frames["spans"])
            if not parquet.exists() or db_path.stat().st_mtime >= parquet.stat().st_mtime:
                return TidyTables(*(pd.read_sql(f"SELECT * FROM {n}", db) for n in names))
    if parquet.exists():
        return TidyTables(*(pd.read_parquet(folder / f"{n}.parquet") for n in names))
    raise SyncError(f"{folder}: no tidy tables (tasks.parquet or judgelab.sqlite); run 'judgelab sync' first")


CUT_FILE = "cut.json"


def read_cuts(folder: Path) -> dict[str, Cut]:
    """The cut kept for each project of a tables folder (``cut.json``): a published data set's
    (written by ``judgelab load``) or one a team kept (``judgelab report --keep-cut``)."""
    path = Path(folder) / CUT_FILE
    if not path.exists():
        return {}
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        projects = stored["projects"]
        if not isinstance(projects, dict):
            raise TypeError("'projects' is not an object")
        return {str(project): Cut.from_json(cut) for project, cut in projects.items()}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SyncError(
            f"{path}: not a cut file judgelab wrote ({exc}); fix it or delete it to report the whole projects"
        ) from None


def write_cuts(folder: Path, cuts: Mapping[str, Cut]) -> Path:
    """Keep ``cuts`` (by project) in the folder's ``cut.json``, beside the other projects' cuts; a
    whole cut (no ``by``, no ``where``) removes the project's entry."""
    folder = Path(folder)
    kept = read_cuts(folder)
    for project, cut in cuts.items():
        if cut.is_whole and not cut.total:
            kept.pop(str(project), None)
        else:
            kept[str(project)] = cut
    path = folder / CUT_FILE
    folder.mkdir(parents=True, exist_ok=True)
    body = {"projects": {project: cut.to_json() for project, cut in sorted(kept.items())}}
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    temporary.replace(path)
    return path


def _storable(frame: pd.DataFrame) -> pd.DataFrame:
    """Object columns with mixed types become strings so Parquet and SQLite accept them."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object:
            kinds = {type(v) for v in out[column].dropna()}
            if len(kinds) > 1 or (kinds and not kinds <= {str, bool}):
                out[column] = out[column].map(lambda v: None if v is None or v is pd.NA else str(v))
    return out
