"""``judgelab design sample``: the human sample for prediction-powered estimates. Unit tests of the
choice of tasks (uniform, stratified, active: probabilities summing to the budget, the floor, the
seed), and one flow on a real Label Studio with the real backend: a project pre-annotated by the
offline annotator, its sample drawn (the sampled tasks' meta, the sample project without predictions),
drawn again (nothing added), other arguments refused, and ``judgelab sync`` carrying the columns."""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from judgelab.sync.cli import main
from judgelab.sync.human_sample import (
    SampleError,
    SourceTask,
    choose_judge,
    choose_sample,
    filled_uncertainty,
    judge_uncertainty,
    sample_title,
    strata_fields,
    task_uncertainties,
)
from judgelab.sync.projects import sample_marker, sample_source_of
from judgelab.sync.tidy import sample_columns, tidy_from_export

SAMPLE_MARKER = "human-sample"  # docs/design.md's block, run as written below
TITLE = "Noticias 2025"  # the manual's


# --- the choice of tasks ----------------------------------------------------------------------


def _uncertainty(n: int = 40, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.05, 0.7, n)


def test_uniform_draws_exactly_the_budget_with_equal_probabilities():
    draw = choose_sample(6, _uncertainty(30), design="uniform", seed=3)
    assert np.allclose(draw.inclusion, 6 / 30) and math.isclose(draw.inclusion.sum(), 6)
    assert draw.sampled.sum() == 6
    again = choose_sample(6, _uncertainty(30), design="uniform", seed=3)
    assert (again.sampled == draw.sampled).all()
    other = [choose_sample(6, _uncertainty(30), design="uniform", seed=s).sampled for s in range(4, 8)]
    assert any((o != draw.sampled).any() for o in other), "the seed decides the draw"


def test_active_follows_the_judges_uncertainty_with_a_floor():
    u = np.array([0.0] * 10 + [0.5] * 10)
    draw = choose_sample(5, u, design="active", floor=0.2, seed=0)
    assert math.isclose(draw.inclusion.sum(), 5)
    assert draw.inclusion[:10].min() > 0, "the floor keeps sure tasks reachable"
    assert math.isclose(draw.inclusion[0], 5 * 0.2 / 20)
    assert draw.inclusion[10:].min() > 5 * draw.inclusion[:10].max()
    # each task on its own (Poisson): over many seeds the unsure half is drawn far more often
    counts = np.sum([choose_sample(5, u, design="active", seed=s).sampled for s in range(400)], axis=0)
    assert counts[10:].mean() > 5 * counts[:10].mean()
    assert abs(counts.sum() / 400 - 5) < 0.5, "the budget is met on average"
    capped = choose_sample(8, np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]), design="active")
    assert capped.inclusion.max() <= 1.0 and math.isclose(capped.inclusion.sum(), 8)


def test_stratified_gives_each_cell_its_allocation_exactly():
    cells = ["gpt-4o"] * 20 + ["llama"] * 10
    u = np.array([0.2] * 20 + [0.6] * 10)  # the judge is less sure on llama's summaries
    draw = choose_sample(6, u, design="stratified", strata=cells, seed=2)
    assert math.isclose(draw.inclusion.sum(), 6)
    picked = [c for c, s in zip(cells, draw.sampled, strict=True) if s]
    # each cell gets exactly its allocation n_h = N_h * pi_h, the same probability for its tasks,
    # and the cell where the judge is less sure the larger one (Neyman: N_h times mean uncertainty)
    for cell, members in (("gpt-4o", slice(0, 20)), ("llama", slice(20, 30))):
        pi = draw.inclusion[members]
        assert np.allclose(pi, pi[0]) and picked.count(cell) == round(pi.sum())
    assert draw.inclusion[20] > draw.inclusion[0]
    assert choose_sample(6, u, design="stratified", strata=cells, seed=2).sampled.tolist() == draw.sampled.tolist()


def test_bad_budgets_and_designs_are_clear_errors():
    with pytest.raises(SampleError, match="budget of 31 tasks, but the project has 30"):
        choose_sample(31, _uncertainty(30))
    with pytest.raises(SampleError, match="at least 1"):
        choose_sample(0, _uncertainty(30))
    with pytest.raises(SampleError, match="uniform, stratified, active"):
        choose_sample(3, _uncertainty(30), design="greedy")


