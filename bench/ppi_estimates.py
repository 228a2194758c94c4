"""Coverage and width of prediction-powered intervals on real data (``judgelab.analysis.ppi``).

For each setting, 1,000 seeded draws of ``n`` tasks for "humans" (the published human values of
those tasks); the judge's predictions are used on every task. A draw covers when the 90% interval
holds the *full-data value* (the mean of the human value over all tasks). Columns:

- ``plain``: PPI++ as ``ppi_py`` computes it (``ppi_mean_ci(..., lam=None)``: the other tasks as
  unlabelled, power-tuned ``lambda``, normal quantile); ``cov`` its coverage, ``w/h`` the mean
  ratio of its width to the classical human-only interval of the same draw (``classical_mean_ci``);
- ``adjusted``: ``mean_estimates``'s default (pool estimator, one pseudo-task split between the
  scale's bounds, ``t`` quantile with ``n - 1`` df); ``cov``, ``w/h`` against the adjusted human-only
  interval of the same draw (what the report shows next to it), ``w/cl`` against the classical one,
  ``h cov`` the adjusted human-only coverage, ``lam`` the mean ``lambda``;
- BASSE also draws humans *actively* (Poisson sampling, ``pi_i`` from the judge's uncertainty
  ``sqrt(1 - P(judge's rating is the human median))`` with a 20% uniform floor, the same expected
  budget): ``act cov``, and ``act/uni`` its mean width over the adjusted uniform mean width.

StorySumm: the share of unfaithful summaries (gold ``label`` of all 96), each of the 8 published
judges that give a label (``1 - label`` as ``yhat``). BASSE (Spanish, ``BASSE.es.jsonl``): the mean
rating per criterion, the human value of a summary being the mean of its raters' ratings (3 raters
in rounds 1-2, 1 in round 3; all summaries with a rating), the judge the built-in offline
annotator's suggested rating (its calibration was fitted on BASSE's round 3; PPI's validity does
not depend on how the judge was built). The intervals target the mean of the process that
produced the tasks, so with 40 of 96 tasks they are conservative for the full-data value.

    python bench/ppi_estimates.py [--storysumm DIR] [--basse FILE] [--draws 1000]

Measured (seed 0, 1,000 draws, 90% intervals):

MEASURED
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judgelab.analysis import ppi  # noqa: E402
from judgelab.analysis.loaders.basse import load_basse  # noqa: E402
from judgelab.analysis.loaders.common import FAITHFUL_ITEM, GOLD, UNFAITHFUL  # noqa: E402
from judgelab.analysis.loaders.storysumm import load_storysumm  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
ALPHA = 0.1
BASSE_CRITERIA = ("Coherence", "Consistency", "Fluency", "Relevance", "5W")
ACTIVE_FLOOR = 0.2


def storysumm_settings(folder: Path) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(judge, y, yhat) with y = 1 for an unfaithful summary, for each judge with a label."""
    tables = load_storysumm(folder / "storysumm.json", predictions=folder / "predictions")
    verdicts = tables["judgments"][tables["judgments"]["item"] == FAITHFUL_ITEM]
    table = verdicts.pivot_table(index="task_id", columns="source", values="value", aggfunc="first")
    unfaithful = (table == UNFAITHFUL).astype(float).where(table.notna())
    gold = unfaithful[GOLD]
    out = []
    for source in sorted(c for c in unfaithful.columns if c != GOLD):
        both = gold.notna() & unfaithful[source].notna()
        if both.sum() == len(gold):
            out.append((source.removeprefix("model:"), gold.to_numpy(), unfaithful[source].to_numpy()))
    return out


def basse_settings(path: Path) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """(criterion, mean human rating, offline suggestion, uncertainty) per criterion."""
    from judgelab.backend.annotators.offline import OfflineAnnotator
    from judgelab.configs.schema import get_schema

    tables = load_basse(path)
    judgments = tables["judgments"]
    judgments = judgments.assign(rating=judgments["value"].astype(float))
    means = judgments.groupby(["task_id", "item"])["rating"].mean().unstack()
    schema = get_schema("likert_rubric_es")
    annotator = OfflineAnnotator()
    drafts = {
        t.task_id: annotator.annotate("likert_rubric_es", {"article": t.article, "summary": t.summary})
        for t in tables["tasks"].itertuples(index=False)
    }
    out = []
    for criterion in BASSE_CRITERIA:
        control = schema.item_control(criterion)
        rated = means[criterion].dropna()
        ids = [i for i in rated.index if control in drafts[i].choices]
        yhat = np.array([float(drafts[i].choices[control][0]) for i in ids])
        sure = np.array([float(drafts[i].scores.get(control, 0.0)) for i in ids])
        out.append((criterion, rated.loc[ids].to_numpy(), yhat, np.sqrt(1 - np.clip(sure, 0, 1))))
    return out


