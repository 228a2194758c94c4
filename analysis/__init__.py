"""judgelab analysis: agreement, span counts and reports on tidy annotation tables.

Works on pandas DataFrames in the tidy-table contract (``tasks``, ``judgments``,
``spans``); never talks to Label Studio.

The names below are imported on first use (PEP 562), so that importing one module of the
package (what ``sync`` needs of it) does not load SciPy and the report builders.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "AgreementResult": "judgelab.analysis.agreement",
    "ProjectData": "judgelab.analysis.report.data",
    "ReportEntry": "judgelab.analysis.report",
    "ReportIndex": "judgelab.analysis.report",
    "ReportOptions": "judgelab.analysis.report.data",
    "ReportPaths": "judgelab.analysis.report",
    "SECTION_BUILDERS": "judgelab.analysis.report.sections",
    "SpanCounts": "judgelab.analysis.spans",
    "SpanDesign": "judgelab.analysis.span_coding",
    "SpanScores": "judgelab.analysis.span_agreement",
    "adjacent_agreement": "judgelab.analysis.agreement",
    "agreement_weights": "judgelab.analysis.chance_agreement",
    "alignment_paradox": "judgelab.analysis.span_tables",
    "alpha_from_counts": "judgelab.analysis.krippendorff",
    "annotation_counts_per_annotator": "judgelab.analysis.counts",
    "annotator_pairs": "judgelab.analysis.span_agreement",
    "bennett_s": "judgelab.analysis.chance_agreement",
    "bootstrap_alpha_ci": "judgelab.analysis.bootstrap",
    "bootstrap_ci": "judgelab.analysis.bootstrap",
    "build_report": "judgelab.analysis.report",
    "build_reports": "judgelab.analysis.report",
    "campaign_span_counts": "judgelab.analysis.span_tables",
    "category_counts": "judgelab.analysis.agreement",
    "cohen_kappa": "judgelab.analysis.agreement",
    "coincidence_matrix": "judgelab.analysis.krippendorff",
    "counts_by_source": "judgelab.analysis.counts",
    "exact_agreement": "judgelab.analysis.agreement",
    "example_votes": "judgelab.analysis.span_tables",
    "fleiss_kappa": "judgelab.analysis.agreement",
    "format_campaign_counts": "judgelab.analysis.span_tables",
    "format_vote_table": "judgelab.analysis.span_tables",
    "gwet_ac1": "judgelab.analysis.chance_agreement",
    "gwet_ac2": "judgelab.analysis.chance_agreement",
    "item_kind": "judgelab.configs.items",
    "judgment_counts_per_item": "judgelab.analysis.counts",
    "krippendorff_alpha": "judgelab.analysis.krippendorff",
    "label_confusion": "judgelab.analysis.span_tables",
    "light_kappa": "judgelab.analysis.chance_agreement",
    "matched_spans": "judgelab.analysis.span_tables",
    "mean_span_agreement": "judgelab.analysis.span_agreement",
    "model_majority_agreement": "judgelab.analysis.span_tables",
    "pairwise_span_agreement": "judgelab.analysis.span_agreement",
    "per_item_agreement": "judgelab.analysis.tables",
    "ratings_matrix": "judgelab.analysis.tables",
    "scott_pi": "judgelab.analysis.chance_agreement",
    "span_agreement_table": "judgelab.analysis.span_agreement",
    "span_counts": "judgelab.analysis.spans",
    "span_design": "judgelab.analysis.span_coding",
    "span_prf": "judgelab.analysis.span_agreement",
    "unitizing_alpha": "judgelab.analysis.unitizing",
    "unitizing_alpha_units": "judgelab.analysis.unitizing",
    "value_codes": "judgelab.analysis.krippendorff",
    "vote_table": "judgelab.analysis.span_tables",
    "weighted_cohen_kappa": "judgelab.analysis.chance_agreement",
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
