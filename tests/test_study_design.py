"""Study design helpers (sync.study_design) and the ``judgelab design`` commands."""

from __future__ import annotations

import json
from collections import Counter
from itertools import product
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.analysis.qc.hotel_spans import attention_checks, qualification_scores
from judgelab.configs.schema import get_schema
from judgelab.configs.task_data import prepare_task_data
from judgelab.sync.cli import main
from judgelab.sync.study_design import (
    ERROR_FREE,
    MAX_TITLE,
    OBVIOUS_INCORRECT,
    StudyDesignError,
    assign_groups,
    make_batches,
    pilot_allocation,
    pilot_subset,
    qualification_batch,
    split_by_group,
    suffixed_title,
    task_data,
    task_id,
    with_reference,
)

FIXTURES = Path(__file__).parent / "fixtures"
HUDSON = "Enjoy sweeping views across the Hudson River to the Manhattan skyline."
NO_ERRORS_A = "I did not find any errors in the summary"


def hotel_tasks(n: int = 37) -> list[dict]:
    return [
        {"data": {"id": f"h{i:02d}", "descriptions": f"Hotel {i} near the sea.", "summary": f"Hotel {i} by the sea."}}
        for i in range(n)
    ]


def hotel_checks() -> list[dict]:
    return [
        {"data": {"id": "ok", "descriptions": "A quiet inn.", "summary": "A quiet inn.", "check": ERROR_FREE}},
        {
            "data": {
                "id": "hudson",
                "descriptions": "Apartments in Dubai.",
                "summary": HUDSON,
                "check": OBVIOUS_INCORRECT,
                "reference": "Hudson River",
            }
        },
    ]


def augmentation_tasks(per_stratum: int = 10) -> list[dict]:
    models = ["Llama3.1-8b", "Mistral-Nemo", "Qwen2.5-14b"]
    kinds = ["rephrased", "it_perturbed", "rewritten"]
    return [
        {
            "data": {
                "id": f"{m}-{k}-{i}",
                "original": "Testo originale.",
                "original_label": 1,
                "generated": "Testo generato.",
                "model": m,
                "augmentation_type": k,
            }
        }
        for m, k in product(models, kinds)
        for i in range(per_stratum)
    ]


# --- batches -------------------------------------------------------------------------------


def test_every_batch_has_one_check_of_each_kind_and_ten_tasks():
    out = make_batches(hotel_tasks(37), hotel_checks(), batch_size=10, seed=3)
    batches: dict[int, list[dict]] = {}
    for task in out:
        batches.setdefault(task_data(task)["batch"], []).append(task_data(task))
    assert list(batches) == [1, 2, 3, 4, 5]  # 37 regular tasks, 8 per batch
    assert [len(b) for b in batches.values()] == [10, 10, 10, 10, 7]
    for k, batch in batches.items():
        kinds = Counter(t["check"] for t in batch)
        assert kinds == {ERROR_FREE: 1, OBVIOUS_INCORRECT: 1, "": len(batch) - 2}
        assert [t["position"] for t in batch] == list(range(1, len(batch) + 1))
        copies = {t["id"] for t in batch if t["check"]}
        assert copies == {f"ok@batch{k}", f"hudson@batch{k}"}
    ids = [task_id(t) for t in out]
    assert len(ids) == len(set(ids))
    regular = [t["id"] for b in batches.values() for t in b if not t["check"]]
    assert sorted(regular) == sorted(task_id(t) for t in hotel_tasks(37))


def test_batches_are_seeded_and_checks_move():
    a = make_batches(hotel_tasks(40), hotel_checks(), seed=1)
    b = make_batches(hotel_tasks(40), hotel_checks(), seed=1)
    c = make_batches(hotel_tasks(40), hotel_checks(), seed=2)
    assert a == b
    assert [task_id(t) for t in a] != [task_id(t) for t in c]
    positions = {task_data(t)["position"] for t in a if task_data(t)["check"] == OBVIOUS_INCORRECT}
    assert len(positions) > 1  # not always at the same place


def test_check_copies_carry_the_reference_qc_hotel_reads():
    out = make_batches(hotel_tasks(8), hotel_checks(), seed=0)
    bad = next(task_data(t) for t in out if task_data(t)["check"] == OBVIOUS_INCORRECT)
    assert bad["check_of"] == "hudson"
    assert HUDSON[bad["reference_start"] : bad["reference_end"]] == "Hudson River"
    assert bad["reference_label"] == "Incorrect"
    good = next(task_data(t) for t in out if task_data(t)["check"] == ERROR_FREE)
    assert good["reference_answer"] == "no errors"


