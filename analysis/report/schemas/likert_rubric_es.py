"""Report section for Likert rubrics of summaries (seed 003, BASSE-like data).

Shown for the ``likert_rubric_es`` schema, or when the judgments hold ``Relevance`` and at
least two other criteria of the rubric: agreement per criterion and model, score
distributions per model, and the Relevance cues (chatbot phrases, subjective valuations)
with the mean Relevance of summaries with and without one.
"""

from __future__ import annotations

from functools import partial

import pandas as pd

from judgelab.analysis.qc.likert_rubric_es import (
    DEFAULT_CRITERIA,
    RELEVANCE_ITEM,
    criterion_agreement,
    relevance_by_cue,
    relevance_cues,
    score_distributions,
)
from judgelab.analysis.report.blocks import Block, Figure, Paragraph, Section, Table
from judgelab.analysis.report.data import (
    ProjectData,
    counts_of,
    highest_and_lowest,
    is_nan,
    listed,
    number,
    percent,
    plural,
    section_or_none,
    short_table,
    two_places,
    welch_words,
    with_project,
)
from judgelab.analysis.report.plots import score_distribution_png
from judgelab.analysis.report.schemas import SCHEMA_SECTIONS

SCHEMA = "likert_rubric_es"
GROUP_COLUMN = "model"


def _criteria(data: ProjectData) -> list[str]:
    scales = (data.schema_meta or {}).get("scales") or {}
    rated = set(data.usable_human["item"])
    declared = [item for item in scales if item in rated]
    return declared or [item for item in DEFAULT_CRITERIA if item in rated]


def looks_like_rubric(data: ProjectData) -> bool:
    """Ratings of ``Relevance`` and at least two other criteria of the rubric."""
    rated = set(data.usable_human["item"])
    return RELEVANCE_ITEM in rated and len(rated & set(DEFAULT_CRITERIA)) >= 3


@SCHEMA_SECTIONS.register(SCHEMA, also_when=looks_like_rubric)
def likert_section(data: ProjectData) -> Section | None:
    criteria = _criteria(data)
    if not criteria:
        return None
    intro: list[Block] = [
        Paragraph(
            f"Each summary is rated 1-5 on {plural(len(criteria), 'criterion', 'criteria')} "
            f"({', '.join(criteria)}). The agreement of each criterion over all summaries is in "
            "'Agreement per item' above; this section breaks it down by the model that wrote the summary."
        )
    ]
    tasks = data.all_cells.tasks
    if {"round", "doc_idx"} <= set(tasks.columns):  # BASSE's tasks
        intro.append(
            Paragraph(
                "Rounds are the data's own: BASSE's paper calls rounds 0, 1 and 2 its rounds 1, 2 and 3 (its agreement "
                "table), and has no agreement for round 3, which one rater annotated."
            )
        )
    annotators = data.usable_human["annotator"].astype(str)
    if len(annotators) and annotators.str.fullmatch(r"rater_\d+").all():
        intro.append(
            Paragraph(
                "The raters are named by their position in each rating list (rater_0, rater_1, ...); the data "
                "does not say whether a position is the same person everywhere. Exact and adjacent agreement, "
                "Fleiss' kappa and alpha do not need that; the coefficients that pair raters (Cohen's, Light's "
                "and weighted kappa) assume it."
            )
        )
    subsections = [by_model_section(data, criteria), distribution_section(data, criteria), cue_section(data)]
    return section_or_none("Likert rubric", intro, subsections)


def by_model_section(data: ProjectData, criteria: list[str]) -> Section | None:
    """Krippendorff's ordinal alpha per criterion on each model's summaries."""
    if GROUP_COLUMN not in data.tasks.columns:
        return None
    groups = data.tasks[["project", "task_id", GROUP_COLUMN]].dropna(subset=[GROUP_COLUMN])
    if groups[GROUP_COLUMN].nunique() < 2:
        return None
    rows = []
    for group, tasks in groups.groupby(GROUP_COLUMN, sort=True):
        subset = data.judgments[data.judgments["task_id"].isin(set(tasks["task_id"]))]
        table = criterion_agreement(subset, items=criteria)
        if not table.empty:
            rows.append(table.assign(model=group))
    if not rows:
        return None
    long = pd.concat(rows, ignore_index=True)
    wide = long.pivot_table(
        index="model", columns="item", values="krippendorff_alpha_ordinal", aggfunc="first", dropna=False
    )
    wide = wide.reindex(columns=[c for c in criteria if c in wide.columns])
    units = long.groupby("model")["n_units"].max().rename("n_units")
    shown = pd.concat([units, wide], axis=1).reset_index()
    shown.columns.name = None
    blocks: list[Block] = [
        Paragraph(
            "One row per model (the family that wrote the summary); each criterion's cell is Krippendorff's "
            "ordinal alpha over that model's summaries, and n_units the summaries rated by two or more raters "
            "(the most for any criterion). likert_agreement_by_model.csv adds exact and adjacent agreement and "
            "Fleiss' kappa. Low values on one model can mean its summaries are harder to judge, or simply that "
            "they all get similar scores (alpha needs differences to agree on)."
        ),
        Table(
            "likert_agreement_by_model",
            "Ordinal alpha per criterion and model",
            shown,
            data=with_project(long, data.project),
        ),  # fmt: skip
    ]
    defined = long.dropna(subset=["krippendorff_alpha_ordinal"])
    if not defined.empty:
        alpha = defined["krippendorff_alpha_ordinal"]
        ends = highest_and_lowest(alpha, number)
        if ends is None:
            text = f"Every criterion has the same alpha on every model's summaries: {number(alpha.iloc[0])}."
        else:
            text = f"Lowest: {_cells(defined.loc[ends[1]])}; highest: {_cells(defined.loc[ends[0]])}."
        blocks.append(Paragraph(text))
    return Section("Agreement per criterion and model", blocks)


