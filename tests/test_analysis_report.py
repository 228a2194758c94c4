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

from analysis import (
    ReportPaths,
    annotation_counts_per_annotator,
    build_report,
    counts_by_source,
    span_counts,
)
from analysis.report_blocks import Paragraph, Section
from analysis.report_sections import SECTION_BUILDERS, ProjectData

SCHEMAS = {
    "augmentation_quality": {
        "name": "augmentation_quality",
        "title": "Augmentation quality",
        "scales": {"SP": {"min": 1, "max": 3}, "SC": {"min": 1, "max": 3}},
        "items": {"SP": {"kind": "ordinal"}, "SC": {"kind": "ordinal"}, "notes": {"kind": "text"}},
        "agreement_targets": {"cohen_kappa": 0.60, "exact_agreement": 0.60},
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
    header = cells(table_row(markdown, "item", "## Project aug"))
    sp = dict(zip(header, cells(table_row(markdown, "SP", "## Project aug")), strict=True))
    sc = dict(zip(header, cells(table_row(markdown, "SC", "## Project aug")), strict=True))
    assert sp["n_units"] == "6" and sp["n_annotators"] == "2" and sp["n_annotations"] == "12"
    assert (sp["exact_agreement"], sp["cohen_kappa"], sp["fleiss_kappa"]) == (
        "0.667",
        "0.455",
        "0.455",
    )
    assert (sc["exact_agreement"], sc["cohen_kappa"], sc["fleiss_kappa"]) == (
        "0.500",
        "0.250",
        "0.122",
    )
    impression = dict(zip(header, cells(table_row(markdown, "impression", "## Project hotel")), strict=True))
    assert (impression["n_units"], impression["exact_agreement"], impression["cohen_kappa"]) == (
        "3",
        "0.667",
        "0.500",
    )
    no_errors = dict(zip(header, cells(table_row(markdown, "no_errors", "## Project hotel")), strict=True))
    assert (no_errors["kind"], no_errors["exact_agreement"], no_errors["cohen_kappa"]) == (
        "flag",
        "1.000",
        "1.000",
    )


def test_markdown_explains_numbers_in_sentences(report: ReportPaths) -> None:
    markdown = report.markdown.read_text(encoding="utf-8")
    assert "SP (ordinal): 6 tasks were rated by two or more of the 2 annotators" in markdown
    assert "67% of the pairs of answers on the same task are identical (exact agreement 0.667)" in markdown
    assert "Cohen's kappa is 0.455 (moderate)" in markdown
    assert "Cohen's kappa is 0.250 (fair)" in markdown
    assert "Cohen's kappa falls short of the guideline's target of 0.60." in markdown
    assert "The exact agreement meets the guideline's target of 0.60." in markdown
    assert "Exact agreement is the share of pairs of annotators" in markdown
    assert "human: 5 spans in 4 annotations; 2 tasks have at least one span (67% of" in markdown
    assert "1 annotation was cancelled" not in markdown  # ann cancelled 2 in aug
    assert "2 annotations were cancelled (skipped)" in markdown


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
    ):
        assert f">{title}</h" in html, title
    assert '<td class="number">0.455</td>' in html
    assert not re.search(r"""(src|href)=["']https?:""", html)
    assert "<script" not in html and "<link" not in html
    if _has_matplotlib():
        assert ">Rating distributions</h" in html
        assert 'src="data:image/png;base64,' in html


def test_agreement_csv_holds_unrounded_values(report: ReportPaths) -> None:
    agreement = pd.read_csv(report.csv["agreement"])
    assert agreement[["project", "item"]].values.tolist() == [
        ["aug", "SC"], ["aug", "SP"], ["hotel", "impression"], ["hotel", "no_errors"],
    ]  # fmt: skip
    sc = agreement.set_index("item").loc["SC"]
    assert sc.cohen_kappa == pytest.approx(0.25) and sc.fleiss_kappa == pytest.approx(10 / 82)


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
    assert row[:6] == ["Coherence", "nominal", "1", "2", "2", "1.000"]
    assert row[6:8] == ["n/a", "n/a"] and "same" in row[8]


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
