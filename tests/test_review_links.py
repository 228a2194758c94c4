"""An annotation's ``parent_prediction`` that names a prediction of another task, on a real Label
Studio (its API accepts such a link), through ``judgelab sync`` and ``judgelab report``: the link
is ignored (the annotation counts as not started from a suggestion) and the report's notes say
how many annotations had one."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.configs.schema import all_schemas
from judgelab.sync.cli import main
from judgelab.sync.importers import rows_from_records
from judgelab.sync.projects import ensure_project, import_rows

pytestmark = pytest.mark.integration

SUMMARY = "The Harbour Inn offers 90 rooms, 5 restaurants and an outdoor pool 3 km from the beach."
TASKS = [
    {"id": f"link-{n}", "descriptions": "The Harbour Inn has 40 rooms and 2 restaurants.", "summary": SUMMARY}
    for n in ("a", "b")
]
VERSION = "hand-made-suggestions"


def span(rid: str, phrase: str, label: str) -> dict:
    start = SUMMARY.index(phrase)
    value = {"start": start, "end": start + len(phrase), "text": phrase, "labels": [label]}
    return {"id": rid, "from_name": "error", "to_name": "summary", "type": "labels", "value": value}


def rating(rid: str, value: int) -> dict:
    return {"id": rid, "from_name": "impression", "to_name": "summary", "type": "rating", "value": {"rating": value}}


SUGGESTED = [
    span("s1", "90 rooms", "Incorrect"),
    span("s2", "5 restaurants", "Incorrect"),
    span("s3", "outdoor pool", "Not Checkable"),
    span("s4", "3 km", "Not Checkable"),
    rating("r1", 2),
]


def cli(live_stack, *args: object) -> str:
    result = CliRunner().invoke(main, ["--url", live_stack.url, "--token", live_stack.creds.token, *map(str, args)])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_parent_prediction_of_another_task_is_ignored_and_noted(live_stack, tmp_path, request):
    client = live_stack.client
    schema = all_schemas()["hotel_spans"]
    project = ensure_project(client, schema, title="Review links: hotel")
    request.addfinalizer(lambda: client.projects.delete(id=project.id))
    task_a, task_b = import_rows(client, project.id, rows_from_records([("links", t) for t in TASKS], schema)).task_ids
    own = client.predictions.create(task=task_a, result=SUGGESTED, model_version=VERSION, score=0.5)
    client.predictions.create(task=task_b, result=[rating("r9", 5)], model_version=VERSION, score=0.5)
    # started from task a's own suggestion, everything kept
    client.annotations.create(id=task_a, result=SUGGESTED, parent_prediction=own.id, lead_time=30.0)
    # task b's annotation names task a's prediction: only the rating in common
    foreign = client.annotations.create(id=task_b, result=[rating("r1", 2)], parent_prediction=own.id, lead_time=50.0)
    assert client.annotations.get(id=foreign.id).parent_prediction == own.id  # Label Studio kept the link

    cli(live_stack, "sync", "--out", tmp_path / "tables", "--project", project.id)
    cli(live_stack, "report", "--tables", tmp_path / "tables", "--out", tmp_path / "report")
    [folder] = [p.parent for p in (tmp_path / "report").glob("*/report.md")]
    outcomes = pd.read_csv(folder / "suggestion_outcomes.csv")
    overall = outcomes[outcomes["category"] == "(all)"].set_index("unit")
    # the kept annotation only: 4 spans and the rating kept, nothing deleted
    assert overall.loc["span", ["n_kept", "n_edited", "n_deleted"]].tolist() == [4, 0, 0], outcomes
    assert overall.loc["item", ["n_kept", "n_edited", "n_deleted"]].tolist() == [1, 0, 0], outcomes
    lead = pd.read_csv(folder / "suggestion_lead_time.csv").set_index("suggestion")
    assert lead.loc["(no suggestion)", "median_seconds"] == 50.0, lead  # timed as an annotation without one
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    notes = markdown.split("Loading notes", 1)[1]
    assert "1 annotation(s) name as their parent_prediction a prediction of another task" in notes, markdown
    assert f"{foreign.id} (task {task_b}; prediction {own.id} is task {task_a}'s)" in notes
