"""judgelab design adjudicate: the disagreement rules, the answers panel beside the form, and the
round trip on a real Label Studio (adjudication project, the adjudicator's answers copied back
as ground truth, judgelab sync's tables), as docs/design.md shows it."""

from __future__ import annotations

import csv
import html
import json
import shlex
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from judgelab.configs.detect import detect_schema
from judgelab.configs.label_config import parse_label_config
from judgelab.configs.schema import all_schemas, get_schema
from judgelab.sync.adjudication import (
    ANSWERS_FIELD,
    AdjudicationError,
    Items,
    adjudication_config,
    adjudication_of,
    answer_from_result,
    answers_html,
    choose_rule,
    disagreement,
    number,
    parse_rule,
)
from judgelab.sync.cli import main

LIKERT = get_schema("likert_rubric_es")
HOTEL = get_schema("hotel_spans")
AUG = get_schema("augmentation_quality")


def likert_value(criterion: str, score: int) -> str:
    """The Likert choice of ``score`` as Label Studio stores it (its alias)."""
    labels = {c.name: c.labels for c in parse_label_config(LIKERT.config_xml).controls}[criterion]
    return next(label for label in labels if label == str(score))


def likert_text(criterion: str, score: int) -> str:
    """The text the form shows for that choice (``4 - ...``)."""
    text = items_of(LIKERT).text_of(criterion, likert_value(criterion, score))
    assert text.startswith(f"{score} - ") and len(text) > 10
    return html.escape(text)


def choice(control: str, *values: str, to_name: str = "summary") -> dict:
    return {"from_name": control, "to_name": to_name, "type": "choices", "value": {"choices": list(values)}}


def rating(control: str, value: int) -> dict:
    return {"from_name": control, "to_name": "summary", "type": "rating", "value": {"rating": value}}


def span(start: int, end: int, label: str, text: str = "x") -> dict:
    return {
        "from_name": "error",
        "to_name": "summary",
        "type": "labels",
        "value": {"start": start, "end": end, "text": text, "labels": [label]},
    }


def likert_answer(who: str, **scores: int):
    return answer_from_result(who, None, [choice(c, likert_value(c, s)) for c, s in scores.items()])


def items_of(schema):
    return Items.of(parse_label_config(schema.config_xml), schema)


# --- the rules ------------------------------------------------------------------------------


def test_default_rule_flags_any_differing_item_and_names_it():
    items = items_of(LIKERT)
    rule, where = choose_rule(None, LIKERT)
    assert (rule.text, where) == ("any differs", "default")
    a = likert_answer("a@x", Coherence=4, Fluency=5)
    b = likert_answer("b@x", Coherence=2, Fluency=5)
    assert disagreement(rule, [a, b], items) == ["Coherence differs"]
    assert disagreement(rule, [a, likert_answer("c@x", Coherence=4, Fluency=5)], items) == []
    assert disagreement(rule, [a], items) == []  # one answer: nothing to compare


def test_spread_rule_reads_the_leading_number_of_a_choice():
    items = items_of(LIKERT)
    rule = parse_rule("max-min>=2 on Coherence")
    near = [likert_answer("a@x", Coherence=3), likert_answer("b@x", Coherence=4)]
    far = [likert_answer("a@x", Coherence=2), likert_answer("b@x", Coherence=4)]
    assert disagreement(rule, near, items) == []
    assert disagreement(rule, far, items) == ["max-min>=2 on Coherence"]
    assert number(likert_value("Coherence", 4)) == number(html.unescape(likert_text("Coherence", 4))) == 4.0
    both = parse_rule("Fluency differs and max-min>=1 on any")
    mixed = [likert_answer("a@x", Coherence=2, Fluency=4), likert_answer("b@x", Coherence=3, Fluency=5)]
    assert set(disagreement(both, mixed, items)) == {
        "Fluency differs",
        "max-min>=1 on Coherence",
        "max-min>=1 on Fluency",
    }
    assert disagreement(both, far, items) == []  # Fluency unanswered by both: the and fails


def test_span_items_compare_the_labels_each_annotator_marked():
    items = items_of(HOTEL)
    rule, where = choose_rule(None, HOTEL)  # the schema's own rule
    assert where == "schema hotel_spans" and rule.text == "error differs"
    a = answer_from_result("a@x", None, [span(0, 4, "Misleading"), rating("impression", 5)])
    moved = answer_from_result("b@x", None, [span(1, 5, "Misleading"), rating("impression", 2)])
    other = answer_from_result("c@x", None, [span(0, 4, "Incorrect"), rating("impression", 5)])
    none = answer_from_result("d@x", None, [rating("impression", 5)])
    assert disagreement(rule, [a, moved], items) == []  # same error type, other offsets; impression not in the rule
    assert disagreement(rule, [a, other], items) == ["error differs"]
    assert disagreement(rule, [a, none], items) == ["error differs"]  # one marked an error, one none
    assert disagreement(parse_rule("impression differs"), [a, moved], items) == ["impression differs"]


