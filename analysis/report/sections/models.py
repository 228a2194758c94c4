"""Report section "Model predictions against humans": how close each model source comes to
the human annotators.

- Rated items: each model's answer against the human majority (choices) or the human mean
  (rating scales), next to how close a single human comes to the other humans. Line
  verdicts (``line_<i>``) are pooled and compared as inconsistent against the rest. When the
  project has no human answers on the model's items, humans of another project of the same
  schema with the same task ids are used (StorySumm's judges against the
  evaluation-interface annotators), and the section says so.
- Spans: each model's span precision, recall and F1 against the human annotators, and the
  per-type against any-error agreement with a clear human majority (the conservative
  alignment paradox of HotelCheckSpan section 6.2).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from judgelab.analysis.agreement import cohen_kappa
from judgelab.analysis.report.blocks import Block, Paragraph, Section, Table
from judgelab.analysis.report.data import (
    LINE_ITEM,
    ProjectData,
    at_extreme,
    is_nan,
    listed,
    number,
    percent,
    plural,
    rater_spans,
    section_or_none,
    two_places,
    with_project,
)
from judgelab.analysis.report.sections.spans import comparison_table, span_inputs
from judgelab.analysis.span_tables import alignment_paradox, model_majority_agreement
from judgelab.analysis.tables import (
    FLAG_CHECKED,
    FLAG_UNCHECKED,
    HUMAN_SOURCE,
    MODEL_SOURCE_PREFIX,
    latest_rows,
    normalised_values,
    only_columns,
    usable_judgments,
)
from judgelab.configs.items import item_kind
from judgelab.configs.schema import line_flag_values

LINES = "line_* (inconsistent vs rest)"
NOMINAL_NAMES = {
    "n_units": "units",
    "agreement_with_majority": "agrees with majority",
    "cohen_kappa": "Cohen's kappa",
    "human_baseline": "one human vs the others",
    "n_human_baseline": "human answers",
}
ORDINAL_NAMES = {
    "n_units": "units",
    "model_mean": "model mean",
    "human_mean": "human mean",
    "mean_abs_difference": "mean |difference|",
    "spearman_rho": "Spearman's rho",
    "human_baseline": "one human vs the others",
    "n_human_baseline": "human answers",
}
REST = "rest"
# the judgments' columns the comparison reads (the others are not copied by its filters)
_READ = (
    "task_id",
    "item",
    "value",
    "source",
    "annotator",
    "annotation_id",
    "created_at",
    "updated_at",
    "was_cancelled",
)
LINE_FLAGS = line_flag_values()  # a line item's verdict that counts; every other one is REST


def model_agreement_section(data: ProjectData) -> Section | None:
    if not data.model_sources:
        return None
    subsections = [rating_section(data), span_f1_section(data), paradox_section(data)]
    intro = Paragraph(
        "How close each model's predictions come to the human annotators. Human agreement among themselves is "
        "the yardstick: a model as close to the humans as they are to each other is as good as one more annotator."
    )
    return section_or_none("Model predictions against humans", [intro], subsections)


def _latest(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of each rater's latest annotation of a task: a model's and a human's never compete,
    nor two sources' rows without an annotator's name."""
    return latest_rows(rows, ("source", "annotator"))


def _group(item: str) -> str:
    return LINES if LINE_ITEM.match(item) else item


