"""AMP on cross-attention with the untied prior (docs/theory.md §15.3): one iteration against the
linear algebra it cannot avoid, the two GEMMs of its output pass (``(n T_q, d) @ (d, d)`` and
``(d, n T_q) @ (n T_q, d)``) and the one SVD of its denoiser, at d = 100, 200 and 300
(softmax, T_q = T_k = 2, rho = 0.5, alpha = 0.2).  Goal: the iteration within 1.5 times that.

    python benchmarks/bench_cross_amp.py        # the iteration against its linear algebra
    python benchmarks/bench_cross_amp.py --se   # AMP against SE, the README's table
"""

from __future__ import annotations

import numpy as np
from _util import machine, median_time, write_section

from aimlib.algorithms import amp
from aimlib.algorithms.amp_ops import CrossOps, Tokens
from aimlib.model import generate

GOAL = 1.5


def case(d: int) -> dict:
    data = generate("softmax", 0.2, 0.5, 2, d, 0, prior="untied", attention="cross")
    tokens = Tokens(data, amp.CHUNK, amp.TOKEN_BUDGET, "float64")
    ops = CrossOps(data, data.ch, tokens, False)
    ops.reset()
    rng = np.random.default_rng(1)
    S = rng.standard_normal((d, d)) / np.sqrt(d)
    pr = data.prior

    def iteration():
        B = ops.output_pass(S, 0.5, 0.0)
        q_hat = ops.q_hat(data.alpha, 0.5)
        return ops.rie(S + ops.direction(B, q_hat), 1.0 / q_hat, pr)

    t_it, _ = median_time(iteration, repeat=7, warmup=2)
    n, Tq = data.n, data.T_q
    X = rng.standard_normal((n * Tq, d))
    t_g1, _ = median_time(lambda: X @ S, repeat=7, warmup=2)
    Y = rng.standard_normal((n * Tq, d))
    t_g2, _ = median_time(lambda: X.T @ Y, repeat=7, warmup=2)  # not X.T @ X (a SYRK)
    t_svd, _ = median_time(lambda: np.linalg.svd(S), repeat=7, warmup=2)
    base = t_g1 + t_g2 + t_svd
    return {"d": d, "n": n, "it": t_it, "gemm": t_g1 + t_g2, "svd": t_svd, "ratio": t_it / base}


SE_CASES = [("softmax", 2, "untied", 0.2), ("softmax", 3, "untied", 0.1),
            ("hardmax", 2, "untied", 0.4), ("hardmax", 3, "untied", 0.25),
            ("softmax", 2, "tied", 0.15), ("hardmax", 2, "tied", 0.4)]


def against_se(seeds: int = 3) -> None:
    """AMP against the cross-attention SE, rho = 0.5, T_q = T_k = T, at d = 100 and 200."""
    from aimlib.theory import cross_attention as cross

    lines = [f"Measured on {machine()}; {seeds} seeds per d, mean +- standard deviation over the "
             "seeds (converged runs / runs); rho = 0.5, T_q = T_k = T.", "",
             "| channel | T | prior | alpha | SE | AMP, d = 100 | AMP, d = 200 |",
             "|---|---|---|---|---|---|---|"]
    for channel, T, prior, alpha in SE_CASES:
        se = cross.solve(channel, alpha, 0.5, T_q=T, T_k=T, prior=prior).error
        cells = []
        for d in (100, 200):
            runs = [amp.run(generate(channel, alpha, 0.5, T, d, s, prior=prior,
                                     attention="cross"), max_iter=400) for s in range(seeds)]
            errs = np.array([r.error for r in runs if r.converged])
            cells.append(f"{errs.mean():.4f} +- {errs.std(ddof=1):.4f} "
                         f"({errs.size}/{len(runs)})" if errs.size > 1 else "-")
        lines.append(f"| {channel} | {T} | {prior} | {alpha} | {se:.4f} | {cells[0]} | "
                     f"{cells[1]} |")
    write_section("cross_amp_se", "\n".join(lines))


def main() -> None:
    import sys

    if "--se" in sys.argv:
        against_se()
        return
    rows = [case(d) for d in (100, 200, 300)]
    lines = [f"Measured on {machine()}; medians of 7 warm repeats; nothing else ran.", "",
             "| d | n | iteration | output-pass GEMMs | SVD | iteration / (GEMMs + SVD) | goal |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['d']} | {r['n']} | {1e3 * r['it']:.1f} ms | "
                     f"{1e3 * r['gemm']:.1f} ms | {1e3 * r['svd']:.1f} ms | "
                     f"{r['ratio']:.2f} | <= {GOAL} |")
    write_section("cross_amp", "\n".join(lines))


if __name__ == "__main__":
    main()