def test_the_seed_rule_of_the_augmentation_schema():
    rule, where = choose_rule(None, AUG)
    assert where == "schema augmentation_quality"
    items = items_of(AUG)
    values = {c.name: c.labels for c in parse_label_config(AUG.config_xml).controls if c.tag == "Choices"}
    first = {name: labels[0] for name, labels in values.items() if name in AUG.items_of_kind("ordinal")}
    second = {name: labels[1] for name, labels in values.items() if name in AUG.items_of_kind("ordinal")}
    assert first, "the augmentation scales are choices"
    a = answer_from_result("a@x", None, [choice(n, v, to_name="generated") for n, v in first.items()])
    b = answer_from_result("b@x", None, [choice(n, v, to_name="generated") for n, v in second.items()])
    assert len(disagreement(rule, [a, b], items)) == len(first)


def test_repeater_items_by_item_name_or_pattern():
    story = get_schema("story_consistency")
    items = items_of(story)
    control, spec = next((c, s) for c, s in story.items.items() if "{i}" in c and s.get("values"))
    item_pattern = spec["item"]
    assert item_pattern in items.names() and control in items.names()
    verdicts = story.item_values(item_pattern)
    expanded = control.replace("{i}", "3")
    a = answer_from_result("a@x", None, [choice(expanded, verdicts[0], to_name="line_3")])
    b = answer_from_result("b@x", None, [choice(expanded, verdicts[1], to_name="line_3")])
    assert disagreement(parse_rule(f"{item_pattern} differs"), [a, b], items) == [f"{items.namer(expanded)} differs"]
    assert disagreement(parse_rule(f"{expanded} differs"), [a, b], items) == [f"{items.namer(expanded)} differs"]


@pytest.mark.parametrize(
    "text, says",
    [
        ("", "is empty"),
        ("Coherence is different", "cannot read 'Coherence is different'"),
        ("max-min>=two on Coherence", "cannot read"),
        ("Coherence differs or", "cannot read"),
    ],
)
def test_bad_rules_name_the_expression(text, says):
    with pytest.raises(AdjudicationError, match=says) as caught:
        parse_rule(text)
    assert "ITEM differs" in str(caught.value)


def test_an_unknown_item_is_named_with_the_items_there_are():
    with pytest.raises(AdjudicationError, match="'Coherense' is no item") as caught:
        items_of(LIKERT).check(parse_rule("Coherense differs"))
    assert "Coherence" in str(caught.value) and "5W" in str(caught.value)


# --- the panel and the config ---------------------------------------------------------------


def test_answers_panel_shows_each_answer_and_marks_the_flagged_item():
    items = items_of(LIKERT)
    a = likert_answer("ana@x.org", Coherence=4, Fluency=5)
    b = likert_answer("<bob>@x.org", Coherence=2, Fluency=5)
    judge = answer_from_result("judge-v1", None, [choice("Coherence", likert_value("Coherence", 3))])
    panel = answers_html([a, b], items, ["Coherence differs"], judge, ["Coherence", "Fluency"])
    assert "ana@x.org" in panel and "&lt;bob&gt;@x.org" in panel and "<bob>" not in panel  # escaped
    assert "judge judge-v1" in panel
    for score in (4, 2, 3):
        assert likert_text("Coherence", score) in panel
    coherence, fluency = panel.split("<tbody")[1:]
    assert "Coherence" in coherence and "jl-differs" in coherence and "\u26a0" in coherence
    assert "Fluency" in fluency and "jl-same" in fluency and "\u26a0" not in fluency
    for who in ("ana@x.org", "&lt;bob&gt;@x.org"):
        assert who in coherence and who in fluency  # one line per annotator under each item
    assert "judge judge-v1" in coherence
    assert "Why here: Coherence differs" in panel


def test_span_answers_in_the_panel():
    items = items_of(HOTEL)
    a = answer_from_result("a@x", None, [span(0, 5, "Incorrect", "Paris")])
    b = answer_from_result("b@x", None, [])
    panel = answers_html([a, b], items, ["error differs"], None, ["error"])
    assert "<b>Incorrect</b>: \u00abParis\u00bb" in panel and "[0-5]" in panel and "<i>none</i>" in panel


