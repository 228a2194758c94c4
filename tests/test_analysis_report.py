"""Span and annotation counts, and the Markdown/HTML/CSV report built from tidy tables.

Two small hand-made projects: ``aug`` (two annotators rate SP and SC on a 1-3 scale, plus
a model's predictions and a cancelled annotation) and ``hotel`` (spans, a 1-7 impression,
a no-errors tick box). Every expected number is worked out by hand in the comments.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from judgelab.analysis import (
    ReportOptions,
    ReportPaths,
    annotation_counts_per_annotator,
    build_report,
    build_reports,
    counts_by_source,
    span_counts,
)
from judgelab.analysis.report.blocks import Paragraph, Section
from judgelab.analysis.report.data import ProjectData
from judgelab.analysis.report.sections import SECTION_BUILDERS

SCHEMAS = {
    "augmentation_quality": {
        "name": "augmentation_quality",
        "title": "Augmentation quality",
        "scales": {"SP": {"min": 1, "max": 3}, "SC": {"min": 1, "max": 3}},
        "items": {"SP": {"kind": "ordinal"}, "SC": {"kind": "ordinal"}, "notes": {"kind": "text"}},
        "agreement_targets": {"cohen_kappa": 0.60, "exact_agreement": 0.60},
        "calibration_markers": [
            {"item": "SP", "value": 3, "subset": {"augmentation_type": "rephrased"}, "min": 0.40, "max": 0.50},
            {"item": "SP", "value": 1, "max": 0.10},
            {"item": "SC", "value": 3, "min": 0.50, "max": 0.60},
        ],
        "drift_block_size": 20,
    },
    "hotel_spans": {
        "name": "hotel_spans",
        "title": "HotelCheckSpan",
        "scales": {"impression": {"min": 1, "max": 7}},
        "items": {"impression": {"kind": "ordinal"}, "no_errors": {"kind": "flag"}},
        "span_controls": {"error": {"labels": ["Not Checkable", "Misleading", "Incorrect"]}},
    },
}

# aug, SP (ann, bob): agree on tasks 1, 3, 4, 5 -> exact 4/6 = 0.667. Both annotators use
# 3 three times, 2 twice, 1 once: p_e = (9 + 4 + 1) / 36, kappa = (24 - 14) / (36 - 14) = 0.455.
SP = [("3", "3"), ("2", "3"), ("3", "3"), ("2", "2"), ("1", "1"), ("3", "2")]
# aug, SC: agree on tasks 1, 3, 4 -> exact 0.500. Marginals ann 3:4 2:1 1:1, bob 3:2 2:4:
# p_e = (4*2 + 1*4) / 36 = 1/3, Cohen's kappa = (1/2 - 1/3) / (2/3) = 0.250. Pooled shares
# 3: 6/12, 2: 5/12, 1: 1/12 give p_e = 62/144 and Fleiss' kappa = 10/82 = 0.122.
SC = [("3", "3"), ("3", "2"), ("2", "2"), ("3", "3"), ("3", "2"), ("1", "2")]
# hotel, impression: agree on 2 of 3 -> 0.667; p_e = (1*2 + 1*1) / 9 -> kappa = 0.500.
IMPRESSION = [("5", "5"), ("6", "6"), ("4", "5")]


def judgment(project: str, task: int, annotator: str, annotation: int, item: str, value: str,
             **extra: object) -> dict[str, object]:  # fmt: skip
    row = {
        "project": project,
        "task_id": task,
        "annotation_id": annotation,
        "annotator": annotator,
        "source": "human",
        "item": item,
        "value": value,
        "created_at": "2025-03-01T09:00:00Z",
        "updated_at": "2025-03-01T09:05:00Z",
        "lead_time": 42.0,
        "was_cancelled": False,
        "ground_truth": False,
    }
    return row | extra


def span(task: int, annotator: str, annotation: int, label: str, **extra: object) -> dict:
    row = {
        "project": "hotel",
        "task_id": task,
        "annotation_id": annotation,
        "annotator": annotator,
        "source": "human",
        "field": "summary",
        "start": 0,
        "end": 4,
        "text": "Shop",
        "label": label,
        "note": None,
    }
    return row | extra


def make_tables() -> dict[str, pd.DataFrame]:
    """The two projects' tidy tables."""
    tasks, judgments = [], []
    for task, ((sp_ann, sp_bob), (sc_ann, sc_bob)) in enumerate(zip(SP, SC, strict=True), 1):
        tasks.append({"project": "aug", "task_id": task, "schema": "augmentation_quality",
                      "model": "Qwen2.5-14b", "augmentation_type": "rephrased"})  # fmt: skip
        judgments += [
            judgment("aug", task, "ann", 100 + task, "SP", sp_ann),
            judgment("aug", task, "ann", 100 + task, "SC", sc_ann),
            judgment("aug", task, "bob", 200 + task, "SP", sp_bob),
            judgment("aug", task, "bob", 200 + task, "SC", sc_bob),
            judgment("aug", task, "bob", 200 + task, "notes", "free text, not compared"),
            judgment("aug", task, "offline", 300 + task, "SP", "1", source="model:offline-1"),
        ]
    tasks.append({"project": "aug", "task_id": 7, "schema": "augmentation_quality"})
    judgments.append(judgment("aug", 7, "ann", 107, "SP", "", was_cancelled=True))
    judgments.append(judgment("aug", 1, "ann", 108, "SP", "1", was_cancelled=True))

    spans = [
        span(100, "ann", 401, "Incorrect"),
        span(101, "ann", 402, "Incorrect"),
        span(101, "ann", 402, "Misleading", start=5, end=9),
        span(100, "bob", 501, "Incorrect"),
        span(101, "bob", 502, "Not Checkable"),
    ]
    for offset, (ann, bob) in enumerate(IMPRESSION):
        task = 100 + offset
        tasks.append({"project": "hotel", "task_id": task, "schema": "hotel_spans", "group": "A"})
        judgments += [
            judgment("hotel", task, "ann", 401 + offset, "impression", ann),
            judgment("hotel", task, "bob", 501 + offset, "impression", bob),
        ]
    judgments += [
        judgment("hotel", 102, "ann", 403, "no_errors", "I did not find any errors in the summary"),
        judgment("hotel", 102, "bob", 503, "no_errors", "I did not find any errors in the summary"),
    ]
    return {
        "tasks": pd.DataFrame(tasks),
        "judgments": pd.DataFrame(judgments),
        "spans": pd.DataFrame(spans),
    }


