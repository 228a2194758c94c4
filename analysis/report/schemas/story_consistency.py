"""Report section for line-by-line story-summary consistency (seed 002, StorySumm).

Shown when judgments have line items (``line_0``, ``line_1``, ...) or the schema is
``story_consistency``: line-level agreement (three verdicts, and inconsistent against the
rest), the summary verdict derived from the lines, and every judge against the gold labels.
Gold labels a project lacks at one level (line or summary) are taken from another project of
the same schema in the report run that has them for the same task ids (StorySumm's line labels
for the evaluation-interface annotators).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from judgelab.analysis.agreement import exact_agreement, fleiss_kappa
from judgelab.analysis.krippendorff import krippendorff_alpha
from judgelab.analysis.qc.score_judges import (
    SIGNED,
    judge_scores,
    signed_confidences,
    thresholded_verdicts,
    tune_thresholds,
)
from judgelab.analysis.qc.story_consistency import (
    FAITHFUL,
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
from judgelab.analysis.report.blocks import Block, Glance, Paragraph, Section, Table
from judgelab.analysis.report.data import (
    ProjectData,
    alpha_label,
    alpha_words,
    at_extreme,
    coefficient,
    fragile,
    has_line_items,
    is_nan,
    kappa_label,
    listed,
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
MIN_PAIR_UNITS_TRUSTED = 30  # a mean pairwise kappa with a pair sharing fewer lines is flagged
MIN_JUDGE_UNITS = 10
MIN_MAIN_TASKS = 10  # annotators judging fewer summaries are a pilot crowd for the 'main annotators' rows
MAJORITY = "human majority"
JUDGE_NAMES = {
    "level": "level",
    "judge": "judge",
    "n_units": "units",
    "n_gold_positive": "gold unfaithful",
    "cohen_kappa": "kappa",
    "share_judged_faithful": "judged faithful",
    "precision_faithful": "P faithful",
    "recall_faithful": "R faithful",
    "precision_unfaithful": "P unfaithful",
    "recall_unfaithful": "R unfaithful",
    "balanced_accuracy": "balanced accuracy",
}
DIFFICULTY_COLUMN = "difficulty"  # StorySumm: easy / hard for the unfaithful summaries


def judges_lines(data: ProjectData) -> bool:
    """Judgments of line items (``line_0``, ``line_1``, ...), whatever the schema."""
    return has_line_items(data.judgments)


@SCHEMA_SECTIONS.register(SCHEMA, also_when=judges_lines)
def story_section(data: ProjectData) -> Section | None:
    """Line-level agreement, summaries derived from lines, judges against gold."""
    subsections = [
        line_agreement_section(data),
        derived_summary_section(data),
        gold_raters_section(data),
        judges_section(data),
    ]
    intro = Paragraph(
        "Each summary is judged line by line: Consistent, Inconsistent (contradicts the story) or "
        "'N/A, just commentary'. A unit below is one line of one summary, or one summary."
    )
    said = summary_verdict_note(data)
    return section_or_none("Line-by-line consistency", [intro, *([said] if said else [])], subsections)


FAITHFUL_FROM_COLUMN = "faithful_from"  # evaluation_interface: what the annotators' summary verdict is
FAITHFUL_FROM_LINES = "their line labels"


def summary_verdict_note(data: ProjectData) -> Paragraph | None:
    """What the human annotators' summary-level faithfulness is, when their loader says it (this
    project's tasks, or those of the project whose annotators it borrows on the same tasks)."""
    if data.cell_number is not None:  # said once, in the project's '(all)' cell (or unfaceted)
        return None
    own = data.all_cells.tasks
    if "task_id" not in own.columns:
        return None
    candidates = [(data.project, own)] + [
        (project, tables["tasks"])
        for project, tables in data.peers.items()
        if "task_id" in tables["tasks"] and tables["tasks"]["task_id"].isin(set(own["task_id"])).any()
    ]
    for project, tasks in candidates:
        if FAITHFUL_FROM_COLUMN not in tasks.columns:
            continue
        said = tasks[FAITHFUL_FROM_COLUMN].dropna().astype(str).unique()
        if len(said) != 1:
            continue
        whose = "" if project == data.project else f" of project {project}"
        if said[0] == FAITHFUL_FROM_LINES:
            what = (
                "derived from their line labels (Unfaithful when a line is Inconsistent, Faithful otherwise), as "
                "'judgelab load evaluation_interface --summary-verdict lines' loaded them; their own summary verdict "
                "is left out"
            )
        else:
            what = (
                f"{said[0]}, as 'judgelab load evaluation_interface' loads it by default ('--summary-verdict lines' "
                "derives it from their line labels instead: Unfaithful when a line is Inconsistent)"
            )
        judgments = data.judgments if project == data.project else data.peers[project]["judgments"]
        differ = None if said[0] == FAITHFUL_FROM_LINES else _stated_against_derived(judgments, set(own["task_id"]))
        counted = ""
        if differ is not None:
            n_differ, n_both = differ
            counted = (
                f" On this project's tasks the two readings differ on {n_differ} of {n_both} summary labels (one per "
                "annotator and summary)."
            )
        return Paragraph(
            f"The summary-level faithfulness of the human annotators{whose} is {what}. The judges' comparison with "
            f"the annotators and the alt-test use it.{counted}"
        )
    return None


