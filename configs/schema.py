"""The study schemas defined in ``configs/``: label config, metadata and sample tasks.

A schema is a folder ``configs/<name>/`` with ``config.xml`` (the Label Studio labeling
config), ``schema.yaml`` (metadata: data fields, scales, label sets, items, targets) and
``samples.json`` (sample tasks). Everything else in judgelab reads schemas from here.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml


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


def get_schema(name: str, root: Path | None = None) -> Schema:
    schemas = all_schemas(root)
    if name not in schemas:
        raise SchemaError(f"unknown schema {name!r}; known: {', '.join(schemas)}")
    return schemas[name]
