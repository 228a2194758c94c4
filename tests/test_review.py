"""analysis.review: kept / edited / deleted / added per suggested or final unit, from tidy tables
made by sync.tidy of an export shaped as Label Studio 1.23 writes it (region ids kept from the
prediction, ``origin`` per result, ``parent_prediction`` per annotation)."""

from __future__ import annotations

import copy

import pandas as pd

from judgelab.analysis.review import REVIEW_COLUMNS, foreign_parent_links, outcome_counts, review_table
from judgelab.configs.schema import get_schema
from judgelab.sync.tidy import tidy_from_export

SUMMARY = "Free WiFi and a rooftop pool near the metro, steps from Central Park."
VERSION = "judgelab-offline-1-hotel_spans-abc"


def span(rid: str, start: int, end: int, label: str, origin: str | None = None, note: str | None = None) -> list[dict]:
    value = {"start": start, "end": end, "text": SUMMARY[start:end]}
    out = [{"id": rid, "from_name": "error", "to_name": "summary", "type": "labels",
            "value": {**value, "labels": [label]}}]  # fmt: skip
    if note is not None:
        out.append({"id": rid, "from_name": "reason", "to_name": "summary", "type": "textarea",
                    "value": {**value, "text": [note]}})  # fmt: skip
    if origin:
        for result in out:
            result["origin"] = origin
    return out


def rating(rid: str, value: int, origin: str | None = None) -> dict:
    out = {"id": rid, "from_name": "impression", "to_name": "summary", "type": "rating", "value": {"rating": value}}
    return {**out, "origin": origin} if origin else out


PREDICTION = {
    "id": 31,
    "model_version": VERSION,
    "result": [
        *span("p_keep", 14, 26, "Not Checkable", "prediction", note="no roof in the descriptions"),
        *span("p_move", 32, 41, "Not Checkable", "prediction"),
        *span("p_relabel", 49, 61, "Not Checkable", "prediction"),
        *span("p_delete", 0, 9, "Incorrect", "prediction"),
        rating("p_rating", 4, "prediction"),
    ],
}
ANNOTATION = {
    "id": 700,
    "completed_by": 3,
    "parent_prediction": 31,
    "lead_time": 42.0,
    "result": [
        *span("p_keep", 14, 26, "Not Checkable", "prediction", note="no roof in the descriptions"),
        *span("p_move", 37, 41, "Not Checkable", "prediction-changed"),  # moved: start 32 -> 37
        *span("p_relabel", 49, 61, "Misleading", "prediction-changed"),
        *span("new_one", 62, 68, "Incorrect", "manual"),
        rating("p_rating", 2, "prediction-changed"),
    ],
}
TASK = {"id": 5, "data": {"descriptions": "Free WiFi.", "summary": SUMMARY}, "predictions": [PREDICTION],
        "annotations": [ANNOTATION]}  # fmt: skip


def review_of(*tasks: dict) -> pd.DataFrame:
    tables = tidy_from_export(2, "hotel_spans", get_schema("hotel_spans"), list(tasks), users={3: "ann@x"})
    return review_table(tables.judgments, tables.spans)


def test_each_suggested_span_and_the_rating_get_their_outcome():
    review = review_of(TASK)
    assert list(review.columns) == REVIEW_COLUMNS
    spans = review[review["unit"] == "span"].set_index("region_id")
    assert spans["outcome"].to_dict() == {
        "p_keep": "kept",
        "p_move": "edited",
        "p_relabel": "edited",
        "p_delete": "deleted",
        "new_one": "added",
    }
    assert spans.loc["p_move", "changed"] == "offsets"
    assert (spans.loc["p_move", "suggested_start"], spans.loc["p_move", "final_start"]) == (32, 37)
    assert spans.loc["p_relabel", "changed"] == "label"
    assert (spans.loc["p_relabel", "suggested"], spans.loc["p_relabel", "final"]) == ("Not Checkable", "Misleading")
    assert spans.loc["p_delete", "origin"] is None or pd.isna(spans.loc["p_delete", "origin"])
    assert spans.loc["new_one", "category"] == "Incorrect" and spans.loc["new_one", "origin"] == "manual"
    [item] = review[review["unit"] == "item"].to_dict("records")
    assert (item["category"], item["outcome"], item["suggested"], item["final"]) == ("impression", "edited", "4", "2")
    assert set(review["annotator"]) == {"ann@x"} and set(review["lead_time"]) == {42.0}
    assert set(review["suggestion_source"]) == {f"model:{VERSION}"} and set(review["parent_prediction"]) == {31}


