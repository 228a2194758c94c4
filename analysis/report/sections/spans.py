"""Report sections on span agreement (seed 004, HotelCheckSpan section 6), for any project
with spans.

- span P/R/F1 between annotators, hard and soft, per-span (Da San Martino) and character
  (factgenie) forms, averaged over pairs like HotelCheckSpan Table 6, human-human and
  human-model;
- Krippendorff's unitizing alpha per label;
- the label confusion matrix of matched spans;
- example-level votes (Table 5) and dataset-level counts per label and campaign (Table 4).

A rater is a human annotator, or a model version (its ``model:<version>`` source). Who
annotated which task comes from the judgments and spans of annotations that were not
cancelled, so a text an annotator read and found nothing in still counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from judgelab.analysis.report.blocks import Block, Figure, Glance, Paragraph, Section, Table
from judgelab.analysis.report.data import (
    ProjectData,
    at_extreme,
    counts_of,
    coverage,
    highest_and_lowest,
    is_nan,
    listed,
    number,
    percent,
    plural,
    rater_spans,
    section_or_none,
    task_keys,
    with_project,
)
from judgelab.analysis.report.plots import confusion_png, vote_table_png
from judgelab.analysis.span_agreement import (
    FORMS,
    MATCHES,
    annotator_pairs,
    mean_span_agreement,
    pairwise_span_agreement,
)
from judgelab.analysis.span_coding import DESIGN_COLUMNS
from judgelab.analysis.span_tables import (
    ANY_LABEL,
    UNMATCHED,
    campaign_span_counts,
    format_campaign_counts,
    format_vote_table,
    label_confusion,
    vote_table,
)
from judgelab.analysis.spans import NO_LABEL
from judgelab.analysis.tables import HUMAN_SOURCE, natural_key, only_columns
from judgelab.analysis.unitizing import ALL_LABELS, unitizing_alpha

FORM_NAMES = {"per_span": "per span", "character": "character"}
EMPTY_POLICY = (
    "A text where only one of the two marked something counts, and those spans earn no credit; texts where "
    "neither marked anything are left out (no credit for agreeing that a text is clean)."
)
CAMPAIGN_COLUMNS = ("group", "stage")
MAX_VOTE_ROWS = 6  # with more annotators, vote counts no text reaches are left off the page


#: what the span measures read of a span: its example's key, its rater and what a design reads
SPAN_MEASURE_COLUMNS = ("project", "task_id", "rater", *DESIGN_COLUMNS)


@dataclass(frozen=True)
class SpanInputs:
    """The spans with a ``rater`` column, the examples with who annotated them, and the raters."""

    spans: pd.DataFrame
    examples: pd.DataFrame
    humans: list[str]
    models: list[str]
    labels: list[str]

    def human_spans(self) -> pd.DataFrame:
        """The humans' spans, with the columns the span measures read (narrowed before the filter:
        a copy of every column, texts and region ids included, was 46 MiB at 100,000 tasks)."""
        return only_columns(self.spans, *SPAN_MEASURE_COLUMNS)[self.spans["rater"].isin(self.humans)]

    def human_examples(self) -> pd.DataFrame:
        return self.examples[self.examples["rater"].isna() | self.examples["rater"].isin(self.humans)]


def span_inputs(data: ProjectData) -> SpanInputs | None:
    """The inputs of every span measure of the project, or ``None`` without spans."""

    def compute() -> SpanInputs | None:
        spans = rater_spans(data)
        if spans.empty:
            return None
        who = coverage(data)
        humans_rows = pd.concat(
            [
                data.usable_human.assign(rater=data.usable_human["annotator"].astype(str))[["rater"]],
                spans.loc[spans["source"] == HUMAN_SOURCE, ["rater"]],
            ]
        )
        humans = sorted(set(humans_rows["rater"]) & set(who["rater"]), key=natural_key)
        models = [source for source in data.model_sources if source in set(who["rater"])]
        examples = pd.concat([task_keys(data).assign(rater=None), who], ignore_index=True)
        labels = spans["label"].where(spans["label"].notna() & (spans["label"].astype(str) != ""), NO_LABEL)
        return SpanInputs(
            spans=spans.assign(label=labels),
            examples=examples,
            humans=humans,
            models=models,
            labels=sorted(set(labels.astype(str)), key=natural_key),
        )

    return data.cached("span_inputs", compute)


def span_pairwise(data: ProjectData) -> pd.DataFrame:
    """Every (reference, hypothesis) pair's P/R/F1: human-human both ways, human-model. Cached."""

    def compute() -> pd.DataFrame:
        inputs = span_inputs(data)
        if inputs is None:
            return pd.DataFrame()
        pairs = annotator_pairs(inputs.humans) + [(h, m) for h in inputs.humans for m in inputs.models]
        if not pairs:
            return pd.DataFrame()
        return pairwise_span_agreement(
            inputs.spans,
            inputs.examples,
            [*inputs.humans, *inputs.models],
            pairs=pairs,
            forms=FORMS,
            matches=MATCHES,
            average="micro",
            empty="zero",
            annotator_col="rater",
            labels=inputs.labels,
        )

    return data.cached("span_pairwise", compute)


