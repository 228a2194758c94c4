"""Projects from ``configs/``, idempotent task imports, and the link to the ML backend."""

from __future__ import annotations

import difflib
import json
import logging
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from judgelab.configs.instructions import instructions_html
from judgelab.configs.schema import Schema
from judgelab.sync.client import SyncError, api_error_message, post_encoded
from judgelab.sync.importers import KEY_FIELD, TaskRow
from judgelab.sync.importers.rows import BadRow, ImportLine

if TYPE_CHECKING:  # the SDK is imported by the functions that call it (it is slow to import)
    from label_studio_sdk.base_client import LabelStudioBase

log = logging.getLogger("judgelab.sync")
IMPORT_BATCH = 500
IMPORT_BATCH_BYTES = 8 << 20  # about this much JSON per import request


SAMPLE_TAG = "[judgelab-sample-of:"  # in the description of a human sample (judgelab design sample)


def sample_marker(source_id: int) -> str:
    """The description marker of a human-sample project: ``[judgelab-sample-of:<source id>]``."""
    return f"{SAMPLE_TAG}{int(source_id)}]"


def sample_source_of(description: Any) -> int | None:
    """The source project id a human-sample project's description names, else None.

    >>> sample_source_of("Ratings.\\n\\n[judgelab:likert_rubric_es] [judgelab-sample-of:12]")
    12
    >>> sample_source_of("no marker") is None
    True
    """
    text = str(description or "")
    start = text.find(SAMPLE_TAG)
    end = text.find("]", start)
    if start < 0 or end < 0:
        return None
    try:
        return int(text[start + len(SAMPLE_TAG) : end])
    except ValueError:
        return None


def schema_marker(schema_name: str) -> str:
    return f"[judgelab:{schema_name}]"


def project_schema_name(project: Any) -> str | None:
    """The schema a project was created from (its description carries a marker)."""
    description = (
        project.get("description") if isinstance(project, dict) else getattr(project, "description", None)
    ) or ""
    start = description.find("[judgelab:")
    if start < 0:
        return None
    end = description.find("]", start)
    return description[start + len("[judgelab:") : end] if end > start else None


@dataclass(frozen=True)
class ProjectInfo:
    """What the tidy tables record of a Label Studio project: its id, schema, title and overlap
    target (``maximum_annotations`` per task on ``overlap_percent`` % of the tasks)."""

    id: int
    schema: str
    title: str | None = None
    max_annotations: int | None = None
    overlap_percent: int | None = None
    sample_of: int | None = None  # a human-sample project: the project it is a sample of

    def task_columns(self) -> dict[str, Any]:
        """The ``tasks`` columns of the tidy-table contract that carry the project's settings."""
        return {
            "project_title": self.title,
            "project_max_annotations": self.max_annotations,
            "project_overlap_percent": self.overlap_percent,
            "project_sample_of": self.sample_of,
        }


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def selected_project_info(client: Any, project_ids: list[int] | None = None) -> list[ProjectInfo]:
    """The given projects, or every judgelab project when none are given, with their titles and
    overlap settings. ``client``: an SDK client or a :class:`sync.ls_api.LabelStudioAPI`."""
    from judgelab.sync.ls_api import as_api

    chosen = []
    for project in as_api(client).projects():
        name = project_schema_name(project)
        project_id = int(project["id"])
        if project_ids is not None and project_id not in project_ids:
            continue
        if project_ids is None and name is None:
            continue
        chosen.append(
            ProjectInfo(
                id=project_id,
                schema=name or "custom",
                title=project.get("title"),
                max_annotations=_int_or_none(project.get("maximum_annotations")),
                overlap_percent=_int_or_none(project.get("overlap_cohort_percentage")),
                sample_of=sample_source_of(project.get("description")),
            )
        )
    return chosen


def selected_projects(client: Any, project_ids: list[int] | None = None) -> list[tuple[int, str]]:
    """(id, schema name) of the given projects, or of every judgelab project when none are given.
    ``client``: an SDK client or a :class:`sync.ls_api.LabelStudioAPI`."""
    return [(info.id, info.schema) for info in selected_project_info(client, project_ids)]


@dataclass
class EnsuredProject:
    id: int
    title: str
    schema: str
    created: bool


