"""BASSE (Barnes et al. 2025) Likert ratings of Spanish and Basque summaries as tidy tables.

Each line of ``BASSE.<lang>.jsonl`` / ``BASSE.<lang>.round_0.jsonl`` is one news document:
``{idx, round, original_document, reference_summaries, model_summaries}`` where
``model_summaries[name] = {summ, anns: {Coherence, Consistency, Fluency, Relevance, 5W1H}}``
and each criterion is a list of 1-5 ratings, one per rater (3 raters in rounds 0-2, 1 in
round 3). The files contain bare ``NaN`` tokens for missing ratings: they are read as
missing and produce no judgment row.

- ``tasks``: one row per (document, summary) (schema ``likert_rubric_es``): ``task_id``
  ``<idx>#<name>``, ``article``, ``summary``, ``system`` (the summary's name, e.g.
  ``claude-5w1h``), ``model`` (its family: ``claude``, ``human``, ``subhead``...),
  ``prompt`` (``base``, ``core``, ``5w1h``, ``tldr``; the annotator for human summaries),
  ``language``, ``round``, ``doc_idx``.
- ``judgments``: one annotation per (task, rater index): ``annotator`` ``rater_<i>``, items
  ``Coherence``, ``Consistency``, ``Fluency``, ``Relevance``, ``5W`` (from ``5W1H``), values
  ``"1"``..``"5"``.
- ``problems``: missing ratings (one row per task and criterion), unknown criteria.

The rater index is the position in the list: whether ``rater_0`` is the same person across
documents is not stated by the data set.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.analysis.loaders.common import (
    HUMAN,
    Collector,
    is_missing,
    iter_jsonl,
    judgment_base,
    rating_text,
)

SCHEMA = "likert_rubric_es"
CRITERIA = {"Coherence": "Coherence", "Consistency": "Consistency", "Fluency": "Fluency", "Relevance": "Relevance"}
CRITERIA.update({"5W1H": "5W", "5W": "5W"})
_LANGUAGE = re.compile(r"\.(?P<lang>[a-z]{2})(?:\.|$)")


def basse_project(path: Path) -> str:
    """``BASSE.es.round_0.jsonl`` -> ``BASSE.es.round_0``."""
    name = path.name
    return name[: -len(".jsonl")] if name.endswith(".jsonl") else path.stem


def load_basse(path: str | Path, *, project: str | None = None, language: str | None = None) -> dict[str, pd.DataFrame]:
    """Tidy tables of one BASSE JSON Lines file.

    ``project`` defaults to the file name without ``.jsonl``; ``language`` to the two-letter
    code in the file name (``es``, ``eu``). Returns ``{"tasks", "judgments", "spans",
    "problems"}`` (``spans`` is empty). A line that is not JSON raises ``LoaderError``
    naming the file and line.
    """
    path = Path(path)
    project = project or basse_project(path)
    if language is None:
        match = _LANGUAGE.search(path.name)
        language = match.group("lang") if match else None
    out = Collector()
    for line_number, document in iter_jsonl(path):
        doc_idx = document.get("idx")
        summaries = document.get("model_summaries")
        if doc_idx is None or not isinstance(summaries, dict):
            out.problem(path, line_number, None, "bad_document", "no idx or model_summaries; skipped", warn=True)
            continue
        for name, entry in summaries.items():
            _add_summary(out, path, line_number, project, language, document, str(name), entry)
    return out.frames()


def _add_summary(
    out: Collector,
    path: Path,
    line_number: int,
    project: str,
    language: str | None,
    document: dict[str, Any],
    name: str,
    entry: object,
) -> None:
    task_id = f"{document['idx']}#{name}"
    if not isinstance(entry, dict):
        out.problem(path, line_number, task_id, "bad_summary", "model summary is not an object; skipped")
        return
    family, _, variant = name.partition("-")
    out.tasks.append(
        {
            "project": project,
            "task_id": task_id,
            "schema": SCHEMA,
            "key": task_id,
            "title": None,
            "article": document.get("original_document"),
            "summary": entry.get("summ"),
            "system": name,
            "model": family,
            "prompt": variant or None,
            "language": language,
            "round": document.get("round"),
            "doc_idx": document.get("idx"),
        }
    )
    anns = entry.get("anns") or {}
    if not isinstance(anns, dict):
        out.problem(path, line_number, task_id, "bad_ratings", "anns is not an object; skipped")
        return
    for criterion, ratings in anns.items():
        item = CRITERIA.get(str(criterion))
        if item is None:
            out.problem(path, line_number, task_id, "unknown_criterion", f"criterion {criterion!r} not in the rubric")
            continue
        if not isinstance(ratings, list):
            ratings = [ratings]
        missing = 0
        for rater, rating in enumerate(ratings):
            if is_missing(rating):
                missing += 1
                continue
            base = judgment_base(project, task_id, f"{project}:{task_id}:rater_{rater}", f"rater_{rater}", HUMAN)
            out.judgment(base, item, rating_text(rating))
        if missing:
            out.problem(
                path,
                line_number,
                task_id,
                "missing_rating",
                f"{item}: {missing} of {len(ratings)} ratings missing (NaN)",
            )
