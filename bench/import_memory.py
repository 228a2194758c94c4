"""Peak memory of importing a big file: a ~150 MB JSON Lines file and a ~150 MB CSV (generated in
a temporary folder), against the file's size and against the in-memory reading it replaced.

Each measurement runs in a child process that reports its own peak RSS (``VmHWM``) as it exits,
and the largest peak RSS of the processes it forked (a big JSON Lines file is checked in parts
side by side, each part in a copy of the process: that peak counts the pages the copy shares with
it too):

- **streamed pipeline**: ``read_tasks(..., stream=True)`` (one pass reading and checking every
  row, keeping only the task keys and writing each row as the import sends it to a temporary
  file) and then the import's second pass, those rows cut into requests
  (:func:`judgelab.sync.projects.import_batches`, each request's body made as the sender makes
  it) without sending them;
- **in-memory baseline** (same run): the same file read with ``stream=False``, every row held at
  once (how every file was read before), then cut into the same requests;
- **interpreter**: the child importing judgelab and exiting (the fixed cost in every figure);
- with ``--live``: ``judgelab import`` itself into a real Label Studio (started here on a free
  port, or ``--url``/``--token``), every task sent.

The target: peak RSS of the import <= 3x the file size.

    python bench/import_memory.py                 # the pipeline up to the sender, both files
    python bench/import_memory.py --live          # also the real import into Label Studio
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "likert_rubric_es"
WORDS = (
    "el la de que y en un una los las noticia gobierno plan millones votos oposición aprobó pleno ciudad año "
    "según fuentes consejo ministros presupuesto región alcalde servicio público empresa trabajadores"
).split()
COLUMNS = ["id", "article", "summary", "model", "prompt"]

_PEAK = (
    "import atexit, resource, sys\n"
    "def _peak():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            sys.stderr.write('JUDGELAB_PEAK_KB ' + line.split()[1] + '\\n')\n"
    "    parts = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "    sys.stderr.write('JUDGELAB_PARTS_PEAK_KB ' + str(parts) + '\\n')\n"
    "atexit.register(_peak)\n"
)
_PIPELINE = (
    _PEAK + "import json, sys, time\n"
    "from judgelab.configs.schema import get_schema\n"
    "from judgelab.sync.importers import read_tasks\n"
    "from judgelab.sync.projects import import_batches, import_body, import_lines\n"
    "t0 = time.perf_counter()\n"
    "schema, rows = read_tasks(sys.argv[1], get_schema(sys.argv[2]), 'generic', stream=sys.argv[3] == 'stream')\n"
    "t1 = time.perf_counter()\n"
    "tasks = requests = size = 0\n"
    "for batch, _, _ in import_batches(import_lines(rows), set()):\n"
    "    size += len(import_body(batch)); tasks += len(batch); requests += 1\n"
    "print(json.dumps({'tasks': tasks, 'requests': requests, 'json_mb': size / 2**20,\n"
    "                  'check_s': t1 - t0, 'send_s': time.perf_counter() - t1}))\n"
)
_INTERPRETER = _PEAK + "import judgelab.sync.importers, judgelab.sync.projects\n"
_CLI = _PEAK + "from judgelab.sync.cli import main\nmain()\n"


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def generate(folder: Path, megabytes: int, seed: int = 15) -> tuple[Path, Path]:
    """A JSONL file of about ``megabytes`` MiB and a CSV of the same rows."""
    rng = random.Random(seed)
    jsonl, table = folder / "tasks.jsonl", folder / "tasks.csv"
    with jsonl.open("w", encoding="utf-8") as out_jsonl, table.open("w", encoding="utf-8", newline="") as out_csv:
        writer = csv.writer(out_csv)
        writer.writerow(COLUMNS)
        size, i = 0, 0
        while size < megabytes * 2**20:
            row = {
                "id": f"doc-{i}",
                "article": _text(rng, rng.randint(120, 380)),
                "summary": _text(rng, rng.randint(20, 60)),
                "model": rng.choice(["claude", "llama3", "human"]),
                "prompt": rng.choice(["base", "core", "5w1h", "tldr"]),
            }
            line = json.dumps(row, ensure_ascii=False) + "\n"
            out_jsonl.write(line)
            writer.writerow([row[c] for c in COLUMNS])
            size += len(line.encode("utf-8"))
            i += 1
    return jsonl, table


def _child(code: str, *args: str, env: dict[str, str] | None = None) -> tuple[float, str, float, float]:
    """(peak RSS in MiB, stdout, seconds, the largest peak RSS in MiB of its own children) of a
    child Python running ``code``."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, env=env or dict(os.environ)
    )
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"child failed:\n{done.stdout}\n{done.stderr[-3000:]}")
    lines = done.stderr.splitlines()
    peaks = [int(line.split()[1]) for line in lines if line.startswith("JUDGELAB_PEAK_KB ")]
    parts = [int(line.split()[1]) for line in lines if line.startswith("JUDGELAB_PARTS_PEAK_KB ")]
    return peaks[-1] / 1024, done.stdout, seconds, parts[-1] / 1024 if parts else 0.0


