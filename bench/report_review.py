"""The report's review-loop sections (suggestions, judge calibration, anchoring arms) at scale,
against today's report on the same tables, measured in one run.

Synthetic hotel_spans tables: ``--tasks`` tasks (default 10,000), half in the "suggested" arm and
half in the "blind" arm (stratified by split), each annotated by three annotators (error spans
with labels, a no-errors box, a 1-7 impression, a lead time). Model A's suggestions are on the
suggested arm's tasks and the annotations there start from them (kept, relabelled, moved,
deleted, added, re-rated, with Label Studio's region ids, ``origin`` and ``parent_prediction``);
model B judges every task.

The baseline is ``build_report`` with every section builder except the review loop's
(``SECTION_BUILDERS`` minus :data:`REVIEW_BUILDERS`); then the review-loop sections alone (a
report with only them: the page's guide and rendering included, so a slight overestimate) and the
full report. Runs alternate (T N F T N F ... T) so all see the same machine load; wall-clock and
CPU time (this process's, less sensitive to other processes on a shared machine) are printed, with
the ratios of the medians:

    python bench/report_review.py --tasks 10000 --repeats 2
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judgelab.analysis.report import build_report  # noqa: E402
from judgelab.analysis.report.data import ReportOptions  # noqa: E402
from judgelab.analysis.report.sections import REVIEW_BUILDERS, SECTION_BUILDERS  # noqa: E402
from judgelab.configs.schema import all_schemas  # noqa: E402
from judgelab.configs.tables import JUDGMENT_COLUMNS, SPAN_COLUMNS  # noqa: E402

ANNOTATORS = ["rater.a@judgelab.local", "rater.b@judgelab.local", "rater.c@judgelab.local"]
LABELS = ["Not Checkable", "Misleading", "Incorrect"]
NO_ERRORS = "I did not find any errors in the summary"
WORDS = "the hotel offers rooms near the beach with free parking a pool and a quiet garden for guests".split()
MODEL_A, MODEL_B = "judgelab-llm-A", "judgelab-llm-B"


def _summary(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(24))


def _truth(rng: random.Random, length: int) -> list[tuple[int, int, str]]:
    """The task's true errors: up to three non-overlapping (start, end, label)."""
    starts = sorted(rng.sample(range(0, length - 12, 12), rng.choice([0, 1, 1, 2, 3])))
    return [(s, s + rng.randint(4, 10), rng.choice(LABELS)) for s in starts]


def _noisy(rng: random.Random, errors: list[tuple[int, int, str]], miss: float, relabel: float) -> list:
    out = []
    for start, end, label in errors:
        if rng.random() < miss:
            continue
        out.append((start, end, rng.choice(LABELS) if rng.random() < relabel else label))
    return out


def _rating(rng: random.Random, errors: list, spread: int = 1) -> int:
    return max(1, min(7, 6 - 2 * len(errors) + rng.randint(-spread, spread)))


class Tables:
    def __init__(self) -> None:
        self.tasks: list[dict] = []
        self.judgments: list[dict] = []
        self.spans: list[dict] = []
        self.next_region = 0

    def region(self) -> str:
        self.next_region += 1
        return f"r{self.next_region}"

    def add(self, base: dict, spans: list, rating: int, regions: dict | None = None) -> None:
        """One annotation (or prediction): its spans, the impression and the no-errors box."""
        regions = regions or {}
        for span in spans:
            start, end, label = span[:3]
            rid = span[3] if len(span) > 3 else self.region()
            origin = span[4] if len(span) > 4 else base.get("_origin")
            self.spans.append({**base, "field": "summary", "start": start, "end": end, "text": "x" * (end - start),
                               "label": label, "note": None, "region_id": rid, "origin": origin})  # fmt: skip
        self.judgments.append({**base, "item": "impression", "value": str(rating),
                               "region_id": regions.get("impression", self.region()),
                               "origin": regions.get("impression_origin", base.get("_origin"))})  # fmt: skip
        if not spans:
            self.judgments.append({**base, "item": "no_errors", "value": NO_ERRORS, "region_id": self.region(),
                                   "origin": base.get("_origin")})  # fmt: skip


