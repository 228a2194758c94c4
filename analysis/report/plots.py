"""PNG figures for the HTML report (matplotlib, optional dependency).

Figures are drawn with matplotlib's object API (``matplotlib.figure.Figure``, rendered by
Agg), never through pyplot, so building a report changes no global backend or state.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from judgelab.analysis.tables import natural_key


def rating_distribution_png(judgments: pd.DataFrame, scales: Mapping[str, Mapping[str, Any]]) -> bytes | None:
    """Grouped bars: share of each value per annotator, one panel per rated scale item.

    ``judgments`` should already be restricted to the rows to plot (one source, not
    cancelled); ``scales`` is the schema's ``scales`` (item -> ``{min, max}``), whose
    values are all shown, used or not. Returns ``None`` when there is nothing to plot or
    matplotlib is missing.
    """
    items = list(scales)
    rows = judgments[judgments["item"].isin(list(items))]
    if rows.empty:
        return None
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    present = [item for item in items if item in set(rows["item"])]
    figure = Figure(figsize=(3.2 * len(present) + 1.2, 2.8))
    axes = figure.subplots(1, len(present), squeeze=False)
    for axis, item in zip(axes[0], present, strict=True):
        item_rows = rows[rows["item"] == item]
        values = item_rows["value"].map(_scale_value)
        shares = pd.crosstab(item_rows["annotator"], values, normalize="index")
        columns = set(shares.columns) | set(_scale_values(scales[item]))
        shares = shares.reindex(columns=sorted(columns, key=natural_key), fill_value=0.0)
        shares.T.plot.bar(ax=axis, rot=0, width=0.8, legend=False)
        axis.set_title(str(item))
        axis.set_xlabel("value")
        axis.set_ylabel("share of answers")
        axis.set_ylim(0, 1)
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, title="annotator", loc="center right", fontsize="small")
    figure.subplots_adjust(left=0.08, right=0.84, bottom=0.18, top=0.88, wspace=0.35)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=96)
    return buffer.getvalue()


def _scale_value(value: object) -> str:
    text = str(value).strip()
    try:
        return f"{float(text):g}"
    except ValueError:
        return text


def _scale_values(scale: Mapping[str, Any] | None) -> list[str]:
    scale = scale or {}
    low, high = scale.get("min"), scale.get("max")
    if isinstance(low, int) and isinstance(high, int) and 0 <= high - low <= 20:
        return [str(value) for value in range(low, high + 1)]
    return []


# -- shared helpers --------------------------------------------------------------------------


def _new_figure(width: float, height: float):
    """A matplotlib Figure (object API), or ``None`` when matplotlib is missing."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure(figsize=(width, height))


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=96)
    return buffer.getvalue()


def pooled_distribution_png(judgments: pd.DataFrame, scales: Mapping[str, Mapping[str, Any]]) -> bytes | None:
    """Bars of the share of each value, all annotators pooled, one panel per scale item
    (for projects with too many annotators for one bar each)."""
    rows = judgments[judgments["item"].isin(list(scales))]
    present = [item for item in scales if item in set(rows["item"])]
    if not present:
        return None
    figure = _new_figure(min(3.0 * len(present) + 1.0, 15.0), 2.6)
    if figure is None:
        return None
    axes = figure.subplots(1, len(present), squeeze=False)
    for axis, item in zip(axes[0], present, strict=True):
        values = rows.loc[rows["item"] == item, "value"].map(_scale_value)
        order = sorted(set(values) | set(_scale_values(scales[item])), key=natural_key)
        shares = values.value_counts(normalize=True).reindex(order, fill_value=0.0)
        axis.bar(range(len(order)), shares.to_numpy(), color="#4C72B0")
        axis.set_xticks(range(len(order)), order)
        axis.set_title(str(item))
        axis.set_xlabel("value")
        axis.set_ylabel("share of answers")
        axis.set_ylim(0, 1)
    figure.subplots_adjust(left=0.08, right=0.98, bottom=0.2, top=0.86, wspace=0.35)
    return _png(figure)


