"""LLM tasks: prompts rendered from the schema templates, scripted answers turned into drafts
whose results are valid for the project's label config."""

from __future__ import annotations

import json
import shutil

import pytest
from shared_data import SEEDS

from judgelab.backend.draft import Draft
from judgelab.backend.llm.prompting import PROMPTS_DIR_ENV, render
from judgelab.backend.llm.tasks import GenericTask, PromptError, task_for, verdict_of
from judgelab.backend.results import build_results
from judgelab.configs.label_config import parse_label_config
from judgelab.configs.schema import get_schema
from judgelab.configs.task_data import prepare_task_data

SCHEMAS = ["summary_flaws", "hotel_spans", "augmentation_quality", "likert_rubric_es", "story_consistency"]
GARBAGE = [
    "I'm sorry, I cannot help with that.",
    "",
    "{{{{ not json ]]",
    '{"unexpected": [1, 2, 3]}',
    "```json\n[1, 2,\n```",
]


def seed(prefix: str) -> str:
    matches = sorted(SEEDS.glob(f"{prefix}_*.txt"))
    if not matches:
        pytest.skip(f"seed {prefix} not available")
    return matches[0].read_text(encoding="utf-8")


def sample(name: str, index: int = 0) -> dict:
    schema = get_schema(name)
    return prepare_task_data(schema, schema.samples()[index]["data"])


def make_task(name: str, variant: str | None = None):
    schema = get_schema(name)
    return task_for(schema, schema.config_xml, variant)


def prompt_of(task, data: dict) -> str:
    messages = task.messages(data)
    assert isinstance(messages, list) and messages and all(m["role"] in ("system", "user") for m in messages)
    return "\n".join(m["content"] for m in messages)


def valid_regions(xml: str, draft: Draft, data: dict) -> list[dict]:
    """The regions the backend would send: nothing dropped, every span text == text[start:end]."""
    config = parse_label_config(xml)
    built = build_results(draft, config, data)
    assert not built.dropped, built.dropped
    assert "results_dropped" not in draft.info
    for region in built.regions:
        value = region["value"]
        if "start" in value:
            text = config.object_text(region["to_name"], data)
            assert 0 <= value["start"] < value["end"] <= len(text)
            if region["type"] != "textarea":  # a per-region note carries its own text
                assert text[value["start"] : value["end"]] == value["text"]
    return built.regions


def spans_of(draft: Draft, data_text: str) -> list[tuple[str, str, str | None]]:
    return [(data_text[s.start : s.end], s.label, s.note) for s in sorted(draft.spans, key=lambda s: s.start)]


# --------------------------------------------------------------------------------------------
# prompts


@pytest.mark.parametrize("name", SCHEMAS)
def test_messages_contain_the_task_texts(name):
    task = make_task(name)
    for index in range(len(get_schema(name).samples())):
        data = sample(name, index)
        prompt = prompt_of(task, data)
        fields = {
            "summary_flaws": ["title", "post", "summary"],
            "hotel_spans": ["descriptions", "summary"],
            "augmentation_quality": ["original", "generated", "model", "augmentation_type"],
            "likert_rubric_es": ["article", "summary"],
            "story_consistency": ["story"],
        }[name]
        for key in fields:
            assert str(data[key]) in prompt, key
        if name == "story_consistency":
            for i, line in enumerate(data["lines"]):
                assert f"Line {i + 1}: {line['text']}" in prompt
                if "alternate" in line:
                    assert line["alternate"] in prompt
        assert "{summary}" not in prompt and "{data}" not in prompt and "{text}" not in prompt


def test_summary_flaws_prompt_is_seed_000_verbatim():
    text = seed("000")
    data = sample("summary_flaws")
    prompt = prompt_of(make_task("summary_flaws"), data)
    head, _, tail = text.rpartition("Source Document:\n{}")
    assert head in prompt  # instructions and the three examples, byte for byte
    for sentence in (
        "Imagine you are a human annotator. You will be given a source document, a machine generated summary and "
        "score.",
        '6. **Indicate Flawless Summaries:** If you don\'t find any issues, simply note "None identified".',
        "Span 1: why did you decide to switch? (Label: Irrelevant)",
        "Span 2: I view her like I like people with no skill in do. (Label: Factually Incorrect)",
    ):
        assert sentence in prompt
    assert f"SUBREDDIT: {data['subreddit']} TITLE: {data['title']} POST: {data['post']}" in prompt
    assert f"Summary to be Labeled:\n{data['summary']}\n\nSummary Score:\n8.6/10" in prompt
    assert prompt.endswith("Problematic Spans Identified in the Summary:")
    assert make_task("summary_flaws").response_format() is None


