"""The workflow of bench/scale_workflow.py on a small project, against a real Label Studio and
backend: a file of tasks with their annotations imported (streamed: the annotators' accounts
made, every annotation added once), pre-annotated, synced and reported.

Every command a user waits for shows a progress bar with a rate and the time left. The bars are
forced on (stderr is not a terminal here) and, once each command is done, each must have had its
total (without one tqdm shows no time left), reached it, and render the rate and the time left.
Nothing here depends on how fast anything ran."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections import Counter
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner
from fault_proxy import FaultProxy

from judgelab.configs.schema import get_schema
from judgelab.sync.backend_link import connect_backend
from judgelab.sync.bulk_predict import push_predictions
from judgelab.sync.cli import base, main, projects, tables
from judgelab.sync.preannotate import PreannotateOptions

pytestmark = pytest.mark.integration

# tqdm's layout with a total: "12/12 [00:03<00:00, 4.01task/s]" (a slow rate reads "2.50s/task")
RATE_AND_TIME_LEFT = re.compile(r"\d+/\d+ \[\d\d:\d\d<\d\d:\d\d, *[\d.]+ ?(\w+/s|s/\w+)\]")


@pytest.fixture
def bars(monkeypatch) -> list:
    made: list = []

    def recorded(total, desc, unit="task", **_):
        bar = base.progress_bar(total, desc, unit, disable=False)
        bar.shown_counts = []  # the count after each update: how the bar moved
        update = bar.update

        def counted(n=1):
            moved = update(n)
            bar.shown_counts.append(bar.n)
            return moved

        bar.update = counted
        made.append(bar)
        return bar

    for module in (projects, tables):
        monkeypatch.setattr(module, "progress_bar", recorded)
    return made


def _run(stack, *args: str) -> str:
    env = {"JUDGELAB_LS_URL": stack.url, "JUDGELAB_LS_TOKEN": stack.creds.token}
    result = CliRunner().invoke(main, list(args), env=env)
    assert result.exit_code == 0, result.output
    return result.output


def _shown(bars: list, command: str) -> list[str]:
    assert bars, f"{command}: no progress bar"
    shown = []
    for bar in bars:
        assert bar.total, f"{command}: bar {bar.desc!r} never got its total, so it shows no time left"
        assert bar.n == bar.total, f"{command}: bar {bar.desc!r} stopped at {bar.n}/{bar.total}"
        text = bar.format_meter(**bar.format_dict)
        assert RATE_AND_TIME_LEFT.search(text), f"{command}: no rate and time left in {text!r}"
        shown.append(text)
    bars.clear()
    return shown


def _hotel_tasks_imported(stack, tmp_path, prefix: str, n: int) -> str:
    """The title of a new project of ``n`` hotel tasks imported through the CLI (``prefix`` names
    them and the project)."""
    schema = get_schema("hotel_spans")
    samples = [s["data"] if "data" in s else s for s in schema.samples()]
    tag = uuid.uuid4().hex[:8]
    tasks = tmp_path / "tasks.jsonl"
    rows = ({"data": {**samples[i % len(samples)], "id": f"{prefix}-{tag}-{i}"}} for i in range(n))
    tasks.write_text("".join(json.dumps(row) + "\n" for row in rows))
    title = f"{prefix} {tag}"
    _run(stack, "import", "--schema", schema.name, "--title", title, str(tasks))
    return title


def test_import_preannotate_sync_and_report_show_a_rate_and_the_time_left(live_stack, bars, tmp_path):
    schema = get_schema("hotel_spans")
    samples = [s["data"] if "data" in s else s for s in schema.samples()]
    tasks = tmp_path / "tasks.jsonl"
    raters = [f"scale-{uuid.uuid4().hex[:8]}-{i}@judgelab.local" for i in range(3)]
    rating = [{"from_name": "impression", "to_name": "summary", "type": "rating", "value": {"rating": 4}}]
    with tasks.open("w") as out:
        for i in range(12):
            data = {**samples[i % len(samples)], "id": f"bar-{i}"}
            annotations = [{"completed_by": {"email": r}, "result": rating} for r in raters[: 1 + i % 3]]
            out.write(json.dumps({"data": data, "annotations": annotations}) + "\n")
    title = "Progress bars"

    imported = _run(live_stack, "import", "--schema", schema.name, "--title", title, str(tasks))
    (shown,) = _shown(bars, "import")
    assert "12/12" in shown
    assert "24 annotation(s) added, 0 already there; 3 rater account(s) created" in imported, imported
    client = live_stack.client
    (project,) = [p for p in client.projects.list() if p.title == title]
    emails = {u.id: u.email for u in client.users.list()}
    per_task = sorted(
        sorted(emails[a["completed_by"]] for a in t.annotations or [])
        for t in client.tasks.list(project=project.id, fields="all")
    )
    assert per_task == sorted(sorted(raters[: 1 + i % 3]) for i in range(12))

    # run again (a killed import's re-run): the tasks are there, and their annotations are checked
    # against Label Studio's, which a user waits for too
    again = _run(live_stack, "import", "--schema", schema.name, "--title", title, str(tasks))
    shown = _shown(bars, "import run again")
    assert len(shown) == 2 and all("12/12" in text for text in shown), shown
    assert "0 imported, 12 already in project" in again, again
    assert "0 annotation(s) added, 24 already there" in again, again

    pushed = _run(live_stack, "preannotate", "--title", title, "--push", "--backend-url", live_stack.backend_url)
    (shown,) = _shown(bars, "preannotate")
    assert "12/12" in shown
    # where a long push's time went: Label Studio's part and the backend's, told apart
    took = re.search(
        r"time spent: Label Studio reading tasks ([\d.]+) s, the backend predicting ([\d.]+) s, "
        r"Label Studio checking and importing predictions ([\d.]+) s",
        pushed,
    )
    assert took, pushed

    out = tmp_path / "tables"
    _run(live_stack, "sync", "--out", str(out), "--title", title)
    (shown,) = _shown(bars, "sync")
    assert "12/12" in shown

    _run(live_stack, "report", "--tables", str(out), "--out", str(tmp_path / "report"), "--n-boot", "50")
    (bar,) = bars
    (shown,) = _shown(bars, "report")
    # the report's bar counts its sections as they are built: it moves while one project's report
    # is made (a big project's takes minutes), not once at the end
    assert bar.unit == "section", shown
    assert len(bar.shown_counts) >= 10 and bar.shown_counts == sorted(set(bar.shown_counts)), bar.shown_counts

    # --json gives the same three parts of the push's time as numbers
    more = tmp_path / "more.jsonl"
    more.write_text(
        "".join(json.dumps({"data": {**samples[i % len(samples)], "id": f"bar-more-{i}"}}) + "\n" for i in range(2))
    )
    _run(live_stack, "import", "--schema", schema.name, "--title", title, str(more))
    env = {"JUDGELAB_LS_URL": live_stack.url, "JUDGELAB_LS_TOKEN": live_stack.creds.token}
    args = ["preannotate", "--title", title, "--push", "--backend-url", live_stack.backend_url, "--json"]
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["projects"]
    assert entry["added"] == 2 and set(entry["seconds"]) == {"reading", "predicting", "importing"}
    assert all(seconds >= 0 for seconds in entry["seconds"].values())


def test_two_pushes_at_once_give_every_task_one_prediction(live_stack, tmp_path):
    """Two `preannotate --push` runs started together on one project: the second waits for the
    first and then finds nothing left, so no task gets two predictions of the version. (Without
    the wait, runs that overlapped split the tasks between them, each only as safe as its check
    before an import.)"""
    n = 60
    title = _hotel_tasks_imported(live_stack, tmp_path, "Two-pushes", n)
    env = {**os.environ, "JUDGELAB_LS_URL": live_stack.url, "JUDGELAB_LS_TOKEN": live_stack.creds.token}
    args = ["preannotate", "--title", title, "--push", "--backend-url", live_stack.backend_url, "--chunk-size", "3"]
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "judgelab.sync.cli", *args, "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=600) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    added = [json.loads(stdout)["projects"][0]["added"] for stdout, _ in outputs]
    assert sorted(added) == [0, n], outputs  # one run pushed every task, the other found them done
    client = live_stack.client
    (project,) = [p for p in client.projects.list() if p.title == title]
    per_task = [
        [p.model_version for p in client.predictions.list(task=t.id)] for t in client.tasks.list(project=project.id)
    ]
    assert len(per_task) == n and all(len(versions) == 1 for versions in per_task), per_task


def test_predictions_made_elsewhere_during_a_push_are_never_doubled(live_stack, tmp_path):
    """While a push runs, a prediction of its version can come from elsewhere: an annotator who
    opens a task makes Label Studio ask the backend for one. Here, once the push has imported its
    first group, such a prediction is made (through Label Studio's API) for a task the push has
    yet to import, and one of another version for another such task. The first task
    keeps that prediction alone; every other task gets the push's, the second beside its other
    version's."""
    n = 30
    title = _hotel_tasks_imported(live_stack, tmp_path, "Strangers", n)
    client = live_stack.client
    (project,) = [p for p in client.projects.list() if p.title == title]
    version = connect_backend(client, project.id, live_stack.backend_url).model_version
    ids = sorted(t.id for t in client.tasks.list(project=project.id))
    made: list[int] = []

    def stranger(_done: int) -> None:
        if made:
            return
        for task_id, model_version in ((ids[-2], version), (ids[-1], "made-by-hand")):
            client.predictions.create(task=task_id, result=[], score=0.125, model_version=model_version)
            made.append(task_id)

    report = push_predictions(
        client, project.id, live_stack.backend_url, version, PreannotateOptions(chunk_size=3), progress=stranger
    )
    assert made and (report.pushed, report.unfinished) == (n - 1, 0)
    versions = {task_id: sorted(p.model_version for p in client.predictions.list(task=task_id)) for task_id in ids}
    assert versions[ids[-2]] == [version]
    assert [p.score for p in client.predictions.list(task=ids[-2])] == [0.125]
    assert versions[ids[-1]] == sorted([version, "made-by-hand"])
    assert all(versions[task_id] == [version] for task_id in ids[:-2]), versions


def test_a_push_reads_each_tasks_data_from_label_studio_once(live_stack, tmp_path):
    """``preannotate --push`` reads the data of the tasks it predicts from Label Studio a group at a
    time and no task's twice (the tasks are listed by id first, without their data). Every request
    goes through a proxy that keeps Label Studio's answers."""
    title = _hotel_tasks_imported(live_stack, tmp_path, "Read-once", 40)
    with FaultProxy(live_stack.url, rate=0.0) as proxy:
        proxy.answers = []
        env = {"JUDGELAB_LS_URL": proxy.url, "JUDGELAB_LS_TOKEN": live_stack.creds.token}
        args = ["preannotate", "--title", title, "--push", "--backend-url", live_stack.backend_url, "--chunk-size", "3"]
        result = CliRunner().invoke(main, args, env=env)
        assert result.exit_code == 0, result.output
    read: Counter[int] = Counter()  # task id -> times its data was read
    for method, path, status, body in proxy.answers:
        parts = urlsplit(path)
        if method != "GET" or parts.path != "/api/tasks/" or status != 200:
            continue
        listed = [task["id"] for task in json.loads(body).get("tasks") or []]
        if "data" in parse_qs(parts.query).get("include", [""])[0].split(","):
            read.update(listed)
    client = live_stack.client
    (project,) = [p for p in client.projects.list() if p.title == title]
    ids = [t.id for t in client.tasks.list(project=project.id)]
    assert sorted(read) == sorted(ids), "every task's data read"
    assert set(read.values()) == {1}, {task_id: times for task_id, times in read.items() if times > 1}
    assert all(len(client.predictions.list(task=task_id)) == 1 for task_id in ids)