def test_flagged_tasks_serve_as_checks_and_several_take_turns():
    tasks = hotel_tasks(16) + hotel_checks()
    extra = {"data": {"id": "ok2", "descriptions": "d", "summary": "s", "check": ERROR_FREE}}
    out = make_batches([*tasks, extra], batch_size=10, seed=0)
    sources = Counter(task_data(t)["check_of"] for t in out if task_data(t)["check"] == ERROR_FREE)
    assert sources == {"ok": 1, "ok2": 1}
    assert not any(task_id(t) in {"ok", "ok2", "hudson"} for t in out)  # only copies


def test_batch_by_field_keeps_models_together():
    out = make_batches(augmentation_tasks(5), hotel_checks(), batch_size=6, by="model")
    for batch in {task_data(t)["batch"] for t in out}:
        models = {
            task_data(t).get("model") for t in out if task_data(t)["batch"] == batch and not task_data(t)["check"]
        }
        assert len(models) == 1


def test_batches_need_both_kinds_of_check():
    with pytest.raises(StudyDesignError, match="obvious_incorrect"):
        make_batches(hotel_tasks(5), hotel_checks()[:1])
    with pytest.raises(StudyDesignError, match="not in its summary"):
        bad = {"data": {**hotel_checks()[1]["data"], "reference": "Thames"}}
        make_batches(hotel_tasks(5), [hotel_checks()[0], bad])


def test_attention_checks_of_batches_score_in_qc_hotel():
    out = make_batches(hotel_tasks(8), hotel_checks(), seed=0)
    tasks = pd.DataFrame([{"project": "p", "task_id": task_id(t), **task_data(t)} for t in out])
    judgments, spans = [], []
    for row in tasks.itertuples():
        base = {"project": "p", "task_id": row.task_id, "annotation_id": f"a-{row.task_id}", "annotator": "ann"}
        judgments.append({**base, "source": "human", "item": "impression", "value": 5})
        if row.check == ERROR_FREE:
            judgments.append({**base, "source": "human", "item": "no_errors", "value": NO_ERRORS_A})
        if row.check == OBVIOUS_INCORRECT:
            spans.append({**base, "source": "human", "label": "Incorrect", "start": 32, "end": 44})
    result = attention_checks(tasks, pd.DataFrame(judgments), pd.DataFrame(spans))
    assert len(result.per_annotation) == 2 and result.pass_rate == 1.0


# --- qualification -------------------------------------------------------------------------


def referenced_tasks() -> list[dict]:
    tasks = hotel_tasks(6)
    tasks[1]["data"].update(
        summary="Hotel 1 has a rooftop pool.", reference="rooftop pool", reference_label="Incorrect"
    )
    tasks[2]["data"].update(summary="Hotel 2 is near Big Ben.", reference="Big Ben", reference_label="Misleading")
    tasks[3]["data"].update(reference="no errors")
    return tasks


def test_qualification_batch_has_two_checks_and_three_new_examples():
    result = qualification_batch(referenced_tasks(), hotel_checks(), seed=4)
    data = [task_data(t) for t in result.tasks]
    assert len(data) == 5 and all(d["qualification"] is True for d in data)
    assert {d["id"] for d in data} == {"ok", "hudson", "h01", "h02", "h03"}
    assert [d["position"] for d in data] == [1, 2, 3, 4, 5]
    assert Counter(d.get("check") for d in data)[ERROR_FREE] == 2  # the check and the no-errors example
    assert {task_id(t) for t in result.remaining} == {"h00", "h04", "h05"}
    by_id = {d["id"]: d for d in data}
    assert by_id["h02"]["reference_answer"] == "Misleading: Big Ben"
    assert by_id["h02"]["summary"][by_id["h02"]["reference_start"] : by_id["h02"]["reference_end"]] == "Big Ben"


def test_qualification_needs_enough_references():
    with pytest.raises(StudyDesignError, match="3 needed"):
        qualification_batch(hotel_tasks(6), hotel_checks())


def _answers(tasks: pd.DataFrame, annotator: str, perfect: bool) -> tuple[list[dict], list[dict]]:
    judgments, spans = [], []
    for row in tasks.itertuples():
        base = {"project": "p", "task_id": row.task_id, "annotation_id": f"{annotator}-{row.task_id}"}
        base["annotator"] = annotator
        judgments.append({**base, "source": "human", "item": "impression", "value": 4})
        error_free = row.check == ERROR_FREE
        if perfect and not error_free:
            spans.append(
                {
                    **base,
                    "source": "human",
                    "label": row.reference_label,
                    "start": row.reference_start,
                    "end": row.reference_end,
                }
            )
        elif not perfect or error_free:
            judgments.append({**base, "source": "human", "item": "no_errors", "value": NO_ERRORS_A})
    return judgments, spans