TITLE_TAG = "[judgelab-title:"  # in the description of a project created with a title of its own


def _title_tag(title: str) -> str:
    return f"{TITLE_TAG}{title}]"


def has_title(project: Mapping[str, Any], title: str) -> bool:
    """Whether the (listed) project is called ``title``, or was created so and renamed since."""
    return project.get("title") == title or _title_tag(title) in str(project.get("description") or "")


DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"), "-")


def title_key(title: str) -> str:
    """A title as people mistype it: case, accents, dashes and runs of white space ignored.

    >>> title_key("Noticias Q4 \u2013 res\u00famenes  LLM") == title_key("noticias q4 - resumenes llm")
    True
    """
    decomposed = unicodedata.normalize("NFKD", title.translate(DASHES))
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(plain.casefold().split())


def project_titles(project: Mapping[str, Any]) -> list[str]:
    """The titles a (listed) project answers to: its own, and the one it was created with."""
    titles = [str(project.get("title") or "")]
    description = str(project.get("description") or "")
    start = description.find(TITLE_TAG)
    end = description.find("]", start)
    if start >= 0 and end > start:
        titles.append(description[start + len(TITLE_TAG) : end])
    return titles


def similar_projects(projects: Iterable[Mapping[str, Any]], title: str, limit: int = 3) -> list[Mapping[str, Any]]:
    """The projects whose title is ``title`` but for case, accents, dashes and spacing (all of
    them), else up to ``limit`` whose titles are close to it (difflib, on those keys), closest first.
    """
    wanted = title_key(title)
    projects = sorted(projects, key=lambda p: int(p["id"]))
    same = [p for p in projects if any(title_key(t) == wanted for t in project_titles(p))]
    if same:
        return same
    keys = {title_key(t): p for p in projects for t in project_titles(p) if t}
    close = difflib.get_close_matches(wanted, list(keys), n=limit, cutoff=0.75)
    unique: dict[int, Mapping[str, Any]] = {}
    for key in close:
        unique.setdefault(int(keys[key]["id"]), keys[key])
    return list(unique.values())


def is_schema_default(project: Mapping[str, Any], schema: Schema) -> bool:
    """The schema's own project: its title, or renamed (the schema marker and no title tag)."""
    if project_schema_name(project) != schema.name:
        return False
    return project.get("title") == schema.title or TITLE_TAG not in str(project.get("description") or "")


def find_project(
    client: LabelStudioBase, schema: Schema, title: str | None = None, projects: list[dict[str, Any]] | None = None
) -> dict[str, Any] | None:
    """The project (as Label Studio lists it) of ``schema`` called ``title`` (default: the schema's title).

    A project keeps being found after an admin renames it: a project created with the schema's
    own title carries only the schema marker, one created with a title of its own also carries
    that title in a tag, so a renamed project is told apart from the other projects of its schema.
    ``projects``: Label Studio's listing, when the caller has it.
    """
    from judgelab.sync.ls_api import as_api

    listed = as_api(client).projects() if projects is None else projects
    if title is None:
        candidates = [p for p in listed if is_schema_default(p, schema)]
    else:
        candidates = [p for p in listed if project_schema_name(p) == schema.name and has_title(p, title)]
    exact = [p for p in candidates if p.get("title") == (title or schema.title)]
    return (exact or candidates or [None])[0]


MAX_TITLE = 50  # Label Studio refuses longer project titles


def ensure_project(
    client: LabelStudioBase, schema: Schema, title: str | None = None, projects: list[dict[str, Any]] | None = None
) -> EnsuredProject:
    """The project for ``schema`` (created from its config if absent; never duplicated).
    ``projects``: Label Studio's listing, when the caller has it."""
    if len(title or schema.title) > MAX_TITLE:
        raise SyncError(f"project title {title or schema.title!r} is longer than {MAX_TITLE} characters")
    from label_studio_sdk.core.api_error import ApiError

    existing = find_project(client, schema, title, projects)
    if existing is not None:
        return EnsuredProject(int(existing["id"]), str(existing.get("title") or ""), schema.name, created=False)
    description = f"{schema.meta.get('description', '').strip()}\n\n{schema_marker(schema.name)}"
    if title and title != schema.title:
        description += f" {_title_tag(title)}"
    try:
        project = client.projects.create(
            title=title or schema.title,
            label_config=schema.config_xml,
            description=description,
            expert_instruction=instructions_html(str(schema.meta.get("instructions") or "")),
            show_instruction=True,
            show_collab_predictions=True,
        )
    except ApiError as exc:
        raise SyncError(
            f"Label Studio rejected the project for schema {schema.name} ({schema.folder}): {api_error_message(exc)}"
        ) from None
    log.info("created project %s (%s)", project.id, schema.name)
    return EnsuredProject(project.id, project.title, schema.name, created=True)


