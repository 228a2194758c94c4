"""Published human-evaluation data sets as tidy tables, without Label Studio.

Every loader takes the path the user gives and returns a dict of DataFrames:
``tasks``, ``judgments``, ``spans`` (the tidy-table contract shared with ``sync.tidy``) and
``problems`` (``file, line, task_id, kind, message``: what was skipped or looked wrong).
Known quirks of the real files are handled and recorded, never raised; a file that is not
in the expected format raises :class:`LoaderError` naming the file and line.

=====================================  =========================================  ====================
loader                                 files                                      schema
=====================================  =========================================  ====================
:func:`load_storysumm`                 ``storysumm.json`` (+ ``predictions/``)    ``story_consistency``
:func:`load_storysumm_predictions`     ``predictions/<judge>.json``               ``story_consistency``
:func:`load_evaluation_interface`      ``annotations_pl_latest.json``,            ``story_consistency``
                                       ``combined.json``
:func:`load_basse`                     ``BASSE.<lang>[.round_0].jsonl``           ``likert_rubric_es``
:func:`load_basse_folder`              a folder of them: a project per language   ``likert_rubric_es``
:func:`load_span_annotation`           ``annotations_human_<x>.jsonl`` +          ``hotel_spans``
                                       ``.config.yaml``                           (span data)
=====================================  =========================================  ====================

Example::

    from judgelab.analysis.loaders import load_storysumm
    tables = load_storysumm("data/storysumm/storysumm.json", predictions="data/storysumm/predictions")
    tables["judgments"].query("item == 'faithful'").groupby("source").size()

:func:`load_path` picks the loader from the file name.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from judgelab.analysis.loaders.basse import load_basse, load_basse_folder
from judgelab.analysis.loaders.common import (
    JUDGMENT_COLUMNS,
    PROBLEM_COLUMNS,
    SPAN_COLUMNS,
    TASK_COLUMNS,
    LoaderError,
    LoaderWarning,
    concat_loaded,
)
from judgelab.analysis.loaders.evaluation_interface import load_evaluation_interface
from judgelab.analysis.loaders.span_annotation import load_span_annotation, load_span_annotation_dir
from judgelab.analysis.loaders.storysumm import load_storysumm, load_storysumm_predictions

__all__ = [
    "JUDGMENT_COLUMNS",
    "PROBLEM_COLUMNS",
    "SPAN_COLUMNS",
    "TASK_COLUMNS",
    "LoaderError",
    "LoaderWarning",
    "concat_loaded",
    "load_basse",
    "load_basse_folder",
    "load_evaluation_interface",
    "load_path",
    "load_span_annotation",
    "load_span_annotation_dir",
    "load_storysumm",
    "load_storysumm_predictions",
]


def load_path(path: str | Path) -> dict[str, pd.DataFrame]:
    """Load a known file or folder by its name.

    - ``storysumm.json`` (with ``predictions/`` beside it when present);
    - ``annotations_pl_latest.json`` (with ``combined.json`` beside it when present);
    - ``BASSE*.jsonl``;
    - a ``.jsonl`` with a ``.config.yaml`` beside it (factgenie spans), or a folder of them.

    Raises :class:`LoaderError` for anything else.
    """
    path = Path(path)
    if path.is_dir():
        if any(path.glob("*.config.yaml")):
            return load_span_annotation_dir(path)
        raise LoaderError(f"{path}: a folder is only understood when it holds factgenie .jsonl + .config.yaml files")
    if not path.exists():
        raise LoaderError(f"{path}: no such file")
    name = path.name
    if name.endswith(".json") and "storysumm" in name.lower():
        predictions = path.parent / "predictions"
        return load_storysumm(path, predictions=predictions if predictions.is_dir() else None)
    if name == "annotations_pl_latest.json" or name.startswith("annotations_pl"):
        combined = path.parent / "combined.json"
        return load_evaluation_interface(path, combined=combined if combined.exists() else None)
    if name.endswith(".jsonl") and name.upper().startswith("BASSE"):
        return load_basse(path)
    if name.endswith(".jsonl"):
        return load_span_annotation(path)
    raise LoaderError(f"{path}: unknown data set; use one of the load_* functions of analysis.loaders")
