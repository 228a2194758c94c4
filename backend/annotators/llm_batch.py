"""One /predict batch through the LLM: every task, by every judge, with every sample, within a
deadline (:class:`BatchRun`, run on the annotator's event loop).

Per judge and distinct prompt (tasks with identical messages share one), the answers are first
looked up in the response cache, sample by sample, then among the answers a batch API gave
(:mod:`judgelab.backend.llm.batch`: taken, and used as a live answer is, at the batch price); with
``ask=False`` that is all, the rest wait for a batch. The missing ones are asked for in one request
with ``n`` = the number missing (a server that answers fewer choices, as Ollama does, is asked
again for the rest, one request per sample, and remembered). Each answer is turned into drafts
as soon as it arrives, and stored in the cache only when it made a usable draft (see
:meth:`LLMAnnotator.not_worth_caching`). At the deadline the unfinished requests are cancelled;
what arrived is kept.

An identical request is paid for once while it is in flight. Within a process, a batch whose
prompt another batch is already asking for waits for that answer (:attr:`LLMAnnotator.in_flight`)
instead of asking; across processes sharing the cache file, the asking process holds a claim on
the request in the file and the others poll the cache for its answer (see
:meth:`judgelab.backend.llm.cache.SQLiteCache.claim`). A waiter never waits past its own deadline,
and when the asker fails, or its answer is not worth caching, a waiter asks in its place.

A task's draft for a judge is the judge's single answer, or, with several samples, their
majority (:func:`judgelab.backend.llm.voting.majority_draft`). Every answer used is a row of
token usage (:mod:`judgelab.backend.llm.usage`), recorded when the batch ends; a request whose
server reported no usage is counted with tokens estimated from its text, marked as estimated.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from judgelab.backend.draft import Draft
from judgelab.backend.llm.cache import cache_key
from judgelab.backend.llm.client import Choice, Completion, LLMError, Usage, without_surrogates
from judgelab.backend.llm.contracts import LLMTask
from judgelab.backend.llm.judges import Judge
from judgelab.backend.llm.usage import UsageRow
from judgelab.backend.llm.voting import majority_draft

if TYPE_CHECKING:
    from judgelab.backend.annotators.llm import LLMAnnotator

log = logging.getLogger("judgelab.annotators.llm")

#: A claim in the cache file lapses this long after its holder's deadline (its request is cut
#: at that deadline; the margin covers storing the answer).
CLAIM_MARGIN_S = 5.0
#: How often a batch waiting for another process's answer looks at the cache (growing to the max).
POLL_FIRST_S = 0.02
POLL_MAX_S = 0.25


@dataclass(frozen=True)
class BatchRefs:
    """Who the tasks are, for the usage log: the project, each task's id and each judge's
    ``model_version`` (default: the annotator's version of it)."""

    project: str | None = None
    task_ids: list[Any] | None = None
    model_versions: list[str] | None = None


@dataclass
class _Prompt:
    """One judge's answers to one prompt, shared by the tasks whose messages are identical."""

    judge: int
    messages: list[dict[str, Any]]
    response_format: dict[str, Any] | None
    keys: list[str]  # one cache key per sample
    tasks: list[int] = field(default_factory=list)
    answers: list[Choice | None] = field(default_factory=list)

    def missing(self) -> list[int]:
        return [s for s, answer in enumerate(self.answers) if answer is None]


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


class BatchRun:
    """``await BatchRun(...).run()`` -> ``(drafts, reasons)``, each ``[judge][task]``."""

    def __init__(
        self,
        annotator: LLMAnnotator,
        task: LLMTask,
        datas: list[dict[str, Any]],
        judges: list[Judge],
        deadline: float,
        refs: BatchRefs | None = None,
        ask: bool = True,
    ):
        self.annotator = annotator
        self.ask_live = ask  # False: only answers the cache or a batch API holds (nothing is asked live)
        self.task = task
        self.datas = datas
        self.judges = judges
        self.deadline = deadline
        self.refs = refs or BatchRefs()
        self.client = annotator.client
        n, m = len(datas), len(judges)
        self.drafts: list[list[Draft | None]] = [[None] * n for _ in range(m)]
        self.reasons: list[list[LLMError | None]] = [[None] * n for _ in range(m)]
        self.samples: dict[tuple[int, int], list[Draft | None]] = {}  # (judge, task) -> per-sample drafts
        self.sample_errors: dict[tuple[int, int], tuple[str, Exception]] = {}
        self.counts: Counter = Counter(tasks=n)
        self.usage: list[UsageRow] = []
        self._logged: set[str] = set()

    # ---------------------------------------------------------------- bookkeeping

    def fail(self, j: int, indices: list[int], kind: str, error: Exception) -> None:
        llm_error = error if isinstance(error, LLMError) else LLMError(kind, f"{type(error).__name__}: {error}")
        for i in indices:
            self.reasons[j][i] = llm_error
        if kind == "deadline":  # cut by the batch's wait or stopped by the client: the same to the user
            self.counts["unfinished at deadline"] += len(indices)
            return  # the batch's summary line counts them
        if kind == "awaiting batch":  # asked not to ask live: not a failure
            self.counts["awaiting a batch"] += len(indices)
            return
        self.counts[f"failed: {kind}"] += len(indices)
        message = self.client.redact(str(error))
        who = f" ({self.judges[j].model})" if len(self.judges) > 1 else ""
        if kind not in self._logged:  # the first of each kind per batch; the summary counts them all
            self._logged.add(kind)
            log.warning("LLM task %d of %d failed%s (%s): %s", indices[0], len(self.datas), who, kind, message)
        else:
            log.debug("LLM task %d of %d failed%s (%s): %s", indices[0], len(self.datas), who, kind, message)

    def _version(self, j: int) -> str:
        versions = self.refs.model_versions
        return versions[j] if versions and j < len(versions) else self.judges[j].model

    def _task_id(self, i: int) -> Any:
        ids = self.refs.task_ids
        task_id = ids[i] if ids and i < len(ids) else None
        return task_id if isinstance(task_id, int) and not isinstance(task_id, bool) else None

    def _usage_row(
        self, prompt: _Prompt, i: int, s: int, request: str | None, tokens: Any, cost: Any, estimated: bool = False
    ) -> UsageRow:
        judge = self.judges[prompt.judge]
        cached = request is None
        prompt_tokens, completion_tokens = tokens
        if cached and judge.price_in is not None and judge.price_out is not None:
            cost = 0.0  # a cache hit costs nothing
        return UsageRow(
            project=self.refs.project,
            task_id=self._task_id(i),
            model=judge.model,
            model_version=self._version(prompt.judge),
            request=request,
            sample=s,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cached=cached,
            cost=cost,
            estimated=estimated,
            at=time.time(),
        )

    # ---------------------------------------------------------------- answers

    def take(self, prompt: _Prompt, s: int, choice: Choice) -> bool:
        """Drafts from sample ``s`` for every task sharing the prompt; whether any is usable."""
        usable = False
        for i in prompt.tasks:
            per_sample = self.samples.setdefault((prompt.judge, i), [None] * len(prompt.keys))
            try:
                draft = self.task.to_draft(choice.text, self.datas[i])
            except Exception as exc:  # the contract says never, but one task must not stop a batch
                self.sample_errors.setdefault((prompt.judge, i), ("parse", exc))
                continue
            if not isinstance(draft, Draft):
                error = TypeError(f"to_draft returned {type(draft).__name__}")
                self.sample_errors.setdefault((prompt.judge, i), ("parse", error))
                continue
            clean_draft(draft)
            if not draft.is_usable():  # no prediction from it: Label Studio asks again later
                error = LLMError("no_usable_answer", unusable_reason(draft))
                self.sample_errors.setdefault((prompt.judge, i), ("no usable answer", error))
                continue
            per_sample[s] = draft
            usable = True
        return usable

    def _from_cache(self, prompt: _Prompt, cached: dict[str, str | Choice | None], shared: bool = False) -> None:
        """The missing samples found in ``cached`` (texts from the cache, or the answers another
        batch of this process received: ``shared``); they cost nothing and count as cached."""
        for s in prompt.missing():
            found = cached.get(prompt.keys[s])
            if found is None:
                continue
            prompt.answers[s] = found if isinstance(found, Choice) else Choice(found)
            self.counts["cached"] += len(prompt.tasks)
            if shared:
                self.counts["shared in flight"] += len(prompt.tasks)
            self.take(prompt, s, prompt.answers[s])
            self.usage.extend(self._usage_row(prompt, i, s, None, (None, None), None) for i in prompt.tasks)

    async def _received(self, prompt: _Prompt, slots: list[int], completion: Completion, batch: bool = False) -> None:
        """Sample answers in ``slots`` from one request: drafts, cache, usage rows (a batch API's
        answer, ``batch``, at the judge's batch prices)."""
        request = uuid.uuid4().hex[:16]
        judge = self.judges[prompt.judge]
        usage, estimated = self._paid(prompt, completion)
        cost_of = judge.batch_cost if batch else judge.cost
        tokens = (usage.prompt_tokens, usage.completion_tokens)
        first, *others = prompt.tasks
        for n, (s, choice) in enumerate(zip(slots, completion.choices, strict=False)):
            prompt.answers[s] = choice
            self.counts["answered"] += len(prompt.tasks)
            usable = self.take(prompt, s, choice)
            why_not = self.annotator.not_worth_caching(choice, usable)
            if why_not:
                self.counts[f"not cached: {why_not}"] += 1
            else:
                await asyncio.to_thread(self.annotator.cache.put, prompt.keys[s], choice.text)
            paid = tokens if n == 0 else (0, 0)  # the request's tokens go on its first answer's row
            cost = cost_of(usage) if n == 0 else (0.0 if cost_of(usage) is not None else None)
            self.usage.append(self._usage_row(prompt, first, s, request, paid, cost, estimated))
            self.usage.extend(self._usage_row(prompt, i, s, None, (None, None), None) for i in others)

    def _paid(self, prompt: _Prompt, completion: Completion) -> tuple[Usage, bool]:
        """The tokens a request cost, and whether they are estimated: the server's ``usage`` (which
        calibrates the model's estimates), else an estimate from the messages and the choices."""
        model = self.judges[prompt.judge].model
        estimates = self.annotator.token_estimates
        texts = [choice.text for choice in completion.choices]
        if completion.usage is not None:
            estimates.observe(model, prompt.messages, texts, completion.usage)
            return completion.usage, False
        return estimates.estimate(model, prompt.messages, texts), True

    async def ask(self, prompt: _Prompt) -> None:
        """Every missing sample of the prompt, each identical request asked once while in flight:
        when a batch of this process is asking for it, its answers are awaited; otherwise this
        batch asks (:meth:`_lead`) and shares what it received with the batches that waited. A
        sample the awaited batch did not get (it failed, or was cut at its deadline) is asked
        for again, by this batch or another waiter."""
        flights = self.annotator.in_flight  # only touched on the annotator's event loop
        while missing := prompt.missing():
            key = prompt.keys[missing[0]]
            flight = flights.get(key)
            if flight is not None:
                self._from_cache(prompt, await asyncio.shield(flight), shared=True)
                continue
            flight = flights[key] = asyncio.get_running_loop().create_future()
            try:
                asked = await self._lead(prompt, key)
            finally:
                del flights[key]
                flight.set_result({prompt.keys[s]: a for s, a in enumerate(prompt.answers) if a is not None})
            if asked:
                return

    async def _lead(self, prompt: _Prompt, key: str) -> bool:
        """Ask for the prompt's missing samples unless another process sharing the cache file
        is asking (its claim on ``key``): then wait until its answer is stored (taken from the
        cache: False) or its claim is gone, and claim again. True once this batch has asked."""
        cache = self.annotator.cache
        # a name of its own per asking: a late release of an earlier asker of this process must
        # not drop this one's claim
        owner = f"{self.annotator.claim_owner}:{uuid.uuid4().hex[:8]}"
        while True:
            seconds = max(0.0, self.deadline - time.monotonic()) + CLAIM_MARGIN_S
            outcome, text = await asyncio.to_thread(cache.claim, key, owner, seconds)
            if outcome == "answered":
                self._from_cache(prompt, {key: text})
                return False
            if outcome == "claimed":
                try:
                    await self._ask_llm(prompt)
                finally:  # answers are stored by now; not awaited, so a cancelled batch releases too
                    asyncio.get_running_loop().run_in_executor(None, cache.release, key, owner)
                return True
            delay = POLL_FIRST_S
            while True:  # held by another process: cut by this batch's deadline at the latest
                await asyncio.sleep(delay)
                delay = min(delay * 1.5, POLL_MAX_S)
                text, held = await asyncio.to_thread(cache.claim_state, key)
                if text is not None or not held:
                    break

    async def _ask_llm(self, prompt: _Prompt) -> None:
        """Every missing sample of the prompt: one request for all (``n``), then one per sample
        if the server gave fewer choices than asked."""
        annotator = self.annotator
        judge = self.judges[prompt.judge]
        missing = prompt.missing()
        if missing and annotator.n_supported:
            completion = await self._request(prompt, len(missing))
            await self._received(prompt, missing, completion)
            if len(missing) > 1 and len(completion.choices) < len(missing):
                annotator.n_unsupported(judge.model, len(completion.choices), len(missing))
        rest = prompt.missing()
        if rest:
            completions = await asyncio.gather(*(self._request(prompt, 1) for _ in rest))
            for s, completion in zip(rest, completions, strict=True):
                await self._received(prompt, [s], completion)

    async def _request(self, prompt: _Prompt, n: int) -> Completion:
        async with self.annotator.semaphore:
            completion = await self.client.chat(
                prompt.messages,
                prompt.response_format,
                deadline=self.deadline,
                model=self.judges[prompt.judge].model,
                n=n,
            )
        await asyncio.sleep(0)  # let the next waiting request go out before this answer is parsed
        return completion

    # ---------------------------------------------------------------- the run

    def prompts(self) -> dict[tuple[int, str], _Prompt]:
        """One :class:`_Prompt` per judge and distinct prompt; a task whose prompt cannot be made
        fails alone."""
        s = self.annotator.settings
        prompts: dict[tuple[int, str], _Prompt] = {}
        for i, data in enumerate(self.datas):
            try:  # everything about one task's prompt is in here: a bad task fails alone
                messages = clean_messages(self.task.messages(data))
                response_format = self.annotator.response_format(self.task)
                keys_per_judge = [
                    [
                        cache_key(judge.model, messages, s.temperature, s.max_tokens, response_format, sample)
                        for sample in range(judge.samples)
                    ]
                    for judge in self.judges
                ]
            except Exception as exc:
                for j in range(len(self.judges)):
                    self.fail(j, [i], "prompt", exc)
                continue
            for j, keys in enumerate(keys_per_judge):
                prompt = prompts.get((j, keys[0]))
                if prompt is None:
                    prompt = prompts[(j, keys[0])] = _Prompt(j, messages, response_format, keys, [], [None] * len(keys))
                prompt.tasks.append(i)
        return prompts

    async def run(self) -> tuple[list[list[Draft | None]], list[list[LLMError | None]]]:
        started = time.monotonic()
        prompts = list(self.prompts().values())
        cache = self.annotator.cache
        keys = [key for prompt in prompts for key in prompt.keys]
        cached = await asyncio.to_thread(lambda: {k: cache.get(k) for k in keys})
        for prompt in prompts:
            self._from_cache(prompt, cached)
        await self._from_batches(prompts)
        if not self.ask_live:
            for prompt in prompts:
                if prompt.missing():
                    waiting = LLMError("awaiting_batch", "no answer from a batch API yet (nothing is asked live)")
                    self.fail(prompt.judge, prompt.tasks, "awaiting batch", waiting)
        jobs = {asyncio.create_task(self.ask(p)): p for p in prompts if p.missing() and self.ask_live}
        if jobs:
            done, pending = await asyncio.wait(jobs, timeout=max(0.0, self.deadline - time.monotonic()))
            for job in pending:
                job.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            for job in done:
                error = job.exception()
                if error is not None:
                    kind = error.kind if isinstance(error, LLMError) else "internal"
                    if kind == "internal":
                        log.error("LLM batch: unexpected error", exc_info=error)
                    self.fail(jobs[job].judge, jobs[job].tasks, kind, error)
            for job in pending:
                cut = LLMError("deadline", "not answered before the /predict deadline")
                self.fail(jobs[job].judge, jobs[job].tasks, "deadline", cut)
        self._assemble(prompts)
        await asyncio.to_thread(self.annotator.usage.record, self.usage)
        self._summary(time.monotonic() - started)
        return self.drafts, self.reasons

    async def _from_batches(self, prompts: list[_Prompt]) -> None:
        """The missing samples a batch API answered (:mod:`judgelab.backend.llm.batch`): taken
        from the store and used as live answers are (drafts, cache, usage at the batch price)."""
        store = self.annotator.batches
        if store is None:
            return
        wanted = [prompt.keys[s] for prompt in prompts for s in prompt.missing()]
        if not wanted:
            return
        taken = await asyncio.to_thread(store.take, wanted)
        for prompt in prompts:
            for s in prompt.missing():
                answer = taken.get(prompt.keys[s])
                if answer is not None:
                    self.counts["from a batch"] += len(prompt.tasks)
                    await self._received(prompt, [s], answer.completion, batch=True)

    def _assemble(self, prompts: list[_Prompt]) -> None:
        """Each task's draft per judge: its answer, or the majority of its samples."""
        for prompt in prompts:
            j, k = prompt.judge, len(prompt.keys)
            for i in prompt.tasks:
                if self.reasons[j][i] is not None:
                    continue  # failed, or unfinished at the deadline
                usable = [d for d in self.samples.get((j, i), []) if d is not None]
                if not usable:
                    kind, error = self.sample_errors.get((j, i), ("no usable answer", LLMError("no_answer", "none")))
                    self.fail(j, [i], kind, error)
                elif k == 1:
                    self.drafts[j][i] = usable[0]
                else:
                    self.drafts[j][i] = majority_draft(usable, k)

    def _summary(self, seconds: float) -> None:
        counts = self.counts
        self.annotator.count(counts)
        failed = {k: v for k, v in counts.items() if k.startswith("failed") or k.startswith("unfinished")}
        judges = f" x {len(self.judges)} judges" if len(self.judges) > 1 else ""
        (log.warning if failed else log.info)(
            "LLM batch: %d tasks%s in %.2f s: %d cached, %d answered%s",
            len(self.datas),
            judges,
            seconds,
            counts["cached"],
            counts["answered"],
            f", {failed}" if failed else "",
        )
