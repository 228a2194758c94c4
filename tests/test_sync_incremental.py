"""Incremental sync against a real Label Studio, on SQLite and on PostgreSQL: idempotent,
incremental, resumable, and never a reason for Label Studio to call the ML backend."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from backend_process import CountingBackend

from judgelab.configs.schema import all_schemas
from judgelab.sync.export import read_tables
from judgelab.sync.importers import rows_from_records
from judgelab.sync.incremental import STATE_FILE, has_state, sync_tables
from judgelab.sync.projects import ensure_project, import_rows

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]


def _rows(schema, items):
    return rows_from_records([(f"item {i}", t) for i, t in items], schema)


def _choice(control, value):
    return {"from_name": control, "to_name": "summary", "type": "choices", "value": {"choices": [value]}}


def _likert(value):
    return [_choice(c, value) for c in ("Coherence", "Consistency", "Fluency", "Relevance", "5W")]


def _second_user(client):
    for user in client.users.list():
        if user.email == "second.annotator@judgelab.local":
            return user
    return client.users.create(username="second", email="second.annotator@judgelab.local", password="second-pass-123")


PROJECT_TITLE = "Incremental sync test"


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def stack(request):
    """Every test here runs against Label Studio on SQLite and on PostgreSQL."""
    return request.getfixturevalue("live_stack" if request.param == "sqlite" else "live_stack_postgres")


@pytest.fixture(scope="module")
def project(stack):
    client = stack.client
    schema = all_schemas()["likert_rubric_es"]
    samples = schema.samples()
    ensured = ensure_project(client, schema, title=PROJECT_TITLE)
    import_rows(client, ensured.id, _rows(schema, list(enumerate(samples))[:-1]))
    tasks = sorted(t.id for t in client.tasks.list(project=ensured.id))
    backend = CountingBackend()
    for task_id in tasks[:3]:
        client.predictions.create(task=task_id, result=_likert("3"), score=0.75, model_version="stored-1")
    client.ml.create(url=backend.url, project=ensured.id, title="counter", is_interactive=False)
    client.projects.update(id=ensured.id, show_collab_predictions=True, evaluate_predictions_automatically=True)
    admin, second = client.users.whoami(), _second_user(client)
    annotations = {}
    for i, task_id in enumerate(tasks[:4]):
        annotations[(task_id, "admin")] = client.annotations.create(
            id=task_id, result=_likert(str(2 + i % 3)), completed_by=admin.id, lead_time=4.5
        ).id
        annotations[(task_id, "second")] = client.annotations.create(
            id=task_id, result=_likert("4"), completed_by=second.id, lead_time=7.0, ground_truth=(i == 0)
        ).id
    client.annotations.create(id=tasks[4], result=[], completed_by=second.id, was_cancelled=True)
    return {
        "id": ensured.id,
        "schema": schema,
        "samples": samples,
        "tasks": tasks,
        "annotations": annotations,
        "admin": admin,
        "second": second,
        "backend": backend,
        "client": client,
    }


def _sync(project, *args, **kwargs):
    """sync_tables, checking that Label Studio called the backend's /predict zero times meanwhile."""
    before = project["backend"].predict_calls
    report = sync_tables(project["client"], *args, **kwargs)
    assert project["backend"].predict_calls == before, project["backend"].requests
    return report


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.astype(str)
    return frame.sort_values(list(frame.columns)).reset_index(drop=True)


def assert_same_tables(left: Path, right: Path) -> None:
    a, b = read_tables(left), read_tables(right)
    for name in ("tasks", "judgments", "spans"):
        fa, fb = getattr(a, name), getattr(b, name)
        assert sorted(fa.columns) == sorted(fb.columns), name
        pd.testing.assert_frame_equal(_sorted(fa), _sorted(fb[fa.columns]), obj=name)
    pa, pb = pd.read_parquet(left / "predictions.parquet"), pd.read_parquet(right / "predictions.parquet")
    pd.testing.assert_frame_equal(_sorted(pa), _sorted(pb))


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.parquet"))}


