"""Judge calibration: can a model (a judge) replace one of the human annotators?

Every model source (``model:<version>``) in the tables is a judge. Its answers are compared with
the human annotators' on the same units, per *group* of units:

- a rated item (``impression``, ``SP``...), one unit per task; line verdicts (``line_<i>``) are
  pooled into one group ``line_*``, one unit per (task, line), compared as inconsistent against
  the rest (StorySumm's question);
- for span schemas, whether a rater marked any span on a task (``spans: any``) and whether they
  marked a span of each label (``spans: <label>``): the decisions spans make, as yes/no units.

For each judge and group (:func:`calibrate_group`):

- Krippendorff's alpha (nominal for choices and yes/no units, ordinal for rating scales) of the
  judge with each annotator and with the human majority (strict majority of choices, median of
  ratings), and the human ceiling: the alpha of every pair of annotators on the units the judge
  answered. All pairs share one unit bootstrap (:mod:`analysis.pair_alpha`), so the mean
  judge-human and mean human-human alphas get seeded percentile intervals from the same draws,
  and so does their difference;
- the Alternative Annotator Test (:mod:`analysis.alt_test`) at several epsilons;
- with several judges: the majority of the judges as one more judge, and the alpha between judges;
- the units where the judge and the human majority disagree most.

Humans who started from a judge's own suggestion (their annotation's ``parent_prediction`` is one
of the judge's predictions) are not independent of it. When enough units remain without them
(``MIN_INDEPENDENT_UNITS``), the judge is compared with the independent answers only; otherwise
with all, and ``anchored_share`` says how many of the human answers had seen its suggestion.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from judgelab.analysis.alt_test import AltTestResult, alt_tests
from judgelab.analysis.krippendorff import value_codes
from judgelab.analysis.pair_alpha import PairAlphas, interval, mean_of_pairs, pair_alphas
from judgelab.analysis.review import joined_values, prediction_sources
from judgelab.analysis.tables import (
    FLAG_CHECKED,
    FLAG_UNCHECKED,
    HUMAN_SOURCE,
    MODEL_SOURCE_PREFIX,
    cancelled_mask,
    latest_rows,
    normalised_values,
    only_columns,
    shared_text,
)
from judgelab.configs.items import item_kind
from judgelab.configs.schema import line_flag_values, line_item_regex
from judgelab.configs.tables import PREDICTION_PREFIX

LINE_GROUP = "line_*"
GOLD = "gold"
REST = "rest"
LINE_FLAGS = line_flag_values()  # a line item's verdict that counts; every other one is REST
MARKED, NOT_MARKED = "marked", "none"
SPANS_ANY = "spans: any"
JUDGE_MAJORITY = "majority of judges"
EPSILONS = (0.1, 0.15, 0.2)
MIN_INDEPENDENT_UNITS = 30
MAX_DISAGREEMENTS = 10
_LINE = line_item_regex()


@dataclass(frozen=True)
class GroupAnswers:
    """One group's answers: ``values`` is units (``task_id``, ``item``) x raters, NaN where a rater
    gave none; ``anchored`` (units x humans) names the model source whose suggestion the human's
    annotation started from (None when it did not)."""

    group: str
    kind: str  # "nominal" or "ordinal"
    values: pd.DataFrame
    humans: list[str]
    judges: list[str]
    anchored: pd.DataFrame


@dataclass
class JudgeCalibration:
    group: str
    kind: str
    judge: str
    pairs: pd.DataFrame  # one row per compared pair
    summary: dict[str, Any]
    alt_tests: dict[float, AltTestResult] = field(default_factory=dict)
    disagreements: pd.DataFrame = field(default_factory=pd.DataFrame)


# -- answers per group ------------------------------------------------------------------------


def _rater(frame: pd.DataFrame, gold: bool = False) -> pd.Series:
    """A human's name, a model's source; with ``gold``, ``gold`` for reference rows (source
    ``gold``, or a Label Studio annotation marked as ground truth)."""
    source = frame["source"].fillna(HUMAN_SOURCE).astype(str)
    rater = shared_text(frame["annotator"]).where(source == HUMAN_SOURCE, shared_text(source))
    if gold and "ground_truth" in frame.columns:
        truth = frame["ground_truth"].fillna(False).astype(bool) & (source == HUMAN_SOURCE)
        rater = rater.where(~truth, GOLD)
    return rater


#: the columns answers are read from: rows are narrowed to them before they are filtered, so a
#: filter copies none of the texts, times and ids nothing here reads (at 100,000 tasks the span
#: texts alone are about 100 MiB)
ANSWER_COLUMNS = (
    "task_id",
    "annotation_id",
    "annotator",
    "source",
    "item",
    "value",
    "label",
    "created_at",
    "updated_at",
    "was_cancelled",
    "ground_truth",
    "parent_prediction",
)


def answer_columns(frame: pd.DataFrame, *also: str) -> pd.DataFrame:
    """``frame``'s :data:`ANSWER_COLUMNS` (and ``also``) it has, not copied."""
    return only_columns(frame, *ANSWER_COLUMNS, *also)


