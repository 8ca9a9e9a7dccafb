"""The "diagonals analytically" lead for hardmax at T >= 3 (issue 32, item 5), measured.

    python benchmarks/bench_hardmax_diagonal.py

Given the off-diagonal indices ``u_ab`` (``a < b``), each row's diagonal index ``h_aa`` enters
the argmax constraints of its row alone, through one normal CDF: ``Phi((omega_aa - max_c
u_ac) / sqrt(2V))`` when the diagonal wins the row, ``Phi((u_ae - omega_aa) / sqrt(2V))`` when
``e`` wins it; its posterior mean given ``u`` is a truncated-normal mean.  So ``Z_out`` is an
integral over the ``T (T - 1) / 2`` off-diagonal indices only (3 at T = 3, against the 5 of
Genz's rule on all ``T (T + 1) / 2`` indices less the shift).  The estimator below draws ``u``
by Genz's separation of variables on the off-diagonal constraints (``u_ae > u_ac``, each a
bound on the later of its two variables in a fixed order) and weights each point by the
diagonal CDFs, with the same scrambled Sobol points as
:func:`aimlib.channels.hardmax.orthant.genz_gout`.

It is unbiased (it converges to Genz's value) but its weights vary: the diagonal CDFs are not
seen by the sampling of ``u``.  The table gives, per sample, the error of ``g`` against Genz's
rule at ``2^14 x 4`` points, for both rules at several point counts, and their time per sample
(one thread).  Not used by aimlib; kept so that the measurement can be repeated.
"""

from __future__ import annotations

import functools
import itertools
import math

import numba
import numpy as np
from _util import machine, median_time, write_section
from numba import njit, prange

from aimlib.channels.hardmax import orthant as o
from aimlib.core.normal import log_ndtr_scalar

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def offdiag_tables(T: int):
    """Per pattern: the off-diagonal constraints ``u_w > u_l`` (each bounds the later slot)
    and, per row, the slot of its winner (``-1``: the diagonal wins)."""
    idx = o.pair_index(T)
    iu = np.triu_indices(T)
    offs = [p for p, (a, b) in enumerate(zip(*iu, strict=True)) if a != b]
    slot = {p: i for i, p in enumerate(offs)}
    n_pat, K = T**T, T * (T - 2)
    later = np.full((n_pat, K), -1, np.int64)
    earlier = np.zeros((n_pat, K), np.int64)
    sign = np.zeros((n_pat, K))
    pw = np.zeros((n_pat, K), np.int64)
    pl = np.zeros((n_pat, K), np.int64)
    win = np.zeros((n_pat, T), np.int64)
    for k, y in enumerate(itertools.product(range(T), repeat=T)):
        y = y[::-1]  # k = sum_a y_a T^a, as orthant.pattern_of
        i = 0
        for a in range(T):
            e = y[a]
            win[k, a] = -1 if e == a else slot[idx[a, e]]
            if e == a:
                continue
            for c in range(T):
                if c in (a, e):
                    continue
                sw, sl = slot[idx[a, e]], slot[idx[a, c]]
                pw[k, i], pl[k, i] = idx[a, e], idx[a, c]
                later[k, i], earlier[k, i], sign[k, i] = (sw, sl, 1.0) if sw > sl else \
                    (sl, sw, -1.0)
                i += 1
    rows = np.array([[slot[idx[a, c]] for c in range(T) if c != a] for a in range(T)])
    return (later, earlier, sign, pw, pl, win, np.array(offs, np.int64),
            np.array([idx[a, a] for a in range(T)], np.int64), rows.astype(np.int64))