def test_uncertainty_from_the_prediction_score():
    assert judge_uncertainty(0.75) == 0.5 and judge_uncertainty(1) == 0.0 and judge_uncertainty(0.0) == 1.0
    assert math.isnan(judge_uncertainty(None)) and math.isnan(judge_uncertainty(True))
    assert filled_uncertainty([0.1, math.nan, 0.4]).tolist() == [0.1, 0.4, 0.4]  # unknown: the most unsure
    assert filled_uncertainty([math.nan, math.nan]).tolist() == [1.0, 1.0]  # none known: all alike
    tasks = [SourceTask(i, {}, {}) for i in (1, 2, 3, 4)]
    preds = [
        {"id": 1, "task": 1, "model_version": "j", "score": 0.36},
        {"id": 2, "task": 1, "model_version": "j", "score": 0.91},  # the newest of the judge counts
        {"id": 3, "task": 2, "model_version": "other", "score": 0.0},
        {"id": 4, "task": 3, "model_version": "j", "score": None, "result": [{"score": 0.5}, {"score": 1.0}]},
    ]
    u, without = task_uncertainties(tasks, preds, "j")
    assert [round(x, 6) for x in u[:3] if not math.isnan(x)] == [0.3, 0.5]
    assert math.isnan(u[1]) and math.isnan(u[3]) and without == 2


def test_the_judge_is_named_or_the_only_or_current_one():
    assert choose_judge(["a", "a"], None, None, "p") == "a"
    assert choose_judge(["a", "b"], None, "b", "p") == "b"
    assert choose_judge(["a", "b"], "a", "b", "p") == "a"
    with pytest.raises(SampleError, match=r"several judges \(a, b\): choose one with --judge"):
        choose_judge(["a", "b"], None, "c", "project 3")
    with pytest.raises(SampleError, match="no predictions of --judge 'x'; its judges: a"):
        choose_judge(["a"], "x", None, "project 3")
    with pytest.raises(SampleError, match="project 3 has no predictions.*judgelab preannotate"):
        choose_judge([], None, None, "project 3")


def test_strata_come_from_the_schema_cut_else_model():
    from judgelab.configs.schema import get_schema

    tasks = [SourceTask(i, {"model": "ab"[i % 2], "augmentation_type": "x"}, {}) for i in range(6)]
    assert strata_fields(get_schema("augmentation_quality"), tasks, ()) == ["model"]  # one augmentation type
    assert strata_fields(get_schema("likert_rubric_es"), tasks, ()) == ["model"]
    assert strata_fields(None, tasks, ("augmentation_type",)) == ["augmentation_type"]
    with pytest.raises(SampleError, match="--by split: no task has such a field"):
        strata_fields(None, tasks, ("split",))


def test_markers_titles_and_tidy_columns():
    assert sample_source_of(f"x\n\n[judgelab:likert_rubric_es] {sample_marker(12)}") == 12
    assert sample_title("A" * 60).endswith(" (human sample)") and len(sample_title("A" * 60)) == 50
    meta = {"judgelab_key": "k1", "judgelab_sample": {"design": "uniform", "inclusion_probability": 0.2,
                                                      "sampled": True, "sample_id": "abc"}}  # fmt: skip
    assert sample_columns(meta) == {"inclusion_probability": 0.2, "sampled": True}
    tables = tidy_from_export(
        5, "custom", None, [{"id": 1, "data": {"t": "a"}, "meta": meta}, {"id": 2, "data": {"t": "b"}}],
        project_columns={"project_sample_of": 4},
    )  # fmt: skip
    tasks = tables.tasks.set_index("task_id")
    assert tasks.loc[1, "inclusion_probability"] == 0.2 and bool(tasks.loc[1, "sampled"]) is True
    assert math.isnan(tasks.loc[2, "inclusion_probability"]) and tasks["sampled"].isna().tolist() == [False, True]
    assert tasks["project_sample_of"].tolist() == [4, 4]


# --- on a real Label Studio with the real backend -----------------------------------------------


def _csv(path: Path, n: int) -> Path:
    import csv

    models = ["gpt-4o", "llama-3"]
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "title", "article", "summary", "model"])
        for i in range(n):
            summary = f"Se aprueba el plan {i}." if i % 3 else f"¿Te gustaría saber más? El plan {i}, sin duda."
            writer.writerow([f"ns-{i}", f"Titular {i}", f"El pleno aprobó el plan {i} de 42 millones.", summary,
                             models[i % 2]])  # fmt: skip
    return path


