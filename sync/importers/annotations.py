"""Earlier-round human annotations into Label Studio annotations, by their annotators.

Accepted files:

- tidy judgments, CSV/TSV/JSONL/JSON, one row per judgment with the columns ``task``
  (also ``task_id``, ``key`` or ``id``: the task's judgelab key or, for tasks already in Label
  Studio, their numeric id), ``annotator`` (an email, or a name that becomes
  ``<name>@judgelab.local``), ``item`` (a control name of the schema's label config:
  ``SP``, ``Coherence``, ``verdict_0``...) and ``value``;
- a Label Studio JSON export (a list of tasks with ``annotations``): each annotation keeps
  its ``result``; its annotator is ``completed_by.email``, else the email in
  ``created_username`` (``"a@b.c, 3"``), else the numeric ``completed_by``; its task is
  ``meta.judgelab_key``, else ``data.id``, else the task ``id``.

One annotation per (task, annotator). ``value`` becomes the result type of the control:
``choices`` (a list when several values are separated by ``|``), ``rating``, ``number`` or
``textarea``. Annotators are Label Studio users: :func:`ensure_annotators` creates the missing
ones (no password: they cannot log in until one is set) so that ``completed_by`` (an
``{"email": ...}``, which Label Studio resolves to organization members on import) holds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgelab.configs.label_config import Control, parse_label_config
from judgelab.configs.schema import Schema
from judgelab.sync.client import SyncError
from judgelab.sync.importers.records import read_records
from judgelab.sync.importers.rows import KEY_FIELD, TaskRow

ANNOTATOR_DOMAIN = "judgelab.local"
_RESULT_TYPES = {"Choices": "choices", "Rating": "rating", "Number": "number", "TextArea": "textarea"}


def annotator_email(name: str) -> str:
    """``alice`` -> ``alice@judgelab.local``; an email is kept as it is."""
    name = str(name).strip()
    return name if "@" in name else f"{name}@{ANNOTATOR_DOMAIN}"


def _region_id(*parts: object) -> str:
    return hashlib.sha1("|".join(map(str, parts)).encode()).hexdigest()[:10]


def control_result(control: Control, value: Any) -> dict[str, Any]:
    """One classification result of ``control`` holding ``value`` (raises ValueError if it cannot)."""
    kind = _RESULT_TYPES.get(control.tag)
    if kind is None:
        raise ValueError(f"control {control.name!r} is a {control.tag}: only Choices, Rating, Number, TextArea")
    if kind == "choices":
        values = value if isinstance(value, list) else [v.strip() for v in str(value).split("|") if v.strip()]
        values = [str(v) for v in values]
        allowed = set(control.labels) if control.labels and not control.dynamic else None
        wrong = [v for v in values if allowed is not None and v not in allowed]
        if wrong or not values:
            raise ValueError(f"{control.name}: {value!r} is not one of {', '.join(sorted(allowed or []))}")
        payload: dict[str, Any] = {"choices": values}
    elif kind in ("rating", "number"):
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{control.name}: {value!r} is not a number") from None
        payload = {kind: int(number) if number.is_integer() else number}
    else:
        payload = {"text": [str(value)]}
    return {
        "id": _region_id(control.name, value),
        "from_name": control.name,
        "to_name": control.to_name,
        "type": kind,
        "origin": "manual",
        "value": payload,
    }


def controls_by_name(schema: Schema, data: Mapping[str, Any] | None = None) -> dict[str, Control]:
    """The schema's controls by name, Repeater names expanded from ``data`` when given."""
    config = parse_label_config(schema.config_xml)
    if data is not None:
        return dict(config.expanded_controls(dict(data)))
    return {c.name: c for c in config.controls}


def make_annotation(email: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    return {"completed_by": {"email": email}, "result": results, "was_cancelled": False, "ground_truth": False}


def ensure_annotators(client: Any, emails: Iterable[str]) -> dict[str, int]:
    """``email -> user id`` for every email, creating the users Label Studio does not have.

    A user created through the API is added to the organization of the token's user, which
    is what lets Label Studio accept ``completed_by: {"email": ...}`` on import.
    """
    wanted = sorted(set(emails))
    if not wanted:
        return {}
    from label_studio_sdk.core.api_error import ApiError

    from judgelab.sync.http_retry import repeat_write

    known = {getattr(u, "email", None): u.id for u in client.users.list()}
    ids = {}
    for email in wanted:
        if email not in known:

            def create(email: str = email) -> int:
                return client.users.create(username=email, email=email, first_name=email.split("@")[0]).id

            def landed(email: str = email) -> int | None:
                return _users(client).get(email)

            try:
                known[email] = repeat_write(create, landed, f"creating the account of {email}")
            except ApiError as exc:  # created meanwhile by someone else (another judgelab, an admin)
                if exc.status_code != 400 or landed() is None:
                    raise
                known[email] = landed()
        ids[email] = known[email]
    return ids


@dataclass
class AnnotationSet:
    """Annotations read from a file, grouped by task reference (key or Label Studio id)."""

    by_task: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.by_task.values())


