"""Uploaded ``.txt`` files, as Label Studio stores them: a real upload into the
real Label Studio gives tasks whose text is a ``/data/upload/...`` URL; the backend fetches the
file (with what ``/setup`` sent, or ``LABEL_STUDIO_URL``/``LABEL_STUDIO_API_KEY``) and annotates
its text. The LLM is the simulated OpenAI-compatible server, the rest is real."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from backend_process import start_backend
from llm_sim import LLMSim

from judgelab.sync.backend_link import connect_backend, retrieve_predictions
from judgelab.sync.http_retry import tls_context

pytestmark = pytest.mark.integration

CONFIG = """<View>
  <Text name="text" value="$text" valueType="url"/>
  <Labels name="label" toName="text">
    <Label value="Complaint"/>
    <Label value="Praise"/>
  </Labels>
</View>"""
#: A BOM, CRLF line ends and an emoji before the passage: offsets are code points of the text
#: the browser shows (the BOM dropped), as Label Studio stores them.
REVIEW = "\ufeffRoom 12 \U0001f3e8\r\nThe staff were kind.\r\nSadly the shower was cold every morning.\r\n"
PASSAGE = "the shower was cold"
SHOWN = REVIEW.removeprefix("\ufeff")


def complaint_answer(messages) -> str:
    """Marks the passage when the prompt holds the file's text (not its URL)."""
    prompt = "\n".join(str(m.get("content", "")) for m in messages)
    spans = [{"control": "label", "text": PASSAGE, "label": "Complaint"}] if PASSAGE in prompt else []
    return json.dumps({"spans": spans})


def upload_text_files(ls_url: str, token: str, project_id: int, files: dict[str, str]) -> None:
    """What Label Studio's import page does for .txt files imported as whole files: upload them
    (not yet tasks), then import the uploads with "Treat CSV/TSV/TXT as a list of tasks" off."""
    headers = {"Authorization": f"Token {token}"}
    uploaded = httpx.post(
        f"{ls_url}/api/projects/{project_id}/import",
        params={"commit_to_project": "false"},
        files=[("file", (name, text.encode("utf-8"), "text/plain")) for name, text in files.items()],
        headers=headers,
        timeout=60,
        verify=tls_context(),
    )
    uploaded.raise_for_status()
    reimported = httpx.post(
        f"{ls_url}/api/projects/{project_id}/reimport",
        json={"file_upload_ids": uploaded.json()["file_upload_ids"], "files_as_tasks_list": False},
        headers=headers,
        timeout=60,
        verify=tls_context(),
    )
    reimported.raise_for_status()


@pytest.fixture(scope="module")
def text_project(live_stack):
    client = live_stack.client
    project = client.projects.create(title="Uploaded reviews", label_config=CONFIG)
    try:
        upload_text_files(live_stack.url, live_stack.creds.token, project.id, {"review.txt": REVIEW})
        yield project
    finally:
        client.projects.delete(id=project.id)


def llm_env(sim: LLMSim, tmp_path) -> dict[str, str]:
    return {
        "JUDGELAB_ANNOTATOR": "llm",
        "JUDGELAB_LLM_BASE_URL": sim.url,
        "JUDGELAB_LLM_MODEL": "sim-model",
        "JUDGELAB_CACHE_PATH": str(tmp_path / "cache.sqlite"),
        "JUDGELAB_PREDICT_DEADLINE": "60",
    }


@pytest.fixture(scope="module")
def predicted_upload(live_stack, text_project, tmp_path_factory):
    """The upload's task after Label Studio's "Retrieve predictions" through the backend, which has
    no LABEL_STUDIO_URL: Label Studio's /setup says where it is and gives a token."""
    client = live_stack.client
    tmp_path = tmp_path_factory.mktemp("upload")
    (task,) = list(client.tasks.list(project=text_project.id))
    with LLMSim(answer=complaint_answer) as sim:
        with start_backend(tmp_path / "backend.log", **llm_env(sim, tmp_path)) as backend:
            link = connect_backend(client, text_project.id, backend.url)
            retrieve_predictions(client, text_project.id)
            predictions = list(client.predictions.list(task=task.id))
            log = backend.log()
        prompts = [r.last_user_text for r in sim.chat_requests]
    return task, link, predictions, prompts, log


