"""``judgelab sync`` at scale against Label Studio's own full JSON export, in the same run.

A hotel_spans project gets ``--tasks`` tasks (default 10,000), each with three annotations by
three annotators (two error spans with a reason, a no-errors choice, a 1-7 impression) and one
stored prediction. Then, in ``--repeats`` rounds, each full sync between two baselines (E S E S
... S E) and compared with their mean, so that both see the same machine load:

- **baseline**: ``GET /api/projects/{id}/export?exportType=JSON&download_all_tasks=true``, the
  body streamed to a file (what a user gets from "Export -> JSON");
- **full sync**: ``judgelab sync --full`` as a subprocess (its own Python start included), which
  writes the tidy tables (SQLite + Parquet) and its resumable state; the child reports its own
  peak RSS (``VmHWM``) as it exits.

Then incremental syncs after 0, ``--changes`` (default 100) and 10x ``--changes`` changes
(a third of them annotations updated, a third added, a third deleted), to show the cost follows
the changes, not the project; and the final tables are checked against a fresh full sync.

    python bench/sync_scale.py --tasks 10000 --repeats 3

Needs the ``server`` extra. ``--home`` keeps Label Studio's state folder between runs (the
project is reused when it already has the tasks); ``--url``/``--token`` use a running server.
Label Studio started here runs as the local stack starts it, without Sentry reporting; on a
server with Label Studio's default ``SENTRY_DSN`` each export request costs more, which weighs
on the sync's batches (measured: batches 1.20-1.22x the single export with it, 0.92-1.13x without).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median, quantiles

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judgelab.configs.schema import get_schema  # noqa: E402
from judgelab.sync.client import Connection, connect  # noqa: E402
from judgelab.sync.http_retry import tls_context  # noqa: E402
from judgelab.sync.importers import TaskRow, rows_from_records  # noqa: E402
from judgelab.sync.importers.annotations import ensure_annotators  # noqa: E402
from judgelab.sync.local_stack import (  # noqa: E402
    StackSettings,
    free_port,
    load_credentials,
    start_label_studio,
    stop_stack,
)
from judgelab.sync.projects import ensure_project  # noqa: E402

ANNOTATORS = ["rater.a@judgelab.local", "rater.b@judgelab.local", "rater.c@judgelab.local"]
LABELS = ["Not Checkable", "Misleading", "Incorrect"]


def span(summary: str, rng: random.Random, label: str) -> list[dict]:
    words = [i for i, ch in enumerate(summary) if ch == " "]
    start = rng.choice([0] + [w + 1 for w in words[:-2]])
    end = min(len(summary), start + rng.randint(5, 30))
    rid = hashlib.sha1(f"{start}{end}{rng.random()}".encode()).hexdigest()[:10]
    value = {"start": start, "end": end, "text": summary[start:end]}
    return [
        {
            "id": rid,
            "from_name": "error",
            "to_name": "summary",
            "type": "labels",
            "value": {**value, "labels": [label]},
        },
        {
            "id": rid,
            "from_name": "reason",
            "to_name": "summary",
            "type": "textarea",
            "value": {**value, "text": [f"reason {rng.randint(1, 99)}"]},
        },
    ]


def annotation_result(summary: str, rng: random.Random) -> list[dict]:
    result: list[dict] = []
    for _ in range(rng.randint(0, 2)):
        result += span(summary, rng, rng.choice(LABELS))
    if not result:
        result.append(
            {
                "from_name": "no_errors",
                "to_name": "summary",
                "type": "choices",
                "value": {"choices": ["I did not find any errors in the summary"]},
            }
        )
    result.append(
        {"from_name": "impression", "to_name": "summary", "type": "rating", "value": {"rating": rng.randint(1, 7)}}
    )
    return result


def make_rows(n: int, seed: int = 7) -> list[TaskRow]:
    schema = get_schema("hotel_spans")
    samples = [s["data"] if "data" in s else s for s in schema.samples()]
    rng = random.Random(seed)
    records = []
    for i in range(n):
        data = dict(samples[i % len(samples)])
        data["id"] = f"bench-{i:06d}"
        data["group"] = "A"
        records.append((f"bench row {i}", data))
    rows = rows_from_records(records, schema)  # the importers' checks and derived fields
    for row in rows:
        data = row.data
        row.annotations = [
            {
                "completed_by": {"email": email},
                "result": annotation_result(data["summary"], rng),
                "lead_time": 10 + rng.random() * 50,
            }
            for email in ANNOTATORS
        ]
        row.predictions = [
            {
                "model_version": "bench-llm-1",
                "score": round(rng.random(), 3),
                "result": annotation_result(data["summary"], rng),
            }
        ]
    return rows


def populate(client, n: int) -> int:
    schema = get_schema("hotel_spans")
    project = ensure_project(client, schema, title=f"sync scale bench {n}")
    have = client.projects.get(id=project.id).task_number or 0
    if have == n:
        print(f"project {project.id} already has {n} tasks")
        return project.id
    if have:
        raise SystemExit(f"project {project.id} has {have} tasks, expected 0 or {n}: delete it first")
    ensure_annotators(client, ANNOTATORS)
    rows = make_rows(n)
    t0 = time.perf_counter()
    for start in range(0, n, 500):
        client.projects.import_tasks(id=project.id, request=[r.as_import() for r in rows[start : start + 500]])
    print(f"imported {n} tasks x 3 annotations + 1 prediction in {time.perf_counter() - t0:.0f} s")
    return project.id


def ls_export(url: str, token: str, project_id: int, dest: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    params = {"exportType": "JSON", "download_all_tasks": "true"}
    headers = {"Authorization": f"Token {token}"}
    with httpx.stream(
        "GET",
        f"{url}/api/projects/{project_id}/export",
        params=params,
        headers=headers,
        timeout=3600,
        verify=tls_context(),
    ) as r:
        r.raise_for_status()
        with open(dest, "wb") as fh:
            for chunk in r.iter_bytes(1 << 20):
                fh.write(chunk)
    return time.perf_counter() - t0, dest.stat().st_size


def ls_snapshot_export(url: str, token: str, project_id: int, dest: Path) -> float:
    """Label Studio's export snapshot with full predictions (what the tidy tables contain):
    created (Label Studio runs it within the request when no job queue is set up), then
    downloaded, then deleted."""
    headers = {"Authorization": f"Token {token}"}
    t0 = time.perf_counter()
    body = {"title": "bench", "serialization_options": {"predictions": {"only_id": False}}}
    created = httpx.post(
        f"{url}/api/projects/{project_id}/exports/", json=body, headers=headers, timeout=3600, verify=tls_context()
    )
    created.raise_for_status()
    export_id = created.json()["id"]
    while created.json().get("status") not in ("completed", "failed"):
        time.sleep(0.2)
        created = httpx.get(
            f"{url}/api/projects/{project_id}/exports/{export_id}", headers=headers, timeout=60, verify=tls_context()
        )
    download = f"{url}/api/projects/{project_id}/exports/{export_id}/download"
    with httpx.stream(
        "GET", download, params={"exportType": "JSON"}, headers=headers, timeout=3600, verify=tls_context()
    ) as r:
        r.raise_for_status()
        with open(dest, "wb") as fh:
            for chunk in r.iter_bytes(1 << 20):
                fh.write(chunk)
    seconds = time.perf_counter() - t0
    httpx.delete(
        f"{url}/api/projects/{project_id}/exports/{export_id}", headers=headers, timeout=60, verify=tls_context()
    )
    return seconds


# The child reports its own peak RSS (VmHWM of its process image) when it exits: the rusage that
# wait4 gives counts the parent's pages the child shared between fork and exec.
_PEAK_REPORT = (
    "import atexit, sys\n"
    "def _peak():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            sys.stderr.write('JUDGELAB_PEAK_KB ' + line.split()[1] + '\\n')\n"
    "atexit.register(_peak)\n"
    "from sync.cli import main\n"
    "main()\n"
)


def run_sync(url: str, token: str, project_id: int, out: Path, full: bool) -> tuple[float, float, str]:
    """(seconds, peak RSS in MiB, first output line and the sync's own timing log) of
    ``judgelab -v sync`` in a child process."""
    env = {**os.environ, "JUDGELAB_LS_URL": url, "JUDGELAB_LS_TOKEN": token}
    cmd = [sys.executable, "-c", _PEAK_REPORT, "-v", "sync", "--out", str(out), "--project", str(project_id)]
    if full:
        cmd.append("--full")
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"sync failed:\n{done.stdout}\n{done.stderr}")
    peaks = [int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("JUDGELAB_PEAK_KB ")]
    timings = [line.split(": ", 1)[1] for line in done.stderr.splitlines() if line.startswith("INFO sync.incremental:")]
    first = (done.stdout.strip().splitlines() or [""])[0]
    return seconds, (peaks[-1] / 1024 if peaks else float("nan")), "\n    ".join([first, *timings])


def python_start() -> float:
    """Seconds to start the CLI and print its schema list (imports included): a fixed cost."""
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", "from sync.cli import main; main()", "schemas"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    return time.perf_counter() - t0


def prediction_read_costs(url: str, token: str, project_id: int, tasks: int = 500) -> tuple[float, float]:
    """Seconds per prediction of the project-wide predictions read, and per task of a Data Manager
    page of ``tasks`` tasks selected by id with their predictions (the two ways a sync reads
    prediction bodies; ``PREDICTIONS_PER_LISTED_TASK`` is their ratio)."""
    import json

    headers = {"Authorization": f"Token {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=600, verify=tls_context()) as http:
        t0 = time.perf_counter()
        bulk = http.get("/api/predictions/", params={"project": project_id}).json()
        per_prediction = (time.perf_counter() - t0) / max(1, len(bulk))
        ids = sorted({int(p["task"]) for p in bulk})[:tasks]
        selected = {"all": False, "included": ids}
        query = json.dumps({"filters": {"conjunction": "and", "items": []}, "selectedItems": selected})
        params = {"project": project_id, "page": 1, "page_size": len(ids), "review": "true", "fields": "all"}
        t0 = time.perf_counter()
        page = http.get("/api/tasks/", params={**params, "include": "id,predictions", "query": query}).json()
        per_task = (time.perf_counter() - t0) / max(1, len(page["tasks"]))
    return per_prediction, per_task


def make_changes(client, project_id: int, n: int, rng: random.Random) -> None:
    """n changes: a third annotations updated, a third added, a third deleted."""
    from judgelab.sync.sync_reads import list_task_signatures

    task_ids = sorted(list_task_signatures(client, project_id))
    targets = rng.sample(task_ids, n)
    users = {u.email: u.id for u in client.users.list()}
    for i, task_id in enumerate(targets):
        kind = i % 3
        if kind == 0:
            anns = client.annotations.list(id=task_id)
            if anns:
                client.annotations.update(id=anns[0].id, result=annotation_result("an updated summary text here", rng))
        elif kind == 1:
            client.annotations.create(
                id=task_id, result=annotation_result("an added annotation text", rng), completed_by=users[ANNOTATORS[0]]
            )
        else:
            anns = client.annotations.list(id=task_id)
            if anns:
                client.annotations.delete(id=anns[-1].id)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--changes", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--home", type=Path, help="Label Studio state folder to keep (default: temporary)")
    ap.add_argument("--url")
    ap.add_argument("--token")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="judgelab-sync-bench-"))
    home = args.home or tmp / "stack"
    started = False
    if args.url:
        url, token = args.url.rstrip("/"), args.token
    else:
        settings = StackSettings(home=home, ls_port=free_port(), backend_port=free_port())
        creds = load_credentials(home)
        t0 = time.perf_counter()
        start_label_studio(settings, creds)
        started = True
        print(f"Label Studio up in {time.perf_counter() - t0:.0f} s")
        url, token = settings.ls_url, creds.token
    try:
        client = connect(Connection(url=url, token=token))
        project_id = populate(client, args.tasks)
        start_cost = python_start()
        print(f"CLI start (imports, no Label Studio call): {start_cost:.2f} s")

        # Each full sync sits between two quick exports (E S E S ... S E) and is compared with
        # their mean: the host's speed drifts (a fixed CPU loop here runs 0.27-0.52 s within a
        # minute), and bracketing cancels a drift that is linear over a round.
        exports, snapshots, fulls, rss, quick = [], [], [], [], []
        size = 0
        seconds, size = ls_export(url, token, project_id, tmp / "export.json")
        exports.append(seconds)
        for r in range(args.repeats):
            out = tmp / f"full{r}"
            seconds, peak, line = run_sync(url, token, project_id, out, full=True)
            fulls.append(seconds)
            rss.append(peak)
            after, size = ls_export(url, token, project_id, tmp / "export.json")
            exports.append(after)
            quick.append(seconds / ((exports[-2] + after) / 2))
            snapshots.append(ls_snapshot_export(url, token, project_id, tmp / "snapshot.json"))
            print(
                f"round {r + 1}: LS quick export {exports[-2]:.1f} s, full sync {seconds:.1f} s "
                f"(peak RSS {peak:.0f} MiB), LS quick export {after:.1f} s ({size / 2**20:.0f} MiB): "
                f"{quick[-1]:.2f}x; LS snapshot export with predictions {snapshots[-1]:.1f} s\n    {line}"
            )
        snap = [f / e for f, e in zip(fulls, snapshots, strict=True)]
        q1, _, q3 = quantiles(quick, n=4) if len(quick) > 1 else (quick[0], None, quick[0])
        print(
            f"\nfull sync / LS quick JSON export (/export?download_all_tasks=true, mean of the exports "
            f"before and after): median {median(quick):.2f}x, quartiles {q1:.2f}-{q3:.2f} "
            f"(rounds: {', '.join(f'{x:.2f}' for x in quick)}); target <= 1.2x"
        )
        print(
            f"full sync / LS snapshot export incl. prediction bodies (the next export): median {median(snap):.2f}x "
            f"(rounds: {', '.join(f'{x:.2f}' for x in snap)})"
        )
        print(f"peak RSS of the sync process: {max(rss):.0f} MiB (quick export body {size / 2**20:.0f} MiB)")
        from judgelab.sync.sync_reads import PREDICTIONS_PER_LISTED_TASK

        costs = [prediction_read_costs(url, token, project_id) for _ in range(3)]
        per_prediction, per_task = median(c[0] for c in costs), median(c[1] for c in costs)
        print(
            f"prediction bodies: {per_prediction * 1000:.2f} ms per prediction in the project-wide read, "
            f"{per_task * 1000:.2f} ms per task in a Data Manager page of 500: a listed task costs "
            f"{per_task / per_prediction:.1f} predictions (judgelab assumes {PREDICTIONS_PER_LISTED_TASK})"
        )

        out = tmp / "full0"
        # a new seed each run: a rerun on a kept project must not repeat (and so undo nothing of) the
        # previous run's edits, which Label Studio would rightly treat as no change
        seed = int(time.time())
        rng = random.Random(seed)
        print(f"\nchanges seeded with {seed}")
        print("\nincremental syncs on the synced folder:")
        inc = {}
        for changes in (0, args.changes, 10 * args.changes):
            if changes:
                t0 = time.perf_counter()
                make_changes(client, project_id, changes, rng)
                made = time.perf_counter() - t0
            else:
                made = 0.0
            seconds, peak, line = run_sync(url, token, project_id, out, full=False)
            inc[changes] = seconds
            print(
                f"  after {changes:5d} changes ({made:5.1f} s to make): {seconds:6.1f} s, "
                f"peak RSS {peak:.0f} MiB\n    {line}"
            )
        base = inc[0]
        for changes in (args.changes, 10 * args.changes):
            print(
                f"  {changes} changes: {inc[changes]:.1f} s = {inc[changes] / median(fulls):.3f}x a full sync; "
                f"above the 0-change run: {inc[changes] - base:.1f} s"
            )
        per_change = [(inc[c] - base) / c for c in (args.changes, 10 * args.changes)]
        print(f"  marginal cost per change: {per_change[0] * 1000:.1f} ms vs {per_change[1] * 1000:.1f} ms")

        fresh = tmp / "fresh"
        run_sync(url, token, project_id, fresh, full=True)
        same = all(
            (out / f"{n}.parquet").read_bytes() == (fresh / f"{n}.parquet").read_bytes() or _same_frame(out, fresh, n)
            for n in ("tasks", "judgments", "spans", "predictions")
        )
        print(f"\nincremental tables == fresh full sync: {same}")
        if not same:
            raise SystemExit(1)
    finally:
        if started:
            stop_stack(home)


def _same_frame(a: Path, b: Path, name: str) -> bool:
    import pandas as pd

    fa, fb = pd.read_parquet(a / f"{name}.parquet").astype(str), pd.read_parquet(b / f"{name}.parquet").astype(str)
    if sorted(fa.columns) != sorted(fb.columns) or len(fa) != len(fb):
        return False
    cols = sorted(fa.columns)
    fa = fa[cols].sort_values(cols).reset_index(drop=True)
    fb = fb[cols].sort_values(cols).reset_index(drop=True)
    return fa.equals(fb)


if __name__ == "__main__":
    main()
