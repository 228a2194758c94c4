"""Calibrated scores of the offline annotator: every suggested result carries a score in
[0, 1] that is a fitted probability; "Inconsistent" and flaw spans only from the fitted threshold
on; a required verdict below it gets the most likely answer with its score; and, on the real
StorySumm and BASSE data (skipped when ``../shared/data`` is absent), the stored parameters are the
ones the val/training split gives and they reproduce the measured test-split figures."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from shared_data import SHARED_DATA

from judgelab.backend.annotators.offline import OfflineAnnotator
from judgelab.backend.annotators.offline.calibration import (
    LogisticModel,
    prediction_score,
    result_scores,
    score_spans,
)
from judgelab.backend.annotators.offline.fitted import hotel_spans as hotel_fitted
from judgelab.backend.annotators.offline.fitted import story_consistency as story_fitted
from judgelab.backend.annotators.offline.fitted import summary_flaws as flaws_fitted
from judgelab.backend.annotators.offline.schemas.hotel_spans import error_candidates
from judgelab.backend.annotators.offline.schemas.story_consistency import Story, check_line
from judgelab.backend.annotators.offline.schemas.summary_flaws import flaw_candidates
from judgelab.backend.draft import Draft, SpanDraft
from judgelab.backend.results import build_results
from judgelab.configs.label_config import parse_label_config
from judgelab.configs.schema import all_schemas, get_schema
from judgelab.configs.task_data import prepare_task_data

ROOT = Path(__file__).resolve().parents[1]
DATA = SHARED_DATA
STORYSUMM = DATA / "storysumm" / "storysumm.json"
BASSE = DATA / "basse" / "BASSE.es.jsonl"

FILLER = " ".join(f"The weather on day {n} was grey and nobody went out." for n in range(40))
STORY = (
    "Mara kept the lighthouse on Gull Island. Every night she climbed the steps and lit the lamp. "
    + FILLER
    + " At the end of the winter a fishing boat sank near the harbour and the crew swam ashore."
)


@pytest.fixture(scope="module")
def annotator() -> OfflineAnnotator:
    return OfflineAnnotator()


def sample_drafts(annotator: OfflineAnnotator) -> list[tuple[str, dict, Draft]]:
    out = []
    for name, schema in sorted(all_schemas().items()):
        for task in schema.samples():
            data = prepare_task_data(schema, task["data"])
            out.append((name, data, annotator.annotate(name, data)))
    return out


def test_every_suggested_result_has_a_probability_as_score(annotator: OfflineAnnotator) -> None:
    drafts = sample_drafts(annotator)
    assert drafts
    for name, _, draft in drafts:
        answered = [*draft.choices, *draft.ratings, *draft.numbers, *draft.texts]
        assert set(answered) <= set(draft.scores), (name, answered, draft.scores)
        for score in [*draft.scores.values(), *(s.score for s in draft.spans)]:
            assert score is not None and 0.0 <= score <= 1.0, (name, score)
        if answered or draft.spans:
            assert draft.score == prediction_score(draft)
            assert draft.score == pytest.approx(sum(result_scores(draft)) / len(result_scores(draft)), abs=1e-3)


def test_label_studio_results_carry_the_scores(annotator: OfflineAnnotator) -> None:
    for name, data, draft in sample_drafts(annotator):
        built = build_results(draft, parse_label_config(get_schema(name).config_xml), data)
        assert not built.dropped
        for region in built.regions:
            assert 0.0 <= region["score"] <= 1.0, (name, region)


def test_line_probability_rises_with_dispersion_and_falls_with_coverage() -> None:
    model = story_fitted.LINE_MODEL
    grid = [i / 10 for i in range(11)]
    for coverage in grid:
        by_dispersion = [model.probability({"coverage": coverage, "dispersion": d}) for d in grid]
        assert by_dispersion == sorted(by_dispersion) and by_dispersion[0] < by_dispersion[-1]
    for dispersion in grid:
        by_coverage = [model.probability({"coverage": c, "dispersion": dispersion}) for c in grid]
        assert by_coverage == sorted(by_coverage, reverse=True)
    assert all(0.0 < model.probability({"coverage": c, "dispersion": d}) < 1.0 for c in grid for d in grid)


def test_logistic_model_is_the_formula() -> None:
    model = LogisticModel(intercept=0.5, weights={"x": 2.0}, means={"x": 1.0}, scales={"x": 0.5})
    assert model.probability({"x": 1.0}) == pytest.approx(1 / (1 + math.exp(-0.5)))
    assert model.probability({"x": 2.0}) == pytest.approx(1 / (1 + math.exp(-4.5)))


def test_a_supported_line_is_consistent_with_a_high_score(annotator: OfflineAnnotator) -> None:
    line = "Every night Mara climbed the steps and lit the lamp."
    check = check_line(line, Story.of(STORY))
    assert check.probability < story_fitted.INCONSISTENT_THRESHOLD
    draft = annotator.annotate("story_consistency", {"story": STORY, "lines": [line]})
    assert draft.choices == {"verdict_0": ["Consistent"]}
    assert draft.scores["verdict_0"] == pytest.approx(1 - check.probability, abs=1e-3)
    assert draft.spans == [] and draft.texts == {}


def test_a_line_joining_distant_details_is_flagged_with_its_probability(annotator: OfflineAnnotator) -> None:
    line = "Mara climbed the lighthouse steps while the fishing crew swam ashore from the sinking boat."
    check = check_line(line, Story.of(STORY))
    assert check.probability >= story_fitted.INCONSISTENT_THRESHOLD
    draft = annotator.annotate("story_consistency", {"story": STORY, "lines": [line]})
    assert draft.choices == {"verdict_0": ["Inconsistent"]}
    assert draft.scores["verdict_0"] == pytest.approx(check.probability, abs=1e-3)
    assert draft.texts["explanation_0"] and draft.scores["explanation_0"] == draft.scores["verdict_0"]
    assert [s.score for s in draft.spans] == [draft.scores["verdict_0"]]


def test_below_the_threshold_the_required_verdict_gets_the_most_likely_answer(annotator: OfflineAnnotator) -> None:
    lines = [
        "Every night Mara climbed the steps and lit the lamp.",
        "Mara climbed the lighthouse steps while the fishing crew swam ashore from the sinking boat.",
        "",
        "The story paints a vivid portrait of devotion.",
    ]
    draft = annotator.annotate("story_consistency", {"story": STORY, "lines": lines})
    story = Story.of(STORY)
    for i, line in enumerate(lines):
        verdict = draft.choices[f"verdict_{i}"]  # required: never left empty
        check = check_line(line, story)
        if check.commentary:
            assert verdict == ["N/A, just commentary"]
        elif check.probability < story_fitted.INCONSISTENT_THRESHOLD:
            assert verdict == ["Consistent"] and f"explanation_{i}" not in draft.texts
            assert draft.scores[f"verdict_{i}"] == pytest.approx(1 - check.probability, abs=1e-3)
        else:
            assert verdict == ["Inconsistent"]


def test_spans_below_the_threshold_are_not_suggested() -> None:
    spans = [SpanDraft("flaw", 0, 3, "A"), SpanDraft("flaw", 4, 6, "B"), SpanDraft("flaw", 7, 9, "C")]
    kept = score_spans(spans, {"A": 0.6, "B": 0.2}, default=0.4, threshold=0.4)
    assert [(s.label, s.score) for s in kept] == [("A", 0.6), ("C", 0.4)]
    assert spans[1].score == 0.2  # scored, but not suggested


@pytest.mark.parametrize(
    ("schema", "data", "candidates", "fitted"),
    [
        (
            "summary_flaws",
            {
                "post": "My boyfriend forgot my birthday again. Am I overreacting?",
                "summary": "My boyfriend Kevin forgot my birthday after 6 years. Which laptop brand offers cheap "
                "gaming hardware? The the cake was was late.",
            },
            lambda data: flaw_candidates(data)[0],
            flaws_fitted,
        ),
        (
            "hotel_spans",
            {
                "descriptions": "Harbour View Hotel is 3 km from Marina Beach. Dublin Airport is 25 km away.",
                "summary": "This beachfront hotel has a gym and is 40 km from Dublin Airport.",
            },
            error_candidates,
            hotel_fitted,
        ),
    ],
)
def test_only_spans_at_or_above_the_fitted_threshold_are_suggested(
    annotator: OfflineAnnotator, schema: str, data: dict, candidates, fitted
) -> None:
    found = candidates(data)
    draft = annotator.annotate(schema, data)
    expected = [
        (s.start, s.end, s.label)
        for s in found
        if fitted.SPAN_HIT_RATE.get(s.label, fitted.UNSEEN_RATE) >= fitted.MIN_SPAN_SCORE
    ]
    assert [(s.start, s.end, s.label) for s in draft.spans] == expected
    assert len(found) > len(expected)  # these texts have candidates below the threshold
    assert all(s.score == round(fitted.SPAN_HIT_RATE.get(s.label, fitted.UNSEEN_RATE), 3) for s in draft.spans)


# --- the real data --------------------------------------------------------------------------------

needs_storysumm = pytest.mark.skipif(not STORYSUMM.exists(), reason="../shared/data/storysumm is absent")
needs_basse = pytest.mark.skipif(not BASSE.exists(), reason="../shared/data/basse is absent")


@pytest.fixture(scope="module")
def bench_modules():
    sys.path.insert(0, str(ROOT / "bench"))
    import basse_offline
    import fit_offline_storysumm
    import storysumm_offline

    yield storysumm_offline, fit_offline_storysumm, basse_offline
    sys.path.remove(str(ROOT / "bench"))


@needs_storysumm
def test_stored_story_parameters_are_the_ones_val_gives(bench_modules, capsys) -> None:
    _, fit, _ = bench_modules
    assert fit.main(["--data", str(STORYSUMM)]) == 0
    printed = capsys.readouterr().out
    assert printed[printed.index('"""') :].strip() == fit.TARGET.read_text().strip()


