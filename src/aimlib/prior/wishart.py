"""The tied prior (the paper's): the Wishart product ``S* = W* W*^T / sqrt(r d)``, and its
denoising problem in Gaussian (GOE) noise.  :class:`Tied` is its entry of the registry
(:data:`aimlib.prior.PRIORS`); the functions below are its numerics.

The teacher is ``S* = W* W*^T / sqrt(r d)`` with ``W*`` a ``d x r`` standard Gaussian matrix and
``rho = r / d``.  Observing ``Y = S* + sqrt(Delta) Z`` with ``Z`` a GOE matrix (off-diagonal
variance ``1/d``), the spectral density ``mu_Delta`` of ``Y`` has a Stieltjes transform ``g`` that
solves the cubic (docs/theory.md §2, ``k = 1/rho``, ``s = sqrt(k)``)

    s Delta g^3 - (s z + Delta) g^2 + (z + s - 1/s) g - 1 = 0 .

Everything here is computed from that cubic: the support (real roots of its discriminant, one or
two intervals), the density ``Im g / pi``, the prior MMSE

    mmse(Delta) = Delta - (4 pi^2 / 3) Delta^2 * integral mu_Delta^3 ,

and the optimal rotation-invariant estimator ``xi(l) = l - 2 Delta Re g(l)``.

Integrals over the support use a tanh-sinh rule on each interval, whose nodes cluster
double-exponentially at the edges: it converges fast for square-root edges and for the sharp peak
that a hard edge (``rho`` near 1) leaves at small ``Delta``.
"""

from __future__ import annotations

import math
import sys
from typing import ClassVar

import numpy as np
from numba import njit

from aimlib.core.validation import check_rho
from aimlib.prior.interface import ModulePrior

__all__ = [
    "second_moment",
    "scale_posterior_trace",
    "scale_floor",
    "support",
    "density",
    "stieltjes",
    "mu3_integral",
    "mmse",
    "mmse_large_delta",
    "rie_eigenvalues",
    "rie_slopes",
    "rie",
    "Tied",
]

#: tanh-sinh rule on [-1, 1] for integrals over each support interval: its nodes cluster
#: double-exponentially at the edges, which resolves both the square-root edges of the density and
#: the sharp peak near a hard edge (rho close to 1 at small Delta, where mu ~ x^{-1/2} is smoothed
#: on the scale Delta^{2/3}).  Each node is stored as its distance to the nearer edge (``_DS_E``,
#: in units of the half-width) to keep full precision there.
DE_STEP = 1.0 / 24.0
DE_TMAX = 3.3
_K = int(math.ceil(DE_TMAX / DE_STEP))
_tau = DE_STEP * np.arange(-_K, _K + 1)
_u = 0.5 * math.pi * np.sinh(np.abs(_tau))
_DS_E = 2.0 * np.exp(-2.0 * _u) / (1.0 + np.exp(-2.0 * _u))  # 1 - tanh(u)
_DS_W = DE_STEP * 0.5 * math.pi * np.cosh(_tau) / np.cosh(_u) ** 2
# Nodes with negative tau are measured from the left edge, positive from the right one.
_THETA = _DS_E
_THETA_W = _DS_W
#: The rule as (distance to the nearer edge, weight), for the other priors' quadratures.
TANH_SINH = (_THETA, _THETA_W)


def scale_posterior_trace(d: int, r: int) -> float:
    """``Tr E[S* | y] = sqrt(r d)`` for labels ``y`` that do not see the scale of ``S*``.

    ``|W*|_F^2 = Tr(W* W*^T)`` is a chi-square with ``r d`` degrees of freedom, independent of the
    direction of ``W*`` and hence of the direction of ``S*``.  Labels that depend on ``S*`` only
    through its direction (hardmax: ``y(lambda h) = y(h)`` for ``lambda > 0``) therefore leave
    ``E[Tr S* | direction] = r d / sqrt(r d)`` untouched: the posterior mean has this trace
    exactly, for every ``d``, sample size and token law (docs/theory.md §4.2).
    """
    if int(d) < 1 or int(r) < 1:
        raise ValueError(f"d and r must be >= 1, got d={d!r}, r={r!r}")
    return math.sqrt(int(r) * int(d))