def _doc_lines() -> list[str]:
    from readme_commands import block_after

    return block_after(SAMPLE_MARKER)


@pytest.mark.integration
def test_design_sample_on_label_studio_then_sync(live_stack, tmp_path, monkeypatch):
    import pandas as pd

    client = live_stack.client
    monkeypatch.chdir(tmp_path)
    env = {
        "JUDGELAB_LS_URL": live_stack.url,
        "JUDGELAB_LS_TOKEN": live_stack.creds.token,
        "JUDGELAB_BACKEND_URL": live_stack.backend_url,
    }
    runner = CliRunner()

    def run(*args: str, code: int = 0) -> str:
        result = runner.invoke(main, list(args), env=env)
        assert "Traceback" not in result.output, result.output
        assert result.exit_code == code, f"{args}\n{result.output}"
        return result.output

    csv = _csv(tmp_path / "noticias.csv", 30)
    pid = json.loads(run("import", "--title", TITLE, "--schema", "likert_rubric_es", str(csv), "--json"))["project"][
        "id"
    ]
    # before any prediction: a clear error naming the project and what to run
    refused = run("design", "sample", "--title", TITLE, "--budget", "6", code=1)
    assert f"project {pid} ('{TITLE}', likert_rubric_es) has no predictions" in refused
    assert "judgelab preannotate" in refused
    run("preannotate", "--title", TITLE)
    version = client.projects.get(id=pid).model_version
    assert "budget of 31 tasks, but project" in run("design", "sample", "--title", TITLE, "--budget", "31", code=1)

    sample_line, sync_line = _doc_lines()
    first = run(*shlex.split(sample_line)[1:])
    assert f"of 6 of 30 task(s) (budget 6, design uniform, seed 0, judge {version})" in first
    assert "inclusion probabilities from 0.2 to 0.2; 6 task(s) got their judgelab_sample meta" in first
    assert "'Noticias 2025 (human sample)' created: 6 task(s) imported" in first

    source = {t.id: t for t in client.tasks.list(project=pid, fields="all")}
    assert len(source) == 30
    records = _draw(client, pid)  # only the sampled tasks record the draw: one PATCH each
    assert len(records) == 6 and all(r["sampled"] for r in records.values())
    assert all(r["design"] == "uniform" and math.isclose(r["inclusion_probability"], 0.2) for r in records.values())
    assert len({r["sample_id"] for r in records.values()}) == 1
    assert all(t.meta["judgelab_key"] for t in source.values()), "the rest of the meta is kept"
    sampled_keys = {source[tid].meta["judgelab_key"] for tid in records}
    assert len(sampled_keys) == 6

    sample = next(p for p in client.projects.list() if p.title == "Noticias 2025 (human sample)")
    assert sample_source_of(client.projects.get(id=sample.id).description) == pid
    copied = list(client.tasks.list(project=sample.id, fields="all"))
    assert {t.meta["judgelab_key"] for t in copied} == sampled_keys
    by_key = {t.meta["judgelab_key"]: t for t in source.values()}
    for task in copied:
        original = by_key[task.meta["judgelab_key"]]
        assert task.data == original.data and task.meta["judgelab_sample"] == original.meta["judgelab_sample"]
        assert not client.predictions.list(task=task.id)
    assert not list(client.ml.list(project=sample.id)), "no backend: people label blind"

    # the same command again: the sample is found, nothing is added
    again = json.loads(run(*shlex.split(sample_line)[1:], "--json"))
    assert again["already"] and (again["meta_updated"], again["imported"], again["sampled"]) == (0, 0, 6)
    assert again["project"]["id"] == sample.id
    assert len(list(client.tasks.list(project=sample.id))) == 6
    # other arguments while the sample exists: refused, nothing changed
    other = run("design", "sample", "--title", TITLE, "--budget", "8", code=1)
    assert "already has a human sample drawn with other arguments" in other and "--replace" in other
    assert "--by is for --design stratified" in run("design", "sample", "--title", TITLE, "--budget", "6", "--by",
                                                    "model", code=1)  # fmt: skip
    assert _draw(client, pid) == records

    # sync: the meta PATCH moved the tasks' updated_at, so a later run sees the sample
    out = tmp_path / "tables"
    run("sync", "--project", str(pid), "--out", str(out))
    replaced = json.loads(
        run("design", "sample", "--title", TITLE, "--budget", "8", "--design", "active", "--replace", "--json",
            "--out", "draw.json")
    )  # fmt: skip
    written = json.loads((tmp_path / "draw.json").read_text(encoding="utf-8"))
    assert len(written["draw"]) == 30 and written["sample_id"] == replaced["sample_id"]
    assert sum(r["sampled"] for r in written["draw"]) == replaced["sampled"]
    assert replaced["replaced"] == sample.id and replaced["project"]["id"] != sample.id
    assert math.isclose(sum(r["inclusion_probability"] for r in written["draw"]), 8)
    drawn = _draw(client, pid)
    # the new draw's sampled tasks, and the earlier draw's (overwritten: no stale draw is found again)
    new = {r["task_id"]: r for r in written["draw"] if r["sampled"]}
    assert set(drawn) == set(new) | set(records)
    assert all(drawn[t] == {k: v for k, v in r.items() if k not in ("task_id", "key")} for t, r in new.items())
    assert {r["sample_id"] for r in drawn.values()} == {replaced["sample_id"]}
    run(*shlex.split(sync_line)[1:])
    tasks = pd.read_parquet(out / "tasks.parquet")
    mine = tasks[tasks["project"] == pid].set_index("task_id").sort_index()
    recorded = mine.loc[sorted(drawn)]
    assert np.allclose(recorded["inclusion_probability"], [drawn[t]["inclusion_probability"] for t in recorded.index])
    assert recorded["sampled"].tolist() == [drawn[t]["sampled"] for t in recorded.index]
    assert mine.drop(index=sorted(drawn))["inclusion_probability"].isna().all()
    assert mine["project_sample_of"].isna().all()
    copies = tasks[tasks["project"] == replaced["project"]["id"]]
    assert len(copies) == replaced["sampled"] and (copies["project_sample_of"] == pid).all()
    assert copies["sampled"].all() and set(copies["key"]) == {
        source[t].meta["judgelab_key"] for t, r in drawn.items() if r["sampled"]
    }

    # a labelled sample is never replaced
    first_copy = next(iter(client.tasks.list(project=replaced["project"]["id"])))
    client.annotations.create(id=first_copy.id, result=[], was_cancelled=True)
    refused = run("design", "sample", "--title", TITLE, "--budget", "6", "--replace", code=1)
    assert "has 1 annotation(s): --replace would lose" in refused


