"""A study's headline numbers from a small human sample plus a judge on every task.

For each *quantity* of a study, the mean of a rating item or the share of tasks with a label,
and each judge (every model version of the project, plus the majority of the judges when there
are several), :func:`estimate_table` gives the human-only estimate, the judge-only estimate with
its bias, and the prediction-powered estimate (:mod:`analysis.ppi`), per group of tasks (the
summariser's ``model`` field, say).

Quantities (per task, one value per rater; :func:`task_values`):

- an ordinal item (a Likert criterion, SP/SC, an impression): ``<item> (mean)``, the rating;
- a nominal item: ``<item> = <label>`` for each of its labels (the schema's values, else those the
  humans gave; an item with more than :data:`MAX_LABELS` labels is left out), 1 when the rater's
  answer holds the label, else 0; a flag (tick box): ``<item> = checked``;
- spans: ``spans: any`` (the rater marked a span on the task) and ``spans: <label>`` (a span of the
  label), 0/1;
- line verdicts (``line_<i>``, the schema's ``line_item``): ``lines <flag> (share per task)``, the
  share of the task's lines the rater gave the schema's ``line_flag`` verdict (so its estimate is
  the mean over tasks of the share of their lines: every task weighs the same);
- a summary verdict: when the schema names a ``summary_item`` and its ``summary_unfaithful`` value,
  ``<summary_item> = <unfaithful>``, from the rater's answer to the item, else derived from the
  rater's line verdicts (any line flagged); a schema with line items only gets ``any line <flag>``.

Which answers count:

- the **judge** of a task: the rows of source ``model:<version>``; the majority of judges is the
  median of the judges' values on the task (a rating's median; for a 0/1 value the strict
  majority, 0.5 on a tie), as :mod:`analysis.judges` builds it;
- the **human value** of a task: the mean of its human answers (for a label: the *share of
  annotators* who gave it), over the human annotations made without any judge's suggestion on
  screen (an annotation with a ``parent_prediction``, or a row whose ``origin`` is a
  prediction's, is left out), plus the human rows of the linked human-sample project
  (:func:`linked_sample_rows`); a task's gold answers (source ``gold``, or a Label Studio
  annotation marked ``ground_truth``) override the other human answers on it; annotators in
  ``exclude_annotators`` are left out (gold answers stay);
- the **inclusion probabilities** come from the tasks' ``inclusion_probability`` column (written by
  ``judgelab design sample``); without it, or when a labelled task has none, sampling is taken as
  uniform (``weights`` says which).

The estimates of a judge and a quantity use the tasks of the group the judge answered
(``n_judged``); ``n_labeled`` of them have a human value. Below ``min_labels`` (default
:data:`MIN_LABELS`) labelled tasks there is no interval: ``note`` says so with the ``n``.

Columns of the table (one row per judge, group and quantity):

``judge`` (``model:<version>`` or :data:`JUDGE_MAJORITY`), the ``by`` fields, ``quantity``,
``description`` (the quantity in words: "mean Coherence", "share of tasks with any span"), ``item``,
``statistic`` (``mean`` or ``share``), ``n_tasks`` (tasks of the group),
``n_judged``, ``n_labeled``, ``n_gold`` (labelled tasks whose value is gold), ``human_estimate``,
``human_low``, ``human_high`` (human only), ``judge_estimate`` (the judge's mean over the tasks it
answered), ``judge_bias`` (``mean(judge - human)`` on the labelled tasks), ``ppi_estimate``,
``ppi_low``, ``ppi_high`` (prediction-powered), ``lambda`` (how much of the judge it uses),
``worth_human_labels`` (the human-only sample size with the same interval width), ``weights``
(``uniform`` or ``inclusion probabilities``), ``alpha`` and ``note``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from judgelab.analysis.facets import MISSING_LABEL
from judgelab.analysis.judges import (
    GOLD,
    JUDGE_MAJORITY,
    LINE_FLAGS,
    LINE_GROUP,
    SPANS_ANY,
    answer_columns,
    usable_answer_rows,
    usable_rows,
)
from judgelab.analysis.kinds import effective_meta
from judgelab.analysis.ppi import pool_estimates
from judgelab.analysis.tables import (
    FLAG_CHECKED,
    HUMAN_SOURCE,
    MODEL_SOURCE_PREFIX,
    MULTI_VALUE_SEPARATOR,
    shared_strings,
)
from judgelab.configs.items import item_kind

ALPHA = 0.1  # 90% intervals
MIN_LABELS = 10  # fewer labelled tasks in a cell: no interval, a sentence with the n
MAX_LABELS = 12  # a nominal item with more labels (free text, scores) is not a study quantity
# written by ``judgelab design sample`` / ``judgelab sync`` (the tasks table)
INCLUSION_COLUMN = "inclusion_probability"
SAMPLE_OF_COLUMN = "project_sample_of"
SUMMARISER_FIELD = "model"  # the task field naming the system whose output is judged
PREDICTION_ORIGINS = ("prediction", "prediction-changed")
UNIFORM, WEIGHTED = "uniform", "inclusion probabilities"
MEAN, SHARE = "mean", "share"
SPANS_PREFIX = SPANS_ANY.split(":")[0] + ": "  # ``spans: <label>``, as analysis.judges names them

#: the numbers of one estimate (NaN where there are too few labels for them)
ESTIMATE_COLUMNS = [
    "human_estimate",
    "human_low",
    "human_high",
    "judge_estimate",
    "judge_bias",
    "ppi_estimate",
    "ppi_low",
    "ppi_high",
    "lambda",
    "worth_human_labels",
]
COLUMNS = [
    "judge",
    "quantity",
    "description",
    "item",
    "statistic",
    "n_tasks",
    "n_judged",
    "n_labeled",
    "n_gold",
    *ESTIMATE_COLUMNS,
    "weights",
    "alpha",
    "note",
]
VALUE_COLUMNS = ["task_id", "rater", "quantity", "description", "item", "statistic", "y", "low", "high"]
_VALUE_KEYS = ["task_id", "rater", "quantity", "y"]
_DESCRIBED = ["description", "item", "statistic", "low", "high"]


# -- which human answers count -------------------------------------------------------------------


def _sources(frame: pd.DataFrame) -> pd.Series:
    if "source" not in frame.columns:
        return pd.Series(HUMAN_SOURCE, index=frame.index, dtype=object)
    return frame["source"].fillna(HUMAN_SOURCE).astype(str)


def _gold_rows(frame: pd.DataFrame) -> pd.Series:
    source = _sources(frame)
    truth = (
        frame["ground_truth"].fillna(False).astype(bool)
        if "ground_truth" in frame.columns
        else pd.Series(False, index=frame.index)
    )
    return (source == GOLD) | ((source == HUMAN_SOURCE) & truth)


#: the columns that tell an annotation made with a suggestion on screen (:func:`anchored_annotations`)
ANCHOR_COLUMNS = ("parent_prediction", "origin")


def anchored_annotations(*frames: pd.DataFrame) -> set[object]:
    """The human annotations made with a judge's suggestion on screen: a ``parent_prediction``, or a
    row whose ``origin`` is a prediction's (``prediction``, ``prediction-changed``).

    >>> j = pd.DataFrame({"annotation_id": [1, 2, 3], "source": "human", "parent_prediction": [None, 7, None],
    ...                   "origin": ["manual", "prediction", "prediction-changed"]})
    >>> sorted(anchored_annotations(j))
    [2, 3]
    """
    found: set[object] = set()
    for frame in frames:
        if frame.empty:
            continue
        human = _sources(frame) == HUMAN_SOURCE
        marked = pd.Series(False, index=frame.index)
        if "parent_prediction" in frame.columns:
            parent = frame["parent_prediction"]
            marked |= parent.notna() & (parent.astype(str).str.strip() != "")
        if "origin" in frame.columns:
            marked |= frame["origin"].astype(str).str.strip().isin(PREDICTION_ORIGINS)
        found |= set(frame.loc[human & marked, "annotation_id"])
    return found


def gold_annotations(*frames: pd.DataFrame) -> set[object]:
    """The annotations holding gold answers (source ``gold``, or marked ``ground_truth``)."""
    return {a for frame in frames if not frame.empty for a in frame.loc[_gold_rows(frame), "annotation_id"]}


def human_rows(
    judgments: pd.DataFrame, spans: pd.DataFrame, exclude_annotators: Collection[str] = frozenset()
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The human and gold rows that count as labels: human annotations made without a judge's
    suggestion (gold rows always), without the ``exclude_annotators`` (gold rows stay); every
    column but the :data:`ANCHOR_COLUMNS`, which told the suggested ones."""
    anchored = anchored_annotations(judgments, spans)
    excluded = {str(name) for name in exclude_annotators}

    def keep(frame: pd.DataFrame) -> pd.DataFrame:
        if frame.empty:
            return frame
        source = _sources(frame)
        gold = _gold_rows(frame)
        human = (source == HUMAN_SOURCE) & ~gold
        annotator = frame["annotator"].astype(str) if "annotator" in frame.columns else pd.Series("", index=frame.index)
        usable = human & ~frame["annotation_id"].isin(anchored) & ~annotator.isin(excluded)
        # without the two columns that tell an anchored annotation, read above: the rows kept are a
        # copy, held while the values are made
        return frame.loc[gold | usable, [c for c in frame.columns if c not in ANCHOR_COLUMNS]]

    return keep(judgments), keep(spans)


