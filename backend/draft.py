"""What an annotator proposes for one task, before it becomes Label Studio JSON.

Annotators (the offline baseline, the LLM) fill a :class:`Draft` with plain values:
span offsets into a task text, chosen values of Choices, ratings. ``backend.results``
turns a draft into regions that validate against the project's label config, so no
annotator needs to know Label Studio's result format.

Control names are the names in the label config, with Repeater names expanded
(``verdict_3`` for the ``verdict_{{idx}}`` control of line 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SpanDraft:
    """A labelled span on a Text object, in Python code points (``text[start:end]``)."""

    control: str  # the Labels control, e.g. "flaw"
    start: int
    end: int
    label: str  # one of the control's label values
    note: str | None = None  # per-region free text, written into the schema's per-region TextArea
    score: float | None = None


@dataclass
class Draft:
    """All the answers an annotator gives for one task."""

    spans: list[SpanDraft] = field(default_factory=list)
    choices: dict[str, list[str]] = field(default_factory=dict)  # control -> chosen values/aliases
    ratings: dict[str, int] = field(default_factory=dict)  # Rating control -> stars
    numbers: dict[str, float] = field(default_factory=dict)  # Number control -> value
    texts: dict[str, str] = field(default_factory=dict)  # TextArea control (not per-region) -> text
    #: Per-result confidence, 0..1, of a choice, rating, number or text above (control -> score);
    #: it becomes the region's ``score`` in Label Studio. Spans carry theirs in ``SpanDraft.score``.
    scores: dict[str, float] = field(default_factory=dict)
    score: float | None = None  # overall confidence of the prediction, 0..1
    info: dict[str, object] = field(default_factory=dict)  # counters for logs (never shown as a region)

    def has_answers(self) -> bool:
        """Whether the draft answers anything (a span, a choice, a rating, a number or a text)."""
        return bool(self.spans or self.choices or self.ratings or self.numbers or self.texts)

    def is_usable(self) -> bool:
        """An answer worth a prediction: it answers something, or says explicitly that there is
        nothing to mark (``info["none_identified"]``). Prose with no item, or spans none of which
        is in the text, give a draft that is not usable."""
        return self.has_answers() or bool(self.info.get("none_identified"))