def _draw(client, project_id: int) -> dict[int, dict]:
    """The tasks that record a draw in their meta, with the record."""
    tasks = client.tasks.list(project=project_id, fields="all")
    return {t.id: t.meta["judgelab_sample"] for t in tasks if "judgelab_sample" in (t.meta or {})}


def test_meta_writes_go_a_few_at_once_and_the_first_failure_stops_them():
    import threading
    import time

    from label_studio_sdk.core.api_error import ApiError

    from judgelab.sync.human_sample import write_metas

    class Tasks:  # a client without the SDK's HTTP client: its own tasks.update is used
        def __init__(self, refuse: int | None = None):
            self.written, self.refuse, self.at_once, self._now, self._lock = {}, refuse, 0, 0, threading.Lock()

        def update(self, id, meta):  # noqa: A002 - the SDK's name
            with self._lock:
                self._now += 1
                self.at_once = max(self.at_once, self._now)
            time.sleep(0.01)
            with self._lock:
                self._now -= 1
            if id == self.refuse:
                raise ApiError(status_code=400, body={"detail": "no such field"})
            self.written[id] = meta

    class Client:
        def __init__(self, tasks):
            self.tasks = tasks

    fine = Tasks()
    ticks = []
    metas = [(i, {"judgelab_key": f"k{i}"}) for i in range(40)]
    assert write_metas(Client(fine), 1, metas, ticks.append, workers=4) == 40
    assert fine.written == dict(metas) and sum(ticks) == 40
    assert 1 < fine.at_once <= 4
    refused = Tasks(refuse=5)
    with pytest.raises(ApiError) as caught:
        write_metas(Client(refused), 1, metas, workers=4)
    assert caught.value.status_code == 400 and 5 not in refused.written
    assert len(refused.written) < 40, "the rest was not sent"
    assert write_metas(Client(Tasks()), 1, []) == 0