@pytest.fixture
def tables() -> dict[str, pd.DataFrame]:
    return make_tables()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> ReportPaths:
    """One report for the read-only tests (building it draws figures, which takes a while)."""
    return build_report(make_tables(), SCHEMAS, tmp_path_factory.mktemp("report"))


def table_row(markdown: str, first_cell: str, after: str) -> str:
    """The Markdown table row starting with ``first_cell`` after the heading ``after``."""
    rest = markdown[markdown.index(after) :]
    match = re.search(rf"^\| {re.escape(first_cell)} \|.*$", rest, flags=re.MULTILINE)
    assert match, f"no row {first_cell!r} after {after!r}"
    return match.group(0)


def cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip("|").split("|")]


# -- counts ---------------------------------------------------------------------------------


def test_span_counts(tables: dict[str, pd.DataFrame]) -> None:
    counts = span_counts(tables["spans"], tables["tasks"])
    by_label = counts.by_label.set_index("label")
    assert by_label.loc["Incorrect", ["n_spans", "n_annotations", "n_tasks"]].tolist() == [3, 3, 2]
    assert by_label.loc["Misleading", "n_spans"] == 1
    assert by_label.loc["Not Checkable", "n_spans"] == 1
    project = counts.per_project.iloc[0]
    assert (project.n_spans, project.n_annotations, project.n_tasks_with_spans) == (5, 4, 2)
    assert project.n_tasks == 3 and project.share_tasks_with_spans == pytest.approx(2 / 3)
    per_annotator = counts.by_annotator.set_index(["annotator", "label"])["n_spans"]
    assert per_annotator.loc[("ann", "Incorrect")] == 2
    assert per_annotator.loc[("bob", "Not Checkable")] == 1


def test_annotation_counts_leave_out_cancelled_annotations(tables: dict) -> None:
    human = tables["judgments"][tables["judgments"]["source"] == "human"]
    counts = annotation_counts_per_annotator(human, tables["spans"])
    ann = counts.set_index(["project", "annotator"]).loc[("aug", "ann")]
    assert (ann.n_annotations, ann.n_tasks, ann.n_cancelled, ann.n_judgments) == (6, 6, 2, 12)
    hotel_ann = counts.set_index(["project", "annotator"]).loc[("hotel", "ann")]
    assert (hotel_ann.n_annotations, hotel_ann.n_judgments, hotel_ann.n_spans) == (3, 4, 3)


def test_counts_by_source(tables: dict) -> None:
    counts = counts_by_source(tables["judgments"], tables["spans"]).set_index(["project", "source"])
    assert counts.loc[("aug", "model:offline-1"), "n_judgments"] == 6
    assert counts.loc[("aug", "human"), "n_annotations"] == 12


# -- the report -----------------------------------------------------------------------------


def test_report_files_exist(report: ReportPaths) -> None:
    assert report.markdown.name == "report.md" and report.markdown.is_file()
    assert report.html.name == "report.html" and report.html.is_file()
    assert {"agreement", "annotations_per_annotator", "spans_per_label"} <= set(report.csv)
    assert all(path.is_file() for path in report.csv.values())


def test_markdown_agreement_numbers_computed_by_hand(report: ReportPaths) -> None:
    markdown = report.markdown.read_text(encoding="utf-8")
    ratings = "**Agreement on rating scales (human annotators)**"
    header = cells(table_row(markdown, "item", "## Project aug"))
    sp = dict(zip(header, cells(table_row(markdown, "SP", "## Project aug")), strict=True))
    sc = dict(zip(header, cells(table_row(markdown, "SC", "## Project aug")), strict=True))
    assert ratings in markdown
    assert sp["n_units"] == "6" and sp["n_annotators"] == "2" and sp["scale"] == "1-3"
    # SP: exact 4/6; every pair within one point; quadratic weights 1, 0.75, 0 give p_o = 5.5/6,
    # p_e = 26/36 (both annotators 1:1, 2:2, 3:3), kappa_w = (5.5/6 - 26/36) / (1 - 26/36) = 0.7
    assert (sp["exact"], sp["adjacent (±1)"], sp["weighted kappa (quadratic)"]) == ("0.667", "1.000", "0.700")
    # SC: p_o = 5.25/6; marginals ann (1, 1, 4)/6, bob (0, 4, 2)/6 give p_e = 28.5/36: kappa_w = 0.4
    assert (sc["exact"], sc["weighted kappa (quadratic)"]) == ("0.500", "0.400")
    assert "–" in sp["alpha 95% CI"]
    impression = dict(zip(header, cells(table_row(markdown, "impression", "## Project hotel")), strict=True))
    assert (impression["n_units"], impression["exact"], impression["scale"]) == ("3", "0.667", "1-7")
    nominal = cells(table_row(markdown, "item", "**Agreement on choices and tick boxes"))
    no_errors = dict(zip(nominal, cells(table_row(markdown, "no_errors", "## Project hotel")), strict=True))
    assert (no_errors["kind"], no_errors["exact"], no_errors["Cohen/Light kappa"]) == ("flag", "1.000", "1.000")


