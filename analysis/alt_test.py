"""The Alternative Annotator Test (Calderon, Reichart and Dror, ACL 2025, "The Alternative
Annotator Test for LLM-as-a-Judge"): can a judge replace one of the human annotators?

Leave one annotator ``h_j`` out at a time. On every item ``x_i`` that ``h_j`` annotated (with at
least one other human and a judge answer), score the judge ``f`` and ``h_j`` by how well each
aligns with the *other* annotators of the item, ``H_i[-j]`` (section 3.1):

- ``accuracy`` (discrete labels): the share of the others who gave the same label,
  ``ACC(a) = 1/|H_i[-j]| * sum_k [a == h_k(x_i)]``;
- ``neg_rmse`` (numbers): ``-sqrt(1/|H_i[-j]| * sum_k (a - h_k(x_i))^2)``.

The advantage indicators (section 3.2) are ``W^f = [S(f) >= S(h_j)]`` and ``W^h = [S(h_j) >= S(f)]``
(a tie gives both 1), ``rho^f_j`` and ``rho^h_j`` their means over the items, and
``d_i = W^h - W^f``. Per annotator (section 3.3) ``H0: rho^f_j <= rho^h_j - epsilon`` is tested
against ``H1: rho^f_j > rho^h_j - epsilon`` by a one-sided one-sample t-test of ``d`` against
``epsilon`` (``t = (mean(d) - epsilon) / (s / sqrt(n))``, ``s`` with ``n - 1``, p the left tail of
Student's t with ``n - 1`` degrees of freedom; scipy's ``ttest_1samp``). The p-values of all
tested annotators go through the Benjamini-Yekutieli procedure at ``q`` (0.05); the winning rate
``omega`` is the share of annotators whose H0 is rejected, and the judge passes when
``omega >= 0.5``. The average advantage probability ``rho = mean_j rho^f_j`` compares judges
(section 3.4).

As the authors' reference code (github.com/nitaytech/AltTest): items need
``min_humans_per_item`` humans (2, the excluded one included) and a judge answer; an annotator
with fewer than ``min_items_per_annotator`` (30) such items is skipped and left out of ``omega``
and ``rho``; scores are compared exactly (no tolerance). With ``test="wilcoxon"`` (or ``"auto"``
below 30 items, as the paper advises for small samples) the per-annotator test is scipy's
one-sided Wilcoxon signed-rank test of ``d - epsilon``. A zero-variance ``d`` follows scipy:
``p = 0`` when ``mean(d) < epsilon`` (rejected), ``p = 1`` above, NaN when equal (never
rejected).

``epsilon`` is the cost-benefit margin: 0.2 for expert annotators, 0.15 for skilled ones, 0.1
for crowd workers (paper, section 3.3 and appendix B.1).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

Scoring = Literal["accuracy", "neg_rmse"]
TestKind = Literal["t", "wilcoxon", "auto"]
PASS_THRESHOLD = 0.5
SMALL_SAMPLE = 30  # below this the paper advises a non-parametric test


@dataclass(frozen=True)
class AnnotatorTest:
    """The test of one excluded annotator ``h_j``."""

    annotator: Hashable
    n_items: int
    rho_f: float  # the judge's advantage probability over h_j
    rho_h: float  # h_j's advantage probability over the judge
    mean_d: float
    sd_d: float
    statistic: float
    p_value: float
    p_adjusted: float  # Benjamini-Yekutieli
    rejected: bool  # H0 rejected: the judge "wins" against h_j
    test: str


@dataclass(frozen=True)
class AltTestResult:
    epsilon: float
    q: float
    scoring: str
    annotators: list[AnnotatorTest]
    skipped: dict[Hashable, str] = field(default_factory=dict)  # annotator -> why not tested
    n_items: int = 0  # items kept (enough humans and a judge answer)

    @property
    def omega(self) -> float:
        """The winning rate: the share of tested annotators whose H0 was rejected."""
        return float(np.mean([a.rejected for a in self.annotators])) if self.annotators else math.nan

    @property
    def rho(self) -> float:
        """The average advantage probability of the judge over the tested annotators."""
        return float(np.mean([a.rho_f for a in self.annotators])) if self.annotators else math.nan

    @property
    def passed(self) -> bool:
        return bool(self.annotators) and self.omega >= PASS_THRESHOLD

    def table(self) -> pd.DataFrame:
        return pd.DataFrame([a.__dict__ for a in self.annotators])


def benjamini_yekutieli(p_values: Sequence[float] | np.ndarray, q: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini-Yekutieli step-up FDR control at ``q``: ``(rejected, adjusted p)``.

    With the p-values sorted, ``c_m = sum_{k<=m} 1/k`` and thresholds ``k/m * q/c_m``, every
    hypothesis up to the largest ``k`` whose ``p_(k)`` is at or below its threshold is rejected.
    NaN p-values are never rejected (they sort last). Adjusted p-values are
    ``min_{l>=k} m c_m / l * p_(l)``, capped at 1 (``statsmodels``' ``fdr_by``).

    >>> rejected, adjusted = benjamini_yekutieli([0.012, 0.015, 0.5])
    >>> rejected.tolist(), [round(float(x), 5) for x in adjusted]
    ([True, True, False], [0.04125, 0.04125, 0.91667])
    """
    p = np.asarray(p_values, dtype=np.float64)
    m = len(p)
    rejected = np.zeros(m, dtype=bool)
    adjusted = np.full(m, np.nan)
    if m == 0:
        return rejected, adjusted
    c_m = float(np.sum(1.0 / np.arange(1, m + 1)))
    order = np.argsort(np.where(np.isnan(p), np.inf, p), kind="stable")
    ranked = p[order]
    k = np.arange(1, m + 1)
    below = ranked <= k / m * q / c_m  # NaN compares False
    if below.any():
        rejected[order[: int(np.flatnonzero(below)[-1]) + 1]] = True
    scaled = np.minimum(1.0, m * c_m / k * ranked)
    defined = ~np.isnan(scaled)
    running = np.minimum.accumulate(np.where(defined, scaled, np.inf)[::-1])[::-1]
    adjusted[order] = np.where(defined, running, np.nan)
    return rejected, adjusted


