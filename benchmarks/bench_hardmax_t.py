"""Hardmax beyond two tokens (issue 20, docs/theory.md §14): the SE and AMP at T >= 3.

    python benchmarks/bench_hardmax_t.py [--skip-curve]

- the SE's second moment ``E[sum w g^2]`` (one evaluation of the SE map) at T = 3 and 4, at
  three points of a rho = 0.5 curve (``q + V = Q0``), one thread, median of 3: the figure
  behind ``SE_FIXED_POINT_SECONDS`` in ``aimlib.channels.hardmax``;
- the SE curve at T = 3, rho = 0.5, 64 points geometric in alpha_bar from 0.1 to 30 (alpha =
  alpha_bar rho / c_3), both starts, as ``aimlib.theory.state_evolution.curve`` runs it (numba's
  threads: both cores), once (it takes minutes): wall and CPU time, fixed points converged,
  map evaluations per point;
- one AMP iteration at T = 3, d = 100, alpha_bar = 1 and 4, one thread, against its GEMMs
  ``X S`` and ``X^T (G X)`` (each ``(n T, d) x (d, d)``) and against the output function
  (Genz's rule, :data:`aimlib.channels.hardmax.AMP_QMC`) alone on the same ``omega``.
"""

from __future__ import annotations

import argparse
import resource
import time

import numba
import numpy as np
from _util import machine, median_time, write_section
from threadpoolctl import threadpool_limits

from aimlib import amp, model
from aimlib import state_evolution as se
from aimlib.channels import make_channel
from aimlib.channels.hardmax import se_moments


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def se_map_rows() -> list[str]:
    rows = []
    numba.set_num_threads(1)
    Q0 = 1.5
    for T in (3, 4):
        se_moments.second_moment(T, 1.0, 0.5)  # compile / load the caches
        for V in (0.6, 0.14, 0.01):
            q = Q0 - V
            med, _ = median_time(lambda T=T, q=q, V=V: se_moments.second_moment(T, q, V),
                                 repeat=3, warmup=0)
            r = se_moments.second_moment(T, q, V)
            rows.append(f"| SE map, T = {T}, q = {q:g}, V = {V:g} | {med:.2f} s | "
                        f"{se_moments.outer_points(V)} x {se_moments.SE_OUTER[1]} | "
                        f"{r.value:.5g} +- {r.stderr:.2g} |")
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return rows


def curve_row() -> str:
    rho, T = 0.5, 3
    ch = make_channel("hardmax", T=T)
    abar = np.geomspace(0.1, 30.0, 64)
    alphas = abar / ch.alpha_bar_factor(rho)
    se.solve("hardmax", float(alphas[0]), rho, T=T)  # caches
    t0, c0 = time.perf_counter(), _cpu()
    ds = se.curve("hardmax", alphas, rho, T=T)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    conv = int(ds.converged.sum() + ds.converged_informed.sum())
    evals = float(ds.iterations.mean())
    # the curve records the map evaluations of the uninformed start only
    inf = (f" (informed {float(ds.iterations_informed.mean()):.1f})"
           if "iterations_informed" in ds else "")
    return (f"| SE curve, hardmax T = 3, rho = 0.5, 64 alpha_bar in [0.1, 30] | {wall:.0f} s wall, "
            f"{cpu:.0f} s CPU ({numba.get_num_threads()} threads) | {conv}/128 | "
            f"{evals:.1f}{inf} | error {float(ds.error[0]):.4f} .. "
            f"{float(ds.error[-1]):.2e} |")