def test_pilot_targets_and_calibration_markers(report: ReportPaths) -> None:
    markdown = report.markdown.read_text(encoding="utf-8")
    # the unweighted Cohen's kappa of the pilot: SP 0.455 and SC 0.250 (worked out above)
    assert cells(table_row(markdown, "SP", "**Pilot agreement")) == [
        "SP", "Cohen's kappa", "6", "0.455", "more than 0.60", "fail",
    ]  # fmt: skip
    assert "SC, on 6 tasks: Cohen's kappa 0.250 (fail); exact agreement 0.500 (fail)" in markdown
    assert "Overall the pilot fails" in markdown
    assert "They share 6 tasks, which falls short of the pilot size of 30 samples" in markdown
    # SP = 1: ann once, bob once, of 12 ratings = 17% > 10%; SC = 3: ann 4 + bob 2 = 6 of 12 = 50%;
    # SP = 3 among rephrased: 3 + 3 of 12 = 50%, inside 40-50% (bounds are inclusive)
    assert "SP = 1: 17% of 12 ratings (2 of them), target at most 10%: fail." in markdown
    assert "SC = 3: 50% of 12 ratings (6 of them), target 50% to 60%: pass." in markdown
    assert "SP = 3 among augmentation_type=rephrased: 50% of 12 ratings (6 of them), target 40% to 50%: pass." in (
        markdown
    )
    assert "Overall, 2 of 3 markers pass" in markdown
    # 3 of the 6 samples differ on SP or SC: 50% >= 20%, so meet and discuss the 5 disagreements
    assert "differ on at least one item in 3 of them (50%), so the rule says to meet and discuss" in markdown
    assert "No annotator has more than 20 annotations yet" in markdown


def test_markdown_explains_numbers_in_sentences(report: ReportPaths) -> None:
    markdown = report.markdown.read_text(encoding="utf-8")
    assert "SP (rating scale 1-3): 6 tasks were rated by two or more of the 2 annotators (12 answers)" in markdown
    assert "67% of the pairs of answers on the same task are identical (exact agreement 0.667)" in markdown
    assert "The quadratic weighted kappa, between the two annotators, is 0.700 (substantial)" in markdown
    assert "Krippendorff's ordinal alpha is" in markdown
    assert "Exact agreement is the share of pairs of answers" in markdown
    assert "human: 5 spans in 4 annotations; 2 tasks have at least one span (67% of" in markdown
    assert "1 annotation was cancelled" not in markdown  # ann cancelled 2 in aug
    assert "2 annotations were cancelled (skipped)" in markdown
    assert "With only 6 shared tasks, a few more could change this noticeably." in markdown


def test_markdown_counts_spans_annotators_and_sources(report: ReportPaths) -> None:
    markdown = report.markdown.read_text(encoding="utf-8")
    assert cells(table_row(markdown, "hotel", "**Spans per label**"))[2:] == [
        "Incorrect", "3", "3", "2",
    ]  # fmt: skip
    assert cells(table_row(markdown, "human", "**Spans per annotator and label**")) == [
        "human", "ann", "2", "1", "0",
    ]  # fmt: skip  # columns: source, annotator, Incorrect, Misleading, Not Checkable
    ann = cells(table_row(markdown, "aug", "**Annotations per annotator**"))
    assert ann == ["aug", "human", "ann", "6", "6", "2", "12", "0"]
    model = table_row(markdown, "aug | model:offline-1", "**Human annotations and model predictions**")
    assert cells(model) == ["aug", "model:offline-1", "6", "6", "6", "0"]
    # Model predictions appear only for the project that has them, and never in agreement.
    hotel = markdown[markdown.index("## Project hotel") :]
    assert "Model predictions and human annotations" not in hotel
    assert "offline" not in table_row(markdown, "SP", "## Project aug")


def test_html_is_self_contained_with_section_titles(report: ReportPaths) -> None:
    html = report.html.read_text(encoding="utf-8")
    for title in (
        "How to read this report",
        "Project aug: Augmentation quality",
        "Project hotel: HotelCheckSpan",
        "Overview",
        "Annotations per annotator",
        "Judgments per item",
        "Agreement per item",
        "Spans",
        "Model predictions and human annotations",
        "Guideline checks",
        "Pilot agreement against the targets",
        "Calibration markers",
        "Disagreement rule",
        "Span agreement",
        "Span F1 between annotators",
        "Example-level votes",
        "Impression against errors",
        "Model predictions against humans",
    ):
        assert f">{title}</h" in html, title
    assert '<td class="number">0.455</td>' in html  # the pilot's Cohen's kappa
    assert not re.search(r"""(src|href)=["']https?:""", html)
    assert "<script" not in html and "<link" not in html
    if _has_matplotlib():
        assert ">Rating distributions</h" in html
        assert html.count('<img src="data:image/png;base64,') >= 4  # alpha, distributions, confusion, votes