def test_qualification_examples_are_scored_by_qc_hotel():
    result = qualification_batch(referenced_tasks(), hotel_checks(), seed=0)
    tasks = pd.DataFrame([{"project": "p", "task_id": task_id(t), **task_data(t)} for t in result.tasks])
    j1, s1 = _answers(tasks, "good", perfect=True)
    j2, s2 = _answers(tasks, "lazy", perfect=False)  # "no errors" everywhere
    scores = qualification_scores(tasks, pd.DataFrame(j1 + j2), pd.DataFrame(s1 + s2))
    per = scores.per_annotator.set_index("annotator")
    assert per.loc["good", "score"] == 5.0 and per.loc["good", "passed"]
    assert per.loc["lazy", "score"] == 2.0 and not per.loc["lazy", "passed"]
    assert per.loc["good", "max_score"] == 5.0


# --- groups --------------------------------------------------------------------------------


def test_groups_per_batch_are_balanced_and_whole():
    out = assign_groups(make_batches(hotel_tasks(56), hotel_checks(), seed=0), seed=5)
    group_of_batch: dict[int, set[str]] = {}
    for task in out:
        group_of_batch.setdefault(task_data(task)["batch"], set()).add(task_data(task)["group"])
    assert all(len(groups) == 1 for groups in group_of_batch.values())
    counts = Counter(next(iter(g)) for g in group_of_batch.values())
    assert set(counts) == {"A", "B"} and abs(counts["A"] - counts["B"]) <= 1


def test_groups_per_task_alternate_both_and_seeded():
    tasks = hotel_tasks(11)
    balanced = assign_groups(tasks, unit="task", seed=1)
    counts = Counter(task_data(t)["group"] for t in balanced)
    assert sorted(counts.values()) == [5, 6]
    assert balanced == assign_groups(tasks, unit="task", seed=1)
    alternating = assign_groups(tasks, unit="task", alternate=True)
    assert [task_data(t)["group"] for t in alternating][:4] == ["A", "B", "A", "B"]
    both = assign_groups(tasks, both=True)
    split = split_by_group(both)
    assert {g: len(ts) for g, ts in split.items()} == {"A": 11, "B": 11}
    assert [task_id(t) for t in split["A"]] == [task_id(t) for t in split["B"]]
    with pytest.raises(StudyDesignError, match="batch"):
        assign_groups(tasks, unit="batch")


def test_group_change_refreshes_the_no_errors_wording():
    schema = get_schema("hotel_spans")
    prepared = [{"data": prepare_task_data(schema, task_data(t))} for t in hotel_tasks(4)]
    out = assign_groups(prepared, unit="task", alternate=True)
    again = [prepare_task_data(schema, task_data(t)) for t in out]
    assert [d["no_errors_options"][0]["value"] for d in again] == [
        NO_ERRORS_A,
        "There were no errors in the summary",
    ] * 2


# --- pilot ---------------------------------------------------------------------------------


def test_pilot_is_stratified_by_model_and_augmentation_type():
    out = pilot_subset(augmentation_tasks(10), size=30, seed=7)
    pilot = [task_data(t) for t in out if task_data(t)["pilot"]]
    assert len(out) == 90 and len(pilot) == 30
    per_stratum = Counter((d["model"], d["augmentation_type"]) for d in pilot)
    assert len(per_stratum) == 9 and set(per_stratum.values()) <= {3, 4}
    assert Counter(d["model"] for d in pilot) and max(Counter(d["model"] for d in pilot).values()) <= 11
    assert out == pilot_subset(augmentation_tasks(10), size=30, seed=7)
    assert out != pilot_subset(augmentation_tasks(10), size=30, seed=8)


def test_pilot_allocation_is_proportional_and_capped():
    assert pilot_allocation({"big": 60, "small": 30, "tiny": 10}, 30) == {"big": 18, "small": 9, "tiny": 3}
    assert sum(pilot_allocation({"a": 1, "b": 50}, 30).values()) == 30
    with pytest.raises(StudyDesignError):
        pilot_allocation({"a": 5}, 6)


def test_pilot_never_draws_attention_checks():
    tasks = augmentation_tasks(1) + [{"data": {"id": "c", "check": ERROR_FREE, "model": "x"}}]
    out = pilot_subset(tasks, size=9)
    assert not task_data(out[-1])["pilot"]
    assert sum(task_data(t)["pilot"] for t in out) == 9