def _t_test_less(d: np.ndarray, epsilon: float) -> tuple[float, float]:
    """One-sided one-sample t-test of ``d`` against ``epsilon`` (H1: mean < epsilon), as scipy's
    ``ttest_1samp(d, epsilon, alternative="less")`` computes it, zero variance included (t is
    -inf and p 0 below epsilon, +inf and 1 above, NaN at epsilon), without its per-call overhead."""
    n = len(d)
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        if mean == epsilon:
            return math.nan, math.nan
        return (-math.inf, 0.0) if mean < epsilon else (math.inf, 1.0)
    t = (mean - epsilon) / (sd / math.sqrt(n))
    return t, float(stats.t.cdf(t, n - 1))


def _one_sided_test(d: np.ndarray, epsilon: float, kind: TestKind) -> tuple[float, float, str]:
    use = "wilcoxon" if kind == "wilcoxon" or (kind == "auto" and len(d) < SMALL_SAMPLE) else "t"
    if len(d) < 2:
        return math.nan, math.nan, use
    if use == "wilcoxon":
        shifted = d - epsilon
        if np.all(shifted == 0):
            return math.nan, math.nan, use
        result = stats.wilcoxon(shifted, alternative="less")
        return float(result.statistic), float(result.pvalue), use
    t, p = _t_test_less(d, epsilon)
    return t, p, use


def _matrix(humans: pd.DataFrame | Mapping[Hashable, Mapping[Hashable, object]]) -> pd.DataFrame:
    """Items x annotators (object), from a wide frame, long rows (item, annotator, value) or a dict."""
    if isinstance(humans, pd.DataFrame):
        if {"item", "annotator", "value"} <= set(humans.columns):
            return humans.pivot_table(index="item", columns="annotator", values="value", aggfunc="last")
        return humans
    return pd.DataFrame({annotator: pd.Series(labels, dtype=object) for annotator, labels in humans.items()})


