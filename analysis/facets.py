"""Facets and filters over the tidy tables: ``--by FIELD[,FIELD]`` and ``--where EXPR``.

A *field* is a column of the ``tasks`` table (the task's data: ``model``, ``round``,
``split``, ``group``...) or an *annotator field*, a column of the judgment and span rows
(:data:`ANNOTATOR_FIELDS`: ``annotator``, ``source``). A *cell* is one combination of values of
the ``by`` fields; every table and figure of a faceted report is computed once per cell.

``where`` is a small expression language, parsed with Python's own parser (``ast``) and then
interpreted node by node over the table's columns: nothing is ever evaluated as Python. Only
these forms are accepted (anything else is a :class:`FacetError` naming what is not allowed)::

    field == 'text'     field != 3     field < 2.5     field <= 1     field > 0    field >= 1
    field in ('a', 'b')     field not in (1, 2)
    EXPR and EXPR     EXPR or EXPR     not EXPR     ( EXPR )

A field name that is not a Python identifier is written in backticks (`` `story-id` == 3 ``).
A number compares with the field read as a number (``round == 1`` matches ``1``, ``1.0`` and
``"1"``); text compares with the field read as text. A missing value is equal to nothing and
different from everything. A name that is not a field raises :class:`FacetError` listing the
fields there are.

Task fields decide which tasks are kept; annotator fields which judgments and spans (a task
stays as long as its own fields allow it). Conditions are combined with three-valued logic, so
``model != 'human' and annotator != 'rater_2'`` keeps the machine summaries' tasks and drops
rater_2's answers on them.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from judgelab.analysis.grouped import RowGroups

ANNOTATOR_FIELDS = ("annotator", "source")
MISSING_LABEL = "(missing)"
TOTAL_LABEL = "(all)"
_BACKTICK = re.compile(r"`([^`]+)`")
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_SYMBOL = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.In: "in"}
_SYMBOL[ast.NotIn] = "not in"


class FacetError(ValueError):
    """A ``--by`` or ``--where`` that names an unknown field or is not in the expression language."""


# -- a study's cut ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Cut:
    """How a study is analysed: one cell per combination of the ``by`` fields, only the rows
    ``where`` keeps, plus an ``(all)`` cell pooling every cell when ``total``. ``origin`` says who
    chose it, in words a report can quote ("BASSE's published analysis").

    A published data set's cut comes with it (``judgelab load`` records it beside the tables); a
    team's own project has none unless the team keeps one (``judgelab report --by/--where
    --keep-cut``), and is reported whole.

    >>> Cut.from_json(Cut(("language", "round"), "model != 'human'", origin="BASSE").to_json())
    Cut(by=('language', 'round'), where="model != 'human'", total=False, origin='BASSE')
    """

    by: tuple[str, ...] = ()
    where: str | None = None
    total: bool = False
    origin: str = ""

    def __post_init__(self) -> None:
        if self.where is not None and self.where.strip():
            parse_where(self.where)  # a FacetError names what is wrong with it

    @property
    def is_whole(self) -> bool:
        return not self.by and not (self.where or "").strip()

    def to_json(self) -> dict[str, Any]:
        return {"by": list(self.by), "where": self.where, "total": self.total, "origin": self.origin}

    @classmethod
    def from_json(cls, value: Any) -> Cut:
        """A cut as :meth:`to_json` writes it; anything else is a :class:`FacetError`."""
        if not isinstance(value, dict):
            raise FacetError(f"a cut is an object with by, where, total and origin, not {type(value).__name__}")
        by, where = value.get("by") or [], value.get("where")
        if not isinstance(by, list) or not all(isinstance(name, str) for name in by):
            raise FacetError(f"a cut's 'by' is a list of field names, not {by!r}")
        if where is not None and not isinstance(where, str):
            raise FacetError(f"a cut's 'where' is an expression in text, not {where!r}")
        return cls(tuple(by), where or None, bool(value.get("total")), str(value.get("origin") or ""))


# -- the expression language -----------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    field: str
    op: str  # ==, !=, <, <=, >, >=, in, not in
    value: object  # a number, a string, or a tuple of them for in / not in

    def __str__(self) -> str:
        value = "(" + ", ".join(map(repr, self.value)) + ")" if isinstance(self.value, tuple) else repr(self.value)
        return f"{self.field} {self.op} {value}"


@dataclass(frozen=True)
class Logic:
    op: str  # and, or, not
    terms: tuple[Expression, ...]

    def __str__(self) -> str:
        if self.op == "not":
            return f"not ({self.terms[0]})"
        return f" {self.op} ".join(f"({term})" if isinstance(term, Logic) else str(term) for term in self.terms)


Expression = Comparison | Logic


def parse_where(text: str) -> Expression:
    """The parsed form of a ``--where`` expression (see the module docstring).

    >>> print(parse_where("model != 'human' and round in (0, 1)"))
    model != 'human' and round in (0, 1)
    """
    source = str(text).strip()
    if not source:
        raise FacetError("empty --where expression")
    names: dict[str, str] = {}

    def placeholder(match: re.Match[str]) -> str:
        name = f"__field_{len(names)}__"
        names[name] = match.group(1)
        return name

    prepared = _BACKTICK.sub(placeholder, source)
    try:
        tree = ast.parse(prepared, mode="eval")
    except SyntaxError as exc:
        raise FacetError(f"--where {source!r}: not a valid expression ({exc.msg})") from None
    return _node(tree.body, source, names)


def _node(node: ast.AST, source: str, names: Mapping[str, str]) -> Expression:
    if isinstance(node, ast.BoolOp):
        op = "and" if isinstance(node.op, ast.And) else "or"
        return Logic(op, tuple(_node(value, source, names) for value in node.values))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return Logic("not", (_node(node.operand, source, names),))
    if isinstance(node, ast.Compare):
        if len(node.ops) != 1:
            raise FacetError(f"--where {source!r}: one comparison at a time (write 'a <= x and x <= b')")
        if not isinstance(node.left, ast.Name):
            raise FacetError(f"--where {source!r}: a comparison starts with a field name, e.g. model == 'gpt4o'")
        op_type = type(node.ops[0])
        if op_type not in _SYMBOL:
            raise FacetError(f"--where {source!r}: operator not allowed (use == != < <= > >= in, not in)")
        name = names.get(node.left.id, node.left.id)
        value = _literal(node.comparators[0], source, op_type in (ast.In, ast.NotIn))
        return Comparison(name, _SYMBOL[op_type], value)
    what = type(node).__name__
    raise FacetError(f"--where {source!r}: {what} is not allowed; use comparisons joined by and, or, not")


def _literal(node: ast.AST, source: str, sequence: bool) -> object:
    if sequence:
        if not isinstance(node, ast.Tuple | ast.List):
            raise FacetError(f"--where {source!r}: 'in' needs a list of values, e.g. split in ('val', 'test')")
        return tuple(_literal(element, source, False) for element in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        node = ast.Constant(-node.operand.value) if _is_number(node.operand.value) else node
    if isinstance(node, ast.Constant) and (isinstance(node.value, str) or _is_number(node.value)):
        return node.value
    if isinstance(node, ast.Name):
        raise FacetError(f"--where {source!r}: {node.id} on the right of a comparison: quote text values ('{node.id}')")
    raise FacetError(f"--where {source!r}: values must be numbers or quoted text")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def expression_fields(expression: Expression) -> set[str]:
    """Every field an expression names."""
    if isinstance(expression, Comparison):
        return {expression.field}
    return set().union(*(expression_fields(term) for term in expression.terms))


def evaluate(expression: Expression, frame: pd.DataFrame) -> pd.Series:
    """The expression on each row of ``frame`` as a nullable boolean Series: ``<NA>`` where a
    comparison names a column ``frame`` does not have (three-valued logic)."""
    if isinstance(expression, Logic):
        parts = [evaluate(term, frame) for term in expression.terms]
        if expression.op == "not":
            return ~parts[0]
        result = parts[0]
        for part in parts[1:]:
            result = (result & part) if expression.op == "and" else (result | part)
        return result
    if expression.field not in frame.columns:
        return pd.Series(pd.NA, index=frame.index, dtype="boolean")
    column = frame[expression.field]
    return pd.Series(_compare(column, expression.op, expression.value), index=frame.index, dtype="boolean")


def _compare(column: pd.Series, op: str, value: object) -> np.ndarray:
    values = value if isinstance(value, tuple) else (value,)
    present = column.notna().to_numpy()
    if op in ("in", "not in"):
        hits = np.zeros(len(column), dtype=bool)
        for one in values:
            hits |= _compare(column, "==", one)
        return ~hits if op == "not in" else hits
    if _is_number(value):
        numbers = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            result = _COMPARE[_OPS[op]](numbers, float(value))
        known = ~np.isnan(numbers)
    else:
        texts = column.map(cell_text).to_numpy(dtype=object)
        known = present
        result = np.array([_COMPARE[_OPS[op]](t, value) if k else False for t, k in zip(texts, known, strict=True)])
    if op == "!=":
        return np.where(known, result, True).astype(bool)
    return np.where(known, result, False).astype(bool)


_OPS = {symbol: node for node, symbol in _SYMBOL.items()}


def cell_text(value: object) -> str:
    """A field's value as text: ``1.0`` -> ``"1"``, ``None`` -> ``""``."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# -- fields and filtering --------------------------------------------------------------------


