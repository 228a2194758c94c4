"""Models the report's numbers cannot tell apart are not ranked in its words.

The models' sentences name the model that agrees most with the human majority and the one that
agrees least, and the model that comes closest to the human mean score. Here one judge is a copy
of another (the same answers under another name, as two runs of one prompt at temperature 0
give): the two are tied on every figure, and the sentences say so, with each figure once and the
third judge, which answers otherwise, named on its own. Then every model but one is tied, and a
tie at the bottom is named together too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
from test_report_sentences import SUMMARY, Study, make_study, sentences

from judgelab.analysis.report import build_report
from judgelab.analysis.report.data import ReportOptions
from judgelab.configs.schema import get_schema

STUDY = Study("hotel_spans", 40, 3, True, judges=2)
SUMMARY_START = SUMMARY[:20]


def with_copied_judge(tables: dict[str, pd.DataFrame], renamed: dict[str, str], copies: dict[str, str]):
    """The study's tables with judges renamed (``renamed``: old -> new source) and ``copies``
    (new source -> the source whose answers it repeats, after renaming)."""
    out = dict(tables)
    for name in ("judgments", "spans"):
        table = tables[name].assign(source=tables[name]["source"].replace(renamed))
        extra = []
        for new, old in copies.items():
            rows = table[table["source"] == old]
            extra.append(rows.assign(source=new, annotation_id=rows["annotation_id"].astype(str) + "-" + new))
        out[name] = pd.concat([table, *extra], ignore_index=True)
    return out


def report(tables: dict[str, pd.DataFrame], folder: Path, schema: str = STUDY.schema) -> tuple[list[str], Path]:
    """The report's prose and its folder."""
    schemas = {schema: get_schema(schema).meta}
    paths = build_report(tables, schemas, folder, options=ReportOptions(n_boot=20))
    return sentences(paths.markdown.read_text(encoding="utf-8")), paths.markdown.parent


def sentence(prose: list[str], start: str, about: str) -> str:
    """The one sentence that starts with ``start`` and speaks of ``about``."""
    (found,) = [s for s in prose if s.startswith(start) and about in s]
    return found


def test_a_judge_and_its_copy_are_named_together_and_the_other_on_its_own(tmp_path: Path) -> None:
    tables, _ = make_study(STUDY)
    tables = with_copied_judge(tables, {"model:judge-1": "model:judge-2"}, {"model:judge-1": "model:judge-0"})
    prose, folder = report(tables, tmp_path)
    choices = pd.read_csv(folder / "models_vs_humans.csv")
    box = choices[choices["item"] == "no_errors"].set_index("model")
    same, other = box.loc["model:judge-0"], box.loc["model:judge-2"]
    assert box.loc["model:judge-1", "agreement_with_majority"] == same["agreement_with_majority"]
    assert other["agreement_with_majority"] != same["agreement_with_majority"]  # the study's seed gives a ranking

    text = sentence(prose, "no_errors:", "human majority")
    pair = "model:judge-0 and model:judge-1 agree with the human majority equally often, each on "
    share = f"{same['agreement_with_majority']:.0%}"
    kappa = f"Cohen's kappa {same['cohen_kappa']:.3f}"
    other_share = f"{other['agreement_with_majority']:.0%}"
    if same["agreement_with_majority"] > other["agreement_with_majority"]:
        assert text.startswith(f"no_errors: {pair}{share} of {int(same['n_units'])} units ({kappa})"), text
        assert f"; model:judge-2 least, on {other_share}" in text, text
    else:
        assert text.startswith(f"no_errors: model:judge-2 agrees most with the human majority, on {other_share}"), text
        assert f"; model:judge-0 and model:judge-1 least, on {share}." in text, text
    assert "agrees most" not in text.replace("model:judge-2 agrees most", ""), text

    ratings = pd.read_csv(folder / "models_vs_humans_ratings.csv").set_index("model")
    same, other = ratings.loc["model:judge-0"], ratings.loc["model:judge-2"]
    text = sentence(prose, "impression:", "human mean")
    if same["mean_abs_difference"] < other["mean_abs_difference"]:
        assert text.startswith(
            "impression: model:judge-0 and model:judge-1 come equally close to the human mean, each "
            f"{same['mean_abs_difference']:.2f} points away on average over {int(same['n_units'])} tasks"
        ), text
    else:
        assert text.startswith("impression: model:judge-2 comes closest to the human mean, "), text


