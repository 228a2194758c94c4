"""Report section "Directed span agreement (Table 6)": HotelCheckSpan's rows Group A → Group B
per stage, Stage 1 → Stage 2 and Human → model (see ``analysis.span_directed``).

Shown for a project with spans whose tasks carry a ``group`` or a ``stage`` with two or more
values. Seed 004 gives each group its own Label Studio project (copies of a task keep their
``key``), so the projects of the same schema whose tasks share keys with this one are compared
with it, by key. The table compares cells (groups, stages) with each other, so it is not cut by
them: it runs once on the whole project.
"""

from __future__ import annotations

import pandas as pd

from judgelab.analysis.report.blocks import Block, Paragraph, Section, Table
from judgelab.analysis.report.data import ProjectData, number, plural, rater_names, whole_project, with_project
from judgelab.analysis.span_directed import EXAMPLE, RATER, directed_span_table, role_rater
from judgelab.analysis.tables import HUMAN_SOURCE, cancelled_mask

ROLE_FIELDS = ("group", "stage")
SHOWN = {
    "comparison": "comparison",
    "n_pairs": "pairs",
    "n_examples": "texts (summed over pairs)",
    "precision_hard": "P (H)",
    "recall_hard": "R (H)",
    "f1_hard": "F1 (H)",
    "precision_soft": "P (S)",
    "recall_soft": "R (S)",
    "f1_soft": "F1 (S)",
}


def _has_roles(tasks: pd.DataFrame) -> bool:
    return any(name in tasks.columns and tasks[name].dropna().astype(str).nunique() >= 2 for name in ROLE_FIELDS)


def _frames(data: ProjectData) -> tuple[list[dict[str, pd.DataFrame]], list[object]]:
    """This project's tables and those of same-schema projects sharing task keys with it."""
    own = {"tasks": data.tasks, "judgments": data.judgments, "spans": data.spans}
    frames, used = [own], [data.project]
    keys = set(data.tasks["key"].dropna()) if "key" in data.tasks.columns else set()
    for project, tables in data.peers.items():
        peer_tasks = tables["tasks"]
        if keys and "key" in peer_tasks.columns and keys & set(peer_tasks["key"].dropna()):
            frames.append(dict(tables))
            used.append(project)
    return frames, used


def _role_rows(tables: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``annotations`` (example, rater, source, group, stage) and ``spans`` (example, rater, ...)."""
    tasks = tables["tasks"]
    fields = tasks[["project", "task_id"]].copy()
    has_key = "key" in tasks.columns
    fields[EXAMPLE] = [
        key if has_key and isinstance(key, str) and key else f"{project}:{task}"
        for project, task, key in zip(tasks["project"], tasks["task_id"], tasks.get("key", [None] * len(tasks)),
                                      strict=True)
    ]  # fmt: skip
    for name in ROLE_FIELDS:
        fields[name] = tasks[name] if name in tasks.columns else (1 if name == "stage" else None)
    judgments = tables["judgments"]
    cancelled = set(judgments.loc[cancelled_mask(judgments), "annotation_id"])
    columns = ["project", "task_id", "annotation_id", "annotator", "source"]
    spans = tables["spans"]
    spans = spans[~spans["annotation_id"].isin(cancelled)]
    rows = pd.concat([judgments[~cancelled_mask(judgments)].reindex(columns=columns), spans.reindex(columns=columns)])
    rows = rows.drop_duplicates("annotation_id").merge(fields, on=["project", "task_id"], how="inner")
    rows[RATER] = _raters(rows)
    labelled = spans.merge(rows[["annotation_id", EXAMPLE, RATER]], on="annotation_id", how="inner")
    return rows[[EXAMPLE, RATER, "source", "group", "stage"]], labelled


def _raters(rows: pd.DataFrame) -> list[str]:
    names = rater_names(rows)
    return [
        role_rater(name, group, stage) if source == HUMAN_SOURCE else str(source)
        for name, source, group, stage in zip(names, rows["source"].fillna(HUMAN_SOURCE), rows["group"],
                                              rows["stage"], strict=True)
    ]  # fmt: skip


@whole_project
def directed_span_section(data: ProjectData) -> Section | None:
    """Table 6's directed rows, when the project's texts have spans and groups or stages."""
    if data.spans.empty or not _has_roles(data.tasks):
        return None
    frames, projects = _frames(data)
    parts = [_role_rows(tables) for tables in frames]
    annotations = pd.concat([part[0] for part in parts], ignore_index=True)
    spans = pd.concat([part[1] for part in parts], ignore_index=True)
    table, pairwise = directed_span_table(spans, annotations)
    if table.empty:
        return None
    blocks: list[Block] = [
        Paragraph(
            "As in HotelCheckSpan Table 6, on the texts annotated in the last stage: each row is a set of pairs of "
            "raters, the left side the reference and the right side the hypothesis. P (precision) is the share of "
            "what the right side marked that the left side also marked, R (recall) the share of what the left side "
            "marked that the right side found; swapping the sides swaps P and R and keeps F1. Each pair is compared "
            "span by span on the texts both annotated (a text only one side marked counts, one neither marked does "
            "not); P, R and F1 are each averaged over the row's pairs, so F1 is not the harmonic mean of the shown P "
            "and R. H (hard) needs the same label, S (soft) ignores it. A person annotating in two stages counts as "
            "two raters."
        )
    ]
    if len(projects) > 1:
        blocks.append(
            Paragraph(
                f"The groups' copies of a text live in different projects ({', '.join(map(str, projects))}); they are "
                "matched by the task's key."
            )
        )
    shown = table[list(SHOWN)].rename(columns=SHOWN)
    blocks.append(
        Table("directed_span_agreement", "Directed span agreement (HotelCheckSpan Table 6)", shown,
              data=with_project(table, data.project))
    )  # fmt: skip
    for row in table.itertuples():
        blocks.append(
            Paragraph(
                f"{row.comparison}: F1 {number(row.f1_hard, 2)} hard and {number(row.f1_soft, 2)} soft over "
                f"{plural(row.n_pairs, 'pair')} of raters; of what the {row.hypothesis} side marked, "
                f"{number(row.precision_soft, 2)} was also marked by the {row.reference} side (P, soft), which found "
                f"{number(row.recall_soft, 2)} of what the {row.reference} side marked (R, soft)."
            )
        )
    blocks.append(
        Table("directed_span_pairs", "Directed span agreement per pair", pairwise,
              data=with_project(pairwise, data.project), csv_only=True)
    )  # fmt: skip
    blocks.append(Paragraph("Every pair's scores are in directed_span_pairs.csv."))
    return Section("Directed span agreement (Table 6)", blocks)
