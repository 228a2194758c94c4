"""sync.tidy.tidy_from_export: a hand-written Label Studio JSON export (as 1.23 writes it, with
full predictions) into the tasks / judgments / spans tables."""

from __future__ import annotations

import json

import pandas as pd

from judgelab.configs.schema import get_schema
from judgelab.sync.tidy import JUDGMENT_COLUMNS, SPAN_COLUMNS, ItemNamer, concat_tables, tidy_from_export

LINES = [
    {"text": "Edith climbs the steps."},
    {"text": "She winds the clock.", "alternate": "She winds the old clock."},
    {"text": "A boat passes."},
    {"text": "The fog comes from the east."},
]
STORY_TASK = {
    "id": 41,
    "data": {
        "story": "Edith climbed the steps. Fog came from the west.",
        "lines": LINES,
        "alternates": [{"line": 1, "text": LINES[1]["text"], "alternate": LINES[1]["alternate"]}],
        "model": "gpt-4-turbo",
    },
    "meta": {"judgelab_key": "story-01"},
    "annotations": [
        {
            "id": 501,
            "completed_by": 7,
            "result": [
                {
                    "id": "r1",
                    "from_name": "verdict_0",
                    "to_name": "line_0",
                    "type": "choices",
                    "value": {"choices": ["Consistent"]},
                    "origin": "manual",
                },
                {
                    "id": "r2",
                    "from_name": "verdict_3",
                    "to_name": "line_3",
                    "type": "choices",
                    "value": {"choices": ["Inconsistent"]},
                    "origin": "manual",
                },
                {
                    "id": "r3",
                    "from_name": "explanation_3",
                    "to_name": "line_3",
                    "type": "textarea",
                    "value": {"text": ["The fog came from the west."]},
                    "origin": "manual",
                },
                {
                    "id": "span9",
                    "from_name": "ambiguous_3",
                    "to_name": "line_3",
                    "type": "labels",
                    "value": {"start": 19, "end": 28, "text": "the east.", "labels": ["Ambiguous"]},
                    "origin": "manual",
                },
                {
                    "id": "span9",
                    "from_name": "ambiguity_note_3",
                    "to_name": "line_3",
                    "type": "textarea",
                    "value": {"start": 19, "end": 28, "text": ["which east?"]},
                    "origin": "manual",
                },
                {
                    "id": "r4",
                    "from_name": "swap_0",
                    "to_name": "alt_text_0",
                    "type": "choices",
                    "value": {"choices": ["Yes"]},
                    "origin": "manual",
                },
                {
                    "id": "r5",
                    "from_name": "swap_explanation_0",
                    "to_name": "alt_text_0",
                    "type": "textarea",
                    "value": {"text": ["More precise."]},
                    "origin": "manual",
                },
            ],
            "was_cancelled": False,
            "ground_truth": True,
            "created_at": "2025-05-02T10:00:00.000000Z",
            "updated_at": "2025-05-02T10:03:00.000000Z",
            "lead_time": 180.5,
            "task": 41,
            "project": 3,
            "prediction": {},
            "result_count": 0,
        },
        {
            "id": 502,
            "completed_by": 8,
            "result": [],
            "was_cancelled": True,
            "ground_truth": False,
            "created_at": "2025-05-02T11:00:00.000000Z",
            "updated_at": "2025-05-02T11:00:00.000000Z",
            "lead_time": 4.0,
            "task": 41,
            "project": 3,
        },
    ],
    "predictions": [
        {
            "id": 90,
            "model_version": "judgelab-offline-1-story_consistency-abc",
            "score": 0.61,
            "result": [
                {
                    "id": "p1",
                    "from_name": "verdict_2",
                    "to_name": "line_2",
                    "type": "choices",
                    "value": {"choices": ["N/A, just commentary"]},
                    "origin": "prediction",
                }
            ],
            "created_at": "2025-05-01T09:00:00.000000Z",
            "updated_at": "2025-05-01T09:00:00.000000Z",
            "task": 41,
            "project": 3,
        }
    ],
}


def records(frame: pd.DataFrame) -> list[dict]:
    """Rows as dicts, pandas' missing values (NaN, <NA>) as None."""
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


HUMAN_501 = {
    "project": 3,
    "task_id": 41,
    "annotation_id": "501",
    "annotator": "edith@example.org",
    "source": "human",
    "created_at": "2025-05-02T10:00:00.000000Z",
    "updated_at": "2025-05-02T10:03:00.000000Z",
    "lead_time": 180.5,
    "was_cancelled": False,
    "ground_truth": True,
    "origin": "manual",
    "parent_prediction": None,
}


def story_tables():
    return tidy_from_export(
        3, "story_consistency", get_schema("story_consistency"), [STORY_TASK], users={7: "edith@example.org"}
    )


