"""Report section "Can a judge replace an annotator?": every model version of the project (and
the judges of a loaded data set) calibrated against the human annotators.

The numbers come from :mod:`analysis.judges`: Krippendorff's alpha of the judge with each
annotator and with the human majority, beside the human ceiling (annotator with annotator on
the same units), with seeded bootstrap intervals from shared draws; the Alternative Annotator
Test at three epsilons; the majority of several judges and the agreement between them; and the
units where a judge and the human majority disagree most.
"""

from __future__ import annotations

import pandas as pd

from judgelab.analysis.judges import EPSILONS, JUDGE_MAJORITY, JudgeCalibration, answer_groups, calibrate
from judgelab.analysis.report.blocks import Block, Glance, Paragraph, Section, Table
from judgelab.analysis.report.data import (
    ProjectData,
    at_extreme,
    coefficient,
    is_nan,
    listed,
    number,
    percent,
    plural,
    short_table,
    two_places,
    with_project,
)
from judgelab.analysis.tables import HUMAN_SOURCE

SHOWN_DISAGREEMENTS = 3


def _name(judge: str) -> str:
    return judge.removeprefix("model:")


def _ci(value: float, low: float, high: float) -> str:
    if is_nan(value):
        return "n/a"
    if is_nan(low):
        return number(value, 2)
    return f"{number(value, 2)} [{number(low, 2)}, {number(high, 2)}]"


def _borrowed_humans(data: ProjectData) -> tuple[tuple[pd.DataFrame, pd.DataFrame] | None, object | None]:
    """Human rows of another project of the schema on this project's tasks, when it has none."""
    own = data.judgments["source"].fillna(HUMAN_SOURCE) == HUMAN_SOURCE
    if own.any() or (data.spans["source"].fillna(HUMAN_SOURCE) == HUMAN_SOURCE).any():
        return None, None
    tasks = pd.concat([data.judgments["task_id"], data.spans["task_id"]]).unique()
    for project, tables in data.peers.items():
        judgments = tables["judgments"]
        humans = judgments[
            (judgments["source"].fillna(HUMAN_SOURCE) == HUMAN_SOURCE) & judgments["task_id"].isin(tasks)
        ]
        spans = tables["spans"]
        human_spans = spans[(spans["source"].fillna(HUMAN_SOURCE) == HUMAN_SOURCE) & spans["task_id"].isin(tasks)]
        if humans["annotator"].nunique() >= 2 or human_spans["annotator"].nunique() >= 2:
            return (humans, human_spans), project
    return None, None


def project_calibrations(data: ProjectData) -> tuple[list[JudgeCalibration], object | None]:
    def compute() -> tuple[list[JudgeCalibration], object | None]:
        humans, borrowed = _borrowed_humans(data)
        groups = answer_groups(data.judgments, data.spans, data.meta, humans=humans)
        return calibrate(groups, n_boot=data.options.n_boot, seed=data.options.seed), borrowed

    return data.cached("judge_calibrations", compute)


def summary_table(calibrations: list[JudgeCalibration]) -> pd.DataFrame:
    return pd.DataFrame([c.summary for c in calibrations])


def _shown_summary(summary: pd.DataFrame) -> pd.DataFrame:
    def verdict(row: pd.Series, eps: float) -> str:
        omega = row.get(f"omega_{eps:g}")
        if not row["n_annotators_tested"] or is_nan(omega):
            return "not tested"
        return f"{'pass' if row[f'passes_{eps:g}'] else 'fail'} ({omega:.2f})"

    shown = pd.DataFrame(
        {
            "group": summary["group"],
            "judge": summary["judge"].map(_name),
            "shared units": summary["n_shared_units"].astype(int),
            "tasks it answered": summary["n_units"].astype(int),
            "judge vs human majority": [
                _ci(v, lo, hi)
                for v, lo, hi in zip(
                    summary["alpha_with_majority"], summary["majority_ci_low"], summary["majority_ci_high"], strict=True
                )  # fmt: skip
            ],
            "judge vs one human (mean)": [
                _ci(v, lo, hi)
                for v, lo, hi in zip(
                    summary["judge_human_alpha"], summary["judge_ci_low"], summary["judge_ci_high"], strict=True
                )  # fmt: skip
            ],
            "human vs human (ceiling)": [
                _ci(v, lo, hi)
                for v, lo, hi in zip(
                    summary["human_human_alpha"], summary["human_ci_low"], summary["human_ci_high"], strict=True
                )  # fmt: skip
            ],
            "intervals overlap": summary["intervals_overlap"].map({True: "yes", False: "no"}),
            "rho": summary["rho"],
        }
    )
    for eps in EPSILONS:
        shown[f"alt-test eps {eps:g}"] = [verdict(row, eps) for _, row in summary.iterrows()]
    if not (summary["anchored_share"] > 0).any():
        return shown
    shown["annotators saw its suggestions"] = [
        ("all: not independent" if all_answers else f"{percent(share)}: left out") if share else "no"
        for share, all_answers in zip(summary["anchored_share"], summary["all_answers"], strict=True)
    ]
    return shown