def _table_rows(folder: Path) -> dict[str, list]:
    with sqlite3.connect(folder / STATE_FILE) as db:
        return {
            name: sorted(map(repr, db.execute(f"SELECT * FROM {name}").fetchall()))
            for name in ("tasks", "judgments", "spans", "predictions", "sync_tasks")
        }


def test_label_studio_keeps_its_data_in_the_database_under_test(project, stack):
    """The PostgreSQL case cannot silently run on SQLite: the project is a row of that database."""
    sqlite_file = stack.settings.home / "label-studio" / "label_studio.sqlite3"
    database = stack.settings.database
    if database is None:
        db, mark = sqlite3.connect(sqlite_file), "?"
    else:
        import psycopg

        assert not sqlite_file.exists()
        params = {"host": database.host, "port": database.port, "dbname": database.name}
        db, mark = psycopg.connect(**params, user=database.user, password=database.password), "%s"
    try:
        rows = db.execute(f"SELECT id FROM project WHERE title = {mark}", (PROJECT_TITLE,)).fetchall()
        tasks = db.execute(f"SELECT COUNT(*) FROM task WHERE project_id = {mark}", (project["id"],)).fetchone()[0]
    finally:
        db.close()
    assert [row[0] for row in rows] == [project["id"]]
    assert tasks == len(project["tasks"])


def test_full_sync_then_second_sync_changes_nothing(project, tmp_path):
    out = tmp_path / "a"
    first = _sync(project, out, [project["id"]], full=True)
    assert first.projects[0].mode == "ranges" and first.projects[0].tasks_listed == 0  # nothing listed
    assert has_state(out)
    assert first.tasks_exported == len(project["tasks"])
    tables = read_tables(out)
    judgments = tables.judgments
    human = judgments[judgments.source == "human"]
    assert set(human.annotation_id) >= {str(a) for a in project["annotations"].values()}
    assert human.lead_time.dropna().isin([4.5, 7.0]).all()
    assert human.was_cancelled.sum() == 1
    gt = human[human.ground_truth.astype(bool)]
    assert set(gt.annotation_id) == {str(project["annotations"][(project["tasks"][0], "second")])}
    assert set(human.annotator) == {project["admin"].email, project["second"].email}
    preds = pd.read_parquet(out / "predictions.parquet")
    assert len(preds) == 3 and set(preds.model_version) == {"stored-1"} and set(preds.score) == {0.75}
    assert (judgments.source == "model:stored-1").sum() == 3 * 5
    digest, rows = _digest(out), _table_rows(out)

    second = _sync(project, out, [project["id"]])
    assert second.projects[0].mode == "recent"
    assert second.tasks_exported == 0 and second.tasks_deleted == 0
    assert not second.tables_written
    assert _digest(out) == digest and _table_rows(out) == rows
    assert project["backend"].predict_calls == 0


def test_incremental_sync_reflects_exactly_the_changes(project, tmp_path):
    client, pid, tasks, anns = project["client"], project["id"], project["tasks"], project["annotations"]
    out = tmp_path / "inc"
    _sync(project, out, [pid], full=True)
    before = read_tables(out)

    added = client.annotations.create(id=tasks[5], result=_likert("1"), lead_time=2.0).id
    updated = anns[(tasks[1], "admin")]
    client.annotations.update(id=updated, result=_likert("5"))
    deleted = anns[(tasks[2], "second")]
    client.annotations.delete(id=deleted)
    # not the last task: Label Studio on SQLite gives the next new task the id of a deleted last one
    # (PostgreSQL's sequences never reuse an id; the assertions below hold for both)
    client.tasks.delete(id=tasks[6])
    schema, samples = project["schema"], project["samples"]
    import_rows(client, pid, _rows(schema, [(len(samples) - 1, samples[-1])]))

    report = _sync(project, out, [pid])
    assert report.projects[0].mode == "listing"  # a task is gone: Label Studio's task count disagrees
    assert report.tasks_exported == 4  # tasks[5], tasks[1], tasks[2] and the new task
    assert report.tasks_deleted == 1
    after = read_tables(out)
    j = after.judgments
    assert str(added) in set(j.annotation_id)
    assert str(deleted) not in set(j.annotation_id)
    assert set(j[j.annotation_id == str(updated)].value) == {"5"}
    assert tasks[6] not in set(after.tasks.task_id)
    assert len(after.tasks) == len(before.tasks)  # one deleted, one added
    new_ids = set(after.tasks.task_id) - set(before.tasks.task_id)
    assert len(new_ids) == 1
    untouched = set(tasks[:1]) | set(tasks[3:5])
    keep = lambda f: f[f.task_id.isin(untouched)]  # noqa: E731
    pd.testing.assert_frame_equal(_sorted(keep(before.judgments)), _sorted(keep(after.judgments)))

    fresh = tmp_path / "fresh"
    _sync(project, fresh, [pid], full=True)
    assert_same_tables(out, fresh)
    again = _sync(project, out, [pid])
    assert again.tasks_exported == 0 and not again.tables_written


