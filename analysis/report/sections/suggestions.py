"""Report section "Suggestions": what reviewers did with each model's suggestions.

Built from the review table (:mod:`analysis.review`): per model version and per label or item,
how many suggested units were kept, edited or deleted and how many the reviewers added; how
close the suggestion is to the final annotation; which way the edits went; and the time an
annotation took with and without a suggestion. :func:`suggestion_headline` gives the one line a
front page can show.
"""

from __future__ import annotations

import pandas as pd

from judgelab.analysis.report.blocks import Block, Glance, Paragraph, Section, Table
from judgelab.analysis.report.data import (
    ProjectData,
    at_extreme,
    first_of,
    fragile,
    is_nan,
    kappa_label,
    number,
    p_value,
    percent,
    plural,
    short_table,
    with_project,
)
from judgelab.analysis.review import OUTCOMES, SPAN, outcome_counts, review_table
from judgelab.analysis.suggestions import (
    NO_SUGGESTION,
    annotation_times,
    edit_directions,
    lead_time_comparison,
    suggestion_agreement,
)

ALL = "(all)"


def project_review(data: ProjectData) -> pd.DataFrame:
    """The project's review table, computed once per report."""
    return data.cached("review", lambda: review_table(data.judgments, data.spans))


def _model(source: object) -> str:
    return str(source).removeprefix("model:") if isinstance(source, str) else "(unknown version)"


def _shares(counts: pd.DataFrame) -> pd.DataFrame:
    """The outcome table as shown: counts with their share."""

    def cell(n: object, rate: object) -> str:
        return f"{int(n)}" if is_nan(rate) else f"{int(n)} ({percent(float(rate))})"

    shown = pd.DataFrame(
        {
            "model": counts["suggestion_source"].map(_model),
            "unit": counts["unit"],
            "label or item": counts["category"],
            "suggested": counts["n_suggested"].astype(int),
            "kept": [cell(n, r) for n, r in zip(counts["n_kept"], counts["kept_rate"], strict=True)],
            "edited": [cell(n, r) for n, r in zip(counts["n_edited"], counts["edited_rate"], strict=True)],
            "deleted": [cell(n, r) for n, r in zip(counts["n_deleted"], counts["deleted_rate"], strict=True)],
            "added": [cell(n, r) for n, r in zip(counts["n_added"], counts["added_rate"], strict=True)],
        }
    )
    return shown


def outcome_table(review: pd.DataFrame) -> pd.DataFrame:
    """Per model, unit and label/item, then per model and unit over all of them (``(all)``)."""
    detail = outcome_counts(review, ["suggestion_source", "unit", "category"])
    overall = outcome_counts(review, ["suggestion_source", "unit"]).assign(category=ALL)
    table = pd.concat([overall, detail], ignore_index=True)
    order = {ALL: 0}
    table = table.assign(_o=table["category"].map(lambda c: order.get(c, 1)))
    return table.sort_values(["suggestion_source", "unit", "_o", "n_suggested"], ascending=[True, True, True, False],
                             kind="stable").drop(columns="_o").reset_index(drop=True)  # fmt: skip


def _headline_parts(review: pd.DataFrame) -> list[tuple[str, dict[str, float]]]:
    per_model = outcome_counts(review, ["suggestion_source"])
    parts = []
    for row in per_model.sort_values("n_suggested", ascending=False, kind="stable").to_dict("records"):
        parts.append((_model(row["suggestion_source"]), row))
    return parts


def suggestion_headline(data: ProjectData) -> str | None:
    """One line on how the suggestions were received, for a front page.

    For example: "Suggestions (model judgelab-llm-A, 1,024 suggested units in 300 reviewed
    annotations): 61% kept, 22% edited, 17% deleted; reviewers added 95 units of their own."
    Without reviewed suggestions, a line saying why (None only for a project without any rows).
    """
    review = project_review(data)
    if review.empty:
        if data.judgments.empty and data.spans.empty:
            return None
        models = data.model_sources
        if not models:
            return "Suggestions: this project has no model predictions, so there is no acceptance rate."
        return (
            f"Suggestions: predictions from {', '.join(m.removeprefix('model:') for m in models)} are present, but no "
            "annotation started from one (annotators worked without them, or the tables were written before "
            "judgelab kept Label Studio's parent_prediction); see 'Model predictions against humans' for how close "
            "they come to the annotators."
        )
    parts = _headline_parts(review)
    model, row = parts[0]
    n_annotations = review.loc[review["suggestion_source"].map(_model) == model, "annotation_id"].nunique()
    text = (
        f"Suggestions (model {model}, {int(row['n_suggested']):,} suggested units in {n_annotations:,} reviewed "
        f"annotations): {percent(row['kept_rate'])} kept, {percent(row['edited_rate'])} edited, "
        f"{percent(row['deleted_rate'])} deleted; reviewers added {int(row['n_added']):,} units of their own."
    )
    if len(parts) > 1:
        text += f" ({len(parts) - 1} more model version(s) in the Suggestions section.)"
    return text


