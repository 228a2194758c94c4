"""The ML backend's model, in the shape users of label-studio-ml know.

``JudgelabModel(project_id, label_config)`` recognises the project's schema, then
``setup()`` gives the model version, ``predict(tasks, context)`` one prediction per task (in
order; a task that fails gets a placeholder without ``result`` so Label Studio asks again
later) and ``fit(event, data)`` receives annotation webhooks.

A ``/predict`` has ``deadline_s`` seconds from its arrival (Label Studio stops waiting after
``ML_TIMEOUT_PREDICT``); the server passes the absolute time as ``deadline_at``. An annotator with
``annotate_batch`` (the LLM) gets the whole batch at once with the time left; other annotators
(the offline one) are called task by task until the deadline. Either way the tasks not answered
in time get placeholders (:data:`NO_ANSWER_YET`) and are asked for again later.

A task field that a ``valueType="url"`` text object reads and that holds a Label Studio URL (an
uploaded ``.txt`` file) is replaced by the file's text first (:mod:`judgelab.backend.ls_files`).
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from typing import Any, Protocol

from judgelab.backend.draft import Draft
from judgelab.backend.ls_files import LabelStudioFiles, url_fields
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


def _check_encodable(prediction: dict[str, Any]) -> None:
    """Raise ``ValueError`` when a prediction cannot be sent as UTF-8 JSON (a span of a task text
    holding a lone surrogate): that task gets a placeholder, and the batch's response survives."""
    try:
        json.dumps(prediction, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            "the prediction quotes the task's text, which holds a lone surrogate (text that is not valid "
            "Unicode, such as \\ud800): fix the task's data"
        ) from None