def test_agreement_csv_holds_unrounded_values(report: ReportPaths) -> None:
    agreement = pd.read_csv(report.csv["agreement"])
    assert agreement[["project", "item"]].values.tolist() == [
        ["aug", "SC"], ["aug", "SP"], ["hotel", "impression"], ["hotel", "no_errors"],
    ]  # fmt: skip
    sc = agreement.set_index("item").loc["SC"]
    assert sc.cohen_kappa == pytest.approx(0.25) and sc.fleiss_kappa == pytest.approx(10 / 82)
    assert sc.cohen_kappa_quadratic == pytest.approx(0.4) and sc.alpha_ci_low <= sc.krippendorff_alpha


def test_report_without_spans_predictions_or_tasks(tmp_path: Path) -> None:
    judgments = pd.DataFrame(
        [
            judgment("solo", 1, "ann", 1, "Coherence", "4"),
            judgment("solo", 1, "bob", 2, "Coherence", "4"),
        ]
    )
    paths = build_report({"judgments": judgments}, {}, tmp_path)
    markdown = paths.markdown.read_text(encoding="utf-8")
    assert "## Project solo" in markdown and "an unknown schema" in markdown
    assert "## Spans" not in markdown and "### Spans" not in markdown
    row = cells(table_row(markdown, "Coherence", "## Project solo"))
    assert row[:5] == ["Coherence", "nominal", "1", "2", "1.000"]  # one value used: not read as a scale
    assert row[5:7] == ["n/a", "n/a"] and "same" in row[-1]
    assert "With only 1 shared task, a few more" in markdown


def test_report_rejects_tables_without_required_columns(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="judgments table lacks required column"):
        build_report({"judgments": pd.DataFrame({"project": ["p"], "value": ["3"]})}, {}, tmp_path)


def test_report_sections_are_pluggable(tables: dict, tmp_path: Path) -> None:
    def task_meta_section(data: ProjectData) -> Section:
        models = sorted(data.tasks["model"].dropna().unique()) if "model" in data.tasks else []
        return Section("Generating models", [Paragraph(", ".join(models) or "none")])

    paths = build_report(tables, SCHEMAS, tmp_path, section_builders=[*SECTION_BUILDERS, task_meta_section])
    markdown = paths.markdown.read_text(encoding="utf-8")
    assert "### Generating models\n\nQwen2.5-14b" in markdown


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


# -- one hand-made project per study, every expected number worked out by hand ---------------------


def build(tmp_path: Path, tables: dict[str, pd.DataFrame], schemas: dict | None = None) -> str:
    paths = build_report(tables, schemas or {}, tmp_path)
    return paths.markdown.read_text(encoding="utf-8")


def test_two_raters_three_units_exact_two_thirds_cohen_four_sevenths(tmp_path: Path) -> None:
    # ann a, b, c; bob a, b, d: 2 of 3 units agree. Marginals ann (a, b, c) = 1/3 each, bob
    # (a, b, d) = 1/3 each: p_e = (1 + 1) / 9 = 2/9, kappa = (2/3 - 2/9) / (1 - 2/9) = 4/7.
    rows = [
        judgment("tiny", task, annotator, index, "verdict", value)
        for index, (task, annotator, value) in enumerate(
            [(1, "ann", "a"), (2, "ann", "b"), (3, "ann", "c"), (1, "bob", "a"), (2, "bob", "b"), (3, "bob", "d")]
        )
    ]
    markdown = build(tmp_path, {"judgments": pd.DataFrame(rows)})
    row = cells(table_row(markdown, "verdict", "## Project tiny"))
    assert row[:6] == ["verdict", "nominal", "3", "2", "0.667", "0.571"]
    assert "Cohen's kappa is 0.571 (moderate)" in markdown
    assert "the schema's metadata is unknown".capitalize() in markdown


def span_row(task: int, rater: str, start: int, end: int, label: str, source: str = "human") -> dict:
    annotation = f"{rater}-{task}"
    return {"project": "ext", "task_id": task, "annotation_id": annotation, "annotator": rater, "source": source,
            "field": "summary", "start": start, "end": end, "text": "x" * (end - start), "label": label}  # fmt: skip


def span_tables() -> dict[str, pd.DataFrame]:
    """Four texts, two humans and a model, no schema. Spans (start, end, label):
    text 1: ann (0, 10, I), bob (5, 15, I), model (0, 10, I); text 2: ann (0, 4, M), bob (0, 4, N);
    text 3: bob (0, 5, I); text 4: nobody. Every rater annotated every text (a 1-5 'score' each)."""
    spans = [
        span_row(1, "ann", 0, 10, "I"),
        span_row(1, "bob", 5, 15, "I"),
        span_row(2, "ann", 0, 4, "M"),
        span_row(2, "bob", 0, 4, "N"),
        span_row(3, "bob", 0, 5, "I"),
        span_row(1, "model:gpt", 0, 10, "I", source="model:gpt"),
    ]
    scores = {"ann": [5, 2, 4, 5], "bob": [4, 2, 4, 5], "model:gpt": [3, 3, 3, 3]}
    judgments = [
        judgment(
            "ext",
            task,
            rater,
            f"{rater}-{task}",
            "score",
            str(value),
            source="model:gpt" if rater.startswith("model:") else "human",
        )  # fmt: skip
        for rater, values in scores.items()
        for task, value in enumerate(values, 1)
    ]
    tasks = [{"project": "ext", "task_id": task, "summary": "y" * 20} for task in range(1, 5)]
    return {"tasks": pd.DataFrame(tasks), "judgments": pd.DataFrame(judgments), "spans": pd.DataFrame(spans)}


