"""Batch APIs: the simulated server's batch endpoints, the backend's batch routes (a real backend
process against the simulated server), and ``judgelab preannotate --batch`` / ``--batch-file`` /
``--batch-results`` through the CLI on a real Label Studio, compared with the live path."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from backend_process import start_backend
from llm_sim import LLMSim, SimCall

from judgelab.configs.schema import all_schemas

HOTEL = all_schemas()["hotel_spans"]
MODELS = ("gpt-4o-mini", "gpt-4o")
PRICES = {"gpt-4o-mini": (0.15, 0.60), "gpt-4o": (2.50, 10.0)}
BATCH_MARKER = "tests/test_llm_batch.py runs the next block as written"
FILE_MARKER = "tests/test_llm_batch.py runs the batch-file block as written"


def judge_answer(messages, call: SimCall) -> str:
    """A factgenie answer that depends on the prompt and the sample only (the same whichever
    route asks): the big model marks the skyline too, the impression follows the task's number."""
    text = json.dumps(messages)
    number = int(m.group(1)) if (m := re.search(r"\[[A-Z]+(\d+)\]", text)) else 0
    spans = [{"text": "Hudson River", "annotation_type": 2, "reason": "the hotel is in Dubai"}]
    if call.model == "gpt-4o":
        spans.append({"text": "Manhattan skyline", "annotation_type": 0, "reason": "not in the descriptions"})
    return json.dumps({"annotations": spans, "impression": 1 + (number + call.sample) % 5})


def dubai_tasks(n: int, tag: str) -> list[dict]:
    sample = next(s for s in HOTEL.samples() if "Hudson River" in s["data"]["summary"])
    return [
        {
            **sample,
            "data": {
                **sample["data"],
                "id": f"{tag}{i:02d}",
                "summary": f"[{tag}{i:02d}] " + sample["data"]["summary"],
            },
        }
        for i in range(n)
    ]


# ---------------------------------------------------------------------- the simulated Batch API