def alpha_ci_png(agreement: pd.DataFrame) -> bytes | None:
    """Krippendorff's alpha per item (dots) with its bootstrap interval (bars).

    ``agreement``: columns ``item``, ``krippendorff_alpha``, ``alpha_ci_low``,
    ``alpha_ci_high``, ``alpha_level``. Items without an alpha are left out; dashed lines
    mark 0.667 and 0.800.
    """
    rows = agreement.dropna(subset=["krippendorff_alpha"])
    if rows.empty:
        return None
    labels = [f"{item} ({level})" for item, level in zip(rows["item"], rows["alpha_level"], strict=True)]
    figure = _new_figure(7.5 + 0.04 * max(len(label) for label in labels), 0.32 * len(rows) + 1.2)
    if figure is None:
        return None
    axis = figure.subplots()
    positions = list(range(len(rows)))[::-1]
    alpha = rows["krippendorff_alpha"].to_numpy(dtype=float)
    low = rows["alpha_ci_low"].to_numpy(dtype=float)
    high = rows["alpha_ci_high"].to_numpy(dtype=float)
    has_ci = ~(pd.isna(low) | pd.isna(high))
    errors = [
        [a - lo if ok else 0.0 for a, lo, ok in zip(alpha, low, has_ci, strict=True)],
        [hi - a if ok else 0.0 for a, hi, ok in zip(alpha, high, has_ci, strict=True)],
    ]
    axis.errorbar(alpha, positions, xerr=errors, fmt="o", color="#4C72B0", ecolor="#8FA8D0", capsize=3)
    axis.set_yticks(positions, labels)
    for threshold in (0.667, 0.8):
        axis.axvline(threshold, color="#999", linestyle="--", linewidth=0.8)
    axis.axvline(0.0, color="#333", linewidth=0.8)
    lowest = float(min(0.0, pd.Series(low[has_ci]).min() if has_ci.any() else 0.0, alpha.min()))
    axis.set_xlim(max(lowest - 0.05, -1.05), 1.05)
    axis.set_xlabel("Krippendorff's alpha (dashed: 0.667 and 0.800)")
    width, height = figure.get_figwidth(), figure.get_figheight()
    left = min(0.6, (0.075 * max(len(label) for label in labels) + 0.3) / width)  # room for the labels
    figure.subplots_adjust(left=left, right=0.97, bottom=0.75 / height, top=1 - 0.25 / height)
    return _png(figure)


def drift_png(drift: pd.DataFrame, block_size: int) -> bytes | None:
    """Mean score per block of annotations, one line per annotator, one panel per item."""
    if drift.empty:
        return None
    items = list(dict.fromkeys(drift["item"]))
    figure = _new_figure(3.6 * len(items) + 1.6, 2.9)
    if figure is None:
        return None
    axes = figure.subplots(1, len(items), squeeze=False)
    for axis, item in zip(axes[0], items, strict=True):
        rows = drift[drift["item"] == item]
        for annotator, line in rows.groupby("annotator", sort=False):
            axis.plot(line["block"] + 1, line["mean"], marker="o", label=str(annotator))
        axis.set_title(str(item))
        axis.set_xlabel(f"block of {block_size} annotations")
        axis.set_ylabel("mean score")
        axis.xaxis.get_major_locator().set_params(integer=True)
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, title="annotator", loc="center right", fontsize="small")
    figure.subplots_adjust(left=0.08, right=0.8, bottom=0.2, top=0.88, wspace=0.35)
    return _png(figure)


def confusion_png(confusion: pd.DataFrame, xlabel: str, ylabel: str) -> bytes | None:
    """A heat map of a square count matrix, coloured by each row's shares, counts in the cells."""
    if confusion.empty or int(confusion.to_numpy().sum()) == 0:
        return None
    size = len(confusion)
    figure = _new_figure(0.75 * size + 3.2, 0.55 * size + 2.2)
    if figure is None:
        return None
    axis = figure.subplots()
    values = confusion.to_numpy(dtype=float)
    totals = values.sum(axis=1, keepdims=True)
    shares = np.divide(values, totals, out=np.zeros_like(values), where=totals > 0)
    axis.imshow(shares, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
    axis.set_xticks(range(confusion.shape[1]), [str(c) for c in confusion.columns], rotation=30, ha="right")
    axis.set_yticks(range(size), [str(i) for i in confusion.index])
    for (row, column), value in np.ndenumerate(values):
        colour = "white" if shares[row, column] > 0.5 else "black"
        axis.text(column, row, f"{int(value)}", ha="center", va="center", color=colour, fontsize="small")
    axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)
    figure.tight_layout()
    return _png(figure)


MAX_VOTE_BARS = 6  # with more annotators, votes are drawn as dots on a 0-100% axis


