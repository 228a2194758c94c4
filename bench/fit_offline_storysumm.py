"""Fit the story_consistency offline heuristic's line model and summary threshold on StorySumm's val split.

Reads ``../shared/data/storysumm/storysumm.json`` (never shipped), computes each val line's
evidence with the annotator's own code (``ground_line`` and ``relate``), and fits:

- ``LINE_MODEL``: logistic regression (L2, numpy Newton steps) of "line inconsistent" on
  ``FEATURES``, over the val lines about the story (not commentary);
- ``SUMMARY_THRESHOLD``: the summary's probability of holding an inconsistent line
  (``1 - prod(1 - P)`` over its lines) from which its most suspicious line is suggested
  "Inconsistent": the one maximising val *summary* balanced accuracy while flagging at most
  ``--cap`` x the val gold count of inconsistent lines (ties go to the better line balanced
  accuracy, then to the higher threshold: precision first);
- ``UNKNOWN_FACT_RATE``: the share of val lines naming a name or number the story lacks that are
  inconsistent (add-one smoothed), a floor for such lines' probability;
- ``COMMENTARY_CONSISTENT_RATE``: the share of val lines detected as commentary that are labelled
  consistent (add-one smoothed), the score of "N/A, just commentary".

``--cv`` prints how the candidate feature sets and decision rules fare in leave-one-story-out
cross-validation within val (the line model and threshold fitted on 10 of val's 11 stories, applied
to the 11th): the table the shipped choice was made from. The test split is never read here.
Prints the parameters module; ``--write`` stores it in
``backend/annotators/offline/fitted/story_consistency.py``.

    python bench/fit_offline_storysumm.py [--data PATH] [--cap 1.0] [--cv] [--write]
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from storysumm_offline import DEFAULT_DATA, Item, balanced_accuracy, load_items  # noqa: E402

from judgelab.backend.annotators.offline.schemas.story_consistency import (  # noqa: E402
    LineCheck,
    Story,
    ground_line,
    relate,
)

#: The shipped line model's features (chosen with ``--cv``; see the README).
FEATURES = ("coverage_rel", "dispersion_rel", "names_elsewhere", "order")
#: The candidate feature sets ``--cv`` compares.
CANDIDATES = {
    "round 1 (coverage, dispersion)": ("coverage", "dispersion"),
    "relative to the summary": ("coverage_rel", "dispersion_rel"),
    "relative + names elsewhere": ("coverage_rel", "dispersion_rel", "names_elsewhere"),
    "relative + names + order": FEATURES,
    "absolute + relative + names + order": ("coverage", "dispersion", *FEATURES),
}
L2 = 1.0
TARGET = ROOT / "backend" / "annotators" / "offline" / "fitted" / "story_consistency.py"


@dataclass
class Lines:
    """Val lines as arrays: features, gold (1 = inconsistent), summary id, story id, judged (about the story)."""

    checks: list[LineCheck]
    gold: np.ndarray
    summary: np.ndarray
    story: np.ndarray
    judged: np.ndarray
    has_facts: np.ndarray

    def x(self, features: tuple[str, ...]) -> np.ndarray:
        return np.array([[c.features()[f] for f in features] for c in self.checks], dtype=float)

    def subset(self, mask: np.ndarray) -> Lines:
        return Lines(
            [c for c, keep in zip(self.checks, mask, strict=True) if keep],
            self.gold[mask],
            self.summary[mask],
            self.story[mask],
            self.judged[mask],
            self.has_facts[mask],
        )


def val_lines(items: list[Item]) -> Lines:
    """Every line of ``items`` with the annotator's evidence (related within its summary)."""
    checks, gold, summary, story_ids = [], [], [], []
    stories: dict[str, Story] = {}
    for item in items:
        story = stories.setdefault(item.story, Story.of(item.story))
        checks += relate([ground_line(line, story) for line in item.lines])
        gold += [1 - g for g in item.line_gold]
        summary += [item.item_id] * len(item.lines)
        story_ids += [item.story_id] * len(item.lines)
    return Lines(
        checks,
        np.array(gold),
        np.array(summary),
        np.array(story_ids),
        np.array([c.about_the_story for c in checks]),
        np.array([c.facts_missing > 0 for c in checks]),
    )


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


