"""Adjudication: the tasks where annotators disagree, answered again by an adjudicator, and the
adjudicator's answers copied back as reference (ground-truth) annotations.

Label Studio's community edition has no review step. ``judgelab design adjudicate`` makes one:

1. :func:`disagreements` reads a project's tasks and picks those whose human answers differ by a
   :class:`Rule`: the ``--where`` expression, else the schema's ``adjudicate: {rule: ...}``
   (``schema.yaml``), else ``any differs`` (any choice, rating or number item, or the set of span
   labels an annotator marked, differs between two annotators of a task with two or more).
2. :func:`ensure_adjudication` creates the project ``<title> (adjudication)`` (description
   ``[judgelab-adjudication-of:<id>]``) whose label config is the source's with a read-only panel
   beside the form (:func:`adjudication_config`): the task data field ``judgelab_answers`` holds
   an HTML table of each annotator's answer per item (:func:`answers_html`), the items where they
   differ highlighted, and, with a judge, the judge's prediction. The config still detects as the
   source's schema. Run again it adds the tasks that disagree since, and nothing else.
3. :func:`collect` copies each submitted adjudication answer into the source task as an
   annotation with Label Studio's ``ground_truth`` flag, by the adjudicator's account. The
   adjudication task's meta records the annotation made, so a second run adds nothing and an
   adjudication changed since replaces that annotation (and nothing else).

Rule grammar (``--where``), clauses joined by ``or`` / ``and`` (``and`` binds tighter)::

    ITEM differs                 annotators' values of ITEM differ (spans: the set of labels)
    max-min OP N on ITEM         the spread of ITEM's numeric values (OP: >= > <= < ==)
    any differs, max-min>=2 on any   the same over every choice/rating/number/span item

``ITEM`` is a control name (``verdict_3``) or an item name (``line_3``), or a Repeater pattern
(``line_{i}``: any of its lines). A value's number is the value itself, else its leading number
(a choice ``"4 - ..."`` is 4).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judgelab.configs.detect import detect_schema
from judgelab.configs.items import ItemNamer, matches
from judgelab.configs.label_config import LabelConfig, parse_label_config
from judgelab.configs.schema import Schema, all_schemas
from judgelab.sync.client import SyncError

MARKER = "[judgelab-adjudication-of:"
ADJUDICATOR_TAG = "[judgelab-adjudicator:"
META = "judgelab_adjudication"  # the adjudication task's meta: where it comes from, what was copied back
ANSWERS_FIELD = "judgelab_answers"  # the task data field the answers panel shows
SUFFIX = "adjudication"
KEY_FIELD = "judgelab_key"
PREFILL_PREFIX = "annotator:"  # model_version of a pre-filled annotator's answer
ALL_ITEMS = "any"
DEFAULT_RULE = f"{ALL_ITEMS} differs"

_SPAN_TAGS = {"Labels", "HyperTextLabels", "ParagraphLabels"}
_RATING_TAGS = {"Rating", "Number"}
_SPAN_TYPES = {"labels", "hypertextlabels", "paragraphlabels"}
WARN = " \u26a0"  # the sign beside an item the rule flagged
_LEADING_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)")


class AdjudicationError(SyncError):
    """A rule that does not parse, a project that cannot be adjudicated, nothing to adjudicate."""


# --- answers ----------------------------------------------------------------------------


def control_kind(tag: str) -> str:
    """``span``, ``rating``, ``choice`` or ``text`` (TextArea: shown, never compared)."""
    if tag in _SPAN_TAGS:
        return "span"
    if tag in _RATING_TAGS:
        return "rating"
    return "choice" if tag == "Choices" else "text"


@dataclass
class Answer:
    """One annotator's latest answer to a task: values per control (choices sorted, a rating's
    number, a span control's sorted set of labels) and the spans themselves."""

    annotator: str
    annotation_id: int | None
    values: dict[str, tuple] = field(default_factory=dict)
    spans: dict[str, list[tuple[int | None, int | None, str, str]]] = field(default_factory=dict)
    result: list[dict[str, Any]] = field(default_factory=list)


