"""Connect projects to the ML backend and ask Label Studio to retrieve predictions.

Label Studio shows only predictions whose ``model_version`` matches the project's, and it
sets the project's to the ML backend's *title* on connection. So judgelab names the ML
backend after the model version the backend reports, and renames it (which updates the
project too) whenever that version changes.

Label Studio connects the backend itself: it calls ``/health`` and ``/setup`` when an ML backend
is added or updated and keeps the ``model_version`` the backend reported. So the URL given to
Label Studio is the URL *Label Studio* reaches, which need not resolve where judgelab runs
(``http://judgelab-backend:9090`` inside a Docker network). judgelab asks the backend itself only
for what Label Studio does not keep, at the URL *judgelab* reaches (when it can), through its
:class:`~judgelab.sync.backend_client.BackendClient`: each judge's model version, and the LLM's
token usage.

A project's judges (which models, how many samples, their prices) are the ML backend's
``extra_params`` in Label Studio: Label Studio sends them with every ``/setup``, so its own
"Retrieve predictions" uses them too. With several judges, ``/setup`` reports one version per
judge; the project shows the first judge's predictions to annotators (Settings > Annotation >
Prelabeling selects another), and every judge's predictions are stored.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from label_studio_sdk.core.api_error import ApiError

from judgelab.sync.backend_client import BackendClient, BackendUnreachable
from judgelab.sync.client import SyncError, api_error_message

if TYPE_CHECKING:
    from label_studio_sdk.base_client import LabelStudioBase

log = logging.getLogger("judgelab.sync")
OUR_PREFIX = "judgelab"  # the titles judgelab gives its ML backends (then their model version)


@dataclass
class BackendLink:
    ml_id: int
    model_version: str
    created: bool
    model_versions: list[str] = field(default_factory=list)  # one per judge (the first is model_version)
    judges: list[dict[str, Any]] = field(default_factory=list)  # {"model", "samples", "model_version"}
    extra_params: dict[str, Any] | None = None  # the project's judge settings, as stored in Label Studio
    url: str = ""  # the backend as Label Studio reaches it
    judges_known: bool = True  # False: judgelab could not ask the backend; model_versions is the first only


def _same_url(a: str | None, b: str | None) -> bool:
    return (a or "").rstrip("/") == (b or "").rstrip("/")


def linked_backend(client: LabelStudioBase, project_id: int) -> Any | None:
    """The ML backend judgelab connected to the project (the first one when there are several)."""
    backends = list(client.ml.list(project=project_id))
    ours = [ml for ml in backends if (ml.title or "").startswith(OUR_PREFIX)]
    return (ours or backends or [None])[0]


def _refused(project_id: int, url: str, exc: ApiError) -> SyncError:
    said = api_error_message(exc)
    if "valid ML backend" in said:  # Label Studio reached it, and its /setup refused
        return SyncError(f"the ML backend at {url} refused project {project_id}'s settings: {said}")
    return SyncError(
        f"Label Studio could not connect project {project_id} to the ML backend at {url}: {said}. "
        "That URL is the one Label Studio must reach: in Docker, the backend's service name "
        "(--ls-backend-url http://judgelab-backend:9090); a backend on 127.0.0.1 needs Label Studio started "
        "with USE_DEFAULT_BANNED_SUBNETS=false"
    )


def connect_backend(
    client: LabelStudioBase,
    project_id: int,
    url: str,
    auth: tuple[str, str] | None = None,
    timeout: float = 100,
    extra_params: dict[str, Any] | None = None,
    backend: BackendClient | None = None,
) -> BackendLink:
    """Attach the backend Label Studio reaches at ``url`` to the project and align versions.

    An ML backend already attached at that URL is reused, one judgelab attached earlier at another
    URL is moved to this one (never a second one); Label Studio checks the backend and asks it for
    its model version in both cases. ``extra_params`` (the project's judges: see
    :func:`judge_params`) are stored with the ML backend in Label Studio; ``None`` keeps what is
    stored there. ``backend``: the backend as judgelab reaches it (default: at ``url``, with
    ``auth``), asked for each judge's version; when judgelab cannot reach it, ``judges_known`` is False.
    """
    backends = list(client.ml.list(project=project_id))
    same = [ml for ml in backends if _same_url(ml.url, url)]
    ours = [ml for ml in backends if (ml.title or "").startswith(OUR_PREFIX)]
    chosen = (same or ours or [None])[0]
    stored = getattr(chosen, "extra_params", None) if chosen is not None else None
    params = extra_params if extra_params is not None else (stored if isinstance(stored, dict) else None)
    extra: dict[str, Any] = {}
    if auth:
        extra = {"auth_method": "BASIC_AUTH", "basic_auth_user": auth[0], "basic_auth_pass": auth[1]}
    if extra_params is not None:
        extra["extra_params"] = extra_params
    ml, created = _attach(client, project_id, url, chosen, timeout, extra)
    version = _reported_version(client, ml, url)
    if ml.title != version:
        client.ml.update(id=ml.id, title=version, url=url, project=project_id, **extra)
    project = client.projects.get(id=project_id)
    if project.model_version != version:
        client.projects.update(id=project_id, model_version=version)
    link = BackendLink(ml.id, version, created, [version], [], params, url)
    _ask_judges(link, backend, auth, project_id, project.label_config)
    return link


def _attach(
    client: LabelStudioBase, project_id: int, url: str, chosen: Any | None, timeout: float, extra: dict[str, Any]
) -> tuple[Any, bool]:
    """Update the ML backend ``chosen`` to ``url``, or create one there (titled as judgelab's);
    the ML backend Label Studio answers with, and whether it was created. Label Studio refusing
    (it could not reach the backend, or the backend's /setup refused) is a :class:`SyncError`."""
    try:
        if chosen is not None:
            # an update makes Label Studio call /health and /setup again: the version is fresh
            ml = client.ml.update(id=chosen.id, url=url, project=project_id, title=chosen.title, **extra)
            return ml, False
        ml = client.ml.create(
            url=url,
            project=project_id,
            title=OUR_PREFIX,
            is_interactive=False,
            auto_update=True,
            timeout=timeout,
            **extra,
        )
        return ml, True
    except ApiError as exc:
        raise _refused(project_id, url, exc) from None


def _reported_version(client: LabelStudioBase, ml: Any, url: str) -> str:
    """The model version the backend reported to Label Studio (asked again when the answer lacks
    it); none is a :class:`SyncError` (not the judgelab backend, or its /setup failed)."""
    if not getattr(ml, "model_version", None):  # the answer carries what /setup reported; else ask again
        ml = client.ml.get(id=ml.id)
    version = str(getattr(ml, "model_version", None) or "")
    if not version:
        state = getattr(ml, "readable_state", None) or getattr(ml, "state", None)
        raise SyncError(
            f"the ML backend at {url} reported no model version to Label Studio (state {state}): "
            f"{getattr(ml, 'error_message', None) or 'is it the judgelab backend?'}"
        )
    return version


def _ask_judges(
    link: BackendLink,
    backend: BackendClient | None,
    auth: tuple[str, str] | None,
    project_id: int,
    label_config: str,
) -> None:
    """Fill ``link``'s judges and model versions from the backend's /setup, as judgelab reaches it
    (``backend``, else at the link's URL with ``auth``); unreachable, ``judges_known`` turns False."""
    params = link.extra_params
    try:
        if backend is None:
            with BackendClient(link.url, auth) as own:
                answer = own.setup(project_id, label_config, params)
        else:
            answer = backend.setup(project_id, label_config, params)
    except BackendUnreachable as exc:
        log.info("judges of project %s unknown: %s", project_id, exc)
        link.judges_known = False
        return
    link.model_versions = [str(v) for v in answer.get("model_versions") or [link.model_version]]
    link.judges = [j for j in answer.get("judges") or [] if isinstance(j, dict)]


def _price_option(values: tuple[str, ...], option: str) -> float | dict[str, float] | None:
    """``--price-in 0.15`` (every model) or ``--price-in gpt-4o=2.5`` (repeatable) as extra_params."""
    if not values:
        return None
    per_model: dict[str, float] = {}
    for value in values:
        model, _, price = value.rpartition("=")
        try:
            number = float(price)
        except ValueError:
            raise SyncError(f"{option} {value!r}: give a price per million tokens, or MODEL=PRICE") from None
        if number < 0:
            raise SyncError(f"{option} {value!r}: a price cannot be negative")
        if not model:
            if len(values) > 1:
                raise SyncError(f"{option}: give one price for every model, or MODEL=PRICE for each")
            return number
        per_model[model] = number
    return per_model


def judge_params(
    models: tuple[str, ...] = (),
    samples: int | None = None,
    price_in: tuple[str, ...] = (),
    price_out: tuple[str, ...] = (),
    price_batch_in: tuple[str, ...] = (),
    price_batch_out: tuple[str, ...] = (),
) -> dict[str, Any] | None:
    """The ``extra_params`` for a project's judges from the CLI's options (None: none given, keep
    what Label Studio has)."""
    params: dict[str, Any] = {}
    if models:
        params["models"] = [m.strip() for model in models for m in model.split(",") if m.strip()]
    if samples is not None:
        if samples < 1:
            raise SyncError("--samples must be at least 1")
        params["samples"] = samples
    prices = (
        ("price_in", price_in, "--price-in"),
        ("price_out", price_out, "--price-out"),
        ("price_batch_in", price_batch_in, "--price-batch-in"),
        ("price_batch_out", price_batch_out, "--price-batch-out"),
    )
    for key, values, option in prices:
        price = _price_option(values, option)
        if price is not None:
            params[key] = price
    return params or None


@dataclass
class RunUsage:
    """What the LLM cost for a project since a point of the backend's usage log."""

    last_id: int = 0
    requests: int = 0
    answers: int = 0
    cached: int = 0
    unreported: int = 0  # requests whose server reported no token usage (their tokens are estimated)
    unpriced: int = 0  # requests with tokens but no price
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    estimated_tokens: int = 0  # of the tokens, those estimated from the text
    estimated_cost: float | None = None  # of the cost, the part estimated
    max_task_cost: float | None = None
    by_model_version: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def describe(self) -> str:
        """One line for the user: tokens, requests, cache hits, cost (and which part is estimated)."""
        parts = [
            f"{self.prompt_tokens:,} prompt + {self.completion_tokens:,} completion tokens in {self.requests} "
            f"request(s); {self.cached} answer(s) from the cache (free)"
        ]
        if self.unreported:
            parts.append(
                f"{self.unreported} request(s) without token usage from the server: tokens and cost estimated "
                f"from their text ({self.estimated_tokens:,} tokens)"
            )
        if self.cost is not None:
            cost = f"cost {self.cost:.4f}"
            if self.estimated_cost:
                share = "all of it" if self.estimated_cost >= self.cost else f"{self.estimated_cost:.4f} of it"
                cost += f" ({share} estimated)"
            parts.append(cost + (f" ({self.unpriced} request(s) unpriced)" if self.unpriced else ""))
        elif self.requests:
            parts.append("cost unknown (no --price-in/--price-out)")
        return "; ".join(parts)


def backend_usage(backend: BackendClient, project_id: int, after: int = 0) -> RunUsage | None:
    """The backend's token usage for the project since row ``after`` (None: the backend keeps no
    usage, e.g. the offline annotator or an older judgelab). Raises
    :class:`~judgelab.sync.backend_client.BackendUnreachable` when it does not answer."""
    payload = backend.usage(project_id, after=after) or {}
    total = payload.get("total") or {}
    if not isinstance(total, dict):
        raise SyncError(f"ML backend at {backend.url} did not answer /usage: its total is not an object")
    if not total:
        return None
    counts = {k: int(total.get(k) or 0) for k in ("requests", "answers", "cached", "unreported", "unpriced")}
    return RunUsage(
        last_id=int(payload.get("last_id") or 0),
        prompt_tokens=int(total.get("prompt_tokens") or 0),
        completion_tokens=int(total.get("completion_tokens") or 0),
        # a run whose answers all came from the cache paid for nothing: its cost is 0, not unknown
        cost=total.get("cost") if total.get("cost") is not None or counts["requests"] else 0.0,
        estimated_tokens=int(total.get("estimated_tokens") or 0),
        estimated_cost=total.get("estimated_cost"),
        max_task_cost=payload.get("max_task_cost"),
        by_model_version=list(payload.get("by_model_version") or []),
        **counts,
    )


def retrieve_predictions(client: LabelStudioBase, project_id: int, exclude: list[int] | None = None) -> None:
    """Label Studio's own "Retrieve predictions" action on every task of the project but ``exclude``
    (the blind arm's tasks: the backend would answer them without a prediction anyway)."""
    try:
        client.actions.create(
            project=project_id,
            id="retrieve_tasks_predictions",
            selected_items={"all": True, "excluded": [int(i) for i in exclude or []]},
        )
    except ApiError as exc:
        raise SyncError(f"retrieve predictions failed for project {project_id}: {api_error_message(exc)}") from None


def prediction_counts(client: LabelStudioBase, project_id: int, model_version: str) -> tuple[int, int]:
    """(tasks, tasks with a prediction of ``model_version``)."""
    tasks, counts = prediction_counts_by_version(client, project_id, [model_version])
    return tasks, counts[model_version]


def prediction_counts_by_version(
    client: LabelStudioBase, project_id: int, model_versions: list[str]
) -> tuple[int, dict[str, int]]:
    """(tasks, per version the number of tasks with a prediction of it): one filtered listing each."""
    from judgelab.sync.prediction_status import missing_version

    counts, tasks = {}, 0
    for version in model_versions:
        missing, tasks = missing_version(client, project_id, version)
        counts[version] = tasks - len(missing)
    return tasks, counts
