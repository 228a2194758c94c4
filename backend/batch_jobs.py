"""The backend's side of batch APIs (:mod:`judgelab.backend.llm.batch`), behind its routes.

- ``POST /batch/requests`` (a body as ``/predict``'s: ``tasks``, ``project``, ``label_config``,
  ``params.extra_params``): the request lines of every judge and sample the live path would ask
  for these tasks, but those the cache holds, a batch answered or a batch still running has; the
  blind arm never has any. The lines are kept, so their answers are known when they come.
- ``POST /batch/results`` (``{"results": "<JSONL>", "source": "results.jsonl", "first_line": 1}``):
  a results file (or a part of it, from its line ``first_line``)
  of a batch (``vllm run-batch``'s output, or any tool's in OpenAI's format) read; its answers
  wait for the ``/predict`` that uses them. Lines it cannot use are named, by line.
- ``POST /batch/submit`` (``{"project", "keys": [custom_id, ...]}``): those kept lines sent to
  the LLM provider's Batch API (``/files`` + ``/batches``); the batch is recorded for the project.
- ``GET /batch/status?project=ID``: the project's batches; a running one is asked about, a
  finished one collected (its answers, its failed and missing lines, what to do next).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from judgelab.backend.llm.batch import (
    KEY_LENGTH,
    OPEN_STATUSES,
    BatchError,
    BatchProvider,
    BatchStore,
    read_results,
)

if TYPE_CHECKING:
    from judgelab.backend.app import Backend

log = logging.getLogger("judgelab.backend.batch")


class BatchJobs:
    """The batch routes' work for one :class:`~judgelab.backend.app.Backend`."""

    def __init__(self, backend: Backend):
        self.backend = backend
        self._provider: BatchProvider | None = None

    @property
    def store(self) -> BatchStore:
        store = getattr(self.backend.annotator, "batches", None)
        if getattr(self.backend.annotator, "batch_requests", None) is None:
            raise ValueError(
                f"the {self.backend.annotator.name} annotator asks no LLM: batch APIs need the llm annotator"
            )
        if store is None:
            raise ValueError("batch APIs need the response cache's file (JUDGELAB_CACHE_PATH is off)")
        return store

    @property
    def provider(self) -> BatchProvider:
        if self._provider is None:
            self._provider = BatchProvider(self.backend.settings.llm)
        return self._provider

    def requests(self, payload: dict[str, Any]) -> dict[str, Any]:
        store = self.store
        tasks = payload.get("tasks")
        if not isinstance(tasks, list):
            raise ValueError("'tasks' must be a list")
        model = self.backend.model_for(payload.get("project"), payload.get("label_config") or payload.get("schema"))
        params = payload.get("params") if isinstance(payload.get("params"), dict) else {}
        if "extra_params" in params:
            model.configure(params.get("extra_params"))
        lines, counts = model.batch_requests(tasks)
        store.remember_lines(str(model.project_id), lines)
        judges = [{"model": j.model, "prices": j.batch_prices, "halved": j.batch_price_halved} for j in model.judges]
        return {"requests": lines, "counts": counts, "judges": judges, "model_versions": model.model_versions}

    def results(self, payload: dict[str, Any]) -> dict[str, Any]:
        assert self.store is not None  # refused at once without the llm annotator or the cache file
        text, source = payload.get("results"), str(payload.get("source") or "results")
        if not isinstance(text, str):
            raise ValueError("'results' must be the results file's text (JSONL)")
        first = payload.get("first_line", 1)
        if isinstance(first, bool) or not isinstance(first, int) or first < 1:
            raise ValueError("'first_line' must be a line number (1 or more)")
        read = read_results(text, source, first)
        return self._keep(read, "file", known=None, source=source)

    def _keep(self, read: Any, batch: str, known: set[str] | None, source: str) -> dict[str, Any]:
        """Store the answers judgelab asked for (``known``: the batch's keys; None: any line kept)."""
        store, cache = self.store, self.backend.annotator.cache
        fresh, already, unknown = {}, 0, []
        waiting = store.answered(read.answers)
        for key, completion in read.answers.items():
            if key in waiting or cache.get(key) is not None:
                already += 1
            elif (known is not None and key in known) or (known is None and store.known(key)):
                fresh[key] = completion
            else:
                unknown.append(key)
        stored = store.store_answers(fresh, batch)
        problems = list(read.bad_lines)
        if unknown:
            shown = ", ".join(k[:12] + "..." if len(k) == KEY_LENGTH else k for k in unknown[:3])
            problems.append(
                f"{source}: {len(unknown)} answer(s) to requests judgelab did not write (custom_id {shown}): "
                "were they made from another requests file, or another backend's?"
            )
        counts = (stored, already, len(read.failed), len(problems))
        log.info("batch %s: %d answers stored, %d already, %d failed, %d problems", batch, *counts)
        return {
            "stored": stored,
            "already": already,
            "failed": len(read.failed),
            "failures": list(read.failed.values())[:5],
            "problems": problems,
        }

    def submit(self, payload: dict[str, Any]) -> dict[str, Any]:
        store = self.store
        project = str(payload.get("project") or "").split(".")[0] or None
        keys = payload.get("keys")
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise ValueError("'keys' must be a list of custom_ids from /batch/requests")
        busy = store.in_flight(keys) | store.answered(keys)
        lines = [line for line in store.lines(keys) if line["custom_id"] not in busy]
        if not lines:
            return {"batch": None, "requests": 0}
        batch = self.provider.submit(lines, {"judgelab_project": str(project)})
        sent = [line["custom_id"] for line in lines]
        store.open_job(str(batch["id"]), project, str(batch.get("status") or "validating"), sent)
        return {"batch": batch["id"], "status": batch.get("status"), "requests": len(lines)}

    def status(self, project: str | None) -> dict[str, Any]:
        store = self.store
        project = str(project or "").split(".")[0] or None
        answer = []
        for job in store.jobs(project, open_only=True):
            try:
                batch = self.provider.status(job["id"])
            except BatchError as exc:
                answer.append({**job, "error": str(exc)})
                continue
            status = str(batch.get("status") or "unknown")
            counts = batch.get("request_counts") if isinstance(batch.get("request_counts"), dict) else {}
            if status in OPEN_STATUSES:
                store.set_status(job["id"], status)
                answer.append({**job, "status": status, "request_counts": counts})
                continue
            try:
                outcome = self._collect(job, batch, status)
            except BatchError as exc:  # the output could not be read: asked again next time
                answer.append({**job, "status": status, "request_counts": counts, "error": str(exc)})
                continue
            answer.append({**job, "status": status, "request_counts": counts, "outcome": outcome, "collected": True})
        return {"project": project, "batches": answer, "waiting_answers": store.waiting()}

    def _collect(self, job: dict[str, Any], batch: dict[str, Any], status: str) -> dict[str, Any]:
        """A finished batch's answers stored, its other lines freed; what happened, for the user."""
        store = self.store
        keys = set(store.job_keys(job["id"]))
        read = None
        outcome: dict[str, Any] = {"stored": 0, "already": 0, "failed": 0, "failures": [], "problems": []}
        for which in ("output_file_id", "error_file_id"):
            file_id = batch.get(which)
            if not file_id:
                continue
            part = read_results(self.provider.content(str(file_id)), f"batch {job['id']} {which[:-3]}")
            if read is None:
                read = part
            else:
                read.answers.update(part.answers)
                read.failed.update(part.failed)
                read.bad_lines += part.bad_lines
        if read is not None:
            outcome = self._keep(read, str(job["id"]), keys, f"batch {job['id']}")
            answered_or_failed = set(read.answers) | set(read.failed)
        else:
            answered_or_failed = set()
        outcome["missing"] = len(keys - answered_or_failed)
        errors = batch.get("errors") if isinstance(batch.get("errors"), dict) else {}
        said = [
            f"line {e.get('line')}: {e.get('message') or e.get('code')}" if e.get("line") else str(e.get("message"))
            for e in errors.get("data") or []
            if isinstance(e, dict)
        ]
        outcome["errors"] = said[:5]
        store.close_job(job["id"], status, outcome)
        return outcome
