"""The LLM annotator: a schema's :class:`~backend.llm.contracts.LLMTask` run through an
OpenAI-compatible endpoint, many tasks at once, within the time Label Studio waits.

``annotate_batch(schema, config_xml, datas, deadline_s)`` answers a whole /predict batch: every
task is first looked up in the response cache, the rest are sent concurrently (at most
``concurrency`` requests in flight), and after ``deadline_s`` seconds the batch returns what
is finished, with ``None`` for the rest (the model turns those into placeholders, so Label
Studio asks again; the answers that arrived are cached, so the next request is cheaper). A
task that fails (endpoint error, an answer the task cannot use) gives ``None`` too, never an
exception; failures are counted by kind in :attr:`LLMAnnotator.stats` and logged without the
API key.

An identical request is asked for once while it is in flight, by the batches of this process
and by the processes sharing the cache file (see :mod:`judgelab.backend.annotators.llm_batch`).

Several judges (models) and samples per task: ``annotate_judges(..., judges)`` gives each
judge's drafts (see :mod:`judgelab.backend.llm.judges`; the batch itself is
:class:`~judgelab.backend.annotators.llm_batch.BatchRun`). The token usage of every answer is
recorded in :attr:`LLMAnnotator.usage` (the cache's SQLite file); an answer whose server
reported none is recorded with tokens estimated from its text (:attr:`LLMAnnotator.token_estimates`,
calibrated by the answers that did report theirs).

The requests run on one event loop in a background thread owned by the annotator (one
connection pool, one concurrency bound for the whole process), so the blocking
``annotate_batch`` can be called from any worker thread and ``annotate_batch_async`` from
async code; neither blocks the web server's event loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import logging
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from judgelab.backend.annotators.llm_batch import BatchRefs, BatchRun
from judgelab.backend.draft import Draft
from judgelab.backend.llm.batch import BatchStore, open_batch_store, request_line
from judgelab.backend.llm.cache import ResponseCache, claim_owner, open_cache
from judgelab.backend.llm.client import ChatClient, Choice, LLMError
from judgelab.backend.llm.contracts import LLMTask
from judgelab.backend.llm.judges import Judge, judges_for
from judgelab.backend.llm.token_estimate import TokenEstimator
from judgelab.backend.llm.usage import UsageLog, open_usage
from judgelab.backend.model_registry import ModelRegistry, held_bytes
from judgelab.backend.settings import (
    DEFAULT_MODEL_CACHE_MB,
    DEFAULT_MODEL_CACHE_SIZE,
    DEFAULT_PREDICT_DEADLINE,
    LLMSettings,
)
from judgelab.configs.schema import Schema, SchemaError, all_schemas

log = logging.getLogger("judgelab.annotators.llm")

TaskFactory = Callable[[Schema | None, str], LLMTask]
#: Extra seconds the calling thread waits for the batch beyond its deadline (the batch itself
#: stops at the deadline; this only guards against a stuck event loop).
GRACE_S = 5.0
JSON_OBJECT = {"type": "json_object"}


class LLMTaskUnavailable(ValueError):
    """No LLM task for this schema or label config (the whole batch gets placeholders)."""


def default_task_factory(schema: Schema | None, label_config_xml: str) -> LLMTask:
    from judgelab.backend.llm.tasks import task_for  # imported late: the tasks module loads prompts

    return task_for(schema, label_config_xml)


def _short_hash(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:10]


class _LoopThread:
    """An asyncio event loop running forever in a daemon thread."""

    def __init__(self, name: str):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def submit(self, coro: Any) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        if not self.thread.is_alive():
            self.loop.close()


class LLMAnnotator:
    """Pre-annotation by an LLM. ``task_factory(schema, label_config_xml)`` gives the LLM task
    of a schema (default: :func:`backend.llm.tasks.task_for`); ``cache`` defaults to the SQLite
    file of ``settings.cache_path``."""

    name = "llm"

    def __init__(
        self,
        settings: LLMSettings,
        task_factory: TaskFactory | None = None,
        cache: ResponseCache | None = None,
        usage: UsageLog | None = None,
        max_tasks: int = DEFAULT_MODEL_CACHE_SIZE,
        max_task_bytes: int = int(DEFAULT_MODEL_CACHE_MB * 1024 * 1024) // 2,
    ):
        settings.check_endpoint()
        self.settings = settings
        self.task_factory = task_factory or default_task_factory
        self.cache: ResponseCache = (
            cache
            if cache is not None
            else open_cache(settings.cache_file(), max_bytes=int(settings.cache_max_mb * 1024 * 1024))
        )
        self.usage: UsageLog = usage if usage is not None else open_usage(settings.cache_file())
        # the answers of batch APIs waiting to be used, in the cache's file (None: no cache file)
        self.batches: BatchStore | None = open_batch_store(settings.cache_file())
        self.token_estimates = TokenEstimator()  # for answers whose server reports no usage
        self.stats: Counter = Counter()
        self.n_supported = True  # False once the server answered fewer choices than ``n`` asked
        # the LLM tasks of the configs seen lately, bounded like the backend's models
        self._tasks: ModelRegistry[LLMTask] = ModelRegistry(
            self._make_task, max_tasks, max_task_bytes, self._task_bytes
        )
        # the requests a batch of this process is asking for, by cache key: other batches with the
        # same request await its answers (touched only on the background loop)
        self.in_flight: dict[str, asyncio.Future] = {}
        self._claim_token = uuid.uuid4().hex[:12]
        self._lock = threading.Lock()
        self._runner: _LoopThread | None = None
        self._client: ChatClient | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._loop()  # started now: the first batch should not pay for the loop and the client

    def __repr__(self) -> str:
        s = self.settings
        return f"LLMAnnotator(model={s.model!r}, base_url={s.base_url!r}, concurrency={s.concurrency})"

    # ---------------------------------------------------------------- versions and tasks

    @property
    def version(self) -> str:
        """Hash of what decides the answers apart from the prompt: model, temperature,
        max_tokens, JSON mode (not the server's address, nor the key)."""
        s = self.settings
        return _short_hash(s.model, s.temperature, s.max_tokens, s.json_mode)

    def version_for(self, schema_name: str, config_xml: str, judge: Judge | None = None) -> str:
        """:attr:`version` combined with the schema's LLM task version (its prompt template and
        expected output), so Label Studio asks again when any of them changes.

        For another judge than the default (another model, or several samples) the version
        starts with the model's name and ``k<samples>``, so the predictions of several judges
        are told apart in Label Studio; the default judge keeps the version it always had."""
        s = self.settings
        try:
            task_version = str(self.task_for(schema_name, config_xml).version)
        except LLMTaskUnavailable:
            task_version = "no-task"
        if judge is None or (judge.model == s.model and judge.samples == 1):
            return _short_hash(s.model, s.temperature, s.max_tokens, s.json_mode, task_version)
        digest = _short_hash(judge.model, judge.samples, s.temperature, s.max_tokens, s.json_mode, task_version)
        label = re.sub(r"[^A-Za-z0-9._]+", "-", judge.model).strip("-") or "model"
        return f"{label}{f'-k{judge.samples}' if judge.samples > 1 else ''}-{digest}"

    def judges(self, params: dict[str, Any] | None = None) -> list[Judge]:
        """The judges a project asks for in its ``extra_params`` (default: the backend's models,
        each with ``JUDGELAB_LLM_SAMPLES`` samples). Raises ``JudgeError``."""
        return judges_for(self.settings, params)

    def task_for(self, schema_name: str, config_xml: str) -> LLMTask:
        """The LLM task for a schema (``custom`` for an unknown config), made once and kept while
        it is among the most recently used (bounded by count and size, as the backend's models are:
        memory does not grow with every config Label Studio or anyone else sends)."""
        return self._tasks.get(schema_name, config_xml)

    def preload(self) -> None:
        """Import the prompt tasks' module (it loads every schema's prompts), which the first
        task would otherwise import inside its batch's deadline."""
        import judgelab.backend.llm.tasks  # noqa: F401

    @property
    def task_registry(self) -> ModelRegistry[LLMTask]:
        """The LLM tasks kept (their count and the memory they hold, for the metrics)."""
        return self._tasks

    def _task_bytes(self, task: LLMTask) -> int:
        """What a task holds of its own (not this annotator nor the schemas)."""
        try:
            schemas = list(all_schemas().values())
        except SchemaError:
            schemas = []
        return held_bytes(task, shared=(self, *schemas))

    def _make_task(self, schema_name: str, config_xml: str) -> LLMTask:
        try:
            schema = all_schemas().get(schema_name)
        except SchemaError:
            schema = None
        try:
            return self.task_factory(schema, config_xml)
        except Exception as exc:
            raise LLMTaskUnavailable(f"no LLM task for schema {schema_name!r}: {type(exc).__name__}: {exc}") from exc

    @property
    def claim_owner(self) -> str:
        """Who holds this annotator's claims in the cache file (machine, process, annotator)."""
        return claim_owner(self._claim_token)

    def not_worth_caching(self, choice: Choice, usable: bool) -> str | None:
        """Why an answer is not stored (None: it is). Only an answer that made a usable draft is
        kept: prose without an item or spans that are not in the text would stay in the cache and
        leave the task empty after the endpoint is fixed. An answer cut at ``max_tokens`` may be
        used but is asked again next time, and a huge one would crowd out the rest."""
        if not usable:
            return "no usable draft"
        if choice.cut:
            return "cut at max_tokens"
        limit_kb = self.settings.cache_max_answer_kb
        if len(choice.text.encode("utf-8")) > limit_kb * 1024:
            return f"answer over {limit_kb:g} KB"
        return None

    def response_format(self, task: LLMTask) -> dict[str, Any] | None:
        if self.settings.json_mode == "off":
            return None
        return task.response_format() or JSON_OBJECT

    # ---------------------------------------------------------------- annotating

    def annotate(self, schema: str, data: dict[str, Any], deadline_s: float = DEFAULT_PREDICT_DEADLINE) -> Draft:
        """One task of a built-in schema (or ``custom``). Raises :class:`LLMError` when there is
        no answer, so a caller can leave a placeholder rather than an empty prediction."""
        try:
            config_xml = all_schemas()[schema].config_xml
        except (KeyError, SchemaError):
            config_xml = ""
        task = self.task_for(schema, config_xml)
        drafts, reasons = self._run(task, [data], deadline_s, [self.default_judge], None)
        if drafts[0][0] is None:
            raise reasons[0][0] or LLMError("unknown", "no answer")
        return drafts[0][0]

    @property
    def default_judge(self) -> Judge:
        return Judge(self.settings.model, 1)

    def annotate_batch(
        self, schema_name: str, config_xml: str, datas: list[dict[str, Any]], deadline_s: float
    ) -> list[Draft | None]:
        """Drafts in the order of ``datas``; ``None`` for a task that failed or did not finish
        within ``deadline_s`` seconds. Raises :class:`LLMTaskUnavailable` only when the schema
        has no LLM task at all."""
        return self.annotate_judges(schema_name, config_xml, datas, deadline_s, [self.default_judge])[0]

    def annotate_judges(
        self,
        schema_name: str,
        config_xml: str,
        datas: list[dict[str, Any]],
        deadline_s: float,
        judges: list[Judge],
        *,
        project: str | None = None,
        task_ids: list[Any] | None = None,
        model_versions: list[str] | None = None,
        ask: bool = True,
    ) -> list[list[Draft | None]]:
        """Per judge, drafts in the order of ``datas`` (``None``: failed or unfinished); all
        judges' requests share the concurrency bound and the deadline. ``project``, ``task_ids``
        and the judges' ``model_versions`` name the rows of the usage log. ``ask=False``: only
        the answers the cache or a batch API holds, nothing asked live."""
        started = time.monotonic()
        task = self.task_for(schema_name, config_xml)  # the first call loads the prompt: counted
        refs = BatchRefs(project, task_ids, model_versions)
        return self._run(task, datas, deadline_s - (time.monotonic() - started), judges, refs, ask)[0]

    def batch_requests(
        self, schema_name: str, config_xml: str, datas: list[dict[str, Any]], judges: list[Judge]
    ) -> tuple[list[dict[str, Any]], dict[str, int]]:
        """The batch API request lines of every judge and sample the live path would ask for
        these tasks (one line per sample, ``custom_id`` its cache key), but those the cache holds,
        a batch answered and a batch still running has; and the counts of each kind."""
        task = self.task_for(schema_name, config_xml)
        run = BatchRun(self, task, datas, judges, time.monotonic())
        prompts = run.prompts()
        counts = {"requests": 0, "cached": 0, "answered": 0, "in_flight": 0, "failed": 0}
        counts["failed"] = sum(1 for per_judge in run.reasons for reason in per_judge if reason is not None)
        keys = [key for prompt in prompts.values() for key in prompt.keys]
        cached = {key for key in keys if self.cache.get(key) is not None}
        answered = self.batches.answered(keys) if self.batches is not None else set()
        in_flight = self.batches.in_flight(keys) if self.batches is not None else set()
        client = self.client
        lines: dict[str, dict[str, Any]] = {}
        for prompt in prompts.values():
            model = judges[prompt.judge].model
            for key in prompt.keys:
                if key in cached:
                    counts["cached"] += 1
                elif key in answered:
                    counts["answered"] += 1
                elif key in in_flight:
                    counts["in_flight"] += 1
                elif key not in lines:
                    lines[key] = request_line(key, client.payload(prompt.messages, prompt.response_format, model))
        counts["requests"] = len(lines)
        return list(lines.values()), counts

    async def annotate_batch_async(
        self, schema_name: str, config_xml: str, datas: list[dict[str, Any]], deadline_s: float
    ) -> list[Draft | None]:
        """:meth:`annotate_batch` for async callers (awaits the background loop's work)."""
        deadline = time.monotonic() + deadline_s
        task = self.task_for(schema_name, config_xml)
        future = self._loop().submit(BatchRun(self, task, datas, [self.default_judge], deadline).run())
        try:
            return (await asyncio.wait_for(asyncio.wrap_future(future), deadline_s + GRACE_S))[0][0]
        except TimeoutError:
            future.cancel()
            self.count({"unfinished at deadline": len(datas)})
            return [None] * len(datas)

    def _run(
        self,
        task: LLMTask,
        datas: list[dict[str, Any]],
        deadline_s: float,
        judges: list[Judge],
        refs: BatchRefs | None,
        ask: bool = True,
    ) -> tuple[list[list[Draft | None]], list[list[LLMError | None]]]:
        deadline = time.monotonic() + deadline_s
        future = self._loop().submit(BatchRun(self, task, datas, judges, deadline, refs, ask).run())
        try:
            return future.result(timeout=max(0.0, deadline_s) + GRACE_S)
        except concurrent.futures.TimeoutError:
            future.cancel()
            log.error("LLM batch of %d tasks did not return %.0f s after its deadline", len(datas), GRACE_S)
            self.count({"unfinished at deadline": len(datas) * len(judges)})
            none = [[None] * len(datas) for _ in judges]
            return none, [[LLMError("deadline", "batch did not return")] * len(datas) for _ in judges]

    def _loop(self) -> _LoopThread:
        with self._lock:
            if self._runner is None:
                self._runner = _LoopThread("judgelab-llm")
                self._runner.submit(self._open()).result()
            return self._runner

    async def _open(self) -> None:
        """On the background loop: the client (its connection pool) and the concurrency bound."""
        self._client = ChatClient(self.settings)
        self._semaphore = asyncio.Semaphore(self.settings.concurrency)

    @property
    def client(self) -> ChatClient:
        assert self._client is not None, "the annotator is closed"
        return self._client

    @property
    def semaphore(self) -> asyncio.Semaphore:
        assert self._semaphore is not None, "the annotator is closed"
        return self._semaphore

    def count(self, counts: Counter | dict[str, int]) -> None:
        with self._lock:
            self.stats.update(counts)

    def n_unsupported(self, model: str, given: int, asked: int) -> None:
        """The server gave ``given`` choices for ``n`` = ``asked``: samples are asked one by one."""
        if self.n_supported:
            log.info("%s answered %d choice(s) for n=%d: samples are asked one request each", model, given, asked)
        self.n_supported = False

    def close(self) -> None:
        """Close the connection pool and stop the background loop."""
        with self._lock:
            runner, self._runner = self._runner, None
        if runner is None:
            return
        if self._client is not None:
            try:
                runner.submit(self._client.aclose()).result(timeout=5)
            except Exception:  # closing is best effort
                pass
            self._client = None
            self._semaphore = None
        runner.stop()
