"""The LLM annotator and the batch path of the backend, against the simulated LLM server
(``llm_sim``, a real HTTP server). The LLM task here is a small test task implementing the
:class:`~backend.llm.contracts.LLMTask` protocol, so these tests do not depend on the schema
tasks of ``backend.llm.tasks``; the last tests use those through the real backend process and
are skipped until that module exists."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
import uvicorn
from llm_sim import Failure, LLMSim

from judgelab.backend.annotators.llm import LLMAnnotator, LLMTaskUnavailable
from judgelab.backend.annotators.registry import make_annotator
from judgelab.backend.app import create_app
from judgelab.backend.draft import Draft
from judgelab.backend.llm.cache import MemoryCache, SQLiteCache
from judgelab.backend.llm.client import LLMError
from judgelab.backend.model import JudgelabModel
from judgelab.backend.settings import BackendSettings, LLMSettings
from judgelab.configs.schema import get_schema
from judgelab.sync.http_retry import tls_context

ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-annotator-SECRET-77"
HOTEL_XML = get_schema("hotel_spans").config_xml


class RatingTask:
    """A minimal LLM task: asks for ``{"rating": n}`` about a task's text, gives a Rating draft."""

    name = "rating"

    def __init__(self, version: str = "t1", fail_on: str | None = None):
        self._version = version
        self.fail_on = fail_on  # to_draft raises for a text containing this (a broken task)

    @property
    def version(self) -> str:
        return self._version

    def messages(self, data):
        text = data.get("text") or data.get("summary")
        if text is None:
            raise KeyError("text")
        return [{"role": "system", "content": "Rate the text 1-7. Answer in JSON."}, {"role": "user", "content": text}]

    def response_format(self):
        return {"type": "json_schema", "json_schema": {"name": "rating", "schema": {"type": "object"}}}

    def to_draft(self, answer_text, data):
        if self.fail_on and self.fail_on in (data.get("text") or ""):
            raise RuntimeError("task bug")
        try:
            rating = int(json.loads(answer_text)["rating"])
        except (ValueError, KeyError, TypeError) as exc:
            return Draft(info={"unparseable": f"{type(exc).__name__}"})
        return Draft(ratings={"impression": rating}, info={"answer": "ok"})


def rate_by_number(messages) -> str:
    """The sim's answer: the rating is the task number mod 7, plus 1."""
    number = int(re.search(r"\d+", messages[-1]["content"]).group())
    return json.dumps({"rating": number % 7 + 1})


def texts(n: int, start: int = 0) -> list[dict]:
    return [{"text": f"task {i}"} for i in range(start, start + n)]


def expected(i: int) -> int:
    return i % 7 + 1


def make(sim: LLMSim, task=None, cache=None, **overrides) -> LLMAnnotator:
    values = dict(base_url=sim.url, model="sim-model", retries=1, timeout=5.0, concurrency=4, cache_path="off")
    values.update(overrides)
    task = task or RatingTask()
    return LLMAnnotator(
        LLMSettings(**values),
        task_factory=lambda schema, xml: task,
        cache=cache if cache is not None else MemoryCache(),
    )


def annotator_for(closing, sim, **kw) -> LLMAnnotator:
    annotator = make(sim, **kw)
    closing.append(annotator)
    return annotator


#: How far past its deadline a batch may return on a loaded machine. The deadline tests are
#: built so that ignoring the deadline would take several times longer than deadline + this.
LATE_S = 1.5


def batch(annotator: LLMAnnotator, datas, deadline_s: float = 10.0, schema: str = "custom"):
    started = time.monotonic()
    drafts = annotator.annotate_batch(schema, "<View/>", datas, deadline_s)
    return drafts, time.monotonic() - started


# ---------------------------------------------------------------------------- answers and cache


def test_a_batch_gives_each_task_its_own_answer_in_order(closing):
    with LLMSim(answer=rate_by_number, latency=0.05) as sim:
        annotator = annotator_for(closing, sim)
        drafts, _ = batch(annotator, texts(20))
    assert [d.ratings["impression"] for d in drafts] == [expected(i) for i in range(20)]
    assert sim.count == 20
    assert annotator.stats["answered"] == 20 and annotator.stats["tasks"] == 20


