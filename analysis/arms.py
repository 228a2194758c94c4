"""Anchoring: did showing suggestions change what annotators answered?

The study puts tasks in two arms (``judgelab design arms``, task data ``arm``): annotators see
the model's suggestion on the *suggested* arm's tasks and never on the *blind* arm's. Everything
here compares the two arms on the same kind of units as the judge calibration
(:func:`analysis.judges.answer_rows`: rated items, line verdicts, span decisions), with the *task*
as the unit of analysis (several annotators of one task are not independent):

- agreement with the reference answers (``gold`` rows, or annotations marked as ground truth):
  per task the share of its annotators who gave the reference answer (choices) or their mean
  distance from it (ratings);
- with every task in both arms (``arm_of`` pairs the copies): agreement with the *other* arm's
  majority on the same task, the same way;
- agreement between annotators within each arm: the mean Krippendorff's alpha over pairs of
  annotators (the judges' human ceiling), with a bootstrap interval over units;
- how far answers sit from the suggestion: per task the share of annotators who gave the model's
  answer (distance for ratings). In the suggested arm the model's answer is its suggestion; in
  the blind arm it is the model's answer to the paired copy (or a prediction of the same model
  version made for the blind task itself, e.g. after the study). The difference between the arms
  is the pull of the suggestion;
- time: mean lead time per task.

Each difference between the arms gets a Welch 95% interval and p-value over tasks, and the
minimum detectable difference at 80% power (two-sided, 5%): ``(t_0.975 + t_0.8) * sqrt(s1^2/n1 +
s2^2/n2)`` with the observed per-task standard deviations and t quantiles at Welch's degrees of
freedom (normal quantiles, 2.80, would promise small arms far more than they can see: at 4 and 2
tasks, df about 1.2, the factor is about 10), which says what the study's size can see at all.
With fewer than :data:`MIN_ARM_TASKS` tasks in an arm nothing is computed: the arms are too
small.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from judgelab.analysis.judges import GOLD, answer_pieces
from judgelab.analysis.krippendorff import value_codes
from judgelab.analysis.pair_alpha import interval, mean_of_pairs, pair_alphas
from judgelab.analysis.suggestions import annotation_times
from judgelab.analysis.tables import MODEL_SOURCE_PREFIX
from judgelab.configs.arms import ARM_FIELD, ARMS, BLIND, PAIR_FIELD, SUGGESTED
from judgelab.configs.tables import PREDICTION_PREFIX

MIN_ARM_TASKS = 2  # a per-task standard deviation needs two tasks in each arm
COMPARISON_COLUMNS = ["group", "kind", "measure", "better", "suggested", "blind", "n_suggested", "n_blind",
                      "difference", "ci_low", "ci_high", "p_value", "df", "mdd80"]  # fmt: skip


def power_factor(dof: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """``t_{1-alpha/2} + t_{power}`` at ``dof`` degrees of freedom: the minimum detectable
    difference in standard errors.

    >>> round(power_factor(1e9), 2), round(power_factor(1.2), 1), round(power_factor(30), 2)
    (2.8, 9.9, 2.9)
    """
    return float(stats.t.ppf(1 - alpha / 2, dof) + stats.t.ppf(power, dof))


@dataclass
class ArmComparison:
    counts: pd.DataFrame  # arm, n_tasks, n_annotations, n_annotators
    comparisons: pd.DataFrame  # COMPARISON_COLUMNS
    agreement: pd.DataFrame  # group, kind, arm, alpha, ci_low, ci_high, n_units
    paired: bool
    suggestion_source: str | None
    notes: list[str] = field(default_factory=list)


def _key(frame: pd.DataFrame, single_project: bool = False) -> pd.Series:
    """A task's key across projects (its id alone when the study has one project)."""
    if single_project:
        return frame["task_id"]
    return frame["project"].astype(str) + "\x00" + frame["task_id"].astype(str)


