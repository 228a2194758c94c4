"""The report's sections, in report order.

A builder takes a :class:`ProjectData` and returns a :class:`Section`, or ``None`` when it has
nothing to say for that project (no spans, no model predictions). The generic
sections live in this package; a schema's own sections live in
``analysis/report/schemas/<schema>.py`` (or a schema folder's ``report.py``) and register
themselves with :data:`SCHEMA_SECTIONS` under their schema; they run at one place of the order
below: the project's own schema's, then another schema's whose ``also_when`` recognises the
project's data by its shape (a rubric's ratings, line items, spans).

Generic sections are picked by the data's shape (rated items, spans, sources, task columns), so
external data without a schema gets the sections its tables support. To grow the report, write a
builder and add it to ``SECTION_BUILDERS`` (generic) or register it for its schema.
"""

from __future__ import annotations

from collections.abc import Callable

from judgelab.analysis.report.blocks import Section
from judgelab.analysis.report.data import ProjectData
from judgelab.analysis.report.schemas import SCHEMA_SECTIONS
from judgelab.analysis.report.sections.arms import arms_section
from judgelab.analysis.report.sections.clustering import clustering_section
from judgelab.analysis.report.sections.cost import cost_section
from judgelab.analysis.report.sections.directed import directed_span_section
from judgelab.analysis.report.sections.estimates import estimates_section
from judgelab.analysis.report.sections.general import (
    agreement_section,
    annotator_counts_section,
    item_counts_section,
    loading_notes_section,
    overview_section,
    rating_distribution_section,
    source_counts_section,
    span_section,
)
from judgelab.analysis.report.sections.judges import judges_section
from judgelab.analysis.report.sections.models import model_agreement_section
from judgelab.analysis.report.sections.rubber_stamping import rubber_stamping_section
from judgelab.analysis.report.sections.spans import span_agreement_section
from judgelab.analysis.report.sections.suggestions import suggestions_section

SectionBuilder = Callable[[ProjectData], "Section | list[Section] | None"]


def schema_sections(data: ProjectData) -> list[Section]:
    """The sections registered for the project's own schema, then those of the other schemas whose
    ``also_when`` recognises its data by shape (by schema name); each that has something to say."""
    own = SCHEMA_SECTIONS.get(data.schema_name)
    builders = [own.build] if own is not None else []
    builders += [
        entry.build
        for name, entry in SCHEMA_SECTIONS.items()
        if name != data.schema_name and entry.also_when is not None and entry.also_when(data)
    ]
    return [section for build in builders if (section := build(data)) is not None]


SECTION_BUILDERS: list[SectionBuilder] = [
    overview_section,
    loading_notes_section,
    annotator_counts_section,
    item_counts_section,
    agreement_section,
    rating_distribution_section,
    schema_sections,
    span_section,
    span_agreement_section,
    directed_span_section,
    clustering_section,
    source_counts_section,
    model_agreement_section,
    suggestions_section,
    rubber_stamping_section,
    arms_section,
    judges_section,
    estimates_section,
    cost_section,
]
#: cached results that no builder after the named one reads, let go once it has run: at 100,000
#: tasks the span sections' inputs and the human rows are 180 MiB, otherwise held through the
#: judges' and the estimates' sections, the report's largest; the review table (a row per
#: suggestion and what became of it) and its agreement were held through the anchoring arms, the
#: judges and the estimates. The human rows and who annotated which task are read last by the
#: span measures' inputs, made by the span agreement: let go there, not held through the source
#: counts and the model agreement (44 and 10 MiB at 100,000 tasks). A builder moved after it would
#: compute them again (the schema's kinds and scales, read later, are cached on their own; so is
#: the rubber-stamping rule's verdict the estimates read).
RELEASE_AFTER: dict[SectionBuilder, tuple[str, ...]] = {
    span_agreement_section: ("coverage", "usable_human"),
    model_agreement_section: ("span_inputs", "span_pairwise", "rater_spans"),
    rubber_stamping_section: ("annotation_times", "review", "suggestion_agreement"),
}
# the review loop's sections: what reviewers did with suggestions, rubber-stamping, anchoring, judge calibration
REVIEW_BUILDERS: list[SectionBuilder] = [suggestions_section, rubber_stamping_section, arms_section, judges_section]

__all__ = [
    "RELEASE_AFTER",
    "REVIEW_BUILDERS",
    "SCHEMA_SECTIONS",
    "SECTION_BUILDERS",
    "SectionBuilder",
    "schema_sections",
]