def linked_sample_rows(
    tasks: pd.DataFrame, project: object, peers: Mapping[object, Mapping[str, pd.DataFrame]]
) -> tuple[pd.DataFrame, pd.DataFrame, list[object]]:
    """The human (and gold) rows of the human-sample projects of ``project`` (their tasks'
    ``project_sample_of`` is ``project``), joined on the task ``key`` to ``tasks``: their
    ``task_id`` and ``project`` become this project's; rows whose key is not among ``tasks`` are
    left out. Returns ``(judgments, spans, sample project ids)``.

    >>> own = pd.DataFrame({"project": 1, "task_id": [10, 11], "key": ["a", "b"]})
    >>> sample = {"tasks": pd.DataFrame({"project": 2, "task_id": [5], "key": ["b"], "project_sample_of": [1]}),
    ...           "judgments": pd.DataFrame({"project": 2, "task_id": [5], "annotation_id": [9], "annotator": ["x"],
    ...                                      "source": "human", "item": ["q"], "value": ["3"]}),
    ...           "spans": pd.DataFrame()}
    >>> j, s, found = linked_sample_rows(own, 1, {2: sample})
    >>> j[["project", "task_id", "annotator"]].values.tolist(), found
    ([[1, 11, 'x']], [2])
    """
    empty = pd.DataFrame()
    if tasks.empty or "key" not in tasks.columns:
        return empty, empty, []
    named = tasks.dropna(subset=["key"])
    own_ids = dict(zip(named["key"].astype(str), named["task_id"], strict=True))
    parts_j, parts_s, found = [], [], []
    for other, tables in peers.items():
        theirs = tables.get("tasks", empty)
        if theirs.empty or SAMPLE_OF_COLUMN not in theirs.columns or "key" not in theirs.columns:
            continue
        linked = theirs[SAMPLE_OF_COLUMN].map(_as_id) == _as_id(project)
        if not linked.any():
            continue
        found.append(other)
        mapping = {
            task: own_ids[str(key)]
            for task, key in zip(theirs.loc[linked, "task_id"], theirs.loc[linked, "key"], strict=True)
            if pd.notna(key) and str(key) in own_ids
        }
        for frame, parts in ((tables.get("judgments", empty), parts_j), (tables.get("spans", empty), parts_s)):
            if frame.empty:
                continue
            rows = frame[frame["task_id"].isin(list(mapping)) & ((_sources(frame) == HUMAN_SOURCE) | _gold_rows(frame))]
            if not rows.empty:
                parts.append(rows.assign(task_id=rows["task_id"].map(mapping), project=project))
    join = lambda parts: pd.concat(parts, ignore_index=True) if parts else empty  # noqa: E731
    return join(parts_j), join(parts_s), found