def _prepared(rows: pd.DataFrame, data: ProjectData) -> pd.DataFrame:
    """``task_id, item, group, kind, value`` (and ``source``) with values normalised per kind."""
    rows = only_columns(rows, "task_id", "item", "value", "source")  # its groups copy only these
    rows = rows.assign(item=rows["item"].astype(str))
    rows = rows.assign(group=rows["item"].map(_group))
    kinds = {
        item: ("nominal" if _group(item) == LINES else item_kind(data.meta, item)) for item in rows["item"].unique()
    }
    rows = rows.assign(kind=rows["item"].map(kinds))
    rows = rows[rows["kind"].isin(["nominal", "ordinal"])]  # a tick box: _flag_comparisons
    parts = []
    for kind, part in rows.groupby("kind", sort=False):
        values = normalised_values(part["value"], "ordinal" if kind == "ordinal" else "nominal")
        part = part.assign(value=values)
        if kind == "ordinal":
            part = part.assign(value=pd.to_numeric(part["value"], errors="coerce"))
        parts.append(part.dropna(subset=["value"]))
    if not parts:
        return rows.iloc[0:0]
    frame = pd.concat(parts, ignore_index=True)
    lines = frame["group"] == LINES
    if lines.any():
        frame["value"] = frame["value"].astype(object)
        verdicts = frame.loc[lines, "value"]
        frame.loc[lines, "value"] = np.where(verdicts.isin(LINE_FLAGS), verdicts, REST)
    return frame


def _humans_for(
    data: ProjectData, own: pd.DataFrame, items: set[str], tasks: set[object]
) -> tuple[pd.DataFrame, object | None]:
    """The project's ``own`` human rows when they answer the models' ``items``, else a peer
    project's with the same ``tasks`` (a human-sample project); and that peer."""
    if own["item"].astype(str).map(_group).isin({_group(i) for i in items}).any():
        return own, None
    for project, tables in data.peers.items():
        peer = usable_judgments(only_columns(tables["judgments"], *_READ), source=HUMAN_SOURCE)
        peer = peer[peer["task_id"].isin(tasks)]
        if peer["item"].astype(str).map(_group).isin({_group(i) for i in items}).any():
            return peer, project
    return own.iloc[0:0], None


def rating_table(data: ProjectData) -> tuple[pd.DataFrame, object | None]:
    """One row per (model, item group) compared with the humans; and the project humans came from."""
    frame = usable_judgments(only_columns(data.judgments, *_READ), source=None)
    models = frame[frame["source"].astype(str).str.startswith(MODEL_SOURCE_PREFIX)]
    if models.empty:
        return pd.DataFrame(), None
    own = frame[frame["source"] == HUMAN_SOURCE]
    frame = None  # the models' and the humans' rows are what is read below
    humans, borrowed = _humans_for(data, own, set(models["item"].astype(str)), set(models["task_id"]))
    own = None
    if humans.empty:
        return pd.DataFrame(), None
    humans, models = _latest(humans), _latest(models)
    rows = []
    flags = _flag_items(data, humans, models)
    if flags:
        human_spans = None if borrowed is not None else rater_spans(data)
        rows += _flag_comparisons(
            (humans, _answered(humans, "annotator", human_spans, human=True), "annotator"),
            (models, _answered(models, "source", rater_spans(data), human=False), "source"),
            flags,
        )
    humans, models = _prepared(humans, data), _prepared(models, data)
    for (source, group), predicted in models.groupby(["source", "group"], sort=True):
        answers = humans[humans["group"] == group]
        if answers.empty:
            continue
        kind = predicted["kind"].iloc[0]
        rows.append({"model": source, "item": group, "kind": kind, **_compare(predicted, answers, kind)})
    rows.sort(key=lambda row: (str(row["model"]), str(row["item"])))  # by model, then item, the flags among them
    return pd.DataFrame(rows), borrowed


def _flag_items(data: ProjectData, *frames: pd.DataFrame) -> list[str]:
    """The tick-box items (kind ``flag``) somebody ticked, in the order first seen."""
    items = pd.unique(pd.concat([frame["item"].astype(str) for frame in frames], ignore_index=True))
    return [item for item in items if _group(item) == item and item_kind(data.meta, item) == "flag"]


