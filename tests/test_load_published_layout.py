"""``judgelab load`` reads a published data set as it is published: StorySumm's judges in
``predictions/`` beside ``storysumm.json``, the evaluation interface's gold labels in
``combined.json`` beside its annotations, and says what it found and what it did not. The
evaluation-interface annotators' summary-level faithfulness is their own verdict by default, or
derived from their line labels (``--summary-verdict lines``); the report says which."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from shared_data import SHARED_DATA
from test_report_cli import interface_files, run, storysumm_files, write


def loaded(out: Path) -> pd.DataFrame:
    return pd.read_parquet(out / "judgments.parquet")


def test_storysumm_reads_the_judges_beside_the_file_and_says_so(tmp_path: Path) -> None:
    storysumm, predictions = storysumm_files(tmp_path / "in")
    result = run("load", "storysumm", storysumm, "--out", tmp_path / "t")
    assert result.exit_code == 0, result.output
    assert "judges: 2 from predictions/ beside storysumm.json (gpt4, minicheck)" in result.output
    assert {"gold", "model:gpt4", "model:minicheck"} == set(loaded(tmp_path / "t")["source"])
    folder = run("load", "storysumm", storysumm.parent, "--out", tmp_path / "f")  # the folder as PATH
    assert folder.exit_code == 0 and "judges: 2 from predictions/ beside storysumm.json" in folder.output

    shutil.rmtree(predictions)
    bare = run("load", "storysumm", storysumm, "--out", tmp_path / "bare")
    assert bare.exit_code == 0, bare.output
    assert "judges: none (no predictions/ folder of judges' .json files beside storysumm.json" in bare.output
    assert "the report has no judge table and no alt-test" in bare.output
    assert set(loaded(tmp_path / "bare")["source"]) == {"gold"}


def test_evaluation_interface_reads_combined_beside_the_file_and_says_so(tmp_path: Path) -> None:
    annotations, combined = interface_files(tmp_path / "in")
    result = run("load", "evaluation_interface", annotations, "--out", tmp_path / "t")
    assert result.exit_code == 0, result.output
    assert "gold labels: 2 summary label(s) from combined.json beside annotations_pl_latest.json" in result.output
    assert "their own summary verdict (the default" in result.output
    assert "gold" in set(loaded(tmp_path / "t")["source"])
    combined.unlink()
    bare = run("load", "evaluation_interface", annotations, "--out", tmp_path / "bare")
    assert bare.exit_code == 0
    assert "gold labels: none (no combined.json beside annotations_pl_latest.json" in bare.output
    assert "gold" not in set(loaded(tmp_path / "bare")["source"])
    refused = run("load", "storysumm", annotations, "--summary-verdict", "lines", "--out", tmp_path / "x")
    assert refused.exit_code == 1 and "--summary-verdict only applies to evaluation_interface" in refused.output


def test_the_summary_verdict_is_the_annotators_own_or_derived_from_their_lines(tmp_path: Path) -> None:
    def record(task: str, user: str, lines: list[str], full: str) -> dict:
        annotation = {f"consistent_{i}": v for i, v in enumerate(lines)} | {"consistent_full": full}
        return {"id": task, "username": user, "story": "S.", "summary": "A. B.", "annotation": annotation}

    records = [
        record("s1", "ann", ["Yes", "No"], "Yes"),  # says faithful, a line inconsistent: the two readings differ
        record("s1", "bob", ["Yes", "N/A, just commentary"], "Yes"),  # N/A is not inconsistent
        record("s2", "ann", ["No", "Yes"], "No"),
    ]
    annotations = write(tmp_path / "in" / "annotations_pl_latest.json", json.dumps(records))
    verdicts = {}
    for mode in ("own", "lines"):
        result = run("load", "evaluation_interface", annotations, "--summary-verdict", mode, "--out", tmp_path / mode)
        assert result.exit_code == 0, result.output
        judgments = loaded(tmp_path / mode)
        faithful = judgments[judgments["item"] == "faithful"]
        keys = zip(faithful["task_id"], faithful["annotator"], strict=True)
        verdicts[mode] = dict(zip(keys, faithful["value"], strict=True))
        tasks = pd.read_parquet(tmp_path / mode / "tasks.parquet")
        assert set(tasks["faithful_from"]) == {"their own summary verdict" if mode == "own" else "their line labels"}
    assert verdicts["own"] == {("s1", "ann"): "Faithful", ("s1", "bob"): "Faithful", ("s2", "ann"): "Unfaithful"}
    assert verdicts["lines"] == {("s1", "ann"): "Unfaithful", ("s1", "bob"): "Faithful", ("s2", "ann"): "Unfaithful"}


needs_data = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data is not present")


@needs_data
def test_on_the_published_data_the_two_readings_differ_and_the_report_names_the_one_used(tmp_path: Path) -> None:
    """StorySumm's 96 summaries: the three main annotators' own and line-derived verdicts differ on 8
    of 288 labels, and 5 of the 27 judge x epsilon alt-test verdicts (all summaries) change."""
    data = SHARED_DATA
    assert run("load", "storysumm", data / "storysumm" / "storysumm.json", "--out", tmp_path / "ss").exit_code == 0
    passes, reports = {}, {}
    for mode in ("own", "lines"):
        interface = data / "evaluation_interface" / "annotations_pl_latest.json"
        result = run("load", "evaluation_interface", interface, "--summary-verdict", mode, "--out", tmp_path / mode)
        assert result.exit_code == 0, result.output
        report = run("report", "--tables", tmp_path / "ss", "--tables", tmp_path / mode, "--out", tmp_path / f"r{mode}")
        assert report.exit_code == 0, report.output
        calibration = pd.read_csv(tmp_path / f"r{mode}" / "storysumm" / "judge_calibration.csv")
        pooled = calibration[(calibration["split"] == "(all)") & (calibration["group"] == "faithful")]
        passes[mode] = pooled.set_index("judge")[["passes_0.1", "passes_0.15", "passes_0.2"]]
        reports[mode] = (tmp_path / f"r{mode}" / "storysumm" / "report.md").read_text(encoding="utf-8")
    assert passes["own"].shape == (9, 3)  # the judges from predictions/ beside storysumm.json
    assert int((passes["own"] != passes["lines"].loc[passes["own"].index]).to_numpy().sum()) == 5
    said = "The summary-level faithfulness of the human annotators of project evaluation_interface is"
    assert (
        f"{said} their own summary verdict, as 'judgelab load evaluation_interface' loads it by default"
        in (reports["own"])
    )
    assert "differ on 8 of 288 summary labels (one per annotator and summary)" in reports["own"]
    assert f"{said} derived from their line labels" in reports["lines"]
