"""The whole-project path to tidy tables: Label Studio's snapshot export of each project (with
full predictions: the quick export lists predictions as ids only) through
:func:`judgelab.sync.tidy.tidy_from_export`. ``judgelab sync`` never takes it (it exports changed
tasks in batches, :mod:`judgelab.sync.incremental`); the tests use it as an independent reading of
the same projects to compare the sync's tables with.
"""

from __future__ import annotations

import json
import time
from typing import Any

from label_studio_sdk import LabelStudio
from label_studio_sdk.core.api_error import ApiError

from judgelab.configs.schema import all_schemas
from judgelab.sync.client import SyncError, api_error_message
from judgelab.sync.projects import selected_project_info
from judgelab.sync.tidy import TidyTables, concat_tables, tidy_from_export

EXPORT_POLL_SECONDS = 0.5
EXPORT_TIMEOUT_SECONDS = 600


def export_project_json(client: LabelStudio, project_id: int) -> list[dict[str, Any]]:
    """All tasks of a project with annotations and full predictions."""
    try:
        export = client.projects.exports.create(
            id=project_id,
            title=f"judgelab sync {time.strftime('%Y-%m-%d %H:%M:%S')}",
            serialization_options={
                "predictions": {"only_id": False},
                "annotations__completed_by": {"only_id": True},
            },
        )
        deadline = time.monotonic() + EXPORT_TIMEOUT_SECONDS
        while True:
            status = client.projects.exports.get(id=project_id, export_pk=export.id).status
            if status == "completed":
                break
            if status == "failed":
                raise SyncError(f"Label Studio's export of project {project_id} failed")
            if time.monotonic() > deadline:
                raise SyncError(f"Label Studio's export of project {project_id} did not finish in time")
            time.sleep(EXPORT_POLL_SECONDS)
        payload = b"".join(client.projects.exports.download(id=project_id, export_pk=export.id, export_type="JSON"))
        client.projects.exports.delete(id=project_id, export_pk=export.id)
    except ApiError as exc:
        raise SyncError(f"export of project {project_id} failed: {api_error_message(exc)}") from None
    return json.loads(payload)


def user_emails(client: LabelStudio) -> dict[int, str]:
    from judgelab.sync.ls_api import as_api

    return as_api(client).user_emails()


def pull_tables(client: LabelStudio, project_ids: list[int] | None = None) -> TidyTables:
    """Tidy tables for the given projects (default: every judgelab project)."""
    schemas = all_schemas()
    users = user_emails(client)
    parts = []
    for info in selected_project_info(client, project_ids):
        exported = export_project_json(client, info.id)
        parts.append(
            tidy_from_export(info.id, info.schema, schemas.get(info.schema), exported, users, info.task_columns())
        )
    return concat_tables(parts)