def test_a_cached_answer_costs_no_second_request(closing, tmp_path):
    path = tmp_path / "cache.sqlite"
    with LLMSim(answer=rate_by_number) as sim:
        first = annotator_for(closing, sim, cache=SQLiteCache(path))
        drafts, _ = batch(first, texts(5))
        assert sim.count == 5
        again, _ = batch(first, texts(5))
        assert sim.count == 5  # all from the cache
        assert [d.ratings for d in again] == [d.ratings for d in drafts]
        restarted = annotator_for(closing, sim, cache=SQLiteCache(path))  # a new process would see the same
        assert [d.ratings for d in batch(restarted, texts(5))[0]] == [d.ratings for d in drafts]
        assert sim.count == 5
        assert restarted.stats["cached"] == 5
        other_model = annotator_for(closing, sim, cache=SQLiteCache(path), model="other-model")
        batch(other_model, texts(5))
        assert sim.count == 10  # another model is another answer


def test_the_same_task_twice_in_a_batch_is_asked_once(closing):
    with LLMSim(answer=rate_by_number) as sim:
        drafts, _ = batch(annotator_for(closing, sim), texts(3) + texts(3))
    assert sim.count == 3
    assert [d.ratings["impression"] for d in drafts] == [expected(i) for i in (0, 1, 2, 0, 1, 2)]


def test_requests_carry_the_task_messages_and_response_format(closing):
    with LLMSim(answer=rate_by_number) as sim:
        batch(annotator_for(closing, sim, api_key=SECRET, temperature=0.2, max_tokens=64), texts(1))
        body = sim.chat_requests[0].body
        assert body["messages"] == RatingTask().messages({"text": "task 0"})
        assert body["response_format"] == RatingTask().response_format()
        assert (body["temperature"], body["max_tokens"]) == (0.2, 64)
        assert sim.chat_requests[0].headers["Authorization"] == f"Bearer {SECRET}"


def test_json_object_is_asked_for_when_the_task_has_no_schema(closing):
    class Plain(RatingTask):
        def response_format(self):
            return None

    with LLMSim(answer=rate_by_number) as sim:
        batch(annotator_for(closing, sim, task=Plain()), texts(1))
        batch(annotator_for(closing, sim, task=Plain(), json_mode="off"), texts(1, start=1))
    assert sim.chat_requests[0].body["response_format"] == {"type": "json_object"}
    assert "response_format" not in sim.chat_requests[1].body


# ---------------------------------------------------------------------------- concurrency and deadline


def test_concurrency_bound_is_respected(closing):
    with LLMSim(answer=rate_by_number, latency=0.2) as sim:
        drafts, elapsed = batch(annotator_for(closing, sim, concurrency=3), texts(24))
    assert all(d is not None for d in drafts)
    assert sim.max_in_flight == 3  # reached, never passed
    assert elapsed >= 8 * 0.2


def test_deadline_returns_what_is_finished_and_a_retry_finishes_more(closing):
    with LLMSim(answer=rate_by_number, latency=1.0) as sim:
        annotator = annotator_for(closing, sim, concurrency=4)
        datas = texts(40)
        drafts, elapsed = batch(annotator, datas, deadline_s=3.0)
        done = [i for i, d in enumerate(drafts) if d is not None]
        assert elapsed < 3.0 + LATE_S, elapsed
        # 4 at a time, 1 s each, 3 s: at most 12; a loaded machine may finish fewer than the ideal
        assert 4 <= len(done) <= 12, len(done)
        # first come, first served: finished tasks are among the first sent (4 in flight at the deadline
        # may end in any order on a loaded machine)
        assert max(done) < len(done) + 4, done
        assert all(drafts[i].ratings["impression"] == expected(i) for i in done)
        assert annotator.stats["unfinished at deadline"] == 40 - len(done)
        asked_first = sim.count

        again, elapsed = batch(annotator, datas, deadline_s=3.0)
        done_again = [i for i, d in enumerate(again) if d is not None]
        assert elapsed < 3.0 + LATE_S, elapsed
        assert len(done_again) >= len(done) + 4  # at least one more wave of 4
        assert set(done) <= set(done_again)
        asked_again = {r.last_user_text for r in sim.chat_requests[asked_first:]}
        assert not asked_again & {datas[i]["text"] for i in done}  # finished work is not asked again
    assert annotator.stats["cached"] == len(done)


