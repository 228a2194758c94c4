"""A human sample for prediction-powered estimates: ``judgelab design sample``.

A judge has predicted every task of a project; people label a sample of them, drawn with known
inclusion probabilities, and the report's prediction-powered estimates (:mod:`analysis.ppi`)
combine the two. This module chooses the sample and records it in Label Studio:

- each sampled task of the source project gets ``meta["judgelab_sample"] = {"design",
  "inclusion_probability", "sampled", "sample_id"}`` (the rest of its meta kept), which ``judgelab
  sync`` turns into the ``tasks`` columns ``inclusion_probability`` and ``sampled`` (a task holding
  the record of an earlier draw gets the new one; the others keep no record: the estimator only
  weighs labelled tasks, and Label Studio takes one task's meta per request);
- the sampled tasks are copied into the project ``<source title> (human sample)``: same data, same
  ``judgelab_key`` and ``judgelab_sample`` meta, no ML backend and no predictions (people label blind),
  its description carrying ``[judgelab-sample-of:<source id>]`` (the ``project_sample_of`` column).

The judge's *uncertainty* on a task comes from its prediction's ``score``: judgelab's backends
score a prediction by the probability that its answer is the one a person gives (the offline
heuristics' calibrated score) or by the share of the judge's ``k`` samples that agree with the
majority answer (self-consistency), so ``u = sqrt(1 - score)`` (Zrnic & Candès: the square root of
the expected squared error of an answer right with probability ``score``). A task without a
prediction of the judge gets the largest uncertainty of the others (its label is worth the most);
when no prediction has a score, every task gets the same (the active design is then uniform).

Designs (:func:`analysis.ppi.inclusion_probabilities`): ``uniform`` (``budget / N`` each, exactly
``budget`` tasks drawn), ``stratified`` (per cell of the study's cut, Neyman allocation by the cell's
mean uncertainty, exactly the allocation drawn in each cell), ``active`` (more often where the judge
is unsure, a floor for every task; each task drawn on its own, so the number drawn varies around the
budget). The draw is seeded; ``sample_id`` names the arguments of the draw, so the same command run
again finds the sample it made and adds nothing.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from judgelab.analysis.ppi import draw_sample, inclusion_probabilities
from judgelab.configs.schema import Schema
from judgelab.sync.client import SyncError
from judgelab.sync.importers import KEY_FIELD
from judgelab.sync.ls_api import as_api
from judgelab.sync.projects import sample_marker, sample_source_of
from judgelab.sync.tidy import SAMPLE_META_KEY as META_KEY
from judgelab.sync.tidy import sample_meta

log = logging.getLogger("judgelab.sync")

DESIGNS = ("uniform", "stratified", "active")
DEFAULT_FLOOR = 0.2
SAMPLE_SUFFIX = "human sample"
MAX_TITLE = 50  # Label Studio refuses longer project titles
LIST_PAGE = 1000
IMPORT_BATCH = 500
META_WORKERS = 4  # meta PATCHes at once: on two cores, half the time of one at a time
MISSING = "(missing)"


class SampleError(SyncError):
    """The sample cannot be drawn or recorded as asked."""


# --- the choice of tasks (pure) ------------------------------------------------------------------


def judge_uncertainty(score: Any) -> float:
    """The judge's uncertainty on a task from its prediction's ``score`` (the probability that the
    answer is right, or the share of samples agreeing with the majority): ``sqrt(1 - score)``;
    NaN without a usable score.

    >>> judge_uncertainty(0.75), judge_uncertainty(1.0), judge_uncertainty(None)
    (0.5, 0.0, nan)
    """
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        return math.nan
    return math.sqrt(1.0 - min(1.0, max(0.0, float(score))))


def filled_uncertainty(values: Sequence[float]) -> np.ndarray:
    """Uncertainties with the unknown ones (NaN) set to the largest known one; all 1 when none is known."""
    u = np.asarray(values, dtype=float)
    known = u[~np.isnan(u)]
    if known.size == 0:
        return np.ones(len(u))
    return np.where(np.isnan(u), known.max(), u)


@dataclass(frozen=True)
class Draw:
    """Each task's inclusion probability and whether it was drawn (in the order of the tasks)."""

    inclusion: np.ndarray
    sampled: np.ndarray


