"""Counts per annotator and per item of every facet cell in one grouped pass
(``analysis.counts.*_by_group``): on a hand-built table of three cells, each cell's counts are
the ones worked out by hand and equal the count on that cell's rows alone."""

from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.testing import assert_frame_equal

from judgelab.analysis.counts import (
    annotation_counts_per_annotator,
    annotation_counts_per_annotator_by_group,
    judgment_counts_per_item,
    judgment_counts_per_item_by_group,
)
from judgelab.analysis.grouped import RowGroups


def _judgment(cell, task, annotator, item, *, source="human", cancelled=False, annotation=""):
    return {
        "project": 1,
        "task_id": task,
        "annotation_id": annotation or f"{source}:{task}:{annotator}",
        "annotator": annotator,
        "source": source,
        "item": item,
        "value": "1",
        "was_cancelled": cancelled,
        "_cell": cell,
    }


def _table() -> tuple[pd.DataFrame, pd.DataFrame, RowGroups]:
    rows = [
        # cell 0: a rates t1 and t2 (SP, SC), b rates t1 (SP) and skips t2; the model rates t1
        _judgment(0, "t1", "a", "SP"),
        _judgment(0, "t1", "a", "SC"),
        _judgment(0, "t2", "a", "SP"),
        _judgment(0, "t2", "a", "SC"),
        _judgment(0, "t1", "b", "SP"),
        _judgment(0, "t2", "b", "SP", cancelled=True),
        _judgment(0, "t1", "model:v1", "SP", source="model:v1"),
        # cell 1: b twice on u1 (two annotations), c on u1
        _judgment(1, "u1", "b", "SP", annotation="u1:b:1"),
        _judgment(1, "u1", "b", "SP", annotation="u1:b:2"),
        _judgment(1, "u1", "c", "SC"),
        # cell 2: only a cancelled annotation
        _judgment(2, "v1", "d", "SP", cancelled=True),
    ]
    judgments = pd.DataFrame(rows)
    codes = judgments.pop("_cell").to_numpy(dtype=np.int64)
    spans = pd.DataFrame(
        [
            {"project": 1, "task_id": "t1", "annotation_id": "human:t1:a", "annotator": "a", "source": "human"},
            {"project": 1, "task_id": "u1", "annotation_id": "u1:s", "annotator": "e", "source": "human"},
        ]
    )
    groups = RowGroups({"judgments": codes, "spans": np.array([0, 1], dtype=np.int64)}, 3)
    return judgments, spans, groups


def _cell(frame: pd.DataFrame, groups: RowGroups, table: str, cell: int) -> pd.DataFrame:
    return frame[groups.codes[table] == cell]


def test_annotations_per_annotator_per_cell():
    judgments, spans, groups = _table()
    results = annotation_counts_per_annotator_by_group(judgments, spans, groups, source="human")
    first = results[0].set_index("annotator")
    assert first.loc["a", ["n_annotations", "n_tasks", "n_judgments", "n_spans"]].tolist() == [2, 2, 4, 1]
    assert first.loc["b", ["n_annotations", "n_cancelled", "n_judgments"]].tolist() == [1, 1, 1]
    assert "model:v1" not in first.index  # human rows only
    second = results[1].set_index("annotator")
    assert second.loc["b", "n_annotations"] == 2 and second.loc["e", "n_spans"] == 1  # e only marked a span
    for cell, result in enumerate(results):
        human = _cell(judgments, groups, "judgments", cell)
        human_spans = _cell(spans, groups, "spans", cell)
        alone = annotation_counts_per_annotator(
            human[human["source"] == "human"], human_spans[human_spans["source"] == "human"]
        )
        assert_frame_equal(result, alone)
    # cell 2: an annotator whose only annotation was cancelled is listed, as in that cell's own count
    assert results[2][["annotator", "n_annotations", "n_cancelled"]].values.tolist() == [["d", 0, 1]]


def test_judgments_per_item_per_cell():
    judgments, _, groups = _table()
    results = judgment_counts_per_item_by_group(judgments, None, groups)
    first = results[0].set_index("item")
    assert first.loc["SP", ["n_judgments", "n_annotators", "n_tasks"]].tolist() == [3, 2, 2]  # a t1 t2, b t1
    assert results[1].set_index("item").loc["SP", "n_judgments"] == 2
    assert results[2].empty
    for cell, result in enumerate(results):
        assert_frame_equal(result, judgment_counts_per_item(_cell(judgments, groups, "judgments", cell)))