def _answered(rows: pd.DataFrame, rater: str, spans: pd.DataFrame | None, *, human: bool) -> pd.DataFrame:
    """``task_id, rater, source``: who answered which task (a judgment of any item, or a span when
    ``spans`` is given): humans by name, models by source."""
    # each part's first row of a task and rater before they are joined and made text: the same
    # rows as the join's first of each, without a row per judgment made text (90 MiB at 100,000 tasks)
    first = lambda part: part.drop_duplicates(["task_id", "rater"])  # noqa: E731
    answered = [first(pd.DataFrame({"task_id": rows["task_id"], "rater": rows[rater], "source": rows["source"]}))]
    if spans is not None and not spans.empty:
        source = spans["source"].fillna(HUMAN_SOURCE).astype(str)
        mine = (source == HUMAN_SOURCE) if human else source.str.startswith(MODEL_SOURCE_PREFIX)
        if mine.any():
            marked = {"task_id": spans.loc[mine, "task_id"], "rater": spans.loc[mine, "rater"], "source": source[mine]}
            answered.append(first(pd.DataFrame(marked)))
    # the names made text once the rows are a task and rater each (first of each again after: two
    # names can be one text); made text first, every row's name was 69 MiB at 100,000 tasks
    return first(first(pd.concat(answered, ignore_index=True)).astype({"rater": str})).reset_index(drop=True)


def _ticked(answered: pd.DataFrame, rows: pd.DataFrame, rater: str, items: list[str]) -> dict[str, np.ndarray]:
    """For each tick box of ``items``, whether each (task, rater) row of ``answered`` ticked it: each
    pair as one integer, the ticks' looked up among the answers' (a join copies both)."""
    raters = pd.Categorical(answered["rater"])
    width = len(raters.categories) + 1  # a rater not among them has code -1: no answer's pair
    ticks = rows.loc[rows["item"].astype(str).isin(items).to_numpy(), ["task_id", rater, "item"]]
    tasks, _ = pd.factorize(pd.concat([answered["task_id"], ticks["task_id"]], ignore_index=True))
    pairs = tasks[: len(answered)] * width + raters.codes.astype(np.int64)
    ticked = tasks[len(answered) :] * width + pd.Categorical(ticks[rater].astype(str), raters.categories).codes
    item_of = ticks["item"].astype(str).to_numpy()
    return {item: np.isin(pairs, ticked[item_of == item]) for item in items}


def _flag_comparisons(
    humans: tuple[pd.DataFrame, pd.DataFrame, str], models: tuple[pd.DataFrame, pd.DataFrame, str], flags: list[str]
) -> list[dict[str, object]]:
    """Each model against the humans on each tick box of ``flags``, as :func:`_compare` compares a
    choice: a yes/no unit per task and rater who answered it (``checked`` where the rater ticked
    it, ``unchecked`` where they answered the task without ticking it; its rows exist only where
    it was ticked, and compared on those alone every model agreed with every majority). ``humans``
    and ``models``: (latest rows, who answered which task, the rows' rater column). Counted on
    arrays: a tick box is a unit on every task."""
    (human_rows, human_answers, human_rater), (model_rows, model_answers, model_rater) = humans, models
    if human_answers.empty or model_answers.empty:
        return []
    tasks, _ = pd.factorize(pd.concat([human_answers["task_id"], model_answers["task_id"]], ignore_index=True))
    human_task, model_task = tasks[: len(human_answers)], tasks[len(human_answers) :]
    n_tasks = int(tasks.max()) + 1
    human_ticks = _ticked(human_answers, human_rows, human_rater, flags)
    model_ticks = _ticked(model_answers, model_rows, model_rater, flags)
    words = np.array([FLAG_UNCHECKED, FLAG_CHECKED], dtype=object)
    sources = model_answers["source"].astype(str).to_numpy()
    out = []
    for item in flags:
        ticked = human_ticks[item]
        total = np.bincount(human_task, minlength=n_tasks)
        checked = np.bincount(human_task[ticked], minlength=n_tasks)
        unchecked = total - checked
        majority = (2 * checked > total) | (2 * unchecked > total)  # a strict majority of the humans
        majority_checked = 2 * checked > total
        answers = pd.DataFrame({"task_id": human_task, "item": item, "value": words[ticked.astype(int)]})
        baseline, n_baseline = _human_baseline_nominal(answers, ["task_id", "item"])
        for source in sorted(set(sources)):
            mine = sources == source
            task, said = model_task[mine], model_ticks[item][mine]
            kept = majority[task]
            task, said = task[kept], said[kept]
            row = {"model": source, "item": item, "kind": "flag", "n_units": len(task)}
            if len(task):
                row["agreement_with_majority"] = float((said == majority_checked[task]).mean())
                row["cohen_kappa"] = cohen_kappa(
                    words[said.astype(int)], words[majority_checked[task].astype(int)]
                ).value
            else:
                row["agreement_with_majority"], row["cohen_kappa"] = np.nan, np.nan
            out.append({**row, "human_baseline": baseline, "n_human_baseline": n_baseline})
    return out


