"""BASSE (Barnes et al. 2025) Likert ratings of Spanish and Basque summaries as tidy tables.

Each line of ``BASSE.<lang>.jsonl`` / ``BASSE.<lang>.round_0.jsonl`` is one news document:
``{idx, round, original_document, reference_summaries, model_summaries}`` where
``model_summaries[name] = {summ, anns: {Coherence, Consistency, Fluency, Relevance, 5W1H}}``
and each criterion is a list of 1-5 ratings, one per rater (3 raters in rounds 0-2, 1 in
round 3). The files contain bare ``NaN`` tokens for missing ratings: they are read as
missing and produce no judgment row.

- ``tasks``: one row per (document, summary) (schema ``likert_rubric_es``): ``task_id``
  ``<idx>#<name>`` (``round_0/<idx>#<name>`` for the round-0 file in a folder's project),
  ``article``, ``summary``, ``system`` (the summary's name, e.g. ``claude-5w1h``), ``model``
  (its family: ``claude``, ``human``, ``subhead``...),
  ``prompt`` (``base``, ``core``, ``5w1h``, ``tldr``; the annotator for human summaries),
  ``language``, ``round`` (the data's round; the BASSE paper calls rounds 0, 1, 2 rounds 1, 2, 3),
  ``doc_idx``.
- ``judgments``: one annotation per (task, rater index): ``annotator`` ``rater_<i>``, items
  ``Coherence``, ``Consistency``, ``Fluency``, ``Relevance``, ``5W`` (from ``5W1H``), values
  ``"1"``..``"5"``.
- ``problems``: missing ratings (one row per task and criterion), unknown criteria. A missing
  rating stays missing; BASSE's own agreement notebook imputes 3 for a NaN outside llama3's
  summaries (one Spanish round-0 rating), which changes no published value at two decimals.

The rater index is the position in the list: whether ``rater_0`` is the same person across
documents is not stated by the data set.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.analysis.facets import Cut
from judgelab.analysis.loaders.common import (
    HUMAN,
    Collector,
    LoaderError,
    is_missing,
    iter_jsonl,
    judgment_base,
    rating_text,
)
from judgelab.analysis.loaders.registry import DATA_SETS
from judgelab.configs.schema import builtin_schema

SCHEMA = "likert_rubric_es"
_CRITERION = builtin_schema(SCHEMA).constant("criteria")
#: BASSE's own rating keys (a round's file says ``5W1H`` or ``5W``), to the schema's criteria
CRITERIA = {
    "Coherence": _CRITERION["coherence"],
    "Consistency": _CRITERION["consistency"],
    "Fluency": _CRITERION["fluency"],
    "Relevance": _CRITERION["relevance"],
    "5W1H": _CRITERION["five_w"],
    "5W": _CRITERION["five_w"],
}
_LANGUAGE = re.compile(r"\.(?P<lang>[a-z]{2})(?:\.|$)")


def basse_project(path: Path) -> str:
    """``BASSE.es.round_0.jsonl`` -> ``BASSE.es.round_0``."""
    name = path.name
    return name[: -len(".jsonl")] if name.endswith(".jsonl") else path.stem


NAN_POLICIES = ("missing", "as-authors")


def load_basse(
    path: str | Path,
    *,
    project: str | None = None,
    language: str | None = None,
    task_prefix: str = "",
    nan: str = "missing",
) -> dict[str, pd.DataFrame]:
    """Tidy tables of one BASSE JSON Lines file.

    ``project`` defaults to the file name without ``.jsonl``; ``language`` to the two-letter
    code in the file name (``es``, ``eu``); ``task_prefix`` goes before every task id (two
    files of one project whose documents share ids, see :func:`load_basse_folder`). ``nan``
    says what a ``NaN`` rating becomes: ``"missing"`` (default: no judgment), or
    ``"as-authors"``, as BASSE's agreement notebook does: 3 on every summary but llama3's,
    missing on those (this reproduces the paper's alphas digit for digit). Returns
    ``{"tasks", "judgments", "spans", "problems"}`` (``spans`` is empty). A line that is not
    JSON raises ``LoaderError`` naming the file and line.
    """
    if nan not in NAN_POLICIES:
        raise ValueError(f"nan must be one of {', '.join(NAN_POLICIES)}, got {nan!r}")
    path = Path(path)
    project = project or basse_project(path)
    if language is None:
        match = _LANGUAGE.search(path.name)
        language = match.group("lang") if match else None
    out = Collector(project)
    for line_number, document in iter_jsonl(path):
        doc_idx = document.get("idx")
        summaries = document.get("model_summaries")
        if doc_idx is None or not isinstance(summaries, dict):
            out.problem(path, line_number, None, "bad_document", "no idx or model_summaries; skipped", warn=True)
            continue
        for name, entry in summaries.items():
            _add_summary(out, path, line_number, project, language, document, str(name), entry, task_prefix, nan)
    return out.frames()


def load_basse_folder(folder: str | Path, *, nan: str = "missing") -> dict[str, pd.DataFrame]:
    """Every ``BASSE*.jsonl`` of ``folder``, one project per language (``BASSE.es`` holds
    ``BASSE.es.jsonl`` and ``BASSE.es.round_0.jsonl``: the study's rounds side by side, the
    report cuts them by ``round``). The documents of round 0 are those of round 1 rated before
    the annotators met, with the same ids: their task ids start with ``round_0/``. A file
    without a language code in its name is a project of its own."""
    from judgelab.analysis.loaders.common import concat_loaded

    folder = Path(folder)
    files = sorted(folder.glob("BASSE*.jsonl"))
    if not files:
        raise LoaderError(f"{folder}: no BASSE*.jsonl files")
    parts = []
    for file in files:
        match = _LANGUAGE.search(file.name)
        if match is None:
            parts.append(load_basse(file, nan=nan))
            continue
        name = basse_project(file)
        project = name[: match.end("lang")]
        tag = name[match.end("lang") :].strip(".")
        parts.append(load_basse(file, project=project, task_prefix=f"{tag}/" if tag else "", nan=nan))
    return concat_loaded(parts)


def _add_summary(
    out: Collector,
    path: Path,
    line_number: int,
    project: str,
    language: str | None,
    document: dict[str, Any],
    name: str,
    entry: object,
    task_prefix: str = "",
    nan: str = "missing",
) -> None:
    task_id = f"{task_prefix}{document['idx']}#{name}"
    if not isinstance(entry, dict):
        out.problem(path, line_number, task_id, "bad_summary", "model summary is not an object; skipped")
        return
    out.tasks.append(_summary_task(project, task_id, language, document, name, entry))
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
        _add_ratings(out, path, line_number, project, task_id, name, item, ratings, nan)


def _summary_task(
    project: str, task_id: str, language: str | None, document: dict[str, Any], name: str, entry: dict[str, Any]
) -> dict[str, Any]:
    """The task of one summary of a document: the article, the summary, and the system that wrote
    it as model family and prompt variant (``gpt4o-5w1h``: ``gpt4o``, ``5w1h``)."""
    family, _, variant = name.partition("-")
    return {
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


def _add_ratings(
    out: Collector,
    path: Path,
    line_number: int,
    project: str,
    task_id: str,
    name: str,
    item: str,
    ratings: list[Any],
    nan: str,
) -> None:
    """One criterion's ratings of a summary, one judgment per rater (``rater_<k>`` by position). A
    NaN rating is left out, or with ``nan="as-authors"`` imputed as 3 except on llama summaries
    (BASSE's notebook); either is reported as a problem."""
    missing = imputed = 0
    for rater, rating in enumerate(ratings):
        if is_missing(rating) and nan == "as-authors" and not name.startswith("llama"):
            rating, imputed = 3, imputed + 1
        if is_missing(rating):
            missing += 1
            continue
        base = judgment_base(project, task_id, f"{project}:{task_id}:rater_{rater}", f"rater_{rater}", HUMAN)
        out.judgment(base, item, rating_text(rating))
    if imputed:
        out.problem(
            path,
            line_number,
            task_id,
            "imputed_rating",
            f"{item}: {imputed} of {len(ratings)} ratings missing (NaN), imputed as 3 as BASSE's authors do",
        )
    if missing:
        out.problem(
            path,
            line_number,
            task_id,
            "missing_rating",
            f"{item}: {missing} of {len(ratings)} ratings missing (NaN)",
        )


@DATA_SETS.register(
    "basse",
    path_help="BASSE.<lang>[.round_0].jsonl, or a folder of them (one project per language)",
    options=("nan_ratings",),
    cut=Cut(
        ("language", "round"),
        "model != 'human'",
        origin="BASSE's published analysis: per language and annotation round, on the machine summaries "
        "(the human references have two raters, not three)",
    ),
)
def read_basse(path: Path, project: str | None = None, nan_ratings: str | None = None) -> dict[str, Any]:
    """``judgelab load basse PATH``: one file (one project), or a folder (a project per language)."""
    nan = nan_ratings or "missing"
    if not Path(path).is_dir():
        return load_basse(path, nan=nan, **({"project": project} if project else {}))
    if project:
        raise LoaderError("--project-name needs a single BASSE file (a folder gives one project per language)")
    return load_basse_folder(path, nan=nan)