def answer_from_result(annotator: str, annotation_id: int | None, result: Iterable[Mapping[str, Any]]) -> Answer:
    """An :class:`Answer` from a Label Studio result list."""
    answer = Answer(annotator, annotation_id, result=[dict(r) for r in result or [] if isinstance(r, Mapping)])
    for region in answer.result:
        kind, value = str(region.get("type") or ""), region.get("value") or {}
        control = str(region.get("from_name") or "")
        if kind in _SPAN_TYPES:
            for label in value.get(kind) or []:
                answer.spans.setdefault(control, []).append(
                    (value.get("start"), value.get("end"), str(label), str(value.get("text") or ""))
                )
        elif kind == "choices":
            answer.values[control] = tuple(sorted(str(c) for c in value.get("choices") or []))
        elif kind in ("rating", "number"):
            answer.values[control] = (value.get(kind),)
        elif kind == "textarea" and "start" not in value:
            text = " ".join(str(t) for t in value.get("text") or [])
            if text.strip():
                answer.values[control] = (text,)
    for control, spans in answer.spans.items():
        spans.sort(key=lambda s: (s[0] if s[0] is not None else -1, s[2]))
        answer.values[control] = tuple(sorted({s[2] for s in spans}))
    return answer


def _who(completed_by: Any, users: Mapping[int, str]) -> tuple[str, int | None]:
    if isinstance(completed_by, Mapping):
        user = completed_by.get("id")
        return str(completed_by.get("email") or users.get(user) or f"user:{user}"), user
    if isinstance(completed_by, int):
        return users.get(completed_by, f"user:{completed_by}"), completed_by
    return str(completed_by), None


def task_answers(task: Mapping[str, Any], users: Mapping[int, str]) -> list[Answer]:
    """The latest submitted (not cancelled) answer of each annotator of an exported task,
    ground-truth annotations (earlier adjudications) left out, in annotator order."""
    latest: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for annotation in task.get("annotations") or []:
        if annotation.get("was_cancelled") or annotation.get("ground_truth"):
            continue
        who, _ = _who(annotation.get("completed_by"), users)
        when = str(annotation.get("updated_at") or annotation.get("created_at") or "")
        if who not in latest or when >= latest[who][0]:
            latest[who] = (when, annotation)
    return [
        answer_from_result(who, annotation.get("id"), annotation.get("result") or [])
        for who, (_, annotation) in sorted(latest.items())
    ]


def number(value: Any) -> float | None:
    """A value's number: the value itself, else its leading number (``"4 - ..."`` is 4).

    >>> number(3), number("4 - Coherencia implícita"), number("n/a")
    (3.0, 4.0, None)
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    found = _LEADING_NUMBER.match(str(value))
    return float(found.group(1)) if found else None


# --- the rule ---------------------------------------------------------------------------

_OPS = {">=": float.__ge__, ">": float.__gt__, "<=": float.__le__, "<": float.__lt__, "==": float.__eq__}
_DIFFERS = re.compile(r"^(?P<item>\S+)\s+differs$")
_SPREAD = re.compile(r"^(?:max-min|range)\s*(?P<op>>=|<=|==|>|<)\s*(?P<n>-?\d+(?:\.\d+)?)\s+on\s+(?P<item>\S+)$")
GRAMMAR = "'ITEM differs' or 'max-min>=N on ITEM' (ITEM a control or item name, or 'any'), joined by 'or'/'and'"


@dataclass(frozen=True)
class Clause:
    item: str
    op: str | None = None  # None: "differs"
    threshold: float = 0.0

    def describe(self) -> str:
        if self.op is None:
            return f"{self.item} differs"
        return f"max-min{self.op}{self.threshold:g} on {self.item}"


@dataclass(frozen=True)
class Rule:
    """Clauses in ``or`` of ``and`` form, and the text they were read from."""

    text: str
    alternatives: tuple[tuple[Clause, ...], ...]

    @property
    def clauses(self) -> list[Clause]:
        return [clause for group in self.alternatives for clause in group]


def parse_rule(text: str) -> Rule:
    """A :class:`Rule` from its text; an :class:`AdjudicationError` naming the bad expression.

    >>> parse_rule("A differs or max-min>=2 on B and C differs").alternatives[1][0].describe()
    'max-min>=2 on B'
    """
    source = " ".join(str(text or "").split())
    if not source:
        raise AdjudicationError(f"adjudication rule {text!r} is empty: write {GRAMMAR}")
    alternatives = []
    for part in re.split(r"\s+or\s+", source):
        group = []
        for piece in re.split(r"\s+and\s+", part):
            differs, spread = _DIFFERS.match(piece), _SPREAD.match(piece)
            if differs:
                group.append(Clause(differs.group("item")))
            elif spread:
                group.append(Clause(spread.group("item"), spread.group("op"), float(spread.group("n"))))
            else:
                raise AdjudicationError(f"adjudication rule {source!r}: cannot read {piece!r}: write {GRAMMAR}")
        alternatives.append(tuple(group))
    return Rule(source, tuple(alternatives))


@dataclass
class Items:
    """The items of a label config a rule may name: control names (Repeater patterns with
    ``{i}``) and their kinds, and the schema's item names for them."""

    kinds: dict[str, str]  # control name or pattern ("verdict_{i}") -> kind
    namer: ItemNamer
    shown: dict[str, dict[str, str]] = field(default_factory=dict)  # control -> {stored alias: its text}

    @classmethod
    def of(cls, config: LabelConfig, schema: Schema | None) -> Items:
        kinds = {}
        for control in config.controls:
            if control.per_region:
                continue  # a span's note: part of the span, not an item
            kinds[_pattern(control.name)] = control_kind(control.tag)
        return cls(kinds, ItemNamer.for_schema(schema), _aliases(config.xml))

    def text_of(self, control: str, value: Any) -> str:
        """A stored value as the form shows it: a choice's alias (``4``) with its text."""
        for name, aliases in self.shown.items():
            if matches(name, control) and str(value) in aliases:
                return aliases[str(value)]
        return str(value)

    def names(self) -> list[str]:
        out = []
        for control in self.kinds:
            out.append(control)
            item = self.namer(control.replace("{i}", "0"))
            if "{i}" in control:  # back to the item's pattern (line_0 -> line_{i})
                item = item.replace("0", "{i}", 1) if item != control.replace("{i}", "0") else control
            if item != control:
                out.append(item)
        return out

    def kind(self, control: str) -> str | None:
        for name, kind in self.kinds.items():
            if matches(name, control):
                return kind
        return None

    def named(self, clause_item: str, control: str) -> bool:
        """Whether the control ``control`` (expanded: ``verdict_3``) is what ``clause_item`` names."""
        if clause_item == ALL_ITEMS:
            return self.kind(control) in ("choice", "rating", "span")
        return matches(clause_item, control) or matches(clause_item, self.namer(control))

    def check(self, rule: Rule) -> None:
        known = set(self.names())
        for clause in rule.clauses:
            if clause.item == ALL_ITEMS:
                continue
            if not any(matches(clause.item, name) or matches(name, clause.item) for name in known):
                raise AdjudicationError(
                    f"adjudication rule {rule.text!r}: {clause.item!r} is no item of the project's label config "
                    f"(items: {', '.join(self.names())})"
                )