def comparison_table(data: ProjectData) -> pd.DataFrame:
    """Table 6: per comparison and form, mean P/R/F1 hard and soft over the defined pairs."""
    inputs = span_inputs(data)
    pairwise = span_pairwise(data)
    if inputs is None or pairwise.empty:
        return pd.DataFrame()
    humans = set(inputs.humans)
    comparisons = {"human – human": pairwise["hypothesis"].isin(humans)}
    for model in inputs.models:
        comparisons[f"human – {model}"] = pairwise["hypothesis"] == model
    rows = []
    for name, mask in comparisons.items():
        chosen = pairwise[mask & pairwise["reference"].isin(humans)]
        for form in FORMS:
            part = chosen[chosen["form"] == form]
            if part.empty:
                continue
            means = mean_span_agreement(part, by=("match",)).set_index("match")
            defined = part[(part["match"] == "soft") & part["f1"].notna()]
            row = {
                "comparison": name,
                "form": FORM_NAMES[form],
                "n_pairs": int(means["n_pairs"].max()),
                "n_pairs_undefined": int(means["n_pairs_undefined"].min()),
                "examples_per_pair": float(defined["n_examples"].mean()) if len(defined) else float("nan"),
            }
            for match in MATCHES:
                for metric, short in (("precision", "P"), ("recall", "R"), ("f1", "F1")):
                    row[f"{short} {match}"] = float(means.at[match, metric]) if match in means.index else float("nan")
            rows.append(row)
    return pd.DataFrame(rows)


def span_agreement_section(data: ProjectData) -> Section | None:
    inputs = span_inputs(data)
    if inputs is None:
        return None
    intro = Paragraph(
        f"Spans are compared at several levels, as HotelCheckSpan recommends: pairs of annotators span by span, "
        f"the placement of spans along the text, the labels of overlapping spans, how many annotators flagged "
        f"each text, and totals per campaign. {plural(len(inputs.humans), 'human annotator')} and "
        f"{plural(len(inputs.models), 'model version')} annotated the project's texts; labels: "
        f"{', '.join(inputs.labels)}."
    )
    subsections = [
        f1_section(data),
        unitizing_section(data),
        confusion_section(data),
        votes_section(data),
        campaign_section(data),
    ]
    return section_or_none("Span agreement", [intro], subsections)


