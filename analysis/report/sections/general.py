"""The generic sections every project gets when its data supports them: overview, loading notes,
annotation counts, agreement per item, rating distributions, span counts, models vs humans.

Every number shown comes with a sentence saying what it counts and how many units it rests on,
for a reader who has never seen an agreement coefficient.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from judgelab.analysis.counts import (
    annotation_counts_per_annotator_by_group,
    counts_by_source,
    judgment_counts_per_item_by_group,
)
from judgelab.analysis.grouped import RowGroups
from judgelab.analysis.report.blocks import Block, Figure, Glance, Paragraph, Section, Table
from judgelab.analysis.report.data import (
    FEW_UNITS,
    LINE_ITEM,
    ProjectData,
    alpha_label,
    alpha_words,
    fragile,
    has_line_items,
    is_nan,
    kappa_label,
    n_unique,
    number,
    percent,
    plural,
    short_table,
    whole_project,
)
from judgelab.analysis.report.plots import (
    alpha_ci_cells_png,
    alpha_ci_png,
    pooled_distribution_png,
    rating_distribution_png,
    rating_share_cells_png,
)
from judgelab.analysis.spans import span_counts
from judgelab.analysis.tables import (
    COEFFICIENT_NAMES,
    HUMAN_SOURCE,
    cancelled_mask,
    human_annotations,
    per_item_agreement_by_group,
)

MAX_ANNOTATORS_PER_PLOT = 12
# per_item_agreement joins "names: why" parts with "; ", and a "why" may itself hold "; "
REASON_SPLIT = re.compile(
    "; (?=(?:" + "|".join(re.escape(name) for name in COEFFICIENT_NAMES.values()) + r")(?:, [^:;]+)*: )"
)


@whole_project
def overview_section(data: ProjectData) -> Section:
    """What the project holds: tasks, annotations, annotators, spans, predictions."""
    title = str(data.schema_meta.get("title") or data.schema_name or "unknown schema")
    usable = data.judgments[~cancelled_mask(data.judgments)]
    human = usable[usable["source"] == HUMAN_SOURCE]
    annotations = human_annotations(data.judgments, data.spans)
    n_tasks = n_unique(data.tasks, "task_id") or n_unique(data.judgments, "task_id")
    cancelled = data.judgments[cancelled_mask(data.judgments)]
    schema = f"schema '{data.schema_name}' ({title})" if data.schema_name else "an unknown schema"
    n_cancelled = n_unique(cancelled, "annotation_id")
    n_human_spans = int((data.spans["source"] == HUMAN_SOURCE).sum())
    text = (
        f"This project uses the {schema}. It has {plural(n_tasks, 'task')}. "
        f"{plural(n_unique(annotations, 'annotator'), 'human annotator')} submitted "
        f"{plural(len(annotations), 'annotation')} with "
        f"{plural(len(human), 'judgment')} and {plural(n_human_spans, 'span')}; "
        f"{plural(n_cancelled, 'annotation')} {'was' if n_cancelled == 1 else 'were'} "
        "cancelled (skipped) and left out below."
    )
    models = data.model_sources
    if models:
        text += f" Predictions from {plural(len(models), 'model version')} are present ({', '.join(models)})."
    if "gold" in data.sources:
        text += " Reference labels ('gold') are present and used as the answer key, never as an annotator."
    blocks: list[Block] = [Paragraph(text)]
    if not data.schema_meta:
        blocks.append(
            Paragraph(
                "The schema's metadata is unknown, so the sections below were chosen from the shape "
                "of the data: its rated items, its spans and its sources."
            )
        )
    if data.inferred_scales:
        blocks.append(
            Paragraph(
                f"Treated as rating scales because every answer is a whole number in a short range: "
                f"{', '.join(data.inferred_scales)}. They are compared with the rating-scale measures "
                "(near misses count less)."
            )
        )
    return Section("Overview", blocks)


@whole_project
def loading_notes_section(data: ProjectData) -> Section | None:
    """What the loader skipped or found odd in the source files of this project, and what reading
    its tables found odd (``data.notes``)."""
    problems = data.problems
    notes: list[Block] = [Paragraph(note) for note in data.notes]
    if problems is None or problems.empty:
        return Section("Loading notes", notes) if notes else None
    files = problems["file"].astype(str).map(lambda path: path.replace("\\", "/").rsplit("/", 1)[-1])
    kinds = (
        problems.assign(file=files)
        .groupby(["file", "kind"], sort=False)
        .agg(n=("kind", "size"), n_tasks=("task_id", "nunique"), example=("message", "first"))
        .reset_index()
        .sort_values("n", ascending=False, kind="stable")
    )
    sentence = (
        f"While reading {plural(files.nunique(), 'file')} of this project ({', '.join(dict.fromkeys(files))}), the "
        f"loader noted {plural(len(problems), 'problem')} of {plural(kinds['kind'].nunique(), 'kind')}: one row per "
        "file and kind with how often it occurred (n), on how many tasks, and one example message. Skipped data is "
        "missing from every figure below; problems.csv beside the tables lists each one with its file and line."
    )
    blocks: list[Block] = [*notes, Paragraph(sentence)]
    if "project" in problems.columns:
        unassigned = problems["project"].isna() | (problems["project"].astype(str).str.strip() == "")
        if unassigned.any():
            blocks.append(
                Paragraph(
                    f"{plural(int(unassigned.sum()), 'note')} could not be tied to one project (a problems.csv "
                    "without a project column, whose task ids occur in several projects): they are shown in every "
                    "report of the run."
                )
            )
    blocks.append(Table("loading_notes", "Loader notes per file and kind", kinds, data=problems))
    return Section("Loading notes", blocks)


def annotator_counts_section(data: ProjectData) -> Section | None:
    """Annotations, tasks, judgments and spans per human annotator."""
    counts = data.per_cell(
        "annotations_per_annotator",
        lambda d, g: annotation_counts_per_annotator_by_group(d.judgments, d.spans, g, source=HUMAN_SOURCE),
    )
    if counts.empty:
        return None
    return Section(
        "Annotations per annotator",
        [
            Paragraph(
                "One row per human annotator: n_annotations counts the annotations they "
                "submitted, cancelled ones left out (re-annotating a task counts again), "
                "n_tasks the distinct tasks, "
                "n_cancelled the tasks they skipped, n_judgments their answers (one per rated "
                "item, cancelled annotations excluded) and n_spans the spans they marked."
            ),
            *short_table(
                "annotations_per_annotator",
                "Annotations per annotator",
                counts.sort_values("n_annotations", ascending=False, kind="stable"),
                data.options.max_rows,
                data=counts,
            ),
        ],
    )


def item_counts_section(data: ProjectData) -> Section | None:
    """Judgments, annotators and tasks per rated item."""
    counts = data.per_cell("judgments_per_item", lambda d, g: judgment_counts_per_item_by_group(d.judgments, d.meta, g))
    if counts.empty:
        return None
    blocks: list[Block] = [
        Paragraph(
            "One row per rated item: kind is how the item is compared (ordinal = a rating "
            "scale, nominal = a choice among labels, flag = a tick box, text = free text, "
            "not compared); n_judgments counts the human answers, n_annotators who gave "
            "them and n_tasks on how many tasks."
        )
    ]
    blocks += short_table("judgments_per_item", "Judgments per item", counts, data.options.max_rows)
    return Section("Judgments per item", blocks)


# -- agreement per item ----------------------------------------------------------------------

NOMINAL_COLUMNS = {
    "item": "item",
    "kind": "kind",
    "n_units": "n_units",
    "n_annotators": "n_annotators",
    "exact_agreement": "exact",
    "kappa": "Cohen/Light kappa",
    "fleiss_kappa": "Fleiss kappa",
    "krippendorff_alpha": "alpha (nominal)",
    "alpha_ci": "alpha 95% CI",
    "gwet_ac1": "Gwet AC1",
    "note": "note",
}
ORDINAL_COLUMNS = {
    "item": "item",
    "scale": "scale",
    "n_units": "n_units",
    "n_annotators": "n_annotators",
    "exact_agreement": "exact",
    "adjacent_agreement": "adjacent (±1)",
    "weighted_kappa": "weighted kappa (quadratic)",
    "krippendorff_alpha": "alpha (ordinal)",
    "alpha_ci": "alpha 95% CI",
    "gwet_ac2": "Gwet AC2",
    "note": "note",
}
SHOWN_COEFFICIENTS = {
    "nominal": ("Cohen's kappa", "Light's kappa", "Fleiss' kappa", "Krippendorff's alpha", "Gwet's AC1"),
    "ordinal": (
        "adjacent agreement",
        "quadratic weighted kappa",
        "Light's kappa",
        "Krippendorff's alpha",
        "Gwet's AC2",
    ),
}


def agreement_table(data: ProjectData) -> pd.DataFrame:
    """``per_item_agreement`` of the project (every coefficient), plus ``kappa`` (Cohen's with two
    annotators, else Light's), ``weighted_kappa`` (quadratic; averaged over pairs when more than
    two annotators: ``weighted_kappa_pairs``) and ``alpha_ci`` (text). Cached per project."""

    def compute(whole: ProjectData, groups: RowGroups | None) -> list[pd.DataFrame]:
        kinds = whole.kinds
        tables = per_item_agreement_by_group(
            whole.judgments,
            whole.meta,
            groups,
            spans=whole.spans,
            kinds={item: kind for item, (kind, _) in kinds.items()},
            n_boot=whole.options.n_boot,
            seed=whole.options.seed,
        )
        return [finish(table, kinds) for table in tables]

    def finish(table: pd.DataFrame, kinds: dict[str, tuple[str, str]]) -> pd.DataFrame:
        if table.empty:
            return table
        table["kind_from"] = [kinds.get(str(item), ("", "default"))[1] for item in table["item"]]
        table["kappa"] = table["cohen_kappa"].where(table["cohen_kappa"].notna(), table["light_kappa"])
        table["kappa_kind"] = [
            "Cohen" if not is_nan(c) else ("Light" if not is_nan(light) else "")
            for c, light in zip(table["cohen_kappa"], table["light_kappa"], strict=True)
        ]
        weighted, pairs = [], []
        columns = ("cohen_kappa_quadratic", "light_kappa_quadratic", "kind", "n_annotators", "n_units")
        for cohen, light, kind, n_annotators, n_units in zip(*(table[name] for name in columns), strict=True):
            value, averaged = cohen, False
            if kind == "ordinal" and is_nan(value) and n_annotators > 2 and n_units > 0:
                value, averaged = light, True
            weighted.append(value)
            pairs.append(averaged)
        table["weighted_kappa"] = weighted
        table["weighted_kappa_pairs"] = pairs
        table["alpha_ci"] = [
            f"{low:.3f}–{high:.3f}" if not (is_nan(low) or is_nan(high)) else "n/a"
            for low, high in zip(table["alpha_ci_low"], table["alpha_ci_high"], strict=True)
        ]
        return table

    return data.per_cell("agreement", compute)


def agreement_section(data: ProjectData) -> Section | None:
    """Agreement per item, one table per kind of item (choices, rating scales), a plot of alpha
    with its interval, and one sentence per item and number."""
    agreement = agreement_table(data)
    if agreement.empty:
        return None
    shown_rows = agreement
    blocks: list[Block] = []
    if has_line_items(data.judgments):
        shown_rows = agreement[~agreement["item"].astype(str).str.match(LINE_ITEM)]
        blocks.append(
            Paragraph(
                "Line verdicts (line_0, line_1, ...) are compared together, one unit per line of each "
                "summary, in the section 'Line-by-line consistency'; agreement.csv also has them one "
                "line position at a time."
            )
        )
    if shown_rows.empty:
        return Section("Agreement per item", blocks) if blocks else None
    blocks.append(
        Paragraph(
            "n_units is the number of tasks rated by at least two annotators: every coefficient in a "
            "row rests on those tasks only; n_annotators counts who rated the item. Text items are not "
            "compared. A flag counts as 'unchecked' for an annotator who annotated the task without "
            "ticking it. The tables show the coefficients that suit each kind of item; agreement.csv "
            "has all of them (Scott's pi, Bennett's S, linear weighted kappa, ...)."
        )
    )
    scales = data.meta.get("scales") or {}
    is_ordinal = (shown_rows["kind"] == "ordinal").to_numpy(dtype=bool)
    ordinal = shown_rows[is_ordinal]
    records = list(shown_rows.itertuples())  # the rows as attributes, read once for the notes and sentences
    blocks += _agreement_tables(agreement, shown_rows, records, is_ordinal, scales)
    blocks += _alpha_plot(shown_rows)
    if not ordinal.empty and bool(ordinal["weighted_kappa_pairs"].any()):
        blocks.append(
            Paragraph(
                "With more than two annotators, the weighted kappa shown is the mean of the quadratic "
                "weighted kappa of every pair of annotators (Light's approach)."
            )
        )
    if "n_spans" in set(shown_rows["item"]) and not data.spans.empty:
        blocks.append(
            Paragraph(
                "n_spans is the number of spans an annotation marked (written by the loader so that an annotation "
                "that found nothing still counts): its agreement says whether annotators find similar numbers of "
                "errors, not the same ones (see 'Span agreement')."
            )
        )
    blocks += [
        Paragraph(_agreement_sentence(row, scales.get(row.item), explain=index == 0))
        for index, row in enumerate(records)
    ]
    glance = [_agreement_glance(row) for row in records if row.item != "n_spans"]
    blocks += _paradox_note(shown_rows)
    return Section("Agreement per item", blocks, glance=glance)


def _agreement_tables(
    agreement: pd.DataFrame,
    shown_rows: pd.DataFrame,
    records: list[Any],
    is_ordinal: np.ndarray,
    scales: Mapping[str, Any],
) -> list[Block]:
    """One table for choices and tick boxes, one for rating scales (with each item's scale), each
    with the coefficients that suit its kind; ``agreement.csv`` (every row) goes with the first."""
    nominal = shown_rows[~is_ordinal]
    ordinal = shown_rows[is_ordinal]
    blocks: list[Block] = []
    if not nominal.empty:
        shown = nominal.assign(
            note=[_note(row, "nominal") for row, o in zip(records, is_ordinal, strict=True) if not o]
        )
        shown = _without_empty_notes(shown[list(NOMINAL_COLUMNS)].rename(columns=NOMINAL_COLUMNS))
        blocks.append(
            Table("agreement", "Agreement on choices and tick boxes (human annotators)", shown, data=agreement)
        )
    if not ordinal.empty:
        shown = ordinal.assign(
            note=[_note(row, "ordinal") for row, o in zip(records, is_ordinal, strict=True) if o],
            scale=[_scale_text(scales.get(item)) for item in ordinal["item"]],
        )
        shown = _without_empty_notes(shown[list(ORDINAL_COLUMNS)].rename(columns=ORDINAL_COLUMNS))
        data_table = agreement if nominal.empty else agreement.iloc[0:0]  # one agreement.csv with every item
        blocks.append(Table("agreement", "Agreement on rating scales (human annotators)", shown, data=data_table))
    return blocks


def _alpha_plot(shown_rows: pd.DataFrame) -> list[Block]:
    """The plot of each item's alpha with its bootstrap interval, and how to read it; nothing when
    no alpha was computed."""
    if not shown_rows["krippendorff_alpha"].notna().any():
        return []
    plotted = shown_rows[["item", "krippendorff_alpha", "alpha_ci_low", "alpha_ci_high", "alpha_level"]]
    return [
        Figure(
            "Krippendorff's alpha per item (dot) with its 95% bootstrap interval (bar)",
            render=lambda: alpha_ci_png(plotted),
            combine=alpha_ci_cells_png,
            payload=plotted,
        ),
        Paragraph(
            "The dashed lines of the plot mark 0.667 and 0.800; a bar crossing a line means the data cannot "
            "tell on which side of it the item's reliability lies."
        ),
    ]


def _paradox_note(shown_rows: pd.DataFrame) -> list[Block]:
    """Why items with high exact agreement can have a low alpha (lopsided answers), naming them;
    nothing when there are none."""
    paradox = shown_rows[(shown_rows["exact_agreement"] >= 0.8) & (shown_rows["krippendorff_alpha"] < 0.5)]
    if paradox.empty:
        return []
    return [
        Paragraph(
            f"{', '.join(map(str, paradox['item']))}: high exact agreement with a low alpha or kappa is no "
            "contradiction. When nearly every answer is the same value, chance alone already makes most pairs "
            "agree, so the chance-corrected coefficients have little room and drop with a few disagreements; "
            "Gwet's AC1/AC2 are built to be less affected by such lopsided answers."
        )
    ]


def _agreement_glance(row: object) -> Glance:
    units = plural(int(row.n_units), "task")
    alpha = row.krippendorff_alpha
    if is_nan(alpha):
        return Glance("Agreement", str(row.item), f"not computed: {units} rated by two or more annotators", None)
    words = alpha_words(alpha, row.alpha_ci_low, row.alpha_ci_high, str(row.alpha_level))
    return Glance("Agreement", str(row.item), f"{words}; {units}", float(alpha))


def agreement_by_cell(sections: list[Section], by: tuple[str, ...]) -> None:
    """After the cells are merged: a table with one row per cell and one column per item
    ('alpha [95% interval]'), the paper-style view of a faceted agreement table."""
    for section in sections:
        found = section.find("agreement")
        if found is None or found[0] is not section:
            continue
        data = found[1].csv_data
        fields = [name for name in by if name in data.columns]
        if len(fields) > 1:  # a field with one value (BASSE.es: language) says nothing per row
            fields = [name for name in fields if data[name].astype(str).nunique() > 1] or fields[-1:]
        rows = data[~data["item"].astype(str).str.match(LINE_ITEM)]
        if not fields or rows.empty or rows["item"].nunique() > MAX_WIDE_ITEMS:
            return
        text = [
            "n/a" if is_nan(alpha) else f"{alpha:.2f}" + ("" if ci == "n/a" else f" [{ci.replace('–', ', ')}]")
            for alpha, ci in zip(rows["krippendorff_alpha"], rows["alpha_ci"].fillna("n/a"), strict=True)
        ]
        wide = rows.assign(cell=text).pivot_table(index=fields, columns="item", values="cell", aggfunc="first")
        wide = wide.reindex(columns=list(dict.fromkeys(rows["item"])))
        units = rows.groupby(fields)["n_units"].max().rename("n_units")
        shown = pd.concat([units, wide], axis=1).reset_index()
        shown.columns.name = None
        level = ", ".join(sorted(set(rows["alpha_level"].dropna().astype(str))))
        position = next((i for i, b in enumerate(section.blocks) if isinstance(b, Table)), len(section.blocks))
        section.blocks[position:position] = [
            Paragraph(
                f"Krippendorff's {level} alpha per cell (rows) and item (columns), with its 95% bootstrap interval; "
                "n_units is the cell's tasks rated twice or more (the most for any item). The long table below has "
                "every coefficient."
            ),
            Table("agreement_by_cell", "Alpha per cell and item", shown),
        ]
        return


MAX_WIDE_ITEMS = 12  # more items than this: the long table only


agreement_section.after_merge = agreement_by_cell  # type: ignore[attr-defined]


def _without_empty_notes(shown: pd.DataFrame) -> pd.DataFrame:
    if "note" in shown.columns and not shown["note"].astype(str).str.strip().any():
        return shown.drop(columns=["note"])
    return shown


def _scale_text(scale: object) -> str:
    if isinstance(scale, dict) and "min" in scale and "max" in scale:
        return f"{scale['min']}-{scale['max']}"
    return ""


def _few_shared(row: object) -> bool:
    """A kappa averaged over pairs of annotators (Light's) where some pair shares few tasks."""
    averaged = getattr(row, "kappa_kind", "") == "Light" or bool(getattr(row, "weighted_kappa_pairs", False))
    fewest = getattr(row, "min_pair_units", 0)
    return averaged and not is_nan(fewest) and 0 < int(fewest) < FEW_UNITS


def _note(row: object, kind: str) -> str:
    """The reasons for the n/a cells of a shown row (the full list is in agreement.csv), and a
    warning on a kappa averaged over pairs that share few tasks."""
    warning = ""
    if _few_shared(row):
        warning = f"mean over {row.n_pairs} pairs, some sharing only {int(row.min_pair_units)} tasks"
    reason = str(getattr(row, "reason", "") or "")
    if not reason:
        return warning
    shown = set(SHOWN_COEFFICIENTS[kind])
    if not is_nan(getattr(row, "kappa", float("nan"))):
        shown -= {"Cohen's kappa", "Light's kappa"}
    if not is_nan(getattr(row, "weighted_kappa", float("nan"))):
        shown -= {"quadratic weighted kappa", "Light's kappa"}
    kept = []
    for part in REASON_SPLIT.split(reason):
        names, colon, why = part.partition(": ")
        listed = names.split(", ")
        if not colon or not set(listed) <= set(COEFFICIENT_NAMES.values()):
            kept.append(part)  # a reason for the whole row
            continue
        relevant = [name for name in listed if name in shown]
        if relevant:
            kept.append(f"{', '.join(relevant)}: {why}")
    return "; ".join(dict.fromkeys([warning, *kept] if warning else kept))


def _agreement_sentence(row: object, scale: object, explain: bool = True) -> str:
    """One item's numbers in words; ``explain`` adds what each coefficient means (first item only)."""
    item = _item_heading(row, scale)
    if row.n_units == 0:
        return f"{item}: no agreement can be measured yet: {row.reason}."
    parts = [
        f"{item}: {row.n_units} tasks were rated by two or more of the {row.n_annotators} annotators "
        f"({row.n_annotations} answers); {percent(row.exact_agreement)} of the pairs of answers on the "
        f"same task are identical (exact agreement {number(row.exact_agreement)})."
    ]
    parts += _ordinal_parts(row, explain) if row.kind == "ordinal" else _kappa_parts(row, explain)
    if not is_nan(row.krippendorff_alpha):
        parts.append(_alpha_part(row, explain))
    if _few_shared(row):
        parts.append(
            f"Caution: that kappa is a mean over {row.n_pairs} pairs of annotators, some sharing only "
            f"{plural(int(row.min_pair_units), 'task')}; every pair weighs the same however little it shares, so "
            "Fleiss' kappa and alpha, which pool the tasks, are the firmer figures."
        )
    gwet, name = (row.gwet_ac2, "AC2") if row.kind == "ordinal" else (row.gwet_ac1, "AC1")
    if not is_nan(gwet):
        parts.append(f"Gwet's {name} is {number(gwet)}.")
    if is_nan(row.kappa) and is_nan(row.krippendorff_alpha) and row.reason:
        parts.append(f"The chance-corrected coefficients cannot be computed: {row.reason}.")
    parts.append(fragile(int(row.n_units)).strip())
    return " ".join(part for part in parts if part)


def _item_heading(row: object, scale: object) -> str:
    """The item's name with its kind (a rating scale of counts is a count) and scale."""
    kind_text = {"ordinal": "rating scale", "nominal": "choice", "flag": "tick box"}.get(row.kind, row.kind)
    if row.kind == "ordinal" and str(row.item).startswith("n_") and isinstance(scale, dict) and scale.get("inferred"):
        kind_text = "count"
    scale_text = _scale_text(scale)
    return f"{row.item} ({kind_text}{' ' + scale_text if scale_text else ''})"


def _ordinal_parts(row: object, explain: bool) -> list[str]:
    """A rating scale's adjacent agreement and quadratic weighted kappa, those computed."""
    parts = []
    if not is_nan(row.adjacent_agreement):
        parts.append(
            f"{percent(row.adjacent_agreement)} are at most one point apart "
            f"(adjacent agreement {number(row.adjacent_agreement)})."
        )
    if not is_nan(row.weighted_kappa):
        who = "averaged over every pair of annotators" if row.weighted_kappa_pairs else "between the two annotators"
        meaning = ": agreement beyond chance, with near misses counted as partly agreeing" if explain else ""
        parts.append(
            f"The quadratic weighted kappa, {who}, is {number(row.weighted_kappa)} "
            f"({kappa_label(row.weighted_kappa)}){meaning}."
        )
    return parts


def _kappa_parts(row: object, explain: bool) -> list[str]:
    """A choice's or tick box's kappa (Cohen's with two annotators, else Light's) and, with more
    than two annotators, Fleiss' kappa; those computed."""
    parts = []
    if not is_nan(row.kappa):
        if row.kappa_kind == "Cohen":
            meaning = (
                ": the agreement left after removing what the two annotators' habits would give by chance"
                if explain
                else ""
            )
            parts.append(f"Cohen's kappa is {number(row.kappa)} ({kappa_label(row.kappa)}){meaning}.")
        else:
            parts.append(
                f"Light's kappa, Cohen's kappa averaged over every pair of annotators, is {number(row.kappa)} "
                f"({kappa_label(row.kappa)})."
            )
    if not is_nan(row.fleiss_kappa) and row.n_annotators > 2:
        parts.append(
            f"Fleiss' kappa over all annotators is {number(row.fleiss_kappa)} ({kappa_label(row.fleiss_kappa)})."
        )
    return parts


def _alpha_part(row: object, explain: bool) -> str:
    """Krippendorff's alpha with its bootstrap interval (when there is one) and its label."""
    interval = ""
    if row.alpha_ci != "n/a":
        low, high = number(row.alpha_ci_low), number(row.alpha_ci_high)
        interval = f", 95% interval {low} to {high}" + (f" from resampling the {row.n_units} tasks" if explain else "")
    return (
        f"Krippendorff's {row.alpha_level} alpha is {number(row.krippendorff_alpha)}{interval}: "
        f"{alpha_label(row.krippendorff_alpha)}."
    )


def rating_distribution_section(data: ProjectData) -> Section | None:
    """A bar chart of how often each annotator used each value of each rating scale."""
    scales = data.meta.get("scales") or {}
    rows = data.usable_human
    items = set(rows["item"].unique())
    rated_scales = {item: scale for item, scale in scales.items() if item in items}
    if not rated_scales:
        return None
    rated = rows[rows["item"].isin(list(rated_scales))][["annotator", "item", "value"]]
    n_annotators = rated["annotator"].nunique()
    if n_annotators <= MAX_ANNOTATORS_PER_PLOT:
        render = partial(rating_distribution_png, rated, rated_scales)
        text = (
            "For each rating scale, the share of each value in each annotator's answers "
            f"({plural(len(rated), 'answer')} by "
            f"{plural(n_annotators, 'annotator')}). Annotators whose bars differ a lot use the scale "
            "differently (one stricter, one more lenient), which lowers agreement."
        )
    else:
        render = partial(pooled_distribution_png, rated, rated_scales)
        text = (
            f"For each rating scale, the share of each value among all answers, the "
            f"{n_annotators} annotators pooled (too many for one bar each)."
        )
    figure = Figure(
        "Share of each value per item",
        render=render,
        combine=rating_share_cells_png,
        payload=(rated, rated_scales),
    )
    return Section("Rating distributions", [Paragraph(text), figure])


def span_section(data: ProjectData) -> Section | None:
    """Span counts per label and per annotator, and how many tasks have spans."""
    if data.spans.empty:
        if data.schema_meta.get("span_controls") and not data.usable_human.empty:
            return Section("Spans", [Paragraph("No spans have been marked in this project yet.")])
        return None
    counts = span_counts(data.spans, data.tasks if not data.tasks.empty else None)
    blocks: list[Block] = []
    for row in counts.per_project.itertuples():
        sentence = (
            f"{row.source}: {row.n_spans} spans in {row.n_annotations} annotations; "
            f"{row.n_tasks_with_spans} tasks have at least one span"
        )
        if "share_tasks_with_spans" in counts.per_project and not is_nan(row.share_tasks_with_spans):
            sentence += f" ({row.share_tasks_with_spans:.0%} of the project's {int(row.n_tasks)} tasks)"
        blocks.append(Paragraph(sentence + "."))
    blocks.append(
        Paragraph(
            "Per label: n_spans counts the spans with that label, n_annotations the "
            "annotations containing at least one, n_tasks the tasks where someone used it."
        )
    )
    blocks.append(Table("spans_per_label", "Spans per label", counts.by_label))
    wide = counts.by_annotator.pivot_table(
        index=["source", "annotator"],
        columns="label",
        values="n_spans",
        aggfunc="sum",
        fill_value=0,
    ).reset_index()
    wide.columns.name = None
    blocks += short_table(
        "spans_per_annotator", "Spans per annotator and label", wide, data.options.max_rows, data=counts.by_annotator
    )
    return Section("Spans", blocks)


def source_counts_section(data: ProjectData) -> Section | None:
    """Counts of human annotations against model predictions, when predictions exist."""
    if not data.model_sources:
        return None
    counts = counts_by_source(data.judgments, data.spans)
    return Section(
        "Model predictions and human annotations",
        [
            Paragraph(
                "One row per source: 'human' for annotators, 'model:<version>' for each model "
                "version's predictions, 'gold' for reference labels. n_tasks counts the tasks each "
                "source covered, n_annotations its annotations or predictions, n_judgments and n_spans "
                "their answers. Model predictions are never part of the human agreement figures."
            ),
            Table("counts_by_source", "Human annotations and model predictions", counts),
        ],
    )
