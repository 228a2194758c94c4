"""Report output that other tools execute: CSV cells a spreadsheet would run
as formulas, HTML from a model version in report.md; and a Likert project whose tasks each have
one rating, which the report must still describe."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

from judgelab.analysis import build_report
from judgelab.configs.schema import all_schemas

SCHEMAS = {name: schema.meta for name, schema in all_schemas().items()}
CRITERIA = ("Coherence", "Consistency", "Fluency", "Relevance", "5W")
FORMULAS = ['=HYPERLINK("http://evil.example","x")', "+SUM(1,2)", "-2+3*cmd", "@SUM(A1:A2)"]
HTML = "<img src=x onerror=alert(1)>"


def _tables(versions: list[str], annotators: list[str]) -> dict[str, pd.DataFrame]:
    tasks = pd.DataFrame(
        [
            {"project": 7, "task_id": t, "schema": "likert_rubric_es", "key": f"k{t}", "model": m}
            for t, m in enumerate(["claude", "llama3", "claude", "llama3", "claude", "llama3"], start=1)
        ]
    )
    rows = []
    for t in range(1, 7):
        for n, who in enumerate(annotators):
            for c in CRITERIA:
                rows.append(
                    {"project": 7, "task_id": t, "annotation_id": f"{t}-{n}", "annotator": who, "source": "human",
                     "item": c, "value": str(1 + (t + n) % 5), "created_at": "2025-03-01T09:00:00Z",
                     "updated_at": "2025-03-01T09:05:00Z", "lead_time": 30.0, "was_cancelled": False,
                     "ground_truth": False}
                )  # fmt: skip
        for v in versions:
            for c in CRITERIA:
                rows.append(
                    {"project": 7, "task_id": t, "annotation_id": f"prediction:{t}{v}", "annotator": v,
                     "source": f"model:{v}", "item": c, "value": str(1 + t % 5), "created_at": None,
                     "updated_at": None, "lead_time": None, "was_cancelled": False, "ground_truth": False}
                )  # fmt: skip
    return {"tasks": tasks, "judgments": pd.DataFrame(rows)}


def _cells(folder: Path) -> list[str]:
    cells = []
    for path in folder.glob("*.csv"):
        with path.open(encoding="utf-8", newline="") as handle:
            cells += [cell for row in csv.reader(handle) for cell in row]
    return cells


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(tmp_path):
    paths = build_report(_tables(FORMULAS[:2], FORMULAS[2:] + ["ann@example.org"]), SCHEMAS, tmp_path)
    cells = _cells(tmp_path)
    assert paths.csv and cells
    risky = [c for c in cells if c[:1] in ("=", "+", "-", "@")]
    assert all(_is_number(c) for c in risky), risky
    for value in FORMULAS:  # still there, readable, as text
        assert any(c.startswith("'" + value) or c.endswith(value) for c in cells), value
    assert "ann@example.org" in cells


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_html_from_a_model_version_is_escaped_in_markdown(tmp_path):
    paths = build_report(_tables([HTML], ["ann@example.org", "bob@example.org"]), SCHEMAS, tmp_path)
    markdown = paths.markdown.read_text(encoding="utf-8")
    assert "<img" not in markdown and "&lt;img src=x onerror=alert(1)>" in markdown
    assert HTML not in paths.html.read_text(encoding="utf-8")


def test_a_likert_project_with_one_rating_per_task_gets_its_report(tmp_path):
    paths = build_report(_tables([], ["ann@example.org"]), SCHEMAS, tmp_path)  # raised ValueError before
    markdown = paths.markdown.read_text(encoding="utf-8")
    assert "Ordinal alpha per criterion and model" in markdown
    assert "| claude | 0 |" in markdown  # no summary rated twice: no units, and no alpha


def test_report_and_load_out_pointing_at_a_file_are_clear_errors(tmp_path):
    from click.testing import CliRunner

    from judgelab.sync.cli import main
    from judgelab.sync.export import write_tables
    from judgelab.sync.tidy import TidyTables

    tables = _tables([], ["ann@example.org", "bob@example.org"])
    spans = pd.DataFrame(columns=["project", "task_id", "annotation_id", "annotator", "source", "field", "start",
                                  "end", "text", "label", "note"])  # fmt: skip
    write_tables(TidyTables(tables["tasks"], tables["judgments"], spans), tmp_path / "tables")
    target = tmp_path / "report.txt"
    target.write_text("a file", encoding="utf-8")
    result = CliRunner().invoke(main, ["report", "--tables", str(tmp_path / "tables"), "--out", str(target)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception
    assert "report.txt" in result.output and "Traceback" not in result.output
    data = tmp_path / "basse.jsonl"
    data.write_text('{"idx": 1, "model_summaries": {}}\n', encoding="utf-8")
    loaded = CliRunner().invoke(main, ["load", "basse", str(data), "--out", str(target)])
    assert loaded.exit_code == 1 and isinstance(loaded.exception, SystemExit), loaded.output
    assert "report.txt" in loaded.output
