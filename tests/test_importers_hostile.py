"""Files as people have them, and files made to break the importer: each is read into checked
rows or refused with a message naming the file and line, before anything reaches Label Studio.
The CLI cases run against a listener that only
counts requests, so "nothing was created" is checked, not assumed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.configs.schema import get_schema
from judgelab.sync.cli import main
from judgelab.sync.client import SyncError
from judgelab.sync.importers import read_tasks
from judgelab.sync.importers.records import iter_records

LIKERT = get_schema("likert_rubric_es")  # article and summary required
FLAWS = get_schema("summary_flaws")  # title, post, summary required; score a number 0..10
ARTICLE = "El pleno aprobó el plan de 42 millones, con el voto en contra de la oposición."


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def rows_of(path: Path, schema=LIKERT, **kwargs):
    return list(read_tasks(path, schema, "generic", **kwargs)[1])


def cli(*args: str):
    return CliRunner().invoke(main, ["--url", "http://127.0.0.1:9", "--token", "x", *args])


# --- files from Excel and other people's tools -----------------------------------------------


def test_semicolon_csv_with_a_bom_as_excel_writes_it(tmp_path):
    text = f'\ufeffarticle;summary;model\r\n"{ARTICLE}";"Se aprueba; con votos en contra.";claude\r\n'
    (row,) = rows_of(write(tmp_path / "excel.csv", text))
    assert row.data["article"] == ARTICLE and row.data["summary"] == "Se aprueba; con votos en contra."
    assert row.data["model"] == "claude" and row.where == "excel.csv line 2"


def test_utf16_tab_separated_text_as_excel_saves_unicode_text(tmp_path):
    path = write(tmp_path / "unicode.csv", f"article\tsummary\r\n{ARTICLE}\tResumen, breve.\r\n", "utf-16")
    (row,) = rows_of(path)
    assert row.data["summary"] == "Resumen, breve."


def test_crlf_inside_a_quoted_cell_survives(tmp_path):
    text = 'article,summary\r\n"Primera línea.\r\nSegunda línea.","Uno.\r\nDos."\r\n'
    (row,) = rows_of(write(tmp_path / "crlf.csv", text))
    assert row.data["article"] == "Primera línea.\r\nSegunda línea." and row.data["summary"] == "Uno.\r\nDos."


def test_a_cell_longer_than_the_csv_modules_default_limit(tmp_path):
    long_article = "Palabra " * 40_000  # 320,000 characters, over csv's 131,072
    (row,) = rows_of(write(tmp_path / "long.csv", f'article,summary\n"{long_article}",Breve.\n'))
    assert row.data["article"] == long_article


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("empty.csv", "", "empty.csv: no tasks"),
        ("header.csv", "article,summary\r\n", "header.csv: no tasks"),
        ("blank.jsonl", "\n\n", "blank.jsonl: no tasks"),
        ("list.json", "[]", "list.json: no tasks"),
    ],
)
def test_empty_or_header_only_files_are_refused_before_connecting(tmp_path, name, text, says):
    path = write(tmp_path / name, text)
    with pytest.raises(SyncError, match=says):
        read_tasks(path, LIKERT, "generic")
    result = cli("import", "--schema", "likert_rubric_es", str(path))  # 127.0.0.1:9 is closed
    assert result.exit_code == 1 and says in result.output and "cannot reach" not in result.output


def test_header_only_csv_names_its_columns(tmp_path):
    with pytest.raises(SyncError, match=r"a header line \(article, summary\) but no rows"):
        read_tasks(write(tmp_path / "h.csv", "article,summary\n"), LIKERT, "generic")


def test_every_row_skipped_is_no_tasks_either(tmp_path):
    with pytest.raises(SyncError, match="no tasks"):
        read_tasks(write(tmp_path / "bad.csv", "article,summary\n,sin noticia\n"), LIKERT, "generic", skip_bad=True)


def test_renamed_columns_are_listed_with_a_map_suggestion(tmp_path):
    text = f'texto,resumen,fuente\n"{ARTICLE}",Se aprueba el plan.,agencia\n'
    with pytest.raises(SyncError) as info:
        read_tasks(write(tmp_path / "noticias.csv", text), LIKERT, "generic")
    message = str(info.value)
    assert "noticias.csv" in message and "article, summary" in message
    assert "texto, resumen, fuente" in message
    assert "--map article=texto --map summary=resumen" in message
    mapped = rows_of(tmp_path / "noticias.csv", mapping={"article": "texto", "summary": "resumen"})
    assert mapped[0].data["summary"] == "Se aprueba el plan."


def test_a_column_in_other_case_is_suggested_too(tmp_path):
    path = write(tmp_path / "upper.jsonl", json.dumps({"Article": ARTICLE, "Summary": "Breve."}) + "\n")
    with pytest.raises(SyncError, match="--map article=Article --map summary=Summary"):
        read_tasks(path, LIKERT, "generic")


def test_a_json_object_where_a_list_is_expected(tmp_path):
    tasks = [{"article": ARTICLE, "summary": "Breve."}] * 2
    path = write(tmp_path / "wrapped.json", json.dumps({"tasks": tasks, "version": 2}))
    with pytest.raises(SyncError) as info:
        read_tasks(path, LIKERT, "generic")
    message = str(info.value)
    assert "wrapped.json" in message and "one JSON object" in message and "list" in message
    assert "'tasks' holds a list of 2 objects" in message


def test_one_json_object_that_is_a_task_still_imports(tmp_path):
    (row,) = rows_of(write(tmp_path / "one.json", json.dumps({"article": ARTICLE, "summary": "Breve."})))
    assert row.data["summary"] == "Breve."


# --- hostile content ----------------------------------------------------------------------------


def test_a_lone_surrogate_is_a_bad_row_named_by_file_line_and_field(tmp_path):
    good = json.dumps({"article": ARTICLE, "summary": "Bien."})
    bad = '{"article": "' + ARTICLE + '", "summary": "roto \\ud800 aqui"}'
    path = write(tmp_path / "surrogate.jsonl", "\n".join([good, good.replace("Bien", "Otro"), bad]) + "\n")
    with pytest.raises(SyncError) as info:
        read_tasks(path, LIKERT, "generic")
    assert "surrogate.jsonl line 3: field 'summary'" in str(info.value) and "surrogate" in str(info.value)
    rows = read_tasks(path, LIKERT, "generic", skip_bad=True)[1]
    assert len(rows) == 2 and "line 3" in rows.skipped[0]


def test_a_lone_surrogate_in_a_key_or_a_nested_value_too(tmp_path):
    bad = '{"article": "A", "summary": "B", "meta": {"notes": ["ok", "\\udfff"]}}'
    with pytest.raises(SyncError, match=r"s\.jsonl line 1: field 'meta'"):
        read_tasks(write(tmp_path / "s.jsonl", bad + "\n"), LIKERT, "generic")


def test_a_number_json_cannot_carry_is_a_bad_row_named_by_file_line_and_field(tmp_path):
    """`1e999` reads as infinity, which JSON cannot write: the import used to stop there, in the
    middle of the file, every request before it sent. The check refuses it before anything is."""
    good = json.dumps({"article": ARTICLE, "summary": "Bien."})
    bad = '{"article": "A", "summary": "B", "meta": {"score": [1, -1e999]}}'
    path = write(tmp_path / "inf.jsonl", "\n".join([good, bad]) + "\n")
    with pytest.raises(SyncError, match=r"inf\.jsonl line 2: field 'meta': -inf is a number JSON cannot carry"):
        read_tasks(path, LIKERT, "generic", stream=True)
    rows = read_tasks(path, LIKERT, "generic", stream=True, skip_bad=True)[1]
    assert [line.where for line in rows.import_lines()] == [row.where for row in rows] == ["inf.jsonl line 1"]
    assert "line 2" in rows.skipped[0]
    result = cli("import", "--schema", "likert_rubric_es", "--title", "T", str(path))
    assert result.exit_code != 0 and "inf.jsonl line 2: field 'meta'" in result.output
    assert "nothing was imported" in result.output


def test_what_the_check_writes_is_what_the_import_sends(tmp_path):
    """The check writes each row as the import sends it, so the import does not read the file
    again: the same tasks, encoded as Label Studio's import API takes them, keys and lines kept."""
    from judgelab.sync.projects import import_body, import_lines

    records = [{"id": f"n-{i}", "article": f"{ARTICLE} \u2028 {i}\ttab", "summary": "Sí.\n"} for i in range(3)]
    path = write(tmp_path / "t.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    rows = read_tasks(path, LIKERT, "generic", stream=True)[1]
    lines = list(import_lines(rows))
    assert [(line.key, line.where) for line in lines] == [(f"n-{i}", f"t.jsonl line {i + 1}") for i in range(3)]
    sent = json.loads(import_body(lines))
    assert sent == [row.as_import() for row in rows]
    assert [task["data"]["article"] for task in sent] == [r["article"] for r in records]


def test_duplicate_json_keys_are_reported_not_dropped(tmp_path):
    line = '{"article": "A", "summary": "first", "summary": "second"}'
    with pytest.raises(SyncError, match=r"dup\.jsonl line 1: key 'summary' appears twice"):
        read_tasks(write(tmp_path / "dup.jsonl", line + "\n"), LIKERT, "generic")
    with pytest.raises(SyncError, match=r"dup\.json item 1: key 'summary' appears twice"):
        read_tasks(write(tmp_path / "dup.json", f'[{{"article": "A", "summary": "ok"}}, {line}]'), LIKERT, "generic")


def test_duplicate_csv_header_is_reported(tmp_path):
    with pytest.raises(SyncError, match=r"dup\.csv line 1: column 'summary' appears twice"):
        read_tasks(write(tmp_path / "dup.csv", "article,summary,summary\nA,B,C\n"), LIKERT, "generic")


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_deeply_nested_json_is_a_clear_error(tmp_path, suffix):
    deep = "[" * 100_000 + "]" * 100_000
    line = '{"article": "A", "summary": "B", "x": ' + deep + "}"
    text = line + "\n" if suffix == ".jsonl" else f"[{line}]"
    with pytest.raises(SyncError, match="nested too deeply"):
        read_tasks(write(tmp_path / f"deep{suffix}", text), LIKERT, "generic")


def test_json_array_is_read_item_by_item_with_lines_of_errors(tmp_path):
    items = [{"article": f"Noticia {i}.", "summary": f"Resumen {i}."} for i in range(3)]
    text = "[\n" + ",\n".join(json.dumps(i) for i in items) + "\n]\n"
    rows = rows_of(write(tmp_path / "ok.json", text))
    assert [r.where for r in rows] == ["ok.json item 0", "ok.json item 1", "ok.json item 2"]
    broken = text.replace('"Resumen 2."', '"Resumen 2.",,')
    with pytest.raises(SyncError, match=r"broken\.json line 4: invalid JSON"):
        read_tasks(write(tmp_path / "broken.json", broken), LIKERT, "generic")


def test_the_reader_streams_records(tmp_path):
    """Records come one at a time: a bad line far down does not stop the first from being read."""
    path = write(tmp_path / "s.jsonl", json.dumps({"a": 1}) + "\n" + "{broken\n")
    records = iter_records(path)
    assert next(records) == ("s.jsonl line 1", {"a": 1})
    with pytest.raises(SyncError, match=r"s\.jsonl line 2"):
        next(records)


def test_a_file_changed_between_the_check_and_the_import_is_refused(tmp_path):
    path = write(tmp_path / "t.jsonl", json.dumps({"article": ARTICLE, "summary": "Uno."}) + "\n")
    _, rows = read_tasks(path, LIKERT, "generic", stream=True)
    assert len(rows) == 1
    path.write_text(path.read_text(encoding="utf-8") + json.dumps({"article": "Otra.", "summary": "Dos."}) + "\n")
    with pytest.raises(SyncError, match="t.jsonl changed while it was being imported"):
        list(rows)


@pytest.mark.parametrize(
    ("name", "lines", "bad_line"),
    [
        ("latin1.csv", ["article,summary", f'"{ARTICLE}",Se aprueba el plan.', "Otra noticia.,Resumen."], 2),
        ("latin1.tsv", ["article\tsummary", "Uno.\tDos.", "", f"{ARTICLE}\tResumen."], 4),
        (
            "latin1.jsonl",
            [json.dumps({"article": "Uno.", "summary": "Dos."}), json.dumps({"article": ARTICLE}, ensure_ascii=False)],
            2,
        ),
        ("latin1.json", ["[", json.dumps({"article": "Uno.", "summary": "Dos."}) + ",", '{"article": "Aprobó"}]'], 3),
    ],
)
def test_a_latin1_file_is_refused_at_the_line_of_its_first_non_utf8_byte(tmp_path, name, lines, bad_line):
    """Text is decoded in blocks, so the error surfaces while an earlier line is read: the line
    named is the one holding the byte."""
    path = write(tmp_path / name, "\n".join(lines) + "\n", "latin-1")
    result = cli("import", "--schema", "likert_rubric_es", str(path))  # 127.0.0.1:9 is closed
    assert result.exit_code == 1, result.output
    assert f"{name} line {bad_line}: not UTF-8 text" in result.output, result.output
    assert "0xf3" in result.output and "cannot reach" not in result.output


# --- a big JSON Lines file, checked in parts side by side ---------------------------------------


def _checked_in(path: Path, parts: int, **kwargs):
    """The check of ``path`` in ``parts`` parts: what the import would send and what it says, or
    the error it raises."""
    from judgelab.sync.importers.generic import FileRows

    try:
        rows = FileRows(path, LIKERT, check_parts=parts, **kwargs)
    except SyncError as exc:
        return ("refused", str(exc))
    lines = [(line.key, line.where, line.annotations, line.body) for line in rows.import_lines()]
    return lines, len(rows), sorted(rows.annotators), rows.skipped, rows.info.records, rows.info.empty, rows.parts


def _varied_lines(n: int) -> list[str]:
    """Tasks as people's files have them: a BOM, blank lines, Hugging Face rows, text with raw
    carriage returns and line separators, annotations by several people."""
    lines = []
    for i in range(n):
        task = {"id": f"t-{i}", "article": f"{ARTICLE} \u2028 n.º {i}\r", "summary": f"Resumen {i}. ✓"}
        if i % 7 == 3:
            lines.append(json.dumps({"row_idx": i, "row": task, "truncated_cells": []}))
        elif i % 5 == 1:
            rating = {"from_name": "coherence", "to_name": "summary", "type": "rating", "value": {"rating": 3}}
            annotations = [{"completed_by": {"email": f"rater{i % 3}@x.org"}, "result": [rating]}]
            lines.append(json.dumps({"data": task, "annotations": annotations}, ensure_ascii=False))
        else:
            lines.append(json.dumps(task, ensure_ascii=i % 2 == 0))
        if i % 11 == 0:
            lines.append("   ")
    return lines


def test_a_file_checked_in_parts_gives_what_its_check_as_one_gives(tmp_path):
    """Split at any line, checked side by side, the file's rows are the same rows in the same
    order, encoded the same, with the same lines named and the same annotators to create."""
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(_varied_lines(400)).encode("utf-8") + b"\n")
    whole = _checked_in(path, 1)
    assert whole[1] == 400 and whole[-1] == 1 and whole[2] == ["rater0@x.org", "rater1@x.org", "rater2@x.org"]
    for parts in (2, 3, 4):
        split = _checked_in(path, parts)
        assert split[-1] == parts
        assert split[:-1] == whole[:-1]