def test_an_uploaded_text_file_is_fetched_and_annotated(live_stack, text_project, predicted_upload):
    task, link, predictions, prompts, log = predicted_upload
    assert re.fullmatch(rf"/data/upload/{text_project.id}/\w+-review\.txt", task.data["text"]), task.data
    assert prompts and "Sadly the shower was cold" in prompts[0] and "/data/upload" not in prompts[0]
    assert [p.model_version for p in predictions] == [link.model_version], log
    (region,) = [r for r in predictions[0].result if r["type"] == "labels"]
    value = region["value"]
    assert value["labels"] == ["Complaint"] and value["text"] == PASSAGE
    assert SHOWN[value["start"] : value["end"]] == PASSAGE
    assert live_stack.creds.token not in log


@pytest.mark.browser
def test_the_browser_shows_the_file_with_the_predicted_span_on_it(
    live_stack, text_project, predicted_upload, artifacts
):
    """Label Studio's page loads the file itself (valueType="url"): the predicted region must sit on
    the same characters there (BOM, CRLF and an emoji before it)."""
    playwright = pytest.importorskip("playwright.sync_api")
    from test_browser_ui import CHROMIUM, FLAGS, log_in, open_task

    task = predicted_upload[0]
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            log_in(page, live_stack)
            open_task(page, live_stack, text_project.id, task.id)
            page.screenshot(path=str(artifacts / "ui_uploaded_text_file.png"), full_page=True)
            shown = page.evaluate("() => document.querySelector('[class*=richtext]').innerText")
            highlighted = page.evaluate(
                "() => [...document.querySelectorAll('[class*=richtext] [class*=highlight]')].map(e => e.textContent)"
            )
        finally:
            browser.close()
    assert "Sadly the shower was cold every morning." in shown and "/data/upload" not in shown
    assert highlighted == [PASSAGE]


def test_label_studio_url_and_api_key_from_the_environment(live_stack, text_project, tmp_path):
    (task,) = list(live_stack.client.tasks.list(project=text_project.id))
    body = {
        "tasks": [{"id": task.id, "data": task.data}],
        "project": f"{text_project.id}.1",
        "label_config": CONFIG,
    }
    with LLMSim(answer=complaint_answer) as sim:
        env = llm_env(sim, tmp_path) | {"LABEL_STUDIO_URL": live_stack.url}
        with start_backend(tmp_path / "no-key.log", **env) as backend:  # no token: Label Studio refuses
            (refused,) = httpx.post(f"{backend.url}/predict", json=body, timeout=60, verify=tls_context()).json()[
                "results"
            ]
        env["LABEL_STUDIO_API_KEY"] = live_stack.creds.token
        with start_backend(tmp_path / "backend.log", **env) as backend:
            (predicted,) = httpx.post(f"{backend.url}/predict", json=body, timeout=60, verify=tls_context()).json()[
                "results"
            ]
            elsewhere = {"id": 2, "data": {"text": "http://203.0.113.9/data/upload/1/x.txt"}}
            (foreign,) = httpx.post(
                f"{backend.url}/predict", json={**body, "tasks": [elsewhere]}, timeout=60, verify=tls_context()
            ).json()["results"]
            metrics = httpx.get(f"{backend.url}/metrics", timeout=10, verify=tls_context()).text
    assert "result" not in refused and "HTTP 401" in refused["error"] and "LABEL_STUDIO_API_KEY" in refused["error"]
    (region,) = predicted["result"]
    assert SHOWN[region["value"]["start"] : region["value"]["end"]] == PASSAGE
    assert "result" not in foreign and "not on Label Studio" in foreign["error"]
    assert 'judgelab_label_studio_files_total{outcome="fetched"} 1' in metrics
