"""What the incremental sync (:mod:`sync.incremental`) reads of Label Studio: task signatures
(Data Manager listings with ``review=1``, so listing never calls the ML backend), a project's
counts and smallest/largest task ids, the quick export of chosen task ids, and prediction bodies."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from judgelab.sync.ls_api import as_api

MAX_EXPORT_IDS = 900  # Django refuses a request with more than 1,000 query fields
# Reading the predictions of a batch's tasks through a Data Manager page costs Label Studio about
# as much per task as serialising this many predictions in the project-wide read (bench/sync_scale.py
# on 1.23: 1.7-1.9 ms per task vs 0.34-0.40 ms per prediction, a ratio of 4.7-5.1): below that
# share of the project, pages are cheaper.
PREDICTIONS_PER_LISTED_TASK = 5
LIST_PAGE_SIZE = 1000
SIGNATURE_FIELDS = ("updated_at", "total_annotations", "cancelled_annotations", "total_predictions")


def _signature(task: dict[str, Any]) -> str:
    return json.dumps([task.get(k) for k in SIGNATURE_FIELDS])


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _dm_query(filters: list[dict[str, Any]] | None = None, ordering: list[str] | None = None) -> str:
    return json.dumps({"filters": {"conjunction": "and", "items": filters or []}, "ordering": ordering or []})


def _dm_page(
    client: Any,
    project_id: int,
    page: int,
    page_size: int,
    include: str,
    query: str | None = None,
    all_fields: bool = False,
) -> dict[str, Any]:
    """One page of the Data Manager task list. ``review=1`` makes Label Studio skip its
    "evaluate predictions automatically" branch, so listing never calls the ML backend.
    ``all_fields`` (``fields=all``) is needed for ``predictions`` to be included."""
    params: dict[str, Any] = {
        "project": project_id,
        "page": page,
        "page_size": page_size,
        "review": "true",
        "include": include,
    }
    if all_fields:
        params["fields"] = "all"
    if query:
        params["query"] = query
    return as_api(client).get_json("api/tasks/", params)


@dataclass(frozen=True)
class ProjectTotals:
    """What Label Studio counts for a project: tasks, (non-cancelled) annotations, predictions."""

    tasks: int
    annotations: int
    predictions: int


def _first_task(client: Any, project_id: int, descending: bool = False) -> tuple[ProjectTotals, int | None]:
    """A one-row listing: the project's counts and its smallest (or largest) task id."""
    query = _dm_query(ordering=["-tasks:id"]) if descending else None
    payload = _dm_page(client, project_id, 1, 1, "id", query)
    totals = ProjectTotals(
        int(payload.get("total") or 0),
        int(payload.get("total_annotations") or 0),
        int(payload.get("total_predictions") or 0),
    )
    tasks = payload.get("tasks") or []
    return totals, (int(tasks[0]["id"]) if tasks else None)


def project_totals(client: Any, project_id: int) -> ProjectTotals:
    return _first_task(client, project_id)[0]


def list_task_signatures(client: Any, project_id: int, since: datetime | None = None) -> dict[int, str]:
    """Task ids of the project with their change signature, without task data.

    With ``since``, only the tasks whose ``updated_at`` is later (a Data Manager filter: the
    cost follows the number of such tasks, not the size of the project).
    """
    query = None
    if since is not None:
        value = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        query = _dm_query(
            [{"filter": "filter:tasks:updated_at", "operator": "greater", "type": "Datetime", "value": value}]
        )
    signatures: dict[int, str] = {}
    page = 1
    while True:
        payload = _dm_page(client, project_id, page, LIST_PAGE_SIZE, "id," + ",".join(SIGNATURE_FIELDS), query)
        tasks = payload.get("tasks") or []
        for task in tasks:
            signatures[int(task["id"])] = _signature(task)
        if not tasks or len(signatures) >= int(payload.get("total") or 0):
            return signatures
        page += 1


def export_tasks(client: Any, project_id: int, task_ids: list[int]) -> list[dict[str, Any]]:
    """The given tasks with annotations (the quick export's ``ids[]`` filter; the SDK's ``ids``
    parameter is not the name Label Studio reads, so the request is made directly). Ids that
    are not tasks of the project are simply absent from the answer."""
    if len(task_ids) > MAX_EXPORT_IDS:
        raise ValueError(f"at most {MAX_EXPORT_IDS} ids per export request (Django's limit on query fields)")
    params = {"exportType": "JSON", "download_all_tasks": "true", "ids[]": [str(i) for i in task_ids]}
    exported = as_api(client).get_json(f"api/projects/{project_id}/export", params)
    wanted = set(task_ids)
    return [t for t in exported if int(t["id"]) in wanted]