@pytest.mark.parametrize("name", sorted(all_schemas()))
def test_adjudication_config_keeps_the_schema_and_adds_the_panel(name):
    schema = all_schemas()[name]
    xml = adjudication_config(schema.config_xml)
    parsed = parse_label_config(xml)
    assert detect_schema(xml, all_schemas()).name == name
    assert parsed.objects[ANSWERS_FIELD].value == f"${ANSWERS_FIELD}"
    assert {c.name for c in parsed.controls} == {c.name for c in parse_label_config(schema.config_xml).controls}


def test_adjudication_marker():
    assert adjudication_of({"description": "x [judgelab-adjudication-of:12] y"}) == 12
    assert adjudication_of({"description": "[judgelab:likert_rubric_es]"}) is None


# --- on Label Studio ------------------------------------------------------------------------

ADJUDICATION_MARKER = "adjudication: run as written by tests/test_adjudication.py"
TITLE = "Noticias (rúbrica)"  # the docs' title
ANNOTATORS = ("ana@example.org", "ben@example.org")
ADJUDICATOR = "lead@example.org"


def _docs_lines() -> list[str]:
    from readme_commands import block_after

    return block_after(ADJUDICATION_MARKER)


def _study_files(folder: Path) -> None:
    """Three Likert tasks rated by two annotators: n1 and n2 disagree on Coherence, n3 agrees."""
    with (folder / "tasks.jsonl").open("w", encoding="utf-8") as out:
        for i, sample in enumerate(LIKERT.samples()[:3], start=1):
            out.write(json.dumps({**sample["data"], "id": f"n{i}"}, ensure_ascii=False) + "\n")
    scores = {"n1": (4, 2), "n2": (5, 3), "n3": (3, 3)}
    with (folder / "ratings.csv").open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["task", "annotator", "item", "value"])
        for task, pair in scores.items():
            for annotator, score in zip(ANNOTATORS, pair, strict=True):
                writer.writerow([task, annotator, "Coherence", likert_value("Coherence", score)])
                writer.writerow([task, annotator, "Fluency", likert_value("Fluency", 5)])


def _by_title(client, title: str):
    return next((p for p in client.projects.list() if p.title == title), None)


