"""sync.importers: users' JSON, JSONL, CSV and TSV files into checked task rows, all or nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgelab.configs.schema import Schema, get_schema
from judgelab.sync.client import SyncError
from judgelab.sync.importers import KEY_FIELD, read_task_file, rows_from_records

FLAWS = get_schema("summary_flaws")  # title, post, summary required; score a number 0..10

ROW_A = {"title": "Lost my keys", "post": "I lost my keys at the gym.", "summary": "Keys lost.", "score": 7.5}
ROW_B = {"title": "New job", "post": "I start a new job on Monday.", "summary": "Job on Monday.", "score": 3}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_json_list(tmp_path):
    rows = read_task_file(write(tmp_path / "tasks.json", json.dumps([ROW_A, {"data": ROW_B}])), FLAWS)
    assert [r.data["title"] for r in rows] == ["Lost my keys", "New job"]
    assert [r.where for r in rows] == ["tasks.json item 0", "tasks.json item 1"]
    assert rows[0].data["subreddit"] == ""  # schema default


def test_json_object_is_one_task(tmp_path):
    rows = read_task_file(write(tmp_path / "one.json", json.dumps(ROW_A)), FLAWS)
    assert len(rows) == 1 and rows[0].data["score"] == 7.5


def test_json_that_is_neither_list_nor_object(tmp_path):
    with pytest.raises(SyncError, match="expected a JSON list"):
        read_task_file(write(tmp_path / "n.json", "42"), FLAWS)


def test_invalid_json_names_file_and_line(tmp_path):
    with pytest.raises(SyncError, match=r"broken\.json line 3: invalid JSON"):
        read_task_file(write(tmp_path / "broken.json", '[\n{"title": "a"},\n{"title": }\n]'), FLAWS)


def test_jsonl_with_a_bad_line_names_file_and_line(tmp_path):
    text = json.dumps(ROW_A) + "\n\n" + '{"title": "oops",\n' + json.dumps(ROW_B) + "\n"
    with pytest.raises(SyncError) as info:
        read_task_file(write(tmp_path / "tasks.jsonl", text), FLAWS)
    assert "tasks.jsonl line 3" in str(info.value)


def test_jsonl_reads_one_task_per_line(tmp_path):
    text = json.dumps(ROW_A) + "\n\n" + json.dumps(ROW_B) + "\n"
    rows = read_task_file(write(tmp_path / "tasks.jsonl", text), FLAWS)
    assert [r.where for r in rows] == ["tasks.jsonl line 1", "tasks.jsonl line 3"]


CSV_HEADER = "title,post,summary,score\n"


def test_csv_values_are_coerced(tmp_path):
    text = CSV_HEADER + 'Lost my keys,"I lost my keys, at the gym.",Keys lost.,7.5\n'
    rows = read_task_file(write(tmp_path / "tasks.csv", text), FLAWS)
    assert rows[0].data["post"] == "I lost my keys, at the gym."
    assert rows[0].data["score"] == 7.5
    assert rows[0].where == "tasks.csv line 2"


def test_csv_bad_value_on_line_4_names_line_and_field(tmp_path):
    text = CSV_HEADER + "a,post a,sum a,1\nb,post b,sum b,2\nc,post c,sum c,lots\n"
    with pytest.raises(SyncError) as info:
        read_task_file(write(tmp_path / "tasks.csv", text), FLAWS)
    message = str(info.value)
    assert "tasks.csv line 4" in message
    assert "'score'" in message
    assert "line 2" not in message and "line 3" not in message
    assert "nothing was imported" in message


def test_csv_with_more_values_than_headers(tmp_path):
    text = CSV_HEADER + "a,post a,sum a,1\nb,post b,sum b,2,extra\n"
    with pytest.raises(SyncError, match=r"tasks\.csv line 3: more values than header columns"):
        read_task_file(write(tmp_path / "tasks.csv", text), FLAWS)


def test_csv_with_fewer_values_reports_the_missing_required_field(tmp_path):
    text = CSV_HEADER + "a,post a\n"
    with pytest.raises(SyncError, match=r"tasks\.csv line 2: field 'summary'"):
        read_task_file(write(tmp_path / "tasks.csv", text), FLAWS)


def test_tab_separated_tsv(tmp_path):
    text = "title\tpost\tsummary\tscore\nKeys, again\tI lost my keys.\tKeys lost.\t9\n"
    rows = read_task_file(write(tmp_path / "tasks.tsv", text), FLAWS)
    assert rows[0].data["title"] == "Keys, again"
    assert rows[0].data["score"] == 9.0


def test_csv_with_utf8_bom_and_accents(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(("\ufeff" + CSV_HEADER + "Café,Un café à Paris.,Café.,5\n").encode("utf-8"))
    rows = read_task_file(path, FLAWS)
    assert rows[0].data["title"] == "Café"  # the BOM is not part of the first header


def test_non_utf8_file_is_a_clear_error(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes((CSV_HEADER + "Café,Un café à Paris.,Café.,5\n").encode("latin-1"))
    with pytest.raises(SyncError) as info:
        read_task_file(path, FLAWS)
    assert "latin1.csv" in str(info.value)
    assert "not UTF-8" in str(info.value)


def test_missing_file_and_unsupported_type(tmp_path):
    with pytest.raises(SyncError, match="no such file"):
        read_task_file(tmp_path / "absent.csv", FLAWS)
    with pytest.raises(SyncError, match=r"unsupported file type '\.txt'"):
        read_task_file(write(tmp_path / "tasks.txt", "hello"), FLAWS)


def test_duplicate_id_names_both_places(tmp_path):
    rows = [{**ROW_A, "id": "t1"}, {**ROW_B, "id": "t2"}, {**ROW_B, "id": "t1"}]
    with pytest.raises(SyncError) as info:
        read_task_file(write(tmp_path / "dup.json", json.dumps(rows)), FLAWS)
    message = str(info.value)
    assert "dup.json item 2" in message
    assert "'t1'" in message
    assert "dup.json item 0" in message


def test_same_content_twice_without_id_is_a_duplicate():
    with pytest.raises(SyncError, match="duplicate"):
        rows_from_records([("a.json item 0", ROW_A), ("a.json item 1", dict(ROW_A))], FLAWS)


def test_one_bad_row_stops_the_whole_file_and_every_bad_row_is_listed():
    records = [
        ("f.json item 0", ROW_A),
        ("f.json item 1", {**ROW_B, "score": "high"}),
        ("f.json item 2", ROW_B),
        ("f.json item 3", "not an object"),
    ]
    with pytest.raises(SyncError) as info:
        rows_from_records(records, FLAWS)
    message = str(info.value)
    assert message.startswith("2 bad row(s) for schema summary_flaws")
    assert "f.json item 1: field 'score'" in message
    assert "f.json item 3: expected an object, got str" in message
    assert "item 0" not in message and "item 2" not in message


def test_many_bad_rows_are_summarised():
    records = [(f"f.json item {i}", {"title": "t"}) for i in range(13)]
    with pytest.raises(SyncError) as info:
        rows_from_records(records, FLAWS)
    assert "13 bad row(s)" in str(info.value)
    assert "... and 3 more" in str(info.value)


def test_keys_are_stable_and_use_the_id_field():
    first = rows_from_records([("a item 0", ROW_A), ("a item 1", {**ROW_B, "id": 17})], FLAWS)
    again = rows_from_records([("b line 2", dict(ROW_A)), ("b line 3", {**ROW_B, "id": 17})], FLAWS)
    assert [r.key for r in first] == [r.key for r in again]
    assert first[1].key == "17"
    assert first[0].key.startswith("sha1:")
    other = rows_from_records([("c", {**ROW_A, "summary": "Keys found."})], FLAWS)
    assert other[0].key != first[0].key


def test_csv_and_json_of_the_same_task_get_the_same_key(tmp_path):
    csv_rows = read_task_file(
        write(tmp_path / "t.csv", CSV_HEADER + "Lost my keys,I lost my keys at the gym.,Keys lost.,7.5\n"), FLAWS
    )
    json_rows = read_task_file(write(tmp_path / "t.json", json.dumps([ROW_A])), FLAWS)
    assert csv_rows[0].key == json_rows[0].key


def test_as_import_carries_the_key_and_given_predictions():
    prediction = {"model_version": "m1", "result": []}
    (row,) = rows_from_records([("x", {"data": ROW_A, "predictions": [prediction]})], FLAWS)
    task = row.as_import()
    assert task["meta"] == {KEY_FIELD: row.key}
    assert task["predictions"] == [prediction]
    assert "annotations" not in task
    (flat,) = rows_from_records([("y", ROW_A)], FLAWS)
    assert "predictions" not in flat.as_import()


def test_story_lines_from_a_csv_column(tmp_path):
    story = get_schema("story_consistency")
    text = 'story,lines\n"A short story.","[""Line one."", {""text"": ""Line two."", ""alternate"": ""Alt.""}]"\n'
    (row,) = read_task_file(write(tmp_path / "s.csv", text), story)
    assert row.data["lines"] == [{"text": "Line one."}, {"text": "Line two.", "alternate": "Alt."}]
    assert row.data["alternates"] == [{"line": 1, "text": "Line two.", "alternate": "Alt."}]


def test_schema_is_what_decides_required_fields(tmp_path):
    loose = Schema(name="loose", folder=tmp_path, config_xml="<View/>", meta={"data_fields": {}})
    rows = read_task_file(write(tmp_path / "x.csv", "anything\nvalue\n"), loose)
    assert rows[0].data == {"anything": "value"}


def test_line_numbers_count_physical_lines_after_a_multiline_cell(tmp_path):
    text = CSV_HEADER + 'a,"first paragraph\nsecond paragraph",sum a,1\nb,post b,sum b,oops\n'
    with pytest.raises(SyncError) as info:
        read_task_file(write(tmp_path / "multi.csv", text), FLAWS)
    assert "multi.csv line 4: field 'score'" in str(info.value)
