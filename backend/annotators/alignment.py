"""Sentence alignment of a claim against its source: how well the best passage of the source
covers the claim's words, and how far apart in the source those words are.

A summary line that paraphrases one passage of a story has most of its content words in a few
consecutive sentences (high *coverage*) and close together (low *dispersion*). A line whose words
are all in the story, but only spread over distant places, joins details the story never joins:
on StorySumm this is the best lexical sign of an inconsistent line (see ``bench/``).

    >>> passages = Passages("Ann fed the cat. The cat slept. Bob sold the car. It rained.")
    >>> stems = lambda text: g.stem_set(text)
    >>> passages.coverage(stems("the cat slept"), width=1), passages.coverage(stems("Ann's car"), width=1)
    (1.0, 0.5)
"""

from __future__ import annotations

from collections.abc import Iterable

from judgelab.backend.annotators import grounding as g


class Passages:
    """A source text as sentences of content stems, for passage alignment."""

    def __init__(self, text: str, stopwords: frozenset[str] = g.STOPWORDS_EN):
        self.sentences = g.split_sentences(text)
        self.where: dict[str, list[int]] = {}  # stem -> indices of the sentences holding it
        for k, (start, end) in enumerate(self.sentences):
            for stem in g.stem_set(text[start:end], stopwords):
                self.where.setdefault(stem, []).append(k)

    def coverage(self, stems: set[str], width: int = 3) -> float:
        """Largest share of ``stems`` found in ``width`` consecutive sentences (1.0 for no stems)."""
        if not stems:
            return 1.0
        hits: dict[int, int] = {}
        for stem in stems:
            starts = {start for k in self.where.get(stem, ()) for start in range(max(0, k - width + 1), k + 1)}
            for start in starts:
                hits[start] = hits.get(start, 0) + 1
        return max(hits.values(), default=0) / len(stems)


def dispersion(index: g.SourceIndex, stems: Iterable[str]) -> float:
    """The shortest stretch of the source holding every one of ``stems`` it has, as a share of the
    source's length in tokens (0.0 with fewer than two such stems).

        >>> index = g.SourceIndex(["The cat sat on the mat. " + "x " * 50 + "A dog barked."])
        >>> round(dispersion(index, ["cat", "mat"]), 2), round(dispersion(index, ["cat", "dog"]), 2)
        (0.08, 0.97)
    """
    known = {s for s in stems if s in index.positions}
    if len(known) < 2 or index.length == 0:
        return 0.0
    occurrences = sorted((p, s) for s in known for p in index.positions[s])
    counts: dict[str, int] = {}
    best = index.length
    left = 0
    for position, stem in occurrences:
        counts[stem] = counts.get(stem, 0) + 1
        while len(counts) == len(known):
            best = min(best, position - occurrences[left][0] + 1)
            dropped = occurrences[left][1]
            counts[dropped] -= 1
            if not counts[dropped]:
                del counts[dropped]
            left += 1
    return min(1.0, best / index.length)