def vote_table_png(table: pd.DataFrame) -> bytes | None:
    """Table 5 as a chart, for one block of :func:`analysis.span_tables.vote_table` (one
    ``n_annotators``): with few annotators, bars of the share of texts per number of votes,
    one bar per label; with many, one row of dots per label at the share of annotators who
    marked it, the dot's area the number of texts."""
    if table.empty:
        return None
    labels = list(dict.fromkeys(table["label"]))
    n_annotators = int(table["n_annotators"].iloc[0])
    if n_annotators <= MAX_VOTE_BARS:
        wide = table.pivot_table(index="votes", columns="label", values="share", aggfunc="first")
        wide = wide.reindex(columns=labels)
        figure = _new_figure(max(6.0, 1.1 * (n_annotators + 1) + 3.0), 3.0)
        if figure is None:
            return None
        axis = figure.subplots()
        wide.plot.bar(ax=axis, rot=0, width=0.8)
        axis.set_xlabel(f"number of the {n_annotators} annotators marking the label (E)")
        axis.set_ylabel("share of texts")
        axis.set_ylim(0, 1)
        axis.legend(title="label", fontsize="small", ncol=min(len(labels), 4))
        figure.tight_layout()
        return _png(figure)
    figure = _new_figure(7.5, 0.42 * len(labels) + 1.4)
    if figure is None:
        return None
    axis = figure.subplots()
    used = table[table["n_examples"] > 0]
    positions = {label: index for index, label in enumerate(labels[::-1])}
    axis.scatter(
        used["votes"] / n_annotators,
        used["label"].map(positions),
        s=30 + 400 * used["share"],
        color="#4C72B0",
        alpha=0.7,
    )
    for row in used.itertuples():
        if row.n_examples > 1:
            axis.annotate(str(row.n_examples), (row.votes / n_annotators, positions[row.label]), ha="center",
                          va="center", fontsize="x-small", color="white")  # fmt: skip
    axis.set_yticks(list(positions.values()), list(positions))
    axis.set_xlim(-0.05, 1.05)
    axis.xaxis.set_major_formatter(lambda value, _: f"{value:.0%}")
    axis.set_xlabel(f"share of the {n_annotators} annotators marking the label (one dot per group of texts)")
    figure.tight_layout()
    return _png(figure)


def score_distribution_png(distribution: pd.DataFrame, items: list[str] | None = None) -> bytes | None:
    """Stacked bars: share of each score per group (model), one panel per criterion.

    ``distribution``: columns ``group``, ``item``, ``value``, ``share`` (one block of
    :func:`analysis.qc.likert_rubric_es.score_distributions`).
    """
    if distribution.empty:
        return None
    present = list(dict.fromkeys(distribution["item"]))
    items = [item for item in items or present if item in present]
    groups = sorted(set(distribution["group"].astype(str)), key=natural_key)
    values = sorted(set(distribution["value"]))
    figure = _new_figure(min(2.6 * len(items) + 1.8, 16.0), 0.32 * len(groups) + 1.6)
    if figure is None:
        return None
    from matplotlib.collections import PolyCollection

    axes = figure.subplots(1, len(items), squeeze=False, sharey=True)
    colours = _ramp(len(values))
    rows_y = np.arange(len(groups), dtype=float)
    for axis, item in zip(axes[0], items, strict=True):
        rows = distribution[distribution["item"] == item]
        wide = rows.pivot_table(index="group", columns="value", values="share", aggfunc="first", fill_value=0.0)
        wide.index = wide.index.astype(str)
        wide = wide.reindex(index=groups, columns=values, fill_value=0.0)
        left = np.zeros(len(groups))
        for colour, value in zip(colours, values, strict=True):
            # One collection of rectangles per score (as barh draws them, without an artist per bar:
            # a report of many models x criteria spent most of its plotting time adding patches).
            right = left + wide[value].to_numpy()
            boxes = np.stack(
                [
                    np.c_[left, rows_y - 0.4],
                    np.c_[right, rows_y - 0.4],
                    np.c_[right, rows_y + 0.4],
                    np.c_[left, rows_y + 0.4],
                ],
                axis=1,
            )
            axis.add_collection(
                PolyCollection(boxes, facecolors=[colour], linewidths=0, label=f"{value:g}"), autolim=False
            )
            left = right
        axis.set_title(str(item))
        axis.set_xlim(0, 1)
        axis.set_ylim(len(groups) - 0.5, -0.5)  # first group on top
        axis.set_xticks([0, 0.5, 1], ["0", "50%", "100%"])
        axis.set_yticks(range(len(groups)), groups)
        axis.set_xlabel("share of ratings")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, title="score", loc="center right", fontsize="small")
    figure.tight_layout(rect=(0, 0, 0.93, 1))
    return _png(figure)


def _ramp(n: int) -> list[tuple[float, float, float, float]]:
    from matplotlib import colormaps

    cmap = colormaps["RdYlGn"]
    return [cmap(0.1 + 0.8 * i / max(n - 1, 1)) for i in range(n)]


