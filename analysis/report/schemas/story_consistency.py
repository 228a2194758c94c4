"""Report section for line-by-line story-summary consistency (seed 002, StorySumm).

Shown when judgments have line items (``line_0``, ``line_1``, ...) or the schema is
``story_consistency``: line-level agreement (three verdicts, and inconsistent against the
rest), the summary verdict derived from the lines, and every judge against the gold labels.
Gold labels a project lacks at one level (line or summary) are taken from another project of
the same schema in the report run that has them for the same task ids (StorySumm's line labels
for the evaluation-interface annotators).
"""

from __future__ import annotations

import pandas as pd

from judgelab.analysis.agreement import exact_agreement, fleiss_kappa
from judgelab.analysis.krippendorff import krippendorff_alpha
from judgelab.analysis.qc.story_consistency import (
    GOLD_SOURCE,
    LINE_ITEM,
    SUMMARY_ITEM,
    UNFAITHFUL,
    judge_scores_vs_gold,
    judges_vs_gold,
    line_agreement,
    line_matrix,
    line_rows,
    pairwise_line_kappa,
    summary_faithfulness_from_lines,
)
from judgelab.analysis.report.blocks import Block, Paragraph, Section, Table
from judgelab.analysis.report.data import (
    ProjectData,
    fragile,
    has_line_items,
    is_nan,
    kappa_label,
    number,
    percent,
    plural,
    section_or_none,
    short_table,
    with_project,
)
from judgelab.analysis.report.schemas import SCHEMA_SECTIONS
from judgelab.analysis.tables import HUMAN_SOURCE, latest_annotations, usable_judgments

SCHEMA = "story_consistency"
MIN_PAIR_UNITS = 10  # pairs of annotators sharing fewer lines are left off the page
MIN_JUDGE_UNITS = 10
MIN_MAIN_TASKS = 10  # annotators judging fewer summaries are a pilot crowd for the 'main annotators' rows
MAJORITY = "human majority"
JUDGE_NAMES = {
    "n_units": "units",
    "n_gold_positive": "gold unfaithful",
    "n_predicted_positive": "judged unfaithful",
    "cohen_kappa": "kappa",
    "balanced_accuracy": "balanced accuracy",
    "precision_unfaithful": "precision",
    "recall_unfaithful": "recall",
}


@SCHEMA_SECTIONS.register("story_consistency")
def story_section(data: ProjectData) -> Section | None:
    """Line-level agreement, summaries derived from lines, judges against gold."""
    if data.schema_name != SCHEMA and not has_line_items(data.judgments):
        return None
    subsections = [line_agreement_section(data), derived_summary_section(data), judges_section(data)]
    intro = Paragraph(
        "Each summary is judged line by line: Consistent, Inconsistent (contradicts the story) or "
        "'N/A, just commentary'. A unit below is one line of one summary, or one summary."
    )
    return section_or_none("Line-by-line consistency", [intro], subsections)


def line_agreement_section(data: ProjectData) -> Section | None:
    """Agreement of the human annotators on the lines (three verdicts, inconsistent vs rest)."""
    rows = line_rows(data.judgments, source=HUMAN_SOURCE, project=data.project)
    if rows.empty:
        return None
    table = line_agreement(data.judgments, project=data.project)
    tasks_per_annotator = rows.groupby("annotator")["task_id"].nunique()
    main = sorted(tasks_per_annotator[tasks_per_annotator >= MIN_MAIN_TASKS].index, key=str)
    main_note = ""
    if 2 <= len(main) < len(tasks_per_annotator):
        restricted = line_agreement(data.judgments, project=data.project, annotators=main)
        restricted["scheme"] = restricted["scheme"] + " (main annotators)"
        table = pd.concat([table, restricted], ignore_index=True)
        main_note = (
            f" Rows marked 'main annotators' keep only the {len(main)} annotators who judged at least "
            f"{MIN_MAIN_TASKS} summaries, leaving out {len(tasks_per_annotator) - len(main)} who judged only a few "
            "(a pilot crowd): their handful of lines would otherwise weigh in the pairwise mean."
        )
    blocks: list[Block] = [
        Paragraph(
            "One row per way of reading the verdicts: 'three verdicts' compares Consistent, Inconsistent and "
            "N/A as they are; 'inconsistent vs rest' only asks whether a line was called Inconsistent. "
            "'lines' counts the lines rated by two or more annotators, 'verdicts' the verdicts on them. Cohen's "
            "kappa needs exactly two annotators; the mean pairwise Cohen's kappa (Light's kappa) averages it "
            "over every pair of annotators who share lines." + main_note
        ),
        Table(
            "line_agreement",
            "Line-level agreement (human annotators)",
            _line_table_shown(table),
            data=with_project(table, data.project),
        ),
    ]
    for row in table.itertuples():
        if not row.n_units:
            blocks.append(Paragraph(f"{row.scheme}: no line was rated twice ({row.reason})."))
            continue
        text = (
            f"{row.scheme}: {row.n_units} lines were judged by two or more of the {row.n_annotators} annotators; "
            f"{percent(row.exact_agreement)} of the pairs of verdicts on a line are identical "
            f"(exact agreement {number(row.exact_agreement)}), Fleiss' kappa is {number(row.fleiss_kappa)} "
            f"({kappa_label(row.fleiss_kappa)})"
        )
        if not is_nan(row.cohen_kappa):
            text += f", Cohen's kappa {number(row.cohen_kappa)}"
        if not is_nan(row.mean_pairwise_cohen_kappa):
            text += f" and the mean pairwise Cohen's kappa {number(row.mean_pairwise_cohen_kappa)}"
        blocks.append(Paragraph(text + "." + fragile(int(row.n_units), "shared line")))
    pairs = pairwise_line_kappa(line_matrix(rows))
    if len(pairs) > 1:
        kept = pairs[pairs["n_units"] >= MIN_PAIR_UNITS].sort_values("n_units", ascending=False)
        blocks.append(
            Paragraph(
                f"Cohen's kappa of each pair of annotators on the lines both judged (n_units); the "
                f"{plural(len(kept), 'pair')} sharing at least {MIN_PAIR_UNITS} lines are shown, all "
                f"{len(pairs)} pairs are in line_pairwise_kappa.csv."
            )
        )
        blocks += short_table(
            "line_pairwise_kappa", "Cohen's kappa per pair of annotators (lines)", kept, data.options.max_rows,
            data=with_project(pairs, data.project),
        )  # fmt: skip
    return Section("Line-level agreement", blocks)