def _stated_against_derived(judgments: pd.DataFrame, task_ids: set) -> tuple[int, int] | None:
    """(labels that differ, labels compared): each human annotator's latest summary verdict on
    ``task_ids`` against the one their line labels imply; None when no annotation has both."""
    humans = judgments[(judgments["source"] == HUMAN_SOURCE) & judgments["task_id"].isin(task_ids)]
    if humans.empty:
        return None
    latest = set(latest_annotations(usable_judgments(humans))["annotation_id"])
    humans = humans[humans["annotation_id"].isin(latest)]
    derived = summary_faithfulness_from_lines(humans)
    stated = humans[humans["item"] == SUMMARY_ITEM][["annotation_id", "value"]].drop_duplicates("annotation_id")
    both = derived.merge(stated.rename(columns={"value": "stated"}), on="annotation_id")
    if both.empty:
        return None
    return int((both["stated"].astype(str).str.strip() != both["value"]).sum()), len(both)


def line_agreement_section(data: ProjectData) -> Section | None:
    """Agreement of the human annotators on the lines (three verdicts, inconsistent vs rest)."""
    rows = line_rows(data.judgments, source=HUMAN_SOURCE, project=data.project)
    if rows.empty:
        return None
    table, main_note = _with_main_annotators(data, rows, line_agreement(data.judgments, project=data.project))
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
    blocks += [_line_scheme_sentence(row) for row in table.itertuples()]
    blocks += _pairwise_line_blocks(data, rows)
    glance = []
    for row in table[table["scheme"] == "three verdicts"].itertuples():
        if not row.n_units or is_nan(row.krippendorff_alpha):
            glance.append(Glance("Agreement", "line verdicts", "not computed: no line was rated twice"))
        else:
            words = alpha_words(row.krippendorff_alpha, float("nan"), float("nan"), "nominal")
            lines = plural(int(row.n_units), "line")
            glance.append(Glance("Agreement", "line verdicts", f"{words}; {lines}", float(row.krippendorff_alpha)))
    return Section("Line-level agreement", blocks, glance=glance)


