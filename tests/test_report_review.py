"""The report's review-loop sections on tidy tables: 'Suggestions' (what reviewers did with each
model's suggestions), 'Anchoring' (suggested vs blind arm) and 'Can a judge replace an annotator?'
(judge calibration and the alt-test), on the benchmark's synthetic study (small), on tables
written before judgelab kept Label Studio's suggestion columns, and on the published StorySumm
judges against the evaluation-interface annotators (skipped when ../shared/data is absent)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest
from shared_data import SHARED_DATA

from judgelab.analysis.alt_test import alt_tests
from judgelab.analysis.judges import answer_groups
from judgelab.analysis.report import build_report
from judgelab.analysis.report.data import ProjectData, ReportOptions
from judgelab.analysis.report.sections.suggestions import suggestion_headline
from judgelab.analysis.review import outcome_counts, review_table
from judgelab.configs.schema import all_schemas

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = {name: schema.meta for name, schema in all_schemas().items()}
OPTIONS = ReportOptions(n_boot=200)


def _bench():
    spec = importlib.util.spec_from_file_location("report_review_bench", ROOT / "bench" / "report_review.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def study():
    return _bench().synthetic_tables(240, seed=1)


@pytest.fixture(scope="module")
def report(study, tmp_path_factory):
    out = tmp_path_factory.mktemp("review-report")
    paths = build_report(study, SCHEMAS, out, options=OPTIONS)
    return paths, paths.markdown.read_text(encoding="utf-8")


def test_the_three_sections_are_in_the_report(report):
    _, markdown = report
    for title in ("## Suggestions", "Anchoring: did the suggestions bias the annotators?",
                  "Can a judge replace an annotator?", "Alt-test per annotator"):  # fmt: skip
        assert title in markdown


def test_suggestion_counts_in_the_csv_are_the_review_tables(report, study):
    paths, _ = report
    csv = pd.read_csv(paths.csv["suggestion_outcomes"])
    overall = csv[csv["category"] == "(all)"].set_index("unit")
    expected = outcome_counts(review_table(study["judgments"], study["spans"]), ["unit"]).set_index("unit")
    for unit in ("item", "span"):
        for column in ("n_kept", "n_edited", "n_deleted", "n_added"):
            assert overall.at[unit, column] == expected.at[unit, column]
    assert expected.at["span", "n_deleted"] > 0 and expected.at["span", "n_added"] > 0


def test_headline_names_the_model_and_the_shares(study):
    data = ProjectData(1, "hotel_spans", SCHEMAS["hotel_spans"], study["tasks"], study["judgments"], study["spans"])
    line = suggestion_headline(data)
    assert line.startswith("Suggestions (model judgelab-llm-A, ")
    assert "kept" in line and "deleted" in line and "reviewers added" in line
    humans = {k: f[f["source"] == "human"].assign(parent_prediction=None) for k, f in study.items() if k != "tasks"}
    human_only = ProjectData(1, "hotel_spans", SCHEMAS["hotel_spans"], study["tasks"], humans["judgments"],
                             humans["spans"])  # fmt: skip
    assert suggestion_headline(human_only).startswith("Suggestions: this project has no model predictions")
    unreviewed = ProjectData(1, "hotel_spans", SCHEMAS["hotel_spans"], study["tasks"],
                             study["judgments"].assign(parent_prediction=None),
                             study["spans"].assign(parent_prediction=None))  # fmt: skip
    assert "no annotation started from one" in suggestion_headline(unreviewed)


def test_the_arms_are_compared_per_task_with_what_their_size_can_detect(report):
    paths, markdown = report
    arms = pd.read_csv(paths.csv["arm_comparison"])
    time = arms[arms["kind"] == "time"].iloc[0]
    assert time["n_suggested"] + time["n_blind"] == 240
    assert time["suggested"] < time["blind"] and time["ci_high"] < 0  # suggestions save time here
    assert time["mdd80"] > 0
    assert "cannot be measured" in markdown  # the blind arm has no model answers by design


def test_judges_are_calibrated_and_the_anchored_one_is_not_judged(report):
    paths, markdown = report
    calibration = pd.read_csv(paths.csv["judge_calibration"])
    a = calibration[calibration["judge"] == "model:judgelab-llm-A"]
    b = calibration[calibration["judge"] == "model:judgelab-llm-B"]
    assert (a["all_answers"] & (a["anchored_share"] == 1.0)).all()  # every annotator saw A's suggestions
    assert (b["anchored_share"] == 0).all() and len(b) == len(a)
    assert {"impression", "no_errors", "spans: any"} <= set(b["group"])
    assert "Not judged: judgelab-llm-A" in markdown
    assert (calibration["n_annotators_tested"] == 3).all()


def test_tables_written_before_the_suggestion_columns_still_make_a_report(study, tmp_path):
    old = {
        "tasks": study["tasks"].drop(columns=["arm"]),
        "judgments": study["judgments"].drop(columns=["region_id", "origin", "parent_prediction"]),
        "spans": study["spans"].drop(columns=["region_id", "origin", "parent_prediction", "lead_time"]),
    }
    paths = build_report(old, SCHEMAS, tmp_path, options=OPTIONS)
    markdown = paths.markdown.read_text(encoding="utf-8")
    assert "## Suggestions" not in markdown and "Anchoring" not in markdown
    assert "Can a judge replace an annotator?" in markdown  # the judges need no suggestion columns


def test_a_project_with_only_human_annotations_says_no_judge_can_be_calibrated(study, tmp_path):
    humans = {name: frame[frame["source"] == "human"] if "source" in frame else frame for name, frame in study.items()}
    paths = build_report(humans, SCHEMAS, tmp_path, options=OPTIONS)
    assert "no model predictions (no LLM campaign)" in paths.markdown.read_text(encoding="utf-8")


needs_data = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data is absent")


@needs_data
def test_storysumm_judges_against_the_evaluation_interface_annotators():
    from judgelab.analysis.loaders import load_evaluation_interface, load_storysumm

    with pytest.warns(Warning):
        judges = load_storysumm(SHARED_DATA / "storysumm" / "storysumm.json",
                                predictions=SHARED_DATA / "storysumm" / "predictions")  # fmt: skip
    folder = SHARED_DATA / "evaluation_interface"
    humans = load_evaluation_interface(folder / "annotations_pl_latest.json", combined=folder / "combined.json")
    groups = {g.group: g for g in answer_groups(judges["judgments"], judges["spans"], SCHEMAS["story_consistency"],
                                                 humans=(humans["judgments"], humans["spans"]))}  # fmt: skip
    faithful = groups["faithful"]
    assert len(faithful.judges) == 8 and faithful.values.shape[0] == 97
    passing = {}
    for judge in faithful.judges:
        answered = faithful.values[judge].notna()
        tests = alt_tests(faithful.values.loc[answered, faithful.humans], faithful.values.loc[answered, judge],
                          epsilons=(0.1, 0.2))  # fmt: skip
        assert {len(t.annotators) for t in tests.values()} == {3}  # the three main annotators, 96 summaries each
        passing[judge.removeprefix("model:")] = (tests[0.1].passed, tests[0.2].passed)
    assert {j for j, (strict, _) in passing.items() if strict} == {
        "claude-3-opus-20240229__cot", "fables-gpt-4-turbo-preview", "gpt-4-0125-preview__justquestion",
    }  # fmt: skip
    assert {j for j, (_, loose) in passing.items() if not loose} == {"minicheck-flan-t5-large"}
    lines = groups["line_*"]
    assert lines.judges == ["model:minicheck-flan-t5-large"]


def test_no_reviewer_of_the_synthetic_study_is_a_rubber_stamper(report, study):
    paths, markdown = report
    table = pd.read_csv(paths.csv["rubber_stamping"])
    assert len(table) == 3 and (table["status"] == "not flagged").all()
    assert (table["n_suggested"] == 120).all() and table["kept_share"].between(0.2, 0.7).all()  # 60% of spans kept
    assert (table["baseline"] == "own").all() and (table["time_ratio"] < 1).all()  # suggestions save some time
    assert "Of 3 annotators who started from a suggestion: 0 flagged, 3 not flagged" in markdown