def _pattern(name: str) -> str:
    """A Repeater control's name as an item pattern (``verdict_{{idx}}`` -> ``verdict_{i}``)."""
    return re.sub(r"\{\{\w+\}\}", "{i}", name)


def _aliases(xml: str) -> dict[str, dict[str, str]]:
    """``control -> {alias: value}`` of the choices with an alias (Label Studio stores the alias)."""
    from lxml import etree

    root = etree.fromstring(xml.encode("utf-8"), parser=etree.XMLParser(resolve_entities=False))
    out: dict[str, dict[str, str]] = {}
    for element in root.iter("Choices"):
        aliases = {c.get("alias"): c.get("value") or "" for c in element.iter("Choice") if c.get("alias")}
        if aliases and element.get("name"):
            out[_pattern(element.get("name"))] = {str(k): str(v) for k, v in aliases.items()}
    return out


def _values_differ(answers: Sequence[Answer], control: str) -> bool:
    return len({answer.values.get(control, ()) for answer in answers}) > 1


def _spread(answers: Sequence[Answer], control: str) -> float | None:
    numbers = [n for a in answers for v in a.values.get(control, ())[:1] if (n := number(v)) is not None]
    return max(numbers) - min(numbers) if len(numbers) >= 2 else None


def _clause_controls(clause: Clause, answers: Sequence[Answer], items: Items) -> list[str]:
    """The controls of ``clause`` that hold for a task's answers."""
    present = sorted({c for a in answers for c in [*a.values, *a.spans]})
    named = [c for c in present if items.named(clause.item, c) and items.kind(c) != "text"]
    if clause.op is None:
        return [c for c in named if _values_differ(answers, c)]
    out = []
    for control in named:
        spread = _spread(answers, control)
        if spread is not None and _OPS[clause.op](float(spread), clause.threshold):
            out.append(control)
    return out


