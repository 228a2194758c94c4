"""Annotators by name: ``offline`` (the built-in baseline, the default) and, later, ``llm``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _offline() -> Any:
    from backend.annotators.offline import OfflineAnnotator

    return OfflineAnnotator()


ANNOTATORS: dict[str, Callable[[], Any]] = {"offline": _offline}


def make_annotator(name: str) -> Any:
    try:
        factory = ANNOTATORS[name]
    except KeyError:
        raise ValueError(f"unknown annotator {name!r}; choose one of {', '.join(ANNOTATORS)}") from None
    return factory()