def alignment_scores(
    matrix: np.ndarray, judge: np.ndarray, scoring: Scoring
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(S(f), S(h_j), n_others)``, each items x annotators: the scores of the judge and of
    annotator ``j`` against the other annotators of the item (NaN where ``j`` did not annotate the
    item or nobody else did). ``matrix`` holds codes (accuracy) or numbers (neg_rmse), NaN missing."""
    present = ~np.isnan(matrix)
    n_others = present.sum(axis=1, keepdims=True) - present
    with np.errstate(divide="ignore", invalid="ignore"):
        if scoring == "accuracy":
            same_f = np.where(present, matrix == judge[:, None], False)
            agree_f = same_f.sum(axis=1, keepdims=True) - same_f  # others equal to f
            values = np.where(present, matrix, -1.0)
            codes = np.unique(values[present]) if present.any() else np.array([])
            agree_h = np.zeros(matrix.shape)
            for code in codes:  # others equal to h_j: (annotators with h_j's label) - h_j itself
                with_code = values == code
                agree_h += with_code * (with_code.sum(axis=1, keepdims=True) - 1)
            s_f, s_h = agree_f / n_others, agree_h / n_others
        elif scoring == "neg_rmse":
            s_f, s_h = np.full(matrix.shape, np.nan), np.full(matrix.shape, np.nan)
            for j in range(matrix.shape[1]):  # the others' columns, summed in order (as the reference)
                others = np.delete(matrix, j, axis=1)
                count = (~np.isnan(others)).sum(axis=1)
                s_f[:, j] = -np.sqrt(np.nansum((judge[:, None] - others) ** 2, axis=1) / count)
                s_h[:, j] = -np.sqrt(np.nansum((matrix[:, [j]] - others) ** 2, axis=1) / count)
        else:
            raise ValueError(f"unknown scoring {scoring!r} (use 'accuracy' or 'neg_rmse')")
    usable = present & (n_others > 0)
    return np.where(usable, s_f, np.nan), np.where(usable, s_h, np.nan), n_others


def _encoded(
    humans: pd.DataFrame | Mapping[Hashable, Mapping[Hashable, object]],
    judge: pd.Series | Mapping[Hashable, object],
    scoring: Scoring,
    min_humans_per_item: int,
) -> tuple[pd.Index, np.ndarray, np.ndarray, int]:
    """(annotators, items x annotators values, judge values, n items kept): labels as codes for
    accuracy, numbers for neg_rmse; only items with enough humans and a judge answer."""
    matrix = _matrix(humans)
    judge = pd.Series(judge, dtype=object) if not isinstance(judge, pd.Series) else judge
    answers = (
        judge.reindex(matrix.index) if judge.index.is_unique else judge.groupby(level=0).last().reindex(matrix.index)
    )
    keep = (matrix.notna().sum(axis=1) >= max(min_humans_per_item, 2)).to_numpy() & answers.notna().to_numpy()
    matrix, answers = matrix[keep], answers[keep]
    if scoring == "neg_rmse":
        values = matrix.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
        f = pd.to_numeric(answers, errors="coerce").to_numpy(dtype=np.float64)
    elif (
        scoring == "accuracy"
        and all(pd.api.types.is_float_dtype(t) for t in matrix.dtypes)
        and (pd.api.types.is_float_dtype(answers.dtype))
    ):  # numbers (category codes): compared as they are
        values = matrix.to_numpy(dtype=np.float64)
        f = answers.to_numpy(dtype=np.float64)
    elif scoring == "accuracy":
        cells = matrix.to_numpy(dtype=object)
        present = ~pd.isna(cells)
        labels = np.concatenate([cells[present], answers.to_numpy(dtype=object)]).astype(str)
        codes, _ = pd.factorize(labels)
        values = np.full(cells.shape, np.nan)
        values[present] = codes[: present.sum()]
        f = codes[present.sum() :].astype(np.float64)
    else:
        raise ValueError(f"unknown scoring {scoring!r} (use 'accuracy' or 'neg_rmse')")
    return matrix.columns, values, f, int(keep.sum())


def alt_tests(
    humans: pd.DataFrame | Mapping[Hashable, Mapping[Hashable, object]],
    judge: pd.Series | Mapping[Hashable, object],
    *,
    epsilons: Sequence[float] = (0.2,),
    scoring: Scoring = "accuracy",
    q: float = 0.05,
    min_humans_per_item: int = 2,
    min_items_per_annotator: int = 30,
    test: TestKind = "t",
) -> dict[float, AltTestResult]:
    """:func:`alt_test` at several epsilons (the alignment scores are computed once)."""
    annotators, values, f, n_items = _encoded(humans, judge, scoring, min_humans_per_item)
    if n_items:
        s_f, s_h, _ = alignment_scores(values, f, scoring)
    else:
        s_f = s_h = np.empty((0, len(annotators)))
    per_annotator, skipped = [], {}
    for j, annotator in enumerate(annotators):
        mask = ~np.isnan(s_f[:, j])
        n = int(mask.sum())
        if n < max(min_items_per_annotator, 1):
            skipped[annotator] = (
                f"{n} item(s) shared with another annotator and the judge, fewer than {min_items_per_annotator}"
            )
            continue
        w_f = (s_f[mask, j] >= s_h[mask, j]).astype(np.float64)
        w_h = (s_h[mask, j] >= s_f[mask, j]).astype(np.float64)
        per_annotator.append((annotator, n, w_f, w_h, w_h - w_f))
    results = {}
    for epsilon in epsilons:
        tested, p_values = [], []
        for annotator, n, w_f, w_h, d in per_annotator:
            statistic, p, used = _one_sided_test(d, epsilon, test)
            tested.append((annotator, n, float(w_f.mean()), float(w_h.mean()), float(d.mean()),
                           float(d.std(ddof=1)) if n > 1 else math.nan, statistic, used))  # fmt: skip
            p_values.append(p)
        rejected, adjusted = benjamini_yekutieli(p_values, q)
        tests = [
            AnnotatorTest(name, n, rho_f, rho_h, mean_d, sd, statistic, p, float(adj), bool(rej), used)
            for (name, n, rho_f, rho_h, mean_d, sd, statistic, used), p, adj, rej in zip(
                tested, p_values, adjusted, rejected, strict=True
            )
        ]
        results[epsilon] = AltTestResult(epsilon, q, scoring, tests, dict(skipped), n_items)
    return results


def alt_test(
    humans: pd.DataFrame | Mapping[Hashable, Mapping[Hashable, object]],
    judge: pd.Series | Mapping[Hashable, object],
    *,
    scoring: Scoring = "accuracy",
    epsilon: float = 0.2,
    q: float = 0.05,
    min_humans_per_item: int = 2,
    min_items_per_annotator: int = 30,
    test: TestKind = "t",
) -> AltTestResult:
    """The alt-test of ``judge`` (item -> label) against ``humans`` (annotator -> item -> label,
    or an items x annotators frame, or long rows ``item, annotator, value``); see the module
    docstring. Labels are compared as text for ``accuracy`` and as numbers for ``neg_rmse``.

    Example 1 of the worked examples (3 annotators, 6 items, epsilon 0.2): only h3's H0 is
    rejected after Benjamini-Yekutieli, so the winning rate is 1/3 and the judge fails.

    >>> h = {"h1": dict(zip(range(6), "CABACB")), "h2": dict(zip(range(6), "CCAABC")),
    ...      "h3": dict(zip(range(6), "BACBAA"))}
    >>> result = alt_test(h, dict(zip(range(6), "AABACB")), min_items_per_annotator=1)
    >>> round(result.omega, 4), round(result.rho, 4), result.passed
    (0.3333, 0.8889, False)
    """
    return alt_tests(
        humans,
        judge,
        epsilons=(epsilon,),
        scoring=scoring,
        q=q,
        min_humans_per_item=min_humans_per_item,
        min_items_per_annotator=min_items_per_annotator,
        test=test,
    )[epsilon]