def disagreement(rule: Rule, answers: Sequence[Answer], items: Items) -> list[str]:
    """Why the task's answers call for adjudication (``"Coherence differs"``...), empty when they
    do not: the clauses of every alternative of the rule whose clauses all hold; a task with fewer
    than two answers never does."""
    if len(answers) < 2:
        return []
    reasons: list[str] = []
    for group in rule.alternatives:
        held = []
        for clause in group:
            controls = _clause_controls(clause, answers, items)
            if not controls:
                break
            held += [clause.describe().replace(clause.item, items.namer(c), 1) for c in controls]
        else:
            reasons += held
    return list(dict.fromkeys(reasons))


def schema_rule(schema: Schema | None) -> str | None:
    """The schema's adjudication rule (``adjudicate: {rule: ...}`` in ``schema.yaml``)."""
    spec = (schema.meta.get("adjudicate") or {}) if schema is not None else {}
    rule = spec.get("rule") if isinstance(spec, Mapping) else None
    return str(rule) if rule else None


# --- the answers panel ------------------------------------------------------------------


def _cell(answer: Answer | None, control: str, kind: str, items: Items) -> str:
    if answer is None:
        return "<i>no answer</i>"
    if kind == "span":
        spans = answer.spans.get(control) or []
        if not spans:
            return "<i>none</i>"
        return "<br/>".join(
            f"<b>{html.escape(label)}</b>: \u00ab{html.escape(text)}\u00bb"
            + (f" <small>[{start}-{end}]</small>" if start is not None else "")
            for start, end, label, text in spans
        )
    values = answer.values.get(control)
    if not values:
        return "<i>no answer</i>"
    return html.escape(" | ".join(items.text_of(control, v) for v in values))


def answers_html(
    answers: Sequence[Answer],
    items: Items,
    reasons: Sequence[str] = (),
    judge: Answer | None = None,
    order: Sequence[str] = (),
) -> str:
    """The answers panel: per item (in the config's order; ``order``: expanded control names),
    one line per annotator and one for the judge, so that it reads in a narrow column whatever
    the number of annotators; the items the rule flagged highlighted and marked."""
    present = {c for a in [*answers, *([judge] if judge else [])] for c in [*a.values, *a.spans]}
    controls = [c for c in order if c in present] + sorted(present - set(order))
    flagged = {r.split(" ")[0] for r in reasons} | {r.rsplit(" on ", 1)[-1] for r in reasons if " on " in r}
    who = [(html.escape(a.annotator), a) for a in answers]
    if judge is not None:
        who.append((f"<i>judge {html.escape(judge.annotator)}</i>", judge))
    cell = "padding:3px 6px;vertical-align:top;overflow-wrap:anywhere"
    blocks = []
    for control in controls:
        kind = items.kind(control) or "choice"
        item = items.namer(control)
        mark = item in flagged or control in flagged
        head = "background:#fde8a6;" if mark else "background:#f1f1f1;"
        lines = "".join(
            f"<tr><td style='{cell};width:38%;color:#555'>{name}</td>"
            f"<td style='{cell}'>{_cell(a, control, kind, items)}</td></tr>"
            for name, a in who
        )
        blocks.append(
            f"<tbody class='{'jl-differs' if mark else 'jl-same'}'><tr><td colspan='2' style='{cell};{head}'>"
            f"<b>{html.escape(item)}</b>{WARN + ' differs' if mark else ''}</td></tr>{lines}</tbody>"
        )
    why = f"<p style='margin:0 0 6px'>Why here: {html.escape('; '.join(reasons))}</p>" if reasons else ""
    return (
        f"<div style='font-size:13px;line-height:1.4'>{why}"
        f"<table style='border-collapse:collapse;width:100%;table-layout:fixed'>{''.join(blocks)}</table></div>"
    )


def adjudication_config(source_xml: str) -> str:
    """The source's label config with the answers panel beside the form: the source's elements
    in a left column, a read-only ``HyperText`` of ``$judgelab_answers`` in a right one."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, remove_blank_text=False)
    root = etree.fromstring(source_xml.encode("utf-8"), parser=parser)
    row = etree.Element("View", style="display: flex; gap: 16px; align-items: flex-start")
    form = etree.SubElement(row, "View", style="flex: 3; min-width: 0")
    for child in list(root):
        if child.tag == "Style":
            continue
        root.remove(child)
        form.append(child)
    panel = etree.SubElement(
        row,
        "View",
        style="flex: 2; min-width: 280px; position: sticky; top: 0; padding: 10px 14px; "
        "border: 2px solid #f0ad4e; border-radius: 6px; background: #fffdf6",
    )
    etree.SubElement(panel, "Header", value="Annotators' answers (read only)", size="5")
    etree.SubElement(panel, "HyperText", name=ANSWERS_FIELD, value=f"${ANSWERS_FIELD}", inline="true")
    root.append(row)
    return etree.tostring(root, encoding="unicode")


# --- Label Studio side ------------------------------------------------------------------


def marker(source_id: int) -> str:
    return f"{MARKER}{source_id}]"


def adjudication_of(project: Mapping[str, Any]) -> int | None:
    """The source project id an adjudication project's description names (None: not one)."""
    description = str(project.get("description") or "")
    start = description.find(MARKER)
    end = description.find("]", start)
    if start < 0 or end < 0:
        return None
    try:
        return int(description[start + len(MARKER) : end])
    except ValueError:
        return None


