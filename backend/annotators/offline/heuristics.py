"""The offline heuristics by schema: each per-schema module registers its ``annotate`` function.

A module in ``judgelab.backend.annotators.offline.schemas`` (or a schema folder's own
``offline.py``, see :mod:`judgelab.configs.plugins`) declares itself with::

    @heuristic("story_consistency", reads=("story",))
    def annotate_story_consistency(data: dict) -> Draft: ...

``reads`` names the task's text fields the heuristic analyses (for the ``truncated`` report).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from judgelab.backend.draft import Draft
from judgelab.configs.plugins import Registry

AnnotateFunction = Callable[[dict], Draft]


@dataclass(frozen=True)
class Heuristic:
    """One schema's offline heuristic: what it does with a task, and which text fields it reads."""

    annotate: AnnotateFunction
    fields_read: tuple[str, ...] = ()


OFFLINE: Registry[Heuristic] = Registry("offline", "judgelab.backend.annotators.offline.schemas")


def heuristic(schema: str, reads: tuple[str, ...] = ()) -> Callable[[AnnotateFunction], AnnotateFunction]:
    """Register the decorated function as the offline heuristic of ``schema``."""

    def register(function: AnnotateFunction) -> AnnotateFunction:
        OFFLINE.register(schema, Heuristic(function, tuple(reads)))
        return function

    return register
