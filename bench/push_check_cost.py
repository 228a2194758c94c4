"""What the push's check before each import costs as a project grows: the project's count of
predictions against a filtered listing of one group's tasks, on Label Studio with PostgreSQL.

Before it imports a group's predictions, ``preannotate --push`` asks whether a prediction it did not
import has appeared (``_Strangers`` in ``judgelab.sync.bulk_predict``): it counts the project's
predictions (``prediction_count``), and lists which of the group's tasks have the version
(``with_version``) only once the count differs. This bench grows one project of the bench's
hotel summaries, each task with one prediction, to each size of ``--sizes`` and times, right after
the import (the predictions not yet vacuumed, as during a push) and after ``VACUUM (ANALYZE)``, the
median of ``--rounds`` calls of:

- the count (the baseline);
- the listing of a group's 500 tasks for a version none of them has (what the push asks), and for
  the version all of them have (the ids then come back);
- the read of the group's data (``task_data``: what the push reads once per group anyway).

    python bench/push_check_cost.py --sizes 10000,30000,100000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "editable"))
sys.path.insert(0, str(ROOT / "tests"))

from judgelab.configs.schema import get_schema  # noqa: E402
from judgelab.sync.bulk_predict import task_data  # noqa: E402
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
from judgelab.sync.prediction_status import (  # noqa: E402
    IDS_PER_QUERY,
    missing_version,
    prediction_count,
    with_version,
)
from judgelab.sync.projects import ensure_project  # noqa: E402

SCHEMA = "hotel_spans"
VERSION = "bench-v1"
REQUEST = 2000  # tasks per import request while the project grows


def grow(http: httpx.Client, project: int, have: int, n: int) -> None:
    """Import tasks ``have`` .. ``n`` of the bench, each with one prediction of :data:`VERSION`."""
    schema = get_schema(SCHEMA)
    samples = [s["data"] if "data" in s else s for s in schema.samples()]
    for start in range(have, n, REQUEST):
        records = []
        for i in range(start, min(n, start + REQUEST)):
            data = dict(samples[i % len(samples)])
            data.update(id=f"check-{i:06d}", summary=f"{data['summary']} (ref R{i:06d})", group="A")
            records.append((f"bench:{i + 1}", {"data": data}))
        body = [
            {"data": row.data, "predictions": [{"model_version": VERSION, "result": [], "score": 0.5}]}
            for row in rows_from_records(records, schema)
        ]
        http.post(f"/api/projects/{project}/import", json=body).raise_for_status()


def median_ms(call, rounds: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(rounds):
        t0 = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000, out


def checks(client, project: int, n: int, group: list[int], rounds: int) -> tuple[float, float, float, float]:
    """(the count, the listing for an absent version, for the version, the data read), ms each."""
    count, counted = median_ms(lambda: prediction_count(client, project), rounds)
    none, found = median_ms(lambda: with_version(client, project, "absent", group), rounds)
    every, listed = median_ms(lambda: with_version(client, project, VERSION, group), rounds)
    read, data = median_ms(lambda: task_data(client, project, group), rounds)
    if counted != n or found or len(listed) != len(group) or len(data) != len(group):
        raise SystemExit(f"wrong answers at {n}: count {counted}, listings {len(found)} and {len(listed)}")
    return count, none, every, read


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,30000,100000", help="comma-separated task counts, growing")
    ap.add_argument("--rounds", type=int, default=15, help="calls timed per figure (their median)")
    args = ap.parse_args()
    sizes = sorted(int(s.replace("_", "")) for s in args.sizes.split(","))

    import psycopg
    from postgres_server import PostgresServer

    server = PostgresServer(port=free_port()).start()
    database = server.create_database("labelstudio")
    settings = StackSettings(
        home=Path(tempfile.mkdtemp(prefix="judgelab-check-")) / "stack",
        ls_port=free_port(),
        backend_port=free_port(),
        database=database,
    )

    def vacuum() -> None:
        with psycopg.connect(
            host=database.host, port=database.port, user=database.user, password=database.password,
            dbname=database.name, autocommit=True,
        ) as conn:  # fmt: skip
            conn.execute("VACUUM (ANALYZE)")

    rows = []
    try:
        creds = load_credentials(settings.home)
        start_label_studio(settings, creds)
        client = connect(Connection(url=settings.ls_url, token=creds.token), timeout=3600)
        headers = {"Authorization": f"Token {creds.token}"}
        with httpx.Client(base_url=settings.ls_url, headers=headers, timeout=3600, verify=tls_context()) as http:
            project = ensure_project(client, get_schema(SCHEMA), title="push check cost").id
            have = 0
            for n in sizes:
                t0 = time.perf_counter()
                grow(http, project, have, n)
                have = n
                print(f"{n} tasks with a prediction each in {time.perf_counter() - t0:.0f} s", flush=True)
                ids, _ = missing_version(client, project, "absent")  # every task, in id order
                group = ids[len(ids) // 2 : len(ids) // 2 + IDS_PER_QUERY]
                for state in ("after the import", "vacuumed"):
                    if state == "vacuumed":
                        vacuum()
                    rows.append((n, state, *checks(client, project, n, group, args.rounds)))
    finally:
        stop_stack(settings.home)
        time.sleep(2)
        server.stop()

    print(f"\nmedian ms of {args.rounds} calls; a group is {IDS_PER_QUERY} tasks; x: against the count\n")
    print("| tasks | predictions | count ms | listing, none have it | listing, all have it | group's data read |")
    print("|---|---|---|---|---|---|")
    for n, state, count, none, every, read in rows:
        print(
            f"| {n:,} | {state} | {count:.1f} | {none:.1f} ({none / count:.2f}x) | {every:.1f} ({every / count:.2f}x) "
            f"| {read:.1f} ({read / count:.2f}x) |"
        )
    first = {state: count for n, state, count, *_ in rows if n == sizes[0]}
    for n, state, count, *_ in rows:
        if n != sizes[0]:
            print(f"the count at {n:,} over {sizes[0]:,} tasks ({state}): {count / first[state]:.2f}x")


if __name__ == "__main__":
    main()
