"""The LLM path end to end: real Label Studio -> judgelab backend in ``llm`` mode -> a simulated
OpenAI-compatible endpoint (a real HTTP server on localhost) -> predictions in the labeling UI.

Also: an endpoint that fails never loses a task (Label Studio's retrieve and ``preannotate
--push`` both finish the work later, and no task ever gets two predictions of one version).
"""

from __future__ import annotations

import json
import shutil

import httpx
import pytest
from conftest import free_port
from llm_sim import Failure, LLMSim

from judgelab.configs.schema import all_schemas
from judgelab.sync.backend_link import connect_backend, retrieve_predictions
from judgelab.sync.bulk_predict import push_predictions
from judgelab.sync.http_retry import tls_context
from judgelab.sync.importers import rows_from_records
from judgelab.sync.local_stack import StackSettings, start_backend, stop_stack
from judgelab.sync.preannotate import PreannotateOptions
from judgelab.sync.projects import ensure_project, import_rows

pytestmark = pytest.mark.integration

HOTEL_ANSWER = json.dumps(
    {
        "annotations": [
            {"reason": "the hotel is in Dubai, not New York", "text": "Hudson River", "annotation_type": 2},
            {"reason": "no skyline named in the descriptions", "text": "manhattan skyline", "annotation_type": "0"},
        ],
        "impression": 2,
    }
)


def _start_backend(home, sim_url: str) -> str:
    """The real backend in llm mode, through the same launcher as ``judgelab up``."""
    settings = StackSettings(home=home, backend_port=free_port(), annotator="llm")
    start_backend(
        settings,
        {
            "JUDGELAB_LLM_BASE_URL": sim_url,
            "JUDGELAB_LLM_MODEL": "sim-model",
            "JUDGELAB_LLM_API_KEY": "sk-test-secret-never-logged",
            "JUDGELAB_LLM_RETRIES": "0",
            "JUDGELAB_LLM_TIMEOUT": "5",
            "JUDGELAB_PREDICT_DEADLINE": "20",
            "JUDGELAB_CACHE_PATH": str(home / "llm-cache.sqlite"),
        },
    )
    return settings.backend_url


@pytest.fixture(scope="module")
def llm_stack(live_stack, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("llm")
    with LLMSim(answer=HOTEL_ANSWER) as sim:
        url = _start_backend(tmp, sim.url)
        try:
            yield {"sim": sim, "backend_url": url, "client": live_stack.client, "stack": live_stack, "tmp": tmp}
        finally:
            stop_stack(tmp)


def _hotel_project(client, title, samples):
    schema = all_schemas()["hotel_spans"]
    project = ensure_project(client, schema, title=title)
    rows = rows_from_records([(f"sample {i}", s) for i, s in enumerate(samples)], schema)
    import_rows(client, project.id, rows)
    return project.id


def _dubai_sample():
    return next(s for s in all_schemas()["hotel_spans"].samples() if "Hudson River" in s["data"]["summary"])


def test_llm_predictions_land_at_the_right_places(llm_stack):
    client = llm_stack["client"]
    project_id = _hotel_project(client, "Hotel LLM e2e", [_dubai_sample()])
    link = connect_backend(client, project_id, llm_stack["backend_url"])
    assert "llm" in link.model_version
    retrieve_predictions(client, project_id)
    [task] = list(client.tasks.list(project=project_id, fields="all"))
    [prediction] = client.predictions.list(task=task.id)
    assert prediction.model_version == link.model_version
    summary = task.data["summary"]
    spans = {r["value"]["text"]: r for r in prediction.result if r["type"] == "labels"}
    assert spans["Hudson River"]["value"]["labels"] == ["Incorrect"]
    assert spans["Hudson River"]["value"]["start"] == summary.index("Hudson River")
    assert spans["Manhattan skyline"]["value"]["labels"] == ["Not Checkable"]  # placed despite the case
    for region in spans.values():
        v = region["value"]
        assert summary[v["start"] : v["end"]] == v["text"]
    notes = [r for r in prediction.result if r["type"] == "textarea"]
    assert {n["value"]["text"][0] for n in notes} == {
        "the hotel is in Dubai, not New York",
        "no skyline named in the descriptions",
    }
    assert [r["value"]["rating"] for r in prediction.result if r["type"] == "rating"] == [2]
    log = (llm_stack["tmp"] / "backend.log").read_text()
    assert "sk-test-secret-never-logged" not in log
    sent = llm_stack["sim"].chat_requests[-1]
    assert "Hudson River" in json.dumps(sent.body) and "Annotate all the errors" in json.dumps(sent.body)


@pytest.mark.browser
@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium is not installed")
def test_llm_predictions_are_highlighted_in_the_labeling_ui(llm_stack, artifacts):
    from test_browser_ui import CHROMIUM, FLAGS, log_in, open_task

    playwright = pytest.importorskip("playwright.sync_api")
    client, stack = llm_stack["client"], llm_stack["stack"]
    project_id = _hotel_project(client, "Hotel LLM e2e", [_dubai_sample()])
    connect_backend(client, project_id, llm_stack["backend_url"])
    retrieve_predictions(client, project_id)
    [task] = list(client.tasks.list(project=project_id, fields="all"))
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        log_in(page, stack)
        open_task(page, stack, project_id, task.id)
        page.screenshot(path=str(artifacts / "ui_llm_hotel.png"), full_page=True)
        highlighted = page.evaluate(
            "() => [...document.querySelectorAll('[class*=richtext] [class*=highlight]')].map(e => e.textContent)"
        )
        browser.close()
    assert sorted(highlighted) == ["Hudson River", "Manhattan skyline"]


def test_a_failing_endpoint_loses_no_task_and_duplicates_none(llm_stack):
    client, sim = llm_stack["client"], llm_stack["sim"]
    samples = all_schemas()["hotel_spans"].samples()[:6]
    project_id = _hotel_project(client, "Hotel LLM failures", samples)
    link = connect_backend(client, project_id, llm_stack["backend_url"])
    sim.script.extend([Failure("500"), Failure("html"), Failure("empty"), Failure("garbage")])
    retrieve_predictions(client, project_id)  # 4 of 6 answers are bad: those tasks stay without a prediction
    assert httpx.get(f"{llm_stack['backend_url']}/health", timeout=1, verify=tls_context()).status_code == 200

    def versions():
        return [
            [p.model_version for p in client.predictions.list(task=t.id)] for t in client.tasks.list(project=project_id)
        ]

    first = versions()
    assert sum(1 for v in first if v) == 2 and all(v in ([], [link.model_version]) for v in first)
    sim.script.extend([Failure("429", retry_after="0")])
    report = push_predictions(
        client, project_id, llm_stack["backend_url"], link.model_version, PreannotateOptions(chunk_size=2)
    )
    assert report.unfinished == 0 and report.already == 2 and report.pushed == 4
    retrieve_predictions(client, project_id)  # nothing left to do: no second prediction anywhere
    assert versions() == [[link.model_version]] * len(samples)