def _tag_value(description: str, tag: str) -> str | None:
    start = description.find(tag)
    end = description.find("]", start)
    return description[start + len(tag) : end] if start >= 0 and end > start else None


def _all_tasks(client: Any, project_id: int) -> list[dict[str, Any]]:
    """Every task of a project with its annotations (the quick export, in chunks of ids)."""
    from judgelab.sync.projects import task_keys
    from judgelab.sync.sync_reads import MAX_EXPORT_IDS, export_tasks

    ids = sorted(task_keys(client, project_id))
    out: list[dict[str, Any]] = []
    for start in range(0, len(ids), MAX_EXPORT_IDS):
        out += export_tasks(client, project_id, ids[start : start + MAX_EXPORT_IDS])
    return sorted(out, key=lambda t: int(t["id"]))


@dataclass
class Disagreement:
    task: dict[str, Any]
    answers: list[Answer]
    reasons: list[str]


@dataclass
class Found:
    """What :func:`disagreements` found: the tasks, how many had two answers or more, the rule."""

    rule: Rule
    rule_from: str  # "--where", "schema", "default"
    tasks: list[Disagreement]
    compared: int
    total: int


def choose_rule(where: str | None, schema: Schema | None) -> tuple[Rule, str]:
    if where:
        return parse_rule(where), "--where"
    own = schema_rule(schema)
    if own:
        return parse_rule(own), f"schema {schema.name if schema else ''}".strip()
    return parse_rule(DEFAULT_RULE), "default"


def disagreements(
    tasks: Sequence[Mapping[str, Any]],
    users: Mapping[int, str],
    config: LabelConfig,
    schema: Schema | None,
    where: str | None = None,
) -> Found:
    """The tasks whose answers the rule flags (see the module's docstring)."""
    rule, rule_from = choose_rule(where, schema)
    items = Items.of(config, schema)
    items.check(rule)
    found, compared = [], 0
    for task in tasks:
        answers = task_answers(task, users)
        if len(answers) < 2:
            continue
        compared += 1
        reasons = disagreement(rule, answers, items)
        if reasons:
            found.append(Disagreement(dict(task), answers, reasons))
    return Found(rule, rule_from, found, compared, len(tasks))


def _judge_answer(client: Any, task_id: int, model_version: str | None) -> Answer | None:
    """The task's prediction of ``model_version`` (None or "": its latest prediction)."""
    predictions = list(client.predictions.list(task=task_id))
    if model_version:
        predictions = [p for p in predictions if str(p.model_version or "") == model_version]
    if not predictions:
        return None
    latest = max(predictions, key=lambda p: (str(p.created_at or ""), int(p.id)))
    return answer_from_result(str(latest.model_version or "unknown"), None, latest.result or [])


@dataclass
class Created:
    project_id: int
    title: str
    created: bool
    added: int
    already: int
    found: Found
    judged: int = 0  # tasks shown with the judge's prediction
    prefilled: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "project": self.project_id,
            "title": self.title,
            "created": self.created,
            "rule": self.found.rule.text,
            "rule_from": self.found.rule_from,
            "tasks_compared": self.found.compared,
            "disagreements": len(self.found.tasks),
            "added": self.added,
            "already": self.already,
            "with_judge": self.judged,
            "prefilled": self.prefilled,
        }


def find_adjudication_project(client: Any, source_id: int) -> dict[str, Any] | None:
    from judgelab.sync.ls_api import as_api

    made = [p for p in as_api(client).projects() if adjudication_of(p) == source_id]
    return min(made, key=lambda p: int(p["id"])) if made else None


def _order(config: LabelConfig, data: Mapping[str, Any]) -> list[str]:
    return [name for name, control in config.expanded_controls(dict(data)).items() if not control.per_region]


