"""The ML backend's model, in the shape users of label-studio-ml know.

``JudgelabModel(project_id, label_config)`` recognises the project's schema, then
``setup()`` gives the model version, ``predict(tasks, context)`` one prediction per task (in
order; a task that fails gets a placeholder without ``result`` so Label Studio asks again
later) and ``fit(event, data)`` receives annotation webhooks.

An annotator with ``annotate_batch`` (the LLM) gets the whole batch at once with the time left
before ``deadline_s`` (Label Studio stops waiting after ``ML_TIMEOUT_PREDICT``): the tasks it
could not answer in time get placeholders and are asked for again later. Other annotators
(the offline one) are called task by task.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Any, Protocol

from judgelab.backend.draft import Draft
from judgelab.backend.results import build_results
from judgelab.backend.settings import DEFAULT_PREDICT_DEADLINE
from judgelab.configs.arms import BLIND_REASON, is_blind
from judgelab.configs.detect import Detection, detect_schema
from judgelab.configs.label_config import parse_label_config
from judgelab.configs.schema import all_schemas
from judgelab.configs.task_data import TaskDataError, prepare_task_data

log = logging.getLogger("judgelab.backend")


class Annotator(Protocol):
    """Proposes answers for one task of a schema ("custom" for unknown configs)."""

    name: str

    @property
    def version(self) -> str: ...

    def annotate(self, schema: str, data: dict[str, Any]) -> Draft: ...


class BatchAnnotator(Annotator, Protocol):
    """An annotator that answers a whole batch within a deadline (``None``: no answer yet)."""

    def version_for(self, schema_name: str, config_xml: str) -> str: ...

    def annotate_batch(
        self, schema_name: str, config_xml: str, datas: list[dict[str, Any]], deadline_s: float
    ) -> list[Draft | None]: ...


NO_ANSWER_YET = "no answer yet (the annotator failed or ran out of time); ask again later"


class JudgelabModel:
    def __init__(
        self,
        project_id: str | int | None,
        label_config: str,
        annotator: Annotator,
        deadline_s: float = DEFAULT_PREDICT_DEADLINE,
    ):
        self.project_id = project_id
        self.label_config = label_config
        self.config = parse_label_config(label_config)
        self.annotator = annotator
        self.deadline_s = deadline_s
        self.detection: Detection = detect_schema(label_config, all_schemas())
        self.stats: Counter = Counter()
        self._annotator_version: str | None = None

    @property
    def schema_name(self) -> str:
        return self.detection.name

    @property
    def model_version(self) -> str:
        """Changes whenever the annotator (its model, prompt or settings), the schema or the
        config's structure changes, so Label Studio asks for new predictions."""
        return f"judgelab-{self.annotator.name}-{self.annotator_version}-{self.schema_name}-{self.config.digest}"

    @property
    def annotator_version(self) -> str:
        """The annotator's version for this project (an LLM's covers its prompt for the schema)."""
        if self._annotator_version is None:
            version_for = getattr(self.annotator, "version_for", None)
            if callable(version_for):
                self._annotator_version = str(version_for(self.schema_name, self.label_config))
            else:
                self._annotator_version = str(self.annotator.version)
        return self._annotator_version

    def setup(self) -> str:
        return self.model_version

    def _task_data(self, task: dict[str, Any]) -> dict[str, Any]:
        data = task.get("data") if isinstance(task, dict) else None
        if not isinstance(data, dict):
            raise TaskDataError("data", "task has no data object")
        if self.detection.schema is None:
            return data
        return prepare_task_data(self.detection.schema, data)

    def _placeholder(self, task_id: Any, reason: str, quiet: bool = False) -> dict[str, Any]:
        """What a task without a prediction gets: no ``result``, so Label Studio asks again."""
        self.stats["failed"] += 1
        (log.debug if quiet else log.warning)("task %s: no prediction: %s", task_id, reason)
        return {"model_version": self.model_version, "error": reason}

    def _prediction(self, task_id: Any, draft: Draft, data: dict[str, Any]) -> dict[str, Any]:
        built = build_results(draft, self.config, data)
        self.stats["predicted"] += 1
        if built.dropped:
            self.stats.update({f"dropped: {k}": v for k, v in built.dropped.items()})
            log.info("task %s: dropped invalid parts %s", task_id, dict(built.dropped))
        score = draft.score if isinstance(draft.score, (int, float)) else None
        return {"result": built.regions, "score": score, "model_version": self.model_version}

    def predict_one(self, task: dict[str, Any]) -> dict[str, Any]:
        """One prediction, or a placeholder (no ``result``) when the task cannot be annotated."""
        task_id = task.get("id") if isinstance(task, dict) else None
        try:
            data = self._task_data(task)
            draft = self.annotator.annotate(self.schema_name, data)
            return self._prediction(task_id, draft, data)
        except Exception as exc:  # one bad task never takes the batch down
            return self._placeholder(task_id, str(exc))

    def predict_batch(self, tasks: list[Any], started: float | None = None) -> list[dict[str, Any]]:
        """All tasks through the annotator's ``annotate_batch``, within what is left of the deadline."""
        started = time.monotonic() if started is None else started
        annotator: BatchAnnotator = self.annotator  # type: ignore[assignment]
        predictions: list[dict[str, Any] | None] = [None] * len(tasks)
        ids = [task.get("id") if isinstance(task, dict) else None for task in tasks]
        ready: list[tuple[int, dict[str, Any]]] = []
        for i, task in enumerate(tasks):
            try:
                ready.append((i, self._task_data(task)))
            except Exception as exc:
                predictions[i] = self._placeholder(ids[i], str(exc))
        if ready:
            remaining = self.deadline_s - (time.monotonic() - started)
            try:
                drafts: list[Any] = annotator.annotate_batch(
                    self.schema_name, self.label_config, [data for _, data in ready], remaining
                )
                if not isinstance(drafts, list) or len(drafts) != len(ready):
                    raise RuntimeError(f"annotator gave {type(drafts).__name__} for a batch of {len(ready)} tasks")
            except Exception as exc:  # the whole batch failed (no LLM task for this config...)
                log.warning("project %s: batch failed: %s", self.project_id, exc)
                drafts = [exc] * len(ready)
            for (i, data), draft in zip(ready, drafts, strict=True):
                if isinstance(draft, Draft):
                    try:
                        predictions[i] = self._prediction(ids[i], draft, data)
                    except Exception as exc:
                        predictions[i] = self._placeholder(ids[i], str(exc))
                elif draft is None:  # the annotator logged why; one line per task would flood the log
                    predictions[i] = self._placeholder(ids[i], NO_ANSWER_YET, quiet=True)
                else:
                    predictions[i] = self._placeholder(ids[i], str(draft))
            waiting = sum(1 for d in drafts if d is None)
            if waiting:
                log.info(
                    "project %s: %d of %d tasks have no answer yet (placeholders)", self.project_id, waiting, len(tasks)
                )
        return [p for p in predictions if p is not None]

    def predict(self, tasks: list[dict[str, Any]], context: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        started = time.monotonic()
        # a task of the blind arm never gets a suggestion: an answer without ``result`` (Label Studio stores none)
        blind = [i for i, task in enumerate(tasks) if isinstance(task, dict) and is_blind(task.get("data"))]
        if blind:
            self.stats["blind"] += len(blind)
            skipped = set(blind)
            tasks = [task for i, task in enumerate(tasks) if i not in skipped]
        if callable(getattr(self.annotator, "annotate_batch", None)):
            predictions = self.predict_batch(tasks, started)
        else:
            predictions = [self.predict_one(task) for task in tasks]
        for i in blind:
            predictions.insert(i, {"model_version": self.model_version, "error": BLIND_REASON})
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