def task_arms(tasks: pd.DataFrame, single_project: bool = False) -> pd.DataFrame:
    """``tkey, arm, pair`` for the tasks with an arm; ``pair`` is ``arm_of`` when given, else the task."""
    if tasks.empty or ARM_FIELD not in tasks.columns:
        return pd.DataFrame(columns=["tkey", "arm", "pair"])
    arm = tasks[ARM_FIELD].astype(str).str.strip().str.lower()
    chosen = tasks[arm.isin(ARMS)]
    keys = _key(chosen, single_project)
    pair = chosen[PAIR_FIELD] if PAIR_FIELD in chosen.columns else pd.Series(None, index=chosen.index)
    pair = pair.where(pair.notna() & (pair.astype(str) != ""), None)
    return pd.DataFrame(
        {"tkey": keys, "arm": arm[arm.isin(ARMS)], "pair": pair.astype(object).where(pair.notna(), keys)}
    ).reset_index(drop=True)


def _keyed(frame: pd.DataFrame, single_project: bool) -> pd.DataFrame:
    """The frame with ``task_id`` replaced by the (project, task) key."""
    return frame.assign(task_id=_key(frame, single_project)) if not frame.empty and not single_project else frame


def _score(values: pd.Series, reference: pd.Series, kind: str) -> pd.Series:
    if kind == "ordinal":
        return (pd.to_numeric(values, errors="coerce") - pd.to_numeric(reference, errors="coerce")).abs()
    return (values.astype(str) == reference.astype(str)).astype(float)


def _per_task(rows: pd.DataFrame, reference: pd.DataFrame, kind: str, on: list[str]) -> pd.DataFrame:
    """Per task (``tkey``, its ``arm``): the mean score of its human answers against ``reference``."""
    joined = rows.merge(reference, on=on, how="inner")
    if joined.empty:
        return pd.DataFrame(columns=["tkey", "arm", "score"])
    joined = joined.assign(score=_score(joined["value"], joined["reference"], kind))
    return joined.groupby(["tkey", "arm"], as_index=False)["score"].mean()


def _difference(per_task: pd.DataFrame) -> dict[str, float]:
    """Arm means, Welch interval and p-value of suggested minus blind, and the MDD at 80% power."""
    a = per_task.loc[per_task["arm"] == SUGGESTED, "score"].dropna().to_numpy(dtype=float)
    b = per_task.loc[per_task["arm"] == BLIND, "score"].dropna().to_numpy(dtype=float)
    out = {"suggested": float(a.mean()) if len(a) else np.nan, "blind": float(b.mean()) if len(b) else np.nan,
           "n_suggested": len(a), "n_blind": len(b)}  # fmt: skip
    if len(a) < MIN_ARM_TASKS or len(b) < MIN_ARM_TASKS:
        return {**out, "difference": out["suggested"] - out["blind"], "ci_low": np.nan, "ci_high": np.nan,
                "p_value": np.nan, "df": np.nan, "mdd80": np.nan}  # fmt: skip
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = float(np.sqrt(va + vb))
    diff = float(a.mean() - b.mean())
    if se == 0.0:
        return {**out, "difference": diff, "ci_low": diff, "ci_high": diff, "p_value": np.nan, "df": np.nan,
                "mdd80": 0.0}  # fmt: skip
    dof = float((va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)))
    half = float(stats.t.ppf(0.975, dof)) * se
    p = float(2 * stats.t.sf(abs(diff) / se, dof))
    return {**out, "difference": diff, "ci_low": diff - half, "ci_high": diff + half, "p_value": p, "df": dof,
            "mdd80": power_factor(dof) * se}  # fmt: skip


def _majority(rows: pd.DataFrame, kind: str, by: list[str]) -> pd.DataFrame:
    """The strict majority (median for ratings) of ``rows`` per ``by``; no row without one."""
    if kind == "ordinal":
        numbers = rows.assign(value=pd.to_numeric(rows["value"], errors="coerce"))
        return numbers.groupby(by, as_index=False)["value"].median().rename(columns={"value": "reference"})
    tally = rows.groupby([*by, "value"]).size().rename("n").reset_index()
    tally["total"] = tally.groupby(by)["n"].transform("sum")
    winners = tally[2 * tally["n"] > tally["total"]]
    return winners[[*by, "value"]].rename(columns={"value": "reference"})


