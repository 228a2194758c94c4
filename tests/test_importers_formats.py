"""Importers of users' files and of the seed formats, on small fixtures in tests/fixtures/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from judgelab.configs.schema import get_schema
from judgelab.sync.cli import main
from judgelab.sync.client import SyncError
from judgelab.sync.importers import detect_format, parse_mapping, read_tasks
from judgelab.sync.importers.annotations import attach_annotations, read_annotations
from judgelab.sync.importers.formats.basse import read_basse
from judgelab.sync.importers.formats.hotel import DROPPED, aggregate_descriptions, read_hotel
from judgelab.sync.importers.formats.storysumm import read_storysumm
from judgelab.sync.importers.formats.wide_augmentation import EMPTY_CELLS, read_wide_augmentation
from judgelab.sync.importers.generic import read_generic
from judgelab.sync.text_overlap import bleu, dedupe_segments, rouge_l_f1

FIXTURES = Path(__file__).parent / "fixtures"
FLAWS = get_schema("summary_flaws")
AUG = get_schema("augmentation_quality")
LIKERT = get_schema("likert_rubric_es")
FLAWS_MAP = {"title": "post.title", "post": "post.body", "summary": "tldr"}


def copy(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copy(FIXTURES / name, tmp_path / name))


# --- generic -------------------------------------------------------------------------------


def test_hf_rows_jsonl_with_nested_mapping_refuses_the_whole_file_on_a_bad_row():
    with pytest.raises(SyncError) as info:
        read_generic(FIXTURES / "hf_rows.jsonl", FLAWS, FLAWS_MAP)
    assert "hf_rows.jsonl line 2: field 'score'" in str(info.value)  # NaN score -> missing
    assert "nothing was imported" in str(info.value)


def test_hf_rows_skip_bad_counts_and_keeps_the_rest():
    rows = read_generic(FIXTURES / "hf_rows.jsonl", FLAWS, FLAWS_MAP, skip_bad=True)
    assert [r.data["title"] for r in rows] == ["Lost my keys", "Moving out"]
    assert rows[0].data["post"] == "I lost my keys at the gym." and rows[0].data["subreddit"] == "r/tifu"
    assert len(rows.skipped) == 1 and rows.skipped[0].startswith("hf_rows.jsonl line 2")
    assert [r.where for r in rows] == ["hf_rows.jsonl line 1", "hf_rows.jsonl line 3"]


def test_tsv_with_column_mapping_names_bad_line():
    mapping = parse_mapping(["title=headline", "post=post_text", "summary=model_summary", "score=overlap"])
    with pytest.raises(SyncError, match=r"flaws\.tsv line 3: field 'score': expected a number"):
        read_generic(FIXTURES / "flaws.tsv", FLAWS, mapping)
    rows = read_generic(FIXTURES / "flaws.tsv", FLAWS, mapping, skip_bad=True)
    assert len(rows) == 1 and rows[0].data["score"] == 7.5 and len(rows.skipped) == 1


def test_missing_mapped_column_is_reported_with_the_available_columns():
    with pytest.raises(SyncError) as info:
        read_generic(FIXTURES / "flaws.tsv", FLAWS, {"title": "headline", "summary": "tl_dr"})
    message = str(info.value)
    assert "mapped column(s) not found: summary=tl_dr" in message and "model_summary" in message


def test_mapping_to_a_field_the_schema_lacks():
    with pytest.raises(SyncError, match="does not have"):
        read_generic(FIXTURES / "flaws.tsv", FLAWS, {"headline_text": "headline"})


@pytest.mark.parametrize("bad", ["title", "title=", "=col"])
def test_parse_mapping_rejects_malformed_pairs(bad):
    with pytest.raises(SyncError, match="schema_field=column"):
        parse_mapping([bad])


def test_json_id_mapping_and_datasets_server_rows(tmp_path):
    row = {"title": "T", "post": "P", "summary": "S", "score": 1}
    (tmp_path / "by_id.json").write_text(json.dumps({"a1": row, "a2": {**row, "title": "U"}}), encoding="utf-8")
    rows = read_generic(tmp_path / "by_id.json", FLAWS)
    assert [r.key for r in rows] == ["a1", "a2"]
    (tmp_path / "server.json").write_text(json.dumps({"rows": [{"row_idx": 0, "row": row}]}), encoding="utf-8")
    assert read_generic(tmp_path / "server.json", FLAWS)[0].data["title"] == "T"


def test_invalid_jsonl_line_fails_or_is_skipped(tmp_path):
    good = json.dumps({"title": "T", "post": "P", "summary": "S", "score": 1})
    path = tmp_path / "t.jsonl"
    path.write_text(good + "\n{oops\n", encoding="utf-8")
    with pytest.raises(SyncError, match=r"t\.jsonl line 2: invalid JSON"):
        read_generic(path, FLAWS)
    rows = read_generic(path, FLAWS, skip_bad=True)
    assert len(rows) == 1 and rows.skipped == [rows.skipped[0]] and "line 2" in rows.skipped[0]


# --- seed 001: wide augmentation ------------------------------------------------------------


def test_wide_csv_one_task_per_original_model_type_batched_by_model():
    rows = read_wide_augmentation(FIXTURES / "augmentation_wide.csv")
    assert len(rows) == 16 and rows.notes[EMPTY_CELLS] == 2  # 18 cells, 2 empty
    models = [r.data["model"] for r in rows]
    assert models == sorted(models, key=["Llama3.1-8b", "Mistral-Nemo", "Qwen2.5-14b"].index)
    assert models.count("Llama3.1-8b") == 5 and models.count("Qwen2.5-14b") == 5
    first = rows[0].data
    assert first["entry_id"] == "it-101" and first["original_label"] == 0 and first["augmentation_type"] == "rephrased"
    assert rows[0].key == "it-101#Llama3.1-8b#rephrased" and rows[0].where == "augmentation_wide.csv line 2"
    assert {r.data["augmentation_type"] for r in rows} == {"rephrased", "it_perturbed", "rewritten"}
    flipped = next(r for r in rows if r.key == "it-102#Mistral-Nemo#rewritten")
    assert flipped.data["original_label"] == 1 and flipped.data["generated"].startswith("Le istituzioni europee")


def test_wide_jsonl_with_missing_columns_and_null_cells():
    rows = read_wide_augmentation(FIXTURES / "augmentation_wide.jsonl")
    assert [r.key for r in rows][:2] == ["it-201#Llama3.1-8b#rephrased", "it-202#Llama3.1-8b#rephrased"]
    assert len(rows) == 5 and rows.notes[EMPTY_CELLS] == 1


def test_wide_bad_label_names_file_and_line(tmp_path):
    path = copy(tmp_path, "augmentation_wide.csv")
    path.write_text(path.read_text(encoding="utf-8").replace('euro.",0,', 'euro.",2,', 1), encoding="utf-8")
    with pytest.raises(SyncError) as info:
        read_wide_augmentation(path)
    assert "augmentation_wide.csv line 2: field 'original_label'" in str(info.value)
    rows = read_wide_augmentation(path, skip_bad=True)
    assert len(rows) == 8 and len(rows.skipped) == 8  # every task of line 2 skipped


def test_wide_unknown_model_column(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("text,label,Gemma-7b_rephrased\nCiao.,0,Salve.\n", encoding="utf-8")
    with pytest.raises(SyncError, match="Gemma-7b_rephrased name an unknown model"):
        read_wide_augmentation(path)


# --- seed 002: StorySumm ---------------------------------------------------------------------


def test_storysumm_lines_and_alternates():
    rows = read_storysumm(FIXTURES / "storysumm_alternates.json")
    first, second = rows
    assert first.key == "s-01" and first.data["title"] == "story 7" and first.data["model"] == "claude-3-opus"
    assert len(first.data["lines"]) == 3 and first.data["alternates"][0]["line"] == 2
    assert second.data["title"] == "The lighthouse"
    assert second.data["alternates"] == [
        {
            "line": 1,
            "text": "She records passing ships in a notebook.",
            "alternate": "She records passing ships in a blue notebook.",
        }
    ]


def test_storysumm_bad_alternates_and_missing_story(tmp_path):
    items = {
        "x": {"story": "S.", "summary": ["A.", "B."], "alternates": {"5": "C."}},
        "y": {"summary": ["A."]},
        "z": {"story": "S.", "summary": ["A."]},
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    with pytest.raises(SyncError) as info:
        read_storysumm(path)
    message = str(info.value)
    assert "s.json item 'x': alternate for line 5" in message and "s.json item 'y': field 'story'" in message
    rows = read_storysumm(path, skip_bad=True)
    assert [r.key for r in rows] == ["z"] and len(rows.skipped) == 2


# --- seed 003: BASSE ------------------------------------------------------------------------


def test_basse_tasks_with_nan_and_rater_annotations():
    rows = read_basse(FIXTURES / "basse_mini.jsonl", with_annotations=True)
    assert [r.key for r in rows] == ["doc-1#claude-base", "doc-1#llama3-tldr", "doc-2#subhead"]
    claude = rows[0]
    assert claude.data["model"] == "claude" and claude.data["prompt"] == "base" and claude.data["title"] == ""
    emails = [a["completed_by"]["email"] for a in claude.annotations]
    assert emails == [f"basse-rater-{i}@judgelab.local" for i in range(3)]
    rater2 = {r["from_name"]: r["value"]["choices"] for r in claude.annotations[2]["result"]}
    assert rater2 == {"Coherence": ["5"], "Fluency": ["4"], "Relevance": ["4"], "5W": ["3"]}  # Consistency NaN
    llama = rows[1]
    assert len(llama.annotations) == 1 and {r["from_name"] for r in llama.annotations[0]["result"]} == {
        "Consistency",
        "Fluency",
        "Relevance",
        "5W",
    }
    assert rows[2].data["prompt"] == "" and rows[2].annotations[0]["result"][0]["to_name"] == "summary"
    assert read_basse(FIXTURES / "basse_mini.jsonl")[0].annotations is None


def test_basse_rating_out_of_scale_is_a_bad_row(tmp_path):
    path = copy(tmp_path, "basse_mini.jsonl")
    path.write_text(path.read_text(encoding="utf-8").replace('"5W1H": [3.0]', '"5W1H": [6.0]'), encoding="utf-8")
    with pytest.raises(SyncError, match=r"basse_mini\.jsonl line 2: summary 'subhead': rater 0: 5W"):
        read_basse(path, with_annotations=True)
    rows = read_basse(path, with_annotations=True, skip_bad=True)
    assert len(rows) == 2 and len(rows.skipped) == 1
    assert len(read_basse(path)) == 3  # without annotations the ratings are not read


# --- seed 004: hotels -----------------------------------------------------------------------


def test_hotel_aggregation_dedupe_split_and_groups():
    rows = read_hotel(FIXTURES / "hotel_descriptions.csv")
    by_key = {r.key: r.data for r in rows}
    assert list(by_key) == ["hotel-h-1", "hotel-h-2", "hotel-h-3", "hotel-h-4"]
    h1 = by_key["hotel-h-1"]["descriptions"]
    assert h1.count("Brighton Pier") == 1 and h1.count("free WiFi") == 1 and "kettle" in h1
    assert rows.notes[DROPPED] == 3
    assert [d["split"] for d in by_key.values()] == ["long", "short", "long", "short"]
    assert [d["group"] for d in by_key.values()] == ["A", "B", "A", "B"]
    assert (
        by_key["hotel-h-1"]["summary"].startswith("Harbour View Inn") and by_key["hotel-h-2"]["aspect"] == "amenities"
    )


def test_hotel_conflicting_summary_and_missing_description(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text(
        "property_id,description,summary\n"
        "p1,A quiet inn.,Quiet.\np1,A calm inn.,Calm.\np2,,Nothing.\np3,Big rooms.,Big.\n",
        encoding="utf-8",
    )
    with pytest.raises(SyncError) as info:
        read_hotel(path)
    assert "h.csv line 3: property p1 has another summary at h.csv line 2" in str(info.value)
    assert "h.csv line 4: needs a property id" in str(info.value)
    rows = read_hotel(path, skip_bad=True)
    assert [r.key for r in rows] == ["hotel-p3"] and len(rows.skipped) == 2


def test_aggregate_descriptions_keeps_paraphrases_drops_copies():
    text, dropped = aggregate_descriptions(
        ["Rooms have a balcony. Parking is free.", "Parking is free! Pets are welcome."]
    )
    assert text == "Rooms have a balcony. Parking is free.\n\nPets are welcome." and dropped == 1


# --- text overlap ---------------------------------------------------------------------------


def test_bleu_matches_nltk_for_sentences_of_four_tokens_or_more():
    nltk_bleu = pytest.importorskip("nltk.translate.bleu_score")
    pairs = [
        ("the hotel offers free wifi in all rooms", "free wifi is offered in all rooms of the hotel"),
        ("a pool and a gym are on site", "the property has a gym"),
        ("breakfast is served daily from 7 to 10", "breakfast is served daily from 7 to 10 am"),
    ]
    for cand, ref in pairs:
        expected = nltk_bleu.sentence_bleu(
            [ref.split()], cand.split(), smoothing_function=nltk_bleu.SmoothingFunction().method1
        )
        assert bleu(cand, ref) == pytest.approx(expected, abs=1e-9)


def test_rouge_l_f1_by_hand_and_thresholds():
    # LCS("rooms have a sea view", "all rooms have a view of the sea") = rooms have a view = 4
    assert rouge_l_f1("Rooms have a sea view.", "All rooms have a view of the sea.") == pytest.approx(
        2 * (4 / 5) * (4 / 8) / (4 / 5 + 4 / 8)
    )
    assert rouge_l_f1("", "x") == 0.0 and bleu("Pool.", "Pool!") == 1.0
    assert dedupe_segments(["Free parking.", "Free parking is available.", "—"]) == [
        "Free parking.",
        "Free parking is available.",
    ]


# --- earlier-round annotations ----------------------------------------------------------------


def test_annotation_rows_become_one_annotation_per_task_and_annotator():
    rows = read_wide_augmentation(FIXTURES / "augmentation_wide.csv")
    annotations = read_annotations(FIXTURES / "annotations_round1.csv", AUG)
    assert annotations.count == 3
    assert attach_annotations(rows, annotations) == []
    task = next(r for r in rows if r.key == "it-101#Llama3.1-8b#rephrased")
    assert [a["completed_by"]["email"] for a in task.annotations] == ["giulia@judgelab.local", "marco@example.org"]
    other = next(r for r in rows if r.key == "it-101#Mistral-Nemo#it_perturbed").annotations[0]["result"]
    assert [(r["from_name"], r["type"], r["value"]) for r in other] == [
        ("SP", "choices", {"choices": ["3"]}),
        ("SC", "choices", {"choices": ["1"]}),
        ("notes", "textarea", {"text": ["Molti errori di accordo"]}),
    ]


def test_label_studio_export_annotations():
    annotations = read_annotations(FIXTURES / "ls_export.json", AUG)
    (only,) = annotations.by_task["it-102#Llama3.1-8b#rephrased"]
    assert only["completed_by"] == {"email": "giulia@judgelab.local"} and len(only["result"]) == 2


def test_bad_annotation_rows_name_file_and_line(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("task,annotator,item,value\nt1,ann,SP,4\nt1,ann,XX,1\nt2,ann,SC,2\n", encoding="utf-8")
    with pytest.raises(SyncError) as info:
        read_annotations(path, AUG)
    assert "a.csv line 2: SP: '4' is not one of 1, 2, 3" in str(info.value)
    assert "a.csv line 3: item 'XX' is not a control" in str(info.value)
    assert read_annotations(path, AUG, skip_bad=True).count == 1


def test_story_repeater_items_expand():
    schema = get_schema("story_consistency")
    path = FIXTURES / "story_ann.csv"
    try:
        path.write_text("task,annotator,item,value\ns-01,ann,verdict_2,Inconsistent\n", encoding="utf-8")
        (annotation,) = read_annotations(path, schema).by_task["s-01"]
    finally:
        path.unlink()
    assert annotation["result"][0]["from_name"] == "verdict_2" and annotation["result"][0]["to_name"] == "line_2"


# --- dispatch and CLI (no server needed) -----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt", "schema"),
    [
        ("augmentation_wide.csv", "wide-augmentation", "augmentation_quality"),
        ("storysumm_alternates.json", "storysumm", "story_consistency"),
        ("basse_mini.jsonl", "basse", "likert_rubric_es"),
        ("hotel_descriptions.csv", "hotel", "hotel_spans"),
        ("hf_rows.jsonl", "generic", None),
    ],
)
def test_auto_detection(name, fmt, schema):
    assert detect_format(FIXTURES / name) == fmt
    if schema:
        assert read_tasks(FIXTURES / name, None)[0].name == schema


def test_seed_format_with_another_schema_is_refused():
    with pytest.raises(SyncError, match="makes likert_rubric_es tasks, not summary_flaws"):
        read_tasks(FIXTURES / "basse_mini.jsonl", FLAWS)
    with pytest.raises(SyncError, match="--with-annotations"):
        read_tasks(FIXTURES / "hotel_descriptions.csv", None, with_annotations=True)


def test_cli_refuses_a_bad_file_before_connecting(tmp_path):
    path = copy(tmp_path, "augmentation_wide.csv")
    path.write_text(path.read_text(encoding="utf-8").replace('euro.",0,', 'euro.",2,', 1), encoding="utf-8")
    result = CliRunner().invoke(
        main, ["--url", "http://127.0.0.1:9", "--token", "x", "import", "--format", "wide-augmentation", str(path)]
    )
    assert result.exit_code == 1 and "augmentation_wide.csv line 2" in result.output + (result.stderr or "")


def test_cli_generic_needs_a_schema():
    result = CliRunner().invoke(
        main, ["--token", "x", "import", "--map", "title=post.title", str(FIXTURES / "hf_rows.jsonl")]
    )
    assert result.exit_code == 1 and "--schema is required" in result.output + (result.stderr or "")


# --- live: BASSE ratings as annotations by their raters --------------------------------------


@pytest.mark.integration
def test_live_basse_annotations_completed_by_raters(live_stack, tmp_path):
    path = tmp_path / "basse_live.jsonl"
    path.write_text((FIXTURES / "basse_mini.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    title = "BASSE import test"  # its own project: other live tests use the schema's default one
    args = ["--url", live_stack.url, "--token", live_stack.creds.token, "import", "--title", title]
    args += ["--with-annotations", str(path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    client = live_stack.client
    project = next(p for p in client.projects.list() if p.title == title)
    emails = {u.id: u.email for u in client.users.list()}
    found = {}
    for task in client.tasks.list(project=project.id, fields="all"):
        key = task.meta["judgelab_key"]
        anns = client.annotations.list(id=task.id)
        found[key] = sorted(
            (emails[a.completed_by], sorted((r["from_name"], r["value"]["choices"][0]) for r in a.result)) for a in anns
        )
    assert set(found) == {"doc-1#claude-base", "doc-1#llama3-tldr", "doc-2#subhead"}
    claude = found["doc-1#claude-base"]
    assert [email for email, _ in claude] == [f"basse-rater-{i}@judgelab.local" for i in range(3)]
    assert claude[2][1] == [("5W", "3"), ("Coherence", "5"), ("Fluency", "4"), ("Relevance", "4")]
    assert [email for email, _ in found["doc-1#llama3-tldr"]] == ["basse-rater-0@judgelab.local"]
    again = CliRunner().invoke(main, args)  # idempotent: nothing new, users reused
    assert again.exit_code == 0 and "0 imported, 3 already" in again.output