def f1_section(data: ProjectData) -> Section | None:
    inputs = span_inputs(data)
    table = comparison_table(data)
    if inputs is None:
        return None
    if table.empty:
        return Section(
            "Span F1 between annotators",
            [
                Paragraph(
                    f"Span agreement needs two raters of the same texts; this project has {len(inputs.humans)} "
                    "human annotator(s) and no model to compare."
                )
            ],  # fmt: skip
        )
    blocks: list[Block] = [
        Paragraph(
            "Mean span precision (P), recall (R) and F1 over pairs of raters, as in HotelCheckSpan Table 6: each "
            "pair is compared on the texts both annotated, one rater as the reference and the other as the "
            "hypothesis. 'hard' needs the same label on the overlapping text, 'soft' ignores labels. The 'per span' "
            "form gives every span the same weight (Da San Martino et al. 2019), the 'character' form every "
            "character (factgenie). " + EMPTY_POLICY
        ),
        Paragraph(
            "Human pairs are compared both ways (each annotator once as the reference), so their mean precision "
            "equals their mean recall; in 'human – model' rows the human is the reference, so P is the share of "
            "the model's marked text a human also marked and R the share of the human's marked text the model "
            "found. n_pairs counts the pairs with a score, n_pairs_undefined those whose two raters share no "
            "text with a span, examples_per_pair the texts a scored pair rests on, on average."
        ),
        Table("span_agreement", "Span agreement (mean over pairs)", table, data=with_project(table, data.project)),
    ]
    records = table.to_dict("records")
    glance = [
        _f1_glance(row)
        for row in records
        if row["comparison"] == "human – human" and row["form"] == "per span" and not is_nan(row["F1 soft"])
    ]
    blocks += [_f1_sentence(row) for row in records]
    blocks += _pairwise_scores(data)
    return Section("Span F1 between annotators", blocks, glance=glance)


def _f1_glance(row: dict[str, Any]) -> Glance:
    """The front page's finding for the human pairs' span F1, with and without labels."""
    return Glance(
        "Span agreement",
        "annotators",
        f"F1 {number(row['F1 soft'], 2)} ignoring labels, {number(row['F1 hard'], 2)} with labels; "
        f"{plural(int(row['n_pairs']), 'pair')}",
        float(row["F1 soft"]),
    )


def _f1_sentence(row: dict[str, Any]) -> Paragraph:
    """One comparison and form in words: hard and soft F1, over how many pairs and texts, and the
    gap between them (disagreement about the label)."""
    f1_hard, f1_soft = row["F1 hard"], row["F1 soft"]
    gap = ""
    if not (is_nan(f1_hard) or is_nan(f1_soft)):
        gap = f"; the gap of {f1_soft - f1_hard:.2f} is disagreement about the label rather than the place"
    texts = "" if is_nan(row["examples_per_pair"]) else f" ({row['examples_per_pair']:.1f} texts per pair)"
    return Paragraph(
        f"{row['comparison']}, {row['form']} form: F1 {number(f1_hard, 2)} hard and {number(f1_soft, 2)} "
        f"soft, the mean over {plural(row['n_pairs'], 'pair')} of raters{texts}{gap}."
    )


def _pairwise_scores(data: ProjectData) -> list[Block]:
    """Every pair's own scores, as a CSV only, and the sentence pointing to it."""
    pairwise = span_pairwise(data)
    return [
        Paragraph(
            f"Every pair's own scores (both forms, hard and soft) are in span_agreement_pairs.csv "
            f"({plural(len(pairwise), 'row')})."
        ),
        Table(
            "span_agreement_pairs",
            "Pairwise span scores",
            pairwise,
            data=with_project(pairwise, data.project),
            csv_only=True,
        ),
    ]


def _text_lengths(data: ProjectData, spans: pd.DataFrame) -> pd.DataFrame | None:
    """``project, task_id, field, length`` from the task column each span field names."""
    if "field" not in spans.columns:
        return None
    fields = [f for f in spans["field"].dropna().astype(str).unique() if f in data.tasks.columns]
    rows = []
    for name in fields:
        texts = data.tasks[["project", "task_id", name]].dropna(subset=[name])
        texts = texts[texts[name].map(lambda t: isinstance(t, str))]
        rows.append(
            pd.DataFrame(
                {
                    "project": texts["project"],
                    "task_id": texts["task_id"],
                    "field": name,
                    "length": texts[name].str.len(),
                }
            )
        )
    frame = pd.concat(rows, ignore_index=True) if rows else None
    return frame if frame is not None and not frame.empty else None