def _with_main_annotators(data: ProjectData, rows: pd.DataFrame, table: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The line agreement table, plus rows for the main annotators alone (those who judged at
    least ``MIN_MAIN_TASKS`` summaries) when a pilot crowd judged only a few, and the sentence
    saying so (empty without them)."""
    tasks_per_annotator = rows.groupby("annotator")["task_id"].nunique()
    main = sorted(tasks_per_annotator[tasks_per_annotator >= MIN_MAIN_TASKS].index, key=str)
    if not 2 <= len(main) < len(tasks_per_annotator):
        return table, ""
    restricted = line_agreement(data.judgments, project=data.project, annotators=main)
    restricted["scheme"] = restricted["scheme"] + " (main annotators)"
    note = (
        f" Rows marked 'main annotators' keep only the {len(main)} annotators who judged at least "
        f"{MIN_MAIN_TASKS} summaries, leaving out {len(tasks_per_annotator) - len(main)} who judged only a few "
        "(a pilot crowd): their handful of lines would otherwise weigh in the pairwise mean."
    )
    return pd.concat([table, restricted], ignore_index=True), note


def _line_scheme_sentence(row: Any) -> Paragraph:
    """One way of reading the verdicts in words: its lines, alpha, unanimity, exact agreement and
    kappas, with a caution when the pairwise mean rests on pairs that share few lines."""
    if not row.n_units:
        return Paragraph(f"{row.scheme}: no line was rated twice ({row.reason}).")
    text = (
        f"{row.scheme}: {row.n_units} lines were judged by two or more of the {row.n_annotators} annotators; "
        f"Krippendorff's nominal alpha is {coefficient(row.krippendorff_alpha, label=alpha_label)} "
        f"and every annotator gave the same verdict on {percent(row.share_all_agree)} of them; "
        f"{percent(row.exact_agreement)} of the pairs of verdicts on a line are identical "
        f"(exact agreement {number(row.exact_agreement)}), Fleiss' kappa is "
        f"{coefficient(row.fleiss_kappa, label=kappa_label)}"
    )
    if not is_nan(row.cohen_kappa):
        text += f", Cohen's kappa {number(row.cohen_kappa)}"
    if not is_nan(row.mean_pairwise_cohen_kappa):
        text += f" and the mean pairwise Cohen's kappa {number(row.mean_pairwise_cohen_kappa)}"
    text += "." + fragile(int(row.n_units), "shared line")
    if not is_nan(row.mean_pairwise_cohen_kappa) and 0 < row.min_pair_units < MIN_PAIR_UNITS_TRUSTED:
        text += (
            f" Caution: the mean pairwise kappa averages pairs of annotators of whom some share as few as "
            f"{plural(int(row.min_pair_units), 'line')}; each pair weighs the same however little it shares, so "
            "read alpha and Fleiss' kappa, which pool the lines, instead."
        )
    return Paragraph(text)


def _pairwise_line_blocks(data: ProjectData, rows: pd.DataFrame) -> list[Block]:
    """Cohen's kappa of each pair of annotators on the lines both judged (pairs sharing at least
    ``MIN_PAIR_UNITS`` lines shown, all in the CSV); nothing with a single pair."""
    pairs = pairwise_line_kappa(line_matrix(rows))
    if len(pairs) <= 1:
        return []
    kept = pairs[pairs["n_units"] >= MIN_PAIR_UNITS].sort_values("n_units", ascending=False, kind="stable")
    blocks: list[Block] = [
        Paragraph(
            f"Cohen's kappa of each pair of annotators on the lines both judged (n_units); the "
            f"{plural(len(kept), 'pair')} sharing at least {MIN_PAIR_UNITS} lines are shown, all "
            f"{len(pairs)} pairs are in line_pairwise_kappa.csv."
        )
    ]
    blocks += short_table(
        "line_pairwise_kappa", "Cohen's kappa per pair of annotators (lines)", kept, data.options.max_rows,
        data=with_project(pairs, data.project),
    )  # fmt: skip
    return blocks


LINE_NAMES = {
    "scheme": "scheme",
    "n_units": "lines",
    "n_annotators": "annotators",
    "n_ratings": "verdicts",
    "krippendorff_alpha": "alpha (nominal)",
    "share_all_agree": "all agree",
    "exact_agreement": "exact",
    "fleiss_kappa": "Fleiss kappa",
    "cohen_kappa": "Cohen kappa",
    "mean_pairwise_cohen_kappa": "mean pairwise Cohen kappa",
    "min_pair_units": "fewest lines of a pair",
    "reason": "note",
}


def _line_table_shown(table: pd.DataFrame) -> pd.DataFrame:
    """The line agreement table with readable headers, without columns that are empty throughout."""
    shown = table[list(LINE_NAMES)].rename(columns=LINE_NAMES)
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
    merged = _derived_and_stated(data, derived)
    per_judge = _derived_per_judge(merged)
    blocks: list[Block] = [
        Paragraph(
            "A summary's verdict can be derived from its lines: Unfaithful as soon as one line is Inconsistent, "
            "Faithful otherwise. One row per judge (human annotator, model or gold): n_summaries with line "
            "verdicts, how many of them the lines make Unfaithful, how many also carry the judge's own summary "
            "verdict, and the share of those where the derived and the stated verdicts match."
        )
    ]
    shown = per_judge[per_judge["n_summaries"] >= MIN_JUDGE_UNITS]
    blocks += [_derived_sentence(row) for row in shown.head(6).itertuples() if row.n_with_stated_verdict]
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
    blocks += _derived_agreement(merged)
    return Section("Summary verdict derived from the lines", blocks)


def _derived_and_stated(data: ProjectData, derived: pd.DataFrame) -> pd.DataFrame:
    """Each judge's latest derived verdict per summary (a main annotator may have answered a task
    twice) beside the judge's own summary verdict (``stated``, when given) and whether they match."""
    judge = derived["source"].astype(str) + "\x00" + derived["annotator"].astype(str)
    latest = latest_annotations(derived.assign(annotator=judge))
    derived = derived[derived["annotation_id"].isin(set(latest["annotation_id"]))]
    usable = usable_judgments(data.judgments, source=None)
    stated = usable[usable["item"] == SUMMARY_ITEM][["annotation_id", "value"]].rename(columns={"value": "stated"})
    merged = derived.merge(stated.drop_duplicates("annotation_id"), on="annotation_id", how="left")
    merged["matches"] = merged["stated"].astype(str).str.strip() == merged["value"]
    return merged


