"""Connect projects to the ML backend and ask Label Studio to retrieve predictions.

Label Studio shows only predictions whose ``model_version`` matches the project's, and it
sets the project's to the ML backend's *title* on connection. So judgelab names the ML
backend after the model version the backend reports, and renames it (which updates the
project too) whenever that version changes.

judgelab never calls the backend to connect it: Label Studio does (``/health`` and ``/setup``
when an ML backend is added or updated) and keeps the ``model_version`` the backend reported.
So the URL given to Label Studio is the URL *Label Studio* reaches, which need not resolve
where judgelab runs (``http://judgelab-backend:9090`` inside a Docker network).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from label_studio_sdk import LabelStudio
from label_studio_sdk.core.api_error import ApiError

from judgelab.sync.client import SyncError, api_error_message

log = logging.getLogger("judgelab.sync")
OUR_PREFIX = "judgelab"  # the titles judgelab gives its ML backends (then their model version)


@dataclass
class BackendLink:
    ml_id: int
    model_version: str
    created: bool
    url: str = ""  # as Label Studio reaches it


def _same_url(a: str | None, b: str | None) -> bool:
    return (a or "").rstrip("/") == (b or "").rstrip("/")


def linked_backend(client: LabelStudio, project_id: int) -> Any | None:
    """The ML backend judgelab connected to the project (the first one when there are several)."""
    backends = list(client.ml.list(project=project_id))
    ours = [ml for ml in backends if (ml.title or "").startswith(OUR_PREFIX)]
    return (ours or backends or [None])[0]


def _unreachable(project_id: int, url: str, exc: ApiError) -> SyncError:
    return SyncError(
        f"Label Studio could not connect project {project_id} to the ML backend at {url}: {api_error_message(exc)}. "
        "That URL is the one Label Studio must reach: in Docker, the backend's service name "
        "(--ls-backend-url http://judgelab-backend:9090); a backend on 127.0.0.1 needs Label Studio started "
        "with USE_DEFAULT_BANNED_SUBNETS=false"
    )


def connect_backend(
    client: LabelStudio, project_id: int, url: str, auth: tuple[str, str] | None = None, timeout: float = 100
) -> BackendLink:
    """Attach the backend Label Studio reaches at ``url`` to the project and align versions.

    An ML backend already attached at that URL is reused, one judgelab attached earlier at
    another URL is moved to this one (never a second one); Label Studio checks the backend and
    asks it for its model version in both cases.
    """
    extra: dict[str, Any] = {}
    if auth:
        extra = {"auth_method": "BASIC_AUTH", "basic_auth_user": auth[0], "basic_auth_pass": auth[1]}
    backends = list(client.ml.list(project=project_id))
    same = [ml for ml in backends if _same_url(ml.url, url)]
    ours = [ml for ml in backends if (ml.title or "").startswith(OUR_PREFIX)]
    try:
        if same or ours:
            ml = (same or ours)[0]
            # an update makes Label Studio call /health and /setup again: the version is fresh
            ml = client.ml.update(id=ml.id, url=url, project=project_id, title=ml.title, **extra)
            created = False
        else:
            ml = client.ml.create(
                url=url,
                project=project_id,
                title=OUR_PREFIX,
                is_interactive=False,
                auto_update=True,
                timeout=timeout,
                **extra,
            )
            created = True
    except ApiError as exc:
        raise _unreachable(project_id, url, exc) from None
    if not getattr(ml, "model_version", None):  # the answer carries what /setup reported; else ask again
        ml = client.ml.get(id=ml.id)
    version = str(getattr(ml, "model_version", None) or "")
    if not version:
        state = getattr(ml, "readable_state", None) or getattr(ml, "state", None)
        raise SyncError(
            f"the ML backend at {url} reported no model version to Label Studio (state {state}): "
            f"{getattr(ml, 'error_message', None) or 'is it the judgelab backend?'}"
        )
    if ml.title != version:
        client.ml.update(id=ml.id, title=version, url=url, project=project_id, **extra)
    if client.projects.get(id=project_id).model_version != version:
        client.projects.update(id=project_id, model_version=version)
    return BackendLink(ml_id=ml.id, model_version=version, created=created, url=url)


def retrieve_predictions(client: LabelStudio, project_id: int) -> None:
    """Label Studio's own "Retrieve predictions" action on every task of the project."""
    try:
        client.actions.create(
            project=project_id, id="retrieve_tasks_predictions", selected_items={"all": True, "excluded": []}
        )
    except ApiError as exc:
        raise SyncError(f"retrieve predictions failed for project {project_id}: {api_error_message(exc)}") from None


def prediction_counts(client: LabelStudio, project_id: int, model_version: str) -> tuple[int, int]:
    """(tasks, tasks with a prediction of ``model_version``)."""
    from judgelab.sync.prediction_status import missing_version

    missing, total = missing_version(client, project_id, model_version)
    return total, total - len(missing)
