"""The importers of seed file formats, registered by the modules that define them.

Each module of :mod:`judgelab.sync.importers.formats` (and a schema folder's own
``importer.py``) registers its reader as one :class:`Importer`::

    @IMPORTERS.register("hotel", schema="hotel_spans", detect=looks_like_hotel, description="...")
    def read_hotel(path, schema=None, *, skip_bad=False) -> Rows: ...

:func:`judgelab.sync.importers.dispatch.read_tasks` and ``judgelab import --format`` know the
formats from here only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgelab.configs.plugins import Registry
from judgelab.configs.schema import Schema
from judgelab.sync.importers.rows import Rows


@dataclass(frozen=True)
class Importer:
    """A seed file format.

    ``detect(first_record)`` says whether a file whose first record is this object is in the
    format; ``read(path, schema, *, skip_bad, **options)`` turns the file into checked rows of
    ``schema`` (a schema name: the format implies it); ``options`` names the keyword options
    ``read`` accepts beyond ``skip_bad`` (``with_annotations``).
    """

    name: str
    schema: str
    detect: Callable[[dict[str, Any]], bool]
    read: Callable[..., Rows]
    options: frozenset[str] = field(default_factory=frozenset)
    description: str = ""

    @classmethod
    def of(
        cls,
        name: str,
        read: Callable[..., Rows],
        *,
        schema: str,
        detect: Callable[[dict[str, Any]], bool],
        options: frozenset[str] | tuple[str, ...] = frozenset(),
        description: str = "",
    ) -> Importer:
        """The registry's entry for ``@IMPORTERS.register(name, schema=..., detect=..., ...)`` on ``read``."""
        return cls(name, schema, detect, read, frozenset(options), description)

    def __call__(self, path: Path, schema: Schema, *, skip_bad: bool = False, **options: Any) -> Rows:
        return self.read(path, schema, skip_bad=skip_bad, **options)


IMPORTERS: Registry[Importer] = Registry("importer", "judgelab.sync.importers.formats", entry=Importer.of)
