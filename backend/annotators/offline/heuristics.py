"""The offline heuristics by schema: each per-schema module registers its ``annotate`` function.

A module in ``judgelab.backend.annotators.offline.schemas`` (or a schema folder's own
``offline.py``, see :mod:`judgelab.configs.plugins`) declares itself with::

    @OFFLINE.register("story_consistency", reads=("story",))
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

    @classmethod
    def of(cls, schema: str, annotate: AnnotateFunction, *, reads: tuple[str, ...] = ()) -> Heuristic:
        """The registry's entry for ``@OFFLINE.register(schema, reads=...)``."""
        return cls(annotate, tuple(reads))


OFFLINE: Registry[Heuristic] = Registry("offline", "judgelab.backend.annotators.offline.schemas", entry=Heuristic.of)