def ensure_adjudication(
    client: Any,
    source: Mapping[str, Any],
    schema: Schema | None,
    *,
    where: str | None = None,
    judge: str | None = None,
    adjudicator: str | None = None,
    prefill: bool = False,
) -> Created:
    """Create (or complete) the adjudication project of ``source`` (a listed project).

    ``judge``: None for no judge, "" for each task's latest prediction, else a model version.
    Raises :class:`AdjudicationError` when no task disagrees and no adjudication project exists
    yet (nothing is created)."""
    from judgelab.sync.ls_api import as_api
    from judgelab.sync.projects import MAX_TITLE
    from judgelab.sync.study_design import suffixed_title

    source_id = int(source["id"])
    source_xml = str(source.get("label_config") or "")
    config = parse_label_config(source_xml)
    users = as_api(client).user_emails()
    found = disagreements(_all_tasks(client, source_id), users, config, schema, where)
    existing = find_adjudication_project(client, source_id)
    title = suffixed_title(str(source.get("title") or f"project {source_id}"), SUFFIX, MAX_TITLE)
    if not found.tasks and existing is None:
        raise AdjudicationError(
            f"project {source_id} ({source.get('title')!r}): no task to adjudicate: of {found.total} task(s), "
            f"{found.compared} have two answers or more and none meets the rule {found.rule.text!r} "
            f"({found.rule_from}); no project was created"
        )
    new_xml = _checked_config(source_xml, schema, source_id)
    if existing is None:
        project_id, title = _create_project(client, source, title, new_xml, found, adjudicator, prefill)
    else:
        project_id, title = int(existing["id"]), str(existing.get("title") or title)
        _name_adjudicator(client, existing, adjudicator)
    result = Created(project_id, title, existing is None, 0, 0, found)
    pending = _new_tasks(client, source_id, project_id, found, config, schema, judge, result)
    if pending:
        _import_tasks(client, project_id, pending, prefill, result)
    return result


def _checked_config(source_xml: str, schema: Schema | None, source_id: int) -> str:
    """The adjudication project's label config, which must still detect as the source's schema."""
    new_xml = adjudication_config(source_xml)
    if schema is not None:
        detected = detect_schema(new_xml, all_schemas()).schema
        if detected is None or detected.name != schema.name:
            raise AdjudicationError(
                f"the adjudication config of project {source_id} no longer detects as {schema.name}"
            )
    return new_xml


def _create_project(
    client: Any,
    source: Mapping[str, Any],
    title: str,
    label_config: str,
    found: Found,
    adjudicator: str | None,
    prefill: bool,
) -> tuple[int, str]:
    """``(id, title)`` of a new adjudication project of ``source``: its description carries the
    marker of the source (and the adjudicator's tag), its instructions are the source's."""
    source_id = int(source["id"])
    description = (
        f"Adjudication of project {source_id} ({source.get('title')}): the tasks whose answers meet the rule "
        f"{found.rule.text!r}, each annotator's answer beside the form. {marker(source_id)}"
        + (f" {ADJUDICATOR_TAG}{adjudicator}]" if adjudicator else "")
    )
    project = client.projects.create(
        title=title,
        label_config=label_config,
        description=description,
        expert_instruction=str(source.get("expert_instruction") or ""),
        show_instruction=bool(source.get("expert_instruction")),
        show_collab_predictions=prefill,
        maximum_annotations=1,
    )
    return int(project.id), str(project.title)


def _name_adjudicator(client: Any, existing: Mapping[str, Any], adjudicator: str | None) -> None:
    """Write ``adjudicator`` into an existing adjudication project's description tag when it differs."""
    if adjudicator and _tag_value(str(existing.get("description") or ""), ADJUDICATOR_TAG) != adjudicator:
        description = str(existing.get("description") or "")
        old = _tag_value(description, ADJUDICATOR_TAG)
        description = (
            description.replace(f"{ADJUDICATOR_TAG}{old}]", f"{ADJUDICATOR_TAG}{adjudicator}]")
            if old is not None
            else f"{description} {ADJUDICATOR_TAG}{adjudicator}]"
        )
        client.projects.update(id=int(existing["id"]), description=description)


def _new_tasks(
    client: Any,
    source_id: int,
    project_id: int,
    found: Found,
    config: LabelConfig,
    schema: Schema | None,
    judge: str | None,
    result: Created,
) -> list[tuple[dict[str, Any], Disagreement]]:
    """The adjudication tasks (with the disagreement each comes from) of the tasks the project lacks.

    Counts in ``result`` the tasks already there and those shown with the judge's prediction.
    """
    have = {
        int(meta.get("source_task"))
        for meta in _metas(client, project_id).values()
        if isinstance(meta, Mapping) and meta.get("source_task") is not None
    }
    items = Items.of(config, schema)
    pending = []
    for item in found.tasks:
        task_id = int(item.task["id"])
        if task_id in have:
            result.already += 1
            continue
        judged = _judge_answer(client, task_id, judge) if judge is not None else None
        result.judged += judged is not None
        pending.append((_adjudication_task(item, items, config, judged, source_id), item))
    return pending