@dataclass
class LineModel:
    """A fitted line model and the fact floor, as the annotator applies them."""

    features: tuple[str, ...]
    intercept: float
    weights: np.ndarray
    means: np.ndarray
    scales: np.ndarray
    fact_rate: float

    @classmethod
    def fit(cls, lines: Lines, features: tuple[str, ...]) -> LineModel:
        judged = lines.subset(lines.judged)
        intercept, weights, means, scales = fit_logistic(judged.x(features), judged.gold.astype(float))
        facts = judged.gold[judged.has_facts]
        return cls(features, intercept, weights, means, scales, smoothed_rate(int(facts.sum()), len(facts)))

    def probabilities(self, lines: Lines) -> np.ndarray:
        z = self.intercept + ((lines.x(self.features) - self.means) / self.scales) @ self.weights
        p = 1 / (1 + np.exp(-z))
        p = np.where(lines.has_facts, np.maximum(p, self.fact_rate), p)
        return np.where(lines.judged, p, 0.0)  # commentary is never flagged


def summary_probabilities(lines: Lines, p: np.ndarray) -> dict[str, float]:
    return {s: float(1 - np.prod(1 - p[lines.summary == s])) for s in dict.fromkeys(lines.summary)}


def flags_top_line(lines: Lines, p: np.ndarray, threshold: float) -> np.ndarray:
    """The shipped rule: the most suspicious line of each summary whose probability reaches ``threshold``."""
    flags = np.zeros(len(p), dtype=bool)
    for s, p_summary in summary_probabilities(lines, p).items():
        idx = np.flatnonzero((lines.summary == s) & lines.judged)
        if len(idx) and p_summary >= threshold:
            flags[idx[int(np.argmax(p[idx]))]] = True
    return flags


def flags_every_line(lines: Lines, p: np.ndarray, threshold: float) -> np.ndarray:
    """Round 1's rule: every line from ``threshold`` on."""
    return lines.judged & (p >= threshold)


def summary_gold_and_prediction(lines: Lines, flags: np.ndarray, faithful: dict[str, int]) -> tuple[list, list]:
    ids = list(dict.fromkeys(lines.summary))
    return [faithful[s] for s in ids], [0 if flags[lines.summary == s].any() else 1 for s in ids]


@dataclass(frozen=True)
class Figures:
    line_ba: float
    summary_ba: float
    flagged: int
    gold: int


def figures(lines: Lines, flags: np.ndarray, faithful: dict[str, int]) -> Figures:
    line_ba = balanced_accuracy(list(1 - lines.gold), list(1 - flags.astype(int)))
    gold, pred = summary_gold_and_prediction(lines, flags, faithful)
    return Figures(line_ba, balanced_accuracy(gold, pred), int(flags.sum()), int(lines.gold.sum()))


Rule = Callable[[Lines, np.ndarray, float], np.ndarray]


def choose_threshold(
    lines: Lines,
    p: np.ndarray,
    faithful: dict[str, int],
    cap: float,
    rule: Rule = flags_top_line,
    target: str = "summary",
) -> float:
    """The threshold maximising the ``target`` balanced accuracy (then the other one, then the
    threshold itself) among those flagging at most ``cap`` x the gold count of inconsistent lines."""
    if rule is flags_top_line:
        values = sorted(set(summary_probabilities(lines, p).values()), reverse=True)
    else:
        values = sorted(set(p[lines.judged].tolist()), reverse=True)
    # halfway between consecutive values: the rounding of the stored parameters cannot move a line across
    candidates = [(a + b) / 2 for a, b in zip(values, [*values[1:], 0.0], strict=True)]
    best: tuple[tuple[float, float], float] | None = None
    for threshold in candidates:
        result = figures(lines, rule(lines, p, float(threshold)), faithful)
        if result.flagged > cap * result.gold:
            break
        key = (result.summary_ba, result.line_ba) if target == "summary" else (result.line_ba, result.summary_ba)
        if best is None or key > tuple(k + 1e-12 for k in best[0]):
            best = (key, float(threshold))
    if best is None:
        raise SystemExit("no threshold flags few enough lines")
    return best[1]


def cross_validate(
    lines: Lines, faithful: dict[str, int], features: tuple[str, ...], rule: Rule, target: str, cap: float
) -> Figures:
    """Leave one val story out: fit the model and the threshold on the others, flag the held-out story."""
    flags = np.zeros(len(lines.gold), dtype=bool)
    for story in sorted(set(lines.story)):
        held_out = lines.story == story
        train, test = lines.subset(~held_out), lines.subset(held_out)
        model = LineModel.fit(train, features)
        threshold = choose_threshold(train, model.probabilities(train), faithful, cap, rule, target)
        flags[held_out] = rule(test, model.probabilities(test), threshold)
    return figures(lines, flags, faithful)


