"""StorySumm's raw annotation exports (``evaluation_interface/``) as tidy tables.

``annotations_pl_latest.json`` is a list of records ``{id, username, story, summary,
annotation}``; ``annotation`` (a dict, or its string repr) holds ``consistent_<i>`` (``Yes`` /
``No`` / ``N/A, just commentary``), ``explanation_<i>``, ``consistent_full`` and
``explanation_full``.

- ``tasks``: one row per summary id (schema ``story_consistency``): ``story``, ``summary``,
  ``n_lines`` (the most lines any record judged), ``lines`` (the summary split into
  sentences, kept only when that gives ``n_lines`` lines), ``n_records``; with ``combined``:
  ``model``, ``origin`` (``original`` / ``expanded``), ``split`` (StorySumm's ``val`` / ``test``:
  the 33 original summaries are its validation set), ``gold_faithful`` and
  ``gold_annotations`` (JSON list of the three summary-level labels).
- ``judgments``: one annotation per record (``annotation_id`` ``<project>:<record index>``,
  ``annotator`` the username, source ``human``): ``line_<i>`` as ``Consistent`` /
  ``Inconsistent`` / ``N/A, just commentary``, ``line_<i>.explanation``, ``faithful``,
  ``faithful.explanation``. With ``combined``, the gold label (source and annotator ``gold``,
  item ``faithful``).

An annotator's summary-level ``faithful`` is one of two things (``summary_verdict``, recorded in
the tasks' ``faithful_from`` column):

- ``"own"`` (the default): their own answer to the summary question (``consistent_full``);
- ``"lines"``: derived from their line labels: ``Unfaithful`` when a line is ``Inconsistent``,
  ``Faithful`` when they judged lines and none is (``N/A`` lines count as not inconsistent); their
  own answer is then left out. On StorySumm's 96 summaries the three main annotators' two verdicts
  differ on 8 of 288 labels.
- ``problems``: null line judgments (skipped), unknown answers, unreadable annotations.

Every record is kept, including the pilot item answered by many annotators (and the main
annotators' repeated answers to it); agreement code keeps one annotation per annotator and
task (the later record).
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.analysis.facets import Cut
from judgelab.analysis.loaders.common import (
    GOLD,
    HUMAN,
    Collector,
    LoaderError,
    judgment_base,
    read_json,
)
from judgelab.analysis.loaders.registry import DATA_SETS
from judgelab.analysis.loaders.storysumm import SCHEMA
from judgelab.configs.items import expand
from judgelab.configs.story_lines import split_sentences
from judgelab.configs.story_words import (
    CONSISTENT,
    FAITHFUL,
    INCONSISTENT,
    LINE_EXPLANATION_ITEM,
    LINE_ITEM,
    NOT_APPLICABLE,
    UNFAITHFUL,
)
from judgelab.configs.story_words import SUMMARY_ITEM as FAITHFUL_ITEM

LINE_VERDICTS = {"yes": CONSISTENT, "no": INCONSISTENT, "n/a, just commentary": NOT_APPLICABLE}
SUMMARY_VERDICTS = {"yes": FAITHFUL, "no": UNFAITHFUL}
#: where an annotator's summary-level verdict comes from (``load --summary-verdict``), as the tasks say it
SUMMARY_VERDICT_SOURCES = {"own": "their own summary verdict", "lines": "their line labels"}
ORIGIN_SPLITS = {"original": "val", "expanded": "test"}  # combined.json's source: StorySumm's split
_LINE_KEY = re.compile(r"^(consistent|explanation)_(\d+)$")


def load_evaluation_interface(
    path: str | Path,
    *,
    combined: str | Path | None = None,
    project: str = "evaluation_interface",
    summary_verdict: str = "own",
) -> dict[str, pd.DataFrame]:
    """Tidy tables of ``annotations_pl_latest.json`` (and ``combined.json`` if given).

    ``summary_verdict``: the annotators' ``faithful`` is their own (``"own"``) or derived from
    their line labels (``"lines"``), see the module's docstring.
    Returns ``{"tasks", "judgments", "spans", "problems"}`` (``spans`` is empty).
    """
    if summary_verdict not in SUMMARY_VERDICT_SOURCES:
        raise LoaderError(f"summary_verdict {summary_verdict!r}: one of {', '.join(SUMMARY_VERDICT_SOURCES)}")
    path = Path(path)
    records = read_json(path, strict=False)
    if not isinstance(records, list):
        raise LoaderError(f"{path}: expected a JSON list of annotation records, got {type(records).__name__}")
    out = Collector(project)
    tasks: dict[str, dict[str, Any]] = {}
    for index, record in enumerate(records):
        if not isinstance(record, dict) or record.get("id") is None:
            out.problem(path, None, None, "bad_record", f"record {index} has no id; skipped", warn=True)
            continue
        task_id = str(record["id"])
        task = tasks.setdefault(
            task_id,
            {
                "project": project,
                "task_id": task_id,
                "schema": SCHEMA,
                "key": task_id,
                "story": record.get("story"),
                "summary": record.get("summary"),
                "n_lines": 0,
                "n_records": 0,
                "faithful_from": SUMMARY_VERDICT_SOURCES[summary_verdict],
            },
        )
        task["n_records"] += 1
        annotation = _annotation_dict(record.get("annotation"))
        if annotation is None:
            out.problem(
                path, None, task_id, "bad_annotation", f"record {index}: annotation unreadable; skipped", warn=True
            )
            continue
        base = judgment_base(project, task_id, f"{project}:{index}", str(record.get("username")), HUMAN)
        judged = _add_annotation(out, path, index, task_id, base, annotation, own_verdict=summary_verdict == "own")
        task["n_lines"] = max(task["n_lines"], judged)
    for task in tasks.values():
        lines = split_sentences(task["summary"]) if isinstance(task["summary"], str) else []
        task["lines"] = json.dumps(lines, ensure_ascii=False) if len(lines) == task["n_lines"] else None
        out.tasks.append(task)
    if combined is not None:
        _add_combined(out, Path(combined), project, tasks)
    return out.frames()


def _annotation_dict(value: object) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        for parse in (json.loads, ast.literal_eval):
            try:
                parsed = parse(value)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(parsed, dict):
                return parsed
    return None


def _add_annotation(
    out: Collector,
    path: Path,
    index: int,
    task_id: str,
    base: dict[str, Any],
    annotation: dict[str, Any],
    *,
    own_verdict: bool = True,
) -> int:
    """Judgment rows of one record; returns the number of lines it judged. ``own_verdict``: the
    summary verdict is the record's own answer, else derived from its line verdicts."""
    n_lines = 0
    line_verdicts: list[str] = []
    for key in sorted(annotation, key=_key_order):
        value = annotation[key]
        match = _LINE_KEY.match(key)
        if match:
            kind, line = match.group(1), int(match.group(2))
            n_lines = max(n_lines, line + 1)
            if kind == "explanation":
                if isinstance(value, str) and value.strip():
                    out.judgment(base, expand(LINE_EXPLANATION_ITEM, line), value.strip())
                continue
            if value is None:
                out.problem(
                    path, None, task_id, "null_judgment", f"record {index} ({base['annotator']}): {key} is null"
                )
                continue
            verdict = LINE_VERDICTS.get(str(value).strip().lower())
            if verdict is None:
                out.problem(path, None, task_id, "unknown_answer", f"record {index}: {key} = {value!r}; skipped")
                continue
            out.judgment(base, expand(LINE_ITEM, line), verdict)
            line_verdicts.append(verdict)
        elif key == "consistent_full" and value is not None and own_verdict:
            verdict = SUMMARY_VERDICTS.get(str(value).strip().lower())
            if verdict is None:
                out.problem(path, None, task_id, "unknown_answer", f"record {index}: {key} = {value!r}; skipped")
            else:
                out.judgment(base, FAITHFUL_ITEM, verdict)
        elif key == "explanation_full" and isinstance(value, str) and value.strip():
            out.judgment(base, f"{FAITHFUL_ITEM}.explanation", value.strip())
    if not own_verdict and line_verdicts:
        out.judgment(base, FAITHFUL_ITEM, UNFAITHFUL if INCONSISTENT in line_verdicts else FAITHFUL)
    return n_lines


