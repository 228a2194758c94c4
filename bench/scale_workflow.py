"""The whole judgelab workflow at 10,000, 30,000 and 100,000 tasks, each stage against Label
Studio's own API doing the same work in the same run.

One Label Studio (on a throwaway PostgreSQL server by default, ``tests/postgres_server.py``; or on
SQLite) and the judgelab backend (offline annotator) are started here. For each size N, two
hotel_spans projects get the same N tasks, each with three annotations by three annotators (a
team moving a finished round in: Label Studio's import API takes annotations only together with
their tasks, so they come in the same file). Stages, each a ``judgelab`` command in a child
process (its Python start included) and its Label Studio baseline:

- **import**: ``judgelab import tasks.jsonl`` (streamed, checked) | the same tasks' JSON, as
  judgelab sends it, POSTed to ``/api/projects/{id}/import`` in the same requests; the mean of
  one such import before judgelab's and one after (each import makes the database bigger);
- **preannotate**: ``judgelab preannotate --push`` (the backend predicts, judgelab imports each
  chunk's predictions) | the same predictions, precomputed, POSTed to
  ``/api/projects/{id}/import/predictions`` in requests of the push's (five chunks, 500
  predictions: what the push imports at once when its backend keeps ahead of Label Studio) (the
  bare bulk import: the backend's own work is not in it; the note gives that work alone, the
  push's chunks sent to the backend's ``/predict`` one after another); and **push**, the part of that run the command
  reports as Label Studio checking and importing the predictions, against the same bulk import;
- **sync**: ``judgelab sync --full`` | the JSON export (``/export?download_all_tasks=true``),
  streamed to a file; the mean of one export before and one after the sync;
- **incremental**: 1% of the tasks changed (a third annotations updated, added, deleted), then
  ``judgelab sync`` | the same JSON export (a sync of 1% should cost a fraction of it);
- **report**: ``judgelab report`` on the synced tables (no Label Studio counterpart: "-");
- **llm** (at sizes up to ``--llm-max``, 10,000): a second backend, in ``llm`` mode, against the
  simulated OpenAI-compatible server (``tests/llm_sim.py``, a process of its own) answering every
  prompt after ``--llm-latency`` (50 ms), and ``judgelab preannotate --push`` again: a second
  prediction per task, each from its own prompt (each summary ends with its own reference) | the
  same bulk prediction import as the preannotate stage's; the note gives the bound the latency
  alone sets (tasks x latency / the 8 requests the backend keeps in flight); and **llm push**,
  that run's checking and importing against the same bulk import (the backend waits on the LLM
  there, not on the CPU).

For each it prints seconds, milliseconds per task, the ratio to Label Studio, the peak RSS of
judgelab's processes (the CLI's RSS plus the memory its children hold alone, a forked child's
pages shared with its parent counted once; the backend during pre-annotation, likewise), sampled
every 0.2 s from /proc; across sizes, the per-task time's growth (largest / smallest size).
After every stage the counts are checked in Label Studio's database (tasks, annotations,
predictions: none missing, none doubled) and in the tables.

``--kill-check``: the import, the pre-annotation and the syncs are killed (``kill -9``, the
command's whole process group) at a seeded random point (when a random share, 5-95%, of the
tasks is in Label Studio / has its prediction / is in the tables; the incremental sync at a
random time within 0.25x Label Studio's export time, about the sync's own), then run again to the
end, and the same counts are checked; its time is then the killed run plus the re-run.

``--repeat K``: the push and the sync are timed K times, each beside its own baseline (the
project's and the baseline project's predictions deleted before each push again, Label Studio's
bulk import first in every other pair; each sync again into a new folder, between two exports),
and the pair of median ratio is kept, every pair's ratio in its note: one pair's ratio moves more
between runs of one revision than its distance to the targets. On PostgreSQL the database is
vacuumed (``VACUUM (ANALYZE)``) before the pre-annotation, before the sync and between two
pushes: the rows the baselines' deletions leave would otherwise be cleaned by autovacuum in the
middle of the next timing.

    python bench/scale_workflow.py --sizes 10000 --database postgres
    python bench/scale_workflow.py --sizes 10000 --stages import,preannotate,sync --repeat 3
    python bench/scale_workflow.py --sizes 10000,30000,100000 --kill-check

Measured on PostgreSQL (a throwaway server, fsync off), 2 shared cores, ``--sizes 10000,30000``
(revision 68b22d9; earlier runs and what changed between them: docs/benchmarks.md):

| stage | tasks | judgelab s | ms per task | Label Studio s | ratio | peak RSS judgelab MiB |
|---|---|---|---|---|---|---|
| import | 10,000 | 14.9 | 1.49 | 13.1 | 1.14x | 81 |
| preannotate | 10,000 | 19.2 | 1.92 | 5.9 | 3.23x | 81 + backend 127 |
| push | 10,000 | 7.0 | 0.70 | 5.9 | 1.19x | 81 |
| sync | 10,000 | 20.7 | 2.07 | 15.7 | 1.32x | 241 |
| incremental | 10,000 | 6.6 | 0.66 | 15.9 | 0.41x | 229 |
| report | 10,000 | 4.8 | 0.48 | - | - | 385 |
| llm | 10,000 | 78.0 | 7.80 | 5.9 | 13.16x | 79 + backend 135 |
| llm push | 10,000 | 7.4 | 0.74 | 5.9 | 1.24x | 79 |
| import | 30,000 | 44.1 | 1.47 | 41.1 | 1.07x | 93 |
| preannotate | 30,000 | 51.4 | 1.71 | 17.1 | 3.01x | 84 + backend 132 |
| push | 30,000 | 23.0 | 0.77 | 17.1 | 1.35x | 84 |
| sync | 30,000 | 59.8 | 1.99 | 50.0 | 1.20x | 290 |
| incremental | 30,000 | 17.7 | 0.59 | 51.5 | 0.34x | 255 |
| report | 30,000 | 9.6 | 0.32 | - | - | 649 |

per-task time growth 30,000 / 10,000: import 0.99x, preannotate 0.89x, push 1.09x, sync 0.96x,
incremental 0.90x, report 0.67x. The push at 10,000 tasks in three runs of that day: 1.18-1.27x.
The 100,000 runs with the kill check and what they changed:
docs/benchmarks.md, "100,000 tasks, each command killed and resumed".
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "editable"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from judgelab.configs.schema import get_schema  # noqa: E402
from judgelab.sync.bulk_predict import chunks_per_group  # noqa: E402
from judgelab.sync.client import Connection, connect  # noqa: E402
from judgelab.sync.http_retry import tls_context  # noqa: E402
from judgelab.sync.importers import rows_from_records  # noqa: E402
from judgelab.sync.importers.annotations import ensure_annotators  # noqa: E402
from judgelab.sync.importers.rows import KEY_FIELD  # noqa: E402
from judgelab.sync.local_stack import (  # noqa: E402
    StackSettings,
    free_port,
    load_credentials,
    start_backend,
    start_label_studio,
    stop_stack,
)
from judgelab.sync.projects import ensure_project, import_batches, import_body, import_lines  # noqa: E402

SCHEMA = "hotel_spans"
ANNOTATORS = ["rater.a@judgelab.local", "rater.b@judgelab.local", "rater.c@judgelab.local"]
CHUNK = 100  # judgelab preannotate's default --chunk-size
# the baseline's prediction requests: as many as a push imports in one request when its backend
# keeps ahead of Label Studio (a group of chunks read together, checked and imported together)
IMPORT_REQUEST = chunks_per_group(CHUNK) * CHUNK
INCREMENTAL_SHARE = 0.25  # within the incremental sync's time (0.34-0.45x the export's) for its kill point
STAGES = ("import", "preannotate", "sync", "incremental", "report", "llm")
LLM_MODEL = "sim-judge"
# the simulated LLM's answer for every prompt: one error span on the "ref" each summary ends with
LLM_ANSWER = json.dumps({"annotations": [{"reason": "not in the descriptions", "text": "ref", "annotation_type": 0}]})
SAMPLE_EVERY = 0.2


# --- data -------------------------------------------------------------------------------------


def write_files(folder: Path, n: int, seed: int) -> tuple[Path, Path]:
    """``tasks.jsonl`` (what the user imports: data + three annotations per line) and
    ``requests.jsonl`` (the JSON judgelab's import sends, one request body per line), written as
    they are made (100,000 tasks are never held)."""
    from sync_scale import annotation_result

    schema = get_schema(SCHEMA)
    samples = [s["data"] if "data" in s else s for s in schema.samples()]
    rng = random.Random(seed)
    tasks, requests = folder / "tasks.jsonl", folder / "requests.jsonl"

    def rows():
        for start in range(0, n, 1000):
            records = []
            for i in range(start, min(n, start + 1000)):
                data = dict(samples[i % len(samples)])
                data["id"] = f"scale-{n}-{i:06d}"
                # each summary its own (an LLM prompt per task, not one per sample from the cache)
                data["summary"] = f"{data['summary']} (ref R{i:06d})"
                data["group"] = "A"
                annotations = [
                    {
                        "completed_by": {"email": email},
                        "result": annotation_result(data["summary"], rng),
                        "lead_time": round(10 + rng.random() * 50, 2),
                    }
                    for email in ANNOTATORS
                ]
                records.append((f"{tasks.name}:{i + 1}", {"data": data, "annotations": annotations}))
            yield from rows_from_records(records, schema)

    with tasks.open("w") as out_tasks, requests.open("w") as out_requests:
        for batch, _, _ in import_batches(import_lines(_written(rows(), out_tasks)), set()):
            out_requests.write(import_body(batch).decode("utf-8") + "\n")
    return tasks, requests


def _written(rows, out):
    for row in rows:
        out.write(json.dumps({"data": row.data, "annotations": row.annotations}, ensure_ascii=False) + "\n")
        yield row


# --- Label Studio's database: the counts ----------------------------------------------------


class Database:
    """Counts straight from Label Studio's database (PostgreSQL or SQLite), read only; :meth:`settle`
    vacuums it between two timings."""

    def __init__(self, settings: StackSettings) -> None:
        self.settings = settings

    def _postgres(self, autocommit: bool = False):
        import psycopg

        db = self.settings.database
        return psycopg.connect(
            host=db.host, port=db.port, user=db.user, password=db.password, dbname=db.name, autocommit=autocommit
        )

    def _rows(self, sql: str, args: tuple) -> list[tuple]:
        if self.settings.database is None:
            path = self.settings.home / "label-studio" / "label_studio.sqlite3"
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60) as conn:
                return conn.execute(sql.replace("%s", "?"), args).fetchall()
        with self._postgres() as conn:
            return conn.execute(sql, args).fetchall()

    def settle(self) -> None:
        """PostgreSQL's tables vacuumed and analysed now, so that the dead rows a deletion left (the
        import's baseline projects, the predictions deleted between two pushes) are not cleaned by
        autovacuum in the middle of the next timing (it starts once a fifth of a table changed,
        beside whichever command runs then)."""
        if self.settings.database is None:
            return
        with self._postgres(autocommit=True) as conn:  # VACUUM runs outside a transaction
            conn.execute("VACUUM (ANALYZE)")

    def key_expr(self) -> str:
        if self.settings.database is None:
            return f"json_extract(t.meta, '$.{KEY_FIELD}')"
        return f"(t.meta::jsonb)->>'{KEY_FIELD}'"

    def counts(self, project: int) -> dict[str, int]:
        key = self.key_expr()
        ((tasks, keys),) = self._rows(
            f"SELECT count(*), count(DISTINCT {key}) FROM task t WHERE t.project_id = %s", (project,)
        )
        ((annotations,),) = self._rows(
            "SELECT count(*) FROM task_completion a JOIN task t ON a.task_id = t.id WHERE t.project_id = %s", (project,)
        )
        ((doubled,),) = self._rows(
            "SELECT count(*) FROM (SELECT a.task_id, a.completed_by_id, count(*) c FROM task_completion a "
            "JOIN task t ON a.task_id = t.id WHERE t.project_id = %s "
            "GROUP BY a.task_id, a.completed_by_id HAVING count(*) > 1) d",
            (project,),
        )
        ((predictions, predicted, versions),) = self._rows(
            "SELECT count(*), count(DISTINCT p.task_id), count(DISTINCT p.model_version) FROM prediction p "
            "JOIN task t ON p.task_id = t.id WHERE t.project_id = %s",
            (project,),
        )
        return {
            "tasks": tasks,
            "keys": keys,
            "annotations": annotations,
            "annotator_doubles": doubled,
            "predictions": predictions,
            "predicted_tasks": predicted,
            "versions": versions,
        }

    def predictions_by_key(self, project: int) -> dict[str, dict]:
        key = self.key_expr()
        out = {}
        for k, result, score, version in self._rows(
            f"SELECT {key}, p.result, p.score, p.model_version FROM prediction p JOIN task t ON p.task_id = t.id "
            "WHERE t.project_id = %s",
            (project,),
        ):
            out[k] = {
                "result": json.loads(result) if isinstance(result, str) else result,
                "score": score,
                "model_version": version,
            }
        return out

    def titled_tasks(self, title: str) -> int:
        ((count,),) = self._rows(
            "SELECT count(*) FROM task t JOIN project p ON t.project_id = p.id WHERE p.title = %s", (title,)
        )
        return count

    def task_ids_by_key(self, project: int) -> dict[str, int]:
        key = self.key_expr()
        return {k: i for k, i in self._rows(f"SELECT {key}, t.id FROM task t WHERE t.project_id = %s", (project,))}


def synced_tasks(out: Path) -> int:
    """Tasks the sync in progress has committed (its state table)."""
    with sqlite3.connect(f"file:{out / 'judgelab.sqlite'}?mode=ro", uri=True, timeout=1) as conn:
        return conn.execute("SELECT count(*) FROM sync_tasks").fetchone()[0]


def table_counts(out: Path) -> dict[str, int]:
    """Rows of the tidy tables (and tasks counted twice) in the sync's SQLite file."""
    with sqlite3.connect(out / "judgelab.sqlite") as conn:
        counts = {
            t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("tasks", "judgments", "predictions")
        }
        counts["task_doubles"] = conn.execute(
            "SELECT count(*) FROM (SELECT project, task_id FROM tasks GROUP BY project, task_id HAVING count(*) > 1)"
        ).fetchone()[0]
        counts["annotations"] = conn.execute(
            "SELECT count(*) FROM (SELECT DISTINCT project, task_id, annotation_id FROM judgments "
            "WHERE source = 'human')"
        ).fetchone()[0]
    return counts


# --- processes and their memory ---------------------------------------------------------------


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _private_kb(pid: int) -> int:
    """The memory only ``pid`` holds (its pages shared with no other process): what a child forked
    from a process adds to it (its RSS counts every page it shares with its parent again)."""
    try:
        lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    except OSError:
        return _rss_kb(pid)
    return sum(int(line.split()[1]) for line in lines if line.startswith(("Private_Clean:", "Private_Dirty:")))


def _tree_kb(pid: int) -> int:
    """The RSS of ``pid`` plus the memory its descendants add (:func:`_private_kb`)."""
    return _rss_kb(pid) + sum(_private_kb(child) for child in _descendants(pid)[1:])


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*") if Path(f"/proc/{p}/task").exists() else []:
            with suppress(OSError):
                todo += [int(c) for c in (task / "children").read_text().split()]
    return out


class Sampler:
    """Peak RSS (MiB) of a process tree (the CLI and what its children add: :func:`_tree_kb`) and
    of the backend's tree."""

    def __init__(self, pid: int, backend_pid: int | None) -> None:
        self.pid, self.backend_pid = pid, backend_pid
        self.cli = self.backend = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.cli = max(self.cli, _tree_kb(self.pid) / 1024)
            if self.backend_pid:
                self.backend = max(self.backend, _tree_kb(self.backend_pid) / 1024)
            self._stop.wait(SAMPLE_EVERY)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Run:
    seconds: float
    cli_mb: float
    backend_mb: float = 0.0
    killed_at: float | None = None
    output: str = ""
    missed_kill: bool = False  # under --kill-check: the run ended before its kill point


@dataclass
class Bench:
    settings: StackSettings
    token: str
    db: Database
    kill_check: bool
    rng: random.Random
    tmp: Path
    backend_pid: int | None = None
    llm_latency: float = 0.05
    llm_max: int = 10_000
    repeat: int = 1  # paired runs of the push and the sync (each with its baseline), the median kept
    ls_push: dict[int, float] = field(default_factory=dict)  # size -> Label Studio's bulk prediction import, s
    rows: list[dict] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.settings.ls_url

    def cli(self, *args: str, kill_when=None, backend_pid: int | None = None) -> Run:
        """``judgelab ARGS`` in a child process, its RSS sampled; with ``kill_when`` (a function
        polled every 0.1 s: true once the run has done the chosen share of its work, or a number of
        seconds), killed (SIGKILL, the whole process group) then and run again to the end.
        ``backend_pid``: a backend whose RSS is sampled too."""
        env = {
            **os.environ,
            "JUDGELAB_LS_URL": self.url,
            "JUDGELAB_LS_TOKEN": self.token,
            "PYTHONPATH": str(ROOT / "scripts" / "editable"),
        }
        cmd = [sys.executable, "-m", "judgelab.sync.cli", *args]
        total, peak, backend_peak, killed_at, missed = 0.0, 0.0, 0.0, None, False
        for attempt in ("killed", "full") if kill_when is not None else ("full",):
            t0 = time.perf_counter()
            out_path, err_path = self.tmp / "cli.out", self.tmp / "cli.err"
            with out_path.open("w") as out, err_path.open("w") as err:  # files: a pipe left unread blocks it
                proc = subprocess.Popen(cmd, cwd=self.tmp, env=env, stdout=out, stderr=err, start_new_session=True)
            sampler = Sampler(proc.pid, backend_pid)
            if attempt == "killed":
                due = kill_when
                if isinstance(kill_when, float):
                    due = functools.partial(_past, t0 + kill_when)
                while proc.poll() is None:
                    with suppress(Exception):  # a table or a project not there yet
                        if due():
                            os.killpg(proc.pid, signal.SIGKILL)
                            killed_at = time.perf_counter() - t0
                            break
                    time.sleep(0.1)
            proc.wait()
            sampler.stop()
            stdout, stderr = out_path.read_text(), err_path.read_text()
            total += time.perf_counter() - t0
            peak, backend_peak = max(peak, sampler.cli), max(backend_peak, sampler.backend)
            if attempt == "full" and proc.returncode != 0:
                raise SystemExit(f"judgelab {' '.join(args)} failed ({proc.returncode}):\n{stdout}\n{stderr[-3000:]}")
            if attempt == "killed" and killed_at is None:
                if proc.returncode != 0:
                    raise SystemExit(f"judgelab {' '.join(args)} failed:\n{stdout}\n{stderr[-3000:]}")
                missed = True
                break
        return Run(total, peak, backend_peak, killed_at, stdout.strip(), missed)

    def kill_point(self, seconds: float) -> float | None:
        """A seeded random time within ``seconds``."""
        return seconds * self.rng.uniform(0.05, 0.95) if self.kill_check else None

    def kill_at_share(self, done) -> object | None:
        """A check that the work done (``done()``, a share in 0..1) passed a seeded random share."""
        if not self.kill_check:
            return None
        share = self.rng.uniform(0.05, 0.95)
        return lambda: done() >= share

    def http(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Token {self.token}"}, timeout=3600, verify=tls_context()
        )

    def export(self, project: int) -> float:
        t0 = time.perf_counter()
        params = {"exportType": "JSON", "download_all_tasks": "true"}
        with self.http() as http, http.stream("GET", f"/api/projects/{project}/export", params=params) as r:
            r.raise_for_status()
            with open(self.tmp / "export.json", "wb") as fh:
                for chunk in r.iter_bytes(1 << 20):
                    fh.write(chunk)
        return time.perf_counter() - t0

    def record(self, stage: str, n: int, run: Run, baseline: float | None, note: str = "") -> None:
        row = {
            "stage": stage,
            "n": n,
            "s": run.seconds,
            "ls_s": baseline,
            "cli_mb": run.cli_mb,
            "backend_mb": run.backend_mb,
            "killed_at": run.killed_at,
            "missed_kill": run.missed_kill,
            "note": note,
        }
        self.rows.append(row)
        ratio = f"{run.seconds / baseline:.2f}x" if baseline else "-"
        kill = f", killed at {run.killed_at:.1f} s and re-run" if run.killed_at else ""
        if run.missed_kill:
            kill = ", NOT killed: it ended before its kill point"
        backend = f", backend {run.backend_mb:.0f} MiB" if run.backend_mb else ""
        ls = f"{baseline:.1f} s" if baseline else "-"
        print(
            f"  {stage:12} {run.seconds:7.1f} s {1000 * run.seconds / n:7.2f} ms/task | LS {ls} | {ratio} | "
            f"peak RSS CLI {run.cli_mb:.0f} MiB{backend}{kill} {note}",
            flush=True,
        )


def _past(moment: float) -> bool:
    return time.perf_counter() >= moment


def check(what: str, got: dict, want: dict) -> None:
    wrong = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
    if wrong:
        raise SystemExit(f"{what}: counts wrong (got, wanted): {wrong}; all: {got}")
    print(f"    checked {what}: {', '.join(f'{k} {got[k]}' for k in want)}", flush=True)


def median_pair(pairs: list[tuple[Run, float]]) -> tuple[Run, float, str]:
    """Of paired runs (judgelab's run, its baseline measured beside it), the pair whose ratio is the
    median (the higher one of an even count: the count never flatters judgelab), and a note giving
    every pair's ratio."""
    ranked = sorted(pairs, key=lambda pair: pair[0].seconds / pair[1])
    run, baseline = ranked[len(ranked) // 2]
    if len(pairs) == 1:
        return run, baseline, ""
    ratios = ", ".join(f"{r.seconds / b:.2f}x" for r, b in pairs)
    return run, baseline, f"(the median of {len(pairs)} paired runs, in run order {ratios})"


def delete_predictions(bench: Bench, project: int) -> None:
    """Every prediction of ``project`` deleted (the Data Manager's action), so that a push can be
    timed again on the same tasks."""
    with bench.http() as http:
        http.post(
            "/api/dm/actions",
            params={"id": "delete_tasks_predictions", "project": project},
            json={"selectedItems": {"all": True, "excluded": []}},
        ).raise_for_status()
    check("predictions deleted", bench.db.counts(project), {"predictions": 0})


# --- the stages -------------------------------------------------------------------------------


def run_size(bench: Bench, client, n: int, stages: list[str], seed: int) -> None:
    folder = bench.tmp / f"n{n}"
    folder.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    tasks_file, requests_file = write_files(folder, n, seed)
    print(
        f"\n{n} tasks: files written in {time.perf_counter() - t0:.0f} s ({tasks_file.stat().st_size / 2**20:.0f} MiB)",
        flush=True,
    )
    schema = get_schema(SCHEMA)
    stamp = f"{n} {int(time.time())}"
    base = ensure_project(client, schema, title=f"scale LS {stamp}").id
    title = f"scale judgelab {stamp}"
    ensure_annotators(client, ANNOTATORS)
    want_tasks = {"tasks": n, "keys": n, "annotations": 3 * n, "annotator_doubles": 0}

    # import: Label Studio's import of the same requests before judgelab's and after it (each
    # import makes the database bigger, and the first into an empty one is the quickest: 12.2 s
    # against 12.9-13.1 s for the next ones at 10,000 tasks), the two averaged, as the syncs' exports
    ls_before = ls_import_of(bench, requests_file, base)
    check("LS import", bench.db.counts(base), want_tasks)
    run = bench.cli(
        "import",
        "--schema",
        SCHEMA,
        "--title",
        title,
        str(tasks_file),
        kill_when=bench.kill_at_share(lambda: bench.db.titled_tasks(title) / n),
    )
    project = next(p.id for p in client.projects.list(include="id,title") if p.title == title)
    after = ensure_project(client, schema, title=f"scale LS after {stamp}").id
    ls_after = ls_import_of(bench, requests_file, after)
    check("LS import after", bench.db.counts(after), want_tasks)
    client.projects.delete(id=after)
    note = f"(Label Studio's import before judgelab's {ls_before:.1f} s, after it {ls_after:.1f} s)"
    bench.record("import", n, run, (ls_before + ls_after) / 2, note)
    check("judgelab import", bench.db.counts(project), want_tasks)

    out = folder / "tables"
    if "preannotate" in stages:
        # the baseline needs the predictions: judgelab runs first, its predictions go to LS's bulk import
        bench.db.settle()  # the import's two baseline projects were just deleted
        run = pushed(bench, project, n, bench.settings.backend_url, bench.backend_pid)
        got = bench.db.counts(project)
        check("judgelab preannotate", got, {"predictions": n, "predicted_tasks": n, "versions": 1})
        predictions = bench.db.predictions_by_key(project)
        ids = bench.db.task_ids_by_key(base)
        bodies = []
        keys = sorted(ids)
        for start in range(0, n, IMPORT_REQUEST):
            bodies.append(
                json.dumps([{"task": ids[k], **predictions[k]} for k in keys[start : start + IMPORT_REQUEST]])
            )
        del predictions

        def bulk_import() -> float:
            t0 = time.perf_counter()
            with bench.http() as http:
                for body in bodies:
                    http.post(
                        f"/api/projects/{base}/import/predictions",
                        content=body.encode(),
                        headers={"Content-Type": "application/json"},
                    ).raise_for_status()
            seconds = time.perf_counter() - t0
            check("LS prediction import", bench.db.counts(base), {"predictions": n, "predicted_tasks": n})
            return seconds

        ls_push = bench.ls_push[n] = bulk_import()
        alone = backend_alone(bench, client, project, n)
        bench.record("preannotate", n, run, ls_push, f"(backend predicting included; the backend alone: {alone:.1f} s)")
        took = push_seconds(run.output)
        if took and not run.killed_at:  # a killed run's re-run imports only the rest
            pairs = [(Run(took["importing"], run.cli_mb), ls_push)]
            for again in range(1, bench.repeat):  # both projects' predictions deleted, both pushes again
                delete_predictions(bench, project)
                delete_predictions(bench, base)
                bench.db.settle()
                ls_first = again % 2 == 1  # Label Studio's import first in every other pair
                if ls_first:
                    ls_again = bulk_import()
                rerun = pushed(bench, project, n, bench.settings.backend_url, bench.backend_pid)
                check("judgelab preannotate again", bench.db.counts(project), {"predictions": n, "versions": 1})
                if not ls_first:
                    ls_again = bulk_import()
                again_took = push_seconds(rerun.output)
                pairs.append((Run(again_took["importing"], rerun.cli_mb), ls_again))
            push_run, push_ls, paired = median_pair(pairs)
            bench.record(
                "push",
                n,
                push_run,
                push_ls,
                f"(judgelab checking and importing the predictions, as the CLI reports it; reading "
                f"{took['reading']:.1f} s and predicting {took['predicting']:.1f} s ran alongside) {paired}".rstrip(),
            )
        del bodies

    if "sync" in stages:
        bench.db.settle()
        before = bench.export(project)
        run = bench.cli(
            "sync",
            "--full",
            "--out",
            str(out),
            "--project",
            str(project),
            kill_when=bench.kill_at_share(lambda: synced_tasks(out) / n),
        )
        after = bench.export(project)
        got, there = table_counts(out), bench.db.counts(project)
        check(
            "sync tables",
            got,
            {"tasks": n, "task_doubles": 0, "annotations": there["annotations"], "predictions": there["predictions"]},
        )
        pairs = [(run, (before + after) / 2)]
        for again in range(1, bench.repeat):  # a full sync into a new folder, between two exports
            again_out = folder / f"tables-again-{again}"
            before = bench.export(project)
            rerun = bench.cli("sync", "--full", "--out", str(again_out), "--project", str(project))
            after = bench.export(project)
            check("sync tables again", table_counts(again_out), got)
            pairs.append((rerun, (before + after) / 2))
        sync_run, sync_ls, paired = median_pair(pairs)
        bench.record("sync", n, sync_run, sync_ls, paired)

    if "incremental" in stages and (out / "judgelab.sqlite").exists():
        changes = max(3, n // 100)
        t0 = time.perf_counter()
        make_changes(client, project, changes, random.Random(seed + n))
        print(f"    {changes} changes made in {time.perf_counter() - t0:.0f} s", flush=True)
        export = bench.export(project)
        # killed within the time it takes (0.34-0.45x the export's): drawn within the export's whole
        # time, or within 0.4x of it, the kill fell after the sync had ended at 100,000 tasks (83.6 s
        # against 203.6 s; 56.9 s against 0.4 x 166.3 s)
        kill = bench.kill_point(export * INCREMENTAL_SHARE)
        run = bench.cli("sync", "--out", str(out), "--project", str(project), kill_when=kill)
        bench.record("incremental", n, run, export, f"({changes} changed tasks)")
        got, there = table_counts(out), bench.db.counts(project)
        check(
            "incremental tables",
            got,
            {"tasks": n, "task_doubles": 0, "annotations": there["annotations"], "predictions": there["predictions"]},
        )

    if "report" in stages and (out / "judgelab.sqlite").exists():
        run = bench.cli("report", "--tables", str(out), "--out", str(folder / "report"), "--n-boot", "200")
        bench.record("report", n, run, None)
        html = list((folder / "report").rglob("*.html"))
        if not html:
            raise SystemExit("report: no HTML written")
    if "llm" in stages and n <= bench.llm_max:
        llm_stage(bench, project, n)
    if not bench.kill_check:
        client.projects.delete(id=base)


def ls_import_of(bench: Bench, requests_file: Path, project: int) -> float:
    """Seconds Label Studio's import API takes for the requests judgelab's import sends, one after
    another into ``project``."""
    t0 = time.perf_counter()
    with bench.http() as http, requests_file.open() as lines:
        for line in lines:
            http.post(
                f"/api/projects/{project}/import",
                params={"return_task_ids": "true"},
                content=line.encode(),
                headers={"Content-Type": "application/json"},
            ).raise_for_status()
    return time.perf_counter() - t0


def push_seconds(output: str) -> dict[str, float] | None:
    """The time ``preannotate --push --json`` says it spent reading, predicting and importing."""
    (project,) = json.loads(output)["projects"]
    return project.get("seconds")


def backend_alone(bench: Bench, client, project: int, n: int) -> float:
    """Seconds the backend takes to predict the project's ``n`` tasks, sent to its ``/predict`` in
    chunks of the push's size one after another, as ``preannotate --push`` sends them (their data
    read from Label Studio beforehand, outside the timing): the part of the pre-annotation that is
    the annotator's own work, which Label Studio's bulk import of finished predictions has not."""
    from judgelab.sync.bulk_predict import predict_body, task_data

    meta = client.projects.get(id=project)
    ids = sorted(bench.db.task_ids_by_key(project).values())
    bodies = []
    for start in range(0, n, CHUNK):
        data = task_data(client, project, ids[start : start + CHUNK])
        bodies.append(json.dumps(predict_body(meta, sorted(data.items()))).encode())
    t0 = time.perf_counter()
    with httpx.Client(base_url=bench.settings.backend_url, timeout=3600, verify=tls_context()) as http:
        for body in bodies:
            http.post("/predict", content=body, headers={"Content-Type": "application/json"}).raise_for_status()
    return time.perf_counter() - t0


def pushed(bench: Bench, project: int, n: int, backend: str, backend_pid: int | None, before: int = 0) -> Run:
    """``judgelab preannotate --push`` of the project's ``n`` tasks by the backend at ``backend``
    (connected first, outside the timing: the pre-annotation itself is measured); under
    ``--kill-check`` killed once a share of the ``n`` predictions past ``before`` is in."""
    bench.cli("connect", "--project", str(project), "--backend-url", backend)
    return bench.cli(
        "preannotate",
        "--project",
        str(project),
        "--push",
        "--backend-url",
        backend,
        "--chunk-size",
        str(CHUNK),
        "--json",
        backend_pid=backend_pid,
        kill_when=bench.kill_at_share(lambda: (bench.db.counts(project)["predictions"] - before) / n),
    )


def llm_stage(bench: Bench, project: int, n: int) -> None:
    """The project pre-annotated again by the backend in ``llm`` mode, against the simulated
    OpenAI-compatible server (a process of its own) answering every prompt after a fixed latency:
    a second prediction per task. Its counterpart: Label Studio's bulk import of as many
    predictions (the preannotate stage's); the note gives the bound of the LLM's latency alone
    (tasks x latency / requests in flight)."""
    from llm_throughput import start_sim, stop_sim

    sim, url = start_sim(bench.llm_latency, LLM_ANSWER)
    home = bench.tmp / f"llm-backend-{n}"
    settings = StackSettings(home=home, ls_port=bench.settings.ls_port, backend_port=free_port(), annotator="llm")
    concurrency = 8  # the backend's default JUDGELAB_LLM_CONCURRENCY
    try:
        start_backend(
            settings,
            {
                "JUDGELAB_LLM_BASE_URL": url,
                "JUDGELAB_LLM_MODEL": LLM_MODEL,
                "JUDGELAB_LLM_CONCURRENCY": str(concurrency),
                "JUDGELAB_CACHE_PATH": str(home / "llm-cache.sqlite"),
                "PYTHONPATH": str(ROOT / "scripts" / "editable"),
            },
        )
        before = bench.db.counts(project)["predictions"]
        run = pushed(bench, project, n, settings.backend_url, int((home / "backend.pid").read_text()), before)
        got = bench.db.counts(project)
        check("judgelab preannotate (LLM)", got, {"predictions": before + n, "versions": 2})
        bound = n * bench.llm_latency / concurrency
        note = f"(LLM at {bench.llm_latency * 1000:.0f} ms, {concurrency} in flight: {bound:.0f} s of latency alone)"
        bench.record("llm", n, run, bench.ls_push.get(n), note)
        took = push_seconds(run.output)
        if took and not run.killed_at and bench.ls_push.get(n):
            bench.record(
                "llm push",
                n,
                Run(took["importing"], run.cli_mb),
                bench.ls_push[n],
                f"(checking and importing, with the backend waiting on the LLM rather than on the CPU; reading "
                f"{took['reading']:.1f} s and predicting {took['predicting']:.1f} s ran alongside)",
            )
    finally:
        stop_stack(home)
        stop_sim(sim)


def make_changes(client, project_id: int, n: int, rng: random.Random) -> None:
    from sync_scale import make_changes as changes

    changes(client, project_id, n, rng)


# --- main -------------------------------------------------------------------------------------


def summary(rows: list[dict]) -> None:
    sizes = sorted({r["n"] for r in rows})
    print("\n| stage | tasks | judgelab s | ms per task | Label Studio s | ratio | peak RSS judgelab MiB |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = f"{r['s'] / r['ls_s']:.2f}x" if r["ls_s"] else "-"
        ls = f"{r['ls_s']:.1f}" if r["ls_s"] else "-"
        rss = f"{r['cli_mb']:.0f}" + (f" + backend {r['backend_mb']:.0f}" if r["backend_mb"] else "")
        print(f"| {r['stage']} | {r['n']:,} | {r['s']:.1f} | {1000 * r['s'] / r['n']:.2f} | {ls} | {ratio} | {rss} |")
    if len(sizes) > 1:
        print(f"\nper-task time growth {sizes[-1]:,} / {sizes[0]:,} (target <= 1.2x):")
        for stage in dict.fromkeys(r["stage"] for r in rows):
            by = {r["n"]: r for r in rows if r["stage"] == stage}
            if sizes[0] in by and sizes[-1] in by:
                lo, hi = by[sizes[0]], by[sizes[-1]]
                growth = (hi["s"] / hi["n"]) / (lo["s"] / lo["n"])
                ls = ""
                if lo["ls_s"] and hi["ls_s"]:
                    ls = f"; Label Studio's {(hi['ls_s'] / hi['n']) / (lo['ls_s'] / lo['n']):.2f}x"
                rss = f"; peak RSS {lo['cli_mb']:.0f} -> {hi['cli_mb']:.0f} MiB"
                print(f"  {stage}: {growth:.2f}x{ls}{rss}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000", help="comma-separated task counts (default 10000)")
    ap.add_argument("--database", choices=["postgres", "sqlite"], default="postgres")
    ap.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated, of {', '.join(STAGES)}")
    ap.add_argument("--kill-check", action="store_true", help="kill -9 each stage at a random point, re-run, check")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--llm-latency", type=float, default=0.05, help="seconds per simulated LLM answer (stage llm)")
    ap.add_argument("--llm-max", type=int, default=10_000, help="the llm stage runs at sizes up to this one")
    ap.add_argument("--home", type=Path, help="SQLite: a (migrated) Label Studio state folder to use")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="time the push and the sync this many times, each beside its Label Studio baseline, and keep the "
        "pair of median ratio (their ratios move more between runs than their distance to the targets)",
    )
    ap.add_argument(
        "--ls-default-prediction-import",
        action="store_true",
        help="run Label Studio with its default prediction import (the counters of every task updated on each "
        "request), not the one the local stack turns on",
    )
    args = ap.parse_args()
    if args.ls_default_prediction_import:
        from judgelab.sync.local_stack import PREDICTION_IMPORT_FLAG

        os.environ[PREDICTION_IMPORT_FLAG] = "false"
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",")]
    stages = [s for s in args.stages.split(",") if s]
    if unknown := set(stages) - set(STAGES):
        raise SystemExit(f"unknown stage(s): {', '.join(sorted(unknown))}")
    if args.repeat < 1 or (args.repeat > 1 and args.kill_check):
        raise SystemExit("--repeat takes a count of 1 or more, and not with --kill-check (a killed run is no timing)")

    tmp = Path(tempfile.mkdtemp(prefix="judgelab-scale-"))
    server = None
    if args.database == "postgres":
        from postgres_server import PostgresServer

        server = PostgresServer(port=free_port()).start()
        settings = StackSettings(
            home=tmp / "stack",
            ls_port=free_port(),
            backend_port=free_port(),
            database=server.create_database("labelstudio"),
        )
    else:
        settings = StackSettings(home=args.home or tmp / "stack", ls_port=free_port(), backend_port=free_port())
    try:
        creds = load_credentials(settings.home)
        t0 = time.perf_counter()
        start_label_studio(settings, creds)
        start_backend(settings)
        print(f"Label Studio ({args.database}) and the backend up in {time.perf_counter() - t0:.0f} s; {tmp}")
        backend_pid = int((settings.home / "backend.pid").read_text())
        bench = Bench(
            settings,
            creds.token,
            Database(settings),
            args.kill_check,
            random.Random(args.seed),
            tmp,
            backend_pid,
            llm_latency=args.llm_latency,
            llm_max=args.llm_max,
            repeat=args.repeat,
        )
        client = connect(Connection(url=settings.ls_url, token=creds.token), timeout=3600)
        for n in sizes:
            run_size(bench, client, n, stages, args.seed)
        summary(bench.rows)
        (tmp / "results.json").write_text(json.dumps(bench.rows, indent=1))
        print(f"\nresults: {tmp / 'results.json'}")
    finally:
        stop_stack(settings.home)
        if server is not None:
            time.sleep(2)
            server.stop()


if __name__ == "__main__":
    main()
