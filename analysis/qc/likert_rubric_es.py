"""Quality control for Likert rubrics (seed 003: Spanish news summaries, 1-5 on five criteria).

- :func:`criterion_agreement`: per criterion, exact and adjacent (within one point)
  agreement over all rater pairs, Fleiss' kappa, and ordinal Krippendorff's alpha when
  ``analysis.krippendorff`` is installed.
- :func:`score_distributions`: how often each score was given, per criterion, overall and
  per model (when the tasks table has a ``model`` column).
- :func:`relevance_cues` / :func:`relevance_by_cue`: the rubric subtracts a point of
  Relevance for chatbot phrases ("¿Te gustaría que elabore...?", "Espero que...") and for
  subjective valuations ("preocupante", "lamentable", "es importante destacar"): count them
  in the summaries and compare mean Relevance with and without a cue.

All functions take tidy tables (``judgments`` with ``project, task_id, annotator, source,
item, value``; ``tasks`` with ``project, task_id`` and data columns).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from judgelab.analysis.agreement import adjacent_agreement, exact_agreement, fleiss_kappa
from judgelab.analysis.krippendorff import krippendorff_alpha
from judgelab.analysis.ratings import numeric_ratings, unit_keys, welch_t_test
from judgelab.analysis.tables import HUMAN_SOURCE, natural_key
from judgelab.configs.schema import builtin_schema

_LIKERT = builtin_schema("likert_rubric_es")
DEFAULT_CRITERIA = _LIKERT.items_of_kind("ordinal")
RELEVANCE_ITEM = _LIKERT.constant("criteria")["relevance"]

# Matched case- and accent-insensitively as substrings of the summary.
CHATBOT_CUES = (
    "¿Te gustaría que elabore",
    "¿Te gustaría que",
    "¿Quieres que",
    "¿Necesitas",
    "Espero que",
    "Si necesitas",
    "Si quieres",
    "No dudes en",
    "Aquí tienes",
    "Aquí te presento",
    "Aquí está el resumen",
    "Here's",
    "Here is",
)
SUBJECTIVE_CUES = (
    "preocupante",
    "lamentable",
    "es importante destacar",
    "cabe destacar",
    "es importante señalar",
    "alarmante",
    "impactante",
    "desgraciadamente",
    "afortunadamente",
    "por desgracia",
)
DEFAULT_CUES: Mapping[str, Sequence[str]] = {"chatbot": CHATBOT_CUES, "subjective": SUBJECTIVE_CUES}

AGREEMENT_COLUMNS = [
    "project",
    "item",
    "n_units",
    "n_raters",
    "n_ratings",
    "exact_agreement",
    "adjacent_agreement",
    "fleiss_kappa",
    "krippendorff_alpha_ordinal",
    "reason",
]


def criterion_matrix(ratings: pd.DataFrame, item: str) -> pd.DataFrame:
    """Tasks x annotators matrix of one criterion's numeric scores (NaN = not rated); rows are
    (project, task_id) when there is a project column."""
    rows = ratings[ratings["item"] == item]
    return rows.pivot_table(index=unit_keys(rows), columns="annotator", values="score", aggfunc="last")


def criterion_agreement(
    judgments: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None = None,
    *,
    items: Sequence[str] | None = None,
    source: str | None = HUMAN_SOURCE,
    within: float = 1.0,
) -> pd.DataFrame:
    """Per project and criterion: exact, adjacent, Fleiss' kappa and ordinal alpha.

    ``items`` defaults to the schema's ``scales`` (else :data:`DEFAULT_CRITERIA`). A unit is a
    task; only tasks rated by two or more raters count (``n_units``). Exact and adjacent
    agreement pool every pair of ratings of a unit (a unit with 3 raters has 3 pairs).
    ``krippendorff_alpha_ordinal`` is NaN when ``analysis.krippendorff`` is absent.
    """
    criteria = list(items or (schema_meta or {}).get("scales") or DEFAULT_CRITERIA)
    ratings = numeric_ratings(judgments, criteria, source=source)
    rows: list[dict[str, Any]] = []
    for project in sorted(ratings["project"].dropna().unique(), key=natural_key):
        in_project = ratings[ratings["project"] == project]
        for item in criteria:
            matrix = criterion_matrix(in_project, item)
            if matrix.empty:
                continue
            values = matrix.to_numpy(dtype=float)
            exact = exact_agreement(matrix.astype(object).where(matrix.notna(), None).to_numpy())
            adjacent = adjacent_agreement(values, within)
            fleiss = fleiss_kappa(matrix.astype(object).where(matrix.notna(), None).to_numpy())
            alpha = krippendorff_alpha(values, "ordinal") if krippendorff_alpha is not None else None
            reasons = [r.reason for r in (exact, fleiss, alpha) if r is not None and r.reason]
            rows.append(
                {
                    "project": project,
                    "item": item,
                    "n_units": exact.n_units,
                    "n_raters": int(matrix.notna().any(axis=0).sum()),
                    "n_ratings": int(matrix.notna().sum().sum()),
                    "exact_agreement": exact.value,
                    "adjacent_agreement": adjacent.value,
                    "fleiss_kappa": fleiss.value,
                    "krippendorff_alpha_ordinal": alpha.value if alpha is not None else float("nan"),
                    "reason": "; ".join(dict.fromkeys(reasons))
                    or ("" if alpha is not None else "analysis.krippendorff not available"),
                }
            )
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def score_distributions(
    judgments: pd.DataFrame,
    tasks: pd.DataFrame | None = None,
    *,
    items: Sequence[str] | None = None,
    by: str = "model",
    source: str | None = HUMAN_SOURCE,
) -> pd.DataFrame:
    """How often each score was given: ``scope, group, item, value, n, share, mean, n_ratings``.

    ``scope`` is ``overall`` (``group`` empty) or ``by`` (``group`` the task's ``by`` value,
    when ``tasks`` has that column). ``share`` is ``n`` over the ratings of the item in the
    group; ``mean`` and ``n_ratings`` repeat the group's mean score and rating count.
    """
    ratings = numeric_ratings(judgments, items, source=source)
    columns = ["scope", "group", "item", "value", "n", "share", "mean", "n_ratings"]
    if ratings.empty:
        return pd.DataFrame(columns=columns)
    frames = [_distribution(ratings.assign(group=""), "overall")]
    if tasks is not None and by in tasks.columns:
        with_group = _with_task_column(ratings, tasks, by).rename(columns={by: "group"})
        with_group = with_group.dropna(subset=["group"])
        if not with_group.empty:
            frames.append(_distribution(with_group, by))
    result = pd.concat(frames, ignore_index=True)
    return result[columns]


def _distribution(ratings: pd.DataFrame, scope: str) -> pd.DataFrame:
    counts = ratings.groupby(["group", "item", "score"]).size().rename("n").reset_index()
    totals = ratings.groupby(["group", "item"])["score"].agg(n_ratings="size", mean="mean").reset_index()
    counts = counts.merge(totals, on=["group", "item"])
    counts["share"] = counts["n"] / counts["n_ratings"]
    counts = counts.rename(columns={"score": "value"})
    counts["scope"] = scope
    return counts.sort_values(["group", "item", "value"], key=_sort_key).reset_index(drop=True)


def _sort_key(column: pd.Series) -> pd.Series:
    if pd.api.types.is_numeric_dtype(column):
        return column
    return column.map(lambda v: natural_key(v))


def _with_task_column(rows: pd.DataFrame, tasks: pd.DataFrame, column: str) -> pd.DataFrame:
    keys = ["project", "task_id"] if "project" in tasks.columns and "project" in rows.columns else ["task_id"]
    meta = tasks[[*keys, column]].drop_duplicates(subset=keys)
    return rows.merge(meta, on=keys, how="left")


@functools.lru_cache(maxsize=1024)
def _fold(text: str) -> str:
    """Lower case without accents: ``"Aquí"`` -> ``"aqui"`` (cached: the cue phrases are folded
    once, not once per summary)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def find_cues(text: object, cues: Mapping[str, Sequence[str]] = DEFAULT_CUES) -> dict[str, list[str]]:
    """The cues of each kind found in ``text`` (case- and accent-insensitive substrings).

    A cue contained in a longer cue found at the same place is not counted twice
    ("¿Te gustaría que" inside "¿Te gustaría que elabore").

    >>> find_cues("Resumen. ¿Te gustaría que elabore algo? Es lamentable.")
    {'chatbot': ['¿Te gustaría que elabore'], 'subjective': ['lamentable']}
    """
    found: dict[str, list[str]] = {kind: [] for kind in cues}
    if not isinstance(text, str) or not text:
        return found
    folded = _fold(text)
    for kind, phrases in cues.items():
        taken: list[tuple[int, int]] = []
        for phrase in sorted(phrases, key=len, reverse=True):
            needle = _fold(phrase)
            for match in re.finditer(re.escape(needle), folded):
                span = (match.start(), match.end())
                if any(s <= span[0] and span[1] <= e for s, e in taken):
                    continue
                taken.append(span)
                found[kind].append(phrase)
    return found


