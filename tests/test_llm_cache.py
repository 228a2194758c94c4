"""The LLM response cache keeps only answers worth keeping, within a size cap, and hostile text
(lone surrogates in a task or an answer) never takes a batch down. Against the simulated
OpenAI-compatible server (``llm_sim``) and the real schema tasks; nothing of ours is patched."""

from __future__ import annotations

import json
import logging
import multiprocessing

import httpx
import pytest
from llm_sim import LLMSim, Reply
from test_llm_annotator import HOTEL_XML, RatingTask, ServerThread, predict_body, rate_by_number, texts

from judgelab.backend.annotators.llm import LLMAnnotator
from judgelab.backend.app import create_app
from judgelab.backend.llm.cache import SQLiteCache
from judgelab.backend.settings import BackendSettings, LLMSettings
from judgelab.configs.schema import get_schema
from judgelab.configs.task_data import prepare_task_data
from judgelab.sync.http_retry import tls_context

HOTEL = get_schema("hotel_spans")


def llm(closing, sim: LLMSim, cache, task=None, **overrides) -> LLMAnnotator:
    values = dict(base_url=sim.url, model="sim-model", retries=0, timeout=5.0, concurrency=4, cache_path="off")
    values.update(overrides)
    factory = (lambda schema, xml: task) if task is not None else None
    annotator = LLMAnnotator(LLMSettings(**values), task_factory=factory, cache=cache)
    closing.append(annotator)
    return annotator


def dubai() -> dict:
    sample = next(s for s in HOTEL.samples() if "Hudson River" in s["data"]["summary"])
    return prepare_task_data(HOTEL, sample["data"])


def hotel_batch(annotator: LLMAnnotator, datas: list[dict]):
    return annotator.annotate_batch("hotel_spans", HOTEL_XML, datas, 10.0)


VALID = json.dumps(
    {"annotations": [{"text": "Hudson River", "annotation_type": 2, "reason": "Dubai"}], "impression": 2}
)


# ---------------------------------------------------------------------------- what is worth caching


@pytest.mark.parametrize(
    "useless",
    [
        "I looked at the summary carefully and it reads well to me.",  # prose, no item
        json.dumps({"annotations": [{"text": "purple elephants", "annotation_type": 2, "reason": "x"}]}),  # not in text
        "",  # nothing at all (the client refuses it)
    ],
    ids=["prose", "spans-not-in-text", "empty"],
)
def test_an_answer_without_a_usable_draft_is_not_cached_and_the_task_stays_retryable(closing, tmp_path, useless):
    cache = SQLiteCache(tmp_path / "cache.sqlite")
    with LLMSim(script=[useless], answer=VALID) as sim:
        annotator = llm(closing, sim, cache)
        [first] = hotel_batch(annotator, [dubai()])
        assert first is None  # a placeholder: Label Studio asks again later
        assert cache.count() == 0
        [second] = hotel_batch(annotator, [dubai()])  # the endpoint is fixed: asked again, answered
        assert sim.count == 2
    assert [s.label for s in second.spans] == ["Incorrect"] and second.ratings == {"impression": 2}
    assert cache.count() == 1
    assert annotator.stats["failed: no usable answer"] == (0 if useless == "" else 1), dict(annotator.stats)


def test_an_explicit_nothing_to_mark_is_a_valid_answer_and_cached(closing, tmp_path):
    cache = SQLiteCache(tmp_path / "cache.sqlite")
    schema = get_schema("summary_flaws")
    data = prepare_task_data(schema, schema.samples()[0]["data"])
    with LLMSim(answer="None identified") as sim:
        annotator = llm(closing, sim, cache)
        [draft] = annotator.annotate_batch("summary_flaws", schema.config_xml, [data], 10.0)
    assert draft is not None and not draft.spans and draft.info.get("none_identified")
    assert cache.count() == 1


def test_an_answer_cut_at_max_tokens_is_used_but_not_cached(closing, tmp_path):
    cache = SQLiteCache(tmp_path / "cache.sqlite")
    cut = VALID[: VALID.index(', "impression"')]  # the lenient parser still finds the span
    with LLMSim(answer=lambda m: Reply(cut, finish_reason="length")) as sim:
        annotator = llm(closing, sim, cache)
        [draft] = hotel_batch(annotator, [dubai()])
        hotel_batch(annotator, [dubai()])
        assert sim.count == 2  # asked again: a cut answer is never served from the cache
    assert [s.label for s in draft.spans] == ["Incorrect"]
    assert cache.count() == 0
    assert annotator.stats["not cached: cut at max_tokens"] == 2


def test_a_huge_answer_is_not_cached(closing, tmp_path):
    cache = SQLiteCache(tmp_path / "cache.sqlite")
    huge = json.dumps({"annotations": [{"text": "Hudson River", "annotation_type": 2, "reason": "x" * 300_000}]})
    with LLMSim(answer=huge) as sim:
        annotator = llm(closing, sim, cache, cache_max_answer_kb=64)
        [draft] = hotel_batch(annotator, [dubai()])
    assert draft is not None and cache.count() == 0
    assert annotator.stats["not cached: answer over 64 KB"] == 1


