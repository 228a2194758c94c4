"""One builder per analysis of a project; ``SECTION_BUILDERS`` lists them in report order.

A builder takes a :class:`ProjectData` and returns a :class:`Section`, or ``None`` when it
has nothing to say for that project (no spans, no model predictions). To grow the report,
write a builder and append it to ``SECTION_BUILDERS``.

Every number shown comes with a sentence saying what it counts, for a reader who has
never seen an agreement coefficient.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis.counts import (
    annotation_counts_per_annotator,
    counts_by_source,
    judgment_counts_per_item,
)
from analysis.report_blocks import Figure, Paragraph, Section, Table
from analysis.report_plots import rating_distribution_png
from analysis.spans import span_counts
from analysis.tables import (
    HUMAN_SOURCE,
    MODEL_SOURCE_PREFIX,
    cancelled_mask,
    natural_key,
    per_item_agreement,
)

FEW_UNITS = 30  # below this, say that an agreement value is fragile


@dataclass(frozen=True)
class ProjectData:
    """The tidy tables of one project and its schema's metadata."""

    project: object
    schema_name: str | None
    schema_meta: Mapping[str, Any]
    tasks: pd.DataFrame
    judgments: pd.DataFrame
    spans: pd.DataFrame

    @property
    def human_judgments(self) -> pd.DataFrame:
        return self.judgments[self.judgments["source"] == HUMAN_SOURCE]

    @property
    def human_spans(self) -> pd.DataFrame:
        return self.spans[self.spans["source"] == HUMAN_SOURCE]


SectionBuilder = Callable[[ProjectData], Section | None]


def guide_section() -> Section:
    """The report-wide 'how to read' section: the measures, defined once."""
    return Section(
        "How to read this report",
        [
            Paragraph(
                "A task is one item shown to annotators (a text pair, a summary, a story line). "
                "A judgment is one answer an annotator gave on a task for one rated item "
                "(for example SP, Coherence or line_3); a span is a marked stretch of text with "
                "a label. Only human annotations that were not cancelled (skipped) enter the "
                "agreement figures; model predictions are counted separately."
            ),
            Paragraph(
                "Agreement is measured per item on the tasks that two or more annotators rated "
                "(the 'units'); tasks rated by one annotator say nothing about agreement. "
                "Exact agreement is the share of pairs of annotators, on the same task, who gave "
                "exactly the same answer: 0.8 means 8 pairs in 10 agree. On a rating scale a "
                "near miss (2 against 3) counts as a disagreement."
            ),
            Paragraph(
                "Kappa corrects exact agreement for the agreement expected by chance: two "
                "annotators who both answer '3' most of the time agree often without looking "
                "closely. Kappa is 1 for perfect agreement, 0 for agreement no better than "
                "chance, and below 0 for systematic disagreement. Cohen's kappa compares exactly "
                "two annotators; Fleiss' kappa works for any number of annotators (with two it "
                "equals Scott's pi, which is close to Cohen's). Common reading (Landis and Koch, "
                "1977): below 0.20 slight, 0.21-0.40 fair, 0.41-0.60 moderate, 0.61-0.80 "
                "substantial, above 0.80 almost perfect. 'n/a' means a coefficient cannot be "
                "computed for the data; the table's note says why."
            ),
        ],
    )