def task_fields(tasks: pd.DataFrame) -> list[str]:
    """The fields a task table offers (its columns)."""
    return [str(column) for column in tasks.columns]


def check_fields(names: Iterable[str], tasks: pd.DataFrame, what: str) -> None:
    """Raise :class:`FacetError` naming the first field that is neither a task nor an annotator field."""
    known = set(task_fields(tasks)) | set(ANNOTATOR_FIELDS)
    for name in names:
        if name not in known:
            listed = ", ".join(sorted(set(task_fields(tasks)) - {"project", "task_id"}))
            raise FacetError(
                f"{what}: unknown field {name!r}; task fields: {listed or '(none)'}; annotator fields: "
                f"{', '.join(ANNOTATOR_FIELDS)}"
            )


def _with_task_fields(rows: pd.DataFrame, tasks: pd.DataFrame, names: set[str]) -> pd.DataFrame:
    """``rows`` (judgments or spans) with the task fields ``names`` joined on (project, task_id)."""
    wanted = [name for name in names if name in tasks.columns and name not in rows.columns]
    if not wanted or rows.empty:
        return rows
    keys = tasks[["project", "task_id", *wanted]].drop_duplicates(subset=["project", "task_id"])
    return rows.merge(keys, on=["project", "task_id"], how="left")


