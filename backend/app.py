"""The HTTP side of the ML backend: the protocol Label Studio 1.23 speaks.

``GET /health`` and ``POST /setup`` answer at once (Label Studio gives them 1 s and 3 s), on a
path of their own: ``/health`` on the event loop, ``/setup`` and ``/webhook`` on their own small
thread pool, never queued behind ``/predict``. ``POST /predict`` runs on the predict pool and
returns one prediction per task, in order, within ``JUDGELAB_PREDICT_DEADLINE`` seconds of the
request's *arrival* (time spent waiting for a thread counts). ``GET /metrics`` answers in the
Prometheus text format; ``GET /usage`` reports the LLM's token usage and cost. With several
judges ``/predict`` gives a list of predictions per task, one per judge, which Label Studio 1.23
stores as separate predictions. Optional HTTP basic auth (``JUDGELAB_BASIC_AUTH_USER``/``_PASS``), which
Label Studio's ML connection supports, guards everything but ``/health``.

Memory is bounded whatever is sent: request bodies (``JUDGELAB_MAX_BODY_MB``) and label configs
(``JUDGELAB_MAX_CONFIG_MB``) over their limit get a 413, and the models of the projects seen are
kept in a registry bounded by count and size (:mod:`judgelab.backend.model_registry`).

``/setup``'s ``extra_params`` (the ML backend's "extra params" in Label Studio, sent with every
``/setup``) choose a project's judges: models, samples, prices (:mod:`judgelab.backend.llm.judges`).
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client.core import GaugeMetricFamily, Metric

from judgelab.backend import __version__
from judgelab.backend.annotators.registry import make_annotator
from judgelab.backend.batch_jobs import BatchJobs
from judgelab.backend.json_io import dumps, loads_object
from judgelab.backend.llm.batch import BatchError
from judgelab.backend.ls_files import LabelStudioFiles
from judgelab.backend.metrics import CONTENT_TYPE, Metrics
from judgelab.backend.model import Annotator, JudgelabModel
from judgelab.backend.model_registry import ModelRegistry, held_bytes
from judgelab.backend.settings import BackendSettings
from judgelab.configs.label_config import LabelConfigError, preload_parser
from judgelab.configs.schema import SchemaError, all_schemas

log = logging.getLogger("judgelab.backend")

#: Threads for CPU-bound predict work (the offline annotator): a few, so the event loop (and
#: /health) still gets the interpreter often; more would only share the same core.
CPU_PREDICT_THREADS = 4
#: Threads for batch annotators (the LLM): they wait for answers, so one per concurrent request.
WAITING_PREDICT_THREADS = 256
SETUP_THREADS = 2
BATCH_THREADS = 2
#: Time kept aside per task, before the deadline, to write the answer (a placeholder and its JSON:
#: measured 20-35 us per task on a loaded 2-core machine; 100,000 tasks keep 3 s).
ANSWER_SECONDS_PER_TASK = 30e-6


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI for a handler that reads its JSON body itself (so bad bodies get our 400, not 422)."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


TASK_SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"}, "data": {"type": "object"}}}
SETUP_BODY = _json_body(
    {
        "type": "object",
        "properties": {
            "project": {"type": "string"},
            "schema": {"type": "string"},
            "hostname": {"type": "string"},
            "access_token": {"type": "string"},
            "extra_params": {},
        },
        "required": ["schema"],
    }
)
PREDICT_BODY = _json_body(
    {
        "type": "object",
        "properties": {
            "tasks": {"type": "array", "items": TASK_SCHEMA},
            "project": {"type": "string"},
            "label_config": {"type": "string"},
            "params": {"type": "object"},
        },
        "required": ["tasks", "label_config"],
    }
)
WEBHOOK_BODY = _json_body(
    {
        "type": "object",
        "properties": {"action": {"type": "string"}, "project": {"type": "object"}, "annotation": {"type": "object"}},
    }
)


class RequestError(ValueError):
    """A request the backend cannot take, with the HTTP status to answer."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"status": "error", "error": message}, status_code=status)


