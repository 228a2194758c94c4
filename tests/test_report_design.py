"""The report follows the study's design: the cut kept with the tables (else the project whole),
notes on the right project, vote tables on annotated texts, warnings on thin pairwise means, and a
front page. Small hand-made tables whose numbers are worked out in the comments."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.analysis.facets import Cut
from judgelab.analysis.report import build_report
from judgelab.analysis.report.data import ReportOptions
from judgelab.sync.cli import main

SCALE = {"min": 1, "max": 3}
META = {
    "name": "demo",
    "title": "Demo ratings",
    "scales": {"SP": SCALE},
    "items": {"SP": {"kind": "ordinal"}},
}
STUDY_CUT = Cut(("model",), total=True, origin="the demo study's analysis")
# model a: tasks 1-4, x and y agree on 1, 2, 3 and differ on 4 (3 vs 1): exact 3/4.
# model b: tasks 5-8, x and y agree on 5 only: exact 1/4. Pooled (all): 4/8 = 0.5.
RATINGS = {1: ("1", "1"), 2: ("2", "2"), 3: ("3", "3"), 4: ("3", "1"),
           5: ("2", "2"), 6: ("1", "2"), 7: ("3", "2"), 8: ("2", "3")}  # fmt: skip


def judgment(task: int, annotator: str, value: str, item: str = "SP", **extra: object) -> dict[str, object]:
    row = {
        "project": 6,
        "task_id": task,
        "annotation_id": f"{annotator}-{task}",
        "annotator": annotator,
        "source": "human",
        "item": item,
        "value": value,
        "created_at": f"2025-03-0{1 + task % 2}T09:00:00Z",
        "updated_at": None,
        "lead_time": 30.0 * task,
        "was_cancelled": False,
        "ground_truth": False,
    }
    return row | extra


def demo_tables(**task_extra: object) -> dict[str, pd.DataFrame]:
    tasks = [
        {"project": 6, "task_id": task, "schema": "demo", "model": "a" if task <= 4 else "b", **task_extra}
        for task in [*RATINGS, 9, 10]  # 9 and 10: not annotated yet
    ]
    judgments = [
        judgment(task, who, value) for task, pair in RATINGS.items() for who, value in zip("xy", pair, strict=True)
    ]
    return {"tasks": pd.DataFrame(tasks), "judgments": pd.DataFrame(judgments)}


def build(
    tmp_path: Path, tables: dict[str, pd.DataFrame], meta: dict = META, cut: Cut | None = STUDY_CUT, **options: object
):
    cuts = {"6": cut} if cut is not None else {}
    paths = build_report(tables, {"demo": meta}, tmp_path, options=ReportOptions(n_boot=20, cuts=cuts, **options))
    return paths, paths.markdown.read_text(encoding="utf-8")


def test_the_kept_cut_gives_every_cell_and_the_pooled_one(tmp_path: Path) -> None:
    paths, markdown = build(tmp_path, demo_tables())
    agreement = pd.read_csv(paths.csv["agreement"]).set_index("model")
    assert agreement.loc["a", "exact_agreement"] == pytest.approx(3 / 4)
    assert agreement.loc["b", "exact_agreement"] == pytest.approx(1 / 4)
    assert agreement.loc["(all)", "exact_agreement"] == pytest.approx(1 / 2)
    assert agreement["n_units"].tolist() == [4, 4, 8]
    assert "Every table and figure below is cut by model (the demo study's analysis)" in markdown
    assert "model = a: 5" not in markdown and "a: 4" in markdown  # tasks per cell, task 9 and 10 have model b
    counts = pd.read_csv(paths.csv["annotations_per_annotator"])
    assert set(counts["model"]) == {"a", "b", "(all)"}  # every table is cut, not only agreement


def test_a_report_that_pools_says_so_with_the_tasks_per_cell(tmp_path: Path) -> None:
    paths, markdown = build(tmp_path, demo_tables(), by=())
    assert "model" not in pd.read_csv(paths.csv["agreement"]).columns
    assert "This report pools all 10 tasks in one: it is not cut by model, the study's factors" in markdown
    assert "(tasks per model: a: 4; b: 6)" in markdown


def test_a_kept_factor_the_tasks_lack_is_named(tmp_path: Path) -> None:
    cut = Cut(("model", "round"), "round != 3", origin="the demo study's analysis")
    _, markdown = build(tmp_path, demo_tables(), cut=cut)
    assert "The study is analysed by model and round (the demo study's analysis), but these tasks have no round" in (
        markdown
    )
    assert "The study's filter (round != 3; the demo study's analysis) needs the field(s) round, which these" in (
        markdown
    )


def test_a_project_without_a_kept_cut_is_reported_whole(tmp_path: Path) -> None:
    """The schema's suggested factors are never applied by themselves: the report says how."""
    meta = {**META, "suggested_cut": {"by": ["model"]}}
    paths, markdown = build(tmp_path, demo_tables(), meta=meta, cut=None)
    agreement = pd.read_csv(paths.csv["agreement"])
    assert "model" not in agreement.columns and agreement["n_units"].tolist() == [8]
    assert "cut by model (" not in markdown and "are analysed (" not in markdown
    assert "This report takes the project whole. The schema's guideline analyses its study by model: " in markdown
    assert "`judgelab report --by model --keep-cut`" in markdown


