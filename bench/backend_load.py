"""The backend under load: N concurrent ``/predict`` calls against the real backend
process with the LLM annotator and the simulated OpenAI-compatible server (``tests/llm_sim.py``, a
process of its own), while ``/health`` is asked every 50 ms as Label Studio would.

For N = 10, 50, 100 (a fresh backend each) it prints the share of calls answered within their
deadline + 1 s, the share of tasks that got a result, ``/health``'s p50/p99 against its p99 with
no load (measured first, in the same run), and the backend's peak RSS. Then memory across many
projects: ``/setup`` + ``/predict`` for 1,000 distinct project ids (the five schemas' configs),
printing RSS after each step as a ratio to the RSS once the model registry is full (100
projects); and ``/setup`` for 400 project ids with a 0.9 MB config each under
``--model-cache-mb 256``, printing the RSS growth from the backend's start against that cap and
what the registry counts. And one huge call (60,000 tasks, 50 MB) to the offline annotator, with
/health asked meanwhile.

Targets: 100% within deadline + 1 s; /health p99 < 1 s at N = 100; RSS flat across projects;
RSS growth at most 1.3x the model cap.

    python bench/backend_load.py [--deadline 10] [--tasks-per-call 4] [--latency 0.2]
    python bench/backend_load.py --only-cap [--big-projects 400] [--big-config-mb 0.9] [--model-cache-mb 256]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the simulated LLM and the backend launcher of the tests

from backend_process import BackendProcess, rss_mb, start_backend  # noqa: E402
from llm_throughput import start_sim, stop_sim  # noqa: E402

from judgelab.configs.schema import all_schemas, get_schema  # noqa: E402
from judgelab.sync.http_retry import tls_context  # noqa: E402

HOTEL = get_schema("hotel_spans")
ANSWER = json.dumps({"annotations": [], "impression": 5})


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


class HealthProbe:
    """GET /health every ``interval`` seconds on a new connection (as Label Studio's check), with
    the standard library's plain HTTP client: the time measured is the server's, not a client's."""

    def __init__(self, url: str, interval: float = 0.05):
        self.url, self.interval = url, interval
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port
        self.seconds: list[float] = []
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
            try:
                connection.request("GET", "/health")
                ok = connection.getresponse().status == 200
            except OSError:
                ok = False
            finally:
                connection.close()
            self.seconds.append(time.perf_counter() - started)
            self.failures += not ok
            self._stop.wait(self.interval)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def llm_backend(sim_url: str, deadline: float, log: Path, concurrency: int) -> BackendProcess:
    return start_backend(
        log,
        JUDGELAB_ANNOTATOR="llm",
        JUDGELAB_LLM_BASE_URL=sim_url,
        JUDGELAB_LLM_MODEL="sim-model",
        JUDGELAB_LLM_CONCURRENCY=str(concurrency),
        JUDGELAB_PREDICT_DEADLINE=str(deadline),
        JUDGELAB_CACHE_PATH="off",
        JUDGELAB_LOG_LEVEL="WARNING",
    )


def call_body(call: int, tasks_per_call: int) -> dict:
    sample = HOTEL.samples()[0]["data"]
    tasks = [
        {"id": call * 1000 + k, "data": {**sample, "summary": f"call {call} task {k}: {sample['summary']}"}}
        for k in range(tasks_per_call)
    ]
    return {"tasks": tasks, "project": f"{call % 7}.1", "label_config": HOTEL.config_xml}


def load_round(url: str, n: int, tasks_per_call: int) -> tuple[list[float], int, int]:
    """``n`` concurrent calls; returns each call's seconds from sending to its answer, the tasks
    answered with a result and the tasks sent."""
    seconds: list[float] = [float("inf")] * n
    answered = [0] * n
    with httpx.Client(limits=httpx.Limits(max_connections=n + 5), timeout=300, verify=tls_context()) as client:

        def one(i: int) -> None:
            body = call_body(i, tasks_per_call)
            started = time.perf_counter()
            try:
                response = client.post(f"{url}/predict", json=body)
                results = response.json()["results"]
                answered[i] = sum("result" in p for p in results)
            except (httpx.HTTPError, ValueError, KeyError):
                pass
            seconds[i] = time.perf_counter() - started

        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return seconds, sum(answered), n * tasks_per_call


def concurrency_bench(args: argparse.Namespace, sim_url: str, work: Path) -> None:
    with llm_backend(sim_url, args.deadline, work / "idle.log", args.llm_concurrency) as backend:
        with HealthProbe(backend.url) as idle:
            time.sleep(3)
    idle_p99 = percentile(idle.seconds, 0.99)
    print(f"\n/health with no load: p50 {statistics.median(idle.seconds) * 1000:.1f} ms, p99 {idle_p99 * 1000:.1f} ms")
    print(
        f"\n{'N':>4} {'within deadline+1s':>19} {'tasks answered':>15} {'slowest call':>13} "
        f"{'/health p50':>12} {'/health p99':>12} {'p99 vs idle':>12} {'peak RSS':>9}"
    )
    for n in args.calls:
        with llm_backend(sim_url, args.deadline, work / f"load-{n}.log", args.llm_concurrency) as backend:
            with HealthProbe(backend.url) as probe:
                seconds, answered, sent = load_round(backend.url, n, args.tasks_per_call)
            peak = peak_rss_mb(backend.proc.pid)
        within = sum(s <= args.deadline + 1 for s in seconds) / n
        p50, p99 = statistics.median(probe.seconds), percentile(probe.seconds, 0.99)
        print(
            f"{n:>4} {within:>18.0%} {answered:>7}/{sent:<7} {max(seconds):>12.2f}s "
            f"{p50 * 1000:>10.1f}ms {p99 * 1000:>10.1f}ms {p99 / idle_p99:>11.1f}x {peak:>7.0f}MB"
            + (f"  ({probe.failures} /health failures)" if probe.failures else "")
        )


def huge_call_bench(args: argparse.Namespace, work: Path) -> None:
    """One "Retrieve predictions" of a whole big project to the offline annotator: the body is
    parsed, the tasks annotated until the deadline and the answer encoded while /health is asked."""
    schema = get_schema("augmentation_quality")
    samples = schema.samples()
    tasks = [{"id": i, "data": samples[i % len(samples)]["data"]} for i in range(args.huge_tasks)]
    raw = json.dumps({"tasks": tasks, "project": "1.1", "label_config": schema.config_xml}).encode()
    env = {"JUDGELAB_PREDICT_DEADLINE": str(args.deadline), "JUDGELAB_LOG_LEVEL": "WARNING"}
    with start_backend(work / "huge.log", **env) as backend:
        with HealthProbe(backend.url) as probe:
            started = time.perf_counter()
            response = httpx.post(
                f"{backend.url}/predict",
                content=raw,
                headers={"Content-Type": "application/json"},
                timeout=600,
                verify=tls_context(),
            )
            seconds = time.perf_counter() - started
        answered = sum("result" in p for p in response.json()["results"])
        peak = peak_rss_mb(backend.proc.pid)
    print(
        f"\none call of {args.huge_tasks:,} tasks ({len(raw) / 1e6:.0f} MB) to the offline annotator, deadline "
        f"{args.deadline:g} s: answered in {seconds:.1f} s ({answered:,} tasks with a result); /health p50 "
        f"{statistics.median(probe.seconds) * 1000:.1f} ms, p99 {percentile(probe.seconds, 0.99) * 1000:.1f} ms, "
        f"max {max(probe.seconds) * 1000:.0f} ms; peak RSS {peak:.0f} MB"
    )


def padded_config(i: int, size: int) -> str:
    xml = HOTEL.config_xml
    head = xml.rfind("</View>")
    return xml[:head] + f'<Header value="{i} ' + "lorem ipsum " * (size // 12) + '"/>' + xml[head:]


def projects_bench(args: argparse.Namespace, work: Path) -> None:
    configs = [s.config_xml for s in all_schemas().values()]
    samples = {s.config_xml: s.samples()[0] for s in all_schemas().values()}
    with start_backend(work / "projects.log", JUDGELAB_LOG_LEVEL="WARNING") as backend:
        rss: dict[int, float] = {}
        with httpx.Client(base_url=backend.url, timeout=120, verify=tls_context()) as client:
            for project in range(1, args.projects + 1):
                config = configs[project % len(configs)]
                client.post("/setup", json={"project": f"{project}.1", "schema": config}).raise_for_status()
                task = {"id": project, "data": samples[config]["data"]}
                body = {"tasks": [task], "project": f"{project}.1", "label_config": config}
                client.post("/predict", json=body).raise_for_status()
                if project in (100, 250, 500, args.projects):
                    rss[project] = rss_mb(backend.proc.pid)
        first = rss[100]
        print(f"\n{args.projects} distinct projects (/setup + /predict each, the five schemas' configs):")
        print("  " + "   ".join(f"after {p}: {mb:.0f} MB ({mb / first:.2f}x)" for p, mb in rss.items()))


def labels_config(i: int, size: int) -> str:
    """The hotel config with one more Choices control of about ``size`` characters of choices (a
    big taxonomy): another config per ``i``."""
    xml = HOTEL.config_xml
    head = xml.rfind("</View>")
    choices = "".join(f'<Choice value="option {i} number {k:07d}"/>' for k in range(size // 40))
    return xml[:head] + f'<Choices name="extra{i}" toName="summary" choice="multiple">{choices}</Choices>' + xml[head:]


CAP_CONFIGS = {"labels": labels_config, "header": padded_config}


def cap_bench(args: argparse.Namespace, work: Path) -> None:
    """Memory against ``--model-cache-mb``: ``/setup`` for many project ids with a big config each
    (reachable without auth), RSS growth from the backend's start set against the cap, per kind
    of config (many labels; one long header) and annotator."""
    size = int(args.big_config_mb * 1024 * 1024)
    cap = args.model_cache_mb
    print(
        f"\n{args.big_projects} project ids with a {args.big_config_mb:g} MB config each (/setup, no auth), "
        f"--model-cache-mb {cap:g}:"
    )
    for annotator in args.cap_annotators:
        for kind in args.cap_configs:
            env = {"JUDGELAB_LOG_LEVEL": "WARNING", "JUDGELAB_MODEL_CACHE_MB": f"{cap:g}"}
            if annotator == "llm":  # /setup makes the LLM task too; nothing asks the LLM
                env.update(
                    JUDGELAB_ANNOTATOR="llm",
                    JUDGELAB_LLM_BASE_URL="http://127.0.0.1:9/v1",
                    JUDGELAB_LLM_MODEL="m",
                    JUDGELAB_CACHE_PATH="off",
                )
            with start_backend(work / f"cap-{annotator}-{kind}.log", **env) as backend:
                rss = {}
                with httpx.Client(base_url=backend.url, timeout=120, verify=tls_context()) as client:
                    client.post("/setup", json={"project": "0.1", "schema": HOTEL.config_xml}).raise_for_status()
                    start = rss_mb(backend.proc.pid)  # imports done, one small model kept
                    for project in range(1, args.big_projects + 1):
                        config = CAP_CONFIGS[kind](project, size)
                        body = {"project": f"{project}.1", "schema": config}
                        client.post("/setup", json=body).raise_for_status()
                        if project in (50, args.big_projects) or project % 100 == 0:
                            rss[project] = rss_mb(backend.proc.pid)
                    metrics = client.get("/metrics").text
            values = {line.split()[0]: float(line.split()[-1]) for line in metrics.splitlines() if line[:1] != "#"}
            counted = values["judgelab_models_cached_bytes"] + values.get("judgelab_llm_tasks_cached_bytes", 0)
            kept = f"{values['judgelab_models_cached']:.0f} models"
            if "judgelab_llm_tasks_cached" in values:
                kept += f" and {values['judgelab_llm_tasks_cached']:.0f} LLM tasks"
            grown = rss[args.big_projects] - start
            print(f"  {annotator} annotator, {kind} configs: RSS {start:.0f} MB at the start, then")
            print("    " + "   ".join(f"after {p}: +{mb - start:.0f} MB" for p, mb in sorted(rss.items())))
            print(
                f"    kept: {kept}, counted {counted / 1024 / 1024:.0f} MB against the cap; "
                f"RSS growth {grown:.0f} MB = {grown / cap:.2f}x the cap (target <= 1.3x)",
                flush=True,
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[10, 50, 100], help="concurrent /predict calls")
    parser.add_argument("--tasks-per-call", type=int, default=4)
    parser.add_argument("--deadline", type=float, default=10.0, help="JUDGELAB_PREDICT_DEADLINE, seconds")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per simulated LLM answer")
    parser.add_argument("--llm-concurrency", type=int, default=8)
    parser.add_argument("--projects", type=int, default=1000)
    parser.add_argument("--big-projects", type=int, default=400)
    parser.add_argument("--model-cache-mb", type=float, default=256.0, help="the backend's cap on its models")
    parser.add_argument("--big-config-mb", type=float, default=0.9)
    parser.add_argument("--huge-tasks", type=int, default=60000, help="tasks of the one huge call")
    parser.add_argument("--skip-projects", action="store_true")
    parser.add_argument("--only-cap", action="store_true", help="only the memory against --model-cache-mb")
    parser.add_argument("--cap-annotators", nargs="+", choices=["offline", "llm"], default=["offline", "llm"])
    parser.add_argument("--cap-configs", nargs="+", choices=list(CAP_CONFIGS), default=list(CAP_CONFIGS))
    args = parser.parse_args(argv)

    if args.only_cap:
        with tempfile.TemporaryDirectory() as tmp:
            cap_bench(args, Path(tmp))
        return
    sim, sim_url = start_sim(args.latency, ANSWER)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            print(
                f"LLM simulated at {args.latency} s per answer, {args.llm_concurrency} in flight; "
                f"deadline {args.deadline} s; {args.tasks_per_call} tasks per call"
            )
            concurrency_bench(args, sim_url, Path(tmp))
            huge_call_bench(args, Path(tmp))
            if not args.skip_projects:
                projects_bench(args, Path(tmp))
                cap_bench(args, Path(tmp))
    finally:
        stop_sim(sim)


if __name__ == "__main__":
    main()
