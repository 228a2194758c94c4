"""Span tables at the dataset and example level, label confusion, and LLM-vs-human majority.

The tables of HotelCheckSpan section 6 built from the tidy ``spans`` table:

- :func:`campaign_span_counts` (Table 4): spans per label and campaign, with shares.
- :func:`example_votes` and :func:`vote_table` (Table 5): per example and error type, how
  many annotators marked at least one span of that type ("votes"), and how many examples
  got 0..N votes; ``"(any)"`` is the vote for any error at all.
- :func:`matched_spans` and :func:`label_confusion`: which label one annotator gave to a
  span another annotator marked with an overlapping span.
- :func:`model_majority_agreement` and :func:`alignment_paradox`: agreement of models with
  a clear human majority, per error type and for "any error", next to the always-"no error"
  baseline. Humans rarely agree that a *specific* type is present, so per-type agreement
  rewards a model that never marks anything (the "conservative alignment paradox").

``examples`` and ``annotators`` work as in :func:`analysis.span_agreement.span_design`:
pass them so that examples (and annotators) with no spans count.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd

from judgelab.analysis.intervals import overlapping_pairs
from judgelab.analysis.span_coding import (
    SpanDesign,
    _example_table,
    default_example_key,
    key_codes,
    span_design,
)
from judgelab.analysis.spans import NO_LABEL

ANY_LABEL = "(any)"
UNMATCHED = "(unmatched)"
PER_TYPE = "(per type)"
ALWAYS_NO_ERROR = "(always no error)"

VOTE_COLUMNS = ["n_annotators", "votes", "label", "n_examples", "share"]
MAJORITY_COLUMNS = [
    "model",
    "label",
    "n_examples",
    "n_agree",
    "agreement",
    "n_majority_error",
    "n_model_error",
    "error_recall",
    "reason",
]


# --------------------------------------------------------------------------------------
# Dataset level (Table 4)
# --------------------------------------------------------------------------------------


def campaign_span_counts(
    spans: pd.DataFrame,
    campaign: str | Sequence[str] = "source",
    *,
    labels: Sequence[Hashable] | None = None,
    examples: pd.DataFrame | Sequence[object] | None = None,
    example_key: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Spans per label and campaign: campaign column(s), total_spans, label, n_spans, share.

    ``campaign`` names the column(s) that define a campaign (``source``, an annotator
    group, a stage). ``share`` is ``n_spans / total_spans`` of the campaign (NaN, with a
    campaign of no spans). Every label of ``labels`` (default: all labels) gets a row in
    every campaign, 0 when unused. ``examples`` restricts the counts to a subset of examples
    (Table 4 counts on the 245 examples of Stage 2).

    >>> spans = pd.DataFrame({"task_id": [1, 1, 2, 2], "source": ["human", "human", "human", "model:x"],
    ...                       "label": ["I", "M", "M", "I"]})
    >>> campaign_span_counts(spans)[["source", "total_spans", "label", "n_spans", "share"]].values.tolist()
    [['human', 3, 'I', 1, 0.3333333333333333], ['human', 3, 'M', 2, 0.6666666666666666], \
['model:x', 1, 'I', 1, 1.0], ['model:x', 1, 'M', 0, 0.0]]
    """
    keys = [campaign] if isinstance(campaign, str) else list(campaign)
    columns = [*keys, "total_spans", "label", "n_spans", "share"]
    if spans.empty:
        return pd.DataFrame(columns=columns)
    missing = [column for column in keys if column not in spans.columns]
    if missing:
        raise ValueError(f"the spans table lacks campaign column(s) {missing}")
    frame = spans.copy(deep=False)  # a column set below replaces it in the copy only (copy on write)
    raw = frame["label"] if "label" in frame.columns else pd.Series(NO_LABEL, index=frame.index)
    frame["label"] = raw.where(raw.notna() & (raw.astype(str) != ""), NO_LABEL)
    if examples is not None:
        key = list(example_key) if example_key is not None else default_example_key(frame.columns)
        table, _ = _example_table(frame, examples, key, "")
        chosen = key_codes(table, frame[key]) >= 0
        frame = frame[chosen]
    label_order = list(dict.fromkeys(labels)) if labels is not None else sorted(set(frame["label"]), key=str)
    frame = frame[frame["label"].isin(label_order)]
    campaigns = spans[keys].drop_duplicates().sort_values(keys, key=_sort_key).reset_index(drop=True)
    grid = campaigns.merge(pd.DataFrame({"label": label_order}), how="cross")
    counts = frame.groupby([*keys, "label"], dropna=False).size().rename("n_spans").reset_index()
    table = grid.merge(counts, on=[*keys, "label"], how="left")
    table["n_spans"] = table["n_spans"].fillna(0).astype(int)
    table["total_spans"] = table.groupby(keys, dropna=False)["n_spans"].transform("sum").astype(int)
    with np.errstate(invalid="ignore", divide="ignore"):
        table["share"] = np.where(table["total_spans"] > 0, table["n_spans"] / table["total_spans"], math.nan)
    return table[columns]


