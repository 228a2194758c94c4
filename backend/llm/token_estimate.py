"""What an answer cost when its server did not say: tokens estimated from the text.

Some OpenAI-compatible servers leave ``usage`` out of some or all answers. Such an answer was
still paid for, so a run's cost and its budget must count it: :class:`TokenEstimator` estimates
its prompt and completion tokens from the characters of the messages sent and of the choices
received.

Without anything measured a token is taken as 3 characters of ASCII text (English runs about 4,
so this errs high) and as one character of any other script (Chinese, Japanese and Korean run
near one token per character, accented Latin letters fewer); the estimate is rounded up. Every
answer whose server did report ``usage`` calibrates the model's estimates: the estimate is then
scaled by the reported tokens over the unscaled estimate of the same texts, summed over the
answers seen in this process, for prompts and completions apart.

>>> estimator = TokenEstimator()
>>> estimator.estimate("m", [{"role": "user", "content": "x" * 300}], ["y" * 30])
Usage(prompt_tokens=100, completion_tokens=10)
>>> estimator.observe("m", [{"role": "user", "content": "x" * 300}], ["y" * 30], Usage(75, 8))
>>> estimator.estimate("m", [{"role": "user", "content": "x" * 600}], ["y" * 60])
Usage(prompt_tokens=150, completion_tokens=16)
>>> estimator.estimate("other", [{"role": "user", "content": "漢字"}], ["ok"])
Usage(prompt_tokens=2, completion_tokens=1)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable
from typing import Any

from judgelab.backend.llm.client import Usage

ASCII_CHARS_PER_TOKEN = 3.0  # unmeasured: errs high for English (about 4)
OTHER_CHARS_PER_TOKEN = 1.0  # unmeasured: one token per character of other scripts


def raw_tokens(text: str) -> float:
    """The unscaled estimate of ``text``'s tokens (see the module doc).

    >>> raw_tokens("abcdef"), raw_tokens("été")
    (2.0, 2.3333333333333335)
    """
    ascii_chars = sum(1 for char in text if ord(char) < 128)
    return ascii_chars / ASCII_CHARS_PER_TOKEN + (len(text) - ascii_chars) / OTHER_CHARS_PER_TOKEN


def message_text(messages: Iterable[Any]) -> str:
    """The text of chat messages: string contents and the text parts of list contents."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return "".join(parts)


class TokenEstimator:
    """Estimated :class:`Usage` per model, calibrated by the answers that reported theirs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # model -> [raw prompt estimate, reported prompt tokens, raw completion estimate, reported completion tokens]
        self._seen: dict[str, list[float]] = {}

    @staticmethod
    def _raw(messages: Iterable[Any], completions: Iterable[str]) -> tuple[float, float]:
        return raw_tokens(message_text(messages)), sum(raw_tokens(text) for text in completions)

    def observe(self, model: str, messages: Iterable[Any], completions: Iterable[str], usage: Usage) -> None:
        """Learn from an answer whose server reported ``usage``."""
        prompt, completion = self._raw(messages, completions)
        with self._lock:
            seen = self._seen.setdefault(model, [0.0, 0.0, 0.0, 0.0])
            seen[0] += prompt
            seen[1] += usage.prompt_tokens
            seen[2] += completion
            seen[3] += usage.completion_tokens

    def estimate(self, model: str, messages: Iterable[Any], completions: Iterable[str]) -> Usage:
        """The tokens an answer without ``usage`` most likely cost."""
        prompt, completion = self._raw(messages, completions)
        with self._lock:
            raw_prompt, paid_prompt, raw_completion, paid_completion = self._seen.get(model, [0.0] * 4)
        prompt *= paid_prompt / raw_prompt if raw_prompt > 0 and paid_prompt > 0 else 1.0
        completion *= paid_completion / raw_completion if raw_completion > 0 and paid_completion > 0 else 1.0
        return Usage(math.ceil(round(prompt, 6)), math.ceil(round(completion, 6)))