def _seen(row: pd.Series) -> bool:
    """Every human answer compared with this judge had started from its suggestion."""
    return bool(row["anchored_share"] > 0 and row["all_answers"])


def _judge_words(row: pd.Series, ranked: bool, tied: list[str] | None = None) -> str:
    """Who the alt-test ranks first; ``tied``: every judge at the same rho as shown (the first of
    them, ``row``, described after)."""
    if ranked and tied and len(tied) > 1:
        names = listed([_name(judge) for judge in tied])
        return f"the alt-test ranks {names} first, tied at rho {number(row['rho'], 2)}; {_name(row['judge'])}:"
    if ranked:
        return f"the best judge is {_name(row['judge'])} (rho {number(row['rho'], 2)}, the alt-test's ranking);"
    return f"no judge could be ranked by the alt-test; {_name(row['judge'])}:"


def _alpha_words(row: pd.Series) -> str:
    """The judge's alpha with one annotator against the annotators' own, with a comparison only
    when both exist (and 'within reach' when their intervals overlap)."""
    units = plural(int(row["n_shared_units"]), "unit")
    judge, ceiling = row["judge_human_alpha"], row["human_human_alpha"]
    if is_nan(judge) and is_nan(ceiling):
        return (
            f"its alpha with the annotators and theirs with each other cannot be computed on {units} answered by "
            "the judge and two or more annotators"
        )
    judge_text = _ci(judge, row["judge_ci_low"], row["judge_ci_high"])
    ceiling_text = _ci(ceiling, row["human_ci_low"], row["human_ci_high"])
    if is_nan(judge):
        return f"its alpha with one annotator cannot be computed ({units} shared); the annotators reach {ceiling_text}"
    if is_nan(ceiling):
        return (
            f"it agrees with one annotator at alpha {judge_text} on {units}; the annotators' agreement with each "
            "other cannot be computed there, so there is no ceiling to compare with"
        )
    if row["intervals_overlap"] and not is_nan(row["judge_ci_low"]):
        relation = "within reach of"
    else:
        relation = "below" if judge < ceiling else "above"
    return (
        f"it agrees with one annotator at alpha {judge_text}, {relation} the annotators' agreement with each other, "
        f"{ceiling_text}, on {units}"
    )


def _passes_from(row: pd.Series) -> float | None:
    """The smallest epsilon at which the judge passes the alt-test (None: it passes at none)."""
    return min((eps for eps in EPSILONS if row[f"passes_{eps:g}"]), default=None)


def _alt_test_words(row: pd.Series) -> str:
    """The alt-test's verdict, or why it was not run."""
    if not row["n_annotators_tested"]:
        units = plural(int(row["max_annotator_units"]), "unit")
        return (
            f"the alt-test is not run: each annotator shares at most {units} with another annotator and the judge, "
            f"the test needs {int(row['alt_test_needs'])}"
        )
    passes_from = _passes_from(row)
    tested = plural(int(row["n_annotators_tested"]), "annotator")
    if passes_from is not None:
        return f"it passes the alt-test from epsilon {passes_from:g} ({tested} tested)"
    return f"it fails the alt-test at every epsilon up to {max(EPSILONS):g} ({tested} tested)"