LINE_NAMES = {
    "n_units": "lines",
    "n_annotators": "annotators",
    "n_ratings": "verdicts",
    "exact_agreement": "exact",
    "fleiss_kappa": "Fleiss kappa",
    "cohen_kappa": "Cohen kappa",
    "mean_pairwise_cohen_kappa": "mean pairwise Cohen kappa",
    "reason": "note",
}


def _line_table_shown(table: pd.DataFrame) -> pd.DataFrame:
    """The line agreement table with readable headers, without columns that are empty throughout."""
    shown = table.rename(columns=LINE_NAMES)
    if shown["Cohen kappa"].isna().all():
        shown = shown.drop(columns=["Cohen kappa"])
    if not shown["note"].fillna("").astype(str).str.strip().any():
        shown = shown.drop(columns=["note"])
    return shown


def derived_summary_section(data: ProjectData) -> Section | None:
    """The summary verdict each annotation implies (unfaithful when a line is inconsistent)."""
    derived = summary_faithfulness_from_lines(data.judgments, source=None)
    derived = derived[derived["project"] == data.project] if not derived.empty else derived
    if derived.empty:
        return None
    # one annotation per judge and summary: the latest (a main annotator may have answered a task twice)
    judge = derived["source"].astype(str) + "\x00" + derived["annotator"].astype(str)
    latest = latest_annotations(derived.assign(annotator=judge))
    derived = derived[derived["annotation_id"].isin(set(latest["annotation_id"]))]
    usable = usable_judgments(data.judgments, source=None)
    stated = usable[usable["item"] == SUMMARY_ITEM][["annotation_id", "value"]].rename(columns={"value": "stated"})
    merged = derived.merge(stated.drop_duplicates("annotation_id"), on="annotation_id", how="left")
    merged["matches"] = merged["stated"].astype(str).str.strip() == merged["value"]
    per_judge = (
        merged.groupby(["source", "annotator"], sort=False)
        .agg(
            n_summaries=("task_id", "nunique"),
            n_derived_unfaithful=("value", lambda s: int((s == UNFAITHFUL).sum())),
            n_with_stated_verdict=("stated", lambda s: int(s.notna().sum())),
            n_matching=("matches", "sum"),
        )
        .reset_index()
    )
    per_judge["share_matching"] = per_judge["n_matching"] / per_judge["n_with_stated_verdict"].where(
        per_judge["n_with_stated_verdict"] > 0
    )
    per_judge = per_judge.sort_values("n_summaries", ascending=False, kind="stable")
    blocks: list[Block] = [
        Paragraph(
            "A summary's verdict can be derived from its lines: Unfaithful as soon as one line is Inconsistent, "
            "Faithful otherwise. One row per judge (human annotator, model or gold): n_summaries with line "
            "verdicts, how many of them the lines make Unfaithful, how many also carry the judge's own summary "
            "verdict, and the share of those where the derived and the stated verdicts match."
        )
    ]
    shown = per_judge[per_judge["n_summaries"] >= MIN_JUDGE_UNITS]
    for row in shown.head(6).itertuples():
        if not row.n_with_stated_verdict:
            continue
        who = "the gold labels" if row.source == GOLD_SOURCE else f"{row.annotator} ({row.source})"
        own = "the gold summary label" if row.source == GOLD_SOURCE else "the judge's own summary verdict"
        mismatches = row.n_with_stated_verdict - row.n_matching
        blocks.append(
            Paragraph(
                f"{who}: the lines make {row.n_derived_unfaithful} of {row.n_summaries} summaries Unfaithful; the "
                f"derived verdict matches {own} on {percent(row.share_matching)} of the "
                f"{plural(row.n_with_stated_verdict, 'summary', 'summaries')} that have both "
                f"({plural(int(mismatches), 'mismatch', 'mismatches')})."
            )
        )
    if len(shown) < len(per_judge):
        blocks.append(
            Paragraph(
                f"{plural(len(per_judge) - len(shown), 'judge')} with fewer than {MIN_JUDGE_UNITS} summaries (such as "
                "pilot annotators) are only in derived_summary_verdicts.csv."
            )
        )
    blocks += short_table(
        "derived_summary_verdicts", "Summary verdicts derived from the lines", shown, data.options.max_rows,
        data=with_project(per_judge, data.project),
    )  # fmt: skip
    human = merged[merged["source"] == HUMAN_SOURCE]
    if human["annotator"].nunique() >= 2:
        latest = latest_annotations(human)
        kept = human[human["annotation_id"].isin(set(latest["annotation_id"]))]
        matrix = kept.pivot_table(index="task_id", columns="annotator", values="value", aggfunc="last")
        values = matrix.astype(object).where(matrix.notna(), None).to_numpy()
        exact, fleiss = exact_agreement(values), fleiss_kappa(values)
        alpha = krippendorff_alpha(values, "nominal")
        if exact.n_units:
            blocks.append(
                Paragraph(
                    f"On the derived verdicts, {exact.n_units} summaries have two or more human annotators: "
                    f"{percent(exact.value)} of the pairs of derived verdicts agree (exact agreement "
                    f"{number(exact.value)}), Fleiss' kappa is {number(fleiss.value)} "
                    f"({kappa_label(fleiss.value)}) and Krippendorff's nominal alpha {number(alpha.value)}."
                    + fragile(exact.n_units, "shared summary", "shared summaries")
                )
            )
    return Section("Summary verdict derived from the lines", blocks)


