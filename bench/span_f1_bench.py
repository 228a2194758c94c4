"""Span F1 (all annotator pairs, both forms, hard and soft) against a plain Python loop.

Synthetic, seeded data: 100,000 spans over 20,000 examples by 5 annotators. Each example has
a few "true" error locations; every annotator marks some of them with jittered boundaries and
sometimes a different label, and adds stray spans. Both implementations compute the
HotelCheckSpan Table 6 quantities: precision, recall and F1 for every ordered annotator pair,
in the per-span (Da San Martino) and character (factgenie) forms, hard and soft, micro
averaged, empty="zero".

The baseline is the straightforward loop (per pair, per example, per span pair; characters as
Python sets). It is timed on a subset of the examples and scaled linearly to the full data (its
cost is linear in the number of examples, which all have the same size distribution); both
implementations are also run on the same subset and must agree to 1e-9.

    python bench/span_f1_bench.py [--examples 20000] [--spans 100000] [--subset 2000]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judgelab.analysis.span_agreement import pairwise_span_agreement  # noqa: E402

LABELS = ("Incorrect", "Misleading", "Not checkable")
ANNOTATORS = ("ann1", "ann2", "ann3", "ann4", "llm")


def synthetic_spans(n_examples: int, n_spans: int, seed: int = 7) -> pd.DataFrame:
    """About ``n_spans`` spans (exactly, after trimming) over ``n_examples`` texts."""
    rng = np.random.default_rng(seed)
    per_annotator_example = n_spans / (n_examples * len(ANNOTATORS))
    rows: dict[str, list] = defaultdict(list)
    text_length = rng.integers(200, 600, n_examples)
    for example in range(n_examples):
        n_true = rng.poisson(per_annotator_example * 1.3)
        true_start = rng.integers(0, text_length[example] - 40, n_true)
        true_length = rng.integers(3, 30, n_true)
        true_label = rng.integers(0, len(LABELS), n_true)
        for annotator in ANNOTATORS:
            found = rng.random(n_true) < 0.7
            starts = true_start[found] + rng.integers(-4, 5, found.sum())
            ends = starts + true_length[found] + rng.integers(-4, 5, found.sum())
            labels = np.where(rng.random(found.sum()) < 0.75, true_label[found], rng.integers(0, 3, found.sum()))
            n_stray = rng.poisson(0.15)
            stray_start = rng.integers(0, text_length[example] - 40, n_stray)
            starts = np.concatenate([starts, stray_start])
            ends = np.concatenate([ends, stray_start + rng.integers(3, 30, n_stray)])
            labels = np.concatenate([labels, rng.integers(0, 3, n_stray)])
            starts = np.clip(starts, 0, None)
            for start, end, label in zip(starts, ends, labels, strict=True):
                if end > start:
                    rows["task_id"].append(example)
                    rows["annotator"].append(annotator)
                    rows["start"].append(int(start))
                    rows["end"].append(int(end))
                    rows["label"].append(LABELS[label])
    frame = pd.DataFrame(rows)
    if len(frame) > n_spans:
        frame = frame.sample(n=n_spans, random_state=seed).sort_index()
    frame.insert(0, "project", "bench")
    frame["field"] = "summary"
    return frame.reset_index(drop=True)


def loop_span_f1(spans: pd.DataFrame, examples: list[int], annotators: tuple[str, ...]) -> pd.DataFrame:
    """The straightforward implementation: dictionaries, nested loops, character sets."""
    by_example: dict[tuple[int, str], list[tuple[int, int, str]]] = defaultdict(list)
    for row in spans.itertuples(index=False):
        by_example[(row.task_id, row.annotator)].append((row.start, row.end, row.label))
    results = []
    for reference, hypothesis in itertools.permutations(annotators, 2):
        for form in ("per_span", "character"):
            for match in ("hard", "soft"):
                hard = match == "hard"
                p_credit = p_weight = r_credit = r_weight = 0.0
                for example in examples:
                    ref = by_example.get((example, reference), [])
                    hyp = by_example.get((example, hypothesis), [])
                    if not ref and not hyp:
                        continue
                    if form == "per_span":
                        for hs, he, hl in hyp:
                            overlap = sum(
                                max(0, min(he, re) - max(hs, rs)) for rs, re, rl in ref if not hard or rl == hl
                            )
                            p_credit += overlap / (he - hs)
                            p_weight += 1
                        for rs, re, rl in ref:
                            overlap = sum(
                                max(0, min(he, re) - max(hs, rs)) for hs, he, hl in hyp if not hard or rl == hl
                            )
                            r_credit += overlap / (re - rs)
                            r_weight += 1
                    else:
                        for spans_side, others, is_hyp in ((hyp, ref, True), (ref, hyp, False)):
                            for s, e, label in spans_side:
                                marked = {c for os, oe, ol in others if not hard or ol == label for c in range(os, oe)}
                                hits = sum(1 for c in range(s, e) if c in marked)
                                if is_hyp:
                                    p_credit, p_weight = p_credit + hits, p_weight + (e - s)
                                else:
                                    r_credit, r_weight = r_credit + hits, r_weight + (e - s)
                precision = p_credit / p_weight if p_weight else 0.0
                recall = r_credit / r_weight if r_weight else 0.0
                f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
                results.append((reference, hypothesis, form, match, precision, recall, f1))
    return pd.DataFrame(results, columns=["reference", "hypothesis", "form", "match", "precision", "recall", "f1"])


def ours(spans: pd.DataFrame, examples: list[int]) -> pd.DataFrame:
    return pairwise_span_agreement(spans, examples=examples, annotators=ANNOTATORS)


def best_time(function, repeats: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--subset", type=int, default=2_000, help="examples the loop baseline is timed on")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    spans = synthetic_spans(args.examples, args.spans, args.seed)
    all_examples = list(range(args.examples))
    subset_examples = all_examples[: args.subset]
    subset_spans = spans[spans.task_id < args.subset]
    n_pairs = len(ANNOTATORS) * (len(ANNOTATORS) - 1)
    print(
        f"data: {len(spans):,} spans, {args.examples:,} examples, {len(ANNOTATORS)} annotators "
        f"({n_pairs} ordered pairs x 2 forms x hard/soft = {n_pairs * 4} scores)"
    )

    full_time, full = best_time(lambda: ours(spans, all_examples), repeats=3)
    ours_subset_time, ours_subset = best_time(lambda: ours(subset_spans, subset_examples), repeats=3)
    loop_subset_time, loop_subset = best_time(lambda: loop_span_f1(subset_spans, subset_examples, ANNOTATORS), 1)

    keys = ["reference", "hypothesis", "form", "match"]
    merged = ours_subset.merge(loop_subset, on=keys, suffixes=("", "_loop"))
    assert len(merged) == len(loop_subset) == n_pairs * 4
    worst = max(float((merged[m] - merged[f"{m}_loop"]).abs().max()) for m in ("precision", "recall", "f1"))
    assert worst <= 1e-9, f"implementations disagree by {worst}"

    scale = args.examples / args.subset
    loop_full_estimate = loop_subset_time * scale
    print(f"check on {args.subset:,} examples ({len(subset_spans):,} spans): max |difference| = {worst:.1e}")
    print(f"ours, full data:          {full_time:8.3f} s")
    print(f"ours, subset:             {ours_subset_time:8.3f} s")
    print(f"loop, subset:             {loop_subset_time:8.3f} s")
    print(f"loop, full (scaled x{scale:g}): {loop_full_estimate:8.3f} s  (timed on the subset, scaled linearly)")
    print(f"ratio loop/ours, full data (loop scaled): {loop_full_estimate / full_time:7.1f}x")
    print(f"ratio loop/ours, same subset (both timed): {loop_subset_time / ours_subset_time:7.1f}x")
    table6 = full.groupby(["form", "match"])[["precision", "recall", "f1"]].mean().round(3)
    print("mean over pairs (full data):")
    print(table6.to_string())


if __name__ == "__main__":
    main()