def _group_sentences(summary: pd.DataFrame) -> list[Paragraph]:
    """One short verdict per group: the best independent judge, its alpha against the ceiling and
    the alt-test; judges whose suggestions the annotators saw are named apart."""
    out = []
    lenient = []
    for group, rows in summary.groupby("group", sort=False):
        independent = rows[~rows.apply(_seen, axis=1)].sort_values("rho", ascending=False, kind="stable")
        text = f"{group}: "
        if independent.empty:
            text += "every judge here was compared with annotators who had seen its suggestions, so none is judged."
            out.append(Paragraph(text))
            continue
        tested = independent[independent["n_annotators_tested"] > 0]
        best = (tested if not tested.empty else independent).iloc[0]
        ceiling = best["human_human_alpha"]
        loose = f"passes_{max(EPSILONS):g}"
        tied = list(tested.loc[at_extreme(tested["rho"], two_places).index, "judge"])
        words = _judge_words(best, ranked=not tested.empty, tied=tied)
        text += f"{words} {_alpha_words(best)}; {_alt_test_words(best)}."
        passing = tested.iloc[1:]
        others = [_name(j) for j, ok in zip(passing["judge"], passing[loose], strict=True) if ok]
        if others:
            text += f" Also passing at epsilon {max(EPSILONS):g}: {', '.join(others)}."
        out.append(Paragraph(text))
        if not is_nan(ceiling) and ceiling < 0.667:
            lenient.append(str(group))
    seen = sorted({_name(j) for j in summary.loc[summary.apply(_seen, axis=1), "judge"]})
    if seen:
        out.append(
            Paragraph(
                f"Not judged: {', '.join(seen)}. Every annotator compared with it had started from its suggestion, so "
                "its high agreement measures how much the annotators kept, not whether it could replace them (see "
                "Suggestions and Anchoring); calibrate it on tasks annotated without its suggestions."
            )
        )
    if lenient:
        out.append(
            Paragraph(
                f"The annotators' own agreement is below Krippendorff's 0.667 on {', '.join(lenient)}: the alt-test is "
                "lenient there (a judge only has to be as close to the annotators as they are to each other), and "
                "the paper advises a smaller epsilon; read the alpha columns first."
            )
        )
    return out


def _alt_test_rows(calibrations: list[JudgeCalibration]) -> pd.DataFrame:
    rows = []
    for c in calibrations:
        for eps, test in c.alt_tests.items():
            for a in test.annotators:
                rows.append({"group": c.group, "judge": c.judge, "epsilon": eps, "annotator": a.annotator,
                             "n_items": a.n_items, "rho_f": a.rho_f, "rho_h": a.rho_h, "mean_d": a.mean_d,
                             "t": a.statistic, "p_value": a.p_value, "p_by": a.p_adjusted, "rejected": a.rejected,
                             "omega": test.omega, "rho": test.rho})  # fmt: skip
    return pd.DataFrame(rows)


def judges_section(data: ProjectData) -> Section | None:
    if not data.model_sources:
        return _no_judge_section(data)
    calibrations, borrowed = project_calibrations(data)
    if not calibrations:
        return None
    summary = summary_table(calibrations)
    blocks: list[Block] = [
        Paragraph(
            "Can a model replace one of the annotators? Each model version is a judge, compared with the human "
            "annotators on the same units: Krippendorff's alpha (nominal for choices and yes/no decisions, "
            "ordinal for rating scales) of the judge with the human majority and with one annotator at a time "
            "(the mean over annotators), next to the human ceiling, the mean alpha of two annotators on the units "
            "the judge answered. The bracketed intervals are 95% percentile bootstrap intervals over units (the "
            f"report's seed, {data.options.n_boot} draws shared by all comparisons). A judge whose interval "
            "overlaps the ceiling's is not shown to be worse than an annotator; one clearly below it is."
        ),
        Paragraph(
            "The alt-test (Calderon, Reichart and Dror, 2025) asks it directly: leaving out one annotator at a "
            "time, is the judge at least as close to the remaining annotators as the left-out one, on enough "
            "units, allowing a margin epsilon for the cost of an annotator? It passes when it wins against at "
            "least half of the annotators (omega >= 0.5, after a Benjamini-Yekutieli correction); rho, the share "
            "of units where the judge does at least as well, ranks judges. Epsilon is 0.1 for crowd workers, "
            "0.15 for skilled annotators and 0.2 for experts; pick the column that describes your annotators. "
            "Annotators with fewer than 30 units shared with another annotator and the judge are not tested."
        ),
    ]
    if borrowed is not None:
        blocks.append(
            Paragraph(
                f"This project has no human annotations, so its judges are compared with the annotators of project "
                f"{borrowed} on the tasks both have."
            )
        )
    if (summary["anchored_share"] > 0).any():
        blocks.append(
            Paragraph(
                "Annotators who started from a judge's own suggestion are not independent of it. Where at least 30 "
                "units keep two answers without it, the judge is compared with those answers only ('annotators saw "
                "its suggestions': the share left out); otherwise with all of them, and it is not judged."
            )
        )
    blocks += _group_sentences(summary)
    blocks += short_table(
        "judge_calibration", "Judges against the annotators (alpha with 95% intervals) and the alt-test",
        _shown_summary(summary), data.options.max_rows, data=with_project(summary, data.project),
    )  # fmt: skip
    subsections = [_alt_test_detail(calibrations, data), _between_judges(calibrations, data),
                   _disagreement_section(calibrations, data)]  # fmt: skip
    return Section(
        "Can a judge replace an annotator?", blocks, [s for s in subsections if s is not None], _judge_glances(summary)
    )