def json_response(payload: Any, status: int = 200) -> Response:
    """JSON bytes made in the calling thread (a 10,000-task answer is not encoded on the event
    loop), in pieces (:mod:`judgelab.backend.json_io`)."""
    return Response(dumps(payload), status_code=status, media_type="application/json")


def _judges_answer(model: JudgelabModel) -> dict[str, Any]:
    """``/setup``'s account of the project's judges (empty for the offline annotator)."""
    if not model.judges:
        return {}
    return {
        "model_versions": model.model_versions,
        "judges": [
            {"model": j.model, "samples": j.samples, "model_version": v}
            for j, v in zip(model.judges, model.model_versions, strict=True)
        ],
    }


def parse_json_object(raw: bytes) -> dict[str, Any]:
    try:
        payload = loads_object(raw or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RequestError(400, f"request body is not JSON: {exc}") from None
    except RecursionError:
        raise RequestError(400, "request body is nested too deeply") from None
    if not isinstance(payload, dict):
        raise RequestError(400, "request body must be a JSON object")
    return payload


class RequestGate:
    """Pure ASGI middleware: stamps each request's arrival (``scope["state"]["arrived"]``, the
    start of its deadline), checks basic auth and counts requests for ``/metrics``."""

    def __init__(self, app: Any, settings: BackendSettings, metrics: Metrics):
        self.app = app
        self.metrics = metrics
        self.expected: bytes | None = None
        if settings.basic_auth_user:
            pair = f"{settings.basic_auth_user}:{settings.basic_auth_pass or ''}".encode()
            self.expected = b"Basic " + base64.b64encode(pair)

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        arrived = time.monotonic()
        scope.setdefault("state", {})["arrived"] = arrived
        path = scope.get("path", "")
        status = {"code": 500}

        async def counting_send(message: dict) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        self.metrics.request_started(path)
        try:
            if self.expected is not None and path != "/health" and not self._authorized(scope):
                response = JSONResponse(
                    {"status": "error", "error": "unauthorized"},
                    status_code=401,
                    headers={"WWW-Authenticate": 'Basic realm="judgelab"'},
                )
                await response(scope, receive, counting_send)
            else:
                await self.app(scope, receive, counting_send)
        finally:
            self.metrics.request_finished(path, status["code"], time.monotonic() - arrived)

    def _authorized(self, scope: dict) -> bool:
        given = b""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                given = value
        return hmac.compare_digest(given, self.expected or b"")


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused (413) as soon as it is known to be over ``limit`` bytes."""
    too_big = RequestError(
        413, f"request body over the backend's limit of {limit / 1024 / 1024:g} MB (JUDGELAB_MAX_BODY_MB)"
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_big
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


class Backend:
    """What the routes share: the settings, the annotator, the models of the projects seen, the
    file fetcher, the counters and the thread pools (``app.state.backend``)."""

    def __init__(self, settings: BackendSettings, annotator: Annotator):
        self.settings = settings
        self.annotator = annotator
        self.files = LabelStudioFiles(
            url=settings.label_studio_url,
            api_key=settings.label_studio_api_key,
            timeout=settings.fetch_timeout,
            max_bytes=int(settings.fetch_max_mb * 1024 * 1024),
            cache_bytes=int(settings.fetch_cache_mb * 1024 * 1024),
            local_files=settings.fetch_local_files,
        )
        # the annotator's own objects per config (the LLM's prompt tasks) take their share of the cap
        self.task_registry = getattr(annotator, "task_registry", None)
        cap = int(settings.model_cache_mb * 1024 * 1024)
        cap -= min(self.task_registry.max_bytes, cap // 2) if self.task_registry is not None else 0
        self.models: ModelRegistry[JudgelabModel] = ModelRegistry(
            self._build, settings.model_cache_size, cap, size=self._model_bytes
        )
        batch_annotator = callable(getattr(annotator, "annotate_batch", None))
        self.predict_pool = ThreadPoolExecutor(
            WAITING_PREDICT_THREADS if batch_annotator else CPU_PREDICT_THREADS, thread_name_prefix="judgelab-predict"
        )
        # kept for the app's life (an app may be served several times, as tests do); their threads
        # end with the process, after the work in hand, which its deadline bounds
        self.setup_pool = ThreadPoolExecutor(SETUP_THREADS, thread_name_prefix="judgelab-setup")
        # the batch routes wait for the LLM provider (an upload, a results file): never ahead of /setup
        self.batch_pool = ThreadPoolExecutor(BATCH_THREADS, thread_name_prefix="judgelab-batch")
        self.metrics = Metrics(getattr(annotator, "stats", None), self.files.stats, state=self.families)
        self.batch_jobs = BatchJobs(self)
        self._preload()

    def _preload(self) -> None:
        """Load now, before the server answers ``/health``, what a worker's first ``/predict``
        would otherwise load inside its deadline: the SDK's label interface, the schemas, what the
        annotator loads late (the LLM's prompt tasks). About 1.3 s of imports, several seconds on a
        busy machine: enough for a short deadline to pass before the first LLM request is sent."""
        preload_parser()
        try:
            all_schemas()
        except Exception as exc:  # noqa: BLE001 - a bad schema folder: said when a config needs it, as before
            log.debug("schemas not loaded ahead: %s", exc)
        preload = getattr(self.annotator, "preload", None)
        if callable(preload):
            preload()

    def _build(self, project_id: str, label_config: str) -> JudgelabModel:
        model = JudgelabModel(
            project_id, label_config, self.annotator, deadline_s=self.settings.predict_deadline, files=self.files
        )
        log.info("project %s: schema %s", project_id, model.schema_name)
        return model

    def _model_bytes(self, model: JudgelabModel) -> int:
        """What a model holds of its own (not the annotator, the file fetcher or the schemas)."""
        try:
            schemas = list(all_schemas().values())
        except SchemaError:
            schemas = []
        return held_bytes(model, shared=(self.annotator, self.files, *schemas))

    def model_for(self, project: Any, label_config: Any) -> JudgelabModel:
        """The project's model for this label config (413 for a config over its limit)."""
        if not isinstance(label_config, str) or not label_config.strip():
            raise LabelConfigError("request has no label config ('schema' or 'label_config')")
        limit = self.settings.max_config_bytes
        if len(label_config) > limit or (
            4 * len(label_config) > limit and len(label_config.encode("utf-8", "surrogatepass")) > limit
        ):
            raise RequestError(
                413,
                f"label config over the backend's limit of {self.settings.max_config_mb:g} MB (JUDGELAB_MAX_CONFIG_MB)",
            )
        return self.models.get(str(project or "").split(".")[0], label_config)

    def setup(self, raw: bytes) -> dict[str, Any]:
        payload = parse_json_object(raw)
        model = self.model_for(payload.get("project"), payload.get("schema") or payload.get("label_config"))
        model.configure(payload.get("extra_params"))
        self.files.remember(str(model.project_id), payload.get("hostname"), payload.get("access_token"))
        return {"model_version": model.setup(), "schema": model.schema_name, **_judges_answer(model)}

    def predict(self, raw: bytes, deadline_at: float) -> dict[str, Any]:
        picked_up = time.monotonic()
        payload = parse_json_object(raw)
        tasks = payload.get("tasks")
        if not isinstance(tasks, list):
            raise RequestError(400, "'tasks' must be a list")
        model = self.model_for(payload.get("project"), payload.get("label_config") or payload.get("schema"))
        params = payload.get("params") if isinstance(payload.get("params"), dict) else {}
        if "extra_params" in params:  # judgelab's own client sends the project's judges along
            model.configure(params.get("extra_params"))
        parsed = time.monotonic()
        # the deadline is for the answer: the time to write it is kept aside (at most a quarter)
        reserve = min(self.settings.predict_deadline / 4, len(tasks) * ANSWER_SECONDS_PER_TASK)
        # ``ask: false`` (judgelab's batch route): only answers already held, nothing asked live
        ask = params.get("ask") is not False
        results = model.predict(tasks, params.get("context"), deadline_at=deadline_at - reserve, ask=ask)
        self.metrics.count_predictions(results)
        log.debug(
            "predict of %d tasks: %.2f s left at pick-up, %.2f s reading the body, %.2f s predicting",
            len(tasks),
            deadline_at - picked_up,
            parsed - picked_up,
            time.monotonic() - parsed,
        )
        return {"results": results, "model_version": model.model_version}

    def webhook(self, raw: bytes) -> dict[str, Any]:
        payload = parse_json_object(raw)
        event = str(payload.get("action", "unknown"))
        project = payload.get("project") if isinstance(payload.get("project"), dict) else {}
        config = project.get("label_config")
        if not isinstance(config, str):
            return {"status": "ignored", "event": event}
        return self.model_for(project.get("id"), config).fit(event, payload)

    def families(self) -> list[Metric]:
        """``/metrics``' families of this process's state: what it runs, the models it keeps."""
        info = GaugeMetricFamily(
            "judgelab_backend_info",
            "This server process: annotator, version, pid, LLM model.",
            labels=["annotator", "version", "pid", "llm_model"],
        )
        llm_model = self.settings.llm.model if self.settings.annotator == "llm" else ""
        info.add_metric([self.annotator.name, __version__, str(os.getpid()), llm_model], 1)
        families = [
            info,
            GaugeMetricFamily(
                "judgelab_models_cached", "Projects (project, label config) whose model is kept.", len(self.models)
            ),
            GaugeMetricFamily(
                "judgelab_models_cached_bytes", "Memory the kept models hold (measured when built).", self.models.bytes
            ),
        ]
        if self.task_registry is not None:
            families += [
                GaugeMetricFamily(
                    "judgelab_llm_tasks_cached", "Label configs whose LLM prompt task is kept.", len(self.task_registry)
                ),
                GaugeMetricFamily(
                    "judgelab_llm_tasks_cached_bytes",
                    "Memory the kept LLM tasks hold (measured when built).",
                    self.task_registry.bytes,
                ),
            ]
        return families


def backend_of(request: Request) -> Backend:
    """The routes' dependency: the app's :class:`Backend`."""
    return request.app.state.backend


def answer(work: Callable[[], Any]) -> Response:
    """``work()``'s payload as JSON; a bad request as its 4xx."""
    try:
        return json_response(work())
    except RequestError as exc:
        return _error(exc.status, str(exc))
    except (ValueError, LabelConfigError) as exc:
        return _error(400, str(exc))


async def answer_in(pool: ThreadPoolExecutor, request: Request, work: Callable[[bytes], Any]) -> Response:
    """The body read (413 over the limit), then ``work(body)`` answered on ``pool``'s threads."""
    try:
        raw = await read_body(request, request.app.state.backend.settings.max_body_bytes)
    except RequestError as exc:
        return _error(exc.status, str(exc))
    return await asyncio.get_running_loop().run_in_executor(pool, answer, lambda: work(raw))


routes = APIRouter()
Served = Annotated[Backend, Depends(backend_of)]


@routes.get("/health")
@routes.get("/")
async def health(backend: Served) -> dict[str, Any]:
    return {
        "status": "UP",
        "model_class": "JudgelabModel",
        "annotator": backend.annotator.name,
        "version": __version__,
        "stack": backend.settings.stack_id,
    }


@routes.post("/setup", openapi_extra=SETUP_BODY)
async def setup(request: Request, backend: Served) -> Response:
    return await answer_in(backend.setup_pool, request, backend.setup)


@routes.post("/predict", openapi_extra=PREDICT_BODY)
async def predict(request: Request, backend: Served) -> Response:
    deadline_at = request.scope["state"]["arrived"] + backend.settings.predict_deadline
    return await answer_in(backend.predict_pool, request, lambda raw: backend.predict(raw, deadline_at))


@routes.post("/webhook", openapi_extra=WEBHOOK_BODY)
async def webhook(request: Request, backend: Served) -> Response:
    return await answer_in(backend.setup_pool, request, backend.webhook)


@routes.get("/usage")
def usage(backend: Served, project: str | None = None, after: int = 0, per: str | None = None):
    """Token usage and cost of the LLM's requests: totals per model version since row
    ``after`` (``per=task``: one row per task and model version of ``project``)."""
    log_of = getattr(backend.annotator, "usage", None)
    if log_of is None:
        return {"last_id": 0, "after": after, "project": project, "total": {}, "by_model_version": [], "rows": []}
    if per == "task":
        if not project:
            return _error(400, "per=task needs a project")
        return {"project": project, "rows": log_of.per_task(project)}
    if per is not None:
        return _error(400, "per must be 'task' (or left out)")
    return log_of.summary(project, after)


def _batch_work(work: Callable[[dict[str, Any]], Any]) -> Callable[[bytes], Any]:
    """A batch route's work on its JSON body; the LLM provider's refusal is a 502 with its words."""

    def run(raw: bytes) -> Any:
        try:
            return work(parse_json_object(raw))
        except BatchError as exc:
            raise RequestError(502, str(exc)) from None

    return run


@routes.post("/batch/requests", openapi_extra=PREDICT_BODY)
async def batch_requests(request: Request, backend: Served) -> Response:
    """Batch API request lines for the tasks (see :mod:`judgelab.backend.batch_jobs`)."""
    return await answer_in(backend.batch_pool, request, _batch_work(backend.batch_jobs.requests))


RESULTS_BODY = _json_body({"type": "object", "properties": {"results": {"type": "string"}}})


@routes.post("/batch/results", openapi_extra=RESULTS_BODY)
async def batch_results(request: Request, backend: Served) -> Response:
    """A batch results file's answers kept for the ``/predict`` that uses them."""
    return await answer_in(backend.batch_pool, request, _batch_work(backend.batch_jobs.results))


@routes.post("/batch/submit", openapi_extra=_json_body({"type": "object", "properties": {"keys": {"type": "array"}}}))
async def batch_submit(request: Request, backend: Served) -> Response:
    """Kept request lines sent to the LLM provider's Batch API."""
    return await answer_in(backend.batch_pool, request, _batch_work(backend.batch_jobs.submit))


@routes.get("/batch/status")
async def batch_status(request: Request, backend: Served, project: str | None = None) -> Response:
    """The project's batches: running ones asked about, finished ones collected."""
    work = _batch_work(lambda _: backend.batch_jobs.status(project))
    return await asyncio.get_running_loop().run_in_executor(backend.batch_pool, answer, lambda: work(b"{}"))


@routes.post("/train")
async def train(request: Request):
    return {"status": "ok", "message": "judgelab does not train; annotations are counted"}


@routes.get("/metrics")
async def prometheus_metrics(backend: Served) -> Response:
    return Response(backend.metrics.render(), media_type=CONTENT_TYPE)


def create_app(settings: BackendSettings | None = None, annotator: Annotator | None = None) -> FastAPI:
    """The ASGI app (``uvicorn --factory judgelab.backend.app:create_app`` reads the environment)."""
    settings = settings or BackendSettings.from_env()
    annotator = annotator or make_annotator(settings.annotator, settings)
    app = FastAPI(title="judgelab ML backend", version=__version__)
    app.state.backend = Backend(settings, annotator)
    app.add_middleware(RequestGate, settings=settings, metrics=app.state.backend.metrics)
    app.include_router(routes)
    return app