def test_titles_fit_label_studio():
    title = suffixed_title(get_schema("hotel_spans").title, "group B")
    assert len(title) <= MAX_TITLE and title.endswith(" (group B)")
    assert suffixed_title("Short", "pilot") == "Short (pilot)"


def test_with_reference_of_flat_dicts():
    flat = with_reference({"summary": "x y", "reference_text": "y", "reference_label": "Misleading"})
    assert (flat["reference_start"], flat["reference_end"]) == (2, 3)


# --- CLI -----------------------------------------------------------------------------------


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_cli_batches_qualification_groups_pilot(tmp_path):
    tasks_file, checks_file = tmp_path / "tasks.json", tmp_path / "checks.json"
    tasks_file.write_text(json.dumps(referenced_tasks() + hotel_tasks(20)[6:]))
    checks_file.write_text(json.dumps(hotel_checks()))

    result = run("design", "batches", str(tasks_file), "--checks", str(checks_file), "--out", str(tmp_path / "b.json"))
    assert result.exit_code == 0, result.output
    assert "26 task(s) of hotel_spans in 3 batch(es)" in result.output
    batched = json.loads((tmp_path / "b.json").read_text())
    assert Counter(t["data"]["check"] for t in batched) == {"": 20, ERROR_FREE: 3, OBVIOUS_INCORRECT: 3}

    result = run(
        "design",
        "qualification",
        str(tasks_file),
        "--checks",
        str(checks_file),
        "--out",
        str(tmp_path / "q.json"),
        "--rest",
        str(tmp_path / "rest.json"),
    )
    assert result.exit_code == 0, result.output
    assert len(json.loads((tmp_path / "q.json").read_text())) == 5
    assert len(json.loads((tmp_path / "rest.json").read_text())) == 17
    assert "hudson=Incorrect: Hudson River" in result.output

    result = run(
        "design", "groups", str(tmp_path / "b.json"), "--schema", "hotel_spans", "--out", str(tmp_path / "g.json")
    )
    assert result.exit_code == 0, result.output
    grouped = json.loads((tmp_path / "g.json").read_text())
    assert {t["data"]["group"] for t in grouped} == {"A", "B"}

    aug = tmp_path / "aug.json"
    aug.write_text(json.dumps(augmentation_tasks(4)))
    result = run(
        "design", "pilot", str(aug), "--schema", "augmentation_quality", "--only", "--out", str(tmp_path / "p.json")
    )
    assert result.exit_code == 0, result.output
    assert len(json.loads((tmp_path / "p.json").read_text())) == 30  # the schema's pilot_size


def test_cli_design_errors_are_messages(tmp_path):
    tasks_file = tmp_path / "tasks.json"
    tasks_file.write_text(json.dumps(hotel_tasks(3)))
    result = CliRunner().invoke(main, ["design", "batches", str(tasks_file), "--out", str(tmp_path / "o.json")])
    assert result.exit_code == 1
    assert "no attention check of kind error_free, obvious_incorrect" in result.output
    result = CliRunner().invoke(main, ["design", "groups", str(tasks_file), "--split-projects", "--out", "x.json"])
    assert result.exit_code == 1 and "unit 'batch' needs every task's 'batch'" in result.output


def likert_tasks(n: int = 12) -> list[dict]:
    return [
        {"id": f"n{i}", "article": f"Noticia {i}.", "summary": f"Resumen {i}.", "model": "gpt-4o"} for i in range(n)
    ]


def test_design_helpers_say_what_they_cannot_do_for_a_schema(tmp_path):
    """batches/qualification need attention checks the schema can score, groups a 'group' field:
    on a Likert file they refuse with the reason instead of writing files no one can use."""
    tasks_file = tmp_path / "noticias.csv"
    pd.DataFrame(likert_tasks()).to_csv(tasks_file, index=False)
    for command in (["batches"], ["qualification"]):
        result = CliRunner().invoke(main, ["design", *command, str(tasks_file), "--out", str(tmp_path / "o.json")])
        assert result.exit_code == 1, result.output
        assert "schema likert_rubric_es cannot carry attention checks" in result.output
        assert "as hotel_spans has" in result.output
    result = CliRunner().invoke(main, ["design", "groups", str(tasks_file), "--unit", "task", "--out", "g.json"])
    assert result.exit_code == 1 and "schema likert_rubric_es has no 'group' data field" in result.output
    assert not (tmp_path / "o.json").exists()
    # the pilot serves any schema: stratified by the strata fields the schema has
    result = run("design", "pilot", str(tasks_file), "--size", "4", "--only", "--out", str(tmp_path / "p.json"))
    assert result.exit_code == 0, result.output
    assert "pilot of 4 of 12 likert_rubric_es task(s), stratified by model" in result.output
    result = CliRunner().invoke(main, ["design", "pilot", str(tasks_file), "--strata", "genre", "--out", "p.json"])
    assert result.exit_code == 1 and "--strata genre: not data fields of schema likert_rubric_es" in result.output


