"""Pre-annotate through a batch API: the same predictions as the live path, at the batch price.

Three routes (:data:`BATCH_MODES`), each a run of ``judgelab preannotate`` that is safe to repeat:

- ``api`` (``--batch``): the prompts of the tasks still without a prediction, but those whose
  answers the backend already holds, go to the LLM provider's Batch API as one batch (the backend
  uploads them: ``/files`` + ``/batches``, with its own LLM settings) and the run returns. The
  backend records the batch for the project, so the next run asks the provider how far it is, or
  collects it when it is over, and then pushes the predictions. A run finding no batch of the
  project running sends the prompts still unanswered as a new batch.
- ``file`` (``--batch-file requests.jsonl``): the same request lines written to a file, for
  ``vllm run-batch`` on a team's own GPU machine, or any tool speaking OpenAI's batch format.
- ``results`` (``--batch-results results.jsonl``): such a tool's output read in.

Every route first pushes the predictions the backend can make from what it holds (its response
cache and the batch answers collected), asking the LLM nothing live (``/predict`` with ``ask:
false``): the answers go through the same parsing, checks and span alignment as live ones, and are
recorded in the cost ledger at the batch price. The blind arm's tasks are never sent.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgelab.sync.backend_client import BackendClient
from judgelab.sync.bulk_predict import predict_body, push_predictions, task_data, tasks_missing_version
from judgelab.sync.client import SyncError

if TYPE_CHECKING:
    from judgelab.sync.preannotate import PreannotateOptions

BATCH_MODES = ("api", "file", "results")
RESULT_LINES_PER_REQUEST = 2000  # a results file goes to the backend in parts of this many lines
#: What ``preannotate`` says, per provider status of a batch it collected.
ENDED = {
    "completed": "completed",
    "expired": "expired before the provider finished it (its completion window is 24 h)",
    "cancelled": "was cancelled",
    "failed": "failed: the provider refused it",
}


@dataclass
class BatchReport:
    """What a batch run did for one project."""

    mode: str
    pushed: int = 0  # predictions imported in this run (from answers the backend holds)
    requests: int = 0  # request lines sent (api) or written (file) in this run
    counts: dict[str, int] = field(default_factory=dict)  # /batch/requests' counts, summed
    batch_id: str | None = None  # the batch sent in this run
    running: list[dict[str, Any]] = field(default_factory=list)  # the project's batches still running
    collected: list[dict[str, Any]] = field(default_factory=list)  # batches collected in this run
    results: dict[str, Any] | None = None  # what a results file gave
    lines: list[dict[str, Any]] = field(default_factory=list)  # the lines for the requests file
    halved: list[str] = field(default_factory=list)  # models whose batch price is half the live one
    unpriced: bool = False  # no prices at all

    def as_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "pushed": self.pushed,
            "requests": self.requests,
            "counts": dict(self.counts),
            "batch_id": self.batch_id,
            "running": [_job_json(job) for job in self.running],
            "collected": [_job_json(job) for job in self.collected],
            "results": self.results,
        }

    def lines_to_say(self, left: int) -> list[str]:
        """What the user should know and do (``left``: tasks still without a prediction)."""
        said = []
        for job in self.collected:
            said.append(_collected_line(job, left))
        for job in self.running:
            counts = job.get("request_counts") or {}
            if job.get("error"):
                said.append(f"batch {job['id']}: the provider did not answer ({job['error']}); run again later")
                continue
            done = f"{counts.get('completed', 0)}/{counts.get('total', job.get('requests'))}"
            said.append(
                f"batch {job['id']} is {job['status']}: {done} request(s) answered so far; run the same command "
                "again later to collect it (a batch API answers within 24 h)"
            )
        if self.results is not None:
            said.append(_results_line(self.results, left))
        counts = self.counts
        not_sent = []
        if counts.get("cached"):
            not_sent.append(f"{counts['cached']} already answered in the cache")
        if counts.get("answered"):
            not_sent.append(f"{counts['answered']} answered by a batch, not yet used")
        if counts.get("in_flight"):
            not_sent.append(f"{counts['in_flight']} in a batch still running")
        skipped = f" (not sent: {', '.join(not_sent)})" if not_sent else ""
        if self.mode == "api" and self.batch_id:
            said.append(
                f"sent batch {self.batch_id} of {self.requests} request(s){skipped}; run the same command again "
                "later: it reports the batch's progress, or collects it and pushes the predictions"
            )
        elif self.mode == "file" and self.requests:
            said.append(f"{self.requests} request(s){skipped}")
        elif self.mode == "api" and not self.running and not self.collected and left:
            said.append(f"nothing to send{skipped}")
        if self.halved and (self.batch_id or self.requests):
            said.append(
                f"batch answers are priced at half the live price for {', '.join(self.halved)} "
                "(no --price-batch-in/--price-batch-out given)"
            )
        return said


def _job_json(job: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "status", "requests", "request_counts", "outcome", "error")
    return {k: job.get(k) for k in keys if job.get(k) is not None}


def _collected_line(job: dict[str, Any], left: int) -> str:
    outcome = job.get("outcome") or {}
    status = str(job.get("status"))
    head = f"batch {job['id']} {ENDED.get(status, status)}"
    if status == "failed":
        errors = "; ".join(outcome.get("errors") or []) or "no reason given"
        return (
            f"{head} ({errors}); nothing was answered, nothing is paid: fix the cause and run the same command "
            f"again to send the {left} task(s) in a new batch"
        )
    parts = [f"{outcome.get('stored', 0)} answer(s) collected"]
    if outcome.get("failed"):
        first = (outcome.get("failures") or ["?"])[0]
        parts.append(f"{outcome['failed']} request(s) failed (e.g. {first})")
    if outcome.get("missing"):
        parts.append(f"{outcome['missing']} request(s) missing from its output")
    parts += list(outcome.get("problems") or [])
    line = f"{head}: {'; '.join(parts)}"
    if left:
        line += f"; run the same command again to send the {left} task(s) left in a new batch"
    return line


def _results_line(results: dict[str, Any], left: int) -> str:
    parts = [f"{results.get('stored', 0)} answer(s) read"]
    if results.get("already"):
        parts.append(f"{results['already']} already read before")
    if results.get("failed"):
        first = (results.get("failures") or ["?"])[0]
        parts.append(f"{results['failed']} request(s) failed ({first})")
    parts += list(results.get("problems") or [])
    line = "; ".join(parts)
    if left:
        line += f"; {left} task(s) still lack an answer: --batch-file writes their requests again"
    return line


def batch_preannotate(
    client: Any,
    project_id: int,
    backend: BackendClient,
    versions: list[str],
    options: PreannotateOptions,
    *,
    extra_params: dict[str, Any] | None = None,
    progress: Callable[[int], None] | None = None,
) -> BatchReport:
    """One batch run for the project (see the module doc): read results or collect the project's
    batches, push what the backend holds, then send (``api``) or write (``file``) what is left."""
    mode = options.batch
    if mode not in BATCH_MODES:
        raise SyncError(f"batch mode must be one of {', '.join(BATCH_MODES)}")
    report = BatchReport(mode)
    if mode == "results":
        report.results = _send_results_file(backend, Path(str(options.batch_path)))
    if mode == "api":
        for job in backend.batch_status(project_id).get("batches") or []:
            (report.collected if job.get("collected") else report.running).append(job)
    pushed = push_predictions(
        client,
        project_id,
        backend,
        versions,
        dataclasses.replace(options, max_rounds=1),
        extra_params=extra_params,
        progress=progress,
        ask=False,
    )
    report.pushed = pushed.pushed
    if mode == "results" or report.running or report.collected:
        return report
    missing, _ = tasks_missing_version(client, project_id, versions)
    if not missing:
        return report
    keys = _batch_requests(client, project_id, backend, missing, options.chunk_size, extra_params, report)
    report.requests = len(keys)
    if mode == "api" and keys:
        sent = backend.batch_submit(project_id, keys)
        report.batch_id = sent.get("batch")
        report.requests = int(sent.get("requests") or 0)
    return report


def _send_results_file(backend: BackendClient, path: Path) -> dict[str, Any]:
    """The results file at ``path`` (--batch-results) sent to the backend; its answers summed."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SyncError(f"--batch-results {path}: cannot read it ({exc})") from None
    return send_results(backend, text, str(path))