def choose_sample(
    budget: int,
    uncertainty: Sequence[float],
    *,
    design: str = "uniform",
    strata: Sequence[Any] | None = None,
    seed: int = 0,
    floor: float = DEFAULT_FLOOR,
) -> Draw:
    """Inclusion probabilities (summing to ``budget``) and a seeded draw for tasks with these
    uncertainties (NaN: unknown, see :func:`filled_uncertainty`).

    >>> d = choose_sample(3, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], seed=1)
    >>> d.inclusion.tolist(), int(d.sampled.sum())
    ([0.5, 0.5, 0.5, 0.5, 0.5, 0.5], 3)
    """
    n = len(uncertainty)
    if design not in DESIGNS:
        raise SampleError(f"design must be one of {', '.join(DESIGNS)}, not {design!r}")
    if budget < 1:
        raise SampleError(f"the budget must be at least 1 task, not {budget}")
    if budget > n:
        raise SampleError(f"a budget of {budget} tasks, but the project has {n}")
    if not 0 <= floor <= 1:
        raise SampleError(f"the floor must be between 0 and 1, not {floor}")
    u = filled_uncertainty(uncertainty)
    cells = None
    if design == "stratified":
        if strata is None:
            raise SampleError("the stratified design needs strata")
        cells = np.unique(np.asarray([str(s) for s in strata]), return_inverse=True)[1]
    pi = inclusion_probabilities(budget, u, design=design, floor=floor, strata=cells)
    rng = np.random.default_rng(seed)
    sampled = draw_sample(pi, rng, cells if design == "stratified" else None)
    return Draw(np.asarray(pi, dtype=float), np.asarray(sampled, dtype=bool))


def sample_id(source_id: int, design: str, budget: int, seed: int, judge: str, by: Sequence[str], floor: float) -> str:
    """A short id of a draw: the same arguments give the same id (so a second run finds its sample)."""
    text = "|".join(map(str, (source_id, design, budget, seed, judge, ",".join(by), floor)))
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]


# --- Label Studio ---------------------------------------------------------------------------------


@dataclass
class SourceTask:
    id: int
    data: dict[str, Any]
    meta: dict[str, Any]

    @property
    def key(self) -> str:
        key = self.meta.get(KEY_FIELD)
        return str(key) if key not in (None, "") else f"ls-task-{self.id}"


def source_tasks(client: Any, project_id: int) -> list[SourceTask]:
    """Every task of the project with its data and meta (a Data Manager listing with
    ``review=1``: it never calls the ML backend), in id order."""
    api, out, page = as_api(client), {}, 1
    while True:
        params = {
            "project": project_id,
            "page": page,
            "page_size": LIST_PAGE,
            "review": "true",
            "include": "id,data,meta",
        }
        payload = api.get_json("api/tasks/", params)
        tasks = payload.get("tasks") or []
        for task in tasks:
            meta = task.get("meta")
            data = task.get("data")
            out[int(task["id"])] = SourceTask(
                int(task["id"]), data if isinstance(data, dict) else {}, dict(meta) if isinstance(meta, dict) else {}
            )
        if not tasks or len(out) >= int(payload.get("total") or 0):
            return [out[k] for k in sorted(out)]
        page += 1


def project_predictions(client: Any, project_id: int) -> list[dict[str, Any]]:
    """Every prediction of the project (``/api/predictions/``, which never calls the backend)."""
    answer = as_api(client).get_json("api/predictions/", {"project": project_id})
    return [p for p in answer if isinstance(p, dict)] if isinstance(answer, list) else []


def choose_judge(versions: Iterable[str], wanted: str | None, current: str | None, label: str) -> str:
    """The judge's model version: ``wanted`` (it must have predictions), else the only one, else the
    project's current ``model_version`` when it has predictions; an error naming them otherwise."""
    have = sorted(set(versions))
    if not have:
        raise SampleError(
            f"{label} has no predictions, so there is no judge to sample by: pre-annotate it first "
            f"(judgelab connect, then judgelab preannotate with the same --project or --title)"
        )
    if wanted is not None:
        if wanted not in have:
            raise SampleError(f"{label} has no predictions of --judge {wanted!r}; its judges: {', '.join(have)}")
        return wanted
    if len(have) == 1:
        return have[0]
    if current in have:
        return str(current)
    raise SampleError(f"{label} has predictions of several judges ({', '.join(have)}): choose one with --judge")


