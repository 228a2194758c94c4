"""Report sections on the quality of span annotation (seed 004, HotelCheckSpan sections 4 and
6.4-6.5), each shown when the tables carry what it needs:

- attention checks (task column ``check``: ``error_free`` / ``obvious_incorrect``);
- qualification scores (task column ``qualification``);
- quick submissions for review (``lead_time`` and the task's text);
- group A against group B (task column ``group`` with two or more values);
- impression against errors (an ``impression`` rating next to spans);
- semantic clusters of the marked texts (``--cluster``, with the ``clustering`` extra installed).
"""

from __future__ import annotations

import warnings

import pandas as pd

from judgelab.analysis.qc.hotel_spans import (
    ERROR_FREE,
    IMPRESSION_ITEM,
    OBVIOUS_INCORRECT,
    annotation_table,
    attention_checks,
    group_comparison,
    impression_vs_errors,
    qualification_scores,
    quick_submissions,
)
from judgelab.analysis.report.blocks import Block, Paragraph, Section, Table
from judgelab.analysis.report.data import (
    ProjectData,
    at_extreme,
    counts_of,
    is_nan,
    listed,
    number,
    p_value,
    percent,
    plural,
    section_or_none,
    short_table,
    two_places,
    welch_words,
    with_project,
)
from judgelab.analysis.report.schemas import SCHEMA_SECTIONS

TEXT_COLUMNS = ("descriptions", "summary", "output", "text")


def has_span_data(data: ProjectData) -> bool:
    """Spans in the tables, or span controls in the schema: the checks below have something to read."""
    return not data.spans.empty or bool((data.schema_meta or {}).get("span_controls"))


#: the cache key of every human annotation's row (``annotation_table``), which the five checks
#: read: made once, not once by each (at 100,000 tasks 1-2 s each), and let go once they are made
ANNOTATIONS_KEY = "hotel_annotations"


def _annotations(data: ProjectData) -> pd.DataFrame:
    return data.cached(ANNOTATIONS_KEY, lambda: annotation_table(data.judgments, data.spans))


@SCHEMA_SECTIONS.register("hotel_spans", also_when=has_span_data)
def span_quality_section(data: ProjectData) -> Section | None:
    if not has_span_data(data):
        return None
    subsections = [
        attention_section(data),
        qualification_section(data),
        quick_section(data),
        group_section(data),
        impression_section(data),
    ]
    data.cache.pop(ANNOTATIONS_KEY, None)  # the five checks are its only readers
    intro = Paragraph(
        "Checks on how the span annotation was done: planted attention checks, the qualification task, "
        "suspiciously quick submissions, the effect of the no-errors box's wording, and how errors relate to "
        "the overall impression."
    )
    return section_or_none("Span annotation quality checks", [intro], subsections)


def attention_section(data: ProjectData) -> Section | None:
    if "check" not in data.tasks.columns or not data.tasks["check"].isin([ERROR_FREE, OBVIOUS_INCORRECT]).any():
        return None
    checks = attention_checks(data.tasks, data.judgments, data.spans, annotations=_annotations(data))
    if checks.per_annotation.empty:
        return None
    per_annotation = checks.per_annotation
    kinds = per_annotation["check"].value_counts()
    per_annotator = checks.per_annotator.sort_values(["pass_rate", "n_checks"], ascending=[True, False])
    failed = per_annotator[per_annotator["n_passed"] < per_annotator["n_checks"]]
    blocks: list[Block] = [
        Paragraph(
            "Attention checks are planted texts with a known answer. An error-free check passes when the annotator "
            "marks no span and ticks the no-errors box; an obvious-error check passes when an Incorrect span "
            "overlaps the planted error (any Incorrect span when the error's position is not given)."
        ),
        Paragraph(
            f"{plural(len(per_annotation), 'check annotation')} ({int(kinds.get(ERROR_FREE, 0))} error-free, "
            f"{int(kinds.get(OBVIOUS_INCORRECT, 0))} with an obvious error) by "
            f"{plural(len(per_annotator), 'annotator')}: {percent(checks.pass_rate)} passed. "
            f"{len(per_annotator) - len(failed)} annotators passed every check they saw; {len(failed)} failed at "
            "least one (the table, worst first; attention_check_answers.csv gives every answer and why it failed)."
        ),
    ]
    blocks += short_table(
        "attention_checks", "Attention checks per annotator", per_annotator, data.options.max_rows,
        data=with_project(per_annotator, data.project),
    )  # fmt: skip
    blocks.append(Table("attention_check_answers", "Attention check answers", per_annotation, csv_only=True))
    return Section("Attention checks", blocks)