#: the words of an answer row (which item, group, kind and rater) as categories where the rows are
#: split by group: a text column is copied for each group, at 100,000 tasks 100 MiB at once
_CODED = ("item", "group", "kind", "rater")


def usable_rows(frame: pd.DataFrame, gold: bool = False) -> pd.DataFrame:
    """Rows of humans and models (and with ``gold`` the reference rows), not cancelled, of each
    rater's latest annotation of a task; only the :data:`ANSWER_COLUMNS`."""
    frame = answer_columns(frame)
    if frame.empty:
        return frame.assign(rater=pd.Series(dtype=str))
    source = frame["source"].fillna(HUMAN_SOURCE).astype(str)
    wanted = (source == HUMAN_SOURCE) | source.str.startswith(MODEL_SOURCE_PREFIX) | (gold & (source == GOLD))
    frame = frame[wanted & ~cancelled_mask(frame)]
    frame = frame.assign(rater=_rater(frame, gold))
    return latest_rows(frame, ("rater",))


def _anchors(rows: pd.DataFrame, sources: Mapping[str, str]) -> pd.DataFrame:
    """``task_id, rater, anchored_to`` for human annotations that started from a prediction."""
    if "parent_prediction" not in rows.columns or rows.empty:
        return pd.DataFrame(columns=["task_id", "rater", "anchored_to"])
    parent = pd.to_numeric(rows["parent_prediction"], errors="coerce")
    anchored = (rows["source"].fillna(HUMAN_SOURCE) == HUMAN_SOURCE) & parent.notna()
    # a rater's first row of each task is its anchor: the rest are left before any text is made
    humans = rows.loc[anchored, ["task_id", "rater"]].assign(parent=parent[anchored])
    humans = humans.drop_duplicates(["task_id", "rater"])
    key = PREDICTION_PREFIX + humans["parent"].astype("int64").astype(str)
    return pd.DataFrame({"task_id": humans["task_id"], "rater": humans["rater"], "anchored_to": key.map(sources)})


def _item_rows(
    judgments: pd.DataFrame, meta: Mapping[str, Any], coverage: pd.DataFrame, *, coded: bool = False
) -> pd.DataFrame:
    """``task_id, item, group, kind, rater, value`` for the rated items (text items left out);
    with ``coded``, the :data:`_CODED` words as categories (for rows split by group)."""
    columns = ["task_id", "item", "group", "kind", "rater", "value"]
    rows = judgments.loc[judgments["item"].notna(), ["task_id", "item", "rater", "value"]]  # split by kind below
    if rows.empty:
        return pd.DataFrame(columns=columns)
    rows = rows.assign(item=rows["item"].astype(str))
    lines = rows["item"].str.match(_LINE)
    kinds = {item: item_kind(meta, item) for item in rows["item"].unique()}
    rows = rows.assign(group=rows["item"].where(~lines, LINE_GROUP), kind=rows["item"].map(kinds))
    rows.loc[lines, "kind"] = "nominal"
    rows = rows[rows["kind"].isin(["nominal", "ordinal", "flag"])]
    words = ["item", "group", "kind"]  # categories while the rows are split by kind (a byte a row), text after
    rows = rows.astype(dict.fromkeys(words, "category"))
    keys = ["task_id", "item", "group", "kind", "rater"]
    parts = []
    for kind, part in rows.groupby("kind", sort=False):
        if kind == "ordinal":
            numbers = pd.to_numeric(normalised_values(part["value"], "ordinal"), errors="coerce")
            part = part.assign(value=numbers).dropna(subset=["value"])
            parts.append(part.drop_duplicates(keys, keep="last")[columns])
            continue
        joined = joined_values(part, keys, "value").rename("value").reset_index()
        if kind == "flag":  # checked where its row exists, unchecked where the rater answered the task: nominal
            joined = _flags(joined, coverage, text=not coded)
        parts.append(joined[columns])
    if not parts:
        return pd.DataFrame(columns=columns)
    if coded:
        out = _joined_coded(parts)
    else:
        out = pd.concat(parts, ignore_index=True).astype(dict.fromkeys(words, str))
    on_lines = (out["group"] == LINE_GROUP).to_numpy()
    if on_lines.any():
        out["value"] = out["value"].astype(object)
        verdicts = out.loc[on_lines, "value"]
        out.loc[on_lines, "value"] = np.where(verdicts.isin(LINE_FLAGS), verdicts, REST)
    return out


