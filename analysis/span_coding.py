"""The tidy spans table and its annotation design as integer arrays (:class:`SpanDesign`): which
annotator annotated which example, and every span's example, text, annotator, label and offsets as
codes. Shared by span agreement, unitizing alpha and the span tables.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgelab.analysis.spans import NO_LABEL
from judgelab.analysis.tables import only_columns


@dataclass(frozen=True)
class SpanDesign:
    """The spans of a set of examples and who annotated which example, as numpy arrays.

    Built by :func:`span_design`; shared by span agreement, unitizing alpha and the span
    tables. Codes index the tables: ``examples.iloc[code]``, ``annotators[code]``,
    ``labels[code]``, ``continua.iloc[code]``.

    - ``examples``: one row per example (the key columns), in code order.
    - ``continua``: one row per (example, field) text: ``example`` code and ``field``.
    - ``coverage[e, a]``: annotator ``a`` annotated example ``e`` (marked spans or not).
    - per span: ``example``, ``continuum``, ``annotator``, ``label``, ``start``, ``end``;
      ``positioned`` is False for spans without usable offsets (missing, or ``end <= start``),
      which still count as votes for their label but not in offset-based measures.
    """

    key: list[str]
    examples: pd.DataFrame
    annotators: np.ndarray
    labels: np.ndarray
    continua: pd.DataFrame
    coverage: np.ndarray
    example: np.ndarray
    continuum: np.ndarray
    annotator: np.ndarray
    label: np.ndarray
    start: np.ndarray
    end: np.ndarray
    positioned: np.ndarray

    @property
    def n_examples(self) -> int:
        return len(self.examples)

    def annotator_code(self, name: Hashable) -> int:
        """Code of an annotator; ``ValueError`` naming the known ones when absent."""
        matches = np.flatnonzero(self.annotators == name)
        if len(matches) == 0:
            raise ValueError(f"unknown annotator {name!r}; known: {list(self.annotators)}")
        return int(matches[0])


#: what a design reads of a span besides its example's key and its annotator
DESIGN_COLUMNS = ("label", "start", "end", "field")


def default_example_key(columns: Iterable[str]) -> list[str]:
    """``project`` and ``task_id``, those of them present in ``columns``."""
    present = set(columns)
    return [column for column in ("project", "task_id") if column in present]


def span_design(
    spans: pd.DataFrame,
    examples: pd.DataFrame | Sequence[object] | None = None,
    annotators: Sequence[Hashable] | None = None,
    *,
    example_key: Sequence[str] | None = None,
    annotator_col: str = "annotator",
    labels: Sequence[Hashable] | None = None,
) -> SpanDesign:
    """Encode a tidy ``spans`` table and its annotation design for the span measures.

    - ``examples``: the examples to compare, so that examples nobody marked count. A
      DataFrame with the key columns (extra columns are ignored, so the ``tasks`` table
      works), or a list of ids (scalars when the key is one column or the other key
      columns have one value in ``spans``; tuples otherwise). ``None``: the examples that
      have spans. If the DataFrame has an ``annotator_col`` column, its rows say which
      annotator annotated which example; otherwise every annotator annotated every example.
      An annotator with a span in an example always counts as having annotated it.
    - ``annotators``: the annotators to compare (``None``: all in ``spans``/``examples``).
    - ``example_key``: columns naming an example (default ``project``, ``task_id``).
      Spans of different ``field`` values of one example never overlap.
    - ``labels``: the label set in order (``None``: sorted labels of the spans); spans with
      other labels are left out. A missing or empty label is ``"(no label)"``.

    Spans of other examples or annotators are left out. Malformed input (no key column,
    no annotator column in a non-empty table) raises ``ValueError``.
    """
    key, frame = _checked_spans(spans, examples, example_key, annotator_col)
    example_table, design_pairs = _example_table(frame, examples, key, annotator_col)
    span_example = key_codes(example_table, frame[key])
    annotator_names = _annotator_names(frame, annotator_col, span_example, design_pairs, annotators)
    span_annotator = pd.Index(annotator_names).get_indexer(frame[annotator_col])
    label_names, span_label = _label_codes(frame, span_example >= 0, span_annotator >= 0, labels)

    keep = (span_example >= 0) & (span_annotator >= 0) & (span_label >= 0)
    frame = frame[keep]
    span_example, span_annotator, span_label = span_example[keep], span_annotator[keep], span_label[keep]

    coverage = _coverage(example_table, annotator_names, design_pairs, key, annotator_col)
    coverage[span_example, span_annotator] = True  # a span in an example: its annotator annotated it
    continua, continuum_codes = _continua(frame, span_example)
    start, end, positioned = _offsets(frame)
    return SpanDesign(
        key=key,
        examples=example_table.reset_index(drop=True),
        annotators=annotator_names,
        labels=label_names,
        continua=continua.reset_index(drop=True),
        coverage=coverage,
        example=span_example.astype(np.int64),
        continuum=np.asarray(continuum_codes, dtype=np.int64),
        annotator=span_annotator.astype(np.int64),
        label=span_label.astype(np.int64),
        start=start,
        end=end,
        positioned=positioned,
    )


def _checked_spans(
    spans: pd.DataFrame,
    examples: pd.DataFrame | Sequence[object] | None,
    example_key: Sequence[str] | None,
    annotator_col: str,
) -> tuple[list[str], pd.DataFrame]:
    """The example key (given, else ``project``/``task_id`` of the spans or of ``examples``) and
    the spans that name an annotator; ``ValueError`` without a key or a needed column."""
    key = list(example_key) if example_key is not None else default_example_key(spans.columns)
    if not key and isinstance(examples, pd.DataFrame):
        key = default_example_key(examples.columns)
    if not key:
        raise ValueError("spans need an example key: pass example_key= or have project/task_id columns")
    frame = spans
    if frame.empty:
        frame = pd.DataFrame(columns=[*key, annotator_col, "label", "start", "end"])
    missing = [column for column in [*key, annotator_col] if column not in frame.columns]
    if missing:
        raise ValueError(f"the spans table lacks column(s) {missing}")
    # the columns a design reads, before the rows are filtered (not a copy of every column)
    frame = only_columns(frame, *key, annotator_col, *DESIGN_COLUMNS)
    return key, frame[frame[annotator_col].notna()]


def _annotator_names(
    frame: pd.DataFrame,
    annotator_col: str,
    span_example: np.ndarray,
    design_pairs: pd.DataFrame | None,
    annotators: Sequence[Hashable] | None,
) -> np.ndarray:
    """The annotators in code order: those given (first occurrence), else, sorted, those with a
    span in a compared example and those the design says annotated one."""
    if annotators is not None:
        return np.array(list(dict.fromkeys(annotators)), dtype=object)
    names = set(pd.unique(frame[annotator_col].to_numpy(dtype=object)[span_example >= 0]))
    if design_pairs is not None:
        names |= set(pd.unique(design_pairs[annotator_col].to_numpy(dtype=object)))
    return np.array(sorted(names, key=str), dtype=object)


def _label_codes(
    frame: pd.DataFrame, known_example: np.ndarray, known_annotator: np.ndarray, labels: Sequence[Hashable] | None
) -> tuple[np.ndarray, np.ndarray]:
    """(label names in code order, each span's label code, -1 for a label outside them). A missing
    or empty label is ``NO_LABEL``; without ``labels``, the sorted labels of the spans of compared
    examples and annotators."""
    raw_labels = frame["label"] if "label" in frame.columns else pd.Series(NO_LABEL, index=frame.index)
    raw_labels = raw_labels.where(raw_labels.notna() & (raw_labels.astype(str) != ""), NO_LABEL)
    if labels is None:
        used = raw_labels.to_numpy(dtype=object)[known_example & known_annotator]
        label_names = np.array(sorted(pd.unique(used), key=str), dtype=object)
    else:
        label_names = np.array(list(dict.fromkeys(labels)), dtype=object)
    label_names = label_names.astype(object)
    return label_names, pd.Index(label_names).get_indexer(raw_labels)


def _coverage(
    example_table: pd.DataFrame,
    annotator_names: np.ndarray,
    design_pairs: pd.DataFrame | None,
    key: list[str],
    annotator_col: str,
) -> np.ndarray:
    """Examples x annotators: who annotated which example by the design's (example, annotator)
    rows, or everyone everything when there are none."""
    coverage = np.zeros((len(example_table), len(annotator_names)), dtype=bool)
    if design_pairs is None:
        coverage[:, :] = True
    else:
        pair_example = key_codes(example_table, design_pairs[key])
        pair_annotator = pd.Index(annotator_names).get_indexer(design_pairs[annotator_col])
        ok = (pair_example >= 0) & (pair_annotator >= 0)
        coverage[pair_example[ok], pair_annotator[ok]] = True
    return coverage


def _continua(frame: pd.DataFrame, span_example: np.ndarray) -> tuple[pd.DataFrame, np.ndarray]:
    """The texts spans lie on, one per (example, ``field``), so that spans of different fields
    never overlap: the table of continua (``example`` code, ``field``) and each span's continuum."""
    fields = frame["field"].fillna("").astype(str) if "field" in frame.columns else pd.Series("", index=frame.index)
    field_codes, field_names = pd.factorize(fields, sort=True)
    n_fields = max(len(field_names), 1)
    combined = span_example.astype(np.int64) * n_fields + field_codes
    unique_combined, continuum_codes = np.unique(combined, return_inverse=True)
    continua = pd.DataFrame(
        {
            "example": unique_combined // n_fields,
            "field": np.asarray(field_names, dtype=object)[unique_combined % n_fields]
            if len(field_names)
            else np.zeros(0, dtype=object),
        }
    )
    return continua, continuum_codes


def _offsets(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, positioned): integer offsets, 0 where a span has none usable (missing, or
    ``end <= start``), which ``positioned`` marks False."""
    start = pd.to_numeric(frame["start"], errors="coerce").to_numpy(dtype=float) if "start" in frame else None
    end = pd.to_numeric(frame["end"], errors="coerce").to_numpy(dtype=float) if "end" in frame else None
    if start is None or end is None:
        start = np.full(len(frame), np.nan)
        end = np.full(len(frame), np.nan)
    positioned = np.isfinite(start) & np.isfinite(end) & (end > start)
    start = np.where(positioned, start, 0).astype(np.int64)
    end = np.where(positioned, end, 0).astype(np.int64)
    return start, end, positioned


def key_codes(table: pd.DataFrame, rows: pd.DataFrame) -> np.ndarray:
    """Row number in ``table`` (unique key rows) of each row of ``rows``; -1 when absent.

    A hash join on the key columns; values of different types never match.
    """
    columns = list(table.columns)
    if len(rows) == 0:
        return np.zeros(0, dtype=np.int64)
    if len(columns) == 1:
        return pd.Index(table[columns[0]]).get_indexer(rows[columns[0]]).astype(np.int64)
    numbered = table.assign(_row=np.arange(len(table), dtype=np.int64))
    try:
        joined = rows[columns].merge(numbered, on=columns, how="left")
    except (ValueError, TypeError):  # key columns of incompatible types
        return pd.MultiIndex.from_frame(table).get_indexer(pd.MultiIndex.from_frame(rows[columns])).astype(np.int64)
    return joined["_row"].fillna(-1).to_numpy(dtype=np.int64)


def _example_table(
    frame: pd.DataFrame,
    examples: pd.DataFrame | Sequence[object] | None,
    key: list[str],
    annotator_col: str,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The examples (unique key rows) and, when given, the (example, annotator) design."""
    if examples is None:
        return frame[key].drop_duplicates().reset_index(drop=True), None
    if isinstance(examples, pd.DataFrame):
        missing = [column for column in key if column not in examples.columns]
        if missing:
            raise ValueError(f"the examples table lacks key column(s) {missing}")
        table = examples[key].drop_duplicates().reset_index(drop=True)
        pairs = None
        if annotator_col in examples.columns:
            pairs = examples.loc[examples[annotator_col].notna(), [*key, annotator_col]]
        return table, pairs
    ids = list(examples)
    if len(key) == 1:
        rows = [(value[0] if isinstance(value, tuple) else value) for value in ids]
        return pd.DataFrame({key[0]: rows}).drop_duplicates().reset_index(drop=True), None
    if ids and not all(isinstance(value, tuple) for value in ids):
        fixed = {}
        for column in key[:-1]:
            values = frame[column].dropna().unique()
            if len(values) == 0:  # no spans at all: the ids cannot meet a span anyway
                values = np.array([None], dtype=object)
            if len(values) != 1:
                raise ValueError(
                    f"example ids are scalars but the key {key} has several {column!r} values; pass tuples"
                )
            fixed[column] = values[0]
        table = pd.DataFrame({**{c: [v] * len(ids) for c, v in fixed.items()}, key[-1]: ids})
        return table.drop_duplicates().reset_index(drop=True), None
    table = pd.DataFrame([tuple(value) for value in ids], columns=key) if ids else pd.DataFrame(columns=key)
    return table.drop_duplicates().reset_index(drop=True), None
