"""backend.results.build_results: drafts into Label Studio regions that fit the label config and
the task's text; everything else is dropped and counted.

The schemas' real label configs are used (from ``configs/``); task data is hand-written, except
for the last tests, which run the offline annotator over every schema's sample tasks and check
the results with label-studio-sdk's own validator.
"""

from __future__ import annotations

import copy

import pytest
from label_studio_sdk.label_interface import LabelInterface
from lxml import etree

from judgelab.backend.annotators import OfflineAnnotator
from judgelab.backend.draft import Draft, SpanDraft
from judgelab.backend.results import build_results
from judgelab.configs.label_config import parse_label_config
from judgelab.configs.schema import all_schemas, get_schema
from judgelab.configs.task_data import prepare_task_data


def config(name: str):
    return parse_label_config(get_schema(name).config_xml)


HOTEL_SUMMARY = "Piscine 🏊 très calme, café ☕ gratuit près de la mer."
HOTEL_DATA = {
    "descriptions": "Une piscine extérieure, un café. À 300 m de la plage.",
    "summary": HOTEL_SUMMARY,
    "group": "A",
    "no_errors_options": [{"value": "I did not find any errors in the summary"}],
}


def span(text: str, part: str, label: str = "Incorrect", note: str | None = None, control: str = "error"):
    start = text.index(part)
    return SpanDraft(control, start, start + len(part), label, note=note)


def test_span_text_is_the_task_text_in_code_points():
    draft = Draft(spans=[span(HOTEL_SUMMARY, "très calme"), span(HOTEL_SUMMARY, "café ☕ gratuit", "Misleading")])
    built = build_results(draft, config("hotel_spans"), HOTEL_DATA)
    assert not built.dropped
    labels = [r for r in built.regions if r["type"] == "labels"]
    assert [r["value"]["text"] for r in labels] == ["très calme", "café ☕ gratuit"]
    for region in labels:
        value = region["value"]
        assert HOTEL_SUMMARY[value["start"] : value["end"]] == value["text"]
        assert region["from_name"] == "error" and region["to_name"] == "summary"
        assert region["origin"] == "prediction"
    assert labels[0]["value"]["start"] == 10  # after one emoji: code points, not UTF-16 units (11)
    assert labels[0]["value"]["labels"] == ["Incorrect"]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (SpanDraft("error", 40, 99, "Incorrect"), "span offsets out of range"),
        (SpanDraft("error", 5, 5, "Incorrect"), "span offsets out of range"),
        (SpanDraft("error", 6, 3, "Incorrect"), "span offsets out of range"),
        (SpanDraft("error", -1, 3, "Incorrect"), "span offsets out of range"),
        (SpanDraft("error", 0.0, 3.0, "Incorrect"), "span offsets out of range"),  # type: ignore[arg-type]
        (SpanDraft("error", 0, 7, "Wrong"), "unknown label"),
        (SpanDraft("flaw", 0, 7, "Incorrect"), "unknown span control"),
        (SpanDraft("impression", 0, 7, "Incorrect"), "unknown span control"),
    ],
)
def test_invalid_spans_are_dropped_and_counted(bad, reason):
    good = span(HOTEL_SUMMARY, "Piscine")
    built = build_results(Draft(spans=[good, bad]), config("hotel_spans"), HOTEL_DATA)
    assert [r["value"]["text"] for r in built.regions] == ["Piscine"]
    assert dict(built.dropped) == {reason: 1}


def test_spans_with_missing_or_text_offsets_are_dropped_not_fatal():
    draft = Draft(
        spans=[
            SpanDraft("error", None, 3, "Incorrect"),  # type: ignore[arg-type]
            span(HOTEL_SUMMARY, "Piscine"),
            SpanDraft("error", "2", "9", "Incorrect"),  # type: ignore[arg-type]
        ]
    )
    built = build_results(draft, config("hotel_spans"), HOTEL_DATA)
    assert [r["value"]["text"] for r in built.regions] == ["Piscine"]
    assert dict(built.dropped) == {"span offsets out of range": 2}


def test_a_span_on_a_task_without_the_text_is_dropped():
    built = build_results(Draft(spans=[SpanDraft("error", 0, 3, "Incorrect")]), config("hotel_spans"), {})
    assert built.regions == []
    assert dict(built.dropped) == {"span target has no text": 1}


