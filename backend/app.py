"""The HTTP side of the ML backend: the protocol Label Studio 1.23 speaks.

``GET /health`` and ``POST /setup`` answer at once (Label Studio gives them 1 s and 3 s);
``POST /predict`` returns one prediction per task, in order (with several judges, a list of
predictions per task, one per judge, which Label Studio 1.23 stores as separate predictions);
``POST /webhook`` takes annotation events; ``GET /usage`` reports the LLM's token usage and cost.
Optional HTTP basic auth (``JUDGELAB_BASIC_AUTH_USER``/``_PASS``), which Label Studio's ML
connection supports.

``/setup``'s ``extra_params`` (the ML backend's "extra params" in Label Studio, sent with every
``/setup``) choose a project's judges: models, samples, prices (:mod:`judgelab.backend.llm.judges`).
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from judgelab.backend import __version__
from judgelab.backend.annotators.registry import make_annotator
from judgelab.backend.model import Annotator, JudgelabModel
from judgelab.backend.settings import BackendSettings
from judgelab.configs.label_config import LabelConfigError

log = logging.getLogger("judgelab.backend")


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI for a handler that reads its JSON body itself (so bad bodies get our 400, not 422)."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


TASK_SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"}, "data": {"type": "object"}}}
SETUP_BODY = _json_body(
    {
        "type": "object",
        "properties": {"project": {"type": "string"}, "schema": {"type": "string"}, "extra_params": {}},
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


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"status": "error", "error": message}, status_code=status)


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


def create_app(settings: BackendSettings | None = None, annotator: Annotator | None = None) -> FastAPI:
    settings = settings or BackendSettings.from_env()
    annotator = annotator or make_annotator(settings.annotator, settings)
    app = FastAPI(title="judgelab ML backend", version=__version__)
    models: dict[tuple[str, str], JudgelabModel] = {}

    def model_for(project: Any, label_config: Any) -> JudgelabModel:
        if not isinstance(label_config, str) or not label_config.strip():
            raise LabelConfigError("request has no label config ('schema' or 'label_config')")
        project_id = str(project or "").split(".")[0]
        key = (project_id, label_config)
        if key not in models:
            models[key] = JudgelabModel(project_id, label_config, annotator, deadline_s=settings.predict_deadline)
            log.info("project %s: schema %s", project_id, models[key].schema_name)
        return models[key]

    @app.middleware("http")
    async def basic_auth(request: Request, call_next):
        if settings.basic_auth_user and request.url.path != "/health":
            expected = base64.b64encode(
                f"{settings.basic_auth_user}:{settings.basic_auth_pass or ''}".encode()
            ).decode()
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Basic {expected}".encode()):
                return JSONResponse(
                    {"status": "error", "error": "unauthorized"},
                    status_code=401,
                    headers={"WWW-Authenticate": 'Basic realm="judgelab"'},
                )
        return await call_next(request)

    async def body(request: Request) -> dict[str, Any]:
        try:
            payload = json.loads(await request.body() or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"request body is not JSON: {exc}") from None
        if not isinstance(payload, dict):
            raise ValueError("request body must be a JSON object")
        return payload

    @app.get("/health")
    @app.get("/")
    def health() -> dict[str, Any]:
        return {"status": "UP", "model_class": "JudgelabModel", "annotator": annotator.name, "version": __version__}

    @app.post("/setup", openapi_extra=SETUP_BODY)
    async def setup(request: Request):
        try:
            payload = await body(request)
            model = model_for(payload.get("project"), payload.get("schema") or payload.get("label_config"))
            model.configure(payload.get("extra_params"))
        except (ValueError, LabelConfigError) as exc:
            return _error(400, str(exc))
        return {"model_version": model.setup(), "schema": model.schema_name, **_judges_answer(model)}

    @app.post("/predict", openapi_extra=PREDICT_BODY)
    async def predict(request: Request):
        try:
            payload = await body(request)
            tasks = payload.get("tasks")
            if not isinstance(tasks, list):
                raise ValueError("'tasks' must be a list")
            model = model_for(payload.get("project"), payload.get("label_config") or payload.get("schema"))
        except (ValueError, LabelConfigError) as exc:
            return _error(400, str(exc))
        params = payload.get("params") if isinstance(payload.get("params"), dict) else {}
        if "extra_params" in params:  # judgelab's own client sends the project's judges along
            try:
                model.configure(params.get("extra_params"))
            except ValueError as exc:
                return _error(400, str(exc))
        # in a worker thread: a long batch must not block /health (1 s) and /setup (3 s) meanwhile
        results = await run_in_threadpool(model.predict, tasks, params.get("context"))
        return {"results": results, "model_version": model.model_version}

    @app.post("/webhook", openapi_extra=WEBHOOK_BODY)
    async def webhook(request: Request):
        try:
            payload = await body(request)
        except ValueError as exc:
            return _error(400, str(exc))
        event = str(payload.get("action", "unknown"))
        project = payload.get("project") if isinstance(payload.get("project"), dict) else {}
        config = project.get("label_config")
        if not isinstance(config, str):
            return {"status": "ignored", "event": event}
        try:
            return model_for(project.get("id"), config).fit(event, payload)
        except LabelConfigError as exc:
            return _error(400, str(exc))

    @app.get("/usage")
    def usage(project: str | None = None, after: int = 0, per: str | None = None):
        """Token usage and cost of the LLM's requests: totals per model version since row
        ``after`` (``per=task``: one row per task and model version of ``project``)."""
        log_of = getattr(annotator, "usage", None)
        if log_of is None:
            return {"last_id": 0, "after": after, "project": project, "total": {}, "by_model_version": [], "rows": []}
        if per == "task":
            if not project:
                return _error(400, "per=task needs a project")
            return {"project": project, "rows": log_of.per_task(project)}
        if per is not None:
            return _error(400, "per must be 'task' (or left out)")
        return log_of.summary(project, after)

    @app.post("/train")
    async def train(request: Request):
        return {"status": "ok", "message": "judgelab does not train; annotations are counted"}

    return app
