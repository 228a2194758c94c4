"""Label Studio's exported tasks into the tidy tables (the contract with ``analysis/``).

- ``tasks``: project, task_id, schema, key, inclusion_probability and sampled (the task's
  ``meta["judgelab_sample"]``, written by ``judgelab design sample``), the project's title,
  overlap target and the project it is a human sample of (``PROJECT_COLUMNS``), the task's data
  fields.
- ``judgments``: one row per judgment: project, task_id, annotation_id, annotator, source
  (``human`` or ``model:<version>``), item, value, created_at, updated_at, lead_time,
  was_cancelled, ground_truth, region_id, origin, parent_prediction.
- ``spans``: project, task_id, annotation_id, annotator, source, field, start, end, text, label,
  note, region_id, origin, parent_prediction, lead_time.

``region_id`` is the Label Studio result's id and ``origin`` its ``origin`` as recorded;
``parent_prediction`` is the annotation's (see :mod:`judgelab.configs.tables`).

Items are named by the schema's ``items`` table (``verdict_{i}`` -> ``line_{i}``), else by the
control's name. A per-region TextArea becomes the ``note`` of its span.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from judgelab.configs.items import ItemNamer
from judgelab.configs.schema import Schema
from judgelab.configs.tables import (
    JUDGMENT_COLUMNS,
    PROJECT_COLUMNS,
    SPAN_COLUMNS,
    TASK_COLUMNS,
    TASK_EXTRA_COLUMN,
    prediction_annotation_id,
)

if TYPE_CHECKING:  # pandas only for the DataFrame helpers; the sync's hot path does not need it
    import pandas as pd

SPAN_TYPES = {"labels", "hypertextlabels", "paragraphlabels"}
SAMPLE_META_KEY = "judgelab_sample"  # a task's place in the human sample (judgelab design sample)


def sample_meta(meta: Any) -> dict[str, Any] | None:
    """A task's ``judgelab_sample`` meta, when it is a well-formed one."""
    value = meta.get(SAMPLE_META_KEY) if isinstance(meta, dict) else None
    return value if isinstance(value, dict) and "inclusion_probability" in value else None


def sample_columns(meta: Any) -> dict[str, Any]:
    """The ``tasks`` columns ``inclusion_probability`` (a float in (0, 1], else None: NaN in the
    table) and ``sampled`` (a bool, else None) of a task's meta.

    >>> sample_columns({"judgelab_sample": {"inclusion_probability": 0.25, "sampled": True}})
    {'inclusion_probability': 0.25, 'sampled': True}
    >>> sample_columns({"judgelab_sample": {"inclusion_probability": "x", "sampled": 1}})
    {'inclusion_probability': None, 'sampled': None}
    >>> sample_columns({})
    {'inclusion_probability': None, 'sampled': None}
    """
    value = sample_meta(meta)
    if value is None:
        return {"inclusion_probability": None, "sampled": None}
    pi = value.get("inclusion_probability")
    ok = isinstance(pi, (int, float)) and not isinstance(pi, bool) and 0 < pi <= 1
    sampled = value.get("sampled")
    return {
        "inclusion_probability": float(pi) if ok else None,
        "sampled": sampled if isinstance(sampled, bool) else None,
    }


@dataclass
class TidyTables:
    tasks: pd.DataFrame
    judgments: pd.DataFrame
    spans: pd.DataFrame

    def as_dict(self) -> dict[str, pd.DataFrame]:
        return {"tasks": self.tasks, "judgments": self.judgments, "spans": self.spans}


def _user_label(completed_by: Any, users: dict[int, str]) -> str:
    if isinstance(completed_by, dict):
        return str(completed_by.get("email") or completed_by.get("id"))
    if isinstance(completed_by, int):
        return users.get(completed_by, f"user:{completed_by}")
    return str(completed_by)


def _cell(value: Any) -> Any:
    """Task data as a table cell: scalars as they are, lists and objects as JSON."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return value


def _prediction_id(value: Any) -> int | None:
    """Label Studio's ``parent_prediction``: an id (or, in some exports, the prediction itself)."""
    if isinstance(value, dict):
        value = value.get("id")
    try:
        return None if value is None or isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        return None