def overview_section(data: ProjectData) -> Section:
    """What the project holds: tasks, annotations, annotators, spans, predictions."""
    title = str(data.schema_meta.get("title") or data.schema_name or "unknown schema")
    usable = data.judgments[~cancelled_mask(data.judgments)]
    human = usable[usable["source"] == HUMAN_SOURCE]
    n_tasks = _n_unique(data.tasks, "task_id") or _n_unique(data.judgments, "task_id")
    cancelled = data.judgments[cancelled_mask(data.judgments)]
    n_models = sum(1 for source in _sources(data) if str(source).startswith(MODEL_SOURCE_PREFIX))
    schema = f"schema '{data.schema_name}' ({title})" if data.schema_name else "an unknown schema"
    n_cancelled = _n_unique(cancelled, "annotation_id")
    text = (
        f"This project uses the {schema}. It has {_plural(n_tasks, 'task')}. "
        f"{_plural(_n_unique(human, 'annotator'), 'human annotator')} submitted "
        f"{_plural(_n_unique(human, 'annotation_id'), 'annotation')} with "
        f"{_plural(len(human), 'judgment')} and {_plural(len(data.human_spans), 'span')}; "
        f"{_plural(n_cancelled, 'annotation')} {'was' if n_cancelled == 1 else 'were'} "
        "cancelled (skipped) and left out below."
    )
    if n_models:
        text += f" Predictions from {_plural(n_models, 'model version')} are present."
    return Section("Overview", [Paragraph(text)])


def annotator_counts_section(data: ProjectData) -> Section | None:
    """Annotations, tasks, judgments and spans per human annotator."""
    counts = annotation_counts_per_annotator(data.human_judgments, data.human_spans)
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
            Table("annotations_per_annotator", "Annotations per annotator", counts),
        ],
    )


def item_counts_section(data: ProjectData) -> Section | None:
    """Judgments, annotators and tasks per rated item."""
    counts = judgment_counts_per_item(data.judgments, data.schema_meta)
    if counts.empty:
        return None
    return Section(
        "Judgments per item",
        [
            Paragraph(
                "One row per rated item: kind is how the item is compared (ordinal = a rating "
                "scale, nominal = a choice among labels, flag = a tick box, text = free text, "
                "not compared); n_judgments counts the human answers, n_annotators who gave "
                "them and n_tasks on how many tasks."
            ),
            Table("judgments_per_item", "Judgments per item", counts),
        ],
    )


def agreement_section(data: ProjectData) -> Section | None:
    """Exact agreement, Cohen's and Fleiss' kappa per item, each explained in a sentence."""
    agreement = per_item_agreement(data.judgments, data.schema_meta, spans=data.spans)
    if agreement.empty:
        return None
    shown = agreement.drop(columns=["project"]).rename(columns={"reason": "note"})
    blocks: list[Paragraph | Table | Figure] = [
        Paragraph(
            "n_units is the number of tasks rated by at least two annotators: every "
            "coefficient in a row rests on those tasks only. n_annotators and n_annotations "
            "count who rated the item and how many answers were given. Text items are not "
            "compared. A flag counts as 'unchecked' for an annotator who annotated the task "
            "without ticking it."
        ),
        Table("agreement", "Agreement per item (human annotators)", shown, data=agreement),
    ]
    targets = data.schema_meta.get("agreement_targets") or {}
    blocks += [Paragraph(_agreement_sentence(row, targets)) for row in agreement.itertuples()]
    return Section("Agreement per item", blocks)


def rating_distribution_section(data: ProjectData) -> Section | None:
    """A bar chart of how often each annotator used each value of each ordinal item."""
    scales = data.schema_meta.get("scales") or {}
    rated = set(data.human_judgments["item"])
    rated_scales = {item: scale for item, scale in scales.items() if item in rated}
    rows = data.human_judgments[~cancelled_mask(data.human_judgments)]
    png = rating_distribution_png(rows, rated_scales) if rated_scales else None
    if png is None:
        return None
    return Section(
        "Rating distributions",
        [
            Paragraph(
                "For each rating scale, the share of each value in each annotator's answers. "
                "Annotators whose bars differ a lot use the scale differently (one stricter, "
                "one more lenient), which lowers agreement."
            ),
            Figure("Share of each value per annotator and item", png),
        ],
    )