def _derived_per_judge(merged: pd.DataFrame) -> pd.DataFrame:
    """Per judge, most summaries first: summaries with line verdicts, those the lines make
    Unfaithful, those with a stated verdict too, and the share where derived and stated match."""
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
    return per_judge.sort_values("n_summaries", ascending=False, kind="stable")


def _derived_sentence(row: Any) -> Paragraph:
    """One judge's derived verdicts in words, and how often they match its stated ones."""
    who = "the gold labels" if row.source == GOLD_SOURCE else f"{row.annotator} ({row.source})"
    own = "the gold summary label" if row.source == GOLD_SOURCE else "the judge's own summary verdict"
    mismatches = row.n_with_stated_verdict - row.n_matching
    return Paragraph(
        f"{who}: the lines make {row.n_derived_unfaithful} of {row.n_summaries} summaries Unfaithful; the "
        f"derived verdict matches {own} on {percent(row.share_matching)} of the "
        f"{plural(row.n_with_stated_verdict, 'summary', 'summaries')} that have both "
        f"({plural(int(mismatches), 'mismatch', 'mismatches')})."
    )


def _derived_agreement(merged: pd.DataFrame) -> list[Block]:
    """The human annotators' agreement on the derived verdicts (exact, Fleiss' kappa, alpha), when
    two or more of them share a summary."""
    human = merged[merged["source"] == HUMAN_SOURCE]
    if human["annotator"].nunique() < 2:
        return []
    latest = latest_annotations(human)
    kept = human[human["annotation_id"].isin(set(latest["annotation_id"]))]
    matrix = kept.pivot_table(index="task_id", columns="annotator", values="value", aggfunc="last")
    values = matrix.astype(object).where(matrix.notna(), None).to_numpy()
    exact, fleiss = exact_agreement(values), fleiss_kappa(values)
    alpha = krippendorff_alpha(values, "nominal")
    if not exact.n_units:
        return []
    return [
        Paragraph(
            f"On the derived verdicts, {exact.n_units} summaries have two or more human annotators: "
            f"{percent(exact.value)} of the pairs of derived verdicts agree (exact agreement "
            f"{number(exact.value)}), Fleiss' kappa is {coefficient(fleiss.value, label=kappa_label)} and "
            f"Krippendorff's nominal alpha {coefficient(alpha.value)}."
            + fragile(exact.n_units, "shared summary", "shared summaries")
        )
    ]


GOLD_ANNOTATIONS_COLUMN = "gold_annotations"  # evaluation_interface's combined.json: the gold's own raters