def test_hotel_prompts_are_seed_004_verbatim():
    text = seed("004")
    data = sample("hotel_spans")
    main = prompt_of(make_task("hotel_spans"), data)
    less = prompt_of(make_task("hotel_spans", "less_strict"), data)
    assert main.startswith(f"Given the hotel descriptions: {data['descriptions']}")
    for prompt in (main, less):
        assert f"Annotate all the errors in the following summary: {data['summary']}" in prompt
        for sentence in (
            'The value of "text" is the text of the error. The value of "reason" is the reason for the error.',
            "- 0: Not checkable: The fact in the text cannot be checked in the data.",
            "- 1: Misleading: The fact in the text is misleading in the given context.",
            "- 2: Incorrect fact: The fact in the text contradicts the data.",
            "The list should be sorted by the position of the error in the text. Make sure that the annotations are "
            "not overlapping.",
            "The closest major airports to Bomontist Suit are: Istanbul (SAW-Sabiha Gokcen Intl.) - 17.5 km / 10.9 "
            "mi Istanbul (IST-Ataturk Intl.)",
            '"text": "Schiphol Airport",',
            '"impression"',
        ):
            assert sentence in prompt
            if sentence.startswith(("- ", "The list")):
                assert sentence in text  # the seed says the same
    assert "Example 2" not in main and "Blue Matisse" not in main
    note = "Note that some details may not be mentioned in the text: do not count omissions as errors."
    assert note in text and note in less
    assert "Experience the vibrant flavors of Latin cuisine with a modern twist at Blue Matisse restaurant." in less
    assert make_task("hotel_spans").version != make_task("hotel_spans", "less_strict").version
    with pytest.raises(PromptError):
        make_task("hotel_spans", "no_such_variant")


def test_rubric_prompts_carry_the_guideline_definitions():
    aug = prompt_of(make_task("augmentation_quality"), sample("augmentation_quality"))
    for sentence in (
        "Does the generated text preserve the core meaning, factual content, and main claims of the original?",
        "Is the generated text grammatically correct and fluent in Italian?",
        "Count errors: 0 = score 3, 1-3 = score 2, 4+ = score 1",
        "All key information retained; same claims, entities, and events; only stylistic changes",
        "Multiple serious errors; awkward phrasing; comprehension impaired; clearly machine-generated",
        "Original (label 1 = hyperpartisan)",
        '{"SP": <1, 2 or 3>, "SC": <1, 2 or 3>, "notes":',
    ):
        assert sentence in aug
        if not sentence.startswith(("Original", "{")):
            assert sentence in seed("001")
    es = prompt_of(make_task("likert_rubric_es"), sample("likert_rubric_es"))
    for sentence in (
        "penalizamos su presencia (-1 a la nota final)",
        "también penalizamos la presencia de valoraciones subjetivas",
        "4: Coherencia implícita: no hay conectores, pero las frases tienen un flujo temporal/causal.",
        "5: no miente",
        "4: casi todas (falta 1 relevante)",
        "Responde solo con un objeto JSON",
        '{"Coherence": n, "Consistency": n, "Fluency": n, "Relevance": n, "5W": n}',
    ):
        assert sentence in es
    story = prompt_of(make_task("story_consistency"), sample("story_consistency"))
    for sentence in (
        "Is this line in the summary consistent with the story?",
        "Would you swap the line with its alternate?",
        "Some lines include commentary about the story",
        '"N/A, just commentary"',
        "Alternate 1 (summary line 4)",
    ):
        assert sentence in story


@pytest.mark.parametrize("name", SCHEMAS[1:])
def test_json_tasks_offer_a_response_format(name):
    fmt = make_task(name).response_format()
    assert fmt["type"] == "json_schema"
    schema = fmt["json_schema"]["schema"]
    assert schema["type"] == "object" and schema["properties"]
    json.dumps(fmt)


def test_render_is_plain_substitution():
    assert render("{a} {b} {a.__class__} {0, 1} {}", {"a": "{b}", "b": 2.0}) == "{b} 2 {a.__class__} {0, 1} {}"


