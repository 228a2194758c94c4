"""``judgelab load`` and ``judgelab report`` through click's CliRunner.

Small files written in ``tmp_path`` mimic each published format (see tests/test_analysis_loaders.py
for the quirks they reproduce); ``load`` turns them into tidy tables and problems.csv, ``report``
builds one report per project or schema and an index. The real-data smoke tests read
``../shared/data`` and skip when it is absent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from shared_data import SHARED_DATA

from judgelab.sync.cli import main


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run(*args: object) -> object:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result


# -- fixture files, one per kind ----------------------------------------------------------------


def storysumm_files(folder: Path) -> tuple[Path, Path]:
    items = {
        "s1": {"story": "Ann ran\x01 home.", "summary": ["Ann ran home.", "She was happy."], "errors": [1, 0],
               "label": 0, "split": "val", "model": "gpt-4", "story-id": 1},
        "s2": {"story": "Bo sat.", "summary": ["Bo sat.", "He slept."], "errors": [1, 1], "label": 1,
               "split": "test", "model": "claude", "story-id": 2},
        "s3": {"story": "Cy ate.", "summary": ["Cy ate.", "He left.", "The end."], "errors": [1, 1], "label": 1,
               "story-id": 3},  # 3 lines, 2 labels: line labels skipped, a problem
    }  # fmt: skip
    text = json.dumps(items).replace("\\u0001", "\x01")  # a raw control character, like the real file
    storysumm = write(folder / "storysumm.json", text)
    predictions = folder / "predictions"
    write(predictions / "minicheck.json", json.dumps({"s1": {"label": 0, "sentence_labels": [1, 0]},
                                                      "s2": {"label": 0, "sentence_labels": [1, 1]}}))  # fmt: skip
    write(predictions / "gpt4.json", json.dumps({"s1": {"label": 1}, "s2": {"label": 1}, "s3": {"label": 1}}))
    return storysumm, predictions


def interface_files(folder: Path) -> tuple[Path, Path]:
    def record(task: str, user: str, verdicts: list[str], full: str) -> dict:
        annotation = {f"consistent_{i}": v for i, v in enumerate(verdicts)} | {"consistent_full": full}
        return {"id": task, "username": user, "story": "A story.", "summary": "Line one. Line two.",
                "annotation": annotation}  # fmt: skip

    records = [
        record("s1", "ann", ["Yes", "No"], "No"),
        record("s1", "bob", ["Yes", "No"], "No"),
        record("s2", "ann", ["Yes", "Yes"], "Yes"),
        record("s2", "bob", ["Yes", None], "Yes"),  # a null judgment: a problem
    ]
    combined = [{"id": "s1", "gold_faithful": 0, "gold_annotations": [0, 0, 0]},
                {"id": "s2", "gold_faithful": 1, "gold_annotations": [1, 1, 0]}]  # fmt: skip
    return (
        write(folder / "annotations_pl_latest.json", json.dumps(records)),
        write(folder / "combined.json", json.dumps(combined)),
    )


def basse_folder(folder: Path) -> Path:
    def line(idx: str, anns: dict[str, str]) -> str:
        models = {name: {"summ": f"Resumen de {name}.", "anns": "@" + name} for name in anns}
        text = json.dumps({"idx": idx, "round": 1, "original_document": "Texto.", "model_summaries": models})
        for name, raw in anns.items():  # bare NaN tokens, as in the real files
            text = text.replace(json.dumps("@" + name), raw)
        return text

    ratings = '{"Coherence": [5, 4, NaN], "Consistency": [5, 5, 5], "Fluency": [4, 4, 4], "Relevance": [3, 2, 3], "5W1H": [4, 4, 5]}'  # noqa: E501
    other = '{"Coherence": [2, 3, 2], "Consistency": [4, 5, 5], "Fluency": [5, 5, 4], "Relevance": [4, 4, 5], "5W1H": [3, 3, 3]}'  # noqa: E501
    write(folder / "BASSE.es.jsonl", line("d1", {"claude-base": ratings, "gpt4o-core": other}) + "\n"
          + line("d2", {"claude-base": other, "gpt4o-core": ratings}) + "\n")  # fmt: skip
    return folder


SPAN_CONFIG = "annotation_span_categories:\n- name: Contradictory\n- name: Not checkable\n- name: Misleading\n"


def span_files(folder: Path) -> Path:
    def record(example: int, group: int, spans: list[tuple[int, str, int]]) -> str:
        annotations = [{"type": kind, "text": text, "start": start} for kind, text, start in spans]
        return json.dumps({"dataset": "d2t", "split": "iaa", "example_idx": example, "setup_id": "llama",
                           "annotator_group": group, "annotations": annotations})  # fmt: skip

    lines = [
        record(0, 0, [(0, "2-1", 16), (2, "scored twice", 27)]),
        record(0, 1, [(0, "2-1", 16)]),
        record(1, 0, []),
        record(1, 1, [(1, "Smith", 0)]),
    ]
    write(folder / "annotations_human_demo.config.yaml", SPAN_CONFIG)
    return write(folder / "annotations_human_demo.jsonl", "\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every kind loaded once through the CLI; the folders of tidy tables by kind."""
    root = tmp_path_factory.mktemp("load")
    storysumm, predictions = storysumm_files(root / "in" / "storysumm")
    annotations, combined = interface_files(root / "in" / "ei")
    spans = span_files(root / "in" / "spans")
    commands = {
        "storysumm": ["storysumm", storysumm, "--predictions", predictions],
        "ei": ["evaluation_interface", annotations, "--combined", combined],
        "basse": ["basse", basse_folder(root / "in" / "basse")],
        "spans": ["span_annotation", spans, "--config", spans.with_name("annotations_human_demo.config.yaml")],
    }
    folders = {}
    for name, args in commands.items():
        out = root / "tables" / name
        result = run("load", *args, "--out", out)
        assert result.exit_code == 0, result.output
        folders[name] = out
        folders[name + ":output"] = result.output  # type: ignore[assignment]
    return folders