class JudgelabModel:
    def __init__(
        self,
        project_id: str | int | None,
        label_config: str,
        annotator: Annotator,
        deadline_s: float = DEFAULT_PREDICT_DEADLINE,
        files: LabelStudioFiles | None = None,
    ):
        self.project_id = project_id
        self.label_config = label_config
        self.config = parse_label_config(label_config)
        self.annotator = annotator
        self.deadline_s = deadline_s
        self.files = files
        self.url_fields = url_fields(self.config)  # data keys whose value is a URL to load
        self.detection: Detection = detect_schema(self.config, all_schemas())
        self.stats: Counter = Counter()
        self._annotator_version: str | None = None
        self._model_version: str | None = None
        self.params: dict[str, Any] | None = None  # the project's extra_params (its judges)
        self._judges: list[Any] | None = None
        self._versions: list[str] | None = None

    @property
    def schema_name(self) -> str:
        return self.detection.name

    @property
    def model_version(self) -> str:
        """Changes whenever the annotator (its model, prompt or settings), the schema or the
        config's structure changes, so Label Studio asks for new predictions. With several
        judges: the first judge's (see :attr:`model_versions`). Made once: every prediction and
        placeholder carries it."""
        if self.judges:
            return self.model_versions[0]
        if self._model_version is None:
            self._model_version = self._version_string(self.annotator_version)
        return self._model_version

    def _version_string(self, annotator_version: str) -> str:
        return f"judgelab-{self.annotator.name}-{annotator_version}-{self.schema_name}-{self.config.digest}"

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

    # ---------------------------------------------------------------- several judges (the LLM)

    def configure(self, params: Any) -> None:
        """The project's judges from ``/setup``'s ``extra_params`` (models, samples, prices; see
        :mod:`judgelab.backend.llm.judges`). Raises ``ValueError`` naming what cannot be used;
        an annotator without judges (the offline one) ignores them."""
        judges_of = getattr(self.annotator, "judges", None)
        if not callable(judges_of):
            return
        params = params if isinstance(params, dict) and params else None
        judges = judges_of(params)
        if params != self.params or self._judges is None:
            self.params, self._judges, self._versions = params, judges, None

    @property
    def judges(self) -> list[Any]:
        """The project's judges (empty for an annotator without judges)."""
        if self._judges is None:
            judges_of = getattr(self.annotator, "judges", None)
            self._judges = list(judges_of(self.params)) if callable(judges_of) else []
        return self._judges

    @property
    def model_versions(self) -> list[str]:
        """One ``model_version`` per judge (Label Studio shows each as a prediction of its own)."""
        if not self.judges:
            return [self.model_version]
        if self._versions is None:
            version_for = self.annotator.version_for  # type: ignore[attr-defined]
            self._versions = [
                self._version_string(str(version_for(self.schema_name, self.label_config, judge)))
                for judge in self.judges
            ]
        return self._versions

    def _batch_drafts(
        self, datas: list[dict[str, Any]], task_ids: list[Any], remaining: float, ask: bool = True
    ) -> list[Any]:
        """Per task: a draft (or None), or with several judges the list of their drafts
        (``ask=False``: only answers already held, see :meth:`predict`)."""
        annotate_judges = getattr(self.annotator, "annotate_judges", None)
        if not self.judges or not callable(annotate_judges):
            annotator: BatchAnnotator = self.annotator  # type: ignore[assignment]
            return annotator.annotate_batch(self.schema_name, self.label_config, datas, remaining)
        per_judge = annotate_judges(
            self.schema_name,
            self.label_config,
            datas,
            remaining,
            self.judges,
            project=str(self.project_id),
            task_ids=task_ids,
            model_versions=self.model_versions,
            **({} if ask else {"ask": False}),
        )
        if len(per_judge) == 1:
            return per_judge[0]
        return [list(drafts) for drafts in zip(*per_judge, strict=True)]

    def _judged(self, task_id: Any, drafts: list[Any], data: dict[str, Any]) -> list[dict[str, Any]] | dict[str, Any]:
        """Several judges' predictions for one task, each with its own ``model_version``; all or
        none, so every judge is compared on the same tasks (the answers that did arrive are
        cached: asking again costs only the missing ones)."""
        missing = [j.model for j, d in zip(self.judges, drafts, strict=True) if not isinstance(d, Draft)]
        if missing:
            return self._placeholder(task_id, f"{NO_ANSWER_YET} (no answer from {', '.join(missing)})", quiet=True)
        return [
            self._prediction(task_id, draft, data, version)
            for draft, version in zip(drafts, self.model_versions, strict=True)
        ]

    def _task_data(self, task: dict[str, Any], deadline_at: float | None = None) -> dict[str, Any]:
        data = task.get("data") if isinstance(task, dict) else None
        if not isinstance(data, dict):
            raise TaskDataError("data", "task has no data object")
        if self.url_fields and self.files is not None:
            data = self.files.resolve(data, self.url_fields, str(self.project_id or ""), deadline_at)
        if self.detection.schema is None:
            return data
        return prepare_task_data(self.detection.schema, data)

    def _placeholder(self, task_id: Any, reason: str, quiet: bool = False) -> dict[str, Any]:
        """What a task without a prediction gets: no ``result``, so Label Studio asks again."""
        self.stats["failed"] += 1
        (log.debug if quiet else log.warning)("task %s: no prediction: %s", task_id, reason)
        return {"model_version": self.model_version, "error": reason}

    def _prediction(
        self, task_id: Any, draft: Draft, data: dict[str, Any], version: str | None = None
    ) -> dict[str, Any]:
        built = build_results(draft, self.config, data)
        self.stats["predicted"] += 1
        if built.dropped:
            self.stats.update({f"dropped: {k}": v for k, v in built.dropped.items()})
            log.info("task %s: dropped invalid parts %s", task_id, dict(built.dropped))
        score = draft.score if isinstance(draft.score, (int, float)) else None
        prediction = {"result": built.regions, "score": score, "model_version": version or self.model_version}
        _check_encodable(prediction)
        return prediction

    def predict_one(self, task: dict[str, Any], deadline_at: float | None = None) -> dict[str, Any]:
        """One prediction, or a placeholder (no ``result``) when the task cannot be annotated."""
        task_id = task.get("id") if isinstance(task, dict) else None
        try:
            data = self._task_data(task, deadline_at)
            draft = self.annotator.annotate(self.schema_name, data)
            return self._prediction(task_id, draft, data)
        except Exception as exc:  # one bad task never takes the batch down
            return self._placeholder(task_id, str(exc))

    def predict_each(self, tasks: list[Any], deadline_at: float) -> list[dict[str, Any]]:
        """Task by task until ``deadline_at`` (``time.monotonic()``); placeholders for the rest."""
        predictions: list[dict[str, Any]] = []
        for task in tasks:
            if time.monotonic() >= deadline_at:
                break
            predictions.append(self.predict_one(task, deadline_at))
        return predictions + self._not_reached(tasks[len(predictions) :], len(tasks))

    def _not_reached(self, tasks: list[Any], total: int) -> list[dict[str, Any]]:
        if tasks:
            log.info(
                "project %s: deadline reached after %d of %d tasks (placeholders for the rest)",
                self.project_id,
                total - len(tasks),
                total,
            )
        return [
            self._placeholder(task.get("id") if isinstance(task, dict) else None, NO_ANSWER_YET, quiet=True)
            for task in tasks
        ]

    def predict_batch(self, tasks: list[Any], deadline_at: float | None = None, ask: bool = True) -> list[Any]:
        """All tasks through the annotator's ``annotate_batch``, within what is left before ``deadline_at``
        (per task a prediction, or with several judges a list of them, or a placeholder)."""
        deadline_at = time.monotonic() + self.deadline_s if deadline_at is None else deadline_at
        predictions: list[Any] = [None] * len(tasks)
        ids = [task.get("id") if isinstance(task, dict) else None for task in tasks]
        ready: list[tuple[int, dict[str, Any]]] = []
        for i, task in enumerate(tasks):
            if time.monotonic() >= deadline_at:  # reading the tasks (fetching their files) took it all
                for j, placeholder in enumerate(self._not_reached(tasks[i:], len(tasks)), start=i):
                    predictions[j] = placeholder
                break
            try:
                ready.append((i, self._task_data(task, deadline_at)))
            except Exception as exc:
                predictions[i] = self._placeholder(ids[i], str(exc))
        if ready:
            remaining = deadline_at - time.monotonic()
            try:
                drafts = self._batch_drafts([data for _, data in ready], [ids[i] for i, _ in ready], remaining, ask)
                if not isinstance(drafts, list) or len(drafts) != len(ready):
                    raise RuntimeError(f"annotator gave {type(drafts).__name__} for a batch of {len(ready)} tasks")
            except Exception as exc:  # the whole batch failed (no LLM task for this config...)
                log.warning("project %s: batch failed: %s", self.project_id, exc)
                drafts = [exc] * len(ready)
            for (i, data), draft in zip(ready, drafts, strict=True):
                if isinstance(draft, list):  # several judges
                    try:
                        predictions[i] = self._judged(ids[i], draft, data)
                    except Exception as exc:
                        predictions[i] = self._placeholder(ids[i], str(exc))
                elif isinstance(draft, Draft):
                    try:
                        predictions[i] = self._prediction(ids[i], draft, data)
                    except Exception as exc:
                        predictions[i] = self._placeholder(ids[i], str(exc))
                elif draft is None:  # the annotator logged why; one line per task would flood the log
                    predictions[i] = self._placeholder(ids[i], NO_ANSWER_YET, quiet=True)
                else:
                    predictions[i] = self._placeholder(ids[i], str(draft))
            waiting = sum(1 for d in drafts if d is None or (isinstance(d, list) and None in d))
            if waiting:
                log.info(
                    "project %s: %d of %d tasks have no answer yet (placeholders)", self.project_id, waiting, len(tasks)
                )
        return [p for p in predictions if p is not None]

    def predict(
        self,
        tasks: list[dict[str, Any]],
        context: dict[str, Any] | None = None,
        deadline_at: float | None = None,
        ask: bool = True,
    ) -> list[Any]:
        """One prediction per task, in order, by ``deadline_at`` (``time.monotonic()``; default:
        ``deadline_s`` from now). The server measures it from the request's arrival.
        ``ask=False`` (the LLM): only the answers its cache or a batch API holds; the other tasks
        get placeholders, nothing is asked live."""
        started = time.monotonic()
        deadline_at = started + self.deadline_s if deadline_at is None else deadline_at
        # a task of the blind arm never gets a suggestion: an answer without ``result`` (Label Studio stores none)
        blind = [i for i, task in enumerate(tasks) if isinstance(task, dict) and is_blind(task.get("data"))]
        if blind:
            self.stats["blind"] += len(blind)
            skipped = set(blind)
            tasks = [task for i, task in enumerate(tasks) if i not in skipped]
        if callable(getattr(self.annotator, "annotate_batch", None)):
            predictions = self.predict_batch(tasks, deadline_at, ask)
        else:
            predictions = self.predict_each(tasks, deadline_at)
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

    def batch_requests(self, tasks: list[Any]) -> tuple[list[dict[str, Any]], dict[str, int]]:
        """The batch API request lines for these tasks (every judge and sample the live path
        would ask, but those already answered or sent; never for the blind arm), and the counts
        (``requests``, ``cached``, ``answered``, ``in_flight``, ``blind``, ``failed``: tasks whose
        data or prompt cannot be made)."""
        batch_requests = getattr(self.annotator, "batch_requests", None)
        if not callable(batch_requests):
            raise ValueError(f"the {self.annotator.name} annotator asks no LLM: there is nothing to send as a batch")
        datas, blind, failed = [], 0, 0
        for task in tasks:
            if isinstance(task, dict) and is_blind(task.get("data")):
                blind += 1
                continue
            try:
                datas.append(self._task_data(task))
            except Exception as exc:
                failed += 1
                log.warning("task %s: no batch request: %s", task.get("id") if isinstance(task, dict) else None, exc)
        lines, counts = batch_requests(self.schema_name, self.label_config, datas, self.judges)
        return lines, {**counts, "blind": blind, "failed": counts.get("failed", 0) + failed}

    def fit(self, event: str, data: dict[str, Any]) -> dict[str, Any]:
        """Annotation events: counted, nothing is trained."""
        self.stats[f"event: {event}"] += 1
        return {"status": "ok", "event": event}