def _gold_rows(data: ProjectData) -> tuple[pd.DataFrame, list[str]]:
    """Gold judgments for this project: its own, plus levels it lacks from peers; and notes."""
    own = data.judgments[data.judgments["source"] == GOLD_SOURCE]
    notes: list[str] = []
    levels = {"summary": own["item"] == SUMMARY_ITEM, "line": own["item"].astype(str).str.match(LINE_ITEM)}
    parts = [own]
    tasks = set(data.judgments["task_id"])
    for level, present in levels.items():
        for project, tables in data.peers.items():
            peer = tables["judgments"]
            peer_gold = peer[(peer["source"] == GOLD_SOURCE) & peer["task_id"].isin(tasks)]
            mask = (
                peer_gold["item"] == SUMMARY_ITEM
                if level == "summary"
                else peer_gold["item"].astype(str).str.match(LINE_ITEM)
            )
            chosen = peer_gold[mask]
            if chosen.empty:
                continue
            if present.any():
                if level == "summary":
                    notes.append(_gold_clash(own[present], chosen, project))
                continue
            parts.append(chosen.assign(project=data.project))
            notes.append(
                f"The {level}-level gold labels come from project {project} "
                f"({plural(chosen['task_id'].nunique(), 'task')} shared with this one)."
            )
            break
    return pd.concat(parts, ignore_index=True), [note for note in notes if note]


def _gold_clash(own: pd.DataFrame, peer: pd.DataFrame, project: object) -> str:
    mine = own.drop_duplicates("task_id", keep="last").set_index("task_id")["value"]
    theirs = peer.drop_duplicates("task_id", keep="last").set_index("task_id")["value"]
    shared = mine.index.intersection(theirs.index)
    if shared.empty:
        return ""
    differ = int((mine[shared] != theirs[shared]).sum())
    return (
        f"This project's summary-level gold labels and those of project {project} disagree on {differ} of the "
        f"{len(shared)} summaries both label; the table uses this project's own."
    )