def _between_annotators(rows: pd.DataFrame, kind: str, n_boot: int, seed: int) -> dict[str, float]:
    """Mean Krippendorff's alpha over pairs of annotators of the arm (as the judges' ceiling), with
    a bootstrap interval over units shared by every pair."""
    empty = {"alpha": np.nan, "ci_low": np.nan, "ci_high": np.nan, "n_units": 0}
    if rows.empty:
        return empty
    matrix = (
        rows.drop_duplicates(["tkey", "item", "rater"], keep="last")
        .set_index(["tkey", "item", "rater"])["value"]
        .unstack("rater")
    )
    if matrix.shape[1] < 2:
        return empty
    if kind == "ordinal":
        encoded = value_codes(matrix.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64))
    else:
        encoded = value_codes(matrix.to_numpy(dtype=object))
    n = matrix.shape[1]
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    level = "ordinal" if kind == "ordinal" else "nominal"
    result = pair_alphas(encoded.codes, encoded.values, pairs, level, n_boot=n_boot, seed=seed)
    defined = [p for p in range(len(pairs)) if result.n_units[p] > 0]
    point, replicates = mean_of_pairs(result, defined)
    low, high = interval(replicates) if n_boot else (np.nan, np.nan)
    units = int(((encoded.codes >= 0).sum(axis=1) >= 2).sum())
    return {"alpha": point, "ci_low": low, "ci_high": high, "n_units": units}


def _suggestion_source(judgments: pd.DataFrame, spans: pd.DataFrame, arms: pd.DataFrame) -> str | None:
    """The model version whose suggestions the suggested arm's annotations started from (the most used)."""
    suggested = set(arms.loc[arms["arm"] == SUGGESTED, "tkey"])
    counts: dict[str, int] = {}
    for frame in (judgments, spans):
        if frame.empty or "parent_prediction" not in frame.columns:
            continue
        parents = frame[frame["task_id"].isin(suggested)]["parent_prediction"]
        parents = pd.to_numeric(parents, errors="coerce").dropna().astype("int64").unique()
        ids = {PREDICTION_PREFIX + str(p) for p in parents}
        models = frame[frame["annotation_id"].astype(str).isin(ids)]
        for source, n in models.drop_duplicates("annotation_id")["source"].value_counts().items():
            counts[str(source)] = counts.get(str(source), 0) + int(n)
    return max(counts, key=counts.get) if counts else None


