"""Calibrated scores of the offline heuristics: fitted models applied at run time.

The parameters are fitted by the ``bench/fit_offline_*.py`` scripts on the training split of a
public human-labelled data set and stored in ``offline/fitted/<schema>.py`` as constants, so the
annotator never reads a data set at run time and stays deterministic.

Every score is a probability that the suggested answer is the one a human gives:

- a region's (or choice's) ``score`` is the probability of *that* answer (``Inconsistent`` with
  score 0.3 means "30% of such lines were inconsistent in the training split");
- the prediction's ``score`` (:func:`prediction_score`) is the mean of its results' scores: the
  share of the suggested results a reviewer is expected to keep.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from judgelab.backend.draft import Draft, SpanDraft

#: An optional answer (a "no errors" box) is suggested only when it is at least this likely;
#: a required one always gets the most likely answer, whatever its score.
MOST_LIKELY = 0.5


def logistic(value: float) -> float:
    if value >= 0:
        return 1.0 / (1.0 + math.exp(-value))
    exp = math.exp(value)
    return exp / (1.0 + exp)


@dataclass(frozen=True)
class LogisticModel:
    """``P(y = 1) = logistic(intercept + sum(weight * (x - mean) / scale))`` over named features."""

    intercept: float
    weights: Mapping[str, float]
    means: Mapping[str, float]
    scales: Mapping[str, float]

    def probability(self, features: Mapping[str, float]) -> float:
        z = self.intercept
        for name, weight in self.weights.items():
            scale = self.scales.get(name) or 1.0
            z += weight * (float(features[name]) - self.means.get(name, 0.0)) / scale
        return logistic(z)


def answer_score(probability: float) -> float:
    """A probability as a region score: clipped to [0, 1] and rounded to 3 decimals."""
    if not math.isfinite(probability):
        return 0.0
    return round(min(1.0, max(0.0, probability)), 3)


def result_scores(draft: Draft) -> list[float]:
    """The per-result scores of a draft: its spans' and its choices', ratings', numbers', texts'."""
    scores = [s.score for s in draft.spans if s.score is not None]
    answered: Iterable[str] = [*draft.choices, *draft.ratings, *draft.numbers, *draft.texts]
    scores += [draft.scores[name] for name in answered if name in draft.scores]
    return [float(s) for s in scores]


def prediction_score(draft: Draft) -> float | None:
    """The prediction's score: the mean of its results' scores (``None`` when it has none)."""
    scores = result_scores(draft)
    return answer_score(sum(scores) / len(scores)) if scores else None


def score_spans(
    spans: list[SpanDraft], hit_rate: Mapping[str, float], default: float, threshold: float
) -> list[SpanDraft]:
    """Give each span its label's fitted hit rate (the share of such suggested spans a human also
    marked, at least in part) as its score, and keep those scoring at least ``threshold``."""
    kept = []
    for span in spans:
        rate = hit_rate.get(span.label, default)
        span.score = answer_score(rate)
        if rate >= threshold:
            kept.append(span)
    return kept
