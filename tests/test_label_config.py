"""backend.label_config: Repeater expansion, object text, dynamic choices, per-region controls
and the structural fingerprint. Label configs are small hand-written XML."""

from __future__ import annotations

import subprocess
import sys

import pytest

from judgelab.configs.label_config import LabelConfigError, parse_label_config

LINES_CONFIG = """
<View>
  <Style>.line { padding: 4px; }</Style>
  <Header value="Story" size="5"/>
  <Text name="story" value="$story"/>
  <Repeater on="$lines" indexFlag="{{idx}}">
    <View className="line">
      <Labels name="ambiguous_{{idx}}" toName="line_{{idx}}">
        <Label value="Ambiguous" background="#ff7043"/>
      </Labels>
      <Text name="line_{{idx}}" value="$lines[{{idx}}].text"/>
      <TextArea name="note_{{idx}}" toName="line_{{idx}}" perRegion="true"/>
      <Choices name="verdict_{{idx}}" toName="line_{{idx}}" choice="single-radio">
        <Choice value="Consistent"/>
        <Choice value="Inconsistent"/>
      </Choices>
    </View>
  </Repeater>
  <Repeater on="$alternates" indexFlag="{{idx}}">
    <Text name="alt_text_{{idx}}" value="$alternates[{{idx}}].alternate"/>
    <Choices name="swap_{{idx}}" toName="alt_text_{{idx}}" choice="single-radio">
      <Choice value="Yes"/>
      <Choice value="No"/>
    </Choices>
  </Repeater>
</View>
"""

SPAN_CONFIG = """
<View>
  <Style>.card { border: 1px solid #ddd; }</Style>
  <Header value="Hotel summary ($aspect)" size="5"/>
  <Text name="help" value="Select the smallest span that would correct the error."/>
  <Labels name="error" toName="summary">
    <Label value="Not Checkable" background="#1e88e5"/>
    <Label value="Incorrect" background="#e53935"/>
  </Labels>
  <Text name="summary" value="$summary"/>
  <TextArea name="reason" toName="summary" perRegion="true" rows="2"/>
  <TextArea name="comment" toName="summary" rows="2"/>
  <Choices name="no_errors" toName="summary" choice="multiple" value="$no_errors_options"/>
  <Rating name="impression" toName="summary" maxRating="7"/>
</View>
"""


def task_data(n_lines: int = 3) -> dict:
    lines = [{"text": f"Line number {i}."} for i in range(n_lines)]
    lines[1]["alternate"] = "An alternate for line 1."
    alternates = [{"line": 1, "text": lines[1]["text"], "alternate": lines[1]["alternate"]}]
    return {"story": "Once upon a time.", "lines": lines, "alternates": alternates}


def test_repeater_controls_expand_over_the_tasks_lines():
    config = parse_label_config(LINES_CONFIG)
    controls = config.expanded_controls(task_data(3))
    verdicts = sorted(name for name in controls if name.startswith("verdict_"))
    assert verdicts == ["verdict_0", "verdict_1", "verdict_2"]
    assert controls["verdict_2"].to_name == "line_2"
    assert controls["verdict_2"].labels == ("Consistent", "Inconsistent")
    assert controls["ambiguous_0"].tag == "Labels"
    assert controls["note_1"].to_name == "line_1"
    # one alternate -> one swap control, pointing at its own alternate text
    assert sorted(n for n in controls if n.startswith("swap_")) == ["swap_0"]
    assert controls["swap_0"].to_name == "alt_text_0"
    # no template names survive expansion
    assert not any("{{" in name or "{{" in c.to_name for name, c in controls.items())


def test_repeater_expansion_follows_the_number_of_lines():
    config = parse_label_config(LINES_CONFIG)
    five = config.expanded_controls(task_data(5))
    assert "verdict_4" in five and "verdict_5" not in five
    no_lines = config.expanded_controls({"story": "x", "lines": [], "alternates": []})
    assert not any(name.startswith(("verdict_", "swap_")) for name in no_lines)
    lines_not_a_list = config.expanded_controls({"story": "x", "lines": "not a list"})
    assert "verdict_0" not in lines_not_a_list


def test_object_text_resolves_repeater_paths_and_plain_fields():
    config = parse_label_config(LINES_CONFIG)
    data = task_data(5)
    data["lines"][3]["text"] = "The fourth line, with é and 🙂."
    assert config.object_text("line_3", data) == "The fourth line, with é and 🙂."
    assert config.object_text("alt_text_0", data) == "An alternate for line 1."
    assert config.object_text("story", data) == "Once upon a time."
    # beyond the task's lines, or an unknown object: no text, no exception
    assert config.object_text("line_9", data) is None
    assert config.object_text("nothing_here", data) is None
    # lines given as bare strings do not have a .text
    assert config.object_text("line_0", {"lines": ["plain string"]}) is None