def test_story_judgments_use_the_schema_item_names():
    judgments = story_tables().judgments
    assert list(judgments.columns) == JUDGMENT_COLUMNS
    rows = records(judgments)
    assert rows[:5] == [
        {**HUMAN_501, "region_id": "r1", "item": "line_0", "value": "Consistent"},
        {**HUMAN_501, "region_id": "r2", "item": "line_3", "value": "Inconsistent"},
        {**HUMAN_501, "region_id": "r3", "item": "line_3.explanation", "value": "The fog came from the west."},
        {**HUMAN_501, "region_id": "r4", "item": "alternate_0.swap", "value": "Yes"},
        {**HUMAN_501, "region_id": "r5", "item": "alternate_0.explanation", "value": "More precise."},
    ]


def test_a_cancelled_annotation_is_one_row_without_item():
    rows = records(story_tables().judgments)
    cancelled = [r for r in rows if r["annotation_id"] == "502"]
    assert len(cancelled) == 1
    row = cancelled[0]
    assert row["annotator"] == "user:8"  # not in the users mapping
    assert row["was_cancelled"] is True and row["ground_truth"] is False
    assert row["lead_time"] == 4.0
    assert row["item"] is None and row["value"] is None
    assert row["region_id"] is None and row["origin"] is None


def test_an_annotation_started_from_a_prediction_keeps_its_parent_and_the_result_ids():
    task = json.loads(json.dumps(HOTEL_TASK))
    annotation = task["annotations"][0]
    annotation["parent_prediction"] = 12
    annotation["result"][-1].update(id="n", origin="prediction-changed")  # the predicted rating, changed
    tables = tidy_from_export(4, "hotel_spans", get_schema("hotel_spans"), [task])
    human = tables.judgments[tables.judgments["source"] == "human"]
    assert records(human[["region_id", "origin", "parent_prediction", "value"]]) == [
        {"region_id": "n", "origin": "prediction-changed", "parent_prediction": 12, "value": "3"}
    ]
    assert str(tables.judgments["parent_prediction"].dtype) == "Int64"
    model = tables.judgments[tables.judgments["source"] == "model:m2"]
    assert list(model["region_id"]) == ["c", "n"] and model["parent_prediction"].isna().all()
    assert list(tables.spans["parent_prediction"]) == [12, 12]
    assert list(tables.spans["region_id"]) == ["s1", "s2"]
    assert list(tables.spans["lead_time"]) == [30, 30]


def test_predictions_are_judgments_of_the_model():
    rows = records(story_tables().judgments)
    version = "judgelab-offline-1-story_consistency-abc"
    assert rows[-1] == {
        "project": 3,
        "task_id": 41,
        "annotation_id": "prediction:90",
        "annotator": version,
        "source": f"model:{version}",
        "item": "line_2",
        "value": "N/A, just commentary",
        "created_at": "2025-05-01T09:00:00.000000Z",
        "updated_at": "2025-05-01T09:00:00.000000Z",
        "lead_time": None,
        "was_cancelled": False,
        "ground_truth": False,
        "region_id": "p1",
        "origin": "prediction",
        "parent_prediction": None,
    }
    assert len(rows) == 7  # 5 human + 1 cancelled + 1 prediction


def test_a_labelled_span_gets_its_per_region_note():
    spans = story_tables().spans
    assert list(spans.columns) == SPAN_COLUMNS
    assert records(spans) == [
        {
            "project": 3,
            "task_id": 41,
            "annotation_id": "501",
            "annotator": "edith@example.org",
            "source": "human",
            "field": "line_3",
            "start": 19,
            "end": 28,
            "text": "the east.",
            "label": "Ambiguous",
            "note": "which east?",
            "region_id": "span9",
            "origin": "manual",
            "parent_prediction": None,
            "lead_time": 180.5,
        }
    ]
    assert LINES[3]["text"][19:28] == "the east."
    assert str(spans["start"].dtype) == "Int64"


def test_the_tasks_table_keeps_data_and_key():
    tasks = story_tables().tasks
    row = records(tasks)[0]
    assert row["project"] == 3 and row["task_id"] == 41
    assert row["schema"] == "story_consistency"
    assert row["key"] == "story-01"
    assert row["model"] == "gpt-4-turbo"
    assert json.loads(row["lines"]) == LINES