def format_campaign_counts(counts: pd.DataFrame, campaign: str | Sequence[str] = "source") -> pd.DataFrame:
    """Table 4 layout: one row per campaign, ``Total Spans`` and ``"27 (21%)"`` per label."""
    keys = [campaign] if isinstance(campaign, str) else list(campaign)
    if counts.empty:
        return pd.DataFrame(columns=[*keys, "Total Spans"])
    cells = counts.assign(cell=[_count_share(n, s) for n, s in zip(counts["n_spans"], counts["share"], strict=True)])
    wide = cells.pivot_table(index=keys, columns="label", values="cell", aggfunc="first", sort=False)
    totals = counts.groupby(keys, sort=False)["total_spans"].first()
    wide.insert(0, "Total Spans", totals)
    wide.columns.name = None
    return wide.reset_index()


# --------------------------------------------------------------------------------------
# Example level (Table 5)
# --------------------------------------------------------------------------------------


def example_votes(
    spans: pd.DataFrame,
    examples: pd.DataFrame | Sequence[object] | None = None,
    annotators: Sequence[Hashable] | None = None,
    *,
    labels: Sequence[Hashable] | None = None,
    example_key: Sequence[str] | None = None,
    annotator_col: str = "annotator",
) -> pd.DataFrame:
    """Per example and label: how many of the example's annotators marked that label.

    Columns: the example key, label (each label, then ``"(any)"``), n_annotators (who
    annotated the example), votes. An annotator votes for a label in an example when they
    marked at least one span of it there (spans without offsets count too).
    """
    design = span_design(
        spans, examples, annotators, example_key=example_key, annotator_col=annotator_col, labels=labels
    )
    votes, any_votes = _vote_matrices(design)
    return _votes_frame(design, votes, any_votes)