def gold_raters_section(data: ProjectData) -> Section | None:
    """The raters behind the gold labels (combined.json's ``gold_annotations``) as a rater set:
    their agreement, which says how firm the gold is."""
    if GOLD_ANNOTATIONS_COLUMN not in data.tasks.columns:
        return None
    lists = data.tasks[["task_id", GOLD_ANNOTATIONS_COLUMN]].dropna()
    parsed = [_label_list(text) for text in lists[GOLD_ANNOTATIONS_COLUMN]]
    parsed = [labels for labels in parsed if labels]
    if not parsed:
        return None
    width = max(len(labels) for labels in parsed)
    values = [[*labels, *([None] * (width - len(labels)))] for labels in parsed]
    alpha = krippendorff_alpha(values, "nominal")
    exact, fleiss = exact_agreement(values), fleiss_kappa(values)
    complete = [labels for labels in parsed if len(labels) >= 2]
    share = sum(len(set(labels)) == 1 for labels in complete) / len(complete) if complete else float("nan")
    table = pd.DataFrame(
        [
            {
                "rater_set": "gold annotations (combined.json)",
                "n_summaries": exact.n_units,
                "n_raters": width,
                "krippendorff_alpha": alpha.value,
                "share_all_agree": share,
                "exact_agreement": exact.value,
                "fleiss_kappa": fleiss.value,
            }
        ]
    )
    text = (
        f"The gold summary labels here are the majority of {width} raters per summary (gold_annotations, a protocol "
        f"of their own, not the line annotators above). Taken as a rater set, on {exact.n_units} summaries they reach "
        f"Krippendorff's nominal alpha {coefficient(alpha.value, label=alpha_label)}; all {width} agree on "
        f"{percent(share)} of the summaries, and Fleiss' kappa is {coefficient(fleiss.value)}. The raters are named by "
        "their position in each list."
    )
    return Section(
        "Agreement of the gold labels' raters",
        [Paragraph(text), Table("gold_rater_agreement", "The gold labels' raters as a rater set",
                                table, data=with_project(table, data.project))],
    )  # fmt: skip


def _label_list(text: object) -> list[object]:
    try:
        value = json.loads(str(text))
    except (TypeError, ValueError):
        return []
    return [str(v) for v in value if v is not None] if isinstance(value, list) else []


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


def _task_groups(data: ProjectData) -> dict[object, object] | None:
    tasks = data.all_cells.tasks
    if DIFFICULTY_COLUMN not in tasks.columns or not tasks[DIFFICULTY_COLUMN].astype(str).str.strip().ne("").any():
        return None
    known = tasks.dropna(subset=[DIFFICULTY_COLUMN])
    return dict(zip(known["task_id"], known[DIFFICULTY_COLUMN].astype(str), strict=True))


def _gold_faithful(gold: pd.DataFrame) -> dict[object, bool]:
    summary = gold[gold["item"] == SUMMARY_ITEM].drop_duplicates("task_id", keep="last")
    return dict(zip(summary["task_id"], summary["value"].astype(str).str.strip() == FAITHFUL, strict=True))


def score_thresholds(data: ProjectData) -> tuple[dict, str]:
    """Thresholds of the score judges, tuned on the tasks the schema's ``tune_on`` (under
    ``analysis:``) names (StorySumm: ``split = val``), on every cell's rows; and those tasks in
    words."""

    def compute() -> tuple[dict, str]:
        whole = data.all_cells
        tune_on = dict((whole.schema_meta.get("analysis") or {}).get("tune_on") or {})
        tasks = whole.tasks
        if not tune_on or any(name not in tasks.columns for name in tune_on):
            return {}, ""
        mask = pd.Series(True, index=tasks.index)
        for name, value in tune_on.items():
            mask &= tasks[name].astype(str) == str(value)
        tune_tasks = set(tasks.loc[mask, "task_id"])
        gold, _ = _gold_rows(whole)
        scores = judge_scores(whole.judgments)
        if scores.empty or not tune_tasks:
            return {}, ""
        where = " and ".join(f"{name} = {value}" for name, value in tune_on.items())
        return tune_thresholds(scores, _gold_faithful(gold), tune_tasks), where

    return data.all_cells.cached("score_thresholds", compute)