@pytest.mark.parametrize(
    ("case", "change"),
    [
        ("bad JSON far down", lambda lines: lines.__setitem__(350, '{"article": "A", "summary": ')),
        ("a key named twice in one object", lambda lines: lines.__setitem__(390, '{"summary": "a", "summary": "b"}')),
        ("a row the schema refuses", lambda lines: lines.__setitem__(300, json.dumps({"article": "Sin resumen."}))),
        ("a lone surrogate", lambda lines: lines.__setitem__(380, '{"article": "A", "summary": "\\ud800"}')),
        ("the same id in two parts", lambda lines: lines.__setitem__(399, json.dumps({"id": "t-1", **_TASK}))),
        ("the same id twice in one part", lambda lines: lines.__setitem__(399, json.dumps({"id": "t-398", **_TASK}))),
        ("a required column in no row", lambda lines: lines.__init__([json.dumps({"article": x}) for x in lines])),
        ("nothing but blank lines", lambda lines: lines.__init__([" " * 50] * len(lines))),
    ],
)
@pytest.mark.parametrize("skip_bad", [False, True])
def test_a_file_checked_in_parts_reports_what_its_check_as_one_reports(tmp_path, case, change, skip_bad):
    """Whatever is wrong, and wherever it is, the import says the same thing (the same lines
    named, the same rows skipped with --skip-bad) and sends the same rows."""
    lines = _varied_lines(400)
    change(lines)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    whole = _checked_in(path, 1, skip_bad=skip_bad)
    assert whole[0] == "refused" or whole[3] or whole[5], f"{case}: the file was meant to have a problem"
    for parts in (2, 3):
        split = _checked_in(path, parts, skip_bad=skip_bad)
        assert split[:-1] == whole[:-1] if whole[0] != "refused" else split == whole


_TASK = {"article": ARTICLE, "summary": "Otro resumen."}


def test_a_non_utf8_byte_far_down_is_named_by_its_line_when_checked_in_parts(tmp_path):
    lines = [json.dumps({"article": f"Uno {i}.", "summary": "Dos."}) for i in range(300)]
    lines[250] = json.dumps({"article": ARTICLE, "summary": "Dos."}, ensure_ascii=False)
    path = write(tmp_path / "latin1.jsonl", "\n".join(lines) + "\n", "latin-1")
    assert _checked_in(path, 3) == _checked_in(path, 1)
    assert _checked_in(path, 3)[1].startswith("latin1.jsonl line 251: not UTF-8 text")
