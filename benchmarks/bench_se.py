"""State-evolution benchmarks (issue: foundation).

    python benchmarks/bench_se.py

Targets: softmax SE, 256-point curve <= 1 s (the paper's public code: 222 s); hardmax SE,
128-point curve <= 10 s with every fixed point converged (public code: about 36 h, Monte Carlo).
Each curve is solved from both starts (uninformed and informed), to |q_{t+1} - q_t| < 1e-10.
"""

from __future__ import annotations

import time

import numpy as np
from _util import machine, median_time, write_section

from aimlib import state_evolution as se


def main() -> None:
    rows = []
    soft_alphas = np.linspace(0.0005, 0.28, 256)
    hard_alphas = np.geomspace(0.03, 10.0, 128)
    cases = [
        ("softmax, T = 2, rho = 0.5, 256 alphas", "softmax", soft_alphas, 0.5, 1.0, 222.0),
        ("hardmax, T = 2, rho = 0.5, 128 alphas", "hardmax", hard_alphas, 0.5, 10.0, 36 * 3600.0),
        ("hardmax, T = 2, rho = 0.1, 128 alphas", "hardmax", hard_alphas, 0.1, 10.0, None),
    ]
    for label, channel, alphas, rho, goal, public in cases:
        t0 = time.perf_counter()
        ds = se.curve(channel, alphas, rho)  # first call: loads numba caches, builds tables
        cold = time.perf_counter() - t0
        med, _ = median_time(lambda c=channel, a=alphas, r=rho: se.curve(c, a, r), repeat=5,
                             warmup=0)
        conv = int(ds.converged.sum() + ds.converged_informed.sum())
        evals = int(ds.iterations.sum())
        pub = f"{public:,.0f} s" if public else "-"
        speed = f"{public / med:,.0f}x" if public else "-"
        rows.append(f"| {label} | {med:.3f} s | {cold:.2f} s | {goal:g} s | {pub} | {speed} | "
                    f"{conv}/{2 * len(alphas)} | {evals / len(alphas):.1f} |")
    table = "\n".join([
        f"Measured on {machine()}; median of 5 warm runs (cold = first call in a fresh process, "
        "including numba cache loading and the hardmax quadrature table).",
        "",
        "| curve | median | cold | goal | public code | speed-up | fixed points converged "
        "(both starts) | SE map evaluations per point (uninformed) |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
    ])
    write_section("se", table)


if __name__ == "__main__":
    main()
