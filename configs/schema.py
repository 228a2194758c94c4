"""The study schemas defined in ``configs/``: label config, metadata and sample tasks.

A schema is a folder ``configs/<name>/`` with ``config.xml`` (the Label Studio labeling
config), ``schema.yaml`` (metadata: data fields, scales, label sets, items, targets, named
constants) and ``samples.json`` (sample tasks). Everything else in judgelab reads schemas from here:
a layer that needs one of a schema's words (a label, an item's values, an item pattern, a named
value such as the story schema's ``inconsistent`` verdict) asks its :class:`Schema` instead of
spelling the word.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from judgelab.configs.items import matches, pattern_regex


class SchemaError(ValueError):
    """A schema folder is incomplete or its files do not parse."""


@dataclass(frozen=True)
class Schema:
    name: str
    folder: Path
    config_xml: str
    meta: dict[str, Any] = field(hash=False, compare=False)

    @property
    def title(self) -> str:
        return str(self.meta.get("title", self.name))

    @property
    def language(self) -> str:
        return str(self.meta.get("language", "en"))

    @property
    def data_fields(self) -> dict[str, dict[str, Any]]:
        return dict(self.meta.get("data_fields") or {})

    @property
    def span_controls(self) -> dict[str, dict[str, Any]]:
        return dict(self.meta.get("span_controls") or {})

    @property
    def scales(self) -> dict[str, dict[str, Any]]:
        return dict(self.meta.get("scales") or {})

    @property
    def items(self) -> dict[str, dict[str, Any]]:
        return {str(k): dict(v or {}) for k, v in (self.meta.get("items") or {}).items()}

    @property
    def empty_answer(self) -> dict[str, Any]:
        """The answer for "nothing found" (``{control, value}`` or ``{control, from_data}``)."""
        return dict(self.meta.get("empty_answer") or {})

    def span_control(self, field: str | None = None) -> str:
        """The name of the schema's span control (the one on ``field`` when given): control names
        come from ``schema.yaml``, never from constants in the layers' code."""
        for name, spec in self.span_controls.items():
            if field is None or spec.get("field") == field:
                return name
        raise SchemaError(f"schema {self.name} has no span control" + (f" on {field!r}" if field else ""))

    def item_control(self, item: str) -> str:
        """The control whose answers are the judgment item ``item`` (``line_{i}`` -> ``verdict_{i}``);
        an item the ``items`` table does not rename is its own control."""
        for control, spec in self.items.items():
            if spec.get("item") == item:
                return control
        return item

    @property
    def constants(self) -> dict[str, Any]:
        """The schema's named values (``constants:`` in ``schema.yaml``): what the layers' code means
        by a value of the schema (its ``inconsistent`` verdict, its attention-check kinds, the pattern
        of its line items), so that the value is written once, in the schema's folder."""
        return dict(self.meta.get("constants") or {})

    def constant(self, name: str) -> Any:
        """One of :attr:`constants`; a schema without it is a :class:`SchemaError`.

        >>> get_schema("story_consistency").constant("inconsistent")
        'Inconsistent'
        """
        constants = self.constants
        if name not in constants:
            raise SchemaError(f"schema {self.name} has no constant {name!r} (schema.yaml, constants:)")
        return constants[name]

    def _item_spec(self, item: str) -> dict[str, Any]:
        for control, spec in self.items.items():
            names = {control, str(spec.get("item", control))}
            if item in names or any(matches(name, item) for name in names):
                return spec
        return {}

    def item_values(self, item: str) -> tuple[str, ...]:
        """The values a choice item takes, in the schema's order: its ``values`` in ``items``, or
        its one ``value`` (a flag); found by control or item name, a Repeater pattern or one of its
        expansions. An item that declares none has none.

        >>> story = get_schema("story_consistency")
        >>> story.item_values("line_3") == story.item_values("verdict_{i}")
        True
        >>> story.item_values("line_3")
        ('Consistent', 'Inconsistent', 'N/A, just commentary')
        >>> get_schema("summary_flaws").item_values("none_identified")
        ('None identified',)
        """
        spec = self._item_spec(item)
        if "values" in spec:
            return tuple(str(value) for value in spec["values"])
        return (str(spec["value"]),) if "value" in spec else ()

    def items_of_kind(self, kind: str) -> tuple[str, ...]:
        """The items of one kind (``ordinal``, ``nominal``, ``flag``, ``text``) in the schema's order,
        by their item name: a rubric's criteria are its ordinal items.

        >>> get_schema("augmentation_quality").items_of_kind("ordinal")
        ('SP', 'SC')
        """
        return tuple(str(spec.get("item", control)) for control, spec in self.items.items() if spec.get("kind") == kind)

    def control_labels(self, control: str) -> tuple[str, ...]:
        """The labels of a span control (by name, Repeater pattern or expansion), in the schema's order.

        >>> get_schema("hotel_spans").control_labels("error")
        ('Not Checkable', 'Misleading', 'Incorrect')
        >>> get_schema("story_consistency").control_labels("ambiguous_2")
        ('Ambiguous',)
        """
        for name, spec in self.span_controls.items():
            if name == control or matches(name, control):
                return tuple(str(label) for label in (spec or {}).get("labels") or ())
        raise SchemaError(f"schema {self.name} has no span control {control!r}")

    def samples(self) -> list[dict[str, Any]]:
        path = self.folder / "samples.json"
        if not path.exists():
            return []
        try:
            tasks = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise SchemaError(f"{path}: line {exc.lineno}: {exc.msg}") from exc
        if not isinstance(tasks, list):
            raise SchemaError(f"{path}: expected a JSON list of tasks")
        return tasks


