"""The offline annotator dispatches through its registry: built-in schemas register their module,
and a schema folder of one's own brings its heuristic in an ``offline.py`` of its own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from judgelab.backend.annotators.offline import OFFLINE, OfflineAnnotator
from judgelab.configs.schema import all_schemas

CONFIGS = Path(__file__).resolve().parents[1] / "configs"

SIXTH_XML = """<View>
  <Text name="text" value="$text"/>
  <Choices name="shouting" toName="text" choice="single">
    <Choice value="yes"/><Choice value="no"/>
  </Choices>
</View>
"""
SIXTH_YAML = """name: shouting
title: Is the text shouting?
data_fields:
  text: {type: text, required: true}
items:
  shouting: {kind: nominal, values: ["yes", "no"]}
"""
SIXTH_OFFLINE = """
from judgelab.backend.annotators.offline import OFFLINE
from judgelab.backend.draft import Draft
from judgelab.configs.schema import get_schema


@OFFLINE.register("shouting", reads=("text",))
def annotate(data: dict) -> Draft:
    text = str(data.get("text") or "")
    control = get_schema("shouting").item_control("shouting")
    return Draft(choices={control: ["yes" if text.isupper() else "no"]}, score=0.9)
"""


def test_every_built_in_schema_has_a_registered_heuristic() -> None:
    assert set(all_schemas()) <= set(OFFLINE.names())
    for name in all_schemas():
        heuristic = OFFLINE.get(name)
        assert heuristic is not None and heuristic.fields_read, name


def test_a_schema_folder_of_ones_own_brings_its_heuristic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    configs = tmp_path / "configs"
    shutil.copytree(CONFIGS / "story_consistency", configs / "story_consistency")  # a built-in one, too
    sixth = configs / "shouting"
    sixth.mkdir()
    (sixth / "config.xml").write_text(SIXTH_XML, encoding="utf-8")
    (sixth / "schema.yaml").write_text(SIXTH_YAML, encoding="utf-8")
    (sixth / "offline.py").write_text(SIXTH_OFFLINE, encoding="utf-8")
    monkeypatch.setenv("JUDGELAB_CONFIGS_DIR", str(configs))

    annotator = OfflineAnnotator()
    assert annotator.annotate("shouting", {"text": "STOP IT"}).choices == {"shouting": ["yes"]}
    assert annotator.annotate("shouting", {"text": "x" * 70_000}).info["truncated"] == ["text"]
    story = annotator.annotate("story_consistency", {"story": "Ann sang.", "lines": ["Ann sang."]})
    assert story.choices["verdict_0"] == ["Consistent"]
