"""A report's long tables wait on disk, not in memory, until their CSV files are written.

A big project's report keeps a table of every annotation (each quick submission's speed, each
attention check's answer): hundreds of thousands of rows that every later section would otherwise
run beside. Those tables are written to a temporary file when their section is done and read back
when the report writes its CSV files. Here every table is kept on disk (``spool_rows=1``) and the
report must be the same, file for file and byte for byte, as one that keeps every table in memory
(``spool_rows=0``); the temporary files are gone once the report is written.
"""

from __future__ import annotations

import filecmp
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from test_report_sentences import Study, make_study

from judgelab.analysis.report import build_report
from judgelab.analysis.report.blocks import Section, Table, spool_tables
from judgelab.analysis.report.data import ReportOptions
from judgelab.configs.schema import get_schema

#: (study, facets): the likert study's report also cut by the summarising model, whose cells' tables
#: are merged before they go to disk
STUDIES = [
    (Study("hotel_spans", 40, 3, True, judges=2, arm_tasks=3), ()),
    (Study("likert_rubric_es", 30, 3, True, judges=1, review=True), ()),
    (Study("likert_rubric_es", 30, 3, True, judges=1), ("model",)),
    (Study("story_consistency", 12, 2, True, judges=1), ()),
]


@pytest.fixture
def spool_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder of this test's own for the spooled tables (the suite's other workers
    write theirs elsewhere)."""
    folder = tmp_path / "spool"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.mark.parametrize(("study", "by"), STUDIES, ids=[s.id + "".join(f"-by-{f}" for f in by) for s, by in STUDIES])
def test_a_report_with_every_table_on_disk_is_the_same_report(
    study: Study, by: tuple[str, ...], tmp_path: Path, spool_folder: Path
) -> None:
    tables, _ = make_study(study)
    schemas = {study.schema: get_schema(study.schema).meta}
    paths, waiting = {}, {}
    for rows in (0, 1):
        seen: list[int] = []  # the tables waiting on disk after each section
        paths[rows] = build_report(
            tables, schemas, tmp_path / f"spool_{rows}", options=ReportOptions(n_boot=20, spool_rows=rows, by=by),
            on_section=lambda seen=seen: seen.append(len(list(spool_folder.iterdir()))),
        )  # fmt: skip
        waiting[rows] = max(seen)
    assert waiting[0] == 0 and waiting[1] >= 5
    in_memory, on_disk = paths[0].markdown.parent, paths[1].markdown.parent
    names = sorted(p.name for p in in_memory.iterdir())
    assert names == sorted(p.name for p in on_disk.iterdir())
    assert len([n for n in names if n.endswith(".csv")]) >= 5
    _, differ, errors = filecmp.cmpfiles(in_memory, on_disk, names, shallow=False)
    assert differ == [] and errors == []
    assert list(spool_folder.iterdir()) == []  # every table's file went with the report


def test_a_table_on_disk_gives_back_the_same_values_and_types(spool_folder: Path) -> None:
    data = pd.DataFrame(
        {
            "project": [7, 7, 7],
            "annotator": pd.array(["a", None, "c"], dtype="string"),
            "value": pd.Series([1, "two", None], dtype=object),  # an answer column mixes types
            "speed": [0.5, float("nan"), 2.0],
            "at": pd.to_datetime(["2026-01-01T10:00:00Z", None, "2026-01-02T11:30:00Z"], utc=True),
            "label": pd.Categorical(["x", "y", "x"]),
        }
    )
    shown = data.head(1)
    section = Section(
        "Checks",
        [Table("long", "Every answer", shown, data=data), Table("answers", "Answers", data, csv_only=True)],
        [Section("Inside", [Table("small", "Two rows", data.head(2))])],
    )
    spool_tables([section], 2)
    long, answers = section.blocks
    assert long.spooled is not None and answers.spooled is not None
    assert len(list(spool_folder.iterdir())) == 2
    pd.testing.assert_frame_equal(long.csv_data, data)
    pd.testing.assert_frame_equal(answers.csv_data, data)
    assert long.shown is shown  # what the page shows stays as it was
    assert answers.shown.empty and list(answers.shown.columns) == list(data.columns)
    small = section.subsections[0].blocks[0]
    assert small.spooled is None  # shown on the page, and under the threshold
    del long, answers, section
    assert list(spool_folder.iterdir()) == []