def scale_floor(d: int, r: int) -> float:
    """The part of the Bayes error ``(1/d) E||S* - E[S*|y]||^2`` that no scale-blind label can
    remove: ``2 (d + r + 1) / (d (r d + 2))``, about ``2 (1 + rho) / (rho d^2)``
    (docs/theory.md §4.2).  It is exact and additive at finite ``d``; SE (``d -> infinity``)
    does not see it."""
    if int(d) < 1 or int(r) < 1:
        raise ValueError(f"d and r must be >= 1, got d={d!r}, r={r!r}")
    d, r = int(d), int(r)
    return 2.0 * (d + r + 1) / (d * (r * d + 2))


#: Above ``LARGE_DELTA * max(1, 1/rho)`` the MMSE comes from its large-noise series
#: (:func:`mmse_large_delta`, docs/theory.md §2.3); below, from the cubic.  ``mmse = Delta -
#: Delta^2 Phi*`` cancels ``log10(Delta)`` digits, so the quadrature loses accuracy as Delta
#: grows (1e-12 absolute at 1e4, 1e-9 at 1e7), while the series' first omitted term,
#: about ``(rho Delta)^-3 / Delta``, is below 1e-14 from this point on.
LARGE_DELTA = 3e3




def mmse_slope(rho: float) -> float:
    """``f(rho) = lim mmse(Delta) / Delta`` as ``Delta -> 0``: ``2 rho - rho^2`` for
    ``rho <= 1``, else 1 -- the fraction of free parameters of ``S*`` (a symmetric matrix of rank
    ``rho d``), and so the noiseless perfect-recovery threshold ``alpha_bar_c`` of the softmax
    and Gaussian channels (docs/theory.md §2, §3)."""
    rho = check_rho(rho)
    return 2.0 * rho - rho * rho if rho <= 1.0 else 1.0


def _check_delta(delta: float) -> float:
    delta = float(delta)
    if not delta >= 0 or math.isnan(delta):
        raise ValueError(f"delta must be >= 0, got delta={delta!r}")
    return delta


def second_moment(rho: float) -> float:
    """``Q0 = lim (1/d) Tr S*^2 = 1 + rho``."""
    return 1.0 + check_rho(rho)


# --------------------------------------------------------------------------------------------
# numba kernels
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _cubic_roots(x, delta, s):
    """The three roots ``g`` of the cubic at real ``z = x``.

    The cubic is solved for ``h = 1/g``, where it is monic with bounded coefficients,

        h^3 - (x + s - 1/s) h^2 + (s x + Delta) h - s Delta = 0,

    so that the spurious root ``g ~ 1/(s Delta)`` (tiny ``h``) costs no accuracy at small Delta.
    Cardano's formula gives the roots, two Newton steps polish them, and ``g = 1/h``.  A Newton
    step is kept only if it lowers ``|f(h)|``: at a double root (a square-root edge of the
    support, where the RIE evaluates eigenvalues outside the support) ``f'`` vanishes and an
    unguarded step threw the root 1e-2 away (Delta = 0.3653427421737381, rho = 0.5), which made
    the RIE jump by 6e-3 between two values of Delta 2e-9 apart (``tests/test_prior.py``).
    """
    B = -(x + s - 1.0 / s)
    C = s * x + delta
    D = -s * delta
    p = C - B * B / 3.0
    q = 2.0 * B * B * B / 27.0 - B * C / 3.0 + D
    disc = complex((q / 2.0) ** 2 + (p / 3.0) ** 3)
    sq = np.sqrt(disc)
    w1 = -q / 2.0 + sq
    w2 = -q / 2.0 - sq
    w = w1 if abs(w1) >= abs(w2) else w2
    omega = complex(-0.5, math.sqrt(3.0) / 2.0)
    hs = np.empty(3, dtype=np.complex128)
    if abs(w) == 0.0:
        for k in range(3):
            hs[k] = -B / 3.0
    else:
        u = w ** (1.0 / 3.0)
        for k in range(3):
            uk = u * omega**k
            hs[k] = uk - p / (3.0 * uk) - B / 3.0
    roots = np.empty(3, dtype=np.complex128)
    for k in range(3):
        h = hs[k]
        f = ((h + B) * h + C) * h + D
        for _ in range(2):
            fp = (3.0 * h + 2.0 * B) * h + C
            if fp == 0:
                break
            h_new = h - f / fp
            f_new = ((h_new + B) * h_new + C) * h_new + D
            if not abs(f_new) < abs(f):
                break
            h, f = h_new, f_new
        if h == 0:
            roots[k] = complex(math.inf, 0.0)
        else:
            roots[k] = 1.0 / h
    return roots


