"""Rubber-stamping (analysis/rubber_stamping.py and its report section) on synthetic tidy tables:
one annotator who keeps every suggestion in a few seconds, one careful reviewer, one with too few
annotations; the baseline from the other annotators when an annotator labelled nothing from
scratch; the report's sentences and CSV; ``judgelab report --exclude-rubber-stampers`` reaching
the report (the options every project's estimates read) and the report saying who was left out."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from readme_commands import block_after

import judgelab.analysis.report as report_module
from judgelab.analysis.report import build_report
from judgelab.analysis.report.data import ProjectData, ReportOptions
from judgelab.analysis.report.sections.rubber_stamping import left_out_annotators
from judgelab.analysis.review import annotation_outcomes, review_table
from judgelab.analysis.rubber_stamping import (
    FLAGGED,
    KEPT_SHARE_MIN,
    MIN_SUGGESTED,
    MIN_TIMED,
    NOT_FLAGGED,
    NOT_JUDGED,
    TIME_RATIO_MAX,
    rubber_stamping,
    wilson_interval,
)
from judgelab.configs.schema import get_schema
from judgelab.configs.tables import JUDGMENT_COLUMNS, SPAN_COLUMNS
from judgelab.sync.cli import main
from judgelab.sync.export import write_tables
from judgelab.sync.tidy import TidyTables

SCHEMA = "likert_rubric_es"
META = get_schema(SCHEMA).meta
ITEMS = list(META["scales"])[:2]  # two rating scales of the schema, asked of it
STAMPER, CAREFUL, FEW = "ana@example.org", "bo@example.org", "cy@example.org"
DOCS_MARKER = "tests/test_rubber_stamping.py runs the next block as written"


class Study:
    """Tidy tables built annotation by annotation: a model's prediction per suggested task, and
    human annotations that start from it (``parent_prediction``) or from scratch."""

    def __init__(self) -> None:
        self.tasks: list[dict] = []
        self.judgments: list[dict] = []
        self.next_task = 0
        self.next_annotation = 0

    def task(self, suggested: bool) -> int:
        self.next_task += 1
        task = self.next_task
        self.tasks.append({"project": 1, "task_id": task, "schema": SCHEMA, "key": f"k{task}",
                           "article": "Texto.", "summary": "Resumen."})  # fmt: skip
        if suggested:
            for item in ITEMS:
                self.judgments.append(self._row(task, f"prediction:{task}", None, "model:judge-1", item, 3, None, None))
        return task

    def _row(self, task, annotation, who, source, item, value, seconds, parent) -> dict:
        return {"project": 1, "task_id": task, "annotation_id": annotation, "annotator": who, "source": source,
                "item": item, "value": str(value), "created_at": "2026-01-05T10:00:00Z", "lead_time": seconds,
                "was_cancelled": False, "ground_truth": False, "region_id": f"{annotation}-{item}",
                "origin": "prediction" if parent else "manual", "parent_prediction": parent}  # fmt: skip

    def annotate(self, task: int, who: str, seconds: float, *, suggested: bool, change: bool = False) -> None:
        self.next_annotation += 1
        annotation = str(self.next_annotation)
        for k, item in enumerate(ITEMS):
            value = 4 if change and k == 0 else 3
            self.judgments.append(
                self._row(task, annotation, who, "human", item, value, seconds, task if suggested else None)
            )

    def tables(self) -> dict[str, pd.DataFrame]:
        judgments = pd.DataFrame(self.judgments).reindex(columns=JUDGMENT_COLUMNS)
        judgments["parent_prediction"] = judgments["parent_prediction"].astype("Int64")
        return {"tasks": pd.DataFrame(self.tasks), "judgments": judgments, "spans": pd.DataFrame(columns=SPAN_COLUMNS)}


def make_study(*, stamper_blind: int = 8, stamper_seconds: float = 4.0, few: int = 4) -> dict[str, pd.DataFrame]:
    """The stamper keeps all 20 suggestions in ``stamper_seconds`` and takes 30-37 s from scratch;
    the careful reviewer edits 15 of 20 suggestions (18-27 s) and takes 25-32 s from scratch;
    the third annotator reviews ``few`` suggestions."""
    study = Study()
    for i in range(20):
        task = study.task(suggested=True)
        study.annotate(task, STAMPER, stamper_seconds + (i % 3) * 0.5, suggested=True)
        study.annotate(task, CAREFUL, 18.0 + i % 10, suggested=True, change=i % 4 != 0)
        if i < few:
            study.annotate(task, FEW, 12.0, suggested=True)
    for i in range(8):
        task = study.task(suggested=False)
        if i < stamper_blind:
            study.annotate(task, STAMPER, 30.0 + i, suggested=False)
        study.annotate(task, CAREFUL, 25.0 + i, suggested=False)
    return study.tables()


@pytest.fixture(scope="module")
def study() -> dict[str, pd.DataFrame]:
    return make_study()


def _row(table: pd.DataFrame, who: str) -> dict:
    return table.set_index("annotator").loc[who].to_dict()


def test_the_stamper_is_flagged_and_the_careful_reviewer_is_not(study):
    table = rubber_stamping(study["judgments"], study["spans"])
    stamper, careful = _row(table, STAMPER), _row(table, CAREFUL)
    assert (stamper["n_suggested"], stamper["n_kept"], stamper["kept_share"]) == (20, 20, 1.0)
    assert stamper["kept_low"] == pytest.approx(wilson_interval(20, 20)[0]) and stamper["kept_high"] == 1.0
    assert stamper["kept_seconds"] == 4.5  # median of 4, 4.5, 5 repeated
    assert (stamper["baseline"], stamper["n_baseline"], stamper["baseline_seconds"]) == ("own", 8, 33.5)
    assert stamper["time_ratio"] == pytest.approx(4.5 / 33.5)
    assert stamper["status"] == FLAGGED
    assert (careful["n_suggested"], careful["n_kept"]) == (20, 5)  # every fourth kept
    assert careful["kept_seconds"] == pytest.approx(pd.Series([18.0 + i % 10 for i in range(0, 20, 4)]).median())
    assert careful["status"] == NOT_FLAGGED and "below 90%" in careful["reason"]


def test_kept_unchanged_is_the_review_tables_definition(study):
    outcomes = annotation_outcomes(review_table(study["judgments"], study["spans"]))
    careful = outcomes[outcomes["annotator"] == CAREFUL]
    assert careful["unchanged"].sum() == 5
    assert (careful.loc[~careful["unchanged"], "n_edited"] == 1).all()


def test_too_few_annotations_are_not_judged_with_their_number(study):
    table = rubber_stamping(study["judgments"], study["spans"])
    few = _row(table, FEW)
    assert few["n_suggested"] == 4 < MIN_SUGGESTED and few["n_kept"] == 4
    assert few["status"] == NOT_JUDGED and few["reason"] == f"4 annotations from a suggestion, {MIN_SUGGESTED} needed"


def test_without_own_blind_tasks_the_other_annotators_median_is_the_baseline():
    tables = make_study(stamper_blind=0)
    stamper = _row(rubber_stamping(tables["judgments"], tables["spans"]), STAMPER)
    assert (stamper["baseline"], stamper["n_baseline"], stamper["baseline_seconds"]) == ("others", 8, 28.5)
    assert stamper["status"] == FLAGGED
    few_blind = make_study(stamper_blind=MIN_TIMED - 1)  # fewer than MIN_TIMED of their own: still the others'
    assert _row(rubber_stamping(few_blind["judgments"], few_blind["spans"]), STAMPER)["baseline"] == "others"


def test_no_baseline_at_all_is_not_judged():
    tables = make_study(stamper_blind=0)
    judgments = tables["judgments"]
    judgments = judgments[judgments["parent_prediction"].notna() | (judgments["source"] != "human")]
    stamper = _row(rubber_stamping(judgments, tables["spans"]), STAMPER)
    assert stamper["status"] == NOT_JUDGED and stamper["baseline"] == "none"
    assert stamper["reason"] == f"0 own annotations from scratch and 0 of the other annotators, {MIN_TIMED} needed"


def test_the_thresholds_are_arguments():
    tables = make_study(stamper_seconds=20.0)  # keeps everything, but at 0.61 of the from-scratch time
    default = _row(rubber_stamping(tables["judgments"], tables["spans"]), STAMPER)
    assert default["time_ratio"] > TIME_RATIO_MAX and default["status"] == NOT_FLAGGED
    assert default["reason"] == f"time ratio {default['time_ratio']:.2f}, above {TIME_RATIO_MAX:.2f}"
    lenient = rubber_stamping(tables["judgments"], tables["spans"], time_ratio_max=0.7)
    assert _row(lenient, STAMPER)["status"] == FLAGGED
    strict = rubber_stamping(make_study()["judgments"], tables["spans"], kept_share_min=1.01)
    assert _row(strict, STAMPER)["status"] == NOT_FLAGGED and KEPT_SHARE_MIN < 1.01


def test_the_report_says_who_is_flagged_with_the_numbers(study, tmp_path):
    paths = build_report(study, {SCHEMA: META}, tmp_path, options=ReportOptions(n_boot=0))
    markdown = paths.markdown.read_text(encoding="utf-8")
    table = rubber_stamping(study["judgments"], study["spans"])
    stamper = _row(table, STAMPER)
    expected = (
        f"{STAMPER} kept 20 of 20 suggestions unchanged (100%, 95% interval 84%-100%) in a median 4.5 s each "
        f"(20 with a lead time), against 34 s on 8 tasks they labelled from scratch "
        f"(ratio {stamper['time_ratio']:.2f}): flagged."
    )
    assert expected in markdown
    assert f"{CAREFUL} kept 5 of 20 suggestions unchanged (25%, 95% interval 11%-47%)" in markdown
    assert f"{FEW}: not enough annotations to judge (4 annotations from a suggestion, 10 needed)." in markdown
    assert "Of 3 annotators who started from a suggestion: 1 flagged, 1 not flagged, 1 with too few" in markdown
    assert "--exclude-rubber-stampers (judgelab report) leaves them out" in markdown
    glance = pd.read_csv(paths.csv["at_a_glance"])
    row = glance[glance["topic"] == "Rubber-stamping"]
    assert row["subject"].tolist() == [STAMPER] and row["value"].iloc[0] == pytest.approx(stamper["time_ratio"])
    assert "flagged: kept 20 of 20 (100%) in 4.5 s each against 34 s from scratch" in row["answer"].iloc[0]
    csv = pd.read_csv(paths.csv["rubber_stamping"]).set_index("annotator")
    assert csv.at[STAMPER, "status"] == FLAGGED and csv.at[STAMPER, "n_baseline"] == 8
    assert csv.at[CAREFUL, "n_kept"] == 5 and csv.at[FEW, "status"] == NOT_JUDGED


def test_a_report_without_a_flag_has_no_glance_and_says_nothing_is_left_out(tmp_path):
    tables = make_study(stamper_seconds=20.0)
    options = ReportOptions(n_boot=0, exclude_rubber_stampers=True)
    paths = build_report(tables, {SCHEMA: META}, tmp_path, options=options)
    markdown = paths.markdown.read_text(encoding="utf-8")
    assert "no annotator of this project is flagged, so they keep every annotator" in markdown
    assert "Rubber-stamping" not in set(pd.read_csv(paths.csv["at_a_glance"])["topic"])


def test_left_out_annotators_names_the_flagged_and_the_named(study):
    options = ReportOptions(exclude_rubber_stampers=True, exclude_annotators=frozenset({"zed"}))
    data = ProjectData(1, SCHEMA, META, study["tasks"], study["judgments"], study["spans"], options=options)
    left = left_out_annotators(data)
    assert set(left) == {STAMPER, "zed"}
    assert left[STAMPER].startswith("flagged as a rubber-stamper: kept 20 of 20 (100%) at a time ratio of 0.13")
    off = ProjectData(1, SCHEMA, META, study["tasks"], study["judgments"], study["spans"])
    assert left_out_annotators(off) == {}


def test_the_cli_flag_reaches_the_report_and_the_report_says_who_was_left_out(study, tmp_path, monkeypatch):
    folder = tmp_path / "judgelab-data"
    write_tables(TidyTables(study["tasks"], study["judgments"], study["spans"]), folder)
    seen: list[ReportOptions] = []
    real = report_module.build_report

    def spy(*args, **kwargs):
        seen.append(kwargs["options"])
        return real(*args, **kwargs)

    monkeypatch.setattr(report_module, "build_report", spy)
    monkeypatch.chdir(tmp_path)
    (line,) = block_after(DOCS_MARKER)  # docs/report.md's command, run as written
    args = shlex.split(line)
    assert args[0] == "judgelab" and "--exclude-rubber-stampers" in args
    result = CliRunner().invoke(main, args[1:], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert [o.exclude_rubber_stampers for o in seen] == [True]
    out = Path(args[args.index("--out") + 1])
    markdown = next(out.rglob("report.md")).read_text(encoding="utf-8")
    left = re.search(r"Left out of the study's estimates \(1 annotator\): (\S+) \(flagged as a rubber-stamper: "
                     r"kept 20 of 20 \(100%\) at a time ratio of 0\.13", markdown)  # fmt: skip
    assert left and left.group(1) == STAMPER
    assert "Every other section of the report still counts their annotations." in markdown
    plain = CliRunner().invoke(main, ["report", "--out", str(tmp_path / "plain"), "--n-boot", "0",
                                      "--stamp-time-ratio", "0.1"], catch_exceptions=False)  # fmt: skip
    assert plain.exit_code == 0, plain.output
    assert seen[-1].exclude_rubber_stampers is False and seen[-1].stamp_time_ratio == 0.1
    markdown = next((tmp_path / "plain").rglob("report.md")).read_text(encoding="utf-8")
    assert "Left out of the study's estimates" not in markdown
    assert f"{STAMPER} kept 20 of 20" in markdown and "(time ratio 0.13, above 0.10)" in markdown


def test_the_cli_help_states_the_rules_defaults():
    text = " ".join(CliRunner().invoke(main, ["report", "--help"]).output.split())
    assert f"[default: {KEPT_SHARE_MIN}]" in text and f"[default: {TIME_RATIO_MAX}]" in text