def qualification_section(data: ProjectData) -> Section | None:
    if "qualification" not in data.tasks.columns:
        return None
    scores = qualification_scores(data.tasks, data.judgments, data.spans, annotations=_annotations(data))
    if scores.per_annotator.empty:
        return None
    table = scores.per_annotator.sort_values("score", ascending=False, kind="stable")
    n_passed = int(table["passed"].sum())
    max_score = float(table["max_score"].iloc[0])
    blocks: list[Block] = [
        Paragraph(
            f"The qualification task has {max_score:g} examples with a known answer, one point each: the point "
            "needs the planted error found (or, on an error-free example, no span), and half of it is lost when "
            "the no-errors box contradicts the spans. An example left unanswered scores 0. "
            f"Annotators with at least {scores.pass_mark:g} points qualify."
        ),
        Paragraph(
            f"{plural(len(table), 'annotator')} took the qualification; {n_passed} qualified "
            f"({percent(n_passed / len(table))}), with scores from {table['score'].min():g} to "
            f"{table['score'].max():g} out of {max_score:g}."
        ),
    ]
    blocks += short_table(
        "qualification_scores", "Qualification scores", table, data.options.max_rows,
        data=with_project(table, data.project),
    )  # fmt: skip
    return Section("Qualification scores", blocks)


def quick_section(data: ProjectData) -> Section | None:
    columns = [c for c in TEXT_COLUMNS if c in data.tasks.columns]
    lead = pd.to_numeric(data.human_judgments.get("lead_time", pd.Series(dtype=float)), errors="coerce")
    if not columns or not (lead > 0).any():
        return None
    columns = [c for c in columns if c in ("descriptions", "summary")] or columns[:1]
    quick = quick_submissions(
        data.tasks, data.judgments, data.spans, text_columns=columns, annotations=_annotations(data)
    )
    if quick.table.empty:
        return None
    blocks: list[Block] = [
        Paragraph(
            f"Time spent per annotation (lead_time, seconds) per 100 characters of text ({', '.join(columns)}), for "
            f"{plural(len(quick.table), 'annotation')} with a recorded time. An annotation is flagged when it is "
            f"faster than the threshold ({quick.rule}); flagged ones are for review by hand, not automatic "
            f"rejection. {plural(len(quick.flagged), 'annotation')} flagged."
        )
    ]
    if not quick.flagged.empty:
        blocks += short_table(
            "quick_submissions", "Quick submissions to review", quick.flagged, data.options.max_rows,
            data=with_project(quick.table, data.project),
        )  # fmt: skip
    return Section("Quick submissions", blocks)


def group_section(data: ProjectData) -> Section | None:
    if "group" not in data.tasks.columns or data.tasks["group"].dropna().nunique() < 2:
        return None
    with warnings.catch_warnings():  # scipy warns on a group without spread; the p value says enough
        warnings.simplefilter("ignore", RuntimeWarning)
        comparison = group_comparison(data.tasks, data.judgments, data.spans, annotations=_annotations(data))
    if comparison.per_group.empty:
        return None
    blocks: list[Block] = [
        Paragraph(
            "The two groups saw different wordings of the no-errors box (A: 'I did not find any errors in the "
            "summary', B: 'There were no errors in the summary'). Per group: the annotations, the annotators, the "
            "mean number of spans per summary, the share of annotations with no span, and the share with the box "
            "ticked."
        ),
        Table(
            "group_comparison",
            "Group comparison",
            comparison.per_group,
            data=with_project(comparison.per_group, data.project),
        ),  # fmt: skip
    ]
    for row in comparison.tests.itertuples():
        verdict = "a difference larger than chance would give" if row.p_value < 0.05 else "no clear difference"
        if is_nan(row.p_value):
            verdict = "too few annotations to test"
        blocks.append(
            Paragraph(
                f"{row.metric}: group {row.group_a} {number(row.mean_a, 2)} against group {row.group_b} "
                f"{number(row.mean_b, 2)} ({welch_words(row.welch_t, row.p_value)}): {verdict}."
            )
        )
    return Section("Group A against group B", blocks)