@njit(cache=True)
def _im_g(x, delta, s):
    """``Im g(x - i0+)`` (``pi`` times the density) in real arithmetic.

    Inside the support the cubic in ``h = 1/g`` has one real root and a complex pair: the real
    root comes from Cardano's formula (polished by Newton), the pair from the deflated quadratic,
    whose product of roots ``-D / r`` avoids cancellation; ``Im g = Im h_- / |h|^2`` for the
    member of the pair with negative imaginary part.  Outside the support (three real roots) the
    result is 0.
    """
    B = -(x + s - 1.0 / s)
    C = s * x + delta
    D = -s * delta
    p = C - B * B / 3.0
    q = 2.0 * B * B * B / 27.0 - B * C / 3.0 + D
    disc = 0.25 * q * q + p * p * p / 27.0
    if disc <= 0.0:
        return 0.0
    A = -0.5 * q - math.copysign(math.sqrt(disc), q)
    u = math.copysign(abs(A) ** (1.0 / 3.0), A)
    r = (u - p / (3.0 * u) if u != 0.0 else 0.0) - B / 3.0
    for _ in range(2):
        fp = (3.0 * r + 2.0 * B) * r + C
        if fp != 0.0:
            r -= (((r + B) * r + C) * r + D) / fp
    b1 = B + r
    c1 = -D / r if abs(r) > 1e-300 else C + b1 * r
    d2 = 4.0 * c1 - b1 * b1
    if d2 <= 0.0:
        return 0.0
    re = -0.5 * b1
    im = 0.5 * math.sqrt(d2)
    return im / (re * re + im * im)


@njit(cache=True)
def _g_physical(x, delta, s):
    """Root with the largest imaginary part (the Stieltjes branch at ``x - i0+``)."""
    roots = _cubic_roots(x, delta, s)
    best = roots[0]
    for k in range(1, 3):
        if roots[k].imag > best.imag:
            best = roots[k]
    return best


@njit(cache=True)
def _support_edges(delta, s):
    """Support intervals as an ``(m, 2)`` array (m = 1 or 2)."""
    return _support_and_dips(delta, s)[0]