def test_counts_per_source_and_unit():
    counts = outcome_counts(review_of(TASK), ["suggestion_source", "unit"]).set_index("unit")
    assert counts.loc["span", ["n_kept", "n_edited", "n_deleted", "n_added", "n_suggested"]].tolist() == [1, 2, 1, 1, 4]
    assert counts.loc["span", "kept_rate"] == 0.25 and counts.loc["span", "added_rate"] == 0.25
    assert counts.loc["item", ["n_kept", "n_edited", "n_deleted", "n_added"]].tolist() == [0, 1, 0, 0]


def test_the_outcome_comes_from_the_values_not_from_label_studios_origin():
    task = copy.deepcopy(TASK)
    results = task["annotations"][0]["result"]
    # edited back to the suggested value: Label Studio keeps 'prediction-changed'
    results[-1] = rating("p_rating", 4, "prediction-changed")
    # a note changed in the region list: Label Studio keeps 'prediction'
    results[1]["value"]["text"] = ["the roof is not mentioned"]
    review = review_of(task).set_index(["unit", "region_id"])
    assert review.loc[("item", "p_rating"), ["outcome", "origin"]].tolist() == ["kept", "prediction-changed"]
    assert review.loc[("span", "p_keep"), ["outcome", "changed", "origin"]].tolist() == ["edited", "note", "prediction"]


def test_annotations_without_a_parent_and_predictions_alone_give_no_rows():
    blank = copy.deepcopy(TASK)
    blank["annotations"][0]["parent_prediction"] = None
    assert review_of(blank).empty
    old = tidy_from_export(2, "hotel_spans", get_schema("hotel_spans"), [TASK])
    older = {name: frame.drop(columns=["region_id", "origin", "parent_prediction"]) for name, frame in
             {"j": old.judgments, "s": old.spans}.items()}  # fmt: skip
    assert review_table(older["j"], older["s"]).empty  # tables written before these columns


def test_choices_only_schema_and_a_suggestion_deleted_whole():
    config = get_schema("likert_rubric_es")
    choice = {"from_name": "Coherence", "to_name": "summary", "type": "choices"}
    prediction = {
        "id": 8,
        "model_version": "m1",
        "result": [
            {**choice, "id": "c1", "value": {"choices": ["4"]}},
            {"id": "c2", "from_name": "Fluency", "to_name": "summary", "type": "choices", "value": {"choices": ["5"]}},
            {"id": "c3", "from_name": "5W", "to_name": "summary", "type": "choices", "value": {"choices": ["3"]}},
        ],
    }
    annotation = {
        "id": 9,
        "completed_by": 1,
        "parent_prediction": 8,
        "result": [
            {**choice, "id": "c1", "value": {"choices": ["4"]}, "origin": "prediction"},
            {
                "id": "c2",
                "from_name": "Fluency",
                "to_name": "summary",
                "type": "choices",
                "value": {"choices": ["3"]},
                "origin": "prediction-changed",
            },  # fmt: skip
            # 5W deselected and chosen again: a new result id, matched by its item all the same
            {
                "id": "zz",
                "from_name": "5W",
                "to_name": "summary",
                "type": "choices",
                "value": {"choices": ["3"]},
                "origin": "manual",
            },  # fmt: skip
            {
                "id": "c4",
                "from_name": "Relevance",
                "to_name": "summary",
                "type": "choices",
                "value": {"choices": ["2"]},
                "origin": "manual",
            },  # fmt: skip
        ],
    }
    task = {"id": 1, "data": {"title": "t", "article": "a", "summary": "s"}, "predictions": [prediction],
            "annotations": [annotation]}  # fmt: skip
    tables = tidy_from_export(1, "likert_rubric_es", config, [task])
    review = review_table(tables.judgments, tables.spans).set_index("category")
    assert review["outcome"].to_dict() == {"Coherence": "kept", "5W": "kept", "Fluency": "edited", "Relevance": "added"}
    assert review.loc["5W", "region_id"] == "zz"


def test_a_parent_prediction_of_another_task_is_not_followed():
    other = copy.deepcopy(TASK)
    other["id"] = 6
    other["predictions"] = [{**PREDICTION, "id": 32, "result": PREDICTION["result"][-1:]}]
    other["annotations"] = [{**ANNOTATION, "id": 701}]  # names task 5's prediction 31
    tables = tidy_from_export(2, "hotel_spans", get_schema("hotel_spans"), [TASK, other], users={3: "ann@x"})
    links = foreign_parent_links(tables.judgments, tables.spans)
    assert links[["annotation_id", "task_id", "parent_prediction", "parent_task_id"]].values.tolist() == [
        ["701", 6, 31, 5]
    ]
    review = review_table(tables.judgments, tables.spans)
    assert set(review["annotation_id"]) == {"700"}  # 701 counts as not started from a suggestion
    assert review.equals(review_of(TASK))