def span_section(data: ProjectData) -> Section | None:
    """Span counts per label and per annotator, and how many tasks have spans."""
    if data.spans.empty:
        if data.schema_meta.get("span_controls"):
            return Section("Spans", [Paragraph("No spans have been marked in this project yet.")])
        return None
    counts = span_counts(data.spans, data.tasks if not data.tasks.empty else None)
    blocks: list[Paragraph | Table | Figure] = []
    for row in counts.per_project.itertuples():
        sentence = (
            f"{row.source}: {row.n_spans} spans in {row.n_annotations} annotations; "
            f"{row.n_tasks_with_spans} tasks have at least one span"
        )
        if "share_tasks_with_spans" in counts.per_project and not _is_nan(row.share_tasks_with_spans):
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
    blocks.append(Table("spans_per_annotator", "Spans per annotator and label", wide, data=counts.by_annotator))
    return Section("Spans", blocks)


def model_vs_human_section(data: ProjectData) -> Section | None:
    """Counts of human annotations against model predictions, when predictions exist."""
    if not any(str(source).startswith(MODEL_SOURCE_PREFIX) for source in _sources(data)):
        return None
    counts = counts_by_source(data.judgments, data.spans)
    return Section(
        "Model predictions and human annotations",
        [
            Paragraph(
                "One row per source: 'human' for annotators, 'model:<version>' for each model "
                "version's predictions. n_tasks counts the tasks each source covered, "
                "n_annotations its annotations or predictions, n_judgments and n_spans their "
                "answers. Model predictions are never part of the agreement figures above."
            ),
            Table("counts_by_source", "Human annotations and model predictions", counts),
        ],
    )


SECTION_BUILDERS: list[SectionBuilder] = [
    overview_section,
    annotator_counts_section,
    item_counts_section,
    agreement_section,
    rating_distribution_section,
    span_section,
    model_vs_human_section,
]


def _agreement_sentence(row: Any, targets: Mapping[str, Any]) -> str:
    item = f"{row.item} ({row.kind})"
    if row.n_units == 0:
        return f"{item}: no agreement can be measured yet: {row.reason}."
    parts = [
        f"{item}: {row.n_units} tasks were rated by two or more of the {row.n_annotators} "
        f"annotators; {_percent(row.exact_agreement)} of the pairs of answers on the same task "
        f"are identical (exact agreement {_number(row.exact_agreement)})."
    ]
    if not _is_nan(row.cohen_kappa):
        parts.append(
            f"Cohen's kappa is {_number(row.cohen_kappa)} ({_kappa_label(row.cohen_kappa)}): "
            "the agreement left after removing what the two annotators' habits "
            "would give by chance."
        )
    if not _is_nan(row.fleiss_kappa) and (row.n_annotators > 2 or _is_nan(row.cohen_kappa)):
        parts.append(
            f"Fleiss' kappa over all annotators is {_number(row.fleiss_kappa)} ({_kappa_label(row.fleiss_kappa)})."
        )
    if _is_nan(row.cohen_kappa) and _is_nan(row.fleiss_kappa):
        parts.append(f"Kappa cannot be computed: {row.reason}.")
    for measure, name in (
        ("exact_agreement", "The exact agreement"),
        ("cohen_kappa", "Cohen's kappa"),
    ):
        target = targets.get(measure)
        value = getattr(row, measure)
        if target is not None and not _is_nan(value):
            verdict = "meets" if value >= float(target) else "falls short of"
            parts.append(f"{name} {verdict} the guideline's target of {float(target):.2f}.")
    if row.n_units < FEW_UNITS:
        parts.append(f"With only {row.n_units} shared tasks, a few more could change these values noticeably.")
    return " ".join(parts)


def _kappa_label(value: float) -> str:
    if math.isclose(value, 0.0, abs_tol=1e-9):
        return "no better than chance"
    if value < 0:
        return "worse than chance"
    for upper, label in ((0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if value <= upper:
            return label
    return "almost perfect"


def _sources(data: ProjectData) -> list[object]:
    return sorted(set(data.judgments["source"].dropna()) | set(data.spans["source"].dropna()), key=natural_key)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _n_unique(frame: pd.DataFrame, column: str) -> int:
    return int(frame[column].nunique()) if column in frame.columns else 0


def _number(value: float) -> str:
    return f"{value:.3f}"


def _percent(value: float) -> str:
    return f"{value:.0%}"


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)