def _export_annotator(annotation: Mapping[str, Any]) -> str | int | None:
    who = annotation.get("completed_by")
    if isinstance(who, Mapping) and who.get("email"):
        return str(who["email"])
    created = str(annotation.get("created_username") or "")
    for part in created.split(","):
        if "@" in part:
            return part.strip()
    return who if isinstance(who, int) else None


def read_annotations(path: Path, schema: Schema, *, skip_bad: bool = False) -> AnnotationSet:
    """Annotations of a judgments file or a Label Studio JSON export (see the module doc).

    A row naming an unknown item or a value the control does not allow raises a
    :class:`SyncError` naming the file and line (or, with ``skip_bad``, is skipped and counted).
    """
    path = Path(path)
    records = read_records(path, skip_bad=skip_bad)
    out = AnnotationSet()
    errors: list[str] = []
    controls = controls_by_name(schema)
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for where, record in records:
        if not isinstance(record, Mapping):
            errors.append(f"{where}: expected an object, got {type(record).__name__}")
            continue
        if isinstance(record.get("annotations"), list):  # Label Studio export task
            _add_export_task(out, where, record, errors)
        else:
            _add_judgment_row(out, grouped, where, record, controls, schema.name, errors)
    if errors and not skip_bad:
        shown = "\n  ".join(errors[:10])
        raise SyncError(f"{len(errors)} bad annotation row(s) in {path.name}; nothing was imported:\n  {shown}")
    out.skipped = errors
    for (ref, email), results in grouped.items():
        out.by_task.setdefault(ref, []).append(make_annotation(email, results))
    return out


def _add_export_task(out: AnnotationSet, where: str, record: Mapping[str, Any], errors: list[str]) -> None:
    """A Label Studio export task's annotations, under the task's key (else its data's or own id);
    an annotation without a reference, an annotator or a result is an error."""
    meta = record.get("meta") if isinstance(record.get("meta"), Mapping) else {}
    data = record.get("data") if isinstance(record.get("data"), Mapping) else {}
    ref = meta.get(KEY_FIELD) or data.get("id") or record.get("id")
    for annotation in record["annotations"]:
        who = _export_annotator(annotation) if isinstance(annotation, Mapping) else None
        if ref is None or who is None or not isinstance(annotation.get("result"), list):
            errors.append(f"{where}: annotation without task reference, annotator or result")
            continue
        completed = {"email": who} if isinstance(who, str) else who
        out.by_task.setdefault(str(ref), []).append(
            {
                "completed_by": completed,
                "result": annotation["result"],
                "was_cancelled": bool(annotation.get("was_cancelled", False)),
                "ground_truth": bool(annotation.get("ground_truth", False)),
            }
        )
        out.where.setdefault(str(ref), where)


def _add_judgment_row(
    out: AnnotationSet,
    grouped: dict[tuple[str, str], list[dict[str, Any]]],
    where: str,
    record: Mapping[str, Any],
    controls: Mapping[str, Control],
    schema_name: str,
    errors: list[str],
) -> None:
    """One judgments-file row as a result of its control, grouped by (task, annotator); a row
    without a value records nothing, an unknown item or a value the control refuses is an error."""
    ref = next((record[k] for k in ("task", "task_id", "key", "id") if record.get(k) not in (None, "")), None)
    who, item, value = record.get("annotator"), record.get("item"), record.get("value")
    if ref is None or who in (None, "") or item in (None, ""):
        errors.append(f"{where}: needs task (or task_id/key/id), annotator and item")
        return
    if value is None or value == "":
        return  # a missing judgment: nothing to record
    control = controls.get(str(item)) or _repeated(controls, str(item))
    if control is None:
        errors.append(f"{where}: item {item!r} is not a control of schema {schema_name}")
        return
    try:
        result = control_result(control, value)
    except ValueError as exc:
        errors.append(f"{where}: {exc}")
        return
    result["from_name"] = str(item)
    key = (str(ref), annotator_email(str(who)))
    grouped.setdefault(key, []).append(result)
    out.where.setdefault(str(ref), where)