def _vote_matrices(design: SpanDesign, annotator_codes: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``votes[e, l]`` and ``any_votes[e]`` among ``annotator_codes`` (default: all)."""
    n_examples, n_labels, n_annotators = design.n_examples, len(design.labels), len(design.annotators)
    chosen = np.ones(len(design.example), dtype=bool)
    if annotator_codes is not None:
        chosen = np.isin(design.annotator, annotator_codes)
    marked = np.zeros((n_examples, n_labels, n_annotators), dtype=bool)
    marked[design.example[chosen], design.label[chosen], design.annotator[chosen]] = True
    return marked.sum(axis=2), marked.any(axis=1).sum(axis=1)


def _votes_frame(design: SpanDesign, votes: np.ndarray, any_votes: np.ndarray) -> pd.DataFrame:
    n_annotators = design.coverage.sum(axis=1)
    label_names = [*design.labels, ANY_LABEL]
    all_votes = np.column_stack([votes, any_votes])
    n_labels = len(label_names)
    frame = design.examples.loc[np.repeat(np.arange(design.n_examples), n_labels)].reset_index(drop=True)
    frame["label"] = np.tile(np.array(label_names, dtype=object), design.n_examples)
    frame["n_annotators"] = np.repeat(n_annotators, n_labels).astype(int)
    frame["votes"] = all_votes.reshape(-1).astype(int)
    return frame


def vote_table(
    spans: pd.DataFrame,
    examples: pd.DataFrame | Sequence[object] | None = None,
    annotators: Sequence[Hashable] | None = None,
    *,
    labels: Sequence[Hashable] | None = None,
    example_key: Sequence[str] | None = None,
    annotator_col: str = "annotator",
) -> pd.DataFrame:
    """How many examples got 0..N votes per label and for any error (Table 5), long format.

    Columns: n_annotators, votes, label, n_examples, share. Examples are grouped by how many
    annotators annotated them (one block per N; Table 5 has the single block N = 4);
    ``share`` is of the block's examples. Every (votes, label) of 0..N is listed, 0 when no
    example has it. No examples: an empty table.

    >>> spans = pd.DataFrame({"task_id": [1, 1, 2], "annotator": ["a", "b", "a"], "label": ["I", "M", "I"]})
    >>> table = vote_table(spans, examples=[1, 2, 3], annotators=["a", "b"])
    >>> table[table.label == "(any)"][["votes", "n_examples"]].values.tolist()
    [[0, 1], [1, 1], [2, 1]]
    """
    votes = example_votes(
        spans, examples, annotators, labels=labels, example_key=example_key, annotator_col=annotator_col
    )
    if votes.empty:
        return pd.DataFrame(columns=VOTE_COLUMNS)
    label_order = list(dict.fromkeys(votes["label"]))
    blocks = []
    for n_annotators, block in votes.groupby("n_annotators", sort=True):
        n_block_examples = len(block) // len(label_order)
        grid = pd.MultiIndex.from_product([range(int(n_annotators) + 1), label_order], names=["votes", "label"])
        counts = block.groupby(["votes", "label"], sort=False).size().reindex(grid, fill_value=0)
        part = counts.rename("n_examples").reset_index()
        part.insert(0, "n_annotators", int(n_annotators))
        part["share"] = part["n_examples"] / n_block_examples
        blocks.append(part)
    table = pd.concat(blocks, ignore_index=True)
    table["n_examples"] = table["n_examples"].astype(int)
    return table[VOTE_COLUMNS]


def format_vote_table(table: pd.DataFrame, n_annotators: int | None = None) -> pd.DataFrame:
    """Table 5 layout for one block: rows E = votes, a ``"110 (45%)"`` column per label.

    ``n_annotators`` picks the block (default: the block with most examples).
    """
    if table.empty:
        return pd.DataFrame(columns=["E"])
    if n_annotators is None:
        block_sizes = table[table["label"] == ANY_LABEL].groupby("n_annotators")["n_examples"].sum()
        n_annotators = int(block_sizes.idxmax()) if len(block_sizes) else int(table["n_annotators"].iloc[0])
    block = table[table["n_annotators"] == n_annotators]
    cells = block.assign(cell=[_count_share(n, s) for n, s in zip(block["n_examples"], block["share"], strict=True)])
    wide = cells.pivot_table(index="votes", columns="label", values="cell", aggfunc="first", sort=False)
    wide.columns.name = None
    return wide.rename_axis("E").reset_index()


# --------------------------------------------------------------------------------------
# Matching spans of two annotators, label confusion
# --------------------------------------------------------------------------------------


def matched_spans(
    spans: pd.DataFrame,
    reference: Hashable | Sequence[Hashable],
    hypothesis: Hashable | Sequence[Hashable],
    examples: pd.DataFrame | Sequence[object] | None = None,
    *,
    example_key: Sequence[str] | None = None,
    annotator_col: str = "annotator",
    labels: Sequence[Hashable] | None = None,
) -> pd.DataFrame:
    """One-to-one matching of a reference annotator's spans to a hypothesis annotator's.

    Two spans can match when they share a character (labels are ignored). Matching is
    greedy by largest overlap (ties: earlier reference span, then earlier hypothesis span);
    each span is matched at most once, and spans left over appear with the other side
    empty (missing offsets and label, overlap 0). ``reference``/``hypothesis`` may be
    lists (annotator groups): every pair of distinct annotators across them is matched on
    the examples both annotated. Spans without offsets are left out.

    Columns: the example key, field, reference, hypothesis, reference_start,
    reference_end, reference_label, hypothesis_start, hypothesis_end, hypothesis_label,
    overlap.
    """
    design, pairs = _pair_design(spans, reference, hypothesis, examples, example_key, annotator_col, labels)
    parts = [_match_pair(design, ref, hyp) for ref, hyp in pairs]
    columns = [
        *design.key,
        "field",
        "reference",
        "hypothesis",
        "reference_start",
        "reference_end",
        "reference_label",
        "hypothesis_start",
        "hypothesis_end",
        "hypothesis_label",
        "overlap",
    ]
    non_empty = [part for part in parts if not part.empty]
    if not non_empty:
        return pd.DataFrame(columns=columns)
    return pd.concat(non_empty, ignore_index=True)[columns]


def _pair_design(
    spans: pd.DataFrame,
    reference: Hashable | Sequence[Hashable],
    hypothesis: Hashable | Sequence[Hashable],
    examples: pd.DataFrame | Sequence[object] | None,
    example_key: Sequence[str] | None,
    annotator_col: str,
    labels: Sequence[Hashable] | None,
) -> tuple[SpanDesign, list[tuple[int, int]]]:
    """The design of :func:`matched_spans` and the codes of every pair of distinct annotators it matches."""
    references = _as_list(reference)
    hypotheses = _as_list(hypothesis)
    design = span_design(
        spans,
        examples,
        list(dict.fromkeys([*references, *hypotheses])),
        example_key=example_key,
        annotator_col=annotator_col,
        labels=labels,
    )
    pairs = [
        (design.annotator_code(ref_name), design.annotator_code(hyp_name))
        for ref_name in references
        for hyp_name in hypotheses
        if ref_name != hyp_name
    ]
    return design, pairs


def _pair_matches(design: SpanDesign, ref: int, hyp: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of :func:`matched_spans` for one pair, as span indices of ``design``: the reference
    side, the hypothesis side (-1 where that side is empty) and the overlap."""
    shared = design.coverage[:, ref] & design.coverage[:, hyp]
    usable = design.positioned & shared[design.example]
    ref_rows = np.flatnonzero(usable & (design.annotator == ref))
    hyp_rows = np.flatnonzero(usable & (design.annotator == hyp))
    first, second = overlapping_pairs(
        design.continuum[ref_rows],
        design.start[ref_rows],
        design.end[ref_rows],
        design.continuum[hyp_rows],
        design.start[hyp_rows],
        design.end[hyp_rows],
    )
    overlap = np.minimum(design.end[ref_rows][first], design.end[hyp_rows][second]) - np.maximum(
        design.start[ref_rows][first], design.start[hyp_rows][second]
    )
    order = np.lexsort((second, first, -overlap))
    ref_match = np.full(len(ref_rows), -1, dtype=np.int64)
    hyp_taken = np.zeros(len(hyp_rows), dtype=bool)
    match_overlap = np.zeros(len(ref_rows), dtype=np.int64)
    for index in order.tolist():
        i, j = first[index], second[index]
        if ref_match[i] < 0 and not hyp_taken[j]:
            ref_match[i] = j
            hyp_taken[j] = True
            match_overlap[i] = overlap[index]
    matched_hyp = np.full(len(ref_rows), -1, dtype=np.int64)
    matched_hyp[ref_match >= 0] = hyp_rows[ref_match[ref_match >= 0]]
    pair_rows = [
        (ref_rows, matched_hyp, match_overlap),
        (np.full((~hyp_taken).sum(), -1), hyp_rows[~hyp_taken], np.zeros((~hyp_taken).sum(), dtype=np.int64)),
    ]
    ref_side = np.concatenate([rows[0] for rows in pair_rows])
    hyp_side = np.concatenate([rows[1] for rows in pair_rows])
    overlaps = np.concatenate([rows[2] for rows in pair_rows])
    return ref_side, hyp_side, overlaps


def _side_codes(design: SpanDesign, rows: np.ndarray) -> np.ndarray:
    """The label code of each span index in ``rows``, -1 where the side is empty (-1)."""
    return np.where(rows >= 0, design.label[np.maximum(rows, 0)], -1) if len(rows) else np.array([], dtype=np.int64)


def _side_labels(design: SpanDesign, rows: np.ndarray) -> np.ndarray:
    """The label of each span index in ``rows``, None where the side is empty (-1)."""
    if not len(rows):
        return np.array([], dtype=object)
    return np.where(rows >= 0, design.labels[design.label[np.maximum(rows, 0)]] if len(design.labels) else None, None)


def _match_pair(design: SpanDesign, ref: int, hyp: int) -> pd.DataFrame:
    ref_side, hyp_side, overlaps = _pair_matches(design, ref, hyp)
    anchor = np.where(ref_side >= 0, ref_side, hyp_side)
    frame = design.examples.iloc[design.example[anchor]].reset_index(drop=True)
    frame["field"] = design.continua["field"].to_numpy()[design.continuum[anchor]] if len(anchor) else []
    frame["reference"] = design.annotators[ref]
    frame["hypothesis"] = design.annotators[hyp]
    for side, rows in (("reference", ref_side), ("hypothesis", hyp_side)):
        present = rows >= 0
        safe = np.maximum(rows, 0)
        frame[f"{side}_start"] = np.where(present, design.start[safe], np.nan) if len(rows) else []
        frame[f"{side}_end"] = np.where(present, design.end[safe], np.nan) if len(rows) else []
        frame[f"{side}_label"] = _side_labels(design, rows) if len(rows) else []
    frame["overlap"] = overlaps
    return frame


def label_confusion(
    spans: pd.DataFrame,
    reference: Hashable | Sequence[Hashable],
    hypothesis: Hashable | Sequence[Hashable],
    examples: pd.DataFrame | Sequence[object] | None = None,
    *,
    example_key: Sequence[str] | None = None,
    annotator_col: str = "annotator",
    labels: Sequence[Hashable] | None = None,
) -> pd.DataFrame:
    """Label confusion matrix of matched spans (see :func:`matched_spans`).

    Rows are the reference label (index named ``reference``), columns the hypothesis label
    (named ``hypothesis``); ``"(unmatched)"`` counts spans the other annotator has no
    overlapping span for. All labels appear on both axes.

    >>> spans = pd.DataFrame({"task_id": [1, 1, 1], "annotator": ["a", "b", "a"],
    ...     "start": [0, 2, 10], "end": [5, 6, 12], "label": ["I", "M", "I"]})
    >>> label_confusion(spans, "a", "b").loc["I"].to_dict()
    {'I': 0, 'M': 1, '(unmatched)': 1}
    """
    # the labels of matched_spans' rows, without the rows' other columns (at 100,000 tasks the
    # matched rows of every pair of annotators, copied with their example's key, were 150 MiB)
    design, pairs = _pair_design(spans, reference, hypothesis, examples, example_key, annotator_col, labels)
    # counted as label codes (-1: no span on that side), pair by pair: no row per matched span
    n = len(design.labels) + 1
    counts = np.zeros(n * n, dtype=np.int64)
    for ref, hyp in pairs:
        ref_side, hyp_side = _pair_matches(design, ref, hyp)[:2]
        cells = (_side_codes(design, ref_side) + 1) * n + _side_codes(design, hyp_side) + 1
        counts += np.bincount(cells, minlength=n * n)
    names = [UNMATCHED, *design.labels]
    table = pd.DataFrame(counts.reshape(n, n), index=names, columns=names)
    if labels is not None:
        order = list(dict.fromkeys(labels))
    else:
        marked = (table.iloc[1:].sum(axis=1) + table.iloc[:, 1:].sum(axis=0)) > 0
        order = sorted(marked.index[marked.to_numpy()], key=str)
    axis = [*order, UNMATCHED]
    confusion = table.reindex(index=axis, columns=axis, fill_value=0).astype(int)
    confusion.index.name = "reference"
    confusion.columns.name = "hypothesis"
    return confusion


# --------------------------------------------------------------------------------------
# Models against the human majority (the conservative alignment paradox)
# --------------------------------------------------------------------------------------


def model_majority_agreement(
    spans: pd.DataFrame,
    examples: pd.DataFrame | Sequence[object] | None,
    humans: Sequence[Hashable],
    models: Sequence[Hashable],
    *,
    consensus: float | int = 0.75,
    labels: Sequence[Hashable] | None = None,
    example_key: Sequence[str] | None = None,
    annotator_col: str = "annotator",
) -> pd.DataFrame:
    """Agreement of each model with a clear human majority, per error type and for any error.

    For an example and an error type, the humans who annotated the example split into those
    who marked the type (votes) and those who did not. The majority is *clear* when its side
    holds at least ``consensus`` of them (a share, e.g. 0.75: 3-1 or 4-0 of four) or, if
    ``consensus`` is an int, at least that many annotators; it must also be a strict
    majority. On examples with a clear majority the model agrees when it marked the type
    (at least one span) exactly when the majority did. ``"(any)"`` does the same for "marked
    any error"; ``"(per type)"`` pools all (example, type) decisions of the types.

    Rows: each model, then ``"(always no error)"`` (the majority-class baseline: a model that
    marks nothing), each with one row per type, ``"(per type)"`` and ``"(any)"``. Columns:
    model, label, n_examples (decisions with a clear majority that the model annotated),
    n_agree, agreement, n_majority_error (of them, the majority said "error"),
    n_model_error, error_recall (share of majority-"error" decisions the model also marked:
    the minority class the per-type agreement hides), reason (when n_examples is 0).
    """
    humans = list(dict.fromkeys(humans))
    models = list(dict.fromkeys(models))
    overlap = set(humans) & set(models)
    if overlap:
        raise ValueError(f"annotators cannot be both human and model: {sorted(overlap, key=str)}")
    design = span_design(
        spans,
        examples,
        [*humans, *models],
        example_key=example_key,
        annotator_col=annotator_col,
        labels=labels,
    )
    human_codes = np.array([design.annotator_code(name) for name in humans], dtype=np.int64)
    n_humans = design.coverage[:, human_codes].sum(axis=1) if len(human_codes) else np.zeros(design.n_examples)
    votes, any_votes = _vote_matrices(design, human_codes)
    clear, majority_error = _clear_majority(np.column_stack([votes, any_votes]), n_humans, consensus)
    rows = []
    for name in [*models, ALWAYS_NO_ERROR]:
        covered, predicted = _model_decisions(design, name, clear)
        scope = clear & covered[:, None]
        agree = scope & (predicted == majority_error)
        rows += _model_rows(name, design.labels, scope, agree, majority_error, predicted)
    return pd.DataFrame(rows, columns=MAJORITY_COLUMNS)


def _clear_majority(
    decisions: np.ndarray, n_humans: np.ndarray, consensus: float | int
) -> tuple[np.ndarray, np.ndarray]:
    """Per (example, decision): whether the humans' majority is clear (its side holds ``consensus``
    of them, a share or a number, and is strict), and whether the majority says "error"."""
    majority_size = np.maximum(decisions, n_humans[:, None] - decisions)
    if isinstance(consensus, bool) or not isinstance(consensus, int | float):
        raise ValueError(f"consensus must be a share in (0.5, 1] or a number of annotators, got {consensus!r}")
    if isinstance(consensus, int):
        clear = majority_size >= consensus
    else:
        clear = majority_size >= consensus * n_humans[:, None] - 1e-12
    clear &= (2 * majority_size > n_humans[:, None]) & (n_humans[:, None] > 0)
    majority_error = 2 * decisions > n_humans[:, None]
    return clear, majority_error


def _model_decisions(design: SpanDesign, name: Hashable, clear: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(examples the model annotated, its decisions like the humans': each type marked, any
    marked); the always-no-error baseline annotated everything and marked nothing."""
    if name == ALWAYS_NO_ERROR:
        return np.ones(design.n_examples, dtype=bool), np.zeros_like(clear)
    code = design.annotator_code(name)
    model_votes, model_any = _vote_matrices(design, np.array([code]))
    return design.coverage[:, code], np.column_stack([model_votes, model_any]).astype(bool)


def _model_rows(
    name: Hashable,
    labels: np.ndarray,
    scope: np.ndarray,
    agree: np.ndarray,
    majority_error: np.ndarray,
    predicted: np.ndarray,
) -> list[dict]:
    """A model's rows: one per type, the types' decisions pooled (``PER_TYPE``), then "any error"
    (the last decision column)."""
    types = slice(0, len(labels))
    rows = [
        _majority_row(name, label, scope[:, column], agree[:, column], majority_error[:, column], predicted[:, column])
        for column, label in enumerate(labels)
    ]
    rows.append(
        _majority_row(
            name,
            PER_TYPE,
            scope[:, types].ravel(),
            agree[:, types].ravel(),
            majority_error[:, types].ravel(),
            predicted[:, types].ravel(),
        )
    )
    rows.append(_majority_row(name, ANY_LABEL, scope[:, -1], agree[:, -1], majority_error[:, -1], predicted[:, -1]))
    return rows


def _majority_row(
    model: Hashable,
    label: Hashable,
    scope: np.ndarray,
    agree: np.ndarray,
    majority_error: np.ndarray,
    predicted: np.ndarray,
) -> dict:
    n_examples = int(scope.sum())
    n_majority_error = int((scope & majority_error).sum())
    n_hits = int((scope & majority_error & predicted).sum())
    return {
        "model": model,
        "label": label,
        "n_examples": n_examples,
        "n_agree": int(agree.sum()),
        "agreement": float(agree.sum() / n_examples) if n_examples else math.nan,
        "n_majority_error": n_majority_error,
        "n_model_error": int((scope & predicted).sum()),
        "error_recall": n_hits / n_majority_error if n_majority_error else math.nan,
        "reason": None if n_examples else "no example with a clear human majority that the model annotated",
    }


def alignment_paradox(agreement: pd.DataFrame) -> pd.DataFrame:
    """Per model, per-type agreement next to any-error agreement (from
    :func:`model_majority_agreement`): model, per_type_agreement, any_error_agreement,
    drop (per-type minus any-error), per_type_error_recall, any_error_recall,
    n_per_type, n_any. A large drop with a low error recall is the conservative alignment
    paradox: agreement earned by saying "no error".
    """
    columns = [
        "model",
        "per_type_agreement",
        "any_error_agreement",
        "drop",
        "per_type_error_recall",
        "any_error_recall",
        "n_per_type",
        "n_any",
    ]
    if agreement.empty:
        return pd.DataFrame(columns=columns)
    per_type = agreement[agreement["label"] == PER_TYPE].set_index("model")
    any_error = agreement[agreement["label"] == ANY_LABEL].set_index("model")
    models = list(dict.fromkeys(agreement["model"]))
    table = pd.DataFrame({"model": models})
    table["per_type_agreement"] = per_type["agreement"].reindex(models).to_numpy()
    table["any_error_agreement"] = any_error["agreement"].reindex(models).to_numpy()
    table["drop"] = table["per_type_agreement"] - table["any_error_agreement"]
    table["per_type_error_recall"] = per_type["error_recall"].reindex(models).to_numpy()
    table["any_error_recall"] = any_error["error_recall"].reindex(models).to_numpy()
    table["n_per_type"] = per_type["n_examples"].reindex(models).fillna(0).astype(int).to_numpy()
    table["n_any"] = any_error["n_examples"].reindex(models).fillna(0).astype(int).to_numpy()
    return table[columns]


# --------------------------------------------------------------------------------------


def _as_list(value: Hashable | Sequence[Hashable]) -> list[Hashable]:
    if isinstance(value, list | tuple | np.ndarray | pd.Index | pd.Series):
        return list(value)
    return [value]


def _count_share(count: int, share: float) -> str:
    return f"{int(count)} ({share:.0%})" if isinstance(share, float) and not math.isnan(share) else f"{int(count)}"


def _sort_key(column: pd.Series) -> pd.Series:
    return column.map(str)
