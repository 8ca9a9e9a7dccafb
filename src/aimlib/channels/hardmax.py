"""The hardmax channel (row-wise argmax): output function, SE, test error.  ``T = 2`` by exact
quadrature (below); ``T = 3, 4`` through Genz's integrator of :mod:`aimlib.channels.orthant`
(docs/theory.md §14) and a randomised QMC of the test error (§14.5).

With ``s_a = +1`` if row a selects itself, ``Z_out = Phi_2(kappa_1, kappa_2; s_1 s_2 / 3)`` in
the scaled differences ``kappa_a = s_a (omega_aa - omega_12) / sqrt(3V)`` (docs/theory.md §3).
Hardmax uses the exact derivative of the bivariate normal CDF.  ``variant="density"``
reproduces the error of the paper's public code (docs/theory.md §7), which puts the bivariate normal
*density* in place of ``d Phi_2 / d kappa``; it is kept only to show that error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

import numpy as np
from numba import njit

from aimlib.channels.base import Channel
from aimlib.channels.orthant import TMAX_GENERAL
from aimlib.core.kernels import gauss_sum_2d
from aimlib.core.normal import log_bvn_scalar, log_ndtr_scalar

__all__ = ["Hardmax", "hardmax_second_moment", "comparison_second_moment", "comparison_matrix",
           "comparison_geometry", "hardmax_output", "one_hot", "hardmax_table",
           "hardmax_slopes", "PAIR_CORRELATION", "HARDMAX_STEP", "HARDMAX_TMAX"]

_LOG_2PI = math.log(2.0 * math.pi)
PAIR_CORRELATION = 1.0 / 3.0  # correlation of the two hardmax comparisons (before the sign pattern)
_SQ1C = math.sqrt(1.0 - PAIR_CORRELATION * PAIR_CORRELATION)

#: Trapezoid step (in the sinh-mapped variable) of the hardmax SE quadrature, and its range.
HARDMAX_STEP = 0.15
HARDMAX_TMAX = 11.5


def hardmax_output(h: np.ndarray) -> np.ndarray:
    """Row-wise argmax of ``h`` as an integer array of shape ``h.shape[:-1]``."""
    return np.argmax(h, axis=-1).astype(np.int8)


def one_hot(index: np.ndarray, T: int) -> np.ndarray:
    """One-hot rows ``y_ab = 1[b = index_a]`` from argmax indices."""
    return (index[..., None] == np.arange(T)).astype(np.float64)


# --------------------------------------------------------------------------------------------
# hardmax, T = 2: kernels
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _hardmax_logs(k1, k2, c, density):
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
def _hardmax_div_kernel(y11, y22, w11, w12, w22, V, density):
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
    logz, ln1, ln2 = _hardmax_logs(k1, k2, c, density)
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
        lz, ln1, ln2 = _hardmax_logs(k1, k2, s1 * s2 * PAIR_CORRELATION, density)
        a = s1 * math.exp(ln1 - lz) / sd
        b = s2 * math.exp(ln2 - lz) / sd
        g11[m] = a
        g22[m] = b
        g12[m] = -(a + b)
        logz[m] = lz
    return g11, g12, g22, logz


@njit(cache=True)
def _hardmax_gout_general(s1v, s2v, m1, m2, sd1, sd2, r, density):
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
        lz, ln1, ln2 = _hardmax_logs(s1 * m1[m] / sd1, s2 * m2[m] / sd2, s1 * s2 * r, density)
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
        logz, ln1, ln2 = _hardmax_logs(k1, s2 * k2, c, density)
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


# --------------------------------------------------------------------------------------------
# channel objects
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hardmax(Channel):
    """Hardmax output (row-wise argmax), ``T = 2`` with the exact ``g_out``.

    ``variant="density"`` reproduces the error of the paper's public code (docs/theory.md §7),
    which puts the bivariate normal *density* in place of ``d Phi_2 / d kappa``; it is kept only
    to show that error.
    """

    T: int = 2
    variant: str = "exact"

    name: ClassVar[str] = "hardmax"
    label: ClassVar[str] = "hardmax"
    T_MIN: ClassVar[int] = 2
    T_MAX: ClassVar[int] = TMAX_GENERAL
    VARIANTS: ClassVar[tuple[str, ...]] = ("exact", "density")
    #: measured 0.6 us a sample at T = 2 (benchmarks/README.md, "The output function's cost")
    G_OUT_SECONDS: ClassVar[float] = 1.0e-6
    OMEGA_FREE: ClassVar[bool] = False
    SUPPORTS_CORRELATED: ClassVar[bool] = True
    #: The row-wise argmax of ``lambda h`` is that of ``h`` (docs/theory.md §4.2).
    SCALE_INVARIANT: ClassVar[bool] = True
    LABEL_DTYPE: ClassVar[type] = np.int8
    PREDICTORS: ClassVar[tuple[str, ...]] = ("bayes", "plugin", "argmax")

    @property
    def density(self) -> bool:
        return self.variant == "density"

    def __post_init__(self):
        super().__post_init__()
        if self.T > 2 and self.variant != "exact":
            raise ValueError(f"variant must be 'exact' for hardmax at T={self.T}: the published "
                             "density variant is the paper's T = 2 formula")

    def alpha_bar_factor(self, rho: float) -> float:
        """``alpha_bar = c_T alpha / rho`` (the small-width scale, docs/theory.md §3.5, §14.4):
        ``c_T`` is the information of one sample's labels at no knowledge,
        ``E[sum w g^2]`` at ``q = 0, V = 1``, relative to ``T = 2`` (``c_2 = 1``), so that every
        ``T`` starts to learn at the same ``alpha_bar`` in the small-width limit."""
        if self.T == 2:
            return 1.0 / rho
        return uninformed_information(self.T) / uninformed_information(2) / rho

    def label_shape(self, n: int) -> tuple[int, ...]:
        """Argmax indices, ``(n, T)``."""
        return (n, self.T)

    def labels(self, h: np.ndarray, rng=None) -> np.ndarray:
        return hardmax_output(h)

    def outputs(self, labels: np.ndarray) -> np.ndarray:
        """One-hot rows ``(n, T, T)``."""
        return one_hot(labels, self.T)

    def predict(self, h: np.ndarray) -> np.ndarray:
        return one_hot(hardmax_output(h), self.T)

    def second_moment(self, q: float, V: float) -> float:
        """``E[sum_{a<=b} w_ab g_ab^2]``: the 2-D quadrature at ``T = 2``; at ``T >= 3``
        ``K_T(q / V) / V`` from the tabulated one-variable function of
        :mod:`aimlib.channels.moment_table` (labels are blind to the scale of the indices,
        docs/theory.md §14.6; the table's points are randomised QMC over ``omega`` with Genz's
        ``Z_out``, :func:`aimlib.channels.orthant.second_moment`, relative accuracy about
        2e-3), or that RQMC directly where no table exists."""
        if self.T == 2:
            return hardmax_second_moment(q, V, density=self.density)
        from aimlib.channels import moment_table

        if moment_table.has_table(self.T):
            return moment_table.second_moment(self.T, q, V)
        from aimlib.channels import orthant

        return orthant.second_moment(self.T, q, V).value

    def q_hat(self, alpha: float, q: float, V: float) -> float:
        """``q_hat = 2 alpha E[sum_{a<=b} w_ab g_ab^2]``."""
        return 2.0 * alpha * self.second_moment(q, V)

    # -------------------------------------------------------------- token laws (§13)
    def q_hat_tokens(self, alpha: float, q: float, V: float, index) -> float:
        """``q_hat`` under the index law ``index``: the comparisons
        ``D = (h_11 - h_12, h_22 - h_12)`` keep their noise covariance (up to scale, correlation
        ``r``) and their means gain ``diag_extra`` on ``Var omega_aa``
        (:func:`comparison_second_moment`, docs/theory.md §13)."""
        if index.gaussian:
            return self.q_hat(alpha, q, V)
        self._tokens_need_t2()
        _, r, s2 = comparison_geometry(index.corr)
        return 2.0 * alpha * comparison_second_moment(q, V, r, index.diag_extra / s2,
                                                      density=self.density)

    @classmethod
    def g_out_seconds(cls, T: int) -> float:
        """Measured (one thread, ``benchmarks/README.md``): the bivariate-normal kernel at
        ``T = 2``; Genz's rule at ``T >= 3``, 1.2e-4 s per sample at ``T = 3`` and 2.5e-4 at
        ``T = 4``."""
        return GENZ_SECONDS.get(int(T), cls.G_OUT_SECONDS * T * T / 4)

    def se_point_seconds(self) -> float | None:
        """One SE fixed point at ``T >= 3``: milliseconds where ``K_T`` is tabulated (the
        default), else about 15 evaluations of the RQMC second moment (0.8-2 s each at
        ``T = 3``, 12-28 s at ``T = 4``, one thread)."""
        from aimlib.channels import moment_table

        if self.T == 2 or moment_table.has_table(self.T):
            return None
        return SE_FIXED_POINT_SECONDS.get(self.T)

    def _tokens_need_t2(self) -> None:
        if self.T > 2:
            raise ValueError(f"tokens: token laws other than gaussian are implemented for "
                             f"hardmax at T = 2 only, got T={self.T}")

    def check_tokens(self, law) -> None:
        super().check_tokens(law)
        if not law.is_gaussian:
            self._tokens_need_t2()

    def g_out_whitened(self, y: np.ndarray, omega: np.ndarray, V: float,
                       L: np.ndarray) -> np.ndarray:
        """:meth:`g_out` in the whitened index of correlated tokens: the comparisons are
        ``D = A p`` in the pair coordinates ``p = (h~_11, h~_12, h~_22)``, Gaussian given
        ``omega`` with covariance ``V A W A^T`` (``W = diag(2, 1, 2)``), and
        ``g = A^T d log Phi_2 / d D`` (docs/theory.md §13.3)."""
        A = comparison_matrix(L)
        S = A @ np.diag([2.0, 1.0, 2.0]) @ A.T
        p = np.stack([omega[:, 0, 0], omega[:, 0, 1], omega[:, 1, 1]], axis=1)
        m = p @ A.T
        sd1, sd2 = math.sqrt(V * S[0, 0]), math.sqrt(V * S[1, 1])
        r = S[0, 1] / math.sqrt(S[0, 0] * S[1, 1])
        s1 = np.where(y[:, 0, 0] > 0.5, 1.0, -1.0)
        s2 = np.where(y[:, 1, 1] > 0.5, 1.0, -1.0)
        a, b, _ = _hardmax_gout_general(s1, s2, np.ascontiguousarray(m[:, 0]),
                                        np.ascontiguousarray(m[:, 1]), sd1, sd2, r,
                                        self.density)
        gp = np.stack([a, b], axis=1) @ A  # (n, 3): g~_11, g~_12, g~_22
        g = np.empty((y.shape[0], 2, 2))
        g[:, 0, 0] = gp[:, 0]
        g[:, 1, 1] = gp[:, 2]
        g[:, 0, 1] = gp[:, 1]
        g[:, 1, 0] = gp[:, 1]
        return g

    def g_out(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """Output function on samples.

        Parameters
        ----------
        y : numpy.ndarray
            Hardmax outputs, shape ``(n, 2, 2)`` (rows one-hot).
        omega : numpy.ndarray
            Means of the indices, shape ``(n, 2, 2)`` symmetric.
        V : float
            Variance parameter.

        Returns
        -------
        numpy.ndarray
            ``g`` of shape ``(n, 2, 2)``, symmetric, with ``g_ab = d log Z / d omega_ab`` in pair
            coordinates (the off-diagonal entry holds ``g_12``).
        """
        if self.T > 2:
            from aimlib.channels import orthant

            return orthant.genz_gout(_argmax(y), omega, V, **AMP_QMC)[0]
        g11, g12, g22, _ = _kernel(y, omega, V, self.density)
        g = np.empty((y.shape[0], 2, 2))
        g[:, 0, 0] = g11
        g[:, 1, 1] = g22
        g[:, 0, 1] = g12
        g[:, 1, 0] = g12
        return g

    def neg_divergence(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """``sum_{a<=b} w_ab (-d g_ab / d omega_ab)`` per sample (equal to ``sum w g^2`` on
        average for the exact, Bayes-optimal variant: the Nishimori identity); ``T = 2``."""
        if self.T > 2:
            raise ValueError("the hardmax divergence is implemented for T = 2 only (the "
                             "mismatched AMP of the density variant)")
        return _hardmax_div_kernel(_col(y, 0, 0), _col(y, 1, 1), _col(omega, 0, 0),
                                   _col(omega, 0, 1), _col(omega, 1, 1), float(V), self.density)

    def log_z_out(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """``log Z_out(y | omega, V) = log P(y | omega)`` on samples."""
        if self.T > 2:
            from aimlib.channels import orthant

            return orthant.genz_gout(_argmax(y), omega, V, **AMP_QMC)[1]
        return _kernel(y, omega, V, False)[3]

    # -------------------------------------------------------------- test error (§10)
    def plugin_test_error(self, m: float, Q: float, Q0: float, predictor: str = "plugin"):
        """Closed form: a row's argmax differs with probability ``arccos(c) / pi``,
        ``c = m / sqrt(Q Q0)``, and a differing one-hot row counts 2."""
        from aimlib.channels.base import TestError

        if predictor not in ("plugin", "argmax"):
            raise ValueError(f"predictor={predictor!r} is not a plug-in hardmax predictor")
        if self.T > 2:
            return _row_error_rqmc(m, Q, Q0, self.T, predictor)
        c = max(-1.0, min(1.0, m / math.sqrt(Q * Q0)))
        p = math.acos(c) / math.pi  # P(sign u != sign u_hat)
        return TestError(p if predictor == "argmax" else 2.0 * self.T * p, 1e-15, "closed form")

    def bayes_test_error(self, q: float, Q0: float):
        """P(row selects itself | u_hat) = Phi(u_hat / sqrt(3V)); a one-hot row's error is
        ``2 p (1 - p)``."""
        from scipy import special

        from aimlib.channels.base import TestError, normal_rule

        V = max(Q0 - q, 0.0)
        if self.T > 2:
            return _row_error_rqmc(q, q, Q0, self.T, "bayes")
        if V == 0.0:
            return TestError(0.0, 1e-15, "closed form")
        x, w = normal_rule()
        p = special.ndtr(math.sqrt(3.0 * q) * x / math.sqrt(3.0 * V))
        return TestError(self.T * 2.0 * float(np.sum(w * p * (1.0 - p))), 1e-10,
                         "quadrature")


#: Randomised QMC of the hardmax test error at ``T >= 3``: scramblings and points each.
TEST_QMC = (8, 2**12)


def _row_error_rqmc(m: float, Q: float, Q0: float, T: int, predictor: str):
    """The hardmax test error at ``T >= 3`` (docs/theory.md §14.5).  The entries of one row,
    ``(h_a1 .. h_aT)``, are independent given the estimate's (``Var h_aa = 2 .``, ``Var h_ab =
    .``), and every row has the same law, so the error is ``T`` times one row's: plug-in, twice
    the probability that the argmaxes of ``h`` and ``h_hat`` differ (``"argmax"``: that
    probability); Bayes, ``1 - sum_b P_b^2`` with ``P_b = P(b wins | h_hat)`` a 1-D integral
    ``E_x prod_{c != b} Phi((h_hat_b + s_b x - h_hat_c) / s_c)``, ``s = sqrt(w V)``.  Outer
    integral by randomised QMC (:data:`TEST_QMC`; the spread over scramblings is ``abserr``)."""
    from scipy import special
    from scipy.stats import qmc

    from aimlib.channels.base import TestError, normal_rule

    n_rep, n_pts = TEST_QMC
    w = np.ones(T)
    w[0] = 2.0  # the row's diagonal entry first (the argmax does not care where it is)
    sw = np.sqrt(w)
    V = max(Q0 - Q, 0.0)
    if predictor == "bayes" and V == 0.0:
        return TestError(0.0, 1e-15, "closed form")
    x, wx = normal_rule()
    vals = []
    for rep in range(n_rep):
        z = special.ndtri(qmc.Sobol(2 * T, scramble=True, seed=7000 + rep).random(n_pts))
        z = np.clip(z, -8.5, 8.5)
        hh = math.sqrt(Q) * sw * z[:, :T]
        if predictor != "bayes":
            h = (m / Q) * hh + math.sqrt(max(Q0 - m * m / Q, 0.0)) * sw * z[:, T:]
            p = float(np.mean(np.argmax(h, axis=1) != np.argmax(hh, axis=1)))
            vals.append(p if predictor == "argmax" else 2.0 * T * p)
            continue
        s = math.sqrt(V) * sw
        top = hh[:, :, None] + s[None, :, None] * x[None, None, :]  # (N, b, x)
        logp = np.zeros_like(top)
        for c in range(T):
            lc = special.log_ndtr((top - hh[:, c, None, None]) / s[c])
            lc[:, c, :] = 0.0  # b = c: no constraint
            logp += lc
        P = np.exp(logp) @ wx  # (N, b)
        vals.append(T * (1.0 - float(np.mean(np.sum(P * P, axis=1)))))
    vals = np.asarray(vals)
    return TestError(float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(n_rep)), "rqmc")


def comparison_matrix(L: np.ndarray) -> np.ndarray:
    """``A`` (2 x 3) with ``(h_11 - h_12, h_22 - h_12) = A (h~_11, h~_12, h~_22)`` for
    ``h = L h~ L`` (``L`` symmetric 2 x 2; the identity for i.i.d. tokens)."""
    A = np.empty((2, 3))
    basis = (np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[0.0, 1.0], [1.0, 0.0]]),
             np.array([[0.0, 0.0], [0.0, 1.0]]))
    for j, E in enumerate(basis):
        h = L @ E @ L
        A[0, j] = h[0, 0] - h[0, 1]
        A[1, j] = h[1, 1] - h[0, 1]
    return A


def comparison_geometry(corr: float) -> tuple[np.ndarray, float, float]:
    """``(A, r, sigma^2)`` of the comparisons at token correlation ``corr``: their map from the
    whitened pair coordinates, their correlation ``r = (1 - 3c) / (3 - c)`` and their variance
    per unit overlap ``sigma^2 = (1 - c)(3 - c)`` (``1/3`` and 3 for i.i.d. tokens)."""
    from aimlib.tokens import sqrt_corr

    A = comparison_matrix(sqrt_corr(2, corr))
    S = A @ np.diag([2.0, 1.0, 2.0]) @ A.T
    return A, float(S[0, 1] / S[0, 0]), float(S[0, 0])


#: Seconds per sample of the output function at T >= 3 (Genz, :data:`AMP_QMC`), and of one SE
#: fixed point, measured on one thread (benchmarks/README.md).
GENZ_SECONDS = {3: 1.2e-4, 4: 2.5e-4}
SE_FIXED_POINT_SECONDS = {3: 25.0, 4: 250.0}

#: Genz rule of AMP's output function at T >= 3 (Sobol points per scrambling, scramblings):
#: the relative error of g is about 5e-3 per sample (tests/test_orthant.py), noise that the
#: sum over samples averages out.
AMP_QMC = {"n_points": 64, "n_shifts": 4}


def _argmax(y: np.ndarray) -> np.ndarray:
    return np.argmax(y, axis=-1).astype(np.int8)


@lru_cache(maxsize=8)
def uninformed_information(T: int) -> float:
    """``E[sum_{a<=b} w_ab g_ab^2]`` at ``q = 0``, ``V = 1``: the labels' information per sample
    with nothing known (``omega = 0``; exact 2-D quadrature at ``T = 2``, a fine Genz rule summed
    over the patterns at ``T >= 3``, relative accuracy about 1e-5)."""
    if T == 2:
        return hardmax_second_moment(0.0, 1.0)
    from aimlib.channels import orthant

    return orthant.second_moment(T, 0.0, 1.0, inner=orthant.UNINFORMED_INNER).value


def _col(a: np.ndarray, i: int, j: int) -> np.ndarray:
    return np.ascontiguousarray(a[:, i, j], dtype=np.float64)


def _kernel(y: np.ndarray, omega: np.ndarray, V: float, density: bool):
    """Call the hardmax kernel on the pair coordinates of ``(n, 2, 2)`` arrays."""
    return _hardmax_gout_kernel(_col(y, 0, 0), _col(y, 1, 1), _col(omega, 0, 0),
                                _col(omega, 0, 1), _col(omega, 1, 1), float(V), density)