def unitizing_section(data: ProjectData) -> Section | None:
    inputs = span_inputs(data)
    if inputs is None or len(inputs.humans) < 2:
        return None
    spans = inputs.human_spans()
    lengths = _text_lengths(data, spans)
    table = unitizing_alpha(
        spans, inputs.human_examples(), inputs.humans, lengths=lengths, annotator_col="rater", labels=inputs.labels
    )
    blocks: list[Block] = [
        Paragraph(
            "Krippendorff's unitizing alpha per label and over all labels ('(all)'): how well the human "
            "annotators agree on where spans of the label begin and end, 1 for identical spans and 0 for what "
            "spans placed at random would give. n_units counts the spans, n_continua the texts (one per task and "
            "text field) with two or more annotators, n_coders the annotators; unitizing_alpha.csv adds the observed "
            "and expected disagreements alpha is computed from."
        ),
    ]
    if lengths is None:
        blocks.append(
            Paragraph(
                "The annotated texts are not in the tasks table, so each text is taken to end at its last marked "
                "character. That leaves out unmarked text at the end and makes alpha come out lower than with the "
                "full texts: read it as a rough figure."
            )
        )
    shown = table.drop(columns=["observed_disagreement", "expected_disagreement"]).fillna({"reason": ""})
    blocks.append(Table("unitizing_alpha", "Unitizing alpha (human annotators)", shown,
                        data=with_project(table, data.project)))  # fmt: skip
    overall = table[table["label"] == ALL_LABELS]
    if not overall.empty:
        row = overall.iloc[0]
        if is_nan(row["alpha"]):
            blocks.append(Paragraph(f"Over all labels, unitizing alpha cannot be computed: {row['reason']}."))
        else:
            blocks.append(
                Paragraph(
                    f"Over all labels, unitizing alpha is {number(row['alpha'])} on {row['n_units']} spans in "
                    f"{row['n_continua']} texts by {row['n_coders']} annotators."
                )
            )
    per_label = table[(table["label"] != ALL_LABELS)].dropna(subset=["alpha"])
    if len(per_label) >= 2:
        ends = highest_and_lowest(per_label["alpha"], number)
        if ends is None:
            text = f"Every label has the same alpha, {number(per_label['alpha'].iloc[0])} ({_labels_of(per_label)})."
        else:
            best, worst = per_label.loc[ends[0]], per_label.loc[ends[1]]
            text = (
                f"Per label it ranges from {number(worst['alpha'].iloc[0])} ({_labels_of(worst)}) to "
                f"{number(best['alpha'].iloc[0])} ({_labels_of(best)})."
            )
        blocks.append(Paragraph(text))
    return Section("Unitizing alpha", blocks)


def confusion_section(data: ProjectData) -> Section | None:
    inputs = span_inputs(data)
    if inputs is None or len(inputs.humans) < 2 or len(inputs.labels) < 2:
        return None
    confusion = label_confusion(
        inputs.human_spans(),
        inputs.humans,
        inputs.humans,
        inputs.human_examples(),
        annotator_col="rater",
        labels=inputs.labels,
    )
    labels = [label for label in confusion.index if label != UNMATCHED]
    matched = confusion.loc[labels, labels]
    n_matched = int(matched.to_numpy().sum())
    if n_matched == 0:
        return Section("Label confusion", [Paragraph("No two annotators marked overlapping spans, so there is no "
                                                      "label to compare.")])  # fmt: skip
    same = int(matched.to_numpy().trace())
    off = matched.where(~pd.DataFrame(
        [[a == b for b in labels] for a in labels], index=labels, columns=labels)).stack()  # fmt: skip
    blocks: list[Block] = [
        Paragraph(
            "For every pair of human annotators, each span of one is matched to the other's span that overlaps it "
            "most (each span matched at most once); the matrix counts the label pairs of matched spans, rows the "
            "label one annotator gave and columns the other's. Each pair of annotators is counted from both "
            "sides, so the matrix is symmetric and every matched pair of spans appears twice. The '(unmatched)' "
            "row and column count spans the other annotator did not overlap at all."
        ),
        Paragraph(
            f"Of the {n_matched} matched span pairs (counted from both sides), {same} ({percent(same / n_matched)}) "
            "carry the same label."
            + (_mix_ups(off, labels) if len(off) and off.max() > 0 else "")
            + f" {plural(int(confusion.loc[labels, UNMATCHED].sum()), 'span')} found no overlapping span of the "
            "other annotator (counted once per other annotator)."
        ),
    ]
    shown = confusion.reset_index().rename(columns={"reference": "label (one annotator)"})
    shown.columns.name = None
    blocks.append(Table("label_confusion", "Label confusion of matched spans (human pairs)", shown,
                        data=with_project(shown, data.project)))  # fmt: skip
    png = confusion_png(confusion, "label given by the other annotator", "label given by one annotator")
    if png is not None:
        blocks.append(
            Paragraph(
                "In the plot a cell's colour is its share of the row (how the spans one label was given to are "
                "labelled by the other annotator), so rare labels are as visible as frequent ones."
            )
        )
    if png is not None:
        blocks.append(Figure("Label confusion of matched spans", png))
    return Section("Label confusion", blocks)


