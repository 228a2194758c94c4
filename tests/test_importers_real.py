"""The seed importers on the real published files in ../shared/data (skipped when absent).

Counts are printed (run with ``-s`` to see them); nothing here talks to Label Studio.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from shared_data import SHARED_DATA

from judgelab.sync.importers import detect_format, read_tasks
from judgelab.sync.importers.formats.basse import read_basse
from judgelab.sync.importers.formats.storysumm import read_storysumm

STORYSUMM = SHARED_DATA / "storysumm" / "storysumm.json"
BASSE = SHARED_DATA / "basse"


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is absent (real data lives beside the checkout)")
    return path


def test_storysumm_real_file_96_tasks():
    rows = read_storysumm(need(STORYSUMM))
    print(f"\nstorysumm.json: {rows.summary()}")
    assert len(rows) == 96 and not rows.skipped
    assert detect_format(STORYSUMM) == "storysumm"
    # the item whose line count differs from its errors count is a task like the others
    assert all(row.data["story"].strip() and row.data["lines"] for row in rows)
    assert all(row.data["title"].startswith("story ") for row in rows)
    lines = [len(row.data["lines"]) for row in rows]
    print(f"  lines per summary: min {min(lines)}, max {max(lines)}, total {sum(lines)}")


@pytest.mark.parametrize(
    ("name", "tasks", "annotations"),
    [
        ("BASSE.es.jsonl", 990, 1665),
        ("BASSE.eu.jsonl", 990, 1665),
        ("BASSE.es.round_0.jsonl", 210, 630),
        ("BASSE.eu.round_0.jsonl", 210, 596),
    ],
)
def test_basse_real_files(name, tasks, annotations):
    path = need(BASSE / name)
    rows = read_basse(path, with_annotations=True)
    count = sum(len(row.annotations or []) for row in rows)
    raters = Counter(a["completed_by"]["email"] for row in rows for a in row.annotations or [])
    missing = sum(
        5 - len(a["result"]) for row in rows for a in row.annotations or []
    )  # criteria left out of an annotation (NaN)
    print(
        f"\n{name}: {rows.summary()}, {count} annotations, raters {dict(sorted(raters.items()))}, "
        f"{missing} NaN criteria left out"
    )
    assert len(rows) == tasks and not rows.skipped
    assert count == annotations
    assert set(raters) <= {f"basse-rater-{i}@judgelab.local" for i in range(3)}
    assert {row.data["model"] for row in rows} >= {"claude", "commandr", "gpt4o", "reka", "llama3", "subhead"}
    assert detect_format(path) == "basse"


def test_basse_real_nan_ratings_leave_criteria_out():
    rows = read_basse(need(BASSE / "BASSE.es.jsonl"), with_annotations=True)
    partial = [a for row in rows for a in row.annotations or [] if len(a["result"]) < 5]
    print(f"\nBASSE.es.jsonl: {len(partial)} annotation(s) with a NaN criterion left out")
    assert all({r["value"]["choices"][0] for r in a["result"]} <= set("12345") for a in partial)


def test_partisanlens_is_originals_only_and_not_a_wide_file():
    path = need(SHARED_DATA / "partisanlens" / "train.csv")
    assert detect_format(path) == "generic"  # no {model}_{type} columns: the wide importer does not apply
    with pytest.raises(Exception, match="--schema is required"):
        read_tasks(path, None)
