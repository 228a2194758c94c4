"""Generated task data through the whole path: a file (JSON Lines, JSON or CSV) -> import into the
session's real Label Studio -> pre-annotation by the real backend (chunked push) -> sync into
tidy tables. Whatever the text (emoji, right-to-left, combining marks, control characters,
CRLF, keys that differ only in case or that are named like the tables' own columns, numbers),
every field comes back as imported, every task gets one prediction, nothing is doubled; a
lone surrogate is refused at the file, before anything is sent.

Bounded: fifteen examples of one to three tasks (up to 45 tasks), derandomised (the same examples on
every run), no example database written."""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgelab.configs.schema import get_schema
from judgelab.sync.backend_link import connect_backend
from judgelab.sync.bulk_predict import push_predictions
from judgelab.sync.client import SyncError
from judgelab.sync.export import read_tables
from judgelab.sync.importers import read_tasks
from judgelab.sync.incremental import sync_tables
from judgelab.sync.preannotate import PreannotateOptions
from judgelab.sync.projects import ensure_project, import_rows

pytestmark = pytest.mark.integration

LIKERT = get_schema("likert_rubric_es")
TITLE = "Generated task data"
FIXED = {"project", "task_id", "schema", "key", "extra_fields"}

TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=60,
).filter(lambda s: s.strip())
TRICKY = st.sampled_from(
    ["👩‍👩‍👧 café", "مرحبا بالعالم", "e\u0301\u0301", "line one\r\nline two", "tab\there", "\u202eRTL override", "ß"]
)
VALUE_TEXT = st.one_of(TEXT, TRICKY)
KEY = st.one_of(
    st.sampled_from(["Summary", "ARTICLE", "Model", "key", "Project", "extra_fields", "notes", "Notes"]),
    st.text(alphabet=st.characters(whitelist_categories=("Ll", "Lu", "Nd")), min_size=1, max_size=12),
)
SCALAR = st.one_of(
    VALUE_TEXT, st.integers(-(2**40), 2**40), st.floats(allow_nan=False, allow_infinity=False), st.booleans()
)


@st.composite
def task_files(draw):
    """(format, tasks): one to three tasks with the schema's fields and a few extra ones."""
    fmt = draw(st.sampled_from(["jsonl", "json", "csv"]))
    values = VALUE_TEXT if fmt == "csv" else SCALAR
    keys = KEY.filter(lambda k: k not in ("article", "summary", "id"))
    tasks = []
    for _ in range(draw(st.integers(1, 3))):
        extra = draw(st.dictionaries(keys, values, max_size=4))
        tasks.append({"article": draw(VALUE_TEXT), "summary": draw(VALUE_TEXT), **extra})
    return fmt, tasks


_serial = itertools.count()


def _write(folder: Path, fmt: str, tasks: list[dict]) -> Path:
    path = folder / f"generated-{next(_serial)}.{fmt}"
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tasks), encoding="utf-8")
    elif fmt == "json":
        path.write_text(json.dumps(tasks, ensure_ascii=False, indent=1), encoding="utf-8")
    else:
        columns = list(dict.fromkeys(k for t in tasks for k in t))
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, columns)
            writer.writeheader()
            writer.writerows(tasks)
    return path


def _cell(value):
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else value


def _stored(row, field: str):
    """A task's field as the tables hold it: its own column (text), else in extra_fields (JSON)."""
    extra = json.loads(row["extra_fields"]) if isinstance(row.get("extra_fields"), str) else {}
    if field in extra:
        return "extra", extra[field]
    return "column", row[field]


@pytest.fixture(scope="module")
def setup(live_stack, tmp_path_factory):
    client = live_stack.client
    project = ensure_project(client, LIKERT, title=TITLE)
    link = connect_backend(client, project.id, live_stack.backend_url)
    return {
        "client": client,
        "project": project.id,
        "version": link.model_version,
        "backend": live_stack.backend_url,
        "files": tmp_path_factory.mktemp("generated"),
        "out": tmp_path_factory.mktemp("tables") / "tables",
    }


@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(generated=task_files())
def test_generated_tasks_come_back_as_imported(setup, generated):
    fmt, tasks = generated
    client, pid = setup["client"], setup["project"]
    path = _write(setup["files"], fmt, tasks)
    try:
        _, rows = read_tasks(path, LIKERT, "generic")
    except SyncError as exc:  # the same content twice in one file is the one refusal expected here
        assert "duplicate id" in str(exc), exc
        return
    rows = list(rows)
    import_rows(client, pid, rows)
    report = push_predictions(client, pid, setup["backend"], setup["version"], PreannotateOptions(chunk_size=10))
    assert report.unfinished == 0 and not report.failures, report
    sync = sync_tables(client, setup["out"], [pid])
    by_key = read_tables(setup["out"]).tasks.set_index("key")
    assert by_key.index.is_unique and sync.counts["tasks"] == len(by_key)
    predictions = pd.read_parquet(setup["out"] / "predictions.parquet")
    predictions = predictions[predictions.model_version == setup["version"]]
    for row in rows:
        stored = by_key.loc[row.key]
        for field, value in row.data.items():
            where, got = _stored(stored, field)
            expected = _cell(value)
            if where == "column":  # text columns hold text
                expected = expected if isinstance(expected, str) else str(expected)
            assert got == expected, (field, where)
        if fmt != "csv":  # the reader gave back what the file held
            original = next(
                t for t in tasks if (t["article"], t["summary"]) == (row.data["article"], row.data["summary"])
            )
            assert {k: row.data[k] for k in original} == original
        assert (predictions.task_id == stored["task_id"]).sum() == 1  # one prediction, not two


def test_a_lone_surrogate_is_refused_at_the_file(setup):
    path = setup["files"] / "surrogate.jsonl"
    path.write_text('{"article": "a", "summary": "\\udc80"}\n', encoding="utf-8")
    with pytest.raises(SyncError, match="surrogate"):
        read_tasks(path, LIKERT, "generic")
