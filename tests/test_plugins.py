"""The plugin registries (configs.plugins): one way to register, under a name taken once, and the
report's schema sections looked up by the project's schema."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from judgelab.analysis.report import sections
from judgelab.analysis.report.schemas import SchemaSection
from judgelab.backend.annotators.offline import OFFLINE
from judgelab.configs.plugins import Registry, RegistryError
from judgelab.configs.schema import SchemaError

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def defined_in(module: str, name: str = "read"):
    def read(path):
        return path

    read.__module__ = module
    read.__qualname__ = name
    return read


def test_a_taken_name_is_an_error_naming_both_modules() -> None:
    registry: Registry = Registry("test")
    registry.register("corpus")(defined_in("plugins_one"))
    with pytest.raises(RegistryError) as raised:
        registry.register("corpus")(defined_in("plugins_two"))
    assert "'corpus'" in str(raised.value) and "plugins_one" in str(raised.value) and "plugins_two" in str(raised.value)
    assert registry.get("corpus").__module__ == "plugins_one"  # the first stays


def test_the_same_definition_run_again_replaces_itself() -> None:
    registry: Registry = Registry("test")
    registry.register("corpus")(defined_in("plugins_one"))
    again = defined_in("plugins_one")  # a module imported again defines the function again
    registry.register("corpus")(again)
    assert registry.get("corpus") is again


def test_details_go_to_the_layers_entry() -> None:
    plain: Registry = Registry("test")
    with pytest.raises(TypeError, match="takes no details"):
        plain.register("corpus", reads=("text",))(defined_in("plugins_one"))
    made: Registry = Registry("test", entry=lambda name, read, *, reads=(): (name, read.__module__, reads))
    read = defined_in("plugins_one")
    assert made.register("corpus", reads=("text",))(read) is read  # the decorated object is unchanged
    assert made.get("corpus") == ("corpus", "plugins_one", ("text",))


def test_a_schema_folder_cannot_take_a_built_in_schemas_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    configs = tmp_path / "configs"
    shutil.copytree(CONFIGS / "story_consistency", configs / "story_consistency")
    (configs / "story_consistency" / "offline.py").write_text(
        "from judgelab.backend.annotators.offline import OFFLINE\n\n\n"
        '@OFFLINE.register("story_consistency", reads=("story",))\n'
        "def annotate(data):\n    return None\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("JUDGELAB_CONFIGS_DIR", str(configs))
    with pytest.raises(SchemaError) as raised:
        OFFLINE.get("story_consistency")
    message = str(raised.value)
    assert "RegistryError" in message and "'story_consistency'" in message
    assert "judgelab.backend.annotators.offline.schemas.story_consistency" in message
    assert str(configs / "story_consistency" / "offline.py") in message


def test_schema_sections_run_the_projects_own_then_those_recognising_its_data(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    registry: Registry = Registry("report", entry=SchemaSection.of)

    def builder(name: str):
        def build(data):
            ran.append(name)
            return f"{name} section"

        build.__qualname__ = f"build_{name}"
        return build

    registry.register("aaa", also_when=lambda data: True)(builder("aaa"))
    registry.register("bbb")(builder("bbb"))
    registry.register("ccc", also_when=lambda data: False)(builder("ccc"))
    registry.register("ddd", also_when=lambda data: True)(builder("ddd"))
    monkeypatch.setattr(sections, "SCHEMA_SECTIONS", registry)

    assert sections.schema_sections(SimpleNamespace(schema_name="ccc")) == ["ccc section", "aaa section", "ddd section"]
    assert ran == ["ccc", "aaa", "ddd"]  # bbb's builder never runs on another schema's project
    ran.clear()
    assert sections.schema_sections(SimpleNamespace(schema_name=None)) == ["aaa section", "ddd section"]
    assert ran == ["aaa", "ddd"]