def synthetic_tables(n_tasks: int = 10_000, seed: int = 0) -> dict[str, pd.DataFrame]:
    rng = random.Random(seed)
    out = Tables()
    prediction_id = 0
    for task_id in range(1, n_tasks + 1):
        summary = _summary(rng)
        split = "short" if task_id % 3 else "long"
        arm = "suggested" if (task_id // 3) % 2 == 0 else "blind"
        out.tasks.append({"project": 1, "task_id": task_id, "schema": "hotel_spans", "key": f"t{task_id}",
                          "summary": summary, "descriptions": summary, "split": split, "arm": arm})  # fmt: skip
        truth = _truth(rng, len(summary))
        predictions = {}
        for model, miss in ((MODEL_A, 0.3), (MODEL_B, 0.4)):
            if model == MODEL_A and arm == "blind":
                continue
            prediction_id += 1
            spans = [(*s, out.region()) for s in _noisy(rng, truth, miss, 0.2)]
            rating = _rating(rng, spans)
            rid = out.region()
            predictions[model] = (prediction_id, spans, rating, rid)
            base = {
                "project": 1,
                "task_id": task_id,
                "annotation_id": f"prediction:{prediction_id}",
                "annotator": model,
                "source": f"model:{model}",
                "created_at": "2026-01-01T00:00:00Z",
                "lead_time": None,
                "was_cancelled": False,
                "ground_truth": False,
                "_origin": "prediction",
            }
            out.add(base, spans, rating, {"impression": rid, "impression_origin": "prediction"})
        for k, annotator in enumerate(ANNOTATORS):
            annotation_id = str(task_id * 10 + k)
            base = {"project": 1, "task_id": task_id, "annotation_id": annotation_id, "annotator": annotator,
                    "source": "human", "created_at": f"2026-01-02T00:00:{k:02d}Z", "was_cancelled": False,
                    "ground_truth": False, "_origin": "manual"}  # fmt: skip
            if arm == "suggested":
                pid, suggested, rating, rid = predictions[MODEL_A]
                spans = []
                for start, end, label, region in suggested:
                    roll = rng.random()
                    if roll < 0.6:
                        spans.append((start, end, label, region, "prediction"))
                    elif roll < 0.72:
                        spans.append((start, end, rng.choice(LABELS), region, "prediction-changed"))
                    elif roll < 0.8:
                        spans.append((start + 1, end, label, region, "prediction-changed"))
                for extra in _noisy(rng, truth, 0.6, 0.1):
                    if all(extra[0] != s[0] for s in spans):
                        spans.append((*extra, out.region(), "manual"))
                changed = rng.random() < 0.35
                new_rating = max(1, min(7, rating + rng.choice([-1, 1]))) if changed else rating
                origin = "prediction-changed" if changed else "prediction"
                base.update(parent_prediction=pid, lead_time=round(rng.lognormvariate(3.3, 0.4), 1))
                out.add(base, spans, new_rating, {"impression": rid, "impression_origin": origin})
            else:
                spans = _noisy(rng, truth, 0.25, 0.15)
                base.update(parent_prediction=None, lead_time=round(rng.lognormvariate(3.5, 0.4), 1))
                out.add(base, spans, _rating(rng, spans))
    judgments = pd.DataFrame(out.judgments).reindex(columns=JUDGMENT_COLUMNS)
    spans = pd.DataFrame(out.spans).reindex(columns=SPAN_COLUMNS)
    lead = judgments.drop_duplicates("annotation_id").set_index("annotation_id")["lead_time"]
    spans["lead_time"] = spans["annotation_id"].map(lead)
    parent = judgments.drop_duplicates("annotation_id").set_index("annotation_id")["parent_prediction"]
    spans["parent_prediction"] = spans["annotation_id"].map(parent)
    for frame in (judgments, spans):
        frame["parent_prediction"] = frame["parent_prediction"].astype("Int64")
    spans["start"] = spans["start"].astype("Int64")
    spans["end"] = spans["end"].astype("Int64")
    return {"tasks": pd.DataFrame(out.tasks), "judgments": judgments, "spans": spans}


def _timed(tables: dict, builders: list, out: Path, options: ReportOptions) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one report."""
    schemas = {name: schema.meta for name, schema in all_schemas().items()}
    wall, cpu = time.perf_counter(), time.process_time()
    build_report(tables, schemas, out, section_builders=builders, options=options)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--n-boot", type=int, default=1000, help="Bootstrap replicates (the report's default).")
    args = parser.parse_args()
    t0 = time.perf_counter()
    tables = synthetic_tables(args.tasks)
    print(f"synthetic tables: {len(tables['tasks'])} tasks, {len(tables['judgments'])} judgments, "
          f"{len(tables['spans'])} spans ({time.perf_counter() - t0:.1f} s to make)")  # fmt: skip
    baseline = [b for b in SECTION_BUILDERS if b not in REVIEW_BUILDERS]
    options = ReportOptions(n_boot=args.n_boot)
    runs: dict[str, list[tuple[float, float]]] = {"today": [], "new": [], "full": []}
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        for _ in range(args.repeats):  # T N F T N F ... T: every kind sees the same load
            runs["today"].append(_timed(tables, baseline, out / "today", options))
            runs["new"].append(_timed(tables, REVIEW_BUILDERS, out / "new", options))
            runs["full"].append(_timed(tables, SECTION_BUILDERS, out / "full", options))
        runs["today"].append(_timed(tables, baseline, out / "today", options))
    for clock, index in (("wall", 0), ("CPU", 1)):
        today, new, full = (median(r[index] for r in runs[k]) for k in ("today", "new", "full"))
        print(
            f"{clock:>4} time, medians: today's report {today:.1f} s ({len(runs['today'])} runs), the review-loop "
            f"sections alone {new:.1f} s, the report with them {full:.1f} s"
        )
        ratio = f"new sections / today's report: {new / today:.2f}x (target <= 1.5x)"
        print(f"     {ratio}; full / today: {full / today:.2f}x")


if __name__ == "__main__":
    main()