@njit(cache=True)
def _support_and_dips(delta, s):
    """Support intervals, and the real parts of the discriminant's complex roots.

    A complex pair close to the real axis inside an interval marks a near-closed gap, where the
    density dips sharply: quadratures split the interval there.
    """
    s2 = s * s
    c4 = s2 * s2
    c3 = -2.0 * s2 * s * (delta + s2 + 1.0)
    c2 = s2 * (delta * delta - 2.0 * delta * s2 + 8.0 * delta + s2 * s2 - 2.0 * s2 + 1.0)
    c1 = 2.0 * delta * s * (4.0 * delta * s2 - delta + 4.0 * s2 * s2 + s2 - 5.0)
    c0 = -delta * (
        4.0 * delta * delta * s2
        + 8.0 * delta * s2 * s2
        + 20.0 * delta * s2
        - delta
        + 4.0 * s2 * s2 * s2
        - 12.0 * s2 * s2
        + 12.0 * s2
        - 4.0
    )
    coeffs = np.array([c4, c3, c2, c1, c0])
    r = np.roots(coeffs.astype(np.complex128))
    scale = 1.0 + abs(c3 / c4) + math.sqrt(abs(c2 / c4)) + math.sqrt(delta)
    real = []
    dips = []
    for k in range(r.shape[0]):
        if abs(r[k].imag) <= 1e-7 * scale:
            real.append(r[k].real)
        elif r[k].imag > 0:
            dips.append((r[k].real, r[k].imag))
    real_arr = np.sort(np.array(real))
    # Polish each real root of the discriminant with Newton steps.
    for k in range(real_arr.shape[0]):
        z = real_arr[k]
        for _ in range(3):
            f = (((c4 * z + c3) * z + c2) * z + c1) * z + c0
            fp = ((4.0 * c4 * z + 3.0 * c3) * z + 2.0 * c2) * z + c1
            if fp != 0.0:
                step = f / fp
                if abs(step) < 1e-3 * scale:
                    z -= step
        real_arr[k] = z
    # Keep the intervals on which the density is positive.
    out = np.empty((2, 2))
    m = 0
    n = real_arr.shape[0]
    if n >= 2:
        k = 0
        while k < n - 1:
            lo = real_arr[k]
            hi = real_arr[k + 1]
            mid = 0.5 * (lo + hi)
            if hi > lo and _g_physical(mid, delta, s).imag > 0.0 and m < 2:
                out[m, 0] = lo
                out[m, 1] = hi
                m += 1
                k += 2
            else:
                k += 1
    if m == 2 and out[1, 0] - out[0, 1] <= 0.0:
        out[0, 1] = out[1, 1]
        m = 1
    dip_arr = np.empty((len(dips), 2))
    for k in range(len(dips)):
        dip_arr[k, 0] = dips[k][0]
        dip_arr[k, 1] = dips[k][1]
    return out[:m].copy(), dip_arr


@njit(cache=True)
def _quad_intervals(delta, s):
    """Sub-intervals for quadrature: the support, split at near-closed gaps."""
    edges, dips = _support_and_dips(delta, s)
    out = np.empty((edges.shape[0] + dips.shape[0], 2))
    m = 0
    for i in range(edges.shape[0]):
        a = edges[i, 0]
        b = edges[i, 1]
        for k in range(dips.shape[0]):
            c = dips[k, 0]
            if a < c < b and dips[k, 1] < 0.25 * min(c - a, b - c):
                out[m, 0] = a
                out[m, 1] = c
                m += 1
                a = c
        out[m, 0] = a
        out[m, 1] = b
        m += 1
    return out[:m].copy()


@njit(cache=True)
def _node(a, b, hw, e, j, n):
    """Node ``j`` of the tanh-sinh rule on ``[a, b]`` from its scaled distance ``e`` to an edge."""
    if 2 * j < n - 1:
        return a + hw * e
    if 2 * j > n - 1:
        return b - hw * e
    return 0.5 * (a + b)


@njit(cache=True)
def _mu_moments(delta, s, theta, theta_w):
    """Quadrature of ``(int mu, int x mu, int x^2 mu, int mu^3)`` over the support."""
    edges = _quad_intervals(delta, s)
    res = np.zeros(4)
    for i in range(edges.shape[0]):
        a = edges[i, 0]
        b = edges[i, 1]
        hw = 0.5 * (b - a)
        for j in range(theta.shape[0]):
            x = _node(a, b, hw, theta[j], j, theta.shape[0])
            jac = hw * theta_w[j]
            mu = _im_g(x, delta, s) / math.pi
            res[0] += jac * mu
            res[1] += jac * mu * x
            res[2] += jac * mu * x * x
            res[3] += jac * mu * mu * mu
    return res