def test_unknown_schema_sections_follow_the_data(tmp_path: Path) -> None:
    markdown = build(tmp_path, span_tables())
    titles = ["### Agreement per item", "### Span agreement", "#### Span F1 between annotators",
              "#### Unitizing alpha", "#### Example-level votes", "### Model predictions against humans"]  # fmt: skip
    for title in titles:
        assert title in markdown, title
    assert "Treated as rating scales because every answer is a whole number in a short range: score" in markdown
    assert "#### Line-level agreement" not in markdown and "### Likert rubric" not in markdown
    assert "### Guideline checks" not in markdown


def test_span_f1_by_hand(tmp_path: Path) -> None:
    markdown = build(tmp_path, span_tables())
    header = cells(table_row(markdown, "comparison", "**Span agreement (mean over pairs)**"))
    rows = {
        (row["comparison"], row["form"]): row
        for row in (
            dict(zip(header, cells(line), strict=True))
            for line in markdown.splitlines()
            if line.startswith("| human – ")
        )
    }
    # ann as reference, bob as hypothesis, per span, soft: bob's spans earn 5/10, 4/4 and 0 (text 3,
    # where ann marked nothing, counts with no credit): P = 1.5/3; ann's earn 5/10 and 4/4: R = 1.5/2;
    # F1 = 0.6. Hard: only text 1 shares a label: P = 0.5/3, R = 0.5/2, F1 = 0.2. Both directions
    # give the same F1; P and R swap, so their means are equal: (0.5 + 0.75) / 2 = 0.625.
    human = rows[("human – human", "per span")]
    assert (human["P soft"], human["R soft"], human["F1 soft"], human["F1 hard"]) == (
        "0.625",
        "0.625",
        "0.600",
        "0.200",
    )
    assert human["n_pairs"] == "2"
    # character form, soft: P = (5 + 4 + 0) / (10 + 4 + 5) = 9/19, R = 9/14, F1 = 162/297 = 0.545
    assert rows[("human – human", "character")]["F1 soft"] == "0.545"
    # model against ann (text 1 both, text 2 ann only, text 3 neither: left out): P = 1, R = 1/2, F1 = 2/3;
    # against bob (texts 1, 2, 3): P = 5/10, R = 0.5/3, F1 = 0.25. Means: P 0.75, R 1/3, F1 0.458.
    model = rows[("human – model:gpt", "per span")]
    assert (model["P soft"], model["R soft"], model["F1 soft"]) == ("0.750", "0.333", "0.458")
    assert "model:gpt: of what it marks, 75% was also marked by a human; it finds 33% of what a human marked" in (
        markdown
    )
    # Table 5: texts 1 and 3 have an I from 2 and 1 annotators; (any): text 4 none, text 3 one, 1 and 2 both
    assert cells(table_row(markdown, "0", "**Texts per number of annotators")) == [
        "0", "2 (50%)", "3 (75%)", "3 (75%)", "1 (25%)",
    ]  # fmt: skip
    # Table 4 and the empty-side policy in words
    assert cells(table_row(markdown, "human", "**Spans per label and campaign**"))[:4] == ["human", "8", "5", "0.625"]
    assert "texts where neither marked anything are left out" in markdown
    assert "conservative alignment paradox" in markdown


def test_model_scores_against_human_mean(tmp_path: Path) -> None:
    markdown = build(tmp_path, span_tables())
    # human means per text: 4.5, 2, 4, 5; the model says 3 everywhere: |differences| 1.5, 1, 1, 2 -> 1.375.
    # A human against the other (one other human): |5-4|, 0, 0, 0 for each of the two -> 2/8 = 0.25.
    row = cells(table_row(markdown, "model:gpt", "**Models against the human mean**"))
    assert row[:6] == ["model:gpt", "score", "4", "3.000", "3.875", "1.375"]
    assert row[7] == "0.250"


def story_tables() -> dict[str, pd.DataFrame]:
    """Two summaries (3 and 2 lines), two annotators, gold labels and one model.

    ann: s1 C I C, s2 C N;  bob: s1 C I I, s2 C C;  gold: s1 C I C (Unfaithful), s2 C C (Faithful).
    """
    c, i, n = "Consistent", "Inconsistent", "N/A, just commentary"
    verdicts = {"ann": {"s1": [c, i, c], "s2": [c, n]}, "bob": {"s1": [c, i, i], "s2": [c, c]},
                "gold": {"s1": [c, i, c], "s2": [c, c]}}  # fmt: skip
    rows = []
    for judge, per_task in verdicts.items():
        source = "gold" if judge == "gold" else "human"
        for task, lines in per_task.items():
            annotation = f"{judge}-{task}"
            rows += [
                judgment("story", task, judge, annotation, f"line_{k}", v, source=source) for k, v in enumerate(lines)
            ]
            faithful = "Unfaithful" if i in lines else "Faithful"
            rows.append(judgment("story", task, judge, annotation, "faithful", faithful, source=source))
    rows += [
        judgment("story", "s1", "mini", "mini-s1", "faithful", "Unfaithful", source="model:mini"),
        judgment("story", "s2", "mini", "mini-s2", "faithful", "Unfaithful", source="model:mini"),
    ]
    tasks = [{"project": "story", "task_id": t, "schema": "story_consistency"} for t in ("s1", "s2")]
    return {"tasks": pd.DataFrame(tasks), "judgments": pd.DataFrame(rows)}


