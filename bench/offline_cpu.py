"""CPU time per task of the offline annotator, against an older revision measured in the same run.

The tasks are real: every StorySumm summary (story_consistency), the first ``--basse`` BASSE es
summaries (likert_rubric_es), and every schema's ``samples.json`` task. The older revision is
checked out in a temporary git worktree and the same measuring code runs against it in a
subprocess (``PYTHONPATH`` pointing at its editable shim); old and new alternate ``--rounds``
times and the fastest round of each counts, which damps the noise of a shared machine. Prints
CPU milliseconds per task per schema and the ratio new / old.

    python bench/offline_cpu.py --against REV [--storysumm PATH] [--basse PATH] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def load_tasks(storysumm: Path, basse: Path, n_basse: int, configs: Path) -> list[tuple[str, dict]]:
    tasks: list[tuple[str, dict]] = []
    if storysumm.exists():
        for entry in json.loads(storysumm.read_text(encoding="utf-8"), strict=False).values():
            tasks.append(("story_consistency", {"story": entry.get("story"), "lines": entry.get("summary")}))
    if basse.exists():
        with basse.open(encoding="utf-8") as f:
            for line in f:
                doc = json.loads(line)
                for summary in doc["model_summaries"].values():
                    if sum(1 for s, _ in tasks if s == "likert_rubric_es") < n_basse:
                        tasks.append(
                            ("likert_rubric_es", {"article": doc["original_document"], "summary": summary["summ"]})
                        )
    for folder in sorted(p for p in configs.iterdir() if (p / "samples.json").exists()):
        for task in json.loads((folder / "samples.json").read_text(encoding="utf-8")):
            tasks.append((folder.name, task.get("data", task)))
    return tasks


def measure(args: argparse.Namespace) -> dict[str, float]:
    """CPU seconds per task, by schema, of the ``judgelab`` on ``sys.path`` (one round)."""
    from judgelab.backend.annotators.offline import OfflineAnnotator  # noqa: PLC0415 - the revision under test

    tasks = load_tasks(args.storysumm, args.basse, args.n_basse, ROOT / "configs")
    annotator = OfflineAnnotator()
    annotator.annotate("story_consistency", {"story": "warm up", "lines": ["warm up"]})
    spent: dict[str, float] = {}
    counts: dict[str, int] = {}
    for schema, data in tasks:
        start = time.process_time()
        annotator.annotate(schema, data)
        spent[schema] = spent.get(schema, 0.0) + time.process_time() - start
        counts[schema] = counts.get(schema, 0) + 1
    return {schema: spent[schema] / counts[schema] for schema in spent} | {
        "_all": sum(spent.values()) / sum(counts.values())
    }


def run_round(checkout: Path, args: argparse.Namespace) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(checkout / "scripts" / "editable"))
    command = [sys.executable, str(Path(__file__).resolve()), "--measure"]
    command += ["--storysumm", str(args.storysumm), "--basse", str(args.basse), "--n-basse", str(args.n_basse)]
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", help="git revision to compare with (e.g. main)")
    parser.add_argument("--storysumm", type=Path, default=SHARED / "storysumm" / "storysumm.json")
    parser.add_argument("--basse", type=Path, default=SHARED / "basse" / "BASSE.es.jsonl")
    parser.add_argument("--n-basse", type=int, default=200, help="BASSE summaries to annotate")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args)))
        return 0
    if not args.against:
        parser.error("--against REV is required")
    with tempfile.TemporaryDirectory(prefix="judgelab-cpu-") as tmp:
        old_checkout = Path(tmp) / "old"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old_checkout), args.against],
            check=True,
            capture_output=True,
        )
        try:
            best: dict[str, dict[str, float]] = {"old": {}, "new": {}}
            for _ in range(args.rounds):
                for label, checkout in (("old", old_checkout), ("new", ROOT)):
                    for schema, seconds in run_round(checkout, args).items():
                        best[label][schema] = min(seconds, best[label].get(schema, float("inf")))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old_checkout)], check=True)
    print(f"Offline annotator CPU per task: this checkout vs {args.against} (fastest of {args.rounds} rounds)")
    print(f"{'schema':<22} {'old ms':>8} {'new ms':>8} {'ratio':>6}")
    for schema in sorted(best["new"], key=lambda s: (s == "_all", s)):
        old, new = best["old"].get(schema), best["new"][schema]
        name = "all tasks" if schema == "_all" else schema
        ratio = f"{new / old:6.2f}" if old else "   n/a"
        print(f"{name:<22} {old * 1000 if old else float('nan'):8.2f} {new * 1000:8.2f} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
