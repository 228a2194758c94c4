"""A sixth schema from a folder of one's own, through the whole product: import, prediction, sync and
report, with no change to judgelab's code.

The folder holds what ARCHITECTURE.md says a new schema needs: ``config.xml``, ``schema.yaml``, a
``samples.json``, and one small Python file per layer where it wants more than the generic behaviour:
``offline.py`` (a heuristic for the built-in annotator), ``report.py`` (a section of its own) and
``loader.py`` (a published data set of its kind, for ``judgelab load``). It is read from
``$JUDGELAB_EXTRA_CONFIGS``, besides the five built-in schemas.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.sync.cli import main
from judgelab.sync.local_stack import StackSettings, free_port, start_backend, stop_stack

pytestmark = pytest.mark.integration

CONFIG = """<View>
  <Header value="Is this sentence formal or informal? How clear is it?"/>
  <Text name="text" value="$text"/>
  <Choices name="register" toName="text" choice="single" required="true">
    <Choice value="formal"/>
    <Choice value="informal"/>
  </Choices>
  <Rating name="clarity" toName="text" maxRating="5"/>
</View>
"""

SCHEMA = """name: register_rating
title: "Register and clarity of sentences"
language: en
data_fields:
  text: {type: text, required: true}
  source: {type: string, required: false}
meta_fields: [source]
scales:
  clarity: {min: 1, max: 5}
items:
  register: {kind: nominal, values: [formal, informal]}
  clarity: {kind: ordinal}
"""

OFFLINE = """
from judgelab.backend.annotators.offline import OFFLINE
from judgelab.backend.draft import Draft

INFORMAL = ("gonna", "wanna", "lol", "hey", "!!")


@OFFLINE.register("register_rating", reads=("text",))
def annotate(data: dict) -> Draft:
    text = str(data.get("text") or "").lower()
    informal = any(word in text for word in INFORMAL)
    words = len(text.split())
    return Draft(
        choices={"register": ["informal" if informal else "formal"]},
        ratings={"clarity": 5 if words <= 12 else 3},
        scores={"register": 0.8, "clarity": 0.6},
        score=0.7,
    )
"""

REPORT = """
from judgelab.analysis.report.blocks import Paragraph, Section
from judgelab.analysis.report.schemas import SCHEMA_SECTIONS


@SCHEMA_SECTIONS.register("register_rating")
def register_section(data):  # runs on the projects of its schema only
    human = data.usable_human
    registers = human[human["item"] == "register"]["value"]
    if registers.empty:
        return None
    share = (registers == "informal").mean()
    return Section(
        "Register of the sentences",
        [Paragraph(f"The annotators called {share:.0%} of {len(registers)} sentences informal.")],
    )
"""

TASKS = [
    {"id": "s1", "text": "We hereby inform you that the meeting is postponed.", "source": "letters"},
    {"id": "s2", "text": "hey we're gonna be late lol", "source": "chat"},
    {"id": "s3", "text": "The committee shall convene at noon.", "source": "letters"},
    {"id": "s4", "text": "wanna grab lunch!!", "source": "chat"},
]


LOADER = """
import csv
from pathlib import Path

from judgelab.analysis.loaders.common import tidy_frames
from judgelab.analysis.loaders.registry import DATA_SETS


@DATA_SETS.register("register_corpus", path_help="a CSV with text, rater and register columns")
def read(path, project=None):
    name = project or Path(path).stem
    tasks, judgments, problems = {}, [], []
    with open(path, newline="", encoding="utf-8") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            if row["register"] not in ("formal", "informal"):
                problems.append({"project": name, "file": str(path), "line": line, "task_id": None,
                                 "kind": "bad value", "message": f"register {row['register']!r}"})
                continue
            task_id = tasks.setdefault(row["text"], len(tasks) + 1)
            judgments.append({"project": name, "task_id": task_id, "annotation_id": f"{row['rater']}-{task_id}",
                              "annotator": row["rater"], "source": "human", "item": "register",
                              "value": row["register"], "was_cancelled": False, "ground_truth": False})
    rows = [{"project": name, "task_id": i, "schema": "register_rating", "key": str(i), "text": text}
            for text, i in tasks.items()]
    return tidy_frames(rows, judgments, [], problems)
