"""judgelab's client of the ML backend (``sync/backend_client.py``) against the real backend, run
as a process: a backend that refuses connections is asked again once it is up, one behind a
failing proxy (tests/fault_proxy.py: 500s, dropped connections, answers lost after the backend
did the work, bodies cut in the middle) is asked until it answers, and the attempts are counted."""

from __future__ import annotations

import pytest
from backend_process import start_backend
from fault_proxy import FaultProxy

from judgelab.configs.schema import get_schema
from judgelab.sync.backend_client import BackendClient, BackendUnreachable
from judgelab.sync.backend_link import backend_usage
from judgelab.sync.local_stack import free_port

SCHEMA = "likert_rubric_es"


def predict_body(count: int) -> dict:
    schema = get_schema(SCHEMA)
    samples = [s["data"] for s in schema.samples()]
    tasks = [{"id": i + 1, "data": samples[i % len(samples)], "project": 7} for i in range(count)]
    return {"tasks": tasks, "project": "7.0", "label_config": schema.config_xml}


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    with start_backend(tmp_path_factory.mktemp("backend") / "backend.log") as process:
        yield process


def test_a_backend_refusing_connections_is_asked_again_once_it_is_up(tmp_path):
    port = free_port()
    started = []

    def come_up(seconds: float) -> None:  # the client's pause before its second attempt
        started.append(start_backend(tmp_path / "backend.log", port=port))

    client = BackendClient(f"http://127.0.0.1:{port}", pause=0.01, sleep=come_up)
    try:
        assert client.health()
        assert (client.requests, client.retries, len(started)) == (2, 1, 1)  # refused, then answered
        assert client.setup(7, get_schema(SCHEMA).config_xml, None)["model_version"]
        assert client.requests == 3  # the backend is up: no retry
    finally:
        client.close()
        for process in started:
            process.stop()


def test_a_backend_that_stays_down_is_tried_twice_and_named(tmp_path):
    port = free_port()  # nothing listens
    waits: list[float] = []
    with BackendClient(f"http://127.0.0.1:{port}", pause=0.01, sleep=waits.append) as client:
        assert client.health() is False
        assert (client.requests, waits) == (2, [0.01])
        with pytest.raises(BackendUnreachable, match=rf"ML backend at http://127.0.0.1:{port} did not answer /predict"):
            client.predict(predict_body(1))
        assert client.requests == 4


def test_every_request_is_retried_through_failures_and_predict_is_safe_to_repeat(backend):
    with FaultProxy(backend.url, rate=1.0, seed=3, max_in_a_row=2) as proxy:  # each request: fails twice, passes
        with BackendClient(proxy.url, pause=0.01) as client:
            assert client.health()
            assert (client.requests, client.retries) == (3, 2)
            versions = client.setup(7, get_schema(SCHEMA).config_xml, None)
            results = client.predict(predict_body(3))
            usage = backend_usage(client, 7)
            assert (client.requests, client.retries) == (12, 8)
    assert sum(proxy.faults.values()) == 8 and proxy.passed == 4
    assert len(results) == 3 and all(p["model_version"] == versions["model_version"] for p in results)
    assert usage is None  # the offline annotator keeps no usage