def votes_section(data: ProjectData) -> Section | None:
    inputs = span_inputs(data)
    if inputs is None or not inputs.humans:
        return None
    table = vote_table(
        inputs.human_spans(), inputs.human_examples(), inputs.humans, labels=inputs.labels, annotator_col="rater"
    )
    if table.empty:
        return None
    any_rows = table[table["label"] == ANY_LABEL]
    all_sizes = any_rows.groupby("n_annotators")["n_examples"].sum()
    sizes = all_sizes[all_sizes.index > 0]  # texts nobody annotated say nothing about votes
    if sizes.empty or sizes.max() == 0:
        return None
    n_unannotated = int(all_sizes.get(0, 0))
    table = table[table["n_annotators"] > 0]
    n_annotators = int(sizes.idxmax())
    block = table[table["n_annotators"] == n_annotators]
    wide = format_vote_table(table, n_annotators)
    empty_rows = ""
    if n_annotators > MAX_VOTE_ROWS:
        used = block.groupby("votes")["n_examples"].sum()
        wide = wide[wide["E"].isin(used[used > 0].index)]
        empty_rows = " Rows E that no text reaches are left out."
    n_examples = int(sizes.max())
    any_block = block[block["label"] == ANY_LABEL].set_index("votes")["share"]
    blocks: list[Block] = [
        _votes_intro(n_examples, n_annotators, empty_rows, n_unannotated),
        Paragraph(
            f"{percent(any_block.get(0, 0.0))} of these texts got no error from anyone and "
            f"{percent(any_block.get(n_annotators, 0.0))} were flagged by "
            f"{'both' if n_annotators == 2 else f'all {n_annotators}'}; the rest split the "
            "annotators. Agreement on the absence of a label (row 0) is usually far higher than on its presence."
        ),
        Table(
            "example_votes",
            f"Texts per number of annotators marking each label (of {n_annotators})",
            wide,
            data=with_project(table, data.project),
        ),  # fmt: skip
    ]
    blocks += _votes_plot(block, n_annotators)
    return Section("Example-level votes", blocks)


def _votes_intro(n_examples: int, n_annotators: int, empty_rows: str, n_unannotated: int) -> Paragraph:
    """How to read the votes table (HotelCheckSpan Table 5), which group of texts it shows, and
    the texts left out (rows no text reaches, texts nobody annotated)."""
    return Paragraph(
        f"As in HotelCheckSpan Table 5: row E = k counts the texts where exactly k annotators marked at least "
        f"one span of the column's label ('(any)': any label at all), with the share of texts in brackets. "
        f"Texts are grouped by how many annotators annotated them; the table shows the largest group, "
        f"{plural(n_examples, 'text')} annotated by {plural(n_annotators, 'annotator')} "
        f"(example_votes.csv has every group of annotated texts).{empty_rows}"
        + (
            f" {plural(n_unannotated, 'text')} nobody has annotated yet {'is' if n_unannotated == 1 else 'are'} "
            "left out."
            if n_unannotated
            else ""
        )
    )


def _votes_plot(block: pd.DataFrame, n_annotators: int) -> list[Block]:
    """The votes of the shown group as a plot (read as shares when there are too many annotators
    for one row per count); nothing when there is nothing to draw."""
    png = vote_table_png(block)
    if png is None:
        return []
    blocks: list[Block] = []
    if n_annotators > MAX_VOTE_ROWS:
        blocks.append(
            Paragraph(
                "In the plot each dot is a group of texts: its position is the share of the annotators who "
                "marked the label on them, its size (and number) how many texts. Dots at 0% or 100% are "
                "consensus; dots in the middle are texts the annotators split on."
            )
        )
    blocks.append(Figure("Texts by the share of annotators marking each label", png))
    return blocks


