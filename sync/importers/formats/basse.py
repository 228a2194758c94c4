"""Seed 003: BASSE JSON Lines into ``likert_rubric_es`` tasks, optionally with the raters' ratings.

Each line is one news document ``{idx, round, original_document, reference_summaries,
model_summaries}``; ``model_summaries[name] = {summ, anns: {Coherence, Consistency,
Fluency, Relevance, 5W1H}}`` with each criterion a list of 1-5 ratings, one per rater. Bare
``NaN`` tokens (missing ratings) are read as missing (as in
:mod:`analysis.loaders.basse`).

One task per (document, summary): ``article``, ``summary``, ``model`` (the name's family:
``claude``, ``llama3``, ``human``, ``subhead``), ``prompt`` (the variant after the dash:
``base``, ``core``, ``5w1h``, ``tldr``; empty for ``subhead``), ``system`` (the full name),
``title`` (empty: BASSE has no headlines), id ``<idx>#<name>``.

``with_annotations``: the ratings become one annotation per rater index ``i``, by the Label
Studio user ``basse-rater-<i>@judgelab.local``, with one Choices result per criterion
(``5W1H`` -> control ``5W``, values ``"1"``..``"5"``, the config's aliases). A NaN leaves
that criterion out of that rater's annotation; a rater with no rating at all gets no
annotation. A rating that is not a whole number 1-5 makes the row bad. Whether rater 0 is
the same person across documents is not stated by the data set: the index is all we have.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgelab.configs.schema import Schema, get_schema
from judgelab.sync.importers.annotations import control_result, controls_by_name, make_annotation
from judgelab.sync.importers.records import read_records
from judgelab.sync.importers.registry import IMPORTERS
from judgelab.sync.importers.rows import Rows, checked_rows

RATER_EMAIL = "basse-rater-{}@judgelab.local"


class _BadSummary(ValueError):
    pass


def rater_annotations(anns: Any, controls: dict) -> list[dict[str, Any]]:
    """One annotation per rater index from ``{criterion: [ratings]}``; see the module doc."""
    # the loaders of published data (and pandas with them) only when ratings are read
    from judgelab.analysis.loaders.basse import CRITERIA
    from judgelab.analysis.loaders.common import is_missing, rating_text

    if not isinstance(anns, dict):
        raise _BadSummary("anns is not an object")
    per_rater: dict[int, list[dict[str, Any]]] = {}
    for criterion, ratings in anns.items():
        item = CRITERIA.get(str(criterion))
        if item is None:
            raise _BadSummary(f"unknown criterion {criterion!r} (expected {', '.join(CRITERIA)})")
        for rater, rating in enumerate(ratings if isinstance(ratings, list) else [ratings]):
            if is_missing(rating):
                continue
            try:
                result = control_result(controls[item], rating_text(rating))
            except ValueError as exc:
                raise _BadSummary(f"rater {rater}: {exc}") from None
            per_rater.setdefault(rater, []).append(result)
    return [make_annotation(RATER_EMAIL.format(rater), results) for rater, results in sorted(per_rater.items())]


def looks_like_basse(first: dict[str, Any]) -> bool:
    """A news document with its model summaries."""
    return "model_summaries" in first and "original_document" in first


@IMPORTERS.register(
    "basse",
    schema="likert_rubric_es",
    detect=looks_like_basse,
    options=("with_annotations",),
    description="seed 003: BASSE JSON Lines (--with-annotations: the raters' ratings)",
)
def read_basse(
    path: Path, schema: Schema | None = None, *, skip_bad: bool = False, with_annotations: bool = False
) -> Rows:
    """``likert_rubric_es`` tasks of a BASSE file (with the raters' annotations if asked)."""
    schema = schema or get_schema("likert_rubric_es")
    controls = controls_by_name(schema)
    bad: list[str] = []
    records: list[tuple[str, dict[str, Any]]] = []
    for where, document in read_records(Path(path), skip_bad=skip_bad, bad=bad):
        summaries = document.get("model_summaries") if isinstance(document, dict) else None
        if not isinstance(document, dict) or document.get("idx") in (None, "") or not isinstance(summaries, dict):
            bad.append(f"{where}: not a BASSE document (needs idx and model_summaries)")
            continue
        for name, entry in summaries.items():
            if not isinstance(entry, dict):
                bad.append(f"{where}: summary {name!r} is not an object")
                continue
            family, _, variant = str(name).partition("-")
            data = {
                "id": f"{document['idx']}#{name}",
                "article": document.get("original_document"),
                "summary": entry.get("summ"),
                "model": family,
                "prompt": variant,
                "system": str(name),
            }
            record: dict[str, Any] = {"data": data}
            if with_annotations:
                try:
                    record["annotations"] = rater_annotations(entry.get("anns") or {}, controls)
                except _BadSummary as exc:
                    bad.append(f"{where}: summary {name!r}: {exc}")
                    continue
            records.append((f"{where} ({name})", record))
    return checked_rows(records, schema, skip_bad=skip_bad, bad=bad)
