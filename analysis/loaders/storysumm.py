"""StorySumm (Subbiah et al. 2024) and its judges' predictions as tidy tables.

``storysumm.json`` maps a summary id to ``{story, summary, errors, label, explanations,
split, model, difficulty, story-id, ...}``: ``summary`` is a list of lines (or the string
repr of one), ``errors`` a 0/1 per line (1 = consistent), ``label`` 1 faithful / 0 unfaithful.

- ``tasks``: one row per summary (schema ``story_consistency``): ``story``, ``lines`` (JSON
  list), ``n_lines``, ``model``, ``split``, ``difficulty``, ``story_id``, ``label``,
  ``explanations`` (JSON list).
- ``judgments``: the gold labels, ``source`` and ``annotator`` ``"gold"``: item ``faithful``
  (``Faithful`` / ``Unfaithful``) and ``line_<i>`` (``Consistent`` / ``Inconsistent``).
- ``problems``: an item whose line count differs from its ``errors`` count (its line labels
  are skipped, with a :class:`LoaderWarning`), an item whose ``label`` contradicts its line
  labels (kept, noted), unreadable fields.

Judges' outputs ``predictions/<judge>.json`` map an id to ``{label, sentence_labels?,
probs?}``; :func:`load_storysumm_predictions` turns each into judgments of source
``model:<file stem>``: ``faithful`` from ``label``, ``line_<i>`` from ``sentence_labels``
(1 = consistent), ``faithful_score`` from a numeric ``probs`` of a judge without a label
(UniEval, AlignScore: a score), ``faithful.confidence`` from a numeric ``probs`` next to a
label (GPT-4: its confidence in the label it chose, not a faithfulness score) and
``faithful.explanation`` from a textual one (a chain-of-thought answer). Per-line ``probs``
lists are not kept.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.analysis.facets import Cut
from judgelab.analysis.loaders.common import (
    GOLD,
    Collector,
    LoaderError,
    concat_loaded,
    is_missing,
    judgment_base,
    read_json,
)
from judgelab.analysis.loaders.registry import DATA_SETS
from judgelab.configs.items import expand
from judgelab.configs.story_lines import line_texts
from judgelab.configs.story_words import CONSISTENT, FAITHFUL, INCONSISTENT, LINE_ITEM, UNFAITHFUL
from judgelab.configs.story_words import SUMMARY_ITEM as FAITHFUL_ITEM

SCHEMA = "story_consistency"


def _literal(text: str) -> Any:
    for parse in (ast.literal_eval, json.loads):
        try:
            return parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None


def _line_labels(value: object) -> list[object] | None:
    if isinstance(value, str):
        value = _literal(value.strip())
    return list(value) if isinstance(value, list) else None


def _binary(value: object) -> int | None:
    """0/1 (also ``"0"``, ``True``, ``1.0``) as an int; anything else ``None``."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and not is_missing(value) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return int(value.strip())
    return None


def load_storysumm(
    path: str | Path,
    *,
    predictions: str | Path | Iterable[str | Path] | None = None,
    project: str = "storysumm",
) -> dict[str, pd.DataFrame]:
    """Tidy tables of ``storysumm.json`` (gold labels), plus judges' predictions if given.

    ``predictions`` is a folder of ``<judge>.json`` files or a list of such files. Returns
    ``{"tasks", "judgments", "spans", "problems"}`` (``spans`` is empty).
    """
    path = Path(path)
    data = read_json(path, strict=False)
    if not isinstance(data, dict):
        raise LoaderError(f"{path}: expected a JSON object mapping summary ids to items, got {type(data).__name__}")
    out = Collector(project)
    for task_id, item in data.items():
        if not isinstance(item, dict):
            out.problem(path, None, task_id, "bad_item", f"item {task_id!r} is not an object; skipped", warn=True)
            continue
        _add_storysumm_item(out, path, project, str(task_id), item)
    loaded = out.frames()
    if predictions is None:
        return loaded
    line_counts = dict(zip(loaded["tasks"]["task_id"], loaded["tasks"]["n_lines"], strict=True))
    predicted = load_storysumm_predictions(predictions, project=project, line_counts=line_counts)
    merged = concat_loaded([loaded, predicted])
    merged["tasks"] = loaded["tasks"]
    return merged


