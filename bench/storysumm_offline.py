"""How well the offline annotator's line verdicts match StorySumm's human labels.

StorySumm (Subbiah et al. 2024): LLM summaries of short stories, each line labelled
consistent (1) or not (0) by humans, and a summary-level ``label`` (0 = unfaithful).
The offline annotator predicts a line inconsistent when its verdict is ``Inconsistent``
(``Consistent`` and ``N/A, just commentary`` count as consistent); a summary is predicted
unfaithful when any of its lines is. Scores are balanced accuracies (mean of the recall of
each class), so the trivial baseline "everything consistent" scores 0.5.

The line model and its threshold are fitted on the ``val`` split only
(``bench/fit_offline_storysumm.py``); ``test`` is reported as is. The last columns check the
calibration: the mean P(inconsistent) the scores give against the observed share of inconsistent
lines, and the Brier score.

    python bench/storysumm_offline.py [--data PATH]
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judgelab.backend.annotators.offline import OfflineAnnotator  # noqa: E402
from judgelab.configs.schema import get_schema  # noqa: E402

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
    story_id: str = ""  # the story's id (three summaries per story)


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
                str(entry.get("story-id", "")),
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


def annotator_predictions(items: Iterable[Item]) -> dict[str, list[tuple[int, float]]]:
    """Per item, (0 if predicted Inconsistent else 1, P(inconsistent)) per line, from the real annotator.

    P(inconsistent) is the verdict's score for "Inconsistent" and one minus it otherwise."""
    annotator = OfflineAnnotator()
    verdict = get_schema("story_consistency").item_control("line_{i}")
    result = {}
    for item in items:
        draft = annotator.annotate("story_consistency", {"story": item.story, "lines": item.lines})
        lines = []
        for i in range(len(item.lines)):
            name = verdict.replace("{i}", str(i))
            flagged = draft.choices.get(name) == ["Inconsistent"]
            score = draft.scores[name]
            lines.append((0 if flagged else 1, score if flagged else 1 - score))
        result[item.item_id] = lines
    return result


def scores(items: list[Item], predictions: dict[str, list[tuple[int, float]]]) -> tuple[float, float, int, int]:
    """(line balanced accuracy, summary balanced accuracy, #lines, #summaries)."""
    line_gold, line_pred, doc_gold, doc_pred = [], [], [], []
    for item in items:
        pred = [verdict for verdict, _ in predictions[item.item_id]]
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


def calibration(items: list[Item], predictions: dict[str, list[tuple[int, float]]]) -> tuple[float, float, float]:
    """(mean P(inconsistent), observed share of inconsistent lines, Brier score) over the lines."""
    pairs = [
        (p, 1 - gold) for item in items for (_, p), gold in zip(predictions[item.item_id], item.line_gold, strict=True)
    ]
    mean_p = sum(p for p, _ in pairs) / len(pairs)
    observed = sum(y for _, y in pairs) / len(pairs)
    brier = sum((p - y) ** 2 for p, y in pairs) / len(pairs)
    return mean_p, observed, brier


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="storysumm.json")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"StorySumm not found at {args.data} (use --data)", file=sys.stderr)
        return 2
    items = load_items(args.data)
    predictions = annotator_predictions(items)
    trivial = {i.item_id: [(1, 0.0)] * len(i.lines) for i in items}
    print(f"StorySumm, offline annotator v{OfflineAnnotator.version} (fitted on val only; test never used to fit)")
    print(
        f"{'split':<6} {'lines':>5} {'summ.':>5}  {'line BA':>8} {'summary BA':>10}  "
        f"{'trivial line':>12} {'trivial summ.':>13}  {'flagged':>7} {'gold':>4}  "
        f"{'mean P(inc.)':>12} {'observed':>8} {'Brier':>6}"
    )
    for split in (*SPLITS, "all"):
        subset = [i for i in items if split in ("all", i.split)]
        line_ba, doc_ba, n_lines, n_docs = scores(subset, predictions)
        t_line, t_doc, _, _ = scores(subset, trivial)
        flagged = sum(1 for i in subset for v, _ in predictions[i.item_id] if v == 0)
        gold_bad = sum(i.line_gold.count(0) for i in subset)
        mean_p, observed, brier = calibration(subset, predictions)
        print(
            f"{split:<6} {n_lines:>5} {n_docs:>5}  {line_ba:8.3f} {doc_ba:10.3f}  {t_line:12.3f} {t_doc:13.3f}  "
            f"{flagged:>7} {gold_bad:>4}  {mean_p:12.3f} {observed:8.3f} {brier:6.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