def suggestions_section(data: ProjectData) -> Section | None:
    review = project_review(data)
    if review.empty:
        return None
    n_annotations = review["annotation_id"].nunique()
    intro = Paragraph(
        f"{plural(n_annotations, 'annotation')} started from a model's suggestion (Label Studio copied the "
        "prediction into the annotation and the reviewer changed what they disagreed with). Each suggested unit, "
        "a span or an answer to an item, is compared with the submitted annotation: kept (unchanged), edited "
        "(another label or value, moved span boundaries, a changed note), deleted (absent from the annotation), "
        "and units the reviewer added. Spans are followed by Label Studio's region id, answers by their item. "
        "The percentages of kept, edited and deleted are shares of the suggested units; the share of added units "
        "is of the units in the submitted annotations."
    )
    counts = outcome_table(review)
    blocks: list[Block] = [intro]
    for model, row in _headline_parts(review):
        blocks.append(
            Paragraph(
                f"{model}: of {int(row['n_suggested']):,} suggested units, reviewers kept {percent(row['kept_rate'])} "
                f"as they were, edited {percent(row['edited_rate'])} and deleted {percent(row['deleted_rate'])}; "
                f"they added {int(row['n_added']):,} units of their own ({percent(row['added_rate'])} of the units "
                f"they submitted)." + fragile(int(row["n_suggested"]), "suggested unit")
            )
        )
    blocks += short_table(
        "suggestion_outcomes",
        "What reviewers did with the suggestions, per model and label or item",
        _shares(counts),
        data.options.max_rows,
        data=with_project(counts, data.project),
    )
    blocks += _origin_blocks(review, data)
    subsections = [_agreement_section(review, data), _direction_section(review, data), _time_section(data)]
    glance = [
        Glance(
            "Suggestions",
            model,
            f"{percent(row['kept_rate'])} kept, {percent(row['edited_rate'])} edited, {percent(row['deleted_rate'])} "
            f"deleted of {int(row['n_suggested']):,} suggested units; {int(row['n_added']):,} added",
            float(row["kept_rate"]),
        )
        for model, row in _headline_parts(review)
    ]
    return Section("Suggestions", blocks, [s for s in subsections if s is not None], glance)


def _origin_blocks(review: pd.DataFrame, data: ProjectData) -> list[Block]:
    present = review[review["outcome"] != "deleted"]
    if present["origin"].isna().all():
        return []
    table = pd.crosstab(present["outcome"], present["origin"].fillna("(none)")).reindex(
        [o for o in OUTCOMES if o != "deleted"], fill_value=0
    )
    table = table.loc[table.sum(axis=1) > 0].reset_index()
    mismatch = present[
        ((present["outcome"] == "kept") & (present["origin"] != "prediction"))
        | ((present["outcome"] == "edited") & (present["origin"] == "prediction"))
    ]
    text = (
        "Label Studio also marks each region it saves with an origin: 'prediction' (copied), 'prediction-changed' "
        "(edited after the copy) or 'manual' (made by the annotator). The table sets it against the comparison "
        "above. They differ when an edit was undone by hand (Label Studio keeps 'prediction-changed') or an edit "
        "does not flip the mark (a note changed in the region list); the outcomes above come from the comparison."
    )
    if len(mismatch):
        text += f" Here they differ on {plural(len(mismatch), 'unit')}."
    else:
        text += " Here they agree on every unit."
    return [Paragraph(text), Table("suggestion_origin", "Outcome against Label Studio's origin mark", table,
                                   data=with_project(table, data.project))]  # fmt: skip


def _agreement_section(review: pd.DataFrame, data: ProjectData) -> Section | None:
    agreement = data.cached("suggestion_agreement", lambda: suggestion_agreement(review, data.meta))
    if agreement.empty:
        return None
    shown = agreement.assign(model=agreement["model"].map(_model))[
        ["model", "category", "measure", "value", "n_units"]
    ].rename(columns={"category": "label or item", "n_units": "n_units compared"})
    blocks: list[Block] = [
        Paragraph(
            "How close the suggestion is to what the reviewer submitted, on the same units: Cohen's kappa for "
            "choices (a box unticked or ticked by the reviewer counts as the answer '(none)' on the other side) and "
            "Krippendorff's ordinal alpha for rating scales, over the ratings both have; for spans, the per-span F1 "
            "of the suggested spans against the submitted ones (hard: the label must match too; soft: any label), "
            "pooled over the reviewed annotations, so deleted "
            "suggestions lower it as much as spans the reviewer had to add. 1 means the reviewers changed nothing. "
            "High values can mean a good model or reviewers who accept too readily: the Anchoring section, when "
            "the study has a blind arm, tells the two apart."
        ),
        Table(
            "suggestion_agreement",
            "Suggestion against the submitted annotation",
            shown,
            data=with_project(agreement, data.project),
        ),  # fmt: skip
    ]
    for row in agreement.to_dict("records"):
        if row["kind"] == "span" and row["measure"].endswith("soft"):
            blocks.append(
                Paragraph(
                    f"{_model(row['model'])}: the suggested spans match the submitted ones with a soft F1 of "
                    f"{number(row['value'], 2)} over {plural(row['n_units'], 'reviewed annotation')}."
                )
            )
        elif row["kind"] == "nominal" and not is_nan(row["value"]):
            blocks.append(
                Paragraph(
                    f"{_model(row['model'])}, {row['category']}: kappa {number(row['value'], 2)} "
                    f"({kappa_label(row['value'])}) over {plural(row['n_units'], 'answer')}."
                )
            )
    return Section("Suggestion against the final annotation", blocks)