@dataclass(frozen=True)
class CueCounts:
    """``per_task``: project, task_id, n_<kind> per cue kind, n_cues, has_cue, cues (``; ``-joined).
    ``per_cue``: kind, cue, n_occurrences, n_tasks."""

    per_task: pd.DataFrame
    per_cue: pd.DataFrame


def relevance_cues(
    tasks: pd.DataFrame,
    *,
    text_column: str = "summary",
    cues: Mapping[str, Sequence[str]] = DEFAULT_CUES,
) -> CueCounts:
    """Count the Relevance-penalty cues in each task's ``text_column``."""
    per_task_rows, per_cue_rows = [], []
    texts = tasks[text_column] if text_column in tasks.columns else pd.Series([None] * len(tasks), index=tasks.index)
    for (_, task), text in zip(tasks.iterrows(), texts, strict=True):
        found = find_cues(text, cues)
        row = {"project": task.get("project"), "task_id": task.get("task_id")}
        row.update({f"n_{kind}": len(hits) for kind, hits in found.items()})
        all_hits = [hit for hits in found.values() for hit in hits]
        row.update({"n_cues": len(all_hits), "has_cue": bool(all_hits), "cues": "; ".join(all_hits)})
        per_task_rows.append(row)
        for kind, hits in found.items():
            for hit in hits:
                per_cue_rows.append({"kind": kind, "cue": hit, "task_id": task.get("task_id")})
    per_task = pd.DataFrame(
        per_task_rows, columns=["project", "task_id", *[f"n_{k}" for k in cues], "n_cues", "has_cue", "cues"]
    )
    hits = pd.DataFrame(per_cue_rows, columns=["kind", "cue", "task_id"])
    per_cue = (
        hits.groupby(["kind", "cue"])
        .agg(n_occurrences=("task_id", "size"), n_tasks=("task_id", "nunique"))
        .reset_index()
        .sort_values(["kind", "n_occurrences"], ascending=[True, False])
        .reset_index(drop=True)
    )
    return CueCounts(per_task=per_task, per_cue=per_cue)