# --------------------------------------------------------------------------------------------
# summary_flaws


def test_summary_flaws_well_formed_answer():
    task, data = make_task("summary_flaws"), sample("summary_flaws")
    answer = (
        "Span 1: says I'm making it a thing (Label: Factually Incorrect)\n"
        "Span 2: How do I bring it up without a fight? (Label: Irrelevant)"
    )
    draft = task.to_draft(answer, data)
    assert spans_of(draft, data["summary"]) == [
        ("says I'm making it a thing", "Factually Incorrect", None),
        ("How do I bring it up without a fight?", "Irrelevant", None),
    ]
    assert "none_identified" not in draft.choices
    assert draft.info["spans"] == {"exact": 2}
    regions = valid_regions(task.config.xml, draft, data)
    assert {r["from_name"] for r in regions} == {"flaw"}


def test_summary_flaws_messy_answer():
    task, data = make_task("summary_flaws"), sample("summary_flaws")
    answer = (
        "Sure! Here are the problematic spans:\n\n"
        '**Span 1:** "SECOND YEAR IN A ROW" (label: factually incorrect)\n'
        "Span 2: not a priority (Label: Redundant) repeats the post\n"
        "Span 3: a sentence that is not in the summary at all (Label: Incoherent)\n"
    )
    draft = task.to_draft(answer, data)
    assert spans_of(draft, data["summary"]) == [
        ("second year in a row", "Factually Incorrect", None),
        ("not a priority", "Other", "Redundant; repeats the post"),
    ]
    assert draft.info["label_to_other"] == 1
    assert draft.info["spans"] == {"case": 1, "exact": 1, "unmatched": 1}
    regions = valid_regions(task.config.xml, draft, data)
    notes = [r for r in regions if r["from_name"] == "flaw_note"]
    assert notes and notes[0]["value"]["text"] == ["Redundant; repeats the post"]


def test_summary_flaws_none_identified():
    task, data = make_task("summary_flaws"), sample("summary_flaws")
    draft = task.to_draft("None identified", data)
    assert draft.spans == [] and draft.choices == {"none_identified": ["None identified"]}
    valid_regions(task.config.xml, draft, data)


# --------------------------------------------------------------------------------------------
# hotel_spans


def hotel_data(summary: str, descriptions: str = "A hotel with an outdoor pool, 2 km from the beach.") -> dict:
    return prepare_task_data(
        get_schema("hotel_spans"), {"descriptions": descriptions, "summary": summary, "group": "B"}
    )


def test_hotel_well_formed_answer():
    task, data = make_task("hotel_spans"), sample("hotel_spans")
    answer = json.dumps(
        {
            "annotations": [
                {"reason": "the hotel is in Dubai", "text": "Hudson River", "annotation_type": 2},
                {"reason": "not mentioned", "text": "private balconies", "annotation_type": 0},
            ],
            "impression": 2,
        }
    )
    draft = task.to_draft(answer, data)
    assert spans_of(draft, data["summary"]) == [
        ("Hudson River", "Incorrect", "the hotel is in Dubai"),
        ("private balconies", "Not Checkable", "not mentioned"),
    ]
    assert draft.ratings == {"impression": 2} and "no_errors" not in draft.choices
    assert draft.info["ratings"] == {"ok": 1}
    regions = valid_regions(task.config.xml, draft, data)
    assert sorted(r["from_name"] for r in regions) == ["error", "error", "impression", "reason", "reason"]


def test_hotel_messy_answer():
    task = make_task("hotel_spans")
    data = hotel_data("Relax by the pool, then swim in the pool on the BEACHFRONT terrace.")
    answer = (
        "Let me check the summary against the descriptions.\n```json\n"
        "{'annotations': [\n"
        "  {'reason': 'only one pool is outdoor', 'text': 'pool', 'annotation_type': '1', 'occurrence_index': 1},\n"
        "  {'reason': 'the beach is 2 km away', 'text': 'beachfront', 'annotation_type': 'misleading'},\n"
        "  {'reason': 'overlaps', 'text': 'BEACHFRONT terrace', 'annotation_type': 'Incorrect fact'},\n"
        "  {'reason': 'bad type', 'text': 'Relax', 'annotation_type': 7},\n"
        "  'just a string',\n"
        "], 'impression': 8,}\n```\nHope this helps!"
    )
    draft = task.to_draft(answer, data)
    assert spans_of(draft, data["summary"]) == [
        ("pool", "Misleading", "only one pool is outdoor"),
        ("BEACHFRONT", "Misleading", "the beach is 2 km away"),
    ]
    assert draft.spans[0].start == data["summary"].index("pool", 20)  # the second "pool"
    assert draft.ratings == {"impression": 7}
    assert draft.info["ratings"] == {"clamped": 1}
    assert draft.info["unknown_label"] == 1 and draft.info["dropped_items"] == 1
    assert draft.info["spans"]["overlap_dropped"] == 1
    valid_regions(task.config.xml, draft, data)


