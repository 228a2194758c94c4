"""Pre-annotate a big project without Label Studio's one-request "Retrieve predictions".

The tasks still lacking a prediction of the backend's current ``model_version`` are sent to
the backend's ``/predict`` in chunks, and each chunk's finished predictions are imported into
Label Studio at once. Placeholders (tasks the backend could not finish in time) are left for
the next round or the next run, so the work is resumable, and a task never gets two
predictions of one model version: before each chunk is imported, the project is asked again
which of its tasks already have one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx
from label_studio_sdk import LabelStudio
from label_studio_sdk.core.api_error import ApiError

from judgelab.sync.client import SyncError, api_error_message
from judgelab.sync.ls_api import as_api
from judgelab.sync.prediction_status import missing_version, with_version

log = logging.getLogger("judgelab.sync")


@dataclass
class PushReport:
    model_version: str
    tasks: int = 0
    already: int = 0  # had a prediction of this version before the run
    pushed: int = 0
    unfinished: int = 0  # still without one at the end (failed or past the deadline every round)
    rounds: int = 0
    failures: dict[str, int] = field(default_factory=dict)


def tasks_missing_version(client: LabelStudio, project_id: int, version: str) -> tuple[list[int], int]:
    """(ids of the tasks without a prediction of ``version``, number of tasks in the project)."""
    return missing_version(client, project_id, version)


def task_data(client: Any, project_id: int, ids: list[int]) -> dict[int, dict[str, Any]]:
    """``task id -> data`` of some tasks of the project (one Data Manager page; never calls the backend)."""
    if not ids:
        return {}
    query = json.dumps(
        {"filters": {"conjunction": "and", "items": []}, "selectedItems": {"all": False, "included": ids}}
    )
    params = {
        "project": project_id,
        "page": 1,
        "page_size": len(ids),
        "review": "true",
        "include": "id,data",
        "fields": "all",
        "query": query,
    }
    payload = as_api(client).get_json("api/tasks/", params)
    return {int(t["id"]): t.get("data") or {} for t in payload.get("tasks") or []}


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
    missing, report.tasks = tasks_missing_version(client, project_id, model_version)
    report.already = report.tasks - len(missing)
    http = httpx.Client(timeout=timeout, auth=auth)
    try:
        for _ in range(max_rounds):
            if not missing:
                break
            report.rounds += 1
            for ids in _chunks(missing, chunk_size):
                data = task_data(client, project_id, ids)
                chunk = [(task_id, data[task_id]) for task_id in ids if task_id in data]
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
            missing, _total = tasks_missing_version(client, project_id, model_version)
    finally:
        http.close()
    report.unfinished = len(missing)
    return report


def _predict_chunk(
    http: httpx.Client, backend_url: str, project: Any, chunk: list[tuple[int, dict[str, Any]]], report: PushReport
) -> list[dict[str, Any]]:
    tasks = [{"id": task_id, "data": data, "project": project.id} for task_id, data in chunk]
    try:
        response = http.post(
            f"{backend_url.rstrip('/')}/predict",
            json={"tasks": tasks, "project": f"{project.id}.0", "label_config": project.label_config},
        )
        response.raise_for_status()
        results = response.json().get("results")
    except httpx.ConnectError as exc:
        raise SyncError(
            f"judgelab cannot reach the ML backend at {backend_url} ({exc}): give --backend-url as judgelab "
            f"reaches it (Label Studio's URL for it may differ); {report.pushed} prediction(s) were imported before"
        ) from None
    except (httpx.HTTPError, ValueError) as exc:
        report.failures["backend request failed"] = report.failures.get("backend request failed", 0) + 1
        log.warning("backend /predict failed for %d tasks: %s", len(chunk), exc)
        return []
    if not isinstance(results, list) or len(results) != len(chunk):
        report.failures["backend answer malformed"] = report.failures.get("backend answer malformed", 0) + 1
        return []
    out = []
    for (task_id, _data), prediction in zip(chunk, results, strict=True):
        if not isinstance(prediction, dict) or "result" not in prediction:
            report.failures["placeholder"] = report.failures.get("placeholder", 0) + 1
            continue
        out.append(
            {
                "task": task_id,
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
    have = with_version(client, project_id, version, [p["task"] for p in predictions])
    return [p for p in predictions if p["task"] not in have and p["model_version"] == version]
