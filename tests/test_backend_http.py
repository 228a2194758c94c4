"""The ML backend over HTTP, as Label Studio 1.23 talks to it: the real ``python -m judgelab.backend``
process on a free local port, spoken to with httpx."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from judgelab.configs.schema import all_schemas, get_schema
from judgelab.sync.http_retry import tls_context
from judgelab.sync.local_stack import free_port

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_NAMES = sorted(all_schemas())


def start_backend(log_path: Path, **extra_env: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGELAB_")}
    env.update(
        JUDGELAB_BACKEND_HOST="127.0.0.1",
        JUDGELAB_BACKEND_PORT=str(port),
        JUDGELAB_ANNOTATOR="offline",
        JUDGELAB_LOG_LEVEL="WARNING",
        **extra_env,
    )
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "judgelab.backend"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"backend exited with {proc.returncode}:\n{log_path.read_text(errors='replace')}")
        try:
            if httpx.get(f"{url}/health", timeout=1, verify=tls_context()).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise RuntimeError(f"backend did not answer /health in 60 s:\n{log_path.read_text(errors='replace')}")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    proc, url = start_backend(tmp_path_factory.mktemp("backend") / "backend.log")
    try:
        # a new connection per request: uvicorn closes a keep-alive connection after 5 s idle, and a
        # request that reuses one just as it closes gets "connection reset" (seen on a loaded machine)
        with httpx.Client(
            base_url=url, timeout=60, limits=httpx.Limits(max_keepalive_connections=0), verify=tls_context()
        ) as client:
            yield client
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def auth_backend(tmp_path_factory):
    proc, url = start_backend(
        tmp_path_factory.mktemp("auth") / "backend.log",
        JUDGELAB_BASIC_AUTH_USER="ls",
        JUDGELAB_BASIC_AUTH_PASS="s3cret:pass",
    )
    try:
        yield url
    finally:
        stop(proc)


def sample_tasks(name: str) -> list[dict]:
    """Tasks as Label Studio sends them: id, data, and the usual empty lists."""
    return [
        {"id": 100 + i, "data": task["data"], "annotations": [], "predictions": []}
        for i, task in enumerate(get_schema(name).samples())
    ]


def predict(client: httpx.Client, name: str, tasks: list, project: str = "7.1717000000") -> httpx.Response:
    return client.post(
        "/predict",
        json={"tasks": tasks, "project": project, "label_config": get_schema(name).config_xml, "params": {}},
    )


def test_health_is_up(backend):
    response = backend.get("/health")
    assert response.status_code == 200
    assert response.json()["status"] == "UP"


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_setup_returns_a_model_version_naming_the_schema(backend, name):
    response = backend.post(
        "/setup",
        json={
            "project": "3.1717000000",
            "schema": get_schema(name).config_xml,
            "hostname": "http://ls",
            "access_token": "x",
            "extra_params": "",
        },
    )
    assert response.status_code == 200
    body = response.json()
    assert name in body["model_version"]
    assert body["schema"] == name


def test_setup_of_an_unrelated_config_is_custom(backend):
    xml = (
        '<View><Text name="text" value="$text"/><Choices name="s" toName="text"><Choice value="Pos"/></Choices></View>'
    )
    body = backend.post("/setup", json={"project": "4.1", "schema": xml}).json()
    assert body["schema"] == "custom"
    assert "custom" in body["model_version"]


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_predict_returns_one_prediction_per_task_in_order(backend, name):
    tasks = sample_tasks(name)
    response = predict(backend, name, tasks)
    assert response.status_code == 200
    results = response.json()["results"]
    assert len(results) == len(tasks)
    version = backend.post("/setup", json={"project": "7.1", "schema": get_schema(name).config_xml}).json()
    for prediction in results:
        assert isinstance(prediction["result"], list)
        assert prediction["model_version"] == version["model_version"]
    assert sum(len(p["result"]) for p in results) > 0
    # in order: the batch gives each task what a request for that task alone gives
    for task, prediction in zip(tasks[:4], results[:4], strict=True):
        alone = predict(backend, name, [task]).json()["results"]
        assert alone == [prediction]
    assert len({repr(p["result"]) for p in results}) > 1  # tasks do not all get the same answer


def test_a_broken_task_gets_a_placeholder_and_the_others_their_results(backend):
    good = sample_tasks("summary_flaws")[:2]
    missing_field = {"id": 2, "data": {"title": "t", "post": "p", "score": 5}}  # no summary
    batch = [good[0], missing_field, {"id": 3, "data": "not an object"}, "not a task", {"id": 5}, good[1]]
    response = predict(backend, "summary_flaws", batch)
    assert response.status_code == 200
    results = response.json()["results"]
    assert len(results) == len(batch)
    for i in (1, 2, 3, 4):
        assert "result" not in results[i], results[i]
        assert results[i]["model_version"]
    expected = predict(backend, "summary_flaws", good).json()["results"]
    assert [results[0], results[5]] == expected
    assert all("result" in p for p in expected)


def test_an_empty_batch_gives_an_empty_list(backend):
    response = predict(backend, "hotel_spans", [])
    assert response.status_code == 200
    assert response.json()["results"] == []


@pytest.mark.parametrize(
    ("path", "content"),
    [
        ("/predict", b"this is not json"),
        ("/predict", b"\xff\xfe\x00garbage"),
        ("/predict", b"[1, 2]"),
        ("/predict", b"null"),
        ("/predict", b'{"tasks": {"id": 1}, "label_config": "<View/>"}'),
        ("/predict", b'{"tasks": [{"id": 1, "data": {}}]}'),
        ("/predict", b'{"tasks": [{"id": 1, "data": {}}], "label_config": "   "}'),
        ("/predict", b'{"tasks": [{"id": 1, "data": {}}], "label_config": 42}'),
        ("/predict", b'{"tasks": [], "label_config": "<View><Text name="}'),
        ("/setup", b"not json"),
        ("/setup", b'{"project": "1.2"}'),
        ("/setup", b'{"project": "1.2", "schema": "<<<"}'),
        ("/webhook", b"not json"),
    ],
)
def test_malformed_requests_are_400_not_5xx(backend, path, content):
    response = backend.post(path, content=content, headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    assert response.json()["status"] == "error"
    assert response.json()["error"]


def test_webhook_event_is_acknowledged(backend):
    payload = {
        "action": "ANNOTATION_CREATED",
        "annotation": {"id": 1, "result": []},
        "project": {"id": 7, "label_config": get_schema("hotel_spans").config_xml},
        "task": {"id": 1},
    }
    response = backend.post("/webhook", json=payload)
    assert response.status_code == 200
    assert response.json()["event"] == "ANNOTATION_CREATED"


def with_extra_label(xml: str) -> str:
    changed = xml.replace('<Label value="Other"', '<Label value="Redundant" background="#000"/><Label value="Other"')
    assert changed != xml
    return changed


def with_new_header(xml: str) -> str:
    changed = xml.replace('<Header value="Source post ($subreddit)"', '<Header value="Pilot 2: the post"')
    assert changed != xml
    return changed


def test_model_version_follows_structure_not_headers(backend):
    xml = get_schema("summary_flaws").config_xml

    def version(config: str) -> str:
        response = backend.post("/setup", json={"project": "9.1", "schema": config})
        assert response.status_code == 200
        return response.json()["model_version"]

    base = version(xml)
    assert version(with_new_header(xml)) == base
    assert version(with_extra_label(xml)) != base
    assert "summary_flaws" in version(with_extra_label(xml))


def test_basic_auth_protects_everything_but_health(auth_backend):
    setup = {"project": "1.1", "schema": get_schema("hotel_spans").config_xml}
    assert httpx.get(f"{auth_backend}/health", verify=tls_context()).status_code == 200
    refused = httpx.post(f"{auth_backend}/setup", json=setup, verify=tls_context())
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith("Basic")
    assert (
        httpx.post(f"{auth_backend}/setup", json=setup, auth=("ls", "wrong"), verify=tls_context()).status_code == 401
    )
    assert (
        httpx.post(f"{auth_backend}/setup", json=setup, auth=("other", "s3cret:pass"), verify=tls_context()).status_code
        == 401
    )
    # on a loaded machine (4 test workers on 2 cores) the first /setup answered after httpx's default 5 s
    accepted = httpx.post(
        f"{auth_backend}/setup", json=setup, auth=("ls", "s3cret:pass"), timeout=60, verify=tls_context()
    )
    assert accepted.status_code == 200
    assert "hotel_spans" in accepted.json()["model_version"]
    tasks = sample_tasks("hotel_spans")[:2]
    body = {"tasks": tasks, "label_config": setup["schema"], "project": "1.1"}
    assert httpx.post(f"{auth_backend}/predict", json=body, verify=tls_context()).status_code == 401
    predicted = httpx.post(
        f"{auth_backend}/predict", json=body, auth=("ls", "s3cret:pass"), timeout=60, verify=tls_context()
    )
    assert predicted.status_code == 200
    assert len(predicted.json()["results"]) == 2


def test_health_and_setup_answer_while_a_big_batch_is_predicted(backend):
    """Label Studio gives /health 1 s and /setup 3 s, and sends "Retrieve predictions" for a whole
    project as one request: a long batch must not make the backend look dead meanwhile."""
    tasks = sample_tasks("likert_rubric_es") * 60  # 600 tasks: seconds of work
    done: dict[str, httpx.Response] = {}

    def big_batch() -> None:
        with httpx.Client(base_url=str(backend.base_url), timeout=300, verify=tls_context()) as client:
            done["response"] = predict(client, "likert_rubric_es", tasks)

    worker = threading.Thread(target=big_batch)
    worker.start()
    time.sleep(0.5)  # the batch is being predicted now
    assert worker.is_alive(), "the batch ended before /health was asked: make it bigger"
    health = backend.get("/health", timeout=5)
    setup = backend.post("/setup", json={"project": "5.1", "schema": get_schema("hotel_spans").config_xml}, timeout=5)
    # both answered while the batch still runs: a batch holding the server up would end first
    batch_still_running = worker.is_alive()
    worker.join()
    assert batch_still_running, "/health and /setup only answered once the batch had ended"
    assert health.status_code == 200
    assert setup.status_code == 200
    response = done["response"]
    assert response.status_code == 200 and len(response.json()["results"]) == len(tasks)


def test_a_blind_arm_task_never_gets_a_prediction(backend):
    """The anchoring design's blind tasks (data arm=blind) are answered without a result, in
    their place in the batch, whoever asks (preannotate, or Label Studio when a task is opened)."""
    tasks = sample_tasks("augmentation_quality")[:3]
    tasks[1] = {**tasks[1], "data": {**tasks[1]["data"], "arm": "blind"}}
    tasks[2] = {**tasks[2], "data": {**tasks[2]["data"], "arm": "suggested"}}
    response = predict(backend, "augmentation_quality", tasks)
    assert response.status_code == 200
    results = response.json()["results"]
    assert len(results) == 3
    assert "result" in results[0] and "result" in results[2]
    assert "result" not in results[1] and "blind" in results[1]["error"]
