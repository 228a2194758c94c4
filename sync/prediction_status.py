"""Which tasks of a project have a prediction of a model version, in few requests.

A Data Manager listing filtered on ``predictions_model_versions`` (Label Studio evaluates the
filter in the database: "contains" / "not contains" a version), with only the task ids in the
answer, a page of up to :data:`PAGE_SIZE` tasks at a time; ``review=1`` keeps Label Studio from
calling the ML backend while listing. Asking for the tasks *without* the version gives what is
left to do without reading the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from judgelab.sync.client import SyncError
from judgelab.sync.ls_api import NotFound, as_api

# Each page of a filtered listing costs Label Studio a pass of the filter over the whole project
# (for its count) besides about a millisecond per task listed: at 100,000 tasks the pass took
# 0.4-0.6 s, so pages of 1,000 spent about a minute per full listing on passes alone. Ids are
# small: a page of 5,000 is one fifth of the passes, a few seconds per page.
PAGE_SIZE = 5000
IDS_PER_QUERY = 500  # task ids named in one listing's query (it travels in the URL)


def _query(version: str, operator: str, ids: list[int] | None = None) -> str:
    query: dict[str, Any] = {
        "filters": {
            "conjunction": "and",
            "items": [
                {
                    "filter": "filter:tasks:predictions_model_versions",
                    "operator": operator,
                    "type": "List",
                    "value": [version],
                }
            ],
        },
        "ordering": ["tasks:id"],
    }
    if ids is not None:
        query["selectedItems"] = {"all": False, "included": ids}
    return json.dumps(query)


#: Times a listing starts again when it shrank under it (a page past its new end answers 404).
LISTING_RESTARTS = 3


def _listed_ids(client: Any, project_id: int, query: str | None) -> tuple[list[int], int]:
    """(ids of the listed tasks, Label Studio's total for the listing).

    A filtered listing can shrink while it is read (Label Studio goes on adding the predictions of
    a "Retrieve predictions" that judgelab stopped waiting for): a page past the new end answers
    404 "Invalid page", and the listing is read again from the first page."""
    for _ in range(LISTING_RESTARTS + 1):
        try:
            return _listed_ids_once(client, project_id, query)
        except PageGone:
            continue
    raise SyncError(
        f"project {project_id}: its tasks kept changing while judgelab listed them ({LISTING_RESTARTS + 1} tries); "
        "run the command again in a minute"
    )


class PageGone(Exception):
    """A page after the first answered 404: the listing shrank while it was read."""


def _listed_ids_once(client: Any, project_id: int, query: str | None) -> tuple[list[int], int]:
    api, ids, page = as_api(client), [], 1
    while True:
        params: dict[str, Any] = {
            "project": project_id,
            "page": page,
            "page_size": PAGE_SIZE,
            "review": "true",
            "include": "id",
        }
        if query:
            params["query"] = query
        try:
            payload = api.get_json("api/tasks/", params)
        except NotFound:
            if page == 1:
                raise
            raise PageGone from None
        tasks = payload.get("tasks") or []
        ids += [int(task["id"]) for task in tasks]
        total = int(payload.get("total") or 0)
        if not tasks or len(ids) >= total:
            return ids, total
        page += 1


def task_count(client: Any, project_id: int) -> int:
    payload = as_api(client).get_json(
        "api/tasks/", {"project": project_id, "page": 1, "page_size": 1, "review": "true", "include": "id"}
    )
    return int(payload.get("total") or 0)


def prediction_count(client: Any, project_id: int) -> int | None:
    """The number of predictions in the project, of every version and task (one count in the
    database: ``/api/projects/counts/``, 25-41 ms on PostgreSQL from 10,000 to 100,000 tasks, where
    a filtered listing of 500 tasks takes 48-88 ms: ``bench/push_check_cost.py``); None when Label
    Studio does not answer it."""
    try:
        payload = as_api(client).get_json(
            "api/projects/counts/", {"ids": str(project_id), "include": "id,total_predictions_number"}
        )
    except SyncError:
        return None
    results = payload.get("results") if isinstance(payload, dict) else None
    for each in results or []:
        if isinstance(each, dict) and each.get("id") == project_id:
            count = each.get("total_predictions_number")
            return count if isinstance(count, int) and not isinstance(count, bool) else None
    return None


def missing_version(client: Any, project_id: int, version: str) -> tuple[list[int], int]:
    """(ids of the tasks without a prediction of ``version``, in id order; number of tasks)."""
    ids, _ = _listed_ids(client, project_id, _query(version, "not_contains"))
    return sorted(set(ids)), task_count(client, project_id)


def with_version(client: Any, project_id: int, version: str, ids: Iterable[int]) -> set[int]:
    """Those of ``ids`` whose task has a prediction of ``version``."""
    wanted = sorted(set(ids))
    found: set[int] = set()
    for start in range(0, len(wanted), IDS_PER_QUERY):
        chunk = wanted[start : start + IDS_PER_QUERY]
        listed, _ = _listed_ids(client, project_id, _query(version, "contains", chunk))
        found.update(listed)
    return found