def _compare(predicted: pd.DataFrame, humans: pd.DataFrame, kind: str) -> dict[str, object]:
    units = ["task_id", "item"]
    result: dict[str, object] = {}
    if kind == "ordinal":
        model = predicted.drop_duplicates(units, keep="last").set_index(units)["value"]
        reference = humans.groupby(units)["value"].agg(["mean", "size"])
        joined = pd.concat([model.rename("model"), reference], axis=1, join="inner")
        result["n_units"] = len(joined)
        result["model_mean"] = float(joined["model"].mean()) if len(joined) else np.nan
        result["human_mean"] = float(joined["mean"].mean()) if len(joined) else np.nan
        result["mean_abs_difference"] = (
            float((joined["model"] - joined["mean"]).abs().mean()) if len(joined) else np.nan
        )
        varies = len(joined) > 2 and joined["model"].nunique() > 1 and joined["mean"].nunique() > 1
        rho = stats.spearmanr(joined["model"], joined["mean"]).statistic if varies else np.nan
        result["spearman_rho"] = float(rho) if not is_nan(rho) else np.nan
        baseline, n = _human_baseline_ordinal(humans, units)
    else:
        model = predicted.drop_duplicates(units, keep="last").set_index(units)["value"]
        counts = humans.groupby([*units, "value"]).size().rename("n").reset_index()
        totals = counts.groupby(units)["n"].transform("sum")
        majority = counts[2 * counts["n"] > totals].set_index(units)["value"]
        joined = pd.concat([model.rename("model"), majority.rename("majority")], axis=1, join="inner")
        result["n_units"] = len(joined)
        agree = (joined["model"].astype(str) == joined["majority"].astype(str)).mean() if len(joined) else np.nan
        result["agreement_with_majority"] = float(agree)
        kappa = cohen_kappa(
            joined["model"].astype(str).to_numpy(object), joined["majority"].astype(str).to_numpy(object)
        )
        result["cohen_kappa"] = kappa.value if len(joined) else np.nan
        baseline, n = _human_baseline_nominal(humans, units)
    result["human_baseline"] = baseline
    result["n_human_baseline"] = n
    return result


def _human_baseline_nominal(humans: pd.DataFrame, units: list[str]) -> tuple[float, int]:
    """Share of human answers equal to the strict majority of the other humans on the unit (over the
    answers whose others have one). Counted on arrays: the loop over units took 10 s of CPU for
    100,000 units of three answers, the arrays 0.1 s."""
    if humans.empty:
        return float("nan"), 0
    unit = humans.groupby(units, sort=False).ngroup().to_numpy()
    value, _ = pd.factorize(humans["value"].astype(str))
    n_values = int(value.max()) + 1
    counts = np.bincount(unit * n_values + value, minlength=(int(unit.max()) + 1) * n_values)
    counts = counts.reshape(-1, n_values)
    answers = counts.sum(axis=1)
    ranked = np.sort(counts, axis=1)
    first, second = ranked[:, -1], (ranked[:, -2] if n_values > 1 else np.zeros(len(counts), dtype=counts.dtype))
    top = counts.argmax(axis=1)
    others = answers[unit] - 1  # the other humans' answers on the row's unit
    own = counts[unit, value] - 1  # the others' answers equal to the row's
    best_other = np.where(value == top[unit], second[unit], first[unit])  # the most answered other value
    hit = (others >= 1) & (2 * own > others)
    total = hit | ((others >= 1) & (2 * best_other > others))
    n = int(total.sum())
    return (int(hit.sum()) / n if n else float("nan")), n