def impression_section(data: ProjectData) -> Section | None:
    if IMPRESSION_ITEM not in set(data.usable_human["item"]):
        return None
    with warnings.catch_warnings():  # scipy warns when one side has no spread
        warnings.simplefilter("ignore", RuntimeWarning)
        result = impression_vs_errors(data.judgments, data.spans, annotations=_annotations(data))
    summary = result.summary
    if summary["n"].sum() == 0:
        return None
    clean, errors = summary.iloc[0], summary.iloc[1]
    blocks: list[Block] = [
        Paragraph(
            "Each annotation gives an overall impression (1-7) next to its error spans. Mean impression of the "
            f"annotations without any span ({int(clean['n'])}) and with at least one ({int(errors['n'])}), "
            "Welch's t between them (positive when clean summaries score higher), then per error type and per "
            "number of errors."
        ),
        Paragraph(_impression_means(clean, errors)),
        Table(
            "impression_vs_errors",
            "Impression with and without errors",
            summary,
            data=with_project(summary, data.project),
        ),  # fmt: skip
    ]
    if not result.by_type.empty:
        blocks += _impression_by_type(data, result.by_type)
    blocks.append(Paragraph(_impression_correlation(result.correlation) + " Mean impression per number of errors:"))
    blocks.append(Table("impression_by_error_count", "Impression per number of errors", result.by_count,
                        data=with_project(result.by_count, data.project)))  # fmt: skip
    return Section("Impression against errors", blocks)


def _impression_means(clean: pd.Series, errors: pd.Series) -> str:
    """The two means and the test between them, or what there is when one side is empty."""
    if not clean["n"] or not errors["n"]:
        side = errors if errors["n"] else clean
        marks = "marks at least one error" if errors["n"] else "marks no error"
        return (
            f"Every one of the {plural(int(side['n']), 'annotation')} with an impression {marks} (mean impression "
            f"{number(side['mean'], 2)}): there is no other side to compare with."
        )
    return (
        f"Summaries without errors average {number(clean['mean'], 2)}, those with errors "
        f"{number(errors['mean'], 2)} ({welch_words(clean['welch_t'], clean['p_value'])})."
    )


def _impression_correlation(correlation: dict) -> str:
    n = int(correlation["n"])
    if is_nan(correlation["r"]):
        return (
            f"Pearson's r between the number of errors an annotation marks and its impression needs three "
            f"annotations or more, with more than one number of errors and more than one impression; the "
            f"{plural(n, 'annotation')} with an impression do not have that."
        )
    return (
        f"Pearson's r between the number of errors an annotation marks and its impression is "
        f"{number(correlation['r'], 2)} over {plural(n, 'annotation')} ({p_value(correlation['p_value'])}); "
        "negative means more errors, lower impression."
    )


def _impression_by_type(data: ProjectData, by_type: pd.DataFrame) -> list[Block]:
    """The impression per error type, and the type that lowers it most (or that none does)."""
    blocks: list[Block] = [
        Paragraph(
            "Per error type: the annotations with at least one span of the type (n), their mean impression, "
            "the drop from the no-error mean, and Welch's t against the no-error annotations."
        ),
        Table("impression_by_error_type", "Impression per error type", by_type,
              data=with_project(by_type, data.project)),
    ]  # fmt: skip
    worst = by_type.dropna(subset=["drop"])
    worst = worst[worst["drop"] > 0]
    if worst.empty:
        blocks.append(Paragraph("No error type lowers the mean impression below that of the error-free annotations."))
        return blocks
    tied = worst.loc[at_extreme(worst["drop"], two_places).index]
    top = tied.iloc[0]
    if len(tied) == 1:
        text = (
            f"{top['label']} costs the most: mean {number(top['mean'], 2)}, {number(top['drop'], 2)} points "
            f"below the no-error mean, over {plural(int(top['n']), 'annotation')}."
        )
    else:
        text = (
            f"{listed(tied['label'].astype(str))} cost the most, each {number(top['drop'], 2)} points below the "
            f"no-error mean (means {listed([two_places(m) for m in tied['mean']])}, over "
            f"{counts_of(tied['n'], 'annotation')})."
        )
    blocks.append(Paragraph(text))
    return blocks