# -- load ----------------------------------------------------------------------------------------


def test_load_writes_tidy_tables_and_problems(loaded: dict) -> None:
    for name in ("storysumm", "ei", "basse", "spans"):
        for table in ("tasks", "judgments", "spans"):
            assert (loaded[name] / f"{table}.parquet").is_file(), (name, table)
        assert (loaded[name] / "problems.csv").is_file()
    output = loaded["storysumm:output"]
    assert "loaded storysumm: 3 tasks" in output and "1 project(s): storysumm" in output
    assert re.search(r"line_count_mismatch\s+1\s+e\.g\. storysumm\.json task s3: 3 summary lines", output)
    problems = pd.read_csv(loaded["storysumm"] / "problems.csv")
    assert set(problems["project"]) == {"storysumm"} and "line_count_mismatch" in set(problems["kind"])
    judgments = pd.read_parquet(loaded["storysumm"] / "judgments.parquet")
    assert {"gold", "model:minicheck", "model:gpt4"} <= set(judgments["source"])
    assert "null_judgment" in loaded["ei:output"]
    assert "missing_rating" in loaded["basse:output"] and "BASSE.es" in loaded["basse:output"]
    spans = pd.read_parquet(loaded["spans"] / "spans.parquet")
    assert len(spans) == 4 and set(spans["label"]) == {"Contradictory", "Not checkable", "Misleading"}
    assert "problems: none" in loaded["spans:output"]


def test_load_sqlite(tmp_path: Path) -> None:
    result = run("load", "basse", basse_folder(tmp_path / "in"), "--out", tmp_path / "out", "--format", "sqlite")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "judgelab.sqlite").is_file()
    assert run("report", "--tables", tmp_path / "out", "--out", tmp_path / "rep").exit_code == 0