@pytest.mark.integration
def test_adjudication_round_trip_as_the_docs_show(live_stack, tmp_path, monkeypatch, artifacts):
    client = live_stack.client
    monkeypatch.chdir(tmp_path)
    _study_files(tmp_path)
    env = {"JUDGELAB_LS_URL": live_stack.url, "JUDGELAB_LS_TOKEN": live_stack.creds.token}
    runner = CliRunner()

    def run(line: str, code: int = 0) -> str:
        args = shlex.split(line)
        assert args[0] == "judgelab", line
        result = runner.invoke(main, args[1:], env=env)
        assert result.exit_code == code, f"{line}\n{result.output}"
        return result.output

    import_line, create_line, collect_line, sync_line = _docs_lines()
    assert "2 annotator" not in import_line  # the file says who rated
    run(import_line)
    source = _by_title(client, TITLE)
    tasks = {t.meta["judgelab_key"]: t for t in client.tasks.list(project=source.id, fields="all")}
    assert sorted(tasks) == ["n1", "n2", "n3"]
    # the judge's prediction on each task, as the ML backend leaves it
    for task in tasks.values():
        client.predictions.create(
            task=task.id, result=[choice("Coherence", likert_value("Coherence", 3))], model_version="judge-v1"
        )
    from judgelab.sync.importers.annotations import ensure_annotators

    lead = ensure_annotators(client, [ADJUDICATOR])[ADJUDICATOR]  # the adjudicator's account

    made = run(create_line)
    assert "2 of 3 task(s) with two answers or more meet the rule 'any differs' (default)" in made
    assert "2 task(s) added, 0 already there; the judge's prediction shown on 2" in made
    adjudication = _by_title(client, f"{TITLE} (adjudication)")
    assert adjudication is not None
    assert f"[judgelab-adjudication-of:{source.id}]" in adjudication.description
    from judgelab.sync.project_ref import project_schema

    assert project_schema({"label_config": adjudication.label_config}).name == LIKERT.name
    shown = {t.meta["judgelab_key"]: t for t in client.tasks.list(project=adjudication.id, fields="all")}
    assert sorted(shown) == ["n1", "n2"]
    for key, pair in {"n1": (4, 2), "n2": (5, 3)}.items():
        panel = shown[key].data[ANSWERS_FIELD]
        for annotator, score in zip(ANNOTATORS, pair, strict=True):
            assert annotator in panel and likert_text("Coherence", score) in panel
        assert "judge judge-v1" in panel and likert_text("Coherence", 3) in panel
        assert shown[key].data["summary"] == tasks[key].data["summary"]

    again = json.loads(run(create_line + " --json"))
    assert (again["created"], again["added"], again["already"], again["disagreements"]) == (False, 0, 2, 2)
    assert len(list(client.tasks.list(project=adjudication.id))) == 2

    _screenshot(live_stack, adjudication.id, shown["n1"].id, artifacts)

    # the adjudicator answers both tasks in Label Studio
    decided = {"n1": 4, "n2": 4}
    for key, score in decided.items():
        client.annotations.create(
            id=shown[key].id,
            result=[
                choice("Coherence", likert_value("Coherence", score)),
                choice("Fluency", likert_value("Fluency", 5)),
            ],
            completed_by=lead,
        )
    collected = run(collect_line)
    assert "2 ground-truth annotation(s) added" in collected and "0 task(s) not adjudicated yet" in collected
    assert "0 ground-truth annotation(s) added" in run(collect_line)  # idempotent
    counts = {key: len(client.annotations.list(id=t.id)) for key, t in tasks.items()}
    assert counts == {"n1": 3, "n2": 3, "n3": 2}

    # a changed adjudication replaces the earlier ground truth, nothing else
    [answer] = client.annotations.list(id=shown["n2"].id)
    client.annotations.update(
        id=answer.id,
        result=[choice("Coherence", likert_value("Coherence", 5)), choice("Fluency", likert_value("Fluency", 5))],
    )
    changed = json.loads(run(collect_line + " --json"))
    assert (changed["added"], changed["replaced"], changed["unchanged"]) == (0, 1, 1)
    assert {key: len(client.annotations.list(id=t.id)) for key, t in tasks.items()} == counts

    run(sync_line)
    judgments = pd.read_parquet(tmp_path / "judgelab-data" / "judgments.parquet")
    judgments = judgments[judgments["project"] == source.id]
    gold = judgments[judgments["ground_truth"].astype(bool) & (judgments["item"] == "Coherence")]
    by_task = {t.id: key for key, t in tasks.items()}
    assert {by_task[int(t)]: v for t, v in zip(gold["task_id"], gold["value"], strict=True)} == {
        "n1": likert_value("Coherence", 4),
        "n2": likert_value("Coherence", 5),
    }
    assert set(gold["annotator"]) == {ADJUDICATOR}
    others = judgments[~judgments["ground_truth"].astype(bool) & (judgments["source"] == "human")]
    assert set(others["annotator"]) == set(ANNOTATORS)
    assert adjudication.id not in set(judgments["project"])  # the adjudication project is not a study of its own


def _screenshot(live_stack, project_id: int, task_id: int, artifacts: Path) -> None:
    """The adjudication task in Label Studio's labeling UI: the answers beside the form."""
    if not shutil.which("chromium"):
        pytest.skip("Debian's chromium is not installed")
    from test_browser_ui import logged_in_page, open_task

    pages = logged_in_page(live_stack, 1100)
    page = next(pages)
    try:
        open_task(page, live_stack, project_id, task_id)
        page.wait_for_selector(f"text={ANNOTATORS[0]}")
        page.screenshot(path=str(artifacts / "adjudication-top.png"))
        body = " ".join(page.inner_text("body").split())
        for annotator in ANNOTATORS:
            assert annotator in body
        assert html.unescape(likert_text("Coherence", 2))[:30] in body
        # the form's first criterion scrolled into view: the panel stays beside it
        choice_text = html.unescape(likert_text("Coherence", 5))
        option = page.get_by_text(choice_text[:40]).last  # the form (the task list shows the panels too)
        option.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        panel = page.get_by_text("Why here:").last
        form_box, panel_box = option.bounding_box(), panel.bounding_box()
        assert panel_box["x"] > form_box["x"] + form_box["width"] / 2, (form_box, panel_box)
        path = artifacts / "adjudication.png"
        page.screenshot(path=str(path))
        shutil.copy(path, "/tmp/adjudication.png")
    finally:
        pages.close()


