"""The review loop in the labeling UI, headless Chromium on the real Label Studio and backend.

An annotator opens a pre-annotated task (Label Studio copies the backend's prediction into the
annotation), keeps one suggested span, relabels one, deletes one, adds one and changes the
suggested rating, then submits; ``judgelab sync`` carries Label Studio's region ids, ``origin``
and ``parent_prediction`` into the tables, and the review table counts exactly 1 kept, 1 edited,
1 deleted and 1 added span and an edited rating. The same on a choices-only schema (a required
single choice cannot be removed in the UI, so nothing is deleted there). Screenshots go to
test-artifacts/.
"""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from test_browser_ui import CHROMIUM, RANGE_JS, logged_in_page, open_task, saved_annotations, utf16_len

from judgelab.analysis.review import outcome_counts, review_table
from judgelab.configs.schema import all_schemas
from judgelab.sync.backend_link import connect_backend, retrieve_predictions
from judgelab.sync.cli import main
from judgelab.sync.export import read_tables
from judgelab.sync.importers import rows_from_records
from judgelab.sync.projects import ensure_project, import_rows

pytestmark = [pytest.mark.browser, pytest.mark.integration]

HOTEL_TASK = {
    "id": "review-hotel",
    "descriptions": "The Harbour Inn has 40 rooms, 2 restaurants and an outdoor pool 300 m from the beach. "
    "Breakfast is served daily.",
    "summary": "The Harbour Inn offers 90 rooms, 5 restaurants and an outdoor pool 3 km from the beach.",
    "group": "A",
}
ADD = "outdoor pool"  # marked by the reviewer; the backend suggests the three wrong numbers


@pytest.fixture(scope="module")
def page(live_stack):
    if not CHROMIUM or not __import__("shutil").which(CHROMIUM):
        pytest.skip("Debian's chromium is not installed")
    yield from logged_in_page(live_stack, 1400)


def predicted_task(live_stack, request, schema_name: str, title: str, task: dict):
    """A project of its own with one task and the backend's prediction for it (deleted after the
    test: other tests of the session read every judgelab project)."""
    client = live_stack.client
    schema = all_schemas()[schema_name]
    project = ensure_project(client, schema, title=title)
    request.addfinalizer(lambda: client.projects.delete(id=project.id))
    [task_id] = import_rows(client, project.id, rows_from_records([("review test", task)], schema)).task_ids
    connect_backend(client, project.id, live_stack.backend_url)
    retrieve_predictions(client, project.id)
    [prediction] = client.predictions.list(task=task_id)
    return project.id, task_id, prediction


def synced_review(live_stack, project_id: int, out):
    args = ["--url", live_stack.url, "--token", live_stack.creds.token, "sync", "--out", str(out)]
    result = CliRunner().invoke(main, [*args, "--project", str(project_id)])
    assert result.exit_code == 0, result.output
    tables = read_tables(out)
    return tables, review_table(tables.judgments, tables.spans)


def outliner_item(page, text: str):
    return page.locator(".lsf-outliner-item__text", has_text=text)


def label_button(page, label: str):
    return page.locator(".lsf-label", has_text=label).first


