"""BLEU and ROUGE-L F1 between two short texts, and near-duplicate removal with them.

HotelCheckSpan (seed 004, section 3.2) aggregates a property's descriptions from several
sites and drops a segment "if it has a BLEU score greater than 0.8 or a ROUGE-L F1 score
greater than 0.8 against an existing segment". The paper does not say which BLEU; this module
fixes one, in pure Python:

- Tokens: lower-cased runs of letters and digits (``\\w+``); punctuation is ignored, so
  "Free WiFi." and "free wifi" are the same two tokens.
- :func:`bleu`: sentence BLEU (Papineni et al. 2002) of a candidate against one reference:
  modified n-gram precisions for n = 1..4 with uniform weights, geometric mean, brevity
  penalty ``exp(1 - r/c)`` when the candidate is shorter. A precision with no match counts as
  ``0.1 / count`` (Chen & Cherry 2014 smoothing 1, NLTK's ``method1``), so one missing 4-gram
  does not zero a long sentence. Segments shorter than 4 tokens use n up to their length
  (a 3-token sentence repeated verbatim scores 1.0, not 0). For candidates of 4 tokens or more
  the value equals NLTK's ``sentence_bleu(..., smoothing_function=method1)``.
- :func:`rouge_l_f1`: longest common subsequence of the token lists (Lin 2004), F1 of
  ``LCS/len(candidate)`` and ``LCS/len(reference)`` (beta = 1, as rouge-score reports).

>>> round(bleu("The hotel has free WiFi.", "the hotel has free wifi"), 3)
1.0
>>> round(rouge_l_f1("Rooms have a sea view.", "All rooms have a view of the sea."), 3)
0.615
>>> dedupe_segments(["Free WiFi in all rooms.", "Free WiFi in all rooms!", "A pool."])
['Free WiFi in all rooms.', 'A pool.']
"""

from __future__ import annotations

import math
import re
from collections import Counter

_TOKEN = re.compile(r"\w+")
MAX_ORDER = 4
SMOOTHING_EPSILON = 0.1
THRESHOLD = 0.8


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (punctuation dropped)."""
    return _TOKEN.findall(text.lower())


def _ngrams(words: list[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def bleu(candidate: str | list[str], reference: str | list[str], max_order: int = MAX_ORDER) -> float:
    """Smoothed sentence BLEU of ``candidate`` against ``reference`` (0..1); see the module doc."""
    cand = tokens(candidate) if isinstance(candidate, str) else candidate
    ref = tokens(reference) if isinstance(reference, str) else reference
    if not cand or not ref:
        return 0.0
    order = min(max_order, len(cand))
    log_sum = 0.0
    for n in range(1, order + 1):
        cand_counts, ref_counts = _ngrams(cand, n), _ngrams(ref, n)
        total = sum(cand_counts.values())
        matched = sum(min(count, ref_counts[gram]) for gram, count in cand_counts.items())
        precision = matched / total if matched else SMOOTHING_EPSILON / total
        log_sum += math.log(precision) / order
    brevity = 1.0 if len(cand) > len(ref) else math.exp(1 - len(ref) / len(cand))
    return brevity * math.exp(log_sum)


def _lcs_length(a: list[str], b: list[str]) -> int:
    if len(a) < len(b):
        a, b = b, a
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if x == y else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def rouge_l_f1(candidate: str | list[str], reference: str | list[str]) -> float:
    """ROUGE-L F1 (LCS-based, beta = 1) between two texts (0..1); symmetric."""
    cand = tokens(candidate) if isinstance(candidate, str) else candidate
    ref = tokens(reference) if isinstance(reference, str) else reference
    if not cand or not ref:
        return 0.0
    lcs = _lcs_length(cand, ref)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(cand), lcs / len(ref)
    return 2 * precision * recall / (precision + recall)


def dedupe_segments(segments: list[str], threshold: float = THRESHOLD) -> list[str]:
    """Segments in order, minus each one that is a near-duplicate of one already kept.

    Segments without any word token (``"—"``) are dropped too.
    """
    kept: list[str] = []
    kept_tokens: list[list[str]] = []
    for segment in segments:
        words = tokens(segment)
        if not words:
            continue
        if any(bleu(words, other) > threshold or rouge_l_f1(words, other) > threshold for other in kept_tokens):
            continue
        kept.append(segment)
        kept_tokens.append(words)
    return kept
