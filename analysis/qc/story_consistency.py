"""Quality control for line-by-line story-summary consistency (seed 002, StorySumm).

Line items are ``line_<i>`` with values ``Consistent``, ``Inconsistent`` or ``N/A, just
commentary``; the summary-level item is ``faithful`` (``Faithful`` / ``Unfaithful``).

- :func:`line_agreement`: agreement among annotators on lines (a unit is one line of one
  task), on the three verdicts and on inconsistent-vs-rest: exact agreement, Fleiss' kappa,
  Cohen's kappa (exactly two annotators) and the mean pairwise Cohen's kappa.
- :func:`pairwise_line_kappa`: Cohen's kappa of every pair of annotators on lines.
- :func:`summary_faithfulness_from_lines`: an annotation's summary verdict derived from its
  lines: ``Unfaithful`` when any line is ``Inconsistent``.
- :func:`judges_vs_gold`: every judge (source and annotator) against the gold labels:
  Cohen's kappa, balanced accuracy, precision and recall of the unfaithful (inconsistent)
  class, at summary level and at line level.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from judgelab.analysis.agreement import category_counts, cohen_kappa, exact_agreement, fleiss_kappa
from judgelab.analysis.krippendorff import krippendorff_alpha
from judgelab.analysis.ratings import latest_per_task, unit_keys
from judgelab.analysis.tables import HUMAN_SOURCE, latest_annotations, natural_key, usable_judgments
from judgelab.configs import story_words as words
from judgelab.configs.items import pattern_regex
from judgelab.configs.story_words import (
    CONSISTENT,
    FAITHFUL,
    INCONSISTENT,
    NOT_APPLICABLE,
    SUMMARY_ITEM,
    UNFAITHFUL,
)

GOLD_SOURCE = "gold"
LINE_ITEM = pattern_regex(words.LINE_ITEM)
REST = "rest"

LINE_AGREEMENT_COLUMNS = [
    "scheme",
    "n_units",
    "n_annotators",
    "n_ratings",
    "exact_agreement",
    "fleiss_kappa",
    "cohen_kappa",
    "mean_pairwise_cohen_kappa",
    "reason",
    # added later: after ``reason`` so that the original columns keep their positions
    "krippendorff_alpha",
    "share_all_agree",
    "min_pair_units",
]


def line_rows(
    judgments: pd.DataFrame,
    *,
    source: str | None = HUMAN_SOURCE,
    annotators: Sequence[str] | None = None,
    project: object | None = None,
) -> pd.DataFrame:
    """Line verdicts of ``source``, one annotation per (task, annotator) (the latest)."""
    rows = judgments if project is None else judgments[judgments["project"] == project]
    rows = usable_judgments(rows, source=source)
    rows = rows[rows["item"].astype(str).str.match(LINE_ITEM)]
    if annotators is not None:
        rows = rows[rows["annotator"].isin(list(annotators))]
    return latest_per_task(rows)


def line_matrix(rows: pd.DataFrame, *, binary: bool = False) -> pd.DataFrame:
    """Units (``project``, ``task_id``, ``item``) x annotators; ``binary`` maps verdicts to
    ``Inconsistent`` / ``rest``."""
    values = rows.assign(value=rows["value"].astype(str).str.strip())
    if binary:
        values["value"] = np.where(values["value"] == INCONSISTENT, INCONSISTENT, REST)
    matrix = values.pivot_table(
        index=[*unit_keys(values), "item"], columns="annotator", values="value", aggfunc="last"
    ).astype(object)
    return matrix.where(matrix.notna(), None)


def line_agreement(
    judgments: pd.DataFrame,
    *,
    source: str | None = HUMAN_SOURCE,
    annotators: Sequence[str] | None = None,
    project: object | None = None,
) -> pd.DataFrame:
    """Line-level agreement, one row per scheme (``three verdicts``, ``inconsistent vs rest``).

    A unit is one line of one task; ``n_units`` counts the lines rated by two or more of the
    annotators. ``annotators`` restricts to some of them (e.g. the main annotators, leaving
    out a pilot crowd). ``cohen_kappa`` needs exactly two annotators on the shared units;
    ``mean_pairwise_cohen_kappa`` (Light's kappa) averages Cohen's kappa over every pair.
    """
    rows = line_rows(judgments, source=source, annotators=annotators, project=project)
    result = []
    for scheme, binary in (("three verdicts", False), ("inconsistent vs rest", True)):
        if rows.empty:
            result.append({"scheme": scheme, "n_units": 0, "reason": "no line judgments"})
            continue
        matrix = line_matrix(rows, binary=binary)
        values = matrix.to_numpy(dtype=object)
        rated = ~pd.isna(values)
        exact = exact_agreement(values)
        fleiss = fleiss_kappa(values)
        pairwise = pairwise_line_kappa(matrix)
        shared = rated.sum(axis=1) >= 2
        raters_on_shared = np.flatnonzero(rated[shared].any(axis=0))
        if len(raters_on_shared) == 2:
            cohen = cohen_kappa(values[:, raters_on_shared[0]], values[:, raters_on_shared[1]])
        else:
            cohen = None
        reasons = [r.reason for r in (exact, fleiss, cohen) if r is not None and r.reason]
        alpha = krippendorff_alpha(values, "nominal")
        counts = category_counts(values)
        per_unit = counts.sum(axis=1)
        judged_twice = per_unit >= 2
        all_agree = (counts.max(axis=1) == per_unit)[judged_twice]
        result.append(
            {
                "scheme": scheme,
                "n_units": exact.n_units,
                "n_annotators": int(rated.any(axis=0).sum()),
                "n_ratings": int(rated.sum()),
                "exact_agreement": exact.value,
                "fleiss_kappa": fleiss.value,
                "cohen_kappa": cohen.value if cohen is not None else float("nan"),
                "mean_pairwise_cohen_kappa": pairwise["cohen_kappa"].mean() if len(pairwise) else float("nan"),
                "reason": "; ".join(dict.fromkeys(reasons)),
                "krippendorff_alpha": alpha.value,
                "share_all_agree": float(all_agree.mean()) if len(all_agree) else float("nan"),
                "min_pair_units": int(pairwise.loc[pairwise["n_units"] > 0, "n_units"].min())
                if (pairwise["n_units"] > 0).any()
                else 0,
            }
        )
    return pd.DataFrame(result, columns=LINE_AGREEMENT_COLUMNS)


def pairwise_line_kappa(matrix: pd.DataFrame) -> pd.DataFrame:
    """Cohen's kappa of every pair of annotators (columns of a units x annotators matrix)."""
    rows = []
    names = sorted(matrix.columns, key=natural_key)
    for a, b in itertools.combinations(names, 2):
        result = cohen_kappa(matrix[a].to_numpy(dtype=object), matrix[b].to_numpy(dtype=object))
        rows.append(
            {
                "annotator_a": a,
                "annotator_b": b,
                "n_units": result.n_units,
                "cohen_kappa": result.value,
                "reason": result.reason or "",
            }
        )
    return pd.DataFrame(rows, columns=["annotator_a", "annotator_b", "n_units", "cohen_kappa", "reason"])


def summary_faithfulness_from_lines(judgments: pd.DataFrame, *, source: str | None = None) -> pd.DataFrame:
    """Per annotation with line verdicts: ``Unfaithful`` when any line is ``Inconsistent``.

    Columns: ``project, task_id, annotation_id, annotator, source, n_lines, n_inconsistent,
    n_not_applicable, value``. ``source=None`` keeps every source (gold and judges too).
    """
    rows = usable_judgments(judgments, source=source)
    rows = rows[rows["item"].astype(str).str.match(LINE_ITEM)]
    columns = ["project", "task_id", "annotation_id", "annotator", "source"]
    out_columns = [*columns, "n_lines", "n_inconsistent", "n_not_applicable", "value"]
    if rows.empty:
        return pd.DataFrame(columns=out_columns)
    values = rows["value"].astype(str).str.strip()
    rows = rows.assign(_inc=values == INCONSISTENT, _na=values == NOT_APPLICABLE)
    present = [c for c in columns if c in rows.columns]
    derived = (
        rows.groupby(present, dropna=False, sort=False)
        .agg(n_lines=("item", "nunique"), n_inconsistent=("_inc", "sum"), n_not_applicable=("_na", "sum"))
        .reset_index()
    )
    derived["value"] = np.where(derived["n_inconsistent"] > 0, UNFAITHFUL, FAITHFUL)
    return derived.reindex(columns=out_columns)


JUDGE_COLUMNS = [
    "level",
    "source",
    "annotator",
    "n_units",
    "n_gold_positive",
    "n_predicted_positive",
    "true_positive",
    "false_positive",
    "false_negative",
    "true_negative",
    "cohen_kappa",
    "balanced_accuracy",
    "precision_unfaithful",
    "recall_unfaithful",
    "reason",
    # added later: after ``reason`` so that the original columns keep their positions
    "share_judged_faithful",
    "precision_faithful",
    "recall_faithful",
]


def judges_vs_gold(
    judgments: pd.DataFrame,
    *,
    gold_source: str = GOLD_SOURCE,
    gold_project: object | None = None,
    levels: Sequence[str] = ("summary", "line"),
    derive_summary_from_lines: bool = False,
    task_groups: Mapping[object, object] | None = None,
) -> pd.DataFrame:
    """Every judge (``source``, ``annotator``) against the gold labels.

    The positive class is the problem: ``Unfaithful`` at summary level (item ``faithful``),
    ``Inconsistent`` at line level (items ``line_<i>``; ``N/A`` lines count as not
    inconsistent). Units are matched on ``task_id`` (and ``item`` for lines), so a gold
    table from another project (StorySumm's labels for the evaluation-interface
    annotators) works; ``gold_project`` picks one project's gold when several have it.
    A judge's latest annotation per task counts. ``derive_summary_from_lines`` makes a
    judge without summary labels get one from its lines (:func:`summary_faithfulness_from_lines`).

    Columns: ``level, source, annotator, n_units``, gold and predicted positives, the
    confusion counts, ``cohen_kappa``, ``balanced_accuracy`` (mean of the recalls of both
    classes), precision and recall of each class, named (``precision_unfaithful``,
    ``recall_unfaithful``, ``precision_faithful``, ``recall_faithful``: StorySumm's tables use
    the faithful class), ``share_judged_faithful`` and ``reason``. ``task_groups`` (task id ->
    group, e.g. StorySumm's ``difficulty``) adds ``flagged_<group>`` at summary level: the share
    of the group's gold-unfaithful summaries the judge calls unfaithful (StorySumm's '% easy' and
    '% hard').
    """
    frame = usable_judgments(judgments, source=None)
    gold = frame[frame["source"] == gold_source]
    if gold_project is not None:
        gold = gold[gold["project"] == gold_project]
    judges = frame[frame["source"] != gold_source]
    rows = []
    for level in levels:
        gold_labels = _gold_labels(gold, level)
        judge_labels = _labels(judges, level)
        if level == "summary" and derive_summary_from_lines:
            judge_labels = _add_derived(judges, judge_labels)
        for (source, annotator), labels in judge_labels.groupby(["source", "annotator"], sort=False):
            merged = labels.merge(
                gold_labels[["task_id", "item", "positive"]], on=["task_id", "item"], suffixes=("", "_gold")
            )
            groups = task_groups if level == "summary" else None
            rows.append({"level": level, "source": source, "annotator": annotator, **_binary_scores(merged, groups)})
    extra = sorted({key for row in rows for key in row if key.startswith("flagged_")}, key=natural_key)
    return _judges_in_order(pd.DataFrame(rows, columns=[*JUDGE_COLUMNS, *extra]))


def _gold_labels(gold: pd.DataFrame, level: str) -> pd.DataFrame:
    """The gold labels of one level, one per unit: the same unit labelled in several projects
    counts once, and ``ValueError`` when those labels disagree."""
    gold_labels = _labels(gold, level)
    duplicated = gold_labels.duplicated(subset=["task_id", "item"], keep=False)
    if not duplicated.any():
        return gold_labels
    clashing = gold_labels[duplicated].groupby(["task_id", "item"])["positive"].nunique()
    if (clashing > 1).any():
        raise ValueError(
            f"gold labels disagree for {int((clashing > 1).sum())} {level} units across projects; "
            "pass gold_project to pick one"
        )
    return gold_labels.drop_duplicates(subset=["task_id", "item"])


def _judges_in_order(table: pd.DataFrame) -> pd.DataFrame:
    """The judges table with summary level first, then by source and annotator in natural order."""
    order = sorted(
        range(len(table)),
        key=lambda i: (
            table["level"].iloc[i] != "summary",
            natural_key(table["source"].iloc[i]),
            natural_key(table["annotator"].iloc[i]),
        ),
    )
    return table.iloc[order].reset_index(drop=True)


def _labels(rows: pd.DataFrame, level: str) -> pd.DataFrame:
    """``source, annotator, task_id, item, positive`` for one level, latest annotation."""
    columns = ["source", "annotator", "task_id", "item", "positive"]
    if level == "summary":
        chosen = rows[rows["item"] == SUMMARY_ITEM]
        positive_value = UNFAITHFUL
        known = {FAITHFUL, UNFAITHFUL}
    elif level == "line":
        chosen = rows[rows["item"].astype(str).str.match(LINE_ITEM)]
        positive_value = INCONSISTENT
        known = {CONSISTENT, INCONSISTENT, NOT_APPLICABLE}
    else:
        raise ValueError(f"unknown level {level!r}; use 'summary' or 'line'")
    if chosen.empty:
        return pd.DataFrame(columns=columns)
    values = chosen["value"].astype(str).str.strip()
    chosen = chosen[values.isin(known)]
    # one annotation per (judge, task): a judge is a (source, annotator) pair
    keyed = chosen.assign(annotator=chosen["source"].astype(str) + "\x00" + chosen["annotator"].astype(str))
    keep = latest_annotations(keyed)
    chosen = chosen[chosen["annotation_id"].isin(set(keep["annotation_id"]))]
    return chosen.assign(positive=chosen["value"].astype(str).str.strip() == positive_value)[columns]


def _add_derived(judges: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    derived = summary_faithfulness_from_lines(judges, source=None)
    if derived.empty:
        return labels
    have = set(zip(labels["source"], labels["annotator"], strict=True))
    derived = derived[[(s, a) not in have for s, a in zip(derived["source"], derived["annotator"], strict=True)]]
    extra = derived.assign(item=SUMMARY_ITEM, positive=derived["value"] == UNFAITHFUL)
    extra = extra.drop_duplicates(subset=["source", "annotator", "task_id"], keep="last")
    return pd.concat([labels, extra[labels.columns]], ignore_index=True)


def _binary_scores(merged: pd.DataFrame, task_groups: Mapping[object, object] | None = None) -> dict[str, object]:
    predicted = merged["positive"].astype(bool).to_numpy()
    truth = merged["positive_gold"].astype(bool).to_numpy()
    tp = int((predicted & truth).sum())
    fp = int((predicted & ~truth).sum())
    fn = int((~predicted & truth).sum())
    tn = int((~predicted & ~truth).sum())
    n = len(merged)
    reasons = []
    if n == 0:
        reasons.append("no unit shared with the gold labels")
    kappa = cohen_kappa(predicted.astype(object), truth.astype(object)) if n else None
    if kappa is not None and kappa.reason:
        reasons.append(f"Cohen's kappa: {kappa.reason}")
    recall_pos = tp / (tp + fn) if tp + fn else float("nan")
    recall_neg = tn / (tn + fp) if tn + fp else float("nan")
    precision = tp / (tp + fp) if tp + fp else float("nan")
    if n and tp + fp == 0:
        reasons.append("no unit predicted unfaithful: precision undefined")
    if n and (tp + fn == 0 or tn + fp == 0):
        reasons.append("the gold labels have a single class: balanced accuracy undefined")
    flagged: dict[str, float] = {}
    if task_groups is not None:
        groups = merged["task_id"].map(lambda task: task_groups.get(task)).to_numpy(dtype=object)
        for group in sorted({g for g in groups if isinstance(g, str) and g.strip()}, key=natural_key):
            in_group = (groups == group) & truth
            flagged[f"flagged_{group}"] = float(predicted[in_group].mean()) if in_group.any() else float("nan")
    return {
        **flagged,
        "share_judged_faithful": (tn + fn) / n if n else float("nan"),
        "precision_faithful": tn / (tn + fn) if tn + fn else float("nan"),
        "recall_faithful": recall_neg,
        "n_units": n,
        "n_gold_positive": tp + fn,
        "n_predicted_positive": tp + fp,
        "true_positive": tp,
        "false_positive": fp,
        "false_negative": fn,
        "true_negative": tn,
        "cohen_kappa": kappa.value if kappa is not None else float("nan"),
        "balanced_accuracy": (recall_pos + recall_neg) / 2 if n else float("nan"),
        "precision_unfaithful": precision,
        "recall_unfaithful": recall_pos,
        "reason": "; ".join(reasons),
    }


def _auc(higher: np.ndarray, lower: np.ndarray) -> float:
    """The share of (``higher``, ``lower``) pairs where the first is above the second, ties counting
    half; NaN without a pair. Counted on the sorted ``lower`` scores, not on every pair: a matrix of
    the pairs is a byte a pair, 2.5 GB for 50,000 summaries of each class."""
    if not len(higher) or not len(lower):
        return float("nan")
    ranked = np.sort(lower)
    below = np.searchsorted(ranked, higher, side="left")
    greater = int(below.sum())
    ties = int((np.searchsorted(ranked, higher, side="right") - below).sum())
    return float((greater + 0.5 * ties) / (len(higher) * len(lower)))


def judge_scores_vs_gold(
    judgments: pd.DataFrame,
    *,
    item: str = f"{SUMMARY_ITEM}_score",
    gold_source: str = GOLD_SOURCE,
    gold_project: object | None = None,
) -> pd.DataFrame:
    """ROC AUC of judges that give a score (item ``faithful_score``) instead of a label.

    ``auc_faithful`` is the probability that a gold-faithful summary gets a higher score than
    a gold-unfaithful one (ties count half; Mann-Whitney U / (n_faithful * n_unfaithful)).
    Below 0.5 means the score runs the other way. Columns: ``source, annotator, n_units,
    n_unfaithful, auc_faithful``.
    """
    frame = usable_judgments(judgments, source=None)
    gold = frame[(frame["source"] == gold_source) & (frame["item"] == SUMMARY_ITEM)]
    if gold_project is not None:
        gold = gold[gold["project"] == gold_project]
    gold = gold.drop_duplicates(subset=["task_id"], keep="last")[["task_id", "value"]].rename(columns={"value": "gold"})
    scores = frame[(frame["source"] != gold_source) & (frame["item"] == item)]
    scores = scores.assign(score=pd.to_numeric(scores["value"], errors="coerce")).dropna(subset=["score"])
    rows = []
    for (source, annotator), group in scores.groupby(["source", "annotator"], sort=True):
        merged = group.drop_duplicates(subset=["task_id"], keep="last").merge(gold, on="task_id")
        faithful = merged.loc[merged["gold"] == FAITHFUL, "score"].to_numpy(dtype=float)
        unfaithful = merged.loc[merged["gold"] == UNFAITHFUL, "score"].to_numpy(dtype=float)
        auc = _auc(faithful, unfaithful)
        rows.append(
            {
                "source": source,
                "annotator": annotator,
                "n_units": len(merged),
                "n_unfaithful": len(unfaithful),
                "auc_faithful": auc,
            }
        )
    return pd.DataFrame(rows, columns=["source", "annotator", "n_units", "n_unfaithful", "auc_faithful"])
