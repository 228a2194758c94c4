"""``GET /metrics``: what the backend has done, in the Prometheus text format (prometheus-client).

With one server process its counts are kept in memory. With several (``--workers N``) each worker
writes them to files in ``PROMETHEUS_MULTIPROC_DIR`` (prometheus-client's multiprocess mode;
``judgelab serve`` makes a temporary folder when none is set) and a scrape, whichever worker
answers it, adds up every worker's: requests, durations, predictions, the annotator's events and
the fetched files. What describes one process (``judgelab_backend_info`` and its ``pid``, the
models kept, memory and CPU) is the answering worker's own.

>>> m = Metrics()
>>> m.request_started("/predict")
>>> m.request_finished("/predict", 200, 0.3)
>>> m.count_predictions([{"result": []}, {"error": "x"}])
>>> text = m.render()
>>> 'judgelab_requests_total{path="/predict",status="200"} 1.0' in text
True
>>> 'judgelab_request_duration_seconds_bucket{le="0.5",path="/predict"} 1.0' in text
True
>>> 'judgelab_predictions_total{outcome="failed"} 1.0' in text
True
"""

from __future__ import annotations

import glob
import math
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import prometheus_client
from prometheus_client import CollectorRegistry, Gauge, Histogram, ProcessCollector, generate_latest
from prometheus_client import Counter as CounterMetric
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector

from judgelab.backend.model import NO_ANSWER_YET

CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST
#: The variable that turns prometheus-client's multiprocess mode on (read when it is imported).
MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"
#: Request duration buckets (seconds): /health must stay under 1 s, a /predict under its deadline.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 80.0, 100.0, math.inf)
#: Paths counted under their own name; anything else is "other" (random paths must not add series).
KNOWN_PATHS = frozenset({"/", "/health", "/setup", "/predict", "/webhook", "/train", "/metrics"})
PREDICTION_OUTCOMES = ("predicted", "no_answer_yet", "failed")
FILE_OUTCOMES = ("fetched", "cached", "failed", "refused")

prometheus_client.disable_created_metrics()  # no *_created series beside each counter


class WorkersCollector(MultiProcessCollector):
    """prometheus-client's collector of every worker's files, but for a file a starting worker has
    created and not sized yet (empty: it holds no count). Read in that moment, it failed the whole
    scrape with a ``struct.error`` (``/metrics`` answered 500 just after ``serve --workers 2``
    answered ``/health``)."""

    def collect(self):
        files = []
        for path in glob.glob(os.path.join(self._path, "*.db")):
            try:
                if os.path.getsize(path) > 0:
                    files.append(path)
            except FileNotFoundError:  # a worker's file removed meanwhile
                pass
        return self.merge(files, accumulate=True)


def multiprocess_mode() -> bool:
    """Whether counts go to the files of ``PROMETHEUS_MULTIPROC_DIR`` (several workers)."""
    return bool(os.environ.get(MULTIPROC_DIR))


class Followed:
    """A counter kept up with counts another object keeps in a ``Counter`` (the annotator's,
    the file fetcher's): each sync adds what they grew by since the last."""

    def __init__(self, counter: CounterMetric, read: Callable[[], Mapping[tuple[str, ...], float]]):
        self.counter = counter
        self.read = read
        self.seen: dict[tuple[str, ...], float] = {}

    def sync(self) -> None:
        for labels, n in self.read().items():
            grown = n - self.seen.get(labels, 0)
            if grown > 0:
                (self.counter.labels(*labels) if labels else self.counter).inc(grown)
                self.seen[labels] = n


class StateCollector:
    """A collector of what one process holds now, asked at each scrape."""

    def __init__(self, families: Callable[[], Iterable[Metric]]):
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return list(self.families())