def _majority_rows(data: ProjectData) -> pd.DataFrame:
    """The human majority as one more judge: per summary and per line, ties left out."""
    human = usable_judgments(data.judgments, source=HUMAN_SOURCE)
    human = human[(human["item"] == SUMMARY_ITEM) | human["item"].astype(str).str.match(LINE_ITEM)]
    if human["annotator"].nunique() < 2:
        return human.iloc[0:0]
    latest = latest_annotations(human)
    human = human[human["annotation_id"].isin(set(latest["annotation_id"]))]
    counts = human.groupby(["task_id", "item", "value"]).size().rename("n").reset_index()
    totals = counts.groupby(["task_id", "item"])["n"].transform("sum")
    majority = counts[2 * counts["n"] > totals]
    return pd.DataFrame(
        {
            "project": data.project,
            "task_id": majority["task_id"].to_numpy(),
            "annotation_id": ["majority:" + str(t) for t in majority["task_id"]],
            "annotator": "majority",
            "source": MAJORITY,
            "item": majority["item"].to_numpy(),
            "value": majority["value"].to_numpy(),
            "was_cancelled": False,
        }
    )


def _judge_name(source: object, annotator: object) -> str:
    if str(source).startswith("model:") or source == MAJORITY:
        return str(source)
    return f"{source}: {annotator}"


def judges_section(data: ProjectData) -> Section | None:
    """Every judge (annotators, their majority, models) against the gold labels."""
    gold, notes = _gold_rows(data)
    if gold.empty:
        return None
    judges = data.judgments[data.judgments["source"] != GOLD_SOURCE]
    if judges.empty:
        return None
    frame = pd.concat([judges, _majority_rows(data), gold], ignore_index=True)
    try:
        table = judges_vs_gold(frame, derive_summary_from_lines=True)
    except ValueError as exc:
        return Section("Judges against the gold labels", [Paragraph(f"Not computed: {exc}.")])
    if table.empty:
        return None
    blocks: list[Block] = [Paragraph(note) for note in notes]
    blocks.append(
        Paragraph(
            "Each judge's verdicts against the gold labels, at summary level (Faithful / Unfaithful; a judge "
            "without its own summary verdict gets the one derived from its lines) and at line level "
            "(Inconsistent against the rest). The problem class (Unfaithful, Inconsistent) is the positive "
            "one: precision is the share of the judge's 'unfaithful' calls that gold agrees with, recall the "
            "share of gold's unfaithful units the judge caught, balanced accuracy the mean of the recall on "
            "both classes (0.5 is guessing), kappa Cohen's kappa between judge and gold. 'units' counts the "
            "summaries or lines judged by both, of which 'gold unfaithful' are problems for gold and 'judged "
            "unfaithful' for the judge; 'human majority' is the answer most annotators gave (ties left out)."
        )
    )
    shown = table[table["n_units"] >= MIN_JUDGE_UNITS]
    if len(shown) < len(table):
        blocks.append(
            Paragraph(
                f"Judges with fewer than {MIN_JUDGE_UNITS} units ({len(table) - len(shown)} rows, such as "
                "pilot annotators) are only in judges_vs_gold.csv."
            )
        )
    columns = [
        "level", "judge", "n_units", "n_gold_positive", "n_predicted_positive", "cohen_kappa",
        "balanced_accuracy", "precision_unfaithful", "recall_unfaithful",
    ]  # fmt: skip
    shown = shown.assign(judge=[_judge_name(s, a) for s, a in zip(shown["source"], shown["annotator"], strict=True)])
    shown = shown.sort_values(["level", "balanced_accuracy"], ascending=[False, False], kind="stable")
    shown = shown.assign(judge=shown["judge"].map(lambda name: str(name).replace(" ", "\u00a0")))  # one line
    blocks += short_table(
        "judges_vs_gold", "Judges against the gold labels", shown[columns].rename(columns=JUDGE_NAMES),
        max(data.options.max_rows, 40),
        data=with_project(table, data.project),
    )  # fmt: skip
    for level in ("summary", "line"):
        rows = shown[(shown["level"] == level)].dropna(subset=["balanced_accuracy"])
        if rows.empty:
            continue
        best = rows.iloc[0]
        units = (
            plural(int(best["n_units"]), "summary", "summaries")
            if level == "summary"
            else plural(int(best["n_units"]), "line")
        )
        blocks.append(
            Paragraph(
                f"At {level} level the best judge is {best['judge']}: balanced accuracy "
                f"{number(best['balanced_accuracy'])} on {units}, catching "
                f"{percent(best['recall_unfaithful'])} of the {best['n_gold_positive']} gold problems with "
                f"precision {number(best['precision_unfaithful'])}."
            )
        )
    scores = judge_scores_vs_gold(frame)
    if not scores.empty:
        blocks.append(
            Paragraph(
                "Judges that give a score instead of a verdict: auc_faithful is the chance that a summary gold "
                "calls faithful gets a higher score than one gold calls unfaithful (0.5 is guessing, 1 a "
                "perfect ranking), over n_units summaries of which n_unfaithful are unfaithful."
            )
        )
        blocks.append(Table("judge_scores_vs_gold", "Score judges against the gold labels", scores,
                            data=with_project(scores, data.project)))  # fmt: skip
    return Section("Judges against the gold labels", blocks)
