"""The report's time and peak memory as a project grows, and against another revision's report.

Tables: a folder of tidy tables written by ``judgelab sync`` (``--tables``; ``bench/scale_workflow.py``
keeps one for each size in its temporary folder, ``<folder>/n10000/tables``), copied ``--copies``
times (default 1,3,10) into one project of that many times the tasks. Each copy gets its own task,
annotation, prediction and region ids, and its own texts and annotation times (a suffix, an hour),
so a copy shares no more with the others than the tasks of one real project do (the report keeps
a text that repeats once).

For each size ``judgelab report --n-boot 200`` (what ``bench/scale_workflow.py`` runs) runs in a
child process; the time and the child's peak RSS are printed, with the time per task against the
smallest size. ``--baseline REV``: the same reports by git revision REV's judgelab (a worktree of
it, removed afterwards), each right before this checkout's, with the ratio of the two peaks and
of the two times; their CSV and Markdown files must be identical (the same numbers and words),
else exit status 1. Only the CSV and Markdown are compared: the HTML embeds the figures, which
are compared through their CSV tables.

    python bench/report_memory.py --tables /tmp/judgelab-scale-XXXX/n10000/tables --baseline 07f165a
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
TABLES = ("tasks", "judgments", "spans", "predictions", "usage")
ID_SHIFT = 10_000_000  # a copy's task and prediction ids: the original's plus copy x this
N_BOOT = "200"


def copied_tables(source: Path, copies: int, target: Path) -> int:
    """``copies`` copies of ``source``'s tables as one project's Parquet files in ``target``;
    returns the number of tasks."""
    from judgelab.sync.export import read_tables

    target.mkdir(parents=True, exist_ok=True)
    tidy = read_tables(source)
    frames = {"tasks": tidy.tasks, "judgments": tidy.judgments, "spans": tidy.spans}
    for name in ("predictions", "usage"):
        if (source / f"{name}.parquet").exists():
            frames[name] = pd.read_parquet(source / f"{name}.parquet")
    for name, frame in frames.items():
        pd.concat([_copy(frame, name, i) for i in range(copies)], ignore_index=True).to_parquet(
            target / f"{name}.parquet", index=False
        )
    for extra in ("cut.json", "problems.csv"):
        if (source / extra).exists():
            shutil.copy(source / extra, target / extra)
    return int(frames["tasks"]["task_id"].nunique()) * copies


def _copy(frame: pd.DataFrame, name: str, i: int) -> pd.DataFrame:
    """Copy ``i`` of a table: ids shifted, texts and times its own (copy 0 is the original)."""
    if i == 0:
        return frame
    out = frame.copy()
    for column in ("task_id", "prediction_id", "parent_prediction"):
        if column in out:
            out[column] = out[column] + i * ID_SHIFT
    for column in ("annotation_id", "region_id", *(("key", "id") if name == "tasks" else ())):
        if column in out:
            out[column] = out[column].where(out[column].isna(), out[column].astype(str) + f"-{i}")
    for column in ("descriptions", "summary", "text", "note"):
        if column in out and name in ("tasks", "spans"):
            out[column] = out[column].where(out[column].isna(), out[column].astype(str) + f" {i}")
    for column in ("created_at", "updated_at"):
        if column in out:
            times = pd.to_datetime(out[column], errors="coerce", utc=True, format="ISO8601")
            out[column] = (times + pd.Timedelta(hours=i)).dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return out


def report(root: Path, tables: Path, out: Path) -> tuple[float, float]:
    """Seconds and peak RSS (MiB) of ``judgelab report`` by the judgelab of ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root / "scripts" / "editable")}
    command = [sys.executable, "-m", "judgelab.sync.cli", "report", "--tables", str(tables), "--out", str(out)]
    t0 = time.perf_counter()
    child = subprocess.Popen([*command, "--n-boot", N_BOOT], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - t0
    errors = child.stderr.read().decode() if child.stderr else ""
    if status != 0:
        raise SystemExit(f"judgelab report ({root}) failed:\n{errors[-3000:]}")
    return seconds, usage.ru_maxrss / 1024


def differing_files(a: Path, b: Path) -> list[str]:
    """The CSV and Markdown files of two report folders that differ, or that only one has."""
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.suffix in (".csv", ".md")}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.suffix in (".csv", ".md")}
    differ = sorted(str(p) for p in files_a ^ files_b)
    differ += sorted(str(p) for p in files_a & files_b if not filecmp.cmp(a / p, b / p, shallow=False))
    return differ


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=Path, required=True, help="a folder of tidy tables (judgelab sync --out)")
    ap.add_argument("--copies", default="1,3,10", help="comma-separated copies of the tables (default 1,3,10)")
    ap.add_argument("--baseline", help="a git revision whose report runs beside this checkout's")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "scripts" / "editable"))
    tmp = Path(tempfile.mkdtemp(prefix="judgelab-report-memory-"))
    baseline = None
    if args.baseline:
        baseline = tmp / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-f", "--detach", str(baseline), args.baseline],
                       check=True, capture_output=True)  # fmt: skip
    failed = False
    try:
        rows = []
        for copies in [int(c) for c in args.copies.split(",")]:
            tables = tmp / f"tables_{copies}"
            n = copied_tables(args.tables, copies, tables)
            row = {"tasks": n}
            if baseline is not None:
                row["base_s"], row["base_mib"] = report(baseline, tables, tmp / f"base_{copies}")
            row["s"], row["mib"] = report(ROOT, tables, tmp / f"this_{copies}")
            if baseline is not None and (differ := differing_files(tmp / f"base_{copies}", tmp / f"this_{copies}")):
                failed = True
                print(f"{n} tasks: the reports differ in {', '.join(differ[:10])}")
            shutil.rmtree(tables)
            rows.append(row)
            print(_line(row, rows[0]), flush=True)
    finally:
        if baseline is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline)], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    if failed:
        raise SystemExit(1)


def _line(row: dict, first: dict) -> str:
    growth = (row["s"] / row["tasks"]) / (first["s"] / first["tasks"])
    text = f"{row['tasks']:>8,} tasks: {row['s']:6.1f} s, peak RSS {row['mib']:6.0f} MiB, time per task {growth:.2f}x"
    if "base_mib" in row:
        text += (
            f" | baseline {row['base_s']:6.1f} s, {row['base_mib']:6.0f} MiB: peak {row['mib'] / row['base_mib']:.2f}x,"
            f" time {row['s'] / row['base_s']:.2f}x"
        )
    return text


if __name__ == "__main__":
    main()
