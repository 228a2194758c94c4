"""The offline annotator: valid drafts for every schema, exact offsets, robust to odd data.

All texts are small hand-written fixtures; the label config of each schema is read from
``configs/`` so that drafts are checked against the real control names and values.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from itertools import combinations
from pathlib import Path

import pytest

from judgelab.backend.annotators import OfflineAnnotator
from judgelab.backend.annotators import grounding as g
from judgelab.backend.annotators.offline.schemas.hotel_spans import IMPRESSION_COST, error_candidates
from judgelab.backend.annotators.offline.schemas.summary_flaws import flaw_candidates
from judgelab.backend.draft import Draft, SpanDraft

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
SCHEMAS = ["summary_flaws", "augmentation_quality", "story_consistency", "likert_rubric_es", "hotel_spans"]


@pytest.fixture(scope="module")
def annotator() -> OfflineAnnotator:
    return OfflineAnnotator()


def config_controls(schema: str) -> dict[str, tuple[str, set[str]]]:
    """Control name pattern -> (tag, allowed values) from the schema's config.xml.

    Repeater names such as ``verdict_{{idx}}`` become the regex ``verdict_\\d+``; a Choice
    may be given by its value or its alias."""
    root = ET.parse(CONFIGS / schema / "config.xml").getroot()
    controls = {}
    for element in root.iter():
        name = element.get("name")
        if element.tag not in {"Choices", "Labels", "Rating", "TextArea", "Number"} or not name:
            continue
        pattern = re.sub(r"\\\{\\\{\w+\\\}\\\}", r"\\d+", re.escape(name))
        values = set()
        for child in element:
            values.update(v for v in (child.get("value"), child.get("alias")) if v)
        controls[pattern] = (element.tag, values)
    return controls


def find_control(controls: dict[str, tuple[str, set[str]]], name: str) -> tuple[str, set[str]]:
    for pattern, spec in controls.items():
        if re.fullmatch(pattern, name):
            return spec
    raise AssertionError(f"control {name!r} is not in the label config")


def assert_valid(schema: str, draft: Draft, data: dict) -> None:
    """Every control exists with an allowed value; spans are in bounds and non-empty."""
    assert isinstance(draft, Draft)
    controls = config_controls(schema)
    for name, values in draft.choices.items():
        tag, allowed = find_control(controls, name)
        assert tag == "Choices"
        dynamic = not allowed  # value="$no_errors_options": choices come from the task
        assert values and (dynamic or set(values) <= allowed), (name, values)
    for name, stars in draft.ratings.items():
        tag, _ = find_control(controls, name)
        assert tag == "Rating" and 1 <= stars <= 7
    for name, text in draft.texts.items():
        assert find_control(controls, name)[0] == "TextArea" and isinstance(text, str) and text
    for span in draft.spans:
        tag, labels = find_control(controls, span.control)
        assert tag == "Labels" and span.label in labels
        text = span_text_field(schema, span.control, data)
        assert 0 <= span.start < span.end <= len(text), (span, len(text))
        assert text[span.start : span.end].strip()
    if draft.score is not None:
        assert 0.0 <= draft.score <= 1.0


def span_text_field(schema: str, control: str, data: dict) -> str:
    if schema == "story_consistency":
        line = data["lines"][int(control.rsplit("_", 1)[1])]
        return line["text"] if isinstance(line, dict) else line
    return data["summary"]


def spans_text(draft: Draft | list[SpanDraft], text: str) -> list[str]:
    spans = draft.spans if isinstance(draft, Draft) else draft
    return [text[s.start : s.end] for s in spans]


# Since the scores are calibrated, the annotator suggests only the spans whose fitted
# score reaches the schema's threshold; the tests of what a rule finds check the rules' candidates
# (``flaw_candidates``, ``error_candidates``), the tests of what is suggested check the draft.


# --- fixtures -----------------------------------------------------------------------------

REDDIT = {
    "subreddit": "r/relationships",
    "title": "My (27F) boyfriend (29M) forgot my birthday for the second year in a row",
    "post": "We have been together for three years. Last year he forgot my birthday and "
    "apologized the next day. This year it was on Tuesday and he forgot again. "
    "He says birthdays are just a day. Am I overreacting?",
    "summary": "My boyfriend forgot my birthday for the second year in a row after 6 years "
    "together. Am I overreacting?",
    "score": 4.2,
}

ITALIAN_ORIGINAL = (
    "Il governo ha approvato un nuovo piano di investimenti nelle energie "
    "rinnovabili per un totale di 5 miliardi di euro."
)

STORY = (
    "Mara kept the lighthouse on Gull Island for thirty years. Every night she climbed "
    "the hundred steps and lit the lamp. One winter a fishing boat lost its way in the "
    "fog, and Mara rang the bell until dawn. The fishermen came ashore safely and "
    "thanked her with a basket of fish."
)

ARTICLE_ES = (
    "El Ayuntamiento de Zaragoza aprobó este jueves un plan de 42 millones de euros para "
    "rehabilitar 1.800 viviendas en el barrio de Delicias. La consejera de Urbanismo, Marta "
    "Lacasa, explicó que el plan se financiará con fondos europeos y que las obras empezarán "
    "en junio. Los vecinos valoraron positivamente la medida, aunque pidieron más plazos. "
    "El barrio es el más poblado de la ciudad y muchas de sus viviendas no tienen ascensor."
)
SUMMARY_ES = (
    "El Ayuntamiento de Zaragoza aprobó un plan de 42 millones de euros para "
    "rehabilitar 1.800 viviendas en Delicias. Además, las obras empezarán en junio "
    "con fondos europeos."
)

HOTEL = (
    "Harbour View Hotel is 3 km from Marina Beach and a 5-minute walk from Central "
    "Station. Dublin Airport is 25 km away. Guests can relax in the outdoor pool and "
    "the spa. Free WiFi is available in all rooms."
)


# --- every schema -------------------------------------------------------------------------


def sample(schema: str) -> dict:
    return {
        "summary_flaws": REDDIT,
        "augmentation_quality": {
            "original": ITALIAN_ORIGINAL,
            "original_label": 0,
            "model": "Qwen2.5-14b",
            "augmentation_type": "it_perturbed",
            "generated": "Il governo ha approvazione un nuovo piano di investimento nelle "
            "energia rinnovabile per un totale di 5 miliardo di euro.",
        },
        "story_consistency": {
            "story": STORY,
            "lines": [
                {"text": "Mara kept the lighthouse on Gull Island for thirty years."},
                {
                    "text": "Each night she climbed the steps and lit the lamp.",
                    "alternate": "Each night she climbed the hundred steps and lit the lamp.",
                },
                "The story paints a vivid portrait of devotion.",
            ],
        },
        "likert_rubric_es": {"article": ARTICLE_ES, "summary": SUMMARY_ES},
        "hotel_spans": {
            "descriptions": HOTEL,
            "group": "A",
            "summary": "This beachfront hotel has a rooftop bar and is a 15-minute drive from Dublin Airport.",
            "no_errors_options": [{"value": "I did not find any errors in the summary"}],
        },
    }[schema]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_every_schema_gives_a_valid_draft(annotator: OfflineAnnotator, schema: str) -> None:
    data = sample(schema)
    draft = annotator.annotate(schema, data)
    assert_valid(schema, draft, data)
    assert draft.choices or draft.spans or draft.ratings


@pytest.mark.parametrize("schema", SCHEMAS)
def test_annotation_is_deterministic(annotator: OfflineAnnotator, schema: str) -> None:
    data = sample(schema)
    assert annotator.annotate(schema, data) == annotator.annotate(schema, dict(data))


#: Summaries of one source each (an article with every model's summary, a hotel's descriptions with
#: each aspect's): the annotator indexes a source once for all of them.
OTHER_SUMMARIES = {
    "summary_flaws": [
        "Boyfriend of 10 years forgot my birthday again; he says birthdays are just a day.",
        "My (27F) boyfriend forgot my birthday on Tuesday. Are birthdays just a day?",
        "He apologized for the 3rd time in Paris. Am I overreacting?",
    ],
    "likert_rubric_es": [
        "Zaragoza rehabilitará 1.800 viviendas de Delicias con 42 millones de fondos europeos.",
        "Marta Lacasa anunció un plan de 50 millones para el barrio de Torrero en 2030.",
        "¡Claro! Aquí tienes un resumen: el plan es magnífico y los vecinos están encantados.",
    ],
    "hotel_spans": [
        "Stay 3 km from Marina Beach, a 5-minute walk from Central Station, with a spa.",
        "The hotel has two outdoor pools and is a 40-minute walk from Dublin Airport.",
        "Relax at the rooftop bar, 10 km from the beach; free parking for every guest.",
    ],
}


def with_summary(schema: str, summary: str) -> dict:
    return {**sample(schema), "summary": summary}


def shared_source_tasks() -> list[tuple[str, dict]]:
    """Tasks of every schema, several of them showing one source with different summaries."""
    tasks = [(schema, with_summary(schema, text)) for schema, texts in OTHER_SUMMARIES.items() for text in texts]
    story = sample("story_consistency")
    tasks += [("story_consistency", {**story, "lines": lines}) for lines in (story["lines"], story["lines"][:1])]
    return tasks + [(schema, sample(schema)) for schema in SCHEMAS]


def drafts_in_a_new_process(order: list[int]) -> list[str]:
    """The drafts of ``shared_source_tasks()`` in ``order``, made by a new process (nothing kept)."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import json, test_offline_annotator as t; "
        "tasks, annotator = t.shared_source_tasks(), t.OfflineAnnotator(); "
        "print(json.dumps([repr(annotator.annotate(*tasks[i])) for i in json.loads(sys.argv[2])]))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent), json.dumps(order)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return json.loads(run.stdout)


