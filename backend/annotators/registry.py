"""Annotators by name: ``offline`` (the built-in baseline, the default) and ``llm`` (an
OpenAI-compatible endpoint, configured by the ``JUDGELAB_LLM_*`` settings)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from judgelab.backend.settings import BackendSettings


def _offline(settings: BackendSettings) -> Any:
    from judgelab.backend.annotators.offline import OfflineAnnotator

    return OfflineAnnotator()


def _llm(settings: BackendSettings) -> Any:
    from judgelab.backend.annotators.llm import LLMAnnotator

    return LLMAnnotator(  # its prompt tasks take half the models' memory cap (the app's models the rest)
        settings.llm,
        max_tasks=settings.model_cache_size,
        max_task_bytes=int(settings.model_cache_mb * 1024 * 1024) // 2,
    )


ANNOTATORS: dict[str, Callable[[BackendSettings], Any]] = {"offline": _offline, "llm": _llm}


def make_annotator(name: str, settings: BackendSettings | None = None) -> Any:
    """The annotator called ``name``; ``settings`` default to the environment's."""
    try:
        factory = ANNOTATORS[name]
    except KeyError:
        raise ValueError(f"unknown annotator {name!r}; choose one of {', '.join(ANNOTATORS)}") from None
    return factory(settings or BackendSettings.from_env())