def test_per_region_note_has_the_span_id_and_offsets():
    draft = Draft(spans=[span(HOTEL_SUMMARY, "près de la mer", note="300 m from the beach, not by the sea")])
    regions = build_results(draft, config("hotel_spans"), HOTEL_DATA).regions
    assert len(regions) == 2
    label, note = regions
    assert note["id"] == label["id"]
    assert note["from_name"] == "reason" and note["to_name"] == "summary"
    assert note["type"] == "textarea"
    assert note["value"] == {
        "start": label["value"]["start"],
        "end": label["value"]["end"],
        "text": ["300 m from the beach, not by the sea"],
    }
    assert label["value"]["text"] == "près de la mer"


def test_different_spans_get_different_ids():
    draft = Draft(spans=[span(HOTEL_SUMMARY, "Piscine"), span(HOTEL_SUMMARY, "gratuit")])
    regions = build_results(draft, config("hotel_spans"), HOTEL_DATA).regions
    assert len({r["id"] for r in regions}) == 2


def test_a_span_without_note_has_no_textarea():
    regions = build_results(Draft(spans=[span(HOTEL_SUMMARY, "Piscine")]), config("hotel_spans"), HOTEL_DATA).regions
    assert [r["type"] for r in regions] == ["labels"]


def test_unknown_choices_are_dropped_and_counted():
    draft = Draft(choices={"SP": ["9"], "SC": ["2"], "flags": ["Offensive content", "Boring"], "nope": ["1"]})
    built = build_results(draft, config("augmentation_quality"), {"generated": "Testo."})
    by_name = {r["from_name"]: r["value"] for r in built.regions}
    assert by_name == {"SC": {"choices": ["2"]}, "flags": {"choices": ["Offensive content"]}}
    assert dict(built.dropped) == {"unknown choice": 2, "unknown choices control": 1}


def test_single_choice_control_keeps_one_value_multiple_keeps_all():
    draft = Draft(choices={"SP": ["3", "2"], "flags": ["Offensive content", "Problem with the data"]})
    built = build_results(draft, config("augmentation_quality"), {})
    by_name = {r["from_name"]: r["value"]["choices"] for r in built.regions}
    assert by_name == {"SP": ["3"], "flags": ["Offensive content", "Problem with the data"]}


def test_a_clean_draft_reports_nothing_dropped():
    draft = Draft(choices={"SP": ["3"], "SC": ["3"]})
    built = build_results(draft, config("augmentation_quality"), {})
    assert len(built.regions) == 2
    assert not built.dropped  # no zero-count reasons either: the backend logs any reason present
    assert dict(built.dropped) == {}


@pytest.mark.parametrize(("stars", "kept"), [(0, False), (8, False), (-3, False), ("5", False), (1, True), (7, True)])
def test_rating_out_of_range_is_dropped(stars, kept):
    built = build_results(Draft(ratings={"impression": stars}), config("hotel_spans"), HOTEL_DATA)
    if kept:
        assert built.regions[0]["value"] == {"rating": stars}
        assert built.regions[0]["type"] == "rating"
        assert not built.dropped
    else:
        assert built.regions == []
        assert dict(built.dropped) == {"rating out of range": 1}


def test_dynamic_choices_are_checked_against_the_tasks_options():
    hotel = config("hotel_spans")
    group_a = prepare_task_data(get_schema("hotel_spans"), {**HOTEL_DATA, "no_errors_options": None})
    ok = build_results(Draft(choices={"no_errors": ["I did not find any errors in the summary"]}), hotel, group_a)
    assert ok.regions[0]["value"] == {"choices": ["I did not find any errors in the summary"]}
    # group B's wording is not an option of a group A task
    wrong = build_results(Draft(choices={"no_errors": ["There were no errors in the summary"]}), hotel, group_a)
    assert wrong.regions == [] and dict(wrong.dropped) == {"unknown choice": 1}
    # no options in the data: nothing can be chosen
    bare = {k: v for k, v in HOTEL_DATA.items() if k != "no_errors_options"}
    none = build_results(Draft(choices={"no_errors": ["I did not find any errors in the summary"]}), hotel, bare)
    assert none.regions == [] and dict(none.dropped) == {"unknown choice": 1}


def test_textareas_skip_empty_text_and_per_region_controls():
    draft = Draft(texts={"notes": "Tono cambiato.", "flags": "x"})
    built = build_results(draft, config("augmentation_quality"), {})
    assert [(r["from_name"], r["value"]) for r in built.regions] == [("notes", {"text": ["Tono cambiato."]})]
    assert dict(built.dropped) == {"unknown textarea control": 1}
    assert build_results(Draft(texts={"notes": "   "}), config("augmentation_quality"), {}).regions == []
    per_region = build_results(Draft(texts={"reason": "free text"}), config("hotel_spans"), HOTEL_DATA)
    assert per_region.regions == [] and dict(per_region.dropped) == {"unknown textarea control": 1}


