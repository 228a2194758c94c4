"""How each rated item is compared: its kind (ordinal, nominal, flag, text), from the schema or
inferred from the answers.

A schema's ``scales`` and ``items`` declare the kinds; :func:`effective_meta` adds a rating
scale for every undeclared item whose answers are all whole numbers in a short range
(external data without a schema: BASSE's 1-5 criteria, the number of spans an annotation
marked), so that such items are compared as ratings and never silently as nominal labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from judgelab.configs.items import is_declared

MAX_INFERRED_SCALE_POINTS = 11  # an undeclared item with at most this many integer values is a rating scale
MAX_INFERRED_COUNT = 50  # ... or, named n_<something>, a count of things between 0 and this


def effective_meta(schema_meta: Mapping[str, Any] | None, judgments: pd.DataFrame) -> dict[str, Any]:
    """``schema_meta`` with a ``scales`` entry ``{min, max}`` for every item it does not declare
    whose answers are all integers with 2 to 11 distinct values, or, for an item named
    ``n_<something>``, whole counts from 0 to 50 (external data without a schema: BASSE's 1-5
    criteria, the number of spans an annotation marked). Such items are then compared as ratings.
    """
    meta = dict(schema_meta or {})
    scales = dict(meta.get("scales") or {})
    for item, values in judgments.groupby("item", sort=False)["value"]:
        name = str(item)
        if name in scales or name.endswith(".explanation") or is_declared(meta, name):
            continue
        numbers = pd.to_numeric(values.astype(str).str.strip(), errors="coerce")
        if values.empty or numbers.isna().any():
            continue
        distinct = np.unique(numbers.to_numpy(dtype=float))
        if not (np.all(distinct == np.round(distinct)) and len(distinct) >= 2):
            continue
        is_count = name.startswith("n_") and distinct.min() >= 0 and distinct.max() <= MAX_INFERRED_COUNT
        if not is_count and (
            len(distinct) > MAX_INFERRED_SCALE_POINTS or distinct.max() - distinct.min() > 2 * MAX_INFERRED_SCALE_POINTS
        ):
            continue
        scales[name] = {"min": int(distinct.min()), "max": int(distinct.max()), "inferred": True}
    meta["scales"] = scales
    return meta


KIND_FROM_SCHEMA = "schema"
KIND_INFERRED = "inferred"
KIND_DEFAULT = "default"


def item_kinds(schema_meta: Mapping[str, Any] | None, judgments: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """``item -> (kind, origin)`` for every item in ``judgments``: origin ``schema`` (declared in
    its ``scales`` or ``items``), ``inferred`` (whole-number answers in a short range: compared
    as a rating scale, see :func:`effective_meta`) or ``default`` (not declared: compared as
    nominal labels, or as text for ``*.explanation``)."""
    from judgelab.configs.items import item_kind

    declared_scales = set((schema_meta or {}).get("scales") or {})
    meta = effective_meta(schema_meta, judgments)
    kinds: dict[str, tuple[str, str]] = {}
    for item in dict.fromkeys(judgments["item"].dropna().astype(str)) if not judgments.empty else []:
        kind = item_kind(meta, item)
        if item in declared_scales or is_declared(schema_meta or {}, item):
            origin = KIND_FROM_SCHEMA
        elif item in (meta.get("scales") or {}):
            origin = KIND_INFERRED
        else:
            origin = KIND_DEFAULT
        kinds[item] = (kind, origin)
    return kinds
