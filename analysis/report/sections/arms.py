"""Report section "Anchoring: did the suggestions bias the annotators?": the suggested arm
against the blind arm (:mod:`analysis.arms`), with how many tasks each arm has and what that
number can detect.

The arms may live in one project or in one project each (``design arms --split-projects``):
the section gathers the tasks with an arm from the project and the other projects of its schema.
"""

from __future__ import annotations

import pandas as pd

from judgelab.analysis.arms import MIN_ARM_TASKS, ArmComparison, compare_arms
from judgelab.analysis.report.blocks import Block, Paragraph, Section, Table
from judgelab.analysis.report.data import ProjectData, is_nan, number, p_value, plural, with_project
from judgelab.configs.arms import ARM_FIELD


def _has_arms(tasks: pd.DataFrame) -> bool:
    return ARM_FIELD in tasks.columns and tasks[ARM_FIELD].notna().any()


def project_arms(data: ProjectData) -> ArmComparison | None:
    def compute() -> ArmComparison | None:
        if not _has_arms(data.tasks):
            return None
        parts = [{"tasks": data.tasks, "judgments": data.judgments, "spans": data.spans}]
        parts += [tables for tables in data.peers.values() if _has_arms(tables["tasks"])]
        combined = {name: pd.concat([p[name] for p in parts], ignore_index=True) for name in parts[0]}
        return compare_arms(
            combined["tasks"], combined["judgments"], combined["spans"], data.meta,
            n_boot=data.options.n_boot, seed=data.options.seed,
        )  # fmt: skip

    return data.cached("arms", compute)


def _digits(kind: str) -> int:
    return 1 if kind == "time" else 2


def _shown(comparisons: pd.DataFrame) -> pd.DataFrame:
    def fmt(row: pd.Series, column: str) -> str:
        return number(row[column], _digits(row["kind"]))

    return pd.DataFrame(
        {
            "group": comparisons["group"],
            "measure": comparisons["measure"],
            "suggested arm": [fmt(r, "suggested") for _, r in comparisons.iterrows()],
            "blind arm": [fmt(r, "blind") for _, r in comparisons.iterrows()],
            "difference [95% CI]": [
                f"{fmt(r, 'difference')} [{fmt(r, 'ci_low')}, {fmt(r, 'ci_high')}]" for _, r in comparisons.iterrows()
            ],
            "p": [p_value(v) for v in comparisons["p_value"]],
            "tasks (suggested / blind)": [
                f"{int(a)} / {int(b)}" for a, b in zip(comparisons["n_suggested"], comparisons["n_blind"], strict=True)
            ],
            "detectable at 80% power": [fmt(r, "mdd80") for _, r in comparisons.iterrows()],
        }
    )


def _sentence(row: pd.Series) -> str:
    digits = _digits(row["kind"])
    means = [f"{number(row[arm], digits)} in the {arm} arm" for arm in ("suggested", "blind") if not is_nan(row[arm])]
    text = f"{row['group']}, {row['measure']}: {' against '.join(means) or 'no value in either arm'}"
    if is_nan(row["ci_low"]):
        text += "."
    else:
        text += (
            f" (difference {number(row['difference'], digits)}, 95% interval {number(row['ci_low'], digits)} to "
            f"{number(row['ci_high'], digits)}"
            + (f", {p_value(row['p_value'])})." if not is_nan(row["p_value"]) else ").")
        )
    if is_nan(row["mdd80"]):
        return text + (
            f" The arms are too small to say more: each needs {MIN_ARM_TASKS} tasks or more with a value "
            f"(here {int(row['n_suggested'])} and {int(row['n_blind'])})."
        )
    significant = not is_nan(row["ci_low"]) and (row["ci_low"] > 0 or row["ci_high"] < 0)
    if significant:
        return text + " The arms differ by more than chance would make them."
    return text + (
        f" With {int(row['n_suggested'])} and {int(row['n_blind'])} tasks (Welch's df {number(row['df'], 1)}), only a "
        f"difference of about {number(row['mdd80'], digits)} or more would be found 4 times in 5; a smaller one may "
        "be there unseen."
    )


def arms_section(data: ProjectData) -> Section | None:
    comparison = project_arms(data)
    if comparison is None:
        return None
    counts = comparison.counts.set_index("arm")
    n_s, n_b = int(counts.at["suggested", "n_tasks"]), int(counts.at["blind", "n_tasks"])
    design = (
        "every task is in both arms (copies paired by arm_of), so the arms can be compared task by task"
        if comparison.paired
        else "each task is in one arm"
    )
    source = comparison.suggestion_source
    blocks: list[Block] = [
        Paragraph(
            f"The study assigned tasks to two arms: annotators saw the model's suggestion on the suggested arm's "
            f"tasks and never on the blind arm's ({plural(n_s, 'annotated task')} and {plural(n_b, 'annotated task')}"
            f"; {design}). If the suggestions pulled the annotators, the suggested arm agrees more with the model, "
            f"and possibly less with the reference answers or with the blind arm. Suggestions came from "
            f"{source.removeprefix('model:') if source else 'an unknown model'}."
        ),
        Paragraph(
            "Each measure is averaged per task (the task is the unit: its annotators are not independent), and the "
            "arms are compared with Welch's t interval. Agreement is the share of a task's annotators who gave the "
            "reference or model answer (higher is closer); for ratings, distance is the mean absolute difference in "
            "scale points (lower is closer). 'detectable at 80% power' is the smallest difference this many tasks "
            "would find four times in five at the 5% level: smaller effects cannot be ruled out."
        ),
    ]
    for note in comparison.notes:
        blocks.append(Paragraph(f"Note: {note}."))
    if not comparison.comparisons.empty:
        blocks.append(
            Table(
                "arm_comparison",
                "Suggested arm against blind arm, per task",
                _shown(comparison.comparisons),
                data=with_project(comparison.comparisons, data.project),
            )  # fmt: skip
        )
        for _, row in comparison.comparisons.iterrows():
            blocks.append(Paragraph(_sentence(row)))
    if not comparison.agreement.empty:
        blocks += _agreement_per_arm(data, comparison.agreement)
    return Section("Anchoring: did the suggestions bias the annotators?", blocks)


def _agreement_per_arm(data: ProjectData, agreement: pd.DataFrame) -> list[Block]:
    """The annotators' agreement within each arm (alpha with its interval), and why suggestions
    usually raise it."""
    shown = pd.DataFrame(
        {
            "group": agreement["group"],
            "arm": agreement["arm"],
            "alpha [95% CI]": [
                f"{number(a, 2)} [{number(lo, 2)}, {number(hi, 2)}]"
                for a, lo, hi in zip(agreement["alpha"], agreement["ci_low"], agreement["ci_high"], strict=True)
            ],
            "n_units": agreement["n_units"],
        }
    )
    return [
        Paragraph(
            "Agreement between annotators within each arm: Krippendorff's alpha (nominal or ordinal) of two "
            "annotators, averaged over the pairs, with a bootstrap interval over units. Suggestions usually raise "
            "it: annotators who start from the same suggestion agree more, whether or not the suggestion is right."
        ),
        Table("arm_agreement", "Agreement between annotators per arm", shown,
              data=with_project(agreement, data.project)),
    ]  # fmt: skip


__all__ = ["arms_section", "project_arms"]