@njit(cache=True)
def _mmse_kernel(delta, s, theta, theta_w):
    if delta == 0.0:
        return 0.0
    mom = _mu_moments(delta, s, theta, theta_w)
    return delta - (4.0 * math.pi**2 / 3.0) * delta * delta * mom[3]


@njit(cache=True)
def _mmse_many(deltas, s, theta, theta_w):
    out = np.empty(deltas.shape[0])
    for i in range(deltas.shape[0]):
        out[i] = _mmse_kernel(deltas[i], s, theta, theta_w)
    return out


@njit(cache=True)
def _g_on_axis(xs, delta, s, theta, theta_w):
    """Physical branch of ``g(x - i0+)`` at real points, continued outside the support.

    Inside the support the root with the largest imaginary part is the physical one.  Outside it
    all three roots are real; the Stieltjes integral ``int mu(t) / (x - t) dt`` (by quadrature,
    approximate near the edges) picks which one, and the exact root is returned.
    """
    edges = _support_edges(delta, s)
    out = np.empty(xs.shape[0], dtype=np.complex128)
    for i in range(xs.shape[0]):
        x = xs[i]
        roots = _cubic_roots(x, delta, s)
        best = roots[0]
        for k in range(1, 3):
            if roots[k].imag > best.imag:
                best = roots[k]
        inside = False
        for m in range(edges.shape[0]):
            if edges[m, 0] < x < edges[m, 1]:
                inside = True
        if inside and best.imag > 0.0:
            out[i] = best
            continue
        # Quadrature estimate of the (real) Stieltjes transform, then snap to the nearest root.
        est = 0.0
        for m in range(edges.shape[0]):
            a = edges[m, 0]
            b = edges[m, 1]
            hw = 0.5 * (b - a)
            for j in range(theta.shape[0]):
                t = _node(a, b, hw, theta[j], j, theta.shape[0])
                jac = hw * theta_w[j]
                mu = max(_g_physical(t, delta, s).imag, 0.0) / math.pi
                if x != t:
                    est += jac * mu / (x - t)
        pick = roots[0]
        dist = abs(roots[0] - est)
        for k in range(1, 3):
            dk = abs(roots[k] - est)
            if dk < dist:
                dist = dk
                pick = roots[k]
        out[i] = complex(pick.real, 0.0)
    return out


# --------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------


def support(delta: float, rho: float) -> np.ndarray:
    """Support of ``mu_Delta`` as an ``(m, 2)`` array of intervals (``m`` is 1 or 2).

    Parameters
    ----------
    delta : float
        Noise variance, ``> 0``.
    rho : float
        Width ratio ``r / d``, ``> 0``.
    """
    rho = check_rho(rho)
    delta = _check_delta(delta)
    if delta == 0.0:
        raise ValueError("delta must be > 0 for the support of mu_Delta")
    return _support_edges(delta, 1.0 / math.sqrt(rho))


def stieltjes(x: np.ndarray | float, delta: float, rho: float) -> np.ndarray:
    """Stieltjes transform ``g(x - i0+)`` of ``mu_Delta`` at real points (physical branch)."""
    rho = check_rho(rho)
    delta = _check_delta(delta)
    xs = np.atleast_1d(np.asarray(x, dtype=np.float64)).ravel()
    g = _g_on_axis(xs, delta, 1.0 / math.sqrt(rho), _THETA, _THETA_W)
    return g.reshape(np.shape(x))


def density(x: np.ndarray | float, delta: float, rho: float) -> np.ndarray:
    """Spectral density ``mu_Delta(x) = Im g(x - i0+) / pi`` (vectorised over ``x``)."""
    return np.maximum(stieltjes(x, delta, rho).imag, 0.0) / math.pi


