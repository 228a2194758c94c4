"""Turn a :class:`~backend.draft.Draft` into Label Studio result regions.

Every region is checked against the project's label config and the task's text before it is
emitted: unknown controls, labels or choices, out-of-range ratings and spans whose offsets do
not fit the text are dropped and counted, never passed on. A span's ``text`` is always
``text[start:end]`` of the task's own text (Python code points).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from judgelab.backend.draft import Draft, SpanDraft
from judgelab.configs.label_config import Control, LabelConfig

SPAN_TAGS = {"Labels": "labels", "HyperTextLabels": "hypertextlabels", "ParagraphLabels": "paragraphlabels"}


@dataclass
class BuiltResult:
    regions: list[dict[str, Any]]
    dropped: Counter = field(default_factory=Counter)  # reason -> count


def _region_id(*parts: object) -> str:
    return hashlib.sha1("|".join(map(str, parts)).encode()).hexdigest()[:10]


def _allowed_values(control: Control, data: dict[str, Any]) -> set[str] | None:
    """Values a Choices/Labels control accepts for this task; None when anything goes."""
    if control.dynamic:
        options = data.get(control.dynamic)
        if not isinstance(options, list):
            return set()
        return {str(o.get("value")) if isinstance(o, dict) else str(o) for o in options}
    return set(control.labels) if control.labels else None


def _note_control(config_controls: dict[str, Control], span_control: Control) -> Control | None:
    """The per-region TextArea on the same object as the span control, if any."""
    for c in config_controls.values():
        if c.tag == "TextArea" and c.per_region and c.to_name == span_control.to_name:
            return c
    return None


def _span_regions(
    span: SpanDraft, controls: dict[str, Control], config: LabelConfig, data: dict[str, Any], dropped: Counter
) -> list[dict[str, Any]]:
    control = controls.get(span.control)
    if control is None or control.tag not in SPAN_TAGS:
        dropped["unknown span control"] += 1
        return []
    allowed = _allowed_values(control, data)
    if allowed is not None and span.label not in allowed:
        dropped["unknown label"] += 1
        return []
    text = config.object_text(control.to_name, data)
    if text is None:
        dropped["span target has no text"] += 1
        return []
    if not (isinstance(span.start, int) and isinstance(span.end, int) and 0 <= span.start < span.end <= len(text)):
        dropped["span offsets out of range"] += 1
        return []
    value = {"start": span.start, "end": span.end, "text": text[span.start : span.end]}
    rid = _region_id(control.name, span.start, span.end, span.label)
    region: dict[str, Any] = {
        "id": rid,
        "from_name": control.name,
        "to_name": control.to_name,
        "type": SPAN_TAGS[control.tag],
        "origin": "prediction",
        "value": {**value, SPAN_TAGS[control.tag]: [span.label]},
    }
    if span.score is not None:
        region["score"] = float(span.score)
    regions = [region]
    note = _note_control(controls, control)
    if span.note and note is not None:
        regions.append(
            {
                "id": rid,
                "from_name": note.name,
                "to_name": note.to_name,
                "type": "textarea",
                "origin": "prediction",
                "value": {**value, "text": [str(span.note)]},
                **({"score": region["score"]} if "score" in region else {}),
            }
        )
    return regions


def _classification_region(
    control: Control, kind: str, value: dict[str, Any], score: float | None = None
) -> dict[str, Any]:
    region = {
        "id": _region_id(control.name, kind),
        "from_name": control.name,
        "to_name": control.to_name,
        "type": kind,
        "origin": "prediction",
        "value": value,
    }
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        region["score"] = float(score)
    return region


def _span_order(span: SpanDraft) -> tuple[str, float, float]:
    """Sort key that tolerates odd offsets (``None``, text): they sort first and are then dropped."""
    start, end = (v if isinstance(v, int | float) else -1 for v in (span.start, span.end))
    return (str(span.control), start, end)


def build_results(draft: Draft, config: LabelConfig, data: dict[str, Any]) -> BuiltResult:
    """Regions for one task, valid for ``config`` and ``data``; invalid parts are dropped and counted."""
    controls = config.expanded_controls(data)
    out = BuiltResult(regions=[])
    for span in sorted(draft.spans, key=_span_order):
        out.regions.extend(_span_regions(span, controls, config, data, out.dropped))

    for name, values in draft.choices.items():
        control = controls.get(name)
        if control is None or control.tag != "Choices":
            out.dropped["unknown choices control"] += 1
            continue
        allowed = _allowed_values(control, data)
        chosen = [str(v) for v in values if allowed is None or str(v) in allowed]
        if len(chosen) < len(values):
            out.dropped["unknown choice"] += len(values) - len(chosen)
        if not chosen:
            continue
        if control.attrs.get("choice", "single") != "multiple":
            chosen = chosen[:1]
        out.regions.append(_classification_region(control, "choices", {"choices": chosen}, draft.scores.get(name)))

    for name, rating in draft.ratings.items():
        control = controls.get(name)
        if control is None or control.tag != "Rating":
            out.dropped["unknown rating control"] += 1
            continue
        top = int(control.attrs.get("maxRating", "5"))
        if not isinstance(rating, (int, float)) or not 1 <= rating <= top:
            out.dropped["rating out of range"] += 1
            continue
        out.regions.append(
            _classification_region(control, "rating", {"rating": int(round(rating))}, draft.scores.get(name))
        )

    for name, number in draft.numbers.items():
        control = controls.get(name)
        if control is None or control.tag != "Number":
            out.dropped["unknown number control"] += 1
            continue
        lo, hi = control.attrs.get("min"), control.attrs.get("max")
        if (lo is not None and number < float(lo)) or (hi is not None and number > float(hi)):
            out.dropped["number out of range"] += 1
            continue
        out.regions.append(_classification_region(control, "number", {"number": number}, draft.scores.get(name)))

    for name, text in draft.texts.items():
        control = controls.get(name)
        if control is None or control.tag != "TextArea" or control.per_region:
            out.dropped["unknown textarea control"] += 1
            continue
        if text and str(text).strip():
            out.regions.append(
                _classification_region(control, "textarea", {"text": [str(text)]}, draft.scores.get(name))
            )
    return out
