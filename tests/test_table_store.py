"""The sync's table store: rows replaced task by task in SQLite, Parquet written from it in chunks,
with fixed column types; and the state of an earlier judgelab (rows as JSON) migrated."""

from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pyarrow.parquet as pq
import pytest

from judgelab.sync import table_store
from judgelab.sync.export import read_tables
from judgelab.sync.incremental import STATE_FILE, open_state, tables_from_state


def task_rows(project: int, task_id: int, rating: int, *, data: dict | None = None, span_start: int | None = 3):
    """One task's rows as the sync makes them (a rating judgment, one span, one prediction)."""
    base = {"project": project, "task_id": task_id}
    return {
        "tasks": [{**base, "schema": "hotel_spans", "key": f"k{task_id}", **(data or {})}],
        "judgments": [
            {
                **base,
                "annotation_id": str(task_id * 10),
                "annotator": "a@x",
                "source": "human",
                "item": "impression",
                "value": rating,
                "created_at": "2026-01-01T00:00:00Z",
                "updated_at": None,
                "lead_time": 12.5,
                "was_cancelled": False,
                "ground_truth": task_id % 2 == 0,
            }
        ],
        "spans": [
            {
                **base,
                "annotation_id": str(task_id * 10),
                "annotator": "a@x",
                "source": "human",
                "field": "summary",
                "start": span_start,
                "end": None if span_start is None else span_start + 4,
                "text": "word",
                "label": "Incorrect",
                "note": None,
            }
        ],
        "predictions": [
            {
                **base,
                "prediction_id": task_id + 1000,
                "model_version": "m1",
                "score": None,
                "created_at": "2026-01-01T00:00:00Z",
                "updated_at": "2026-01-01T00:00:00Z",
            }
        ],
    }


def merged(*parts: dict) -> dict:
    out: dict[str, list] = {t: [] for t in table_store.TABLES}
    for part in parts:
        for table, rows in part.items():
            out[table] += rows
    return out


@pytest.fixture()
def db(tmp_path):
    connection = open_state(tmp_path)
    yield connection
    connection.close()


def test_replacing_a_task_replaces_all_its_rows_and_keeps_task_order(db, tmp_path):
    with db:
        table_store.insert_rows(db, merged(*(task_rows(1, t, 3) for t in (5, 6, 7)), task_rows(2, 1, 4)))
    with db:  # task 6 edited: new rating, no span any more
        new = task_rows(1, 6, 7)
        new["spans"] = []
        table_store.replace_tasks(db, 1, [6], new)
        table_store.delete_tasks(db, 1, [7])
    frames = table_store.read_frames(db)
    judgments = frames["judgments"]
    assert list(zip(judgments.project, judgments.task_id, judgments.value, strict=True)) == [
        (1, 5, "3"),
        (1, 6, "7"),  # replaced in place of the old row, and in (project, task_id) order
        (2, 1, "4"),
    ]
    assert list(frames["spans"].task_id) == [5, 1]
    assert table_store.counts(db) == {"tasks": 3, "judgments": 3, "spans": 2, "predictions": 3}
    table_store.write_parquet(db, tmp_path)
    assert list(pd.read_parquet(tmp_path / "judgments.parquet").task_id) == [5, 6, 1]


def test_parquet_types_are_fixed_whatever_the_chunk_holds(db, tmp_path):
    """Chunks of 2 rows: one chunk has only null span offsets, another only ints; text columns
    get text whatever the value's type; the reader sees Int64, bool, float64 and str."""
    rows = merged(
        task_rows(1, 1, 5, span_start=None),
        task_rows(1, 2, 4, span_start=None),
        task_rows(1, 3, 2),
        task_rows(1, 4, 1),
        task_rows(1, 5, 3, data={"lines": json.dumps(["a", "b"]), "score": 7}),
    )
    with db:
        table_store.insert_rows(db, rows)
    table_store.write_parquet(db, tmp_path, chunk_rows=2)
    spans = pd.read_parquet(tmp_path / "spans.parquet")
    assert str(spans["start"].dtype) == "Int64" and spans["start"].isna().tolist() == [True, True, False, False, False]
    assert spans["start"].dropna().tolist() == [3, 3, 3]
    judgments = pd.read_parquet(tmp_path / "judgments.parquet")
    assert judgments["value"].tolist() == ["5", "4", "2", "1", "3"]
    assert judgments["ground_truth"].dtype == bool and judgments["ground_truth"].tolist() == [
        False,
        True,
        False,
        True,
        False,
    ]
    assert judgments["lead_time"].dtype == "float64"
    predictions = pd.read_parquet(tmp_path / "predictions.parquet")
    assert predictions["score"].isna().all() and predictions["prediction_id"].tolist() == [1001, 1002, 1003, 1004, 1005]
    tasks = pd.read_parquet(tmp_path / "tasks.parquet")
    assert tasks["score"].iloc[4] == "7" and tasks["score"].iloc[:4].isna().all()
    assert json.loads(tasks["lines"].iloc[4]) == ["a", "b"]  # a data column added when first seen
    assert pq.read_metadata(tmp_path / "spans.parquet").num_row_groups == 3
    # the SQLite tables read back the same way, directly and through read_tables without Parquet
    frames = table_store.read_frames(db)
    for name in table_store.TABLES:
        pd.testing.assert_frame_equal(frames[name], pd.read_parquet(tmp_path / f"{name}.parquet"), obj=name)
    for name in table_store.TABLES:
        (tmp_path / f"{name}.parquet").unlink()
    stored = read_tables(tmp_path)
    pd.testing.assert_frame_equal(stored.spans, spans)
    pd.testing.assert_frame_equal(stored.judgments, judgments)