def mu3_integral(delta: float, rho: float) -> float:
    """``integral mu_Delta(x)^3 dx``."""
    rho = check_rho(rho)
    delta = _check_delta(delta)
    return float(_mu_moments(delta, 1.0 / math.sqrt(rho), _THETA, _THETA_W)[3])


def mmse_large_delta(delta: float | np.ndarray, rho: float) -> float | np.ndarray:
    """Large-noise series of the prior's information gain ``1 - mmse`` (docs/theory.md §2.3):

        Delta (1 - mmse(Delta)) = 1 + (1/rho - 1) / Delta + (1/rho^2 - 4/rho + 1) / Delta^2
                                  + O(Delta^-3),

    from ``mmse = Delta - Delta^2 Phi*(mu_Delta)`` and the expansion of the free Fisher
    information in the free cumulants ``kappa_2 = 1 + Delta``, ``kappa_n = rho^(1 - n/2)``.
    Returns ``1 - mmse`` (without the cancellation of forming ``mmse`` first; ``inf`` gives 0).
    """
    rho = check_rho(rho)
    d = np.asarray(delta, dtype=np.float64)
    with np.errstate(divide="ignore"):
        x = 1.0 / d
    k = 1.0 / rho
    out = x * (1.0 + x * ((k - 1.0) + x * (k * k - 4.0 * k + 1.0)))
    return float(out) if out.ndim == 0 else out


def mmse(delta: float | np.ndarray, rho: float) -> float | np.ndarray:
    """Prior MMSE ``(1/d) E||E[S*|Y] - S*||_F^2`` at noise variance ``delta``.

    Below ``LARGE_DELTA max(1, 1/rho)`` from the cubic (docs/theory.md §2), above it from the
    large-noise series :func:`mmse_large_delta` (§2.3), so ``Delta (1 - mmse)`` stays accurate
    up to ``Delta = inf``.

    Parameters
    ----------
    delta : float or array_like
        Noise variance(s) ``>= 0``; ``inf`` gives the prior variance 1.
    rho : float
        Width ratio ``r / d``, ``> 0``.

    Returns
    -------
    float or numpy.ndarray
        The MMSE, a float for scalar input.
    """
    rho = check_rho(rho)
    d = np.asarray(delta, dtype=np.float64)
    if np.any(np.isnan(d)) or np.any(d < 0):
        raise ValueError(f"delta must be >= 0, got delta={delta!r}")
    flat = d.ravel()
    out = np.empty_like(flat)
    small = flat < LARGE_DELTA * max(1.0, 1.0 / rho)
    if np.any(small):
        out[small] = _mmse_many(flat[small], 1.0 / math.sqrt(rho), _THETA, _THETA_W)
    if not np.all(small):
        out[~small] = 1.0 - mmse_large_delta(flat[~small], rho)
    out = np.clip(out, 0.0, 1.0)
    if d.ndim == 0:
        return float(out[0])
    return out.reshape(d.shape)


def rie_eigenvalues(eigs: np.ndarray, delta: float, rho: float,
                    outside: str = "clamp") -> np.ndarray:
    """Optimal rotation-invariant shrinkage ``xi(l) = l - 2 Delta Re g(l)`` of eigenvalues.

    Parameters
    ----------
    eigs : numpy.ndarray
        Eigenvalues of the observation.
    delta, rho : float
        Noise variance and width ratio.
    outside : {"clamp", "continue"}
        What to do with eigenvalues outside the asymptotic support (at finite ``d`` the extreme
        eigenvalues fluctuate by ``O(d^{-2/3})`` around the edges).  ``"continue"`` uses the
        analytic continuation of ``g``, whose slope is infinite at a square-root edge, so that
        edge fluctuations are amplified (and AMP never settles); ``"clamp"`` (default) uses
        ``xi(e) + (l - e)`` with ``e`` the nearest edge, which is continuous and 1-Lipschitz
        outside the support.
    """
    eigs = np.asarray(eigs, dtype=np.float64)
    if delta == 0.0:
        return eigs.copy()
    if outside == "continue":
        return eigs - 2.0 * delta * stieltjes(eigs, delta, rho).real
    if outside != "clamp":
        raise ValueError(f"outside must be 'clamp' or 'continue', got outside={outside!r}")
    edges = support(delta, rho)
    c = np.clip(eigs, edges[0, 0], edges[-1, 1])
    for k in range(edges.shape[0] - 1):  # eigenvalues in a gap go to the nearer edge
        a, b = edges[k, 1], edges[k + 1, 0]
        gap = (c > a) & (c < b)
        c = np.where(gap, np.where(c - a < b - c, a, b), c)
    return c - 2.0 * delta * stieltjes(c, delta, rho).real + (eigs - c)


