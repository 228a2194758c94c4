"""Batch APIs: the simulated server's batch endpoints, the backend's batch routes (a real backend
process against the simulated server), and ``judgelab preannotate --batch`` / ``--batch-file`` /
``--batch-results`` through the CLI on a real Label Studio, compared with the live path."""

from __future__ import annotations

import json
import re
import shlex

import httpx
import pytest
from backend_process import start_backend
from click.testing import CliRunner
from llm_sim import LLMSim, SimCall
from readme_commands import block_after

from judgelab.configs.schema import all_schemas
from judgelab.sync import batch_predict
from judgelab.sync.cli import main
from judgelab.sync.http_retry import tls_context
from judgelab.sync.importers import rows_from_records
from judgelab.sync.projects import ensure_project, import_rows, project_schema_name

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
        f"{sim.url}/files",
        data={"purpose": "batch"},
        files={"file": ("in.jsonl", _request_lines(n))},
        verify=tls_context(),
    )
    assert uploaded.status_code == 200, uploaded.text
    created = httpx.post(
        f"{sim.url}/batches",
        json={"input_file_id": uploaded.json()["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"},
        verify=tls_context(),
    )
    assert created.status_code == 200, created.text
    return created.json()


def _look(sim: LLMSim, batch_id: str) -> dict:
    return httpx.get(f"{sim.url}/batches/{batch_id}", verify=tls_context()).json()


def _file(sim: LLMSim, file_id: str | None) -> list[dict]:
    if not file_id:
        return []
    text = httpx.get(f"{sim.url}/files/{file_id}/content", verify=tls_context()).text
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
        missing = httpx.post(
            f"{sim.url}/batches",
            json={"input_file_id": "nope", "endpoint": "/v1/chat/completions"},
            verify=tls_context(),
        )
        assert missing.status_code == 400


# ---------------------------------------------------------------------- batch prices


def test_batch_prices_are_the_given_ones_or_half_the_live_ones():
    from judgelab.backend.llm.client import Usage
    from judgelab.backend.llm.judges import JudgeError, judges_for
    from judgelab.backend.settings import LLMSettings

    settings = LLMSettings(base_url="http://127.0.0.1:1/v1", model="gpt-4o-mini", models=MODELS)
    usage = Usage(1_000_000, 100_000)
    [live_only] = judges_for(settings, {"models": ["gpt-4o"], "price_in": 2.5, "price_out": 10})
    assert live_only.batch_prices == (1.25, 5.0) and live_only.batch_price_halved
    assert live_only.batch_cost(usage) == pytest.approx(live_only.cost(usage) / 2)
    mini, big = judges_for(
        settings,
        {
            "price_in": 1,
            "price_out": 2,
            "price_batch_in": {"gpt-4o-mini": 0.3},
            "price_batch_out": {"gpt-4o-mini": 0.9},
        },
    )
    assert mini.batch_prices == (0.3, 0.9) and not mini.batch_price_halved
    assert mini.batch_cost(usage) == pytest.approx(0.3 + 0.09)
    assert big.batch_prices == (0.5, 1.0) and big.batch_price_halved  # no batch price of its own
    [unpriced] = judges_for(settings, {"models": ["gpt-4o"]})
    assert unpriced.batch_cost(usage) is None and not unpriced.batch_price_halved
    with pytest.raises(JudgeError, match="price_batch_in"):
        judges_for(settings, {"price_batch_in": -1})
    from judgelab.sync.backend_link import judge_params

    params = judge_params(price_batch_in=("gpt-4o-mini=0.3",), price_batch_out=("0.9",))
    assert params == {"price_batch_in": {"gpt-4o-mini": 0.3}, "price_batch_out": 0.9}


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
    live = httpx.post(f"{backend.url}/predict", json=_body(tasks[:1], extra), timeout=60, verify=tls_context()).json()
    assert isinstance(live["results"][0], list) and sim.count == 2  # two judges, n=2 each
    answer = httpx.post(f"{backend.url}/batch/requests", json=_body(tasks, extra), timeout=60, verify=tls_context())
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
    read = httpx.post(
        f"{backend.url}/batch/results", json={"results": bad, "source": "results.jsonl"}, verify=tls_context()
    ).json()
    assert read["stored"] == 7 and read["already"] == 0, read
    assert any(p.startswith("results.jsonl line 8: not JSON") for p in read["problems"]), read
    assert any("line 9" in p and "no choices" in p for p in read["problems"]), read
    again = httpx.post(
        f"{backend.url}/batch/results", json={"results": results, "source": "r2"}, verify=tls_context()
    ).json()
    assert again["stored"] == 0 and again["already"] == 7
    only_held = httpx.post(
        f"{backend.url}/predict", json=_body(tasks, extra, ask=False), timeout=60, verify=tls_context()
    ).json()["results"]
    assert sim.count == asked  # nothing asked live
    assert isinstance(only_held[0], list) and isinstance(only_held[2], list)
    assert "error" in only_held[1] and "error" in only_held[3]  # one line left out; the blind task
    # what is left is the one line not answered
    left = httpx.post(
        f"{backend.url}/batch/requests", json=_body(tasks, extra), timeout=60, verify=tls_context()
    ).json()
    assert [line["custom_id"] for line in left["requests"]] == [lines[0]["custom_id"]]


def test_the_batch_api_through_the_backend_submit_status_collect(sim_and_backend):
    sim, backend = sim_and_backend
    tasks = dubai_tasks(2, "S")
    extra = {"models": ["gpt-4o"], "price_in": 2.5, "price_out": 10}
    lines = httpx.post(
        f"{backend.url}/batch/requests", json=_body(tasks, extra), timeout=60, verify=tls_context()
    ).json()["requests"]
    keys = [line["custom_id"] for line in lines]
    sent = httpx.post(f"{backend.url}/batch/submit", json={"project": "7.0", "keys": keys}, verify=tls_context()).json()
    assert sent["requests"] == 2 and sent["batch"].startswith("batch_sim_")
    # in flight: asked again, nothing to send
    again = httpx.post(
        f"{backend.url}/batch/requests", json=_body(tasks, extra), timeout=60, verify=tls_context()
    ).json()
    assert again["requests"] == [] and again["counts"]["in_flight"] == 2
    first = httpx.get(f"{backend.url}/batch/status", params={"project": "7"}, verify=tls_context()).json()["batches"]
    assert [(b["id"], b["status"], b.get("collected")) for b in first] == [(sent["batch"], "in_progress", None)]
    second = httpx.get(f"{backend.url}/batch/status", params={"project": "7"}, verify=tls_context()).json()["batches"]
    assert second[0]["collected"] and second[0]["outcome"]["stored"] == 2 and second[0]["outcome"]["missing"] == 0
    assert (
        httpx.get(f"{backend.url}/batch/status", params={"project": "7"}, verify=tls_context()).json()["batches"] == []
    )
    predicted = httpx.post(
        f"{backend.url}/predict", json=_body(tasks, extra, ask=False), timeout=60, verify=tls_context()
    ).json()
    assert all("result" in p for p in predicted["results"]) and sim.count == 0
    usage = httpx.get(f"{backend.url}/usage", params={"project": "7"}, verify=tls_context()).json()["total"]
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
        lines = httpx.post(
            f"{backend.url}/batch/requests", json=_body(dubai_tasks(1, "N")), timeout=60, verify=tls_context()
        ).json()
        keys = [line["custom_id"] for line in lines["requests"]]
        refused = httpx.post(f"{backend.url}/batch/submit", json={"project": "7.0", "keys": keys}, verify=tls_context())
        assert refused.status_code == 502 and "HTTP 404" in refused.json()["error"]
        assert "Batch API" in refused.json()["error"]


# ---------------------------------------------------------------------- through the CLI, on Label Studio


@pytest.fixture(scope="module")
def batch_stack(live_stack, tmp_path_factory):
    """The batch backend and a live one (each with its own cache), on one simulated server."""
    home = tmp_path_factory.mktemp("batch")
    with LLMSim(answer=judge_answer, models=MODELS, batch_polls=2) as sim:
        common = {
            "JUDGELAB_ANNOTATOR": "llm",
            "JUDGELAB_LLM_BASE_URL": sim.url,
            "JUDGELAB_LLM_MODEL": ",".join(MODELS),
            "JUDGELAB_LLM_TEMPERATURE": "0.7",
            "JUDGELAB_LLM_RETRIES": "0",
            "JUDGELAB_PREDICT_DEADLINE": "30",
        }
        batch = start_backend(home / "batch.log", **common, JUDGELAB_CACHE_PATH=str(home / "batch-cache.sqlite"))
        live = start_backend(home / "live.log", **common, JUDGELAB_CACHE_PATH=str(home / "live-cache.sqlite"))
        env = {
            "JUDGELAB_LS_URL": live_stack.url,
            "JUDGELAB_LS_TOKEN": live_stack.creds.token,
            "JUDGELAB_BACKEND_URL": batch.url,
        }
        try:
            yield {"sim": sim, "batch": batch.url, "live": live.url, "client": live_stack.client, "env": env}
        finally:
            batch.stop()
            live.stop()


def judgelab(stack, command: str, expect: int = 0) -> str:
    """Run a ``judgelab ...`` command line as a user types it; its output."""
    args = shlex.split(command.replace("\\\n", " "))
    assert args[0] == "judgelab", command
    result = CliRunner().invoke(main, args[1:], env=stack["env"])
    assert result.exit_code == expect, f"{command}\n{result.output}\n{result.exception!r}"
    return result.output


def new_project(client, tasks: list[dict], title: str | None = None) -> int:
    """A hotel project with ``tasks``: titled, or the schema's default one (made anew)."""
    if title is None:
        for project in client.projects.list():
            if project_schema_name(project) == HOTEL.name and "[judgelab-title:" not in (project.description or ""):
                client.projects.delete(id=project.id)
    project = ensure_project(client, HOTEL, title)
    import_rows(client, project.id, rows_from_records([(f"task {i}", t) for i, t in enumerate(tasks)], HOTEL))
    return project.id


def predictions_by_task(client, project_id: int) -> dict[str, list[tuple]]:
    """Per task (by its data id), its predictions as (model_version, score, result without region ids)."""
    out = {}
    for task in client.tasks.list(project=project_id):
        predictions = []
        for p in client.predictions.list(task=task.id):
            regions = sorted(json.dumps({k: v for k, v in r.items() if k != "id"}, sort_keys=True) for r in p.result)
            predictions.append((p.model_version, round(p.score or 0, 6), regions))
        out[task.data["id"]] = sorted(predictions)
    return out


def batch_cost(sim: LLMSim, since: int = 0) -> float:
    """What the batch answers' reported usage costs at half the live prices."""
    total = 0.0
    for answer in sim.batch_answers[since:]:
        price_in, price_out = PRICES[answer["body"]["model"]]
        total += answer["usage"]["prompt_tokens"] * price_in + answer["usage"]["completion_tokens"] * price_out
    return total / 2 / 1e6


JUDGES = (
    "--model gpt-4o-mini --model gpt-4o --samples 2 --price-in gpt-4o-mini=0.15 --price-out gpt-4o-mini=0.60 "
    "--price-in gpt-4o=2.50 --price-out gpt-4o=10"
)


def test_batch_submit_progress_collect_gives_the_live_paths_predictions_at_the_batch_price(batch_stack):
    client, sim = batch_stack["client"], batch_stack["sim"]
    tasks = dubai_tasks(4, "A")
    blind = dubai_tasks(5, "A")[4]
    tasks.append({**blind, "data": {**blind["data"], "arm": "blind"}})  # the blind arm: never sent
    project_id = new_project(client, tasks, "batch route")
    twin_id = new_project(client, tasks, "live twin")
    # the first task's prompts are already answered in the batch backend's cache (another project asked)
    cached = {"tasks": [{"id": 1, "data": tasks[0]["data"]}], "project": "999.0", "label_config": HOTEL.config_xml}
    cached["params"] = {"extra_params": {"models": list(MODELS), "samples": 2}}
    assert (
        "result"
        in httpx.post(f"{batch_stack['batch']}/predict", json=cached, timeout=60, verify=tls_context()).json()[
            "results"
        ][0][0]
    )
    asked, answered = sim.count, len(sim.batch_answers)

    out = judgelab(batch_stack, f"judgelab preannotate --project {project_id} --batch {JUDGES}")
    batch_id = re.search(r"sent batch (\S+) of 12 request\(s\)", out)
    assert batch_id, out
    assert "this run added 2 predictions" in out, out  # the cached task, at once
    assert "1 blind-arm task(s) left without one by design" in out, out
    assert "priced at half the live price for gpt-4o-mini, gpt-4o" in out, out
    assert sim.count == asked  # nothing asked live

    out = judgelab(batch_stack, f"judgelab preannotate --project {project_id} --batch")
    assert f"batch {batch_id.group(1)} is in_progress: 6/12 request(s) answered so far" in out, out
    assert "1/5 tasks have a prediction" in out, out

    out = judgelab(batch_stack, f"judgelab preannotate --project {project_id} --batch")
    assert f"batch {batch_id.group(1)} completed: 12 answer(s) collected" in out, out
    assert "4/5 tasks have a prediction" in out and "this run added 6 predictions" in out, out
    sent = sim.batch_answers[answered:]
    assert len(sent) == 12 and not any(tag in json.dumps(a["body"]) for a in sent for tag in ("[A00]", "[A04]"))
    assert sim.count == asked
    assert float(re.search(r"cost ([0-9.]+)", out).group(1)) == pytest.approx(batch_cost(sim, answered), abs=5e-5)
    usage = httpx.get(f"{batch_stack['batch']}/usage", params={"project": project_id}, verify=tls_context()).json()[
        "total"
    ]
    assert usage["cost"] == pytest.approx(batch_cost(sim, answered)) and usage["requests"] == 12

    # the live path on the twin project, from the same scripted answers: the same predictions
    sim.reset_samples()
    out = judgelab(
        batch_stack, f"judgelab preannotate --project {twin_id} --push --backend-url {batch_stack['live']} {JUDGES}"
    )
    assert "4/5 tasks have a prediction" in out, out
    batch_route, live_route = predictions_by_task(client, project_id), predictions_by_task(client, twin_id)
    assert batch_route == live_route and sorted(len(p) for p in batch_route.values()) == [0, 2, 2, 2, 2]

    out = judgelab(batch_stack, f"judgelab preannotate --project {project_id} --batch")
    assert "4/5 tasks have a prediction" in out and "sent batch" not in out, out  # nothing left to send


def test_an_expired_or_failed_batch_says_what_to_do(batch_stack):
    client, sim = batch_stack["client"], batch_stack["sim"]
    project_id = new_project(client, dubai_tasks(2, "E"), "expiring")
    options = "--model gpt-4o --samples 1 --price-in 2.5 --price-out 10"
    sim.batch_polls, sim.batch_end = 1, "expired"
    try:
        out = judgelab(batch_stack, f"judgelab preannotate --project {project_id} --batch {options}")
        assert "sent batch" in out and "of 2 request(s)" in out, out
        out = judgelab(batch_stack, f"judgelab preannotate --project {project_id} --batch")
        assert "expired before the provider finished it (its completion window is 24 h): 1 answer(s) collected" in out
        assert "run the same command again to send the 1 task(s) left in a new batch" in out, out
        assert "1/2 tasks have a prediction" in out, out
        sim.batch_end = "completed"
        out = judgelab(batch_stack, f"judgelab preannotate --project {project_id} --batch")
        assert "of 1 request(s)" in out, out
        out = judgelab(batch_stack, f"judgelab preannotate --project {project_id} --batch")
        assert "completed: 1 answer(s) collected" in out and "2/2 tasks have a prediction" in out, out

        project_id = new_project(client, dubai_tasks(3, "F"), "failing")
        sim.batch_end = "failed"
        judgelab(batch_stack, f"judgelab preannotate --project {project_id} --batch {options}")
        out = judgelab(batch_stack, f"judgelab preannotate --project {project_id} --batch")
        assert "failed: the provider refused it (line 1: scripted: the batch is refused); nothing was answered" in out
        assert "run the same command again to send the 3 task(s) in a new batch" in out, out
        sim.batch_end, sim.batch_failed_lines, sim.batch_missing_lines = "completed", (0,), (2,)
        judgelab(batch_stack, f"judgelab preannotate --project {project_id} --batch")
        out = judgelab(batch_stack, f"judgelab preannotate --project {project_id} --batch")
        assert "completed: 1 answer(s) collected; 1 request(s) failed (e.g. batch" in out, out
        assert "HTTP 500" in out and "1 request(s) missing from its output" in out, out
        assert "send the 2 task(s) left in a new batch" in out and "1/3 tasks have a prediction" in out, out
    finally:
        sim.batch_polls, sim.batch_end, sim.batch_failed_lines, sim.batch_missing_lines = 2, "completed", (), ()


def test_the_docs_batch_api_block_runs_as_written(batch_stack, tmp_path, monkeypatch):
    client = batch_stack["client"]
    project_id = new_project(client, dubai_tasks(2, "D"))
    monkeypatch.chdir(tmp_path)
    submit, later = block_after(BATCH_MARKER)
    out = judgelab(batch_stack, submit)
    assert "sent batch" in out and "of 4 request(s)" in out, out  # two judges (the backend's models)
    assert "priced at half the live price" in out
    assert "is in_progress" in judgelab(batch_stack, later)
    out = judgelab(batch_stack, later)
    assert "completed: 4 answer(s) collected" in out and "2/2 tasks have a prediction" in out, out
    assert len(predictions_by_task(client, project_id)["D00"]) == 2


def test_the_vllm_file_route_writes_requests_and_reads_results(batch_stack, tmp_path, monkeypatch):
    client, sim = batch_stack["client"], batch_stack["sim"]
    tasks = dubai_tasks(3, "V")
    project_id = new_project(client, tasks)
    twin_id = new_project(client, tasks, "vllm twin")
    monkeypatch.chdir(tmp_path)
    write, run_batch, read = block_after(FILE_MARKER)
    asked = sim.count
    out = judgelab(batch_stack, write)
    assert "wrote 6 request(s) to requests.jsonl" in out, out  # 3 tasks x the backend's 2 models
    lines = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert len(lines) == 6 and all(line["url"] == "/v1/chat/completions" for line in lines)
    assert run_batch.startswith("vllm run-batch -i requests.jsonl -o results.jsonl")
    # what vllm run-batch writes (OpenAI's batch output format), one line left out
    (tmp_path / "results.jsonl").write_text(_results_of(sim, lines, skip=(5,)))
    out = judgelab(batch_stack, read)
    assert "5 answer(s) read" in out and "2/3 tasks have a prediction" in out, out
    assert "1 task(s) still lack an answer: --batch-file writes their requests again" in out, out
    out = judgelab(batch_stack, write)
    assert "wrote 1 request(s) to requests.jsonl" in out, out
    (tmp_path / "results.jsonl").write_text(_results_of(sim, [json.loads((tmp_path / "requests.jsonl").read_text())]))
    out = judgelab(batch_stack, read)
    assert "1 answer(s) read" in out and "3/3 tasks have a prediction" in out, out
    assert sim.count == asked  # nothing asked live
    # a results file that is not one: named by line (sent in parts, the line numbers are the file's)
    monkeypatch.setattr(batch_predict, "RESULT_LINES_PER_REQUEST", 1)
    (tmp_path / "results.jsonl").write_text('{"custom_id": "x"}\n\nnot json\n')
    out = judgelab(batch_stack, read)
    assert "results.jsonl line 3: not JSON" in out and "results.jsonl line 1: no response" in out, out
    sim.reset_samples()
    judgelab(batch_stack, f"judgelab preannotate --project {twin_id} --push --backend-url {batch_stack['live']}")
    assert predictions_by_task(client, project_id) == predictions_by_task(client, twin_id)
