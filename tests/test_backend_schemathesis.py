"""Property-based fuzzing of the backend's HTTP API from its own OpenAPI description
(schemathesis): whatever the body, the backend answers with a 2xx or a 4xx, never a 5xx."""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, settings  # noqa: E402

from judgelab.backend.app import create_app  # noqa: E402
from judgelab.backend.settings import BackendSettings  # noqa: E402
from judgelab.configs.schema import all_schemas  # noqa: E402

app = create_app(BackendSettings())
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


@schema.parametrize()
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_error_on_any_request(case):
    response = case.call()
    assert response.status_code < 500, f"{case.method} {case.path}: {response.status_code} {response.text[:300]}"


@pytest.mark.parametrize("name", sorted(all_schemas()))
def test_predict_with_odd_task_data_answers_per_task(name):
    from starlette.testclient import TestClient

    config = all_schemas()[name].config_xml
    odd = [{"id": 1, "data": {}}, {"id": 2, "data": {"summary": 5, "lines": "x"}}, {"id": 3}, {"data": None}]
    with TestClient(app) as client:
        response = client.post("/predict", json={"tasks": odd, "label_config": config, "project": "1.1"})
    assert response.status_code == 200
    assert len(response.json()["results"]) == len(odd)
