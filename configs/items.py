"""What kind of answer a judgment item holds, read from a schema's metadata.

A schema's YAML names its items either literally (``SP``, ``no_errors``) or as Repeater
patterns (``verdict_{i}`` with ``item: "line_{i}"``). The tidy ``judgments`` table stores
the item name (``item:`` when given, else the control name), so ``line_3`` matches the
pattern ``line_{i}`` and takes its kind.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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
        if any(_matches(name, item) for name in names):
            kind = str(spec.get("kind", "nominal"))
            return kind if kind in ITEM_KINDS else "nominal"
    if item.endswith(".explanation"):
        return "text"
    return "nominal"


def _matches(name_or_pattern: str, item: str) -> bool:
    if REPEATER_INDEX not in name_or_pattern:
        return name_or_pattern == item
    pieces = (re.escape(piece) for piece in name_or_pattern.split(REPEATER_INDEX))
    return re.fullmatch(r"\d+".join(pieces), item) is not None
