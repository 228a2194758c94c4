"""factgenie span annotations ("LLMs as span annotators", Kasner et al. 2025) as tidy tables.

Each line of ``annotations_human_<campaign>.jsonl`` is one (example, annotator group):
``{dataset, split, example_idx, setup_id, annotator_group, annotations: [{type, text, start,
id?, reason?}]}``. ``type`` indexes ``annotation_span_categories`` of the matching
``<same name>.config.yaml``; the span ends at ``start + len(text)``.

- ``tasks``: one row per output ``<dataset>/<split>/<example_idx>/<setup_id>`` (see
  :func:`task_id_of`; schema
  ``hotel_spans`` by default: the same task shape, error spans on a generated text), with
  ``dataset``, ``split``, ``example_idx``, ``setup_id`` and, when ``outputs`` is given,
  ``output``.
- ``spans``: field ``output``, ``label`` the category name, ``note`` the ``reason`` if any,
  ``annotator`` ``group_<annotator_group>``, ``annotation_id`` ``<file stem>:<line>``.
- ``judgments``: one row per annotation, item ``n_spans`` (how many spans it marked, ``"0"``
  for an annotation that found nothing), so that an annotation without spans still exists
  in the tables.
- ``problems``: types outside the category list, spans without ``start``/``text``, a group
  annotating the same output twice (both kept; agreement code keeps the later one), and,
  when ``outputs`` gives the annotated texts, spans whose ``text`` differs from
  ``output[start:end]`` (``offset_mismatch``).

The shared copies carry no output texts, so offsets can only be checked when the caller
provides them (``outputs``: a mapping task id -> text).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from judgelab.analysis.facets import Cut
from judgelab.analysis.loaders.common import (
    HUMAN,
    Collector,
    LoaderError,
    concat_loaded,
    is_missing,
    iter_jsonl,
    judgment_base,
)
from judgelab.analysis.loaders.registry import DATA_SETS

DEFAULT_SCHEMA = "hotel_spans"
FIELD = "output"
SPAN_COUNT_ITEM = "n_spans"
ID_FIELDS = ("dataset", "split", "example_idx", "setup_id")


def config_path_for(path: Path) -> Path:
    """``x/annotations_human_mt-eval.jsonl`` -> ``x/annotations_human_mt-eval.config.yaml``."""
    name = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    return path.with_name(f"{name}.config.yaml")


def span_categories(config: str | Path) -> list[str]:
    """Category names of a factgenie campaign config, in ``type`` order."""
    config = Path(config)
    try:
        meta = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise LoaderError(f"{config}: cannot read: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise LoaderError(f"{config}: invalid YAML: {exc}") from exc
    categories = meta.get("annotation_span_categories") if isinstance(meta, dict) else None
    if not isinstance(categories, list) or not categories:
        raise LoaderError(f"{config}: no annotation_span_categories list")
    names = []
    for index, category in enumerate(categories):
        name = category.get("name") if isinstance(category, dict) else category
        if not name:
            raise LoaderError(f"{config}: annotation_span_categories[{index}] has no name")
        names.append(str(name))
    return names


def task_id_of(record: Mapping[str, Any]) -> str:
    """``<dataset>/<split>/<example_idx>/<setup_id>``: one annotated output.

    Files that also carry ``orig_example_idx`` (the MT campaign reuses ``example_idx`` for
    different source segments) get ``#<orig_example_idx>`` appended.
    """
    task_id = "/".join(str(record.get(key)) for key in ID_FIELDS)
    if record.get("orig_example_idx") is not None:
        task_id += f"#{record['orig_example_idx']}"
    return task_id


def load_span_annotation(
    path: str | Path,
    *,
    config: str | Path | None = None,
    outputs: Mapping[str, str] | None = None,
    project: str | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> dict[str, pd.DataFrame]:
    """Tidy tables of one factgenie ``.jsonl`` file and its category config.

    ``config`` defaults to the ``.config.yaml`` beside the file; ``project`` to the file
    name without ``annotations_human_`` and ``.jsonl`` (``d2t-eval_iaa``). Returns
    ``{"tasks", "judgments", "spans", "problems"}``.
    """
    path = Path(path)
    config = Path(config) if config is not None else config_path_for(path)
    if not config.exists():
        raise LoaderError(f"{path}: no category config (looked for {config})")
    categories = span_categories(config)
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    project = project or stem.removeprefix("annotations_human_")
    out = Collector(project)
    tasks: dict[str, dict[str, Any]] = {}
    seen: set[tuple[str, str]] = set()
    for line_number, record in iter_jsonl(path):
        task_id = task_id_of(record)
        if task_id not in tasks:
            tasks[task_id] = {
                "project": project,
                "task_id": task_id,
                "schema": schema,
                "key": task_id,
                **{key: record.get(key) for key in (*ID_FIELDS, "orig_example_idx") if key in record},
            }
            if outputs is not None:
                tasks[task_id]["output"] = outputs.get(task_id)
        annotations = record.get("annotations")
        if annotations is None:
            annotations = []
        if not isinstance(annotations, list):
            out.problem(path, line_number, task_id, "bad_annotations", "annotations is not a list; skipped", warn=True)
            continue
        group = record.get("annotator_group")
        annotator = f"group_{group}" if group is not None else f"line_{line_number}"
        if (task_id, annotator) in seen:
            out.problem(path, line_number, task_id, "repeated_annotation", f"{annotator} annotated this output again")
        seen.add((task_id, annotator))
        base = judgment_base(project, task_id, f"{stem}:{line_number}", annotator, HUMAN)
        text = outputs.get(task_id) if outputs is not None else None
        kept = sum(_add_span(out, path, line_number, task_id, base, span, categories, text) for span in annotations)
        out.judgment(base, SPAN_COUNT_ITEM, kept)
    out.tasks.extend(tasks.values())
    return out.frames()


def _add_span(
    out: Collector,
    path: Path,
    line_number: int,
    task_id: str,
    base: dict[str, Any],
    span: object,
    categories: list[str],
    output: str | None,
) -> bool:
    if not isinstance(span, dict):
        out.problem(path, line_number, task_id, "bad_span", "span is not an object; skipped")
        return False
    start, text, kind = span.get("start"), span.get("text"), span.get("type")
    if is_missing(start) or not isinstance(text, str) or isinstance(start, bool) or not isinstance(start, (int, float)):
        out.problem(path, line_number, task_id, "bad_span", f"span {span.get('id')!r} has no start or text; skipped")
        return False
    start = int(start)
    end = start + len(text)
    if isinstance(kind, int) and not isinstance(kind, bool) and 0 <= kind < len(categories):
        label = categories[kind]
    else:
        label = None
        out.problem(
            path, line_number, task_id, "unknown_type", f"type {kind!r} outside the {len(categories)} categories"
        )
    if output is not None and output[start:end] != text:
        out.problem(
            path,
            line_number,
            task_id,
            "offset_mismatch",
            f"text {text!r} != output[{start}:{end}] {output[start:end]!r}",
        )
    note = span.get("reason")
    out.spans.append(
        {
            **{k: base[k] for k in ("project", "task_id", "annotation_id", "annotator", "source")},
            "field": FIELD,
            "start": start,
            "end": end,
            "text": text,
            "label": label,
            "note": note if isinstance(note, str) and note.strip() else None,
        }
    )
    return True


def load_span_annotation_dir(
    folder: str | Path,
    *,
    outputs: Mapping[str, str] | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> dict[str, pd.DataFrame]:
    """Every ``*.jsonl`` of ``folder`` with its config, one project per file, concatenated."""
    files = sorted(Path(folder).glob("*.jsonl"))
    if not files:
        raise LoaderError(f"{folder}: no .jsonl files")
    return concat_loaded([load_span_annotation(f, outputs=outputs, schema=schema) for f in files])


@DATA_SETS.register(
    "span_annotation",
    path_help="annotations_human_<x>.jsonl [--config x.config.yaml], or a folder of them",
    options=("config", "schema"),
    cut=Cut(
        ("group", "stage"),
        origin="HotelCheckSpan's published analysis: per no-errors wording (group A/B) and annotation stage",
    ),
)
def read_span_annotation(
    path: Path, project: str | None = None, config: Path | None = None, schema: str | None = None
) -> dict[str, Any]:
    """``judgelab load span_annotation PATH``: one file (one project), or a folder (one per file)."""
    named = {"schema": schema} if schema else {}
    if Path(path).is_dir():
        if project or config:
            raise LoaderError(
                "--project-name and --config need a single .jsonl file (a folder gives one project per file)"
            )
        return load_span_annotation_dir(path, **named)
    return load_span_annotation(path, config=config, **({"project": project} if project else {}), **named)