def _judges_intro(flagged: list[str]) -> Paragraph:
    """What the judges table's columns mean; the ``flagged_`` ones (StorySumm's '% easy' and
    '% hard') only when the table has them."""
    return Paragraph(
        "Each judge's verdicts against the gold labels, at summary level (Faithful / Unfaithful; a judge "
        "without its own summary verdict gets the one derived from its lines) and at line level "
        "(Inconsistent against the rest). Precision (P) and recall (R) are given for both classes, named: "
        "'P faithful' is the share of the judge's Faithful calls that gold agrees with, 'R faithful' the share "
        "of gold's faithful units the judge calls Faithful (StorySumm's tables use this class); 'P unfaithful' "
        "and 'R unfaithful' the same for the problem class. 'judged faithful' is the share of units the judge "
        "calls Faithful, balanced accuracy the mean of the two recalls (0.5 is guessing), kappa Cohen's kappa "
        "between judge and gold, 'units' the summaries or lines judged by both. 'human majority' is the answer "
        "most annotators gave (ties left out)."
        + (
            " " + ", ".join(f"'{c.removeprefix('flagged_')} caught'" for c in flagged) + " give the share of "
            "gold-unfaithful summaries of that difficulty the judge calls Unfaithful (StorySumm's '% easy' and "
            "'% hard')."
            if flagged
            else ""
        )
    )


def _thresholds_note(thresholds: dict, tuned_on: str) -> Paragraph:
    """How score judges got their verdicts: each one's threshold and the split it was tuned on."""
    chosen = "; ".join(f"{t.source} {t.threshold:.4f}" for t in thresholds.values())
    return Paragraph(
        f"Judges that give a score (no verdict) are turned into verdicts with a threshold chosen on the tasks "
        f"with {tuned_on} only: the first of 150 evenly spaced values from 0 to 1 that maximises balanced "
        f"accuracy there (as StorySumm does), then a summary scoring above it is Faithful. The same threshold "
        f"is used on every other split, so those rows are a fair test: {chosen}."
    )


def _best_judge_sentences(shown: pd.DataFrame) -> list[Paragraph]:
    """Per level, the first judge of the ranked table (the best balanced accuracy) in one sentence."""
    sentences = []
    for level in ("summary", "line"):
        rows = shown[(shown["level"] == level)].dropna(subset=["balanced_accuracy"])
        if rows.empty:
            continue
        best = rows.iloc[0]
        tied = at_extreme(rows["balanced_accuracy"], number)
        if len(tied) > 1:
            judges = listed(rows.loc[tied.index, "judge"].astype(str))
            sentences.append(
                Paragraph(
                    f"At {level} level {judges} share the best balanced accuracy, {number(best['balanced_accuracy'])}"
                    " (the table gives each one's units, precision and recall)."
                )
            )
            continue
        units = (
            plural(int(best["n_units"]), "summary", "summaries")
            if level == "summary"
            else plural(int(best["n_units"]), "line")
        )
        sentences.append(
            Paragraph(
                f"At {level} level the best judge is {best['judge']}: balanced accuracy "
                f"{number(best['balanced_accuracy'])} on {units}, catching "
                f"{percent(best['recall_unfaithful'])} of the {best['n_gold_positive']} gold problems with "
                f"precision {number(best['precision_unfaithful'])} (faithful class: precision "
                f"{number(best['precision_faithful'])}, recall {number(best['recall_faithful'])})."
            )
        )
    return sentences


def _ranking_blocks(data: ProjectData, frame: pd.DataFrame) -> list[Block]:
    """Score judges ranked without a threshold (AUC against gold), signed confidences included;
    nothing when no judge gives a score."""
    auc = judge_scores_vs_gold(pd.concat([frame, _signed_rows(data)], ignore_index=True))
    if auc.empty:
        return []
    return [
        Paragraph(
            "Score judges ranked without a threshold: auc_faithful is the chance that a summary gold calls "
            "faithful gets a higher score than one gold calls unfaithful (0.5 is guessing, 1 a perfect ranking), "
            "over n_units summaries of which n_unfaithful are unfaithful. A judge's confidence in its own verdict "
            "(GPT-4's probs) is not a faithfulness score: it appears here only signed by the verdict "
            f"('{SIGNED}': the confidence for a Faithful verdict, one minus it for an Unfaithful one)."
        ),
        Table("judge_scores_vs_gold", "Score judges against the gold labels (ranking)", auc,
              data=with_project(auc, data.project)),
    ]  # fmt: skip