def _key_order(key: str) -> tuple[int, int, str]:
    match = _LINE_KEY.match(key)
    return (0, int(match.group(2)), key) if match else (1, 0, key)


def _add_combined(out: Collector, path: Path, project: str, tasks: dict[str, dict[str, Any]]) -> None:
    items = read_json(path, strict=False)
    if isinstance(items, dict):
        items = [{"id": key, **value} for key, value in items.items() if isinstance(value, dict)]
    if not isinstance(items, list):
        raise LoaderError(f"{path}: expected a JSON list of items with gold_faithful")
    seen = Counter()
    for item in items:
        if not isinstance(item, dict) or item.get("id") is None:
            out.problem(path, None, None, "bad_item", "item without id; skipped")
            continue
        task_id = str(item["id"])
        seen[task_id] += 1
        task = tasks.get(task_id)
        if task is None:
            task = {
                "project": project,
                "task_id": task_id,
                "schema": SCHEMA,
                "key": task_id,
                "story": item.get("story"),
                "summary": item.get("summary"),
                "n_lines": None,
                "n_records": 0,
                "lines": None,
            }
            tasks[task_id] = task
            out.tasks.append(task)
            out.problem(path, None, task_id, "no_annotations", "gold item without annotation records")
        gold = item.get("gold_faithful")
        annotations = item.get("gold_annotations")
        if isinstance(annotations, str):
            try:
                annotations = json.loads(annotations)
            except json.JSONDecodeError:
                pass
        task.update(
            {
                "model": item.get("model"),
                "origin": item.get("source"),
                "split": ORIGIN_SPLITS.get(str(item.get("source"))),
                "gold_faithful": _int_or_none(gold),
                "gold_annotations": json.dumps(annotations) if annotations is not None else None,
            }
        )
        label = _int_or_none(gold)
        if label in (0, 1):
            base = judgment_base(project, task_id, f"gold:{task_id}", GOLD, GOLD)
            out.judgment(base, FAITHFUL_ITEM, FAITHFUL if label == 1 else UNFAITHFUL)
        else:
            out.problem(path, None, task_id, "bad_label", f"gold_faithful {gold!r} is not 0/1; skipped")
    for task_id, count in seen.items():
        if count > 1:
            out.problem(path, None, task_id, "duplicate_item", f"{count} gold items share this id")


