"""Judgment items of a schema: what a control's answers are called in the tidy tables, and what
kind of answer an item holds, both read from the schema's ``items`` and ``scales``.

A schema's YAML names its items either literally (``SP``, ``no_errors``) or as Repeater
patterns (``verdict_{i}`` with ``item: "line_{i}"``). The tidy ``judgments`` table stores
the item name (``item:`` when given, else the control name), so ``line_3`` matches the
pattern ``line_{i}`` and takes its kind.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ITEM_KINDS = ("ordinal", "nominal", "flag", "text")
REPEATER_INDEX = "{i}"


def item_kind(schema_meta: Mapping[str, Any] | None, item: str) -> str:
    """``ordinal``, ``nominal``, ``flag`` or ``text`` for a judgment ``item`` of a schema.

    In order: an item with a scale in ``scales`` is ordinal; an item declared in ``items``
    (by its ``item:`` name or its key, ``{i}`` matching a line number) has the declared
    ``kind``; an item ending in ``.explanation`` is text; anything else is nominal.

    >>> meta = {"scales": {"SP": {"min": 1, "max": 3}},
    ...         "items": {"verdict_{i}": {"kind": "nominal", "item": "line_{i}"},
    ...                   "no_errors": {"kind": "flag"}}}
    >>> [item_kind(meta, name) for name in ["SP", "line_3", "no_errors", "line_3.explanation", "x"]]
    ['ordinal', 'nominal', 'flag', 'text', 'nominal']
    """
    meta = schema_meta or {}
    if item in (meta.get("scales") or {}):
        return "ordinal"
    for key, spec in (meta.get("items") or {}).items():
        spec = spec or {}
        names = {str(key), str(spec.get("item", key))}
        if any(matches(name, item) for name in names):
            kind = str(spec.get("kind", "nominal"))
            return kind if kind in ITEM_KINDS else "nominal"
    if item.endswith(".explanation"):
        return "text"
    return "nominal"


def pattern_regex(name_or_pattern: str) -> re.Pattern[str]:
    """A name, or a Repeater pattern (``verdict_{i}``), as a regex whose ``i`` group is the index."""
    pieces = [re.escape(piece) for piece in str(name_or_pattern).split(REPEATER_INDEX)]
    return re.compile("^" + r"(?P<i>\d+)".join(pieces) + "$") if len(pieces) > 1 else re.compile(f"^{pieces[0]}$")


def matches(name_or_pattern: str, item: str) -> bool:
    """``item`` is ``name_or_pattern`` or, for a pattern with ``{i}``, one of its expansions."""
    if REPEATER_INDEX not in name_or_pattern:
        return name_or_pattern == item
    return pattern_regex(name_or_pattern).match(item) is not None


def expand(pattern: str, index: int) -> str:
    """The item a Repeater pattern names for line ``index``.

    >>> expand("line_{i}", 3), expand("SP", 3)
    ('line_3', 'SP')
    """
    return str(pattern).replace(REPEATER_INDEX, str(index))


def index_of(pattern: str, item: str) -> int | None:
    """The line ``item`` is of a Repeater ``pattern`` (``None`` when it is none of its expansions).

    >>> index_of("line_{i}", "line_12"), index_of("line_{i}", "line_1.explanation"), index_of("line_{i}", "SP")
    (12, None, None)
    """
    if REPEATER_INDEX not in pattern:
        return None
    found = pattern_regex(pattern).match(str(item))
    return int(found.group("i")) if found else None


def is_declared(schema_meta: Mapping[str, Any] | None, item: str) -> bool:
    """``item`` is named by the schema's ``items`` table (by its key or its ``item:`` name)."""
    for key, spec in ((schema_meta or {}).get("items") or {}).items():
        names = {str(key), str((spec or {}).get("item", key))}
        if any(matches(name, item) for name in names):
            return True
    return False


@dataclass
class ItemNamer:
    """Control names to item names by the schema's ``items`` patterns: ``verdict_3`` -> ``line_3``
    when the schema says ``verdict_{i}: {item: "line_{i}"}``; other controls keep their name.

    >>> namer = ItemNamer.for_meta({"items": {"verdict_{i}": {"item": "line_{i}"}, "SP": {}}})
    >>> [namer(name) for name in ["verdict_3", "SP", "no_errors"]]
    ['line_3', 'SP', 'no_errors']
    """

    patterns: list[tuple[re.Pattern[str], str]] = field(default_factory=list)
    _seen: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def for_meta(cls, schema_meta: Mapping[str, Any] | None) -> ItemNamer:
        patterns = []
        for control, spec in ((schema_meta or {}).get("items") or {}).items():
            target = spec.get("item") if isinstance(spec, dict) else None
            if target:
                patterns.append((pattern_regex(str(control)), str(target)))
        return cls(patterns)

    @classmethod
    def for_schema(cls, schema: Any) -> ItemNamer:
        """For a :class:`~judgelab.configs.schema.Schema` (``None``: names kept)."""
        return cls.for_meta(schema.meta if schema is not None else None)

    def __call__(self, control: str) -> str:
        item = self._seen.get(control)
        if item is None:
            item = self._seen[control] = self._name(control)
        return item

    def _name(self, control: str) -> str:
        for regex, target in self.patterns:
            m = regex.match(control)
            if m:
                return target.replace(REPEATER_INDEX, m.group("i")) if "i" in regex.groupindex else target
        return control
