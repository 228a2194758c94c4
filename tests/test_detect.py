"""backend.detect: each schema's config is recognised, also after cosmetic edits; unrelated
configs are "custom"."""

from __future__ import annotations

import pytest
from lxml import etree

from judgelab.configs.detect import detect_schema
from judgelab.configs.label_config import parse_label_config
from judgelab.configs.schema import all_schemas

SCHEMAS = all_schemas()
NAMES = ["summary_flaws", "augmentation_quality", "story_consistency", "likert_rubric_es", "hotel_spans"]


def cosmetic_edit(xml: str) -> str:
    """What a project owner does in the UI without changing the structure: new titles in every
    Header, other label colours and hints, other instructions text and placeholders, extra CSS."""
    root = etree.fromstring(xml.encode("utf-8"))
    for i, header in enumerate(root.iter("Header")):
        header.set("value", f"Pilot 2, section {i}: please read carefully")
    for label in root.iter("Label"):
        label.set("background", "#123456")
        if label.get("hint"):
            label.set("hint", "see the guidelines")
    for el in root.iter():
        if el.get("placeholder"):
            el.set("placeholder", "Type here")
        if el.get("requiredMessage"):
            el.set("requiredMessage", "Required!")
    for text in root.iter("Text"):
        if not text.get("value", "").startswith("$"):
            text.set("value", "New instructions: mark the flaws, then describe them.")
    style = etree.Element("Style")
    style.text = ".pilot2 { background: #fafafa; font-size: 15px; }"
    root.insert(0, style)
    edited = etree.tostring(root, encoding="unicode")
    assert edited != xml
    return edited


@pytest.mark.parametrize("name", NAMES)
def test_each_schema_config_is_detected_as_itself(name):
    detection = detect_schema(SCHEMAS[name].config_xml, SCHEMAS)
    assert detection.name == name
    assert detection.similarity == pytest.approx(1.0)


@pytest.mark.parametrize("name", NAMES)
def test_a_schema_config_found_by_its_text_is_what_its_fingerprint_says(name):
    """A config that is a schema's text is not parsed; parsed, it is the same schema."""
    by_text = detect_schema(SCHEMAS[name].config_xml, SCHEMAS)
    assert detect_schema(SCHEMAS[name].config_xml.strip(), SCHEMAS) == by_text  # as Label Studio keeps it
    by_fingerprint = detect_schema(parse_label_config(SCHEMAS[name].config_xml), SCHEMAS)
    assert by_text == by_fingerprint


@pytest.mark.parametrize("name", NAMES)
def test_a_cosmetically_edited_copy_is_still_detected(name):
    detection = detect_schema(cosmetic_edit(SCHEMAS[name].config_xml), SCHEMAS)
    assert detection.name == name
    assert detection.similarity == pytest.approx(1.0)


def test_a_copy_with_one_extra_label_is_still_its_schema():
    xml = SCHEMAS["summary_flaws"].config_xml.replace(
        '<Label value="Other"', '<Label value="Redundant" background="#000"/><Label value="Other"'
    )
    detection = detect_schema(xml, SCHEMAS)
    assert detection.name == "summary_flaws"
    assert 0.6 <= detection.similarity < 1.0


CUSTOM_CONFIGS = {
    "image classification": """
<View>
  <Image name="image" value="$image"/>
  <Choices name="choice" toName="image">
    <Choice value="Cat"/>
    <Choice value="Dog"/>
  </Choices>
</View>""",
    "text sentiment": """
<View>
  <Header value="Sentiment of the review"/>
  <Text name="text" value="$text"/>
  <Choices name="sentiment" toName="text" choice="single-radio">
    <Choice value="Positive"/>
    <Choice value="Negative"/>
    <Choice value="Neutral"/>
  </Choices>
</View>""",
    "named entities": """
<View>
  <Labels name="label" toName="text">
    <Label value="PER" background="red"/>
    <Label value="ORG" background="darkorange"/>
  </Labels>
  <Text name="text" value="$text"/>
</View>""",
}


@pytest.mark.parametrize("kind", sorted(CUSTOM_CONFIGS))
def test_an_unrelated_config_is_custom(kind):
    detection = detect_schema(CUSTOM_CONFIGS[kind], SCHEMAS)
    assert detection.name == "custom"
    assert detection.schema is None
    assert detection.similarity < 0.6


def test_a_single_summary_rating_is_custom_not_hotel_spans():
    xml = """
<View>
  <Text name="summary" value="$summary"/>
  <Rating name="impression" toName="summary" maxRating="7"/>
</View>"""
    assert detect_schema(xml, SCHEMAS).name == "custom"