def test_tasks_left_with_no_time_count_as_unfinished_whichever_side_sees_the_deadline_first(closing):
    # One request at a time, each answered just before the deadline: the tasks behind it find
    # less than an attempt's worth of time left and stop in the client, before the batch's own
    # wait runs out. The user reads the same thing either way: not answered before the deadline.
    with LLMSim(answer=rate_by_number, latency=0.96) as sim:
        annotator = annotator_for(closing, sim, concurrency=1)
        drafts, elapsed = batch(annotator, texts(10), deadline_s=1.0)
    done = [i for i, d in enumerate(drafts) if d is not None]
    assert done in ([], [0]) and elapsed < 1.0 + LATE_S, (done, elapsed)
    assert annotator.stats["unfinished at deadline"] == 10 - len(done), dict(annotator.stats)
    assert not any(k.startswith("failed") for k in annotator.stats), dict(annotator.stats)


@pytest.mark.parametrize(
    ("failure", "kind"),
    [
        (Failure("500"), "http_500"),
        (Failure("429"), "rate_limited"),
        (Failure("html"), "bad_response"),
        (Failure("empty"), "bad_response"),
        (Failure("garbage"), "bad_response"),
        (Failure("no_choices"), "bad_response"),
        (Failure("hang", seconds=30), "timeout"),
    ],
    ids=lambda v: v.kind if isinstance(v, Failure) else v,
)
def test_a_broken_endpoint_gives_nones_in_time_and_counts_them(closing, failure, kind):
    with LLMSim(answer=lambda m: failure) as sim:
        annotator = annotator_for(closing, sim, concurrency=8, timeout=0.5, retries=1)
        drafts, elapsed = batch(annotator, texts(8), deadline_s=4.0)
    assert drafts == [None] * 8
    assert elapsed < 4.0 + LATE_S, elapsed
    assert annotator.stats[f"failed: {kind}"] == 8, dict(annotator.stats)


def test_a_hanging_endpoint_is_cut_at_the_deadline(closing):
    with LLMSim(answer=lambda m: Failure("hang", seconds=30)) as sim:
        annotator = annotator_for(closing, sim, timeout=60, retries=3)
        drafts, elapsed = batch(annotator, texts(6), deadline_s=1.5)
    assert drafts == [None] * 6 and elapsed < 1.5 + LATE_S
    # cut by the deadline, not by the 60 s timeout: counted as unfinished, not as endpoint failures
    assert annotator.stats["unfinished at deadline"] == 6, dict(annotator.stats)
    assert not any(k.startswith("failed") for k in annotator.stats), dict(annotator.stats)


def test_one_bad_task_does_not_spoil_the_others(closing):
    task = RatingTask(fail_on="task 2")
    datas = texts(4) + [{"no_text": 1}]

    def answer(messages):
        if "task 1" in messages[-1]["content"]:
            return "I think it is a 5."  # not JSON: the task reports it
        if "task 3" in messages[-1]["content"]:
            return Failure("500")
        return rate_by_number(messages)

    with LLMSim(answer=answer) as sim:
        annotator = annotator_for(closing, sim, task=task, retries=0)
        drafts, _ = batch(annotator, datas)
    assert drafts[0].ratings == {"impression": expected(0)}
    # an answer that gives nothing usable is no prediction: Label Studio asks again later
    assert drafts[1] is None and annotator.stats["failed: no usable answer"] == 1
    assert drafts[2] is None and annotator.stats["failed: parse"] == 1  # to_draft raised
    assert drafts[3] is None and annotator.stats["failed: http_500"] == 1
    assert drafts[4] is None and annotator.stats["failed: prompt"] == 1


