"""A tick box (an item of kind ``flag``: HotelCheckSpan's "no errors" box) across the report.

A tick box has a row in the judgments only where it was ticked. Every section that compares or
estimates it must count the tasks where a rater answered without ticking it as ``unchecked``:
the study's estimate of the share of tasks with the box ticked, the judges' units and the
models against the human majority. Before, the estimate was the share among the tasks somebody
ticked, the judges' units left out the tasks nobody ticked, and a model agreed with the human
majority on every unit (only the ticked rows were compared).

Nine tasks, repeated four times (36): three annotators and a judge rate every task and tick the
box as below; a rater who does not tick it marks an error span, except on the ninth task, where
nobody ticks or marks anything. Every expected number is counted by hand in the comments.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.analysis.report import build_report
from judgelab.analysis.report.data import ReportOptions
from judgelab.analysis.report.sections.models import _human_baseline_nominal
from judgelab.configs.tables import SPAN_COLUMNS

META = {"scales": {"impression": {"min": 1, "max": 7}}, "items": {"no_errors": {"kind": "flag"}}}
TICKED = {"a": {1, 2, 3}, "b": {1, 2, 4}, "c": {1, 5}, "model:j": {1, 2, 3, 6}}  # task (1-9) -> who ticked
NOBODY = 9  # nobody ticks the box or marks a span there
REPEATS = 4
N_TASKS = 9 * REPEATS


def _row(task: int, rater: str, item: str, value: str) -> dict:
    model = rater.startswith("model:")
    return {
        "project": 1,
        "task_id": task,
        "annotation_id": f"p{task}" if model else f"{rater}{task}",
        "annotator": None if model else rater,
        "source": rater if model else "human",
        "item": item,
        "value": value,
        "created_at": "2025-05-01T10:00:00Z",
        "updated_at": None,
        "lead_time": 10.0,
        "was_cancelled": False,
        "ground_truth": False,
    }


def tables() -> dict[str, pd.DataFrame]:
    judgments, spans = [], []
    for task in range(1, N_TASKS + 1):
        pattern = (task - 1) % 9 + 1
        for rater, ticked in TICKED.items():
            judgments.append(_row(task, rater, "impression", "5" if pattern in ticked else "3"))
            if pattern in ticked:
                judgments.append(_row(task, rater, "no_errors", "I did not find any errors in the summary"))
            elif pattern != NOBODY:
                row = _row(task, rater, "", "")
                owner = {k: row[k] for k in ("project", "task_id", "annotation_id", "annotator", "source")}
                spans.append({**owner, "label": "Incorrect", "start": 0, "end": 4, "text": "Nice", "field": "summary"})
    tasks = pd.DataFrame(
        {"project": 1, "task_id": range(1, N_TASKS + 1), "schema": "mine", "summary": "Nice hotel by the sea."}
    )
    return {"tasks": tasks, "judgments": pd.DataFrame(judgments), "spans": pd.DataFrame(spans, columns=SPAN_COLUMNS)}


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict[str, pd.DataFrame]:
    out = tmp_path_factory.mktemp("tick-boxes")
    paths = build_report(tables(), {"mine": META}, out, options=ReportOptions(n_boot=20))
    return {name: pd.read_csv(path) for name, path in paths.csv.items()}


def test_the_share_of_tasks_with_the_box_ticked_counts_every_task(report):
    """Humans ticking per task (1-9): 3, 2, 1, 1, 1, 0, 0, 0, 0 of 3: a mean share of 8/27 over all
    tasks, which the judge answered (36 judged, 36 labelled); not 8/15, the share over the five
    tasks a human ticked."""
    estimates = report["estimates"]
    found = estimates[(estimates["quantity"] == "no_errors = checked") & (estimates["judge"] == "model:j")].iloc[0]
    assert (found["n_judged"], found["n_labeled"]) == (N_TASKS, N_TASKS)
    assert found["human_estimate"] == pytest.approx(8 / 27)
    assert found["judge_estimate"] == pytest.approx(4 / 9)  # the judge ticks on 4 of the 9
    spans = estimates[(estimates["quantity"] == "spans: any") & (estimates["judge"] == "model:j")].iloc[0]
    assert spans["human_estimate"] == pytest.approx(1 - 8 / 27 - 3 / 27)  # the ninth task: no span either


def test_the_models_agreement_on_the_box_is_counted_over_every_task(report):
    """Human majority per task: checked on 1-2, unchecked on 3-9; the judge ticks 1, 2, 3, 6: it
    agrees on 7 of 9 tasks; Cohen's kappa (7/9 - 43/81) / (1 - 43/81) = 20/38. One human against
    the other two (a strict majority of two is both alike): task 1 three of three, tasks 2-5 none
    of one each, tasks 6-9 three of three each: 15 of 19."""
    rows = report["models_vs_humans"]
    found = rows[(rows["model"] == "model:j") & (rows["item"] == "no_errors")].iloc[0]
    assert found["n_units"] == N_TASKS
    assert found["agreement_with_majority"] == pytest.approx(7 / 9)
    assert found["cohen_kappa"] == pytest.approx(20 / 38)
    assert found["human_baseline"] == pytest.approx(15 / 19)
    assert found["n_human_baseline"] == 19 * REPEATS


def test_the_judges_units_include_the_tasks_nobody_ticked_or_marked(report):
    """The judge and the three annotators answered all 36 tasks: 36 units of the box, and 36 of
    "spans: any", the tasks nobody marked a span on included (before: 24 and 32)."""
    calibration = report["judge_calibration"]
    units = calibration[calibration["judge"] == "model:j"].set_index("group")["n_units"]
    assert units["no_errors"] == N_TASKS
    assert units["spans: any"] == N_TASKS


def test_the_human_agreement_on_the_box_counts_the_unticked_answers_too(report):
    """The annotators' own agreement on the box (the agreement section) was already counted on
    every annotation, unticked ones as unchecked: 36 units there too."""
    agreement = report["agreement"]
    found = agreement[agreement["item"] == "no_errors"].iloc[0]
    assert found["n_units"] == N_TASKS


def _baseline_by_loop(humans: pd.DataFrame, units: list[str]) -> tuple[float, int]:
    """One human against the strict majority of the others, unit by unit (the rule as written)."""
    hits = total = 0
    for _, group in humans.groupby(units, sort=False):
        values = group["value"].astype(str).tolist()
        for index, value in enumerate(values):
            others = values[:index] + values[index + 1 :]
            if not others:
                continue
            top = max(set(others), key=others.count)
            if 2 * others.count(top) > len(others):
                total += 1
                hits += int(value == top)
    return (hits / total if total else float("nan")), total


@pytest.mark.parametrize("seed", range(6))
def test_one_human_against_the_others_is_the_rule_unit_by_unit(seed):
    """The models section counts the human yardstick on arrays; it equals the rule applied unit by
    unit, on units of one to five answers of up to four values."""
    rng = np.random.default_rng(seed)
    rows = [
        {"task_id": task, "item": "x", "value": str(rng.integers(0, 1 + seed % 4))}
        for task in range(60)
        for _ in range(int(rng.integers(1, 6)))
    ]
    humans = pd.DataFrame(rows)
    units = ["task_id", "item"]
    found, expected = _human_baseline_nominal(humans, units), _baseline_by_loop(humans, units)
    assert found[1] == expected[1]
    assert found[0] == pytest.approx(expected[0], nan_ok=True)