HOTEL_SUMMARY = "Free WiFi and a rooftop pool near the metro."
HOTEL_TASK = {
    "id": 8,
    "data": {"descriptions": "Free WiFi. Outdoor pool.", "summary": HOTEL_SUMMARY, "group": "A"},
    "meta": {},
    "annotations": [
        {
            "id": 77,
            "completed_by": {"id": 5, "email": "rater@example.org"},
            "result": [
                {
                    "id": "s1",
                    "from_name": "error",
                    "to_name": "summary",
                    "type": "labels",
                    "value": {"start": 16, "end": 28, "text": "rooftop pool", "labels": ["Incorrect"]},
                },
                {
                    "id": "s1",
                    "from_name": "reason",
                    "to_name": "summary",
                    "type": "textarea",
                    "value": {"start": 16, "end": 28, "text": ["the pool is outdoor", "not on the roof"]},
                },
                {
                    "id": "s2",
                    "from_name": "error",
                    "to_name": "summary",
                    "type": "labels",
                    "value": {"start": 29, "end": 44, "text": "near the metro.", "labels": ["Not Checkable"]},
                },
                {
                    "id": "x",
                    "from_name": "impression",
                    "to_name": "summary",
                    "type": "rating",
                    "value": {"rating": 3},
                },
            ],
            "was_cancelled": False,
            "ground_truth": False,
            "created_at": "2025-06-01T08:00:00Z",
            "updated_at": "2025-06-01T08:00:00Z",
            "lead_time": 30,
        }
    ],
    "predictions": [
        {
            "id": 12,
            "model_version": "m2",
            "result": [
                {
                    "id": "c",
                    "from_name": "no_errors",
                    "to_name": "summary",
                    "type": "choices",
                    "value": {"choices": ["I did not find any errors in the summary"]},
                },
                {"id": "n", "from_name": "impression", "to_name": "summary", "type": "rating", "value": {"rating": 7}},
            ],
        },
        17,  # an export that lists predictions as ids only: skipped
    ],
}


def test_hotel_spans_ratings_and_choices():
    tables = tidy_from_export(4, "hotel_spans", get_schema("hotel_spans"), [HOTEL_TASK])
    spans = records(tables.spans[["annotator", "field", "start", "end", "text", "label", "note"]])
    assert spans == [
        {
            "annotator": "rater@example.org",
            "field": "summary",
            "start": 16,
            "end": 28,
            "text": "rooftop pool",
            "label": "Incorrect",
            "note": "the pool is outdoor not on the roof",
        },
        {
            "annotator": "rater@example.org",
            "field": "summary",
            "start": 29,
            "end": 44,
            "text": "near the metro.",
            "label": "Not Checkable",
            "note": None,
        },
    ]
    for span in spans:
        assert HOTEL_SUMMARY[span["start"] : span["end"]] == span["text"]
    judgments = records(tables.judgments[["annotation_id", "annotator", "source", "item", "value"]])
    assert judgments == [
        {
            "annotation_id": "77",
            "annotator": "rater@example.org",
            "source": "human",
            "item": "impression",
            "value": "3",
        },
        {
            "annotation_id": "prediction:12",
            "annotator": "m2",
            "source": "model:m2",
            "item": "no_errors",
            "value": "I did not find any errors in the summary",
        },
        {"annotation_id": "prediction:12", "annotator": "m2", "source": "model:m2", "item": "impression", "value": "7"},
    ]


def test_an_export_without_annotations_gives_empty_tables_with_columns():
    tables = tidy_from_export(1, "custom", None, [{"id": 1, "data": {"text": "hi"}}])
    assert tables.judgments.empty and list(tables.judgments.columns) == JUDGMENT_COLUMNS
    assert tables.spans.empty and list(tables.spans.columns) == SPAN_COLUMNS
    assert records(tables.tasks) == [
        {"project": 1, "task_id": 1, "schema": "custom", "key": None, "inclusion_probability": None,
         "sampled": None, "project_title": None, "project_max_annotations": None,
         "project_overlap_percent": None, "project_sample_of": None, "text": "hi"}
    ]  # fmt: skip


def test_task_rows_carry_the_project_title_and_overlap_target():
    settings = {"project_title": "Pilot round 2", "project_max_annotations": 2, "project_overlap_percent": 100}
    tables = tidy_from_export(6, "custom", None, [{"id": 1, "data": {"text": "hi"}}], None, settings)
    row = records(tables.tasks)[0]
    assert {key: row[key] for key in settings} == settings
    assert row["text"] == "hi"


def test_without_a_schema_items_are_control_names():
    namer = ItemNamer.for_schema(None)
    assert namer("verdict_3") == "verdict_3"
    story = ItemNamer.for_schema(get_schema("story_consistency"))
    assert story("verdict_12") == "line_12"
    assert story("swap_explanation_2") == "alternate_2.explanation"
    assert story("verdict_x") == "verdict_x"
    assert story("my_verdict_1") == "my_verdict_1"


def test_concat_keeps_all_rows():
    a = story_tables()
    b = tidy_from_export(4, "hotel_spans", get_schema("hotel_spans"), [HOTEL_TASK])
    both = concat_tables([a, b])
    assert len(both.judgments) == len(a.judgments) + len(b.judgments)
    assert len(both.spans) == 3
    assert isinstance(both.tasks, pd.DataFrame) and len(both.tasks) == 2