def test_long_texts_end_a_parquet_chunk_before_its_row_count(db, tmp_path):
    """A chunk holds at most about ``max_chunk_bytes`` of text: tasks with long texts are written
    in several row groups (memory bounded whatever the project's size) and read back the same."""
    texts = {t: f"task {t} " + "an article that goes on " * 40 for t in range(1, 31)}  # ~1 kB each
    with db:
        table_store.insert_rows(db, merged(*(task_rows(1, t, 3, data={"article": texts[t]}) for t in texts)))
    table_store.write_parquet(db, tmp_path, chunk_rows=1_000, max_chunk_bytes=10_000)
    assert pq.read_metadata(tmp_path / "tasks.parquet").num_row_groups == 3  # 30 kB of text, 10 kB a group
    assert pq.read_metadata(tmp_path / "judgments.parquet").num_row_groups == 1  # short rows: one group
    tasks = pd.read_parquet(tmp_path / "tasks.parquet")
    assert tasks.set_index("task_id")["article"].to_dict() == texts
    frames = table_store.read_frames(db)
    for name in table_store.TABLES:
        pd.testing.assert_frame_equal(frames[name], pd.read_parquet(tmp_path / f"{name}.parquet"), obj=name)


def test_empty_tables_still_have_their_columns(db, tmp_path):
    table_store.write_parquet(db, tmp_path)
    spans = pd.read_parquet(tmp_path / "spans.parquet")
    assert spans.empty
    assert list(spans.columns)[:6] == ["project", "task_id", "annotation_id", "annotator", "source", "field"]
    assert str(spans["start"].dtype) == "Int64"


def test_a_rolled_back_batch_leaves_no_rows_and_no_new_column(db):
    with db:
        table_store.insert_rows(db, task_rows(1, 1, 3))
    with pytest.raises(RuntimeError), db:
        table_store.replace_tasks(db, 1, [1], task_rows(1, 1, 9, data={"brand_new": "x"}))
        raise RuntimeError("killed before commit")
    frames = table_store.read_frames(db)
    assert frames["judgments"]["value"].tolist() == ["3"]
    assert "brand_new" not in frames["tasks"].columns


