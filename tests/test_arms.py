"""The anchoring design: ``judgelab design arms`` puts tasks in a "suggested" and a "blind" arm
(stratified, seeded), and blind tasks never get a prediction: not from ``judgelab preannotate``
(Label Studio's retrieval or ``--push``), and not from Label Studio itself when a blind task is
opened (the backend answers it without a result), on a real Label Studio with the backend."""

from __future__ import annotations

import json
import shlex
from collections import Counter

import pytest
from click.testing import CliRunner

from judgelab.configs.schema import get_schema
from judgelab.sync.backend_link import connect_backend
from judgelab.sync.bulk_predict import push_predictions
from judgelab.sync.cli import main
from judgelab.sync.study_design import StudyDesignError, assign_arms, split_by_arm

SCHEMA = "augmentation_quality"


def tasks(n: int = 24) -> list[dict]:
    models = ["Llama3.1-8b", "Mistral-Nemo", "Qwen2.5-14b"]
    return [{"id": f"t{i}", "model": models[i % 3], "split": "a" if i < n // 2 else "b"} for i in range(n)]


def test_arms_are_balanced_within_each_stratum_and_seeded():
    out = assign_arms(tasks(), strata=["model"], seed=3)
    assert [t["id"] for t in out] == [t["id"] for t in tasks()]  # order kept
    per_model = Counter((t["model"], t["arm"]) for t in out)
    assert all(per_model[(m, "blind")] == per_model[(m, "suggested")] == 4 for m in {t["model"] for t in out})
    assert out == assign_arms(tasks(), strata=["model"], seed=3)
    assert [t["arm"] for t in out] != [t["arm"] for t in assign_arms(tasks(), strata=["model"], seed=4)]
    share = assign_arms(tasks(), blind_share=0.25)
    assert Counter(t["arm"] for t in share) == {"blind": 6, "suggested": 18}


def test_both_arms_copies_are_paired_and_checks_stay_out():
    checks = [{"id": "c1", "check": "error_free"}]
    out = assign_arms([*tasks(2), *checks], both=True)
    assert [(t["id"], t.get("arm"), t.get("arm_of")) for t in out] == [
        ("t0@suggested", "suggested", "t0"),
        ("t0@blind", "blind", "t0"),
        ("t1@suggested", "suggested", "t1"),
        ("t1@blind", "blind", "t1"),
        ("c1", None, None),
    ]
    with pytest.raises(StudyDesignError, match="no arm"):
        split_by_arm(out)
    with pytest.raises(StudyDesignError, match="between 0 and 1"):
        assign_arms(tasks(), blind_share=1.5)


def _samples_file(path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for task in get_schema(SCHEMA).samples():
            out.write(json.dumps({**task["data"], "id": f"arms-{task['data']['id']}"}, ensure_ascii=False) + "\n")


def _predictions_per_task(client, project_id: int) -> dict[str, int]:
    counts = {}
    for task in client.tasks.list(project=project_id, fields="all"):
        counts[task.data["id"]] = len(client.predictions.list(task=task.id))
    return counts


ARMS_MARKER = "anchoring-arms"  # the README's block, run as written


def _readme_lines() -> list[str]:
    from readme_commands import block_after

    return block_after(ARMS_MARKER)


TITLE = "Anchoring study"  # the README's


@pytest.mark.integration
def test_blind_tasks_get_no_prediction_from_preannotate_nor_when_opened(live_stack, tmp_path, monkeypatch):
    client = live_stack.client
    for old in [p for p in client.projects.list() if p.title == TITLE]:
        client.projects.delete(id=old.id)
    monkeypatch.chdir(tmp_path)
    _samples_file(tmp_path / "tasks.jsonl")
    env = {
        "JUDGELAB_LS_URL": live_stack.url,
        "JUDGELAB_LS_TOKEN": live_stack.creds.token,
        "JUDGELAB_BACKEND_URL": live_stack.backend_url,
    }
    design, import_line, preannotate = _readme_lines()
    runner = CliRunner()

    def run(line):
        args = shlex.split(line)
        assert args[0] == "judgelab", line
        result = runner.invoke(main, args[1:], env=env)
        assert result.exit_code == 0, f"{line}\n{result.output}"
        return result.output

    designed = run(design)
    assert "suggested: 5 task(s), blind: 6 task(s)" in designed
    assert "note: each task is in one arm" in designed and "--both puts every task in both arms" in designed
    assert "11 imported, 0 already in project" in run(import_line)
    project = next(p for p in client.projects.list() if p.title == TITLE)
    try:
        first = run(preannotate)
        assert "6 blind-arm task(s) left without one by design" in first
        assert "5/11 tasks have a prediction" in first
        arms = {t["data"]["id"]: t["data"]["arm"] for t in json.loads((tmp_path / "arms.json").read_text())}
        counts = _predictions_per_task(client, project.id)
        assert counts == {key: (1 if arm == "suggested" else 0) for key, arm in arms.items()}
        # --push: the blind tasks are not even sent, and are not counted as unfinished
        link = connect_backend(client, project.id, live_stack.backend_url)
        report = push_predictions(client, project.id, live_stack.backend_url, link.model_version)
        assert (report.blind, report.pushed, report.unfinished) == (6, 0, 0)
        # the suggested arm's predictions gone, a push mixes both arms in its chunks (the blind arm
        # left out as each chunk's data is read): the suggested arm's come back, none for the blind
        for prediction in client.predictions.list(project=project.id):
            client.predictions.delete(id=prediction.id)
        report = push_predictions(client, project.id, live_stack.backend_url, link.model_version)
        assert (report.tasks, report.already, report.blind, report.pushed, report.unfinished) == (11, 0, 6, 5, 0)
        assert _predictions_per_task(client, project.id) == counts
        # Label Studio asks the backend itself when a task without predictions is opened (its
        # "show predictions to annotators" default) and when the Data Manager lists tasks with
        # "evaluate predictions automatically": the backend answers blind tasks without a result
        client.projects.update(id=project.id, evaluate_predictions_automatically=True)
        blind_ids = [t.id for t in client.tasks.list(project=project.id, fields="all") if t.data.get("arm") == "blind"]
        for task_id in blind_ids:
            opened = client.tasks.get(id=task_id)
            assert not opened.predictions
        after = _predictions_per_task(client, project.id)
        assert after == counts
    finally:
        client.projects.delete(id=project.id)


def _row(task, annotation, annotator, source, value, parent=None, lead=None):
    return {"project": 1, "task_id": task, "annotation_id": annotation, "annotator": annotator, "source": source,
            "item": "verdict", "value": value, "created_at": "2026-01-01T00:00:00Z", "lead_time": lead,
            "was_cancelled": False, "ground_truth": False, "parent_prediction": parent}  # fmt: skip


def test_paired_arms_compared_by_hand():
    """Two tasks in both arms (copies 1/2 of p1 and 3/4 of p2); the model suggested 'yes' on p1 and
    'no' on p2; the reference answer is 'yes' on both."""
    import pandas as pd

    from judgelab.analysis.arms import compare_arms

    tasks = pd.DataFrame({"project": 1, "task_id": [1, 2, 3, 4], "arm": ["suggested", "blind"] * 2,
                          "arm_of": ["p1", "p1", "p2", "p2"]})  # fmt: skip
    answers = {1: ("yes", "yes"), 2: ("no", "yes"), 3: ("no", "no"), 4: ("yes", "yes")}
    parents = {1: 10, 3: 11}
    rows = [_row(1, "prediction:10", "m", "model:m", "yes"), _row(3, "prediction:11", "m", "model:m", "no")]
    for task, values in answers.items():
        for k, value in enumerate(values):
            rows.append(_row(task, f"{task}{k}", f"h{k}", "human", value, parents.get(task), 10.0 + task))
        rows.append(_row(task, f"gold{task}", "gold", "gold", "yes"))
    judgments = pd.DataFrame(rows)
    result = compare_arms(tasks, judgments, judgments.iloc[0:0], None, n_boot=50)
    assert result.paired and result.suggestion_source == "model:m" and not result.notes
    table = result.comparisons.set_index("measure")
    reference = table.loc["agreement with the reference answers"]
    assert (reference["suggested"], reference["blind"], reference["difference"]) == (0.5, 0.75, -0.25)
    other = table.loc["agreement with the other arm's majority"]  # p1's blind arm has no majority
    assert (other["suggested"], other["n_suggested"], other["blind"], other["n_blind"]) == (0.0, 1, 0.25, 2)
    model = table.loc["agreement with the model's answer (suggestion)"]
    assert (model["suggested"], model["blind"], model["difference"]) == (1.0, 0.25, 0.75)
    time = table.loc["lead time per task (seconds)"]
    assert (time["suggested"], time["blind"]) == (12.0, 13.0)
    assert list(result.counts["n_tasks"]) == [2, 2]
