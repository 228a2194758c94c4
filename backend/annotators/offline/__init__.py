"""The built-in offline annotator: deterministic lexical heuristics, no model, no network.

It pre-annotates the schemas of ``configs/`` from the guidelines' own rules of thumb:
a summary claim is suspect when its numbers, names or content words cannot be found in the
source (lexical *grounding*: folded words and 5-letter prefix stems, see ``grounding``); rubric
scores follow the cues the guidelines name (bullets, connectors, chatbot phrases, error counts).
It is a baseline: it catches invented numbers and names and obvious formatting problems, not
paraphrased contradictions.

Each schema's heuristic lives in its own module of ``offline.schemas`` (or in a schema folder's
``offline.py``) and registers itself with :data:`heuristics.OFFLINE`; ``text`` holds the helpers
they share. Every heuristic takes the task's data dict and returns a :class:`Draft`; odd data
(missing fields, ``None``, numbers instead of text) gives a smaller draft, never an exception.
Spans are placed only on fields whose value is a string, in code points of that exact string.
"""

from __future__ import annotations

import logging

from judgelab.backend.annotators.offline.heuristics import OFFLINE, Heuristic
from judgelab.backend.annotators.offline.text import truncated_fields
from judgelab.backend.draft import Draft

log = logging.getLogger(__name__)

__all__ = ["OFFLINE", "Heuristic", "OfflineAnnotator"]


class OfflineAnnotator:
    """Deterministic lexical baseline for the schemas that register an offline heuristic."""

    name = "offline"
    version = "2"  # bump when heuristics or their fitted parameters change

    def annotate(self, schema: str, data: dict) -> Draft:
        """A draft for one task; an unknown schema or unusable data gives an empty draft."""
        handler = OFFLINE.get(schema) if isinstance(schema, str) else None
        if handler is None:
            return Draft(info={"unsupported_schema": str(schema)})
        data = data if isinstance(data, dict) else {}
        try:
            draft = handler.annotate(data)
        except Exception as exc:  # a heuristic bug must not fail a whole predict batch
            log.exception("offline annotator failed on a %s task", schema)
            return Draft(info={"error": f"{type(exc).__name__}: {exc}"})
        truncated = truncated_fields(data, handler.fields_read)
        if truncated:
            draft.info["truncated"] = truncated
        return draft