def test_load_bad_file_names_file_and_line(tmp_path: Path) -> None:
    good = basse_folder(tmp_path / "b") / "BASSE.es.jsonl"
    bad = write(tmp_path / "bad" / "BASSE.eu.jsonl", good.read_text(encoding="utf-8").splitlines()[0] + "\n{oops\n")
    result = run("load", "basse", bad, "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert "BASSE.eu.jsonl: line 2: invalid JSON" in result.output
    broken = write(tmp_path / "s" / "storysumm.json", '{\n  "a": {"summary": ["x"]\n  "b": 1}\n')
    result = run("load", "storysumm", broken, "--out", tmp_path / "out2")
    assert result.exit_code == 1 and "storysumm.json: line 3" in result.output
    assert not (tmp_path / "out2").exists()


def test_load_option_misuse_and_missing_path(tmp_path: Path) -> None:
    result = run("load", "basse", basse_folder(tmp_path), "--predictions", tmp_path, "--out", tmp_path / "o")
    assert result.exit_code == 1 and "--predictions only applies to storysumm" in result.output
    result = run("load", "storysumm", tmp_path / "nowhere.json", "--out", tmp_path / "o")
    assert result.exit_code == 1 and "no such file or folder" in result.output
    result = run("load", "unknown_kind", tmp_path, "--out", tmp_path / "o")
    assert result.exit_code == 2  # click's usage error lists the kinds


# -- report --------------------------------------------------------------------------------------


def test_report_per_project_with_index(loaded: dict, tmp_path: Path) -> None:
    folders = [loaded[name] for name in ("storysumm", "ei", "basse", "spans")]
    result = run("report", *[arg for folder in folders for arg in ("--tables", folder)], "--out", tmp_path)
    assert result.exit_code == 0, result.output
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    for project in ("storysumm", "evaluation_interface", "BASSE.es", "demo"):
        assert (tmp_path / project / "report.html").is_file(), project
        assert (tmp_path / project / "report.md").is_file()
        assert f'href="{project}/report.html"' in index
    story = (tmp_path / "evaluation_interface" / "report.md").read_text(encoding="utf-8")
    assert "#### Line-level agreement" in story and "#### Judges against the gold labels" in story
    # the annotators' line verdicts are checked against StorySumm's line labels from the other folder
    assert "The line-level gold labels come from project storysumm" in story
    models = (tmp_path / "storysumm" / "report.md").read_text(encoding="utf-8")
    assert "compared with the human annotators of project evaluation_interface" in models
    spans = (tmp_path / "demo" / "report.md").read_text(encoding="utf-8")
    assert "#### Span F1 between annotators" in spans and "#### Example-level votes" in spans
    basse = (tmp_path / "BASSE.es" / "report.md").read_text(encoding="utf-8")
    assert "### Likert rubric" in basse and "#### Relevance cues" in basse
    html = (tmp_path / "demo" / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']https?:""", html) and "<script" not in html
    assert "<img" in html


def test_report_per_schema(loaded: dict, tmp_path: Path) -> None:
    result = run("report", "--tables", loaded["storysumm"], "--tables", loaded["ei"], "--out", tmp_path,
                 "--per", "schema")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == ["story_consistency"]
    markdown = (tmp_path / "story_consistency" / "report.md").read_text(encoding="utf-8")
    assert "## Project evaluation_interface" in markdown and "## Project storysumm" in markdown
    assert "index:" in result.output


def test_report_without_tables_fails_cleanly(tmp_path: Path) -> None:
    result = run("report", "--tables", tmp_path / "empty", "--out", tmp_path / "out")
    assert result.exit_code == 1 and "no tidy tables" in result.output


def test_report_cluster_flag_without_the_extra_warns(loaded: dict, tmp_path: Path, monkeypatch) -> None:
    import judgelab.analysis.report.sections.clustering as hotel

    monkeypatch.setattr(hotel, "clustering_available", lambda: False)
    result = run("report", "--tables", loaded["spans"], "--out", tmp_path, "--cluster")
    assert result.exit_code == 0
    assert "--cluster needs scikit-learn" in result.output
    assert "Clusters of marked texts" not in (tmp_path / "demo" / "report.md").read_text(encoding="utf-8")


def test_report_cluster_section_with_a_stub_embedder(loaded: dict, tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("sklearn")
    import judgelab.analysis.clustering as clustering
    import judgelab.analysis.report.sections.clustering as hotel

    vectors = {"2-1": [1.0, 0.0], "scored twice": [0.9, 0.2], "Smith": [0.0, 1.0]}
    monkeypatch.setattr(hotel, "clustering_available", lambda: True)
    monkeypatch.setattr(clustering, "minilm_embedder", lambda: lambda texts: [vectors[t] for t in texts])
    result = run("report", "--tables", loaded["spans"], "--out", tmp_path, "--cluster")
    assert result.exit_code == 0, result.output
    markdown = (tmp_path / "demo" / "report.md").read_text(encoding="utf-8")
    assert "### Clusters of marked texts" in markdown
    assert "The 4 texts the human annotators marked (3 distinct)" in markdown and "k = 2" in markdown
    assert (tmp_path / "demo" / "span_clusters.csv").is_file()
    without = run("report", "--tables", loaded["spans"], "--out", tmp_path / "plain")
    assert "Clusters of marked texts" not in (tmp_path / "plain" / "demo" / "report.md").read_text(encoding="utf-8")
    assert without.exit_code == 0


# -- real data (skipped without ../shared/data) --------------------------------------------------

needs_data = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data is not present")


def _load_and_report(tmp_path: Path, loads: list[list[object]], per: str = "project") -> dict[str, str]:
    tables = []
    for index, args in enumerate(loads):
        out = tmp_path / f"tables{index}"
        result = run("load", *args, "--out", out)
        assert result.exit_code == 0, result.output
        tables += ["--tables", out]
    result = run("report", *tables, "--out", tmp_path / "report", "--per", per)
    assert result.exit_code == 0, result.output
    return {path.parent.name: path.read_text(encoding="utf-8") for path in (tmp_path / "report").glob("*/report.md")}


@needs_data
def test_real_storysumm_and_evaluation_interface(tmp_path: Path) -> None:
    data = SHARED_DATA
    reports = _load_and_report(
        tmp_path,
        [
            ["storysumm", data / "storysumm" / "storysumm.json", "--predictions", data / "storysumm" / "predictions"],
            [
                "evaluation_interface",
                data / "evaluation_interface" / "annotations_pl_latest.json",
                "--combined",
                data / "evaluation_interface" / "combined.json",
            ],
        ],  # fmt: skip
        per="schema",
    )
    markdown = reports["story_consistency"]
    storysumm = markdown[markdown.index("## Project storysumm") :]
    assert "It has 96 tasks" in storysumm  # the 96 StorySumm summaries
    assert "Predictions from 10 model versions are present" in storysumm
    interface = markdown[markdown.index("## Project evaluation_interface") : markdown.index("## Project storysumm")]
    assert "It has 97 tasks" in interface  # 96 summaries and the pilot item
    assert "three verdicts: 587 lines were judged by two or more of the 16 annotators" in interface
    assert "disagree on 17 of the 96 summaries both label" in interface
    assert "label_contradicts_lines" in storysumm


@needs_data
def test_real_basse(tmp_path: Path) -> None:
    reports = _load_and_report(tmp_path, [["basse", SHARED_DATA / "basse" / "BASSE.es.round_0.jsonl"]])
    markdown = reports["BASSE.es.round_0"]
    assert "It has 210 tasks" in markdown and "3 human annotators" in markdown
    assert "#### Relevance cues" in markdown and "### Likert rubric" in markdown
    assert re.search(r"\| Fluency \| 1-5 \| 210 \| 3 \|", markdown)


@needs_data
def test_real_span_annotation_iaa(tmp_path: Path) -> None:
    jsonl = SHARED_DATA / "span_annotation" / "annotations_human_d2t-eval_iaa.jsonl"
    reports = _load_and_report(tmp_path, [["span_annotation", jsonl]])
    markdown = reports["d2t-eval_iaa"]
    assert "It has 12 tasks. 29 human annotators submitted 341 annotations" in markdown
    assert "human: 1276 spans in 253 annotations" in markdown
    assert "the mean over 812 pairs of raters" in markdown  # 29 x 28 ordered pairs


def test_a_published_cut_is_kept_with_its_tables_and_a_team_keeps_its_own(tmp_path: Path) -> None:
    """BASSE's cut (machine summaries, per language and round) comes with ``load basse``; the same
    tables without it are a team's own Likert study, reported whole until the team keeps a cut.
    The line ``report`` prints counts the tasks the report used."""
    folder = basse_folder(tmp_path / "in")
    human = '{"Coherence": [5, 5, 5], "Consistency": [5, 5, 5], "Fluency": [5, 5, 5], "Relevance": [5, 5, 5], "5W1H": [5, 5, 5]}'  # noqa: E501
    line = {"idx": "d3", "round": 1, "original_document": "Texto.",
            "model_summaries": {"human": {"summ": "Resumen humano.", "anns": "@"}}}  # fmt: skip
    with (folder / "BASSE.es.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line).replace('"@"', human) + "\n")
    tables = tmp_path / "tables"
    loaded = run("load", "basse", folder, "--out", tables)
    assert loaded.exit_code == 0, loaded.output
    assert "cut: BASSE's published analysis" in loaded.output
    assert json.loads((tables / "cut.json").read_text())["projects"]["BASSE.es"]["where"] == "model != 'human'"

    def report(*options: str) -> tuple[str, str]:
        result = run("report", "--tables", tables, "--out", tmp_path / "report", "--n-boot", "0", *options)
        assert result.exit_code == 0, result.output
        return result.output, (tmp_path / "report" / "BASSE.es" / "report.md").read_text(encoding="utf-8")

    # d1 and d2: two machine summaries each; d3: a human one
    output, markdown = report()
    assert "BASSE.es: " in output and "(4 tasks)" in output
    assert "This report follows BASSE's published analysis: per language and annotation round" in markdown
    assert "Only tasks and answers with model != 'human' are analysed: 1 of the 5 tasks are left out." in markdown

    (tables / "cut.json").unlink()  # the same tables as a team's own study: whole
    output, markdown = report()
    assert "(5 tasks)" in output and "are analysed (" not in markdown and "cut by" not in markdown

    kept = run("report", "--tables", tables, "--out", tmp_path / "kept", "--n-boot", "0",
               "--where", "model != 'human'", "--keep-cut")  # fmt: skip
    assert kept.exit_code == 0, kept.output
    assert "cut kept for 1 project(s)" in kept.output and "(4 tasks)" in kept.output
    output, markdown = report()
    assert "(4 tasks)" in output
    assert "are analysed (kept with --keep-cut: --where \"model != 'human'\"): 1 of the 5 tasks" in markdown

    forgot = run("report", "--tables", tables, "--out", tmp_path / "kept", "--by", "none", "--where", "none",
                 "--keep-cut")  # fmt: skip
    assert forgot.exit_code == 0, forgot.output
    assert "(5 tasks)" in report()[0]

    alone = run("report", "--tables", tables, "--out", tmp_path / "kept", "--keep-cut")
    assert alone.exit_code != 0 and "--keep-cut keeps --by/--where" in alone.output


def test_a_project_in_two_tables_folders_is_reported_once(loaded: dict, tmp_path: Path) -> None:
    """Two syncs of one project (a copy of the folder, an older sync kept) given together: the report
    takes the project's rows from the first folder only, says so, and counts every annotation once
    (the rows of both once crashed the facets with duplicate task keys and would count each twice)."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(loaded["storysumm"], copy)
    once = run("report", "--tables", loaded["storysumm"], "--out", tmp_path / "once")
    twice = run("report", "--tables", loaded["storysumm"], "--tables", copy, "--out", tmp_path / "twice")
    assert once.exit_code == 0 and twice.exit_code == 0, twice.output
    assert f"is in {loaded['storysumm']} and {copy}; the report uses {loaded['storysumm']}'s rows" in twice.output
    for name in ("at_a_glance.csv", "completion.csv"):
        first = sorted((tmp_path / "once").glob(f"*/{name}"))
        assert first, name
        for path in first:
            assert path.read_bytes() == (tmp_path / "twice" / path.parent.name / name).read_bytes(), path
