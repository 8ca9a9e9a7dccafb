"""Hot loops against the machine's own limit: the GEMMs they contain, timed alone.

    python benchmarks/bench_limit.py [--write]

Side by side in one process, one BLAS thread (what a workflow job gets), medians of 5:

- one AMP iteration at the paper's largest shapes (hardmax d = 100, alpha = 8, n = 80,000;
  softmax T = 4, d = 150, alpha_bar = 1) against its two products ``X S`` and ``X^T (G X)``
  (each an ``(n T, d) x (d, d)`` GEMM) and the ``d x d`` eigendecomposition, timed alone;
- one Adam step of K = 32 initialisations (d = 200, T = 6, alpha = 0.3, n = 12,000, r = 100),
  as :func:`aimlib.algorithms.gd.run` takes it (scratch space reused, Adam update included), in
  float32 (the default) and float64, against its forward ``X [W_1 .. W_K]`` and backward
  ``X^T [G Z]`` GEMMs, ``(n T, d) x (d, K r)`` and ``(d, n T) x (n T, K r)``, of the same
  precision, timed alone.

An AMP iteration is timed as (6 iterations - 3 iterations) / 3, so that the set-up (drawing the
tokens and labels) cancels.
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

    def run(k):
        return amp.run(data, damping=0.0, max_iter=k, tol=1e-300, max_restarts=0)

    # one iteration = (6 iterations - 3 iterations) / 3: the set-up (tokens, labels) cancels
    it = (_median(lambda: run(6), repeat=3) - _median(lambda: run(3), repeat=3)) / 3
    return dict(case=f"AMP iteration, {channel} T = {T}, d = {d}, alpha = {alpha:.4g}, n = {n}",
                t=it, gemm=gemm, other=eig)


def gd_case(T=6, d=200, alpha=0.3, K=32, dtype="float32"):
    """One Adam step as gd.run takes it: scratch space reused, the Adam update included."""
    data = model.generate("softmax", alpha, 0.5, T, d, 0)
    n, r = data.n, data.r
    X = data.tokens().astype(dtype)
    y = np.ascontiguousarray(data.labels)
    W = np.random.default_rng(0).standard_normal((K, d, r))
    work = np.empty(2 * n * T * K * r, dtype=dtype)
    Xf = X.reshape(n * T, d)
    Wf = np.ascontiguousarray(W.transpose(1, 0, 2).reshape(d, K * r)).astype(dtype)
    Z = np.random.default_rng(1).standard_normal((n * T, K * r)).astype(dtype)
    out = np.empty_like(Z)
    gemm = _median(lambda: np.matmul(Xf, Wf, out=out)) + _median(lambda: Xf.T @ Z)
    m = np.zeros_like(W)
    v = np.zeros_like(W)

    def step():
        _, g = gd.loss_and_grad(W, X, y, 1.0, work=work)
        m[:] = gd.BETA1 * m + (1 - gd.BETA1) * g
        v[:] = gd.BETA2 * v + (1 - gd.BETA2) * g * g
        W[:] -= 1e-6 * m / (np.sqrt(v) + gd.EPS)

    t = _median(step, repeat=3)
    return dict(case=f"Adam step ({dtype}), K = {K}, softmax T = {T}, d = {d}, alpha = {alpha}, "
                     f"n = {n}", t=t, gemm=gemm, other=float("nan"))


def main(write: bool):
    with threadpool_limits(1):
        rows = [amp_case("hardmax", 8.0, 2, 100),
                amp_case("softmax", 1.0 / 18, 4, 150),
                gd_case(dtype="float32"), gd_case(dtype="float64")]
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
