"""Requests per second on ``/predict`` with the offline annotator at 1, 2 and 4 worker processes
(``judgelab serve --workers N``), printed as ratios to 1 worker measured in the same run; and the
LLM requests paid per distinct prompt when overlapping ``/predict`` calls share prompts.

Each run starts the real backend, warms it up, then keeps ``--clients`` requests in flight for
``--seconds`` seconds, each a new connection (so the kernel spreads them over the workers, as
Label Studio's calls are spread) carrying ``--tasks`` hotel_spans tasks. The load generator is one
asyncio process on the same machine: on a 2-core machine it takes a share of the CPU the workers
could use, which is part of what the ratios show.

Then (``--overlap``, the default; ``--no-overlap`` skips it) the LLM annotator against the
simulated OpenAI-compatible server (``tests/llm_sim.py``, answering after ``--llm-latency``
seconds): ``--overlap-calls`` calls sent at once, each on a connection of its own, each holding
``--overlap-tasks`` tasks drawn in turn from ``--prompts`` distinct prompts (60 calls x 4 tasks over 40
prompts: each prompt in 6 calls), through ``--overlap-workers`` workers sharing one response
cache file. It prints the requests the LLM server received per distinct prompt (target 1.00: an
identical request in flight is paid for once) and the most any prompt got.

    python bench/backend_workers.py [--workers 1 2 4] [--seconds 20] [--clients 8] [--tasks 10]
    python bench/backend_workers.py --workers --overlap-calls 60 --prompts 40 --overlap-tasks 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the backend launcher of the tests

from backend_process import start_backend  # noqa: E402
from llm_sim import LLMSim  # noqa: E402

from judgelab.configs.schema import get_schema  # noqa: E402
from judgelab.sync.http_retry import tls_context  # noqa: E402

HOTEL = get_schema("hotel_spans")
ANSWER = json.dumps({"annotations": [], "impression": 5})


def body(tasks: int) -> bytes:
    samples = HOTEL.samples()
    batch = [{"id": i, "data": samples[i % len(samples)]["data"]} for i in range(tasks)]
    return json.dumps({"tasks": batch, "project": "1.1", "label_config": HOTEL.config_xml}).encode()


async def load(url: str, payload: bytes, clients: int, seconds: float) -> tuple[int, int]:
    """Requests answered 200 within ``seconds`` and the failures, ``clients`` at a time."""
    done = failed = 0
    stop_at = time.perf_counter() + seconds
    headers = {"Content-Type": "application/json"}
    limits = httpx.Limits(max_keepalive_connections=0)  # a new connection per request

    async def client_loop() -> None:
        nonlocal done, failed
        async with httpx.AsyncClient(limits=limits, timeout=120, verify=tls_context()) as client:
            while time.perf_counter() < stop_at:
                try:
                    response = await client.post(f"{url}/predict", content=payload, headers=headers)
                    ok = response.status_code == 200
                except httpx.HTTPError:
                    ok = False
                if time.perf_counter() <= stop_at:
                    done += ok
                    failed += not ok

    await asyncio.gather(*(client_loop() for _ in range(clients)))
    return done, failed


def measure(workers: int, args: argparse.Namespace, work: Path) -> float:
    command = [sys.executable, "-m", "judgelab.backend", "--workers", str(workers), "--log-level", "WARNING"]
    payload = body(args.tasks)
    with start_backend(work / f"workers-{workers}.log", command, timeout=180) as backend:
        asyncio.run(load(backend.url, payload, args.clients, args.warmup))  # every worker has parsed its config
        started = time.perf_counter()
        done, failed = asyncio.run(load(backend.url, payload, args.clients, args.seconds))
        elapsed = time.perf_counter() - started
    rate = done / elapsed
    print(
        f"{workers:>7} {rate:>10.1f} req/s {rate * args.tasks:>9.0f} tasks/s"
        + (f"  ({failed} failed)" if failed else ""),
        flush=True,
    )
    return rate


def overlap_bodies(calls: int, tasks: int, prompts: int) -> list[dict]:
    """``calls`` /predict bodies of ``tasks`` tasks each; task ``k`` of call ``c`` has prompt
    ``(c * tasks + k) % prompts`` (distinct within a call when ``tasks`` <= ``prompts``)."""
    sample = HOTEL.samples()[0]["data"]
    bodies = []
    for c in range(calls):
        batch = []
        for k in range(tasks):
            p = (c * tasks + k) % prompts
            batch.append({"id": c * tasks + k, "data": {**sample, "summary": f"prompt {p}: {sample['summary']}"}})
        bodies.append({"tasks": batch, "project": "1.1", "label_config": HOTEL.config_xml})
    return bodies


def overlap(args: argparse.Namespace, work: Path) -> None:
    """LLM requests per distinct prompt under overlapping /predict calls (see the module's doc)."""
    bodies = overlap_bodies(args.overlap_calls, args.overlap_tasks, args.prompts)
    with LLMSim(answer=ANSWER, latency=args.llm_latency) as sim:
        command = [
            *(sys.executable, "-m", "judgelab.backend", "--workers", str(args.overlap_workers)),
            *("--annotator", "llm", "--llm-base-url", sim.url, "--llm-model", "sim-model"),
            *("--cache-path", str(work / "overlap-cache.sqlite"), "--predict-deadline", str(args.deadline)),
            *("--log-level", "WARNING"),
        ]
        answered = [0] * len(bodies)
        with start_backend(work / "overlap.log", command, timeout=180) as backend:

            def one(i: int) -> None:  # a connection of its own: any worker may take it
                try:
                    response = httpx.post(
                        f"{backend.url}/predict", json=bodies[i], timeout=args.deadline + 60, verify=tls_context()
                    )
                    answered[i] = sum("result" in p for p in response.json()["results"])
                except (httpx.HTTPError, ValueError, KeyError):
                    pass

            started = time.perf_counter()
            threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            seconds = time.perf_counter() - started
        per_prompt = Counter(json.dumps(r.messages, sort_keys=True) for r in sim.chat_requests)
    sent = len(bodies) * args.overlap_tasks
    distinct = len({t["data"]["summary"] for b in bodies for t in b["tasks"]})
    print(
        f"\n{len(bodies)} overlapping /predict calls x {args.overlap_tasks} tasks over {distinct} distinct prompts, "
        f"{args.overlap_workers} workers, LLM at {args.llm_latency:g} s per answer: answered in {seconds:.1f} s, "
        f"{sum(answered)}/{sent} tasks with a result"
    )
    print(
        f"LLM requests: {sum(per_prompt.values())} for {len(per_prompt)} prompts asked; "
        f"LLM requests per distinct prompt: {sum(per_prompt.values()) / distinct:.2f} "
        f"(most for one prompt: {max(per_prompt.values(), default=0)})"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2, 4], help="none: only the overlap")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--clients", type=int, default=8, help="requests in flight at once")
    parser.add_argument("--tasks", type=int, default=10, help="tasks per /predict")
    parser.add_argument("--overlap", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--overlap-calls", type=int, default=60, help="overlapping /predict calls")
    parser.add_argument("--overlap-tasks", type=int, default=4, help="tasks per overlapping /predict")
    parser.add_argument("--overlap-workers", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=40, help="distinct prompts among the overlapping calls")
    parser.add_argument("--llm-latency", type=float, default=1.0, help="seconds per simulated LLM answer")
    parser.add_argument("--deadline", type=float, default=60.0, help="the backend's /predict deadline, seconds")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.workers:
            load = f"{args.clients} requests in flight, {args.tasks} tasks each, {args.seconds:g} s"
            print(f"{os.cpu_count()} CPUs; {load}\n")
            print(f"{'workers':>7} {'rate':>14} {'':>15}")
            rates = {w: measure(w, args, Path(tmp)) for w in args.workers}
            base = rates[args.workers[0]]
            ratios = ", ".join(f"{w}: {r / base:.2f}x" for w, r in rates.items())
            print(f"\nratio to {args.workers[0]} worker(s): {ratios}")
        if args.overlap:
            overlap(args, Path(tmp))


if __name__ == "__main__":
    main()