def test_failures_are_logged_without_the_key(closing, caplog):
    caplog.set_level(logging.DEBUG)
    with LLMSim(answer=lambda m: Failure("echo_auth", status=502)) as sim:
        annotator = annotator_for(closing, sim, api_key=SECRET, retries=1)
        drafts, _ = batch(annotator, texts(3))
    assert drafts == [None] * 3
    assert "http_502" in caplog.text
    assert SECRET not in caplog.text and SECRET not in repr(annotator)


# ---------------------------------------------------------------------------- single task, async, versions


def test_annotate_one_task_returns_a_draft_or_raises(closing):
    with LLMSim(answer=rate_by_number, script=[None, Failure("status", status=400)]) as sim:
        annotator = annotator_for(closing, sim)
        assert annotator.annotate("hotel_spans", {"text": "task 3"}).ratings == {"impression": expected(3)}
        with pytest.raises(LLMError) as caught:
            annotator.annotate("hotel_spans", {"text": "task 4"})
    assert caught.value.kind == "http_400"


def test_annotate_batch_async_from_async_code(closing):
    with LLMSim(answer=rate_by_number, latency=0.1) as sim:
        annotator = annotator_for(closing, sim)

        async def main():
            ticks = 0

            async def ticker():  # the caller's loop stays free while the batch runs
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            tick = asyncio.create_task(ticker())
            drafts = await annotator.annotate_batch_async("custom", "<View/>", texts(8), 5.0)
            tick.cancel()
            return drafts, ticks

        drafts, ticks = asyncio.run(main())
    assert [d.ratings["impression"] for d in drafts] == [expected(i) for i in range(8)]
    assert ticks >= 10


def test_version_changes_with_model_prompt_and_settings_only(closing):
    with LLMSim() as sim:
        base = make(sim)
        closing.append(base)
        version = base.version_for("custom", "<View/>")
        changed = {
            "model": make(sim, model="other"),
            "temperature": make(sim, temperature=0.5),
            "max_tokens": make(sim, max_tokens=10),
            "json_mode": make(sim, json_mode="off"),
            "prompt": make(sim, task=RatingTask(version="t2")),
        }
        same = {
            "key": make(sim, api_key=SECRET),
            "concurrency": make(sim, concurrency=1),
            "timeout": make(sim, timeout=9),
        }
        closing.extend([*changed.values(), *same.values()])
    for what, annotator in changed.items():
        assert annotator.version_for("custom", "<View/>") != version, what
    for what, annotator in same.items():
        assert annotator.version_for("custom", "<View/>") == version, what
    assert re.fullmatch(r"[0-9a-f]{10}", version)


def test_registry_makes_the_llm_annotator_from_settings(tmp_path):
    settings = BackendSettings(
        annotator="llm",
        llm=LLMSettings(base_url="http://127.0.0.1:1/v1", model="m", cache_path=str(tmp_path / "c.sqlite")),
    )
    annotator = make_annotator("llm", settings)
    try:
        assert annotator.name == "llm" and isinstance(annotator.cache, SQLiteCache)
    finally:
        annotator.close()


# ---------------------------------------------------------------------------- the backend's batch path


def hotel_tasks(n: int) -> list[dict]:
    sample = get_schema("hotel_spans").samples()[0]["data"]
    return [{"id": i, "data": {**sample, "summary": f"task {i}: a summary."}} for i in range(n)]