def task_uncertainties(
    tasks: Sequence[SourceTask], predictions: Iterable[dict[str, Any]], judge: str
) -> tuple[list[float], int]:
    """Each task's uncertainty under the judge (its newest prediction of that version; NaN for a
    task without one or without a score), and how many tasks have no prediction of the judge."""
    newest: dict[int, dict[str, Any]] = {}
    for pred in predictions:
        if str(pred.get("model_version") or "") != judge or pred.get("task") is None:
            continue
        task = int(pred["task"])
        if task not in newest or int(pred.get("id") or 0) > int(newest[task].get("id") or 0):
            newest[task] = pred
    out, without = [], 0
    for task in tasks:
        pred = newest.get(task.id)
        if pred is None:
            out.append(math.nan)
            without += 1
            continue
        score = pred.get("score")
        if not isinstance(score, (int, float)) or isinstance(score, bool):
            region = [r.get("score") for r in pred.get("result") or [] if isinstance(r, dict)]
            region = [s for s in region if isinstance(s, (int, float)) and not isinstance(s, bool)]
            score = sum(region) / len(region) if region else None
        out.append(judge_uncertainty(score))
    return out, without


def strata_fields(schema: Schema | None, tasks: Sequence[SourceTask], requested: Sequence[str]) -> list[str]:
    """The fields the stratified design cuts by: ``requested`` (each a data field some task has),
    else the schema's ``suggested_cut`` fields, else ``model``, those with more than one value."""
    if requested:
        unknown = [f for f in requested if all(f not in t.data for t in tasks)]
        if unknown:
            have = sorted({k for t in tasks for k in t.data})
            raise SampleError(f"--by {', '.join(unknown)}: no task has such a field (fields: {', '.join(have)})")
        return list(requested)
    suggested = ((schema.meta.get("suggested_cut") or {}).get("by") or []) if schema is not None else []
    candidates = [str(f) for f in suggested] or ["model"]
    return [f for f in candidates if len({str(t.data.get(f)) for t in tasks if t.data.get(f) is not None}) > 1]


def _stratum(task: SourceTask, fields: Sequence[str]) -> str:
    return " x ".join(str(task.data.get(f)) if task.data.get(f) not in (None, "") else MISSING for f in fields)


@dataclass
class SampleResult:
    source_id: int
    source_title: str
    project_id: int
    project_title: str
    created: bool
    design: str
    budget: int
    seed: int
    judge: str
    sample_id: str
    by: list[str]
    n_tasks: int
    n_sampled: int
    min_inclusion: float
    max_inclusion: float
    meta_updated: int
    imported: int
    already: bool
    without_prediction: int
    replaced: int | None = None  # the human-sample project removed by --replace
    strata: dict[str, int] = field(default_factory=dict)  # sampled tasks per cell (stratified)
    # every source task's (id, key, record of the draw), for --out: only the sampled ones keep it in Label Studio
    draw: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self, url: str) -> dict[str, Any]:
        return {
            "source": {"id": self.source_id, "title": self.source_title},
            "project": {"id": self.project_id, "title": self.project_title, "created": self.created, "url": url},
            "design": self.design,
            "budget": self.budget,
            "seed": self.seed,
            "judge": self.judge,
            "sample_id": self.sample_id,
            "by": self.by,
            "tasks": self.n_tasks,
            "sampled": self.n_sampled,
            "inclusion_probability": {"min": self.min_inclusion, "max": self.max_inclusion},
            "meta_updated": self.meta_updated,
            "imported": self.imported,
            "already": self.already,
            "without_prediction": self.without_prediction,
            "replaced": self.replaced,
            "strata": self.strata,
        }


