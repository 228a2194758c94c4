"""backend.task_data.prepare_task_data: defaults, coercion of CSV strings, allowed values,
required fields, summary lines and derived fields."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgelab.configs.schema import Schema, get_schema
from judgelab.configs.task_data import TaskDataError, prepare_task_data

META = {
    "name": "toy",
    "data_fields": {
        "text": {"type": "text", "required": True},
        "score": {"type": "number", "required": True, "min": 0, "max": 10},
        "label": {"type": "integer", "required": False, "allowed": [0, 1]},
        "model": {"type": "string", "required": False, "allowed": ["a", "b"]},
        "lines": {"type": "lines", "required": False},
    },
    "defaults": {"model": "a"},
}
TOY = Schema(name="toy", folder=Path("."), config_xml="<View/>", meta=META)


def test_defaults_fill_missing_and_empty_values_only():
    assert prepare_task_data(TOY, {"text": "t", "score": 1})["model"] == "a"
    assert prepare_task_data(TOY, {"text": "t", "score": 1, "model": ""})["model"] == "a"
    assert prepare_task_data(TOY, {"text": "t", "score": 1, "model": "b"})["model"] == "b"


def test_csv_strings_are_coerced_to_numbers_and_integers():
    out = prepare_task_data(TOY, {"text": "t", "score": "7.5", "label": "1"})
    assert out["score"] == 7.5 and isinstance(out["score"], float)
    assert out["label"] == 1 and isinstance(out["label"], int)
    assert prepare_task_data(TOY, {"text": "t", "score": "3", "label": "0.0"})["label"] == 0


def test_input_is_not_modified():
    data = {"text": "t", "score": "7.5"}
    prepare_task_data(TOY, data)
    assert data == {"text": "t", "score": "7.5"}


@pytest.mark.parametrize(
    ("field", "value"),
    [("score", "seven"), ("score", "7,5"), ("score", "nan"), ("score", True), ("label", "1.5"), ("label", "x")],
)
def test_a_bad_number_names_the_field(field, value):
    data = {"text": "t", "score": "5", field: value}
    with pytest.raises(TaskDataError) as info:
        prepare_task_data(TOY, data)
    assert info.value.field == field
    assert repr(field) in str(info.value)


def test_a_number_outside_its_range_is_refused():
    with pytest.raises(TaskDataError, match="outside 0..10") as info:
        prepare_task_data(TOY, {"text": "t", "score": "10.5"})
    assert info.value.field == "score"


def test_values_outside_the_allowed_list_are_refused():
    with pytest.raises(TaskDataError) as info:
        prepare_task_data(TOY, {"text": "t", "score": 1, "label": "2"})
    assert info.value.field == "label"
    with pytest.raises(TaskDataError) as info:
        prepare_task_data(TOY, {"text": "t", "score": 1, "model": "c"})
    assert info.value.field == "model"
    assert "'c' is not one of 'a', 'b'" in str(info.value)


@pytest.mark.parametrize("missing", [None, "", float("nan")])
def test_a_required_field_missing_or_empty_is_refused(missing):
    data = {"text": missing, "score": 1}
    with pytest.raises(TaskDataError, match="required") as info:
        prepare_task_data(TOY, data)
    assert info.value.field == "text"
    with pytest.raises(TaskDataError) as info:
        prepare_task_data(TOY, {"text": "t"})
    assert info.value.field == "score"


def test_a_text_field_refuses_a_list():
    with pytest.raises(TaskDataError) as info:
        prepare_task_data(TOY, {"text": ["a", "b"], "score": 1})
    assert info.value.field == "text"


def test_data_that_is_not_an_object_is_refused():
    with pytest.raises(TaskDataError):
        prepare_task_data(TOY, ["text", "score"])  # type: ignore[arg-type]


# ---- summary lines (story_consistency) -------------------------------------------------------

STORY = "Edith climbed the lighthouse steps every evening."


def story(lines) -> dict:
    return prepare_task_data(get_schema("story_consistency"), {"story": STORY, "lines": lines})


def test_lines_from_a_list_of_strings():
    out = story(["Edith climbs the steps.", "She is tired."])
    assert out["lines"] == [{"text": "Edith climbs the steps."}, {"text": "She is tired."}]
    assert out["alternates"] == []


def test_lines_from_a_json_string():
    out = story('["Edith climbs.", {"text": "She rests.", "alternate": "She sleeps."}]')
    assert out["lines"] == [{"text": "Edith climbs."}, {"text": "She rests.", "alternate": "She sleeps."}]


def test_lines_from_newline_text_skip_blank_lines():
    out = story("Edith climbs.\n\n  \nShe rests.\n")
    assert out["lines"] == [{"text": "Edith climbs."}, {"text": "She rests."}]


def test_alternates_are_derived_from_lines_with_an_alternate():
    out = story(
        [
            "Edith climbs.",
            {"text": "She rests.", "alternate": "She sleeps."},
            {"text": "Fog comes.", "alternate": "  "},
            {"text": "A boat passes.", "alternate": "A ship passes."},
        ]
    )
    assert out["alternates"] == [
        {"line": 1, "text": "She rests.", "alternate": "She sleeps."},
        {"line": 3, "text": "A boat passes.", "alternate": "A ship passes."},
    ]
    assert "alternate" not in out["lines"][2]  # a blank alternate is no alternate


@pytest.mark.parametrize("lines", [[], "[1, 2", ["ok", {"alternate": "no text"}], ["ok", "   "], 42])
def test_bad_lines_name_the_lines_field(lines):
    with pytest.raises(TaskDataError) as info:
        story(lines)
    assert info.value.field == "lines"


# ---- derived no-errors options (hotel_spans) -------------------------------------------------

HOTEL = {"descriptions": "Near the sea, free WiFi.", "summary": "Free WiFi by the sea."}


def test_no_errors_options_follow_the_group_and_default_to_group_a():
    hotel = get_schema("hotel_spans")
    assert prepare_task_data(hotel, HOTEL)["no_errors_options"] == [
        {"value": "I did not find any errors in the summary"}
    ]
    assert prepare_task_data(hotel, {**HOTEL, "group": "B"})["no_errors_options"] == [
        {"value": "There were no errors in the summary"}
    ]


def test_an_unknown_group_is_an_error():
    with pytest.raises(TaskDataError) as info:
        prepare_task_data(get_schema("hotel_spans"), {**HOTEL, "group": "C"})
    assert info.value.field == "group"
