"""How often LLM-style span answers land on the human offsets: our aligner vs factgenie's.

Data: the "LLMs as span annotators" human annotations (``../shared/data/span_annotation``):
one JSON line per (output, annotator group) with ``annotations: [{type, text, start}]``.
The files do not carry the annotated output text itself, so the bench rebuilds each output
from the union of all groups' spans at their offsets (d2t-eval_iaa, annotated by ~28 groups,
is ~83 % covered); uncovered stretches become neutral filler words between spaces. Spans
whose text disagrees with the rebuilt text are skipped. Because the filler holds no real
words, repeats outside human spans are rarer than in the real outputs: the repeat rows
measure the rule, not the real frequency.

Each annotator group's spans become one LLM-style answer (listed in reading order, with an
``occurrence_index`` when the text repeats). Each perturbation type is applied to every span
it can change, seeded; a span counts under a type only if the type changed it:

- ``case``: lower-cased or first letter's case swapped;
- ``whitespace``: a space doubled or turned into a newline, edges added or stripped;
- ``quotes``: straight <-> curly quotes and apostrophes;
- ``dashes``: hyphen <-> en/em dash;
- ``truncation``: 1-3 characters cut at one end;
- ``no occurrence``: the occurrence index of a repeated span dropped;
- ``paraphrase``: one short word dropped or replaced;
- ``shuffle``: list order shuffled within a window of 3, occurrence indexes dropped
  (spans that moved are counted);
- ``mixed``: 1-2 of the span perturbations per span, plus the shuffle;
- ``none``: the answer as is (control).

Scores per span: ``exact`` = placed at the human (start, end), both ranges compared without
whitespace at their edges (some human spans end with a space; our aligner never emits one);
``≥50%`` = the placed range shares at least half of the longer of the two ranges with the
human one; ``placed`` = any placement. The baseline is factgenie's rule: ``text.find(span_text)`` (the first exact
match), unmatched spans dropped, no overlap handling. Both run on the same answers; the
aligner uses the schema's overlap rule (allowed where the human spans overlap) and word
snapping where the campaign's granularity is ``words``.

The fuzzy tier's measure is rapidfuzz's Indel similarity; ``--vs-difflib`` also runs the
perturbed rows where fuzzy matches happen (truncation, paraphrase, mixed) and the long texts
with ``difflib``'s ratio in its place (what the aligner used before), and prints how many spans
land at the same offsets, the hits of each, and the time ratio in the same run.

    python bench/span_alignment.py [--data DIR] [--seed N] [--limit N] [--vs-difflib]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judgelab.backend.llm import alignment  # noqa: E402
from judgelab.backend.llm.alignment import align_spans  # noqa: E402
from judgelab.backend.llm.contracts import RawSpan  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "span_annotation"
FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore".split()
SPAN_PERTURBATIONS = ("case", "whitespace", "quotes", "dashes", "truncation", "no occurrence", "paraphrase")
ROWS = ("none", *SPAN_PERTURBATIONS, "shuffle", "mixed")
SUBSTITUTES = ["the", "a", "an", "of", "in", "on", "to", "and", "for", "with", "at", "by", "is", "was"]


@dataclass
class HumanSpan:
    sid: str
    start: int
    end: int
    text: str
    label: int | None


@dataclass
class Output:
    """One annotated output, rebuilt, with one span list per annotator group."""

    source: str
    key: tuple
    text: str = ""
    groups: list[list[HumanSpan]] = field(default_factory=list)


@dataclass
class Campaign:
    name: str
    outputs: list[Output]
    overlap: str
    snap_words: bool
    skipped: int


# ------------------------------------------------------------------------------------------
# loading


def read_config(path: Path) -> dict:
    try:
        import yaml

        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, ImportError, ValueError):
        return {}


def filler(length: int, rng: random.Random) -> str:
    """``length`` characters of filler words, starting and ending with a space."""
    if length <= 2:
        return " " * length
    words = []
    while sum(len(w) + 1 for w in words) < length:
        words.append(rng.choice(FILLER))
    body = " ".join(words)[: length - 2]
    if body.endswith(" "):
        body = body[:-1] + "x"
    return " " + body + " "


def load_campaign(path: Path, seed: int) -> Campaign:
    config = read_config(path.parent / (path.stem + ".config.yaml"))
    rows: dict[tuple, list[dict]] = defaultdict(list)
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                key = (
                    d.get("dataset"),
                    d.get("split"),
                    d.get("example_idx"),
                    d.get("orig_example_idx"),
                    d.get("setup_id"),
                )
                rows[key].append(d)
    outputs, skipped, any_overlap = [], 0, False
    rng = random.Random(f"{seed}:{path.name}")
    for key, group_rows in rows.items():
        chars: dict[int, str] = {}
        for row in group_rows:
            for a in row.get("annotations") or []:
                for i, c in enumerate(a.get("text") or ""):
                    chars.setdefault(int(a["start"]) + i, c)
        if not chars:
            continue
        length = max(chars) + 1 + 12
        out, gap = [], 0
        for pos in range(length):
            if pos in chars:
                if gap:
                    out.append(filler(gap, rng))
                    gap = 0
                out.append(chars[pos])
            else:
                gap += 1
        if gap:
            out.append(filler(gap, rng))
        text = "".join(out)
        output = Output(path.stem, key, text)
        for row in group_rows:
            spans = []
            for n, a in enumerate(row.get("annotations") or []):
                s, t = int(a["start"]), a.get("text") or ""
                if not t.strip() or text[s : s + len(t)] != t:
                    skipped += 1
                    continue
                spans.append(HumanSpan(f"{n}", s, s + len(t), t, a.get("type")))
            spans.sort(key=lambda h: (h.start, h.end))
            for i in range(len(spans) - 1):
                if spans[i + 1].start < spans[i].end:
                    any_overlap = True
            if spans:
                output.groups.append(spans)
        outputs.append(output)
    overlap = "allow" if config.get("annotation_overlap_allowed") or any_overlap else "forbid"
    snap = config.get("annotation_granularity") == "words"
    return Campaign(path.stem.replace("annotations_human_", ""), outputs, overlap, snap, skipped)


# ------------------------------------------------------------------------------------------
# perturbations (each returns None when it cannot change the span)


def p_case(s: str, rng: random.Random) -> str | None:
    options = [s.lower(), s[:1].swapcase() + s[1:]]
    rng.shuffle(options)
    return next((o for o in options if o != s), None)


def p_whitespace(s: str, rng: random.Random) -> str | None:
    spaces = [i for i, c in enumerate(s.strip()) if c == " "]
    lead = len(s) - len(s.lstrip())
    options = []
    if spaces:
        i = rng.choice(spaces) + lead
        options += [s[:i] + "  " + s[i + 1 :], s[:i] + "\n" + s[i + 1 :]]
    options += [s.strip() if s != s.strip() else " " + s + " "]
    out = rng.choice(options)
    return out if out != s else None


def p_quotes(s: str, rng: random.Random) -> str | None:
    table = {"'": "’", "’": "'", "‘": "'", '"': rng.choice("“”"), "“": '"', "”": '"'}
    out = "".join(table.get(c, c) for c in s)
    return out if out != s else None


def p_dashes(s: str, rng: random.Random) -> str | None:
    table = {"-": rng.choice("–—"), "–": "-", "—": "-"}
    out = "".join(table.get(c, c) for c in s)
    return out if out != s else None


def p_truncation(s: str, rng: random.Random) -> str | None:
    core = s.strip()
    if len(core) < 8:
        return None
    k = rng.randint(1, 3)
    return core[:-k] if rng.random() < 0.5 else core[k:]


def p_paraphrase(s: str, rng: random.Random) -> str | None:
    words = s.split(" ")
    short = [i for i, w in enumerate(words) if 1 <= len(w) <= 4 and w.isalpha() and 0 < i < len(words) - 1]
    if len(words) < 4 or not short:
        return None
    i = rng.choice(short)
    if rng.random() < 0.5:
        words = words[:i] + words[i + 1 :]
    else:
        words[i] = rng.choice([w for w in SUBSTITUTES if w != words[i].lower()])
    return " ".join(words)


PERTURB = {
    "case": p_case,
    "whitespace": p_whitespace,
    "quotes": p_quotes,
    "dashes": p_dashes,
    "truncation": p_truncation,
    "paraphrase": p_paraphrase,
}


def occurrence_indexes(text: str, spans: list[HumanSpan]) -> dict[str, int | None]:
    """The occurrence index (0-based, among exact occurrences) of each repeated span text."""
    out: dict[str, int | None] = {}
    for h in spans:
        hits, i = [], text.find(h.text)
        while i >= 0:
            hits.append(i)
            i = text.find(h.text, i + 1)
        out[h.sid] = hits.index(h.start) if len(hits) > 1 else None
    return out


def local_shuffle(items: list, rng: random.Random, window: int = 3) -> list:
    keyed = [(i + rng.uniform(0, window), i, x) for i, x in enumerate(items)]
    return [x for _k, _i, x in sorted(keyed)]


def build_answer(text: str, spans: list[HumanSpan], row: str, rng: random.Random) -> tuple[list[RawSpan], set[str]]:
    """The perturbed answer for one row type and the ids of the spans the row changed."""
    occ = occurrence_indexes(text, spans)
    answer, changed = [], set()
    for h in spans:
        t, o = h.text, occ[h.sid]
        if row in PERTURB:
            new = PERTURB[row](t, rng)
            if new is not None and new.strip():
                t = new
                changed.add(h.sid)
        elif row == "no occurrence" and o is not None:
            o = None
            changed.add(h.sid)
        elif row == "mixed":
            for kind in rng.sample(sorted(PERTURB), rng.randint(1, 2)):
                new = PERTURB[kind](t, rng)
                if new is not None and new.strip():
                    t = new
            o = None
            changed.add(h.sid)
        elif row == "shuffle":
            o = None
        answer.append(RawSpan(text=t, label=h.label, reason=h.sid, occurrence_index=o))
    if row in ("shuffle", "mixed"):
        order = local_shuffle(list(range(len(answer))), rng)
        answer = [answer[i] for i in order]
        if row == "shuffle":
            changed = {answer[pos].reason for pos, i in enumerate(order) if pos != i}
    if row == "none":
        changed = {h.sid for h in spans}
    return answer, changed


# ------------------------------------------------------------------------------------------
# the two aligners


def factgenie_baseline(text: str, answer: list[RawSpan]) -> dict[str, tuple[int, int]]:
    """factgenie's rule: the first exact match of the span text; unmatched spans vanish."""
    out = {}
    for span in answer:
        i = text.find(span.text)
        if i >= 0 and span.text:
            out[span.reason] = (i, i + len(span.text))
    return out


