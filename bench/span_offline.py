"""How well the offline span heuristics' spans match human error spans ("LLMs as span annotators").

Human spans: ``../shared/data/span_annotation/annotations_human_d2t-eval_test.jsonl`` (d2t-eval
test split: football reports, phone specs and weather forecasts written by four LLMs from
structured data; categories Contradictory, Not checkable, Misleading, Incoherent, Repetitive,
Other). The shared copy has no texts, so the generated outputs and their input data are read from
a checkout of the data set's repository (``--texts``: a work tree, or a bare git directory, of
github.com/llm-span-annotators/span-annotation).

Each output is annotated by the offline heuristics of ``summary_flaws`` (the input data, as
``key: value`` lines, is the post) and ``hotel_spans`` (the input data is the descriptions); their
labels map to the data set's categories for hard matching. The reference is the human group with
the lowest id on each output. Scores: span precision/recall/F1, factgenie's character form,
micro-averaged, hard (same category) and soft (any category), with ``judgelab.analysis``'s
``span_prf``; outputs where neither side marked anything are left out.

Examples with an even ``example_idx`` are the training half (on which the span scores of the two
heuristics are fitted by ``bench/fit_offline_spans.py``), odd ones the test half. Baselines in
the same run: no spans at all, and every sentence of every output marked with the training
half's most common human category; and a second human group where one exists.

    python bench/span_offline.py --texts PATH [--data ../shared/data/span_annotation]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judgelab.analysis.span_agreement import span_prf  # noqa: E402
from judgelab.backend.annotators import grounding as g  # noqa: E402
from judgelab.backend.annotators.offline import OfflineAnnotator  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "span_annotation"
CAMPAIGN = "annotations_human_d2t-eval_test"
CATEGORIES = ("Contradictory", "Not checkable", "Misleading", "Incoherent", "Repetitive", "Other")
#: The heuristics' labels as the data set's categories.
LABEL_MAP = {
    "summary_flaws": {
        "Factually Incorrect": "Contradictory",
        "Irrelevant": "Not checkable",
        "Incoherent": "Incoherent",
        "Other": "Repetitive",
    },
    "hotel_spans": {"Incorrect": "Contradictory", "Not Checkable": "Not checkable", "Misleading": "Misleading"},
}

Span = tuple[int, int, str]


@dataclass
class Example:
    dataset: str
    example_idx: int
    setup_id: str
    output: str
    source: str
    human: dict[int, list[Span]] = field(default_factory=dict)  # annotator group -> spans

    @property
    def train(self) -> bool:
        return self.example_idx % 2 == 0


class Texts:
    """Files of the data set's repository: a work tree or a bare git directory."""

    def __init__(self, path: Path):
        self.path = path

    def read(self, relative: str) -> str:
        file = self.path / relative
        if file.exists():
            return file.read_text(encoding="utf-8")
        out = subprocess.run(
            ["git", "--git-dir", str(self.path), "show", f"HEAD:{relative}"], capture_output=True, text=True
        )
        if out.returncode:
            raise SystemExit(f"{relative} is in neither {self.path} nor its git history")
        return out.stdout


def flatten(value: object, prefix: str = "") -> list[str]:
    """Structured input data as ``key: value`` lines."""
    if isinstance(value, dict):
        return [line for key, item in value.items() for line in flatten(item, f"{prefix}{key} ")]
    if isinstance(value, list):
        return [line for item in value for line in flatten(item, prefix)]
    return [f"{prefix.strip()}: {value}"]