def filter_tables(tables: Mapping[str, pd.DataFrame], expression: Expression | None) -> dict[str, pd.DataFrame]:
    """``tables`` (``tasks``, ``judgments``, ``spans``; others passed through) with the rows the
    expression rejects left out: tasks by their own fields, judgments and spans by their
    annotator fields and their task's fields."""
    out = dict(tables)
    if expression is None:
        return out
    tasks = tables["tasks"]
    check_fields(expression_fields(expression), tasks, "--where")
    names = expression_fields(expression)
    task_mask = evaluate(expression, tasks).fillna(True).to_numpy(dtype=bool)
    out["tasks"] = tasks[task_mask]
    kept_tasks = out["tasks"][["project", "task_id"]]
    for name in ("judgments", "spans"):
        rows = tables.get(name)
        if rows is None or rows.empty:
            continue
        joined = _with_task_fields(rows.reset_index(drop=True), tasks, names)
        keep = evaluate(expression, joined).fillna(True).to_numpy(dtype=bool)
        if not tasks.empty:
            keep &= _in_tasks(rows, kept_tasks) | ~_in_tasks(rows, tasks[["project", "task_id"]])
        out[name] = rows[keep]
    return out


def empty_left_out(expression: Expression | None, tasks: pd.DataFrame, kept: pd.DataFrame) -> dict[str, int]:
    """For each task field the expression names: how many of the tasks it left out (``tasks``
    not in ``kept``, a filtered copy) have that field empty. A comparison with an empty field is
    false (``!=`` aside), so a filter drops such tasks without their value saying why.

    >>> tasks = pd.DataFrame({"project": 1, "task_id": [1, 2, 3], "model": ["a", None, "b"]})
    >>> where = parse_where("model == 'a'")
    >>> empty_left_out(where, tasks, filter_tables({"tasks": tasks}, where)["tasks"])
    {'model': 1}
    """
    if expression is None or tasks.empty:
        return {}
    left = tasks[~tasks.index.isin(kept.index)]
    counts = {}
    for name in sorted(expression_fields(expression) & set(tasks.columns)):
        empty = left[name].isna() | (left[name].astype(str).str.strip() == "")
        counts[name] = int(len(left.loc[empty, ["project", "task_id"]].drop_duplicates()))
    return counts


