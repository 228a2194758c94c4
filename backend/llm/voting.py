"""Self-consistency: the majority of several sampled answers becomes the prediction.

``majority_draft(drafts, k)`` combines the usable drafts of ``k`` samples of one model for one
task. Per question (a Choices, Rating, Number or TextArea control), the answer most samples
gave wins (ties go to the earlier sample), and is left out when more samples left the question
unanswered. A span (its control, offsets and label) is kept when more than half of the usable
samples marked it. Every kept answer carries the share of all ``k`` samples that gave it (an
unusable sample agrees with nothing); the draft's ``score`` is the mean of those shares, or,
when the majority marks nothing at all, the share of samples that were usable.

>>> from judgelab.backend.draft import Draft
>>> votes = [Draft(ratings={"q": 4}), Draft(ratings={"q": 4}), Draft(ratings={"q": 2})]
>>> draft = majority_draft(votes, 3)
>>> draft.ratings, round(draft.scores["q"], 3), round(draft.score, 3)
({'q': 4}, 0.667, 0.667)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from typing import Any

from judgelab.backend.draft import Draft, SpanDraft

_ABSENT = object()


def _vote(answers: list[Any], key: Callable[[Any], Hashable]) -> tuple[Any, int]:
    """The most common answer (``_ABSENT`` for no answer) and its votes; ties: earliest first."""
    counts: Counter = Counter()
    first: dict[Hashable, Any] = {}
    for answer in answers:
        k = _ABSENT if answer is _ABSENT else key(answer)
        counts[k] += 1
        first.setdefault(k, answer)
    winner, votes = max(counts.items(), key=lambda kv: (kv[1], -list(first).index(kv[0])))
    return first[winner], votes


def majority_draft(drafts: list[Draft], k: int) -> Draft:
    """The majority of ``drafts`` (the usable ones among ``k`` samples) as one draft."""
    k = max(k, len(drafts), 1)
    out = Draft(info={"samples": k, "usable_samples": len(drafts)})
    shares: list[float] = []
    for attr, key in (("choices", tuple), ("ratings", lambda v: v), ("numbers", lambda v: v), ("texts", str.strip)):
        controls = list(dict.fromkeys(name for d in drafts for name in getattr(d, attr)))
        for control in controls:
            answers = [getattr(d, attr).get(control, _ABSENT) for d in drafts]
            value, votes = _vote(answers, key)
            if value is _ABSENT:
                continue
            getattr(out, attr)[control] = value
            if attr != "texts":  # a free text is not a vote worth a confidence
                out.scores[control] = votes / k
                shares.append(votes / k)
    marked: Counter = Counter()
    first: dict[tuple[str, int, int, str], SpanDraft] = {}
    for draft in drafts:
        for span in {(s.control, s.start, s.end, s.label): s for s in draft.spans}.values():
            key = (span.control, span.start, span.end, span.label)
            marked[key] += 1
            first.setdefault(key, span)
    for key, votes in marked.items():
        if votes * 2 > len(drafts):
            span = first[key]
            out.spans.append(SpanDraft(span.control, span.start, span.end, span.label, note=span.note, score=votes / k))
            shares.append(votes / k)
    out.score = sum(shares) / len(shares) if shares else len(drafts) / k
    nothing = sum(1 for d in drafts if d.info.get("none_identified"))
    if not out.has_answers() and nothing * 2 > len(drafts):
        out.info["none_identified"] = 1
    out.info["agreement"] = round(out.score, 4)
    return out