STORY_DATA = {
    "story": "Edith climbed the steps. The fog came from the west.",
    "lines": [
        {"text": "Edith climbs the steps."},
        {"text": "Fog rolls in from the east 🌫️.", "alternate": "Fog rolls in from the west."},
        {"text": "This is a moving story."},
    ],
    "alternates": [{"line": 1, "text": "Fog rolls in from the east 🌫️.", "alternate": "Fog rolls in from the west."}],
}


def test_repeater_controls_are_built_per_line():
    line = STORY_DATA["lines"][1]["text"]
    draft = Draft(
        choices={
            "verdict_0": ["Consistent"],
            "verdict_1": ["Inconsistent"],
            "verdict_3": ["Consistent"],
            "swap_0": ["Yes"],
            "swap_1": ["No"],
        },
        texts={"explanation_1": "The fog came from the west."},
        spans=[span(line, "the east 🌫️", "Ambiguous", note="which side?", control="ambiguous_1")],
    )
    built = build_results(draft, config("story_consistency"), STORY_DATA)
    names = [(r["from_name"], r["to_name"]) for r in built.regions]
    assert names == [
        ("ambiguous_1", "line_1"),
        ("ambiguity_note_1", "line_1"),
        ("verdict_0", "line_0"),
        ("verdict_1", "line_1"),
        ("swap_0", "alt_text_0"),
        ("explanation_1", "line_1"),
    ]
    assert built.regions[0]["value"]["text"] == "the east 🌫️"
    assert dict(built.dropped) == {"unknown choices control": 2}  # verdict_3 and swap_1 do not exist


def expand_repeaters(xml: str, data: dict) -> str:
    """The label config Label Studio shows for one task: each Repeater replaced by one copy of
    its content per item of its list, ``{{idx}}`` replaced by the item's index."""
    root = etree.fromstring(xml.encode("utf-8"))
    for repeater in list(root.iter("Repeater")):
        flag = repeater.get("indexFlag", "{{idx}}")
        items = data.get(repeater.get("on", "").lstrip("$")) or []
        view = etree.Element("View")
        for i in range(len(items)):
            for child in repeater:
                clone = copy.deepcopy(child)
                for el in clone.iter():
                    for attr, value in el.attrib.items():
                        el.set(attr, value.replace(flag, str(i)))
                view.append(clone)
        repeater.getparent().replace(repeater, view)
    expanded = etree.tostring(root, encoding="unicode")
    assert "{{" not in expanded
    return expanded


def offline_results(name: str):
    """(per-task label config, regions) for every sample task of a schema, through the offline
    annotator, the schema's data preparation and build_results."""
    schema = get_schema(name)
    annotator, parsed = OfflineAnnotator(), parse_label_config(schema.config_xml)
    out = []
    for task in schema.samples():
        data = prepare_task_data(schema, task["data"])
        built = build_results(annotator.annotate(name, data), parsed, data)
        out.append((data, built))
    return out


@pytest.mark.parametrize("name", sorted(all_schemas()))
def test_offline_results_on_every_sample_validate_with_the_sdk(name):
    """The SDK does not expand Repeater names, so story_consistency is validated against a
    per-task config with its Repeaters expanded (what the labeling UI renders)."""
    xml = get_schema(name).config_xml
    results = offline_results(name)
    assert results
    total = 0
    for data, built in results:
        assert not built.dropped, built.dropped
        task_config = expand_repeaters(xml, data) if name == "story_consistency" else xml
        errors = LabelInterface(task_config).validate_prediction({"result": built.regions}, return_errors=True)
        assert errors == [], errors
        total += len(built.regions)
        for region in built.regions:
            value = region["value"]
            if "start" in value and isinstance(value["text"], str):
                text = parse_label_config(xml).object_text(region["to_name"], data)
                assert text[value["start"] : value["end"]] == value["text"]
    assert total > 0


def test_the_sdk_check_does_catch_a_bad_region():
    """The validator used above is not vacuous: a wrong choice and an unexpanded name fail."""
    story_xml = get_schema("story_consistency").config_xml
    bad_choice = {
        "id": "a",
        "from_name": "verdict_0",
        "to_name": "line_0",
        "type": "choices",
        "value": {"choices": ["Maybe"]},
    }
    good_choice = {**bad_choice, "value": {"choices": ["Consistent"]}}
    expanded = LabelInterface(expand_repeaters(story_xml, STORY_DATA))
    assert expanded.validate_prediction({"result": [good_choice]}, return_errors=True) == []
    assert expanded.validate_prediction({"result": [bad_choice]}, return_errors=True)
    assert LabelInterface(story_xml).validate_prediction({"result": [good_choice]}, return_errors=True)