def sample_title(source_title: str) -> str:
    """``<source title> (human sample)``, the source title shortened to fit Label Studio's limit.

    >>> sample_title("Noticias 2025")
    'Noticias 2025 (human sample)'
    """
    tail = f" ({SAMPLE_SUFFIX})"
    return source_title[: max(0, MAX_TITLE - len(tail))].rstrip() + tail


def find_sample_project(projects: Iterable[Mapping[str, Any]], source_id: int) -> Mapping[str, Any] | None:
    """The human-sample project of ``source_id`` (by its description marker), oldest first."""
    found = [p for p in projects if sample_source_of(p.get("description")) == int(source_id)]
    return min(found, key=lambda p: int(p["id"])) if found else None


def _annotation_count(client: Any, project_id: int) -> int:
    """Annotations of a project, skipped ones included (Label Studio's project counters)."""
    project = as_api(client).get_json(f"api/projects/{int(project_id)}/", None)
    return sum(int(project.get(k) or 0) for k in ("total_annotations_number", "skipped_annotations_number"))


def _patch_meta(client: Any, project_id: int, task_id: int, meta: dict[str, Any]) -> None:
    """Write a task's whole meta (PATCH replaces it; the caller merged it). Idempotent, so a failed
    attempt is simply sent again after a pause (:func:`sync.http_retry.repeat_write`). Label Studio
    moves the task's ``updated_at``, so the next incremental sync exports it again.

    The PATCH goes through the SDK client's own HTTP client with ``review=true`` and the project
    (Label Studio then prepares the task it answers with without counting its annotations and
    predictions: a quarter less time per task than ``client.tasks.update``)."""
    from label_studio_sdk.core.api_error import ApiError

    from judgelab.sync.http_retry import repeat_write

    http = getattr(getattr(client, "_client_wrapper", None), "httpx_client", None)

    def send() -> None:
        if http is None:  # not an SDK client as judgelab makes it: its own update
            client.tasks.update(id=task_id, meta=meta)
            return
        answer = http.request(
            f"api/tasks/{int(task_id)}/",
            method="PATCH",
            params={"review": "true", "project": int(project_id)},
            json={"meta": meta},
        )
        if answer.status_code >= 400:
            try:
                body = answer.json()
            except ValueError:
                body = answer.text
            raise ApiError(status_code=answer.status_code, headers=dict(answer.headers), body=body)

    repeat_write(send, lambda: None, f"meta of task {task_id}")


def write_metas(
    client: Any,
    project_id: int,
    metas: Sequence[tuple[int, dict[str, Any]]],
    progress: Callable[[int], None] | None = None,
    workers: int = META_WORKERS,
) -> int:
    """Write the ``(task id, meta)`` pairs, ``workers`` at a time (Label Studio takes one task per
    request; a few at once keep both its cores busy); how many were written. The first failure
    (after :func:`_patch_meta`'s retries) stops the rest and is raised; what was written stays
    written, and the same command again writes what is left."""
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

    if not metas:
        return 0
    done = 0
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(metas))), thread_name_prefix="judgelab-meta") as pool:
        pending = {pool.submit(_patch_meta, client, project_id, task, meta) for task, meta in metas}
        while pending:
            finished, pending = wait(pending, return_when=FIRST_EXCEPTION)
            failed = [f for f in finished if f.exception() is not None]
            if failed:
                for future in pending:
                    future.cancel()
                raise failed[0].exception()
            done += len(finished)
            if progress:
                progress(len(finished))
    return done


def _create_sample_project(
    client: Any, source: Mapping[str, Any], title: str, overlap: int, schema_name: str | None
) -> int:
    from label_studio_sdk.core.api_error import ApiError

    from judgelab.sync.client import api_error_message
    from judgelab.sync.projects import schema_marker

    full = client.projects.get(id=int(source["id"]))
    description = (
        f"Human sample of project {source['id']} ({source.get('title')!r}) for prediction-powered estimates: "
        "label these tasks without suggestions.\n\n"
        + (f"{schema_marker(schema_name)} " if schema_name else "")
        + f"[judgelab-title:{title}] {sample_marker(int(source['id']))}"
    )
    try:
        made = client.projects.create(
            title=title,
            label_config=str(source.get("label_config") or full.label_config),
            description=description,
            expert_instruction=getattr(full, "expert_instruction", None) or "",
            show_instruction=bool(getattr(full, "show_instruction", False)),
            show_collab_predictions=False,
            evaluate_predictions_automatically=False,
            maximum_annotations=max(1, int(overlap)),
            overlap_cohort_percentage=100,
        )
    except ApiError as exc:
        raise SampleError(f"Label Studio rejected the project {title!r}: {api_error_message(exc)}") from None
    return int(made.id)


