"""judgelab analysis: agreement, span counts and reports on tidy annotation tables.

Works on pandas DataFrames in the tidy-table contract (``tasks``, ``judgments``,
``spans``); never talks to Label Studio.
"""

from analysis.agreement import (
    AgreementResult,
    adjacent_agreement,
    category_counts,
    cohen_kappa,
    exact_agreement,
    fleiss_kappa,
)
from analysis.bootstrap import bootstrap_alpha_ci, bootstrap_ci
from analysis.chance_agreement import (
    agreement_weights,
    bennett_s,
    gwet_ac1,
    gwet_ac2,
    light_kappa,
    scott_pi,
    weighted_cohen_kappa,
)
from analysis.counts import (
    annotation_counts_per_annotator,
    counts_by_source,
    judgment_counts_per_item,
)
from analysis.item_kinds import item_kind
from analysis.krippendorff import alpha_from_counts, coincidence_matrix, krippendorff_alpha, value_codes
from analysis.report import ReportEntry, ReportIndex, ReportPaths, build_report, build_reports
from analysis.report_data import ReportOptions
from analysis.report_sections import SECTION_BUILDERS, ProjectData
from analysis.spans import SpanCounts, span_counts
from analysis.tables import per_item_agreement, ratings_matrix

__all__ = [
    "SECTION_BUILDERS",
    "AgreementResult",
    "ProjectData",
    "ReportEntry",
    "ReportIndex",
    "ReportOptions",
    "ReportPaths",
    "SpanCounts",
    "adjacent_agreement",
    "agreement_weights",
    "alpha_from_counts",
    "annotation_counts_per_annotator",
    "bennett_s",
    "bootstrap_alpha_ci",
    "bootstrap_ci",
    "build_report",
    "build_reports",
    "category_counts",
    "cohen_kappa",
    "coincidence_matrix",
    "counts_by_source",
    "exact_agreement",
    "fleiss_kappa",
    "gwet_ac1",
    "gwet_ac2",
    "item_kind",
    "judgment_counts_per_item",
    "krippendorff_alpha",
    "light_kappa",
    "per_item_agreement",
    "ratings_matrix",
    "scott_pi",
    "span_counts",
    "value_codes",
    "weighted_cohen_kappa",
]

from analysis.span_agreement import (
    SpanDesign,
    SpanScores,
    annotator_pairs,
    mean_span_agreement,
    pairwise_span_agreement,
    span_agreement_table,
    span_design,
    span_prf,
)
from analysis.span_tables import (
    alignment_paradox,
    campaign_span_counts,
    example_votes,
    format_campaign_counts,
    format_vote_table,
    label_confusion,
    matched_spans,
    model_majority_agreement,
    vote_table,
)
from analysis.unitizing import unitizing_alpha, unitizing_alpha_units

__all__ += [
    "SpanDesign",
    "SpanScores",
    "alignment_paradox",
    "annotator_pairs",
    "campaign_span_counts",
    "example_votes",
    "format_campaign_counts",
    "format_vote_table",
    "label_confusion",
    "matched_spans",
    "mean_span_agreement",
    "model_majority_agreement",
    "pairwise_span_agreement",
    "span_agreement_table",
    "span_design",
    "span_prf",
    "unitizing_alpha",
    "unitizing_alpha_units",
    "vote_table",
]