def _judge_glances(summary: pd.DataFrame) -> list[Glance]:
    """One row per judge: per group, the alt-test's verdict (or why it did not run) and its alpha
    beside the annotators'; a judge the annotators saw is 'not judged'."""
    out = []
    for judge, rows in summary.groupby("judge", sort=False):
        parts, omegas = [], []
        seen = [group for group, row in zip(rows["group"], rows.to_dict("records"), strict=True) if _seen(row)]
        for row in rows.to_dict("records"):
            row = pd.Series(row)
            if _seen(row):
                continue
            if not row["n_annotators_tested"]:
                verdict = f"alt-test not run ({plural(int(row['max_annotator_units']), 'shared unit')})"
            else:
                passes_from = _passes_from(row)
                verdict = f"passes from epsilon {passes_from:g}" if passes_from is not None else "fails the alt-test"
                omegas.append(float(row[f"omega_{max(EPSILONS):g}"]))
            if not (is_nan(row["judge_human_alpha"]) or is_nan(row["human_human_alpha"])):
                verdict += (
                    f", alpha {number(row['judge_human_alpha'], 2)} vs {number(row['human_human_alpha'], 2)} "
                    "between annotators"
                )
            parts.append(f"{row['group']}: {verdict}")
        if seen:
            parts.append(f"not judged on {', '.join(map(str, seen))} (the annotators started from its suggestions)")
        out.append(Glance("Judges", _name(str(judge)), "; ".join(parts), min(omegas) if omegas else None))
    return out


def _peer_judges(data: ProjectData) -> list[object]:
    """Other projects of the schema with model predictions on this project's tasks."""
    tasks = pd.concat([data.judgments["task_id"], data.spans["task_id"]]).unique()
    found = []
    for project, tables in data.peers.items():
        for frame in (tables["judgments"], tables["spans"]):
            models = frame[frame["source"].fillna(HUMAN_SOURCE).astype(str).str.startswith("model:")]
            if models["task_id"].isin(tasks).any():
                found.append(project)
                break
    return found


def _no_judge_section(data: ProjectData) -> Section | None:
    humans = data.human_judgments["annotator"].nunique() if not data.human_judgments.empty else 0
    span_humans = data.human_spans["annotator"].nunique() if not data.human_spans.empty else 0
    if max(humans, span_humans) < 2:
        return None
    peers = _peer_judges(data)
    if peers:
        return Section(
            "Can a judge replace an annotator?",
            [
                Paragraph(
                    f"This project has no model predictions of its own; the judges of project "
                    f"{', '.join(map(str, peers))} are compared with this project's annotators in that project's "
                    "report."
                )
            ],
        )
    return Section(
        "Can a judge replace an annotator?",
        [
            Paragraph(
                "This project has human annotations but no model predictions (no LLM campaign), so no judge can be "
                "calibrated against the annotators. Pre-annotate the tasks (judgelab preannotate), or load a data "
                "set's model outputs, and the report will compare each model with the annotators here."
            )
        ],
    )