def test_a_filter_says_how_many_tasks_it_left_out_for_an_empty_field(tmp_path: Path) -> None:
    tables = demo_tables()
    tables["tasks"].loc[tables["tasks"]["task_id"].isin([9, 10]), "model"] = None  # two tasks without a model
    tables["tasks"].loc[tables["tasks"]["task_id"] == 8, "model"] = ""
    _, markdown = build(tmp_path, tables, cut=Cut(where="model == 'b'", origin="the team's own"))
    # kept: 5, 6, 7 (model b); left out: 1-4 (model a) and 8, 9, 10 (empty)
    assert "Only tasks and answers with model == 'b' are analysed (the team's own): 7 of the 10 tasks are left " in (
        markdown
    )
    assert "3 because their model is empty." in markdown


def test_where_and_by_from_the_options(tmp_path: Path) -> None:
    paths, markdown = build(tmp_path, demo_tables(), by=("model",), where="annotator != 'nobody' and task_id < 5")
    agreement = pd.read_csv(paths.csv["agreement"])
    assert agreement["model"].tolist() == ["a"] and agreement["n_units"].tolist() == [4]
    assert "Only tasks and answers with annotator != 'nobody' and task_id < 5 are analysed (the filter given)" in (
        markdown
    )


def test_front_page_title_completion_findings_and_glossary_last(tmp_path: Path) -> None:
    tables = demo_tables(project_title="Pilot round 2", project_max_annotations=2, project_overlap_percent=100)
    paths, markdown = build(tmp_path, tables)
    headings = [line for line in markdown.splitlines() if line.startswith("## ")]
    assert headings == ["## Pilot round 2: Demo ratings", "## How to read this report"]
    assert markdown.index("### At a glance") < markdown.index("### Overview")
    # 8 annotated tasks with 2 annotations, tasks 9 and 10 with none; target 2 per task
    assert "of the 10 tasks, 2 have no human annotation yet, 0 have one, 8 two and 0 three or more" in markdown
    assert "The overlap target is 2 annotations per task (Label Studio's setting): 8 tasks (80%) have reached it" in (
        markdown
    )
    throughput = pd.read_csv(paths.csv["annotator_throughput"]).set_index("annotator")
    assert throughput.loc["x", "n_annotations"] == 8 and throughput.loc["x", "active_days"] == 2
    assert throughput.loc["x", "median_lead_time_s"] == pytest.approx(135.0)  # 30 * median(1..8)
    assert "Suggestions: this project has no model predictions" in markdown
    html = paths.html.read_text(encoding="utf-8")
    # the summary table comes first, each row from a section's own numbers, linking to it
    assert "**The study at a glance (the '(all)' rows: every cell pooled)**" in markdown
    assert markdown.index("**The study at a glance") < markdown.index("Every table and figure below is cut")
    glance = pd.read_csv(paths.csv["at_a_glance"])
    assert glance["topic"].tolist()[:2] == ["Completion", "Agreement"]
    assert glance.loc[0, "answer"] == "8 of 10 tasks annotated; 8 (80%) reached the target of 2 annotations each"
    agreement = glance[glance["topic"] == "Agreement"]
    assert agreement[["subject", "cell"]].values.tolist() == [["SP", "(all)"]]  # the pooled cell where there is one
    alpha = pd.read_csv(paths.csv["agreement"]).set_index("model").loc["(all)", "krippendorff_alpha"]
    assert agreement["value"].iloc[0] == pytest.approx(alpha)
    assert "| Agreement | SP | ordinal alpha" in markdown
    assert '<a href="#pilot-round-2-demo-ratings-agreement-per-item">Agreement per item &rarr;</a>' in html


def test_light_kappa_over_pairs_sharing_few_tasks_is_flagged(tmp_path: Path) -> None:
    """Three annotators: x and y share 8 tasks, z shares one task with each (a thin pair)."""
    tables = demo_tables()
    extra = [judgment(1, "z", "1")]
    tables["judgments"] = pd.concat([tables["judgments"], pd.DataFrame(extra)], ignore_index=True)
    paths, markdown = build(tmp_path, tables, by=())
    row = pd.read_csv(paths.csv["agreement"]).iloc[0]
    assert row["n_pairs"] == 3 and row["min_pair_units"] == 1
    assert "Caution: that kappa is a mean over 3 pairs of annotators, some sharing only 1 task" in markdown