def load_examples(data: Path, texts: Texts) -> list[Example]:
    records = [json.loads(line) for line in (data / f"{CAMPAIGN}.jsonl").read_text(encoding="utf-8").splitlines()]
    records = [r for r in records if r.get("split") == "test"]
    inputs: dict[str, list] = {}
    outputs: dict[tuple[str, str, int], str] = {}
    examples: dict[tuple[str, int, str], Example] = {}
    for record in records:
        dataset, setup, idx = record["dataset"], record["setup_id"], int(record["example_idx"])
        if dataset not in inputs:
            raw = json.loads(texts.read(f"inputs/d2t-eval/{dataset}/test.json"))
            inputs[dataset] = raw if isinstance(raw, list) else next(iter(raw.values()))
        if (dataset, setup, 0) not in outputs:
            for line in texts.read(f"outputs/d2t-eval/{setup}/{dataset}-{setup}-test.jsonl").splitlines():
                row = json.loads(line)
                outputs[(dataset, setup, int(row["example_idx"]))] = row["output"]
        key = (dataset, idx, setup)
        if key not in examples:
            source = "\n".join(flatten(inputs[dataset][idx]))
            examples[key] = Example(dataset, idx, setup, outputs[(dataset, setup, idx)], source)
        spans = [
            (int(a["start"]), int(a["start"]) + len(a["text"]), CATEGORIES[int(a["type"])])
            for a in record.get("annotations") or []
        ]
        examples[key].human[int(record["annotator_group"])] = spans
    return list(examples.values())


def heuristic_spans(examples: list[Example], schema: str) -> list[list[tuple[int, int, str, float]]]:
    """The heuristic's spans per example, as (start, end, category, score)."""
    annotator = OfflineAnnotator()
    mapping = LABEL_MAP[schema]
    out = []
    for ex in examples:
        if schema == "summary_flaws":
            data = {"post": ex.source, "summary": ex.output}
        else:
            data = {"descriptions": ex.source, "summary": ex.output}
        draft = annotator.annotate(schema, data)
        out.append([(s.start, s.end, mapping.get(s.label, "Other"), float(s.score or 0.0)) for s in draft.spans])
    return out


def reference(examples: list[Example]) -> list[list[Span]]:
    return [ex.human[min(ex.human)] for ex in examples]


def scores(ref: list[list[Span]], hyp: list[list[Span]]) -> str:
    parts = []
    for match in ("hard", "soft"):
        s = span_prf(ref, hyp, form="character", match=match, average="micro", empty="zero")
        parts.append(f"{s.precision:5.3f} {s.recall:5.3f} {s.f1:5.3f}")
    return "   ".join(parts)


def sentence_baseline(examples: list[Example], category: str) -> list[list[Span]]:
    return [[(a, b, category) for a, b in g.split_sentences(ex.output)] for ex in examples]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared span_annotation folder")
    parser.add_argument("--texts", type=Path, required=True, help="span-annotation repository (work tree or git dir)")
    args = parser.parse_args(argv)
    if not (args.data / f"{CAMPAIGN}.jsonl").exists():
        print(f"{CAMPAIGN}.jsonl not found in {args.data} (use --data)", file=sys.stderr)
        return 2
    examples = load_examples(args.data, Texts(args.texts))
    train = [ex for ex in examples if ex.train]
    common = Counter(label for ex in train for _, _, label in reference([ex])[0]).most_common(1)[0][0]
    hyps = {schema: heuristic_spans(examples, schema) for schema in LABEL_MAP}
    print(f"d2t-eval test, offline annotator v{OfflineAnnotator.version} vs the first human group")
    print(f"{'half':<6} {'n':>4}  {'who':<34} {'hard P':>6} {'R':>5} {'F1':>5}   {'soft P':>6} {'R':>5} {'F1':>5}")
    for half, chosen in (("test", lambda ex: not ex.train), ("train", lambda ex: ex.train)):
        idx = [i for i, ex in enumerate(examples) if chosen(ex)]
        subset = [examples[i] for i in idx]
        ref = reference(subset)
        rows = [(f"offline {schema}", [[s[:3] for s in hyps[schema][i]] for i in idx]) for schema in LABEL_MAP]
        rows += [
            ("no spans (trivial)", [[] for _ in subset]),
            (f"every sentence '{common}' (trivial)", sentence_baseline(subset, common)),
        ]
        for who, hyp in rows:
            print(f"{half:<6} {len(subset):>4}  {who:<34} {scores(ref, hyp)}")
        paired = [ex for ex in subset if len(ex.human) > 1]
        second = [ex.human[sorted(ex.human)[1]] for ex in paired]
        print(f"{half:<6} {len(paired):>4}  {'second human group':<34} {scores(reference(paired), second)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
