"""The anchoring design's arms, shared by the design helper (which writes them into task data),
the backend and pre-annotation (which never suggest anything for a blind task) and the report
(which compares the arms).

A task's data field ``arm`` is ``suggested`` (annotators see the model's suggestion) or ``blind``
(they never do). With every task in both arms, the copies carry ``arm_of``: the id of the task
they were made from, which pairs them.
"""

from __future__ import annotations

from collections.abc import Mapping

ARM_FIELD = "arm"
PAIR_FIELD = "arm_of"
SUGGESTED, BLIND = "suggested", "blind"
ARMS = (SUGGESTED, BLIND)
BLIND_REASON = "blind arm: no suggestion by design (task data arm=blind)"


def arm_of(data: object) -> str | None:
    """The task's arm (``suggested``/``blind``), None when it has none (or ``data`` is not an object)."""
    if not isinstance(data, Mapping):
        return None
    value = data.get(ARM_FIELD)
    text = str(value).strip().lower() if value is not None else ""
    return text if text in ARMS else None


def is_blind(data: object) -> bool:
    """True for a task of the blind arm: it must never get a prediction."""
    return arm_of(data) == BLIND
