"""1,000 tasks through Label Studio's own "Retrieve predictions" with a slow simulated LLM.

Label Studio sends every selected task to ``/predict`` in ONE request and abandons it after
``ML_TIMEOUT_PREDICT`` (100 s). With a slow LLM the whole batch cannot finish in time; the
backend returns what is done before its deadline (placeholders for the rest) and keeps
every finished answer in its cache, so repeating the action finishes the project. This
benchmark repeats the action until every task has a prediction and checks that no task was
lost and none got two predictions of the current model version.

The baseline is the same project run with the deadline switched off (the backend tries the
whole batch in one request): Label Studio gives up at 100 s and stores nothing.

    python bench/retrieve_predictions_e2e.py --tasks 1000 --latency 1.0 --concurrency 4

Needs the ``server`` extra (Label Studio). State lives in a temporary folder unless
``--home`` keeps it (a migrated database makes the next start take seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judgelab.configs.schema import get_schema  # noqa: E402
from judgelab.sync.backend_link import connect_backend, retrieve_predictions  # noqa: E402
from judgelab.sync.client import Connection, connect  # noqa: E402
from judgelab.sync.http_retry import tls_context  # noqa: E402
from judgelab.sync.importers import rows_from_records  # noqa: E402
from judgelab.sync.local_stack import (  # noqa: E402
    StackSettings,
    free_port,
    load_credentials,
    start_label_studio,
    stop_stack,
)
from judgelab.sync.projects import ensure_project, import_rows  # noqa: E402

ANSWER = json.dumps({"annotations": [], "impression": 5})


def start_sim(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "llm_sim.py"), "--latency", str(latency), "--answer", ANSWER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    return proc, proc.stdout.readline().strip()


def start_backend(
    sim_url: str, concurrency: int, deadline: float, cache: Path, log: Path
) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = dict(os.environ)
    env.update(
        {
            "JUDGELAB_ANNOTATOR": "llm",
            "JUDGELAB_BACKEND_PORT": str(port),
            "JUDGELAB_LLM_BASE_URL": sim_url,
            "JUDGELAB_LLM_MODEL": "sim-model",
            "JUDGELAB_LLM_CONCURRENCY": str(concurrency),
            "JUDGELAB_PREDICT_DEADLINE": str(deadline),
            "JUDGELAB_CACHE_PATH": str(cache),
            "JUDGELAB_LOG_LEVEL": "WARNING",
        }
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "judgelab.backend"], cwd=ROOT, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if httpx.get(f"{url}/health", timeout=1, verify=tls_context()).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    raise SystemExit(f"backend did not start: {log.read_text()[-2000:]}")


def tasks_for(n: int) -> list[dict]:
    samples = get_schema("hotel_spans").samples()
    out = []
    for i in range(n):
        data = dict(samples[i % len(samples)]["data"])
        data["id"] = f"bench-{i:05d}"
        data["summary"] = f"{data['summary']} (variant {i})"  # a distinct prompt per task
        out.append({"data": data})
    return out


def version_counts(client, project_id: int, version: str) -> tuple[int, int, int]:
    """(tasks, tasks with exactly one prediction of version, tasks with more than one)."""
    per_task: Counter = Counter()
    for p in client.predictions.list(project=project_id):
        if p.model_version == version:
            per_task[p.task] += 1
    tasks = sum(1 for _ in client.tasks.list(project=project_id, fields="task_only"))
    return tasks, sum(1 for c in per_task.values() if c == 1), sum(1 for c in per_task.values() if c > 1)


def run(client, title: str, rows, backend_url: str, rounds: int) -> list[dict]:
    schema = get_schema("hotel_spans")
    project = ensure_project(client, schema, title=title)
    import_rows(client, project.id, rows)
    link = connect_backend(client, project.id, backend_url, timeout=100)
    history = []
    for round_no in range(1, rounds + 1):
        started = time.monotonic()
        retrieve_predictions(client, project.id)
        elapsed = time.monotonic() - started
        total, once, twice = version_counts(client, project.id, link.model_version)
        history.append({"round": round_no, "seconds": elapsed, "tasks": total, "predicted": once, "duplicated": twice})
        print(
            f"  {title}: round {round_no}: {elapsed:6.1f} s, {once}/{total} predicted, {twice} duplicated", flush=True
        )
        if once == total:
            break
    return history


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=1.0, help="simulated LLM latency per request (s)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--deadline", type=float, default=80.0, help="JUDGELAB_PREDICT_DEADLINE (s)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--home", type=Path, help="keep Label Studio's state here")
    args = parser.parse_args()

    home = args.home or Path(tempfile.mkdtemp(prefix="jl-bench-"))
    settings = StackSettings(home=home, ls_port=free_port(), backend_port=free_port())
    creds = load_credentials(home)
    print(f"Label Studio in {home} (first start migrates the database) ...", flush=True)
    start_label_studio(settings, creds)
    connect(Connection(url=settings.ls_url, token=creds.token), timeout=300)  # judgelab's checks of the token
    # the SDK's LabelStudio, whose listings run to their end (judgelab's own client lists nothing)
    from label_studio_sdk import LabelStudio

    client = LabelStudio(base_url=settings.ls_url, api_key=creds.token, timeout=300, max_retries=0)
    for project in client.projects.list():
        client.projects.delete(id=project.id)
    rows = rows_from_records(
        [(f"bench {i}", t) for i, t in enumerate(tasks_for(args.tasks))], get_schema("hotel_spans")
    )
    bound = args.concurrency / args.latency
    print(
        f"{args.tasks} tasks, LLM latency {args.latency} s, concurrency {args.concurrency} "
        f"(at most {bound:.0f} tasks/s: {args.tasks / bound:.0f} s of LLM time, Label Studio waits 100 s)",
        flush=True,
    )
    sim, sim_url = start_sim(args.latency)
    results = {}
    try:
        for label, deadline, rounds in (
            ("judgelab (deadline)", args.deadline, args.rounds),
            ("no deadline", 10_000, 2),
        ):
            backend, url = start_backend(
                sim_url,
                args.concurrency,
                deadline,
                home / f"cache-{label[:2]}.sqlite",
                home / f"backend-{label[:2]}.log",
            )
            try:
                results[label] = run(client, label, rows, url, rounds)
            finally:
                backend.terminate()
                backend.wait(timeout=30)
    finally:
        sim.stdin.close()
        sim.terminate()
        stop_stack(home) if not args.home else None

    print("\n| run | rounds | total s | predicted | duplicated | lost |")
    print("|---|---|---|---|---|---|")
    for label, history in results.items():
        last = history[-1]
        lost = last["tasks"] - last["predicted"] - last["duplicated"]
        total_s = sum(h["seconds"] for h in history)
        print(
            f"| {label} | {len(history)} | {total_s:.0f} | {last['predicted']}/{last['tasks']} | "
            f"{last['duplicated']} | {lost} |"
        )
    ours = results["judgelab (deadline)"][-1]
    ok = ours["predicted"] == ours["tasks"] and ours["duplicated"] == 0
    print(f"\nevery task exactly one prediction: {'yes' if ok else 'NO'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
