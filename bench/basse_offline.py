"""How well the offline annotator's likert_rubric_es ratings agree with BASSE's human ratings.

BASSE (Barnes et al. 2025): Spanish news summaries rated 1-5 on Coherence, Consistency, Fluency,
Relevance and 5W1H (the schema's ``5W``). The human rating of a summary is the median of its
raters' ratings (3 raters in rounds 1-2, 2 for the human-written summaries, 1 in round 3;
a median between two values is rounded half up). Agreement is the quadratic-weighted Cohen's
kappa of the suggested rating with that median (``judgelab.analysis``), with a 95% percentile
bootstrap interval over summaries.

Splits: the offline scores are fitted on round 3 (``bench/fit_offline_basse.py``); rounds 1-2,
whose medians come from 2-3 raters, are the test split. The trivial baseline suggests the
training split's most common human rating for every summary (a constant: kappa 0, whatever the
constant), printed with its exact-agreement rate.

    python bench/basse_offline.py [--data PATH] [--boot 1000]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judgelab.analysis.bootstrap import bootstrap_ci  # noqa: E402
from judgelab.analysis.chance_agreement import weighted_cohen_kappa  # noqa: E402
from judgelab.analysis.loaders.basse import load_basse  # noqa: E402
from judgelab.backend.annotators.offline import OfflineAnnotator  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "basse" / "BASSE.es.jsonl"
CRITERIA = ("Coherence", "Consistency", "Fluency", "Relevance", "5W")
TRAIN_ROUNDS = (3,)
TEST_ROUNDS = (1, 2)
SCHEMA = "likert_rubric_es"


@dataclass
class Rated:
    """One BASSE summary: its texts, round, and the human median per criterion."""

    task_id: str
    round: int
    article: str
    summary: str
    median: dict[str, int]


def median_rating(values: list[float]) -> int:
    ordered = sorted(values)
    middle = len(ordered) // 2
    value = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return int(math.floor(value + 0.5))


def load_rated(path: Path) -> list[Rated]:
    """The summaries of a BASSE file with their human median per criterion (judgelab's loader)."""
    tables = load_basse(path)
    ratings: dict[tuple[str, str], list[float]] = {}
    for row in tables["judgments"].itertuples(index=False):
        if row.item in CRITERIA:
            ratings.setdefault((row.task_id, row.item), []).append(float(row.value))
    rated = []
    for task in tables["tasks"].itertuples(index=False):
        median = {c: median_rating(ratings[(task.task_id, c)]) for c in CRITERIA if (task.task_id, c) in ratings}
        rated.append(Rated(task.task_id, int(task.round), str(task.article), str(task.summary), median))
    return rated


def suggestions(rated: list[Rated]) -> dict[str, tuple[dict[str, int], dict[str, float]]]:
    """task id -> (suggested rating, its score) per criterion, from the real annotator."""
    annotator = OfflineAnnotator()
    out = {}
    for item in rated:
        draft = annotator.annotate(SCHEMA, {"article": item.article, "summary": item.summary})
        out[item.task_id] = (
            {c: int(draft.choices[c][0]) for c in CRITERIA if c in draft.choices},
            {c: float(draft.scores.get(c, float("nan"))) for c in CRITERIA},
        )
    return out


def qwk(pairs: np.ndarray) -> float:
    return weighted_cohen_kappa(pairs[:, 0], pairs[:, 1], "quadratic").value


def criterion_pairs(rated: list[Rated], suggested: dict, criterion: str) -> np.ndarray:
    rows = [
        (suggested[r.task_id][0][criterion], r.median[criterion])
        for r in rated
        if criterion in r.median and criterion in suggested[r.task_id][0]
    ]
    return np.array(rows, dtype=float)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BASSE.es.jsonl")
    parser.add_argument("--boot", type=int, default=1000, help="bootstrap replicates")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"BASSE not found at {args.data} (use --data)", file=sys.stderr)
        return 2
    rated = load_rated(args.data)
    suggested = suggestions(rated)
    train = [r for r in rated if r.round in TRAIN_ROUNDS]
    print(f"BASSE es, offline annotator v{OfflineAnnotator.version}: quadratic-weighted kappa with the human median")
    print("(scores fitted on round 3; rounds 1-2 are the test split; 95% bootstrap interval over summaries)")
    print(
        f"{'split':<10} {'criterion':<12} {'n':>4}  {'QWK':>6} {'95% CI':>16}  {'exact':>5} "
        f"{'mean score':>10}  {'trivial QWK':>11} {'trivial exact':>13}"
    )
    for split, rounds in (("test", TEST_ROUNDS), ("train", TRAIN_ROUNDS)):
        subset = [r for r in rated if r.round in rounds]
        for criterion in CRITERIA:
            pairs = criterion_pairs(subset, suggested, criterion)
            value = qwk(pairs)
            low, high = bootstrap_ci(pairs, qwk, n_boot=args.boot, seed=0)
            exact = float(np.mean(pairs[:, 0] == pairs[:, 1]))
            scores = [suggested[r.task_id][1][criterion] for r in subset if criterion in r.median]
            constant = Counter(r.median[criterion] for r in train if criterion in r.median).most_common(1)[0][0]
            trivial = np.column_stack([np.full(len(pairs), constant, dtype=float), pairs[:, 1]])
            trivial_qwk, trivial_exact = qwk(trivial) + 0.0, float(np.mean(trivial[:, 0] == trivial[:, 1]))
            print(
                f"{split:<10} {criterion:<12} {len(pairs):>4}  {value:6.3f} [{low:6.3f}, {high:6.3f}]  "
                f"{exact:5.2f} {np.nanmean(scores):10.2f}  {trivial_qwk:11.3f} {trivial_exact:13.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
