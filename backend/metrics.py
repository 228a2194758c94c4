"""``GET /metrics``: what the backend has done, in the Prometheus text format (version 0.0.4).

Counted per server process: with ``--workers N`` each worker counts its own requests and a scrape
reaches one of them (the ``pid`` of ``judgelab_backend_info`` says which); add up a series over
workers only when every worker is scraped (e.g. one port per worker behind the balancer).

>>> m = Metrics()
>>> m.request_started("/predict")
>>> m.request_finished("/predict", 200, 0.3)
>>> m.count_predictions([{"result": []}, {"error": "x"}])
>>> text = m.render()
>>> 'judgelab_requests_total{path="/predict",status="200"} 1' in text
True
>>> 'judgelab_request_duration_seconds_bucket{path="/predict",le="0.5"} 1' in text
True
>>> 'judgelab_predictions_total{outcome="failed"} 1' in text
True
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from judgelab.backend.model import NO_ANSWER_YET

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: Request duration buckets (seconds): /health must stay under 1 s, a /predict under its deadline.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 80.0, 100.0, math.inf)
#: Paths counted under their own name; anything else is "other" (random paths must not add series).
KNOWN_PATHS = frozenset({"/", "/health", "/setup", "/predict", "/webhook", "/train", "/metrics"})

Labels = tuple[tuple[str, str], ...]


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _labels(labels: Labels) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels) + "}" if labels else ""


def _number(value: float) -> str:
    if value == math.inf:
        return "+Inf"
    return str(int(value)) if float(value).is_integer() else repr(float(value))


@dataclass
class Family:
    """One metric: its samples by labels."""

    name: str
    kind: str  # counter, gauge, histogram
    help: str
    samples: list[tuple[str, Labels, float]] = field(default_factory=list)  # (suffix, labels, value)

    def add(self, value: float, suffix: str = "", **labels: str) -> Family:
        self.samples.append((suffix, tuple(labels.items()), value))
        return self

    def render(self) -> str:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}"]
        lines += [f"{self.name}{suffix}{_labels(labels)} {_number(v)}" for suffix, labels, v in self.samples]
        return "\n".join(lines)


class Histogram:
    def __init__(self) -> None:
        self.counts = [0] * len(BUCKETS)
        self.total = 0.0
        self.count = 0

    def observe(self, seconds: float) -> None:
        for i, bound in enumerate(BUCKETS):
            if seconds <= bound:
                self.counts[i] += 1
                break
        self.total += seconds
        self.count += 1

    def add_to(self, family: Family, **labels: str) -> None:
        running = 0
        for bound, n in zip(BUCKETS, self.counts, strict=True):
            running += n
            family.add(running, "_bucket", **labels, le=_number(bound))
        family.add(self.total, "_sum", **labels)
        family.add(self.count, "_count", **labels)


def process_memory_bytes() -> float:
    """Resident memory of this process (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0.0


class Metrics:
    """The counters of one server process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started = time.time()
        self.requests: Counter[tuple[str, str]] = Counter()
        self.in_progress: Counter[str] = Counter()
        self.durations: dict[str, Histogram] = {}
        self.predictions: Counter[str] = Counter()

    @staticmethod
    def path_label(path: str) -> str:
        return path if path in KNOWN_PATHS else "other"

    def request_started(self, path: str) -> None:
        with self._lock:
            self.in_progress[self.path_label(path)] += 1

    def request_finished(self, path: str, status: int, seconds: float) -> None:
        """A request that :meth:`request_started` counted has been answered."""
        label = self.path_label(path)
        with self._lock:
            self.in_progress[label] -= 1
            self.requests[(label, str(status))] += 1
            self.durations.setdefault(label, Histogram()).observe(seconds)

    def count_predictions(self, predictions: Iterable[Any]) -> None:
        """``predicted`` (a result), ``no_answer_yet`` (ran out of time) or ``failed``, per task (a
        task with several judges has a list of predictions, all with a result)."""
        counts: Counter[str] = Counter()
        for p in predictions:
            if isinstance(p, list):
                counts["predicted"] += 1
            elif "result" in p:
                counts["predicted"] += 1
            elif p.get("error") == NO_ANSWER_YET:
                counts["no_answer_yet"] += 1
            else:
                counts["failed"] += 1
        with self._lock:
            self.predictions.update(counts)

    def render(self, extra: Iterable[Family] = ()) -> str:
        with self._lock:
            requests = Family("judgelab_requests_total", "counter", "HTTP requests answered, by path and status.")
            for (path, status), n in sorted(self.requests.items()):
                requests.add(n, path=path, status=status)
            running = Family("judgelab_requests_in_progress", "gauge", "HTTP requests being answered now.")
            for path, n in sorted(self.in_progress.items()):
                running.add(n, path=path)
            durations = Family(
                "judgelab_request_duration_seconds", "histogram", "Time from a request's arrival to its answer."
            )
            for path, histogram in sorted(self.durations.items()):
                histogram.add_to(durations, path=path)
            predictions = Family(
                "judgelab_predictions_total",
                "counter",
                "Tasks answered by /predict: predicted (a result), no_answer_yet (not reached before the "
                "deadline: Label Studio asks again), failed (a placeholder saying why).",
            )
            for outcome in ("predicted", "no_answer_yet", "failed"):
                predictions.add(self.predictions[outcome], outcome=outcome)
        memory = Family("process_resident_memory_bytes", "gauge", "Resident memory of this process.")
        memory.add(process_memory_bytes())
        cpu = Family("process_cpu_seconds_total", "counter", "CPU time of this process.").add(time.process_time())
        start = Family("process_start_time_seconds", "gauge", "When this process started (Unix time).")
        start.add(self.started)
        families = [requests, running, durations, predictions, *extra, memory, cpu, start]
        return "\n".join(f.render() for f in families) + "\n"


def annotator_families(stats: Mapping[str, int] | None) -> list[Family]:
    """An annotator's own counts (the LLM annotator's: tasks, cached, answered, failures by kind)."""
    events = Family("judgelab_annotator_events_total", "counter", "What the annotator counted, by event.")
    hits = Family("judgelab_llm_cache_hits_total", "counter", "Tasks answered from the LLM response cache.")
    stats = dict(stats or {})
    for event, n in sorted(stats.items()):
        if isinstance(n, (int, float)):
            events.add(n, event=str(event))
    hits.add(stats.get("cached", 0))
    return [events, hits]
