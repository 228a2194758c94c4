"""judgelab analysis: agreement, span counts and reports on tidy annotation tables.

Works on pandas DataFrames in the tidy-table contract (``tasks``, ``judgments``,
``spans``); never talks to Label Studio.

The names below are imported on first use (PEP 562), so that ``import analysis.contract``
(what ``sync`` and the ML backend need) does not load SciPy and the report builders.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "AgreementResult": "analysis.agreement",
    "ProjectData": "analysis.report_sections",
    "ReportEntry": "analysis.report",
    "ReportIndex": "analysis.report",
    "ReportOptions": "analysis.report_data",
    "ReportPaths": "analysis.report",
    "SECTION_BUILDERS": "analysis.report_sections",
    "SpanCounts": "analysis.spans",
    "SpanDesign": "analysis.span_agreement",
    "SpanScores": "analysis.span_agreement",
    "adjacent_agreement": "analysis.agreement",
    "agreement_weights": "analysis.chance_agreement",
    "alignment_paradox": "analysis.span_tables",
    "alpha_from_counts": "analysis.krippendorff",
    "annotation_counts_per_annotator": "analysis.counts",
    "annotator_pairs": "analysis.span_agreement",
    "bennett_s": "analysis.chance_agreement",
    "bootstrap_alpha_ci": "analysis.bootstrap",
    "bootstrap_ci": "analysis.bootstrap",
    "build_report": "analysis.report",
    "build_reports": "analysis.report",
    "campaign_span_counts": "analysis.span_tables",
    "category_counts": "analysis.agreement",
    "cohen_kappa": "analysis.agreement",
    "coincidence_matrix": "analysis.krippendorff",
    "counts_by_source": "analysis.counts",
    "exact_agreement": "analysis.agreement",
    "example_votes": "analysis.span_tables",
    "fleiss_kappa": "analysis.agreement",
    "format_campaign_counts": "analysis.span_tables",
    "format_vote_table": "analysis.span_tables",
    "gwet_ac1": "analysis.chance_agreement",
    "gwet_ac2": "analysis.chance_agreement",
    "item_kind": "analysis.item_kinds",
    "judgment_counts_per_item": "analysis.counts",
    "krippendorff_alpha": "analysis.krippendorff",
    "label_confusion": "analysis.span_tables",
    "light_kappa": "analysis.chance_agreement",
    "matched_spans": "analysis.span_tables",
    "mean_span_agreement": "analysis.span_agreement",
    "model_majority_agreement": "analysis.span_tables",
    "pairwise_span_agreement": "analysis.span_agreement",
    "per_item_agreement": "analysis.tables",
    "ratings_matrix": "analysis.tables",
    "scott_pi": "analysis.chance_agreement",
    "span_agreement_table": "analysis.span_agreement",
    "span_counts": "analysis.spans",
    "span_design": "analysis.span_agreement",
    "span_prf": "analysis.span_agreement",
    "unitizing_alpha": "analysis.unitizing",
    "unitizing_alpha_units": "analysis.unitizing",
    "value_codes": "analysis.krippendorff",
    "vote_table": "analysis.span_tables",
    "weighted_cohen_kappa": "analysis.chance_agreement",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