def _repeated(controls: Mapping[str, Control], item: str) -> Control | None:
    """``verdict_3`` -> the Repeater control ``verdict_{{idx}}`` expanded for index 3."""
    stem, _, index = item.rpartition("_")
    if not index.isdigit():
        return None
    for control in controls.values():
        if control.flag and control.name == f"{stem}_{{{{{control.flag}}}}}":
            return control.expand(int(index))
    return None


def attach_annotations(rows: list[TaskRow], annotations: AnnotationSet) -> list[str]:
    """Add the annotations to the rows with the same key; return the references matching no row."""
    by_key = {row.key: row for row in rows}
    unmatched = []
    for ref, items in annotations.by_task.items():
        row = by_key.get(ref)
        if row is None:
            unmatched.append(ref)
            continue
        row.annotations = [*(row.annotations or []), *items]
    return unmatched


def annotations_for_existing_tasks(
    rows: list[TaskRow], annotations: AnnotationSet | None, task_keys: Mapping[int, str | None], project_id: int
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str]]:
    """Split the annotations of an import: those of tasks new to the project go with their rows
    (attached here), the others are returned (``reference -> annotations``, and where each came
    from) for :func:`add_missing_annotations`. ``task_keys``: the project's ``task id -> key``.
    One naming a task in neither the files nor the project raises :class:`SyncError` now,
    before anything is imported."""
    have = {key for key in task_keys.values() if key is not None}
    refs = task_refs(task_keys)
    later: dict[str, list[dict[str, Any]]] = {}
    where: dict[str, str] = {}
    if annotations is not None:
        unmatched = attach_annotations([row for row in rows if row.key not in have], annotations)
        missing = [ref for ref in unmatched if ref not in refs]
        if missing:
            raise SyncError(
                "annotations for task(s) in neither the imported files nor "
                + (f"project {project_id}: " if project_id else "the project: ")
                + ", ".join(f"{ref} ({annotations.where.get(ref, '?')})" for ref in missing[:10])
            )
        later.update({ref: annotations.by_task[ref] for ref in unmatched})
        where.update({ref: annotations.where.get(ref, "?") for ref in unmatched})
    for row in rows:
        if row.key in have and row.annotations:
            later.setdefault(row.key, []).extend(row.annotations)
            where.setdefault(row.key, row.where)
    return later, where


def task_refs(task_keys: Mapping[int, str | None]) -> dict[str, int]:
    """``reference -> task id``: a task's judgelab key and its Label Studio id both name it."""
    refs = {str(task_id): task_id for task_id in task_keys}
    refs.update({key: task_id for task_id, key in task_keys.items() if key is not None})
    return refs


def result_signature(result: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """An annotation's result without region ids and origins, order-free: two annotations with the
    same signature say the same thing."""
    parts = []
    for region in result or []:
        if not isinstance(region, Mapping):
            continue
        parts.append(
            json.dumps(
                [region.get("from_name"), region.get("to_name"), region.get("type"), region.get("value")],
                sort_keys=True,
                ensure_ascii=False,
                default=str,
            )
        )
    return tuple(sorted(parts))


@dataclass
class AnnotationOutcome:
    """What an import did with the annotations it was given."""

    added: int = 0  # created now (with new tasks, or on tasks already in the project)
    already: int = 0  # the same rater's same annotation was already on the task
    differ: int = 0  # the rater already has another annotation on the task: Label Studio's is kept
    users_created: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)  # where the differing ones are

    def merge(self, other: AnnotationOutcome) -> None:
        self.added += other.added
        self.already += other.already
        self.differ += other.differ
        self.users_created += other.users_created
        self.examples += other.examples

    def summary(self) -> str:
        text = f"{self.added} annotation(s) added, {self.already} already there"
        if self.differ:
            text += (
                f", {self.differ} not added because their rater already has a different annotation on the task "
                f"(Label Studio's is kept; e.g. {self.examples[0]})"
            )
        if self.users_created:
            text += f"; {len(self.users_created)} rater account(s) created"
        return text

    def as_json(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "already": self.already,
            "differ": self.differ,
            "users_created": list(self.users_created),
        }


def _users(client: Any) -> dict[str, int]:
    return {str(getattr(u, "email", "") or ""): int(u.id) for u in client.users.list()}


