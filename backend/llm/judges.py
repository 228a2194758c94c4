"""Judges: which models pre-annotate a project, how many samples each draws, what a token costs.

A backend serves the models listed in ``JUDGELAB_LLM_MODEL`` (``gpt-4o-mini`` or
``gpt-4o-mini,gpt-4o``): by default each is a judge with ``JUDGELAB_LLM_SAMPLES`` samples. A
project may ask for other settings through its ML backend's ``extra_params`` in Label Studio
(sent with every ``/setup``; ``judgelab connect --model ... --samples ... --price-in ...``
writes them)::

    {"models": ["gpt-4o-mini", "gpt-4o"], "samples": 5, "price_in": 0.15, "price_out": 0.6}

``price_in``/``price_out`` are money per million prompt/completion tokens, one number for every
model or ``{"model": price}``; ``price_batch_in``/``price_batch_out`` the same for the answers of a
batch API (default: half the live prices, as OpenAI's Batch API charges). Only the backend's own
models may be named (an ``extra_params`` cannot make the backend call a model its operator did not
list), and at most ``JUDGELAB_LLM_MAX_SAMPLES`` samples.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judgelab.backend.llm.client import Usage
from judgelab.backend.settings import LLMSettings

PARAM_KEYS = ("models", "samples", "price_in", "price_out", "price_batch_in", "price_batch_out")
#: What a batch answer costs of a live one when no batch prices are given (OpenAI's Batch API: half).
BATCH_SHARE = 0.5


class JudgeError(ValueError):
    """A project's judge settings (``extra_params``) cannot be used; the message says why."""


@dataclass(frozen=True)
class Judge:
    """One model pre-annotating a project: ``samples`` answers per task (self-consistency when
    more than one), priced per million tokens when prices are known."""

    model: str
    samples: int = 1
    price_in: float | None = None
    price_out: float | None = None
    price_batch_in: float | None = None
    price_batch_out: float | None = None

    def cost(self, usage: Usage | None) -> float | None:
        """What ``usage`` costs at this judge's prices (None: no usage reported, or no prices)."""
        if usage is None or self.price_in is None or self.price_out is None:
            return None
        return (usage.prompt_tokens * self.price_in + usage.completion_tokens * self.price_out) / 1_000_000

    @property
    def batch_prices(self) -> tuple[float, float] | None:
        """Per million prompt and completion tokens of a batch answer: the batch prices, else
        :data:`BATCH_SHARE` of the live ones (None: no prices)."""
        if self.price_batch_in is not None and self.price_batch_out is not None:
            return self.price_batch_in, self.price_batch_out
        if self.price_in is None or self.price_out is None:
            return None
        return self.price_in * BATCH_SHARE, self.price_out * BATCH_SHARE

    @property
    def batch_price_halved(self) -> bool:
        """Whether the batch prices are the default share of the live ones (no batch prices given)."""
        return self.batch_prices is not None and (self.price_batch_in is None or self.price_batch_out is None)

    def batch_cost(self, usage: Usage | None) -> float | None:
        """What ``usage`` of a batch answer costs (None: no usage, or no prices)."""
        prices = self.batch_prices
        if usage is None or prices is None:
            return None
        return (usage.prompt_tokens * prices[0] + usage.completion_tokens * prices[1]) / 1_000_000


def default_judges(settings: LLMSettings) -> list[Judge]:
    return [Judge(model, settings.samples) for model in settings.all_models]


def judges_for(settings: LLMSettings, params: Mapping[str, Any] | None) -> list[Judge]:
    """The judges a project asks for (``params``: its ``extra_params``), checked against what
    the backend serves. Raises :class:`JudgeError` naming the bad value."""
    if not params:
        return default_judges(settings)
    if not isinstance(params, Mapping):
        raise JudgeError(f"extra_params must be a JSON object, not {type(params).__name__}")
    unknown = sorted(str(k) for k in params if k not in PARAM_KEYS)
    if unknown:
        raise JudgeError(f"unknown extra_params key(s) {', '.join(unknown)}; known: {', '.join(PARAM_KEYS)}")
    models = _models(params.get("models"), settings)
    samples = _samples(params.get("samples"), settings)
    price_in = _prices(params.get("price_in"), "price_in", models)
    price_out = _prices(params.get("price_out"), "price_out", models)
    batch_in = _prices(params.get("price_batch_in"), "price_batch_in", models)
    batch_out = _prices(params.get("price_batch_out"), "price_batch_out", models)
    return [Judge(m, samples, price_in.get(m), price_out.get(m), batch_in.get(m), batch_out.get(m)) for m in models]


def _models(value: Any, settings: LLMSettings) -> list[str]:
    if value is None:
        return list(settings.all_models)
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise JudgeError("extra_params 'models' must be a list of model names")
    models = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    if not models:
        raise JudgeError("extra_params 'models' names no model")
    served = settings.all_models
    for model in models:
        if model not in served:
            raise JudgeError(
                f"model {model!r} is not one this backend may call (JUDGELAB_LLM_MODEL lists {', '.join(served)})"
            )
    return models


def _samples(value: Any, settings: LLMSettings) -> int:
    if value is None:
        return settings.samples
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise JudgeError(f"extra_params 'samples' must be a whole number, not {value!r}")
    try:
        samples = int(value)
    except ValueError:
        raise JudgeError(f"extra_params 'samples' must be a whole number, not {value!r}") from None
    if not 1 <= samples <= settings.max_samples:
        raise JudgeError(f"extra_params 'samples' must be 1 to {settings.max_samples} (JUDGELAB_LLM_MAX_SAMPLES)")
    return samples


def _price(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise JudgeError(f"extra_params {what} must be a number at least 0 (per million tokens), not {value!r}")
    return float(value)


def _prices(value: Any, key: str, models: list[str]) -> dict[str, float]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        unknown = [str(m) for m in value if m not in models]
        if unknown:
            raise JudgeError(f"extra_params {key} names model(s) that are not judges: {', '.join(unknown)}")
        return {str(m): _price(v, f"{key}[{m!r}]") for m, v in value.items()}
    price = _price(value, key)
    return {m: price for m in models}
