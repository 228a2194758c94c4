"""PNG figures for the HTML report (matplotlib, optional dependency).

Figures are drawn with matplotlib's object API (``matplotlib.figure.Figure``, rendered by
Agg), never through pyplot, so building a report changes no global backend or state.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import pandas as pd

from analysis.tables import natural_key


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