def ensure_users(client: Any, emails: Iterable[str], outcome: AnnotationOutcome) -> dict[str, int]:
    """:func:`ensure_annotators`, recording the accounts it had to create in ``outcome``."""
    wanted = sorted(set(emails))
    if not wanted:
        return {}
    known = _users(client)
    outcome.users_created += [email for email in wanted if email not in known]
    return ensure_annotators(client, wanted)


def _existing_annotations(client: Any, project_id: int, task_ids: list[int]) -> dict[int, dict[int, set]]:
    """``task id -> {user id -> result signatures}`` of the tasks' annotations (quick export, by ids)."""
    from judgelab.sync.sync_reads import MAX_EXPORT_IDS, export_tasks

    out: dict[int, dict[int, set]] = {}
    for start in range(0, len(task_ids), MAX_EXPORT_IDS):
        for task in export_tasks(client, project_id, task_ids[start : start + MAX_EXPORT_IDS]):
            per_user = out.setdefault(int(task["id"]), {})
            for annotation in task.get("annotations") or []:
                who = annotation.get("completed_by")
                user = who.get("id") if isinstance(who, Mapping) else who
                if user is not None:
                    per_user.setdefault(int(user), set()).add(result_signature(annotation.get("result") or []))
    return out


def add_missing_annotations(
    client: Any,
    project_id: int,
    annotations: Mapping[str, list[dict[str, Any]]],
    where: Mapping[str, str],
    *,
    tasks: Mapping[str, int] | None = None,
) -> AnnotationOutcome:
    """Create, on tasks already in the project, the annotations their raters do not have there yet.

    ``annotations`` maps a task reference (judgelab key, or Label Studio id) to annotations in
    import form (``completed_by`` an ``{"email"}`` or a user id). An annotation whose rater
    already has one with the same result on the task is "already there"; one whose rater has a
    different one is not added (nothing stored is replaced). A reference matching no task
    raises :class:`SyncError` before anything is created; rater accounts are created only for
    annotations that are added. ``tasks``: the project's ``reference -> task id``
    (:func:`task_refs`) when the caller has it (called once per chunk of a big import), else
    listed here.
    """
    outcome = AnnotationOutcome()
    refs = [ref for ref, items in annotations.items() if items]
    if not refs:
        return outcome
    if tasks is None:
        from judgelab.sync.projects import task_keys

        tasks = task_refs(task_keys(client, project_id))
    missing = [ref for ref in refs if ref not in tasks]
    if missing:
        raise SyncError(
            f"annotations for task(s) not in project {project_id} nor in the imported files: "
            + ", ".join(f"{ref} ({where.get(ref, '?')})" for ref in missing[:10])
        )
    existing = _existing_annotations(client, project_id, sorted({tasks[ref] for ref in refs}))
    known = _users(client)
    pending: list[tuple[int, dict[str, Any]]] = []
    for ref in refs:
        task_id = tasks[ref]
        for annotation in annotations[ref]:
            who = annotation["completed_by"]
            user = known.get(who["email"]) if isinstance(who, Mapping) else int(who)
            have = existing.get(task_id, {}).get(user, set()) if user is not None else set()
            if result_signature(annotation["result"]) in have:
                outcome.already += 1
            elif have:
                outcome.differ += 1
                outcome.examples.append(f"task {ref} ({where.get(ref, '?')}), rater {who}")
            else:
                pending.append((task_id, annotation))
    emails = [a["completed_by"]["email"] for _, a in pending if isinstance(a["completed_by"], Mapping)]
    ids = ensure_users(client, emails, outcome)
    for task_id, annotation in pending:
        who = annotation["completed_by"]
        _create_annotation(client, task_id, annotation, ids[who["email"]] if isinstance(who, Mapping) else int(who))
        outcome.added += 1
    return outcome


def _create_annotation(client: Any, task_id: int, annotation: Mapping[str, Any], user: int) -> None:
    """Create ``annotation`` by ``user`` on the task, riding out a busy Label Studio: after a
    failure it is sent again only when the task has no such annotation of that user yet."""
    from judgelab.sync.http_retry import repeat_write

    signature = result_signature(annotation["result"])

    def send() -> bool:
        client.annotations.create(
            id=task_id,
            result=annotation["result"],
            completed_by=user,
            was_cancelled=annotation.get("was_cancelled", False),
            ground_truth=annotation.get("ground_truth", False),
        )
        return True

    def landed() -> bool | None:
        for there in client.annotations.list(id=task_id):
            by = there.completed_by
            if (by.get("id") if isinstance(by, Mapping) else by) == user and (
                result_signature(there.result or []) == signature
            ):
                return True
        return None

    repeat_write(send, landed, f"annotation of task {task_id} by user {user}")