def test_models_tied_at_the_bottom_are_named_together(tmp_path: Path) -> None:
    tables, _ = make_study(STUDY)
    source = tables["judgments"]
    box = source[(source["item"] == "no_errors") & source["source"].str.startswith("model:")]
    # which judge ticks the box more often is the seed's: the better one (by the share of
    # agreement the report finds) is copied twice below the other, or the other twice
    first = report(tables, tmp_path / "first")[1]
    shares = pd.read_csv(first / "models_vs_humans.csv").query("item == 'no_errors'").set_index("model")
    assert not box.empty and len(shares) == 2
    best = shares["agreement_with_majority"].idxmax()
    worst = shares["agreement_with_majority"].idxmin()
    assert best != worst
    tables = with_copied_judge(tables, {}, {"model:judge-9": worst})
    prose, _ = report(tables, tmp_path / "second")
    text = sentence(prose, "no_errors:", "human majority")
    low = f"{shares.loc[worst, 'agreement_with_majority']:.0%}"
    assert text.startswith(f"no_errors: {best} agrees most with the human majority"), text
    tied = (f"; {worst} and model:judge-9 least, on {low}.", f"; model:judge-9 and {worst} least, on {low}.")
    assert any(t in text for t in tied), text
    assert not re.search(r"kappa [-\d.]+\)?\. A single", text), "a kappa after a tie: whose?"