@needs_storysumm
def test_val_fitted_story_model_on_the_storysumm_test_split(bench_modules) -> None:
    """Measured test-split figures (README): line BA 0.614, summary BA 0.548, 87 lines flagged for
    45 inconsistent ones; before the calibrated scores they were 0.540, 0.476 and 156."""
    bench, _, _ = bench_modules
    items = [item for item in bench.load_items(STORYSUMM) if item.split == "test"]
    predictions = bench.annotator_predictions(items)
    line_ba, summary_ba, n_lines, _ = bench.scores(items, predictions)
    flagged = sum(1 for item in items for verdict, _ in predictions[item.item_id] if verdict == 0)
    gold = sum(item.line_gold.count(0) for item in items)
    assert n_lines == 394 and gold == 45
    assert (round(line_ba, 3), round(summary_ba, 3), flagged) == (0.614, 0.548, 87)
    assert flagged <= 2 * gold


@needs_basse
def test_suggested_ratings_agree_with_the_basse_human_median(bench_modules) -> None:
    _, _, bench = bench_modules
    rated = [r for r in bench.load_rated(BASSE) if r.round in bench.TEST_ROUNDS]
    suggested = bench.suggestions(rated)
    for criterion in bench.CRITERIA:
        pairs = bench.criterion_pairs(rated, suggested, criterion)
        assert len(pairs) == 360
        assert bench.qwk(pairs) > 0.15, criterion