def _adjudication_task(
    item: Disagreement, items: Items, config: LabelConfig, judged: Answer | None, source_id: int
) -> dict[str, Any]:
    """A disagreement as an adjudication task: the source's data with the answers panel, and a meta
    naming the source task (under its key), its annotators and the rule's reasons."""
    task_id = int(item.task["id"])
    data = dict(item.task.get("data") or {})
    data[ANSWERS_FIELD] = answers_html(item.answers, items, item.reasons, judged, _order(config, data))
    meta = item.task.get("meta") or {}
    key = meta.get(KEY_FIELD) if isinstance(meta, Mapping) else None
    return {
        "data": data,
        "meta": {
            KEY_FIELD: key if key not in (None, "") else f"task:{task_id}",
            META: {
                "source_project": source_id,
                "source_task": task_id,
                "annotators": [a.annotator for a in item.answers],
                "reasons": item.reasons,
            },
        },
    }


def _import_tasks(
    client: Any, project_id: int, pending: list[tuple[dict[str, Any], Disagreement]], prefill: bool, result: Created
) -> None:
    """Import the new tasks; with ``prefill``, each annotator's answer as a prediction on its task."""
    response = client.projects.import_tasks(id=project_id, request=[task for task, _ in pending], return_task_ids=True)
    result.added = len(pending)
    if prefill:
        ids = list(response.task_ids or [])
        by_source = _source_tasks(client, project_id) if len(ids) != len(pending) else None
        for position, (_, item) in enumerate(pending):
            target = ids[position] if by_source is None else by_source[int(item.task["id"])]
            for answer in item.answers:
                client.predictions.create(
                    task=target, result=answer.result, model_version=f"{PREFILL_PREFIX}{answer.annotator}"
                )
            result.prefilled += 1


def _metas(client: Any, project_id: int) -> dict[int, Any]:
    """``task id -> meta[judgelab_adjudication]`` of an adjudication project's tasks."""
    from judgelab.sync.ls_api import as_api
    from judgelab.sync.projects import LIST_PAGE

    api, out, page = as_api(client), {}, 1
    while True:
        params = {"project": project_id, "page": page, "page_size": LIST_PAGE, "review": "true", "include": "id,meta"}
        payload = api.get_json("api/tasks/", params)
        tasks = payload.get("tasks") or []
        for task in tasks:
            meta = task.get("meta") if isinstance(task.get("meta"), Mapping) else {}
            out[int(task["id"])] = meta.get(META)
        if not tasks or len(out) >= int(payload.get("total") or 0):
            return out
        page += 1


def _source_tasks(client: Any, project_id: int) -> dict[int, int]:
    """``source task id -> adjudication task id``."""
    return {
        int(meta["source_task"]): task_id
        for task_id, meta in _metas(client, project_id).items()
        if isinstance(meta, Mapping) and meta.get("source_task") is not None
    }


# --- collect ----------------------------------------------------------------------------


@dataclass
class Collected:
    project_id: int
    source_id: int
    added: int = 0  # ground-truth annotations created
    replaced: int = 0  # an earlier ground truth updated to a changed adjudication
    unchanged: int = 0
    pending: int = 0  # adjudication tasks not answered yet
    others: int = 0  # answered by someone other than the named adjudicator: left out

    def summary(self) -> str:
        text = (
            f"{self.added} ground-truth annotation(s) added to project {self.source_id}, {self.replaced} replaced "
            f"(the adjudication changed), {self.unchanged} already there; {self.pending} task(s) not adjudicated yet"
        )
        if self.others:
            text += f"; {self.others} answer(s) by others than the adjudicator left out"
        return text

    def as_json(self) -> dict[str, Any]:
        return {
            "project": self.project_id,
            "source_project": self.source_id,
            "added": self.added,
            "replaced": self.replaced,
            "unchanged": self.unchanged,
            "pending": self.pending,
            "others": self.others,
        }