def refresh_instructions(client: LabelStudioBase, project_id: int, schema: Schema) -> bool:
    """Give a project the HTML form of its schema's instructions when it still has the ``<pre>``
    text an earlier judgelab wrote (a pop-up of one monospace line cut at the right edge).
    Instructions an admin edited are left as they are. Whether they were replaced."""
    import html

    text = str(schema.meta.get("instructions") or "")
    current = str(client.projects.get(id=project_id).expert_instruction or "").strip()
    if not (current.startswith("<pre>") and current.endswith("</pre>")):
        return False
    if html.unescape(current[len("<pre>") : -len("</pre>")]).strip() != text.strip():
        return False
    client.projects.update(id=project_id, expert_instruction=instructions_html(text))
    return True


LIST_PAGE = 1000


def task_keys(client: Any, project_id: int) -> dict[int, str | None]:
    """``task id -> judgelab key`` (None for a task imported by other means) of every task of the
    project: a Data Manager listing of ids and ``meta`` only (``review=1``: never calls the backend)."""
    from judgelab.sync.ls_api import as_api

    api, keys, page = as_api(client), {}, 1
    while True:
        params = {"project": project_id, "page": page, "page_size": LIST_PAGE, "review": "true", "include": "id,meta"}
        payload = api.get_json("api/tasks/", params)
        tasks = payload.get("tasks") or []
        for task in tasks:
            meta = task.get("meta")
            key = meta.get(KEY_FIELD) if isinstance(meta, dict) else None
            keys[int(task["id"])] = str(key) if key not in (None, "") else None
        if not tasks or len(keys) >= int(payload.get("total") or 0):
            return keys
        page += 1


def existing_keys(client: Any, project_id: int) -> set[str]:
    return {key for key in task_keys(client, project_id).values() if key is not None}


@dataclass
class ImportReport:
    imported: int
    skipped_existing: int
    task_ids: list[int]


def import_lines(rows: Iterable[TaskRow | ImportLine]) -> Iterator[ImportLine]:
    """``rows`` as the import sends them: a checked file's as its check wrote them
    (:meth:`~judgelab.sync.importers.generic.FileRows.import_lines`), other rows encoded as they
    come. A row JSON cannot send stops there, with an error naming it."""
    spooled = getattr(rows, "import_lines", None)
    if spooled is not None:
        yield from spooled()
        return
    for row in rows:
        try:
            yield row if isinstance(row, ImportLine) else ImportLine.of(row)
        except BadRow as exc:
            raise SyncError(f"{exc}; the rows before it were imported, the rest were not") from None


def carried_annotations(rows: Iterable[TaskRow]) -> Iterator[tuple[str, str, Callable[[], list]]]:
    """``(key, where, annotations)`` of each row that carries annotations, ``annotations()`` giving
    them in import form: a checked file's rows read back from what its check wrote (the file is
    not read nor checked again, and a row's body is decoded only when asked for), other rows as
    they are."""
    spooled = getattr(rows, "import_lines", None)
    if spooled is None:
        for row in rows:
            if row.annotations:
                yield row.key, row.where, lambda held=row.annotations: held
        return
    for line in spooled():
        if line.annotations:
            yield line.key, line.where, partial(_body_annotations, line.body)


def _body_annotations(body: bytes) -> list:
    return json.loads(body).get("annotations") or []