STORY_META = {
    "story_consistency": {
        "items": {"verdict_{i}": {"kind": "nominal", "item": "line_{i}"}, "explanation_{i}": {"kind": "text"}}
    }
}


def test_story_lines_derived_verdicts_and_gold(tmp_path: Path) -> None:
    markdown = build(tmp_path, story_tables(), STORY_META)
    # three verdicts: 3 of 5 lines agree; ann C3 I1 N1, bob C3 I2: p_e = (9 + 2) / 25, kappa = 0.16/0.56 = 2/7.
    # inconsistent vs rest: 4 of 5 agree; ann I1 R4, bob I2 R3: p_e = 14/25, kappa = 0.24/0.44 = 6/11.
    three = cells(table_row(markdown, "three verdicts", "**Line-level agreement"))
    binary = cells(table_row(markdown, "inconsistent vs rest", "**Line-level agreement"))
    header = cells(table_row(markdown, "scheme", "**Line-level agreement"))
    three, binary = dict(zip(header, three, strict=True)), dict(zip(header, binary, strict=True))
    assert [three[c] for c in ("lines", "annotators", "verdicts", "exact", "Cohen kappa")] == [
        "5", "2", "10", "0.600", "0.286",
    ]  # fmt: skip
    assert (binary["exact"], binary["Cohen kappa"]) == ("0.800", "0.545")
    assert "three verdicts: 5 lines were judged by two or more of the 2 annotators" in markdown
    # derived: both annotators' lines make s1 Unfaithful and s2 Faithful, as they said
    assert "the lines make 1 of 2 summaries Unfaithful" not in markdown  # judges below 10 summaries: CSV only
    derived = pd.read_csv(tmp_path / "derived_summary_verdicts.csv").set_index("annotator")
    assert derived.loc["ann", ["n_summaries", "n_derived_unfaithful", "n_matching"]].tolist() == [2, 1, 2]
    # lines against gold: ann calls only s1 line 1 inconsistent = gold: balanced accuracy 1; bob also
    # calls s1 line 2: recall 1, specificity 3/4 -> 0.875, precision 1/2
    judges = pd.read_csv(tmp_path / "judges_vs_gold.csv")
    lines = judges[judges["level"] == "line"].set_index("annotator")
    assert lines.loc["ann", "balanced_accuracy"] == pytest.approx(1.0)
    assert lines.loc["bob", ["balanced_accuracy", "precision_unfaithful"]].tolist() == pytest.approx([0.875, 0.5])
    summary = judges[judges["level"] == "summary"].set_index("source")
    assert summary.loc["model:mini", "balanced_accuracy"] == pytest.approx(0.5)  # TP 1, FP 1
    assert "majority" in set(judges["annotator"])
    # the model against the human majority on 'faithful': s1 agrees, s2 does not
    assert cells(table_row(markdown, "model:mini", "**Models against the human majority**"))[:4] == [
        "model:mini", "faithful", "2", "0.500",
    ]  # fmt: skip


def likert_tables() -> dict[str, pd.DataFrame]:
    """Four summaries by two models, two raters; summary 1 has a chatbot phrase."""
    summaries = ["Aquí tienes el resumen: hubo lluvias.", "Hubo lluvias.", "Llovió mucho.", "Cayó agua."]
    tasks = [
        {"project": "es", "task_id": t, "schema": "likert_rubric_es", "summary": text, "model": "a" if t < 3 else "b"}
        for t, text in enumerate(summaries, 1)
    ]
    relevance = {1: ("2", "3"), 2: ("4", "5"), 3: ("5", "5"), 4: ("4", "4")}
    coherence = {1: ("3", "3"), 2: ("4", "4"), 3: ("5", "4"), 4: ("2", "2")}
    rows = []
    for task in range(1, 5):
        for rater, index in (("rater_0", 0), ("rater_1", 1)):
            annotation = f"{task}:{rater}"
            rows.append(judgment("es", task, rater, annotation, "Relevance", relevance[task][index]))
            rows.append(judgment("es", task, rater, annotation, "Coherence", coherence[task][index]))
    return {"tasks": pd.DataFrame(tasks), "judgments": pd.DataFrame(rows)}


LIKERT_META = {"likert_rubric_es": {"scales": {c: {"min": 1, "max": 5} for c in ("Coherence", "Relevance")}}}