def table_rows() -> list[str]:
    """The same 64-point curve through the tabulated ``K_3`` (the default, docs/theory.md
    §14.6), and its errors against the direct RQMC SE at three of its points."""
    from unittest import mock

    from aimlib.channels.hardmax import moment_table

    rho, T = 0.5, 3
    ch = make_channel("hardmax", T=T)
    rows = [curve_row()]
    for abar in (0.3, 3.0, 30.0):
        alpha = abar / ch.alpha_bar_factor(rho)
        t0 = time.perf_counter()
        a = se.solve("hardmax", alpha, rho, T=T).error
        ta = time.perf_counter() - t0
        t0 = time.perf_counter()
        with mock.patch.object(moment_table, "has_table", lambda T: False):
            b = se.solve("hardmax", alpha, rho, T=T).error
        tb = time.perf_counter() - t0
        rows.append(f"| SE point, alpha_bar = {abar:g}: table against direct RQMC | "
                    f"{1e3 * ta:.0f} ms against {tb:.0f} s | - | - | error {a:.5g} against "
                    f"{b:.5g} ({a / b - 1:+.2%}) |")
    return rows


def amp_row(abar: float, d: int = 100, rho: float = 0.5, T: int = 3) -> str:
    ch = make_channel("hardmax", T=T)
    alpha = abar / ch.alpha_bar_factor(rho)
    data = model.generate("hardmax", alpha, rho, T, d, 0)
    n = data.n
    rng = np.random.default_rng(0)
    S = rng.standard_normal((d, d))
    G = rng.standard_normal((n * T, d))
    Xf = data.tokens().reshape(n * T, d)
    gemm = median_time(lambda: Xf @ S)[0] + median_time(lambda: Xf.T @ G)[0]
    omega = rng.standard_normal((n, T, T)) * 0.8
    omega = 0.5 * (omega + omega.transpose(0, 2, 1))
    y = data.outputs()
    gout = median_time(lambda: ch.g_out(y, omega, 0.3))[0]

    def run(k):
        return amp.run(data, damping=0.0, max_iter=k, tol=1e-300, max_restarts=0)

    it = (median_time(lambda: run(6), repeat=3)[0]
          - median_time(lambda: run(3), repeat=3)[0]) / 3
    return (f"| AMP iteration, hardmax T = 3, d = 100, alpha_bar = {abar:g} "
            f"(alpha = {alpha:.4g}, n = {n}) | {1e3 * it:.1f} ms | {1e3 * gemm:.1f} ms | "
            f"{it / gemm:.0f}x | {1e3 * gout:.1f} ms ({1e6 * gout / n:.0f} us per sample) |")


def amp_rows() -> list[str]:
    numba.set_num_threads(1)
    with threadpool_limits(1):
        rows = [amp_row(abar) for abar in (1.0, 4.0)]
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return rows


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--skip-curve", action="store_true")
    p.add_argument("--table", action="store_true",
                   help="only the curve through the tabulated K_3, against direct SE points")
    args = p.parse_args()
    if args.table:
        write_section("hardmax_t_table", "\n".join([
            f"Measured on {machine()}; the curve as `aimlib.theory.state_evolution.curve` runs it "
            "(numba's threads: both cores).", "",
            "| case | time | converged (both starts) | map evaluations per point | error |",
            "|---|---|---|---|---|", *table_rows()]))
        return
    se_rows = se_map_rows()
    a_rows = amp_rows()
    c_row = [] if args.skip_curve else [curve_row()]
    table = "\n".join([
        f"Measured on {machine()}. SE map: one thread, median of 3 (outer rule: points per "
        "scrambling x scramblings; the value and the outer rule's standard error). AMP: one "
        "thread (numba and BLAS), (6 - 3 iterations) / 3, medians of 3.",
        "",
        "| case | time | outer rule | E[sum w g^2] |",
        "|---|---|---|---|",
        *se_rows,
        "",
        "| case | time | converged (both starts) | map evaluations per point | error range |",
        "|---|---|---|---|---|",
        *(c_row or ["| SE curve (skipped: --skip-curve) | - | - | - | - |"]),
        "",
        "| case | time | its GEMMs alone | ratio | output function alone |",
        "|---|---|---|---|---|",
        *a_rows,
    ])
    write_section("hardmax_t", table)


if __name__ == "__main__":
    main()
