"""Fit the story_consistency offline heuristic's calibrated line model on StorySumm's val split.

Reads ``../shared/data/storysumm/storysumm.json`` (never shipped), computes each val line's
alignment features with the annotator's own code (``check_line``), and fits:

- ``LINE_MODEL``: logistic regression (L2, numpy Newton steps) of "line inconsistent" on the
  features, over the val lines that are not commentary;
- ``INCONSISTENT_THRESHOLD``: the probability from which "Inconsistent" is suggested, the one that
  maximises val line balanced accuracy while flagging at most ``--cap`` x the val gold count of
  inconsistent lines (ties go to the higher threshold: precision first);
- ``UNKNOWN_FACT_RATE``: the share of val lines naming a name or number the story lacks that are
  inconsistent (add-one smoothed), a floor for such lines' probability;
- ``COMMENTARY_CONSISTENT_RATE``: the share of val lines detected as commentary that are labelled
  consistent (add-one smoothed), the score of "N/A, just commentary".

The test split is never read here. Prints the parameters module; ``--write`` stores it in
``backend/annotators/offline/fitted/story_consistency.py``.

    python bench/fit_offline_storysumm.py [--data PATH] [--cap 1.0] [--write]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from storysumm_offline import DEFAULT_DATA, Item, balanced_accuracy, load_items  # noqa: E402

from judgelab.backend.annotators.offline.schemas.story_consistency import LineCheck, Story, check_line  # noqa: E402

FEATURES = ("coverage", "dispersion")
L2 = 1.0
TARGET = ROOT / "backend" / "annotators" / "offline" / "fitted" / "story_consistency.py"


def line_checks(items: list[Item]) -> list[tuple[LineCheck, int, str]]:
    """(check, 1 if the gold says inconsistent, item id) for every line of ``items``."""
    rows = []
    for item in items:
        story = Story.of(item.story)
        for line, gold in zip(item.lines, item.line_gold, strict=True):
            rows.append((check_line(line, story), 1 - gold, item.item_id))
    return rows


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = L2) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """(intercept, weights, means, scales) of an L2-penalised logistic regression on standardised x."""
    means, scales = x.mean(axis=0), x.std(axis=0)
    scales[scales == 0] = 1.0
    z = np.c_[np.ones(len(x)), (x - means) / scales]
    w = np.zeros(z.shape[1])
    penalty = l2 * np.diag([0.0] + [1.0] * (z.shape[1] - 1))
    for _ in range(100):
        p = 1 / (1 + np.exp(-z @ w))
        gradient = z.T @ (p - y) + penalty @ w
        hessian = z.T @ (z * (p * (1 - p))[:, None]) + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return float(w[0]), w[1:], means, scales


def smoothed_rate(hits: int, total: int) -> float:
    return (hits + 1) / (total + 2)


def choose_threshold(probabilities: np.ndarray, gold: np.ndarray, eligible: np.ndarray, cap: float) -> float:
    """The threshold maximising balanced accuracy with at most ``cap`` x gold positives flagged."""
    limit = cap * gold.sum()
    best: tuple[float, float] | None = None
    for threshold in sorted(set(np.round(probabilities[eligible], 6)), reverse=True):
        flagged = eligible & (probabilities >= threshold)
        if flagged.sum() > limit:
            break
        score = balanced_accuracy(list(1 - gold), list(1 - flagged.astype(int)))
        if best is None or score > best[0] + 1e-12:
            best = (score, float(threshold))
    if best is None:
        raise SystemExit("no threshold flags few enough lines")
    return best[1]


def module_text(params: dict[str, object], notes: list[str]) -> str:
    weights = {k: round(float(v), 6) for k, v in params["weights"].items()}  # type: ignore[union-attr]
    means = {k: round(float(v), 6) for k, v in params["means"].items()}  # type: ignore[union-attr]
    scales = {k: round(float(v), 6) for k, v in params["scales"].items()}  # type: ignore[union-attr]
    header = "\n".join(f"{n}" for n in notes)
    return f'''"""story_consistency: calibrated line model, fitted on StorySumm val by bench/fit_offline_storysumm.py.

{header}
"""

from judgelab.backend.annotators.offline.calibration import LogisticModel

LINE_MODEL = LogisticModel(
    intercept={params["intercept"]:.6f},
    weights={json.dumps(weights)},
    means={json.dumps(means)},
    scales={json.dumps(scales)},
)
INCONSISTENT_THRESHOLD = {params["threshold"]:.6f}
UNKNOWN_FACT_RATE = {params["fact_rate"]:.6f}
COMMENTARY_CONSISTENT_RATE = {params["commentary_rate"]:.6f}
'''


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="storysumm.json")
    parser.add_argument("--cap", type=float, default=1.0, help="most lines flagged on val, as a multiple of gold")
    parser.add_argument("--write", action="store_true", help=f"write {TARGET.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"StorySumm not found at {args.data} (use --data)", file=sys.stderr)
        return 2
    val = [item for item in load_items(args.data) if item.split == "val"]
    rows = line_checks(val)
    content = [(c, y) for c, y, _ in rows if not c.commentary]
    x = np.array([[c.features()[f] for f in FEATURES] for c, _ in content])
    y = np.array([y for _, y in content], dtype=float)
    intercept, weights, means, scales = fit_logistic(x, y)
    z = intercept + ((x - means) / scales) @ weights
    probabilities = 1 / (1 + np.exp(-z))
    facts = [y for c, y, _ in rows if c.facts_missing and not c.commentary]
    fact_rate = smoothed_rate(sum(facts), len(facts))
    has_facts = np.array([c.facts_missing > 0 for c, _ in content])
    probabilities = np.where(has_facts, np.maximum(probabilities, fact_rate), probabilities)
    commentary = [y for c, y, _ in rows if c.commentary]
    commentary_rate = smoothed_rate(len(commentary) - sum(commentary), len(commentary))
    # all val lines, commentary ones never flagged
    all_p = np.zeros(len(rows))
    all_p[[i for i, (c, _, _) in enumerate(rows) if not c.commentary]] = probabilities
    gold = np.array([y for _, y, _ in rows])
    eligible = np.array([not c.commentary for c, _, _ in rows])
    threshold = choose_threshold(all_p, gold, eligible, args.cap)
    flagged = int((eligible & (all_p >= threshold)).sum())
    notes = [
        f"Fitted on {len(val)} val summaries, {len(rows)} lines ({int(gold.sum())} inconsistent; "
        f"{len(content)} not commentary), features {', '.join(FEATURES)}, L2 {L2}.",
        f"Threshold: best val line balanced accuracy flagging at most {args.cap:g} x the gold count "
        f"(flags {flagged} of {len(rows)} val lines).",
        f"Lines with an unknown name or number on val: {len(facts)} ({sum(facts)} inconsistent); "
        f"commentary lines: {len(commentary)} ({len(commentary) - sum(commentary)} consistent).",
    ]
    params = {
        "intercept": intercept,
        "weights": dict(zip(FEATURES, weights, strict=True)),
        "means": dict(zip(FEATURES, means, strict=True)),
        "scales": dict(zip(FEATURES, scales, strict=True)),
        "threshold": threshold,
        "fact_rate": fact_rate,
        "commentary_rate": commentary_rate,
    }
    text = module_text(params, notes)
    print(text)
    if args.write:
        TARGET.write_text(text, encoding="utf-8")
        print(f"written to {TARGET}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