def compare_arms(
    tasks: pd.DataFrame,
    judgments: pd.DataFrame,
    spans: pd.DataFrame,
    schema_meta: Mapping[str, Any] | None = None,
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> ArmComparison | None:
    """The arms compared (see the module docstring); None when no task has an arm."""
    single = tasks["project"].nunique() <= 1 and not pd.concat([judgments["project"], spans["project"]]).nunique() > 1
    arms = task_arms(tasks, single)
    if arms.empty or arms["arm"].nunique() < 2:
        return None
    judgments, spans = _keyed(judgments, single), _keyed(spans, single)
    source = _suggestion_source(judgments, spans, arms)
    paired = bool((arms.groupby("pair")["arm"].nunique() == 2).any())
    comparisons, agreement, seen, model_blind = [], [], [], False
    # the answer rows a piece at a time (the rated items, then each span group): every group's rows
    # at once, as text, then split by rater, made the section the report's peak, 590 MiB over
    # what the report held at 50,000 tasks with arms
    for piece in answer_pieces(judgments, spans, schema_meta, gold=True):
        rows = piece.rename(columns={"task_id": "tkey"}).merge(arms, on="tkey", how="inner")
        piece = None
        is_model = rows["rater"].astype(str).str.startswith(MODEL_SOURCE_PREFIX)
        humans = rows[~is_model & (rows["rater"] != GOLD)]
        gold = rows[rows["rater"] == GOLD]
        model = rows[rows["rater"] == source] if source else rows.iloc[0:0]
        rows = is_model = None
        model_blind = model_blind or not model[model["arm"] == BLIND].empty
        seen.append(humans[["arm", "tkey", "rater"]].drop_duplicates())
        for (group, kind), part in humans.groupby(["group", "kind"], sort=False):
            for measure, direction, per_task in _measures(part, group, kind, gold, model, paired):
                if per_task["arm"].nunique() < 2:  # one arm has nothing to compare (the blind arm has no model answers)
                    continue
                comparisons.append({"group": group, "kind": kind, "measure": measure, "better": direction,
                                    **_difference(per_task)})  # fmt: skip
            for arm in ARMS:
                agreement.append({"group": group, "kind": kind, "arm": arm,
                                  **_between_annotators(part[part["arm"] == arm], kind, n_boot, seed)})  # fmt: skip
        humans = gold = model = part = None
    comparisons += _lead_time_comparison(judgments, spans, arms)
    humans = pd.concat(seen, ignore_index=True)  # who answered which task, in which arm
    counts = (
        humans.groupby("arm")
        .agg(n_tasks=("tkey", "nunique"), n_annotators=("rater", "nunique"))
        .reindex(list(ARMS))
        .fillna(0)
        .astype(int)
        .reset_index()
    )
    notes = _comparison_notes(source, paired, model_blind)
    return ArmComparison(counts, pd.DataFrame(comparisons, columns=COMPARISON_COLUMNS),
                         pd.DataFrame(agreement), paired, source, notes)  # fmt: skip


def _measures(
    part: pd.DataFrame, group: str, kind: str, gold: pd.DataFrame, model: pd.DataFrame, paired: bool
) -> list[tuple[str, str, pd.DataFrame]]:
    """What the arms of one group are compared on, each as (measure, which way is better, a score
    per task and arm): closeness to the reference answers, with paired arms to the other arm's
    majority, and to the suggesting model's answers."""
    measures: list[tuple[str, str, pd.DataFrame]] = []
    better = "lower" if kind == "ordinal" else "higher"
    what = "distance from" if kind == "ordinal" else "agreement with"
    ref = gold[gold["group"] == group][["pair", "item", "value"]].rename(columns={"value": "reference"})
    if not ref.empty:
        ref = ref.drop_duplicates(["pair", "item"])
        measures.append((f"{what} the reference answers", better, _per_task(part, ref, kind, ["pair", "item"])))
    if paired:
        per_arm = []
        for arm, other in ((SUGGESTED, BLIND), (BLIND, SUGGESTED)):
            majority = _majority(part[part["arm"] == other], kind, ["pair", "item"])
            per_arm.append(_per_task(part[part["arm"] == arm], majority, kind, ["pair", "item"]))
        measures.append((f"{what} the other arm's majority", better, pd.concat(per_arm, ignore_index=True)))
    answers = model[model["group"] == group][["pair", "item", "value"]].rename(columns={"value": "reference"})
    if not answers.empty:
        answers = answers.drop_duplicates(["pair", "item"])
        per_task = _per_task(part, answers, kind, ["pair", "item"])
        measures.append((f"{what} the model's answer (suggestion)", "", per_task))
    return measures


def _lead_time_comparison(judgments: pd.DataFrame, spans: pd.DataFrame, arms: pd.DataFrame) -> list[dict[str, Any]]:
    """The arms' mean lead time per task compared (lower is better); nothing without times."""
    times = annotation_times(judgments, spans).rename(columns={"task_id": "tkey"}).merge(arms, on="tkey")
    if times.empty:
        return []
    per_task = times.groupby(["tkey", "arm"], as_index=False)["lead_time"].mean().rename(columns={"lead_time": "score"})
    return [{"group": "(all)", "kind": "time", "measure": "lead time per task (seconds)",
             "better": "lower", **_difference(per_task)}]  # fmt: skip


def _comparison_notes(source: str | None, paired: bool, model_blind: bool) -> list[str]:
    """What the comparison cannot tell: the suggestion unknown, or, with unpaired arms, how far
    answers moved toward it (``model_blind``: the suggesting model answered tasks of the blind arm)."""
    if source is None:
        return ["no annotation of the suggested arm started from a prediction, so the suggestion is unknown"]
    if not paired and not model_blind:
        return [
            "the blind arm has no answers of the suggesting model (by design it got no predictions), so how far "
            "answers moved toward the suggestions cannot be measured: put every task in both arms (design arms "
            "--both), or predict the blind tasks after the study"
        ]
    return []
