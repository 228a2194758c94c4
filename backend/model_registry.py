"""The models of the projects seen lately: a least-recently-used cache bounded by count and size.

Label Studio sends a project's label config with every ``/setup``, ``/predict`` and ``/webhook``,
and anyone who can reach the backend can send new ones, so the parsed configs the backend keeps
must not grow with what it is sent. :class:`ModelRegistry` keeps at most ``max_models`` models
and at most ``max_bytes`` of them; the least recently used goes first, and is simply built again
when its project comes back (the model version is derived from the config, so it is the same).

A model's size is what it really holds, measured once when it is built (:func:`held_bytes`: the
objects it reaches that nothing else shares), not a guess from its config's length: a config of
many labels parses into objects of about six times its text, and the SDK's parse of it (which
the LLM task no longer keeps) into about thirty times. After each new model the memory the C
allocator freed (the parse's, the evicted models') is handed back to the system, so that the
process's growth stays near what the kept models hold.

>>> built = []
>>> registry = ModelRegistry(lambda project, config: built.append(project) or project, max_models=2, max_bytes=10**6)
>>> [registry.get(p, "<View/>") for p in ("1", "2", "1", "3", "2")]
['1', '2', '1', '3', '2']
>>> built  # "2" was the least recently used when "3" came: built again
['1', '2', '3', '2']
>>> len(registry)
2
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import hashlib
import sys
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

Model = TypeVar("Model")

#: Objects every model may point at and none owns: classes, modules, functions and methods.
_NEVER_OWNED = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
    types.FrameType,
)


#: Python's allocator hands out memory in steps of 16 bytes: a 49-byte string takes 64.
_ALIGNMENT = 16


def held_bytes(root: Any, shared: Iterable[Any] = ()) -> int:
    """The memory of ``root`` and of every object it reaches (``sys.getsizeof`` each, rounded up
    to the allocator's 16-byte steps; containers followed through ``gc.get_referents``), except
    the ``shared`` objects and what is reached only through them, and classes, modules and
    functions.

    >>> held_bytes("x" * 1000) >= 1000
    True
    >>> shared = ["y" * 10_000]
    >>> held_bytes({"own": "x" * 1000, "shared": shared}, shared=[shared]) < 10_000
    True
    """
    seen = {id(o) for o in shared}
    stack = [root]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _NEVER_OWNED):
            continue
        seen.add(id(obj))
        total += (sys.getsizeof(obj) + _ALIGNMENT - 1) & -_ALIGNMENT
        stack.extend(gc.get_referents(obj))
    return total


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` (None elsewhere)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _malloc_trim()


def return_freed_memory() -> None:
    """Hand the memory freed inside the C allocator's heaps back to the system (glibc keeps it
    otherwise: a parse of a big config leaves its high-water mark in every thread's heap, and
    the evicted models' memory stays in the process between the models kept)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


class ModelRegistry(Generic[Model]):
    """``get(project_id, label_config)`` gives the model of that project and config, built by
    ``build(project_id, label_config)`` when it is not kept; ``size(model)`` is what it counts
    against ``max_bytes`` (default: :func:`held_bytes` of the model). Thread-safe: two threads
    asking for the same new model may both build it; one of them is kept."""

    def __init__(
        self,
        build: Callable[[str, str], Model],
        max_models: int,
        max_bytes: int,
        size: Callable[[Model], int] | None = None,
    ):
        if max_models < 1:
            raise ValueError("max_models must be at least 1")
        self._build = build
        self._size = size or held_bytes
        self.max_models = max_models
        self.max_bytes = max_bytes
        self._models: OrderedDict[tuple[str, str], tuple[Model, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.built = 0
        self.evicted = 0

    @staticmethod
    def key(project_id: str, label_config: str) -> tuple[str, str]:
        digest = hashlib.sha256(label_config.encode("utf-8", "surrogatepass")).hexdigest()
        return project_id, digest

    def get(self, project_id: str, label_config: str) -> Model:
        key = self.key(project_id, label_config)
        with self._lock:
            kept = self._models.get(key)
            if kept is not None:
                self._models.move_to_end(key)
                return kept[0]
        model = self._build(project_id, label_config)  # outside the lock: parsing may take a while
        size = self._size(model)
        with self._lock:
            kept = self._models.get(key)
            if kept is not None:  # another thread built it meanwhile
                self._models.move_to_end(key)
                return kept[0]
            self._models[key] = (model, size)
            self._bytes += size
            self.built += 1
            evicted = self._evict()
        del evicted  # the evicted models are freed here, outside the lock
        return_freed_memory()
        return model

    def _evict(self) -> list[Model]:
        """Least recently used first, until both bounds hold (the newest model always stays)."""
        evicted = []
        while len(self._models) > 1 and (len(self._models) > self.max_models or self._bytes > self.max_bytes):
            _, (model, size) = self._models.popitem(last=False)
            evicted.append(model)
            self._bytes -= size
            self.evicted += 1
        return evicted

    def __len__(self) -> int:
        with self._lock:
            return len(self._models)

    @property
    def bytes(self) -> int:
        """The memory the models kept hold, as measured when each was built."""
        with self._lock:
            return self._bytes

    def models(self) -> list[Model]:
        with self._lock:
            return [model for model, _ in self._models.values()]
