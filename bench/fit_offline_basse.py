"""Fit the likert_rubric_es offline heuristic's rating scores on BASSE's training split (round 3).

For each criterion and each rating the heuristic suggests, the score is the share of the training
summaries given that rating whose human median is exactly it, add-one smoothed over the five
ratings: ``(hits + 1) / (n + 5)``. A rating the heuristic never gave in training scores 1/5.
The suggested rating itself is not remapped: on BASSE a remapping to the most likely human rating
collapses the heuristic's spread and lowers the kappa (see the README).

Reads ``../shared/data/basse/BASSE.es.jsonl`` (never shipped); prints the parameters module;
``--write`` stores it in ``backend/annotators/offline/fitted/likert_rubric_es.py``.

    python bench/fit_offline_basse.py [--data PATH] [--write]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from basse_offline import CRITERIA, DEFAULT_DATA, TRAIN_ROUNDS, load_rated, suggestions  # noqa: E402

TARGET = ROOT / "backend" / "annotators" / "offline" / "fitted" / "likert_rubric_es.py"
SCALE = (1, 2, 3, 4, 5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BASSE.es.jsonl")
    parser.add_argument("--write", action="store_true", help=f"write {TARGET.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"BASSE not found at {args.data} (use --data)", file=sys.stderr)
        return 2
    train = [r for r in load_rated(args.data) if r.round in TRAIN_ROUNDS]
    suggested = suggestions(train)
    rates: dict[str, dict[int, float]] = {}
    counts: dict[str, dict[int, str]] = {}
    for criterion in CRITERIA:
        given: Counter[int] = Counter()
        hits: Counter[int] = Counter()
        for item in train:
            rating = suggested[item.task_id][0].get(criterion)
            if rating is None or criterion not in item.median:
                continue
            given[rating] += 1
            hits[rating] += item.median[criterion] == rating
        rates[criterion] = {r: round((hits[r] + 1) / (given[r] + len(SCALE)), 6) for r in SCALE}
        counts[criterion] = {r: f"{hits[r]}/{given[r]}" for r in SCALE}
    lines = "\n".join(f"#   {c}: {counts[c]}" for c in CRITERIA)
    text = f'''"""likert_rubric_es: P(human median == suggested rating), fitted on BASSE es round 3
({len(train)} summaries)
by bench/fit_offline_basse.py, add-one smoothed over the five ratings."""

# exact matches / suggestions per rating in the training split:
{lines}
EXACT_RATE: dict[str, dict[int, float]] = {rates!r}
UNSEEN_RATE = {1 / len(SCALE)}
'''
    print(text)
    if args.write:
        TARGET.write_text(text, encoding="utf-8")
        print(f"written to {TARGET}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