def import_batches(
    lines: Iterable[ImportLine], have: set[str]
) -> Iterator[tuple[list[ImportLine], ImportLine, ImportLine]]:
    """The lines whose key is not in ``have``, as import requests of at most :data:`IMPORT_BATCH`
    tasks and about :data:`IMPORT_BATCH_BYTES` of JSON each (a request of long texts stays small
    enough for Label Studio to take in one go): ``(lines, first, last)``."""
    batch: list[ImportLine] = []
    size = 0
    for line in lines:
        if line.key in have:
            continue
        if batch and (len(batch) >= IMPORT_BATCH or size + len(line.body) > IMPORT_BATCH_BYTES):
            yield batch, batch[0], batch[-1]
            batch, size = [], 0
        batch.append(line)
        size += len(line.body)
    if batch:
        yield batch, batch[0], batch[-1]


def import_body(lines: list[ImportLine]) -> bytes:
    """The import request of ``lines``: their tasks as one JSON list."""
    return b"[" + b",".join(line.body for line in lines) + b"]"


def import_rows(
    client: LabelStudioBase,
    project_id: int,
    rows: Iterable[TaskRow | ImportLine],
    *,
    have: set[str] | None = None,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import the rows whose key the project does not have yet (``have``: its keys, when the
    caller already listed them), in batches; rows are read once, as they come (a
    :class:`~judgelab.sync.importers.generic.FileRows` is never held whole, and its rows are sent
    as its check encoded them: :func:`import_lines`). ``progress`` is told how many rows were
    settled (imported or found there) after each batch."""
    import httpx
    from label_studio_sdk.core.api_error import ApiError

    have = existing_keys(client, project_id) if have is None else have
    ids: list[int] = []
    imported = 0
    counted = _Counting(import_lines(rows))

    def settle(sent: tuple[Future, list[ImportLine], ImportLine, ImportLine, int]) -> None:
        nonlocal imported
        future, batch, first, last, count = sent
        try:
            task_ids = future.result()
        except (ApiError, httpx.HTTPError) as exc:
            why = api_error_message(exc) if isinstance(exc, ApiError) else f"{type(exc).__name__}: {exc}"
            raise SyncError(
                f"Label Studio refused tasks {first.where} .. {last.where}: {why}; "
                f"{imported} task(s) of this file were imported before; re-run to import the rest "
                "(tasks already imported are recognised by their key)"
            ) from None
        imported += len(batch)
        ids.extend(task_ids)
        if progress:
            progress(count - counted.reported)
            counted.reported = count

    # A batch is sent while the next one is read (Label Studio and judgelab work at the same
    # time); the next is sent only once the previous one has landed, so a failure stops the
    # import there, as before.
    pending = None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="judgelab-import") as sender:
        for batch, first, last in import_batches(counted, have):
            if pending is not None:
                settle(pending)
            what = f"import of tasks {first.where} .. {last.where}"
            future = sender.submit(import_batch, client, project_id, batch, what)
            pending = (future, batch, first, last, counted.count)
        if pending is not None:
            settle(pending)
    if progress and counted.count > counted.reported:
        progress(counted.count - counted.reported)
    return ImportReport(imported=imported, skipped_existing=counted.count - imported, task_ids=ids)


def import_batch(client: LabelStudioBase, project_id: int, batch: list[ImportLine], what: str) -> list[int]:
    """Import one batch, riding out a busy Label Studio (:func:`~sync.http_retry.repeat_write`):
    after a failure the project's keys are listed again and only the tasks that did not land are
    sent again. The new tasks' ids (those of a batch whose answer was lost are not known)."""
    from judgelab.sync.http_retry import repeat_write

    pending = batch

    def send() -> list[int]:
        path, params = f"api/projects/{project_id}/import", {"return_task_ids": "true"}
        answer = post_encoded(client, path, import_body(pending), params)
        return list(answer.get("task_ids") or []) if isinstance(answer, dict) else []

    def landed() -> list[int] | None:
        nonlocal pending
        there = existing_keys(client, project_id)
        pending = [line for line in pending if line.key not in there]
        return None if pending else []

    return repeat_write(send, landed, what)


class _Counting:
    """Counts the rows an iteration goes through."""

    def __init__(self, rows: Iterable[TaskRow]) -> None:
        self.rows, self.count, self.reported = rows, 0, 0

    def __iter__(self) -> Iterator[TaskRow]:
        for row in self.rows:
            self.count += 1
            yield row
