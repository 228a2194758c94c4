"""Where the push's imports lose against Label Studio's bulk import: its garbage collector.

Runs ``bench/scale_workflow.py --stages import,preannotate`` (its arguments after ``--``) with a
probe inside the Label Studio process it starts (a ``sitecustomize`` module on ``PYTHONPATH``,
active only in judgelab's Label Studio launcher): every request's path and time, and the time
Python's garbage collector spent inside it, by generation. Then, for the prediction imports of
the push (the project whose tasks are read) and of the bulk-import baseline (the other project):
requests, total seconds, seconds in collections (young and full), and seconds outside them, each
with its ratio to the baseline's. Nothing of judgelab is changed; the probe only watches.

    .venv/bin/python bench/push_gc.py -- --sizes 10000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from urllib.parse import parse_qs

PROBE = r"""
import os
_cmd = open("/proc/self/cmdline", "rb").read().split(b"\0")
if b"judgelab.sync.label_studio_server" in _cmd and b"start" in _cmd:
    import gc, json, threading, time
    _log = open(os.path.join(os.environ["JUDGELAB_GC_PROBE"], f"ls-{os.getpid()}.jsonl"), "a", buffering=1)
    _local = threading.local()
    _started = {}

    def _collection(phase, info):
        if phase == "start":
            _started[threading.get_ident()] = time.perf_counter()
            return
        took = time.perf_counter() - _started.pop(threading.get_ident(), time.perf_counter())
        spent = getattr(_local, "spent", None)
        if spent is not None:
            spent[info["generation"]] += took

    gc.callbacks.append(_collection)
    import django.core.handlers.wsgi as wsgi

    _handle = wsgi.WSGIHandler.__call__

    def _timed(self, environ, start_response):
        _local.spent = [0.0, 0.0, 0.0]
        started = time.perf_counter()
        try:
            return _handle(self, environ, start_response)
        finally:
            took = time.perf_counter() - started
            spent, _local.spent = _local.spent, None
            _log.write(json.dumps({"method": environ.get("REQUEST_METHOD"), "path": environ.get("PATH_INFO"),
                                   "query": environ.get("QUERY_STRING", "")[:80], "seconds": took, "gc": spent}) + "\n")

    wsgi.WSGIHandler.__call__ = _timed
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rest", nargs="*", help="arguments for bench/scale_workflow.py (after --)")
    args = ap.parse_args()
    probe = Path(tempfile.mkdtemp(prefix="judgelab-gc-probe-"))
    (probe / "sitecustomize.py").write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(probe), os.environ.get("PYTHONPATH")]))}
    env["JUDGELAB_GC_PROBE"] = str(probe)
    bench = Path(__file__).with_name("scale_workflow.py")
    command = [sys.executable, str(bench), "--stages", "import,preannotate", *args.rest]
    subprocess.run(command, env=env, check=True)
    rows = [json.loads(line) for log in probe.glob("ls-*.jsonl") for line in log.read_text().splitlines()]
    report(rows)
    print(f"the probe's request logs: {probe}")


def report(rows: list[dict]) -> None:
    # the push reads its own project's tasks (Data Manager listings); the baseline reads none
    read = {parse_qs(r["query"]).get("project", [""])[0] for r in rows if r["path"] == "/api/tasks/"}
    imports: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        if r["method"] == "POST" and r["path"].endswith("/import/predictions"):
            imports[r["path"].split("/")[3]].append(r)
    pushed = [p for p in imports if p in read]
    if len(pushed) != 1 or len(imports) != 2:
        raise SystemExit(f"expected the push's project and the baseline's; found imports into {sorted(imports)}")
    (baseline,) = [p for p in imports if p != pushed[0]]

    def parts(requests: list[dict]) -> dict[str, float]:
        young = sum(r["gc"][0] + r["gc"][1] for r in requests)
        full = sum(r["gc"][2] for r in requests)
        total = sum(r["seconds"] for r in requests)
        outside = total - young - full
        return {"requests": len(requests), "total": total, "young": young, "full": full, "outside": outside}

    push, base = parts(imports[pushed[0]]), parts(imports[baseline])
    print("\nprediction imports in Label Studio (seconds; ratio: the push's over the bulk import's)")
    print("| part | push | bulk import | ratio |")
    print("|---|---|---|---|")
    print(f"| requests | {push['requests']} | {base['requests']} | - |")
    for key, name in (
        ("total", "all"),
        ("young", "young collections"),
        ("full", "full collections"),
        ("outside", "outside collections"),
    ):
        ratio = f"{push[key] / base[key]:.2f}x" if base[key] else "-"
        print(f"| {name} | {push[key]:.2f} | {base[key]:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