def test_likert_cues_distributions_and_rater_note(tmp_path: Path) -> None:
    markdown = build(tmp_path, likert_tables(), LIKERT_META)
    assert "### Likert rubric" in markdown and "#### Score distributions" in markdown
    # per-summary Relevance means 2.5 (cue), 4.5, 5, 4 -> without a cue (4.5 + 5 + 4) / 3 = 4.5
    assert "any: mean Relevance 2.50 on 1 summary with a cue against 4.50 on the 3 without, a difference of -2.00" in (
        markdown
    )
    assert "1 of 4 summaries (25%) contain at least one" in markdown
    # mean Coherence of model a: (3 + 3 + 4 + 4) / 4 = 3.5, of b: (5 + 4 + 2 + 2) / 4 = 3.25
    assert cells(table_row(markdown, "a", "**Mean score per criterion and model**"))[:3] == ["a", "4", "3.50"]
    assert "the data does not say whether a position is the same person everywhere" in markdown
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    if _has_matplotlib():
        assert "Share of each score per criterion and model" in html and "<img" in html


def test_build_reports_per_project_and_schema_with_index(tmp_path: Path) -> None:
    tables = {name: pd.concat([f.get(name, pd.DataFrame()) for f in (story_tables(), likert_tables())])
              for name in ("tasks", "judgments")}  # fmt: skip
    schemas = {**STORY_META, **LIKERT_META}
    per_project = build_reports(tables, schemas, tmp_path / "p", options=ReportOptions(n_boot=50))
    assert [entry.name for entry in per_project.reports] == ["es", "story"]
    assert (tmp_path / "p" / "story" / "report.html").is_file() and (tmp_path / "p" / "es" / "report.md").is_file()
    index = per_project.index.read_text(encoding="utf-8")
    assert 'href="story/report.html"' in index and 'href="es/report.html"' in index
    story_md = (tmp_path / "p" / "story" / "report.md").read_text(encoding="utf-8")
    assert story_md.splitlines()[0].endswith(": project story (story_consistency)")  # not just the id
    per_schema = build_reports(tables, schemas, tmp_path / "s", per="schema", options=ReportOptions(n_boot=50))
    assert sorted(entry.name for entry in per_schema.reports) == ["likert_rubric_es", "story_consistency"]
    with pytest.raises(ValueError, match="per must be one of"):
        build_reports(tables, schemas, tmp_path / "x", per="task")


def hotel_qc_tables() -> dict[str, pd.DataFrame]:
    """Four hotel summaries, two annotators and a model. t1 is an error-free check and t2 an obvious
    Incorrect check (both also qualification examples); groups A (t1, t3) and B (t2, t4).

    ann: t1 box ticked; t2 Incorrect on the planted error; t3 Misleading; t4 box ticked.
    bob: t1 Misleading; t2 Misleading on the planted error; t3 box ticked; t4 Not Checkable + Incorrect.
    Impressions ann 6, 3, 4, 6 and bob 5, 4, 6, 2; bob spent 1 s on t4, everyone else 60 s.
    """
    summary = "Schiphol Airport is close to the quiet hotel."
    tasks = [
        {"project": "qc", "task_id": t, "schema": "hotel_spans", "group": g, "check": c, "qualification": q,
         "summary": summary, "descriptions": "The hotel is in Istanbul, 17.5 km from the airport.",
         "reference_text": "Schiphol Airport" if t == "t2" else None}
        for t, g, c, q in (("t1", "A", "error_free", True), ("t2", "B", "obvious_incorrect", True),
                           ("t3", "A", "", False), ("t4", "B", "", False))
    ]  # fmt: skip
    box = {"A": "I did not find any errors in the summary", "B": "There were no errors in the summary"}
    group = {t["task_id"]: t["group"] for t in tasks}
    spans, judgments = [], []
    plan = {
        "ann": {"t1": [], "t2": [(0, 16, "Incorrect")], "t3": [(40, 45, "Misleading")], "t4": []},
        "bob": {"t1": [(40, 45, "Misleading")], "t2": [(0, 16, "Misleading")], "t3": [],
                "t4": [(21, 26, "Not Checkable"), (0, 7, "Incorrect")]},
        "model:gpt": {"t1": [], "t2": [(0, 16, "Incorrect")], "t3": [], "t4": []},
    }  # fmt: skip
    impressions = {"ann": [6, 3, 4, 6], "bob": [5, 4, 6, 2]}
    for rater, per_task in plan.items():
        source = rater if rater.startswith("model:") else "human"
        for index, (task, marks) in enumerate(per_task.items()):
            annotation = f"{rater}-{task}"
            lead = 1.0 if (rater, task) == ("bob", "t4") else 60.0
            extra = {"source": source, "lead_time": lead}
            if rater in impressions:
                judgments.append(judgment("qc", task, rater, annotation, "impression", str(impressions[rater][index]),
                                          **extra))  # fmt: skip
            if not marks:
                judgments.append(judgment("qc", task, rater, annotation, "no_errors", box[group[task]], **extra))
            for start, end, label in marks:
                spans.append({"project": "qc", "task_id": task, "annotation_id": annotation, "annotator": rater,
                              "source": source, "field": "summary", "start": start, "end": end,
                              "text": summary[start:end], "label": label})  # fmt: skip
    return {"tasks": pd.DataFrame(tasks), "judgments": pd.DataFrame(judgments), "spans": pd.DataFrame(spans)}


