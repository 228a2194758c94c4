"""The tidy tables as the sync keeps them: SQLite tables updated task by task, Parquet written from them.

``tasks``, ``judgments``, ``spans`` and ``predictions`` live in the sync's SQLite file with
declared column types and an index on ``(project, task_id)``. The sync replaces one task's rows
(:func:`replace_tasks`) in the same transaction as the task's change signature, so the tables
are never rebuilt in memory: a run costs what changed, and memory does not grow with the
project. The Parquet files are written from the SQLite tables in chunks of rows
(:func:`write_parquet`), in ``(project, task_id)`` order, only when the tables changed.

Column types are fixed, so every chunk, every run and every reader sees the same ones:
integers, floats, booleans, nullable integers (span offsets) and text. Text columns store text:
a value that is not a string is written as ``str(value)`` (a rating ``5`` becomes ``"5"``). The
task's own data fields become extra ``tasks`` columns (added when first seen), also text; lists
and objects there are JSON (see :func:`sync.tidy._cell`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgelab.configs.tables import TASK_EXTRA_COLUMN

if TYPE_CHECKING:
    import pandas as pd

TABLES = ("tasks", "judgments", "spans", "predictions")
EXTRA = TASK_EXTRA_COLUMN
# SQLite allows 2,000 columns; a table of hundreds of columns is no table to read either
MAX_DATA_COLUMNS = 200
# (column, kind): int, Int (nullable int), float, bool, Bool (nullable bool), text
_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "tasks": [
        ("project", "int"),
        ("task_id", "int"),
        ("schema", "text"),
        ("key", "text"),
        ("project_title", "text"),
        ("project_max_annotations", "Int"),
        ("project_overlap_percent", "Int"),
        (EXTRA, "text"),
        ("inclusion_probability", "float"),
        ("sampled", "Bool"),
        ("project_sample_of", "Int"),
    ],
    "judgments": [
        ("project", "int"),
        ("task_id", "int"),
        ("annotation_id", "text"),
        ("annotator", "text"),
        ("source", "text"),
        ("item", "text"),
        ("value", "text"),
        ("created_at", "text"),
        ("updated_at", "text"),
        ("lead_time", "float"),
        ("was_cancelled", "bool"),
        ("ground_truth", "bool"),
        ("region_id", "text"),
        ("origin", "text"),
        ("parent_prediction", "Int"),
    ],
    "spans": [
        ("project", "int"),
        ("task_id", "int"),
        ("annotation_id", "text"),
        ("annotator", "text"),
        ("source", "text"),
        ("field", "text"),
        ("start", "Int"),
        ("end", "Int"),
        ("text", "text"),
        ("label", "text"),
        ("note", "text"),
        ("region_id", "text"),
        ("origin", "text"),
        ("parent_prediction", "Int"),
        ("lead_time", "float"),
    ],
    "predictions": [
        ("project", "int"),
        ("task_id", "int"),
        ("prediction_id", "int"),
        ("model_version", "text"),
        ("score", "float"),
        ("created_at", "text"),
        ("updated_at", "text"),
    ],
}
_SQL_TYPE = {"int": "INTEGER", "Int": "INTEGER", "float": "REAL", "bool": "BOOLEAN", "Bool": "BOOLEAN", "text": "TEXT"}
# tasks columns added after stores existed: an earlier store gets them in place (empty), its rows kept
_ADDED_IN_PLACE = (EXTRA, "inclusion_probability", "sampled", "project_sample_of")
PARQUET_CHUNK_ROWS = 50_000
#: ... and at most about this many characters of text per chunk (a row group of the Parquet file)
PARQUET_CHUNK_BYTES = 8 * 1024 * 1024
FETCH_ROWS = 1_000  # rows read from SQLite at a time
_MARKER = "judgelab_table_store"  # sync_meta key: the tables are this module's (not pandas' to_sql)


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def columns(db: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    """(column, kind) of a table as it is now (tasks has its data columns after the fixed ones)."""
    kinds = dict(_COLUMNS[table])
    return [(row[1], kinds.get(row[1], "text")) for row in db.execute(f"PRAGMA table_info({_q(table)})")]


def _current(db: sqlite3.Connection) -> bool:
    """Whether the tables are this module's and have every fixed column of this version (the
    tasks columns of :data:`_ADDED_IN_PLACE` aside: :func:`ensure_tables` adds them in place)."""
    if not db.execute("SELECT 1 FROM sync_meta WHERE key=?", (_MARKER,)).fetchone():
        return False
    for table in TABLES:
        have = {row[1] for row in db.execute(f"PRAGMA table_info({_q(table)})")}
        if not have or any(column not in have for column, _ in _COLUMNS[table] if column not in _ADDED_IN_PLACE):
            return False
    return True


def ensure_tables(db: sqlite3.Connection) -> bool:
    """Create the tables (dropping tables an earlier judgelab materialised with pandas, or kept
    with fewer judgment or span columns: their rows lack what this version records, so the caller
    forgets the sync state and the next sync exports every task again). Returns True when they
    were (re)created empty."""
    db.execute("CREATE TABLE IF NOT EXISTS sync_meta (key TEXT PRIMARY KEY, value TEXT)")
    if _current(db):
        have = {c.casefold() for c, _ in columns(db, "tasks")}
        kinds = dict(_COLUMNS["tasks"])
        for name in _ADDED_IN_PLACE:  # a store of an earlier judgelab
            if name.casefold() not in have:
                db.execute(f"ALTER TABLE tasks ADD COLUMN {_q(name)} {_SQL_TYPE[kinds[name]]}")
        return False
    db.execute("DELETE FROM sync_meta WHERE key=?", (_MARKER,))
    for table in TABLES:
        db.execute(f"DROP TABLE IF EXISTS {_q(table)}")
        body = ", ".join(f"{_q(c)} {_SQL_TYPE[k]}" for c, k in _COLUMNS[table])
        db.execute(f"CREATE TABLE {_q(table)} ({body})")
        db.execute(f"CREATE INDEX {_q(table + '_task')} ON {_q(table)} (project, task_id)")
    db.execute("INSERT INTO sync_meta (key, value) VALUES (?, '1')", (_MARKER,))
    return True


def is_store(db: sqlite3.Connection) -> bool:
    """Whether this SQLite file holds tables kept by this module (a sync's ``--out`` folder)."""
    try:
        return db.execute("SELECT 1 FROM sync_meta WHERE key=?", (_MARKER,)).fetchone() is not None
    except sqlite3.OperationalError:  # no sync_meta: tables written by 'judgelab load'
        return False


def parquet_is_current(db: sqlite3.Connection) -> bool:
    """Whether the Parquet files were written from the tables as they are now (the sync marks
    them stale in every transaction that changes the tables)."""
    row = db.execute("SELECT value FROM sync_meta WHERE key='parquet_current'").fetchone()
    return row is not None and row[0] == "1"


def _cell(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "text":
        return value if isinstance(value, str) else str(value)
    if kind in ("bool", "Bool"):
        return bool(value)
    if kind == "float":
        try:
            return float(value)
        except (TypeError, ValueError):
            return None
    return int(value)


_NATIVE = {"text": (str,), "bool": (bool,), "Bool": (bool,), "float": (float,), "int": (int,), "Int": (int,)}


def _column(rows: list[dict[str, Any]], name: str, kind: str) -> list[Any]:
    """One column's cells; converted only when some value is not already of the column's type."""
    values = [row.get(name) for row in rows]
    native = _NATIVE[kind]
    if all(v is None or type(v) in native for v in values):
        return values
    return [_cell(v, kind) for v in values]


def ensure_task_columns(db: sqlite3.Connection, names: Iterable[str]) -> None:
    """Give each of ``names`` (a schema's data fields) a ``tasks`` column now, so that no task's
    key in another case (``Summary``) and no column limit can take it away; inside a transaction."""
    known = {c.casefold() for c, _ in columns(db, "tasks")}
    for name in names:
        if name and name.casefold() not in known:
            db.execute(f"ALTER TABLE tasks ADD COLUMN {_q(name)} TEXT")
            known.add(name.casefold())


def _task_rows(db: sqlite3.Connection, rows: list[dict[str, Any]], cols: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The tasks' rows fitted to the table: a data field gets a column of its own (added when
    first seen) unless a column already has its name in another case (SQLite's column names
    ignore case) or the table has :data:`MAX_DATA_COLUMNS` data columns; such fields go into the
    ``extra_fields`` column, a JSON object. ``cols`` grows with the columns added."""
    fixed = {c for c, _ in _COLUMNS["tasks"]}
    by_fold = {c.casefold(): c for c, _ in cols}
    data_columns = len(cols) - len(fixed)
    fitted = []
    for row in rows:
        given = row.get(EXTRA)
        extra: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
        out: dict[str, Any] = {}
        for key, value in row.items():
            if key in fixed:
                continue
            have = by_fold.get(key.casefold())
            if have is None and key.strip() and data_columns < MAX_DATA_COLUMNS:
                db.execute(f"ALTER TABLE tasks ADD COLUMN {_q(key)} TEXT")
                by_fold[key.casefold()] = have = key
                cols.append((key, "text"))
                data_columns += 1
            if have == key:
                out[key] = value
            else:
                extra[key] = value
        for key in fixed:
            out[key] = row.get(key)
        if isinstance(given, str):  # already JSON text
            out[EXTRA] = given
        else:
            out[EXTRA] = json.dumps(extra, ensure_ascii=False, sort_keys=True, default=str) if extra else None
        fitted.append(out)
    return fitted


def _insert(db: sqlite3.Connection, table: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    cols = columns(db, table)
    if table == "tasks":
        rows = _task_rows(db, rows, cols)
    names = ", ".join(_q(c) for c, _ in cols)
    marks = ", ".join("?" for _ in cols)
    db.executemany(
        f"INSERT INTO {_q(table)} ({names}) VALUES ({marks})",
        zip(*(_column(rows, c, k) for c, k in cols), strict=True),
    )


def set_project_columns(db: sqlite3.Connection, project: int, values: dict[str, Any]) -> bool:
    """Write a project's settings (title, overlap target) on all of its task rows, adding the
    columns to a store made before they existed; True when a row changed (call inside a
    transaction)."""
    known = {c for c, _ in columns(db, "tasks")}
    kinds = dict(_COLUMNS["tasks"])
    for name in values:
        if name not in known:
            db.execute(f"ALTER TABLE tasks ADD COLUMN {_q(name)} {_SQL_TYPE[kinds.get(name, 'text')]}")
    assignments = ", ".join(f"{_q(name)}=?" for name in values)
    differs = " OR ".join(f"{_q(name)} IS NOT ?" for name in values)
    cells = [_cell(value, kinds.get(name, "text")) for name, value in values.items()]
    cursor = db.execute(f"UPDATE tasks SET {assignments} WHERE project=? AND ({differs})", [*cells, project, *cells])
    return cursor.rowcount > 0


def delete_tasks(db: sqlite3.Connection, project: int, task_ids: Iterable[int]) -> None:
    keys = [(project, int(t)) for t in task_ids]
    for table in TABLES:
        db.executemany(f"DELETE FROM {_q(table)} WHERE project=? AND task_id=?", keys)


def delete_project(db: sqlite3.Connection, project: int | None = None) -> None:
    """Every row of a project (of every project when None)."""
    for table in TABLES:
        if project is None:
            db.execute(f"DELETE FROM {_q(table)}")
        else:
            db.execute(f"DELETE FROM {_q(table)} WHERE project=?", (project,))


def replace_tasks(
    db: sqlite3.Connection, project: int, task_ids: Iterable[int], rows: dict[str, list[dict[str, Any]]]
) -> None:
    """The rows of these tasks become ``rows`` (table name -> rows); call inside a transaction."""
    delete_tasks(db, project, task_ids)
    insert_rows(db, rows)


def insert_rows(db: sqlite3.Connection, rows: dict[str, list[dict[str, Any]]]) -> None:
    """Append rows (table name -> rows) to the tables."""
    for table in TABLES:
        _insert(db, table, rows.get(table) or [])


def counts(db: sqlite3.Connection) -> dict[str, int]:
    return {t: db.execute(f"SELECT COUNT(*) FROM {_q(t)}").fetchone()[0] for t in TABLES}


def _ordered(db: sqlite3.Connection, table: str) -> tuple[list[tuple[str, str]], sqlite3.Cursor]:
    cols = columns(db, table)
    names = ", ".join(_q(c) for c, _ in cols)
    # the (project, task_id) index holds rowids in order too: no sort needed
    return cols, db.execute(f"SELECT {names} FROM {_q(table)} ORDER BY project, task_id, rowid")


def _chunks(cursor: sqlite3.Cursor, size: int, max_bytes: int) -> Iterator[list[tuple]]:
    """The cursor's rows, ``size`` at a time or fewer: a chunk ends once its text reaches
    ``max_bytes`` (the tasks' texts: 50,000 tasks of a few kB each are 150 MB in one chunk, and
    several times that as objects; the tasks table of 100,000 tasks of 3.5 kB was written at a
    peak RSS of 1,079 MiB in chunks of 50,000 rows, of 207 MiB in chunks of 8 MB, in 0.75 s both)."""
    chunk: list[tuple] = []
    held = 0
    while True:
        rows = cursor.fetchmany(min(size, FETCH_ROWS))
        if not rows:
            break
        for row in rows:
            chunk.append(row)
            held += sum(len(v) for v in row if isinstance(v, str))
            if len(chunk) >= size or held >= max_bytes:
                yield chunk
                chunk, held = [], 0
    if chunk:
        yield chunk


def _series(values: list[Any], kind: str) -> pd.Series:
    import pandas as pd

    if kind == "text":  # pandas 3 reads Parquet text as its "str" dtype; pandas 2 as object
        return pd.Series(values, dtype="str" if int(pd.__version__.split(".")[0]) >= 3 else object)
    if kind == "bool":
        return pd.Series([bool(v) for v in values], dtype="bool")
    if kind == "Bool":
        return pd.Series([None if v is None else bool(v) for v in values], dtype="boolean")
    return pd.Series(values, dtype={"int": "int64", "Int": "Int64", "float": "float64"}[kind])


def _arrow_schema(cols: list[tuple[str, str]]):
    """The Parquet schema, with the pandas metadata that makes span offsets read back as Int64."""
    import pandas as pd
    import pyarrow as pa

    arrow = {
        "int": pa.int64(),
        "Int": pa.int64(),
        "float": pa.float64(),
        "bool": pa.bool_(),
        "Bool": pa.bool_(),
        "text": pa.large_string(),
    }
    empty = pd.DataFrame({c: _series([], k) for c, k in cols})
    schema = pa.Schema.from_pandas(empty, preserve_index=False)
    for i, (c, k) in enumerate(cols):
        schema = schema.set(i, pa.field(c, arrow[k]))
    return schema


def write_parquet(
    db: sqlite3.Connection,
    out_dir: Path,
    chunk_rows: int = PARQUET_CHUNK_ROWS,
    max_chunk_bytes: int = PARQUET_CHUNK_BYTES,
) -> list[Path]:
    """Each table as ``<out_dir>/<table>.parquet``, written chunk by chunk (a row group each: at
    most ``chunk_rows`` rows and about ``max_chunk_bytes`` of text) and swapped in whole."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out_dir = Path(out_dir)
    paths = []
    for table in TABLES:
        cols, cursor = _ordered(db, table)
        schema = _arrow_schema(cols)
        tmp = out_dir / f".{table}.parquet.tmp"
        try:
            with pq.ParquetWriter(tmp, schema) as writer:
                wrote = False
                for rows in _chunks(cursor, chunk_rows, max_chunk_bytes):
                    arrays = [
                        pa.array([bool(v) if v is not None else None for v in values], pa.bool_())
                        if kind in ("bool", "Bool")
                        else pa.array(values, schema.field(i).type)
                        for i, ((_, kind), values) in enumerate(zip(cols, zip(*rows, strict=True), strict=True))
                    ]
                    writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
                    wrote = True
                if not wrote:
                    writer.write_table(schema.empty_table())
        except BaseException:
            tmp.unlink(missing_ok=True)  # a full disk: no half-written file left behind
            raise
        path = out_dir / f"{table}.parquet"
        tmp.replace(path)
        paths.append(path)
    return paths


def read_frames(db: sqlite3.Connection) -> dict[str, pd.DataFrame]:
    """The tables as DataFrames with their column types, in ``(project, task_id)`` order."""
    import pandas as pd

    frames = {}
    for table in TABLES:
        cols, cursor = _ordered(db, table)
        rows = cursor.fetchall()
        frames[table] = pd.DataFrame({c: _series([r[i] for r in rows], k) for i, (c, k) in enumerate(cols)})
    return frames
