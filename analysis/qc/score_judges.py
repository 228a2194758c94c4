"""Judges that give a score instead of a verdict (UniEval, AlignScore), and judges that give a
confidence with their verdict (GPT-4's ``probs``), against binary gold labels.

A score becomes a verdict with a threshold chosen on one part of the data (StorySumm tunes on
its ``val`` split) and is then reported on every part, so that the published val/test table can
be rebuilt. The tuning follows StorySumm's ``Results.ipynb``: the first threshold of
``linspace(0, 1, 150)`` that maximises balanced accuracy with ``score >= t`` meaning faithful,
applied as ``score > t`` (scores outside [0, 1] are tried at each distinct score instead).

A confidence is the judge's certainty in the label it chose, not a faithfulness score: it is
only used once signed by the label (``P(faithful) = c`` for a Faithful verdict, ``1 - c`` for an
Unfaithful one, with ``c`` scaled to [0, 1]).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgelab.analysis.qc.story_consistency import FAITHFUL, GOLD_SOURCE, SUMMARY_ITEM, UNFAITHFUL
from judgelab.analysis.tables import usable_judgments

SCORE_ITEM = f"{SUMMARY_ITEM}_score"
CONFIDENCE_ITEM = f"{SUMMARY_ITEM}.confidence"
SIGNED = "signed confidence"
THRESHOLD_GRID = np.linspace(0.0, 1.0, 150)
SCORE_COLUMNS = ["source", "annotator", "task_id", "score"]


@dataclass(frozen=True)
class TunedThreshold:
    """A score judge's threshold, chosen on ``n_units`` tuning summaries with ``balanced_accuracy``."""

    source: str
    annotator: str
    threshold: float
    n_units: int
    balanced_accuracy: float


def judge_scores(judgments: pd.DataFrame, item: str = SCORE_ITEM) -> pd.DataFrame:
    """``source, annotator, task_id, score``: every judge's numeric ``item`` (the latest per task)."""
    frame = usable_judgments(judgments, source=None)
    rows = frame[(frame["source"] != GOLD_SOURCE) & (frame["item"] == item)]
    rows = rows.assign(score=pd.to_numeric(rows["value"], errors="coerce")).dropna(subset=["score"])
    rows = rows.drop_duplicates(subset=["source", "annotator", "task_id"], keep="last")
    return rows[SCORE_COLUMNS].reset_index(drop=True)


def signed_confidences(judgments: pd.DataFrame) -> pd.DataFrame:
    """``source, annotator, task_id, score``: ``P(faithful)`` from each verdict and its confidence
    (``annotator`` gets ' (signed confidence)'); empty for judges without confidences."""
    frame = usable_judgments(judgments, source=None)
    keys = ["source", "annotator", "task_id"]
    confidence = frame[frame["item"] == CONFIDENCE_ITEM]
    if confidence.empty:
        return pd.DataFrame(columns=SCORE_COLUMNS)
    confidence = confidence.assign(c=pd.to_numeric(confidence["value"], errors="coerce")).dropna(subset=["c"])
    verdicts = frame[frame["item"] == SUMMARY_ITEM][[*keys, "value"]].drop_duplicates(subset=keys, keep="last")
    merged = confidence.drop_duplicates(subset=keys, keep="last")[[*keys, "c"]].merge(verdicts, on=keys)
    scale = 100.0 if (merged["c"] > 1).any() else 1.0
    c = merged["c"] / scale
    score = np.where(merged["value"].astype(str).str.strip() == FAITHFUL, c, 1.0 - c)
    return pd.DataFrame(
        {
            "source": merged["source"],
            "annotator": merged["annotator"].astype(str) + f" ({SIGNED})",
            "task_id": merged["task_id"],
            "score": score,
        }
    )


def _balanced_accuracy(faithful_gold: np.ndarray, faithful_predicted: np.ndarray) -> float:
    recalls = []
    for cls in (True, False):
        mask = faithful_gold == cls
        if mask.any():
            recalls.append(float((faithful_predicted[mask] == cls).mean()))
    return float(np.mean(recalls)) if len(recalls) == 2 else float("nan")


def tune_thresholds(
    scores: pd.DataFrame, gold_faithful: Mapping[object, bool], tune_tasks: Iterable[object]
) -> dict[tuple[str, str], TunedThreshold]:
    """Each score judge's threshold chosen on ``tune_tasks`` (see the module docstring)."""
    tune = set(tune_tasks)
    chosen: dict[tuple[str, str], TunedThreshold] = {}
    for (source, annotator), group in scores.groupby(["source", "annotator"], sort=True):
        part = group[group["task_id"].isin(tune) & group["task_id"].isin(set(gold_faithful))]
        if part.empty:
            continue
        values = part["score"].to_numpy(dtype=float)
        truth = part["task_id"].map(gold_faithful).to_numpy(dtype=bool)
        grid = THRESHOLD_GRID if values.min() >= 0.0 and values.max() <= 1.0 else np.unique(values)
        best, best_t = -1.0, float("nan")
        for t in grid:
            accuracy = _balanced_accuracy(truth, values >= t)
            if accuracy > best:
                best, best_t = accuracy, float(t)
        chosen[(str(source), str(annotator))] = TunedThreshold(str(source), str(annotator), best_t, len(part), best)
    return chosen


def thresholded_verdicts(
    scores: pd.DataFrame, thresholds: Mapping[tuple[str, str], TunedThreshold], project: object
) -> pd.DataFrame:
    """Judgment rows (item ``faithful``) of every scored summary: Faithful when ``score > t``."""
    rows = []
    for (source, annotator), group in scores.groupby(["source", "annotator"], sort=True):
        tuned = thresholds.get((str(source), str(annotator)))
        if tuned is None:
            continue
        for task, score in zip(group["task_id"], group["score"], strict=True):
            rows.append(
                {
                    "project": project,
                    "task_id": task,
                    "annotation_id": f"threshold:{source}:{annotator}:{task}",
                    "annotator": f"{annotator} (score > {tuned.threshold:.4f})",
                    "source": source,
                    "item": SUMMARY_ITEM,
                    "value": FAITHFUL if score > tuned.threshold else UNFAITHFUL,
                    "was_cancelled": False,
                }
            )
    return pd.DataFrame(rows, columns=["project", "task_id", "annotation_id", "annotator", "source", "item", "value",
                                       "was_cancelled"])  # fmt: skip