def test_hotel_review_keep_relabel_delete_add_and_rerate(live_stack, page, artifacts, tmp_path, request):
    project_id, task_id, prediction = predicted_task(
        live_stack, request, "hotel_spans", "Review loop: hotel", HOTEL_TASK
    )
    spans = {r["value"]["text"]: r for r in prediction.result if r["type"] == "labels"}
    assert len(spans) == 3, f"the offline annotator now suggests {sorted(spans)}: pick a task with three"
    assert all(r.get("id") for r in prediction.result), "every suggested result needs an id"
    keep, relabel, delete = sorted(spans, key=lambda text: spans[text]["value"]["start"])
    start = HOTEL_TASK["summary"].index(ADD)
    assert all(r["value"]["end"] <= start or r["value"]["start"] >= start + len(ADD) for r in spans.values())
    [suggested_rating] = [r["value"]["rating"] for r in prediction.result if r["type"] == "rating"]
    new_rating = suggested_rating + 2 if suggested_rating <= 5 else suggested_rating - 2
    relabel_to = "Misleading" if spans[relabel]["value"]["labels"] != ["Misleading"] else "Incorrect"

    open_task(page, live_stack, project_id, task_id)
    highlighted = page.evaluate(
        "() => [...document.querySelectorAll('[class*=richtext] [class*=highlight]')].map(e => e.textContent)"
    )
    assert sorted(highlighted) == sorted(spans), "the suggestions are shown as the annotation's regions"
    page.screenshot(path=str(artifacts / "review_hotel_suggested.png"), full_page=True)
    outliner_item(page, relabel).click()  # select the region, then click another label: relabel
    label_button(page, relabel_to).click()
    page.keyboard.press("Escape")
    outliner_item(page, delete).click()
    page.keyboard.press("Backspace")  # Label Studio's hotkey: delete the selected region
    page.keyboard.press("Escape")
    label_button(page, "Incorrect").click()
    summary = HOTEL_TASK["summary"]
    box = page.evaluate(RANGE_JS, [summary, utf16_len(summary[:start]), utf16_len(ADD)])
    page.mouse.move(box["x1"], box["y"])
    page.mouse.down()
    page.mouse.move(box["x2"], box["y2"], steps=8)
    page.mouse.up()
    page.keyboard.press("Escape")
    page.locator(".ant-rate-star").nth(new_rating - 1).click()
    assert sorted(page.locator(".lsf-outliner-item__text").all_inner_texts()) == sorted([keep, relabel, ADD])
    page.screenshot(path=str(artifacts / "review_hotel_reviewed.png"), full_page=True)
    page.get_by_role("button", name="Submit").click()
    [annotation] = saved_annotations(live_stack.client, task_id)
    assert annotation.parent_prediction == prediction.id

    tables, review = synced_review(live_stack, project_id, tmp_path / "tables")
    human_spans = tables.spans[tables.spans["source"] == "human"].set_index("text")
    assert human_spans.loc[keep, "region_id"] == spans[keep]["id"]  # ids kept from the suggestion
    assert human_spans.loc[keep, "origin"] == "prediction"
    assert human_spans.loc[relabel, "origin"] == "prediction-changed"
    assert human_spans.loc[ADD, "origin"] == "manual"
    assert set(human_spans["parent_prediction"]) == {prediction.id}
    counts = outcome_counts(review, ["unit"]).set_index("unit")
    assert counts.loc["span", ["n_kept", "n_edited", "n_deleted", "n_added"]].tolist() == [1, 1, 1, 1]
    by_region = review[review["unit"] == "span"].set_index("region_id")
    assert by_region.loc[spans[relabel]["id"], ["changed", "final"]].tolist() == ["label", relabel_to]
    assert by_region.loc[spans[delete]["id"], "outcome"] == "deleted"
    [rating] = review[review["category"] == "impression"].to_dict("records")
    assert (rating["outcome"], rating["suggested"], rating["final"]) == ("edited", str(suggested_rating),
                                                                          str(new_rating))  # fmt: skip
    assert counts.loc["item", ["n_kept", "n_edited", "n_deleted", "n_added"]].tolist() == [0, 1, 0, 0]


def _choice(page, text: str):
    return page.locator("label").filter(has_text=re.compile(rf"^{re.escape(text)}")).locator("input")


def test_choices_only_review_keep_change_and_add(live_stack, page, artifacts, tmp_path, request):
    sample = all_schemas()["augmentation_quality"].samples()[0]
    project_id, task_id, prediction = predicted_task(
        live_stack, request, "augmentation_quality", "Review loop: augmentation", sample
    )
    suggested = {r["from_name"]: r["value"]["choices"][0] for r in prediction.result}
    assert set(suggested) == {"SP", "SC"} and all(r.get("id") for r in prediction.result)
    other_sc = "2" if suggested["SC"] != "2" else "3"
    sc_text = {"3": "3 - Fully Correct", "2": "2 - Minor Errors", "1": "1 - Major Errors"}

    open_task(page, live_stack, project_id, task_id)
    assert _choice(page, sc_text[suggested["SC"]]).is_checked()
    _choice(page, sc_text[other_sc]).check()
    _choice(page, "Uncertain between two scores").check()
    notes = page.locator("textarea[name=notes]")
    notes.fill("SC: two agreement errors")
    notes.press("Shift+Enter")
    page.screenshot(path=str(artifacts / "review_augmentation_reviewed.png"), full_page=True)
    page.get_by_role("button", name="Submit").click()
    assert len(saved_annotations(live_stack.client, task_id)) == 1

    tables, review = synced_review(live_stack, project_id, tmp_path / "tables")
    human = tables.judgments[tables.judgments["source"] == "human"].set_index("item")
    assert human.loc["SP", "origin"] == "prediction" and human.loc["SC", "origin"] == "prediction-changed"
    assert human.loc["flags", "origin"] == "manual"
    assert review.set_index("category")["outcome"].to_dict() == {
        "SP": "kept",
        "SC": "edited",
        "flags": "added",
        "notes": "added",
    }
    counts = outcome_counts(review, ["suggestion_source"])
    assert counts[["n_kept", "n_edited", "n_deleted", "n_added"]].values.tolist() == [[1, 1, 0, 2]]
    assert list(counts["suggestion_source"]) == [f"model:{prediction.model_version}"]
