"""The report-wide 'How to read this report' section: every measure, defined once in words."""

from __future__ import annotations

from judgelab.analysis.report.blocks import Paragraph, Section

GUIDE = [
    (
        "Tasks, judgments, spans",
        "A task is one item shown to annotators (a text pair, a summary, a story line). A judgment "
        "is one answer an annotator gave on a task for one rated item (for example SP, Coherence "
        "or line_3); a span is a marked stretch of text with a label. Only human annotations that "
        "were not cancelled (skipped) enter the agreement figures; model predictions ('model:...' "
        "sources) and reference labels ('gold') are compared with the humans separately. A unit is "
        "whatever a number is computed over: a task, a line of a task, a span, a pair of "
        "annotators; every number below says how many units it rests on.",
    ),
    (
        "Exact and adjacent agreement",
        "Agreement is measured on the units that two or more annotators rated; a unit rated by one "
        "annotator says nothing about agreement. Exact agreement is the share of pairs of answers, "
        "on the same unit, that are identical: 0.8 means 8 pairs in 10 agree. Adjacent agreement "
        "(rating scales only) also counts answers one point apart as agreeing (2 and 3 on a 1-3 scale).",
    ),
    (
        "Kappa-like coefficients",
        "Two annotators who both answer '3' most of the time agree often without looking closely. "
        "Chance-corrected coefficients remove that: 1 is perfect agreement, 0 is what chance alone "
        "gives, below 0 is systematic disagreement. Cohen's kappa compares exactly two annotators; "
        "Light's kappa is Cohen's kappa averaged over every pair of annotators; Fleiss' kappa pools "
        "all annotators' answers. Weighted kappa (quadratic) gives partial credit to near misses on a "
        "rating scale (a 2 against a 3 costs a quarter of a 1 against a 3). Gwet's AC1 (choices) and "
        "AC2 (rating scales) use a chance model that does not collapse when one answer dominates; "
        "they stay high where kappa drops because almost every answer is the same. A common reading "
        "of kappa (Landis and Koch 1977): below 0.20 slight, 0.21-0.40 fair, 0.41-0.60 moderate, "
        "0.61-0.80 substantial, above 0.80 almost perfect.",
    ),
    (
        "Krippendorff's alpha and its interval",
        "Krippendorff's alpha is 1 minus the observed disagreement divided by the disagreement "
        "expected by chance; it allows any number of annotators and missing answers. 'Nominal' "
        "alpha counts any difference as a disagreement, 'ordinal' alpha counts a 1 against a 3 as "
        "worse than a 2 against a 3. Krippendorff's advice: rely on data with alpha of at least "
        "0.800, draw only tentative conclusions between 0.667 and 0.800. The 95% interval comes from "
        "a bootstrap: the units are drawn again at random, with replacement, 1000 times, alpha is "
        "recomputed each time, and the middle 95% of the values is reported. A wide interval means "
        "the value rests on too few units to be sure of.",
    ),
    (
        "Span precision, recall and F1",
        "Two annotators' spans are compared by taking one as the reference and the other as the "
        "hypothesis. Precision is how much of what the hypothesis marked the reference also marked, "
        "recall how much of what the reference marked the hypothesis also found, F1 their harmonic "
        "mean. 'Hard' requires the same label on the overlapping text, 'soft' ignores labels: the gap "
        "between them is disagreement about the kind of error rather than where it is. The per-span "
        "form (Da San Martino et al. 2019, used by HotelCheckSpan) gives every span the same weight, "
        "whatever its length; the character form (factgenie) gives every character the same weight. "
        "Texts that neither side marked earn no credit.",
    ),
    (
        "Unitizing alpha",
        "Krippendorff's unitizing alpha scores agreement on where spans of each label begin and end "
        "along the text, with chance as the reference: 1 is identical spans, 0 is what spans placed "
        "at random would give.",
    ),
    (
        "Tests and correlations",
        "Welch's t compares two means without assuming equal spread; its p value is the chance of a "
        "difference at least this large if there were none (below 0.05 is the usual bar). Pearson's "
        "r measures how closely two numbers rise and fall together (-1 to 1); Spearman's rho does the "
        "same on ranks. 'n/a' means a value cannot be computed for the data; the nearby note or "
        "sentence says why.",
    ),
]


def guide_section() -> Section:
    """The report-wide 'how to read' section: the measures, defined once."""
    return Section(
        "How to read this report",
        subsections=[Section(title, [Paragraph(text)]) for title, text in GUIDE],
    )
