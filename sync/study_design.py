"""Study design: attention checks, qualification batches, groups A/B, the pilot, overlap.

Pure, seeded functions on task dicts (``{"data": {...}, ...}`` as in ``samples.json``, or a
flat data dict); each returns new dicts and never changes its input. The design is written
into the task *data*, because the data fields are what reaches the ``tasks`` tidy table
(``sync.tidy``) and so ``analysis.qc.hotel_spans``:

- ``batch`` (1, 2, ...), ``position`` (1-based, inside the batch),
- ``check``: ``""``, ``error_free`` or ``obvious_incorrect`` (attention checks),
- ``reference_text`` / ``reference_start`` / ``reference_end`` / ``reference_label``: the
  reference error (offsets into ``summary``, as :func:`analysis.qc.hotel_spans.reference_span`
  reads them), ``reference_answer``: a readable form (``Incorrect: Hudson River``, ``no errors``),
- ``qualification``: ``True`` for the examples of the qualification batch,
- ``group``: ``A``/``B`` (the wording of the no-errors box, seed 004),
- ``pilot``: ``True`` for the pilot subset (seed 001),
- ``arm``: ``suggested`` or ``blind`` (the anchoring design: blind tasks never get a model
  suggestion), and ``arm_of`` on the copies when every task is in both arms.

Seed 004 (HotelCheckSpan, section 4.3): Stage 1 batches of ten examples, each with two
attention checks (an error-free example and one with an obvious *Incorrect* error), groups A
and B differing only in the no-errors wording; Stage 2 qualification task of five examples
(the two attention checks and three new ones), scored 0-5, pass at 3.
Seed 001 (augmentation quality): a pilot of 30 samples rated by both annotators.

Label Studio's community edition cannot assign tasks to users. The practical equivalents:
one project per group (``<title> (group A)`` / ``(group B)``, annotators told which one to
open), the pilot as its own project ``<title> (pilot)`` with ``maximum_annotations=2`` and
``overlap_cohort_percentage=100`` (:func:`set_overlap`), so both annotators rate every pilot
task. Overlap settings apply to a *percentage* of a project's tasks, not to chosen ones,
which is why the pilot lives in its own project.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from judgelab.configs.arms import ARM_FIELD, BLIND, PAIR_FIELD, SUGGESTED
from judgelab.configs.schema import builtin_schema
from judgelab.sync.importers import task_key

# seed 004's attention checks and the error label they are scored by, as its schema names them
_HOTEL = builtin_schema("hotel_spans")
ERROR_FREE = _HOTEL.constant("check_error_free")
OBVIOUS_INCORRECT = _HOTEL.constant("check_obvious_incorrect")
CHECK_KINDS = (ERROR_FREE, OBVIOUS_INCORRECT)
INCORRECT = _HOTEL.constant("incorrect")
NO_ERRORS = "no errors"
NO_ERRORS_CONTROL = _HOTEL.empty_answer["control"]
GROUPS = ("A", "B")
DEFAULT_STRATA = ("model", "augmentation_type")
MAX_TITLE = 50  # Label Studio refuses longer project titles


class StudyDesignError(ValueError):
    """The tasks cannot be arranged as asked (missing checks, too few candidates...)."""


# --- task dicts -------------------------------------------------------------------------


def task_data(task: dict[str, Any]) -> dict[str, Any]:
    """The data dict of a task (``task["data"]`` when wrapped, else the task itself)."""
    data = task.get("data")
    return data if isinstance(data, dict) else task


def with_data(task: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``task`` whose data is ``data`` (keeps the wrapped or flat shape)."""
    if isinstance(task.get("data"), dict):
        return {**task, "data": data}
    return data


def task_id(task: dict[str, Any]) -> str:
    """The task's ``id`` (else a content hash, the import key of :mod:`sync.importers`)."""
    return task_key(task_data(task))


