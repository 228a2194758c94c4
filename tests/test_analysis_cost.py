"""The cost readers and the report's Cost section, from a ``usage`` table as ``judgelab sync``
writes it."""

from __future__ import annotations

import doctest

import pandas as pd

from judgelab.analysis import cost
from judgelab.analysis.report import build_report, build_reports

TASKS = pd.DataFrame({"project": [5, 5, 5], "task_id": [1, 2, 3], "schema": ["hotel_spans"] * 3})
USAGE = pd.DataFrame(
    {
        "project": [5, 5, 5, 5, 9],
        "task_id": [1, 2, 3, 1, 1],
        "model_version": ["judgelab-llm-a", "judgelab-llm-a", "judgelab-llm-a", "judgelab-llm-b-k3", "other"],
        "model": ["a", "a", "a", "b", "a"],
        "requests": [1, 1, 0, 1, 1],
        "answers": [1, 1, 0, 3, 1],
        "cached": [0, 0, 1, 0, 0],
        "unreported": [0, 0, 0, 0, 0],
        "unpriced": [0, 0, 0, 0, 0],
        "prompt_tokens": [1000, 3000, 0, 1000, 50],
        "completion_tokens": [100, 100, 0, 300, 5],
        "cost": [0.001, 0.002, 0.0, 0.006, 1.0],
        "backend": ["http://b"] * 5,
    }
)


def test_doctests():
    from judgelab.analysis.report.sections import cost as cost_section

    assert doctest.testmod(cost).failed == 0 and doctest.testmod(cost_section).failed == 0


def test_cost_per_model_version_and_per_task():
    own = USAGE[USAGE["project"] == 5]
    per_version = cost.cost_per_model_version(own).set_index("model_version")
    assert per_version.loc["judgelab-llm-a", ["tasks", "requests", "cached", "prompt_tokens"]].tolist() == [
        3,
        2,
        1,
        4000,
    ]
    assert per_version.loc["judgelab-llm-a", "cost_per_task"] == 0.001
    assert per_version.loc["judgelab-llm-b-k3", "answers"] == 3
    per_task = cost.cost_per_task(own).set_index("task_id")
    assert per_task.loc[1, "cost"] == 0.007 and per_task.loc[3, "cost"] == 0.0
    unpriced = cost.cost_per_model_version(own.assign(cost=None))
    assert unpriced["cost"].isna().all()


def test_the_report_has_a_cost_section_for_the_projects_with_usage(tmp_path):
    tables = {"tasks": TASKS, "judgments": pd.DataFrame(), "spans": pd.DataFrame(), "usage": USAGE}
    paths = build_report(tables, {}, tmp_path / "one")
    markdown = paths.markdown.read_text()
    assert "## Cost" in markdown or "### Cost" in markdown
    assert (
        "sent 3 request(s) using 5,000 prompt and 500 completion tokens; 1 answer(s) came from the response cache"
        in markdown
    )
    assert "it cost 0.009 in all: 0.002 for the median task, 0.007 for the dearest" in markdown
    assert "judgelab-llm-b-k3" in markdown and "| answers |" in markdown  # samples: 3 answers in 1 request
    csv = pd.read_csv(paths.csv["cost_per_task"])
    assert sorted(csv["task_id"]) == [1, 2, 3]  # project 9's row is not project 5's
    no_usage = build_report({"tasks": TASKS}, {}, tmp_path / "two")
    assert "Cost" not in no_usage.markdown.read_text()
    index = build_reports(tables, {}, tmp_path / "many")
    assert "Cost" in index.reports[0].paths.markdown.read_text()
