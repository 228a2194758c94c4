"""analysis.loaders: published data sets into tidy tables, quirks included.

Small fixtures written here mimic each format and its known quirks (raw control characters,
a line-count mismatch, a label contradicting its lines, null judgments, bare NaN tokens,
unknown span types). The real-data tests read ``../shared/data`` and skip when it is absent.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from shared_data import SHARED_DATA

from judgelab.analysis.loaders import (
    JUDGMENT_COLUMNS,
    SPAN_COLUMNS,
    TASK_COLUMNS,
    LoaderError,
    LoaderWarning,
    load_basse,
    load_evaluation_interface,
    load_path,
    load_span_annotation,
    load_span_annotation_dir,
    load_storysumm,
    load_storysumm_predictions,
)
from judgelab.configs.story_lines import line_texts as parse_lines
from judgelab.configs.story_lines import split_sentences


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def contract_ok(tables: dict[str, pd.DataFrame]) -> None:
    assert set(tables) == {"tasks", "judgments", "spans", "problems"}
    assert list(tables["tasks"].columns[: len(TASK_COLUMNS)]) == TASK_COLUMNS
    assert list(tables["judgments"].columns) == JUDGMENT_COLUMNS
    assert list(tables["spans"].columns) == SPAN_COLUMNS
    values = tables["judgments"]["value"].dropna()
    assert all(isinstance(v, str) for v in values), "tidy values are strings"


def test_columns_match_sync_tidy():
    from judgelab.sync.tidy import JUDGMENT_COLUMNS as J
    from judgelab.sync.tidy import SPAN_COLUMNS as S
    from judgelab.sync.tidy import TASK_COLUMNS as T

    assert (TASK_COLUMNS, JUDGMENT_COLUMNS, SPAN_COLUMNS) == (T, J, S)


# --------------------------------------------------------------------------------------
# StorySumm
# --------------------------------------------------------------------------------------

STORYSUMM = {
    "ok": {
        "story": "Ann\tran\x01 home.",  # raw tab and control character: json needs strict=False
        "summary": ["Ann ran home.", "She was happy."],
        "errors": [1, 0],
        "label": 0,
        "explanations": ["Not said she was happy."],
        "split": "val",
        "model": "gpt-4",
        "difficulty": "easy",
        "story-id": 1,
    },
    "repr": {  # summary as the string repr of a list
        "story": "Bo sat.",
        "summary": "['Bo sat.', 'Then he slept.']",
        "errors": [1, 1],
        "label": 1,
        "split": "test",
        "model": "claude",
        "story-id": 2,
    },
    "mismatch": {  # 3 lines, 2 line labels: line labels skipped
        "story": "Cy ate.",
        "summary": ["Cy ate.", "He left.", "The end."],
        "errors": [1, 1],
        "label": 1,
        "story-id": 3,
    },
    "contradiction": {  # every line consistent but labelled unfaithful: kept, noted
        "story": "Di swam.",
        "summary": ["Di swam."],
        "errors": [1],
        "label": 0,
        "story-id": 4,
    },
}


def storysumm_file(tmp_path: Path) -> Path:
    # json.dumps escapes control characters; undo it so the file holds raw ones, like the real file
    text = json.dumps(STORYSUMM).replace("\\t", "\t").replace("\\u0001", "\x01")
    return write(tmp_path / "storysumm.json", text)


def predictions_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "predictions"
    write(
        folder / "minicheck.json",
        json.dumps(
            {
                "ok": {"label": 0, "sentence_labels": [1, 0], "probs": [0.9, 0.1]},
                "repr": {"label": 1, "sentence_labels": [1, 1, 1]},  # 3 labels for 2 lines: skipped
                "unknown": {"label": 1},
            }
        ),
    )
    write(folder / "gpt__cot.json", json.dumps({"ok": {"label": 1, "probs": "The summary is fine."}}))
    write(folder / "alignscore.json", json.dumps({"ok": {"probs": 0.25}, "repr": {"probs": 0.75}}))
    return folder


def test_storysumm_gold_and_quirks(tmp_path):
    path = storysumm_file(tmp_path)
    assert "\x01" in path.read_text(encoding="utf-8")
    with pytest.warns(LoaderWarning, match="3 summary lines but 2 line labels"):
        tables = load_storysumm(path)
    contract_ok(tables)
    tasks, judgments, problems = tables["tasks"], tables["judgments"], tables["problems"]
    assert tasks["task_id"].tolist() == ["ok", "repr", "mismatch", "contradiction"]
    assert set(tasks["schema"]) == {"story_consistency"}
    assert tasks.set_index("task_id")["n_lines"].to_dict() == {"ok": 2, "repr": 2, "mismatch": 3, "contradiction": 1}
    assert json.loads(tasks.set_index("task_id").loc["repr", "lines"]) == ["Bo sat.", "Then he slept."]
    assert tasks.set_index("task_id").loc["ok", "story"] == "Ann\tran\x01 home."
    assert set(judgments["source"]) == {"gold"} and set(judgments["annotator"]) == {"gold"}
    gold = judgments.set_index(["task_id", "item"])["value"]
    assert gold["ok", "faithful"] == "Unfaithful" and gold["repr", "faithful"] == "Faithful"
    assert gold["ok", "line_0"] == "Consistent" and gold["ok", "line_1"] == "Inconsistent"
    # 4 summary labels + lines: ok 2, repr 2, mismatch 0 (skipped), contradiction 1
    assert len(judgments) == 4 + 2 + 2 + 0 + 1
    assert not judgments["task_id"].eq("mismatch").sum() > 1
    kinds = problems.set_index("task_id")["kind"].to_dict()
    assert kinds == {"mismatch": "line_count_mismatch", "contradiction": "label_contradicts_lines"}
    assert gold["contradiction", "faithful"] == "Unfaithful"  # kept as given


def test_storysumm_predictions(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoaderWarning)
        tables = load_storysumm(storysumm_file(tmp_path), predictions=predictions_dir(tmp_path))
    contract_ok(tables)
    judgments = tables["judgments"]
    assert len(tables["tasks"]) == 4  # predictions add no task
    models = judgments[judgments["source"].str.startswith("model:")]
    assert sorted(models["source"].unique()) == ["model:alignscore", "model:gpt__cot", "model:minicheck"]
    mini = models[models["source"] == "model:minicheck"].set_index(["task_id", "item"])["value"]
    assert mini["ok", "faithful"] == "Unfaithful"
    assert mini["ok", "line_1"] == "Inconsistent"
    assert ("repr", "line_0") not in mini.index  # 3 sentence labels for 2 lines: skipped
    assert mini["unknown", "faithful"] == "Faithful"  # kept, but noted
    cot = models[models["source"] == "model:gpt__cot"].set_index("item")["value"]
    assert cot["faithful.explanation"] == "The summary is fine."
    scores = models[models["item"] == "faithful_score"].set_index("task_id")["value"]
    assert scores.to_dict() == {"ok": "0.25", "repr": "0.75"}
    problems = tables["problems"]
    assert set(problems.loc[problems["file"].str.endswith("minicheck.json"), "kind"]) == {
        "line_count_mismatch",
        "unknown_task",
    }


def test_storysumm_predictions_alone_keep_sentence_labels(tmp_path):
    tables = load_storysumm_predictions([predictions_dir(tmp_path) / "minicheck.json"])
    lines = tables["judgments"].query("task_id == 'repr' and item.str.startswith('line_')", engine="python")
    assert len(lines) == 3  # without line counts nothing can be checked


def test_storysumm_bad_json_names_file_and_line(tmp_path):
    path = write(tmp_path / "storysumm.json", '{\n  "a": {"summary": ["x"]\n  "b": 1}\n')
    with pytest.raises(LoaderError, match=r"storysumm\.json: line 3"):
        load_storysumm(path)


def test_storysumm_not_an_object(tmp_path):
    with pytest.raises(LoaderError, match="expected a JSON object"):
        load_storysumm(write(tmp_path / "s.json", "[1, 2]"))


def test_parse_lines_forms():
    assert parse_lines(["a", "b"]) == (["a", "b"], "list")
    assert parse_lines('["a", "b"]') == (["a", "b"], "repr")
    assert parse_lines("One. Two! Three?") == (["One.", "Two!", "Three?"], "text")
    assert parse_lines(3)[0] is None
    assert split_sentences("") == []


# --------------------------------------------------------------------------------------
# evaluation_interface
# --------------------------------------------------------------------------------------


def interface_files(tmp_path: Path) -> tuple[Path, Path]:
    full = {"consistent_full": "No", "explanation_full": "Made up."}
    records = [
        {
            "id": "s1",
            "username": "ann",
            "story": "A story.",
            "summary": "Line one. Line two.",
            "annotation": {"consistent_0": "Yes", "consistent_1": "No", "explanation_1": "Wrong.", **full},
        },
        {
            "id": "s1",
            "username": "bob",
            "story": "A story.",
            "summary": "Line one. Line two.",
            # the annotation as a string repr, with a null judgment on line 1
            "annotation": repr(
                {"consistent_0": "N/A, just commentary", "consistent_1": None, "consistent_full": "Yes"}
            ),
        },
        {
            "id": "pilot",
            "username": "ann",
            "story": "P.",
            "summary": "Only line.",
            "annotation": {"consistent_0": "Yes", "consistent_full": "Yes"},
        },
        {
            "id": "pilot",
            "username": "ann",  # a main annotator answering the pilot twice: both records kept
            "story": "P.",
            "summary": "Only line.",
            "annotation": {"consistent_0": "No", "consistent_full": "No"},
        },
        {
            "id": "pilot",
            "username": "crowd1",
            "story": "P.",
            "summary": "Only line.",
            "annotation": {"consistent_0": "Maybe", "consistent_full": "Yes"},  # unknown answer
        },
    ]
    combined = [
        {"id": "s1", "gold_faithful": 0, "gold_annotations": [0, 0, 1], "model": "gpt-4", "source": "original"},
        {"id": "pilot", "gold_faithful": 1, "gold_annotations": [1, 1, 1], "model": "claude", "source": "expanded"},
    ]
    return (
        write(tmp_path / "annotations_pl_latest.json", json.dumps(records)),
        write(tmp_path / "combined.json", json.dumps(combined)),
    )


def test_evaluation_interface(tmp_path):
    annotations, combined = interface_files(tmp_path)
    tables = load_evaluation_interface(annotations, combined=combined)
    contract_ok(tables)
    tasks = tables["tasks"].set_index("task_id")
    assert tasks["n_records"].to_dict() == {"s1": 2, "pilot": 3}
    assert tasks.loc["s1", "n_lines"] == 2 and json.loads(tasks.loc["s1", "lines"]) == ["Line one.", "Line two."]
    assert tasks.loc["s1", "gold_faithful"] == 0 and json.loads(tasks.loc["s1", "gold_annotations"]) == [0, 0, 1]
    assert tasks.loc["pilot", "origin"] == "expanded"
    judgments = tables["judgments"]
    human = judgments[judgments["source"] == "human"]
    assert human["annotation_id"].nunique() == 5  # one annotation per record
    ann = human[(human["annotator"] == "ann") & (human["task_id"] == "s1")].set_index("item")["value"]
    assert ann.to_dict() == {
        "line_0": "Consistent",
        "line_1": "Inconsistent",
        "line_1.explanation": "Wrong.",
        "faithful": "Unfaithful",
        "faithful.explanation": "Made up.",
    }
    bob = human[human["annotator"] == "bob"].set_index("item")["value"].to_dict()
    assert bob == {"line_0": "N/A, just commentary", "faithful": "Faithful"}  # the null is skipped
    gold = judgments[judgments["source"] == "gold"].set_index("task_id")["value"]
    assert gold.to_dict() == {"s1": "Unfaithful", "pilot": "Faithful"}
    kinds = tables["problems"]["kind"].value_counts().to_dict()
    assert kinds == {"null_judgment": 1, "unknown_answer": 1}


def test_evaluation_interface_not_a_list(tmp_path):
    with pytest.raises(LoaderError, match="expected a JSON list"):
        load_evaluation_interface(write(tmp_path / "a.json", '{"id": 1}'))


# --------------------------------------------------------------------------------------
# BASSE
# --------------------------------------------------------------------------------------


def basse_line(idx: str, round_: int, summaries: dict[str, dict[str, str]]) -> str:
    models = {
        name: {"summ": f"Resumen de {name}.", "anns": anns} for name, anns in summaries.items()
    }  # anns are raw JSON snippets below
    text = json.dumps({"idx": idx, "round": round_, "original_document": "Texto.", "model_summaries": models})
    for anns in summaries.values():  # put the raw snippets, NaN tokens included, back unquoted
        text = text.replace(json.dumps(anns), anns)
    return text


def basse_file(tmp_path: Path) -> Path:
    first = basse_line(
        "doc1",
        1,
        {
            "claude-base": '{"Coherence": [5.0, 4.0, NaN], "Consistency": [5, 5, 5], "Fluency": [4.0, 4.0, 4.0], '
            '"Relevance": [3.0, 2.0, 3.0], "5W1H": [4.0, NaN, NaN]}',
            "human-ann1": '{"Coherence": [5.0, 5.0], "Consistency": [5.0, 5.0], "Fluency": [5.0, 5.0], '
            '"Relevance": [4.0, 5.0], "5W1H": [5.0, 5.0]}',
        },
    )
    second = basse_line(
        "doc2",
        3,
        {"subhead": '{"Coherence": [NaN], "Consistency": [1.0], "Fluency": [2.0], "Relevance": [1.0], "5W1H": [2.0]}'},
    )
    return write(tmp_path / "BASSE.es.jsonl", first + "\n" + second + "\n\n")


def test_basse_nan_tokens(tmp_path):
    path = basse_file(tmp_path)
    assert "NaN" in path.read_text()
    tables = load_basse(path)
    contract_ok(tables)
    tasks = tables["tasks"].set_index("task_id")
    assert list(tasks.index) == ["doc1#claude-base", "doc1#human-ann1", "doc2#subhead"]
    assert tasks.loc["doc1#claude-base", ["model", "prompt", "system", "language", "round"]].tolist() == [
        "claude",
        "base",
        "claude-base",
        "es",
        1,
    ]
    assert pd.isna(tasks.loc["doc2#subhead", "prompt"])
    assert set(tables["tasks"]["project"]) == {"BASSE.es"}
    assert set(tables["tasks"]["schema"]) == {"likert_rubric_es"}
    judgments = tables["judgments"]
    # claude-base 15 ratings - 3 NaN = 12; human-ann1 10; subhead 5 - 1 NaN = 4
    assert len(judgments) == 12 + 10 + 4
    assert set(judgments["item"]) == {"Coherence", "Consistency", "Fluency", "Relevance", "5W"}
    claude = judgments[judgments["task_id"] == "doc1#claude-base"]
    assert claude[claude["item"] == "Coherence"].set_index("annotator")["value"].to_dict() == {
        "rater_0": "5",
        "rater_1": "4",
    }
    assert claude[claude["item"] == "5W"]["annotator"].tolist() == ["rater_0"]
    assert claude["annotation_id"].nunique() == 3  # one annotation per rater
    missing = tables["problems"]
    assert (missing["kind"] == "missing_rating").sum() == 3  # claude Coherence, claude 5W, subhead Coherence
    assert missing["line"].tolist() == [1, 1, 2]


def test_basse_bad_line_names_file_and_line(tmp_path):
    path = write(tmp_path / "BASSE.eu.jsonl", basse_line("d", 0, {}) + "\n{not json\n")
    with pytest.raises(LoaderError, match=r"BASSE\.eu\.jsonl: line 2: invalid JSON"):
        load_basse(path)


def test_basse_line_not_an_object(tmp_path):
    with pytest.raises(LoaderError, match="line 1: expected a JSON object"):
        load_basse(write(tmp_path / "BASSE.es.jsonl", "[1]\n"))


# --------------------------------------------------------------------------------------
# factgenie span annotations
# --------------------------------------------------------------------------------------

CONFIG = """annotation_span_categories:
- name: Contradictory
  color: red