def _request_lines(n: int, model: str = "sim-model") -> bytes:
    lines = [
        {
            "custom_id": f"req-{i}",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": model, "messages": [{"role": "user", "content": f"task {i}"}]},
        }
        for i in range(n)
    ]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _sim_batch(sim: LLMSim, n: int) -> dict:
    uploaded = httpx.post(
        f"{sim.url}/files", data={"purpose": "batch"}, files={"file": ("in.jsonl", _request_lines(n))}
    )
    assert uploaded.status_code == 200, uploaded.text
    created = httpx.post(
        f"{sim.url}/batches",
        json={"input_file_id": uploaded.json()["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"},
    )
    assert created.status_code == 200, created.text
    return created.json()


def _look(sim: LLMSim, batch_id: str) -> dict:
    return httpx.get(f"{sim.url}/batches/{batch_id}").json()


def _file(sim: LLMSim, file_id: str | None) -> list[dict]:
    if not file_id:
        return []
    text = httpx.get(f"{sim.url}/files/{file_id}/content").text
    return [json.loads(line) for line in text.splitlines()]


def test_sim_batch_moves_from_validating_to_completed_and_answers_every_line():
    with LLMSim(answer=lambda messages: f"answer to {messages[-1]['content']}", batch_polls=2) as sim:
        batch = _sim_batch(sim, 4)
        assert batch["status"] == "validating" and batch["request_counts"]["total"] == 4
        assert _look(sim, batch["id"])["status"] == "in_progress"
        done = _look(sim, batch["id"])
        assert done["status"] == "completed" and done["request_counts"] == {"total": 4, "completed": 4, "failed": 0}
        output = _file(sim, done["output_file_id"])
        assert [r["custom_id"] for r in output] == [f"req-{i}" for i in range(4)]
        body = output[2]["response"]["body"]
        assert body["choices"][0]["message"]["content"] == "answer to task 2"
        assert body["usage"]["prompt_tokens"] >= 1 and done["error_file_id"] is None
        assert sim.count == 0 and len(sim.batch_answers) == 4  # no chat request: batch lines only
        assert _look(sim, batch["id"])["status"] == "completed"  # stays completed


def test_sim_batch_expires_with_half_answered_and_the_rest_in_the_error_file():
    with LLMSim(answer="{}", batch_polls=1, batch_end="expired") as sim:
        batch = _look(sim, _sim_batch(sim, 4)["id"])
        assert batch["status"] == "expired"
        assert [r["custom_id"] for r in _file(sim, batch["output_file_id"])] == ["req-0", "req-1"]
        errors = _file(sim, batch["error_file_id"])
        assert [(r["custom_id"], r["error"]["code"]) for r in errors] == [
            ("req-2", "batch_expired"),
            ("req-3", "batch_expired"),
        ]


def test_sim_batch_failed_lines_missing_lines_and_a_refused_batch():
    with LLMSim(answer="{}", batch_polls=1, batch_failed_lines=(1,), batch_missing_lines=(3,)) as sim:
        batch = _look(sim, _sim_batch(sim, 4)["id"])
        assert batch["status"] == "completed"
        assert [r["custom_id"] for r in _file(sim, batch["output_file_id"])] == ["req-0", "req-2"]
        [failed] = _file(sim, batch["error_file_id"])
        assert failed["custom_id"] == "req-1" and failed["response"]["status_code"] == 500
        sim.batch_end = "failed"
        refused = _look(sim, _sim_batch(sim, 2)["id"])
        assert refused["status"] == "failed" and refused["output_file_id"] is None
        assert refused["errors"]["data"][0]["line"] == 1
        missing = httpx.post(f"{sim.url}/batches", json={"input_file_id": "nope", "endpoint": "/v1/chat/completions"})
        assert missing.status_code == 400


# ---------------------------------------------------------------------- the backend's batch routes


@pytest.fixture
def sim_and_backend(tmp_path):
    with LLMSim(answer=judge_answer, models=MODELS, batch_polls=2) as sim:
        backend = start_backend(
            tmp_path / "backend.log",
            JUDGELAB_ANNOTATOR="llm",
            JUDGELAB_LLM_BASE_URL=sim.url,
            JUDGELAB_LLM_MODEL=",".join(MODELS),
            JUDGELAB_LLM_RETRIES="0",
            JUDGELAB_CACHE_PATH=str(tmp_path / "llm-cache.sqlite"),
        )
        with backend:
            yield sim, backend


def _body(tasks: list[dict], extra: dict | None = None, **params) -> dict:
    body = {
        "tasks": [{"id": 100 + i, "data": t["data"]} for i, t in enumerate(tasks)],
        "project": "7.0",
        "label_config": HOTEL.config_xml,
        "params": {"extra_params": extra or {}, **params},
    }
    return body


def _results_of(sim: LLMSim, lines: list[dict], skip: tuple[int, ...] = ()) -> str:
    """What ``vllm run-batch`` writes for ``lines`` (OpenAI's batch output format), answered by the sim."""
    out = []
    for i, line in enumerate(lines):
        if i in skip:
            continue
        behaviours = sim._behaviours(line["body"])
        payload = sim.completion(list(behaviours), line["body"])
        out.append(
            {"id": f"vllm-{i}", "custom_id": line["custom_id"], "response": {"status_code": 200, "body": payload}}
        )
    return "".join(json.dumps(r) + "\n" for r in out)


def test_batch_requests_cover_every_judge_and_sample_skip_the_blind_arm_and_cached_prompts(sim_and_backend):
    sim, backend = sim_and_backend
    tasks = dubai_tasks(3, "Q")
    tasks.append({"data": {**tasks[0]["data"], "id": "blind", "summary": "[QB] x", "arm": "blind"}})
    extra = {"models": list(MODELS), "samples": 2}
    # one task answered live first: its prompts are in the cache
    live = httpx.post(f"{backend.url}/predict", json=_body(tasks[:1], extra), timeout=60).json()
    assert isinstance(live["results"][0], list) and sim.count == 2  # two judges, n=2 each
    answer = httpx.post(f"{backend.url}/batch/requests", json=_body(tasks, extra), timeout=60)
    assert answer.status_code == 200, answer.text
    lines, counts = answer.json()["requests"], answer.json()["counts"]
    # 2 tasks left x 2 judges x 2 samples, one line each; the blind task has none
    assert len(lines) == 8 and counts["cached"] == 4 and counts["blind"] == 1
    assert {line["body"]["model"] for line in lines} == set(MODELS)
    assert all(line["url"] == "/v1/chat/completions" and len(line["custom_id"]) == 64 for line in lines)
    assert not any("[QB]" in json.dumps(line) for line in lines)
    assert [j["halved"] for j in answer.json()["judges"]] == [False, False]  # no prices: nothing halved

    # the results read back: every task gets its predictions without a live request
    asked = sim.count
    results = _results_of(sim, lines, skip=(0,))
    bad = results + "not json\n" + json.dumps({"custom_id": "f" * 64, "response": {"status_code": 200, "body": {}}})
    read = httpx.post(f"{backend.url}/batch/results", json={"results": bad, "source": "results.jsonl"}).json()
    assert read["stored"] == 7 and read["already"] == 0, read
    assert any(p.startswith("results.jsonl line 8: not JSON") for p in read["problems"]), read
    assert any("line 9" in p and "no choices" in p for p in read["problems"]), read
    again = httpx.post(f"{backend.url}/batch/results", json={"results": results, "source": "r2"}).json()
    assert again["stored"] == 0 and again["already"] == 7
    only_held = httpx.post(f"{backend.url}/predict", json=_body(tasks, extra, ask=False), timeout=60).json()["results"]
    assert sim.count == asked  # nothing asked live
    assert isinstance(only_held[0], list) and isinstance(only_held[2], list)
    assert "error" in only_held[1] and "error" in only_held[3]  # one line left out; the blind task
    # what is left is the one line not answered
    left = httpx.post(f"{backend.url}/batch/requests", json=_body(tasks, extra), timeout=60).json()
    assert [line["custom_id"] for line in left["requests"]] == [lines[0]["custom_id"]]


def test_the_batch_api_through_the_backend_submit_status_collect(sim_and_backend):
    sim, backend = sim_and_backend
    tasks = dubai_tasks(2, "S")
    extra = {"models": ["gpt-4o"], "price_in": 2.5, "price_out": 10}
    lines = httpx.post(f"{backend.url}/batch/requests", json=_body(tasks, extra), timeout=60).json()["requests"]
    keys = [line["custom_id"] for line in lines]
    sent = httpx.post(f"{backend.url}/batch/submit", json={"project": "7.0", "keys": keys}).json()
    assert sent["requests"] == 2 and sent["batch"].startswith("batch_sim_")
    # in flight: asked again, nothing to send
    again = httpx.post(f"{backend.url}/batch/requests", json=_body(tasks, extra), timeout=60).json()
    assert again["requests"] == [] and again["counts"]["in_flight"] == 2
    first = httpx.get(f"{backend.url}/batch/status", params={"project": "7"}).json()["batches"]
    assert [(b["id"], b["status"], b.get("collected")) for b in first] == [(sent["batch"], "in_progress", None)]
    second = httpx.get(f"{backend.url}/batch/status", params={"project": "7"}).json()["batches"]
    assert second[0]["collected"] and second[0]["outcome"]["stored"] == 2 and second[0]["outcome"]["missing"] == 0
    assert httpx.get(f"{backend.url}/batch/status", params={"project": "7"}).json()["batches"] == []
    predicted = httpx.post(f"{backend.url}/predict", json=_body(tasks, extra, ask=False), timeout=60).json()
    assert all("result" in p for p in predicted["results"]) and sim.count == 0
    usage = httpx.get(f"{backend.url}/usage", params={"project": "7"}).json()["total"]
    paid = sum(
        (a["usage"]["prompt_tokens"] * 2.5 + a["usage"]["completion_tokens"] * 10) / 1e6 for a in sim.batch_answers
    )
    assert usage["requests"] == 2 and usage["cost"] == pytest.approx(paid / 2)  # half the live price


def test_a_provider_without_a_batch_api_is_a_clear_error(tmp_path):
    with (
        LLMSim(answer="{}", batch_api=False) as sim,
        start_backend(
            tmp_path / "b.log",
            JUDGELAB_ANNOTATOR="llm",
            JUDGELAB_LLM_BASE_URL=sim.url,
            JUDGELAB_LLM_MODEL="sim-model",
            JUDGELAB_CACHE_PATH=str(tmp_path / "c.sqlite"),
        ) as backend,
    ):
        lines = httpx.post(f"{backend.url}/batch/requests", json=_body(dubai_tasks(1, "N")), timeout=60).json()
        keys = [line["custom_id"] for line in lines["requests"]]
        refused = httpx.post(f"{backend.url}/batch/submit", json={"project": "7.0", "keys": keys})
        assert refused.status_code == 502 and "HTTP 404" in refused.json()["error"]
        assert "Batch API" in refused.json()["error"]