def _add_storysumm_item(out: Collector, path: Path, project: str, task_id: str, item: Mapping[str, Any]) -> None:
    lines, how = line_texts(item.get("summary"))
    if lines is None:
        out.problem(path, None, task_id, "bad_summary", f"summary: {how}; line labels skipped", warn=True)
    out.tasks.append(_storysumm_task(project, task_id, item, lines))
    base = judgment_base(project, task_id, f"gold:{task_id}", GOLD, GOLD)
    label = _binary(item.get("label"))
    if label is None:
        out.problem(path, None, task_id, "bad_label", f"label {item.get('label')!r} is not 0/1; summary label skipped")
    else:
        out.judgment(base, FAITHFUL_ITEM, FAITHFUL if label == 1 else UNFAITHFUL)
    errors = _line_labels(item.get("errors"))
    if lines is None:
        return
    if errors is None:
        out.problem(path, None, task_id, "bad_errors", "errors is not a list of 0/1; line labels skipped", warn=True)
        return
    if len(errors) != len(lines):
        out.problem(
            path,
            None,
            task_id,
            "line_count_mismatch",
            f"{len(lines)} summary lines but {len(errors)} line labels in errors; line labels skipped",
            warn=True,
        )
        return
    _add_line_labels(out, path, task_id, base, errors, label)


def _storysumm_task(project: str, task_id: str, item: Mapping[str, Any], lines: list[str] | None) -> dict[str, Any]:
    """The task of one StorySumm item: its story, its summary's lines (JSON) and the item's fields."""
    return {
        "project": project,
        "task_id": task_id,
        "schema": SCHEMA,
        "key": task_id,
        "title": f"story {item.get('story-id')}" if item.get("story-id") is not None else None,
        "story": item.get("story"),
        "lines": json.dumps(lines, ensure_ascii=False) if lines is not None else None,
        "n_lines": len(lines) if lines is not None else None,
        "model": item.get("model"),
        "split": item.get("split"),
        "difficulty": item.get("difficulty"),
        "story_id": item.get("story-id"),
        "label": _binary(item.get("label")),
        "explanations": json.dumps(item.get("explanations"), ensure_ascii=False)
        if item.get("explanations") is not None
        else None,
    }


def _add_line_labels(
    out: Collector, path: Path, task_id: str, base: dict[str, Any], errors: list[Any], label: int | None
) -> None:
    """The gold verdict of each line (1 consistent, 0 inconsistent; anything else a problem), and a
    problem when the summary label contradicts the lines (kept as given)."""
    verdicts = [_binary(e) for e in errors]
    for index, verdict in enumerate(verdicts):
        if verdict is None:
            out.problem(path, None, task_id, "bad_line_label", f"errors[{index}] = {errors[index]!r} is not 0/1")
            continue
        out.judgment(base, expand(LINE_ITEM, index), CONSISTENT if verdict == 1 else INCONSISTENT)
    known = [v for v in verdicts if v is not None]
    if label is not None and known and label != int(all(known)):
        said = "faithful" if label == 1 else "unfaithful"
        lines_say = "every line is consistent" if all(known) else f"{known.count(0)} line(s) are inconsistent"
        out.problem(
            path,
            None,
            task_id,
            "label_contradicts_lines",
            f"label says {said} but {lines_say}; kept as given",
        )


def prediction_files(predictions: str | Path | Iterable[str | Path]) -> list[Path]:
    """The ``*.json`` files of a folder (sorted), or the given files."""
    if isinstance(predictions, (str, Path)):
        folder = Path(predictions)
        if folder.is_dir():
            return sorted(folder.glob("*.json"))
        return [folder]
    return [Path(p) for p in predictions]


