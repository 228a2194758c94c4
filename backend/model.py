"""The ML backend's model, in the shape users of label-studio-ml know.

``JudgelabModel(project_id, label_config)`` recognises the project's schema, then
``setup()`` gives the model version, ``predict(tasks, context)`` one prediction per task (in
order; a task that fails gets a placeholder without ``result`` so Label Studio asks again
later) and ``fit(event, data)`` receives annotation webhooks.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Any, Protocol

from backend.detect import Detection, detect_schema
from backend.draft import Draft
from backend.label_config import parse_label_config
from backend.results import build_results
from backend.schemas import all_schemas
from backend.task_data import TaskDataError, prepare_task_data

log = logging.getLogger("judgelab.backend")


class Annotator(Protocol):
    """Proposes answers for one task of a schema ("custom" for unknown configs)."""

    name: str

    @property
    def version(self) -> str: ...

    def annotate(self, schema: str, data: dict[str, Any]) -> Draft: ...


class JudgelabModel:
    def __init__(self, project_id: str | int | None, label_config: str, annotator: Annotator):
        self.project_id = project_id
        self.label_config = label_config
        self.config = parse_label_config(label_config)
        self.annotator = annotator
        self.detection: Detection = detect_schema(label_config, all_schemas())
        self.stats: Counter = Counter()

    @property
    def schema_name(self) -> str:
        return self.detection.name

    @property
    def model_version(self) -> str:
        """Changes whenever the annotator (its model, prompt or settings), the schema or the
        config's structure changes, so Label Studio asks for new predictions."""
        return f"judgelab-{self.annotator.name}-{self.annotator.version}-{self.schema_name}-{self.config.digest}"

    def setup(self) -> str:
        return self.model_version

    def _task_data(self, task: dict[str, Any]) -> dict[str, Any]:
        data = task.get("data") if isinstance(task, dict) else None
        if not isinstance(data, dict):
            raise TaskDataError("data", "task has no data object")
        if self.detection.schema is None:
            return data
        return prepare_task_data(self.detection.schema, data)

    def predict_one(self, task: dict[str, Any]) -> dict[str, Any]:
        """One prediction, or a placeholder (no ``result``) when the task cannot be annotated."""
        task_id = task.get("id") if isinstance(task, dict) else None
        try:
            data = self._task_data(task)
            draft = self.annotator.annotate(self.schema_name, data)
            built = build_results(draft, self.config, data)
        except Exception as exc:  # one bad task never takes the batch down
            self.stats["failed"] += 1
            log.warning("task %s: no prediction: %s", task_id, exc)
            return {"model_version": self.model_version, "error": str(exc)}
        self.stats["predicted"] += 1
        if built.dropped:
            self.stats.update({f"dropped: {k}": v for k, v in built.dropped.items()})
            log.info("task %s: dropped invalid parts %s", task_id, dict(built.dropped))
        score = draft.score if isinstance(draft.score, (int, float)) else None
        return {"result": built.regions, "score": score, "model_version": self.model_version}

    def predict(self, tasks: list[dict[str, Any]], context: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        started = time.monotonic()
        predictions = [self.predict_one(task) for task in tasks]
        log.info(
            "project %s (%s): %d tasks in %.2fs",
            self.project_id,
            self.schema_name,
            len(tasks),
            time.monotonic() - started,
        )
        return predictions

    def fit(self, event: str, data: dict[str, Any]) -> dict[str, Any]:
        """Annotation events: counted, nothing is trained."""
        self.stats[f"event: {event}"] += 1
        return {"status": "ok", "event": event}