def _cells(rows: pd.DataFrame) -> str:
    """``Coherence on A summaries (alpha 0.412, 40 summaries)``; criteria and models tied at the
    alpha shown named together, with the alpha once."""
    alpha = number(rows["krippendorff_alpha_ordinal"].iloc[0])
    cells = listed([f"{row['item']} on {row['model']} summaries" for _, row in rows.iterrows()])
    return f"{cells} (alpha {alpha}, {counts_of(rows['n_units'], 'summary', 'summaries')})"


def distribution_section(data: ProjectData, criteria: list[str]) -> Section | None:
    """How often each score was given per criterion and model, and the mean scores."""
    distribution = score_distributions(data.judgments, data.tasks, items=criteria, by=GROUP_COLUMN)
    if distribution.empty:
        return None
    by_model = distribution[distribution["scope"] == GROUP_COLUMN]
    block = by_model if not by_model.empty else distribution.assign(group="all summaries")
    means = block.drop_duplicates(["group", "item"]).pivot_table(
        index="group", columns="item", values="mean", aggfunc="first"
    )
    means = means.reindex(columns=[c for c in criteria if c in means.columns])
    ratings = block.drop_duplicates(["group", "item"]).groupby("group")["n_ratings"].max().rename("n_ratings")
    shown = pd.concat([ratings, means.map(lambda v: f"{v:.2f}")], axis=1).reset_index()
    shown = shown.rename(columns={"group": GROUP_COLUMN})
    shown.columns.name = None
    blocks: list[Block] = [
        Paragraph(
            "The plot shows, for each criterion, how each model's ratings split over the scores 1 (red) to "
            "5 (green); the table gives each model's mean score per criterion and n_ratings, its ratings of one "
            "criterion (every rater counts)."
        )
    ]
    blocks.append(
        Figure("Share of each score per criterion and model", render=partial(score_distribution_png, block, criteria))
    )
    blocks.append(
        Table(
            "likert_mean_scores",
            "Mean score per criterion and model",
            shown,
            data=with_project(distribution, data.project),
        )  # fmt: skip
    )
    for item in means.columns:
        column = means[item].dropna()
        if len(column) >= 2:
            ends = highest_and_lowest(column, two_places)
            if ends is None:
                text = f"{item}: the same mean for every model ({two_places(column.max())})."
            else:
                text = (
                    f"{item}: highest mean for {listed(ends[0].astype(str))} ({two_places(column.max())}), "
                    f"lowest for {listed(ends[1].astype(str))} ({two_places(column.min())})."
                )
            blocks.append(Paragraph(text))
    return Section("Score distributions", blocks)


def cue_section(data: ProjectData) -> Section | None:
    """The rubric's Relevance cues counted in the summaries, and Relevance with and without one."""
    if "summary" not in data.tasks.columns or RELEVANCE_ITEM not in set(data.usable_human["item"]):
        return None
    cues = relevance_cues(data.tasks)
    per_task = cues.per_task
    n_with = int(per_task["has_cue"].sum())
    blocks: list[Block] = [
        Paragraph(
            "The rubric takes a point of Relevance off for chatbot phrases ('¿Te gustaría que elabore...?', "
            "'Espero que...') and for subjective valuations ('preocupante', 'lamentable'). The phrases are "
            f"searched in every summary (ignoring case and accents): {n_with} of {len(per_task)} summaries "
            f"({percent(n_with / len(per_task) if len(per_task) else float('nan'))}) contain at least one."
        )
    ]
    if not cues.per_cue.empty:
        blocks += short_table(
            "relevance_cues", "Cues found: occurrences and summaries", cues.per_cue, data.options.max_rows,
            data=with_project(cues.per_cue, data.project),
        )  # fmt: skip
    by_cue = relevance_by_cue(data.judgments, data.tasks)
    blocks.append(
        Paragraph(
            "Mean Relevance of the summaries with and without a cue of each kind ('any' = any cue): each "
            "summary's ratings are averaged first, so every summary counts once; Welch's t and its p value say "
            "whether the difference is larger than chance would give."
        )
    )
    blocks.append(Table("relevance_by_cue", "Relevance with and without a cue", by_cue,
                        data=with_project(by_cue, data.project)))  # fmt: skip
    for row in by_cue.itertuples():
        if row.n_tasks_with == 0:
            blocks.append(Paragraph(f"{row.cue_kind}: no summary has such a cue."))
            continue
        if is_nan(row.mean_with):
            blocks.append(Paragraph(f"{row.cue_kind}: no summary with such a cue has a Relevance rating yet."))
            continue
        if row.n_tasks_without == 0 or is_nan(row.mean_without):
            blocks.append(
                Paragraph(
                    f"{row.cue_kind}: every rated summary has such a cue (mean Relevance "
                    f"{number(row.mean_with, 2)} on {plural(row.n_tasks_with, 'summary', 'summaries')}); there is "
                    "none without one to compare with."
                )
            )
            continue
        difference = "" if is_nan(row.difference) else f", a difference of {row.difference:+.2f}"
        blocks.append(
            Paragraph(
                f"{row.cue_kind}: mean Relevance {number(row.mean_with, 2)} on "
                f"{plural(row.n_tasks_with, 'summary', 'summaries')} with a cue against "
                f"{number(row.mean_without, 2)} on the {row.n_tasks_without} without{difference} "
                f"({welch_words(row.welch_t, row.p_value)})."
            )
        )
    return Section("Relevance cues", blocks)