def test_model_predicts_a_batch_with_placeholders_for_unfinished_tasks(closing):
    with LLMSim(answer=rate_by_number, latency=0.5) as sim:
        annotator = annotator_for(closing, sim, concurrency=2)
        model = JudgelabModel("7", HOTEL_XML, annotator, deadline_s=1.2)
        tasks = hotel_tasks(8) + [{"id": 99, "data": {"summary": "no descriptions"}}]
        predictions = model.predict(tasks)
    assert len(predictions) == len(tasks)
    finished = [i for i, p in enumerate(predictions) if "result" in p]
    # 2 at a time, 0.5 s each, 1.2 s: about 4 answers; on a loaded machine fewer, in any order
    assert 1 <= len(finished) <= 4, predictions
    first = finished[0]
    assert predictions[first]["result"][0]["from_name"] == "impression"
    assert predictions[first]["result"][0]["value"] == {"rating": expected(first)}
    assert all(p["model_version"] == model.model_version for p in predictions)
    assert annotator.version_for("hotel_spans", HOTEL_XML) in model.model_version
    assert model.model_version.startswith("judgelab-llm-")
    assert "descriptions" in predictions[-1]["error"]  # the invalid task says why


def test_model_gives_placeholders_when_the_schema_has_no_llm_task():
    def no_task(schema, xml):
        raise LookupError("no prompt for this config")

    with LLMSim() as sim:
        settings = LLMSettings(base_url=sim.url, model="sim-model", cache_path="off")
        annotator = LLMAnnotator(settings, task_factory=no_task, cache=MemoryCache())
        try:
            model = JudgelabModel("7", HOTEL_XML, annotator)
            assert model.setup().startswith("judgelab-llm-")  # /setup still answers
            with pytest.raises(LLMTaskUnavailable):
                annotator.annotate_batch("hotel_spans", HOTEL_XML, [{}], 1.0)
            predictions = model.predict(hotel_tasks(2))
        finally:
            annotator.close()
    assert [("result" in p) for p in predictions] == [False, False]
    assert "no prompt for this config" in predictions[0]["error"]
    assert sim.count == 0


class ServerThread:
    """The real FastAPI app, served by uvicorn on a free port in a thread (in this process, so
    it can use the test task)."""

    def __init__(self, app):
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def predict_body(tasks: list[dict]) -> dict:
    return {"tasks": tasks, "project": "3.1717", "label_config": HOTEL_XML, "params": {"context": None}}


def check_health_during_slow_predict(url: str, tasks: list[dict], deadline_s: float) -> tuple[dict, float]:
    """POST /predict in a thread; while it runs, /health must answer in < 1 s. Returns the
    predict response body and how long it took."""
    done: dict = {}

    def slow_predict() -> None:
        started = time.monotonic()
        done["response"] = httpx.post(f"{url}/predict", json=predict_body(tasks), timeout=60, verify=tls_context())
        done["seconds"] = time.monotonic() - started

    worker = threading.Thread(target=slow_predict)
    worker.start()
    time.sleep(0.5)
    assert worker.is_alive(), "the predict ended before /health was asked"
    for _ in range(3):
        health = httpx.get(f"{url}/health", timeout=5, verify=tls_context())
        assert health.status_code == 200 and health.json()["annotator"] == "llm"
        time.sleep(0.2)
    # three answers while the predict still runs: it does not hold the server up
    running = worker.is_alive()
    worker.join()
    assert running, "/health only answered once the predict had ended"
    response = done["response"]
    assert response.status_code == 200, response.text
    assert done["seconds"] < deadline_s + LATE_S, done["seconds"]
    return response.json(), done["seconds"]


def test_http_predict_keeps_health_responsive_and_returns_by_the_deadline(closing):
    with LLMSim(answer=rate_by_number, latency=1.0) as sim:
        annotator = annotator_for(closing, sim, concurrency=2)
        app = create_app(BackendSettings(annotator="llm", predict_deadline=2.5), annotator=annotator)
        with ServerThread(app) as url:
            tasks = hotel_tasks(10)
            body, _ = check_health_during_slow_predict(url, tasks, 2.5)
            results = body["results"]
            assert len(results) == 10
            first = [i for i, p in enumerate(results) if "result" in p]
            assert 2 <= len(first) <= 4, results
            again = httpx.post(f"{url}/predict", json=predict_body(tasks), timeout=60, verify=tls_context()).json()[
                "results"
            ]
            second = [i for i, p in enumerate(again) if "result" in p]
            assert len(second) > len(first) and set(first) <= set(second)
            assert all(p["model_version"] == body["model_version"] for p in results + again)