def test_hotel_no_errors_and_out_of_range_impression():
    task = make_task("hotel_spans")
    data = hotel_data("A hotel with an outdoor pool.")
    draft = task.to_draft('{"annotations": [], "impression": 12}', data)
    assert draft.spans == []
    assert draft.choices == {"no_errors": ["There were no errors in the summary"]}
    assert draft.ratings == {} and draft.info["ratings"] == {"dropped": 1}
    valid_regions(task.config.xml, draft, data)
    without = task.to_draft('{"annotations": []}', data)
    assert without.ratings == {} and "ratings" not in without.info


# --------------------------------------------------------------------------------------------
# augmentation_quality and likert_rubric_es


def test_augmentation_well_formed_and_messy():
    task, data = make_task("augmentation_quality"), sample("augmentation_quality")
    draft = task.to_draft('{"SP": 3, "SC": 2, "notes": "Same claims; one agreement error."}', data)
    assert draft.choices == {"SP": ["3"], "SC": ["2"]}
    assert draft.texts == {"notes": "Same claims; one agreement error."}
    assert draft.info.get("ratings") == {"ok": 2}
    valid_regions(task.config.xml, draft, data)

    messy = "Here is my rating:\n```json\n{'sp': '2 - Partial Preservation', 'SC': 4, 'Notes': ['a', 'b'],}\n```"
    draft = task.to_draft(messy, data)
    assert draft.choices == {"SP": ["2"], "SC": ["3"]}  # SC 4 on 1..3 is clamped
    assert draft.texts == {"notes": "a\nb"}
    assert draft.info["ratings"] == {"ok": 1, "clamped": 1}
    valid_regions(task.config.xml, draft, data)

    far = task.to_draft('{"SP": 9, "SC": "three"}', data)
    assert far.choices == {"SC": ["3"]} and far.info["ratings"] == {"dropped": 1, "ok": 1}
    valid_regions(task.config.xml, far, data)


def test_likert_well_formed_and_messy():
    task, data = make_task("likert_rubric_es"), sample("likert_rubric_es")
    answer = '{"Coherence": 5, "Consistency": 4, "Fluency": 5, "Relevance": 3, "5W": 4}'
    draft = task.to_draft(answer, data)
    assert draft.choices == {
        "Coherence": ["5"],
        "Consistency": ["4"],
        "Fluency": ["5"],
        "Relevance": ["3"],
        "5W": ["4"],
    }
    valid_regions(task.config.xml, draft, data)

    messy = 'Puntuaciones:\n{"coherencia": "4/5", "CONSISTENCY": 4.6, "relevance": 0, "5 W": 6, "Fluidez": null}'
    draft = task.to_draft(messy, data)
    assert draft.choices == {"Coherence": ["4"], "Consistency": ["5"], "Relevance": ["1"], "5W": ["5"]}
    assert draft.info["ratings"] == {"ok": 1, "rounded": 1, "clamped": 2, "dropped": 1}
    valid_regions(task.config.xml, draft, data)


# --------------------------------------------------------------------------------------------
# story_consistency


