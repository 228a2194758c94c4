"""The schema core (judgelab.configs): one parser of a story summary's lines, read the same way by
every layer (import checks, the offline annotator, the LLM task's prompt, the published-data loaders)."""

from __future__ import annotations

import doctest
import json

import pytest

from judgelab.analysis.loaders.storysumm import load_storysumm
from judgelab.backend.annotators.offline import OfflineAnnotator
from judgelab.backend.llm.tasks import task_for
from judgelab.configs import get_schema, instructions, items, story_lines
from judgelab.configs.task_data import TaskDataError, prepare_task_data

STORY = "Tom ran to the shop. She stopped at the door and waited for the bus."
FORMS = {
    "one line of text": "He ran. She stopped.",
    "text with line breaks": "He ran.\nShe stopped.",
    "a list": ["He ran.", "She stopped."],
    "the JSON text of a list": json.dumps(["He ran.", "She stopped."]),
    "the Python text of a list": "['He ran.', 'She stopped.']",
    "a list of objects": [{"text": "He ran."}, {"text": "She stopped."}],
}


def test_doctests():
    assert doctest.testmod(story_lines).failed == 0
    assert doctest.testmod(items).failed == 0
    assert doctest.testmod(instructions).failed == 0


@pytest.mark.parametrize("form", FORMS)
def test_every_layer_reads_the_same_two_lines(form, tmp_path):
    value = FORMS[form]
    schema = get_schema("story_consistency")
    prepared = prepare_task_data(schema, {"story": STORY, "lines": value})
    assert [line["text"] for line in prepared["lines"]] == ["He ran.", "She stopped."]

    # the offline annotator, given the raw (unprepared) value, judges two lines
    draft = OfflineAnnotator().annotate("story_consistency", {"story": STORY, "lines": value})
    assert sorted(k for k in draft.choices if k.startswith("verdict_")) == ["verdict_0", "verdict_1"]

    # the LLM task's prompt numbers two lines
    task = task_for(schema, schema.config_xml)
    prompt = task.messages({"story": STORY, "lines": value})[0]["content"]
    assert "Line 1: He ran." in prompt and "Line 2: She stopped." in prompt and "Line 3:" not in prompt

    # the StorySumm loader reads the summary as two lines
    path = tmp_path / "storysumm.json"
    item = {"story": STORY, "summary": value, "errors": [1, 1], "label": 1, "split": "val", "model": "m"}
    path.write_text(json.dumps({"s1": item}), encoding="utf-8")
    loaded = load_storysumm(path)
    assert int(loaded["tasks"].iloc[0]["n_lines"]) == 2


def test_a_broken_list_is_refused_at_import_with_its_field():
    with pytest.raises(TaskDataError, match="lines.*does not parse"):
        prepare_task_data(get_schema("story_consistency"), {"story": STORY, "lines": '["He ran.", '})


def test_every_schemas_instructions_become_html_that_keeps_every_word():
    import html
    import re

    from judgelab.configs.instructions import instructions_html
    from judgelab.configs.schema import all_schemas

    for schema in all_schemas().values():
        written = str(schema.meta.get("instructions") or "")
        shown = instructions_html(written)
        assert "\n" not in shown and "<pre" not in shown, schema.name
        text = html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<style>.*?</style>", "", shown)))
        assert text.split() == re.sub(r"(?m)^\s*(\d+[.)]|[-*])\s+", "", written).split(), schema.name
