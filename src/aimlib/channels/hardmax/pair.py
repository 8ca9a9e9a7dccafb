"""Hardmax at ``T = 2``: the pair kernels of the exact output function (``Z_out`` a bivariate
normal CDF in the scaled comparisons ``kappa``; the published density variant, docs/theory.md
§7), their tabulated SE second moment, and the comparison moments (docs/theory.md §3.4).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numba import njit

from aimlib.core.kernels import gauss_sum_2d
from aimlib.core.normal import log_bvn_scalar, log_ndtr_scalar

_LOG_2PI = math.log(2.0 * math.pi)


PAIR_CORRELATION = 1.0 / 3.0  # correlation of the two hardmax comparisons (before the sign pattern)


_SQ1C = math.sqrt(1.0 - PAIR_CORRELATION * PAIR_CORRELATION)


#: Trapezoid step (in the sinh-mapped variable) of the hardmax SE quadrature, and its range.
HARDMAX_STEP = 0.15


HARDMAX_TMAX = 11.5


@njit(cache=True)
def hardmax_logs(k1, k2, c, density):
    """``(log Z, log N1, log N2)`` with ``Z = Phi_2(k1, k2; c)`` and ``N_i = dZ/dk_i``.

    ``density=True`` gives the published (incorrect) variant, ``N_i = phi_2(k1, k2; c)``.
    """
    logz = log_bvn_scalar(k1, k2, c)
    s = math.sqrt(1.0 - c * c)
    if density:
        ln = -(k1 * k1 + k2 * k2 - 2.0 * c * k1 * k2) / (2.0 * s * s) - _LOG_2PI - math.log(s)
        return logz, ln, ln
    ln1 = -0.5 * k1 * k1 - 0.5 * _LOG_2PI + log_ndtr_scalar((k2 - c * k1) / s)
    ln2 = -0.5 * k2 * k2 - 0.5 * _LOG_2PI + log_ndtr_scalar((k1 - c * k2) / s)
    return logz, ln1, ln2


@njit(cache=True)
def hardmax_slopes(k1, k2, c, density):
    """``(log Z, D1, D2, dD1/dk1, dD1/dk2, dD2/dk1, dD2/dk2)`` with ``Z = Phi_2(k1, k2; c)``.

    ``D_i`` is the hardmax output function in kappa units (``d log Z / d k_i`` for the exact
    variant, ``phi_2 / Phi_2`` for the published density one); the slopes give the divergence
    ``sum w dg/domega`` that a GAMP with a non-Bayes output function needs.
    """
    s = math.sqrt(1.0 - c * c)
    lz = log_bvn_scalar(k1, k2, c)
    t1 = (k2 - c * k1) / s
    t2 = (k1 - c * k2) / s
    lp1 = log_ndtr_scalar(t1)
    lp2 = log_ndtr_scalar(t2)
    e1 = math.exp(-0.5 * k1 * k1 - 0.5 * _LOG_2PI + lp1 - lz)  # exact D1
    e2 = math.exp(-0.5 * k2 * k2 - 0.5 * _LOG_2PI + lp2 - lz)
    if density:
        D = math.exp(-(k1 * k1 + k2 * k2 - 2.0 * c * k1 * k2) / (2.0 * s * s) - _LOG_2PI
                     - math.log(s) - lz)
        a1 = -(k1 - c * k2) / (s * s) - e1  # d log D / d k1
        a2 = -(k2 - c * k1) / (s * s) - e2
        return lz, D, D, D * a1, D * a2, D * a1, D * a2
    r1 = math.exp(-0.5 * t1 * t1 - 0.5 * _LOG_2PI - lp1)  # phi(t1) / Phi(t1)
    r2 = math.exp(-0.5 * t2 * t2 - 0.5 * _LOG_2PI - lp2)
    return (lz, e1, e2, e1 * (-k1 - c / s * r1 - e1), e1 * (r1 / s - e2),
            e2 * (r2 / s - e1), e2 * (-k2 - c / s * r2 - e2))


@njit(cache=True)
def hardmax_div_kernel(y11, y22, w11, w12, w22, V, density):
    """Per sample ``sum_{a<=b} w_ab (-d g_ab / d omega_ab)`` of the hardmax output function."""
    n = w11.shape[0]
    out = np.empty(n)
    sd = math.sqrt(3.0 * V)
    for m in range(n):
        s1 = 1.0 if y11[m] > 0.5 else -1.0
        s2 = 1.0 if y22[m] > 0.5 else -1.0
        _, _, _, d11, d12, d21, d22 = hardmax_slopes(s1 * (w11[m] - w12[m]) / sd,
                                                      s2 * (w22[m] - w12[m]) / sd,
                                                      s1 * s2 * PAIR_CORRELATION, density)
        out[m] = -(3.0 * (d11 + d22) + s1 * s2 * (d12 + d21)) / (3.0 * V)
    return out


@njit(cache=True)
def _pattern_term(k1, k2, s2, density):
    """``Z * (2 D1^2 + (D1 + s2 D2)^2 + 2 D2^2)`` for the sign pattern ``(+1, s2)``."""
    c = s2 * PAIR_CORRELATION
    logz, ln1, ln2 = hardmax_logs(k1, k2, c, density)
    half = 0.5 * logz
    a = math.exp(ln1 - half)  # D1 * sqrt(Z)
    b = math.exp(ln2 - half)
    return 2.0 * a * a + (a + s2 * b) ** 2 + 2.0 * b * b


@njit(cache=True)
def _f_plus(k1, k2, density):
    """Sum over the two sign patterns with ``s1 = +1`` of ``Z * sum_ab w_ab (sqrt(3V) g_ab)^2``."""
    return _pattern_term(k1, k2, 1.0, density) + _pattern_term(k1, -k2, -1.0, density)


@njit(cache=True)
def _f_table(kappa, density):
    """:func:`_f_plus` on the grid, shape ``(n, n, 1)`` (one table of
    :func:`aimlib.core.kernels.gauss_sum_2d`)."""
    n = kappa.shape[0]
    out = np.empty((n, n, 1))
    for i in range(n):
        for j in range(n):
            out[i, j, 0] = _f_plus(kappa[i], kappa[j], density)
    return out


@njit(cache=True)
def _hardmax_gout_kernel(y11, y22, w11, w12, w22, V, density):
    """Hardmax ``g`` on samples: ``y_aa`` in {0, 1} says whether row a selects itself."""
    n = w11.shape[0]
    g11 = np.empty(n)
    g12 = np.empty(n)
    g22 = np.empty(n)
    logz = np.empty(n)
    sd = math.sqrt(3.0 * V)
    for m in range(n):
        s1 = 1.0 if y11[m] > 0.5 else -1.0
        s2 = 1.0 if y22[m] > 0.5 else -1.0
        k1 = s1 * (w11[m] - w12[m]) / sd
        k2 = s2 * (w22[m] - w12[m]) / sd
        lz, ln1, ln2 = hardmax_logs(k1, k2, s1 * s2 * PAIR_CORRELATION, density)
        a = s1 * math.exp(ln1 - lz) / sd
        b = s2 * math.exp(ln2 - lz) / sd
        g11[m] = a
        g22[m] = b
        g12[m] = -(a + b)
        logz[m] = lz
    return g11, g12, g22, logz


@njit(cache=True)
def hardmax_gout_general(s1v, s2v, m1, m2, sd1, sd2, r, density):
    """Hardmax T = 2 on general comparisons: ``D_i ~ N(m_i, sd_i^2)`` with correlation ``r``
    and ``s_i = sign D_i`` observed; returns ``(d log Z / d m_1, d log Z / d m_2, log Z)``
    (docs/theory.md §13.3: correlated tokens)."""
    n = m1.shape[0]
    a = np.empty(n)
    b = np.empty(n)
    logz = np.empty(n)
    for m in range(n):
        s1 = s1v[m]
        s2 = s2v[m]
        lz, ln1, ln2 = hardmax_logs(s1 * m1[m] / sd1, s2 * m2[m] / sd2, s1 * s2 * r, density)
        a[m] = s1 * math.exp(ln1 - lz) / sd1
        b[m] = s2 * math.exp(ln2 - lz) / sd2
        logz[m] = lz
    return a, b, logz


@njit(cache=True)
def _f_general(k1, k2, r, density):
    """Sum over the sign patterns with ``s_1 = +1`` of ``Z (D_1^2 + D_2^2 + 2 s_1 s_2 r D_1 D_2)``
    at correlation ``r`` of the comparisons (kappa units; :func:`_f_plus` is ``3`` times this
    at ``r = 1/3``)."""
    out = 0.0
    for s2 in (1.0, -1.0):
        c = s2 * r
        logz, ln1, ln2 = hardmax_logs(k1, s2 * k2, c, density)
        half = 0.5 * logz
        a = math.exp(ln1 - half)
        b = math.exp(ln2 - half)
        out += a * a + b * b + 2.0 * c * a * b
    return out


@njit(cache=True)
def _f_points(k1, k2, r, density):
    """:func:`_f_general` at the points ``(k1[i], k2[i])``."""
    out = np.empty(k1.shape[0])
    for i in range(k1.shape[0]):
        out[i] = _f_general(k1[i], k2[i], r, density)
    return out


@lru_cache(maxsize=8)
def _general_table(r: float, density: bool, scale: float, step: float, tmax: float):
    t = step * np.arange(-round(tmax / step), round(tmax / step) + 1)
    kappa = scale * np.sinh(t)
    jac = scale * step * np.cosh(t)
    k1, k2 = np.meshgrid(kappa, kappa, indexing="ij")
    f = _f_points(k1.ravel(), k2.ravel(), r, density).reshape(kappa.size, kappa.size, 1)
    return kappa, jac, f


def _sinh_rule(scale: float, step: float, tmax: float) -> tuple[np.ndarray, np.ndarray]:
    t = step * np.arange(-round(tmax / step), round(tmax / step) + 1)
    return scale * np.sinh(t), scale * step * np.cosh(t)


#: Anisotropy (ratio of the two variances of the comparisons' means, kappa units) above which
#: the general quadrature integrates along the principal axes instead of the strip-aligned grid.
ANISOTROPY = 8.0


def comparison_second_moment(q: float, V: float, r: float = PAIR_CORRELATION,
                             extra: float = 0.0, *, density: bool = False,
                             step: float = HARDMAX_STEP) -> float:
    """``E[grad^T Sigma_D grad]`` of the hardmax ``T = 2`` output under a general index law,
    in units where the comparisons ``D = (h_11 - h_12, h_22 - h_12)`` have covariance
    ``[[1, r], [r, 1]]`` per unit overlap (docs/theory.md §13).

    The means ``D_omega`` have covariance ``q [[1, r], [r, 1]] + extra I`` and the noise
    ``D - D_omega`` has ``V [[1, r], [r, 1]]``.  The quantity does not depend on the scale of
    ``Sigma_D``: with ``r = 1/3`` and ``extra = 0`` it is :func:`hardmax_second_moment`
    (Gaussian tokens, ``Sigma_D = [[3, 1], [1, 3]]``), ``E[sum_{a<=b} w_ab g_ab^2]``.  i.i.d.
    tokens of excess kurtosis ``kappa`` have ``extra = kappa rho / 3`` and correlated tokens
    ``r = (1 - 3c) / (3 - c)``.

    The Gaussian of the means, in kappa units ``D / sqrt(V)``, has covariance
    ``[[a, b], [b, a]]``, ``a = (q + extra) / V``, ``b = r q / V``.  Where it is nearly isotropic
    the strip-aligned sinh grid of :func:`hardmax_second_moment` integrates it; where one
    principal variance is below ``1 / ANISOTROPY`` of the other (Rademacher tokens near the
    uninformed overlap, where ``omega_11 - omega_22`` is almost known), the rule runs along the
    principal axes, the narrow one on a grid scaled to its width; a degenerate direction
    (variance 0) is integrated out exactly.
    """
    if not V > 0:
        raise ValueError(f"V must be > 0, got V={V!r}")
    if q < 0:
        raise ValueError(f"q must be >= 0, got q={q!r}")
    if not -1.0 < r < 1.0:
        raise ValueError(f"r must be in (-1, 1), got r={r!r}")
    a = (q + extra) / V
    b = r * q / V
    lam_p, lam_m = a + b, a - b  # along (1, 1) / sqrt 2 and (1, -1) / sqrt 2
    if lam_m < -1e-12 * max(lam_p, 1.0) or lam_p < 0:
        raise ValueError(f"the comparisons' covariance is not positive (q={q!r}, "
                         f"extra={extra!r}, r={r!r})")
    lam_m, lam_p = max(lam_m, 0.0), max(lam_p, 0.0)
    density = bool(density)
    lo, hi = min(lam_p, lam_m), max(lam_p, lam_m)
    if hi == 0.0:
        return 2.0 * _f_general(0.0, 0.0, r, density) / V
    if lo * ANISOTROPY >= hi:
        x = 1.5 * lo  # q / V of the Gaussian-token grids (whose smaller variance is 2/3 q/V)
        det = a * a - b * b
        for ratio, scale, tmax in _HARDMAX_GRIDS:
            if x >= ratio:
                kappa, jac, table = _general_table(float(r), density, scale, float(step), tmax)
                break
        else:
            kappa, jac = _sinh_rule(math.sqrt(x), float(step), 4.0)
            k1, k2 = np.meshgrid(kappa, kappa, indexing="ij")
            table = _f_points(k1.ravel(), k2.ravel(), float(r), density).reshape(
                kappa.size, kappa.size, 1)
        # exp(-(a k1^2 - 2 b k1 k2 + a k2^2) / (2 det)) = exp(-lam (A k1^2 - 2 B k1 k2 + A k2^2))
        lam = 1.0 / (2.0 * det)
        total = gauss_sum_2d(kappa, jac, table, lam, a, b)[0]
        return 2.0 * total / (2.0 * math.pi * math.sqrt(det)) / V
    # principal axes: u along the wide direction, v along the narrow one
    wide_sign = 1.0 if lam_p >= lam_m else -1.0
    sw, sn = math.sqrt(hi), math.sqrt(lo)
    xw = 1.5 * hi
    scale_w = 1.0 if xw >= 0.25 else (0.05 if xw >= 1e-3 else math.sqrt(xw))
    tmax_w = HARDMAX_TMAX if xw >= 0.25 else (6.0 if xw >= 1e-3 else 4.0)
    u, ju = _sinh_rule(scale_w, float(step), tmax_w)
    wu = ju * np.exp(-0.5 * (u / sw) ** 2) / (math.sqrt(2.0 * math.pi) * sw)
    if lo == 0.0:
        v, wv = np.zeros(1), np.ones(1)
    else:
        v, jv = _sinh_rule(sn, float(step), 4.0)
        wv = jv * np.exp(-0.5 * (v / sn) ** 2) / (math.sqrt(2.0 * math.pi) * sn)
    U, Vv = np.meshgrid(u, v, indexing="ij")
    # k = u e_wide + v e_narrow, e_+ = (1, 1) / sqrt 2 and e_- = (1, -1) / sqrt 2
    k1 = (U + Vv) / math.sqrt(2.0)
    k2 = (U - Vv) / math.sqrt(2.0) if wide_sign > 0 else (Vv - U) / math.sqrt(2.0)
    f = _f_points(np.ascontiguousarray(k1.ravel()), np.ascontiguousarray(k2.ravel()),
                  float(r), density).reshape(U.shape)
    return 2.0 * float(wu @ f @ wv) / V


@lru_cache(maxsize=8)
def hardmax_table(density: bool, scale: float, step: float, tmax: float):
    """Grid ``kappa = scale sinh(t)`` (``t`` in steps of ``step`` up to ``tmax``), its trapezoid
    weights and the tabulated pattern sum (:func:`_f_plus`), for
    :func:`aimlib.core.kernels.gauss_sum_2d`; cached per grid."""
    t = step * np.arange(-round(tmax / step), round(tmax / step) + 1)
    kappa = scale * np.sinh(t)
    jac = scale * step * np.cosh(t)
    return kappa, jac, _f_table(kappa, density)


#: Grids of the hardmax SE quadrature, ``kappa = A sinh(t)``: (smallest q/V served, A, t range).
#: A = 1 resolves the unit-width strips for any narrow V; A = 0.05 resolves the Gaussian of width
#: sqrt(q/V) down to q/V = 1e-3.  Below that, the grid is scaled to the Gaussian and the integrand
#: is evaluated directly (only the small-width limit near its threshold goes there).
#: From q/V = 1e7 on (alpha of thousands) the Gaussian is wider than A sinh(HARDMAX_TMAX) can
#: reach at A = 1 (truncation error 5e-4 at q/V = 3e8 before this grid); sinh(14.5) ~ 1e6 covers
#: q/V up to about 1e10.
_HARDMAX_GRIDS = ((1e7, 1.0, HARDMAX_TMAX + 3.0), (0.25, 1.0, HARDMAX_TMAX), (1e-3, 0.05, 6.0))


def hardmax_second_moment(q: float, V: float, *, density: bool = False,
                          step: float = HARDMAX_STEP) -> float:
    """``E_{omega, y}[sum_{a<=b} w_ab g_ab^2]`` for hardmax, T = 2, at overlap q and variance V.

    The expectation depends on ``omega`` only through ``u = (omega_11 - omega_12,
    omega_22 - omega_12)``, Gaussian with covariance ``q [[3, 1], [1, 3]]``.  In the variable
    ``kappa = u / sqrt(3V)`` it is a 2-D integral of a fixed function against a Gaussian of
    covariance ``(q / 3V) [[3, 1], [1, 3]]``; the map ``kappa = A sinh(t)`` with the trapezoid rule
    in ``t`` converges double-exponentially, resolving both the strips of unit width around
    ``kappa_i = 0`` and the Gaussian.  The fixed function is tabulated once per grid.
    """
    if not V > 0:
        raise ValueError(f"V must be > 0, got V={V!r}")
    if q < 0:
        raise ValueError(f"q must be >= 0, got q={q!r}")
    if q == 0.0:
        return 2.0 * _f_plus(0.0, 0.0, density) / (3.0 * V)
    lam = 3.0 * V / (16.0 * q)
    pref = 1.0 / (math.pi * q * math.sqrt(8.0))
    for ratio, scale, tmax in _HARDMAX_GRIDS:
        if q >= ratio * V:
            kappa, jac, table = hardmax_table(bool(density), scale, float(step), tmax)
            return pref * gauss_sum_2d(kappa, jac, table, lam)[0]
    A = math.sqrt(q / V)
    t = step * np.arange(-round(4.0 / step), round(4.0 / step) + 1)
    kappa = A * np.sinh(t)
    return pref * gauss_sum_2d(kappa, A * step * np.cosh(t), _f_table(kappa, bool(density)),
                               lam)[0]


def pair_column(a: np.ndarray, i: int, j: int) -> np.ndarray:
    return np.ascontiguousarray(a[:, i, j], dtype=np.float64)


def pair_gout(y: np.ndarray, omega: np.ndarray, V: float, density: bool):
    """Call the hardmax kernel on the pair coordinates of ``(n, 2, 2)`` arrays."""
    return _hardmax_gout_kernel(pair_column(y, 0, 0), pair_column(y, 1, 1),
                                pair_column(omega, 0, 0), pair_column(omega, 0, 1),
                                pair_column(omega, 1, 1), float(V), density)
