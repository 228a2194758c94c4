"""The estimates workflow as a study lead runs it, end to end on a real Label Studio with the real
backend in ``llm`` mode against the simulated OpenAI-compatible server:

a project of 100 news summaries by two summarisers, pre-annotated by the LLM judge (``judgelab
connect``, ``judgelab preannotate``); ``judgelab design sample`` draws 20 of them for people
(stratified by summariser: 10 each, the fewest the report gives an interval for); two annotators
label the human-sample project through the API (one task's second label is given in Label
Studio's labeling UI, in Chromium), disagreeing on some tasks; ``judgelab design adjudicate`` on
the human sample, the adjudicator's answers, ``--collect``; ``judgelab sync`` of both projects and
``judgelab report``. What the lead reads (the "Study estimates" section, per summariser: the
prediction-powered estimate, human-only and judge-only numbers, "worth N human labels") is
checked against :func:`analysis.ppi.pool_estimates` called by hand on the synced tables, with the
adjudicator's gold answers overriding the annotators'.
"""

from __future__ import annotations

import html
import json
import re
import shlex
import shutil
from contextlib import chdir
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import free_port
from llm_sim import LLMSim

from judgelab.analysis.ppi import pool_estimates
from judgelab.analysis.report.versions import short_version
from judgelab.configs.schema import get_schema
from judgelab.sync.cli import main
from judgelab.sync.local_stack import StackSettings, start_backend, stop_stack

pytestmark = pytest.mark.integration

SCHEMA = get_schema("likert_rubric_es")
CRITERIA = list(SCHEMA.items_of_kind("ordinal"))
TITLE = "Resúmenes 2025"
SAMPLE_TITLE = f"{TITLE} (human sample)"
SUMMARISERS = ("modelo-a", "modelo-b")
N_TASKS = 100
BUDGET = 20
ANNOTATORS = ("ana@example.org", "ben@example.org")
ADJUDICATOR = "lead@example.org"
ALPHA = 0.1  # the report's 90% intervals
TAG = re.compile(r"\(ref R(\d{3})\)")
SHOTS = Path("/tmp")


