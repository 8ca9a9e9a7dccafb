"""Hardmax for any T: the likelihood of the row-wise argmaxes as a Gaussian polytope probability
(docs/theory.md §14).

Given ``omega`` and ``V``, the pair indices ``h_ab`` (``a <= b``) are Gaussian with mean
``omega`` and covariance ``V diag(w)``.  Observing the argmax ``y_a`` of every row is the event
``h_{a y_a} > h_ac`` for all ``c != y_a``: ``K = T (T - 1)`` linear constraints on
``P = T (T + 1) / 2`` variables, invariant under adding one constant to every index (so of rank
``R = P - 1``).  Their probability ``Z_out`` and the posterior mean of ``h`` (hence
``g_out = d log Z_out / d omega``) are computed by Genz's separation of variables:

* in whitened coordinates ``h = omega + sqrt(V) diag(sqrt w) z``, the constraints read
  ``M z > b`` with ``M`` of rank ``R``; an orthonormal basis of its row space and a pivoted QR
  make it lower-trapezoidal, ``L z' > b`` with ``z' ~ N(0, I_R)`` (one table per pattern ``y``,
  computed once per ``T``);
* each constraint bounds the last variable it involves, so the variables are drawn one after
  the other from their truncated normal given the ones before, and the product of the
  truncation masses is an unbiased weight of ``Z_out``; the weighted mean of ``z'`` gives the
  posterior mean;
* the uniforms come from scrambled Sobol points, several independent scramblings
  (randomised QMC), whose spread is the error estimate.

The scramblings are drawn from a fixed seed (:data:`QMC_SEED`): the rule is deterministic,
like a quadrature.  At ``T = 2`` this reproduces the exact bivariate-normal path of
:mod:`aimlib.channels.hardmax` (the tests ask for 1e-6).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit, prange

from aimlib.core.normal import log_ndtr_scalar

#: Seed of the scramblings of the Sobol points (a fixed rule, not a random draw of a run).
QMC_SEED = 20250601


#: Largest T the general hardmax path accepts: T = 5 has 3125 patterns of 20 constraints on
#: 14 variables, beyond which neither the tables nor the SE's sum over patterns stay small.
TMAX_GENERAL = 4


_SQRT2 = math.sqrt(2.0)


_LOG_EPS = -745.0


def pair_index(T: int) -> np.ndarray:
    """``idx[a, b]``: the pair coordinate of ``(min(a, b), max(a, b))`` in ``np.triu_indices``
    order."""
    iu = np.triu_indices(T)
    idx = np.empty((T, T), dtype=np.int64)
    idx[iu] = np.arange(iu[0].size)
    idx[iu[1], iu[0]] = np.arange(iu[0].size)
    return idx


def pair_w(T: int) -> np.ndarray:
    """Pair weights ``w`` in ``np.triu_indices`` order (2 on the diagonal, 1 off it)."""
    iu = np.triu_indices(T)
    return np.where(iu[0] == iu[1], 2.0, 1.0)


@dataclass(frozen=True)
class PatternTable:
    """The factorised constraints of every argmax pattern at one ``T``.

    Pattern ``k`` is the labels ``y`` with ``k = sum_a y_a T^a``.

    Attributes
    ----------
    T, P, K, R : int
        Tokens, pair variables, constraints per pattern, rank.
    A : numpy.ndarray
        ``(T^T, K, P)``: the constraints ``A h > 0`` (rows in processing order).
    L : numpy.ndarray
        ``(T^T, K, R)``: lower-trapezoidal constraint matrix in the whitened variables.
    last : numpy.ndarray
        ``(T^T, K)``: the variable each constraint bounds (its last nonzero column).
    B : numpy.ndarray
        ``(T^T, P, R)``: ``diag(sqrt w) Vr Q``, so that ``E[h | y] - omega = sqrt(V) B E[z']``.
    C : numpy.ndarray
        ``(T^T, K, R)``: the constraints in the whitened variables ``z_r = Vr^T z`` (rows in
        ``A``'s order), which each sample orders afresh (:func:`_order`).
    Bv : numpy.ndarray
        ``(T^T, P, R)``: ``diag(sqrt w) Vr``.
    """

    T: int
    P: int
    K: int
    R: int
    A: np.ndarray
    L: np.ndarray
    last: np.ndarray
    B: np.ndarray
    C: np.ndarray
    Bv: np.ndarray


@lru_cache(maxsize=8)
def pattern_table(T: int) -> PatternTable:
    """The :class:`PatternTable` of ``T`` (cached)."""
    import scipy.linalg  # scipy only when this runs (its import costs ~0.2 s)

    idx = pair_index(T)
    P = T * (T + 1) // 2
    K = T * (T - 1)
    R = P - 1
    sw = np.sqrt(pair_w(T))
    n_pat = T**T
    A_all = np.zeros((n_pat, K, P))
    L_all = np.zeros((n_pat, K, R))
    last_all = np.zeros((n_pat, K), dtype=np.int64)
    B_all = np.zeros((n_pat, P, R))
    C_all = np.zeros((n_pat, K, R))
    Bv_all = np.zeros((n_pat, P, R))
    for k, y in enumerate(itertools.product(range(T), repeat=T)):
        y = y[::-1]  # itertools varies the last entry fastest; k = sum_a y_a T^a
        A = np.zeros((K, P))
        i = 0
        for a in range(T):
            for c in range(T):
                if c != y[a]:
                    A[i, idx[a, y[a]]] += 1.0
                    A[i, idx[a, c]] -= 1.0
                    i += 1
        M = A * sw[None, :]
        _, s, Vt = np.linalg.svd(M)
        if s[R - 1] < 1e-10 * s[0] or (s.size > R and s[R] > 1e-10 * s[0]):
            raise AssertionError(f"pattern {y}: rank is not {R}")
        Vr = Vt[:R].T
        C = M @ Vr  # K x R, full column rank
        Q, Rm, perm = scipy.linalg.qr(C.T, pivoting=True)
        L = Rm.T  # K x R lower trapezoidal: C[perm] = L Q^T
        tol = 1e-12 * np.abs(L).max()
        last = np.array([max(j for j in range(R) if abs(L[r, j]) > tol) for r in range(K)])
        A_all[k] = A[perm]
        L_all[k] = np.where(np.abs(L) > tol, L, 0.0)
        last_all[k] = last
        B_all[k] = (sw[:, None] * Vr) @ Q
        C_all[k] = C[perm]
        Bv_all[k] = sw[:, None] * Vr
    return PatternTable(T, P, K, R, A_all, L_all, last_all, B_all, C_all, Bv_all)


def pattern_of(labels: np.ndarray, T: int) -> np.ndarray:
    """Pattern indices ``sum_a y_a T^a`` of argmax labels ``(n, T)``."""
    return (labels.astype(np.int64) * (T ** np.arange(T))[None, :]).sum(axis=1)


@lru_cache(maxsize=16)
def qmc_points(dim: int, n_points: int, n_shifts: int) -> np.ndarray:
    """``(n_shifts, n_points, dim)`` scrambled Sobol points in (0, 1), ``n_shifts`` independent
    scramblings from :data:`QMC_SEED` (a fixed rule)."""
    from scipy.stats import qmc  # scipy only when this runs (its import costs ~0.2 s)

    if n_points & (n_points - 1):
        raise ValueError(f"n_points must be a power of 2, got {n_points}")
    rng = np.random.default_rng(QMC_SEED + 1000 * dim + n_points)
    out = np.empty((n_shifts, n_points, dim))
    for s in range(n_shifts):
        out[s] = qmc.Sobol(dim, scramble=True, seed=rng).random(n_points)
    np.clip(out, 1e-16, 1.0 - 1e-16, out=out)
    return out


# --------------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------------
@njit(cache=True)
def _phi_cdf(x):
    return 0.5 * math.erfc(-x / _SQRT2)


@njit(cache=True)
def _ndtri(p):
    """Inverse of the standard normal CDF: Acklam's rational approximation refined by one
    Halley step with ``erfc`` (relative error near 1e-15 in (1e-300, 1 - 1e-16))."""
    a0, a1, a2, a3, a4, a5 = (-3.969683028665376e+01, 2.209460984245205e+02,
                              -2.759285104469687e+02, 1.383577518672690e+02,
                              -3.066479806614716e+01, 2.506628277459239e+00)
    b0, b1, b2, b3, b4 = (-5.447609879822406e+01, 1.615858368580409e+02,
                          -1.556989798598866e+02, 6.680131188771972e+01,
                          -1.328068155288572e+01)
    c0, c1, c2, c3, c4, c5 = (-7.784894002430293e-03, -3.223964580411365e-01,
                              -2.400758277161838e+00, -2.549732539343734e+00,
                              4.374664141464968e+00, 2.938163982698783e+00)
    d0, d1, d2, d3 = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                      3.754408661907416e+00)
    if p < 0.02425:
        q = math.sqrt(-2.0 * math.log(p))
        x = (((((c0 * q + c1) * q + c2) * q + c3) * q + c4) * q + c5) / \
            ((((d0 * q + d1) * q + d2) * q + d3) * q + 1.0)
    elif p > 1.0 - 0.02425:
        q = math.sqrt(-2.0 * math.log(1.0 - p))
        x = -(((((c0 * q + c1) * q + c2) * q + c3) * q + c4) * q + c5) / \
            ((((d0 * q + d1) * q + d2) * q + d3) * q + 1.0)
    else:
        q = p - 0.5
        r = q * q
        x = (((((a0 * r + a1) * r + a2) * r + a3) * r + a4) * r + a5) * q / \
            (((((b0 * r + b1) * r + b2) * r + b3) * r + b4) * r + 1.0)
    e = _phi_cdf(x) - p
    u = e * math.sqrt(2.0 * math.pi) * math.exp(0.5 * x * x)
    return x - u / (1.0 + 0.5 * x * u)


@njit(cache=True)
def _truncated(lo, hi, u):
    """``(log P(lo < Z < hi), the u-quantile of Z given that)`` for ``Z ~ N(0, 1)``, computed on
    the side of the smaller tail."""
    if lo >= hi:
        return -np.inf, 0.5 * (lo + hi)
    if lo > 0.0:  # upper tail: work with the survival function Q(x) = Phi(-x)
        lq_lo = log_ndtr_scalar(-lo)
        if hi < np.inf:
            ratio = math.exp(log_ndtr_scalar(-hi) - lq_lo)
            if ratio >= 1.0:
                return -np.inf, lo
            lp = lq_lo + math.log1p(-ratio)
        else:
            ratio = 0.0
            lp = lq_lo
        if lq_lo < -700.0:  # beyond the float range: the exponential tail
            return lp, lo - math.log1p(-u * (1.0 - ratio)) / lo
        tail = math.exp(lq_lo) * (1.0 - u * (1.0 - ratio))
        return lp, -_ndtri(tail)
    if hi < 0.0:  # lower tail, mirrored
        lp, z = _truncated(-hi, -lo, 1.0 - u)
        return lp, -z
    # lo <= 0 <= hi: central
    plo = _phi_cdf(lo) if lo > -np.inf else 0.0
    phi = _phi_cdf(hi) if hi < np.inf else 1.0
    p = phi - plo
    if p <= 0.0:
        return -np.inf, 0.0
    return math.log(p), _ndtri(min(max(plo + u * p, 1e-300), 1.0 - 1e-16))


@njit(cache=True)
def _truncated_mean(lo, hi):
    """``(log P(lo < Z < hi), E[Z | lo < Z < hi])`` for ``Z ~ N(0, 1)``: the last variable of
    Genz's sequence is integrated exactly (no later variable depends on it)."""
    if lo >= hi:
        return -np.inf, 0.5 * (lo + hi)
    if hi < 0.0 or (lo > -np.inf and -lo > hi):  # mirror so that the mass is on the right
        lp, m = _truncated_mean(-hi, -lo)
        return lp, -m
    # now hi >= -lo, i.e. the interval reaches at least as far right as left
    if lo > 0.0:
        llo = log_ndtr_scalar(-lo)
        if hi < np.inf:
            ratio = math.exp(log_ndtr_scalar(-hi) - llo)
            lp = llo + math.log1p(-ratio)
        else:
            lp = llo
        # E = (phi(lo) - phi(hi)) / P, in logs
        e_lo = math.exp(-0.5 * lo * lo - 0.5 * math.log(2.0 * math.pi) - lp)
        e_hi = math.exp(-0.5 * hi * hi - 0.5 * math.log(2.0 * math.pi) - lp) if hi < np.inf \
            else 0.0
        return lp, e_lo - e_hi
    plo = _phi_cdf(lo) if lo > -np.inf else 0.0
    phi = _phi_cdf(hi) if hi < np.inf else 1.0
    p = phi - plo
    if p <= 0.0:
        return -np.inf, 0.0
    dlo = math.exp(-0.5 * lo * lo) if lo > -np.inf else 0.0
    dhi = math.exp(-0.5 * hi * hi) if hi < np.inf else 0.0
    return math.log(p), (dlo - dhi) / (math.sqrt(2.0 * math.pi) * p)


@njit(cache=True)
def _lse_add(logw, m, s, acc, z):
    """Add the weight ``exp(logw)`` to a running sum kept as ``exp(m) s`` and ``z`` weighted to
    ``acc`` (same scale); returns the new ``(m, s)``."""
    if logw > m:
        scale = math.exp(m - logw)
        for j in range(z.shape[0]):
            acc[j] = acc[j] * scale + z[j]
        return logw, s * scale + 1.0
    wgt = math.exp(logw - m)
    for j in range(z.shape[0]):
        acc[j] += wgt * z[j]
    return m, s + wgt


@njit(cache=True)
def _genz_one(L, last, b, pts, zbar, shift_logz, zshift):
    """Genz's estimate for one sample: fills ``zbar`` (posterior mean of ``z'``),
    ``shift_logz`` (``log Z`` per scrambling) and ``zshift`` (the posterior mean from each
    scrambling alone, independent estimates); returns ``log Z`` over all points."""
    n_shift, n_pts, R = pts.shape
    K = L.shape[0]
    z = np.empty(R)
    acc = np.zeros(R)
    acc_s = np.empty(R)
    m_all = -np.inf
    # two passes would double the cost: keep a running log-sum-exp of the weights
    s_all = 0.0
    for s in range(n_shift):
        m_s = -np.inf
        s_s = 0.0
        for j in range(R):
            acc_s[j] = 0.0
        for k in range(n_pts):
            logw = 0.0
            for j in range(R):
                lo = -np.inf
                hi = np.inf
                for i in range(K):
                    if last[i] != j:
                        continue
                    t = b[i]
                    for c in range(j):
                        t -= L[i, c] * z[c]
                    t /= L[i, j]
                    if L[i, j] > 0.0:
                        if t > lo:
                            lo = t
                    elif t < hi:
                        hi = t
                if j == R - 1:  # the last variable: its truncated mean, exactly
                    lp, zj = _truncated_mean(lo, hi)
                else:
                    lp, zj = _truncated(lo, hi, pts[s, k, j])
                z[j] = zj
                logw += lp
                if logw == -np.inf:
                    break
            if logw == -np.inf:
                continue
            # running log-sum-exp per scrambling and overall, and the weighted sum of z
            m_s, s_s = _lse_add(logw, m_s, s_s, acc_s, z)
            m_all, s_all = _lse_add(logw, m_all, s_all, acc, z)
        shift_logz[s] = m_s + math.log(s_s) - math.log(n_pts) if s_s > 0.0 else -np.inf
        for j in range(R):
            zshift[s, j] = acc_s[j] / s_s if s_s > 0.0 else 0.0
    if s_all <= 0.0:
        for j in range(R):
            zbar[j] = 0.0
        return -np.inf
    for j in range(R):
        zbar[j] = acc[j] / s_all
    return m_all + math.log(s_all) - math.log(n_shift * n_pts)


@njit(cache=True)
def _residual(C, b, i, E, zhat, j, r):
    """Row ``i`` of ``C z > b`` against the first ``j`` basis vectors of ``E`` (the earlier
    variables at their truncated means ``zhat``): writes the row's residual into ``r`` and
    returns its shifted bound."""
    R = C.shape[1]
    for c in range(R):
        r[c] = C[i, c]
    t = b[i]
    for k in range(j):
        dot = 0.0
        for c in range(R):
            dot += C[i, c] * E[c, k]
        t -= dot * zhat[k]
        for c in range(R):
            r[c] -= dot * E[c, k]
    return t


@njit(cache=True)
def _order(C, b, L, last, E):
    """Genz-Bretz ordering of one sample's constraints ``C z > b`` (``C``: K x R, rank R):
    greedily take as the next variable the constraint least likely to hold given the earlier
    ones at their truncated means, orthonormalising its row against the rows taken (``E``:
    the new basis, ``z' = E^T z``).  Fills ``L`` (K x R, lower-trapezoidal in the returned
    order), ``last`` and ``E``; returns the order (a permutation of the constraints)."""
    K, R = C.shape
    taken = np.zeros(K, dtype=np.bool_)
    order = np.empty(K, dtype=np.int64)
    zhat = np.zeros(R)
    r = np.empty(R)
    coef = np.empty(R)
    for j in range(R):
        best = -1
        best_lp = np.inf
        best_sig = 0.0
        for i in range(K):
            if taken[i]:
                continue
            # residual of row i against the basis so far
            t = _residual(C, b, i, E, zhat, j, r)
            sig = 0.0
            for c in range(R):
                sig += r[c] * r[c]
            sig = math.sqrt(sig)
            if sig < 1e-10:
                continue
            lp = log_ndtr_scalar(-t / sig)  # log P(constraint holds)
            if lp < best_lp:
                best_lp = lp
                best = i
                best_sig = sig
        # the chosen row's residual becomes basis vector j
        i = best
        taken[i] = True
        order[j] = i
        t = _residual(C, b, i, E, zhat, j, r)
        for c in range(R):
            E[c, j] = r[c] / best_sig
        _, zhat[j] = _truncated_mean(t / best_sig, np.inf)
    n = R
    for i in range(K):
        if not taken[i]:
            order[n] = i
            n += 1
    for m in range(K):
        i = order[m]
        lst = 0
        for k in range(R):
            dot = 0.0
            for c in range(R):
                dot += C[i, c] * E[c, k]
            coef[k] = dot
            if abs(dot) > 1e-12:
                lst = k
        for k in range(R):
            L[m, k] = coef[k] if k <= lst else 0.0
        last[m] = lst
    return order


@njit(cache=True, parallel=True)
def genz_gout_kernel(pat, A, C, Bv, w, omega_p, sqrtV, pts, skip_log):
    """Per sample: ``g`` in pair coordinates, ``log Z`` and its QMC standard error (samples in
    parallel over numba's threads; each sample's result does not depend on the thread count).
    A sample whose bound ``min_i P(C_i z >= b_i) >= Z`` is below ``exp(skip_log)`` is not
    integrated: ``log Z = -inf`` and ``g = 0`` (the SE's sum over labels, where most patterns
    are out of reach at small ``V``; AMP passes ``-inf`` and integrates every sample)."""
    n, P = omega_p.shape
    R = C.shape[2]
    K = C.shape[1]
    n_shift = pts.shape[0]
    g = np.empty((n, P))
    gs = np.empty((n, n_shift, P))
    logz = np.empty(n)
    err = np.empty(n)
    for m in prange(n):
        b = np.empty(K)
        bo = np.empty(K)
        L = np.empty((K, R))
        last = np.empty(K, dtype=np.int64)
        E = np.empty((R, R))
        zbar = np.empty(R)
        zr = np.empty(R)
        shift_logz = np.empty(n_shift)
        zshift = np.empty((n_shift, R))
        k = pat[m]
        bound = 0.0
        for i in range(K):
            t = 0.0
            for p in range(P):
                t += A[k, i, p] * omega_p[m, p]
            b[i] = -t / sqrtV
            nrm = 0.0
            for c in range(R):
                nrm += C[k, i, c] * C[k, i, c]
            bound = min(bound, log_ndtr_scalar(-b[i] / math.sqrt(nrm)))
        if bound < skip_log:
            logz[m] = -np.inf
            err[m] = 0.0
            for p in range(P):
                g[m, p] = 0.0
                for s in range(n_shift):
                    gs[m, s, p] = 0.0
            continue
        order = _order(C[k], b, L, last, E)
        for i in range(K):
            bo[i] = b[order[i]]
        lz = _genz_one(L, last, bo, pts, zbar, shift_logz, zshift)
        logz[m] = lz
        # standard error of log Z from the spread of the scramblings (delta method)
        mean = 0.0
        for s in range(n_shift):
            mean += math.exp(shift_logz[s] - lz)
        mean /= n_shift
        var = 0.0
        for s in range(n_shift):
            dv = math.exp(shift_logz[s] - lz) - mean
            var += dv * dv
        err[m] = math.sqrt(var / max(n_shift - 1, 1) / n_shift)
        for c in range(R):
            t = 0.0
            for j in range(R):
                t += E[c, j] * zbar[j]
            zr[c] = t
        for p in range(P):
            t = 0.0
            for c in range(R):
                t += Bv[k, p, c] * zr[c]
            g[m, p] = t / (w[p] * sqrtV)
        for s in range(n_shift):
            for c in range(R):
                t = 0.0
                for j in range(R):
                    t += E[c, j] * zshift[s, j]
                zr[c] = t
            for p in range(P):
                t = 0.0
                for c in range(R):
                    t += Bv[k, p, c] * zr[c]
                gs[m, s, p] = t / (w[p] * sqrtV)
    return g, logz, err, gs


def genz_gout(labels: np.ndarray, omega: np.ndarray, V: float, *, n_points: int = 256,
              n_shifts: int = 4):
    """``g_out``, ``log Z_out`` and the standard error of ``log Z_out`` for hardmax at any T.

    Parameters
    ----------
    labels : numpy.ndarray
        Argmax indices, ``(n, T)``.
    omega : numpy.ndarray
        Symmetric means, ``(n, T, T)``.
    V : float
        Variance parameter, ``> 0``.
    n_points, n_shifts : int
        Sobol points per scrambling (a power of 2) and scramblings.

    Returns
    -------
    g : numpy.ndarray
        ``(n, T, T)`` symmetric, ``g_ab = d log Z / d omega_ab`` in pair coordinates.
    logz, err : numpy.ndarray
        ``(n,)`` each.
    """
    if not V > 0:
        raise ValueError(f"V must be > 0, got V={V!r}")
    n, T = labels.shape
    tab = pattern_table(T)
    iu = np.triu_indices(T)
    omega_p = np.ascontiguousarray(omega[:, iu[0], iu[1]], dtype=np.float64)
    pts = qmc_points(tab.R, n_points, n_shifts)
    gp, logz, err, _ = genz_gout_kernel(pattern_of(labels, T), tab.A, tab.C, tab.Bv, pair_w(T),
                                    omega_p, math.sqrt(V), pts, -np.inf)
    g = np.empty((n, T, T))
    g[:, iu[0], iu[1]] = gp
    g[:, iu[1], iu[0]] = gp
    return g, logz, err


# --------------------------------------------------------------------------------------------
# state evolution: E_omega [ sum_y Z_y sum_p w_p g_p^2 ]
# --------------------------------------------------------------------------------------------
@lru_cache(maxsize=8)
def pattern_orbits(T: int) -> tuple[np.ndarray, np.ndarray]:
    """Representatives and sizes of the argmax patterns up to relabelling the tokens.

    The law of ``omega`` (``N(0, q diag(w))`` in pair coordinates) is invariant under a
    permutation ``pi`` of the tokens, which maps the pattern ``y`` to ``pi y pi^-1``; so the SE
    needs one pattern per orbit, weighted by the orbit's size (7 orbits of 27 at T = 3, 19 of
    256 at T = 4)."""
    seen: dict[tuple, int] = {}
    reps: list[int] = []
    sizes: list[int] = []
    perms = list(itertools.permutations(range(T)))
    for y in itertools.product(range(T), repeat=T):
        y = y[::-1]
        if y in seen:
            continue
        orbit = set()
        for pi in perms:
            inv = np.argsort(pi)
            orbit.add(tuple(pi[y[inv[a]]] for a in range(T)))
        for z in orbit:
            seen[z] = 1
        reps.append(sum(v * T**a for a, v in enumerate(y)))
        sizes.append(len(orbit))
    return np.array(reps, dtype=np.int64), np.array(sizes, dtype=np.float64)