class PredictionReader:
    """Full predictions of exported tasks (the quick export gives their ids only).

    Either the project's predictions in one read (``bulk``, when many tasks need them), or, per
    batch, one Data Manager page of the batch's tasks with their predictions (selected by id;
    ``review=1``, so it never calls the ML backend). A prediction newer than what was read is
    asked for with its task alone.

    The bulk read is streamed into a temporary SQLite database (on disk, gone when the reader is
    closed) and each task's predictions are read back from it when its batch is written: the
    memory it takes does not grow with the project (100,000 predictions held as objects took
    several hundred MB).
    """

    def __init__(self, client: Any, project_id: int, tasks_needing: int, project_predictions: int) -> None:
        self.api, self.project_id = as_api(client), project_id
        self.bulk = tasks_needing > 0 and tasks_needing * PREDICTIONS_PER_LISTED_TASK > project_predictions
        self._by_task: dict[int, list[dict[str, Any]]] | None = None  # the batch's (Data Manager reads)
        self._stored: sqlite3.Connection | None = None  # the project's (the bulk read)
        self.requests = 0
        self.seconds = 0.0  # spent in these requests

    def close(self) -> None:
        """Drop the bulk read's temporary database."""
        if self._stored is not None:
            self._stored.close()
            self._stored = None

    @contextmanager
    def _request(self) -> Iterator[None]:
        """Count one request to Label Studio and the time it takes."""
        self.requests += 1
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds += time.perf_counter() - t0

    def preload(self) -> None:
        """Read the project's predictions now (when the bulk read was chosen)."""
        if self.bulk and self._stored is None:
            self._stored = self._load_project()

    def _load_project(self) -> sqlite3.Connection:
        # "": a private temporary database, on disk beyond SQLite's small page cache
        stored = sqlite3.connect("", check_same_thread=False)  # filled by the preload's thread
        stored.execute("CREATE TABLE prediction (task INTEGER NOT NULL, body TEXT NOT NULL)")
        with self._request():
            predictions = self.api.iter_json_list("api/predictions/", {"project": self.project_id})
            stored.executemany(
                "INSERT INTO prediction VALUES (?, ?)", ((int(p["task"]), json.dumps(p)) for p in predictions)
            )
        stored.execute("CREATE INDEX prediction_task ON prediction (task)")
        stored.commit()
        return stored

    def _stored_for(self, task_id: int) -> list[dict[str, Any]]:
        self.preload()
        rows = self._stored.execute("SELECT body FROM prediction WHERE task = ? ORDER BY rowid", (task_id,))
        return [json.loads(body) for (body,) in rows]

    def load_batch(self, task_ids: list[int]) -> None:
        """The predictions of these tasks, one Data Manager page (unless the bulk read is used)."""
        if self.bulk:
            return
        self._by_task = {}
        if not task_ids:
            return
        query = json.dumps(
            {"filters": {"conjunction": "and", "items": []}, "selectedItems": {"all": False, "included": task_ids}}
        )
        with self._request():
            page = _dm_page(self.api, self.project_id, 1, len(task_ids), "id,predictions", query, all_fields=True)
        for task in page.get("tasks") or []:
            self._by_task[int(task["id"])] = [p for p in task.get("predictions") or [] if isinstance(p, dict)]

    def for_task(self, task_id: int, ids: list[int]) -> list[dict[str, Any]]:
        if not ids:
            return []
        held = self._stored_for(task_id) if self.bulk else (self._by_task or {}).get(task_id, [])
        found = {p["id"]: p for p in held}
        if set(ids) <= set(found):
            return [found[i] for i in ids]
        # a prediction newer than what was read: ask for this task only
        with self._request():
            found = {p["id"]: p for p in self.api.get_json("api/predictions/", {"task": task_id})}
        return [found[i] for i in ids if i in found]


def _ids(items: Iterable[Any]) -> list[int]:
    return [int(x["id"] if isinstance(x, dict) else x) for x in items or []]
