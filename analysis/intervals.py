"""Interval arithmetic on sorted arrays, shared by the span metrics: how much of each query interval
a group's source intervals cover, the union of a group's intervals, and the overlapping pairs of two
interval sets, all by binary search, with no Python loop over intervals.

An interval is half-open ``[start, end)`` in code points within a group (an example's text, a
continuum); groups are small non-negative integers.
"""

from __future__ import annotations

import numpy as np


def _composite_width(*position_arrays: np.ndarray) -> tuple[int, int]:
    """(shift, width) so that ``group * width + (pos - shift)`` orders by group then pos."""
    non_empty = [a for a in position_arrays if len(a)]
    if not non_empty:
        return 0, 1
    low = min(int(a.min()) for a in non_empty)
    high = max(int(a.max()) for a in non_empty)
    return low, high - low + 1


def _check_range(n_groups: int, width: int) -> None:
    if n_groups * width >= 2**62:
        raise ValueError("span offsets too large to encode (groups x text length >= 2**62)")


def covered_length(
    query_group: np.ndarray,
    query_start: np.ndarray,
    query_end: np.ndarray,
    source_group: np.ndarray,
    source_start: np.ndarray,
    source_end: np.ndarray,
) -> np.ndarray:
    """For each query interval, ``sum_s |query ∩ s|`` over source intervals of its group.

    With ``C(t) = sum_{s: start_s < t} (t - start_s) - sum_{s: end_s < t} (t - end_s)``, the
    length of the sources left of ``t``, the answer is ``C(end_q) - C(start_q)``; each sum is
    a count and a prefix sum found by binary search in the sorted starts (ends).

    >>> covered_length(np.array([0]), np.array([2]), np.array([8]),
    ...                np.array([0, 0, 1]), np.array([0, 5, 0]), np.array([4, 20, 9]))
    array([5])
    """
    n_query = len(query_start)
    if n_query == 0 or len(source_start) == 0:
        return np.zeros(n_query, dtype=np.int64)
    shift, width = _composite_width(query_start, query_end, source_start, source_end)
    n_groups = int(max(query_group.max(), source_group.max())) + 1
    _check_range(n_groups, width)
    source_base = source_group.astype(np.int64) * width
    # sources of groups below g come first in both sorted key arrays
    group_offset = np.concatenate([[0], np.cumsum(np.bincount(source_group, minlength=n_groups))])
    first = np.tile(group_offset[query_group], 2)
    base = np.tile(query_group.astype(np.int64) * width, 2)
    t = np.concatenate([query_end, query_start]) - shift

    def left_mass(positions: np.ndarray) -> np.ndarray:
        local = positions - shift
        keys = source_base + local
        order = np.argsort(keys, kind="stable")
        prefix = np.concatenate([[0], np.cumsum(local[order])])
        below = np.searchsorted(keys[order], base + t, side="left")
        return (below - first) * t - (prefix[below] - prefix[first])

    cumulative = left_mass(source_start) - left_mass(source_end)
    return cumulative[:n_query] - cumulative[n_query:]


def merge_intervals(
    group: np.ndarray, start: np.ndarray, end: np.ndarray, *, touching: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Union of the intervals of each group as disjoint blocks: ``(group, start, end, block)``.

    ``block[i]`` is the block interval ``i`` fell into. With ``touching=False`` intervals
    that only touch (``[0, 5)`` and ``[5, 8)``) stay separate blocks.

    >>> merge_intervals(np.array([0, 0, 0, 1]), np.array([0, 3, 9, 0]), np.array([5, 7, 10, 2]))[:3]
    (array([0, 0, 1]), array([0, 9, 0]), array([ 7, 10,  2]))
    """
    if len(start) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    shift, width = _composite_width(start, end)
    _check_range(int(group.max()) + 1, width)
    base = group.astype(np.int64) * width
    start_keys = base + (start - shift)
    order = np.argsort(start_keys, kind="stable")
    sorted_start = start_keys[order]
    running_end = np.maximum.accumulate(base[order] + (end[order] - shift))
    new_block = np.ones(len(order), dtype=bool)
    if touching:
        new_block[1:] = sorted_start[1:] > running_end[:-1]
    else:
        new_block[1:] = sorted_start[1:] >= running_end[:-1]
    block_sorted = np.cumsum(new_block) - 1
    heads = np.flatnonzero(new_block)
    block_group = group[order][heads]
    block_start = start[order][heads]
    block_end = np.maximum.reduceat(end[order], heads)
    block = np.empty(len(order), dtype=np.int64)
    block[order] = block_sorted
    return block_group.astype(np.int64), block_start, block_end, block


def overlapping_pairs(
    group_a: np.ndarray,
    start_a: np.ndarray,
    end_a: np.ndarray,
    group_b: np.ndarray,
    start_b: np.ndarray,
    end_b: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """All ``(i, j)`` with interval ``a[i]`` and ``b[j]`` in one group sharing a character.

    Output-sensitive: every overlapping pair has either ``start_a <= start_b < end_a`` or
    ``start_b < start_a < end_b``; each case is a contiguous run in the other side sorted
    by start, found by binary search and expanded without a Python loop.

    >>> overlapping_pairs(np.array([0, 0]), np.array([0, 10]), np.array([5, 12]),
    ...                   np.array([0, 1]), np.array([3, 0]), np.array([11, 20]))
    (array([0, 1]), array([0, 0]))
    """
    empty = np.zeros(0, dtype=np.int64)
    if len(start_a) == 0 or len(start_b) == 0:
        return empty, empty
    shift, width = _composite_width(start_a, end_a, start_b, end_b)
    _check_range(int(max(group_a.max(), group_b.max())) + 1, width)
    base_a = group_a.astype(np.int64) * width
    base_b = group_b.astype(np.int64) * width
    keys_a = base_a + (start_a - shift)
    keys_b = base_b + (start_b - shift)
    order_a = np.argsort(keys_a, kind="stable")
    order_b = np.argsort(keys_b, kind="stable")
    sorted_a, sorted_b = keys_a[order_a], keys_b[order_b]

    # b starts inside a: start_a <= start_b < end_a
    low = np.searchsorted(sorted_b, keys_a, side="left")
    high = np.searchsorted(sorted_b, base_a + (end_a - shift), side="left")
    a1, b1 = _expand_runs(low, high)
    # a starts strictly inside b: start_b < start_a < end_b
    low = np.searchsorted(sorted_a, keys_b, side="right")
    high = np.searchsorted(sorted_a, base_b + (end_b - shift), side="left")
    b2, a2 = _expand_runs(low, high)
    first = np.concatenate([a1, order_a[a2]])
    second = np.concatenate([order_b[b1], b2])
    return first, second


def _expand_runs(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(i, k)`` for every ``k`` in ``[low[i], high[i])``."""
    counts = np.maximum(high - low, 0)
    total = int(counts.sum())
    owner = np.repeat(np.arange(len(low)), counts)
    offsets = np.repeat(np.cumsum(counts) - counts, counts)
    return owner, np.repeat(low, counts) + (np.arange(total) - offsets)
