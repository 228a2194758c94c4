"""Pre-annotate a project's tasks that have no prediction of the backend's current model version.

Three ways, chosen by the number of such tasks (``method="auto"``):

- ``retrieve``: Label Studio's own "Retrieve predictions" on those tasks, one request. Label
  Studio calls the backend itself and saves each prediction on its own (on SQLite, one commit
  each): 39-240 ms per task on a shared 2-core machine depending on its load, 60.5 s for 1,000
  tasks (``bench/preannotate_paths.py``); so it is used up to :data:`SINGLE_REQUEST_MAX` tasks,
  which finish within a minute even on the loaded machine, well inside :data:`RETRIEVE_TIMEOUT`.
- ``push`` (more tasks, or ``--push``): judgelab sends the tasks to the backend in chunks
  and imports the predictions of up to five chunks in one request (:mod:`sync.bulk_predict`), with a
  progress bar. It needs the backend as judgelab reaches it (a
  :class:`~judgelab.sync.backend_client.BackendClient`).
- ``chunks`` (more tasks, and judgelab cannot reach the backend, e.g. a Docker network only
  Label Studio is on): "Retrieve predictions" on one chunk of task ids at a time.
- ``batch`` (``--batch``, ``--batch-file``, ``--batch-results``): through a batch API, answered
  within a day at a lower price (:mod:`judgelab.sync.batch_predict`).

Every way is resumable: only tasks still without a prediction of the version are sent, and a
request Label Studio does not answer in time ends with a :class:`PreannotateIncomplete` that
says how far it got and what to run next, never with a traceback.

A run's settings are one :class:`PreannotateOptions`, the same for every project of a
``judgelab preannotate``; it refuses a ``--budget`` without ``--push``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from judgelab.sync.backend_client import BackendClient
from judgelab.sync.backend_link import BackendUnreachable, RunUsage, backend_usage
from judgelab.sync.batch_predict import BatchReport, batch_preannotate
from judgelab.sync.bulk_predict import (
    CHUNK_SIZE,
    MAX_ROUNDS,
    Budget,
    PushReport,
    blind_among,
    plan_push,
    push_predictions,
    tasks_missing_version,
)
from judgelab.sync.client import SyncError, api_error_message
from judgelab.sync.prediction_status import missing_version

SINGLE_REQUEST_MAX = 200  # tasks sent in one "Retrieve predictions" (see the module doc)
RETRIEVE_TIMEOUT = 300.0  # s; Label Studio waits up to ML_TIMEOUT_PREDICT (100 s) for the backend, then saves
TIMEOUT_ENV = "JUDGELAB_RETRIEVE_TIMEOUT"  # seconds, to wait less (or more) for Label Studio
METHODS = ("auto", "retrieve", "push", "chunks")


@dataclass(frozen=True)
class PreannotateOptions:
    """How a run pre-annotates, for each of its projects: the way (``method``, one of
    :data:`METHODS`), the tasks per chunk and the push's rounds, the money the run may cost
    (``budget``, only with ``push``: Label Studio's "Retrieve predictions" cannot stop half-way),
    how long to wait for one "Retrieve predictions" (None: :func:`retrieve_timeout`); and where
    the backend is: as judgelab reaches it (``backend_url``), as Label Studio reaches it
    (``ls_backend_url``), its basic ``auth``, and the project's ``judges`` to connect it with
    (``extra_params``; None: keep Label Studio's)."""

    method: str = "auto"
    chunk_size: int = CHUNK_SIZE
    max_rounds: int = MAX_ROUNDS
    budget: float | None = None
    timeout: float | None = None
    backend_url: str | None = None
    ls_backend_url: str | None = None
    auth: tuple[str, str] | None = None
    judges: dict[str, Any] | None = None
    batch: str | None = None  # api, file or results (judgelab.sync.batch_predict); None: live
    batch_path: str | None = None  # the requests file to write (file), the results file to read (results)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}")
        if self.batch is not None and self.method == "push":
            raise SyncError("--push and --batch/--batch-file/--batch-results are two ways: give one")
        if self.batch is not None and self.budget is not None:
            raise SyncError("--budget needs --push (a batch is sent whole; its answers are counted at the batch price)")
        if self.budget is not None and self.method != "push":
            raise SyncError(
                "--budget needs --push (Label Studio's 'Retrieve predictions' is one request that cannot stop half-way)"
            )
        if self.budget is not None and self.budget <= 0:
            raise SyncError("--budget must be more than 0")

    def backend_for(self, ls_url: str) -> BackendClient:
        """The backend as judgelab reaches it: at ``backend_url``, else where Label Studio does."""
        return BackendClient(self.backend_url or ls_url, self.auth)


class PreannotateIncomplete(SyncError):
    """Label Studio did not answer in time; the message says how far it got and what to do."""


@dataclass
class PreannotateReport:
    project_id: int
    model_version: str  # the first judge's (the one Label Studio shows)
    method: str
    model_versions: list[str] = field(default_factory=list)  # one per judge
    tasks: int = 0
    already: int = 0  # had a prediction of every version before the run
    added: int = 0  # predictions added (one per task and version)
    unfinished: int = 0  # tasks still lacking a prediction of some version at the end
    blind: int = 0  # tasks of the blind arm (data arm: blind): never sent, by design
    per_version: dict[str, int] = field(default_factory=dict)  # tasks with a prediction of each version
    failures: dict[str, int] = field(default_factory=dict)
    budget_stopped: bool = False  # stopped before the budget would be passed; the rest is for a later run
    usage: RunUsage | None = None  # what the LLM used in this run (None: the backend keeps no usage)
    batch: BatchReport | None = None  # the batch route's run (method "batch")
    seconds: dict[str, float] | None = None  # the push's time: reading, predicting, importing

    @property
    def predicted(self) -> int:
        return self.tasks - self.unfinished - self.blind

    def as_json(self) -> dict[str, Any]:
        return {
            "model_version": self.model_version,
            "model_versions": list(self.model_versions),
            "method": self.method,
            "tasks": self.tasks,
            "predicted": self.predicted,
            "already": self.already,
            "added": self.added,
            "unfinished": self.unfinished,
            "blind": self.blind,
            "per_version": dict(self.per_version),
            "failures": dict(self.failures),
            "budget_stopped": self.budget_stopped,
            **({"batch": self.batch.as_json()} if self.batch is not None else {}),
            **({"seconds": {part: round(s, 3) for part, s in self.seconds.items()}} if self.seconds else {}),
        }


def retrieve_timeout() -> float:
    """How long judgelab waits for one "Retrieve predictions": ``$JUDGELAB_RETRIEVE_TIMEOUT`` or 300 s."""
    value = os.environ.get(TIMEOUT_ENV)
    try:
        return float(value) if value else RETRIEVE_TIMEOUT
    except ValueError:
        raise SyncError(f"{TIMEOUT_ENV}={value!r}: expected a number of seconds") from None


def retrieve_for(client: Any, project_id: int, task_ids: list[int], timeout: float = RETRIEVE_TIMEOUT) -> None:
    """Label Studio's "Retrieve predictions" on these tasks; raises ``httpx.TimeoutException`` as is."""
    from label_studio_sdk.core.api_error import ApiError

    try:
        client.actions.create(
            project=project_id,
            id="retrieve_tasks_predictions",
            selected_items={"all": False, "included": task_ids},
            request_options={"timeout_in_seconds": timeout},
        )
    except ApiError as exc:
        raise SyncError(f"retrieve predictions failed for project {project_id}: {api_error_message(exc)}") from None


def _incomplete(client: Any, report: PreannotateReport, sent: int, timeout: float) -> PreannotateIncomplete:
    blind: list[int] = []
    missing, total = _missing(client, report.project_id, report.model_versions, blind)
    done = total - len(missing) - len(blind)
    return PreannotateIncomplete(
        f"project {report.project_id}: Label Studio did not answer 'Retrieve predictions' for {sent} task(s) "
        f"within {timeout:g} s; {done}/{total} tasks have a prediction of {report.model_version} so far "
        "(Label Studio saves a request's predictions when it has them all, so it may still be working). "
        f"Run the same judgelab preannotate again in a minute: it sends only the {len(missing)} task(s) still "
        "without one; or add --push (judgelab then calls the backend itself, in chunks)"
    )


def _missing(
    client: Any, project_id: int, versions: list[str], blind: list[int] | None = None
) -> tuple[list[int], int]:
    """(tasks to pre-annotate: without a prediction of some version and not in the blind arm,
    number of tasks); the blind arm's ids go to ``blind``."""
    return tasks_missing_version(client, project_id, versions, blind)


def run_usage(backend: BackendClient | None, project_id: int, after: int = 0) -> RunUsage | None:
    """The backend's LLM usage for the project since ``after``, or None (no usage kept, or no answer)."""
    if backend is None:
        return None
    try:
        return backend_usage(backend, project_id, after=after)
    except BackendUnreachable:
        return None


def preannotate_project(
    client: Any,
    project_id: int,
    model_version: str | list[str],
    options: PreannotateOptions | None = None,
    *,
    backend: BackendClient | None = None,
    extra_params: dict[str, Any] | None = None,
    on_plan: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> PreannotateReport:
    """Pre-annotate the project's tasks lacking a prediction of ``model_version`` (one per judge
    when a list; see the module doc), as ``options`` say.

    ``backend``: the backend as judgelab reaches it (for ``push``, and for the LLM's usage in the
    report); ``extra_params``: the project's judges, sent with the push (their prices are needed
    for a budget). ``on_plan`` is told how many tasks will be sent, ``progress`` how many got a
    prediction as it goes.
    """
    options = options or PreannotateOptions()
    versions = [model_version] if isinstance(model_version, str) else list(model_version)
    timeout = retrieve_timeout() if options.timeout is None else options.timeout
    stored = extra_params or {}
    if options.budget is not None and ("price_in" not in stored or "price_out" not in stored):
        raise SyncError("--budget needs --price-in and --price-out (per million tokens)")
    usage_before = run_usage(backend, project_id)

    def spent() -> RunUsage | None:
        return run_usage(backend, project_id, after=usage_before.last_id if usage_before else 0)

    # listed without reading any task's data: the push reads each chunk's and leaves the blind arm
    # out there; the other routes read the data of the tasks listed, to leave it out before sending.
    # The route is chosen from this listing, so the push's count of predictions, which must come
    # before it, is taken for every route (one request of about 10 ms)
    plan = plan_push(client, project_id, versions)
    listed, total = plan.missing, plan.tasks
    already = total - len(listed)
    report = PreannotateReport(project_id, versions[0], options.method, versions, tasks=total, already=already)
    # one version: the tasks that have it are those the listing did not return
    before = {versions[0]: already} if len(versions) == 1 else _counts(client, project_id, versions)
    if options.batch is not None:
        if backend is None:
            raise SyncError("the batch route needs the backend's URL as judgelab reaches it (--backend-url)")
        report.method = "batch"
        missing = _without_blind(client, project_id, listed, report)
        if on_plan:
            on_plan(len(missing))
        report.batch = batch_preannotate(
            client, project_id, backend, versions, options, extra_params=extra_params, progress=progress
        )
        return _finished(client, report, versions, before, spent() if usage_before is not None else None, True)
    if options.method == "auto":
        report.method = _auto_method(len(listed), backend)
    if listed and report.method == "push":
        if backend is None:
            raise SyncError("--push needs the backend's URL as judgelab reaches it (--backend-url)")
        if on_plan:
            on_plan(len(listed))  # the blind arm's tasks among them count as done when their chunk is read
        budget = Budget(options.budget, spent) if options.budget is not None else None
        pushed = push_predictions(
            client,
            project_id,
            backend,
            versions,
            options,
            extra_params=extra_params,
            budget=budget,
            progress=progress,
            plan=plan,
        )
        report.failures, report.budget_stopped, report.blind = pushed.failures, pushed.budget_stopped, pushed.blind
        report.seconds = dict(pushed.seconds)
        return _finished(client, report, versions, before, spent() if usage_before is not None else None, True, pushed)
    missing = _without_blind(client, project_id, listed, report)
    if on_plan:
        on_plan(len(missing))
    if missing:
        size = len(missing) if report.method == "retrieve" else max(1, options.chunk_size)
        _retrieve_in_chunks(client, project_id, missing, size, timeout, report, progress)
    return _finished(client, report, versions, before, spent() if usage_before is not None else None, bool(missing))


def _without_blind(client: Any, project_id: int, listed: list[int], report: PreannotateReport) -> list[int]:
    """``listed`` but the blind arm's tasks (their number goes to ``report``)."""
    blind = set(blind_among(client, project_id, listed))
    report.blind = len(blind)
    return [task_id for task_id in listed if task_id not in blind]


def _auto_method(n_missing: int, backend: BackendClient | None) -> str:
    """``retrieve`` (one "Retrieve predictions") for a few tasks, else ``push`` when judgelab reaches
    the backend, else Label Studio's retrieval in ``chunks``."""
    if n_missing <= SINGLE_REQUEST_MAX:
        return "retrieve"
    if backend is not None and backend.health():
        return "push"
    return "chunks"


def _retrieve_in_chunks(
    client: Any,
    project_id: int,
    missing: list[int],
    size: int,
    timeout: float,
    report: PreannotateReport,
    progress: Callable[[int], None] | None,
) -> None:
    """Label Studio's "Retrieve predictions" over ``missing``, ``size`` tasks per request; a request
    it does not answer in time ends with how far it got (:func:`_incomplete`)."""
    for start in range(0, len(missing), size):
        chunk = missing[start : start + size]
        try:
            retrieve_for(client, project_id, chunk, timeout)
        except httpx.TimeoutException:
            raise _incomplete(client, report, len(chunk), timeout) from None
        except httpx.HTTPError as exc:
            raise SyncError(
                f"project {project_id}: Label Studio went away while retrieving predictions: {exc}"
            ) from None
        if progress:
            progress(len(chunk))


def _finished(
    client: Any,
    report: PreannotateReport,
    versions: list[str],
    before: dict[str, int],
    usage: RunUsage | None,
    recount: bool,
    pushed: PushReport | None = None,
) -> PreannotateReport:
    """``report`` completed after the run: the tasks still without a prediction, the predictions per
    version (counted again when anything was sent, else ``before``), those added, the LLM's usage.
    ``pushed``: the push's report, whose last listing is used instead of listing the project again
    (one version: the tasks with it are the tasks then less those listed)."""
    if pushed is not None:
        report.unfinished = pushed.unfinished
        if len(versions) == 1:
            report.per_version = {versions[0]: pushed.tasks_after - pushed.missing_after}
        else:
            report.per_version = _counts(client, report.project_id, versions)
    else:
        still, _ = _missing(client, report.project_id, versions)
        report.unfinished = len(still)
        report.per_version = _counts(client, report.project_id, versions) if recount else before
    report.added = sum(report.per_version.values()) - sum(before.values())
    report.usage = usage
    return report


def _counts(client: Any, project_id: int, versions: list[str]) -> dict[str, int]:
    """Per version, how many tasks have a prediction of it."""
    counts = {}
    for version in versions:
        missing, total = missing_version(client, project_id, version)
        counts[version] = total - len(missing)
    return counts
