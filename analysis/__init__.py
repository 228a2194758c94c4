"""judgelab analysis: agreement, span counts and reports on tidy annotation tables.

Works on pandas DataFrames in the tidy-table contract (``tasks``, ``judgments``,
``spans``); never talks to Label Studio.
"""

from analysis.agreement import (
    AgreementResult,
    category_counts,
    cohen_kappa,
    exact_agreement,
    fleiss_kappa,
)
from analysis.counts import (
    annotation_counts_per_annotator,
    counts_by_source,
    judgment_counts_per_item,
)
from analysis.item_kinds import item_kind
from analysis.report import ReportPaths, build_report
from analysis.report_sections import SECTION_BUILDERS, ProjectData
from analysis.spans import SpanCounts, span_counts
from analysis.tables import per_item_agreement, ratings_matrix

__all__ = [
    "SECTION_BUILDERS",
    "AgreementResult",
    "ProjectData",
    "ReportPaths",
    "SpanCounts",
    "annotation_counts_per_annotator",
    "build_report",
    "category_counts",
    "cohen_kappa",
    "counts_by_source",
    "exact_agreement",
    "fleiss_kappa",
    "item_kind",
    "judgment_counts_per_item",
    "per_item_agreement",
    "ratings_matrix",
    "span_counts",
]
