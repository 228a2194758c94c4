"""How well the offline annotator's line verdicts match StorySumm's human labels.

StorySumm (Subbiah et al. 2024): LLM summaries of short stories, each line labelled
consistent (1) or not (0) by humans, and a summary-level ``label`` (0 = unfaithful).
The offline annotator predicts a line inconsistent when its verdict is ``Inconsistent``
(``Consistent`` and ``N/A, just commentary`` count as consistent); a summary is predicted
unfaithful when any of its lines is. Scores are balanced accuracies (mean of the recall of
each class), so the trivial baseline "everything consistent" scores 0.5.

Thresholds are tuned on the ``val`` split only (``--tune`` shows the grid on val);
``test`` is reported as is.

    python bench/storysumm_offline.py [--data PATH] [--tune]
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judgelab.backend.annotators import grounding as g  # noqa: E402
from judgelab.backend.annotators.offline import OfflineAnnotator  # noqa: E402
from judgelab.backend.annotators.offline.schemas import story_consistency as offline  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "storysumm" / "storysumm.json"
SPLITS = ("val", "test")


@dataclass
class Item:
    """One StorySumm summary: its lines, their gold labels (1 = consistent) and the story."""

    item_id: str
    split: str
    story: str
    lines: list[str]
    line_gold: list[int]
    faithful: int  # summary-level label: 1 faithful, 0 unfaithful


def load_items(path: Path) -> list[Item]:
    """Read StorySumm; skip (with a message) items whose line and label counts differ."""
    with path.open(encoding="utf-8") as f:
        raw = json.load(f, strict=False)
    items = []
    for item_id, entry in raw.items():
        lines = entry.get("summary")
        if isinstance(lines, str):
            try:
                lines = ast.literal_eval(lines)
            except (ValueError, SyntaxError):
                lines = [lines]
        errors = entry.get("errors") or []
        if len(lines) != len(errors):
            print(f"skipping {item_id}: {len(lines)} summary lines but {len(errors)} line labels")
            continue
        items.append(
            Item(
                item_id,
                str(entry.get("split")),
                str(entry.get("story") or ""),
                [str(x) for x in lines],
                [int(e) for e in errors],
                int(entry["label"]),
            )
        )
    return items


def balanced_accuracy(gold: list[int], predicted: list[int]) -> float:
    """Mean per-class recall over the classes present in ``gold``."""
    recalls = []
    for cls in sorted(set(gold)):
        idx = [i for i, y in enumerate(gold) if y == cls]
        recalls.append(sum(predicted[i] == cls for i in idx) / len(idx))
    return sum(recalls) / len(recalls) if recalls else float("nan")


def annotator_predictions(items: Iterable[Item]) -> dict[str, list[int]]:
    """Per item, 0/1 per line from the real annotator (0 = predicted Inconsistent)."""
    annotator = OfflineAnnotator()
    result = {}
    for item in items:
        draft = annotator.annotate("story_consistency", {"story": item.story, "lines": item.lines})
        result[item.item_id] = [
            0 if draft.choices.get(f"verdict_{i}") == ["Inconsistent"] else 1 for i in range(len(item.lines))
        ]
    return result


def scores(items: list[Item], predictions: dict[str, list[int]]) -> tuple[float, float, int, int]:
    """(line balanced accuracy, summary balanced accuracy, #lines, #summaries)."""
    line_gold, line_pred, doc_gold, doc_pred = [], [], [], []
    for item in items:
        pred = predictions[item.item_id]
        line_gold += item.line_gold
        line_pred += pred
        doc_gold.append(item.faithful)
        doc_pred.append(0 if 0 in pred else 1)
    return (
        balanced_accuracy(line_gold, line_pred),
        balanced_accuracy(doc_gold, doc_pred),
        len(line_gold),
        len(doc_gold),
    )


def rule_predictions(
    checks: dict[str, list[offline.LineCheck]], rule: Callable[[offline.LineCheck], bool]
) -> dict[str, list[int]]:
    return {k: [0 if rule(c) else 1 for c in v] for k, v in checks.items()}


def tune(items: list[Item]) -> None:
    """Grid of the verdict thresholds, scored on val only (test is never looked at here)."""
    val = [i for i in items if i.split == "val"]
    checks = {}
    for item in val:
        index = g.SourceIndex([item.story], lang="en")
        checks[item.item_id] = [offline.check_line(line, index) for line in item.lines]
    rows = []
    for max_cohesion in (0.0, 0.5, 0.6, 0.7, 0.8):  # 0.0 = co-occurrence rule off
        for min_grounding in (0.0, 0.5, 0.6, 0.75, 0.9):  # 0.0 = word-grounding rule off
            for min_missing in (1, 2, 3, 5):
                rule = partial(
                    offline.LineCheck.is_inconsistent,
                    min_grounding=min_grounding,
                    min_missing=min_missing,
                    max_cohesion=max_cohesion,
                )
                line_ba, doc_ba, _, _ = scores(val, rule_predictions(checks, rule))
                rows.append((line_ba, doc_ba, max_cohesion, min_grounding, min_missing))
    rows.sort(reverse=True)
    print("\nTuning grid on val (sorted by line balanced accuracy; top 10)")
    print(f"{'line BA':>7} {'summ. BA':>8}  max_cohesion  min_grounding  min_missing")
    for line_ba, doc_ba, mc, mg, mm in rows[:10]:
        print(f"{line_ba:7.3f} {doc_ba:8.3f}  {mc:12.2f}  {mg:13.2f}  {mm:11d}")
    print(
        f"current: max_cohesion={offline.STORY_MAX_COHESION} (window "
        f"{offline.STORY_WINDOW_SHARE:.0%} of the story), "
        f"min_grounding={offline.STORY_MIN_GROUNDING}, min_missing={offline.STORY_MIN_MISSING}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="storysumm.json")
    parser.add_argument("--tune", action="store_true", help="print the threshold grid on val")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"StorySumm not found at {args.data} (use --data)", file=sys.stderr)
        return 2
    items = load_items(args.data)
    predictions = annotator_predictions(items)
    trivial = {i.item_id: [1] * len(i.lines) for i in items}
    print(f"StorySumm, offline annotator v{OfflineAnnotator.version} (thresholds tuned on val only)")
    print(
        f"{'split':<6} {'lines':>5} {'summ.':>5}  {'line BA':>8} {'summary BA':>10}  "
        f"{'trivial line':>12} {'trivial summ.':>13}"
    )
    for split in (*SPLITS, "all"):
        subset = [i for i in items if split in ("all", i.split)]
        line_ba, doc_ba, n_lines, n_docs = scores(subset, predictions)
        t_line, t_doc, _, _ = scores(subset, trivial)
        print(f"{split:<6} {n_lines:>5} {n_docs:>5}  {line_ba:8.3f} {doc_ba:10.3f}  {t_line:12.3f} {t_doc:13.3f}")
    flagged = sum(p.count(0) for p in predictions.values())
    total = sum(len(p) for p in predictions.values())
    gold_bad = sum(i.line_gold.count(0) for i in items)
    print(f"lines predicted inconsistent: {flagged}/{total} (gold: {gold_bad}/{total})")
    if args.tune:
        tune(items)
    return 0


if __name__ == "__main__":
    sys.exit(main())
