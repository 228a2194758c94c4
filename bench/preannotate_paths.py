"""How long pre-annotating N tasks takes by each of ``judgelab preannotate``'s ways, offline annotator.

- ``retrieve``: Label Studio's own "Retrieve predictions", all N tasks in one request (the
  baseline: what the Data Manager's button does). Label Studio sends them to the backend at once
  and then saves each prediction on its own (one commit each on SQLite).
- ``chunks``: the same action on chunks of ``--chunk-size`` task ids (what judgelab does when it
  cannot reach the backend itself).
- ``push``: judgelab calls the backend in chunks and imports each chunk's predictions in one
  request (:mod:`judgelab.sync.bulk_predict`).

Each way runs on its own project of the same N tasks (likert_rubric_es samples, distinct ids) in
one Label Studio. It prints seconds, milliseconds per task, the ratio to the baseline, and how many
tasks one "Retrieve predictions" can take before Label Studio's answer would come later than
judgelab's request timeout (``SINGLE_REQUEST_MAX`` in ``sync/preannotate.py`` is chosen from it).

    python bench/preannotate_paths.py --tasks 400 --home /tmp/jl-bench
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "editable"))

from judgelab.configs.schema import get_schema  # noqa: E402
from judgelab.sync.backend_client import BackendClient  # noqa: E402
from judgelab.sync.backend_link import connect_backend, prediction_counts  # noqa: E402
from judgelab.sync.client import Connection, connect  # noqa: E402
from judgelab.sync.importers import rows_from_records  # noqa: E402
from judgelab.sync.local_stack import (  # noqa: E402
    StackSettings,
    free_port,
    load_credentials,
    start_backend,
    start_label_studio,
    stop_stack,
)
from judgelab.sync.preannotate import RETRIEVE_TIMEOUT, PreannotateOptions, preannotate_project  # noqa: E402
from judgelab.sync.projects import ensure_project, import_rows  # noqa: E402


def rows(schema, n: int, tag: str):
    samples = schema.samples()
    records = []
    for i in range(n):
        data = dict(samples[i % len(samples)]["data"])
        data["id"] = f"{tag}-{i:05d}"
        records.append((f"bench {i}", {"data": data}))
    return rows_from_records(records, schema)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=400)
    parser.add_argument("--chunk-size", type=int, default=100)
    parser.add_argument("--home", type=Path, help="keep Label Studio's state here (a migrated database starts fast)")
    args = parser.parse_args()

    home = args.home or Path(tempfile.mkdtemp(prefix="jl-bench-"))
    settings = StackSettings(home=home, ls_port=free_port(), backend_port=free_port())
    creds = load_credentials(home)
    start_label_studio(settings, creds)
    start_backend(settings)
    client = connect(Connection(url=settings.ls_url, token=creds.token), timeout=RETRIEVE_TIMEOUT)
    schema = get_schema("likert_rubric_es")
    results: dict[str, float] = {}
    try:
        for way in ("retrieve", "chunks", "push"):
            project = ensure_project(client, schema, title=f"bench preannotate {way} {time.time():.0f}")
            import_rows(client, project.id, rows(schema, args.tasks, way))
            link = connect_backend(client, project.id, settings.backend_url)
            started = time.perf_counter()
            with BackendClient(settings.backend_url) as backend:
                preannotate_project(
                    client,
                    project.id,
                    link.model_version,
                    PreannotateOptions(way, chunk_size=args.tasks if way == "retrieve" else args.chunk_size),
                    backend=backend,
                )
            results[way] = time.perf_counter() - started
            total, done = prediction_counts(client, project.id, link.model_version)
            print(f"  {way:8} {results[way]:6.1f} s  {done}/{total} predicted", flush=True)
            client.projects.delete(id=project.id)
    finally:
        stop_stack(home)
    base = results["retrieve"]
    print(f"\n{args.tasks} tasks, offline annotator, chunks of {args.chunk_size}\n")
    print("| way | s | ms per task | ratio to one 'Retrieve predictions' |")
    print("|---|---|---|---|")
    for way, seconds in results.items():
        print(f"| {way} | {seconds:.1f} | {1000 * seconds / args.tasks:.0f} | {seconds / base:.2f} |")
    per_task = base / args.tasks
    print(
        f"\none request holds about {60 / per_task:.0f} tasks within the SDK's default 60 s timeout and "
        f"{RETRIEVE_TIMEOUT / per_task:.0f} within judgelab's {RETRIEVE_TIMEOUT:.0f} s"
    )


if __name__ == "__main__":
    main()
