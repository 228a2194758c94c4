"""Per-schema code, registered by the modules that define it.

Each layer of judgelab has one :class:`Registry`: the offline annotator's heuristics
(``backend.annotators.offline``), the LLM tasks (``backend.llm.tasks``), the importers of seed file
formats (``sync.importers``) and the report's schema sections (``analysis.report.schemas``). A
module registers what it defines for a schema with a decorator::

    OFFLINE = Registry("offline", "judgelab.backend.annotators.offline.schemas")

    @OFFLINE.register("story_consistency")
    def annotate(data): ...

No list names all schemas: on first use a registry imports every module of its package, then the
file named after its layer in every schema folder (``configs/<schema>/offline.py``,
``llm.py``, ``importer.py``, ``report.py``), so a schema folder of one's own
(``$JUDGELAB_CONFIGS_DIR`` or ``$JUDGELAB_EXTRA_CONFIGS``) brings its code with it.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

from judgelab.configs.schema import SchemaError, all_schemas, schema_dirs

T = TypeVar("T")


class Registry(Generic[T]):
    """What one layer has for each schema: ``register(name)`` to add, ``get(name)`` to ask."""

    def __init__(self, layer: str, package: str | None = None):
        self.layer = layer
        self.package = package
        self._entries: dict[str, T] = {}
        self._loaded_from: set[str] = set()
        self._lock = threading.RLock()

    def register(self, name: str, entry: T | None = None) -> Any:
        """Register ``entry`` for the schema (or format) ``name``; usable as a decorator."""

        def add(value: T) -> T:
            with self._lock:
                self._entries[name] = value
            return value

        return add(entry) if entry is not None else add

    def get(self, name: str | None) -> T | None:
        """What is registered for ``name`` (``None`` when nothing is)."""
        if name is None:
            return None
        self.load()
        return self._entries.get(name)

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._entries

    def names(self) -> list[str]:
        self.load()
        return sorted(self._entries)

    def items(self) -> Iterator[tuple[str, T]]:
        self.load()
        return iter(sorted(self._entries.items()))

    def load(self) -> None:
        """Import the package's modules and the schema folders' ``<layer>.py`` (once per folder)."""
        root = "\n".join(schema_dirs())
        if root in self._loaded_from:
            return
        with self._lock:
            if root in self._loaded_from:
                return
            if self.package and self.package not in self._loaded_from:
                for module in _package_modules(self.package):
                    importlib.import_module(module)
                self._loaded_from.add(self.package)
            for schema in _schemas_or_none():
                path = schema.folder / f"{self.layer}.py"
                if path.is_file():
                    load_schema_module(path, f"judgelab_schema_{schema.name}_{self.layer}")
            self._loaded_from.add(root)


def _package_modules(package: str) -> list[str]:
    pkg = importlib.import_module(package)
    paths = getattr(pkg, "__path__", None)
    if not paths:
        return []
    return [f"{package}.{info.name}" for info in pkgutil.iter_modules(paths) if not info.name.startswith("_")]


def _schemas_or_none() -> list[Any]:
    try:
        return list(all_schemas().values())
    except SchemaError:
        return []


def load_schema_module(path: Path, name: str) -> Any:
    """Import a schema folder's Python file as module ``name`` (once)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SchemaError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise SchemaError(f"{path}: {type(exc).__name__}: {exc}") from exc
    return module
