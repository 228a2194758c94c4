"""What the offline annotator's evidence can tell on StorySumm, and why the StorySumm targets stay out of reach.

Every line of StorySumm gets the shipped annotator's evidence (``check_line``: passage coverage,
dispersion, unknown names and numbers, commentary, the shipped P(inconsistent)) and the candidate
evidence tried in round 2, computed here:

- ``coverage_rel`` / ``dispersion_rel``: minus the mean over the summary's other lines about the
  story (a summary's style, close or loose, shifts all its lines alike);
- ``names_elsewhere``: the line names a character of the story, but not one found in the line's
  best passage (who did what);
- ``order``: the share of the summary's other lines whose best passages it is out of order with;
- ``corroboration`` (round 3): the share of the line's content words that the other summaries of
  the same story use too (StorySumm has three summaries per story, from different models; a wrong
  inference should be one model's own, as in SelfCheckGPT);
- with ``--embeddings``: ``emb``, the line's best cosine with a story sentence under
  all-MiniLM-L6-v2 (``bench/minilm_numpy.py``), and ``emb_rel``.

It prints, from one run:

1. for each candidate feature set and decision rule, the figures of leave-one-story-out
   cross-validation within val (the line model and threshold fitted on 10 of val's 11 stories)
   and of the model fitted on all of val and scored on test. ``*`` marks the shipped model
   (round 1), ``>`` the one round 2 chose from the val column before scoring test (commit 1195bc2);
2. each feature's line-level AUC on val and on test, oriented so that 0.5 is no signal and more
   is the expected direction (less coverage, more dispersion, ... means inconsistent);
3. summary-level scores' AUC for "unfaithful" on val and on test, and the best summary balanced
   accuracy any threshold on the shipped model's scores could reach on test if it were chosen on
   test itself (an upper bound, not a result);
4. with ``--embeddings``, the CPU time per task of the embeddings.

    python bench/storysumm_evidence.py [--data PATH] [--embeddings] [--cap 1.0]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fit_offline_storysumm import fit_logistic, smoothed_rate  # noqa: E402
from storysumm_offline import DEFAULT_DATA, Item, balanced_accuracy, load_items  # noqa: E402

from judgelab.backend.annotators import grounding as g  # noqa: E402
from judgelab.backend.annotators.offline.schemas.story_consistency import (  # noqa: E402
    _STORY_META_STEMS,
    _STORY_META_WORDS,
    PASSAGE_SENTENCES,
    LineCheck,
    Story,
    check_line,
)

ROUND_1 = ("coverage", "dispersion")
RELATIVE = ("coverage_rel", "dispersion_rel", "names_elsewhere", "order")
FEATURE_SETS = {
    "round 1: coverage, dispersion": ROUND_1,
    "relative to the summary": ("coverage_rel", "dispersion_rel"),
    "relative + names elsewhere": ("coverage_rel", "dispersion_rel", "names_elsewhere"),
    "relative + names + order": RELATIVE,
    "absolute + relative + names + order": ROUND_1 + RELATIVE,
}
EMBEDDING_SETS = {
    "round 1 + MiniLM similarity": (*ROUND_1, "emb"),
    "relative + names + order + MiniLM": (*RELATIVE, "emb_rel"),
}
#: Features oriented so that a larger value should mean "inconsistent" (AUC above 0.5 = as expected).
ORIENTATION = {"coverage": -1, "coverage_rel": -1, "emb": -1, "emb_rel": -1, "corroboration": -1}
SHIPPED = ("round 1: coverage, dispersion", "every line >= t, for line BA")
PRE_REGISTERED = ("relative + names + order", "top line if P(summary) >= t, for summary BA")


@dataclass
class Lines:
    """Lines as arrays: feature dicts, gold (1 = inconsistent), summary, story, split, judged, facts."""

    features: list[dict[str, float]]
    gold: np.ndarray
    summary: np.ndarray
    story: np.ndarray
    judged: np.ndarray  # about the story: not commentary, not empty
    has_facts: np.ndarray  # names or numbers the story lacks
    faithful: dict[str, int] = field(default_factory=dict)

    def x(self, names: tuple[str, ...]) -> np.ndarray:
        return np.array([[f[n] for n in names] for f in self.features], dtype=float)

    def subset(self, mask: np.ndarray) -> Lines:
        keep = [f for f, k in zip(self.features, mask, strict=True) if k]
        return Lines(
            keep,
            self.gold[mask],
            self.summary[mask],
            self.story[mask],
            self.judged[mask],
            self.has_facts[mask],
            self.faithful,
        )


def best_passage(story: Story, stems: set[str]) -> int | None:
    """First sentence of the earliest window of PASSAGE_SENTENCES sentences holding most of ``stems``."""
    hits: dict[int, int] = {}
    for stem in stems:
        sentences = story.passages.where.get(stem, ())
        for start in {s for k in sentences for s in range(max(0, k - PASSAGE_SENTENCES + 1), k + 1)}:
            hits[start] = hits.get(start, 0) + 1
    if not hits:
        return None
    most = max(hits.values())
    return min(start for start, count in hits.items() if count == most)


def names_elsewhere(line: str, story: Story, passage: int | None) -> int:
    """How many of the line's names the story has, but not in the line's best passage."""
    if passage is None:
        return 0
    window = set(range(passage, passage + PASSAGE_SENTENCES))
    names = [e for e in (g.without_initial_word(line, e) for e in g.extract_entities(line, g.STOPWORDS_EN)) if e]
    return sum(
        1
        for e in names
        if story.index.has_entity(e)
        and not {k for s in g.stem_set(e.text, g.STOPWORDS_EN) for k in story.passages.where.get(s, ())} & window
    )


def content_stems(text: str) -> set[str]:
    words = (t for t in g.tokenize(text) if g.is_content(t, g.STOPWORDS_EN) and t.folded not in _STORY_META_WORDS)
    return {g.stem(t.text) for t in words} - _STORY_META_STEMS


def summary_evidence(item: Item, story: Story, embed: Callable[[list[str]], np.ndarray] | None) -> list[dict]:
    """The features of every line of one summary."""
    checks: list[LineCheck] = [check_line(line, story) for line in item.lines]
    rows = []
    for line, check in zip(item.lines, checks, strict=True):
        passage = best_passage(story, content_stems(line))
        rows.append(
            {
                "coverage": check.coverage,
                "dispersion": check.dispersion,
                "names_elsewhere": float(names_elsewhere(line, story, passage) > 0),
                "passage": passage,
                "shipped_p": check.probability,
                "judged": not check.commentary and bool(line.strip()),
                "facts": check.facts_missing > 0,
            }
        )
    if embed is not None:
        similarity = embed(item.lines) @ embed(sentence_texts(item.story)).T
        for row, best in zip(rows, similarity.max(axis=1), strict=True):
            row["emb"] = float(best)
    judged = [r for r in rows if r["judged"]]
    for name in ("coverage", "dispersion", "emb"):
        if judged and name in judged[0]:
            mean = sum(r[name] for r in judged) / len(judged)
            for r in rows:
                r[f"{name}_rel"] = r[name] - mean if r["judged"] else 0.0
    placed = [(k, r["passage"]) for k, r in enumerate(judged) if r["passage"] is not None]
    for r in rows:
        r["order"] = 0.0
    for k, r in enumerate(judged):
        others = [(j, p) for j, p in placed if j != k]
        here = r["passage"]
        if here is not None and others:
            r["order"] = sum(1 for j, p in others if (j < k and p > here) or (j > k and p < here)) / len(others)
    return rows


def sentence_texts(text: str) -> list[str]:
    return [text[a:b] for a, b in g.split_sentences(text)]


def corroboration(item: Item, items: list[Item]) -> list[float]:
    """Per line of ``item``, the share of its content stems found in the other summaries of its story."""
    others = set().union(
        *(content_stems(" ".join(o.lines)) for o in items if o.story_id == item.story_id and o is not item)
    )
    return [len(s & others) / len(s) if (s := content_stems(line)) else 1.0 for line in item.lines]


def evidence(items: list[Item], embed: Callable[[list[str]], np.ndarray] | None = None) -> Lines:
    features, gold, summary, story_ids = [], [], [], []
    stories: dict[str, Story] = {}
    for item in items:
        story = stories.setdefault(item.story, Story.of(item.story))
        rows = summary_evidence(item, story, embed)
        for row, share in zip(rows, corroboration(item, items), strict=True):
            row["corroboration"] = share
        features += rows
        gold += [1 - y for y in item.line_gold]
        summary += [item.item_id] * len(item.lines)
        story_ids += [item.story_id] * len(item.lines)
    return Lines(
        features,
        np.array(gold),
        np.array(summary),
        np.array(story_ids),
        np.array([f["judged"] for f in features]),
        np.array([f["facts"] for f in features]),
        {item.item_id: item.faithful for item in items},
    )


# --- models, rules, figures -----------------------------------------------------------------------


@dataclass
class LineModel:
    names: tuple[str, ...]
    intercept: float
    weights: np.ndarray
    means: np.ndarray
    scales: np.ndarray
    fact_rate: float

    @classmethod
    def fit(cls, lines: Lines, names: tuple[str, ...]) -> LineModel:
        judged = lines.subset(lines.judged)
        intercept, weights, means, scales = fit_logistic(judged.x(names), judged.gold.astype(float))
        facts = judged.gold[judged.has_facts]
        return cls(names, intercept, weights, means, scales, smoothed_rate(int(facts.sum()), len(facts)))

    def probabilities(self, lines: Lines) -> np.ndarray:
        p = 1 / (1 + np.exp(-(self.intercept + ((lines.x(self.names) - self.means) / self.scales) @ self.weights)))
        p = np.where(lines.has_facts, np.maximum(p, self.fact_rate), p)
        return np.where(lines.judged, p, 0.0)


def summary_probabilities(lines: Lines, p: np.ndarray) -> dict[str, float]:
    return {s: float(1 - np.prod(1 - p[lines.summary == s])) for s in dict.fromkeys(lines.summary)}


def every_line(lines: Lines, p: np.ndarray, threshold: float) -> np.ndarray:
    return lines.judged & (p >= threshold)


def top_line(lines: Lines, p: np.ndarray, threshold: float) -> np.ndarray:
    flags = np.zeros(len(p), dtype=bool)
    for s, p_summary in summary_probabilities(lines, p).items():
        idx = np.flatnonzero((lines.summary == s) & lines.judged)
        if len(idx) and p_summary >= threshold:
            flags[idx[int(np.argmax(p[idx]))]] = True
    return flags


Rule = Callable[[Lines, np.ndarray, float], np.ndarray]
RULES: dict[str, tuple[Rule, str]] = {
    "every line >= t, for line BA": (every_line, "line"),
    "every line >= t, for summary BA": (every_line, "summary"),
    "top line if P(summary) >= t, for summary BA": (top_line, "summary"),
}


@dataclass(frozen=True)
class Figures:
    line_ba: float
    summary_ba: float
    flagged: int
    gold: int


def figures(lines: Lines, flags: np.ndarray) -> Figures:
    ids = list(dict.fromkeys(lines.summary))
    gold = [lines.faithful[s] for s in ids]
    predicted = [0 if flags[lines.summary == s].any() else 1 for s in ids]
    return Figures(
        balanced_accuracy(list(1 - lines.gold), list(1 - flags.astype(int))),
        balanced_accuracy(gold, predicted),
        int(flags.sum()),
        int(lines.gold.sum()),
    )


def choose_threshold(lines: Lines, p: np.ndarray, rule: Rule, target: str, cap: float) -> float:
    """Best ``target`` BA flagging <= cap x gold lines; ties go to the better summary BA (for the
    summary target), then to the higher threshold (round 1's choice, for the line target)."""
    if rule is top_line:  # round 2's choice: halfway between consecutive summary probabilities
        values = sorted(set(summary_probabilities(lines, p).values()), reverse=True)
        candidates = [(a + b) / 2 for a, b in zip(values, [*values[1:], 0.0], strict=True)]
    else:  # round 1's: the line probabilities themselves, rounded as the stored threshold is
        candidates = sorted(set(np.round(p[lines.judged], 6).tolist()), reverse=True)
    best: tuple[tuple[float, float], float] | None = None
    for threshold in candidates:
        result = figures(lines, rule(lines, p, threshold))
        if result.flagged > cap * result.gold:
            break
        key = (result.summary_ba, result.line_ba) if target == "summary" else (result.line_ba, 0.0)
        if best is None or key > (best[0][0] + 1e-12, best[0][1] + 1e-12):
            best = (key, threshold)
    return best[1] if best else 1.0


def fit_and_flag(train: Lines, test: Lines, names: tuple[str, ...], rule_name: str, cap: float) -> np.ndarray:
    rule, target = RULES[rule_name]
    model = LineModel.fit(train, names)
    threshold = choose_threshold(train, model.probabilities(train), rule, target, cap)
    return rule(test, model.probabilities(test), threshold)


def cross_validate(val: Lines, names: tuple[str, ...], rule_name: str, cap: float) -> Figures:
    flags = np.zeros(len(val.gold), dtype=bool)
    for story in sorted(set(val.story)):
        held_out = val.story == story
        flags[held_out] = fit_and_flag(val.subset(~held_out), val.subset(held_out), names, rule_name, cap)
    return figures(val, flags)


def auc(score: np.ndarray, positive: np.ndarray) -> float:
    pos, neg = score[positive == 1], score[positive == 0]
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


# --- the report ------------------------------------------------------------------------------------


def print_rules(val: Lines, test: Lines, sets: dict[str, tuple[str, ...]], cap: float) -> None:
    print("1. Line model and rule: leave-one-story-out within val, and fitted on val -> test", end=" ")
    print(f"(flags <= {cap:g} x gold)")
    print(f"  {'features':<36} {'rule':<44} {'val CV: line  summ. flags':>26} {'test: line  summ. flags':>25}")
    for set_name, names in sets.items():
        for rule_name in RULES:
            cv = cross_validate(val, names, rule_name, cap)
            held = figures(test, fit_and_flag(val, test, names, rule_name, cap))
            mark = "*" if (set_name, rule_name) == SHIPPED else ">" if (set_name, rule_name) == PRE_REGISTERED else " "
            val_cv = f"{cv.line_ba:9.3f} {cv.summary_ba:6.3f} {cv.flagged:>3}/{cv.gold}"
            on_test = f"{held.line_ba:9.3f} {held.summary_ba:6.3f} {held.flagged:>3}/{held.gold}"
            print(f"{mark} {set_name:<36} {rule_name:<44} {val_cv} {on_test}")
    print("  * shipped (round 1); > chosen in round 2 from the val column, before test was scored; trivial BA 0.500\n")


def print_line_aucs(val: Lines, test: Lines, names: list[str]) -> None:
    print("2. Line-level AUC for 'inconsistent' (oriented: 0.5 = no signal)")
    print(f"  {'feature':<18} {'val':>6} {'test':>6}")
    for name in names:
        sign = ORIENTATION.get(name, 1)
        row = [auc(sign * d.x((name,))[d.judged, 0], d.gold[d.judged]) for d in (val, test)]
        print(f"  {name:<18} {row[0]:6.3f} {row[1]:6.3f}")
    print()


def summary_scores(lines: Lines, names: list[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    ids = list(dict.fromkeys(lines.summary))
    unfaithful = np.array([1 - lines.faithful[s] for s in ids])
    p = np.array([f["shipped_p"] for f in lines.features])
    per = [np.flatnonzero((lines.summary == s) & lines.judged) for s in ids]
    scores = {
        "lines in the summary": np.array([float(np.sum(lines.summary == s)) for s in ids]),
        "max shipped P": np.array([p[i].max(initial=0.0) for i in per]),
        "1 - prod(1 - shipped P)": np.array(list(summary_probabilities(lines, p).values())),
        "mean shipped P": np.array([p[i].mean() if len(i) else 0.0 for i in per]),
    }
    for name in names:
        sign = ORIENTATION.get(name, 1)
        x = sign * lines.x((name,))[:, 0]
        scores[f"max {name}"] = np.array([x[i].max(initial=-9.0) for i in per])
        scores[f"mean {name}"] = np.array([x[i].mean() if len(i) else 0.0 for i in per])
    return scores, unfaithful


def print_summary_aucs(val: Lines, test: Lines, names: list[str]) -> None:
    (val_scores, val_unf), (test_scores, test_unf) = summary_scores(val, names), summary_scores(test, names)
    print("3. Summary-level AUC for 'unfaithful' (oriented as in 2; val has 8 faithful summaries, test 27)")
    print(f"  {'score':<26} {'val':>6} {'test':>6}")
    for name in val_scores:
        print(f"  {name:<26} {auc(val_scores[name], val_unf):6.3f} {auc(test_scores[name], test_unf):6.3f}")
    for name in ("max shipped P", "1 - prod(1 - shipped P)"):
        score = test_scores[name]
        best = max(balanced_accuracy(list(1 - test_unf), list((score < t).astype(int))) for t in sorted(set(score)))
        print(f"  upper bound on test, any threshold on {name!r} chosen on test itself: summary BA {best:.3f}")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="storysumm.json")
    parser.add_argument("--cap", type=float, default=1.0, help="most lines flagged when fitting, x the gold count")
    parser.add_argument("--embeddings", action="store_true", help="add all-MiniLM-L6-v2 similarity (minilm_numpy)")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"StorySumm not found at {args.data} (use --data)", file=sys.stderr)
        return 2
    items = load_items(args.data)
    embed, spent = None, 0.0
    sets = dict(FEATURE_SETS)
    if args.embeddings:
        from minilm_numpy import MiniLM  # noqa: PLC0415 - optional

        model = MiniLM()
        check = model.encode(["A man is eating food.", "A man is eating a piece of bread."])
        print(f"MiniLM (numpy) self-check: cosine of two near-paraphrases {float(check[0] @ check[1]):.4f} (0.7553)")

        def embed(texts: list[str]) -> np.ndarray:
            nonlocal spent
            start = time.process_time()
            vectors = model.encode(texts)
            spent += time.process_time() - start
            return vectors

        sets.update(EMBEDDING_SETS)
    val = evidence([i for i in items if i.split == "val"], embed)
    test = evidence([i for i in items if i.split == "test"], embed)
    for name, lines in (("val", val), ("test", test)):
        print(f"StorySumm {name}: {len(lines.faithful)} summaries, {len(lines.gold)} lines")
    print()
    print_rules(val, test, sets, args.cap)
    names = ["coverage", "dispersion", "coverage_rel", "dispersion_rel", "names_elsewhere", "order", "corroboration"]
    names += ["shipped_p"]
    names += ["emb", "emb_rel"] if args.embeddings else []
    print_line_aucs(val, test, names)
    print_summary_aucs(val, test, ["coverage", "dispersion", "corroboration", *(["emb"] if args.embeddings else [])])
    if args.embeddings:
        tasks = len(val.faithful) + len(test.faithful)
        print(f"4. MiniLM embeddings (story sentences + lines, numpy): {1000 * spent / tasks:.0f} ms CPU per task")
    return 0


if __name__ == "__main__":
    sys.exit(main())