def _judges_glance(ranked: pd.DataFrame) -> list[Glance]:
    """The front page's findings: the three best judges of each level by balanced accuracy."""
    glance = []
    for level, noun, nouns in (("summary", "summary", "summaries"), ("line", "line", "lines")):
        rows = ranked[(ranked["level"] == level)].dropna(subset=["balanced_accuracy"]).head(3)
        for row in rows.to_dict("records"):
            answer = (
                f"{level} level: balanced accuracy {number(row['balanced_accuracy'])} on "
                f"{plural(int(row['n_units']), noun, nouns)}, {percent(row['recall_unfaithful'])} of the gold problems"
            )
            judge = str(row["judge"]).removeprefix("model:")
            glance.append(Glance("Judges against gold", judge, answer, float(row["balanced_accuracy"])))
    return glance


def judges_section(data: ProjectData) -> Section | None:
    """Every judge (annotators, their majority, models; score judges at a threshold tuned on one
    split) against the gold labels."""
    gold, notes = _gold_rows(data)
    if gold.empty:
        return None
    judges = data.judgments[data.judgments["source"] != GOLD_SOURCE]
    if judges.empty:
        return None
    thresholds, tuned_on = score_thresholds(data)
    scores = judge_scores(data.judgments)
    verdicts = thresholded_verdicts(scores, thresholds, data.project) if thresholds else scores.iloc[0:0]
    frame = pd.concat([judges, _majority_rows(data), verdicts, gold], ignore_index=True)
    try:
        table = judges_vs_gold(frame, derive_summary_from_lines=True, task_groups=_task_groups(data))
    except ValueError as exc:
        return Section("Judges against the gold labels", [Paragraph(f"Not computed: {exc}.")])
    if table.empty:
        return None
    flagged = [column for column in table.columns if column.startswith("flagged_")]
    blocks: list[Block] = [Paragraph(note) for note in notes]
    blocks.append(_judges_intro(flagged))
    if thresholds:
        blocks.append(_thresholds_note(thresholds, tuned_on))
    shown = table[table["n_units"] >= MIN_JUDGE_UNITS]
    if len(shown) < len(table):
        blocks.append(
            Paragraph(
                f"Judges with fewer than {MIN_JUDGE_UNITS} units ({len(table) - len(shown)} rows, such as "
                "pilot annotators) are only in judges_vs_gold.csv."
            )
        )
    names = {**JUDGE_NAMES, **{c: f"{c.removeprefix('flagged_')} caught" for c in flagged}}
    names = {k: names[k] for k in [*list(JUDGE_NAMES)[:-1], *flagged, "balanced_accuracy"]}
    shown = shown.assign(judge=[_judge_name(s, a) for s, a in zip(shown["source"], shown["annotator"], strict=True)])
    ranked = shown.sort_values(["level", "balanced_accuracy"], ascending=[False, False], kind="stable")
    shown = ranked.assign(judge=ranked["judge"].map(lambda name: str(name).replace(" ", "\u00a0")))  # one line
    blocks += short_table(
        "judges_vs_gold", "Judges against the gold labels", shown[list(names)].rename(columns=names),
        max(data.options.max_rows, 40),
        data=with_project(table, data.project),
    )  # fmt: skip
    blocks += _best_judge_sentences(shown)
    blocks += _ranking_blocks(data, frame)
    return Section("Judges against the gold labels", blocks, glance=_judges_glance(ranked))


def _signed_rows(data: ProjectData) -> pd.DataFrame:
    """Signed confidences as ``faithful_score`` judgment rows (for the ranking table)."""
    signed = signed_confidences(data.judgments)
    if signed.empty:
        return signed
    return pd.DataFrame(
        {
            "project": data.project,
            "task_id": signed["task_id"],
            "annotation_id": "signed:" + signed["annotator"].astype(str) + ":" + signed["task_id"].astype(str),
            "annotator": signed["annotator"],
            "source": signed["source"],
            "item": f"{SUMMARY_ITEM}_score",
            "value": signed["score"].map(repr),
            "was_cancelled": False,
        }
    )