def _joined_coded(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """``parts`` as one frame with the :data:`_CODED` words as categories, as a join of the parts
    made categories gives them (a column of one category in every part stays it; otherwise its
    categories are the words used, sorted), without the join's column of text per row between
    (at 100,000 tasks the tick box's units and the ratings are 800,000 rows)."""
    coded = {}
    for column in _CODED:
        dtypes = {part[column].dtype for part in parts}
        one = len(dtypes) == 1 and isinstance(next(iter(dtypes)), pd.CategoricalDtype)
        if not one:
            used = sorted(set().union(*(_used_words(part[column]) for part in parts)))
            coded[column] = pd.CategoricalDtype(pd.Index(used, dtype=str))
    parts = [part.astype(coded) for part in parts] if coded else parts
    return pd.concat(parts, ignore_index=True)


def _used_words(column: pd.Series) -> set[str]:
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = np.unique(column.cat.codes.to_numpy())
        return {str(word) for word in column.cat.categories[codes[codes >= 0]]}
    return {str(word) for word in pd.unique(column.dropna())}


def _marked(base: pd.DataFrame, hits: pd.DataFrame) -> np.ndarray:
    """For each (task_id, rater) row of ``base``: is it among ``hits``' (task_id, rater)?"""
    found = base[["task_id", "rater"]].merge(
        hits[["task_id", "rater"]].drop_duplicates().assign(_hit=True), on=["task_id", "rater"], how="left"
    )
    return found["_hit"].fillna(False).to_numpy(dtype=bool)


def _flags(checked: pd.DataFrame, coverage: pd.DataFrame, *, text: bool = True) -> pd.DataFrame:
    """A tick box's units: every task and rater who answered it (``coverage``), checked where the
    rater ticked it. Its rows exist only where it was ticked: units on the tasks somebody ticked
    alone left out every task nobody ticked, so the share of tasks with the box ticked came out as
    its share among those tasks (0.86 against 0.34 on a project where a third of the answers ticked
    it), and the judges' agreement on it was measured without the tasks all agreed on. ``text``:
    the item, group and kind as text, else as the units' categories (a byte a row)."""
    frames = []
    base = coverage.reset_index(drop=True)
    for (item, group), rows in checked.groupby(["item", "group"], sort=False):
        hit = _marked(base, rows)
        frames.append(_units(base, item, group, "nominal", hit, (FLAG_UNCHECKED, FLAG_CHECKED)))
    if not frames:
        return checked
    units = pd.concat(frames, ignore_index=True)
    return units.astype(dict.fromkeys(["item", "group", "kind", "value"] if text else ["value"], str))


def _units(
    base: pd.DataFrame, item: str, group: str, kind: str, hit: np.ndarray, words: tuple[str, str]
) -> pd.DataFrame:
    """``base`` (task_id, rater) as yes/no units of ``item``: ``words[1]`` where ``hit``, else
    ``words[0]``. The words are categories, a byte a row: a column of text repeats them on every
    row (the units are one per rater and task, hundreds of thousands at 100,000 tasks)."""
    same = lambda text: pd.Categorical.from_codes(np.zeros(len(base), dtype=np.int8), [text])  # noqa: E731
    value = pd.Categorical.from_codes(hit.astype(np.int8), list(words))
    return base.assign(item=same(item), group=same(group), kind=same(kind), value=value)


_ROW_COLUMNS = ["task_id", "item", "group", "kind", "rater", "value"]


def _span_rows(spans: pd.DataFrame, coverage: pd.DataFrame) -> pd.DataFrame:
    """Yes/no units from spans: any span on the task, and a span of each label."""
    frames = [group.astype(dict.fromkeys([*_CODED, "value"], str)) for group in _span_groups(spans, coverage)]
    return pd.concat(frames, ignore_index=True)[_ROW_COLUMNS] if frames else pd.DataFrame(columns=_ROW_COLUMNS)


def _span_groups(spans: pd.DataFrame, coverage: pd.DataFrame) -> Iterator[pd.DataFrame]:
    """The rows of :func:`_span_rows`, one group (any span, then each label) at a time: a group's
    rows are one per rater and task, so all of them at once are several times the spans."""
    if spans.empty:
        return
    # every task and rater who answered it: a task nobody marked a span on is a unit all agree on
    base = coverage.reset_index(drop=True)
    base = base.assign(rater=base["rater"].astype("category"))  # a byte a row in every group
    # each (task, rater) pair as one integer, a span's looked up among the base's: a join of every
    # pair with a column per label was 70 MiB at 100,000 tasks
    tasks, _ = pd.factorize(pd.concat([base["task_id"], spans["task_id"]], ignore_index=True))
    width = len(base["rater"].cat.categories) + 1  # a rater not among them has code -1: no pair's
    codes = pd.Categorical(spans["rater"], categories=base["rater"].cat.categories).codes
    base_pairs = tasks[: len(base)] * width + base["rater"].cat.codes.to_numpy(dtype=np.int64)
    span_pairs = tasks[len(base) :] * width + codes.astype(np.int64)
    labels = spans["label"].astype(str)  # a span without a label counts in the "any" group alone
    spans = None  # read: its pairs and labels are all the groups need
    yield _span_group(base, SPANS_ANY, np.isin(base_pairs, span_pairs))
    for label in sorted({str(label) for label in labels.dropna().unique()}):
        if label in ("nan", "None"):
            continue
        yield _span_group(base, f"spans: {label}", np.isin(base_pairs, span_pairs[(labels == label).to_numpy()]))


def _span_group(base: pd.DataFrame, name: str, hit: np.ndarray) -> pd.DataFrame:
    """``base`` (task_id, rater) as the yes/no units of the span group ``name``."""
    return _units(base, name, name, "nominal", hit, (NOT_MARKED, MARKED))


def answer_rows(
    judgments: pd.DataFrame,
    spans: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None = None,
    *,
    gold: bool = False,
    with_spans: bool = True,
) -> pd.DataFrame:
    """Every rater's answers as long rows ``task_id, item, group, kind, rater, value`` (the units
    of :func:`answer_groups`; raters are humans, model sources and, with ``gold``, ``gold``).
    ``with_spans=False`` leaves out the yes/no units made from spans (the rated items alone)."""
    return usable_answer_rows(
        usable_rows(judgments, gold), usable_rows(spans, gold), schema_meta, with_spans=with_spans
    )


def usable_answer_rows(
    rows_j: pd.DataFrame, rows_s: pd.DataFrame, schema_meta: Mapping[str, Any] | None = None, *, with_spans: bool = True
) -> pd.DataFrame:
    """:func:`answer_rows` of rows already chosen and named by :func:`usable_rows`: a caller that
    reads them again keeps one copy of them, not two."""
    coverage = pd.concat([rows_j[["task_id", "rater"]], rows_s[["task_id", "rater"]]]).drop_duplicates()
    items = _item_rows(rows_j, schema_meta or {}, coverage)
    return pd.concat([items, _span_rows(rows_s, coverage)], ignore_index=True) if with_spans else items


def answer_pieces(
    judgments: pd.DataFrame, spans: pd.DataFrame, schema_meta: Mapping[str, Any] | None = None, *, gold: bool = False
) -> Iterator[pd.DataFrame]:
    """:func:`answer_rows` a piece at a time: the rated items' rows, then each span group's (any
    span, then each label), each as text; a caller that reads one group at a time never holds every
    group's rows at once (at 50,000 tasks with a tick box and three labels, 250 MiB)."""
    rows_j, rows_s = usable_rows(judgments, gold), usable_rows(spans, gold)
    coverage = pd.concat([rows_j[["task_id", "rater"]], rows_s[["task_id", "rater"]]]).drop_duplicates()
    yield _item_rows(rows_j, schema_meta or {}, coverage)
    groups, rows_j, rows_s = _span_groups(rows_s, coverage), None, None  # each let go once read
    for group in groups:
        yield group.astype(dict.fromkeys([*_CODED, "value"], str))[_ROW_COLUMNS]


def answer_groups(
    judgments: pd.DataFrame,
    spans: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None = None,
    *,
    humans: tuple[pd.DataFrame, pd.DataFrame] | None = None,
) -> list[GroupAnswers]:
    """The groups where at least one judge and two humans answered. ``humans`` (judgments, spans
    of another project with the same task ids) replaces the project's own human rows: StorySumm's
    judges against the evaluation-interface annotators."""
    meta = schema_meta or {}
    judgments, spans = answer_columns(judgments), answer_columns(spans)
    sources = prediction_sources(judgments, spans)
    if humans is not None:
        humans = (answer_columns(humans[0]), answer_columns(humans[1]))
        is_model_j = judgments["source"].fillna(HUMAN_SOURCE).astype(str).str.startswith(MODEL_SOURCE_PREFIX)
        is_model_s = spans["source"].fillna(HUMAN_SOURCE).astype(str).str.startswith(MODEL_SOURCE_PREFIX)
        judgments = pd.concat([judgments[is_model_j], humans[0]], ignore_index=True)
        spans = pd.concat([spans[is_model_s], humans[1]], ignore_index=True)
    rows_j, rows_s = usable_rows(judgments), usable_rows(spans)
    coverage = pd.concat([rows_j[["task_id", "rater"]], rows_s[["task_id", "rater"]]]).drop_duplicates()
    # each table's anchors, then a rater's first of each task (the judgments' before the spans')
    anchors = pd.concat([_anchors(frame, sources) for frame in (rows_j, rows_s)], ignore_index=True)
    anchors = anchors.drop_duplicates(["task_id", "rater"])
    # the pieces hold the rows they read, and each lets them go once read (the rows are copies, and
    # the prediction ids' sources a dict of every prediction: about 65 MiB at 100,000 tasks)
    pieces, rows_j, rows_s, sources = _pieces(rows_j, rows_s, meta, coverage), None, None, None
    out = []
    for piece in pieces:
        for (group, kind), rows in piece.groupby(["group", "kind"], sort=False):
            answers = _group_answers(str(group), str(kind), rows, anchors)
            if answers is not None:
                out.append(answers)
        piece = rows = None  # or the last piece's rows live on while the next piece is made
    return out


def _pieces(
    judgments: pd.DataFrame, spans: pd.DataFrame, meta: Mapping[str, Any], coverage: pd.DataFrame
) -> Iterator[pd.DataFrame]:
    """The rated items' rows, then each span group's: one piece at a time, never all of them (at
    100,000 tasks the span groups alone were millions of rows). A generator, not a chain over a
    list: the chain's list held the items' rows through every span group."""
    yield _item_rows(judgments, meta, coverage, coded=True)
    groups, judgments, spans = _span_groups(spans, coverage), None, None
    yield from groups


def _group_answers(group: str, kind: str, rows: pd.DataFrame, anchors: pd.DataFrame) -> GroupAnswers | None:
    """One group's :class:`GroupAnswers`; None without a judge and two humans."""
    # the names of the raters present, not a text per row (a category column's rows, 60 MiB at
    # 100,000 tasks, made text only to be told apart)
    names = {str(name) for name in pd.unique(rows["rater"])}
    judges = sorted(name for name in names if name.startswith(MODEL_SOURCE_PREFIX))
    people = sorted(name for name in names if not name.startswith(MODEL_SOURCE_PREFIX))
    if not judges or len(people) < 2:
        return None
    values = (
        rows.drop_duplicates(["task_id", "item", "rater"], keep="last")
        .set_index(["task_id", "item", "rater"])["value"]
        .unstack("rater")
    )
    values = values.reindex(columns=[*people, *judges])
    anchored = pd.DataFrame(None, index=values.index, columns=people, dtype=object)
    if not anchors.empty:
        mine = anchors[anchors["rater"].isin(people)].set_index(["task_id", "rater"])["anchored_to"]
        per_task = mine.unstack("rater").reindex(columns=people)
        anchored = per_task.reindex(values.index.get_level_values("task_id")).set_axis(values.index)
    return GroupAnswers(group, kind, values, people, judges, anchored)


# -- calibration ------------------------------------------------------------------------------


def _majority(matrix: np.ndarray, kind: str, n_categories: int = 0) -> np.ndarray:
    """Per unit (row): the strict majority of the codes (median of the ratings); NaN with fewer
    than two answers or no strict majority."""
    present = ~np.isnan(matrix)
    count = present.sum(axis=1)
    out = np.full(len(matrix), np.nan)
    if kind == "ordinal":
        enough = count >= 2
        if enough.any():
            out[enough] = np.nanmedian(matrix[enough], axis=1)
        return out
    if n_categories == 0 or not len(matrix):
        return out
    tally = np.zeros((len(matrix), n_categories))
    rows, cols = np.nonzero(present)
    np.add.at(tally, (rows, matrix[rows, cols].astype(np.int64)), 1)
    top = tally.argmax(axis=1)
    best = tally[np.arange(len(matrix)), top]
    winners = (count >= 2) & (2 * best > count)
    out[winners] = top[winners]
    return out


def _independent(humans: np.ndarray, anchored: np.ndarray, answered: np.ndarray) -> tuple[np.ndarray, float, bool]:
    """The human answers on the units the judge answered, without those anchored to the judge when
    enough units keep two answers. Returns (answers, share anchored, every answer kept)."""
    block = np.where(answered[:, None], humans, np.nan)
    present = ~np.isnan(block)
    anchored = anchored & present
    n_answers = int(present.sum())
    share = float(anchored.sum() / n_answers) if n_answers else 0.0
    if not anchored.any():
        return block, share, True
    independent = np.where(anchored, np.nan, block)
    if int(((~np.isnan(independent)).sum(axis=1) >= 2).sum()) >= MIN_INDEPENDENT_UNITS:
        return independent, share, False
    return block, share, True


def _disagreements(
    judge: np.ndarray, humans: np.ndarray, kind: str, index: pd.Index, names: list[str], label: Any
) -> pd.DataFrame:
    present = ~np.isnan(humans)
    n = present.sum(axis=1)
    shared = ~np.isnan(judge) & (n >= 1)
    if not shared.any():
        return pd.DataFrame()
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a unit nobody else answered: NaN, as meant
        if kind == "ordinal":
            strength = np.abs(judge - np.nanmean(np.where(present, humans, np.nan), axis=1))
            order = strength
        else:
            differ = (humans != judge[:, None]) & present
            strength = differ.sum(axis=1) / n
            order = strength + differ.sum(axis=1) / 1000.0  # unanimous against the judge first, more humans first
    order = np.where(shared & (strength > 0), order, -np.inf)
    chosen = np.argsort(-order, kind="stable")[:MAX_DISAGREEMENTS]
    chosen = chosen[np.isfinite(order[chosen])]
    if not len(chosen):
        return pd.DataFrame()
    answers = [
        "; ".join(f"{names[k]}: {label(humans[u, k])}" for k in range(len(names)) if present[u, k]) for u in chosen
    ]
    return pd.DataFrame(
        {
            "task_id": [index[u][0] for u in chosen],
            "item": [index[u][1] for u in chosen],
            "judge_answer": [label(judge[u]) for u in chosen],
            "human_answers": answers,
            "disagreement": strength[chosen].astype(float),
        }
    )


def _fmt(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _encoded(group: GroupAnswers) -> tuple[np.ndarray, np.ndarray, Any]:
    """(units x raters numbers, categories or None, label of a number): ratings as numbers,
    choices as category codes."""
    if group.kind == "ordinal":
        values = group.values.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
        return values, None, _fmt
    cells = group.values.to_numpy(dtype=object)
    present = ~pd.isna(cells)
    codes, categories = pd.factorize(cells[present].astype(str), sort=True)
    values = np.full(cells.shape, np.nan)
    values[present] = codes
    names = np.asarray(categories, dtype=object)
    return values, names, lambda code: str(names[int(code)])


@dataclass
class _JudgeBlock:
    """One judge's place in the comparison matrix: its block starts at column ``start`` (the judge,
    then the humans it is compared with, then their majority); ``humans`` is that block's human
    answers (units x humans), ``anchored_share`` and ``all_answers`` what :func:`_independent` said."""

    start: int
    humans: np.ndarray
    anchored_share: float
    all_answers: bool


def _judge_answers(group: GroupAnswers, judge_values: np.ndarray, n_categories: int) -> dict[str, np.ndarray]:
    """Each judge's answers (one number per unit) by name; with two or more judges, their majority
    last, as one more judge."""
    columns = {judge: judge_values[:, i] for i, judge in enumerate(group.judges)}
    if len(group.judges) >= 2:
        columns[JUDGE_MAJORITY] = _majority(judge_values, group.kind, n_categories)
    return columns


def _comparison_matrix(
    group: GroupAnswers,
    humans: np.ndarray,
    columns: Mapping[str, np.ndarray],
    judge_values: np.ndarray,
    n_categories: int,
) -> tuple[np.ndarray, dict[str, _JudgeBlock], int]:
    """Every column an alpha compares, side by side, so that all pairs share one bootstrap: one
    block per judge (the judge, its humans, their majority), then the judges' own answers for the
    judge-judge pairs. A judge's humans are the independent answers when enough units keep two
    (:func:`_independent`); the majority of judges is anchored to any judge. Returns the matrix,
    each judge's block and the column where the judges' own answers start."""
    anchored_to = group.anchored.to_numpy(dtype=object)
    blocks: list[np.ndarray] = []
    layout: dict[str, _JudgeBlock] = {}
    for judge, answers in columns.items():
        own = np.isin(anchored_to, group.judges) if judge == JUDGE_MAJORITY else anchored_to == judge
        block, share, used_all = _independent(humans, own, ~np.isnan(answers))
        start = sum(b.shape[1] for b in blocks)
        blocks.append(np.column_stack([answers, block, _majority(block, group.kind, n_categories)]))
        layout[judge] = _JudgeBlock(start, block, share, used_all)
    raw_start = sum(b.shape[1] for b in blocks)
    blocks.append(judge_values)
    return np.column_stack(blocks), layout, raw_start


def _matrix_codes(matrix: np.ndarray, kind: str, n_categories: int) -> tuple[np.ndarray, np.ndarray]:
    """(codes, domain) for :func:`pair_alphas`: ratings coded by their distinct values, categories
    already codes (-1 where missing) over all the group's categories."""
    if kind == "ordinal":
        encoded = value_codes(matrix)
        return encoded.codes, encoded.values
    return np.where(np.isnan(matrix), -1, matrix).astype(np.int64), np.arange(n_categories, dtype=float)


def _comparison_pairs(
    group: GroupAnswers, layout: Mapping[str, _JudgeBlock], raw_start: int
) -> tuple[list[tuple[int, int]], list[tuple[str, str, str, str]]]:
    """The column pairs to compare and what each is (judge, comparison, rater a, rater b): per
    judge, the judge with each human and with the human majority, and every pair of its humans
    (the ceiling); then every pair of judges."""
    n_h = len(group.humans)
    pairs: list[tuple[int, int]] = []
    roles: list[tuple[str, str, str, str]] = []  # judge, comparison, a, b
    for judge, place in layout.items():
        s = place.start
        for k, human in enumerate(group.humans):
            pairs.append((s, s + 1 + k))
            roles.append((judge, "judge – human", judge, human))
        pairs.append((s, s + 1 + n_h))
        roles.append((judge, "judge – human majority", judge, "human majority"))
        for k in range(n_h):
            for m in range(k + 1, n_h):
                pairs.append((s + 1 + k, s + 1 + m))
                roles.append((judge, "human – human", group.humans[k], group.humans[m]))
    for i, a in enumerate(group.judges):
        for j in range(i + 1, len(group.judges)):
            pairs.append((raw_start + i, raw_start + j))
            roles.append(("", "judge – judge", a, group.judges[j]))
    return pairs, roles


def _pairs_table(
    group: GroupAnswers, roles: Sequence[tuple[str, str, str, str]], result: PairAlphas, n_boot: int
) -> pd.DataFrame:
    """One row per compared pair: its alpha, units and bootstrap interval (NaN without bootstrap)."""
    table = pd.DataFrame(roles, columns=["judge", "comparison", "rater_a", "rater_b"])
    table["alpha"] = result.values
    table["n_units"] = result.n_units
    cis = [interval(result.replicates[:, p]) if n_boot else (np.nan, np.nan) for p in range(len(roles))]
    table["ci_low"], table["ci_high"] = [c[0] for c in cis], [c[1] for c in cis]
    table.insert(0, "group", group.group)
    return table


def _coverage_summary(block: np.ndarray, answered: np.ndarray, min_items_per_annotator: int) -> dict[str, Any]:
    """How many units a judge can be compared on: those it answered, those where two humans
    answered too, and the alt-test's n (the most units one annotator shares with another and the judge)."""
    answered_humans = ~np.isnan(block[answered])
    shared = answered_humans.sum(axis=1) >= 2  # units the alphas and the alt-test can use
    return {
        "n_units": int(answered.sum()),
        "n_shared_units": int(shared.sum()),
        # the most units one annotator shares with another annotator and the judge (the alt-test's n)
        "max_annotator_units": int((answered_humans & shared[:, None]).sum(axis=0).max(initial=0)),
        "alt_test_needs": min_items_per_annotator,
        "n_humans": int((~np.isnan(block)).any(axis=0).sum()),
    }


def _alpha_summary(table: pd.DataFrame, result: PairAlphas, mine: pd.Index) -> dict[str, Any]:
    """A judge's alphas: with the human majority, and the mean judge-human against the mean
    human-human alpha (the ceiling), each with its interval, and the interval of their difference
    (both means come from the same bootstrap draws)."""
    comparison = table.loc[mine, "comparison"]
    versus = [int(i) for i in comparison.index[comparison == "judge – human"]]
    ceiling = [int(i) for i in comparison.index[comparison == "human – human"]]
    to_majority = int(comparison.index[comparison == "judge – human majority"][0])
    judge_mean, judge_reps = mean_of_pairs(result, versus)
    human_mean, human_reps = mean_of_pairs(result, ceiling)
    judge_ci, human_ci = interval(judge_reps), interval(human_reps)
    difference = interval(judge_reps - human_reps)
    return {
        "alpha_with_majority": table.at[to_majority, "alpha"],
        "majority_ci_low": table.at[to_majority, "ci_low"],
        "majority_ci_high": table.at[to_majority, "ci_high"],
        "judge_human_alpha": judge_mean,
        "judge_ci_low": judge_ci[0],
        "judge_ci_high": judge_ci[1],
        "human_human_alpha": human_mean,
        "human_ci_low": human_ci[0],
        "human_ci_high": human_ci[1],
        "difference_ci_low": difference[0],
        "difference_ci_high": difference[1],
        "intervals_overlap": bool(judge_ci[0] <= human_ci[1] and human_ci[0] <= judge_ci[1]),
    }


def _alt_test_summary(tests: Mapping[float, AltTestResult], epsilons: Sequence[float]) -> dict[str, Any]:
    """The alt-test at the largest epsilon (annotators tested, rho), then omega and the verdict at
    each epsilon."""
    main = tests[max(epsilons)] if epsilons else None
    summary: dict[str, Any] = {
        "n_annotators_tested": len(main.annotators) if main else 0,
        "rho": main.rho if main else np.nan,
    }
    for eps, test in tests.items():
        summary[f"omega_{eps:g}"] = test.omega
        summary[f"passes_{eps:g}"] = test.passed
    return summary


def calibrate_group(
    group: GroupAnswers,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    epsilons: Sequence[float] = EPSILONS,
    min_items_per_annotator: int = 30,
) -> list[JudgeCalibration]:
    """Every judge of the group (and the majority of judges, with two or more) against the humans."""
    values, categories, label = _encoded(group)
    n_h = len(group.humans)
    n_categories = 0 if categories is None else len(categories)
    humans, judge_values = values[:, :n_h], values[:, n_h:]
    columns = _judge_answers(group, judge_values, n_categories)
    matrix, layout, raw_start = _comparison_matrix(group, humans, columns, judge_values, n_categories)
    codes, domain = _matrix_codes(matrix, group.kind, n_categories)
    pairs, roles = _comparison_pairs(group, layout, raw_start)
    level = "ordinal" if group.kind == "ordinal" else "nominal"
    result = pair_alphas(codes, domain, pairs, level, n_boot=n_boot, seed=seed)
    table = _pairs_table(group, roles, result, n_boot)
    scoring = "neg_rmse" if group.kind == "ordinal" else "accuracy"
    out = []
    for judge, answers in columns.items():
        mine = table.index[table["judge"] == judge]
        block = layout[judge].humans
        answered = ~np.isnan(answers)
        tests = alt_tests(
            pd.DataFrame(block[answered], columns=group.humans),
            pd.Series(answers[answered]),
            epsilons=epsilons,
            scoring=scoring,
            min_items_per_annotator=min_items_per_annotator,
        )
        summary = {
            "group": group.group,
            "kind": group.kind,
            "judge": judge,
            **_coverage_summary(block, answered, min_items_per_annotator),
            **_alpha_summary(table, result, mine),
            "anchored_share": layout[judge].anchored_share,
            "all_answers": layout[judge].all_answers,
            **_alt_test_summary(tests, epsilons),
        }
        pairs_table = table.loc[mine]
        out.append(
            JudgeCalibration(
                group.group,
                group.kind,
                judge,
                pairs_table[pairs_table["n_units"] > 0].reset_index(drop=True),
                summary,
                tests,
                _disagreements(answers, block, group.kind, group.values.index, group.humans, label),
            )
        )
    if len(group.judges) >= 2 and out:
        between = table[table["comparison"] == "judge – judge"].reset_index(drop=True)
        out[-1].summary["judges_alpha"] = float(between["alpha"].mean())
        out[-1].pairs = pd.concat([out[-1].pairs, between], ignore_index=True)
    return out


def calibrate(
    groups: Sequence[GroupAnswers], *, n_boot: int = 1000, seed: int = 0, epsilons: Sequence[float] = EPSILONS
) -> list[JudgeCalibration]:
    return [c for group in groups for c in calibrate_group(group, n_boot=n_boot, seed=seed, epsilons=epsilons)]
