"""Requests per second on ``/predict`` with the offline annotator at 1, 2 and 4 worker processes
(``judgelab serve --workers N``), printed as ratios to 1 worker measured in the same run (issue 13).

Each run starts the real backend, warms it up, then keeps ``--clients`` requests in flight for
``--seconds`` seconds, each a new connection (so the kernel spreads them over the workers, as
Label Studio's calls are spread) carrying ``--tasks`` hotel_spans tasks. The load generator is one
asyncio process on the same machine: on a 2-core machine it takes a share of the CPU the workers
could use, which is part of what the ratios show.

    python bench/backend_workers.py [--workers 1 2 4] [--seconds 20] [--clients 8] [--tasks 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the backend launcher of the tests

from backend_process import start_backend  # noqa: E402

from judgelab.configs.schema import get_schema  # noqa: E402

HOTEL = get_schema("hotel_spans")


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
        async with httpx.AsyncClient(limits=limits, timeout=120) as client:
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--clients", type=int, default=8, help="requests in flight at once")
    parser.add_argument("--tasks", type=int, default=10, help="tasks per /predict")
    args = parser.parse_args(argv)
    print(f"{os.cpu_count()} CPUs; {args.clients} requests in flight, {args.tasks} tasks each, {args.seconds:g} s\n")
    print(f"{'workers':>7} {'rate':>14} {'':>15}")
    with tempfile.TemporaryDirectory() as tmp:
        rates = {w: measure(w, args, Path(tmp)) for w in args.workers}
    base = rates[args.workers[0]]
    print(f"\nratio to {args.workers[0]} worker(s): " + ", ".join(f"{w}: {r / base:.2f}x" for w, r in rates.items()))


if __name__ == "__main__":
    main()
