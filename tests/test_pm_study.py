"""A project manager's small study, end to end on a real Label Studio, through the commands the
README shows: two projects with titles of their own; a Likert study of news summaries whose
machine summaries sit beside human-written ones (a condition of this study, not a cut), read from a
semicolon CSV with a byte order mark, put in anchoring arms, pre-annotated by the offline judge,
annotated by two people (starting from the judge's suggestion on the suggested arm: some kept, some
changed); and a span pilot of 12 summaries, 3 of them annotated twice, with spans only.

The report must take each study whole (every task, the human-written summaries included), count
what was done exactly (annotators, annotations, kept and edited suggestions), and carry no
sentence with a missing number or a verdict without its figure.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from lxml import etree
from test_report_sentences import MISSING, QUOTED, VERDICT_PHRASES, sentences

from judgelab.configs.schema import all_schemas
from judgelab.sync.cli import main

pytestmark = pytest.mark.integration

LIKERT_TITLE = "Noticias Q4 – resúmenes LLM"
PILOT_TITLE = "piloto de errores (TL;DR)"
ITEMS = ("Coherence", "Consistency", "Fluency", "Relevance", "5W")
MODELS = ["claude", "gpt4o", "human", "claude", "gpt4o", "human", "claude", "gpt4o"]


def likert_csv(path: Path) -> Path:
    lines = ["id;title;article;summary;model"]
    for n, model in enumerate(MODELS):
        lines.append(
            f"n{n};Titular {n};El ayuntamiento aprobó el presupuesto {n} tras un largo debate.;"
            f"Se aprobó el presupuesto {n}.;{model}"
        )
    path.write_bytes(b"\xef\xbb\xbf" + ("\r\n".join(lines) + "\r\n").encode("utf-8"))
    return path


def pilot_jsonl(path: Path) -> Path:
    import json

    rows = [
        {"id": f"p{n}", "title": f"Post {n}", "post": "I moved to a new city and my landlord kept the deposit.",
         "summary": f"Landlord keeps deposit {n} after move.", "score": 5}
        for n in range(12)
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _user(client, name: str):
    email = f"{name}@pm-study.local"
    for user in client.users.list():
        if user.email == email:
            return user
    return client.users.create(username=name, email=email, password=f"{name}-pass-123", first_name=name)


def _choice(control: str, value: str) -> dict:
    return {"from_name": control, "to_name": "summary", "type": "choices", "value": {"choices": [value]}}


@pytest.fixture(scope="module")
def pm_study(live_stack, tmp_path_factory):
    client = live_stack.client
    tmp = tmp_path_factory.mktemp("pm")
    runner = CliRunner()
    env = {"JUDGELAB_LS_URL": live_stack.url, "JUDGELAB_LS_TOKEN": live_stack.creds.token,
           "JUDGELAB_BACKEND_URL": live_stack.backend_url}  # fmt: skip

    def run(*args: object) -> str:
        result = runner.invoke(main, [str(a) for a in args], env=env)
        assert result.exit_code == 0, f"{args}\n{result.output}"
        return result.output

    for title in (LIKERT_TITLE, PILOT_TITLE):
        for old in [p for p in client.projects.list() if p.title == title]:
            client.projects.delete(id=old.id)
    run("design", "arms", likert_csv(tmp / "noticias.csv"), "--out", tmp / "arms.json", "--schema", "likert_rubric_es")
    run("import", "--schema", "likert_rubric_es", "--title", LIKERT_TITLE, tmp / "arms.json")
    run("preannotate", "--title", LIKERT_TITLE)
    run("import", "--schema", "summary_flaws", "--title", PILOT_TITLE, pilot_jsonl(tmp / "pilot.jsonl"))
    likert = next(p for p in client.projects.list() if p.title == LIKERT_TITLE)
    pilot = next(p for p in client.projects.list() if p.title == PILOT_TITLE)
    ana, ben = _user(client, "ana"), _user(client, "ben")

    config = etree.fromstring(all_schemas()["likert_rubric_es"].config_xml.encode())
    # a Choice with an alias is stored by its alias ("1" to "5"), as the browser stores it
    labels = {
        item: [c.get("alias") or c.get("value") for c in config.iterfind(f".//Choices[@name='{item}']/Choice")]
        for item in ITEMS
    }
    done = {"kept": 0, "edited": 0, "annotations": 0}
    for task in client.tasks.list(project=likert.id, fields="all"):
        predictions = list(client.predictions.list(task=task.id))
        for k, user in enumerate((ana, ben)):
            if task.data.get("arm") == "suggested" and predictions:
                suggestion = predictions[0]
                result = [dict(region) for region in suggestion.result]
                if k == 1:  # ben changes his first answer
                    first = result[0]
                    chosen = first["value"]["choices"][0]
                    other = next(v for v in labels[first["from_name"]] if v != chosen)
                    result[0] = {**first, "value": {"choices": [other]}}
                    done["edited"] += 1
                    done["kept"] += len(result) - 1
                else:
                    done["kept"] += len(result)
                client.annotations.create(id=task.id, result=result, completed_by=user.id,
                                          parent_prediction=suggestion.id, lead_time=40.0)  # fmt: skip
            else:
                result = [_choice(item, labels[item][(task.id + k + i) % 5]) for i, item in enumerate(ITEMS)]
                client.annotations.create(id=task.id, result=result, completed_by=user.id, lead_time=60.0)
            done["annotations"] += 1
    pilot_tasks = list(client.tasks.list(project=pilot.id, fields="all"))
    for task in pilot_tasks[:3]:
        summary = task.data["summary"]
        for user, phrase in ((ana, "deposit"), (ben, "Landlord")):
            start = summary.index(phrase)
            region = {"from_name": "flaw", "to_name": "summary", "type": "labels",
                      "value": {"start": start, "end": start + len(phrase), "text": phrase,
                                "labels": ["Factually Incorrect"]}}  # fmt: skip
            client.annotations.create(id=task.id, result=[region], completed_by=user.id, lead_time=30.0)
    tables = tmp / "tables"
    run("sync", "--out", tables, "--title", LIKERT_TITLE, "--title", PILOT_TITLE)
    printed = run("report", "--tables", tables, "--out", tmp / "report", "--n-boot", "50")
    yield {"likert": likert, "pilot": pilot, "done": done, "printed": printed, "report": tmp / "report"}
    for project in (likert, pilot):
        client.projects.delete(id=project.id)


def _folder(report: Path, title: str) -> Path:
    [folder] = [p.parent for p in report.glob("*/report.md") if title in (p.parent / "report.md").read_text()]
    return folder


def test_the_likert_study_is_reported_whole_with_its_counts(pm_study):
    folder = _folder(pm_study["report"], LIKERT_TITLE)
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    assert f"{LIKERT_TITLE}: " in pm_study["printed"] and "(8 tasks)" in pm_study["printed"]
    assert "are analysed (" not in markdown and "cut by" not in markdown  # the human summaries are a condition
    assert "It has 8 tasks. 2 human annotators submitted 16 annotations" in markdown
    agreement = pd.read_csv(folder / "agreement.csv").set_index("item")
    assert agreement.loc[list(ITEMS), "n_units"].tolist() == [8] * 5  # human-written summaries included
    outcomes = pd.read_csv(folder / "suggestion_outcomes.csv")
    overall = outcomes[outcomes["category"] == "(all)"].set_index("unit")
    done = pm_study["done"]
    assert overall.loc["item", ["n_kept", "n_edited", "n_deleted"]].tolist() == [done["kept"], done["edited"], 0]
    glance = pd.read_csv(folder / "at_a_glance.csv")
    assert set(glance["topic"]) >= {"Completion", "Agreement", "Suggestions"}
    html = (folder / "report.html").read_text(encoding="utf-8")
    front = html.split("The study at a glance", 1)[1].split("</table>", 1)[0]
    assert "offline 2" in front and "judgelab-offline-2-" not in front  # a short name; the full one in its table


def test_the_span_pilot_counts_its_annotators_and_spans(pm_study):
    folder = _folder(pm_study["report"], PILOT_TITLE)
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    assert "(12 tasks)" in pm_study["printed"]
    assert "It has 12 tasks. 2 human annotators submitted 6 annotations with 0 judgments and 6 spans" in markdown
    assert "Completion: of the 12 tasks, 9 have no human annotation yet, 0 have one, 3 two" in markdown


@pytest.mark.parametrize("title", [LIKERT_TITLE, PILOT_TITLE])
def test_no_sentence_carries_a_verdict_without_its_number(pm_study, title):
    markdown = (_folder(pm_study["report"], title) / "report.md").read_text(encoding="utf-8")
    prose = sentences(markdown)
    assert not [s for s in prose if MISSING.search(s)]
    assert not [s for s in prose if VERDICT_PHRASES.search(QUOTED.sub("", s)) and not re.search(r"\d", s)]