# -- one figure for every facet cell ---------------------------------------------------------

MAX_WRITTEN_SHARES = 60  # a heat map with more squares shows colours only (the CSV has the numbers)


def alpha_ci_cells_png(parts: list[tuple[str, pd.DataFrame]]) -> bytes | None:
    """:func:`alpha_ci_png` of every cell in one figure: a row per cell and item."""
    frames = [frame.assign(item=[f"{label}: {item}" for item in frame["item"]]) for label, frame in parts]
    kept = [frame for frame in frames if not frame.empty]
    return alpha_ci_png(pd.concat(kept, ignore_index=True)) if kept else None


def rating_share_cells_png(parts: list[tuple[str, tuple[pd.DataFrame, Mapping[str, Any]]]]) -> bytes | None:
    """Share of each value per cell (rows) and scale value (columns), every annotator pooled,
    one heat map per rated item, the share written in each square."""
    scales: dict[str, Any] = {}
    for _, (_, part_scales) in parts:
        scales.update(part_scales)
    items = list(scales)
    if not items:
        return None
    labels = [label for label, _ in parts]
    figure = _new_figure(min(3.0 * len(items) + 0.09 * max(len(label) for label in labels) + 1.0, 16.0),
                         0.3 * len(labels) + 1.3)  # fmt: skip
    if figure is None:
        return None
    axes = figure.subplots(1, len(items), squeeze=False, sharey=True)
    for axis, item in zip(axes[0], items, strict=True):
        counts = [_value_counts(rows.loc[rows["item"] == item, "value"]) for _, (rows, _) in parts]
        values = sorted(set(_scale_values(scales[item])).union(*(part.index for part in counts)), key=natural_key)
        shares = np.zeros((len(parts), len(values)))
        for row, answers in enumerate(counts):
            if len(answers):
                shares[row] = (answers / answers.sum()).reindex(values, fill_value=0.0).to_numpy()
        axis.imshow(shares, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
        if shares.size <= MAX_WRITTEN_SHARES:
            for (row, column), share in np.ndenumerate(shares):
                colour = "white" if share > 0.55 else "black"
                axis.text(column, row, f"{share:.0%}", ha="center", va="center", fontsize="x-small", color=colour)
        axis.set_xticks(range(len(values)), values)
        axis.set_yticks(range(len(labels)), labels, fontsize="small")
        axis.set_title(str(item))
        axis.set_xlabel("value")
    left = min(0.5, 0.012 * max(len(label) for label in labels) + 0.04)
    figure.subplots_adjust(left=left, right=0.98, bottom=0.8 / figure.get_figheight(), top=0.9, wspace=0.08)
    return _png(figure)


def _value_counts(answers: pd.Series) -> pd.Series:
    """How many answers have each scale value (``_scale_value`` of the answer), each distinct
    answer read once."""
    counts = answers.value_counts(dropna=False)
    labels = [_scale_value(value) for value in counts.index]
    return pd.Series(counts.to_numpy(), index=labels).groupby(level=0, sort=False).sum()


def drift_cells_png(parts: list[tuple[str, tuple[pd.DataFrame, int]]]) -> bytes | None:
    """Mean score per block of annotations, every annotator pooled, one line per cell, one panel
    per item."""
    frames = [drift.assign(cell=label) for label, (drift, _) in parts if not drift.empty]
    if not frames:
        return None
    block_size = parts[0][1][1]
    drift = pd.concat(frames, ignore_index=True)
    drift = drift.assign(_sum=drift["mean"] * drift["n_ratings"])
    pooled = drift.groupby(["cell", "item", "block"], sort=False)[["_sum", "n_ratings"]].sum().reset_index()
    pooled["mean"] = pooled["_sum"] / pooled["n_ratings"]
    items = list(dict.fromkeys(pooled["item"]))
    figure = _new_figure(3.8 * len(items) + 2.8, 3.0)
    if figure is None:
        return None
    axes = figure.subplots(1, len(items), squeeze=False)
    for axis, item in zip(axes[0], items, strict=True):
        for label, line in pooled[pooled["item"] == item].groupby("cell", sort=False):
            axis.plot(line["block"] + 1, line["mean"], marker=".", linewidth=1, label=str(label))
        axis.set_title(str(item))
        axis.set_xlabel(f"block of {block_size} annotations (each annotator's own)")
        axis.set_ylabel("mean score")
        axis.xaxis.get_major_locator().set_params(integer=True)
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="center right", fontsize="x-small")
    figure.subplots_adjust(left=0.06, right=0.68, bottom=0.2, top=0.88, wspace=0.3)
    return _png(figure)