def uniform_draws(y: np.ndarray, yhat: np.ndarray, n: int, draws: int, seed: int, bounds: tuple[float, float]) -> dict:
    """Plain and adjusted intervals over ``draws`` uniform samples of ``n`` tasks (vectorised)."""
    big_n = len(y)
    order = np.argsort(np.random.default_rng(seed).random((draws, big_n)), axis=1)
    lab, unl = order[:, :n], order[:, n:]
    truth = y.mean()
    z = stats.norm.ppf(1 - ALPHA / 2)
    est, se, _ = ppi.ppi_plain(y[lab], yhat[lab], yhat[unl])
    _, classical_se = ppi.classical_plain(y[lab])
    fit = ppi.pool_fit(
        y[lab], yhat[lab], np.ones((draws, n), bool), np.ones((draws, n)), yhat.mean(), yhat.var(ddof=1), big_n, bounds
    )
    q = ppi.t_quantile(ALPHA, fit.human_df)
    with np.errstate(invalid="ignore", divide="ignore"):
        plain_ratio = np.nanmean(np.where(classical_se > 0, se / classical_se, np.nan))
    return {
        "plain_cov": np.mean(np.abs(est - truth) <= z * se),
        "plain_ratio": plain_ratio,
        "cov": np.mean(np.abs(fit.ppi - truth) <= q * fit.ppi_se),
        "ratio": np.mean(fit.ppi_se / fit.human_se),
        "ratio_classical": np.mean(q * fit.ppi_se) / np.mean(z * classical_se),
        "human_cov": np.mean(np.abs(fit.human - truth) <= q * fit.human_se),
        "lam": np.mean(fit.lambda_),
        "width": np.mean(2 * q * fit.ppi_se),
    }


def active_draws(
    y: np.ndarray, yhat: np.ndarray, uncertainty: np.ndarray, n: int, draws: int, seed: int, bounds: tuple[float, float]
) -> dict:
    """Adjusted intervals over ``draws`` active (Poisson) samples of expected size ``n``."""
    big_n = len(y)
    pi = ppi.inclusion_probabilities(n, uncertainty, floor=ACTIVE_FLOOR)
    chosen = np.random.default_rng(seed).random((draws, big_n)) < pi
    full = (draws, big_n)
    fit = ppi.pool_fit(
        np.broadcast_to(y, full),
        np.broadcast_to(yhat, full),
        chosen,
        np.broadcast_to(1 / pi, full),
        yhat.mean(),
        yhat.var(ddof=1),
        big_n,
        bounds,
    )
    q = ppi.t_quantile(ALPHA, fit.human_df)
    return {"cov": np.mean(np.abs(fit.ppi - y.mean()) <= q * fit.ppi_se), "width": np.mean(2 * q * fit.ppi_se)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--storysumm", type=Path, default=DATA / "storysumm", help="folder with storysumm.json")
    parser.add_argument("--basse", type=Path, default=DATA / "basse" / "BASSE.es.jsonl")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    head = (
        f"{'':<24}{'n':>4} {'value':>6} {'judge':>6} | {'plain cov':>9} {'w/h':>5} | "
        f"{'cov':>5} {'w/h':>5} {'w/cl':>5} {'h cov':>5} {'lam':>4}"
    )
    if (args.storysumm / "storysumm.json").exists():
        print(f"StorySumm: share of unfaithful summaries, {args.draws} draws, {int((1 - ALPHA) * 100)}% intervals")
        print(head)
        for judge, y, yhat in storysumm_settings(args.storysumm):
            for n in (10, 20, 40):
                r = uniform_draws(y, yhat, n, args.draws, args.seed, (0.0, 1.0))
                print(
                    f"{judge[:24]:<24}{n:>4} {y.mean():6.3f} {yhat.mean():6.3f} | {r['plain_cov']:9.3f} "
                    f"{r['plain_ratio']:5.3f} | {r['cov']:5.3f} {r['ratio']:5.3f} {r['ratio_classical']:5.3f} "
                    f"{r['human_cov']:5.3f} {r['lam']:4.2f}"
                )
    else:
        print(f"StorySumm not found at {args.storysumm} (use --storysumm)", file=sys.stderr)
    if args.basse.exists():
        print(f"\nBASSE es: mean rating (mean of the raters), offline annotator as judge, {args.draws} draws")
        print(f"{head} | {'act cov':>7} {'act/uni':>7}")
        for criterion, y, yhat, uncertainty in basse_settings(args.basse):
            for n in (50, 100):
                r = uniform_draws(y, yhat, n, args.draws, args.seed, (1.0, 5.0))
                a = active_draws(y, yhat, uncertainty, n, args.draws, args.seed + 1, (1.0, 5.0))
                print(
                    f"{criterion:<24}{n:>4} {y.mean():6.3f} {yhat.mean():6.3f} | {r['plain_cov']:9.3f} "
                    f"{r['plain_ratio']:5.3f} | {r['cov']:5.3f} {r['ratio']:5.3f} {r['ratio_classical']:5.3f} "
                    f"{r['human_cov']:5.3f} {r['lam']:4.2f} | {a['cov']:7.3f} {a['width'] / r['width']:7.3f}"
                )
    else:
        print(f"BASSE not found at {args.basse} (use --basse)", file=sys.stderr)
    print(f"\n{time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