def test_the_cache_evicts_its_oldest_answers_beyond_its_size_cap(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = SQLiteCache(path, max_bytes=10_000)
    for i in range(30):
        cache.put(f"k{i}", f"{i:04d}" + "x" * 996)  # 1,000 bytes each
    assert cache.count() == 10 and cache.size_bytes() <= 10_000
    assert cache.get("k29") is not None and cache.get("k20") is not None and cache.get("k19") is None
    reopened = SQLiteCache(path, max_bytes=5_000)  # a smaller cap applies at the next write
    reopened.put("k30", "y" * 1000)
    assert reopened.count() == 5 and reopened.get("k30") is not None and reopened.get("k25") is None


def _writer(path: str, worker: int, n: int) -> None:
    cache = SQLiteCache(path, max_bytes=1_000_000)
    for i in range(n):
        cache.put(f"w{worker}-{i}", "z" * 500)


def test_several_processes_share_one_cache_file(tmp_path):
    path = str(tmp_path / "cache.sqlite")
    SQLiteCache(path)
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(path, w, 150)) for w in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    cache = SQLiteCache(path, max_bytes=1_000_000)
    assert cache.count() == 450 and cache.size_bytes() == 450 * 500


# ---------------------------------------------------------------------------- lone surrogates


def test_a_lone_surrogate_in_one_task_does_not_empty_its_batch(closing, caplog):
    caplog.set_level(logging.DEBUG)
    datas = texts(4) + [{"text": "task 9 \ud800 broken"}]
    with LLMSim(answer=rate_by_number) as sim:
        annotator = llm(closing, sim, cache=None, task=RatingTask(), cache_path="off")
        drafts = annotator.annotate_batch("custom", "<View/>", datas, 10.0)
    assert [d.ratings["impression"] for d in drafts[:4]] == [1, 2, 3, 4]
    assert drafts[4] is not None and drafts[4].ratings == {"impression": 9 % 7 + 1}  # asked with U+FFFD
    assert "\ufffd" in sim.chat_requests[-1].last_user_text or any(
        "\ufffd" in r.last_user_text for r in sim.chat_requests
    )
    assert not [r for r in caplog.records if r.exc_info]


def test_a_surrogate_inside_an_answer_logs_no_traceback(closing, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    cache = SQLiteCache(tmp_path / "cache.sqlite")
    answer = '{"annotations": [{"text": "Hudson River", "annotation_type": 2, "reason": "bad \\ud800 char"}]}'
    with LLMSim(answer=answer) as sim:
        annotator = llm(closing, sim, cache)
        [draft] = hotel_batch(annotator, [dubai()])
    assert draft is not None and [s.note for s in draft.spans] == ["bad \ufffd char"]
    assert cache.count() == 1
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records if r.exc_info]
    assert not any(k.startswith("failed") for k in annotator.stats), dict(annotator.stats)


def test_a_task_whose_prediction_holds_a_lone_surrogate_gets_a_placeholder_not_a_failed_batch(closing):
    good = dubai()
    bad = dict(good, summary=good["summary"].replace("Hudson River", "Hudson\ud800River"))
    tasks = [{"id": 1, "data": good}, {"id": 2, "data": bad}, {"id": 3, "data": good}]

    def answer(messages):  # quotes what it was shown: the surrogate arrives as U+FFFD
        shown = "Hudson\ufffdRiver" if "Hudson\ufffdRiver" in messages[-1]["content"] else "Hudson River"
        return json.dumps({"annotations": [{"text": shown, "annotation_type": 2, "reason": "r"}], "impression": 3})

    with LLMSim(answer=answer) as sim:
        annotator = llm(closing, sim, cache=None, cache_path="off")
        app = create_app(BackendSettings(annotator="llm", predict_deadline=10), annotator=annotator)
        with ServerThread(app) as url:
            body = json.dumps(predict_body(tasks)).encode()  # ASCII escapes, as Label Studio sends it
            response = httpx.post(
                f"{url}/predict", content=body, headers={"Content-Type": "application/json"}, verify=tls_context()
            )
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert ["result" in p for p in results] == [True, False, True]
    assert "surrogate" in results[1]["error"]


def test_preannotate_push_sends_a_chunk_holding_a_lone_surrogate(closing):
    from types import SimpleNamespace

    from judgelab.sync.backend_client import BackendClient
    from judgelab.sync.bulk_predict import PushReport, _predict_chunk

    good = dubai()
    bad = dict(good, summary=good["summary"] + " \ud800")
    chunk = list(enumerate([good, bad, good]))  # (task id, data)
    project = SimpleNamespace(id=3, label_config=HOTEL_XML)
    with LLMSim(answer=VALID) as sim:
        annotator = llm(closing, sim, cache=None, cache_path="off")
        app = create_app(BackendSettings(annotator="llm", predict_deadline=10), annotator=annotator)
        with ServerThread(app) as url, BackendClient(url, timeout=30) as backend:
            report = PushReport(model_version="v")
            predictions = _predict_chunk(backend, project, chunk, report)
    assert not report.failures, report.failures
    assert [p["task"] for p in predictions] == [0, 1, 2]  # the bad task's spans do not quote the surrogate