def test_state_of_an_earlier_judgelab_moves_into_the_tables(tmp_path):
    """The previous layout kept each task's rows as JSON next to its signature (and the tables
    as pandas wrote them): opening it moves the rows into the tables, nothing to export again."""
    legacy = sqlite3.connect(tmp_path / STATE_FILE)
    legacy.executescript(
        """
        CREATE TABLE sync_state (project INTEGER PRIMARY KEY, schema TEXT, last_sync_started_at TEXT,
            last_sync_finished_at TEXT, runs INTEGER NOT NULL DEFAULT 0, watermark TEXT,
            complete INTEGER NOT NULL DEFAULT 0, mode TEXT);
        CREATE TABLE sync_task_rows (project INTEGER NOT NULL, task_id INTEGER NOT NULL,
            signature TEXT NOT NULL, rows TEXT NOT NULL, PRIMARY KEY (project, task_id));
        CREATE TABLE sync_meta (key TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE tasks (project INTEGER, task_id INTEGER, schema TEXT, key TEXT);
        """
    )
    for task_id in (2, 1):
        legacy.execute(
            "INSERT INTO sync_task_rows VALUES (?, ?, ?, ?)",
            (7, task_id, json.dumps(["2026-01-01T00:00:00Z", 1, 0, 1]), json.dumps(task_rows(7, task_id, task_id))),
        )
    legacy.execute("INSERT INTO sync_state (project, schema, complete, watermark) VALUES (7, 'hotel_spans', 1, 'x')")
    legacy.commit()
    legacy.close()

    db = open_state(tmp_path)
    try:
        names = {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert "sync_task_rows" not in names
        assert sorted(db.execute("SELECT project, task_id FROM sync_tasks")) == [(7, 1), (7, 2)]
        assert db.execute("SELECT complete FROM sync_state WHERE project=7").fetchone() == (1,)
    finally:
        db.close()
    tables = tables_from_state(tmp_path)
    assert tables.tasks["task_id"].tolist() == [1, 2]
    assert tables.judgments["value"].tolist() == ["1", "2"]


def test_tables_kept_before_the_review_columns_are_rebuilt_and_every_task_exported_again(tmp_path):
    """A store written by a judgelab whose judgments/spans lacked region_id, origin and
    parent_prediction: keeping its rows would leave those empty for every unchanged task, so the
    tables are recreated and the signatures forgotten (the next sync exports everything)."""
    db = open_state(tmp_path)
    table_store.insert_rows(db, task_rows(1, 5, 4))
    db.execute("INSERT INTO sync_tasks (project, task_id, signature) VALUES (1, 5, 'sig')")
    db.execute("INSERT INTO sync_state (project, schema) VALUES (1, 'hotel_spans')")
    db.execute("ALTER TABLE judgments DROP COLUMN region_id")  # as an earlier judgelab created it
    db.commit()
    db.close()
    db = open_state(tmp_path)
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(judgments)")}
        assert {"region_id", "origin", "parent_prediction"} <= columns
        assert db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0] == 0
        assert db.execute("SELECT COUNT(*) FROM sync_tasks").fetchone()[0] == 0
        assert db.execute("SELECT COUNT(*) FROM sync_state").fetchone()[0] == 0
    finally:
        db.close()
    db = open_state(tmp_path)  # a current store is left alone
    try:
        table_store.insert_rows(db, task_rows(1, 6, 2))
        db.commit()
    finally:
        db.close()
    assert len(tables_from_state(tmp_path).judgments) == 1


def test_the_sample_columns_are_added_in_place_and_keep_their_types(tmp_path):
    """A store kept before ``inclusion_probability``, ``sampled`` and ``project_sample_of`` gets
    them in place (its rows and state kept); the columns read back as float64, a nullable boolean
    and a nullable integer, empty where a task has no sample, from SQLite and from Parquet alike."""
    db = open_state(tmp_path)
    table_store.insert_rows(db, task_rows(1, 5, 4))
    db.execute("INSERT INTO sync_tasks (project, task_id, signature) VALUES (1, 5, 'sig')")
    for column in ("inclusion_probability", "sampled", "project_sample_of"):
        db.execute(f"ALTER TABLE tasks DROP COLUMN {column}")  # as an earlier judgelab created it
    db.commit()
    db.close()
    db = open_state(tmp_path)
    try:
        assert db.execute("SELECT COUNT(*) FROM sync_tasks").fetchone()[0] == 1
        rows = task_rows(1, 6, 2, data={"inclusion_probability": 0.25, "sampled": True, "project_sample_of": 3})
        rows["tasks"] += task_rows(1, 7, 2, data={"inclusion_probability": 0.5, "sampled": False})["tasks"]
        with db:
            table_store.insert_rows(db, rows)
        table_store.write_parquet(db, tmp_path)
        frames = table_store.read_frames(db)
    finally:
        db.close()
    for tasks in (frames["tasks"], pd.read_parquet(tmp_path / "tasks.parquet")):
        assert tasks["task_id"].tolist() == [5, 6, 7]
        assert str(tasks["inclusion_probability"].dtype) == "float64"
        assert tasks["inclusion_probability"].isna().tolist() == [True, False, False]
        assert tasks["inclusion_probability"].iloc[1:].tolist() == [0.25, 0.5]
        assert str(tasks["sampled"].dtype) == "boolean" and tasks["sampled"].tolist()[1:] == [True, False]
        assert tasks["sampled"].isna().tolist() == [True, False, False]
        assert str(tasks["project_sample_of"].dtype) == "Int64"
        assert tasks["project_sample_of"].isna().tolist() == [True, False, True]