def _human_baseline_ordinal(humans: pd.DataFrame, units: list[str]) -> tuple[float, int]:
    """Mean absolute difference between a human's score and the mean of the other humans."""
    grouped = humans.groupby(units)["value"]
    counts = grouped.transform("size").to_numpy()
    shared = counts >= 2
    if not shared.any():
        return float("nan"), 0
    # as arrays: the rows' series, each with an index of its own, were most of the section's memory
    values = humans["value"].to_numpy(dtype=float)[shared]
    others = (grouped.transform("sum").to_numpy(dtype=float)[shared] - values) / (counts[shared] - 1)
    return float(np.abs(values - others).mean()), int(shared.sum())


def rating_section(data: ProjectData) -> Section | None:
    table, borrowed = rating_table(data)
    if table.empty:
        return None
    blocks: list[Block] = []
    if borrowed is not None:
        blocks.append(
            Paragraph(
                f"This project has no human answers on the models' items, so the models are compared with the human "
                f"annotators of project {borrowed}, on the tasks both have."
            )
        )
    nominal = table[table["kind"] != "ordinal"]
    ordinal = table[table["kind"] == "ordinal"]
    if not nominal.empty:
        shown = nominal[["model", "item", "n_units", "agreement_with_majority", "cohen_kappa", "human_baseline",
                         "n_human_baseline"]].rename(columns=NOMINAL_NAMES)  # fmt: skip
        blocks.append(
            Paragraph(
                "Choices: each model's answer against the human majority on the same task (units where the humans "
                "tie are left out; 'units' counts the rest), as the share of agreeing units ('agrees with majority') "
                "and as Cohen's kappa. 'one human vs the others' is the yardstick: the share of single human answers "
                "that equal the majority of the other humans on that unit (over 'human answers'). Line verdicts are "
                f"pooled as '{LINES}'."
            )
        )
        blocks.append(Table("models_vs_humans", "Models against the human majority", shown,
                            data=with_project(table, data.project)))  # fmt: skip
        for item, rows in nominal.groupby("item", sort=False):
            blocks.append(Paragraph(_choice_sentence(str(item), rows)))
    if not ordinal.empty:
        columns = ["model", "item", "n_units", "model_mean", "human_mean", "mean_abs_difference", "spearman_rho",
                   "human_baseline", "n_human_baseline"]  # fmt: skip
        shown = ordinal[columns].rename(columns=ORDINAL_NAMES)
        blocks.append(
            Paragraph(
                "Rating scales: each model's score against the mean human score of the same task: the two means, "
                "their mean absolute difference ('mean |difference|') and Spearman's rho across tasks. 'one human vs "
                "the others' is the yardstick: the mean absolute difference between one human's score and the mean of "
                "the other humans on that task (over 'human answers')."
            )
        )
        name = "models_vs_humans" if nominal.empty else "models_vs_humans_ratings"
        blocks.append(Table(name, "Models against the human mean", shown, data=with_project(ordinal, data.project)))
        for item, rows in ordinal.groupby("item", sort=False):
            blocks.append(Paragraph(_rating_sentence(str(item), rows)))
    return Section("Rated items", blocks)


def _kappa(value: float, prefix: str) -> str:
    """`` (Cohen's kappa 0.412)``, or why there is none (every answer the same: no chance model)."""
    if is_nan(value):
        return f" ({prefix} cannot be computed: the answers compared take one value only)"
    return f" ({prefix} {number(value)})"


def _apiece(models: pd.DataFrame, each: list[str], word: str) -> str:
    """``A of 40 units (...), B of 38 units (...)``: what each of models tied on a figure rests on."""
    return ", ".join(f"{model} {word} {what}" for model, what in zip(models["model"].astype(str), each, strict=True))


