"""Annotators: they turn a task's data into a :class:`backend.draft.Draft`.

``OfflineAnnotator`` is the built-in deterministic baseline (no model, no network).
"""

from judgelab.backend.annotators.offline import OfflineAnnotator

__all__ = ["OfflineAnnotator"]
