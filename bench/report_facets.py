"""A faceted report against the same report unfaceted, measured in one run.

Data: ``--tasks`` tasks (default 10,000) of the augmentation-quality schema, each rated by
``--annotators`` annotators (default 3) on SP and SC (1-3) with a flag now and then, from a
fixed seed; every task has a ``model`` (3 values), an ``augmentation_type`` (3) and an
``original_label`` (2). The unfaceted report (``by=()``, every task pooled) is the baseline;
the faceted one is cut by the three fields (18 cells, every table and figure once per cell).
Both write HTML, Markdown and CSV to a temporary folder with the same bootstrap size; each is
run ``--repeats`` times and the best time kept. The target is a wall-clock ratio of at most 2.0;
the CPU-time ratio is printed too (on a machine shared with other work it is the steadier one).

    python bench/report_facets.py [--tasks 10000] [--annotators 3] [--n-boot 1000] [--repeats 1]

Exit status 1 when the ratio is above ``--target``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")  # BLAS threads spinning on a shared machine would blur CPU times

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judgelab.analysis.report import build_report  # noqa: E402
from judgelab.analysis.report.data import ReportOptions  # noqa: E402
from judgelab.configs.schema import get_schema  # noqa: E402

SCHEMA = "augmentation_quality"
FACETS = ("model", "augmentation_type", "original_label")
MODELS = ("Llama3.1-8b", "Mistral-Nemo", "Qwen2.5-14b")
TYPES = ("rephrased", "it_perturbed", "rewritten")


def tables(n_tasks: int, n_annotators: int, seed: int) -> dict[str, pd.DataFrame]:
    """Tidy tasks and judgments: every annotator rates every task, close to a per-task truth."""
    rng = np.random.default_rng(seed)
    task_ids = np.arange(1, n_tasks + 1)
    tasks = pd.DataFrame(
        {
            "project": 1,
            "task_id": task_ids,
            "schema": SCHEMA,
            "key": [f"k{t}" for t in task_ids],
            "model": rng.choice(MODELS, n_tasks),
            "augmentation_type": rng.choice(TYPES, n_tasks),
            "original_label": rng.integers(0, 2, n_tasks),
            "original": "Testo originale.",
            "generated": "Testo generato.",
        }
    )
    frames = []
    start = pd.Timestamp("2025-03-01T09:00:00Z")
    for annotator in range(n_annotators):
        for item in ("SP", "SC"):
            truth = rng.integers(1, 4, n_tasks)
            noise = rng.integers(-1, 2, n_tasks) * (rng.random(n_tasks) < 0.3)
            values = np.clip(truth + noise, 1, 3)
            created = start + pd.to_timedelta(np.arange(n_tasks) * 40 + annotator, unit="s")
            frames.append(
                pd.DataFrame(
                    {
                        "project": 1,
                        "task_id": task_ids,
                        "annotation_id": [f"{annotator}-{t}" for t in task_ids],
                        "annotator": f"annotator{annotator}@example.org",
                        "source": "human",
                        "item": item,
                        "value": values.astype(str),
                        "created_at": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
                        "updated_at": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
                        "lead_time": rng.gamma(4.0, 10.0, n_tasks),
                        "was_cancelled": False,
                        "ground_truth": False,
                    }
                )
            )
    judgments = pd.concat(frames, ignore_index=True)
    spans = pd.DataFrame(columns=["project", "task_id", "annotation_id", "annotator", "source", "label"])
    return {"tasks": tasks, "judgments": judgments, "spans": spans}


def timed(data: dict[str, pd.DataFrame], options: ReportOptions, repeats: int) -> tuple[float, float]:
    """Best wall-clock and CPU seconds of ``repeats`` report builds."""
    schemas = {SCHEMA: get_schema(SCHEMA).meta}
    best_wall = best_cpu = float("inf")
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            wall, cpu = time.perf_counter(), time.process_time()
            build_report(data, schemas, Path(folder), options=options)
            best_wall = min(best_wall, time.perf_counter() - wall)
            best_cpu = min(best_cpu, time.process_time() - cpu)
    return best_wall, best_cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--annotators", type=int, default=3)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", type=float, default=2.0)
    args = parser.parse_args()
    data = tables(args.tasks, args.annotators, args.seed)
    n_cells = int(data["tasks"][list(FACETS)].drop_duplicates().shape[0])
    print(f"{args.tasks} tasks x {args.annotators} annotators, {len(data['judgments'])} judgments; "
          f"facets {', '.join(FACETS)}: {n_cells} cells; bootstrap {args.n_boot}")  # fmt: skip
    timed(data, ReportOptions(n_boot=0, by=(), where=""), 1)  # warm-up: imports, matplotlib fonts
    pooled_wall, pooled_cpu = timed(data, ReportOptions(n_boot=args.n_boot, by=(), where=""), args.repeats)
    faceted_wall, faceted_cpu = timed(data, ReportOptions(n_boot=args.n_boot, by=FACETS, where=""), args.repeats)
    ratio = faceted_wall / pooled_wall
    print(f"unfaceted report: {pooled_wall:.2f} s wall, {pooled_cpu:.2f} s CPU")
    print(f"faceted report ({n_cells} cells): {faceted_wall:.2f} s wall, {faceted_cpu:.2f} s CPU")
    print(
        f"ratio faceted / unfaceted: {ratio:.2f} wall, {faceted_cpu / pooled_cpu:.2f} CPU (target <= {args.target:.1f})"
    )
    return 0 if ratio <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
