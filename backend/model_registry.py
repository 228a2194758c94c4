"""The models of the projects seen lately: a least-recently-used cache bounded by count and size.

Label Studio sends a project's label config with every ``/setup``, ``/predict`` and ``/webhook``,
and anyone who can reach the backend can send new ones, so the parsed configs the backend keeps
must not grow with what it is sent. :class:`ModelRegistry` keeps at most ``max_models`` models
and at most ``max_bytes`` of them (estimated from the config's size); the least recently used
goes first, and is simply built again when its project comes back (the model version is
derived from the config, so it is the same).

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

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

Model = TypeVar("Model")
#: A parsed config (controls, objects, the detection of its schema) takes about this many times
#: the config's text in memory (measured: 2-3x for configs of 2 MB of labels or headers).
PARSED_BYTES_PER_CONFIG_BYTE = 3


def estimated_bytes(label_config: str) -> int:
    """What a model of this config is counted as against the registry's size bound."""
    return len(label_config.encode("utf-8", "surrogatepass")) * PARSED_BYTES_PER_CONFIG_BYTE


class ModelRegistry(Generic[Model]):
    """``get(project_id, label_config)`` gives the model of that project and config, built by
    ``build(project_id, label_config)`` when it is not kept. Thread-safe: two threads asking for
    the same new model may both build it; one of them is kept."""

    def __init__(self, build: Callable[[str, str], Model], max_models: int, max_bytes: int):
        if max_models < 1:
            raise ValueError("max_models must be at least 1")
        self._build = build
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
        size = estimated_bytes(label_config)
        with self._lock:
            kept = self._models.get(key)
            if kept is not None:  # another thread built it meanwhile
                self._models.move_to_end(key)
                return kept[0]
            self._models[key] = (model, size)
            self._bytes += size
            self.built += 1
            self._evict()
        return model

    def _evict(self) -> None:
        """Least recently used first, until both bounds hold (the newest model always stays)."""
        while len(self._models) > 1 and (len(self._models) > self.max_models or self._bytes > self.max_bytes):
            _, (_, size) = self._models.popitem(last=False)
            self._bytes -= size
            self.evicted += 1

    def __len__(self) -> int:
        with self._lock:
            return len(self._models)

    @property
    def bytes(self) -> int:
        """The estimated size of the models kept."""
        with self._lock:
            return self._bytes

    def models(self) -> list[Model]:
        with self._lock:
            return [model for model, _ in self._models.values()]