def _import_sampled(client: Any, project_id: int, tasks: Sequence[SourceTask]) -> int:
    """Import the tasks the sample project lacks (by key; a busy Label Studio is ridden out as
    :func:`sync.projects.import_rows` does); how many were imported."""
    from judgelab.sync.importers.rows import ImportLine
    from judgelab.sync.projects import existing_keys, import_batch

    have = existing_keys(client, project_id)
    missing = [t for t in tasks if t.key not in have]
    for start in range(0, len(missing), IMPORT_BATCH):
        batch = [
            ImportLine.encoded(
                t.key, f"sampled task {t.key}", {"data": t.data, "meta": {KEY_FIELD: t.key, META_KEY: t.meta[META_KEY]}}
            )
            for t in missing[start : start + IMPORT_BATCH]
        ]
        import_batch(client, project_id, batch, f"import of {len(batch)} sampled task(s)")
    return len(missing)


def _drawn_differently(stored: dict[str, Any] | None, now: dict[str, Any], the_id: str) -> bool:
    """Whether a task's stored record of the draw ``the_id`` differs from the draw made now."""
    if stored is None or stored.get("sample_id") != the_id:
        return False
    try:
        same_pi = math.isclose(float(stored["inclusion_probability"]), now["inclusion_probability"], rel_tol=1e-6)
    except (TypeError, ValueError):
        return True
    return not same_pi or bool(stored.get("sampled")) != now["sampled"]


def _source_project(client: Any, source: Any, label: str) -> tuple[dict[int, Any], Mapping[str, Any], list[SourceTask]]:
    """Label Studio's projects by id, the source among them and its tasks: refused when the source
    is missing, is itself a human sample, or has no tasks."""
    listed = {int(p["id"]): p for p in as_api(client).projects()}
    project = listed.get(int(source.id))
    if project is None:
        raise SampleError(f"no project {source.id} in Label Studio")
    if sample_source_of(project.get("description")) is not None:
        raise SampleError(
            f"{label} is itself a human sample (of project {sample_source_of(project.get('description'))})"
        )
    tasks = source_tasks(client, source.id)
    if not tasks:
        raise SampleError(f"{label} has no tasks")
    return listed, project, tasks


@dataclass
class _Drawn:
    """A draw made now from the source's tasks: the judge weighed, the cut, the draw's id."""

    judge: str
    fields: list[str]
    the_id: str
    draw: Draw
    without: int


def _draw_now(
    client: Any,
    source: Any,
    label: str,
    tasks: Sequence[SourceTask],
    *,
    budget: int,
    design: str,
    judge: str | None,
    seed: int,
    by: Sequence[str],
    floor: float,
) -> _Drawn:
    """Check the arguments against the source's tasks and predictions, and draw: the judge whose
    predictions give each task's uncertainty, the strata's fields, the draw's id and the draw."""
    predictions = project_predictions(client, source.id)
    current = getattr(client.projects.get(id=source.id), "model_version", None)
    judge = choose_judge([str(p.get("model_version") or "") for p in predictions], judge, current, label)
    if budget > len(tasks):
        raise SampleError(
            f"a budget of {budget} tasks, but {label} has {len(tasks)}: give --budget {len(tasks)} or less"
        )
    u, without = task_uncertainties(tasks, predictions, judge)
    if by and design != "stratified":
        raise SampleError("--by is for --design stratified")
    fields = strata_fields(source.schema, tasks, by) if design == "stratified" else []
    if design == "stratified" and not fields:
        raise SampleError(
            f"{label}: no field to stratify by (the schema suggests no cut and no 'model' field has two values): "
            "give --by FIELD"
        )
    the_id = sample_id(source.id, design, budget, seed, judge, fields, floor)
    drawn = choose_sample(
        budget,
        u,
        design=design,
        strata=[_stratum(t, fields) for t in tasks] if fields else None,
        seed=seed,
        floor=floor,
    )
    return _Drawn(judge, fields, the_id, drawn, without)


