"""Span-level precision, recall and F1 between annotators, in two published forms.

Taking one annotator as the *reference* R and another as the *hypothesis* H, both forms
score how much of what one marked the other also marked. Offsets are code points, spans are
half-open ``[start, end)``; ``|h ∩ r|`` is the number of characters two spans share.

``form="per_span"`` (Da San Martino et al. 2019, used by HotelCheckSpan Table 6 and by
Kasner et al. 2025): every span weighs the same, whatever its length::

    P = 1/|H| * sum_{h in H} sum_{r in R} |h ∩ r| / |h|
    R = 1/|R| * sum_{r in R} sum_{h in H} |h ∩ r| / |r|

A span can earn more than 1 when the other side's spans overlap each other (the formula
counts every pair); with non-overlapping spans per annotator each credit is at most 1.

``form="character"`` (factgenie's span F1): every character weighs the same::

    P = sum_h |h ∩ U(R)| / sum_h |h|        R = sum_r |r ∩ U(H)| / sum_r |r|

where ``U(R)`` is the union of the reference spans. When an annotator's spans do not
overlap each other (the usual case) both numerators equal factgenie's overlap count. Unlike
factgenie this does not depend on span order (factgenie credits a hypothesis character to
the first covering reference span and skips it for a second overlapping hypothesis span).

``match="hard"`` counts ``|h ∩ r|`` only when the labels are equal; ``match="soft"``
ignores labels. ``F1 = 2PR / (P + R)`` (0 when ``P + R == 0``). Hard is never above soft.

Averaging (``average``): ``"micro"`` pools the sums over all compared examples (as the
formulas above, Da San Martino's and factgenie's choice); ``"macro"`` computes P, R and F1
per example and averages each over examples.

What an example in which one side, or both, marked nothing counts for (``empty``):

- ``"zero"`` (default): an example where only one side marked spans counts, and those spans
  get no credit (micro), or the example scores P = R = F1 = 0 (macro: the undefined 0/0
  precision or recall is taken as 0). Examples where neither side marked anything are left
  out: no credit for agreeing on nothing.
- ``"skip"``: only examples where both sides marked something count (factgenie's effective
  behaviour: it sums lengths only where both sides have spans).
- ``"one"``: as ``"zero"``, but an example where neither side marked anything scores
  P = R = F1 = 1 (``average="macro"`` only).

``"zero"`` fits the published tables: o3-mini's recall of 0.01 in HotelCheckSpan Table 6
can only come from counting the human spans in examples where the model marked nothing.
``"one"`` needs ``average="macro"``: pooled sums have no unit in which an empty example
could be credited.

Everything is computed with sorted arrays, no Python loop over spans or examples: the
overlapping (reference, hypothesis) span pairs are enumerated once per annotator pair by
binary search over spans sorted by text and start (``overlapping_pairs``, cost
``O(n log n + pairs)``), and every form and match is a weighted count over those pairs. When
an annotator's own spans overlap, the character form measures against the union of their
spans with prefix sums (``covered_length``: ``sum_r |h ∩ r|`` is ``C(end_h) - C(start_h)``
with ``C(t)`` the reference length left of ``t``, two binary searches per span).

>>> reference = [[(0, 10, "I")], [(5, 15, "M")]]
>>> hypothesis = [[(0, 5, "I")], [(0, 10, "I")]]
>>> score = span_prf(reference, hypothesis, form="character", match="hard")
>>> round(score.precision, 3), round(score.recall, 3), round(score.f1, 3)  # 5/15, 5/20
(0.333, 0.25, 0.286)
>>> score = span_prf(reference, hypothesis, form="per_span", match="soft")
>>> score.precision, score.recall  # (5/5 + 5/10) / 2, (5/10 + 5/10) / 2
(0.75, 0.5)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from judgelab.analysis.intervals import _composite_width, covered_length, merge_intervals, overlapping_pairs
from judgelab.analysis.span_coding import SpanDesign, span_design

Form = Literal["per_span", "character"]
Match = Literal["hard", "soft"]
Average = Literal["micro", "macro"]
EmptyPolicy = Literal["zero", "skip", "one"]

FORMS: tuple[Form, ...] = ("per_span", "character")
MATCHES: tuple[Match, ...] = ("hard", "soft")
AVERAGES: tuple[Average, ...] = ("micro", "macro")
EMPTY_POLICIES: tuple[EmptyPolicy, ...] = ("zero", "skip", "one")

SpanTuple = tuple[int, int, Hashable]

PAIRWISE_COLUMNS = [
    "reference",
    "hypothesis",
    "form",
    "match",
    "precision",
    "recall",
    "f1",
    "n_examples",
    "n_reference_spans",
    "n_hypothesis_spans",
    "reason",
]
MEAN_COLUMNS = ["precision", "recall", "f1", "n_pairs", "n_pairs_undefined", "reason"]


# --------------------------------------------------------------------------------------
# Precision, recall and F1 for one reference / hypothesis pair
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpanScores:
    """Span precision, recall and F1 of a hypothesis against a reference.

    ``n_examples`` counts the examples the scores rest on (after the empty-example policy);
    the span counts are over the compared examples. All three scores are NaN, with
    ``reason``, when undefined.
    """

    precision: float
    recall: float
    f1: float
    n_examples: int
    n_reference_spans: int
    n_hypothesis_spans: int
    reason: str | None = None

    @property
    def is_defined(self) -> bool:
        return not math.isnan(self.f1)


@dataclass(frozen=True)
class _Side:
    """One annotator's positioned spans within the compared examples."""

    example: np.ndarray
    continuum: np.ndarray
    label: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def take(self, mask: np.ndarray) -> _Side:
        return _Side(self.example[mask], self.continuum[mask], self.label[mask], self.start[mask], self.end[mask])