def test_killed_sync_resumes_without_loss_or_duplicates(project, stack, tmp_path):
    pid = project["id"]
    out = tmp_path / "killed"
    env = {
        **os.environ,
        "JUDGELAB_LS_URL": stack.url,
        "JUDGELAB_LS_TOKEN": stack.creds.token,
        "JUDGELAB_SYNC_BATCH_SIZE": "2",
        "JUDGELAB_SYNC_BATCH_PAUSE": "1.5",
    }
    cmd = [sys.executable, "-c", "from sync.cli import main; main()", "sync", "--out", str(out), "--project", str(pid)]
    calls_before = project["backend"].predict_calls
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    committed = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if (out / STATE_FILE).exists():
            try:
                with sqlite3.connect(out / STATE_FILE, timeout=1) as db:
                    committed = db.execute("SELECT COUNT(*) FROM sync_tasks").fetchone()[0]
            except sqlite3.OperationalError:
                committed = 0
            if committed >= 2:
                break
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert project["backend"].predict_calls == calls_before
    with sqlite3.connect(out / STATE_FILE) as db:  # rows and signatures were committed together
        signed = {t for (t,) in db.execute("SELECT task_id FROM sync_tasks")}
        assert {t for (t,) in db.execute("SELECT task_id FROM tasks")} == signed
        assert {t for (t,) in db.execute("SELECT DISTINCT task_id FROM judgments")} <= signed
        committed = len(signed)
    # (not client.tasks.list here: that Data Manager call itself asks the backend for predictions
    # when "evaluate predictions automatically" is on)
    resumed = _sync(project, out, [pid])  # the state exists: incremental
    assert resumed.projects[0].mode == "listing"  # the killed run left the project incomplete
    total = resumed.counts["tasks"]
    assert resumed.projects[0].tasks_listed == total
    assert 2 <= committed < total
    assert resumed.tasks_exported == total - committed
    fresh = tmp_path / "fresh"
    _sync(project, fresh, [pid], full=True)
    assert_same_tables(out, fresh)
    assert project["backend"].predict_calls == calls_before