def truth(i: int) -> dict[str, int]:
    """Task ``i``'s true ratings: summariser A's are about one point better than B's."""
    base = 4 if i % 2 == 0 else 3
    return {c: int(np.clip(base + (i * 7 + k * 5) // 3 % 3 - 1, 1, 5)) for k, c in enumerate(CRITERIA)}


def judged(i: int) -> dict[str, int]:
    """The judge: the truth, one point too generous on every fourth task."""
    return {c: min(5, v + (i % 4 == 0)) for c, v in truth(i).items()}


def second_rater(i: int) -> dict[str, int]:
    """The second annotator: the truth, but one point apart on Coherence on every third task."""
    out = truth(i)
    if i % 3 == 0:
        first = CRITERIA[0]
        out[first] = out[first] - 1 if out[first] > 1 else 2
    return out


def judge_answer(messages) -> str:
    found = TAG.findall(" ".join(str(m.get("content", "")) for m in messages))
    assert found, "the prompt carries the task's summary"
    return json.dumps(judged(int(found[-1])))


def result_of(scores: dict[str, int]) -> list[dict]:
    return [
        {"from_name": c, "to_name": "summary", "type": "choices", "value": {"choices": [str(v)]}}
        for c, v in scores.items()
    ]


def _csv(path: Path) -> Path:
    import csv

    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["id", "title", "article", "summary", "model"])
        for i in range(N_TASKS):
            article = f"El pleno aprobó el plan {i} de movilidad, dotado con {i + 3} millones, por {i % 9 + 9} votos."
            summary = f"Se aprueba el plan {i} de movilidad con {i + 3} millones (ref R{i:03d})."
            writer.writerow([f"r{i:03d}", f"Plan {i}", article, summary, SUMMARISERS[i % 2]])
    return path


def _index(key: str) -> int:
    return int(key.removeprefix("r"))


def _project(client, title: str):
    return next(p for p in client.projects.list() if p.title == title)


def _chromium() -> bool:
    return bool(shutil.which("chromium"))


def _label_in_the_browser(stack, project_id: int, task_id: int) -> dict:
    """An annotator (the preset admin) labels the task in Label Studio's labeling UI: a 4 on every
    criterion, then Submit."""
    from test_browser_ui import _radio, logged_in_page, open_task, saved_annotations

    pages = logged_in_page(stack, 1300)
    page = next(pages)
    try:
        open_task(page, stack, project_id, task_id)
        fours = _radio(page, "4 - ")
        assert fours.count() == len(CRITERIA)
        for k in range(len(CRITERIA)):
            fours.nth(k).check()
        page.get_by_role("button", name="Submit").click()
        [annotation] = saved_annotations(stack.client, task_id)
        page.screenshot(path=str(SHOTS / "study-estimates-labeling.png"), full_page=True)
    finally:
        pages.close()
    return {r["from_name"]: int(r["value"]["choices"][0]) for r in annotation.result}


@pytest.fixture(scope="module")
def study(live_stack, tmp_path_factory):
    from judgelab.sync.importers.annotations import ensure_annotators

    client = live_stack.client
    folder = tmp_path_factory.mktemp("study-estimates")
    _csv(folder / "resumenes.csv")
    with LLMSim(answer=judge_answer) as sim:
        settings = StackSettings(home=folder / "backend", backend_port=free_port(), annotator="llm")
        start_backend(
            settings,
            {
                "JUDGELAB_LLM_BASE_URL": sim.url,
                "JUDGELAB_LLM_MODEL": "sim-judge",
                "JUDGELAB_LLM_RETRIES": "0",
                "JUDGELAB_LLM_TIMEOUT": "10",
                "JUDGELAB_PREDICT_DEADLINE": "60",
                "JUDGELAB_CACHE_PATH": str(folder / "llm-cache.sqlite"),
            },
        )
        env = {
            "JUDGELAB_LS_URL": live_stack.url,
            "JUDGELAB_LS_TOKEN": live_stack.creds.token,
            "JUDGELAB_BACKEND_URL": settings.backend_url,
        }
        outputs: dict[str, str] = {}

        def judgelab(line: str) -> str:
            args = shlex.split(line)
            assert args[0] == "judgelab", line
            result = CliRunner().invoke(main, args[1:], env=env)
            assert "Traceback" not in result.output, result.output
            assert result.exit_code == 0, f"{line}\n{result.output}\n{result.exception!r}"
            outputs[line] = result.output
            return result.output

        try:
            with chdir(folder):
                judgelab(f'judgelab import --title "{TITLE}" --schema likert_rubric_es resumenes.csv')
                judgelab(f'judgelab connect --title "{TITLE}"')
                judgelab(f'judgelab preannotate --title "{TITLE}"')
                sampled = judgelab(
                    f'judgelab design sample --title "{TITLE}" --budget {BUDGET} --design stratified --overlap 2'
                )
                source, sample = _project(client, TITLE), _project(client, SAMPLE_TITLE)
                people = ensure_annotators(client, [*ANNOTATORS, ADJUDICATOR])
                copies = {t.meta["judgelab_key"]: t.id for t in client.tasks.list(project=sample.id, fields="all")}
                # the first annotator labels every sampled task, the second all but one, whose other
                # label is given first, in the labeling UI (an annotator in the browser, on a blank form)
                in_browser = sorted(copies)[0]
                browser_answer = None
                for key, task in copies.items():
                    i = _index(key)
                    if key == in_browser and _chromium():
                        browser_answer = _label_in_the_browser(live_stack, sample.id, task)
                    else:
                        client.annotations.create(
                            id=task, result=result_of(second_rater(i)), completed_by=people[ANNOTATORS[1]]
                        )
                    client.annotations.create(id=task, result=result_of(truth(i)), completed_by=people[ANNOTATORS[0]])
                adjudicated = judgelab(
                    f'judgelab design adjudicate --title "{SAMPLE_TITLE}" --adjudicator {ADJUDICATOR}'
                )
                adjudication = _project(client, f"{SAMPLE_TITLE} (adjudication)")
                disputed = {
                    t.meta["judgelab_key"]: t.id for t in client.tasks.list(project=adjudication.id, fields="all")
                }
                for key, task in disputed.items():  # the adjudicator decides: the true ratings
                    client.annotations.create(
                        id=task, result=result_of(truth(_index(key))), completed_by=people[ADJUDICATOR]
                    )
                collected = judgelab(f'judgelab design adjudicate --title "{SAMPLE_TITLE}" --collect')
                judgelab(f'judgelab sync --title "{TITLE}" --title "{SAMPLE_TITLE}" --out tablas')
                reported = judgelab("judgelab report --tables tablas --out informe --n-boot 0")
        finally:
            stop_stack(settings.home)
    return {
        "folder": folder,
        "source": source,
        "sample": sample,
        "copies": copies,
        "disputed": disputed,
        "in_browser": in_browser,
        "browser_answer": browser_answer,
        "outputs": {"sample": sampled, "adjudicate": adjudicated, "collect": collected, "report": reported},
        "llm_requests": len(sim.chat_requests),
    }


def _report_folder(study) -> Path:
    [csv] = [p for p in (study["folder"] / "informe").glob("*/estimates.csv") if _mine(p, study["source"].id)]
    return csv.parent


def _mine(csv: Path, project_id: int) -> bool:
    table = pd.read_csv(csv)
    return "project" not in table.columns or set(table["project"]) == {project_id}


def _by_hand(study) -> dict[tuple[str, str], dict]:
    """The estimates from the synced tables, as a study lead would compute them: per source task the
    gold answer where the adjudicator gave one, else the mean of the annotators' answers (the
    human-sample project's labels joined on the task key); the judge's answer on every task; the
    inclusion probabilities of the draw; analysis.ppi on that, per summariser and criterion."""
    tables = study["folder"] / "tablas"
    tasks = pd.read_parquet(tables / "tasks.parquet")
    judgments = pd.read_parquet(tables / "judgments.parquet")
    source_id, sample_id = study["source"].id, study["sample"].id
    own = tasks[tasks["project"] == source_id]
    copies = tasks[tasks["project"] == sample_id]
    assert (copies["project_sample_of"] == source_id).all() and copies["sampled"].all()
    to_source = dict(zip(copies["task_id"], copies["key"].map(dict(zip(own["key"], own["task_id"], strict=True))),
                         strict=True))  # fmt: skip
    human = judgments[(judgments["project"] == sample_id) & (judgments["source"] == "human")].copy()
    human["task"] = human["task_id"].map(to_source)
    human["y"] = pd.to_numeric(human["value"])
    gold = human["ground_truth"].fillna(False).astype(bool)
    people = human[~gold].groupby(["task", "item"])["y"].mean()
    reference = human[gold].groupby(["task", "item"])["y"].mean()
    y_all = reference.combine_first(people)
    judge = judgments[(judgments["project"] == source_id) & judgments["source"].str.startswith("model:")]
    [version] = judge["source"].unique()
    yhat_all = judge.assign(y=pd.to_numeric(judge["value"])).groupby(["task_id", "item"])["y"].first()
    pi_all = own.set_index("task_id")["inclusion_probability"]
    out = {}
    for model in SUMMARISERS:
        ids = sorted(own.loc[own["model"] == model, "task_id"])
        for criterion in CRITERIA:
            yhat = np.array([yhat_all[(t, criterion)] for t in ids], dtype=float)
            y = np.array([y_all.get((t, criterion), np.nan) for t in ids], dtype=float)
            found = pool_estimates(y, yhat, pi_all.reindex(ids).to_numpy(), alpha=ALPHA, bounds=(1.0, 5.0))
            out[(model, criterion)] = {"judge": version, "result": found, "n": int((~np.isnan(y)).sum()),
                                       "judged": len(ids), "gold": reference, "y": y_all}  # fmt: skip
    return out


def test_the_sample_is_drawn_labelled_adjudicated_and_collected(study):
    assert f"of {BUDGET} of {N_TASKS} task(s)" in study["outputs"]["sample"]
    assert f"'{SAMPLE_TITLE}' created: {BUDGET} task(s) imported" in study["outputs"]["sample"]
    keys = sorted(study["copies"])
    assert [sum(_index(k) % 2 == m for k in keys) for m in (0, 1)] == [BUDGET // 2] * 2, "10 per summariser"
    assert study["llm_requests"] >= N_TASKS, "the judge answered every task"
    # the tasks the two labels differ on went to adjudication, and back as ground truth
    differing = {k for k in keys if _index(k) % 3 == 0}
    if study["browser_answer"] is not None:
        differing.discard(study["in_browser"])
        if study["browser_answer"] != truth(_index(study["in_browser"])):
            differing.add(study["in_browser"])
    assert set(study["disputed"]) == differing and len(differing) >= 3
    assert f"{len(differing)} ground-truth annotation(s) added" in study["outputs"]["collect"]


def test_the_report_says_the_study_estimates_per_summariser_as_ppi_computes_them(study):
    report = _report_folder(study)
    table = pd.read_csv(report / "estimates.csv")
    expected = _by_hand(study)
    html_text = (report / "report.html").read_text(encoding="utf-8")
    text = html.unescape(" ".join(re.sub(r"<[^>]+>", " ", html_text).split()))
    assert "Study estimates" in text
    assert f"The labels of the human-sample project {study['sample'].id} count here" in text
    assert "weighted by their inclusion probabilities" in text
    for (model, criterion), want in expected.items():
        [row] = table[(table["model"] == model) & (table["quantity"] == f"{criterion} (mean)")].to_dict("records")
        found = want["result"]
        assert row["judge"] == want["judge"]
        assert (row["n_labeled"], row["n_judged"]) == (want["n"], want["judged"]) == (BUDGET // 2, N_TASKS // 2)
        for column, value in {
            "ppi_estimate": found.ppi.estimate,
            "ppi_low": found.ppi.low,
            "ppi_high": found.ppi.high,
            "human_estimate": found.human.estimate,
            "human_low": found.human.low,
            "human_high": found.human.high,
            "judge_bias": found.judge_bias,
            "worth_human_labels": found.worth_human_labels,
            "lambda": found.lambda_,
        }.items():
            assert np.isclose(row[column], value, rtol=1e-9, atol=1e-12), (model, criterion, column)
        assert row["weights"] == "inclusion probabilities"
        # what the lead reads: the sentence with the same numbers
        judge = short_version(want["judge"])  # the report names a model version by its short name
        bias = round(found.judge_bias, 2)
        said = (
            f"Mean {criterion} for model {model}: {found.ppi.estimate:.2f} [{found.ppi.low:.2f}, {found.ppi.high:.2f}] "
            f"from {want['n']} human labels and judge {judge} on {want['judged']} tasks; "
            f"human-only {found.human.estimate:.2f} [{found.human.low:.2f}, {found.human.high:.2f}], "
            f"judge-only {row['judge_estimate']:.2f} ({f'off by {bias:+.2f}' if bias else 'no bias'} on the labelled "
            "tasks); "
            + (
                f"as precise as {round(found.worth_human_labels):,} human labels alone."
                if found.lambda_ > 0
                else "the judge does not narrow the interval here, so the estimate is the human-only one."
            )
        )
        assert said in text, said
    # the gold answers decided the disputed tasks: the annotators' mean would be half a point off
    gold = next(iter(expected.values()))["gold"]
    first = CRITERIA[0]
    decided = {int(t) for t, item in gold.index if item == first}
    assert len(decided) == len(study["disputed"])
    y = next(iter(expected.values()))["y"]
    for task in decided:
        assert y[(task, first)] == gold[(task, first)]
    assert f"({N_TASKS} tasks)" in study["outputs"]["report"]


def test_an_annotator_labels_in_the_browser_and_the_estimates_are_screenshot(study):
    if study["browser_answer"] is None:
        pytest.skip("Debian's chromium is not installed")
    assert study["browser_answer"] == dict.fromkeys(CRITERIA, 4)
    from test_browser_ui import CHROMIUM, FLAGS

    playwright = pytest.importorskip("playwright.sync_api")
    report = _report_folder(study)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.goto((report / "report.html").as_uri())
            section = page.locator("section[id$=study-estimates]").first
            section.wait_for()
            section.screenshot(path=str(SHOTS / "study-estimates-section.png"))
            section.locator("table").first.scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / "study-estimates-table.png"))
            shown = " ".join(section.inner_text().split())
        finally:
            browser.close()
    for model in SUMMARISERS:
        assert f"for model {model}" in shown
