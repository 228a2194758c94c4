"""Per-schema code, registered by the modules that define it.

Each layer of judgelab has one :class:`Registry`: the offline annotator's heuristics
(``OFFLINE``), the LLM tasks (``LLM_TASKS``), the importers of seed file formats (``IMPORTERS``),
the report's schema sections (``SCHEMA_SECTIONS``) and the published data sets (``DATA_SETS``).
Every one is used the same way: a module registers what it defines under a name with the
registry's ``register`` decorator, whose keywords are what that layer wants to know besides the
decorated object::

    OFFLINE = Registry("offline", "judgelab.backend.annotators.offline.schemas", entry=Heuristic.of)

    @OFFLINE.register("story_consistency", reads=("story",))
    def annotate(data): ...

A name is registered once: a second entry under a taken name raises :class:`RegistryError` naming
both modules (the same definition run again, as by a reload, replaces itself).

No list names all schemas: on first use a registry imports every module of its package, then the
file named after its layer in every schema folder (``configs/<schema>/offline.py``,
``llm.py``, ``importer.py``, ``report.py``, ``loader.py``), so a schema folder of one's own
(``$JUDGELAB_CONFIGS_DIR`` or ``$JUDGELAB_EXTRA_CONFIGS``) brings its code with it.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

from judgelab.configs.schema import SchemaError, all_schemas, schema_dirs

T = TypeVar("T")
D = TypeVar("D")


class RegistryError(ValueError):
    """A name registered twice in one layer."""


class Registry(Generic[T]):
    """What one layer has for each schema: ``@register(name, **details)`` to add, ``get(name)`` to ask.

    ``entry(name, decorated, **details)`` makes what is kept from the decorated object and the
    decorator's keywords (by default the decorated object itself, with no keywords allowed).
    """

    def __init__(self, layer: str, package: str | None = None, entry: Callable[..., T] | None = None):
        self.layer = layer
        self.package = package
        self.entry = entry
        self._entries: dict[str, T] = {}
        self._origins: dict[str, tuple[str, str]] = {}  # name -> (module, qualified name) of what registered it
        self._loaded_from: set[str] = set()
        self._lock = threading.RLock()

    def register(self, name: str, **details: Any) -> Callable[[D], D]:
        """Decorator: keep the decorated object (as ``entry`` makes it) under ``name``, and return
        the object unchanged. Raises :class:`RegistryError` when another definition has the name."""

        def add(defined: D) -> D:
            if self.entry is not None:
                value = self.entry(name, defined, **details)
            elif details:
                raise TypeError(f"the {self.layer} registry takes no details, not {', '.join(sorted(details))}")
            else:
                value = defined
            origin = (getattr(defined, "__module__", None) or "?", getattr(defined, "__qualname__", repr(defined)))
            with self._lock:
                taken = self._origins.get(name)
                if taken is not None and taken != origin:
                    raise RegistryError(
                        f"{self.layer} registry: {name!r} is registered by {_where(taken[0])} and again by "
                        f"{_where(origin[0])}; rename one of them"
                    )
                self._entries[name] = value
                self._origins[name] = origin
            return defined

        return add

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


def _where(module: str) -> str:
    """A module's name, with the file a schema folder's module was loaded from."""
    path = getattr(sys.modules.get(module), "__file__", None)
    return f"{module} ({path})" if path and not module.startswith("judgelab.") else module


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