def _as_id(value: object) -> str | None:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return None
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else text


# -- one value per task, rater and quantity -----------------------------------------------------


def _constants(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    return meta.get("constants") or {}


def line_flag_name(meta: Mapping[str, Any]) -> str:
    """The line verdict the lines are counted by (the schema's ``line_flag``)."""
    return str(_constants(meta).get("line_flag") or " or ".join(sorted(LINE_FLAGS)))


def task_values(
    judgments: pd.DataFrame,
    spans: pd.DataFrame,
    meta: Mapping[str, Any],
    *,
    labels: Mapping[str, Sequence[str]] | None = None,
    spans_asked: bool | None = None,
) -> pd.DataFrame:
    """Every rater's value of every quantity on every task it answered: ``task_id, rater, quantity,
    description, item, statistic, y, low, high`` (``low``/``high``: the scale of ``y``). Raters are
    annotators, ``model:<version>`` sources and ``gold``. ``labels`` fixes the labels of nominal
    items (default: the schema's values, else the labels found here). ``spans_asked`` (default:
    whether ``spans`` has rows): the study marks spans, so a rater who marked none has 0 for them.

    >>> j = pd.DataFrame({"project": 1, "task_id": [1, 1, 2], "annotation_id": [1, 1, 2], "annotator": "a",
    ...                   "source": "human", "item": ["q", "c", "q"], "value": ["4", "x", "2"]})
    >>> v = task_values(j, pd.DataFrame(columns=j.columns), {"scales": {"q": {"min": 1, "max": 5}}})
    >>> v[["task_id", "quantity", "y"]].values.tolist()
    [[1, 'q (mean)', 4.0], [2, 'q (mean)', 2.0], [1, 'c = x', 1.0]]
    """
    values, described = _values([judgments, spans], meta, labels=labels, spans_asked=spans_asked)
    if values.empty:
        return pd.DataFrame(columns=VALUE_COLUMNS)
    return values.join(described, on="quantity")[VALUE_COLUMNS]


def _values(
    rows_read: list[pd.DataFrame],
    meta: Mapping[str, Any],
    *,
    labels: Mapping[str, Sequence[str]] | None = None,
    spans_asked: bool | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`task_values` as ``(values, described)``: the rows ``task_id, rater, quantity, y``,
    and per quantity (the index, in order of first appearance) its ``description, item,
    statistic, low, high``. The words are the quantity's, not its rows': at 100,000 tasks the
    values are over a million rows, and a column of the words is 8 bytes a row each.

    ``rows_read`` is ``[judgments, spans]``, taken: the list is emptied, so that a caller's rows,
    filtered copies, go once the values are made rather than through their concatenation (at
    100,000 tasks the human rows are about 60 MiB)."""
    judgments, spans = rows_read
    rows_read.clear()
    if judgments.empty and spans.empty:
        return pd.DataFrame(columns=_VALUE_KEYS), pd.DataFrame(columns=_DESCRIBED)
    asked = not spans.empty if spans_asked is None else spans_asked
    # the rows chosen and named once, for the rated items and the spans alike (each made its own)
    rows_j, rows_s = usable_rows(_with_columns(judgments), gold=True), usable_rows(_with_columns(spans), gold=True)
    judgments = spans = None
    rows = usable_answer_rows(rows_j, rows_s, meta, with_spans=False)  # spans: _span_values
    found: list[_Quantity] = []
    for (group, kind), part in rows.groupby(["group", "kind"], sort=False):
        found += _group_values(str(group), str(kind), part, meta, labels)
    rows = part = None  # the answer rows are not needed past here
    if asked:
        found += _span_values(rows_j, rows_s, (labels or {}).get(SPANS_ANY))
    rows_j = rows_s = None  # read: the values below are made from the quantities' rows
    if not found:
        return pd.DataFrame(columns=_VALUE_KEYS), pd.DataFrame(columns=_DESCRIBED)
    words: dict[str, list[object]] = {}  # a quantity's words: the first group's that has it
    for q in found:
        words.setdefault(q.name, [q.description, q.item, q.statistic, q.low, q.high])
    parts = [q.rows.assign(quantity=_shared(q.name, q.rows.index), _derived=q.derived) for q in found]
    values = _stated_over_derived(pd.concat(parts, ignore_index=True))
    described = pd.DataFrame.from_dict(words, orient="index", columns=_DESCRIBED).reindex(_runs(values["quantity"]))
    return values[_VALUE_KEYS], described.rename_axis("quantity")


_KEYS = ["task_id", "rater"]


def _group_values(
    group: str, kind: str, part: pd.DataFrame, meta: Mapping[str, Any], labels: Mapping[str, Sequence[str]] | None
) -> list[_Quantity]:
    """The quantities of one item group's answer rows: line verdicts, a rating, or a choice's labels."""
    if group == LINE_GROUP:
        return _line_values(part, group, meta)
    if kind == "ordinal":
        return [_rating_values(part, group, meta)]
    return _choice_values(part, group, meta, labels)


def _line_values(part: pd.DataFrame, group: str, meta: Mapping[str, Any]) -> list[_Quantity]:
    """Line verdicts: the share of a task's lines flagged, and the summary verdict derived from them.

    The derived summary (any line flagged) is marked ``_derived``: a rater's stated answer to the
    summary item replaces it (:func:`_stated_over_derived`).
    """
    constants = _constants(meta)
    summary_item, unfaithful = constants.get("summary_item"), constants.get("summary_unfaithful")
    flagged = part.assign(y=part["value"].isin(LINE_FLAGS).astype(float))
    per_task = flagged.groupby(_KEYS, sort=False)["y"]
    flag = line_flag_name(meta)
    share = _frame(
        per_task.mean(), f"lines {flag} (share per task)", group, SHARE, f"share of a task's lines judged {flag}"
    )
    derived = per_task.max().rename("y").reset_index()
    name, words = _summary_name(summary_item, unfaithful, flag), _summary_words(unfaithful, flag)
    item = str(summary_item or group)
    return [share, _frame(derived.set_index(_KEYS)["y"], name, item, SHARE, words, derived=True)]


def _rating_values(part: pd.DataFrame, group: str, meta: Mapping[str, Any]) -> _Quantity:
    """An ordinal item: each rater's (last) rating of each task, on the schema's scale (else the one seen)."""
    scale = (meta.get("scales") or {}).get(group) or {}
    values = pd.to_numeric(part["value"], errors="coerce")
    low = float(scale.get("min", values.min()))
    high = float(scale.get("max", values.max()))
    y = part.assign(y=values).dropna(subset=["y"]).drop_duplicates(_KEYS, keep="last").set_index(_KEYS)["y"]
    return _frame(y, f"{group} (mean)", group, MEAN, f"mean {group}", low=low, high=high)


def _choice_values(
    part: pd.DataFrame, group: str, meta: Mapping[str, Any], labels: Mapping[str, Sequence[str]] | None
) -> list[_Quantity]:
    """A nominal item: 0/1 per label the answer holds (the summary verdict's unfaithful value; a
    flag's tick; else each label of ``labels``, the schema's or those seen, none past
    :data:`MAX_LABELS`)."""
    constants = _constants(meta)
    summary_item, unfaithful = constants.get("summary_item"), constants.get("summary_unfaithful")
    sets = _AnswerSets(part.drop_duplicates(_KEYS, keep="last").set_index(_KEYS)["value"])
    if summary_item is not None and unfaithful is not None and group == str(summary_item):
        y = sets.holding(str(unfaithful))
        return [_frame(y, _summary_name(summary_item, unfaithful, ""), group, SHARE, _summary_words(unfaithful, ""))]
    if item_kind(meta, group) == "flag":
        words = f"share of tasks with {group} {FLAG_CHECKED}"
        return [_frame(sets.holding(FLAG_CHECKED), f"{group} = {FLAG_CHECKED}", group, SHARE, words)]
    wanted = list((labels or {}).get(group) or _declared(meta, group) or sets.found())
    if len(wanted) > MAX_LABELS:
        return []
    parts = []
    for label in wanted:
        has = sets.holding(label)
        parts.append(_frame(has, f"{group} = {label}", group, SHARE, f"share of tasks answered {label} on {group}"))
    return parts


class _AnswerSets:
    """Each answer's labels (a choice of several is its labels joined by
    :data:`~judgelab.analysis.tables.MULTI_VALUE_SEPARATOR`), split once per distinct answer: a
    project's answers are a few distinct texts over hundreds of thousands of rows, and a list of
    labels per row was 90 MiB at 100,000 tasks."""

    def __init__(self, values: pd.Series) -> None:
        codes, distinct = pd.factorize(values.astype(str))  # a missing answer: code -1, no label
        self.index, self.codes = values.index, codes
        self.labels = [set(str(value).split(MULTI_VALUE_SEPARATOR)) for value in distinct]

    def holding(self, label: str) -> pd.Series:
        """1.0 where the answer holds ``label``, else 0.0."""
        hit = np.array([label in labels for labels in self.labels] + [False])  # [-1]: a missing answer
        return pd.Series(hit[self.codes].astype(float), index=self.index)

    def found(self) -> list[str]:
        """Every label some answer holds, sorted."""
        return sorted({value for labels in self.labels for value in labels if value and value != "nan"})


def _stated_over_derived(out: pd.DataFrame) -> pd.DataFrame:
    """The values without a derived summary verdict where the rater stated one for the task.

    A summary verdict is the rater's answer to the summary item where it gave one, else its lines'.
    """
    derived = out.pop("_derived").astype(bool)
    if not derived.any():  # no line verdicts: nothing to replace (and no index of every row to build)
        return out.reset_index(drop=True)
    stated = out[~derived].set_index(["task_id", "rater", "quantity"]).index
    own = pd.MultiIndex.from_frame(out[["task_id", "rater", "quantity"]])
    return out[~(derived.to_numpy() & own.isin(stated))].reset_index(drop=True)


def _span_values(rows_j: pd.DataFrame, rows_s: pd.DataFrame, labels: Sequence[str] | None) -> list[_Quantity]:
    """``spans: any`` and ``spans: <label>`` per (task, rater) the rater annotated (a judgment or a
    span): 1 when it marked such a span, else 0. ``rows_j``, ``rows_s``: the judgments and spans that
    count (:func:`usable_rows`, with gold). ``labels``: the span labels to count (default: the
    labels marked here)."""
    keys = ["task_id", "rater"]
    base = pd.concat([rows_j[keys], rows_s[keys]], ignore_index=True).drop_duplicates().set_index(keys).index
    if not len(base):
        return []
    marked = rows_s.assign(label=rows_s["label"].astype(str))
    pairs = marked.set_index(keys).index
    out = [
        _frame(
            pd.Series(base.isin(pairs).astype(float), index=base),
            SPANS_ANY,
            SPANS_ANY,
            SHARE,
            "share of tasks with any span",
        )
    ]
    found = sorted(label for label in marked["label"].unique() if label not in ("nan", "None", ""))
    for label in labels if labels is not None else found:
        with_label = marked[marked["label"] == label].set_index(keys).index
        name = f"{SPANS_PREFIX}{label}"
        out.append(
            _frame(
                pd.Series(base.isin(with_label).astype(float), index=base),
                name,
                name,
                SHARE,
                f"share of tasks with a {label} span",
            )
        )
    return out


def _summary_words(unfaithful: object, flag: str) -> str:
    if unfaithful is not None:
        return f"share of tasks judged {unfaithful}"
    return f"share of tasks with a line judged {flag}"


def _summary_name(item: object, unfaithful: object, flag: str) -> str:
    if item is not None and unfaithful is not None:
        return f"{item} = {unfaithful}"
    return f"any line {flag}"


def _declared(meta: Mapping[str, Any], item: str) -> list[str]:
    for key, spec in (meta.get("items") or {}).items():
        spec = spec or {}
        if item in (str(key), str(spec.get("item", key))) and "values" in spec:
            return [str(v) for v in spec["values"]]
    return []


def _runs(column: pd.Series) -> list[object]:
    """The distinct values of a column whose equal values sit together (each quantity's rows are
    one run), in order: the first row of each run, not a hash table of every row (``pd.unique``
    of a million rows of text took 80 MiB).

    >>> _runs(pd.Series(["a", "a", "b", "b", "a"]))
    ['a', 'b']
    """
    values = column.to_numpy()
    if not len(values):
        return []
    starts = np.flatnonzero(values[1:] != values[:-1]) + 1
    return list(dict.fromkeys(values[np.concatenate(([0], starts))]))


class _Quantity(NamedTuple):
    """One quantity's values from one group of answers: ``rows`` is ``task_id, rater, y``."""

    rows: pd.DataFrame
    name: str
    item: str
    statistic: str
    description: str
    low: float = 0.0
    high: float = 1.0
    derived: bool = False  # a summary verdict derived from line verdicts (see _stated_over_derived)


def _frame(
    y: pd.Series,
    quantity: str,
    item: str,
    statistic: str,
    description: str,
    *,
    low: float = 0.0,
    high: float = 1.0,
    derived: bool = False,
) -> _Quantity:
    frame = y.rename("y").reset_index()
    rater = shared_strings(frame["rater"])  # a rater's name: one string for its rows
    rows = frame.assign(rater=rater)[["task_id", "rater", "y"]]
    return _Quantity(rows, quantity, item, statistic, description, low, high, derived)


def _shared(text: str, index: pd.Index) -> pd.Series:
    """``text`` on every row: one Python string the rows share, not a copy of its characters per
    row (a text column's default)."""
    return pd.Series(text, index=index, dtype=object)


def _with_columns(frame: pd.DataFrame) -> pd.DataFrame:
    needed = {
        "annotation_id": None,
        "annotator": None,
        "source": HUMAN_SOURCE,
        "item": None,
        "value": None,
        "label": None,
        "task_id": None,
    }
    missing = {name: default for name, default in needed.items() if name not in frame.columns}
    return frame.assign(**missing) if missing else frame


# -- the estimates -----------------------------------------------------------------------------


def human_values(values: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per quantity, per task (the index): ``y``, the gold value when the task has one (the mean of
    several), else the mean of the annotators' values (a label's share of annotators); ``gold``
    says which. One quantity at a time, grouped by task alone: grouped by task and quantity at
    once, the million rows at 100,000 tasks took 107 MiB of keys.

    >>> v = pd.DataFrame({"task_id": [1, 1, 1, 2], "rater": ["a", "b", "gold", "a"], "quantity": "q",
    ...                   "y": [1.0, 0.0, 0.0, 1.0]})
    >>> human_values(v)["q"].to_dict("index")
    {1: {'y': 0.0, 'gold': True}, 2: {'y': 1.0, 'gold': False}}
    """
    out: dict[str, pd.DataFrame] = {}
    if values.empty:
        return out
    gold = (values["rater"] == GOLD).to_numpy()
    for quantity in _runs(values["quantity"]):
        mine = (values["quantity"] == quantity).to_numpy()
        rows = values.loc[mine, ["task_id", "y"]]
        people = rows[~gold[mine]].groupby("task_id", sort=False)["y"].mean()
        reference = rows[gold[mine]].groupby("task_id", sort=False)["y"].mean()
        merged = pd.concat([people.rename("people"), reference.rename("gold_y")], axis=1)
        has_gold = merged["gold_y"].notna()
        out[str(quantity)] = pd.DataFrame({"y": merged["gold_y"].where(has_gold, merged["people"]), "gold": has_gold})
    return out


def judge_values(values: pd.DataFrame) -> dict[str, pd.Series]:
    """Per judge: its value per (task_id, quantity); with two judges or more, also the majority of
    judges (the median of their values on the task: a strict majority of 0/1 answers, 0.5 on a tie)."""
    if values.empty:
        return {}
    wide = values.drop_duplicates(["task_id", "quantity", "rater"], keep="last").pivot_table(
        index=["task_id", "quantity"], columns="rater", values="y", aggfunc="first"
    )
    out = {str(judge): wide[judge].dropna() for judge in wide.columns}
    if len(out) >= 2:
        several = wide[wide.notna().sum(axis=1) >= 2]
        out[JUDGE_MAJORITY] = several.median(axis=1, skipna=True).dropna()
    return out


def estimate_table(
    tasks: pd.DataFrame,
    judgments: pd.DataFrame,
    spans: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None = None,
    *,
    sample_judgments: pd.DataFrame | None = None,
    sample_spans: pd.DataFrame | None = None,
    by: Sequence[str] = (),
    exclude_annotators: Collection[str] = frozenset(),
    quantities: Collection[str] | None = None,
    alpha: float = ALPHA,
    min_labels: int = MIN_LABELS,
) -> pd.DataFrame:
    """One row per judge, group of ``by`` (task fields) and quantity (see the module docstring for
    the columns). ``sample_judgments``/``sample_spans``: the linked human-sample project's rows with
    this project's task ids (:func:`linked_sample_rows`). ``quantities`` keeps only those.
    Quantities no human answered are left out."""
    # the answers' columns (and the origin that marks an anchored one): the filters below copy
    # rows, and none of them needs the texts or the regions
    judgments = _with_columns(answer_columns(judgments, "origin"))
    spans = _with_columns(answer_columns(spans, "origin"))
    meta = effective_meta(schema_meta, judgments[_sources(judgments) == HUMAN_SOURCE])
    model_j = judgments[_sources(judgments).str.startswith(MODEL_SOURCE_PREFIX)]
    model_s = spans[_sources(spans).str.startswith(MODEL_SOURCE_PREFIX)] if not spans.empty else spans
    own_j, own_s = human_rows(judgments, spans, exclude_annotators)
    extra_j, extra_s = human_rows(
        _with_columns(answer_columns(sample_judgments if sample_judgments is not None else pd.DataFrame(), "origin")),
        _with_columns(answer_columns(sample_spans if sample_spans is not None else pd.DataFrame(), "origin")),
        exclude_annotators,
    )
    people = [_joined(own_j, extra_j), _joined(own_s, extra_s)]
    own_j = own_s = extra_j = extra_s = None  # held by ``people`` alone, which _values empties
    asked = not spans.empty or bool(sample_spans is not None and not sample_spans.empty)
    h_values, described = _values(people, meta, spans_asked=asked)
    if quantities is not None:
        h_values = h_values[h_values["quantity"].isin(quantities)]
    if h_values.empty or (model_j.empty and model_s.empty):
        return pd.DataFrame(columns=_columns(by))
    described = described.loc[_runs(h_values["quantity"])]  # in order of first appearance, as the labels go
    labels = _labels(described.reset_index())
    models = [model_j, model_s]
    model_j = model_s = None
    m_values = _values(models, meta, labels=labels, spans_asked=asked)[0]
    m_values = m_values[m_values["quantity"].isin(set(h_values["quantity"]))]
    truth = human_values(h_values)
    judges = judge_values(m_values)
    groups = _task_groups(tasks, judgments, spans, by)
    rows = _estimate_rows(judges, described, groups, by, truth, _inclusion(tasks), alpha, min_labels)
    if not rows:
        return pd.DataFrame(columns=_columns(by))
    return pd.DataFrame(rows)[_columns(by)]


def _estimate_rows(
    judges: Mapping[str, pd.Series],
    described: pd.DataFrame,
    groups: list[tuple[tuple[str, ...], pd.Index]],
    by: Sequence[str],
    truth: Mapping[str, pd.DataFrame],
    pi_all: pd.Series | None,
    alpha: float,
    min_labels: int,
) -> list[dict[str, Any]]:
    """A row per judge, quantity the humans answered (``described``) and group of tasks; a
    quantity the judge has no value of is left out."""
    rows = []
    for judge, predicted in judges.items():
        answered = set(predicted.index.unique(level="quantity"))  # not every row's quantity per quantity
        for quantity, spec in described.iterrows():
            if quantity not in answered:
                continue
            yhat_q = predicted.xs(quantity, level="quantity")
            for group_key, task_ids in groups:
                rows.append(
                    _estimate_row(
                        judge, str(quantity), spec, group_key, by, task_ids, yhat_q, truth, pi_all, alpha, min_labels
                    )
                )
    return rows


def _joined(own: pd.DataFrame, extra: pd.DataFrame) -> pd.DataFrame:
    kept = [frame for frame in (own, extra) if not frame.empty]
    return pd.concat(kept, ignore_index=True) if len(kept) > 1 else (kept[0] if kept else own)


def _columns(by: Sequence[str]) -> list[str]:
    return ["judge", *by, *COLUMNS[1:]]


def _labels(values: pd.DataFrame) -> dict[str, list[str]]:
    """The labels of each nominal item, and the span labels (under ``spans: any``), that the
    humans' quantities count: the judges' are counted by the same."""
    shares = values[values["quantity"].str.contains(" = ", regex=False)]
    spans = values.loc[values["quantity"].str.startswith(SPANS_PREFIX) & (values["quantity"] != SPANS_ANY), "quantity"]
    out: dict[str, list[str]] = {SPANS_ANY: [q.removeprefix(SPANS_PREFIX) for q in spans.unique()]}
    for quantity, item in shares.drop_duplicates("quantity")[["quantity", "item"]].itertuples(index=False):
        out.setdefault(str(item), []).append(str(quantity).split(" = ", 1)[1])
    return out


def _task_groups(
    tasks: pd.DataFrame, judgments: pd.DataFrame, spans: pd.DataFrame, by: Sequence[str]
) -> list[tuple[tuple[str, ...], pd.Index]]:
    ids = pd.Index(pd.concat([frame["task_id"] for frame in (tasks, judgments, spans) if not frame.empty]).unique())
    if not by:
        return [((), ids)]
    fields = tasks.drop_duplicates("task_id").set_index("task_id").reindex(ids)
    keys = pd.DataFrame(
        {
            name: fields[name].astype(object).where(fields[name].notna(), MISSING_LABEL).astype(str)
            if name in fields.columns
            else MISSING_LABEL
            for name in by
        },
        index=ids,
    )
    return [(tuple(map(str, key)), members.index) for key, members in keys.groupby(list(by), sort=True)]


def _inclusion(tasks: pd.DataFrame) -> pd.Series | None:
    if tasks.empty or INCLUSION_COLUMN not in tasks.columns:
        return None
    pi = pd.to_numeric(tasks.drop_duplicates("task_id").set_index("task_id")[INCLUSION_COLUMN], errors="coerce")
    pi = pi[(pi > 0) & (pi <= 1)]
    return pi if not pi.empty else None


def _estimate_row(
    judge: str,
    quantity: str,
    spec: pd.Series,
    group_key: tuple[str, ...],
    by: Sequence[str],
    task_ids: pd.Index,
    yhat_q: pd.Series,
    truth: Mapping[str, pd.DataFrame],
    pi_all: pd.Series | None,
    alpha: float,
    min_labels: int,
) -> dict[str, Any]:
    """The estimates of one judge, quantity and group of tasks (a row of :func:`estimate_table`):
    the judge's mean and bias always, the pooled estimates from ``min_labels`` human labels on."""
    yhat, y, gold = _matched_values(yhat_q, task_ids, truth, quantity)
    y, outside = _within_the_sample(y, pi_all, yhat.index)
    labeled = ~np.isnan(y)
    n = int(labeled.sum())
    row: dict[str, Any] = {
        "judge": judge,
        **dict(zip(by, group_key, strict=True)),
        "quantity": quantity,
        "description": spec["description"],
        "item": spec["item"],
        "statistic": spec["statistic"],
        "n_tasks": len(task_ids),
        "n_judged": len(yhat),
        "n_labeled": n,
        "n_gold": int((gold & labeled).sum()),
        **dict.fromkeys(ESTIMATE_COLUMNS, np.nan),
        "weights": UNIFORM,
        "alpha": alpha,
        "note": "",
    }
    if outside:
        row["note"] = (
            f"{outside} labelled task{'s' if outside != 1 else ''} outside the human sample left out "
            "(not drawn with a known probability)"
        )
    predictions = yhat.to_numpy(dtype=float)
    if len(predictions):
        row["judge_estimate"] = float(predictions.mean())
    if n:
        row["judge_bias"] = float(np.mean(predictions[labeled] - y[labeled]))
    if n < min_labels:
        row["note"] = f"too few human labels: {n} labelled task{'s' if n != 1 else ''} (fewer than {min_labels})"
        return row
    inclusion = _sample_inclusion(pi_all, yhat.index, labeled, row)
    bounds = (float(spec["low"]), float(spec["high"]))
    result = pool_estimates(y, predictions, inclusion, alpha=alpha, bounds=bounds)
    row.update(
        human_estimate=result.human.estimate,
        human_low=result.human.low,
        human_high=result.human.high,
        judge_bias=result.judge_bias,
        ppi_estimate=result.ppi.estimate,
        ppi_low=result.ppi.low,
        ppi_high=result.ppi.high,
        worth_human_labels=result.worth_human_labels,
    )
    row["lambda"] = result.lambda_
    return row


def _matched_values(
    yhat_q: pd.Series, task_ids: pd.Index, truth: Mapping[str, pd.DataFrame], quantity: str
) -> tuple[pd.Series, np.ndarray, np.ndarray]:
    """The judge's value on each task of the group it judged (one per task), and on the same tasks
    the humans' value (NaN: unlabelled) and whether it is gold."""
    yhat = yhat_q[yhat_q.index.isin(task_ids)]
    yhat = yhat.groupby(level=0).first()
    mine = truth.get(quantity, pd.DataFrame(columns=["y", "gold"]))
    y = mine["y"].reindex(yhat.index).to_numpy(dtype=float)
    gold = mine["gold"].reindex(yhat.index).fillna(False).to_numpy(dtype=bool)
    return yhat, y, gold


def _within_the_sample(y: np.ndarray, pi_all: pd.Series | None, judged: pd.Index) -> tuple[np.ndarray, int]:
    """``y`` with the labels of tasks outside the human sample dropped (NaN) when some labelled tasks
    were drawn with a known inclusion probability and others were not: an estimate weighted by the
    draw is valid for the drawn tasks only (an earlier round's labels, say, would pull it their way);
    and how many were dropped.

    >>> pi = pd.Series([0.5, np.nan, 0.5], index=[1, 2, 3])
    >>> _within_the_sample(np.array([1.0, 0.0, np.nan]), pi, pd.Index([1, 2, 3]))
    (array([ 1., nan, nan]), 1)
    """
    if pi_all is None:
        return y, 0
    pi = pi_all.reindex(judged).to_numpy(dtype=float)
    labeled = ~np.isnan(y)
    drawn = np.isfinite(pi)
    if not (labeled & drawn).any() or not (labeled & ~drawn).any():
        return y, 0
    outside = labeled & ~drawn
    return np.where(outside, np.nan, y), int(outside.sum())


def _sample_inclusion(
    pi_all: pd.Series | None, judged: pd.Index, labeled: np.ndarray, row: dict[str, Any]
) -> np.ndarray | None:
    """The inclusion probabilities of the ``judged`` tasks (1 where a task has none) when every
    labelled one has one, the row then weighted; else None (uniform), and when some labelled
    task lacks one the row's note says so."""
    if pi_all is None:
        return None
    pi = pi_all.reindex(judged).to_numpy(dtype=float)
    if np.isfinite(pi[labeled]).all():
        row["weights"] = WEIGHTED
        return np.where(np.isfinite(pi), pi, 1.0)
    row["note"] = "some labelled tasks have no inclusion probability: uniform sampling assumed"
    return None


__all__ = [
    "ALPHA",
    "COLUMNS",
    "MIN_LABELS",
    "SUMMARISER_FIELD",
    "anchored_annotations",
    "estimate_table",
    "gold_annotations",
    "human_rows",
    "human_values",
    "judge_values",
    "linked_sample_rows",
    "task_values",
]