def _direction_section(review: pd.DataFrame, data: ProjectData) -> Section | None:
    changes, ratings = edit_directions(review, data.meta)
    if changes.empty and ratings.empty:
        return None
    blocks: list[Block] = []
    if not changes.empty:
        shown = changes.assign(model=changes["model"].map(_model)).rename(
            columns={"category": "label or item", "suggested": "suggested as", "final": "changed to"}
        )
        blocks.append(
            Paragraph(
                "Which labels and choices reviewers turned into which (edited units whose label or answer changed; "
                "moved spans that kept their label are not listed). " + _most_frequent_change(changes)
            )
        )
        blocks += short_table("suggestion_label_changes", "Suggested label or choice -> submitted", shown,
                              data.options.max_rows, data=with_project(changes, data.project))  # fmt: skip
    if not ratings.empty:
        shown = ratings.assign(model=ratings["model"].map(_model)).rename(columns={"category": "item"})
        sentences = []
        for row in ratings.to_dict("records"):
            way = "up" if row["mean_change"] > 0 else "down"
            if is_nan(row["mean_change"]):
                sentences.append(
                    f"{row['category']} ({_model(row['model'])}): {plural(row['n_edited'], 'changed rating')}, whose "
                    "values are not numbers, so whether they were raised or lowered cannot be told"
                )
                continue
            sentences.append(
                f"{row['category']} ({_model(row['model'])}): of {plural(row['n_edited'], 'changed rating')}, "
                f"{row['n_raised']} raised and {row['n_lowered']} lowered, {number(abs(row['mean_change']), 2)} "
                f"points {way} on average"
            )
        blocks.append(Paragraph("Ratings reviewers changed: " + "; ".join(sentences) + "."))
        blocks.append(Table("suggestion_rating_changes", "Changed ratings: raised or lowered", shown,
                            data=with_project(ratings, data.project)))  # fmt: skip
    return Section("What the edits changed", blocks)


def _time_section(data: ProjectData) -> Section | None:
    times = data.cached("annotation_times", lambda: annotation_times(data.judgments, data.spans))
    if times.empty or times["suggestion"].nunique() < 2 or not (times["suggestion"] == NO_SUGGESTION).any():
        return None
    table, test = lead_time_comparison(times)
    shown = table.assign(suggestion=table["suggestion"].map(lambda s: s if s == NO_SUGGESTION else _model(s)))
    text = (
        "Lead time (seconds Label Studio counted while the annotation was open) per annotation, with and without "
        f"a suggestion. With a suggestion the median is {number(test['median_with'], 1)} s, without "
        f"{number(test['median_without'], 1)} s (Mann-Whitney U, {p_value(test['p_value'])})."
    )
    if test.get("paired_tasks"):
        text += (
            f" On the {int(test['paired_tasks'])} tasks annotated both ways, an annotation with a suggestion took "
            f"{number(abs(test['paired_median_difference']), 1)} s "
            f"{'less' if test['paired_median_difference'] < 0 else 'more'} (median over the tasks)."
        )
    text += (
        " Who got a suggestion is not random unless the study assigned arms (judgelab design arms): annotators "
        "without one may have had other tasks."
    )
    return Section(
        "Time with and without a suggestion",
        [
            Paragraph(text),
            Table("suggestion_lead_time", "Lead time per annotation", shown, data=with_project(table, data.project)),
        ],  # fmt: skip
    )


__all__ = ["project_review", "suggestion_headline", "suggestions_section"]


#: changes named in the sentence when several are the most frequent (the table has them all)
NAMED_CHANGES = 3


def _most_frequent_change(changes: pd.DataFrame) -> str:
    """The change made most often over every model and unit; when several were made as often,
    the first few in the table's order, with how many there are."""
    tied = changes.loc[at_extreme(changes["n"], lambda n: str(int(n))).index]
    times = plural(int(tied["n"].iloc[0]), "time")

    def change(row: pd.Series, count: str = "") -> str:
        where = "spans" if row["unit"] == SPAN else row["category"]
        return f"{row['suggested']} -> {row['final']} ({count}{_model(row['model'])}, {where})"

    if len(tied) == 1:
        return f"The most frequent: {change(tied.iloc[0], times + ', ')}."
    listing = first_of([change(row) for _, row in tied.iterrows()], NAMED_CHANGES)
    return f"{len(tied)} changes were made most often, {times} each: {listing}."
