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
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from judgelab.backend.draft import Draft
from judgelab.backend.llm.cache import ResponseCache, cache_key, open_cache
from judgelab.backend.llm.client import ChatClient, Choice, LLMError, without_surrogates
from judgelab.backend.llm.contracts import LLMTask
from judgelab.backend.settings import DEFAULT_PREDICT_DEADLINE, LLMSettings
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


def clean_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages with lone surrogates replaced by U+FFFD: a task's text that is not valid
    Unicode can still be sent (and hashed, and logged); the model sees a replacement mark."""
    return [
        {k: without_surrogates(v) if isinstance(v, str) else v for k, v in m.items()} if isinstance(m, dict) else m
        for m in messages
    ]


def clean_draft(draft: Draft) -> None:
    """Replace lone surrogates in a draft's texts (an answer's JSON may spell one, ``"\\ud800"``)."""
    for span in draft.spans:
        if isinstance(span.note, str):
            span.note = without_surrogates(span.note)
    draft.texts = {k: without_surrogates(v) if isinstance(v, str) else v for k, v in draft.texts.items()}
    draft.choices = {
        k: [without_surrogates(v) if isinstance(v, str) else v for v in values] for k, values in draft.choices.items()
    }


def unusable_reason(draft: Draft) -> str:
    """Why a draft is not usable, for the log."""
    info = draft.info
    spans = info.get("spans") if isinstance(info.get("spans"), dict) else {}
    if spans.get("unmatched"):
        return f"{spans['unmatched']} quoted span(s), none of them in the task's text"
    if info.get("error"):
        return str(info["error"])
    problems = info.get("problems")
    if isinstance(problems, list) and problems:
        return f"nothing usable in the answer ({problems[0]})"
    return "the answer answers no question of the task"


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
    ):
        settings.check_endpoint()
        self.settings = settings
        self.task_factory = task_factory or default_task_factory
        self.cache: ResponseCache = (
            cache
            if cache is not None
            else open_cache(settings.cache_file(), max_bytes=int(settings.cache_max_mb * 1024 * 1024))
        )
        self.stats: Counter = Counter()
        self._tasks: dict[tuple[str, str], LLMTask] = {}
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

    def version_for(self, schema_name: str, config_xml: str) -> str:
        """:attr:`version` combined with the schema's LLM task version (its prompt template and
        expected output), so Label Studio asks again when any of them changes."""
        s = self.settings
        try:
            task_version = str(self.task_for(schema_name, config_xml).version)
        except LLMTaskUnavailable:
            task_version = "no-task"
        return _short_hash(s.model, s.temperature, s.max_tokens, s.json_mode, task_version)

    def task_for(self, schema_name: str, config_xml: str) -> LLMTask:
        """The LLM task for a schema (``custom`` for an unknown config), made once and kept."""
        key = (schema_name, config_xml)
        with self._lock:
            if key in self._tasks:
                return self._tasks[key]
        try:
            schema = all_schemas().get(schema_name)
        except SchemaError:
            schema = None
        try:
            task = self.task_factory(schema, config_xml)
        except Exception as exc:
            raise LLMTaskUnavailable(f"no LLM task for schema {schema_name!r}: {type(exc).__name__}: {exc}") from exc
        with self._lock:
            return self._tasks.setdefault(key, task)

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
        drafts, reasons = self._run(task, [data], deadline_s)
        if drafts[0] is None:
            raise reasons[0] or LLMError("unknown", "no answer")
        return drafts[0]

    def annotate_batch(
        self, schema_name: str, config_xml: str, datas: list[dict[str, Any]], deadline_s: float
    ) -> list[Draft | None]:
        """Drafts in the order of ``datas``; ``None`` for a task that failed or did not finish
        within ``deadline_s`` seconds. Raises :class:`LLMTaskUnavailable` only when the schema
        has no LLM task at all."""
        started = time.monotonic()
        task = self.task_for(schema_name, config_xml)  # the first call loads the prompt: counted
        return self._run(task, datas, deadline_s - (time.monotonic() - started))[0]

    async def annotate_batch_async(
        self, schema_name: str, config_xml: str, datas: list[dict[str, Any]], deadline_s: float
    ) -> list[Draft | None]:
        """:meth:`annotate_batch` for async callers (awaits the background loop's work)."""
        deadline = time.monotonic() + deadline_s
        task = self.task_for(schema_name, config_xml)
        future = self._loop().submit(self._batch(task, datas, deadline))
        try:
            return (await asyncio.wait_for(asyncio.wrap_future(future), deadline_s + GRACE_S))[0]
        except TimeoutError:
            future.cancel()
            self._count({"unfinished at deadline": len(datas)})
            return [None] * len(datas)

    def _run(
        self, task: LLMTask, datas: list[dict[str, Any]], deadline_s: float
    ) -> tuple[list[Draft | None], list[LLMError | None]]:
        deadline = time.monotonic() + deadline_s
        future = self._loop().submit(self._batch(task, datas, deadline))
        try:
            return future.result(timeout=max(0.0, deadline_s) + GRACE_S)
        except concurrent.futures.TimeoutError:
            future.cancel()
            log.error("LLM batch of %d tasks did not return %.0f s after its deadline", len(datas), GRACE_S)
            self._count({"unfinished at deadline": len(datas)})
            return [None] * len(datas), [LLMError("deadline", "batch did not return")] * len(datas)

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

    def _count(self, counts: Counter | dict[str, int]) -> None:
        with self._lock:
            self.stats.update(counts)

    async def _batch(
        self, task: LLMTask, datas: list[dict[str, Any]], deadline: float
    ) -> tuple[list[Draft | None], list[LLMError | None]]:
        """Runs on the background loop: cache, then concurrent requests until ``deadline``."""
        started = time.monotonic()
        client, semaphore = self._client, self._semaphore
        assert client is not None and semaphore is not None
        n = len(datas)
        drafts: list[Draft | None] = [None] * n
        reasons: list[LLMError | None] = [None] * n
        counts: Counter = Counter(tasks=n)
        logged: set[str] = set()

        def fail(indices: list[int], kind: str, error: Exception) -> None:
            llm_error = error if isinstance(error, LLMError) else LLMError(kind, f"{type(error).__name__}: {error}")
            for i in indices:
                reasons[i] = llm_error
            if kind == "deadline":  # cut by the batch's wait or stopped by the client: the same to the user
                counts["unfinished at deadline"] += len(indices)
                return  # the batch's summary line counts them
            counts[f"failed: {kind}"] += len(indices)
            message = client.redact(str(error))
            if kind not in logged:  # the first of each kind per batch; the summary counts them all
                logged.add(kind)
                log.warning("LLM task %d of %d failed (%s): %s", indices[0], n, kind, message)
            else:
                log.debug("LLM task %d of %d failed (%s): %s", indices[0], n, kind, message)

        def finish(indices: list[int], text: str) -> bool:
            """Drafts from one answer for the tasks that asked it; whether any is usable."""
            usable = False
            for i in indices:
                try:
                    draft = task.to_draft(text, datas[i])
                except Exception as exc:  # the contract says never, but one task must not stop a batch
                    fail([i], "parse", exc)
                    continue
                if not isinstance(draft, Draft):
                    fail([i], "parse", TypeError(f"to_draft returned {type(draft).__name__}"))
                    continue
                clean_draft(draft)
                if not draft.is_usable():  # no prediction: Label Studio asks again later
                    fail([i], "no usable answer", LLMError("no_usable_answer", unusable_reason(draft)))
                    continue
                drafts[i] = draft
                usable = True
            return usable

        # one request per distinct prompt (a batch may hold the same task twice)
        requests: dict[str, tuple[list[dict[str, Any]], dict[str, Any] | None, list[int]]] = {}
        s = self.settings
        for i, data in enumerate(datas):
            try:  # everything about one task's prompt is in here: a bad task fails alone
                messages = clean_messages(task.messages(data))
                response_format = self.response_format(task)
                key = cache_key(s.model, messages, s.temperature, s.max_tokens, response_format)
            except Exception as exc:
                fail([i], "prompt", exc)
                continue
            if key in requests:
                requests[key][2].append(i)
            else:
                requests[key] = (messages, response_format, [i])

        cached = await asyncio.to_thread(lambda: {k: self.cache.get(k) for k in requests})
        for key, text in cached.items():
            if text is not None:
                counts["cached"] += len(requests[key][2])
                finish(requests.pop(key)[2], text)

        async def ask(key: str, messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> None:
            async with semaphore:
                completion = await client.chat(messages, response_format, deadline=deadline)
            await asyncio.sleep(0)  # let the next waiting request go out before this answer is parsed
            choice = completion.choices[0]
            counts["answered"] += len(requests[key][2])
            usable = finish(requests[key][2], choice.text)
            why_not = self.not_worth_caching(choice, usable)
            if why_not:
                counts[f"not cached: {why_not}"] += 1
            else:
                await asyncio.to_thread(self.cache.put, key, choice.text)

        jobs = {asyncio.create_task(ask(key, m, rf)): key for key, (m, rf, _) in requests.items()}
        if jobs:
            done, pending = await asyncio.wait(jobs, timeout=max(0.0, deadline - time.monotonic()))
            for job in pending:
                job.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            for job in done:
                error = job.exception()
                if error is not None:
                    kind = error.kind if isinstance(error, LLMError) else "internal"
                    if kind == "internal":
                        log.error("LLM batch: unexpected error", exc_info=error)
                    fail(requests[jobs[job]][2], kind, error)
            unfinished = [i for job in pending for i in requests[jobs[job]][2]]
            if unfinished:
                fail(unfinished, "deadline", LLMError("deadline", "not answered before the /predict deadline"))
        self._count(counts)
        failed = {k: v for k, v in counts.items() if k.startswith("failed") or k.startswith("unfinished")}
        (log.warning if failed else log.info)(
            "LLM batch: %d tasks in %.2f s: %d cached, %d answered%s",
            n,
            time.monotonic() - started,
            counts["cached"],
            counts["answered"],
            f", {failed}" if failed else "",
        )
        return drafts, reasons

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