def _in_tasks(rows: pd.DataFrame, keys: pd.DataFrame) -> np.ndarray:
    index = pd.MultiIndex.from_frame(keys.astype(object))
    return pd.MultiIndex.from_frame(rows[["project", "task_id"]].astype(object)).isin(index)


# -- cells -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FacetCell:
    """One combination of values of the ``by`` fields (empty for the whole data), with its rows."""

    values: tuple[tuple[str, str], ...]
    tables: dict[str, pd.DataFrame] = field(compare=False, repr=False)
    # positions of the cell's judgment and span rows in the tables it was cut from (None: every row)
    rows: Mapping[str, np.ndarray] | None = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        """``language = es, round = 1`` (``all`` for the cell of every row)."""
        return ", ".join(f"{name} = {value}" for name, value in self.values) or "all"

    @property
    def short_label(self) -> str:
        """``es, 1``: the values alone (figure labels)."""
        return ", ".join(value for _, value in self.values) or "all"

    @property
    def is_total(self) -> bool:
        return any(value == TOTAL_LABEL for _, value in self.values)

    def columns(self) -> dict[str, str]:
        return dict(self.values)

    @cached_property
    def n_tasks(self) -> int:
        """The cell's distinct tasks (its tables do not change: counted once)."""
        tasks = self.tables["tasks"]
        if not tasks.empty:
            return int(len(tasks[["project", "task_id"]].drop_duplicates()))
        judgments = self.tables.get("judgments")
        if judgments is None or judgments.empty:
            return 0
        return int(judgments[["project", "task_id"]].drop_duplicates().shape[0])


def facet_cells(tables: Mapping[str, pd.DataFrame], by: Sequence[str], *, total: bool = False) -> list[FacetCell]:
    """One :class:`FacetCell` per combination of values of ``by`` present in the data (in natural
    order; a task without a value falls in ``(missing)``), plus an ``(all)`` cell when ``total``.
    Without ``by``, one cell with every row."""
    if not by:
        return [FacetCell((), dict(tables))]
    tasks = tables["tasks"]
    check_fields(by, tasks, "--by")
    task_by = [name for name in by if name in tasks.columns]
    row_by = [name for name in by if name not in tasks.columns]
    judgments = tables.get("judgments", pd.DataFrame())
    spans = tables.get("spans", pd.DataFrame())
    task_labels = _labels(tasks, task_by)
    row_values = {
        name: sorted(
            {cell_text(v) or MISSING_LABEL for frame in (judgments, spans) if name in frame for v in frame[name]},
            key=_natural,
        )
        for name in row_by
    }
    combos = sorted(set(map(tuple, task_labels.to_numpy().tolist())), key=lambda c: tuple(map(_natural, c)))
    task_codes = _combo_codes(task_labels, combos)
    row_codes = {  # each judgment and span row's task combination, found once for every cell
        name: _row_combo_codes(frame, tasks, task_codes)
        for name in ("judgments", "spans")
        if (frame := tables.get(name)) is not None and not frame.empty
    }
    cells = []
    for code, task_combo in enumerate(combos or [()]):
        for row_combo in _product([row_values[name] for name in row_by]):
            values = dict(zip(task_by, task_combo, strict=True)) | dict(zip(row_by, row_combo, strict=True))
            cells.append(_cell(tables, tasks, task_codes, row_codes, code, values, task_by, row_by))
    cells = [cell for cell in cells if cell.n_tasks]
    if total and len(cells) > 1:
        cells.append(FacetCell(tuple((name, TOTAL_LABEL) for name in by), dict(tables)))
    return cells