def span_tables() -> dict[str, pd.DataFrame]:
    """Three texts annotated by a and b, five nobody annotated."""
    tasks = [{"project": "h", "task_id": task, "schema": "spans", "summary": "Shop is near. Pool."}
             for task in range(1, 9)]  # fmt: skip
    spans, judgments = [], []
    for task, marks in {1: ("a", "b"), 2: ("a",), 3: ()}.items():
        for annotator in ("a", "b"):
            judgments.append(judgment(task, annotator, "5", item="impression") | {"project": "h"})
            if annotator in marks:
                spans.append({"project": "h", "task_id": task, "annotation_id": f"{annotator}-{task}",
                              "annotator": annotator, "source": "human", "field": "summary", "start": 0, "end": 4,
                              "text": "Shop", "label": "Incorrect", "note": None})  # fmt: skip
    return {"tasks": pd.DataFrame(tasks), "judgments": pd.DataFrame(judgments), "spans": pd.DataFrame(spans)}


def test_vote_table_counts_annotated_texts_only(tmp_path: Path) -> None:
    """Before: the largest group was the 5 texts annotated by nobody ('flagged by all 0')."""
    paths = build_report(span_tables(), {}, tmp_path, options=ReportOptions(n_boot=0))
    markdown = paths.markdown.read_text(encoding="utf-8")
    votes = pd.read_csv(paths.csv["example_votes"])
    assert (votes["n_annotators"] > 0).all()
    any_label = votes[votes["label"] == "(any)"].set_index("votes")["n_examples"]
    assert any_label.to_dict() == {0: 1, 1: 1, 2: 1}  # text 3 nobody flagged, 2 one of two, 1 both
    assert "3 texts annotated by 2 annotators" in markdown
    assert "5 texts nobody has annotated yet are left out" in markdown
    assert "0 annotators" not in markdown


def basse_line(idx: str, coherence: str) -> str:
    anns = f'{{"Coherence": {coherence}, "Consistency": [5, 4, 5], "Fluency": [4, 4, 4], "Relevance": [3, 3, 2], ' \
           '"5W1H": [4, 4, 5]}'  # fmt: skip
    text = json.dumps({"idx": idx, "round": 1, "original_document": "Texto.",
                       "model_summaries": {"claude-base": {"summ": "Resumen.", "anns": "@"}}})  # fmt: skip
    return text.replace('"@"', anns)


def test_loader_notes_land_on_the_file_they_come_from(tmp_path: Path) -> None:
    """The two files share their task ids; only the Spanish one has a NaN. Before, the note had no
    project (its task id named two) and was printed on both reports."""
    folder = tmp_path / "basse"
    folder.mkdir()
    (folder / "BASSE.es.jsonl").write_text(basse_line("d1", "[5, NaN, 4]") + "\n", encoding="utf-8")
    (folder / "BASSE.eu.jsonl").write_text(basse_line("d1", "[5, 5, 4]") + "\n", encoding="utf-8")
    runner = CliRunner()
    loaded = runner.invoke(main, ["load", "basse", str(folder), "--out", str(tmp_path / "t")])
    assert loaded.exit_code == 0, loaded.output
    problems = pd.read_csv(tmp_path / "t" / "problems.csv")
    assert problems[["project", "file", "task_id"]].to_dict("records") == [
        {"project": "BASSE.es", "file": str(folder / "BASSE.es.jsonl"), "task_id": "d1#claude-base"}
    ]
    result = runner.invoke(main, ["report", "--tables", str(tmp_path / "t"), "--out", str(tmp_path / "r"),
                                  "--n-boot", "0"])  # fmt: skip
    assert result.exit_code == 0, result.output
    spanish = (tmp_path / "r" / "BASSE.es" / "report.md").read_text(encoding="utf-8")
    basque = (tmp_path / "r" / "BASSE.eu" / "report.md").read_text(encoding="utf-8")
    assert "While reading 1 file of this project (BASSE.es.jsonl), the loader noted 1 problem" in spanish
    assert "Loading notes" not in basque


def test_report_cli_names_an_unknown_field(tmp_path: Path) -> None:
    folder = tmp_path / "basse"
    folder.mkdir()
    (folder / "BASSE.es.jsonl").write_text(basse_line("d1", "[5, 5, 4]") + "\n", encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(main, ["load", "basse", str(folder), "--out", str(tmp_path / "t")]).exit_code == 0
    result = runner.invoke(main, ["report", "--tables", str(tmp_path / "t"), "--out", str(tmp_path / "r"),
                                  "--where", "langauge == 'es'"])  # fmt: skip
    assert result.exit_code != 0
    assert "--where: unknown field 'langauge'; task fields:" in result.output
    assert "language" in result.output
    result = runner.invoke(main, ["report", "--tables", str(tmp_path / "t"), "--out", str(tmp_path / "r"),
                                  "--where", "open('x')"])  # fmt: skip
    assert result.exit_code != 0 and "is not allowed" in result.output