def configs_dir() -> Path:
    """Where the schema folders live: ``$JUDGELAB_CONFIGS_DIR``, else this package's own folder
    (the repository's ``configs/``, or the copy the wheel installs as ``judgelab/configs``)."""
    env = os.environ.get("JUDGELAB_CONFIGS_DIR")
    if env:
        return Path(env)
    return _own_dir()


@cache
def _own_dir() -> Path:
    """This package's folder (resolved once: a schema lookup per task asked the file system each time)."""
    return Path(__file__).resolve().parent


def load_schema(folder: Path) -> Schema:
    xml_path, meta_path = folder / "config.xml", folder / "schema.yaml"
    for path in (xml_path, meta_path):
        if not path.exists():
            raise SchemaError(f"{folder}: missing {path.name}")
    try:
        meta = yaml.safe_load(meta_path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise SchemaError(f"{meta_path}: {exc}") from exc
    if not isinstance(meta, dict):
        raise SchemaError(f"{meta_path}: expected a mapping")
    name = str(meta.get("name") or folder.name)
    return Schema(name=name, folder=folder, config_xml=xml_path.read_text(encoding="utf-8"), meta=meta)


def extra_configs_dirs() -> list[Path]:
    """Folders of schemas of one's own, read besides :func:`configs_dir`:
    ``$JUDGELAB_EXTRA_CONFIGS`` (several separated by ``os.pathsep``); a name found there replaces
    the built-in schema of that name."""
    return [Path(part) for part in os.environ.get("JUDGELAB_EXTRA_CONFIGS", "").split(os.pathsep) if part.strip()]


def schema_dirs(root: Path | None = None) -> tuple[str, ...]:
    """Every folder schemas are read from, in order (later ones win on a name)."""
    return tuple(str(folder) for folder in [root or configs_dir(), *extra_configs_dirs()])


@cache
def _load_dir(root: str) -> dict[str, Schema]:
    folder = Path(root)
    if not folder.is_dir():
        raise SchemaError(f"configs folder not found: {folder}")
    schemas = {}
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and (p / "config.xml").exists()):
        schema = load_schema(sub)
        schemas[schema.name] = schema
    return schemas


def all_schemas(root: Path | None = None) -> dict[str, Schema]:
    """All schemas by name: ``root`` (default :func:`configs_dir`), then the extra folders
    (cached per folder)."""
    schemas: dict[str, Schema] = {}
    for folder in schema_dirs(root):
        schemas.update(_load_dir(folder))
    return schemas


def builtin_schema(name: str) -> Schema:
    """A schema folder this package ships (``judgelab/configs/<name>``), whatever
    ``$JUDGELAB_CONFIGS_DIR`` says: where a layer's module-level names for one built-in schema's
    words are read from (a schema of one's own is asked through the ``Schema`` a call is given)."""
    return _builtin(name)


@cache
def _builtin(name: str) -> Schema:
    folder = _own_dir() / name
    if not (folder / "schema.yaml").exists():
        raise SchemaError(f"no built-in schema {name!r}")
    return load_schema(folder)


def line_item_patterns() -> tuple[str, ...]:
    """The item patterns schemas name their ``line_item`` (``line_{i}``: one judgment per line of a
    summary), of the built-in schemas and the extra folders: the report pools such items as lines.

    >>> line_item_patterns()
    ('line_{i}',)
    """
    return tuple(dict.fromkeys(str(s.constants["line_item"]) for s in _line_schemas()))


def line_flag_values() -> frozenset[str]:
    """The line verdicts schemas name their ``line_flag`` (the one that matters when lines are
    pooled: ``Inconsistent`` against the rest), of the built-in schemas and the extra folders.

    >>> sorted(line_flag_values())
    ['Inconsistent']
    """
    return frozenset(str(s.constants["line_flag"]) for s in _line_schemas() if "line_flag" in s.constants)


def _line_schemas() -> list[Schema]:
    folders = [str(Path(__file__).resolve().parent), *(str(f) for f in extra_configs_dirs() if f.is_dir())]
    return [schema for folder in folders for schema in _load_dir(folder).values() if "line_item" in schema.constants]


def line_item_regex() -> re.Pattern[str]:
    """A regex matching the items of every :func:`line_item_patterns` (``line_3``, not ``line_3.explanation``).

    >>> bool(line_item_regex().match("line_3")), bool(line_item_regex().match("line_3.explanation"))
    (True, False)
    """
    return re.compile("|".join(pattern_regex(p).pattern.replace("(?P<i>", "(") for p in line_item_patterns()) or "(?!)")


def get_schema(name: str, root: Path | None = None) -> Schema:
    schemas = all_schemas(root)
    if name not in schemas:
        raise SchemaError(f"unknown schema {name!r}; known: {', '.join(schemas)}")
    return schemas[name]