def _combo_codes(task_labels: pd.DataFrame, combos: list[tuple[str, ...]]) -> np.ndarray:
    """The index in ``combos`` of every task's combination of values."""
    if task_labels.shape[1] == 0:
        return np.zeros(len(task_labels), dtype=np.int64)
    index = {combo: code for code, combo in enumerate(combos)}
    return np.array([index[tuple(row)] for row in task_labels.to_numpy().tolist()], dtype=np.int64)


def _row_combo_codes(rows: pd.DataFrame, tasks: pd.DataFrame, task_codes: np.ndarray) -> np.ndarray:
    """The combination code of each row's task (-1 for a row whose task is not in ``tasks``)."""
    keys = pd.MultiIndex.from_frame(tasks[["project", "task_id"]].astype(object))
    position = keys.get_indexer(pd.MultiIndex.from_frame(rows[["project", "task_id"]].astype(object)))
    if not keys.is_unique:  # a task listed twice: take its first row
        first = ~keys.duplicated()
        position = pd.MultiIndex.from_frame(tasks.loc[first, ["project", "task_id"]].astype(object)).get_indexer(
            pd.MultiIndex.from_frame(rows[["project", "task_id"]].astype(object))
        )
        task_codes = task_codes[first]
    return np.where(position >= 0, task_codes[np.maximum(position, 0)], -1)


def _cell(
    tables: Mapping[str, pd.DataFrame],
    tasks: pd.DataFrame,
    task_codes: np.ndarray,
    row_codes: Mapping[str, np.ndarray],
    code: int,
    values: Mapping[str, str],
    task_by: Sequence[str],
    row_by: Sequence[str],
) -> FacetCell:
    out = dict(tables)
    positions = {
        name: np.arange(len(frame)) for name in ("judgments", "spans") if (frame := tables.get(name)) is not None
    }
    if task_by:
        out["tasks"] = tasks[task_codes == code]
        for name, codes in row_codes.items():
            out[name] = tables[name][codes == code]
            positions[name] = np.flatnonzero(codes == code)
    for name in ("judgments", "spans"):
        rows = out.get(name)
        if rows is None or rows.empty:
            continue
        mask = np.ones(len(rows), dtype=bool)
        for field_name in row_by:
            column = rows[field_name] if field_name in rows else pd.Series("", index=rows.index)
            mask &= (column.map(cell_text).replace("", MISSING_LABEL) == values[field_name]).to_numpy()
        out[name] = rows[mask]
        positions[name] = positions[name][mask]
    ordered = tuple((name, values[name]) for name in [*task_by, *row_by])
    return FacetCell(ordered, out, positions)


def cell_groups(cells: Sequence[FacetCell], tables: Mapping[str, pd.DataFrame]) -> RowGroups | None:
    """The cells (but an ``(all)`` cell) as :class:`analysis.grouped.RowGroups` of the judgment and
    span rows of ``tables``, the tables they were cut from: a row's group is its cell's position
    among them. ``None`` when a cell does not know its rows."""
    parts = [cell for cell in cells if not cell.is_total]
    if not parts or any(cell.rows is None for cell in parts):
        return None
    codes = {}
    for name in ("judgments", "spans"):
        frame = tables.get(name)
        if frame is None:
            continue
        codes[name] = np.full(len(frame), -1, dtype=np.int64)
        for number, cell in enumerate(parts):
            codes[name][cell.rows.get(name, np.zeros(0, dtype=np.int64))] = number  # type: ignore[union-attr]
    return RowGroups(codes, len(parts))


