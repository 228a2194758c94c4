"""Connect projects to the ML backend and ask Label Studio to retrieve predictions.

Label Studio shows only predictions whose ``model_version`` matches the project's, and it
sets the project's to the ML backend's *title* on connection. So judgelab names the ML
backend after the model version its ``/setup`` reports, and renames it (which updates the
project too) whenever that version changes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import httpx
from label_studio_sdk import LabelStudio
from label_studio_sdk.core.api_error import ApiError

from judgelab.configs.arms import is_blind
from judgelab.sync.client import SyncError, api_error_message

log = logging.getLogger("judgelab.sync")


@dataclass
class BackendLink:
    ml_id: int
    model_version: str
    created: bool


def _backend_version(url: str, project_id: int, label_config: str, auth: tuple[str, str] | None) -> str:
    try:
        response = httpx.post(
            f"{url.rstrip('/')}/setup",
            json={"project": f"{project_id}.0", "schema": label_config},
            auth=auth,
            timeout=10,
        )
        response.raise_for_status()
        return str(response.json()["model_version"])
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        raise SyncError(f"ML backend at {url} did not answer /setup: {exc}") from None


def connect_backend(
    client: LabelStudio, project_id: int, url: str, auth: tuple[str, str] | None = None, timeout: float = 100
) -> BackendLink:
    """Attach the backend at ``url`` to the project (reused if attached) and align versions."""
    project = client.projects.get(id=project_id)
    version = _backend_version(url, project_id, project.label_config, auth)
    extra: dict[str, Any] = {}
    if auth:
        extra = {"auth_method": "BASIC_AUTH", "basic_auth_user": auth[0], "basic_auth_pass": auth[1]}
    existing = [ml for ml in client.ml.list(project=project_id) if (ml.url or "").rstrip("/") == url.rstrip("/")]
    try:
        if existing:
            ml = existing[0]
            if ml.title != version:
                client.ml.update(id=ml.id, title=version, url=url, project=project_id, **extra)
            created = False
        else:
            ml = client.ml.create(
                url=url,
                project=project_id,
                title=version,
                is_interactive=False,
                auto_update=True,
                timeout=timeout,
                **extra,
            )
            created = True
    except ApiError as exc:
        raise SyncError(
            f"Label Studio could not connect project {project_id} to the ML backend at {url}: {api_error_message(exc)}"
            " (a backend on 127.0.0.1 needs Label Studio started with USE_DEFAULT_BANNED_SUBNETS=false)"
        ) from None
    if client.projects.get(id=project_id).model_version != version:
        client.projects.update(id=project_id, model_version=version)
    return BackendLink(ml_id=ml.id, model_version=version, created=created)


def blind_task_ids(client: LabelStudio, project_id: int) -> list[int]:
    """Ids of the project's tasks in the blind arm (data ``arm: blind``)."""
    tasks = client.tasks.list(project=project_id, fields="all")
    return [int(t.id) for t in tasks if is_blind(getattr(t, "data", None))]


def retrieve_predictions(client: LabelStudio, project_id: int, exclude: list[int] | None = None) -> None:
    """Label Studio's own "Retrieve predictions" action on every task of the project but ``exclude``
    (the blind arm's tasks: the backend would answer them without a prediction anyway)."""
    try:
        client.actions.create(
            project=project_id,
            id="retrieve_tasks_predictions",
            selected_items={"all": True, "excluded": [int(i) for i in exclude or []]},
        )
    except ApiError as exc:
        raise SyncError(f"retrieve predictions failed for project {project_id}: {api_error_message(exc)}") from None


def prediction_counts(client: LabelStudio, project_id: int, model_version: str) -> tuple[int, int]:
    """(tasks, tasks with a prediction of ``model_version``)."""
    tasks = with_prediction = 0
    for task in client.tasks.list(project=project_id, fields="all"):
        tasks += 1
        predictions = getattr(task, "predictions", None) or []
        versions = {
            p.get("model_version") if isinstance(p, dict) else getattr(p, "model_version", None) for p in predictions
        }
        with_prediction += model_version in versions
    return tasks, with_prediction
