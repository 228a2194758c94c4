"""The anchoring design's arms, shared by the design helper (which writes them into task data),
the backend and pre-annotation (which never suggest anything for a blind task) and the report
(which compares the arms).

A task's data field ``arm`` is ``suggested`` (annotators see the model's suggestion) or ``blind``
(they never do). With every task in both arms, the copies carry ``arm_of``: the id of the task
they were made from, which pairs them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ARM_FIELD = "arm"
PAIR_FIELD = "arm_of"
SUGGESTED, BLIND = "suggested", "blind"
ARMS = (SUGGESTED, BLIND)
BLIND_REASON = "blind arm: no suggestion by design (task data arm=blind)"


def arm_of(data: Mapping[str, Any] | None) -> str | None:
    """The task's arm (``suggested``/``blind``), None when it has none."""
    value = (data or {}).get(ARM_FIELD)
    text = str(value).strip().lower() if value is not None else ""
    return text if text in ARMS else None


def is_blind(data: Mapping[str, Any] | None) -> bool:
    """True for a task of the blind arm: it must never get a prediction."""
    return arm_of(data) == BLIND