def _result_rows(
    result: list[dict[str, Any]], base: dict[str, Any], name_item: ItemNamer
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    judgments, spans = [], []
    notes: dict[str, str] = {}
    for region in result or []:
        if region.get("type") == "textarea" and "start" in (region.get("value") or {}):
            notes[str(region.get("id"))] = " ".join(map(str, region["value"].get("text") or []))
    for region in result or []:
        kind, value = region.get("type"), region.get("value") or {}
        control = str(region.get("from_name", ""))
        rid = region.get("id")
        recorded = {"region_id": None if rid is None else str(rid), "origin": region.get("origin")}
        if kind in SPAN_TYPES:
            for label in value.get(kind) or [None]:
                spans.append(
                    {
                        **base,
                        **recorded,
                        "field": region.get("to_name"),
                        "start": value.get("start"),
                        "end": value.get("end"),
                        "text": value.get("text"),
                        "label": label,
                        "note": notes.get(str(region.get("id"))),
                    }
                )
        elif kind == "choices":
            for choice in value.get("choices") or []:
                judgments.append({**base, **recorded, "item": name_item(control), "value": str(choice)})
        elif kind == "rating":
            judgments.append({**base, **recorded, "item": name_item(control), "value": str(value.get("rating"))})
        elif kind == "number":
            judgments.append({**base, **recorded, "item": name_item(control), "value": str(value.get("number"))})
        elif kind == "textarea" and "start" not in value:
            text = " ".join(map(str, value.get("text") or []))
            if text.strip():
                judgments.append({**base, **recorded, "item": name_item(control), "value": text})
    return judgments, spans


def tidy_rows_from_export(
    project_id: int,
    schema_name: str,
    schema: Schema | None,
    exported: list[dict[str, Any]],
    users: dict[int, str] | None = None,
    project_columns: dict[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows of the ``tasks``, ``judgments`` and ``spans`` tables, as plain dicts;
    ``project_columns`` (``ProjectInfo.task_columns()``) go on every task row."""
    users = users or {}
    settings = {column: (project_columns or {}).get(column) for column in PROJECT_COLUMNS}
    name_item = ItemNamer.for_schema(schema)
    task_rows, judgment_rows, span_rows = [], [], []
    for task in exported:
        task_id = task.get("id")
        task_rows.append(_task_row(project_id, schema_name, task, settings))
        for ann in task.get("annotations") or []:
            base = _annotation_base(project_id, task_id, ann, users)
            j, s = _result_rows(ann.get("result") or [], base, name_item)
            if not j and not s:  # a skipped (cancelled) or empty annotation still counts as one
                j = [{**base, "item": None, "value": None}] if base["was_cancelled"] else []
            judgment_rows.extend(j)
            span_rows.extend({k: v for k, v in r.items() if k in SPAN_COLUMNS} for r in s)
        for pred in task.get("predictions") or []:
            if not isinstance(pred, dict):
                continue
            j, s = _result_rows(pred.get("result") or [], _prediction_base(project_id, task_id, pred), name_item)
            judgment_rows.extend(j)
            span_rows.extend({k: v for k, v in r.items() if k in SPAN_COLUMNS} for r in s)
    return task_rows, judgment_rows, span_rows


def _task_row(project_id: int, schema_name: str, task: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """A task's row: its key and the project's settings, then its data fields; a data field named
    like one of those columns is kept apart in ``TASK_EXTRA_COLUMN``, not dropped."""
    meta = task.get("meta") or {}
    row = {"project": project_id, "task_id": task.get("id"), "schema": schema_name, "key": meta.get("judgelab_key")}
    row.update(sample_columns(meta))
    row.update(settings)
    clashing = {}  # data fields named like a fixed column: kept apart, not dropped
    for k, v in (task.get("data") or {}).items():
        if k in row or k == TASK_EXTRA_COLUMN:
            clashing[k] = _cell(v)
        else:
            row[k] = _cell(v)
    if clashing:
        row[TASK_EXTRA_COLUMN] = clashing
    return row


def _annotation_base(project_id: int, task_id: Any, ann: dict[str, Any], users: dict[int, str]) -> dict[str, Any]:
    """The columns every row of a human annotation shares: who, when, cancelled, ground truth and
    the prediction it started from."""
    return {
        "project": project_id,
        "task_id": task_id,
        "annotation_id": str(ann.get("id")),
        "annotator": _user_label(ann.get("completed_by"), users),
        "source": "human",
        "created_at": ann.get("created_at"),
        "updated_at": ann.get("updated_at"),
        "lead_time": ann.get("lead_time"),
        "was_cancelled": bool(ann.get("was_cancelled")),
        "ground_truth": bool(ann.get("ground_truth")),
        "parent_prediction": _prediction_id(ann.get("parent_prediction")),
    }


def _prediction_base(project_id: int, task_id: Any, pred: dict[str, Any]) -> dict[str, Any]:
    """The columns every row of a prediction shares: the model version is its annotator and its
    source (``model:<version>``)."""
    version = str(pred.get("model_version") or "unknown")
    return {
        "project": project_id,
        "task_id": task_id,
        "annotation_id": prediction_annotation_id(pred.get("id")),
        "annotator": version,
        "source": f"model:{version}",
        "created_at": pred.get("created_at"),
        "updated_at": pred.get("updated_at"),
        "lead_time": None,
        "was_cancelled": False,
        "ground_truth": False,
    }


def tidy_from_export(
    project_id: int,
    schema_name: str,
    schema: Schema | None,
    exported: list[dict[str, Any]],
    users: dict[int, str] | None = None,
    project_columns: dict[str, Any] | None = None,
) -> TidyTables:
    """Tidy tables for one project's exported tasks (annotations and full predictions)."""
    import pandas as pd

    task_rows, judgment_rows, span_rows = tidy_rows_from_export(
        project_id, schema_name, schema, exported, users, project_columns
    )
    tasks = pd.DataFrame(task_rows)
    for column in TASK_COLUMNS:
        if column not in tasks:
            tasks[column] = pd.Series(dtype="object")
    tasks["inclusion_probability"] = tasks["inclusion_probability"].astype("float64")
    tasks["sampled"] = tasks["sampled"].astype("boolean")
    judgments = pd.DataFrame(judgment_rows, columns=JUDGMENT_COLUMNS)
    spans = pd.DataFrame(span_rows, columns=SPAN_COLUMNS)
    spans["start"] = spans["start"].astype("Int64")
    spans["end"] = spans["end"].astype("Int64")
    judgments["parent_prediction"] = judgments["parent_prediction"].astype("Int64")
    spans["parent_prediction"] = spans["parent_prediction"].astype("Int64")
    return TidyTables(tasks=tasks, judgments=judgments, spans=spans)


def concat_tables(parts: list[TidyTables]) -> TidyTables:
    import pandas as pd

    def cat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
        frames = [f for f in frames if not f.empty]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)

    return TidyTables(
        tasks=cat([p.tasks for p in parts], TASK_COLUMNS),
        judgments=cat([p.judgments for p in parts], JUDGMENT_COLUMNS),
        spans=cat([p.spans for p in parts], SPAN_COLUMNS),
    )