def _labels(tasks: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(
        {name: tasks[name].map(cell_text).replace("", MISSING_LABEL).to_numpy(dtype=object) for name in names},
        index=tasks.index,
    )


def _product(lists: list[list[str]]) -> list[tuple[str, ...]]:
    combos: list[tuple[str, ...]] = [()]
    for values in lists:
        combos = [(*combo, value) for combo in combos for value in values]
    return combos


def _natural(text: str) -> tuple[Any, ...]:
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", str(text)) if part)


def with_cell_columns(frame: pd.DataFrame, cell: FacetCell) -> pd.DataFrame:
    """``frame`` with the cell's field values as its first columns (after ``project`` when there is one)."""
    values = cell.columns()
    if not values:
        return frame
    front = [c for c in ("project",) if c in frame.columns]
    added = {name: value for name, value in values.items() if name not in frame.columns}
    result = frame.assign(**added) if len(frame) else frame.reindex(columns=[*frame.columns, *added])
    rest = [c for c in frame.columns if c not in front]
    return result[[*front, *added, *rest]]


def per_cell(compute: Callable[[FacetCell], pd.DataFrame], cells: Sequence[FacetCell]) -> pd.DataFrame:
    """``compute(cell)`` for every cell, concatenated, each with the cell's field values as columns."""
    parts = [with_cell_columns(compute(cell), cell) for cell in cells]
    kept = [part for part in parts if not part.empty]
    return pd.concat(kept, ignore_index=True) if kept else (parts[0] if parts else pd.DataFrame())


def split_by(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"language,round"`` (or a list) as field names; ``""``/``None``/``"none"`` as no facet."""
    if text is None:
        return ()
    parts = text.split(",") if isinstance(text, str) else list(text)
    names = tuple(part.strip() for part in parts if part and part.strip())
    return () if names in ((), ("none",)) else names


def faceted_agreement(
    tables: Mapping[str, pd.DataFrame],
    schema_meta: Mapping[str, Any] | None,
    *,
    by: str | Sequence[str] | None = None,
    where: str | None = None,
    total: bool = False,
    **options: Any,
) -> pd.DataFrame:
    """:func:`analysis.tables.per_item_agreement` once per cell of ``by`` after ``where``, the
    cell's field values as the first columns (an ``(all)`` cell too when ``total``).

    ``tables`` holds ``tasks`` and ``judgments`` (``spans`` optional). The kind of every item is
    decided once, on all the rows that pass ``where`` (from ``schema_meta``, else inferred from the
    answers; see ``per_item_agreement``), so a cell whose answers happen to use one or two values
    still compares a rating scale as a rating scale. ``options`` go to ``per_item_agreement``
    (``n_boot``, ``seed``, ``alpha_levels``, ``source``, ...).

    >>> tasks = pd.DataFrame({"project": "p", "task_id": [1, 2], "model": ["a", "b"]})
    >>> judgments = pd.DataFrame({"project": "p", "task_id": [1, 1, 2, 2], "annotation_id": [1, 2, 3, 4],
    ...     "annotator": ["x", "y", "x", "y"], "item": "SP", "value": ["3", "3", "1", "2"]})
    >>> table = faceted_agreement({"tasks": tasks, "judgments": judgments}, {"scales": {"SP": {"min": 1, "max": 3}}},
    ...                           by="model", n_boot=0)
    >>> table[["model", "item", "kind", "n_units", "exact_agreement"]].to_dict("records")
    [{'model': 'a', 'item': 'SP', 'kind': 'ordinal', 'n_units': 1, 'exact_agreement': 1.0}, \
{'model': 'b', 'item': 'SP', 'kind': 'ordinal', 'n_units': 1, 'exact_agreement': 0.0}]
    """
    from judgelab.analysis.kinds import effective_meta, item_kinds
    from judgelab.analysis.tables import per_item_agreement, usable_judgments, warn_inferred_kinds

    frames = {"spans": pd.DataFrame(columns=["project", "task_id"]), **tables}
    filtered = filter_tables(frames, parse_where(where) if where else None)
    source = options.get("source", "human")
    usable = usable_judgments(filtered["judgments"], source=source)
    if schema_meta is None and "kinds" not in options:
        inferred = item_kinds(None, usable)
        warn_inferred_kinds(inferred)
        options["kinds"] = {item: kind for item, (kind, _) in inferred.items()}
    meta = effective_meta(schema_meta, usable)
    origins = {item: origin for item, (_, origin) in item_kinds(schema_meta, usable).items()}

    def compute(cell: FacetCell) -> pd.DataFrame:
        spans = cell.tables.get("spans")
        table = per_item_agreement(
            cell.tables["judgments"], meta, spans=spans if spans is not None and not spans.empty else None, **options
        )
        return table.assign(kind_from=table["item"].astype(str).map(origins).fillna(table["kind_from"]))

    return per_cell(compute, facet_cells(filtered, split_by(by), total=total))
