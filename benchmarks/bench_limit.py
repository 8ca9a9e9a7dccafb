"""Hot loops against the machine's own limit: the GEMMs they contain, timed alone.

    python benchmarks/bench_limit.py [--write]

Side by side in one process, one BLAS thread (what a workflow job gets), medians of 5:

- one AMP iteration at the paper's largest shapes (hardmax d = 100, alpha = 8, n = 80,000;
  softmax T = 4, d = 150, alpha_bar = 1) against its two products ``X S`` and ``X^T (G X)``
  (each an ``(n T, d) x (d, d)`` GEMM) and the ``d x d`` eigendecomposition, timed alone;
- one Adam step of K = 32 initialisations (d = 200, T = 6, alpha = 0.3, n = 12,000, r = 100)
  against its forward ``X [W_1 .. W_K]`` and backward ``X^T [G Z]`` GEMMs,
  ``(n T, d) x (d, K r)`` and ``(d, n T) x (n T, K r)``, timed alone.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from _util import machine, median_time, write_section
from threadpoolctl import threadpool_limits

from aimlib import amp, gd, model


def _median(fn, repeat=5):
    return median_time(fn, repeat=repeat)[0]


def amp_case(channel, alpha, T, d):
    data = model.generate(channel, alpha, 0.5, T, d, 0)
    X = data.tokens()
    n = data.n
    S = np.random.default_rng(0).standard_normal((d, d))
    G = np.random.default_rng(1).standard_normal((n * T, d))
    Xf = X.reshape(n * T, d)
    gemm = _median(lambda: Xf @ S) + _median(lambda: Xf.T @ G)
    eig = _median(lambda: np.linalg.eigh(S + S.T))
    it = _median(lambda: amp.run(data, damping=0.0, max_iter=3, tol=1e-300,
                                 max_restarts=0), repeat=3) / 3
    return dict(case=f"AMP iteration, {channel} T = {T}, d = {d}, alpha = {alpha:.4g}, n = {n}",
                t=it, gemm=gemm, other=eig)


def gd_case(T=6, d=200, alpha=0.3, K=32):
    data = model.generate("softmax", alpha, 0.5, T, d, 0)
    n, r = data.n, data.r
    X = data.tokens()
    y = data.outputs()
    W = np.random.default_rng(0).standard_normal((K, d, r))
    Xf = X.reshape(n * T, d)
    Wf = np.ascontiguousarray(W.transpose(1, 0, 2).reshape(d, K * r))
    Z = np.random.default_rng(1).standard_normal((n * T, K * r))
    gemm = _median(lambda: Xf @ Wf) + _median(lambda: Xf.T @ Z)
    step = _median(lambda: gd.loss_and_grad(W, X, y, 1.0), repeat=3)
    return dict(case=f"Adam step, K = {K}, softmax T = {T}, d = {d}, alpha = {alpha}, n = {n}",
                t=step, gemm=gemm, other=float("nan"))


def main(write: bool):
    with threadpool_limits(1):
        rows = [amp_case("hardmax", 8.0, 2, 100),
                amp_case("softmax", 1.0 / 18, 4, 150),
                gd_case()]
    lines = [f"Measured on {machine()}, one BLAS thread, medians of 5 (3 for whole iterations).",
             "", "| case | time | its GEMMs alone | ratio | eigh alone |", "|---|---|---|---|---|"]
    for r in rows:
        eig = "-" if math.isnan(r["other"]) else f"{1e3 * r['other']:.1f} ms"
        lines.append(f"| {r['case']} | {1e3 * r['t']:.1f} ms | {1e3 * r['gemm']:.1f} ms | "
                     f"{r['t'] / r['gemm']:.2f}x | {eig} |")
    table = "\n".join(lines)
    print(table)
    if write:
        write_section("limit", table)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true")
    main(ap.parse_args().write)