class Metrics:
    """The counters of the backend (thread-safe); in multiprocess mode, of all its workers."""

    def __init__(
        self,
        annotator_stats: Mapping[str, Any] | None = None,
        file_stats: Mapping[str, int] | None = None,
        state: Callable[[], Iterable[Metric]] = tuple,
    ) -> None:
        self._lock = threading.Lock()
        self.registry = CollectorRegistry()
        if multiprocess_mode():
            WorkersCollector(self.registry)
            counted_in = None  # counted in the files, read back by the collector
        else:
            counted_in = self.registry
        ProcessCollector(registry=self.registry)
        self.registry.register(StateCollector(state))

        def counter(name: str, help: str, labels: Iterable[str] = ()) -> CounterMetric:
            return CounterMetric(name, help, list(labels), registry=counted_in)

        self.requests = counter(
            "judgelab_requests_total", "HTTP requests answered, by path and status.", ("path", "status")
        )
        self.in_progress = Gauge(
            "judgelab_requests_in_progress",
            "HTTP requests being answered now.",
            ["path"],
            registry=counted_in,
            multiprocess_mode="livesum",
        )
        self.durations = Histogram(
            "judgelab_request_duration_seconds",
            "Time from a request's arrival to its answer.",
            ["path"],
            buckets=BUCKETS,
            registry=counted_in,
        )
        self.predictions = counter(
            "judgelab_predictions_total",
            "Tasks answered by /predict: predicted (a result), no_answer_yet (not reached before the "
            "deadline: Label Studio asks again), failed (a placeholder saying why).",
            ("outcome",),
        )
        for outcome in PREDICTION_OUTCOMES:
            self.predictions.labels(outcome)
        events = counter("judgelab_annotator_events_total", "What the annotator counted, by event.", ("event",))
        hits = counter("judgelab_llm_cache_hits_total", "Tasks answered from the LLM response cache.")
        files = counter(
            "judgelab_label_studio_files_total", "Texts of Label Studio URLs in tasks, by outcome.", ("outcome",)
        )
        for outcome in FILE_OUTCOMES:
            files.labels(outcome)
        annotator_stats = annotator_stats if annotator_stats is not None else {}
        file_stats = file_stats if file_stats is not None else {}
        self.followed = [
            Followed(
                events, lambda: {(str(e),): n for e, n in dict(annotator_stats).items() if isinstance(n, (int, float))}
            ),
            Followed(hits, lambda: {(): annotator_stats.get("cached", 0)}),
            Followed(files, lambda: {(o,): file_stats.get(o, 0) for o in FILE_OUTCOMES}),
        ]

    @staticmethod
    def path_label(path: str) -> str:
        return path if path in KNOWN_PATHS else "other"

    def request_started(self, path: str) -> None:
        self.in_progress.labels(self.path_label(path)).inc()

    def request_finished(self, path: str, status: int, seconds: float) -> None:
        """A request that :meth:`request_started` counted has been answered (and what the
        annotator and the file fetcher counted meanwhile is added)."""
        label = self.path_label(path)
        self.in_progress.labels(label).dec()
        self.requests.labels(label, str(status)).inc()
        self.durations.labels(label).observe(seconds)
        self.sync()

    def count_predictions(self, predictions: Iterable[Any]) -> None:
        """``predicted`` (a result), ``no_answer_yet`` (ran out of time) or ``failed``, per task (a
        task with several judges has a list of predictions, all with a result)."""
        counts: Counter[str] = Counter()
        for p in predictions:
            if isinstance(p, list) or "result" in p:
                counts["predicted"] += 1
            elif p.get("error") == NO_ANSWER_YET:
                counts["no_answer_yet"] += 1
            else:
                counts["failed"] += 1
        for outcome, n in counts.items():
            self.predictions.labels(outcome).inc(n)

    def sync(self) -> None:
        """Add to the counters what the annotator and the file fetcher counted since the last sync."""
        with self._lock:
            for followed in self.followed:
                followed.sync()

    def render(self) -> str:
        self.sync()
        return generate_latest(self.registry).decode()
