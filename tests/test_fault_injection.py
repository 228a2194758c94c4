"""Pre-annotation and sync with Label Studio answering 500 and dropping connections at random
(tests/fault_proxy.py, in front of the session's real Label Studio): no command prints a
traceback, a command that fails says so and is run again, and in the end every task has one
prediction (not two) and the tidy tables equal Label Studio's own export."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from fault_proxy import FaultProxy
from snapshot_export import export_project_json, user_emails

from judgelab.configs.schema import get_schema, load_schema
from judgelab.sync.export import read_tables
from judgelab.sync.importers import rows_from_records
from judgelab.sync.projects import ensure_project, import_rows
from judgelab.sync.tidy import tidy_from_export

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from judgelab.sync.cli import main; main()"]
SCHEMA = "fault_likert"  # a copy of likert_rubric_es under its own name: its own default project
CRITERIA = ("Coherence", "Consistency", "Fluency", "Relevance", "5W")
MAX_RUNS = 12


def _configs(tmp: Path) -> Path:
    """A configs folder holding one schema, the Likert one renamed (so the CLI's default-titled
    project of that schema is this test's own)."""
    folder = tmp / "configs" / SCHEMA
    shutil.copytree(ROOT / "configs" / "likert_rubric_es", folder)
    meta = yaml.safe_load((folder / "schema.yaml").read_text(encoding="utf-8"))
    meta.update(name=SCHEMA, title="Fault injection (Likert)")
    (folder / "schema.yaml").write_text(yaml.safe_dump(meta, allow_unicode=True), encoding="utf-8")
    return folder.parent


@pytest.fixture(scope="module")
def faulty(live_stack, tmp_path_factory):
    configs = _configs(tmp_path_factory.mktemp("fault"))
    schema = load_schema(configs / SCHEMA)
    client = live_stack.client
    project = ensure_project(client, schema)
    base = [s["data"] for s in get_schema("likert_rubric_es").samples()]
    records = [(f"item {i}", {**base[i % len(base)], "id": f"fault-{i}"}) for i in range(20)]
    import_rows(client, project.id, rows_from_records(records, schema))
    for i, task in enumerate(sorted(client.tasks.list(project=project.id), key=lambda t: t.id)[:8]):
        result = [
            {"from_name": c, "to_name": "summary", "type": "choices", "value": {"choices": [str(1 + i % 5)]}}
            for c in CRITERIA
        ]
        client.annotations.create(id=task.id, result=result, lead_time=2.0)
    with FaultProxy(live_stack.url, rate=0.3, seed=15) as proxy:
        yield {"proxy": proxy, "project": project.id, "configs": configs, "stack": live_stack}


def _run_until_done(faulty, *args: str) -> list[subprocess.CompletedProcess]:
    """Run a CLI command through the failing proxy until it succeeds; no run may print a traceback."""
    stack = faulty["stack"]
    env = {
        **os.environ,
        "JUDGELAB_LS_URL": faulty["proxy"].url,
        "JUDGELAB_LS_TOKEN": stack.creds.token,
        "JUDGELAB_CONFIGS_DIR": str(faulty["configs"]),
        "JUDGELAB_HTTP_RETRY_PAUSE": "0.05",
    }
    runs = []
    for _ in range(MAX_RUNS):
        done = subprocess.run([*CLI, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        runs.append(done)
        assert "Traceback" not in done.stderr, done.stderr
        if done.returncode == 0:
            return runs
        last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
        assert done.returncode == 1 and last.startswith("error: "), done.stdout + done.stderr
    raise AssertionError(f"{args} did not succeed in {MAX_RUNS} runs: " + runs[-1].stderr)


def test_preannotate_then_sync_through_failures_end_equal_to_label_studio(faulty, tmp_path):
    stack, proxy, pid = faulty["stack"], faulty["proxy"], faulty["project"]
    runs = _run_until_done(
        faulty, "preannotate", "--schema", SCHEMA, "--push", "--chunk-size", "7", "--backend-url", stack.backend_url
    )
    assert "20/20 tasks have a prediction" in runs[-1].stdout
    print(f"\npreannotate: {len(runs)} run(s); faults so far {dict(proxy.faults)}, {proxy.passed} passed")
    versions = [
        [p.model_version for p in stack.client.predictions.list(task=t.id)]
        for t in stack.client.tasks.list(project=pid)
    ]
    assert all(len(v) == 1 for v in versions), versions  # one prediction per task, never two

    out = tmp_path / "tables"
    proxy.rate = 0.5  # the sync only reads: every read may fail twice in a row and still get through
    runs = _run_until_done(faulty, "sync", "--out", str(out), "--project", str(pid))
    print(f"sync: {len(runs)} run(s); faults in all {dict(proxy.faults)}, {proxy.passed} passed")
    assert sum(proxy.faults.values()) >= 10 and set(proxy.faults) == {
        "500",
        "drop",
        "500-after",
        "drop-after",
        "truncated",
    }

    proxy.enabled = False  # Label Studio's own export, read directly, is the reference
    exported = export_project_json(stack.client, pid)
    expected = tidy_from_export(pid, SCHEMA, None, exported, user_emails(stack.client))
    got = read_tables(out)
    for name, columns in (("tasks", ["task_id", "key", "article", "summary"]), ("judgments", None), ("spans", None)):
        left, right = getattr(got, name), getattr(expected, name)
        columns = columns or list(right.columns)
        assert len(left) == len(right), name
        pd.testing.assert_frame_equal(_sorted(left[columns]), _sorted(right[columns]), obj=name)
    predictions = pd.read_parquet(out / "predictions.parquet")
    assert sorted(predictions.prediction_id) == sorted(p["id"] for t in exported for p in t["predictions"])
    proxy.enabled = True


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.astype(str)
    return frame.sort_values(list(frame.columns)).reset_index(drop=True)