def _updated(task: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return with_data(task, {**task_data(task), **fields})


def _check_kind(task: dict[str, Any]) -> str:
    return str(task_data(task).get("check") or "")


def split_checks(tasks: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """``(regular tasks, {check kind: check tasks})``; an unknown ``check`` value is an error."""
    regular: list[dict[str, Any]] = []
    checks: dict[str, list[dict[str, Any]]] = {kind: [] for kind in CHECK_KINDS}
    for task in tasks:
        kind = _check_kind(task)
        if not kind:
            regular.append(task)
        elif kind in checks:
            checks[kind].append(task)
        else:
            raise StudyDesignError(f"task {task_id(task)}: unknown check {kind!r} (use {' or '.join(CHECK_KINDS)})")
    return regular, checks


def with_reference(task: dict[str, Any], text_field: str = "summary") -> dict[str, Any]:
    """The task with its reference answer in the columns ``analysis.qc.hotel_spans`` reads.

    ``reference`` (or ``reference_text``) is the error's span text, e.g. ``"Hudson River"``;
    its offsets into ``text_field`` become ``reference_start``/``reference_end``;
    ``reference_label`` defaults to ``Incorrect`` for ``obvious_incorrect`` checks. A
    ``reference`` of ``"no errors"`` (or an ``error_free`` check) is an error-free example.

    >>> t = with_reference({"summary": "Views of the Hudson River.", "check": "obvious_incorrect",
    ...                     "reference": "Hudson River"})
    >>> t["reference_start"], t["reference_end"], t["reference_label"], t["reference_answer"]
    (13, 25, 'Incorrect', 'Incorrect: Hudson River')
    """
    data = dict(task_data(task))
    text = data.pop("reference", None)
    if text is None or (isinstance(text, str) and not text.strip()):
        text = data.get("reference_text")
    kind = str(data.get("check") or "")
    if kind == ERROR_FREE or (isinstance(text, str) and text.strip().lower() in {NO_ERRORS, "none", NO_ERRORS_CONTROL}):
        data.update(check=ERROR_FREE, reference_answer=NO_ERRORS)
        for key in ("reference_text", "reference_start", "reference_end", "reference_label"):
            data.pop(key, None)
        return with_data(task, data)
    label = data.get("reference_label") or (INCORRECT if kind == OBVIOUS_INCORRECT else None)
    if isinstance(text, str) and text:
        data["reference_text"] = text
        body = data.get(text_field)
        if isinstance(body, str):
            at = body.find(text)
            if at < 0:
                raise StudyDesignError(f"task {task_id(task)}: reference {text!r} is not in its {text_field}")
            data["reference_start"], data["reference_end"] = at, at + len(text)
    if label:
        data["reference_label"] = label
    where = data.get("reference_text")
    if label or where:
        data["reference_answer"] = f"{label or 'any label'}: {where or '(anywhere)'}"
    return with_data(task, data)


def has_reference(task: dict[str, Any]) -> bool:
    """Whether a task carries a reference answer (an error span/label, or ``no errors``)."""
    data = task_data(task)
    if _check_kind(task) in CHECK_KINDS:
        return True
    return any(data.get(k) not in (None, "") for k in ("reference", "reference_text", "reference_start"))


def _unique_ids(tasks: Sequence[dict[str, Any]]) -> None:
    seen: set[str] = set()
    for task in tasks:
        key = task_id(task)
        if key in seen:
            raise StudyDesignError(f"duplicate task id {key!r}")
        seen.add(key)


def _need_checks(checks: dict[str, list[dict[str, Any]]]) -> None:
    missing = [kind for kind in CHECK_KINDS if not checks.get(kind)]
    if missing:
        raise StudyDesignError(
            f"no attention check of kind {', '.join(missing)}: give a checks file or flag tasks with 'check'"
        )


def _all_checks(
    tasks: Sequence[dict[str, Any]], checks: Iterable[dict[str, Any]] | None
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    regular, flagged = split_checks(tasks)
    not_checks, given = split_checks(checks or [])
    if not_checks:
        raise StudyDesignError(f"check {task_id(not_checks[0])} has no 'check' kind ({' or '.join(CHECK_KINDS)})")
    return regular, {kind: [*given[kind], *flagged[kind]] for kind in CHECK_KINDS}


# --- what a schema supports ------------------------------------------------------------


def checks_span(schema: Any) -> tuple[str, str] | None:
    """``(text field, span control)`` where an attention check's reference error is marked, or
    None when the schema cannot carry attention checks: that needs a ``check`` data field
    allowing both kinds and a span control with an ``Incorrect`` label (seed 004's design)."""
    allowed = set((schema.data_fields.get("check") or {}).get("allowed") or [])
    if not set(CHECK_KINDS) <= allowed:
        return None
    for name, spec in schema.span_controls.items():
        if INCORRECT in (spec.get("labels") or []) and spec.get("field"):
            return str(spec["field"]), str(name)
    return None


def checks_problem(schema: Any) -> str | None:
    """Why ``batches``/``qualification`` cannot serve ``schema`` (None when they can)."""
    if checks_span(schema) is not None:
        return None
    able = [s for s in _all_schemas() if checks_span(s) is not None]
    return (
        f"schema {schema.name} cannot carry attention checks: they need a 'check' data field "
        f"({' / '.join(CHECK_KINDS)}) and an error-span label '{INCORRECT}' to score them by"
        + (f" (as {', '.join(s.name for s in able)} has)" if able else "")
    )


def has_groups(schema: Any) -> bool:
    """Whether ``schema``'s tasks change with the annotator group (a ``group`` field allowing A and B)."""
    return set(GROUPS) <= set((schema.data_fields.get("group") or {}).get("allowed") or [])


def groups_problem(schema: Any) -> str | None:
    """Why ``groups`` cannot serve ``schema``: it needs a ``group`` data field allowing A and B."""
    if has_groups(schema):
        return None
    able = [s.name for s in _all_schemas() if has_groups(s)]
    return (
        f"schema {schema.name} has no 'group' data field with {' and '.join(GROUPS)}: its tasks look the same "
        "to every annotator group" + (f" (groups change the wording in {', '.join(able)})" if able else "")
    )


def pilot_strata(schema: Any, requested: Sequence[str] | None) -> list[str]:
    """The strata of a pilot: ``requested`` (each must be a data field of the schema), else those of
    the seed-001 default (model, augmentation type) that the schema has."""
    if requested:
        unknown = [f for f in requested if f not in schema.data_fields]
        if unknown:
            raise StudyDesignError(
                f"--strata {', '.join(unknown)}: not data fields of schema {schema.name} "
                f"(its fields: {', '.join(schema.data_fields)})"
            )
        return list(requested)
    return [f for f in DEFAULT_STRATA if f in schema.data_fields]


def schemas_fitting(record: Any) -> list[Any]:
    """The schemas whose required data fields a record (flat or ``{"data": ...}``) all has."""
    if not isinstance(record, dict):
        return []
    data = task_data(record)
    return [
        schema
        for schema in _all_schemas()
        if all(data.get(f) not in (None, "") for f, spec in schema.data_fields.items() if spec.get("required"))
    ]


def _all_schemas() -> list[Any]:
    from judgelab.configs.schema import all_schemas

    return list(all_schemas().values())


# --- batches with attention checks ------------------------------------------------------


def make_batches(
    tasks: Sequence[dict[str, Any]],
    checks: Iterable[dict[str, Any]] | None = None,
    *,
    batch_size: int = 10,
    seed: int = 0,
    by: str | None = None,
    shuffle: bool = False,
    text_field: str = "summary",
) -> list[dict[str, Any]]:
    """Batches of ``batch_size`` tasks, each with one ``error_free`` and one
    ``obvious_incorrect`` attention check at seeded random positions (seed 004: ten examples,
    two of them checks, so eight regular tasks per batch; the last batch may be shorter).

    Checks come from ``checks`` and from the tasks flagged with ``check``; with several of a
    kind they take turns (in a seeded order). Each batch gets its own copy of a check, with
    the id ``<check id>@batch<k>`` and ``check_of`` = the check's id, so task ids stay unique
    and stable for a given seed. ``by`` (e.g. ``model``, seed 001's "batch by model") keeps
    tasks with the same value together; ``shuffle`` shuffles the regular tasks first.
    Every returned task has ``batch``, ``position`` and ``check`` in its data.

    >>> tasks = [{"id": f"t{i}", "summary": "s"} for i in range(3)]
    >>> checks = [{"id": "ok", "check": "error_free", "summary": "s"},
    ...           {"id": "bad", "check": "obvious_incorrect", "summary": "Hudson", "reference": "Hudson"}]
    >>> out = make_batches(tasks, checks, batch_size=4)
    >>> [(t["id"], t["batch"]) for t in out if t["check"]]
    [('ok@batch1', 1), ('bad@batch1', 1), ('bad@batch2', 2), ('ok@batch2', 2)]
    """
    if batch_size < 3:
        raise StudyDesignError("batch_size must be at least 3 (two attention checks and one task)")
    regular, pool = _all_checks(tasks, checks)
    _need_checks(pool)
    rng = random.Random(seed)
    regular = list(regular)
    if shuffle:
        rng.shuffle(regular)
    if by:
        order: dict[Any, list[dict[str, Any]]] = {}
        for task in regular:
            order.setdefault(task_data(task).get(by), []).append(task)
        groups = list(order.values())
    else:
        groups = [regular]
    per_batch = batch_size - len(CHECK_KINDS)
    chunks = [group[i : i + per_batch] for group in groups for i in range(0, len(group), per_batch)]
    turns = {kind: rng.sample(pool[kind], len(pool[kind])) for kind in CHECK_KINDS}
    out: list[dict[str, Any]] = []
    for k, chunk in enumerate(chunks, start=1):
        size = len(chunk) + len(CHECK_KINDS)
        slots = rng.sample(range(size), len(CHECK_KINDS))
        placed: dict[int, dict[str, Any]] = {}
        for kind, slot in zip(CHECK_KINDS, slots, strict=True):
            check = with_reference(turns[kind][(k - 1) % len(turns[kind])], text_field)
            placed[slot] = _updated(check, id=f"{task_id(check)}@batch{k}", check_of=task_id(check), check=kind)
        rest = iter(chunk)
        for position in range(size):
            task = placed.get(position) or _updated(next(rest), check="")
            out.append(_updated(task, batch=k, position=position + 1))
    _unique_ids(out)
    return out


# --- qualification batch ----------------------------------------------------------------


@dataclass(frozen=True)
class Qualification:
    """``tasks``: the qualification examples (``qualification: True``, reference answers);
    ``remaining``: the input tasks minus the new examples set aside for the qualification."""

    tasks: list[dict[str, Any]]
    remaining: list[dict[str, Any]]


def qualification_batch(
    tasks: Sequence[dict[str, Any]],
    checks: Iterable[dict[str, Any]] | None = None,
    *,
    n_new: int = 3,
    seed: int = 0,
    text_field: str = "summary",
) -> Qualification:
    """The qualification task of seed 004: the two attention checks (one of each kind) and
    ``n_new`` new examples with reference answers, in a seeded order, scored 0-5 by
    :func:`analysis.qc.hotel_spans.qualification_scores`.

    New examples are drawn (seeded) from the regular tasks that carry a reference
    (``reference``/``reference_text``/``reference_start``, or ``reference: "no errors"``,
    which turns the example into an ``error_free`` one: ``analysis.qc.hotel_spans`` scores an
    example as error-free by its ``check``). They are set aside: ``remaining`` no longer has them.
    Each example gets ``qualification: True``, ``position`` and its reference columns.
    """
    regular, pool = _all_checks(tasks, checks)
    _need_checks(pool)
    rng = random.Random(seed)
    chosen_checks = [rng.choice(pool[kind]) for kind in CHECK_KINDS]
    candidates = [t for t in regular if has_reference(t)]
    if len(candidates) < n_new:
        raise StudyDesignError(
            f"{len(candidates)} task(s) with a reference answer, {n_new} needed for the qualification batch"
        )
    new = rng.sample(candidates, n_new)
    examples = [with_reference(t, text_field) for t in [*chosen_checks, *new]]
    rng.shuffle(examples)
    out = [_updated(t, qualification=True, position=i) for i, t in enumerate(examples, start=1)]
    _unique_ids(out)
    taken = {task_id(t) for t in new}
    remaining = [t for t in tasks if _check_kind(t) or task_id(t) not in taken]
    return Qualification(tasks=out, remaining=remaining)


# --- groups A/B -------------------------------------------------------------------------


def _balanced(n: int, groups: Sequence[str], rng: random.Random | None) -> list[str]:
    """``n`` group names, as equal in number as possible; shuffled when ``rng`` is given,
    else alternating (A, B, A, B...)."""
    labels = [groups[i % len(groups)] for i in range(n)]
    if rng is not None:
        rng.shuffle(labels)
    return labels


def assign_groups(
    tasks: Sequence[dict[str, Any]],
    *,
    groups: Sequence[str] = GROUPS,
    unit: str = "batch",
    alternate: bool = False,
    both: bool = False,
    seed: int = 0,
    stale_fields: Iterable[str] = ("no_errors_options",),
) -> list[dict[str, Any]]:
    """Set every task's ``group``.

    - ``unit="batch"``: a whole batch (the ``batch`` of :func:`make_batches`) gets one group,
      since an annotator, who belongs to one group, works through whole batches; ``"task"``:
      each task on its own.
    - balanced: the units split as evenly as possible between ``groups``, in a seeded random
      order; ``alternate=True``: A, B, A, B... in input order.
    - ``both=True``: every task once per group (seed 004: each example annotated by one
      worker of each group); the copies keep their id, so they must go to different
      projects (one project per group, see :func:`split_by_group`).

    ``stale_fields`` are dropped: derived from ``group`` at import (the hotel schema's
    ``no_errors_options``), they would keep the old wording otherwise.
    """
    if unit not in ("batch", "task"):
        raise StudyDesignError(f"unit must be 'batch' or 'task', not {unit!r}")
    if len(groups) < 2 or len(set(groups)) != len(groups):
        raise StudyDesignError("give at least two distinct groups")
    stale = set(stale_fields)

    def regroup(task: dict[str, Any], group: str) -> dict[str, Any]:
        data = {k: v for k, v in task_data(task).items() if k not in stale}
        return with_data(task, {**data, "group": group})

    if both:
        return [regroup(t, g) for g in groups for t in tasks]
    rng = None if alternate else random.Random(seed)
    if unit == "batch":
        keys = [task_data(t).get("batch") for t in tasks]
        if any(key in (None, "") for key in keys):
            raise StudyDesignError(
                "unit 'batch' needs every task's 'batch' (run make_batches first, or use unit 'task')"
            )
        units = list(dict.fromkeys(keys))
        by_unit = dict(zip(units, _balanced(len(units), groups, rng), strict=True))
        return [regroup(t, by_unit[key]) for t, key in zip(tasks, keys, strict=True)]
    labels = _balanced(len(tasks), groups, rng)
    return [regroup(t, g) for t, g in zip(tasks, labels, strict=True)]


def split_by_group(tasks: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """``{group: its tasks}`` in first-seen group order; a task without a group is an error."""
    out: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        group = task_data(task).get("group")
        if group in (None, ""):
            raise StudyDesignError(f"task {task_id(task)} has no group (run assign_groups first)")
        out.setdefault(str(group), []).append(task)
    return out


# --- pilot subset -----------------------------------------------------------------------


def _stratum(task: dict[str, Any], strata: Sequence[str]) -> tuple[Any, ...]:
    data = task_data(task)
    return tuple(data.get(field) for field in strata)


def pilot_allocation(counts: dict[Any, int], size: int, seed: int = 0) -> dict[Any, int]:
    """How many tasks each stratum gives to a sample of ``size``: proportional to its size,
    rounded by largest remainder (ties broken by ``seed``), never more than it has.

    >>> pilot_allocation({"a": 10, "b": 10, "c": 10}, 6)
    {'a': 2, 'b': 2, 'c': 2}
    """
    total = sum(counts.values())
    if size > total:
        raise StudyDesignError(f"a sample of {size} from {total} task(s)")
    if size <= 0 or total == 0:
        return {key: 0 for key in counts}
    quota = {key: size * n / total for key, n in counts.items()}
    alloc = {key: min(counts[key], math.floor(q)) for key, q in quota.items()}
    rng = random.Random(seed)
    tie = {key: rng.random() for key in counts}
    while sum(alloc.values()) < size:
        open_keys = [key for key in counts if alloc[key] < counts[key]]
        open_keys.sort(key=lambda key: (-(quota[key] - alloc[key]), tie[key]))
        for key in open_keys[: size - sum(alloc.values())]:
            alloc[key] += 1
    return alloc


def pilot_subset(
    tasks: Sequence[dict[str, Any]],
    *,
    size: int = 30,
    strata: Sequence[str] = ("model", "augmentation_type"),
    seed: int = 0,
) -> list[dict[str, Any]]:
    """All tasks, the pilot ones marked ``pilot: True`` (the others ``False``): a seeded
    sample of ``size`` stratified by ``strata`` (seed 001: 30 samples over model x
    augmentation type, rated by both annotators; ``agreement_targets.pilot_size``).
    Attention checks are never drawn."""
    regular = [t for t in tasks if not _check_kind(t)]
    by_stratum: dict[tuple[Any, ...], list[int]] = {}
    for index, task in enumerate(tasks):
        if not _check_kind(task):
            by_stratum.setdefault(_stratum(task, strata), []).append(index)
    if size > len(regular):
        raise StudyDesignError(f"pilot of {size} from {len(regular)} task(s)")
    alloc = pilot_allocation({key: len(v) for key, v in by_stratum.items()}, size, seed)
    rng = random.Random(seed)
    chosen: set[int] = set()
    for key, indexes in by_stratum.items():
        chosen.update(rng.sample(indexes, alloc[key]))
    return [_updated(t, pilot=i in chosen) for i, t in enumerate(tasks)]


# --- anchoring arms ---------------------------------------------------------------------


def assign_arms(
    tasks: Sequence[dict[str, Any]],
    *,
    strata: Sequence[str] = (),
    blind_share: float = 0.5,
    seed: int = 0,
    both: bool = False,
) -> list[dict[str, Any]]:
    """Every task with its ``arm``: ``suggested`` (annotators see the model's suggestion) or
    ``blind`` (no suggestion, ever: the backend and pre-annotation skip such tasks).

    Stratified and seeded: within each stratum (the values of ``strata``), a seeded random
    ``blind_share`` of the tasks goes to the blind arm, the numbers per stratum rounded by
    largest remainder so that the whole is as close to the share as possible
    (:func:`pilot_allocation`); the task order is kept. Attention checks are not assigned (they
    keep no arm). ``both=True``: every task in both arms instead, as two copies with the ids
    ``<id>@suggested`` and ``<id>@blind`` and ``arm_of`` = the task's id, which pairs them.

    >>> tasks = [{"id": f"t{i}", "model": "ab"[i % 2]} for i in range(8)]
    >>> [t["arm"] for t in assign_arms(tasks, strata=["model"])].count("blind")
    4
    >>> [t["id"] for t in assign_arms(tasks[:1], both=True)]
    ['t0@suggested', 't0@blind']
    """
    if not 0.0 <= blind_share <= 1.0:
        raise StudyDesignError(f"the blind share must be between 0 and 1, not {blind_share}")
    _unique_ids(tasks)
    if both:
        out = []
        for task in tasks:
            if _check_kind(task):
                out.append(task)
                continue
            key = task_id(task)
            for arm in (SUGGESTED, BLIND):
                out.append(_updated(task, id=f"{key}@{arm}", **{ARM_FIELD: arm, PAIR_FIELD: key}))
        return out
    by_stratum: dict[tuple[Any, ...], list[int]] = {}
    for index, task in enumerate(tasks):
        if not _check_kind(task):
            by_stratum.setdefault(_stratum(task, strata), []).append(index)
    counts = {key: len(indexes) for key, indexes in by_stratum.items()}
    alloc = pilot_allocation(counts, round(blind_share * sum(counts.values())), seed)
    rng = random.Random(seed)
    blind: set[int] = set()
    for key, indexes in by_stratum.items():
        blind.update(rng.sample(indexes, alloc[key]))
    return [
        task if _check_kind(task) else _updated(task, **{ARM_FIELD: BLIND if i in blind else SUGGESTED})
        for i, task in enumerate(tasks)
    ]


def split_by_arm(tasks: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """``{arm: its tasks}`` (suggested first); a task without an arm is an error."""
    out: dict[str, list[dict[str, Any]]] = {SUGGESTED: [], BLIND: []}
    for task in tasks:
        arm = task_data(task).get(ARM_FIELD)
        if arm not in out:
            raise StudyDesignError(f"task {task_id(task)} has no arm (run assign_arms first)")
        out[str(arm)].append(task)
    return out


# --- Label Studio side ------------------------------------------------------------------


def suffixed_title(title: str, suffix: str, limit: int = MAX_TITLE) -> str:
    """``"<title> (<suffix>)"``, the title shortened so the whole fits Label Studio's limit.

    >>> suffixed_title("HotelCheckSpan: error spans in hotel summaries", "group A")
    'HotelCheckSpan: error spans in hotel sum (group A)'
    """
    tail = f" ({suffix})"
    return title[: max(0, limit - len(tail))].rstrip() + tail


@dataclass(frozen=True)
class OverlapSettings:
    project_id: int
    maximum_annotations: int
    overlap_cohort_percentage: int


def set_overlap(client: Any, project_id: int, annotations_per_task: int, percent: int = 100) -> OverlapSettings:
    """Require ``annotations_per_task`` annotations for ``percent`` % of the project's tasks
    (Label Studio's ``maximum_annotations`` and ``overlap_cohort_percentage``); returns the
    settings read back from Label Studio."""
    if annotations_per_task < 1:
        raise StudyDesignError("annotations per task must be at least 1")
    if not 0 <= percent <= 100:
        raise StudyDesignError("the overlap percentage must be between 0 and 100")
    client.projects.update(id=project_id, maximum_annotations=annotations_per_task, overlap_cohort_percentage=percent)
    project = client.projects.get(id=project_id)
    return OverlapSettings(project_id, int(project.maximum_annotations), int(project.overlap_cohort_percentage))