def test_hotel_quality_checks_by_hand(tmp_path: Path) -> None:
    markdown = build(tmp_path, hotel_qc_tables(), {"hotel_spans": SCHEMAS["hotel_spans"]})
    # attention checks: ann passes both, bob fails both (spans on the error-free text; Misleading, not Incorrect)
    assert "4 check annotations (2 error-free, 2 with an obvious error) by 2 annotators: 50% passed." in markdown
    assert cells(table_row(markdown, "bob", "**Attention checks per annotator**"))[1:] == ["2", "0", "0.000"]
    # qualification: ann 1 + 1 point, bob 0 + 0; the pass mark of 3 is out of reach with 2 examples
    assert "2 annotators took the qualification; 0 qualified (0%), with scores from 0 to 2 out of 2." in markdown
    # quick submissions: bob's 1 s on t4 is the fastest
    assert "1 annotation flagged." in markdown
    assert cells(table_row(markdown, "qc", "**Quick submissions to review**"))[1:4] == ["t4", "bob-t4", "bob"]
    # groups: A (t1, t3) has spans 0, 1, 1, 0 -> 0.5 per summary; B (t2, t4) 1, 0, 1, 2 -> 1.0
    assert "spans_per_summary: group A 0.50 against group B 1.00" in markdown
    # impression: clean annotations 6, 6, 6 -> 6.00; with errors 3, 4, 5, 4, 2 -> 3.60; Welch's t =
    # 2.4 / sqrt(1.3 / 5) = 4.71 (the clean side has no spread)
    assert "Summaries without errors average 6.00, those with errors 3.60 (Welch's t 4.71" in markdown
    # per type: Incorrect (ann t2: 3, bob t4: 2) 2.5; Misleading (ann t3 4, bob t1 5, bob t2 4) 4.33;
    # Not Checkable (bob t4 alone: 2) costs the most, 4 points below 6
    worst = "Not Checkable costs the most: mean 2.00, 4.00 points below the no-error mean, over 1 annotation."
    assert worst in markdown
    assert cells(table_row(markdown, "Incorrect", "**Impression per error type**"))[1:4] == ["2", "2.500", "3.500"]
    # the model marks only the planted error; with two humans a clear majority needs both to agree
    assert "### Model predictions against humans" in markdown and "(always no error)" in markdown
    for title in ("#### Attention checks", "#### Qualification scores", "#### Quick submissions",
                  "#### Group A against group B", "#### Impression against errors"):  # fmt: skip
        assert title in markdown, title


def test_shown_tables_name_versions_short_whatever_the_string_dtype():
    """A table whose judge column is pandas' ``str`` dtype (not ``object``) is shortened too: a
    sentence saying "llm 370adbd7" beside a table saying the 40-character version reads as two judges.
    The CSV data keeps the full string."""
    from judgelab.analysis.report.blocks import Section, Table
    from judgelab.analysis.report.versions import short_names, shorten

    version = "judgelab-llm-370adbd7bf-hotel_spans-144fba54ef"
    for dtype in (object, "string", "str"):
        shown = pd.DataFrame({"judge": pd.Series([version], dtype=dtype), "n": [3]})
        section = Section("judges", [Table("t", f"Judge {version}", shown, data=shown.copy())])
        shorten([section], short_names([f"model:{version}"]))
        table = section.blocks[0]
        assert table.shown["judge"].tolist() == ["llm 370adbd7"], dtype
        assert table.caption == "Judge llm 370adbd7"
        assert table.csv_data["judge"].tolist() == [version]


def test_released_caches_are_let_go_before_the_largest_sections() -> None:
    """The span sections' and the review's cached inputs are dropped after the last builder that
    reads them: each builder in RELEASE_AFTER is one of the report's, placed before the judges'
    and the estimates' sections, and after every builder that reads what it lets go."""
    from judgelab.analysis.report.sections import (
        RELEASE_AFTER,
        estimates_section,
        judges_section,
        model_agreement_section,
        rating_distribution_section,
        rubber_stamping_section,
        schema_sections,
        span_agreement_section,
        span_section,
        suggestions_section,
    )

    order = SECTION_BUILDERS.index
    for builder in RELEASE_AFTER:
        assert builder in SECTION_BUILDERS
        assert order(builder) < order(judges_section) < order(estimates_section)
    readers = {"span_inputs": [span_agreement_section, model_agreement_section],
               "usable_human": [rating_distribution_section, schema_sections, span_section, span_agreement_section],
               "annotation_times": [suggestions_section, rubber_stamping_section]}  # fmt: skip
    for key, users in readers.items():
        (after,) = [builder for builder, keys in RELEASE_AFTER.items() if key in keys]
        assert all(order(user) <= order(after) for user in users)


def test_model_comparison_keeps_each_raters_latest_annotation_and_never_lets_sources_compete():
    """A rater's older annotation of a task is left out; a model's rows and a human's, both
    without an annotator's name (tables written by another tool), are two raters, not one."""
    from judgelab.analysis.report.sections.models import _latest

    rows = pd.DataFrame(
        {
            "task_id": [1, 1, 1, 1, 1, 1],
            "item": ["q1", "q2", "q1", "q1", "q1", "q1"],
            "source": ["human", "human", "human", "human", "model:x", "model:y"],
            "annotator": ["a", "a", "a", None, None, None],
            "annotation_id": [10, 10, 11, 12, 13, 14],
            "updated_at": ["2024-01-01T00:00:00Z"] * 2
            + ["2024-01-03T00:00:00Z", "2024-01-01T00:00:00Z"]
            + ["2024-01-02T00:00:00Z", "2024-01-02T00:00:00Z"],
        }
    )
    assert sorted(_latest(rows)["annotation_id"]) == [11, 12, 13, 14]
    assert sorted(_latest(rows[rows["annotation_id"] != 11])["annotation_id"]) == [10, 10, 12, 13, 14]