def print_cv(lines: Lines, faithful: dict[str, int], cap: float) -> None:
    rules = {
        "every line >= t (round 1), for line BA": (flags_every_line, "line"),
        "every line >= t, for summary BA": (flags_every_line, "summary"),
        "top line if P(summary) >= t, for summary BA": (flags_top_line, "summary"),
    }
    print(f"Leave-one-story-out within val ({len(set(lines.story))} stories), flags capped at {cap:g} x gold:")
    print(f"{'features':<38} {'rule':<45} {'line BA':>7} {'summ. BA':>8} {'flagged':>7}")
    for name, features in CANDIDATES.items():
        for rule_name, (rule, target) in rules.items():
            result = cross_validate(lines, faithful, features, rule, target, cap)
            print(
                f"{name:<38} {rule_name:<45} {result.line_ba:7.3f} {result.summary_ba:8.3f} "
                f"{result.flagged:>4}/{result.gold}"
            )
    print()


def parameters(features: tuple[str, ...], values: np.ndarray) -> str:
    """A dict literal, one feature a line (as ruff formats it), values rounded to 6 decimals."""
    items = [f"        {json.dumps(f)}: {round(float(v), 6) + 0.0},\n" for f, v in zip(features, values, strict=True)]
    return "{\n" + "".join(items) + "    }"


def module_text(model: LineModel, threshold: float, commentary_rate: float, notes: list[str]) -> str:
    header = "\n".join(textwrap.fill(note, 100) for note in notes)
    return f'''"""story_consistency: calibrated line model, fitted on StorySumm val by bench/fit_offline_storysumm.py.

{header}
"""

from judgelab.backend.annotators.offline.calibration import LogisticModel

LINE_MODEL = LogisticModel(
    intercept={model.intercept:.6f},
    weights={parameters(model.features, model.weights)},
    means={parameters(model.features, model.means)},
    scales={parameters(model.features, model.scales)},
)
SUMMARY_THRESHOLD = {threshold:.6f}
UNKNOWN_FACT_RATE = {model.fact_rate:.6f}
COMMENTARY_CONSISTENT_RATE = {commentary_rate:.6f}
'''


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="storysumm.json")
    parser.add_argument("--cap", type=float, default=1.0, help="most lines flagged on val, as a multiple of gold")
    parser.add_argument("--cv", action="store_true", help="print the leave-one-story-out comparison first")
    parser.add_argument("--write", action="store_true", help=f"write {TARGET.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"StorySumm not found at {args.data} (use --data)", file=sys.stderr)
        return 2
    val = [item for item in load_items(args.data) if item.split == "val"]
    faithful = {item.item_id: item.faithful for item in val}
    lines = val_lines(val)
    if args.cv:
        print_cv(lines, faithful, args.cap)
    model = LineModel.fit(lines, FEATURES)
    p = model.probabilities(lines)
    threshold = choose_threshold(lines, p, faithful, args.cap)
    result = figures(lines, flags_top_line(lines, p, threshold), faithful)
    judged = lines.subset(lines.judged)
    facts = judged.gold[judged.has_facts]
    commentary = lines.gold[~lines.judged]
    commentary_rate = smoothed_rate(int(len(commentary) - commentary.sum()), len(commentary))
    notes = [
        f"Fitted on {len(val)} val summaries, {len(lines.gold)} lines ({int(lines.gold.sum())} inconsistent; "
        f"{int(lines.judged.sum())} about the story), features {', '.join(FEATURES)}, L2 {L2}.",
        f"Summary threshold: best val summary balanced accuracy flagging at most {args.cap:g} x the gold count "
        f"(one line per summary at most; in-sample: line BA {result.line_ba:.3f}, summary BA "
        f"{result.summary_ba:.3f}, flags {result.flagged} of {len(lines.gold)} val lines).",
        f"Lines with an unknown name or number on val: {len(facts)} ({int(facts.sum())} inconsistent); "
        f"commentary lines: {len(commentary)} ({int(len(commentary) - commentary.sum())} consistent).",
    ]
    text = module_text(model, threshold, commentary_rate, notes)
    print(text)
    if args.write:
        TARGET.write_text(text, encoding="utf-8")
        print(f"written to {TARGET}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