def _int_or_none(value: object) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


@DATA_SETS.register(
    "evaluation_interface",
    path_help="annotations_pl_latest.json (or its folder) [--combined FILE; default: combined.json beside it] "
    "[--summary-verdict own|lines]",
    options=("combined", "summary_verdict"),
    cut=Cut(
        ("split",),
        total=True,
        origin="StorySumm's published analysis: val (where thresholds are tuned) and test, and all summaries pooled",
    ),
)
def read_evaluation_interface(
    path: Path, project: str | None = None, combined: Path | None = None, summary_verdict: str | None = None
) -> dict[str, Any]:
    """``judgelab load evaluation_interface PATH``: the file, or the folder holding it, with the
    gold labels of ``combined``, else of ``combined.json`` beside the file (as the data set is
    published); ``notes`` says whether gold labels were read."""
    file = Path(path) / "annotations_pl_latest.json" if Path(path).is_dir() else Path(path)
    beside = file.parent / "combined.json"
    if combined is None and beside.is_file():
        combined, where = beside, f"{beside.name} beside {file.name}"
    else:
        where = str(combined)
    verdict = summary_verdict or "own"
    loaded = load_evaluation_interface(
        file, combined=combined, summary_verdict=verdict, **({"project": project} if project else {})
    )
    if combined is None:
        note = (
            f"gold labels: none (no {beside.name} beside {file.name}; --combined names it): no split, "
            "no judges against the gold labels"
        )
    else:
        gold = loaded["judgments"]
        n_gold = int((gold["source"] == GOLD).sum()) if "source" in gold else 0
        note = f"gold labels: {n_gold} summary label(s) from {where}"
    said = {
        "own": "the annotators' summary-level faithfulness: their own summary verdict (the default; "
        "--summary-verdict lines derives it from their line labels)",
        "lines": "the annotators' summary-level faithfulness: derived from their line labels (a line Inconsistent: "
        "Unfaithful); their own summary verdict is left out",
    }[verdict]
    return {**loaded, "notes": [note, said]}