def load_storysumm_predictions(
    predictions: str | Path | Iterable[str | Path],
    *,
    project: str = "storysumm",
    line_counts: Mapping[str, int | None] | None = None,
) -> dict[str, pd.DataFrame]:
    """Judgments of the judges in ``predictions`` (a folder or files), one source per file.

    ``line_counts`` (task id -> number of summary lines) lets sentence labels whose count
    differs from the summary's be skipped (recorded in ``problems``); without it they are
    kept as given. ``tasks`` is empty: the summaries come from :func:`load_storysumm`.
    """
    out = Collector(project)
    for path in prediction_files(predictions):
        data = read_json(path, strict=False)
        if not isinstance(data, dict):
            raise LoaderError(f"{path}: expected a JSON object mapping summary ids to predictions")
        judge = path.stem
        for task_id, prediction in data.items():
            task_id = str(task_id)
            if not isinstance(prediction, dict):
                out.problem(path, None, task_id, "bad_prediction", "prediction is not an object; skipped")
                continue
            if line_counts is not None and task_id not in line_counts:
                out.problem(path, None, task_id, "unknown_task", "id not in storysumm.json; kept")
            base = judgment_base(project, task_id, f"{judge}:{task_id}", judge, f"model:{judge}")
            _add_prediction(out, path, base, task_id, prediction, (line_counts or {}).get(task_id))
    return out.frames()


def _add_prediction(
    out: Collector, path: Path, base: dict[str, Any], task_id: str, prediction: Mapping[str, Any], n_lines: int | None
) -> None:
    if "label" in prediction and not is_missing(prediction["label"]):
        label = _binary(prediction["label"])
        if label is None:
            out.problem(path, None, task_id, "bad_label", f"label {prediction['label']!r} is not 0/1; skipped")
        else:
            out.judgment(base, FAITHFUL_ITEM, FAITHFUL if label == 1 else UNFAITHFUL)
    probs = prediction.get("probs")
    if isinstance(probs, (int, float)) and not isinstance(probs, bool) and not is_missing(probs):
        # with a label, probs is the judge's confidence in that label (GPT-4: 100 * exp(logprob) of
        # the answer token it emitted), not a faithfulness score
        has_label = "label" in prediction and not is_missing(prediction["label"])
        item = f"{FAITHFUL_ITEM}.confidence" if has_label else f"{FAITHFUL_ITEM}_score"
        out.judgment(base, item, repr(float(probs)))
    elif isinstance(probs, str) and probs.strip():
        out.judgment(base, f"{FAITHFUL_ITEM}.explanation", probs)
    sentence_labels = prediction.get("sentence_labels")
    if sentence_labels is None:
        return
    labels = _line_labels(sentence_labels)
    if labels is None:
        out.problem(path, None, task_id, "bad_sentence_labels", "sentence_labels is not a list; skipped")
        return
    if n_lines is not None and not pd.isna(n_lines) and len(labels) != int(n_lines):
        out.problem(
            path,
            None,
            task_id,
            "line_count_mismatch",
            f"{len(labels)} sentence labels for {int(n_lines)} summary lines; sentence labels skipped",
        )
        return
    for index, value in enumerate(labels):
        verdict = _binary(value)
        if verdict is not None:
            out.judgment(base, expand(LINE_ITEM, index), CONSISTENT if verdict == 1 else INCONSISTENT)


@DATA_SETS.register(
    "storysumm",
    path_help="storysumm.json (or its folder) [--predictions DIR; default: predictions/ beside it]",
    options=("predictions",),
    cut=Cut(
        ("split",),
        total=True,
        origin="StorySumm's published analysis: val (where thresholds are tuned) and test, and all summaries pooled",
    ),
)
def read_storysumm(path: Path, project: str | None = None, predictions: Path | None = None) -> dict[str, Any]:
    """``judgelab load storysumm PATH``: the file, or the folder holding ``storysumm.json``, with
    the judges of ``predictions``, else of the ``predictions/`` folder beside the file (as the
    data set is published); ``notes`` says which judges were read, or that none were."""
    file = Path(path) / "storysumm.json" if Path(path).is_dir() else Path(path)
    beside = file.parent / "predictions"
    if predictions is None and beside.is_dir() and any(beside.glob("*.json")):
        predictions, where = beside, f"{beside.name}/ beside {file.name}"
    else:
        where = str(predictions)
    loaded = load_storysumm(file, predictions=predictions, **({"project": project} if project else {}))
    if predictions is None:
        note = (
            f"judges: none (no {beside.name}/ folder of judges' .json files beside {file.name}; --predictions names "
            "one): the report has no judge table and no alt-test"
        )
    else:
        judges = [f.stem for f in prediction_files(predictions)]
        note = f"judges: {len(judges)} from {where} ({', '.join(judges)})"
    return {**loaded, "notes": [note]}