def _batch_requests(
    client: Any,
    project_id: int,
    backend: BackendClient,
    missing: list[int],
    chunk_size: int,
    extra_params: dict[str, Any] | None,
    report: BatchReport,
) -> list[str]:
    """Have the backend make the batch requests of the ``missing`` tasks, ``chunk_size`` tasks at a
    time; the requests' keys, each once. The counts, the judges halved and whether any is priced go
    into ``report``, and in ``file`` mode the request lines too."""
    project = client.projects.get(id=project_id)
    keys: list[str] = []
    seen: set[str] = set()
    for start in range(0, len(missing), max(1, chunk_size)):
        ids = missing[start : start + chunk_size]
        data = task_data(client, project_id, ids)
        answer = backend.batch_requests(predict_body(project, [(i, data[i]) for i in ids if i in data], extra_params))
        lines = answer.get("requests") or []
        for name, count in (answer.get("counts") or {}).items():
            report.counts[name] = report.counts.get(name, 0) + int(count or 0)
        report.halved = [j["model"] for j in answer.get("judges") or [] if j.get("halved")]
        report.unpriced = all(j.get("prices") is None for j in answer.get("judges") or [])
        fresh = [line for line in lines if line["custom_id"] not in seen]
        seen |= {line["custom_id"] for line in fresh}
        keys += [line["custom_id"] for line in fresh]
        if report.mode == "file":
            report.lines += fresh
    return keys


def send_results(backend: BackendClient, text: str, source: str) -> dict[str, Any]:
    """A results file sent to the backend in parts (a request body stays small); the parts' answers summed."""
    lines = text.splitlines(keepends=True)
    total: dict[str, Any] = {"stored": 0, "already": 0, "failed": 0, "failures": [], "problems": []}
    for start in range(0, max(1, len(lines)), RESULT_LINES_PER_REQUEST):
        part = backend.batch_results("".join(lines[start : start + RESULT_LINES_PER_REQUEST]), source, start + 1)
        for name in ("stored", "already", "failed"):
            total[name] += int(part.get(name) or 0)
        total["failures"] = (total["failures"] + list(part.get("failures") or []))[:5]
        total["problems"] += list(part.get("problems") or [])
    return total


def write_requests(path: Path, lines: list[dict[str, Any]]) -> None:
    """The request lines as a JSONL file (OpenAI's batch input format, which ``vllm run-batch`` reads)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as out:
            for line in lines:
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise SyncError(f"--batch-file {path}: cannot write it ({exc})") from None