def rie_slopes(eigs: np.ndarray, delta: float, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """The RIE shrinkage ``xi(l)`` at ``eigs`` and its slope ``xi'(l)`` (central difference, step
    ``1e-6 max(1, max |l|)``): what the divergence of the denoiser is built from."""
    eigs = np.asarray(eigs, dtype=np.float64)
    xi = rie_eigenvalues(eigs, delta, rho)
    h = 1e-6 * max(1.0, float(np.max(np.abs(eigs))))
    dxi = (rie_eigenvalues(eigs + h, delta, rho) - rie_eigenvalues(eigs - h, delta, rho)) / (2 * h)
    return xi, dxi


def rie(Y: np.ndarray, delta: float, rho: float) -> np.ndarray:
    """Bayes-optimal rotation-invariant denoiser of a symmetric matrix ``Y = S* + sqrt(Delta) Z``.

    Parameters
    ----------
    Y : numpy.ndarray
        Symmetric ``d x d`` observation.
    delta : float
        Noise variance of the GOE part.
    rho : float
        Width ratio of the prior.

    Returns
    -------
    numpy.ndarray
        ``sum_i xi(l_i) u_i u_i^T`` with ``Y = sum_i l_i u_i u_i^T``.
    """
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[0] != Y.shape[1]:
        raise ValueError(f"Y must be a square matrix, got shape {Y.shape}")
    lam, U = np.linalg.eigh(0.5 * (Y + Y.T))
    xi = rie_eigenvalues(lam, delta, rho)
    return (U * xi) @ U.T


#: The names :class:`aimlib.prior.interface.ModulePrior` calls.
shrink = rie_eigenvalues
denoise = rie


class Tied(ModulePrior):
    """``S* = W* W*^T / sqrt(r d)``, ``W*`` a ``d x r`` standard Gaussian matrix, ``r = rho d``:
    tied keys and queries (the paper's prior, docs/theory.md §2)."""

    name: ClassVar[str] = "tied"
    label: ClassVar[str] = "tied keys and queries, S* = W W^T / sqrt(r d)"
    FACTORISED: ClassVar[bool] = True
    TOKEN_LAWS: ClassVar[bool] = True
    NUMERICS: ClassVar[object] = sys.modules[__name__]

    @property
    def second_moment(self) -> float:
        return second_moment(self.rho)

    @property
    def mean_overlap(self) -> float:
        return self.rho

    @property
    def variance(self) -> float:
        return 1.0  # (1 + rho) - rho, exactly

    def mean(self, d: int) -> np.ndarray:
        return math.sqrt(self.rho) * np.eye(int(d))

    def mmse_slope(self) -> float:
        return mmse_slope(self.rho)

    def shrink_slopes(self, eigs: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
        return rie_slopes(eigs, delta, self.rho)

    def posterior_trace(self, d: int) -> float:
        return scale_posterior_trace(d, self.width(d))

    def sample(self, d: int, rng: np.random.Generator) -> np.ndarray:
        return rng.standard_normal((int(d), self.width(d)))

    def matrix(self, factor: np.ndarray) -> np.ndarray:
        d, r = factor.shape
        return (factor @ factor.T) / math.sqrt(r * d)
