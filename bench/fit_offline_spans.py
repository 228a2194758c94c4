"""Fit the span scores of the summary_flaws and hotel_spans offline heuristics on human error spans.

The only public human error spans with their texts are those of "LLMs as span annotators"
(d2t-eval test; see ``bench/span_offline.py`` for the data and why ``--texts`` is needed); their
training half (even ``example_idx``) is used here, the other half is never read. For each
heuristic, on every candidate span of the rules (before any threshold):

- ``SPAN_HIT_RATE[label]``: the share of the label's suggested spans that overlap a span of the
  reference human group (any category), add-one smoothed: the span's score; ``UNSEEN_RATE``, the
  same over all labels together, scores a label the rules never produced in training;
- ``MIN_SPAN_SCORE``: the score from which a span is suggested, the one that maximises the hard
  span F1 (factgenie's character form, categories mapped as in the bench) on the training half
  while suggesting at most as many spans as the humans marked there;
- ``EMPTY_RATE_CLEAN`` / ``EMPTY_RATE_BELOW``: the share of outputs where no rule fired / where
  every candidate stayed below the threshold that the human also left empty (add-one smoothed):
  the probability of the "no errors" answer, which is suggested only when it is the more likely
  answer (at least 0.5; the control is not required).

The d2t-eval texts (football reports, phone specs, weather forecasts) are not Reddit posts nor
hotel descriptions: these scores transfer across domains, and the README says so.

    python bench/fit_offline_spans.py --texts PATH [--data ../shared/data/span_annotation] [--write]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from span_offline import CAMPAIGN, DEFAULT_DATA, LABEL_MAP, Example, Texts, load_examples, reference  # noqa: E402

from judgelab.analysis.span_agreement import span_prf  # noqa: E402
from judgelab.backend.annotators.offline.schemas import hotel_spans, summary_flaws  # noqa: E402
from judgelab.backend.draft import SpanDraft  # noqa: E402

FITTED = ROOT / "backend" / "annotators" / "offline" / "fitted"


def candidates(schema: str, ex: Example) -> list[SpanDraft]:
    if schema == "summary_flaws":
        return summary_flaws.flaw_candidates({"post": ex.source, "summary": ex.output})[0]
    return hotel_spans.error_candidates({"descriptions": ex.source, "summary": ex.output})


def overlaps(span: SpanDraft, human: list[tuple[int, int, str]]) -> bool:
    return any(span.start < end and start < span.end for start, end, _ in human)


def smoothed(hits: int, total: int) -> float:
    return round((hits + 1) / (total + 2), 6)


def fit(schema: str, train: list[Example]) -> tuple[dict[str, object], list[str]]:
    ref = reference(train)
    found = [candidates(schema, ex) for ex in train]
    given: Counter[str] = Counter()
    hits: Counter[str] = Counter()
    for spans, human in zip(found, ref, strict=True):
        for span in spans:
            given[span.label] += 1
            hits[span.label] += overlaps(span, human)
    rates = {label: smoothed(hits[label], given[label]) for label in sorted(given)}
    limit = sum(len(h) for h in ref)
    mapping = LABEL_MAP[schema]
    best: tuple[float, float] | None = None
    for threshold in sorted(set(rates.values()), reverse=True) + [0.0]:
        hyp = [[(s.start, s.end, mapping[s.label]) for s in spans if rates[s.label] >= threshold] for spans in found]
        if sum(len(h) for h in hyp) > limit:
            break
        f1 = span_prf(ref, hyp, form="character", match="hard", average="micro", empty="zero").f1
        if best is None or f1 > best[0] + 1e-12:
            best = (f1, threshold)
    threshold = best[1] if best else 1.01
    kept = [any(rates[s.label] >= threshold for s in spans) for spans in found]
    clean = [not human for spans, human in zip(found, ref, strict=True) if not spans]
    below = [not human for spans, human, k in zip(found, ref, kept, strict=True) if spans and not k]
    notes = [f"#   {label}: {hits[label]}/{given[label]} suggested spans overlap a human span" for label in given]
    best_f1 = best[0] if best else float("nan")
    notes.append(f"#   threshold: best training hard F1 {best_f1:.3f} with at most {limit} spans")
    notes.append(f"#   outputs where no rule fired: {len(clean)}, of which the human left {sum(clean)} empty")
    notes.append(f"#   outputs with candidates all below the threshold: {len(below)}, human left {sum(below)} empty")
    params = {
        "SPAN_HIT_RATE": rates,
        "UNSEEN_RATE": smoothed(sum(hits.values()), sum(given.values())),
        "MIN_SPAN_SCORE": round(threshold, 6),
        "EMPTY_RATE_CLEAN": smoothed(sum(clean), len(clean)),
        "EMPTY_RATE_BELOW": smoothed(sum(below), len(below)),
    }
    return params, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared span_annotation folder")
    parser.add_argument("--texts", type=Path, required=True, help="span-annotation repository (work tree or git dir)")
    parser.add_argument("--write", action="store_true", help="write backend/annotators/offline/fitted/<schema>.py")
    args = parser.parse_args(argv)
    if not (args.data / f"{CAMPAIGN}.jsonl").exists():
        print(f"{CAMPAIGN}.jsonl not found in {args.data} (use --data)", file=sys.stderr)
        return 2
    train = [ex for ex in load_examples(args.data, Texts(args.texts)) if ex.train]
    for schema in LABEL_MAP:
        params, notes = fit(schema, train)
        body = "\n".join(
            f"{name}{': dict[str, float]' if isinstance(v, dict) else ''} = {v!r}" for name, v in params.items()
        )
        extra = (
            "\n#: No public impression ratings: the uniform prior over the 7-point scale.\nIMPRESSION_RATE = 1 / 7\n"
        )
        text = (
            f'"""{schema}: span scores fitted on the training half of d2t-eval test ({len(train)} outputs)\n'
            f'by bench/fit_offline_spans.py."""\n\n{chr(10).join(notes)}\n{body}\n'
            + (extra if schema == "hotel_spans" else "")
        )
        print(text)
        if args.write:
            (FITTED / f"{schema}.py").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