def ours(text: str, answer: list[RawSpan], overlap: str, snap: bool) -> tuple[dict[str, tuple[int, int]], Counter]:
    report = align_spans(text, answer, overlap=overlap, snap_words=snap)
    for s in report.spans:
        assert text[s.start : s.end] == s.text and 0 <= s.start < s.end <= len(text)
    return {s.reason: (s.start, s.end) for s in report.spans}, report.counts


def half_overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    inter = min(a[1], b[1]) - max(a[0], b[0])
    return inter > 0 and inter >= 0.5 * max(a[1] - a[0], b[1] - b[0])


@dataclass
class Score:
    n: int = 0
    exact: int = 0
    half: int = 0
    placed: int = 0
    seconds: float = 0.0
    aligned: int = 0  # spans in the answers timed (all of an answer's spans, scored or not)

    def add(self, other: Score) -> None:
        self.n += other.n
        self.exact += other.exact
        self.half += other.half
        self.placed += other.placed
        self.seconds += other.seconds
        self.aligned += other.aligned


def trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """The range without whitespace at its edges (some human spans end with a space)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def score(text: str, spans: list[HumanSpan], changed: set[str], placed: dict[str, tuple[int, int]]) -> Score:
    s = Score()
    for h in spans:
        if h.sid not in changed:
            continue
        s.n += 1
        got = placed.get(h.sid)
        if got is None:
            continue
        s.placed += 1
        human = trimmed(text, h.start, h.end)
        s.exact += trimmed(text, *got) == human
        s.half += half_overlap(trimmed(text, *got), human)
    return s


# ------------------------------------------------------------------------------------------


def run(campaigns: list[Campaign], seed: int) -> tuple[dict, dict, Counter]:
    ours_rows: dict[str, Score] = defaultdict(Score)
    base_rows: dict[str, Score] = defaultdict(Score)
    kinds: Counter = Counter()
    for camp in campaigns:
        for output in camp.outputs:
            for g, spans in enumerate(output.groups):
                for row in ROWS:
                    rng = random.Random(f"{seed}:{output.source}:{output.key}:{g}:{row}")
                    answer, changed = build_answer(output.text, spans, row, rng)
                    if not changed:
                        continue
                    t0 = time.perf_counter()
                    placed, counts = ours(output.text, answer, camp.overlap, camp.snap_words)
                    t1 = time.perf_counter()
                    base = factgenie_baseline(output.text, answer)
                    t2 = time.perf_counter()
                    s_ours, s_base = (
                        score(output.text, spans, changed, placed),
                        score(output.text, spans, changed, base),
                    )
                    s_ours.seconds, s_base.seconds = t1 - t0, t2 - t1
                    s_ours.aligned = s_base.aligned = len(answer)
                    ours_rows[row].add(s_ours)
                    base_rows[row].add(s_base)
                    if row == "mixed":
                        kinds.update(counts)
    return ours_rows, base_rows, kinds


def pct(a: int, n: int) -> str:
    return f"{100 * a / n:5.1f}" if n else "   - "


def line(name: str, o: Score, b: Score) -> str:
    """One table row; µs = wall time per span aligned (every span of the answers timed)."""

    def us(s: Score) -> str:
        return f"{1e6 * s.seconds / s.aligned:6.0f}" if s.aligned else "     -"

    return (
        f"{name:<15}{o.n:>7} | {pct(o.exact, o.n):>7}{pct(o.half, o.n):>7}{pct(o.placed, o.n):>7}{us(o)} | "
        f"{pct(b.exact, b.n):>7}{pct(b.half, b.n):>7}{pct(b.placed, b.n):>7}{us(b)}"
    )


def print_table(ours_rows: dict[str, Score], base_rows: dict[str, Score]) -> None:
    head = (
        f"{'perturbation':<15}{'spans':>7} | {'exact%':>7}{'≥50%':>7}{'placed':>7}{'µs':>6} | "
        f"{'exact%':>7}{'≥50%':>7}{'placed':>7}{'µs':>6}"
    )
    print(f"{'':<22} | {'ours':^27} | {'factgenie-style':^27}")
    print(head)
    print("-" * len(head))
    total_o, total_b = Score(), Score()
    for row in ROWS:
        o, b = ours_rows.get(row, Score()), base_rows.get(row, Score())
        if row != "none":
            total_o.add(o)
            total_b.add(b)
        print(line(row, o, b))
    print("-" * len(head))
    print(line("all perturbed", total_o, total_b))
    all_o, all_b = Score(), Score()
    for row in ROWS:
        all_o.add(ours_rows.get(row, Score()))
        all_b.add(base_rows.get(row, Score()))
    per_o = 1e6 * all_o.seconds / max(all_o.aligned, 1)
    per_b = 1e6 * all_b.seconds / max(all_b.aligned, 1)
    print(
        f"\ntime: ours {all_o.seconds:.2f} s ({per_o:.1f} µs/span), baseline {all_b.seconds:.3f} s "
        f"({per_b:.1f} µs/span), ratio {all_o.seconds / max(all_b.seconds, 1e-9):.0f}x"
    )


def long_texts() -> None:
    """How the aligner's time grows with the text: synthetic texts of 1,500-12,000 words, a
    span every 120 words upper-cased (case match) and one every 300 words with a typo (fuzzy).
    A fuzzy span scans the text, so per-span time grows with the text; the last column shows
    how fast (1.0x per doubling would be flat, 2.0x per doubling linear per span)."""
    print("long texts (synthetic; case + fuzzy spans):")
    print(f"  {'words':>6} {'spans':>5} {'placed':>6} {'ours s':>8} {'µs/span':>8} {'baseline s':>10} {'ratio':>6}")
    first = None
    for n_words in (1500, 3000, 6000, 12000):
        words = [f"word{i % 997}" for i in range(n_words)]
        text = " ".join(words)
        spans = [RawSpan(" ".join(words[i : i + 6]).upper()) for i in range(0, n_words, 120)]
        spans += [RawSpan(" ".join(words[i : i + 8]).replace("word", "wrd", 1)) for i in range(60, n_words, 300)]
        t0 = time.perf_counter()
        report = align_spans(text, spans)
        t1 = time.perf_counter()
        factgenie_baseline(text, spans)
        t2 = time.perf_counter()
        per = 1e6 * (t1 - t0) / len(spans)
        first = first or per
        print(
            f"  {n_words:>6} {len(spans):>5} {len(report.spans):>6} {t1 - t0:>8.3f} {per:>8.0f} {t2 - t1:>10.4f} "
            f"{(t1 - t0) / max(t2 - t1, 1e-9):>5.0f}x   (µs/span vs 1,500 words: {per / first:.2f}x)"
        )
    print()


class DifflibSimilarity:
    """The aligner's previous measure: difflib's ratio, after its two cheap upper bounds, with
    the span's side indexed once per span (as the aligner did)."""

    def __init__(self) -> None:
        self.matcher = SequenceMatcher(None, autojunk=False)
        self.b: object = None

    def __call__(self, a, b, cutoff: float = 0.0) -> float:
        if b is not self.b:
            self.matcher.set_seq2(b)
            self.b = b
        self.matcher.set_seq1(a)
        if self.matcher.real_quick_ratio() < cutoff or self.matcher.quick_ratio() < cutoff:
            return 0.0
        ratio = self.matcher.ratio()
        return ratio if ratio >= cutoff else 0.0