def test_design_reads_seed_formats_like_import(tmp_path):
    """A BASSE file is one task per (document, summary), a StorySumm file one per story: the pilot
    counts those, not the file's raw records (it said "pilot of 30 from 10 tasks" before)."""
    basse = tmp_path / "basse.jsonl"
    basse.write_text((FIXTURES / "basse_mini.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    result = run("design", "pilot", str(basse), "--size", "2", "--only", "--out", str(tmp_path / "p.json"))
    assert result.exit_code == 0, result.output
    assert "pilot of 2 of 3 likert_rubric_es task(s)" in result.output
    written = json.loads((tmp_path / "p.json").read_text())
    assert {t["data"]["id"] for t in written} <= {"doc-1#claude-base", "doc-1#llama3-tldr", "doc-2#subhead"}
    result = CliRunner().invoke(main, ["design", "pilot", str(basse), "--schema", "hotel_spans", "--out", "x.json"])
    assert result.exit_code == 1 and "format basse makes likert_rubric_es tasks, not hotel_spans" in result.output
    story = tmp_path / "stories.json"
    story.write_text((FIXTURES / "storysumm_alternates.json").read_text(encoding="utf-8"), encoding="utf-8")
    result = run("design", "pilot", str(story), "--size", "2", "--out", str(tmp_path / "s.json"))
    assert result.exit_code == 0, result.output
    assert "pilot of 2 of 2 story_consistency task(s)" in result.output


# --- live Label Studio ---------------------------------------------------------------------


@pytest.mark.integration
def test_overlap_split_projects_and_pilot_project(live_stack, tmp_path):
    client = live_stack.client
    args = ["--url", live_stack.url, "--token", live_stack.creds.token, "--home", str(tmp_path)]

    batched = tmp_path / "b.json"
    batched.write_text(json.dumps(make_batches(hotel_tasks(16), hotel_checks(), seed=0)))
    result = run(
        *args,
        "design",
        "groups",
        str(batched),
        "--schema",
        "hotel_spans",
        "--split-projects",
        "--out",
        str(tmp_path / "g.json"),
    )
    assert result.exit_code == 0, result.output
    schema = get_schema("hotel_spans")
    titles = {p.title: p.id for p in client.projects.list()}
    for group, wording in (("A", NO_ERRORS_A), ("B", "There were no errors in the summary")):
        project_id = titles[suffixed_title(schema.title, f"group {group}")]
        tasks = list(client.tasks.list(project=project_id, fields="all"))
        assert len(tasks) == 10  # two batches of ten per group
        assert {t.data["group"] for t in tasks} == {group}
        assert {t.data["no_errors_options"][0]["value"] for t in tasks} == {wording}
        assert Counter(t.data["check"] for t in tasks) == {"": 8, ERROR_FREE: 1, OBVIOUS_INCORRECT: 1}

    result = run(
        *args,
        "design",
        "overlap",
        "--schema",
        "hotel_spans",
        "--title",
        suffixed_title(schema.title, "group A"),
        "--annotations-per-task",
        "2",
        "--percent",
        "50",
    )
    assert result.exit_code == 0, result.output
    project = client.projects.get(id=titles[suffixed_title(schema.title, "group A")])
    assert (project.maximum_annotations, project.overlap_cohort_percentage) == (2, 50)

    aug = tmp_path / "aug.json"
    aug.write_text(json.dumps(augmentation_tasks(4)))
    result = run(
        *args,
        "design",
        "pilot",
        str(aug),
        "--schema",
        "augmentation_quality",
        "--pilot-project",
        "--out",
        str(tmp_path / "p.json"),
    )
    assert result.exit_code == 0, result.output
    pilot_title = suffixed_title(get_schema("augmentation_quality").title, "pilot")
    project = next(p for p in client.projects.list() if p.title == pilot_title)
    full = client.projects.get(id=project.id)
    assert (full.maximum_annotations, full.overlap_cohort_percentage) == (2, 100)
    assert len(list(client.tasks.list(project=project.id))) == 30

    result = run(
        *args, "design", "overlap", "--schema", "augmentation_quality", "--pilot-project", "--annotations-per-task", "3"
    )
    assert result.exit_code == 0, result.output
    assert client.projects.get(id=project.id).maximum_annotations == 3
