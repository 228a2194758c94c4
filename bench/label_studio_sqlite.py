"""Label Studio on SQLite through judgelab's launcher, its database in write-ahead-log mode, against
the same launcher leaving SQLite's rollback journal (its default), in one run.

One migrated state folder (a first start of Label Studio, a minute or two) is copied for every
round; each round starts Label Studio on its copy, once as ``judgelab up`` starts it and once with
the launcher's SQLite step left out (the copy's journal set back to ``delete`` first), in
alternating order, and times through the REST API what annotators and judgelab do most: an
annotation saved (``POST /api/tasks/{id}/annotations/``), predictions imported (requests of 300),
a task read, a ``whoami``, and a task read while another client imports predictions. Prints the
time per request of each and the ratio of the two modes.

    python bench/label_studio_sqlite.py --rounds 2
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from contextlib import closing
from pathlib import Path

import httpx

from judgelab.sync.http_retry import tls_context
from judgelab.sync.local_stack import (
    StackSettings,
    free_port,
    label_studio_command,
    load_credentials,
    spawn_label_studio,
    start_label_studio,
    stop_stack,
    wait_label_studio,
)

CONFIG = (
    '<View><Text name="text" value="$text"/>'
    '<Choices name="verdict" toName="text"><Choice value="ok"/><Choice value="flawed"/></Choices></View>'
)
CHOICE = {"from_name": "verdict", "to_name": "text", "type": "choices", "value": {"choices": ["ok"]}}
# the launcher as `judgelab up` runs it, but for its SQLite step
WITHOUT_WAL = (
    "import judgelab.sync.label_studio_server as launcher\n"
    "launcher._sqlite_write_ahead_log = lambda: None\n"
    "launcher.main()\n"
)


def migrated(folder: Path) -> Path:
    """A state folder whose database is migrated (Label Studio started once on it and stopped)."""
    settings = StackSettings(home=folder, ls_port=free_port(), backend_port=free_port())
    start_label_studio(settings, load_credentials(folder))
    stop_stack(folder)
    return folder


def started(template: Path, wal: bool) -> tuple[StackSettings, str]:
    """Label Studio on a copy of ``template``, through the launcher with or without its SQLite step."""
    home = Path(tempfile.mkdtemp(prefix="ls-sqlite-"))
    shutil.copytree(template, home, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.pid", "*.log"))
    with closing(sqlite3.connect(home / "label-studio" / "label_studio.sqlite3")) as db:
        db.execute("PRAGMA journal_mode=DELETE")  # the template's own mode is the launcher's
    settings = StackSettings(home=home, ls_port=free_port(), backend_port=free_port())
    creds = load_credentials(home)
    command = label_studio_command() if wal else [sys.executable, "-c", WITHOUT_WAL]
    proc = spawn_label_studio(settings, creds, command)
    wait_label_studio(settings, proc)
    return settings, creds.token


def _client(settings: StackSettings, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=settings.ls_url, headers={"Authorization": f"Token {token}"}, timeout=600, verify=tls_context()
    )


def timed(settings: StackSettings, token: str, n: int) -> dict[str, float]:
    """Milliseconds per request of each kind, on a new project of ``n`` tasks."""
    with _client(settings, token) as http:
        project = http.post("/api/projects/", json={"title": "SQLite bench", "label_config": CONFIG}).json()["id"]
        http.post(f"/api/projects/{project}/import", json=[{"text": f"task {i}"} for i in range(n)]).raise_for_status()
        listing = http.get("/api/tasks/", params={"project": project, "page_size": n, "include": "id", "fields": "all"})
        ids = [task["id"] for task in listing.json()["tasks"]]
        out = {}
        started_at = time.perf_counter()
        for task in ids:
            http.post(f"/api/tasks/{task}/annotations/", json={"result": [CHOICE]}).raise_for_status()
        out["annotation saved"] = (time.perf_counter() - started_at) / len(ids)
        rounds = 10
        started_at = time.perf_counter()
        for version in range(rounds):
            body = [{"task": task, "model_version": f"v{version}", "result": [CHOICE]} for task in ids[:300]]
            http.post(f"/api/projects/{project}/import/predictions", json=body).raise_for_status()
        out["300 predictions imported"] = (time.perf_counter() - started_at) / rounds
        started_at = time.perf_counter()
        for task in ids:
            http.get(f"/api/tasks/{task}").raise_for_status()
        out["task read"] = (time.perf_counter() - started_at) / len(ids)
        started_at = time.perf_counter()
        for _ in range(len(ids)):
            http.get("/api/current-user/whoami").raise_for_status()
        out["whoami"] = (time.perf_counter() - started_at) / len(ids)
        out["task read beside imports"] = _read_beside_imports(settings, token, project, ids)
    return {kind: seconds * 1000 for kind, seconds in out.items()}


def _read_beside_imports(settings: StackSettings, token: str, project: int, ids: list[int]) -> float:
    """Seconds per task read while another client imports predictions into the same project, one
    request after another (a sync or an annotator's page while a pre-annotation writes)."""
    stop = threading.Event()

    def importing() -> None:
        with _client(settings, token) as writer:
            version = 0
            while not stop.is_set():
                body = [{"task": task, "model_version": f"w{version}", "result": [CHOICE]} for task in ids[:300]]
                writer.post(f"/api/projects/{project}/import/predictions", json=body).raise_for_status()
                version += 1

    writer = threading.Thread(target=importing)
    writer.start()
    try:
        with _client(settings, token) as reader:
            started_at = time.perf_counter()
            for task in ids:
                reader.get(f"/api/tasks/{task}").raise_for_status()
            return (time.perf_counter() - started_at) / len(ids)
    finally:
        stop.set()
        writer.join()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2, help="pairs of runs, the order alternating (default 2)")
    ap.add_argument("--tasks", type=int, default=200, help="tasks annotated and read per run (default 200)")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ls-sqlite-bench-"))
    try:
        t0 = time.perf_counter()
        template = migrated(root / "template")
        print(f"Label Studio's database migrated in {time.perf_counter() - t0:.0f} s")
        runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
        for round_ in range(args.rounds):
            for wal in (True, False) if round_ % 2 == 0 else (False, True):
                settings, token = started(template, wal)
                try:
                    runs[wal].append(timed(settings, token, args.tasks))
                finally:
                    stop_stack(settings.home)
                    shutil.rmtree(settings.home, ignore_errors=True)
                shown = ", ".join(f"{kind} {ms:.1f} ms" for kind, ms in runs[wal][-1].items())
                print(f"  round {round_ + 1}, {'write-ahead log' if wal else 'rollback journal'}: {shown}")
        print("\n| request | rollback journal, ms | write-ahead log, ms | ratio |\n|---|---|---|---|")
        for kind in runs[True][0]:
            before = statistics.median(run[kind] for run in runs[False])
            after = statistics.median(run[kind] for run in runs[True])
            print(f"| {kind} | {before:.1f} | {after:.1f} | {after / before:.2f}x |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