def _check_options(form: str, match: str, average: str, empty: str) -> None:
    for name, value, allowed in (
        ("form", form, FORMS),
        ("match", match, MATCHES),
        ("average", average, AVERAGES),
        ("empty", empty, EMPTY_POLICIES),
    ):
        if value not in allowed:
            raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    if empty == "one" and average != "macro":
        raise ValueError("empty='one' scores an example with no spans as 1, which needs average='macro'")


Variant = tuple[str, str]  # (form, match)


def _self_overlapping(side: _Side, match: str, n_labels: int) -> bool:
    """True when two spans of one annotator share a character within a match group."""
    if len(side.start) < 2:
        return False
    group = side.continuum * n_labels + side.label if match == "hard" else side.continuum
    order = np.lexsort((side.start, group))
    group, start, end = group[order], side.start[order], side.end[order]
    same_group = group[1:] == group[:-1]
    # within a group sorted by start, an overlap shows as a start before an earlier end
    shift, width = _composite_width(start, end)
    running_end = np.maximum.accumulate(group.astype(np.int64) * width + (end - shift))
    return bool((same_group & (group[1:].astype(np.int64) * width + (start[1:] - shift) < running_end[:-1])).any())


def _credits(
    reference: _Side,
    hypothesis: _Side,
    variants: Sequence[Variant],
    n_labels: int,
    self_overlap: tuple[Mapping[str, bool], Mapping[str, bool]] | None = None,
) -> dict[Variant, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per-span credit and weight ``(p_credit, p_weight, r_credit, r_weight)`` per variant.

    One enumeration of the overlapping (reference, hypothesis) span pairs serves every
    variant: ``sum_r |h ∩ r|`` is a weighted count over the pairs (same-label pairs only
    for hard). For the character form this equals ``|h ∩ U(R)|`` unless the reference has
    overlapping spans of its own and ``h`` meets two or more of them; for those spans only,
    the union is built and measured instead. ``self_overlap`` may give, per side and match,
    whether a side has overlapping spans (known in advance for a whole annotator; a subset of
    its spans cannot overlap more).
    """
    ref_index, hyp_index = overlapping_pairs(
        reference.continuum, reference.start, reference.end, hypothesis.continuum, hypothesis.start, hypothesis.end
    )
    overlap = (
        np.minimum(reference.end[ref_index], hypothesis.end[hyp_index])
        - np.maximum(reference.start[ref_index], hypothesis.start[hyp_index])
    ).astype(float)
    same_label = reference.label[ref_index] == hypothesis.label[hyp_index]
    hyp_length = (hypothesis.end - hypothesis.start).astype(float)
    ref_length = (reference.end - reference.start).astype(float)
    results = {}
    for form, match in variants:
        weight = overlap * same_label if match == "hard" else overlap
        to_ref = np.bincount(hyp_index, weights=weight, minlength=len(hyp_length))
        to_hyp = np.bincount(ref_index, weights=weight, minlength=len(ref_length))
        if form == "per_span":
            results[(form, match)] = (to_ref / hyp_length, np.ones_like(hyp_length), to_hyp / ref_length,
                                      np.ones_like(ref_length))  # fmt: skip
            continue
        ref_overlaps, hyp_overlaps = (
            (self_overlap[0][match], self_overlap[1][match])
            if self_overlap is not None
            else (_self_overlapping(reference, match, n_labels), _self_overlapping(hypothesis, match, n_labels))
        )
        # only a span meeting two or more spans of the other side can be counted twice
        if ref_overlaps:
            several = np.bincount(hyp_index, weights=weight > 0, minlength=len(hyp_length)) >= 2
            if several.any():
                to_ref = to_ref.copy()
                to_ref[several] = _covered_by_union(hypothesis.take(several), reference, match, n_labels)
        if hyp_overlaps:
            several = np.bincount(ref_index, weights=weight > 0, minlength=len(ref_length)) >= 2
            if several.any():
                to_hyp = to_hyp.copy()
                to_hyp[several] = _covered_by_union(reference.take(several), hypothesis, match, n_labels)
        results[(form, match)] = (to_ref, hyp_length, to_hyp, ref_length)
    return results


def _covered_by_union(query: _Side, source: _Side, match: str, n_labels: int) -> np.ndarray:
    """``|q ∩ U(source spans of q's group)|`` for every query span."""
    if match == "hard":
        query_group = query.continuum * n_labels + query.label
        source_group = source.continuum * n_labels + source.label
    else:
        query_group, source_group = query.continuum, source.continuum
    union = merge_intervals(source_group, source.start, source.end)[:3]
    return covered_length(query_group, query.start, query.end, *union).astype(float)


def _harmonic(precision: np.ndarray | float, recall: np.ndarray | float) -> np.ndarray:
    p, r = np.asarray(precision, dtype=float), np.asarray(recall, dtype=float)
    total = p + r
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, 2 * p * r / np.where(total > 0, total, 1), 0.0)


def _score_pair(
    reference: _Side,
    hypothesis: _Side,
    examples: np.ndarray,
    *,
    variants: Sequence[Variant],
    average: str,
    empty: str,
    n_labels: int,
    self_overlap: tuple[Mapping[str, bool], Mapping[str, bool]] | None = None,
) -> dict[Variant, SpanScores]:
    """Scores per variant over the example codes ``examples`` (both annotators annotated them)."""
    n_ref_spans, n_hyp_spans = len(reference.start), len(hypothesis.start)
    if len(examples) == 0:
        reason = "the two annotators share no annotated example"
        return {variant: SpanScores(math.nan, math.nan, math.nan, 0, 0, 0, reason) for variant in variants}
    size = int(examples.max()) + 1
    n_ref = np.bincount(reference.example, minlength=size)
    n_hyp = np.bincount(hypothesis.example, minlength=size)
    in_scope = np.zeros(size, dtype=bool)
    in_scope[examples] = True
    has_ref, has_hyp = in_scope & (n_ref > 0), in_scope & (n_hyp > 0)
    used = (has_ref & has_hyp) if empty == "skip" else (has_ref | has_hyp)
    n_perfect = int((in_scope & ~has_ref & ~has_hyp).sum()) if empty == "one" else 0
    n_used = int(used.sum()) + n_perfect
    if n_used == 0:
        if empty == "skip":
            reason = f"in none of the {len(examples)} shared examples did both annotators mark a span (empty='skip')"
        else:
            reason = f"neither annotator marked a span in the {len(examples)} shared examples"
        return {
            variant: SpanScores(math.nan, math.nan, math.nan, 0, n_ref_spans, n_hyp_spans, reason)
            for variant in variants
        }

    reference = reference.take(used[reference.example])
    hypothesis = hypothesis.take(used[hypothesis.example])
    scores = {}
    credits = _credits(reference, hypothesis, variants, n_labels, self_overlap)
    for variant, credit in credits.items():
        if average == "micro":
            precision, recall, f1 = _micro_prf(credit)
            scores[variant] = SpanScores(precision, recall, f1, int(used.sum()), n_ref_spans, n_hyp_spans)
        else:
            precision, recall, f1 = _macro_prf(credit, reference, hypothesis, used, n_perfect, n_used)
            scores[variant] = SpanScores(precision, recall, f1, n_used, n_ref_spans, n_hyp_spans)
    return scores


def _micro_prf(credit: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> tuple[float, float, float]:
    """Precision, recall and F1 over every span at once, from the spans' (precision credit and
    weight, recall credit and weight); 0 where nothing weighs."""
    p_credit, p_weight, r_credit, r_weight = credit
    p_total, r_total = p_weight.sum(), r_weight.sum()
    precision = float(p_credit.sum() / p_total) if p_total > 0 else 0.0
    recall = float(r_credit.sum() / r_total) if r_total > 0 else 0.0
    return precision, recall, float(_harmonic(precision, recall))


def _macro_prf(
    credit: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    reference: _Side,
    hypothesis: _Side,
    used: np.ndarray,
    n_perfect: int,
    n_used: int,
) -> tuple[float, float, float]:
    """Precision, recall and F1 per example, averaged over the ``n_used`` examples: those ``used``
    plus ``n_perfect`` examples where neither marked a span, each scoring 1."""
    p_credit, p_weight, r_credit, r_weight = credit
    size = len(used)
    p_num = np.bincount(hypothesis.example, weights=p_credit, minlength=size)
    p_den = np.bincount(hypothesis.example, weights=p_weight, minlength=size)
    r_num = np.bincount(reference.example, weights=r_credit, minlength=size)
    r_den = np.bincount(reference.example, weights=r_weight, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_precision = np.where(p_den > 0, p_num / np.where(p_den > 0, p_den, 1), 0.0)[used]
        per_recall = np.where(r_den > 0, r_num / np.where(r_den > 0, r_den, 1), 0.0)[used]
    per_f1 = _harmonic(per_precision, per_recall)
    return (
        float((per_precision.sum() + n_perfect) / n_used),
        float((per_recall.sum() + n_perfect) / n_used),
        float((per_f1.sum() + n_perfect) / n_used),
    )


def span_prf(
    reference: Sequence[Sequence[SpanTuple]],
    hypothesis: Sequence[Sequence[SpanTuple]],
    *,
    form: Form = "per_span",
    match: Match = "hard",
    average: Average = "micro",
    empty: EmptyPolicy = "zero",
) -> SpanScores:
    """Span P/R/F1 of ``hypothesis`` against ``reference``: lists of ``(start, end, label)``
    per example, both of the same length (example ``i`` of one is example ``i`` of the other).

    See the module docstring for ``form``, ``match``, ``average`` and ``empty``. Spans with
    ``end <= start`` carry no characters and are left out. Lists of different lengths raise
    ``ValueError``; no examples, or no spans anywhere, give NaN with a reason.

    >>> span_prf([[(0, 4, "x")], []], [[(2, 6, "x")], []], average="macro", empty="one").f1
    0.75
    """
    _check_options(form, match, average, empty)
    if len(reference) != len(hypothesis):
        raise ValueError(f"reference has {len(reference)} examples, hypothesis {len(hypothesis)}")
    label_codes: dict[Hashable, int] = {}
    sides = []
    for side in (reference, hypothesis):
        rows = [
            (index, int(start), int(end), label_codes.setdefault(label, len(label_codes)))
            for index, example in enumerate(side)
            for start, end, label in example
            if end > start
        ]
        array = np.array(rows, dtype=np.int64).reshape(-1, 4)
        sides.append(_Side(array[:, 0], array[:, 0], array[:, 3], array[:, 1], array[:, 2]))
    scores = _score_pair(
        sides[0],
        sides[1],
        np.arange(len(reference)),
        variants=[(form, match)],
        average=average,
        empty=empty,
        n_labels=max(len(label_codes), 1),
    )
    return scores[(form, match)]


# --------------------------------------------------------------------------------------
# Pairs of annotators on the tidy spans table
# --------------------------------------------------------------------------------------


def annotator_pairs(
    references: Iterable[Hashable],
    hypotheses: Iterable[Hashable] | None = None,
    *,
    both_directions: bool = True,
) -> list[tuple[Hashable, Hashable]]:
    """(reference, hypothesis) pairs of distinct annotators.

    Without ``hypotheses``: pairs within ``references`` (both orders, or each unordered pair
    once). With them: every reference against every hypothesis (and back, when
    ``both_directions``).

    >>> annotator_pairs(["a", "b", "c"], both_directions=False)
    [('a', 'b'), ('a', 'c'), ('b', 'c')]
    >>> annotator_pairs(["h1", "h2"], ["llm"], both_directions=False)
    [('h1', 'llm'), ('h2', 'llm')]
    """
    first = list(dict.fromkeys(references))
    if hypotheses is None:
        combos = itertools.permutations(first, 2) if both_directions else itertools.combinations(first, 2)
        return list(combos)
    second = list(dict.fromkeys(hypotheses))
    pairs = [(r, h) for r in first for h in second if r != h]
    if both_directions:
        pairs += [(h, r) for r, h in pairs if (h, r) not in pairs]
    return pairs


def pairwise_span_agreement(
    spans: pd.DataFrame,
    examples: pd.DataFrame | Sequence[object] | None = None,
    annotators: Sequence[Hashable] | None = None,
    *,
    pairs: Iterable[tuple[Hashable, Hashable]] | None = None,
    forms: Sequence[Form] = FORMS,
    matches: Sequence[Match] = MATCHES,
    average: Average = "micro",
    empty: EmptyPolicy = "zero",
    example_key: Sequence[str] | None = None,
    annotator_col: str = "annotator",
    labels: Sequence[Hashable] | None = None,
) -> pd.DataFrame:
    """Span P/R/F1 for (reference, hypothesis) annotator pairs on the tidy ``spans`` table.

    ``pairs`` defaults to every ordered pair of distinct ``annotators``. Each pair is scored
    on the examples both annotated (see :func:`span_design` for ``examples``). Swapping
    reference and hypothesis swaps precision and recall and keeps F1, so each unordered
    pair is computed once.

    Columns: reference, hypothesis, form, match, precision, recall, f1, n_examples,
    n_reference_spans, n_hypothesis_spans, reason (one row per pair, form and match).
    """
    for form in forms:
        for match in matches:
            _check_options(form, match, average, empty)
    pair_list = list(pairs) if pairs is not None else None
    if annotators is None and pair_list is not None:
        annotators = list(dict.fromkeys(name for pair in pair_list for name in pair))
    design = span_design(
        spans, examples, annotators, example_key=example_key, annotator_col=annotator_col, labels=labels
    )
    if pair_list is None:
        pair_list = annotator_pairs(design.annotators)
    sides = _annotator_sides(design)
    n_labels = max(len(design.labels), 1)
    variants = [(form, match) for form in forms for match in matches]
    self_overlap = [{match: _self_overlapping(side, match, n_labels) for match in matches} for side in sides]
    cache: dict[tuple[int, int], dict[Variant, SpanScores]] = {}
    rows = []
    for ref_name, hyp_name in pair_list:
        ref, hyp = design.annotator_code(ref_name), design.annotator_code(hyp_name)
        flipped = (hyp, ref) in cache
        if not flipped and (ref, hyp) not in cache:
            ref_side, hyp_side, shared = _on_shared_examples(design, sides, ref, hyp)
            cache[(ref, hyp)] = _score_pair(
                ref_side,
                hyp_side,
                shared,
                variants=variants,
                average=average,
                empty=empty,
                n_labels=n_labels,
                self_overlap=(self_overlap[ref], self_overlap[hyp]),
            )
        for form, match in variants:
            score = _swap(cache[(hyp, ref)][(form, match)]) if flipped else cache[(ref, hyp)][(form, match)]
            rows.append(_pair_row(ref_name, hyp_name, form, match, score))
    return pd.DataFrame(rows, columns=PAIRWISE_COLUMNS)


def _on_shared_examples(design: SpanDesign, sides: list[_Side], ref: int, hyp: int) -> tuple[_Side, _Side, np.ndarray]:
    """The two annotators' spans on the examples both annotated, and those examples' codes: a pair
    is scored only where both looked."""
    shared = np.flatnonzero(design.coverage[:, ref] & design.coverage[:, hyp])
    in_shared = np.zeros(design.n_examples, dtype=bool)
    in_shared[shared] = True
    return sides[ref].take(in_shared[sides[ref].example]), sides[hyp].take(in_shared[sides[hyp].example]), shared


def _pair_row(ref_name: Hashable, hyp_name: Hashable, form: Form, match: Match, score: SpanScores) -> dict[str, Any]:
    """One row of :func:`pairwise_span_agreement`: a pair's score for one form and match."""
    return {
        "reference": ref_name,
        "hypothesis": hyp_name,
        "form": form,
        "match": match,
        "precision": score.precision,
        "recall": score.recall,
        "f1": score.f1,
        "n_examples": score.n_examples,
        "n_reference_spans": score.n_reference_spans,
        "n_hypothesis_spans": score.n_hypothesis_spans,
        "reason": score.reason,
    }


def _swap(score: SpanScores) -> SpanScores:
    return SpanScores(
        precision=score.recall,
        recall=score.precision,
        f1=score.f1,
        n_examples=score.n_examples,
        n_reference_spans=score.n_hypothesis_spans,
        n_hypothesis_spans=score.n_reference_spans,
        reason=score.reason,
    )


def _annotator_sides(design: SpanDesign) -> list[_Side]:
    positioned = design.positioned
    side = _Side(
        design.example[positioned],
        design.continuum[positioned],
        design.label[positioned],
        design.start[positioned],
        design.end[positioned],
    )
    # ordered by text, label and start: nearly sorted keys make the sorts and searches fast
    order = np.lexsort((side.start, side.label, side.continuum))
    side = side.take(order)
    owner = design.annotator[positioned][order]
    return [side.take(owner == code) for code in range(len(design.annotators))]


def mean_span_agreement(pairwise: pd.DataFrame, by: Sequence[str] = ("form", "match")) -> pd.DataFrame:
    """Average the pairwise scores over pairs (as HotelCheckSpan Table 6 does).

    Each of precision, recall and F1 is averaged on its own over the pairs where it is
    defined (so the mean F1 is not the harmonic mean of the mean P and R). Columns: ``by``,
    precision, recall, f1, n_pairs, n_pairs_undefined, reason (set when no pair is defined).
    """
    keys = list(by)
    if pairwise.empty:
        return pd.DataFrame(columns=[*keys, *MEAN_COLUMNS])
    rows = []
    for group, part in pairwise.groupby(keys, sort=False, dropna=False):
        values = group if isinstance(group, tuple) else (group,)
        defined = part["f1"].notna()
        reason = None
        if not defined.any():
            reasons = part["reason"].dropna().unique()
            reason = "no pair has a defined score" + (f": {reasons[0]}" if len(reasons) else "")
        rows.append(
            {
                **dict(zip(keys, values, strict=True)),
                "precision": float(part["precision"].mean()) if defined.any() else math.nan,
                "recall": float(part["recall"].mean()) if defined.any() else math.nan,
                "f1": float(part["f1"].mean()) if defined.any() else math.nan,
                "n_pairs": int(defined.sum()),
                "n_pairs_undefined": int((~defined).sum()),
                "reason": reason,
            }
        )
    return pd.DataFrame(rows, columns=[*keys, *MEAN_COLUMNS])


def span_agreement_table(
    spans: pd.DataFrame,
    comparisons: Mapping[str, Iterable[tuple[Hashable, Hashable]]],
    examples: pd.DataFrame | Sequence[object] | None = None,
    *,
    form: Form = "per_span",
    average: Average = "micro",
    empty: EmptyPolicy = "zero",
    example_key: Sequence[str] | None = None,
    annotator_col: str = "annotator",
    labels: Sequence[Hashable] | None = None,
) -> pd.DataFrame:
    """A Table-6-style summary: one row per named comparison (a set of annotator pairs).

    Columns: comparison, precision_hard, recall_hard, f1_hard, precision_soft,
    recall_soft, f1_soft, n_pairs, reason. Each score is the mean over the comparison's
    pairs (see :func:`mean_span_agreement`).

    >>> spans = pd.DataFrame({"task_id": [1, 1, 1], "annotator": ["a", "b", "llm"],
    ...     "start": [0, 0, 5], "end": [4, 4, 9], "label": ["I", "M", "I"]})
    >>> table = span_agreement_table(spans, {"human-human": annotator_pairs(["a", "b"]),
    ...                                      "human-LLM": annotator_pairs(["a", "b"], ["llm"], both_directions=False)})
    >>> table[["comparison", "f1_hard", "f1_soft"]].to_dict("list")
    {'comparison': ['human-human', 'human-LLM'], 'f1_hard': [0.0, 0.0], 'f1_soft': [1.0, 0.0]}
    """
    named = {name: list(pair_list) for name, pair_list in comparisons.items()}
    all_pairs = list(dict.fromkeys(pair for pair_list in named.values() for pair in pair_list))
    columns = [
        "comparison",
        *[f"{metric}_{match}" for match in MATCHES for metric in ("precision", "recall", "f1")],
        "n_pairs",
        "reason",
    ]
    if not all_pairs:
        return pd.DataFrame(columns=columns)
    pairwise = pairwise_span_agreement(
        spans,
        examples,
        pairs=all_pairs,
        forms=(form,),
        average=average,
        empty=empty,
        example_key=example_key,
        annotator_col=annotator_col,
        labels=labels,
    )
    rows = [_comparison_row(name, pair_list, pairwise) for name, pair_list in named.items()]
    return pd.DataFrame(rows, columns=columns)


def _comparison_row(name: str, pair_list: list[tuple[Hashable, Hashable]], pairwise: pd.DataFrame) -> dict[str, object]:
    """One comparison's row of :func:`span_agreement_table`: the mean scores of its pairs per
    match, and the reasons the means gave."""
    chosen = pairwise[
        pd.MultiIndex.from_frame(pairwise[["reference", "hypothesis"]]).isin(pair_list)
        if pair_list
        else np.zeros(len(pairwise), dtype=bool)
    ]
    means = mean_span_agreement(chosen, by=("match",)).set_index("match")
    row: dict[str, object] = {"comparison": name}
    reasons = []
    for match in MATCHES:
        for metric in ("precision", "recall", "f1"):
            row[f"{metric}_{match}"] = float(means.at[match, metric]) if match in means.index else math.nan
        if match in means.index and isinstance(means.at[match, "reason"], str):
            reasons.append(f"{match}: {means.at[match, 'reason']}")
    row["n_pairs"] = len(pair_list)
    row["reason"] = "; ".join(reasons) if reasons else ("no pairs" if not pair_list else None)
    return row