def test_story_well_formed_answer():
    task, data = make_task("story_consistency"), sample("story_consistency")
    lines = data["lines"]
    verdicts = ["Consistent", "Consistent", "Consistent", "Inconsistent", "Consistent", "Inconsistent"]
    verdicts.append("N/A, just commentary")
    answer = {
        "lines": [
            {"line": i + 1, "verdict": v, "explanation": f"why {i + 1}" if v == "Inconsistent" else ""}
            for i, v in enumerate(verdicts)
        ],
        "swaps": [
            {"alternate": 1, "swap": "Yes", "explanation": "the light never fails"},
            {"alternate": 2, "swap": "Yes", "explanation": "she hands the ledger over"},
        ],
        "ambiguous": [{"line": 4, "text": "keep the lamp turning by hand", "reason": "she only rings the bell"}],
    }
    draft = task.to_draft(json.dumps(answer), data)
    assert {k: v[0] for k, v in draft.choices.items() if k.startswith("verdict_")} == {
        f"verdict_{i}": v for i, v in enumerate(verdicts)
    }
    assert draft.choices["swap_0"] == ["Yes"] and draft.choices["swap_1"] == ["Yes"]
    assert draft.texts == {
        "explanation_3": "why 4",
        "explanation_5": "why 6",
        "swap_explanation_0": "the light never fails",
        "swap_explanation_1": "she hands the ledger over",
    }
    (span,) = draft.spans
    assert span.control == "ambiguous_3" and span.label == "Ambiguous" and span.note == "she only rings the bell"
    assert lines[3]["text"][span.start : span.end] == "keep the lamp turning by hand"
    assert "missing_verdicts" not in draft.info
    regions = valid_regions(task.config.xml, draft, data)
    assert {r["to_name"] for r in regions if r["from_name"] == "ambiguous_3"} == {"line_3"}


def test_story_messy_answer_leaves_skipped_lines_to_the_annotator():
    task, data = make_task("story_consistency"), sample("story_consistency")
    answer = """```json
{"lines": [
  {"line": "1", "verdict": "yes"},
  {"line": 2, "verdict": true},
  {"line": "Line 4", "verdict": "NO", "explanation": "the light does not fail"},
  {"line": 5, "verdict": "consistent"},
  {"line": 6, "verdict": "Inconsistent"},
  {"line": 7, "verdict": "n/a"},
  {"line": 9, "verdict": "yes"},
  {"line": 5, "verdict": "no"}
 ],
 "swaps": [{"line": 6, "swap": "yes", "explanation": "fixes it"}],
 "ambiguous": [{"line": 1, "text": "as she has done every evening", "reason": "every evening?"},
               {"line": 12, "text": "nothing", "reason": "no such line"}]
}
```"""
    draft = task.to_draft(answer, data)
    verdicts = {k: v[0] for k, v in draft.choices.items() if k.startswith("verdict_")}
    assert verdicts == {
        "verdict_0": "Consistent",
        "verdict_1": "Consistent",
        "verdict_3": "Inconsistent",
        "verdict_4": "Consistent",
        "verdict_5": "Inconsistent",
        "verdict_6": "N/A, just commentary",
    }
    assert "verdict_2" not in draft.choices  # skipped by the model: not invented
    assert draft.info["missing_verdicts"] == 1
    assert draft.info["duplicate_verdicts"] == 1
    assert draft.info["missing_explanations"] == 1
    assert draft.info["missing_swaps"] == 1
    assert draft.choices["swap_1"] == ["Yes"] and "swap_0" not in draft.choices
    assert draft.texts == {"explanation_3": "the light does not fail", "swap_explanation_1": "fixes it"}
    assert [(s.control, data["lines"][0]["text"][s.start : s.end]) for s in draft.spans] == [
        ("ambiguous_0", "as she has done every evening")
    ]
    assert draft.info["dropped_items"] == 2  # line 9 and the ambiguous portion on line 12
    valid_regions(task.config.xml, draft, data)


def test_verdict_mapping():
    assert verdict_of("Consistent") == "Consistent"
    assert verdict_of("Inconsistent.") == "Inconsistent"
    assert verdict_of("N/A, just commentary") == "N/A, just commentary"
    assert verdict_of(False) == "Inconsistent"
    assert verdict_of("none") is None and verdict_of(3) is None


# --------------------------------------------------------------------------------------------
# garbage, versions, overrides


@pytest.mark.parametrize("name", SCHEMAS)
@pytest.mark.parametrize("garbage", GARBAGE)
def test_garbage_answer_gives_an_empty_draft(name, garbage):
    task, data = make_task(name), sample(name)
    draft = task.to_draft(garbage, data)
    assert not (draft.spans or draft.choices or draft.ratings or draft.numbers or draft.texts)
    assert isinstance(draft.info, dict)
    json.dumps(draft.info)
    valid_regions(task.config.xml, draft, data)


