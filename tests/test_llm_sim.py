"""The simulated OpenAI-compatible server speaks enough of the API for the cost and sampling
tests: ``usage``, ``n`` choices, ``finish_reason``, several model names."""

from __future__ import annotations

import httpx
from llm_sim import LLMSim, Reply, SimCall, prompt_tokens, tokens_of

from judgelab.sync.http_retry import tls_context

MESSAGES = [{"role": "user", "content": "Rate this text from 1 to 5, please."}]


def ask(sim: LLMSim, **body) -> httpx.Response:
    return httpx.post(
        f"{sim.url}/chat/completions", json={"model": "sim-model", "messages": MESSAGES, **body}, verify=tls_context()
    )


def sample_by_number(messages, call: SimCall) -> str:
    return f'{{"rating": {call.sample % 5 + 1}, "model": "{call.model}"}}'


def test_usage_is_reported_and_can_be_left_out():
    with LLMSim(answer='{"rating": 4}') as sim:
        usage = ask(sim).json()["usage"]
        assert usage == {
            "prompt_tokens": prompt_tokens(MESSAGES),
            "completion_tokens": tokens_of('{"rating": 4}'),
            "total_tokens": prompt_tokens(MESSAGES) + tokens_of('{"rating": 4}'),
        }
        assert sim.chat_requests[0].usage == usage
    with LLMSim(answer='{"rating": 4}', report_usage=False) as sim:
        assert "usage" not in ask(sim).json()
    with LLMSim(answer=lambda m: Reply("{}", usage=False)) as sim:
        assert "usage" not in ask(sim).json()


def test_an_answer_cut_at_max_tokens_says_so():
    with LLMSim(answer=lambda m: Reply('{"rating": ', finish_reason="length")) as sim:
        choice = ask(sim).json()["choices"][0]
    assert choice["finish_reason"] == "length" and choice["message"]["content"] == '{"rating": '


def test_samples_differ_across_n_and_across_repeated_calls():
    with LLMSim(answer=sample_by_number) as sim:
        first = ask(sim, n=3).json()
        assert [c["message"]["content"] for c in first["choices"]] == [
            '{"rating": 1, "model": "sim-model"}',
            '{"rating": 2, "model": "sim-model"}',
            '{"rating": 3, "model": "sim-model"}',
        ]
        assert first["usage"]["completion_tokens"] == 3 * tokens_of('{"rating": 1, "model": "sim-model"}')
        again = ask(sim).json()["choices"]
        assert [c["message"]["content"] for c in again] == ['{"rating": 4, "model": "sim-model"}']
    with LLMSim(answer=sample_by_number, supports_n=False) as sim:
        assert len(ask(sim, n=3).json()["choices"]) == 1  # a server that ignores n


def test_several_model_names_are_served_and_others_refused():
    with LLMSim(answer=sample_by_number, models=("judge-a", "judge-b")) as sim:
        listed = httpx.get(f"{sim.url}/models", verify=tls_context()).json()["data"]
        assert [m["id"] for m in listed] == ["judge-a", "judge-b"]
        b = ask(sim, model="judge-b").json()
        assert b["model"] == "judge-b" and '"judge-b"' in b["choices"][0]["message"]["content"]
        assert ask(sim, model="judge-a").json()["choices"][0]["message"]["content"].startswith('{"rating": 1')
        assert ask(sim, model="judge-c").status_code == 404