"""


@pytest.fixture()
def sixth_schema(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "my-schemas" / "register_rating"
    folder.mkdir(parents=True)
    (folder / "config.xml").write_text(CONFIG, encoding="utf-8")
    (folder / "schema.yaml").write_text(SCHEMA, encoding="utf-8")
    (folder / "samples.json").write_text(json.dumps(TASKS[:2]), encoding="utf-8")
    (folder / "offline.py").write_text(OFFLINE, encoding="utf-8")
    (folder / "report.py").write_text(REPORT, encoding="utf-8")
    (folder / "loader.py").write_text(LOADER, encoding="utf-8")
    monkeypatch.setenv("JUDGELAB_EXTRA_CONFIGS", str(folder.parent))
    return folder


def test_a_sixth_schema_runs_through_import_prediction_sync_and_report(live_stack, sixth_schema, tmp_path):
    runner = CliRunner()
    login = ["--url", live_stack.url, "--token", live_stack.creds.token]

    def judgelab(*args: str) -> str:
        result = runner.invoke(main, [*login, *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    assert "register_rating" in runner.invoke(main, ["schemas"]).output

    tasks_file = tmp_path / "sentences.json"
    tasks_file.write_text(json.dumps(TASKS), encoding="utf-8")
    judgelab("import", "--schema", "register_rating", str(tasks_file))
    client = live_stack.client
    (project,) = [p for p in client.projects.list() if p.title == "Register and clarity of sentences"]

    # a backend that knows the sixth schema (it reads the same extra folder)
    settings = StackSettings(home=tmp_path / "backend", ls_port=free_port(), backend_port=free_port())
    settings.home.mkdir()
    start_backend(settings, {"JUDGELAB_EXTRA_CONFIGS": str(sixth_schema.parent)})
    try:
        judgelab("preannotate", "--schema", "register_rating", "--backend-url", settings.backend_url)
        tasks = list(client.tasks.list(project=project.id, fields="all"))
        assert len(tasks) == 4
        for task in tasks:
            (prediction,) = client.predictions.list(task=task.id)
            assert "-register_rating-" in prediction.model_version
            values = {r["from_name"]: r["value"] for r in prediction.result}
            informal = task.data["source"] == "chat"
            assert values["register"] == {"choices": ["informal" if informal else "formal"]}
            assert values["clarity"]["rating"] in (3, 5)
            assert {r["from_name"]: r["score"] for r in prediction.result} == {"register": 0.8, "clarity": 0.6}
    finally:
        stop_stack(settings.home)

    # an annotator labels every task
    for task in tasks:
        register = "informal" if task.data["source"] == "chat" else "formal"
        result = [
            {"from_name": "register", "to_name": "text", "type": "choices", "value": {"choices": [register]}},
            {"from_name": "clarity", "to_name": "text", "type": "rating", "value": {"rating": 4}},
        ]
        client.annotations.create(id=task.id, result=result, lead_time=3.0)

    tables = tmp_path / "tables"
    judgelab("sync", "--out", str(tables), "--project", str(project.id))
    judgments = pd.read_parquet(tables / "judgments.parquet")
    mine = judgments[judgments["project"] == project.id]
    human = mine[mine["source"] == "human"]
    assert sorted(human["item"].unique()) == ["clarity", "register"]
    assert (human[human["item"] == "register"]["value"] == "informal").sum() == 2
    assert mine["source"].str.startswith("model:").sum() == 8  # two items on four tasks

    report = tmp_path / "report"
    result = runner.invoke(main, ["report", "--tables", str(tables), "--out", str(report)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (markdown,) = [p for p in report.rglob("report.md") if "Register" in p.read_text(encoding="utf-8")]
    text = markdown.read_text(encoding="utf-8")
    assert "Register of the sentences" in text  # the schema's own section, from its report.py
    assert "The annotators called 50% of 4 sentences informal." in text
    assert "clarity" in text and "register" in text  # the generic sections describe its items


def test_a_schema_folder_brings_a_data_set_that_load_reads(sixth_schema, tmp_path):
    corpus = tmp_path / "register.csv"
    corpus.write_text(
        "text,rater,register\nhey lol,a,informal\nhey lol,b,informal\nDear Sir,a,formal\nDear Sir,b,informal\n"
        "Yo,a,casual\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    shown = runner.invoke(main, ["load", "--help"]).output
    assert "register_corpus" in shown and "a CSV with text, rater and register columns" in shown
    out = tmp_path / "tables"
    loaded = runner.invoke(main, ["load", "register_corpus", str(corpus), "--out", str(out)], catch_exceptions=False)
    assert loaded.exit_code == 0, loaded.output
    assert "loaded register_corpus: 2 tasks, 4 judgments, 0 spans in 1 project(s): register" in loaded.output
    assert "bad value" in loaded.output and "register.csv: line 6" in loaded.output
    wrong = runner.invoke(main, ["load", "register_corpus", str(corpus), "--out", str(out), "--nan-ratings", "missing"])
    assert wrong.exit_code == 1 and "--nan-ratings only applies to basse" in wrong.output
    report = tmp_path / "report"
    made = runner.invoke(main, ["report", "--tables", str(out), "--out", str(report)], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    (markdown,) = list(report.rglob("report.md"))
    assert "Register of the sentences" in markdown.read_text(encoding="utf-8")  # its schema's section
