"""HotelCheckSpan's Table 6: directed span agreement between the groups and stages of a study,
and between the humans and each model.

The rows, all on the examples annotated in the last stage ("the Stage 2 subset"):

- ``Group A → Group B (stage s)``: every annotator of group A in stage ``s`` against every
  annotator of group B in the same stage who annotated the same examples;
- ``Stage 1 → Stage 2``: every stage-1 annotator against every stage-2 annotator;
- ``Human → <model>``: every human annotator against the model.

Direction: in a row ``X → Y`` the left side X is the **reference** and the right side Y the
**hypothesis**, as in the paper's labels "Group A – Group B", "Stage 1 – Stage 2" and
"Human–LLM" (its text reads the LLM as the hypothesis: "higher recall but lower precision for
LLMs"). So P is the share of what Y marked that X also marked, and R the share of what X marked
that Y found. Swapping the sides swaps P and R and keeps F1. (The paper's A–B Stage 2 row has
P 0.33 > R 0.24 although group B marks about 20 % more spans, which fits B as the reference;
the label does not settle it. This module follows the label, and ``pairwise`` keeps every pair
so the other reading is one swap away.)

A rater is one annotator in one role (group and stage): the same person in two stages counts as
two raters. Each pair is scored on the examples both annotated, pooled over those examples
(per-span form of Da San Martino et al. 2019, hard and soft, an example only one side marked
counts, one neither marked does not), and P, R and F1 are each averaged over the pairs of the
row: the paper's A–B Stage 2 F1 (0.15) is below both its mean P (0.22) and R (0.19), which only
an average of per-pair F1 gives.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from judgelab.analysis.facets import cell_text
from judgelab.analysis.span_agreement import MATCHES, Form, mean_span_agreement, pairwise_span_agreement
from judgelab.analysis.tables import HUMAN_SOURCE, natural_key

EXAMPLE = "example"
RATER = "rater"
DIRECTED_COLUMNS = [
    "comparison",
    "reference",
    "hypothesis",
    "n_pairs",
    "n_pairs_undefined",
    "n_examples",
    *[f"{metric}_{match}" for match in MATCHES for metric in ("precision", "recall", "f1")],
]


def role_rater(annotator: object, group: object, stage: object) -> str:
    """The rater of one annotator in one role: ``ann (A, stage 1)``."""
    return f"{annotator} ({group}, stage {stage})"


def directed_comparisons(annotations: pd.DataFrame) -> dict[str, tuple[str, str, list[tuple[str, str]]]]:
    """``name -> (reference side, hypothesis side, [(reference rater, hypothesis rater), ...])``
    from ``annotations`` (columns ``example, rater, source, group, stage``; one row per annotation),
    pairs of raters who annotated at least one example in common."""
    humans = annotations[annotations["source"] == HUMAN_SOURCE]
    humans = humans.assign(group=_text(humans["group"]), stage=_text(humans["stage"]))
    shared = _shared_examples(annotations)
    groups = sorted(set(humans["group"]) - {""}, key=natural_key)
    stages = sorted(set(humans["stage"]) - {""}, key=natural_key)

    def raters(mask: pd.Series) -> list[str]:
        return sorted(humans.loc[mask, RATER].unique(), key=natural_key)

    def pairs(references: list[str], hypotheses: list[str]) -> list[tuple[str, str]]:
        return [(r, h) for r in references for h in hypotheses if r != h and (r, h) in shared]

    comparisons: dict[str, tuple[str, str, list[tuple[str, str]]]] = {}
    if len(groups) >= 2:
        first, second = groups[0], groups[1]
        for stage in stages:
            in_stage = humans["stage"] == stage
            name = f"Group {first} → Group {second} (stage {stage})"
            comparisons[name] = (
                f"group {first}",
                f"group {second}",
                pairs(raters(in_stage & (humans["group"] == first)),
                      raters(in_stage & (humans["group"] == second))),
            )  # fmt: skip
    if len(stages) >= 2:
        early, late = stages[0], stages[-1]
        comparisons[f"Stage {early} → Stage {late}"] = (
            f"stage {early}",
            f"stage {late}",
            pairs(raters(humans["stage"] == early), raters(humans["stage"] == late)),
        )
    human_raters = raters(pd.Series(True, index=humans.index))
    for model in sorted(annotations.loc[annotations["source"] != HUMAN_SOURCE, RATER].unique(), key=natural_key):
        comparisons[f"Human → {model}"] = ("human", str(model), pairs(human_raters, [model]))
    return {name: spec for name, spec in comparisons.items() if spec[2]}


def _shared_examples(annotations: pd.DataFrame) -> set[tuple[str, str]]:
    by_example = annotations.groupby(EXAMPLE)[RATER].agg(lambda raters: sorted(set(raters)))
    shared: set[tuple[str, str]] = set()
    for raters in by_example:
        shared |= {(a, b) for a in raters for b in raters if a != b}
    return shared


def last_stage_examples(annotations: pd.DataFrame) -> set[object]:
    """The examples annotated in the last stage (all examples when there is one stage)."""
    stage = _text(annotations["stage"])
    stages = sorted(set(stage) - {""}, key=natural_key)
    if len(stages) < 2:
        return set(annotations[EXAMPLE])
    return set(annotations.loc[stage == stages[-1], EXAMPLE])


def _text(values: pd.Series) -> pd.Series:
    return values.map(cell_text)


def directed_span_table(
    spans: pd.DataFrame,
    annotations: pd.DataFrame,
    *,
    form: Form = "per_span",
    labels: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 6 and every pair behind it.

    ``spans``: ``example, rater, label, start, end`` (and ``field``); ``annotations``: ``example,
    rater, source, group, stage``, one row per annotation (a rater who marked nothing on an
    example still annotated it). Returns ``(table, pairwise)``: one row per comparison (columns
    :data:`DIRECTED_COLUMNS`) and one per (reference, hypothesis, match) with its comparison.
    """
    subset = last_stage_examples(annotations)
    annotations = annotations[annotations[EXAMPLE].isin(subset)]
    spans = spans[spans[EXAMPLE].isin(subset)]
    comparisons = directed_comparisons(annotations)
    if not comparisons:
        return pd.DataFrame(columns=DIRECTED_COLUMNS), pd.DataFrame()
    all_pairs = list(dict.fromkeys(pair for _, _, pairs in comparisons.values() for pair in pairs))
    pairwise = pairwise_span_agreement(
        spans,
        annotations[[EXAMPLE, RATER]].drop_duplicates(),
        pairs=all_pairs,
        forms=(form,),
        average="micro",
        empty="zero",
        example_key=[EXAMPLE],
        annotator_col=RATER,
        labels=labels,
    )
    rows, parts = [], []
    for name, (reference, hypothesis, pairs) in comparisons.items():
        chosen = pairwise[pd.MultiIndex.from_frame(pairwise[["reference", "hypothesis"]]).isin(pairs)]
        parts.append(chosen.assign(comparison=name))
        means = mean_span_agreement(chosen, by=("match",)).set_index("match")
        row: dict[str, object] = {
            "comparison": name,
            "reference": reference,
            "hypothesis": hypothesis,
            "n_pairs": int(means["n_pairs"].max()),
            "n_pairs_undefined": int(means["n_pairs_undefined"].min()),
            "n_examples": int(chosen.loc[chosen["match"] == MATCHES[0], "n_examples"].sum()),
        }
        for match in MATCHES:
            for metric in ("precision", "recall", "f1"):
                row[f"{metric}_{match}"] = float(means.at[match, metric]) if match in means.index else float("nan")
        rows.append(row)
    pairwise = pd.concat(parts, ignore_index=True)
    return pd.DataFrame(rows, columns=DIRECTED_COLUMNS), pairwise[["comparison", *pairwise.columns[:-1]]]