# ---------------------------------------------------------------------------- the real backend process

HAS_TASKS = importlib.util.find_spec("judgelab.backend.llm.tasks") is not None


def hotel_answer(messages) -> str:
    """A seed-004 (factgenie) answer: the Hudson River is not in the descriptions of hotel-01."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if "Hudson River" in text:
        annotations = [{"reason": "the hotel is in Dubai", "text": "Hudson River", "annotation_type": 2}]
    else:
        annotations = []
    return json.dumps({"annotations": annotations, "impression": 5})


def start_llm_backend(log_path: Path, **env_vars: str) -> tuple[subprocess.Popen, str]:
    """``python -m judgelab.backend`` with the LLM annotator on a free port; returns (process, url)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGELAB_")}
    env.update(JUDGELAB_BACKEND_HOST="127.0.0.1", JUDGELAB_BACKEND_PORT=str(port), JUDGELAB_ANNOTATOR="llm", **env_vars)
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "judgelab.backend"], cwd=ROOT, env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{url}/health", timeout=1, verify=tls_context()).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"backend did not start:\n{log_path.read_text(errors='replace')}")


@pytest.mark.skipif(not HAS_TASKS, reason="backend.llm.tasks is not written yet")
def test_real_backend_process_with_hotel_spans_tasks(tmp_path):
    samples = get_schema("hotel_spans").samples()
    tasks = [{"id": 200 + i, "data": s["data"], "annotations": [], "predictions": []} for i, s in enumerate(samples)]
    with LLMSim(answer=hotel_answer, latency=1.0) as sim:
        proc, url = start_llm_backend(
            tmp_path / "backend.log",
            JUDGELAB_LLM_BASE_URL=sim.url,
            JUDGELAB_LLM_MODEL="sim-model",
            JUDGELAB_LLM_CONCURRENCY="2",
            JUDGELAB_PREDICT_DEADLINE="2.5",
            JUDGELAB_CACHE_PATH=str(tmp_path / "cache.sqlite"),
            JUDGELAB_LLM_API_KEY=SECRET,
            JUDGELAB_LOG_LEVEL="DEBUG",
        )
        try:
            body, _ = check_health_during_slow_predict(url, tasks, 2.5)
            assert len(body["results"]) == len(tasks)
            assert any("result" not in p for p in body["results"])  # not all finished in 2.5 s
            rounds = 1
            for _ in range(10):  # Label Studio asks again for the placeholders
                results = httpx.post(
                    f"{url}/predict", json=predict_body(tasks), timeout=60, verify=tls_context()
                ).json()["results"]
                rounds += 1
                if all("result" in p for p in results):
                    break
            assert all("result" in p for p in results), results
            # each task answered once; a request still in flight at a deadline is cut and asked again
            prompts = [json.dumps(r.messages) for r in sim.chat_requests]
            assert len(set(prompts)) == len(tasks)
            assert len(prompts) <= len(tasks) + 2 * rounds
            hudson = [
                r
                for p in results
                for r in p["result"]
                if r.get("type") == "labels" and r["value"].get("text") == "Hudson River"
            ]
            assert hudson and hudson[0]["value"]["labels"] == ["Incorrect"]
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            assert SECRET not in (tmp_path / "backend.log").read_text(errors="replace")


def test_real_backend_process_refuses_to_start_without_an_endpoint(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGELAB_")}
    env.update(JUDGELAB_ANNOTATOR="llm", JUDGELAB_BACKEND_PORT="1")
    out = subprocess.run(
        [sys.executable, "-m", "judgelab.backend"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode != 0
    assert "JUDGELAB_LLM_BASE_URL" in out.stderr


def test_settings_replace_is_how_flags_override(tmp_path):
    settings = LLMSettings.from_env({"JUDGELAB_LLM_BASE_URL": "http://x/v1/", "JUDGELAB_LLM_MODEL": "m"})
    assert settings.base_url == "http://x/v1"
    assert replace(settings, concurrency=2).concurrency == 2