@pytest.mark.integration
def test_no_disagreement_creates_nothing_and_bad_rules_are_named(live_stack, tmp_path):
    from judgelab.sync.importers import rows_from_records
    from judgelab.sync.importers.annotations import add_missing_annotations, make_annotation
    from judgelab.sync.projects import ensure_project, import_rows

    client = live_stack.client
    title = "Acuerdo total"
    project = ensure_project(client, LIKERT, title)
    record = {**LIKERT.samples()[0]["data"], "id": "same"}
    import_rows(client, project.id, rows_from_records([("t", record)], LIKERT))
    same = [choice("Coherence", likert_value("Coherence", 4))]
    add_missing_annotations(
        client, project.id, {"same": [make_annotation(a, same) for a in ANNOTATORS]}, {"same": "test"}
    )
    args = ["--url", live_stack.url, "--token", live_stack.creds.token, "design", "adjudicate", "--title", title]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert "no task to adjudicate: of 1 task(s), 1 have two answers or more and none meets" in result.output
    assert "no project was created" in result.output
    assert _by_title(client, f"{title} (adjudication)") is None
    result = CliRunner().invoke(main, [*args, "--where", "max-min=>2 on Coherence"])
    assert result.exit_code == 1 and "cannot read 'max-min=>2 on Coherence'" in result.output
    result = CliRunner().invoke(main, [*args, "--where", "Coherense differs"])
    assert result.exit_code == 1 and "'Coherense' is no item" in result.output
    result = CliRunner().invoke(main, [*args, "--collect"])
    assert result.exit_code == 1 and "no adjudication project yet" in result.output


@pytest.mark.integration
def test_span_disagreements_prefilled_and_new_ones_added_on_a_second_run(live_stack):
    """hotel_spans by its schema's rule (the error types marked): the panel lists each annotator's
    spans, --prefill adds each answer as a prediction, a second run adds only the new disagreement."""
    from judgelab.sync.adjudication import PREFILL_PREFIX, ensure_adjudication, find_adjudication_project
    from judgelab.sync.importers import rows_from_records
    from judgelab.sync.importers.annotations import add_missing_annotations, make_annotation
    from judgelab.sync.ls_api import as_api
    from judgelab.sync.projects import ensure_project, import_rows

    client = live_stack.client
    project = ensure_project(client, HOTEL, "Hotel spans to adjudicate")
    samples = [{**s["data"], "id": f"h{i}"} for i, s in enumerate(HOTEL.samples()[:3])]
    import_rows(client, project.id, rows_from_records([(f"s{i}", t) for i, t in enumerate(samples)], HOTEL))
    summary = samples[0]["summary"]
    first_word = summary.split()[0]
    marked = [{**span(0, len(first_word), HOTEL.constant("incorrect"), first_word), "id": "r1"}]
    other = [{**span(0, len(first_word), HOTEL.constant("misleading"), first_word), "id": "r2"}]
    impression = [rating("impression", 4)]
    answers = {
        "h0": [make_annotation(ANNOTATORS[0], marked + impression), make_annotation(ANNOTATORS[1], other + impression)],
        "h1": [make_annotation(ANNOTATORS[0], impression), make_annotation(ANNOTATORS[1], [rating("impression", 1)])],
    }
    add_missing_annotations(client, project.id, answers, {key: "test" for key in answers})
    source = next(p for p in as_api(client).projects() if int(p["id"]) == project.id)

    made = ensure_adjudication(client, source, HOTEL, prefill=True)
    assert (made.created, made.added, made.prefilled) == (True, 1, 1)  # h1 differs on impression only
    assert made.found.rule_from == "schema hotel_spans" and made.found.compared == 2
    [task] = client.tasks.list(project=made.project_id, fields="all")
    panel = task.data[ANSWERS_FIELD]
    for label in (HOTEL.constant("incorrect"), HOTEL.constant("misleading")):
        assert f"<b>{label}</b>: \u00ab{html.escape(first_word)}\u00bb" in panel
    versions = sorted(p.model_version for p in client.predictions.list(task=task.id))
    assert versions == [f"{PREFILL_PREFIX}{a}" for a in sorted(ANNOTATORS)]

    # a third annotator disagrees on h2: a second run adds it and keeps the first
    third = "cy@example.org"
    add_missing_annotations(
        client,
        project.id,
        {"h2": [make_annotation(ANNOTATORS[0], impression), make_annotation(third, marked + impression)]},
        {"h2": "test"},
    )
    source = next(p for p in as_api(client).projects() if int(p["id"]) == project.id)
    again = ensure_adjudication(client, source, HOTEL)
    assert (again.created, again.added, again.already, again.project_id) == (False, 1, 1, made.project_id)
    assert find_adjudication_project(client, project.id)["id"] == made.project_id
    keys = sorted(t.meta["judgelab_key"] for t in client.tasks.list(project=made.project_id, fields="all"))
    assert keys == ["h0", "h2"]