@pytest.mark.parametrize("name", SCHEMAS)
def test_odd_inputs_never_raise(name):
    task = make_task(name)
    for answer in (None, 42, {"a": 1}, "x" * 10_000):
        assert isinstance(task.to_draft(answer, sample(name)), Draft)
    assert isinstance(task.to_draft('{"annotations": [{"text": "a"}]}', {}), Draft)
    assert isinstance(task.to_draft("Span 1: x (Label: Other)", None), Draft)
    task.messages({})


def test_version_follows_the_template(tmp_path, monkeypatch):
    monkeypatch.setenv(PROMPTS_DIR_ENV, str(tmp_path))
    before = make_task("likert_rubric_es")
    assert before.version == make_task("likert_rubric_es").version  # stable
    override = tmp_path / "likert_rubric_es" / "prompt.txt"
    override.parent.mkdir()
    shutil.copy(get_schema("likert_rubric_es").folder / "prompt.txt", override)
    assert make_task("likert_rubric_es").version == before.version  # same text, same version
    override.write_text(override.read_text(encoding="utf-8") + "\nSé breve.\n", encoding="utf-8")
    after = make_task("likert_rubric_es")
    assert after.version != before.version
    assert prompt_of(after, sample("likert_rubric_es")).endswith("Sé breve.")
    # the hotel variant file can be overridden the same way
    (tmp_path / "hotel_spans").mkdir()
    (tmp_path / "hotel_spans" / "prompt_less_strict.txt").write_text("Summary: {text}\n", encoding="utf-8")
    hotel = make_task("hotel_spans", "less_strict")
    assert prompt_of(hotel, sample("hotel_spans")) == f"Summary: {sample('hotel_spans')['summary']}"
    assert make_task("hotel_spans").version != hotel.version


def test_missing_template_is_a_clear_error(tmp_path):
    schema = get_schema("likert_rubric_es")
    folder = tmp_path / "likert_rubric_es"
    shutil.copytree(schema.folder, folder)
    (folder / "prompt.txt").unlink()
    from judgelab.configs.schema import load_schema

    with pytest.raises(PromptError, match="prompt template"):
        task_for(load_schema(folder), schema.config_xml)


# --------------------------------------------------------------------------------------------
# custom configs

CUSTOM_XML = """<View>
  <Text name="review" value="$review"/>
  <Labels name="ner" toName="review">
    <Label value="PER"/>
    <Label value="ORG"/>
  </Labels>
  <Choices name="sentiment" toName="review" choice="single">
    <Choice value="Positive"/>
    <Choice value="Negative"/>
    <Choice value="Neutral"/>
  </Choices>
  <Choices name="topics" toName="review" choice="multiple">
    <Choice alias="svc" value="Service"/>
    <Choice alias="food" value="Food"/>
  </Choices>
  <Rating name="stars" toName="review" maxRating="5"/>
  <Number name="price" toName="review" min="0" max="100"/>
  <TextArea name="comment" toName="review"/>
</View>"""
CUSTOM_DATA = {"review": "Anna from Acme Corp said the service at Acme Corp was slow, but the food was great."}


def test_custom_config_prompt_names_its_controls():
    task = task_for(None, CUSTOM_XML)
    assert isinstance(task, GenericTask) and task.name == "custom"
    prompt = prompt_of(task, CUSTOM_DATA)
    assert CUSTOM_DATA["review"] in prompt and "### review" in prompt
    for piece in ('"ner"', '"PER"', '"ORG"', '"sentiment"', '"Negative"', '"topics"', '"svc" (Service)', '"stars"'):
        assert piece in prompt
    assert "from 1 to 5" in prompt and '"spans"' in prompt and '"price"' in prompt
    schema = task.response_format()["json_schema"]["schema"]
    assert set(schema["properties"]) == {"sentiment", "topics", "stars", "price", "comment", "spans"}
    assert schema["properties"]["sentiment"]["enum"] == ["Positive", "Negative", "Neutral"]
    assert schema["properties"]["stars"] == {"type": "integer", "minimum": 1, "maximum": 5}
    assert schema["properties"]["spans"]["items"]["properties"]["label"]["enum"] == ["ORG", "PER"]