def vs_difflib(campaigns: list[Campaign], seed: int) -> None:
    """Placements and time with rapidfuzz's measure against difflib's, on the same answers."""
    rows = ("truncation", "paraphrase", "mixed")
    measures = {"rapidfuzz": alignment.similarity, "difflib": DifflibSimilarity()}
    placed: dict[str, dict] = {name: {} for name in measures}
    hits: Counter = Counter()
    seconds: Counter = Counter()
    n = 0
    for camp in campaigns:
        for output in camp.outputs:
            for g, spans in enumerate(output.groups):
                for row in rows:
                    rng = random.Random(f"{seed}:{output.source}:{output.key}:{g}:{row}")
                    answer, changed = build_answer(output.text, spans, row, rng)
                    if not changed:
                        continue
                    n += len(answer)
                    for name, measure in measures.items():
                        alignment.similarity = measure
                        try:
                            t0 = time.perf_counter()
                            got, _counts = ours(output.text, answer, camp.overlap, camp.snap_words)
                            seconds[name] += time.perf_counter() - t0
                        finally:
                            alignment.similarity = measures["rapidfuzz"]
                        key = (output.source, output.key, g, row)
                        placed[name].update({(*key, sid): at for sid, at in got.items()})
                        hits[name] += score(output.text, spans, changed, got).exact
    same = sum(placed["difflib"].get(k) == v for k, v in placed["rapidfuzz"].items())
    only = len(set(placed["rapidfuzz"]) ^ set(placed["difflib"]))
    print(f"\nfuzzy measure, rapidfuzz vs difflib, on the {'/'.join(rows)} answers ({n} spans):")
    print(
        f"  placed: rapidfuzz {len(placed['rapidfuzz'])}, difflib {len(placed['difflib'])}; at the same offsets {same}"
    )
    print(
        f"  placed by one only: {only}; at the human offsets: rapidfuzz {hits['rapidfuzz']}, difflib {hits['difflib']}"
    )
    print(
        f"  time: rapidfuzz {seconds['rapidfuzz']:.2f} s, difflib {seconds['difflib']:.2f} s, "
        f"rapidfuzz/difflib {seconds['rapidfuzz'] / max(seconds['difflib'], 1e-9):.2f}"
    )