def _existing_draws(
    client: Any, tasks: Sequence[SourceTask], listed: Mapping[int, Any], source_id: int
) -> tuple[set[Any], Mapping[str, Any] | None]:
    """The ids of the draws already recorded (in the source's tasks and in its human-sample
    project's, since the source's meta may have been edited), and that project if there is one."""
    existing = {v.get("sample_id") for t in tasks if (v := sample_meta(t.meta)) is not None}
    sample_project = find_sample_project(listed.values(), source_id)
    if sample_project is not None:
        copied = source_tasks(client, int(sample_project["id"]))
        existing |= {v.get("sample_id") if (v := sample_meta(t.meta)) else "unknown" for t in copied}
    return existing, sample_project


def _replace_other_draw(
    client: Any,
    label: str,
    existing: set[Any],
    the_id: str,
    sample_project: Mapping[str, Any] | None,
    replace: bool,
) -> tuple[int | None, Mapping[str, Any] | None]:
    """With a sample drawn with other arguments than ``the_id``'s: refused without ``replace`` or
    once its project has annotations (nothing labelled is lost), else that project is removed.
    The id removed (if any) and the human-sample project that remains."""
    other = sorted(str(s) for s in existing - {the_id})
    if not other:
        return None, sample_project
    if not replace:
        raise SampleError(
            f"{label} already has a human sample drawn with other arguments (sample {', '.join(other)}"
            + (f", project {sample_project['id']} {sample_project.get('title')!r}" if sample_project else "")
            + "): run the same command as then to see it, or add --replace to draw anew "
            "(refused once people have labelled the sample: nothing labelled is lost)"
        )
    if sample_project is None:
        return None, None
    done = _annotation_count(client, int(sample_project["id"]))
    if done:
        raise SampleError(
            f"project {sample_project['id']} {sample_project.get('title')!r}, the human sample of {label}, "
            f"has {done} annotation(s): --replace would lose what they are a sample of. Keep that sample "
            "(run the command it was drawn with), or copy the project to a title of its own first"
        )
    client.projects.delete(id=int(sample_project["id"]))
    return int(sample_project["id"]), None


def _draw_records(tasks: Sequence[SourceTask], design: str, drawn: _Drawn) -> dict[int, dict[str, Any]]:
    """Each task's record of the draw, as its ``judgelab_sample`` meta keeps it."""
    return {
        t.id: {
            "design": design,
            "inclusion_probability": round(float(pi), 10),
            "sampled": bool(s),
            "sample_id": drawn.the_id,
        }
        for t, pi, s in zip(tasks, drawn.draw.inclusion, drawn.draw.sampled, strict=True)
    }


def _record_draw(
    client: Any,
    source_id: int,
    label: str,
    tasks: Sequence[SourceTask],
    records: Mapping[int, dict[str, Any]],
    the_id: str,
    again: bool,
    progress: Callable[[int], None] | None,
) -> int:
    """Write the records of the draw ``the_id`` into the tasks' meta where they differ (and into
    ``tasks``); how many were written. The same draw ``again`` is refused when the tasks would now be
    drawn differently."""
    if again:  # the same draw again: the tasks must be the ones it was drawn from
        changed = [t.id for t in tasks if _drawn_differently(sample_meta(t.meta), records[t.id], the_id)]
        if changed:
            raise SampleError(
                f"{label}'s tasks changed since its human sample {the_id} was drawn (task {changed[0]} and "
                f"{len(changed) - 1} more would be drawn differently now): add --replace to draw anew"
            )
    # The sampled tasks carry the record (the estimator weighs their labels by it), and so does any
    # task holding a record of an earlier draw (overwritten, so no stale draw is found again). The
    # others are left as they are: Label Studio takes one task's meta per request, and writing every
    # task of a big project (about 50 ms each) would cost more than the draw is worth.
    kept = [t for t in tasks if records[t.id]["sampled"] or META_KEY in t.meta]
    stale = [t for t in kept if t.meta.get(META_KEY) != records[t.id] or t.meta.get(KEY_FIELD) != t.key]
    metas = [(t.id, {**t.meta, KEY_FIELD: t.key, META_KEY: records[t.id]}) for t in stale]
    updated = write_metas(client, int(source_id), metas, progress)
    for task in kept:
        task.meta = {**task.meta, KEY_FIELD: task.key, META_KEY: records[task.id]}
    return updated


