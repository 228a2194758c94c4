"""The OpenAI-compatible client and the response cache, against a real local HTTP server
(``llm_sim``) that misbehaves on cue. Nothing of ours is patched."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import httpx
import pytest
from llm_sim import Failure, LLMSim

from judgelab.backend.llm.cache import MemoryCache, NoCache, SQLiteCache, cache_key, open_cache
from judgelab.backend.llm.client import ChatClient, LLMError, parse_retry_after
from judgelab.backend.settings import BackendSettings, LLMSettings, SettingsError

MESSAGES = [{"role": "user", "content": "Rate this. Answer in JSON."}]
SCHEMA_FORMAT = {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}}}
SECRET = "sk-test-SECRET-4242"


def settings_for(sim: LLMSim, **overrides) -> LLMSettings:
    values = dict(base_url=sim.url, model="sim-model", retries=3, timeout=5.0, cache_path="off")
    values.update(overrides)
    return LLMSettings(**values)


def complete(settings: LLMSettings, messages=MESSAGES, response_format=None, deadline_s: float | None = None):
    """One call through a fresh client; returns (text or LLMError, client)."""

    async def go():
        async with ChatClient(settings) as client:
            deadline = None if deadline_s is None else time.monotonic() + deadline_s
            try:
                return await client.complete(messages, response_format, deadline=deadline), client
            except LLMError as exc:
                return exc, client

    return asyncio.run(go())


def gaps(sim: LLMSim) -> list[float]:
    times = [r.at for r in sim.chat_requests]
    return [b - a for a, b in zip(times, times[1:], strict=False)]


# ---------------------------------------------------------------------------- settings


def test_settings_from_env_defaults_and_secret_kept_out_of_repr():
    s = BackendSettings.from_env({"JUDGELAB_LLM_API_KEY": SECRET, "JUDGELAB_LLM_MODEL": "m"})
    assert s.predict_deadline == 80.0 and s.predict_deadline < 100
    llm = s.llm
    assert (llm.temperature, llm.max_tokens, llm.concurrency, llm.timeout, llm.retries) == (0.0, 1024, 8, 60.0, 3)
    assert llm.json_mode == "auto" and llm.cache_path == ".judgelab/llm-cache.sqlite"
    assert llm.api_key == SECRET
    assert SECRET not in repr(s) and SECRET not in repr(llm)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("JUDGELAB_LLM_CONCURRENCY", "many"),
        ("JUDGELAB_LLM_CONCURRENCY", "0"),
        ("JUDGELAB_LLM_TIMEOUT", "-1"),
        ("JUDGELAB_LLM_JSON_MODE", "sometimes"),
        ("JUDGELAB_PREDICT_DEADLINE", "soon"),
    ],
)
def test_bad_settings_name_the_variable(name, value):
    with pytest.raises(SettingsError, match=name):
        BackendSettings.from_env({name: value})


def test_client_needs_an_endpoint_and_a_model():
    with pytest.raises(SettingsError, match="JUDGELAB_LLM_BASE_URL"):
        ChatClient(LLMSettings(model="m"))
    with pytest.raises(SettingsError, match="JUDGELAB_LLM_MODEL"):
        ChatClient(LLMSettings(base_url="http://127.0.0.1:1/v1"))


# ---------------------------------------------------------------------------- answers


def test_complete_sends_an_openai_request_and_returns_the_text():
    with LLMSim(answer='{"rating": 4}') as sim:
        text, client = complete(
            settings_for(sim, api_key=SECRET, temperature=0.0, max_tokens=77), MESSAGES, SCHEMA_FORMAT
        )
    assert text == '{"rating": 4}'
    (request,) = sim.chat_requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {SECRET}"
    assert request.body["model"] == "sim-model"
    assert request.body["messages"] == MESSAGES
    assert request.body["temperature"] == 0.0 and request.body["max_tokens"] == 77
    assert request.body["response_format"] == SCHEMA_FORMAT
    assert client.stats["requests"] == 1


def test_no_authorization_header_without_a_key():
    with LLMSim(answer="ok") as sim:
        complete(settings_for(sim))
    assert "Authorization" not in sim.chat_requests[0].headers


def test_models_lists_the_served_models():
    async def go(settings):
        async with ChatClient(settings) as client:
            return await client.models()

    with LLMSim() as sim:
        assert asyncio.run(go(settings_for(sim))) == ["sim-model"]


# ---------------------------------------------------------------------------- retries


def test_server_errors_are_retried_until_an_answer_comes():
    with LLMSim(answer="fine", script=[Failure("500"), Failure("503")]) as sim:
        text, client = complete(settings_for(sim))
    assert text == "fine"
    assert sim.count == 3
    assert client.stats["retries"] == 2
    assert all(g > 0 for g in gaps(sim))  # backed off between attempts


def test_retry_after_seconds_is_honoured():
    with LLMSim(answer="fine", script=[Failure("429", retry_after="1")]) as sim:
        text, _ = complete(settings_for(sim))
    assert text == "fine" and sim.count == 2
    assert gaps(sim)[0] >= 1.0, gaps(sim)


def test_retry_after_http_date_is_honoured():
    target = int(time.time()) + 3  # an HTTP date has whole seconds
    when = email.utils.formatdate(target, usegmt=True)
    assert parse_retry_after(httpx.Headers({"Retry-After": when}), now=target - 2) == 2.0
    with LLMSim(answer="fine", script=[Failure("429", retry_after=when)]) as sim:
        text, _ = complete(settings_for(sim))
    assert text == "fine"
    first, second = sim.chat_requests
    assert second.wall >= target - 0.05, (second.wall, target)  # not asked again before the date
    assert second.at - first.at >= 1.0


def test_gives_up_cleanly_after_the_retries():
    with LLMSim(answer=lambda m: Failure("503")) as sim:
        error, client = complete(settings_for(sim, retries=2))
    assert isinstance(error, LLMError)
    assert error.kind == "http_503" and error.status == 503 and error.attempts == 3
    assert sim.count == 3
    assert client.stats["error: http_503"] == 1


def test_a_retry_after_beyond_the_deadline_is_not_waited_for():
    with LLMSim(answer="fine", script=[Failure("429", retry_after="30")]) as sim:
        started = time.monotonic()
        error, _ = complete(settings_for(sim), deadline_s=3.0)
        elapsed = time.monotonic() - started
    assert isinstance(error, LLMError) and error.kind == "rate_limited"
    assert "deadline" in str(error)
    assert elapsed < 5 and sim.count == 1  # not the 30 s Retry-After


def test_a_hanging_server_times_out_and_is_retried():
    with LLMSim(answer=lambda m: Failure("hang", seconds=10)) as sim:
        started = time.monotonic()
        error, _ = complete(settings_for(sim, timeout=0.3, retries=1))
        elapsed = time.monotonic() - started
    assert isinstance(error, LLMError) and error.kind == "timeout"
    assert sim.count == 2 and elapsed < 8  # two 0.3 s timeouts, not two 10 s hangs


def test_the_deadline_caps_the_request_timeout():
    with LLMSim(answer=lambda m: Failure("hang", seconds=10)) as sim:
        started = time.monotonic()
        error, _ = complete(settings_for(sim, timeout=30, retries=5), deadline_s=0.8)
        elapsed = time.monotonic() - started
    assert isinstance(error, LLMError) and error.kind == "deadline"  # not the server's 30 s timeout
    assert elapsed < 5  # not the 10 s hang


def test_a_closed_port_is_a_connection_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens once closed
    settings = LLMSettings(base_url=f"http://127.0.0.1:{port}/v1", model="m", retries=1, cache_path="off")
    error, _ = complete(settings)
    assert isinstance(error, LLMError) and error.kind == "connection"


@pytest.mark.parametrize("kind", ["html", "empty", "garbage", "no_choices"])
def test_a_body_that_is_no_completion_is_a_clear_error(kind):
    with LLMSim(answer=lambda m: Failure(kind)) as sim:
        error, client = complete(settings_for(sim))
    assert isinstance(error, LLMError) and error.kind == "bad_response", error
    assert sim.chat_requests[0].path in str(error) or "127.0.0.1" in str(error)
    assert sim.count == 1  # a wrong answer is not retried
    assert client.stats["error: bad_response"] == 1


@pytest.mark.parametrize(("status", "kind"), [(401, "auth"), (403, "auth"), (404, "not_found"), (400, "http_400")])
def test_client_errors_are_not_retried(status, kind):
    with LLMSim(answer=lambda m: Failure("status", status=status)) as sim:
        error, _ = complete(settings_for(sim))
    assert isinstance(error, LLMError) and error.kind == kind and error.status == status
    assert sim.count == 1
    if status == 404:
        assert "/v1" in str(error)


# ---------------------------------------------------------------------------- JSON mode


def test_auto_json_mode_falls_back_once_and_remembers():
    async def go(settings):
        async with ChatClient(settings) as client:
            first = await client.complete(MESSAGES, SCHEMA_FORMAT)
            second = await client.complete(MESSAGES, SCHEMA_FORMAT)
            return first, second, client

    with LLMSim(answer="plain", reject_response_format=True) as sim:
        first, second, client = asyncio.run(go(settings_for(sim, json_mode="auto")))
    assert first == second == "plain"
    sent = ["response_format" in r.body for r in sim.chat_requests]
    assert sent == [True, False, False]  # refused once, then never sent again to this server
    assert client.format_supported is False
    assert client.stats["format fallback"] == 1 and client.stats["retries"] == 0


def test_json_mode_on_does_not_fall_back():
    with LLMSim(answer="plain", reject_response_format=True) as sim:
        error, _ = complete(settings_for(sim, json_mode="on"), MESSAGES, SCHEMA_FORMAT)
    assert isinstance(error, LLMError) and error.kind == "format_rejected"
    assert sim.count == 1


def test_json_mode_off_sends_no_response_format():
    with LLMSim(answer="plain") as sim:
        text, _ = complete(settings_for(sim, json_mode="off"), MESSAGES, SCHEMA_FORMAT)
    assert text == "plain" and "response_format" not in sim.chat_requests[0].body


# ---------------------------------------------------------------------------- secrets


def test_the_api_key_never_reaches_logs_or_errors(caplog):
    caplog.set_level(logging.DEBUG)  # every logger, httpx's and httpcore's included
    errors = []
    script = [Failure("echo_auth", status=400), Failure("echo_auth", status=500), Failure("echo_auth", status=401)]
    with LLMSim(answer=lambda m: Failure("echo_auth", status=502), script=script) as sim:
        settings = settings_for(sim, api_key=SECRET, retries=1)
        for _ in range(3):
            error, client = complete(settings)
            errors.append(error)
    assert all(r.headers.get("Authorization") == f"Bearer {SECRET}" for r in sim.chat_requests)  # it was sent
    assert all(isinstance(e, LLMError) for e in errors)
    assert "***" in str(errors[0])  # the echoed header was redacted, not dropped silently
    for error in errors:
        assert SECRET not in str(error) and SECRET not in repr(error)
    assert caplog.records, "expected retry logs"
    assert SECRET not in caplog.text
    assert SECRET not in repr(settings) and SECRET not in repr(client.settings)


# ---------------------------------------------------------------------------- cache


def test_cache_key_covers_what_decides_the_answer():
    base = cache_key("m", MESSAGES, 0.0, 100, None)
    assert base == cache_key("m", [dict(m) for m in MESSAGES], 0, 100, None)
    assert (
        len(
            {
                base,
                cache_key("m2", MESSAGES, 0.0, 100, None),
                cache_key("m", MESSAGES + [{"role": "user", "content": "x"}], 0.0, 100, None),
                cache_key("m", MESSAGES, 0.7, 100, None),
                cache_key("m", MESSAGES, 0.0, 101, None),
                cache_key("m", MESSAGES, 0.0, 100, {"type": "json_object"}),
            }
        )
        == 6
    )


def test_sqlite_cache_is_shared_by_instances_threads_and_processes(tmp_path):
    path = tmp_path / "sub" / "cache.sqlite"
    first, second = SQLiteCache(path), SQLiteCache(path)
    first.put("k", "v")
    assert second.get("k") == "v" and second.get("other") is None
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    def write(worker: int) -> None:
        for i in range(50):
            first.put(f"t{worker}-{i}", str(i))

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    code = (
        "import sys; from backend.llm.cache import SQLiteCache; c = SQLiteCache(sys.argv[1]);"
        "[c.put(f'p{i}', 'x') for i in range(100)]; print(c.get('t7-49'))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "49"
    assert second.count() == 1 + 8 * 50 + 100
    assert second.get("p99") == "x"


def test_an_unusable_cache_path_means_no_cache_not_a_crash(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = open_cache(blocker / "cache.sqlite")
    assert isinstance(cache, NoCache)
    assert "cannot be opened" in caplog.text
    assert cache.get("k") is None


def test_memory_cache_round_trip():
    cache = MemoryCache()
    cache.put("a", "1")
    assert cache.get("a") == "1" and cache.count() == 1