- name: Not checkable
- name: Misleading
campaign_orig_id: demo
"""
OUTPUT = "The match ended 2-1. Smith scored twice."


def span_files(tmp_path: Path) -> Path:
    lines = [
        {
            "dataset": "d2t",
            "split": "iaa",
            "example_idx": 0,
            "setup_id": "llama",
            "annotator_group": 0,
            "annotations": [
                {"type": 0, "text": "2-1", "start": 16, "id": "a"},
                {"type": 2, "text": "scored twice", "start": 27, "id": "b"},
                {"type": 7, "text": "Smith", "start": 21, "id": "c"},  # unknown type
            ],
        },
        {
            "dataset": "d2t",
            "split": "iaa",
            "example_idx": 0,
            "setup_id": "llama",
            "annotator_group": 1,
            "annotations": [{"type": 1, "text": "ended", "start": 11, "reason": "not in data"}],  # off by one
        },
        {
            "dataset": "d2t",
            "split": "iaa",
            "example_idx": 1,
            "setup_id": "llama",
            "annotator_group": 0,
            "annotations": [],
        },
    ]
    write(tmp_path / "annotations_human_demo.config.yaml", CONFIG)
    return write(tmp_path / "annotations_human_demo.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n")


def test_span_annotation(tmp_path):
    tables = load_span_annotation(span_files(tmp_path))
    contract_ok(tables)
    assert tables["tasks"]["task_id"].tolist() == ["d2t/iaa/0/llama", "d2t/iaa/1/llama"]
    assert set(tables["tasks"]["project"]) == {"demo"}
    spans = tables["spans"]
    assert len(spans) == 4
    assert spans["label"].fillna("?").tolist() == ["Contradictory", "Misleading", "?", "Not checkable"]
    assert spans["end"].tolist() == [19, 39, 26, 16]  # start + len(text)
    assert spans["annotator"].tolist() == ["group_0", "group_0", "group_0", "group_1"]
    assert spans["note"].fillna("").tolist() == ["", "", "", "not in data"]
    assert set(spans["field"]) == {"output"}
    counts = tables["judgments"].set_index("annotation_id")["value"].to_dict()
    assert counts == {"annotations_human_demo:1": "3", "annotations_human_demo:2": "1", "annotations_human_demo:3": "0"}
    assert tables["problems"]["kind"].tolist() == ["unknown_type"]


def test_span_offsets_checked_against_outputs(tmp_path):
    outputs = {"d2t/iaa/0/llama": OUTPUT, "d2t/iaa/1/llama": "Nothing."}
    tables = load_span_annotation(span_files(tmp_path), outputs=outputs)
    for row in tables["spans"].itertuples():
        if row.annotator == "group_0":
            assert OUTPUT[row.start : row.end] == row.text
    mismatches = tables["problems"][tables["problems"]["kind"] == "offset_mismatch"]
    assert len(mismatches) == 1 and "ended" in mismatches["message"].iloc[0]
    assert tables["tasks"].set_index("task_id").loc["d2t/iaa/1/llama", "output"] == "Nothing."


def test_span_annotation_needs_config(tmp_path):
    path = write(tmp_path / "annotations_human_x.jsonl", "{}\n")
    with pytest.raises(LoaderError, match="no category config"):
        load_span_annotation(path)
    write(tmp_path / "annotations_human_x.config.yaml", "campaign_orig_id: x\n")
    with pytest.raises(LoaderError, match="no annotation_span_categories"):
        load_span_annotation(path)


def test_span_annotation_dir_and_bad_line(tmp_path):
    span_files(tmp_path)
    assert len(load_span_annotation_dir(tmp_path)["spans"]) == 4
    write(tmp_path / "annotations_human_bad.config.yaml", CONFIG)
    write(tmp_path / "annotations_human_bad.jsonl", '{"annotations": []}\n{"annotations": [}\n')
    with pytest.raises(LoaderError, match=r"annotations_human_bad\.jsonl: line 2"):
        load_span_annotation_dir(tmp_path)


# --------------------------------------------------------------------------------------
# load_path
# --------------------------------------------------------------------------------------


def test_load_path_dispatch(tmp_path):
    storysumm_file(tmp_path)
    predictions_dir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoaderWarning)
        tables = load_path(tmp_path / "storysumm.json")
    assert "model:minicheck" in set(tables["judgments"]["source"])  # predictions/ beside it
    annotations, _ = interface_files(tmp_path / "ei")
    assert "gold" in set(load_path(annotations)["judgments"]["source"])  # combined.json beside it
    assert len(load_path(basse_file(tmp_path / "basse"))["tasks"]) == 3
    assert len(load_path(span_files(tmp_path / "spans"))["spans"]) == 4
    with pytest.raises(LoaderError, match="unknown data set"):
        load_path(write(tmp_path / "other.csv", "a,b\n"))
    with pytest.raises(LoaderError, match="no such file"):
        load_path(tmp_path / "missing.json")


# --------------------------------------------------------------------------------------
# Real data (../shared/data): skipped when absent
# --------------------------------------------------------------------------------------

needs_data = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data is absent")


@needs_data
def test_real_storysumm():
    with pytest.warns(LoaderWarning):
        tables = load_storysumm(
            SHARED_DATA / "storysumm" / "storysumm.json", predictions=SHARED_DATA / "storysumm" / "predictions"
        )
    assert len(tables["tasks"]) == 96
    judgments = tables["judgments"]
    gold = judgments[(judgments["source"] == "gold") & (judgments["item"] == "faithful")]
    assert len(gold) == 96 and gold["value"].value_counts().to_dict() == {"Unfaithful": 60, "Faithful": 36}
    kinds = tables["problems"].loc[tables["problems"]["file"].str.endswith("storysumm.json"), "kind"]
    assert sorted(kinds) == ["label_contradicts_lines", "line_count_mismatch"]
    judges = judgments.loc[judgments["source"].str.startswith("model:"), "source"].unique()
    assert len(judges) == 10
    labelled = judgments[judgments["source"].str.startswith("model:") & (judgments["item"] == "faithful")]
    assert labelled.groupby("source").size().eq(96).all() and labelled["source"].nunique() == 8


@needs_data
def test_real_evaluation_interface():
    folder = SHARED_DATA / "evaluation_interface"
    tables = load_evaluation_interface(folder / "annotations_pl_latest.json", combined=folder / "combined.json")
    human = tables["judgments"][tables["judgments"]["source"] == "human"]
    per_annotator = human.groupby("annotator")["annotation_id"].nunique()
    assert human["annotation_id"].nunique() == 307
    assert sorted(per_annotator[per_annotator == 98].index) == ["5540027", "7778335", "8784498"]
    pilot = human[human["task_id"] == "9nvf1f"]
    assert pilot["annotation_id"].nunique() == 19
    assert (tables["problems"]["kind"] == "null_judgment").sum() == 2
    assert len(tables["tasks"]) == 97  # 96 StorySumm summaries + the pilot item
    gold = tables["judgments"][tables["judgments"]["source"] == "gold"]
    assert len(gold) == 96


@needs_data
def test_real_basse():
    for name in ("BASSE.es.jsonl", "BASSE.es.round_0.jsonl", "BASSE.eu.jsonl", "BASSE.eu.round_0.jsonl"):
        tables = load_basse(SHARED_DATA / "basse" / name)
        contract_ok(tables)
        assert set(tables["judgments"]["item"]) == {"Coherence", "Consistency", "Fluency", "Relevance", "5W"}
        assert tables["judgments"]["value"].isin(["1", "2", "3", "4", "5"]).all()
    round0 = load_basse(SHARED_DATA / "basse" / "BASSE.eu.round_0.jsonl")
    assert len(round0["tasks"]) == 10 * 21
    # 210 tasks x 5 criteria x 3 raters, less the NaN ratings
    assert len(round0["judgments"]) == 210 * 5 * 3 - 173


@needs_data
def test_real_span_annotation_iaa():
    tables = load_span_annotation(SHARED_DATA / "span_annotation" / "annotations_human_d2t-eval_iaa.jsonl")
    assert len(tables["tasks"]) == 12
    groups = tables["judgments"].groupby("task_id")["annotator"].nunique()
    assert set(groups) == {28, 29}
    assert len(tables["spans"]) == 1276
    assert tables["spans"]["label"].notna().all()
    assert (tables["spans"]["end"] - tables["spans"]["start"] == tables["spans"]["text"].str.len()).all()


def test_span_annotation_orig_example_idx_keeps_outputs_apart(tmp_path):
    write(tmp_path / "annotations_human_mt.config.yaml", "annotation_span_categories:\n- name: Major\n- name: Minor\n")
    base = {"dataset": "wmt", "split": "en-cs", "example_idx": 0, "setup_id": "sys", "annotator_group": 0}
    lines = [
        {**base, "orig_example_idx": 48, "annotations": [{"type": 1, "text": "tlak", "start": 3}]},
        {**base, "orig_example_idx": 78, "annotations": []},  # same example_idx, another segment
    ]
    path = write(tmp_path / "annotations_human_mt.jsonl", "\n".join(json.dumps(line) for line in lines))
    tables = load_span_annotation(path)
    assert tables["tasks"]["task_id"].tolist() == ["wmt/en-cs/0/sys#48", "wmt/en-cs/0/sys#78"]
    assert tables["problems"].empty  # not a repeated annotation
    assert tables["spans"]["label"].tolist() == ["Minor"]