def _live_import(path: Path, url: str, token: str, title: str) -> tuple[float, str, float, float]:
    env = {**os.environ, "JUDGELAB_LS_URL": url, "JUDGELAB_LS_TOKEN": token}
    return _child(_CLI, "import", "--schema", SCHEMA, "--title", title, str(path), env=env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=150, help="size of each generated file in MiB (default 150)")
    ap.add_argument("--live", action="store_true", help="also import into a real Label Studio")
    ap.add_argument("--url")
    ap.add_argument("--token")
    ap.add_argument("--home", type=Path, help="Label Studio state folder for --live (default: temporary)")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="judgelab-import-bench-"))
    t0 = time.perf_counter()
    files = generate(tmp, args.mb)
    print(f"generated {', '.join(f'{p.name} {p.stat().st_size / 2**20:.0f} MiB' for p in files)} "
          f"in {time.perf_counter() - t0:.0f} s ({tmp})")  # fmt: skip
    base, _, _, _ = _child(_INTERPRETER)
    print(f"interpreter with judgelab's importers: peak RSS {base:.0f} MiB\n")
    for path in files:
        size = path.stat().st_size / 2**20
        streamed, out, seconds, part_peak = _child(_PIPELINE, str(path), SCHEMA, "stream")
        parts = f", its check's part processes up to {part_peak:.0f} MiB" if part_peak else ""
        stats = json.loads(out)
        held, _, held_seconds, _ = _child(_PIPELINE, str(path), SCHEMA, "list")
        print(
            f"{path.name} ({size:.0f} MiB, {stats['tasks']} tasks, {stats['requests']} import requests of "
            f"{stats['json_mb'] / max(1, stats['requests']):.1f} MiB JSON on average):\n"
            f"  streamed pipeline up to the sender: peak RSS {streamed:.0f} MiB = {streamed / size:.2f}x the file "
            f"(target <= 3x){parts} in {seconds:.0f} s (check pass {stats['check_s']:.0f} s)\n"
            f"  in-memory baseline, same run:       peak RSS {held:.0f} MiB = {held / size:.2f}x the file "
            f"in {held_seconds:.0f} s; streamed / in-memory = {streamed / held:.2f}x"
        )
    if not args.live:
        print("\n(--live also sends every task to a real Label Studio)")
        return
    from judgelab.sync.local_stack import StackSettings, free_port, load_credentials, start_label_studio, stop_stack

    settings = None
    if args.url:
        url, token = args.url.rstrip("/"), args.token
    else:
        settings = StackSettings(home=args.home or tmp / "stack", ls_port=free_port(), backend_port=free_port())
        creds = load_credentials(settings.home)
        t0 = time.perf_counter()
        start_label_studio(settings, creds)
        print(f"\nLabel Studio up in {time.perf_counter() - t0:.0f} s")
        url, token = settings.ls_url, creds.token
    try:
        for path in files:
            size = path.stat().st_size / 2**20
            peak, out, seconds, _ = _live_import(path, url, token, f"Import memory bench {path.suffix[1:]}")
            print(
                f"judgelab import {path.name} into Label Studio: peak RSS {peak:.0f} MiB = {peak / size:.2f}x the "
                f"file (target <= 3x), {seconds:.0f} s\n    {out.strip()}"
            )
    finally:
        if settings is not None:
            stop_stack(settings.home)


if __name__ == "__main__":
    main()