def test_custom_config_answer_becomes_a_valid_draft():
    task = task_for(None, CUSTOM_XML)
    answer = """Here you go:
```json
{"sentiment": "negative", "topics": ["Service", "food", "drinks"], "stars": 6, "price": 250,
 "comment": "Mixed review.",
 "spans": [{"control": "ner", "text": "Anna", "label": "per"},
           {"control": "ner", "text": "Acme Corp", "label": "ORG", "occurrence_index": 1},
           {"text": "Acme Corp", "label": "ORG"},
           {"control": "ner", "text": "Globex", "label": "ORG"},
           {"control": "ner", "text": "food", "label": "DISH"}]}
```"""
    draft = task.to_draft(answer, CUSTOM_DATA)
    assert draft.choices == {"sentiment": ["Negative"], "topics": ["svc", "food"]}
    assert draft.ratings == {"stars": 5}  # one step out of range: clamped
    assert draft.numbers == {} and draft.info["dropped_numbers"] == 1
    assert draft.texts == {"comment": "Mixed review."}
    text = CUSTOM_DATA["review"]
    assert [(text[s.start : s.end], s.label, s.start) for s in sorted(draft.spans, key=lambda s: s.start)] == [
        ("Anna", "PER", 0),
        ("Acme Corp", "ORG", text.index("Acme Corp")),
        ("Acme Corp", "ORG", text.rindex("Acme Corp")),
    ]
    assert draft.info["unknown_choice"] == 1 and draft.info["unknown_label"] == 1
    assert draft.info["spans"]["unmatched"] == 1
    regions = valid_regions(CUSTOM_XML, draft, CUSTOM_DATA)
    assert {r["from_name"] for r in regions} == {"ner", "sentiment", "topics", "stars", "comment"}


def test_custom_config_garbage_and_override(tmp_path, monkeypatch):
    task = task_for(None, CUSTOM_XML)
    for garbage in GARBAGE:
        draft = task.to_draft(garbage, CUSTOM_DATA)
        assert not (draft.spans or draft.choices or draft.ratings or draft.numbers or draft.texts)
        valid_regions(CUSTOM_XML, draft, CUSTOM_DATA)
    monkeypatch.setenv(PROMPTS_DIR_ENV, str(tmp_path))
    (tmp_path / "custom").mkdir()
    (tmp_path / "custom" / "prompt.txt").write_text("Review: {review}\n{controls}\n{answer_format}", encoding="utf-8")
    custom = task_for(None, CUSTOM_XML)
    assert custom.version != task.version
    assert prompt_of(custom, CUSTOM_DATA).startswith(f'Review: {CUSTOM_DATA["review"]}\n- "ner"')


# --------------------------------------------------------------------------------------------
# a schema folder brings its own task

OWN_TASK = """
from judgelab.backend.draft import Draft
from judgelab.backend.llm.tasks import LLM_TASKS, SchemaTask


@LLM_TASKS.register("toxicity_rating")
class ToxicityTask(SchemaTask):
    TASK_VERSION = "1"

    def build(self, answer, data, tally):
        draft = Draft()
        self.choice_from_rating(draft, "toxicity", answer.fields.get("toxicity"), tally, (1, 3))
        return draft
"""


def test_a_schema_folder_brings_its_own_llm_task(tmp_path, monkeypatch):
    folder = tmp_path / "configs" / "toxicity_rating"
    folder.mkdir(parents=True)
    (folder / "config.xml").write_text(
        '<View><Text name="text" value="$text"/><Choices name="toxicity" toName="text">'
        '<Choice value="1"/><Choice value="2"/><Choice value="3"/></Choices></View>',
        encoding="utf-8",
    )
    (folder / "schema.yaml").write_text("name: toxicity_rating\nprompt: {file: prompt.txt, output: json}\n")
    (folder / "prompt.txt").write_text("How toxic is this, 1-3? {text}\n", encoding="utf-8")
    (folder / "llm.py").write_text(OWN_TASK, encoding="utf-8")
    monkeypatch.setenv("JUDGELAB_CONFIGS_DIR", str(tmp_path / "configs"))
    from judgelab.backend.llm.tasks import LLM_TASKS, registered
    from judgelab.configs.schema import get_schema as schema_named

    schema = schema_named("toxicity_rating")
    task = task_for(schema, schema.config_xml)
    assert type(task).__name__ == "ToxicityTask" and "toxicity_rating" in registered()
    assert task.messages({"text": "you fool"})[0]["content"].strip() == "How toxic is this, 1-3? you fool"
    assert task.to_draft('{"toxicity": 3}', {"text": "you fool"}).choices == {"toxicity": ["3"]}
    assert {"hotel_spans", "story_consistency"} <= set(LLM_TASKS.names())  # the built-in ones stay
