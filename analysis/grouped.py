"""One computation for several disjoint groups of rows at once (the cells of a faceted report).

A faceted report computes each table once per cell. Run cell by cell, a computation pays its
fixed costs (building frames, grouping, pivoting) once per cell; most of them can instead be
paid once, on every row, with the cell as one more grouping key. :class:`RowGroups` says which
group each row of the ``tasks``, ``judgments`` and ``spans`` tables belongs to; a *grouped*
function takes it and returns one result per group, each equal to what the ungrouped function
gives on that group's rows alone (the tests check this equality function by function).

The rule that makes this exact: every operation that relates rows (a ``groupby``, a
``drop_duplicates``, a ``pivot``, a membership test, a sort whose order is kept) includes the
group as its first key, so that no rows of two groups ever meet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

GROUP = "_group"  # the column that carries a row's group inside a grouped computation


@dataclass(frozen=True)
class RowGroups:
    """``codes[table]``: for each row of that table, the number of its group (``0 .. size - 1``),
    or -1 for a row in no group; ``size`` groups in all."""

    codes: Mapping[str, np.ndarray]
    size: int

    def of(self, table: str, n_rows: int) -> np.ndarray:
        """The codes of ``table`` (every row in no group when the table has none)."""
        codes = self.codes.get(table)
        if codes is None:
            return np.full(n_rows, -1, dtype=np.int64)
        if len(codes) != n_rows:
            raise ValueError(f"{len(codes)} group codes for the {n_rows} rows of the {table} table")
        return codes


def group_keys(groups: RowGroups | None) -> list[str]:
    """``[GROUP]`` for a grouped computation, ``[]`` otherwise: the prefix of every key."""
    return [GROUP] if groups is not None else []


def with_groups(frame: pd.DataFrame, groups: RowGroups | None, table: str) -> pd.DataFrame:
    """``frame`` (one of the tables ``groups`` describes) with its rows' group in :data:`GROUP`,
    rows in no group left out; ``frame`` itself when ``groups`` is None."""
    if groups is None:
        return frame
    codes = groups.of(table, len(frame))
    kept = codes >= 0
    if kept.all():
        return frame.assign(**{GROUP: codes})
    return frame[kept].assign(**{GROUP: codes[kept]})


def positions_per_group(codes: np.ndarray, size: int) -> list[np.ndarray]:
    """The positions of the rows of each group, in row order."""
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(size + 1), side="left")
    return [order[bounds[group] : bounds[group + 1]] for group in range(size)]


def split_groups(frame: pd.DataFrame, size: int, *, keep_index: bool = True) -> list[pd.DataFrame]:
    """The rows of each group of ``frame`` (by its :data:`GROUP` column, which is dropped), in
    frame order; ``keep_index=False`` numbers each part's rows from 0."""
    codes = frame[GROUP].to_numpy(dtype=np.int64) if len(frame) else np.zeros(0, dtype=np.int64)
    body = frame.drop(columns=[GROUP])
    parts = [body.iloc[positions] for positions in positions_per_group(codes, size)]
    return parts if keep_index else [part.reset_index(drop=True) for part in parts]


def per_group(frame: pd.DataFrame, groups: RowGroups | None, size: int | None = None) -> list[pd.DataFrame]:
    """``[frame]`` for an ungrouped computation, else :func:`split_groups` of it."""
    if groups is None:
        return [frame]
    return split_groups(frame, groups.size if size is None else size)


def member(frame: pd.DataFrame, keys: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Whether each row of ``frame`` has its ``columns`` values among the rows of ``keys``
    (``isin`` on one column, a multi-column test on several)."""
    columns = list(columns)
    if len(columns) == 1:
        return frame[columns[0]].isin(set(keys[columns[0]])).to_numpy(dtype=bool)
    if frame.empty:
        return np.zeros(0, dtype=bool)
    wanted = pd.MultiIndex.from_frame(keys[columns].astype(object))
    return pd.MultiIndex.from_frame(frame[columns].astype(object)).isin(wanted)