def test_cli_sync_defaults_to_incremental_and_full_flag(project, stack, tmp_path):
    env = {**os.environ, "JUDGELAB_LS_URL": stack.url, "JUDGELAB_LS_TOKEN": stack.creds.token}
    base = [sys.executable, "-c", "from sync.cli import main; main()", "sync", "--out", str(tmp_path)]
    base += ["--project", str(project["id"])]

    def run(*extra: str) -> str:
        done = subprocess.run(base + list(extra), cwd=ROOT, env=env, capture_output=True, text=True, check=True)
        return done.stdout

    calls_before = project["backend"].predict_calls
    assert run().startswith("full sync")
    assert run().startswith("incremental sync: 0 tasks exported")
    assert run("--full").startswith("full sync")
    # -v says where the time went, without httpx's request lines (each export URL lists its ids)
    verbose = base[:3] + ["-v"] + base[3:] + ["--full"]
    done = subprocess.run(verbose, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert "tasks exported in" in done.stderr and "Parquet files written" in done.stderr
    assert "ids%5B%5D" not in done.stderr and "HTTP Request" not in done.stderr
    assert project["backend"].predict_calls == calls_before


def _dm_action(client, project_id: int, action: str, task_ids: list[int]) -> None:
    response = client._client_wrapper.httpx_client.request(
        "api/dm/actions",
        method="POST",
        params={"id": action, "project": project_id},
        json={"selectedItems": {"all": False, "included": task_ids}},
    )
    assert response.status_code == 200, response.text


def test_recent_mode_lists_only_changed_tasks_and_counts_catch_the_rest(project, tmp_path):
    """After a completed sync only tasks updated since then are listed; Label Studio's counts
    send the sync back to a full listing when something slipped past ``updated_at``."""
    client, pid = project["client"], project["id"]
    out = tmp_path / "recent"
    _sync(project, out, [pid], full=True)
    tasks = sorted(read_tables(out).tasks.task_id)
    time.sleep(1.2)  # Label Studio's updated_at has microseconds; keep this change clearly later

    added = client.annotations.create(id=tasks[3], result=_likert("2"), lead_time=1.0).id
    report = _sync(project, out, [pid], margin_seconds=0)
    assert report.projects[0].mode == "recent"
    assert report.projects[0].tasks_listed == 1 and report.tasks_exported == 1
    assert str(added) in set(read_tables(out).judgments.annotation_id)

    # a Data Manager bulk action on two tasks, then a deleted task
    _dm_action(client, pid, "delete_tasks_annotations", [tasks[0], tasks[1]])
    report = _sync(project, out, [pid], margin_seconds=0)
    assert report.tasks_exported >= 2
    judgments = read_tables(out).judgments
    assert judgments[judgments.source == "human"].task_id.isin([tasks[0], tasks[1]]).sum() == 0
    client.tasks.delete(id=tasks[2])
    report = _sync(project, out, [pid], margin_seconds=0)
    assert report.projects[0].mode == "listing" and report.tasks_deleted == 1

    fresh = tmp_path / "fresh"
    _sync(project, fresh, [pid], full=True)
    assert_same_tables(out, fresh)
    again = _sync(project, out, [pid], margin_seconds=0)
    assert again.projects[0].mode == "recent" and again.tasks_exported == 0 and not again.tables_written


def test_changed_predictions_are_read_with_their_tasks_only(project, tmp_path):
    """An edited prediction and a new one: an incremental sync reads the predictions of the two
    changed tasks in one Data Manager page (not the project's, not task by task), without
    making Label Studio call the backend, and ends with the tables a full sync makes."""
    client, pid, tasks = project["client"], project["id"], project["tasks"]
    out = tmp_path / "preds"
    _sync(project, out, [pid], full=True)
    edited = client.predictions.list(task=tasks[0])[0]
    client.predictions.update(id=edited.id, score=0.25, result=_likert("1"))
    added = client.predictions.create(task=tasks[3], result=_likert("2"), score=0.5, model_version="stored-2").id

    report = _sync(project, out, [pid], margin_seconds=0)
    assert report.projects[0].mode == "recent" and report.tasks_exported == 2
    assert report.projects[0].prediction_requests == 1
    preds = pd.read_parquet(out / "predictions.parquet").set_index("prediction_id")
    assert preds.loc[edited.id, "score"] == 0.25
    assert preds.loc[added, "model_version"] == "stored-2" and preds.loc[added, "task_id"] == tasks[3]
    judgments = read_tables(out).judgments
    mine = judgments[judgments.annotation_id == f"prediction:{edited.id}"]
    assert set(mine.value) == {"1"}
    assert (judgments[judgments.task_id == tasks[3]].source == "model:stored-2").any()
    fresh = tmp_path / "fresh"
    _sync(project, fresh, [pid], full=True)
    assert_same_tables(out, fresh)