def test_object_text_of_a_plain_field_and_a_literal_text():
    config = parse_label_config(SPAN_CONFIG)
    assert config.object_text("summary", {"summary": "Close to the beach."}) == "Close to the beach."
    assert config.object_text("summary", {}) is None
    assert config.object_text("summary", {"summary": 42}) is None
    assert config.object_text("help", {}) == "Select the smallest span that would correct the error."


def test_dynamic_choices_key_and_per_region_detection():
    config = parse_label_config(SPAN_CONFIG)
    controls = {c.name: c for c in config.controls}
    assert controls["no_errors"].dynamic == "no_errors_options"
    assert controls["error"].dynamic is None
    assert controls["reason"].per_region is True
    assert controls["comment"].per_region is False
    assert controls["error"].labels == ("Not Checkable", "Incorrect")
    assert {"summary", "no_errors_options"} <= config.data_keys()


def test_data_keys_include_repeater_lists():
    config = parse_label_config(LINES_CONFIG)
    assert config.data_keys() == {"story", "lines", "alternates"}


def restyled(xml: str) -> str:
    """The same structure with new titles, colours, instructions and styling."""
    return (
        xml.replace('value="Hotel summary ($aspect)"', 'value="Study 2: check this summary"')
        .replace("#1e88e5", "#000000")
        .replace("#e53935", "#00ff00")
        .replace("Select the smallest span that would correct the error.", "New instructions for pilot 2.")
        .replace("<View>", "<View><Style>.extra { color: red; }</Style>", 1)
        .replace(".card { border: 1px solid #ddd; }", ".card { border: 3px dashed blue; }")
    )


def test_fingerprint_ignores_titles_colours_instructions_and_style():
    edited = restyled(SPAN_CONFIG)
    assert edited != SPAN_CONFIG
    original, changed = parse_label_config(SPAN_CONFIG), parse_label_config(edited)
    assert changed.fingerprint == original.fingerprint
    assert changed.digest == original.digest


def test_fingerprint_ignores_header_changes_in_a_repeater_config():
    edited = LINES_CONFIG.replace('value="Story"', 'value="Read the story first"').replace("#ff7043", "#123456")
    assert parse_label_config(edited).digest == parse_label_config(LINES_CONFIG).digest


def test_fingerprint_changes_when_a_label_is_added():
    added = SPAN_CONFIG.replace(
        '<Label value="Incorrect" background="#e53935"/>',
        '<Label value="Incorrect" background="#e53935"/><Label value="Misleading" background="#fdd835"/>',
    )
    original, changed = parse_label_config(SPAN_CONFIG), parse_label_config(added)
    assert changed.fingerprint - original.fingerprint == {"label:error:Misleading"}
    assert changed.digest != original.digest


def test_fingerprint_changes_when_a_control_is_renamed_or_retargeted():
    renamed = SPAN_CONFIG.replace('name="impression"', 'name="overall"')
    assert parse_label_config(renamed).digest != parse_label_config(SPAN_CONFIG).digest
    choice_added = LINES_CONFIG.replace('<Choice value="No"/>', '<Choice value="No"/><Choice value="Maybe"/>')
    assert parse_label_config(choice_added).digest != parse_label_config(LINES_CONFIG).digest


@pytest.mark.parametrize("bad", ["not xml at all", "<View><Text name='t' value='$t'>", ""])
def test_a_config_that_does_not_parse_raises_label_config_error(bad):
    with pytest.raises(LabelConfigError):
        parse_label_config(bad)


def test_a_parse_imports_no_sample_data_faker_and_the_sdks_sample_tasks_still_work():
    """A process that parses a config (a backend's start, a CLI command) does not import the SDK's
    JSON Schema faker (``jsf``) nor what it brings (``faker``, ``smart_open`` and its cloud
    clients); the SDK's ``generate_sample_task``, which uses it, imports the real one then."""
    script = (
        "import sys\n"
        "from judgelab.configs.label_config import _label_interface, parse_label_config\n"
        "from judgelab.configs.schema import get_schema\n"
        "xml = get_schema('likert_rubric_es').config_xml\n"
        "assert parse_label_config(xml).controls\n"
        "print(sorted(name for name in ('jsf', 'faker', 'smart_open', 'boto3') if name in sys.modules))\n"
        "task = _label_interface()(xml).generate_sample_task()\n"
        "import jsf\n"
        "print(type(task).__name__, jsf.JSF.__module__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "dict jsf.parser"]
