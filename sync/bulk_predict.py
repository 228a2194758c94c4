"""Pre-annotate a big project without Label Studio's one-request "Retrieve predictions".

The tasks still lacking a prediction of the backend's current ``model_version`` are sent to
the backend's ``/predict`` in chunks, and each chunk's finished predictions are imported into
Label Studio at once. Placeholders (tasks the backend could not finish in time) are left for
the next round or the next run, so the work is resumable, and a task never gets two
predictions of one model version: before each chunk is imported, the project is asked again
which of its tasks already have one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx
from label_studio_sdk import LabelStudio
from label_studio_sdk.core.api_error import ApiError

from judgelab.configs.arms import is_blind
from judgelab.sync.client import SyncError, api_error_message

log = logging.getLogger("judgelab.sync")


@dataclass
class PushReport:
    model_version: str
    tasks: int = 0
    already: int = 0  # had a prediction of this version before the run
    pushed: int = 0
    unfinished: int = 0  # still without one at the end (failed or past the deadline every round)
    blind: int = 0  # tasks of the blind arm: never predicted, by design
    rounds: int = 0
    failures: dict[str, int] = field(default_factory=dict)


def _prediction_versions(task: Any) -> set[str]:
    predictions = getattr(task, "predictions", None) or []
    return {
        str(p.get("model_version") if isinstance(p, dict) else getattr(p, "model_version", None)) for p in predictions
    }


def tasks_missing_version(
    client: LabelStudio, project_id: int, version: str, blind: list[Any] | None = None
) -> tuple[list[Any], int]:
    """(tasks without a prediction of ``version``, number of tasks in the project). Tasks of the
    blind arm (data ``arm: blind``) are never missing one: they go to ``blind`` when given."""
    missing, total = [], 0
    for task in client.tasks.list(project=project_id, fields="all"):
        total += 1
        if is_blind(getattr(task, "data", None)):
            if blind is not None:
                blind.append(task)
        elif version not in _prediction_versions(task):
            missing.append(task)
    return missing, total


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def push_predictions(
    client: LabelStudio,
    project_id: int,
    backend_url: str,
    model_version: str,
    chunk_size: int = 50,
    max_rounds: int = 3,
    auth: tuple[str, str] | None = None,
    timeout: float = 120.0,
    progress: Callable[[int], None] | None = None,
) -> PushReport:
    """Send the project's unpredicted tasks to the backend and import the predictions."""
    project = client.projects.get(id=project_id)
    report = PushReport(model_version=model_version)
    blind: list[Any] = []
    missing, report.tasks = tasks_missing_version(client, project_id, model_version, blind)
    report.blind = len(blind)
    report.already = report.tasks - len(missing) - report.blind
    http = httpx.Client(timeout=timeout, auth=auth)
    try:
        for _ in range(max_rounds):
            if not missing:
                break
            report.rounds += 1
            for chunk in _chunks(missing, chunk_size):
                predictions = _predict_chunk(http, backend_url, project, chunk, report)
                fresh = _not_yet_predicted(client, project_id, model_version, predictions)
                if fresh:
                    try:
                        client.projects.import_predictions(id=project_id, request=fresh)
                    except ApiError as exc:
                        raise SyncError(
                            f"Label Studio refused predictions for project {project_id}: {api_error_message(exc)}; "
                            f"{report.pushed} were imported before; re-run to continue"
                        ) from None
                    report.pushed += len(fresh)
                if progress:
                    progress(len(fresh))
            missing, _ = tasks_missing_version(client, project_id, model_version)
    finally:
        http.close()
    report.unfinished = len(missing)
    return report


def _predict_chunk(
    http: httpx.Client, backend_url: str, project: Any, chunk: list[Any], report: PushReport
) -> list[dict[str, Any]]:
    tasks = [{"id": t.id, "data": t.data, "project": project.id} for t in chunk]
    try:
        response = http.post(
            f"{backend_url.rstrip('/')}/predict",
            json={"tasks": tasks, "project": f"{project.id}.0", "label_config": project.label_config},
        )
        response.raise_for_status()
        results = response.json().get("results")
    except (httpx.HTTPError, ValueError) as exc:
        report.failures["backend request failed"] = report.failures.get("backend request failed", 0) + 1
        log.warning("backend /predict failed for %d tasks: %s", len(chunk), exc)
        return []
    if not isinstance(results, list) or len(results) != len(chunk):
        report.failures["backend answer malformed"] = report.failures.get("backend answer malformed", 0) + 1
        return []
    out = []
    for task, prediction in zip(chunk, results, strict=True):
        if not isinstance(prediction, dict) or "result" not in prediction:
            report.failures["placeholder"] = report.failures.get("placeholder", 0) + 1
            continue
        out.append(
            {
                "task": task.id,
                "result": prediction["result"],
                "score": prediction.get("score"),
                "model_version": prediction.get("model_version") or report.model_version,
            }
        )
    return out


def _not_yet_predicted(
    client: LabelStudio, project_id: int, version: str, predictions: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Drop predictions for tasks that got one of ``version`` meanwhile (another run, Label Studio)."""
    if not predictions:
        return []
    wanted = {p["task"] for p in predictions}
    have = set()
    for task_id in wanted:
        if version in {str(p.model_version) for p in client.predictions.list(task=task_id)}:
            have.add(task_id)
    return [p for p in predictions if p["task"] not in have and p["model_version"] == version]