def long_texts_vs_difflib() -> None:
    """The long texts' time with each measure (the fuzzy spans dominate it)."""
    times = {}
    for name, measure in (("rapidfuzz", alignment.similarity), ("difflib", DifflibSimilarity())):
        original = alignment.similarity
        alignment.similarity = measure
        try:
            t0 = time.perf_counter()
            for n_words in (1500, 3000, 6000, 12000):
                words = [f"word{i % 997}" for i in range(n_words)]
                spans = [RawSpan(" ".join(words[i : i + 8]).replace("word", "wrd", 1)) for i in range(60, n_words, 300)]
                align_spans(" ".join(words), spans)
            times[name] = time.perf_counter() - t0
        finally:
            alignment.similarity = original
    print(
        f"long texts' fuzzy spans: rapidfuzz {times['rapidfuzz']:.3f} s, difflib {times['difflib']:.3f} s, "
        f"rapidfuzz/difflib {times['rapidfuzz'] / times['difflib']:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with *.jsonl + *.config.yaml")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--limit", type=int, default=0, help="outputs per campaign (0 = all)")
    parser.add_argument("--by-campaign", action="store_true", help="also print one table per campaign")
    parser.add_argument("--vs-difflib", action="store_true", help="also compare the fuzzy measure with difflib's")
    args = parser.parse_args(argv)
    long_texts()
    if args.vs_difflib:
        long_texts_vs_difflib()
    files = sorted(args.data.glob("*.jsonl")) if args.data.is_dir() else []
    if not files:
        print(f"skipping: no span annotation data in {args.data} (expected *.jsonl beside *.config.yaml)")
        return 0
    campaigns = []
    for path in files:
        camp = load_campaign(path, args.seed)
        if args.limit:
            camp.outputs = camp.outputs[: args.limit]
        n_spans = sum(len(g) for o in camp.outputs for g in o.groups)
        print(
            f"{camp.name}: {len(camp.outputs)} outputs, {sum(len(o.groups) for o in camp.outputs)} answers, "
            f"{n_spans} spans ({camp.skipped} skipped), overlap={camp.overlap}, snap_words={camp.snap_words}"
        )
        campaigns.append(camp)
    print()
    ours_rows, base_rows, kinds = run(campaigns, args.seed)
    print_table(ours_rows, base_rows)
    print("match kinds on the mixed answers (ours):", dict(sorted(kinds.items())))
    if args.vs_difflib:
        vs_difflib(campaigns, args.seed)
    if args.by_campaign:
        for camp in campaigns:
            print(f"\n== {camp.name}")
            print_table(*run([camp], args.seed)[:2])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
