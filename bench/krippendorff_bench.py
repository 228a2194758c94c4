"""Krippendorff's alpha: ``analysis.krippendorff`` against the ``krippendorff`` package, same run.

Data: 20,000 units x 5 coders, ordinal ratings 1-5 drawn around a per-unit true value, 10% of
the cells missing, from a fixed seed. Each implementation runs ``--repeats`` times per level
(best time kept, after one warm-up call); the table shows both values, their absolute
difference (must be <= 1e-9) and the time ratio ours / theirs (target <= 1.0). The
``krippendorff`` package is GPL and a test-only dependency: it is imported here, never by
``analysis``. It takes coders x units, so it gets the transpose.

    python bench/krippendorff_bench.py [--units 20000] [--coders 5] [--repeats 5] [--seed 0]

Exit status 1 when a value differs by more than 1e-9, 2 when ``krippendorff`` is missing.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judgelab.analysis.bootstrap import bootstrap_alpha_ci  # noqa: E402
from judgelab.analysis.krippendorff import krippendorff_alpha  # noqa: E402

TOLERANCE = 1e-9
MISSING_SHARE = 0.10
LEVELS = ("ordinal", "nominal", "interval")  # ordinal is the headline row


def ratings(n_units: int, n_coders: int, seed: int) -> np.ndarray:
    """Units x coders, values 1-5 near a per-unit true value, ``MISSING_SHARE`` NaN."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=(n_units, 1))
    noise = rng.integers(-1, 2, size=(n_units, n_coders)) * (rng.random((n_units, n_coders)) < 0.4)
    data = np.clip(truth + noise, 1, 5).astype(np.float64)
    data[rng.random(data.shape) < MISSING_SHARE] = np.nan
    return data


def best_time(function: Callable[[], float], repeats: int) -> tuple[float, float]:
    """(value, best wall time in seconds) over ``repeats`` calls after one warm-up call."""
    value = function()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return float(value), min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=20_000)
    parser.add_argument("--coders", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--boot", type=int, default=1000, help="bootstrap replicates to time (0 to skip)")
    args = parser.parse_args(argv)
    try:
        import krippendorff
    except ImportError:
        print("the krippendorff package is not installed (pip install krippendorff): nothing to compare against")
        return 2

    data = ratings(args.units, args.coders, args.seed)
    print(
        f"{args.units} units x {args.coders} coders, values 1-5, {np.isnan(data).mean():.1%} missing, "
        f"seed {args.seed}; best of {args.repeats}; krippendorff {version('krippendorff')}, "
        f"numpy {np.__version__}"
    )
    header = f"{'level':<10}{'ours':>20}{'krippendorff':>20}{'|diff|':>12}{'ours ms':>10}{'theirs ms':>11}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    worst = 0.0
    for level in LEVELS:
        ours, our_time = best_time(lambda level=level: krippendorff_alpha(data, level).value, args.repeats)
        theirs, their_time = best_time(
            lambda level=level: krippendorff.alpha(reliability_data=data.T, level_of_measurement=level),
            args.repeats,
        )
        difference = abs(ours - theirs)
        worst = max(worst, difference)
        print(
            f"{level:<10}{ours:>20.15f}{theirs:>20.15f}{difference:>12.1e}"
            f"{our_time * 1e3:>10.2f}{their_time * 1e3:>11.2f}{our_time / their_time:>8.3f}"
        )
    if args.boot:
        started = time.perf_counter()
        low, high = bootstrap_alpha_ci(data, "ordinal", n_boot=args.boot, seed=args.seed)
        elapsed = time.perf_counter() - started
        print(f"\nbootstrap_alpha_ci(ordinal, n_boot={args.boot}): [{low:.4f}, {high:.4f}] in {elapsed:.2f} s")
    verdict = "OK" if worst <= TOLERANCE else "MISMATCH"
    print(f"\nlargest |diff| {worst:.1e} (tolerance {TOLERANCE:.0e}): {verdict}")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