def _choice_sentence(item: str, rows: pd.DataFrame) -> str:
    """The models closest to and farthest from the human majority on a choice (models tied at the
    share shown named together), with the single-human yardstick; only the numbers that exist."""
    rows = rows.sort_values("agreement_with_majority", ascending=False, kind="stable")
    best = rows.iloc[0]
    if is_nan(best["agreement_with_majority"]):
        text = f"{item}: no unit has a human majority to compare the models with"
    else:
        share = percent(best["agreement_with_majority"])
        top = rows.loc[at_extreme(rows["agreement_with_majority"], percent).index]
        each = [
            f"{plural(int(row['n_units']), 'unit')}" + _kappa(row["cohen_kappa"], "Cohen's kappa")
            for _, row in top.iterrows()
        ]
        if len(top) == 1:
            text = f"{item}: {best['model']} agrees most with the human majority, on {share} of {each[0]}"
        else:
            text = f"{item}: {listed(top['model'].astype(str))} agree with the human majority equally often, " + (
                f"each on {share} of {each[0]}" if len(set(each)) == 1 else f"on {share}: " + _apiece(top, each, "of")
            )
        rest = rows[~rows.index.isin(top.index) & rows["agreement_with_majority"].notna()]
        if not rest.empty:
            worst = rest.iloc[-1]
            bottom = rest.loc[at_extreme(rest["agreement_with_majority"], percent, highest=False).index]
            text += f"; {listed(bottom['model'].astype(str))} least, on {percent(worst['agreement_with_majority'])}"
            if len(bottom) == 1 and not is_nan(worst["cohen_kappa"]):
                text += _kappa(worst["cohen_kappa"], "kappa")
    if is_nan(best["human_baseline"]) or not best["n_human_baseline"]:
        return text + ". No unit has three or more human answers, so there is no single-human yardstick."
    return text + (
        f". A single human agrees with the other humans' majority on {percent(best['human_baseline'])} "
        f"of {plural(int(best['n_human_baseline']), 'answer')}."
    )


def _rating_sentence(item: str, rows: pd.DataFrame) -> str:
    """The model (or the models tied at the distance shown) closest to the human mean score."""
    rows = rows.sort_values("mean_abs_difference", kind="stable")
    best = rows.iloc[0]
    top = rows.loc[at_extreme(rows["mean_abs_difference"], two_places, highest=False).index]
    top = top if not top.empty else rows[:1]
    each = [
        plural(int(row["n_units"]), "task")
        + (f" (Spearman's rho {number(row['spearman_rho'], 2)})" if not is_nan(row["spearman_rho"]) else "")
        for _, row in top.iterrows()
    ]
    distance = two_places(best["mean_abs_difference"])
    if len(top) == 1:
        text = f"{item}: {best['model']} comes closest to the human mean, {distance} points away on average over "
        text += each[0]
    else:
        text = f"{item}: {listed(top['model'].astype(str))} come equally close to the human mean, " + (
            f"each {distance} points away on average over {each[0]}"
            if len(set(each)) == 1
            else f"{distance} points away on average: " + _apiece(top, each, "over")
        )
    if is_nan(best["human_baseline"]):
        return text + "; no task has two or more human scores, so there is no single-human yardstick."
    return text + f"; a single human is {number(best['human_baseline'], 2)} points from the mean of the others."


def span_f1_section(data: ProjectData) -> Section | None:
    table = comparison_table(data)
    if table.empty:
        return None
    models = table[table["comparison"] != "human – human"]
    if models.empty:
        return None
    shown = models.assign(model=models["comparison"].str.replace("human – ", "", regex=False))[
        ["model", "form", "n_pairs", "P soft", "R soft", "F1 soft", "F1 hard"]
    ]
    human = table[(table["comparison"] == "human – human") & (table["form"] == "per span")]
    blocks: list[Block] = [
        Paragraph(
            "Each model's spans against each human annotator's (the human as the reference), averaged over the "
            "humans (n_pairs): P is the share of what the model marked that the human also marked, R the share of "
            "what the human marked that the model found; 'soft' ignores the label, 'hard' requires it. The full "
            "table, with the human-human line to compare with, is under 'Span F1 between annotators'."
        ),
        Table("models_span_f1", "Model span F1 against the humans", shown, data=with_project(models, data.project)),
    ]
    yardstick = ""
    if not human.empty:
        yardstick = f" (two humans reach {number(human['F1 soft'].iloc[0], 2)} soft on average)"
    for row in shown[shown["form"] == "per span"].to_dict("records"):
        blocks.append(
            Paragraph(
                f"{row['model']}: of what it marks, {percent(row['P soft'])} was also marked by a human; it finds "
                f"{percent(row['R soft'])} of what a human marked; F1 {number(row['F1 soft'], 2)} soft"
                f"{yardstick} and {number(row['F1 hard'], 2)} hard, per-span form, over "
                f"{plural(row['n_pairs'], 'human')}."
            )
        )
    return Section("Spans", blocks)