@njit(cache=True, parallel=True)
def _diag_kernel(pat, later, earlier, sign, pw, pl, win, offs, diags, rows, omega_p, sqrtV,
                 pts):
    n, P = omega_p.shape
    T, D, K = diags.shape[0], offs.shape[0], later.shape[1]
    n_shift, n_pts, _ = pts.shape
    sd = math.sqrt(2.0) * sqrtV
    g = np.empty((n, P))
    logz = np.empty(n)
    for m in prange(n):
        k = pat[m]
        x = np.empty(D)
        vmean = np.empty(T)
        acc = np.zeros(P)
        big, tot = -np.inf, 0.0
        for s in range(n_shift):
            for q in range(n_pts):
                logw = 0.0
                for j in range(D):
                    lo, hi = -np.inf, np.inf
                    for i in range(K):
                        if later[k, i] != j:
                            continue
                        c = (omega_p[m, pl[k, i]] - omega_p[m, pw[k, i]]) / sqrtV
                        if sign[k, i] > 0:  # the winner is later: x_j > x_e + c
                            lo = max(lo, x[earlier[k, i]] + c)
                        else:  # the loser is later: x_j < x_e - c
                            hi = min(hi, x[earlier[k, i]] - c)
                    lp, x[j] = o._truncated(lo, hi, pts[s, q, j])
                    logw += lp
                    if logw == -np.inf:
                        break
                if logw == -np.inf:
                    continue
                for a in range(T):
                    om = omega_p[m, diags[a]]
                    if win[k, a] < 0:
                        mx = -np.inf
                        for c in range(T - 1):
                            mx = max(mx, omega_p[m, offs[rows[a, c]]] + sqrtV * x[rows[a, c]])
                        t, sgn = (om - mx) / sd, 1.0
                    else:
                        e = win[k, a]
                        t, sgn = (omega_p[m, offs[e]] + sqrtV * x[e] - om) / sd, -1.0
                    lt = log_ndtr_scalar(t)
                    logw += lt
                    vmean[a] = sgn * sd * math.exp(-0.5 * t * t - _LOG_SQRT_2PI - lt)
                if logw > big:
                    scale = math.exp(big - logw)
                    for p in range(P):
                        acc[p] *= scale
                    tot, big, wgt = tot * scale + 1.0, logw, 1.0
                else:
                    wgt = math.exp(logw - big)
                    tot += wgt
                for j in range(D):
                    acc[offs[j]] += wgt * sqrtV * x[j]
                for a in range(T):
                    acc[diags[a]] += wgt * vmean[a]
        logz[m] = big + math.log(tot) - math.log(n_shift * n_pts)
        for p in range(P):
            g[m, p] = acc[p] / tot
    return g, logz


def diagonal_gout(labels, omega, V, n_points=64, n_shifts=4):
    """``g_out`` and ``log Z_out`` by the off-diagonal integral (shapes of ``genz_gout``)."""
    n, T = labels.shape
    iu = np.triu_indices(T)
    omega_p = np.ascontiguousarray(omega[:, iu[0], iu[1]])
    pts = o.qmc_points(T * (T - 1) // 2, n_points, n_shifts)
    gp, logz = _diag_kernel(o.pattern_of(labels, T), *offdiag_tables(T), omega_p,
                            math.sqrt(V), pts)
    gp = gp / (o.pair_w(T)[None, :] * V)
    g = np.empty((n, T, T))
    g[:, iu[0], iu[1]] = gp
    g[:, iu[1], iu[0]] = gp
    return g, logz


def samples(T, n, q, V, seed):
    """``omega ~ N(0, q w)`` and labels drawn from ``omega + N(0, V w)`` (as AMP sees them)."""
    rng = np.random.default_rng(seed)

    def sym(scale):
        a = rng.standard_normal((n, T, T))
        return math.sqrt(scale) * (a + np.swapaxes(a, 1, 2)) / math.sqrt(2.0)

    omega = sym(q)
    return omega, np.argmax(omega + sym(V), axis=-1).astype(np.int8)


def main() -> None:
    numba.set_num_threads(1)
    T, n = 3, 400
    rows = []
    for q, V in [(0.9, 0.6), (1.36, 0.14), (1.49, 0.01)]:
        om, lab = samples(T, n, q, V, 1)
        gref = o.genz_gout(lab, om, V, n_points=2**14, n_shifts=4)[0]
        scale = math.sqrt(np.mean(gref**2))
        for name, fn, pts in [("Genz (5 dims)", o.genz_gout, 64),
                              ("diagonals analytic (3 dims)", diagonal_gout, 64),
                              ("diagonals analytic (3 dims)", diagonal_gout, 256),
                              ("diagonals analytic (3 dims)", diagonal_gout, 1024)]:
            g = fn(lab, om, V, n_points=pts, n_shifts=4)[0]
            err = np.sqrt(((g - gref) ** 2).sum(axis=(1, 2)) / (T * T)) / scale
            call = functools.partial(fn, lab, om, V, n_points=pts, n_shifts=4)
            t, _ = median_time(call, repeat=3)
            rows.append(f"| q = {q}, V = {V} | {name} | {pts} x 4 | {t / n * 1e6:.0f} us | "
                        f"{np.median(err):.2e} | {np.percentile(err, 99):.2e} |")
    table = (f"Measured on {machine()}; T = 3, {n} samples drawn from the model, one thread; "
             "error: per sample, rms of g over the entries relative to rms g, against Genz at "
             "2^14 x 4 points.\n\n"
             "| point | rule | points | time per sample | median error | 99th percentile |\n"
             "|---|---|---|---|---|---|\n" + "\n".join(rows))
    write_section("hardmax_diagonal", table)


if __name__ == "__main__":
    main()