def test_a_source_shown_with_several_summaries_gives_each_its_own_answer(annotator: OfflineAnnotator) -> None:
    """The annotator keeps the last sources it indexed (several summaries show one source): every
    summary's draft is the same whichever summary of its source came first, and from four threads
    at once."""
    tasks = shared_source_tasks()
    forward = list(range(len(tasks)))
    first, last = drafts_in_a_new_process(forward), drafts_in_a_new_process(forward[::-1])[::-1]
    assert first == last
    assert len(set(first)) == len(tasks) - 1  # told apart (the story's first two lines repeat its sample)
    order = forward * 2 + forward[::-1]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda i: repr(annotator.annotate(*tasks[i])), order))
    assert together == [first[i] for i in order]


def test_what_is_kept_of_recent_sources_is_bounded() -> None:
    """At most ``RECENT_TEXTS`` sources and ``RECENT_SOURCE_CHARS`` characters of them are kept (a
    backend fed sources at the 60,000-character cap keeps a few, not 32); the oldest go first."""
    made: list[str] = []

    @g.recent
    def index(text: str, lang: str = "en") -> str:
        made.append(text)
        return text.upper()

    small = [f"source {i}" for i in range(g.RECENT_TEXTS + 1)]
    assert [index(text) for text in small] == [text.upper() for text in small]
    index(small[-1]), index(small[1], lang="en")  # kept; a keyword is its own key: made again
    assert made == [*small, small[1]]
    index(small[0])  # the oldest was let go
    assert made[-1] == small[0]
    big = ["x" * (g.RECENT_SOURCE_CHARS // 3) + str(i) for i in range(4)]  # three: a character over the budget
    for text in big:
        index(text)
    made.clear()
    index(big[-1]), index(big[-2])
    assert made == []
    index(big[0])  # two are kept
    assert made == [big[0]]
    huge = "y" * (g.RECENT_SOURCE_CHARS + 1)
    index(huge), index(huge)
    assert made == [big[0], huge, huge]  # never kept


def test_annotator_identity() -> None:
    assert OfflineAnnotator.name == "offline"
    assert isinstance(OfflineAnnotator.version, str) and OfflineAnnotator.version


def test_unknown_schema_gives_an_empty_draft(annotator: OfflineAnnotator) -> None:
    draft = annotator.annotate("no_such_schema", {"summary": "x"})
    assert draft.spans == [] and draft.choices == {} and draft.ratings == {}


# --- garbage in, no exception ---------------------------------------------------------------

GARBAGE = [
    {},
    {"summary": None, "post": None, "title": None},
    {"summary": 12, "post": 3.5, "score": "n/a", "descriptions": ["a", None, 7]},
    {"summary": "", "post": "", "article": "", "story": "", "lines": [], "alternates": []},
    {"lines": [None, 5, {"text": None}, {"alternate": "x"}, ""], "alternates": [None, {"line": 99}]},
    {"lines": "one line\nanother", "alternates": "not a list", "no_errors_options": [None]},
    {"original": None, "generated": 42, "summary": ["a", "b"], "article": {"text": 1}},
    {"summary": "   \n\t ", "descriptions": "🙂", "story": "…", "lines": ["🙂", "?"]},
    {"summary": float("nan"), "score": float("inf"), "no_errors_options": "B"},
]


@pytest.mark.parametrize("schema", [*SCHEMAS, "other"])
@pytest.mark.parametrize("data", GARBAGE)
def test_garbage_input_does_not_raise(annotator: OfflineAnnotator, schema: str, data: dict) -> None:
    draft = annotator.annotate(schema, data)
    assert isinstance(draft, Draft)
    assert "error" not in draft.info, draft.info  # handled, not caught by the safety net
    for span in draft.spans:
        assert span.start < span.end


@pytest.mark.parametrize("data", [None, 5, "text", ["a"]])
def test_non_dict_data_does_not_raise(annotator: OfflineAnnotator, data: object) -> None:
    for schema in SCHEMAS:
        assert isinstance(annotator.annotate(schema, data), Draft)  # type: ignore[arg-type]


def test_huge_fields_are_truncated_not_slow(annotator: OfflineAnnotator) -> None:
    huge = "Mara climbed the steps. " * 20_000  # 480,000 characters
    data = {
        "post": huge,
        "story": huge,
        "article": huge,
        "descriptions": huge,
        "summary": huge,
        "lines": ["Mara climbed the steps."],
    }
    for schema in SCHEMAS:
        draft = annotator.annotate(schema, data)
        assert "error" not in draft.info
        if schema != "augmentation_quality":
            assert draft.info.get("truncated"), schema
        for span in draft.spans:
            assert 0 <= span.start < span.end <= len(huge)


def test_every_story_line_gets_a_verdict_even_if_odd(annotator: OfflineAnnotator) -> None:
    data = {"story": STORY, "lines": ["Mara kept the lighthouse.", None, {"text": ""}, 7]}
    draft = annotator.annotate("story_consistency", data)
    assert [k for k in draft.choices if k.startswith("verdict_")] == [f"verdict_{i}" for i in range(4)]


# --- offsets ---------------------------------------------------------------------------------


def test_offsets_survive_emoji_and_accents_in_summary_flaws(annotator: OfflineAnnotator) -> None:
    data = dict(REDDIT)
    data["summary"] = "Café drama 😅🎂 ☕️: my boyfriend forgot my birthday after 6 years together."
    draft = annotator.annotate("summary_flaws", data)
    assert_valid("summary_flaws", draft, data)
    assert "6" in spans_text(draft, data["summary"])


def test_offsets_survive_emoji_and_accents_in_hotel_spans(annotator: OfflineAnnotator) -> None:
    data = {
        "descriptions": HOTEL + " Ideal for café lovers.",
        "summary": "Très chic 🏨✨ café-style hotel, and it is pet-friendly too 🐶.",
    }
    draft = annotator.annotate("hotel_spans", data)
    assert_valid("hotel_spans", draft, data)
    assert "pet-friendly" in spans_text(error_candidates(data), data["summary"])


def test_offsets_survive_emoji_in_story_lines(annotator: OfflineAnnotator) -> None:
    line = "🌊🌊 Mara rang the bell until dawn while Captain Ahab laughed."
    data = {"story": STORY, "lines": [line]}
    draft = annotator.annotate("story_consistency", data)
    assert draft.choices["verdict_0"] == ["Inconsistent"]
    assert "Ahab" in draft.texts["explanation_0"]
    assert_valid("story_consistency", draft, data)
    assert any("Ahab" in t for t in spans_text(draft, line))


# --- summary_flaws -----------------------------------------------------------------------------


def test_number_contradiction_is_factually_incorrect(annotator: OfflineAnnotator) -> None:
    draft = annotator.annotate("summary_flaws", REDDIT)
    flagged = [s for s in draft.spans if REDDIT["summary"][s.start : s.end] == "6"]
    assert flagged and flagged[0].label == "Factually Incorrect"
    assert "6" in (flagged[0].note or "")
    assert "none_identified" not in draft.choices


def test_faithful_summary_has_none_identified(annotator: OfflineAnnotator) -> None:
    data = dict(REDDIT, summary="My boyfriend forgot my birthday again. Am I overreacting?")
    draft = annotator.annotate("summary_flaws", data)
    assert draft.spans == []
    assert draft.choices == {"none_identified": ["None identified"]}


def test_unknown_name_and_off_topic_chunk_are_flagged(annotator: OfflineAnnotator) -> None:
    data = dict(
        REDDIT, summary="My boyfriend Kevin forgot my birthday. Which laptop brand offers cheap gaming hardware?"
    )
    draft = annotator.annotate("summary_flaws", data)
    suggested = {data["summary"][s.start : s.end]: s.label for s in draft.spans}
    assert suggested.get("Kevin") == "Factually Incorrect"
    found = {data["summary"][s.start : s.end]: s.label for s in flaw_candidates(data)[0]}
    assert found.get("Kevin") == "Factually Incorrect" and "Irrelevant" in found.values()
    assert all(len(t) < len(data["summary"]) / 2 for t in found)  # minimal spans


def test_incoherence_is_flagged(annotator: OfflineAnnotator) -> None:
    data = dict(REDDIT, summary="My boyfriend the the forgot my birthday and I like people with no skill in do.")
    spans, _ = flaw_candidates(data)
    incoherent = [data["summary"][s.start : s.end] for s in spans if s.label == "Incoherent"]
    assert "the the" in incoherent and "in do" in incoherent


# --- augmentation_quality -----------------------------------------------------------------------


def test_seed_example_with_many_errors(annotator: OfflineAnnotator) -> None:
    draft = annotator.annotate("augmentation_quality", sample("augmentation_quality"))
    assert draft.choices["SP"] == ["3"]
    assert draft.choices["SC"] in (["1"], ["2"])
    assert len(draft.info["syntax_errors"]) >= 3


def test_identical_text_is_full_preservation(annotator: OfflineAnnotator) -> None:
    data = {"original": ITALIAN_ORIGINAL, "generated": ITALIAN_ORIGINAL}
    assert annotator.annotate("augmentation_quality", data).choices == {"SP": ["3"], "SC": ["3"]}


def test_lost_figures_and_drift_give_poor_preservation(annotator: OfflineAnnotator) -> None:
    data = {
        "original": "Il ministro dell'economia ha presentato il bilancio preventivo 2024 in "
        "parlamento, con previsioni di crescita del PIL al 1,2%.",
        "generated": "Il ministro promette miracoli economici impossibili mentre ignora la crisi "
        "che devasta le famiglie italiane e favorisce i ricchi.",
    }
    assert annotator.annotate("augmentation_quality", data).choices["SP"] == ["1"]


def test_correct_italian_has_no_syntax_errors(annotator: OfflineAnnotator) -> None:
    text = (
        "L'Ucraina mantiene relazioni con la NATO mentre affronta tensioni nella regione del "
        "Donbass, dove risiedono popolazioni russofone. I ministri brindano all'ennesimo "
        "incasso e le famiglie non arrivano a fine mese. Un'invasione di cavallette ha "
        "colpito i campi, secondo i dati diffusi dall'Istat nel 2023."
    )
    draft = annotator.annotate("augmentation_quality", {"original": text, "generated": text})
    assert draft.info["syntax_errors"] == [] and draft.choices["SC"] == ["3"]


# --- story_consistency ---------------------------------------------------------------------------


def test_story_verdicts_commentary_and_swaps(annotator: OfflineAnnotator) -> None:
    data = sample("story_consistency")
    draft = annotator.annotate("story_consistency", data)
    assert draft.choices["verdict_0"] == ["Consistent"]
    assert draft.choices["verdict_2"] == ["N/A, just commentary"]
    assert draft.choices["swap_0"][0] in ("Yes", "No") and draft.texts["swap_explanation_0"]


def test_wrong_number_makes_a_line_inconsistent(annotator: OfflineAnnotator) -> None:
    data = {"story": STORY, "lines": ["Mara kept the lighthouse on Gull Island for 12 years."]}
    draft = annotator.annotate("story_consistency", data)
    assert draft.choices["verdict_0"] == ["Inconsistent"]
    assert "12" in draft.texts["explanation_0"]


def test_better_grounded_alternate_is_swapped(annotator: OfflineAnnotator) -> None:
    data = {
        "story": STORY,
        "lines": [
            "Mara kept the lighthouse on Gull Island for thirty years.",
            "A ferry captain named Boris rescued Mara from the storm.",
        ],
        "alternates": [
            {
                "line": 1,
                "text": "A ferry captain named Boris rescued Mara.",
                "alternate": "Mara rang the bell until dawn for a fishing boat.",
            }
        ],
    }
    draft = annotator.annotate("story_consistency", data)
    assert draft.choices["verdict_1"] == ["Inconsistent"]
    assert draft.choices["swap_0"] == ["Yes"]
    assert "explanation_1" in draft.texts


def test_commentary_detection() -> None:
    from judgelab.backend.annotators.offline.schemas.story_consistency import is_commentary

    assert is_commentary("This poignant tale explores themes of loss and duty.")
    assert is_commentary("The story serves as a reminder that kindness matters.")
    assert not is_commentary("Mara rang the bell until dawn.")


# --- likert_rubric_es -----------------------------------------------------------------------------


def rubric(annotator: OfflineAnnotator, summary: str, article: str = ARTICLE_ES) -> dict[str, int]:
    draft = annotator.annotate("likert_rubric_es", {"article": article, "summary": summary})
    assert_valid("likert_rubric_es", draft, {"summary": summary})
    return {k: int(v[0]) for k, v in draft.choices.items()}


def test_chatbot_phrase_lowers_relevance(annotator: OfflineAnnotator) -> None:
    plain = rubric(annotator, SUMMARY_ES)
    chatty = rubric(annotator, SUMMARY_ES + "\n\n¿Te gustaría que elabore algún aspecto específico de este resumen?")
    assert chatty["Relevance"] < plain["Relevance"]


def test_subjective_valuation_lowers_relevance(annotator: OfflineAnnotator) -> None:
    plain = rubric(annotator, SUMMARY_ES)
    valued = rubric(annotator, SUMMARY_ES + " Sin duda, es una noticia impresionante.")
    assert valued["Relevance"] < plain["Relevance"]


def test_bullets_lower_coherence(annotator: OfflineAnnotator) -> None:
    prose = rubric(annotator, SUMMARY_ES)
    fragments = rubric(annotator, "- Zaragoza\n- 42 millones\n- Delicias\n- junio")
    developed = rubric(
        annotator,
        "- El Ayuntamiento de Zaragoza aprobó un plan de 42 millones.\n"
        "- El plan rehabilitará 1.800 viviendas en el barrio de Delicias.\n"
        "- Las obras empezarán en junio con fondos europeos.",
    )
    assert prose["Coherence"] == 5
    assert fragments["Coherence"] <= 2
    assert developed["Coherence"] == 3


def test_single_sentence_is_not_penalised_for_coherence(annotator: OfflineAnnotator) -> None:
    assert rubric(annotator, "Zaragoza aprobó un plan para rehabilitar viviendas.")["Coherence"] == 5


def test_invented_facts_lower_consistency(annotator: OfflineAnnotator) -> None:
    faithful = rubric(annotator, SUMMARY_ES)
    invented = rubric(
        annotator,
        SUMMARY_ES.replace("42 millones", "90 millones") + " El alcalde Pedro Gómez dimitió por el escándalo.",
    )
    assert faithful["Consistency"] == 5
    assert invented["Consistency"] <= 3


def test_copy_of_the_article_is_irrelevant_but_complete(annotator: OfflineAnnotator) -> None:
    scores = rubric(annotator, ARTICLE_ES)
    assert scores["Relevance"] == 1 and scores["5W"] == 5 and scores["Consistency"] == 5


def test_english_summary_has_low_fluency(annotator: OfflineAnnotator) -> None:
    english = (
        "Here is a summary of the article: the city council of Zaragoza approved a plan "
        "that will renovate the old houses of the neighbourhood, and the works will start "
        "in June with funds from the European Union."
    )
    assert rubric(annotator, english)["Fluency"] == 1


def test_spanish_slips_lower_fluency(annotator: OfflineAnnotator) -> None:
    sloppy = "El Ayuntamiento a aprobado un plan para los vecino de Delicias. el plan costaron 42 millones de euros"
    assert rubric(annotator, sloppy)["Fluency"] <= 2


def test_missing_ws_lower_5w(annotator: OfflineAnnotator) -> None:
    assert rubric(annotator, "Se aprobó un plan.")["5W"] < rubric(annotator, SUMMARY_ES)["5W"]


# --- hotel_spans ----------------------------------------------------------------------------------


def hotel(annotator: OfflineAnnotator, summary: str, **extra: object) -> tuple[Draft, dict]:
    data = {"descriptions": HOTEL, "summary": summary, **extra}
    draft = annotator.annotate("hotel_spans", data)
    assert_valid("hotel_spans", draft, data)
    return draft, data


def labelled(draft: Draft | list[SpanDraft], text: str) -> dict[str, str]:
    spans = draft.spans if isinstance(draft, Draft) else draft
    return {text[s.start : s.end]: s.label for s in spans}


def test_hotel_clean_summary_leaves_the_no_errors_box_to_the_reviewer(annotator: OfflineAnnotator) -> None:
    # Intended change: on real human error spans, an output where the rules found
    # nothing was left without errors by the human only a quarter of the time, so the optional
    # no-errors box is no longer ticked (its fitted probability is below 0.5).
    draft, data = hotel(
        annotator,
        "Relax by the outdoor pool or in the spa, a 5-minute walk from Central Station.",
        no_errors_options=[{"value": "There were no errors in the summary"}],
    )
    assert draft.spans == [] and error_candidates(data) == []
    assert draft.choices == {}
    assert draft.ratings == {"impression": 6}
    assert draft.scores["impression"] == pytest.approx(1 / 7, abs=0.001)


def test_hotel_no_errors_value_comes_from_the_task_else_the_schema() -> None:
    from judgelab.backend.annotators.offline.schemas.hotel_spans import no_errors_value

    assert no_errors_value({"no_errors_options": [{"value": "There were no errors in the summary"}]}) == (
        "There were no errors in the summary"
    )
    assert no_errors_value({}) == "I did not find any errors in the summary"


def test_hotel_number_contradiction_is_incorrect(annotator: OfflineAnnotator) -> None:
    draft, data = hotel(annotator, "Dublin Airport is 40 km from the hotel.")
    assert labelled(draft, data["summary"]).get("40 km") == "Incorrect"
    assert draft.ratings["impression"] < 6


def test_hotel_travel_time_without_times_is_not_checkable(annotator: OfflineAnnotator) -> None:
    _, data = hotel(annotator, "Dublin Airport is a 15-minute drive away.")
    assert labelled(error_candidates(data), data["summary"]).get("15-minute drive") == "Not Checkable"


def test_hotel_other_airport_is_incorrect(annotator: OfflineAnnotator) -> None:
    draft, data = hotel(annotator, "Shannon Airport is close by, and guests love the pool.")
    assert labelled(draft, data["summary"]).get("Shannon Airport") == "Incorrect"


def test_hotel_unknown_amenity_and_far_beach(annotator: OfflineAnnotator) -> None:
    draft, data = hotel(annotator, "This beachfront hotel has a gym and a pet-friendly policy.")
    found = labelled(error_candidates(data), data["summary"])
    assert found.get("beachfront") == "Misleading"
    assert found.get("gym") == "Not Checkable" and found.get("pet-friendly") == "Not Checkable"
    cost = sum(IMPRESSION_COST[s.label] for s in draft.spans)  # only the suggested spans cost
    assert draft.ratings["impression"] == max(1, min(7, round(6 - cost)))


def test_hotel_spans_never_overlap(annotator: OfflineAnnotator) -> None:
    summaries = [
        "Steps from Marina Beach, this beachfront spa hotel offers a rooftop pool, a 24-hour gym "
        "and free airport shuttle to Shannon Airport, a 10-minute walk away.",
        "Just steps from Central Station and a 2-minute walk from Marina Beach, with 3 pools, "
        "4 restaurants and 24-hour room service at the beachfront Heathrow Airport Hotel.",
        "Beachfront beachfront beachfront: 7 km 7 km 15-minute drive 15-minute drive gym gym.",
    ]
    for summary in summaries:
        draft, data = hotel(annotator, summary)
        candidates = error_candidates(data)
        assert candidates, summary
        for a, b in combinations(candidates, 2):
            assert a.end <= b.start or b.end <= a.start, (summary, a, b)
        assert 1 <= draft.ratings["impression"] <= 7


# --- grounding utilities ------------------------------------------------------------------------


def test_tokens_and_numbers_keep_offsets() -> None:
    text = "🙂 L'energia è 5,2% più cara; 10,000 steps, one hundred and twelve stairs."
    for token in g.tokenize(text):
        assert text[token.start : token.end] == token.text
    numbers = g.extract_numbers(text, lang="en")
    assert {n.text: n.value for n in numbers}["10,000"] == 10000
    assert {n.text: n.value for n in numbers}["one hundred and twelve"] == 112
    assert g.parse_number("5,2", "it") == 5.2 and g.parse_number("1.800", "es") == 1800


def test_sentences_and_clauses_are_trimmed_in_place() -> None:
    text = "  First one, with a clause.  Second?\n- bullet line  "
    for start, end in g.split_sentences(text) + g.split_lines(text):
        assert 0 <= start < end <= len(text)
        assert text[start:end] == text[start:end].strip()
    sentences = [text[a:b] for a, b in g.split_sentences(text)]
    assert sentences[0] == "First one, with a clause."
    first = g.split_sentences(text)[0]
    assert [text[a:b] for a, b in g.split_clauses(text, *first)] == ["First one", "with a clause"]
    assert g.trim_span(text, 0, 2) is None and g.trim_span(text, 0, 3) == (2, 3)


def test_stems_and_entities() -> None:
    assert g.stem("ministers") == g.stem("minister")
    assert g.stem("told") == g.stem("tells")
    assert g.stem("Città") == "citta"
    index = g.SourceIndex(["Le organizzazioni non governative operano a Lampedusa."], lang="it")
    ong = g.extract_entities("Le ONG sbarcano.", g.STOPWORDS_IT)[0]
    assert index.has_entity(ong)
    names = [e.text for e in g.extract_entities("He met Anne Hathaway at the Bank of America.")]
    assert names == ["Anne Hathaway", "Bank of America"]


def test_fold_aligned_keeps_length() -> None:
    text = "Ｃafé ﬁne 🙂 ÀÉÎ"
    assert len(g.fold_aligned(text)) == len(text)
    assert g.fold_aligned("Café") == "cafe"