def _sample_project_for(
    client: Any,
    source: Any,
    project: Mapping[str, Any],
    sample_project: Mapping[str, Any] | None,
    overlap: int | None,
) -> tuple[int, str, bool]:
    """The human-sample project's id and title, created (with the source's overlap unless
    ``overlap`` is given) when there is none; and whether it was created."""
    from judgelab.sync.projects import project_schema_name

    title = sample_title(str(project.get("title") or f"project {source.id}"))
    if sample_project is not None:
        return int(sample_project["id"]), str(sample_project.get("title") or title), False
    schema_name = project_schema_name(project) or (source.schema.name if source.schema else None)
    wanted = int(project.get("maximum_annotations") or 1) if overlap is None else overlap
    return _create_sample_project(client, project, title, wanted, schema_name), title, True


def _per_stratum(chosen: Sequence[SourceTask], fields: Sequence[str]) -> dict[str, int]:
    """The sampled tasks per cell of the cut (none without a cut), cells sorted."""
    per_cell: dict[str, int] = {}
    if fields:
        for t in chosen:
            cell = _stratum(t, fields)
            per_cell[cell] = per_cell.get(cell, 0) + 1
    return dict(sorted(per_cell.items()))


def draw_human_sample(
    client: Any,
    source: Any,
    *,
    budget: int,
    design: str = "uniform",
    judge: str | None = None,
    seed: int = 0,
    by: Sequence[str] = (),
    floor: float = DEFAULT_FLOOR,
    overlap: int | None = None,
    replace: bool = False,
    progress: Callable[[int], None] | None = None,
) -> SampleResult:
    """Draw (or find) the human sample of the project ``source`` (a :class:`FoundProject`), record
    it in the sampled tasks' meta and copy the sampled tasks into ``<title> (human sample)``.

    The same arguments again: the sample found, nothing added (a run cut off half-way is
    completed). Other arguments while a sample exists: :class:`SampleError`, unless ``replace``,
    which draws anew when the human-sample project has no annotation yet (its tasks go; an
    annotated sample is never removed)."""
    label = source.label()
    listed, project, tasks = _source_project(client, source, label)
    drawn = _draw_now(
        client, source, label, tasks, budget=budget, design=design, judge=judge, seed=seed, by=by, floor=floor
    )
    existing, sample_project = _existing_draws(client, tasks, listed, source.id)
    replaced, sample_project = _replace_other_draw(client, label, existing, drawn.the_id, sample_project, replace)
    records = _draw_records(tasks, design, drawn)
    again = drawn.the_id in existing
    updated = _record_draw(client, source.id, label, tasks, records, drawn.the_id, again, progress)
    sample_pid, title, created = _sample_project_for(client, source, project, sample_project, overlap)
    chosen = [t for t in tasks if records[t.id]["sampled"]]
    imported = _import_sampled(client, sample_pid, chosen)
    return SampleResult(
        source_id=int(source.id),
        source_title=str(project.get("title") or ""),
        project_id=sample_pid,
        project_title=title,
        created=created,
        design=design,
        budget=budget,
        seed=seed,
        judge=drawn.judge,
        sample_id=drawn.the_id,
        by=drawn.fields,
        n_tasks=len(tasks),
        n_sampled=len(chosen),
        min_inclusion=float(drawn.draw.inclusion.min()),
        max_inclusion=float(drawn.draw.inclusion.max()),
        meta_updated=updated,
        imported=imported,
        already=again and updated == 0 and imported == 0 and not created,
        without_prediction=drawn.without,
        replaced=replaced,
        strata=_per_stratum(chosen, drawn.fields),
        draw=[{"task_id": t.id, "key": t.key, **records[t.id]} for t in tasks],
    )