def _alt_test_detail(calibrations: list[JudgeCalibration], data: ProjectData) -> Section | None:
    rows = _alt_test_rows(calibrations)
    if rows.empty:
        return None
    main = rows[rows["epsilon"] == max(EPSILONS)]
    shown = main.assign(judge=main["judge"].map(_name), rejected=main["rejected"].map({True: "yes", False: "no"}))[
        ["group", "judge", "annotator", "n_items", "rho_f", "rho_h", "t", "p_value", "p_by", "rejected"]
    ].rename(columns={"rho_f": "judge wins (rho_f)", "rho_h": "annotator wins (rho_h)", "p_by": "p (BY)",
                      "rejected": "judge wins the test"})  # fmt: skip
    skipped = sum(len(test.skipped) for c in calibrations for test in list(c.alt_tests.values())[:1])
    text = (
        f"Per left-out annotator at epsilon {max(EPSILONS):g}: on how many units (n_items), the share where the "
        "judge is at least as close to the other annotators (rho_f) and where the annotator is (rho_h; ties count "
        "for both), the one-sided t statistic and p-value, and the p-value after the Benjamini-Yekutieli "
        "correction; 'judge wins the test' when its null hypothesis is rejected. judge_alt_test.csv has every epsilon."
    )
    if skipped:
        text += f" {plural(skipped, 'annotator-and-group pair')} had too few shared units and were not tested."
    return Section(
        "Alt-test per annotator",
        [
            Paragraph(text),
            *short_table(
                "judge_alt_test",
                "Alt-test per left-out annotator",
                shown,
                data.options.max_rows,
                data=with_project(rows, data.project),
            ),
        ],  # fmt: skip
    )


def _between_judges(calibrations: list[JudgeCalibration], data: ProjectData) -> Section | None:
    pairs = pd.concat([c.pairs for c in calibrations], ignore_index=True) if calibrations else pd.DataFrame()
    pairs = pairs[pairs["n_units"] > 0] if not pairs.empty else pairs
    between = pairs[pairs["comparison"] == "judge – judge"] if not pairs.empty else pairs
    blocks: list[Block] = []
    if not between.empty:
        shown = between.assign(
            rater_a=between["rater_a"].map(_name),
            rater_b=between["rater_b"].map(_name),
            alpha=[
                _ci(v, lo, hi)
                for v, lo, hi in zip(between["alpha"], between["ci_low"], between["ci_high"], strict=True)
            ],  # fmt: skip
        )[["group", "rater_a", "rater_b", "alpha", "n_units"]]
        mean = between.groupby("group")["alpha"].mean()
        blocks.append(
            Paragraph(
                "Agreement between the judges (alpha, 95% interval): judges that agree with each other much more "
                "than with the annotators share a bias rather than the annotators' view. Mean alpha between "
                "judges: " + "; ".join(f"{g} {coefficient(v, 2)}" for g, v in mean.items()) + f". The row "
                f"'{JUDGE_MAJORITY}' in the table above is the majority answer of the judges (median for ratings), "
                "tested as one more judge."
            )
        )
        blocks += short_table("judge_agreement", "Judge against judge", shown, data.options.max_rows,
                              data=with_project(between, data.project))  # fmt: skip
    pairs_shown = pairs.assign(judge=pairs["judge"].map(_name)) if not pairs.empty else pairs
    if not pairs.empty:
        blocks.append(
            Paragraph(
                "Every compared pair (judge with each annotator, the majority, annotators with each other) "
                "is in judge_pairs.csv."
            )  # fmt: skip
        )
        blocks.append(Table("judge_pairs", "Every compared pair", pairs_shown,
                            data=with_project(pairs, data.project), csv_only=True))  # fmt: skip
    return Section("Several judges", blocks) if blocks else None


def _disagreement_section(calibrations: list[JudgeCalibration], data: ProjectData) -> Section | None:
    frames = [
        c.disagreements.assign(group=c.group, judge=_name(c.judge))
        for c in calibrations
        if not c.disagreements.empty and c.judge != JUDGE_MAJORITY
    ]
    if not frames:
        return None
    table = pd.concat(frames, ignore_index=True)[
        ["group", "judge", "task_id", "item", "judge_answer", "human_answers", "disagreement"]
    ]
    return Section(
        "Where judges and annotators disagree most",
        [
            Paragraph(
                "For each judge and group, the units to look at first: choices where the most annotators gave "
                "another answer than the judge (disagreement = the share of annotators who did; 1 means all of "
                "them), ratings furthest from the annotators' mean (disagreement = the distance in points). The "
                f"page shows {SHOWN_DISAGREEMENTS} per judge and group; judge_disagreements.csv has up to 10."
            ),
            *short_table(
                "judge_disagreements",
                "Largest disagreements between a judge and the annotators",
                table.groupby(["group", "judge"], sort=False).head(SHOWN_DISAGREEMENTS),
                data.options.max_rows,
                data=with_project(table, data.project),
            ),  # fmt: skip
        ],
    )


__all__ = ["judges_section", "project_calibrations"]