def campaign_frame(data: ProjectData, inputs: SpanInputs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Spans and coverage with a ``campaign``: the source, human ones split by group/stage."""
    extra = [c for c in CAMPAIGN_COLUMNS if c in data.tasks.columns and data.tasks[c].nunique() > 1]
    # only the columns the counts read: a copy of every span column was the section's largest
    # allocation at 100,000 tasks
    spans = only_columns(inputs.spans, "project", "task_id", "source", "label")
    who = inputs.examples.loc[inputs.examples["rater"].notna(), ["project", "task_id", "rater"]]
    spans["campaign"] = spans["source"].astype(str)
    who["campaign"] = [r if str(r).startswith("model:") else HUMAN_SOURCE for r in who["rater"]]
    if extra:
        meta = data.tasks[["project", "task_id", *extra]].drop_duplicates(["project", "task_id"])
        for frame in (spans, who):
            merged = frame[["project", "task_id"]].merge(meta, on=["project", "task_id"], how="left")
            suffix = merged[extra].astype(str).agg(", ".join, axis=1)
            human = frame["campaign"] == HUMAN_SOURCE
            frame.loc[human, "campaign"] = (HUMAN_SOURCE + " (" + suffix[human.to_numpy()] + ")").to_numpy()
    return spans, who


def campaign_section(data: ProjectData) -> Section | None:
    inputs = span_inputs(data)
    if inputs is None:
        return None
    spans, who = campaign_frame(data, inputs)
    counts = campaign_span_counts(spans, "campaign", labels=inputs.labels)
    wide = format_campaign_counts(counts, "campaign")
    annotations = who.groupby("campaign").size()
    wide.insert(1, "n_annotations", wide["campaign"].map(annotations).fillna(0).astype(int))
    wide.insert(3, "spans_per_annotation", wide["Total Spans"] / wide["n_annotations"].where(wide["n_annotations"] > 0))
    blocks: list[Block] = [
        Paragraph(
            "As in HotelCheckSpan Table 4: the spans of each campaign (the human annotators together"
            + (", split by the tasks' group or stage" if any(c in data.tasks.columns for c in CAMPAIGN_COLUMNS) else "")
            + ", or one model version) over all the project's texts, with each label's count and share of the "
            "campaign's spans. n_annotations counts the campaign's annotations (a text read by one rater), so "
            "spans_per_annotation compares campaigns of different sizes: a model far above the humans "
            "over-annotates, one far below under-annotates."
        ),
        Table("campaign_span_counts", "Spans per label and campaign", wide, data=with_project(counts, data.project)),
    ]
    for row in wide.head(8).to_dict("records"):
        blocks.append(
            Paragraph(
                f"{row['campaign']}: {row['Total Spans']} spans in {row['n_annotations']} annotations "
                f"({number(row['spans_per_annotation'], 2)} per annotation)."
            )
        )
    return Section("Spans per label and campaign", blocks)


def _labels_of(rows: pd.DataFrame) -> str:
    """``Misleading, 12 spans`` or ``Misleading and Incorrect, 12 and 9 spans respectively``."""
    return f"{listed(rows['label'].astype(str))}, {counts_of(rows['n_units'], 'span')}"


def _mix_ups(off: pd.Series, labels: list[str]) -> str:
    """The most frequent pair of different labels on matched spans (the matrix is symmetric: each
    pair once), every pair tied at that count named."""
    place = {label: i for i, label in enumerate(labels)}
    pairs = off[[place[a] < place[b] for a, b in off.index]]
    top = at_extreme(pairs, lambda count: str(int(count)))
    named = listed([f"{a} against {b}" for a, b in top.index])
    if len(top) == 1:
        return f" The most frequent mix-up is {named} ({int(pairs.max())})."
    return f" The most frequent mix-ups are {named} ({int(pairs.max())} each)."