def summariser_copied(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The Likert study's tables with model m1's tasks made copies of m0's (another task id, the
    same scores by the same annotators): every mean and every alpha is the same for both."""
    tasks, judgments = tables["tasks"], tables["judgments"]
    m0 = tasks[tasks["model"] == "m0"]
    scored = judgments[judgments["task_id"].isin(m0["task_id"])]
    return {
        "tasks": pd.concat([m0, m0.assign(task_id=m0["task_id"] + 1000, model="m1")], ignore_index=True),
        "judgments": pd.concat(
            [scored, scored.assign(task_id=scored["task_id"] + 1000, annotation_id=scored["annotation_id"] + "-m1")],
            ignore_index=True,
        ),
        "spans": tables["spans"],
    }


def test_two_summarisers_scored_alike_share_the_highest_and_the_lowest_mean(tmp_path: Path) -> None:
    """The Likert rubric per summarising model: model m1's tasks are copies of m0's, so every mean
    and every alpha is the same for both."""
    study = Study("likert_rubric_es", 40, 3, True, judges=1)
    tables, _ = make_study(study)
    copied = summariser_copied(tables)
    prose, folder = report(copied, tmp_path, study.schema)
    means = pd.read_csv(folder / "likert_mean_scores.csv")
    for item in ("Coherence", "Fluency", "5W"):
        text = sentence(prose, f"{item}: ", "mean for")
        per_model = means[(means["item"] == item) & (means["scope"] != "overall")].drop_duplicates("group")
        assert set(per_model["group"]) == {"m0", "m1"} and per_model["mean"].nunique() == 1, per_model
        assert text == f"{item}: the same mean for every model ({per_model['mean'].iloc[0]:.2f}).", text
    assert not [s for s in prose if "highest mean for" in s], prose
    (agreement,) = [s for s in prose if s.startswith("Lowest: ")]
    by_model = pd.read_csv(folder / "likert_agreement_by_model.csv")
    lowest = by_model.loc[by_model["krippendorff_alpha_ordinal"].idxmin()]
    low = f"{lowest['item']} on m0 summaries and {lowest['item']} on m1 summaries"
    n = int(lowest["n_units"])
    assert agreement.startswith(
        f"Lowest: {low} (alpha {lowest['krippendorff_alpha_ordinal']:.3f}, {n} summaries each); highest: "
    ), agreement


def test_label_mix_ups_made_as_often_are_named_together(tmp_path: Path) -> None:
    """Two annotators mark the same stretch of each summary: on one task Misleading against
    Incorrect, on another Not Checkable against Incorrect, on a third the same label."""
    study = Study("hotel_spans", 3, 2, True)
    tables, _ = make_study(study)
    marked = [(1, "Misleading", "Incorrect"), (2, "Not Checkable", "Incorrect"), (3, "Misleading", "Misleading")]
    spans = [
        {"project": 1, "task_id": task, "annotation_id": f"{who}-{task}", "annotator": who, "source": "human",
         "field": "summary", "start": 0, "end": 20, "text": SUMMARY_START, "label": label, "note": None}
        for task, first, second in marked
        for who, label in (("ann0", first), ("ann1", second))
    ]  # fmt: skip
    judgments = tables["judgments"][tables["judgments"]["item"] != "no_errors"]
    prose, _ = report({"tasks": tables["tasks"], "judgments": judgments, "spans": pd.DataFrame(spans)}, tmp_path)
    (text,) = [s for s in prose if s.startswith("Of the ")]
    assert "carry the same label" in text, text
    mix_ups = re.search(r"The most frequent mix-ups are (.+) against (.+) and (.+) against (.+) \(1 each\)\.", text)
    assert mix_ups, text
    pairs = {frozenset(mix_ups.group(1, 2)), frozenset(mix_ups.group(3, 4))}
    assert pairs == {frozenset({"Misleading", "Incorrect"}), frozenset({"Not Checkable", "Incorrect"})}, text


def test_annotators_whose_means_shift_alike_are_named_together(tmp_path: Path) -> None:
    """The augmentation study's drift: an annotator's copy (the same answers at the same times under
    another name) shifts exactly as the annotator does, so the largest shift is at least theirs
    twice, and the sentence names every shift as large, each once."""
    study = Study("augmentation_quality", 60, 2, True, judges=1)
    tables, _ = make_study(study)
    first = report(tables, tmp_path / "first", study.schema)
    judgments = tables["judgments"]
    humans = judgments[judgments["source"] == "human"]
    who = sorted(humans["annotator"].unique())[0]
    mine = humans[humans["annotator"] == who]
    copied = dict(tables, judgments=pd.concat(
        [judgments, mine.assign(annotator=f"{who}-copy", annotation_id=mine["annotation_id"] + "-copy")],
        ignore_index=True,
    ))  # fmt: skip
    for (prose, folder), copy in ((first, False), (report(copied, tmp_path / "second", study.schema), True)):
        drift = pd.read_csv(folder / "annotator_drift.csv").dropna(subset=["change_vs_first_block"])
        later = drift[drift["block"] > 0]
        size = later["change_vs_first_block"].abs().round(2)
        tied = later[size == size.max()]
        (text,) = [s for s in prose if "shift" in s and "first block and block" in s]
        if len(tied) == 1:
            row = tied.iloc[0]
            assert text.startswith(f"The largest shift: {row['annotator']}'s mean {row['item']} moved by "), text
        else:
            assert text.startswith(f"{len(tied)} means shifted the most, by {size.max():.2f} points each: "), text
            for _, row in tied.head(4).iterrows():
                clause = f"{row['annotator']}'s mean {row['item']} moved by {row['change_vs_first_block']:+.2f} "
                assert text.count(clause) == 1, (clause, text)
        if copy:
            assert len(tied) >= 2 and {who, f"{who}-copy"} <= set(tied["annotator"]), tied


def test_the_pilot_pair_says_when_other_pairs_share_as_many_tasks(tmp_path: Path) -> None:
    """The augmentation study's pilot compares the pair of annotators sharing the most tasks. With
    every annotator on every task all three pairs share them all: the sentence says the pair is
    the first by name of three, not that it shares the most. With one annotator on fewer tasks,
    one pair shares the most."""
    study = Study("augmentation_quality", 12, 3, True, judges=1)
    tables, _ = make_study(study)
    judgments = tables["judgments"]
    humans = judgments[judgments["source"] == "human"]
    names = sorted(humans["annotator"].unique())
    assert len(names) == 3

    def pilot_sentence(tables: dict[str, pd.DataFrame], folder: Path) -> str:
        prose, _ = report(tables, folder, study.schema)
        (text,) = [s for s in prose if s.startswith("The guideline's pilot has two annotators")]
        return text

    text = pilot_sentence(tables, tmp_path / "all")
    assert f"here they are {names[0]} and {names[1]}, the first by name of the 3 pairs sharing the most tasks," in text

    last = humans[humans["annotator"] == names[2]]
    dropped = last[last["task_id"].isin(sorted(last["task_id"].unique())[:4])]
    fewer = dict(tables, judgments=judgments.drop(dropped.index))
    text = pilot_sentence(fewer, tmp_path / "fewer")
    assert f"here they are {names[0]} and {names[1]}, the pair sharing the most tasks," in text, text


def test_cells_alike_on_the_front_page_are_not_ranked(tmp_path: Path) -> None:
    """A report cut by the summarising model: its front page gives, per criterion, the lowest cell's
    figure and the highest cell. With m1's summaries copies of m0's both cells print the same alpha,
    and the front page says so rather than calling one the lowest and the other the highest."""
    study = Study("likert_rubric_es", 40, 3, True, judges=1)
    tables, _ = make_study(study)
    schemas = {study.schema: get_schema(study.schema).meta}
    for name, data in (("apart", tables), ("alike", summariser_copied(tables))):
        folder = build_report(data, schemas, tmp_path / name, options=ReportOptions(n_boot=20, by=("model",)))
        glance = pd.read_csv(folder.markdown.parent / "at_a_glance.csv")
        by_cell = pd.read_csv(folder.markdown.parent / "agreement_by_cell.csv")
        rows = glance[glance["topic"] == "Agreement"]
        assert len(rows) >= 3, glance
        # each cell's alpha as the table prints it (two decimals; a leading ' keeps a spreadsheet
        # from reading a minus sign as a formula)
        printed = {
            item: by_cell.set_index("model")[item].astype(str).str.lstrip("'").str.split(" ").str[0]
            for item in rows["subject"]
        }
        for _, row in rows.iterrows():
            answer, alphas = row["answer"], printed[row["subject"]]
            if alphas["m0"] == alphas["m1"]:
                assert answer.startswith(f"2 cells; the same in every cell ({alphas['m0']}); in m"), answer
                assert "lowest" not in answer and "highest" not in answer, answer
            else:
                low, high = sorted(alphas.index, key=lambda cell: float(alphas[cell]))
                assert answer.startswith(f"2 cells; lowest in {low}: "), answer
                assert answer.endswith(f"; highest in {high}: {alphas[high]}"), answer
        if name == "alike":
            assert all(printed[item]["m0"] == printed[item]["m1"] for item in printed), printed


def test_the_most_common_count_of_annotations_names_every_count_as_common(tmp_path: Path) -> None:
    """Completion, with no overlap target recorded: the most common number of annotations per
    annotated task. With one annotator's annotations gone from half the tasks, half the tasks have
    three and half two: both numbers are named. With no task annotated there is no such number."""
    study = Study("likert_rubric_es", 12, 3, True, judges=1)
    tables, _ = make_study(study)
    judgments = tables["judgments"]
    humans = judgments[judgments["source"] == "human"]
    last = humans[humans["annotator"] == sorted(humans["annotator"].unique())[-1]]
    gone = last[last["task_id"].isin(sorted(last["task_id"].unique())[:6])]
    prose, _ = report(dict(tables, judgments=judgments.drop(gone.index)), tmp_path / "half", study.schema)
    (text,) = [s for s in prose if s.startswith("Completion: ")]
    assert text.startswith(
        "Completion: of the 12 tasks, 0 have no human annotation yet, 0 have one, 6 two and 6 three"
    ), text
    assert text.endswith("; the most common numbers of annotations per annotated task are 2 and 3, on 6 tasks each."), (
        text
    )

    prose, _ = report(tables, tmp_path / "all", study.schema)
    (text,) = [s for s in prose if s.startswith("Completion: ")]
    assert text.endswith("; the most common number of annotations per annotated task is 3."), text

    nobody = Study("hotel_spans", 6, 0, True, judges=2)
    prose, _ = report(make_study(nobody)[0], tmp_path / "none", nobody.schema)
    (text,) = [s for s in prose if s.startswith("Completion: ")]
    assert "6 have no human annotation yet" in text and "most common" not in text, text
    assert text.endswith("annotations-per-task setting)."), text