def _paradox_sentence(row: Any) -> str:
    """A model against the human majority, per type and on 'any error', with 'but only' only when
    the second share is the smaller one, and only the shares that exist."""
    per_type, any_error = row.per_type_agreement, row.any_error_agreement
    question = "texts when the question is whether there is any error"
    if is_nan(per_type):
        text = f"{row.model}: no (text, type) decision has a clear human majority"
    else:
        text = (
            f"{row.model} agrees with the human majority on {percent(per_type)} of the {row.n_per_type} per-type "
            "decisions"
        )
    if is_nan(any_error):
        text += "; no text has a clear majority on whether there is any error"
    elif is_nan(per_type):
        text += f"; it agrees on {percent(any_error)} of the {row.n_any} {question}"
    else:
        joiner = "but on only" if any_error < per_type else "and on"
        text += f", {joiner} {percent(any_error)} of the {row.n_any} {question}"
    if not is_nan(row.per_type_error_recall):
        text += f"; it makes {percent(row.per_type_error_recall)} of the majority's per-type 'error' calls"
    return text + "."


def paradox_section(data: ProjectData) -> Section | None:
    inputs = span_inputs(data)
    if inputs is None or len(inputs.humans) < 2 or not inputs.models:
        return None
    agreement = model_majority_agreement(
        inputs.spans, inputs.examples, inputs.humans, inputs.models, annotator_col="rater", labels=inputs.labels
    )
    paradox = alignment_paradox(agreement)
    if paradox.empty or paradox["n_any"].sum() == 0:
        return None
    blocks: list[Block] = [
        Paragraph(
            "On each text and error type, the humans who annotated the text split into those who marked the type "
            "and those who did not; the majority is clear when at least 75% of them are on one side (3-1 or 4-0 of "
            "four). per_type_agreement is the share of such (text, type) decisions where the model marked the type "
            "exactly when the majority did (n_per_type decisions); any_error_agreement asks the same about 'is "
            "there any error at all' (n_any texts). The error recalls are the shares of the majority's 'error' "
            "decisions the model also made. '(always no error)' is a model that never marks anything."
        ),
        Table(
            "model_majority",
            "Models against a clear human majority: per type and any error",
            paradox,
            data=with_project(agreement, data.project),
        ),  # fmt: skip
    ]
    baseline = paradox[paradox["model"] == "(always no error)"]
    base = baseline["per_type_agreement"].iloc[0] if not baseline.empty else float("nan")
    for row in paradox[paradox["model"] != "(always no error)"].itertuples():
        blocks.append(Paragraph(_paradox_sentence(row)))
    baseline_words = (
        f"a model that marks nothing already agrees {percent(base)} of the time per type"
        if not is_nan(base)
        else "a model that marks nothing already agrees most of the time per type"
    )
    blocks.append(
        Paragraph(
            f"Why per-type agreement flatters: most texts lack most error types, so humans overwhelmingly agree that "
            f"a given type is absent, and {baseline_words}. Agreement on whether there is any error, and the error "
            "recall, show whether a model finds the errors humans agree on (HotelCheckSpan's 'conservative "
            "alignment paradox')."
        )
    )
    return Section("Per error type against any error", blocks)
