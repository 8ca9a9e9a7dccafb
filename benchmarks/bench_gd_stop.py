"""GD's held-out stopping rule against the paper's fixed 1000-step protocol (docs/theory.md §5.1).

At fig2b's and fig4's points (softmax, rho = 0.5; T = 2 and 6 at beta = 1, T = 2 at beta = 0.5
and 4; alpha_bar = 0.3, below the perfect-recovery threshold 0.75, and 0.9, above it) each seed is
run twice on the same data and initialisations: ``stop="steps"`` (1000 Adam steps) and
``stop="holdout"`` (the rule, capped at 1000).  The table gives, per point, the fixed protocol's
GD and AGD errors (mean and seed-to-seed standard deviation), the mean absolute difference the
rule makes in units of that standard deviation (the rule passes where both are <= 0.25), the
mean steps per initialisation under the rule and the wall-time ratio.

    .venv/bin/python benchmarks/bench_gd_stop.py [--seeds 4] [--inits 8] [--quick]

T = 2 runs at d = 100 (fig4's d), T = 6 at d = 200 (fig2b's d); K = 8 initialisations, not the
paper's 32 (the cost), so AGD's spread is that of an 8-run average.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from aimlib.algorithms import gd
from aimlib.model import generate

POINTS = [  # (T, beta, alpha_bar, d)
    (2, 1.0, 0.3, 100), (2, 1.0, 0.9, 100),
    (6, 1.0, 0.3, 200), (6, 1.0, 0.9, 200),
    (2, 0.5, 0.3, 100), (2, 0.5, 0.9, 100),
    (2, 4.0, 0.3, 100), (2, 4.0, 0.9, 100),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--inits", type=int, default=8)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="d / 2, 2 seeds (a smoke run)")
    a = ap.parse_args()
    seeds = 2 if a.quick else a.seeds
    print("| T | beta | alpha_bar | d | seeds | GD fixed | GD |diff| / sd | AGD fixed | "
          "AGD |diff| / sd | steps (rule) | time ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for T, beta, ab, d in POINTS:
        d = d // 2 if a.quick else d
        rows = []
        for seed in range(seeds):
            data = generate("softmax", ab / (T * T + T - 2), 0.5, T, d, seed, beta=beta)
            t0 = time.perf_counter()
            fixed = gd.run(data, inits=a.inits, steps=a.steps, stop="steps")
            t1 = time.perf_counter()
            rule = gd.run(data, inits=a.inits, steps=a.steps, stop="holdout")
            t2 = time.perf_counter()
            rows.append((fixed.errors[0], fixed.error, rule.errors[0], rule.error,
                         float(np.mean(rule.steps_taken)), (t2 - t1) / (t1 - t0)))
        r = np.array(rows)
        sd_gd, sd_agd = r[:, 0].std(ddof=1), r[:, 1].std(ddof=1)
        dg = np.abs(r[:, 2] - r[:, 0]).mean()
        da = np.abs(r[:, 3] - r[:, 1]).mean()
        print(f"| {T} | {beta:g} | {ab:g} | {d} | {seeds} | {r[:, 0].mean():.4f} +- {sd_gd:.4f} "
              f"| {dg:.4f} ({dg / sd_gd:.2f}) | {r[:, 1].mean():.4f} +- {sd_agd:.4f} "
              f"| {da:.4f} ({da / sd_agd:.2f}) | {r[:, 4].mean():.0f} | {np.median(r[:, 5]):.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