def relevance_by_cue(
    judgments: pd.DataFrame,
    tasks: pd.DataFrame,
    *,
    item: str = RELEVANCE_ITEM,
    text_column: str = "summary",
    cues: Mapping[str, Sequence[str]] = DEFAULT_CUES,
    source: str | None = HUMAN_SOURCE,
) -> pd.DataFrame:
    """Mean ``item`` score of tasks with and without a cue, per cue kind and for any cue.

    Scores are first averaged per task (over its raters), then over tasks, so a task with
    three raters weighs as much as one with a single rater. Columns: ``cue_kind`` (a kind of
    ``cues`` or ``any``), ``n_tasks_with``, ``mean_with``, ``n_tasks_without``,
    ``mean_without``, ``difference`` (with - without), ``welch_t``, ``p_value`` (Welch's
    t-test on the per-task means; NaN with fewer than two tasks on a side).
    """
    counts = relevance_cues(tasks, text_column=text_column, cues=cues).per_task
    ratings = numeric_ratings(judgments, [item], source=source)
    keys = unit_keys(ratings)
    per_task = ratings.groupby(keys)["score"].mean().rename("score").reset_index()
    per_task = per_task.merge(counts, on=keys, how="inner")
    rows = []
    for kind in [*cues, "any"]:
        has = per_task["has_cue"] if kind == "any" else per_task[f"n_{kind}"] > 0
        with_cue, without = per_task.loc[has, "score"], per_task.loc[~has, "score"]
        t, p = welch_t_test(with_cue, without)
        rows.append(
            {
                "cue_kind": kind,
                "n_tasks_with": int(len(with_cue)),
                "mean_with": with_cue.mean() if len(with_cue) else float("nan"),
                "n_tasks_without": int(len(without)),
                "mean_without": without.mean() if len(without) else float("nan"),
                "difference": (with_cue.mean() - without.mean()) if len(with_cue) and len(without) else float("nan"),
                "welch_t": t,
                "p_value": p,
            }
        )
    return pd.DataFrame(rows)
