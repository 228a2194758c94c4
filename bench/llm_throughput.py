"""Throughput of the LLM annotator against a simulated endpoint with a fixed latency.

The simulated OpenAI-compatible server (``tests/llm_sim.py``) runs in a separate process, so
``time.process_time()`` here measures only judgelab's side: prompt rendering, the HTTP client,
the cache, answer parsing and span alignment. Every run uses a fresh, empty SQLite cache (so
every task is a real request, and the cache write is paid, as in production).

Measured in the same run:

- ``concurrent``: ``--tasks`` tasks through ``LLMAnnotator.annotate_batch`` with concurrency C;
  the bound is C / latency tasks per second (C requests always in flight);
- ``sequential``: a subset with concurrency 1 (one task at a time), the baseline;
- ``cached``: the same tasks again, all from the cache (what a retry after a deadline costs).

The LLM task is the real ``hotel_spans`` task when ``backend.llm.tasks`` is available (answers
in the seed-004 JSON format, one span aligned per task), else a no-op task.

    python bench/llm_throughput.py [--tasks 1000] [--concurrency 16] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judgelab.backend.annotators.llm import LLMAnnotator  # noqa: E402
from judgelab.backend.draft import Draft  # noqa: E402
from judgelab.backend.llm.cache import SQLiteCache  # noqa: E402
from judgelab.backend.settings import LLMSettings  # noqa: E402
from judgelab.configs.schema import get_schema  # noqa: E402

HOTEL_ANSWER = json.dumps({"annotations": [{"reason": "not in the descriptions", "text": "ref", "annotation_type": 0}]})


class NoopTask:
    """Renders one message, parses nothing: the client, cache and loop alone (its draft answers
    one rating, so it counts as usable and is cached)."""

    name = "noop"
    version = "noop-1"

    def messages(self, data: dict[str, Any]) -> list[dict[str, str]]:
        return [{"role": "user", "content": data["summary"]}]

    def response_format(self) -> dict[str, Any] | None:
        return None

    def to_draft(self, answer_text: str, data: dict[str, Any]) -> Draft:
        return Draft(ratings={"impression": 1}, info={"chars": len(answer_text)})


@dataclass
class Run:
    name: str
    tasks: int
    concurrency: int
    wall_s: float
    cpu_s: float
    answered: int

    @property
    def rate(self) -> float:
        return self.tasks / self.wall_s

    @property
    def cpu_ms_per_task(self) -> float:
        return 1000 * self.cpu_s / self.tasks


def start_sim(latency: float, answer: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "llm_sim.py"), "--latency", str(latency), "--answer", answer],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise RuntimeError(f"the simulated server did not start (printed {url!r})")
    return proc, url


def stop_sim(proc: subprocess.Popen) -> None:
    proc.stdin.close()  # it serves until its stdin closes
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def make_tasks(n: int) -> list[dict[str, Any]]:
    """``n`` distinct hotel_spans tasks (each summary ends with its own reference)."""
    samples = [s["data"] for s in get_schema("hotel_spans").samples()]
    return [
        {**samples[i % len(samples)], "summary": samples[i % len(samples)]["summary"] + f" (ref {i})"} for i in range(n)
    ]


def measure(name: str, annotator: LLMAnnotator, schema: str, xml: str, datas: list[dict], concurrency: int) -> Run:
    cpu, wall = time.process_time(), time.perf_counter()
    drafts = annotator.annotate_batch(schema, xml, datas, deadline_s=3600)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return Run(name, len(datas), concurrency, wall, cpu, sum(d is not None for d in drafts))


def annotator_for(url: str, concurrency: int, task: Any, cache_dir: Path) -> LLMAnnotator:
    settings = LLMSettings(base_url=url, model="sim-model", concurrency=concurrency, retries=0, timeout=30)
    cache = SQLiteCache(cache_dir / f"cache-c{concurrency}.sqlite")  # fresh and empty
    return LLMAnnotator(settings, task_factory=lambda schema, xml: task, cache=cache)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per simulated answer")
    parser.add_argument("--baseline-tasks", type=int, default=50, help="tasks in the sequential run")
    parser.add_argument("--task", choices=("auto", "hotel", "noop"), default="auto")
    args = parser.parse_args(argv)

    schema = get_schema("hotel_spans")
    use_hotel = args.task == "hotel" or (args.task == "auto" and importlib.util.find_spec("judgelab.backend.llm.tasks"))
    if use_hotel:
        from judgelab.backend.llm.tasks import task_for

        task, answer = task_for(schema, schema.config_xml), HOTEL_ANSWER
    else:
        task, answer = NoopTask(), "{}"
    datas = make_tasks(args.tasks)
    proc, url = start_sim(args.latency, answer)
    runs: list[Run] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, concurrency, subset in (
                ("sequential", 1, datas[: args.baseline_tasks]),
                ("concurrent", args.concurrency, datas),
            ):
                annotator = annotator_for(url, concurrency, task, Path(tmp))
                try:
                    annotator.version_for(schema.name, schema.config_xml)  # task loaded outside the timing
                    runs.append(measure(name, annotator, schema.name, schema.config_xml, subset, concurrency))
                    if name == "concurrent":
                        runs.append(measure("cached", annotator, schema.name, schema.config_xml, subset, concurrency))
                    spans = sum(
                        1
                        for d in annotator.annotate_batch(schema.name, schema.config_xml, subset[:20], 60)
                        if d and d.spans
                    )
                finally:
                    annotator.close()
    finally:
        stop_sim(proc)

    print(f"task: {'hotel_spans (real LLM task)' if use_hotel else 'no-op'}; latency {args.latency * 1000:.0f} ms")
    header = ("run", "tasks", "C", "wall s", "tasks/s", "bound/s", "of bound", "CPU ms/task")
    print("{:<11} {:>6} {:>3} {:>8} {:>9} {:>8} {:>9} {:>12}".format(*header))
    for r in runs:
        bound = r.concurrency / args.latency if r.name != "cached" else float("nan")
        share = f"{r.rate / bound:>8.1%}" if r.name != "cached" else f"{'-':>8}"
        print(
            f"{r.name:<11} {r.tasks:>6} {r.concurrency:>3} {r.wall_s:>8.2f} {r.rate:>9.1f} "
            f"{bound:>8.1f} {share} {r.cpu_ms_per_task:>12.2f}"
        )
        assert r.answered == r.tasks, f"{r.name}: {r.tasks - r.answered} tasks unanswered"
    seq, conc, cached = runs
    print(f"speedup concurrent/sequential: {conc.rate / seq.rate:.1f}x (ideal {args.concurrency}x)")
    print(f"throughput / bound (C/latency): {conc.rate / (args.concurrency / args.latency):.1%} (target >= 90%)")
    print(f"cached re-run vs concurrent: {cached.rate / conc.rate:.0f}x faster; {spans}/20 sampled drafts have a span")
    print(f"annotator CPU per task: {conc.cpu_ms_per_task:.2f} ms (sim in another process, not counted)")


if __name__ == "__main__":
    main()