def _copied(result: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """An adjudication's result as the source task's: the adjudicator's own answer (``origin``
    manual, also when they started from a pre-filled annotator's answer)."""
    out = []
    for region in result or []:
        if isinstance(region, Mapping):
            out.append({**region, "origin": "manual"})
    return out


def collect(client: Any, source_id: int, adjudicator: str | None = None) -> Collected:
    """Copy each submitted adjudication answer into the source task as a ground-truth annotation
    (see the module's docstring). ``adjudicator``: only their answers (default: the one the
    project was created for, else whoever answered, the latest answer per task)."""
    from judgelab.sync.importers.annotations import result_signature

    project = find_adjudication_project(client, source_id)
    if project is None:
        raise AdjudicationError(
            f"project {source_id} has no adjudication project yet: create it with judgelab design adjudicate"
        )
    project_id = int(project["id"])
    adjudicator = adjudicator or _tag_value(str(project.get("description") or ""), ADJUDICATOR_TAG)
    users, wanted = _adjudicator_account(client, adjudicator)
    outcome = Collected(project_id, source_id)
    for task in _all_tasks(client, project_id):
        meta = (task.get("meta") or {}).get(META) or {}
        source_task = meta.get("source_task")
        submitted = [a for a in task.get("annotations") or [] if not a.get("was_cancelled") and (a.get("result") or [])]
        mine = [a for a in submitted if wanted is None or _who(a.get("completed_by"), users)[1] == wanted]
        outcome.others += len(submitted) - len(mine)
        if not mine or source_task is None:
            outcome.pending += 1
            continue
        answer = max(mine, key=lambda a: (str(a.get("updated_at") or a.get("created_at") or ""), int(a["id"])))
        user = _who(answer.get("completed_by"), users)[1]
        result = _copied(answer.get("result") or [])
        signature = result_signature(result)
        recorded = meta.get("ground_truth_annotation")
        previous = _previous_ground_truth(client, int(source_task), recorded, user, signature)
        made = _write_ground_truth(client, int(source_task), previous, result, signature, user, outcome)
        if recorded is None or int(recorded) != made:
            full_meta = dict(task.get("meta") or {})
            full_meta[META] = {**meta, "ground_truth_annotation": made}
            client.tasks.update(id=str(task["id"]), meta=full_meta)
    return outcome


def _adjudicator_account(client: Any, adjudicator: str | None) -> tuple[dict[Any, str], Any]:
    """The organization's users (id -> email), and the account of the ``adjudicator`` email (None:
    anyone's answers count); an email no account has is an :class:`AdjudicationError`."""
    from judgelab.sync.ls_api import as_api

    users = as_api(client).user_emails()
    wanted = None
    if adjudicator:
        by_email = {email.lower(): user for user, email in users.items()}
        wanted = by_email.get(adjudicator.lower())
        if wanted is None:
            raise AdjudicationError(f"no Label Studio account {adjudicator!r} (the adjudicator) in the organization")
    return users, wanted


def _previous_ground_truth(client: Any, source_task: int, recorded: Any, user: Any, signature: Any) -> Any | None:
    """The source task's annotation an earlier collect made: the one its meta recorded, else (not
    recorded, or deleted since) a ground truth of ``user`` with the same result, if any."""
    from judgelab.sync.importers.annotations import result_signature

    there = {int(a.id): a for a in client.annotations.list(id=source_task)}
    previous = there.get(int(recorded)) if recorded is not None else None
    if previous is None:  # not recorded (or deleted since): the same ground truth may be there
        previous = next(
            (
                a
                for a in there.values()
                if a.ground_truth and _user_id(a.completed_by) == user and result_signature(a.result or []) == signature
            ),
            None,
        )
    return previous


def _write_ground_truth(
    client: Any, source_task: int, previous: Any | None, result: list, signature: Any, user: Any, outcome: Collected
) -> int:
    """The answer as the source task's ground truth: ``previous`` kept when it says the same,
    else updated, else a new annotation; counted in ``outcome``. The annotation's id."""
    from judgelab.sync.importers.annotations import result_signature

    if previous is not None and result_signature(previous.result or []) == signature and previous.ground_truth:
        outcome.unchanged += 1
        return int(previous.id)
    if previous is not None:
        client.annotations.update(id=int(previous.id), result=result, ground_truth=True, completed_by=user)
        outcome.replaced += 1
        return int(previous.id)
    created = client.annotations.create(
        id=source_task, result=result, completed_by=user, was_cancelled=False, ground_truth=True
    )
    outcome.added += 1
    return int(created.id)


def _user_id(completed_by: Any) -> int | None:
    if isinstance(completed_by, Mapping):
        return completed_by.get("id")
    return completed_by if isinstance(completed_by, int) else None
