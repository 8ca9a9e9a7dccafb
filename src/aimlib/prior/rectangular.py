"""The untied prior: ``S* = K Q^T / sqrt(r d)`` and its denoising problem in i.i.d. Gaussian
noise, solved through the singular values of the observation (docs/theory.md §15.1).

``K, Q`` are ``d x r`` standard Gaussian matrices, ``rho = r / d`` (any ``rho > 0``), so ``S*`` is a
``d x d`` matrix of rank ``min(r, d)``, not symmetric, with ``(1/d) ||S*||_F^2 -> 1`` and mean 0.
Observing ``Y = S* + sqrt(Delta) Z`` with ``Z`` a ``d x d`` matrix of i.i.d. ``N(0, 1/d)`` entries,
the problem is invariant under ``S -> U S V^T``: the optimal estimator keeps the singular vectors of
``Y`` and shrinks its singular values.  Everything follows from the *symmetrised* singular-value
density ``mu`` of ``Y`` (the law of ``+-sigma_i``), whose Stieltjes transform ``g`` solves the
quartic (docs/theory.md §15.1)

    -Delta g^4 + z g^3 + (rho - 1 + rho Delta) g^2 - rho z g + rho = 0 ,

solved here for ``h = 1/g`` (monic, bounded coefficients at every ``Delta >= 0``).  From it:

- the support: the real roots of the quartic's discriminant, a cubic in ``x^2``, give the edges;
- the density ``mu = Im g(x - i0) / pi`` and its moments (mass 1, ``Q0 + Delta = 1 + Delta``,
  fourth moment ``1/rho + 2 (1 + Delta)^2``);
- the MMSE ``Delta - (4 pi^2 / 3) Delta^2 int mu^3`` (the same formula as the tied prior's, with the
  symmetrised density), and above ``LARGE_DELTA max(1, 1/rho)`` (300) its large-noise series
  ``Delta (1 - mmse) = 1 - 1/Delta + (1 + 1/rho^2) / Delta^2 + O(Delta^-3)``;
- the shrinkage ``xi(sigma) = sigma - 2 Delta Re g(sigma)`` of each singular value, and the
  divergence of the denoiser built from it.

:class:`Untied` is its entry of the registry (:data:`aimlib.prior.PRIORS`).
"""

from __future__ import annotations

import functools
import math
import sys
from typing import ClassVar

import numpy as np

from aimlib.core.validation import check_rho
from aimlib.prior.interface import ModulePrior
from aimlib.prior.wishart import TANH_SINH

__all__ = ["LARGE_DELTA", "Untied", "support", "stieltjes", "density", "mmse",
           "mmse_large_delta", "shrink", "denoise", "divergence"]

#: Above ``LARGE_DELTA max(1, 1/rho)`` the MMSE comes from its large-noise series.
LARGE_DELTA = 300.0


def _check_delta(delta) -> float:
    delta = float(delta)
    if not delta >= 0:
        raise ValueError(f"delta must be >= 0, got delta={delta!r}")
    return delta


def _roots(x: np.ndarray, delta: float, rho: float) -> np.ndarray:
    """The roots ``g`` of the quartic at real points ``x``: an ``(n, 4)`` complex array (the root
    at ``g = inf`` that ``Delta = 0`` leaves is NaN).

    The quartic in ``h = 1/g`` is ``h^4 - x h^3 + (1 - 1/rho + Delta) h^2 + (x/rho) h - Delta/rho``;
    its roots are the eigenvalues of its companion matrix, one batched ``eigvals``."""
    x = np.asarray(x, dtype=np.float64).ravel()
    n = x.shape[0]
    comp = np.zeros((n, 4, 4))
    comp[:, 1, 0] = comp[:, 2, 1] = comp[:, 3, 2] = 1.0
    comp[:, 0, 3] = delta / rho
    comp[:, 1, 3] = -x / rho
    comp[:, 2, 3] = -(1.0 - 1.0 / rho + delta)
    comp[:, 3, 3] = x
    h = np.linalg.eigvals(comp)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(h == 0, np.nan, 1.0 / h)


def _g_inside(x: np.ndarray, delta: float, rho: float) -> np.ndarray:
    """The root with the largest imaginary part: ``g(x - i0)`` inside the support."""
    g = _roots(x, delta, rho)
    im = np.where(np.isnan(g), -np.inf, g.imag)
    return g[np.arange(g.shape[0]), np.argmax(im, axis=1)]


def _edges_and_dips(delta: float, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """The nonnegative edges of the support (real roots ``x^2 = u`` of the discriminant, a cubic in
    ``u``), and the real parts of its complex roots (near-closed gaps, where quadratures split)."""
    D, r = delta, rho
    c3 = 4.0 * r * r
    c2 = -r * (8 * D * D * r * r - 20 * D * r * r + 32 * D * r - r * r + 20 * r + 8)
    c1 = 4.0 * (D**4 * r**4 + 3 * D**3 * r**4 + 12 * D**3 * r**3 + 3 * D * D * r**4
                - 13 * D * D * r**3 + 22 * D * D * r * r + D * r**4 - 26 * D * r**3
                + 13 * D * r * r + 12 * D * r - r**3 + 3 * r * r - 3 * r + 1)
    c0 = -16.0 * D * (D * D * r * r + 2 * D * r * r + 2 * D * r + r * r - 2 * r + 1) ** 2
    u = np.roots([c3, c2, c1, c0])
    scale = 1.0 + abs(c2 / c3) + math.sqrt(abs(c1 / c3)) + abs(c0 / c3) ** (1 / 3)
    real = np.sort(u[np.abs(u.imag) <= 1e-9 * scale].real)
    edges = np.sqrt(np.clip(real[real > -1e-12 * scale], 0.0, None))
    dips = np.sqrt(u[u.imag > 1e-9 * scale].astype(complex))
    return edges, dips


@functools.lru_cache(maxsize=64)
def _state(delta: float, rho: float):
    """What every function of one ``(Delta, rho)`` shares, computed once (an AMP iteration asks
    for the shrinkage and the MMSE at the same ``Delta``): the half-support, the quadrature's
    nodes and weights on it, and the density at the nodes."""
    edges, dips = _edges_and_dips(delta, rho)
    pts = np.concatenate([[0.0], edges[edges > 0]])
    lo, hi = pts[:-1], pts[1:]
    mid = _g_inside(0.5 * (lo + hi), delta, rho) if lo.size else np.zeros(0, complex)
    out = []
    for a, b, g in zip(lo, hi, mid, strict=True):
        if b > a and g.imag > 0:
            if out and out[-1][1] == a:
                out[-1][1] = b
            else:
                out.append([a, b])
    half = np.array(out, dtype=np.float64).reshape(-1, 2)
    e, w = TANH_SINH
    n = e.shape[0]
    left = np.arange(n) < (n - 1) / 2
    right = np.arange(n) > (n - 1) / 2
    xs, ws = [], []
    for a, b in half:
        cuts = [a]
        for c in dips:
            if a < c.real < b and c.imag < 0.25 * min(c.real - a, b - c.real):
                cuts.append(c.real)
        cuts.append(b)
        for x0, x1 in zip(cuts[:-1], cuts[1:], strict=True):
            hw = 0.5 * (x1 - x0)
            xs.append(np.where(left, x0 + hw * e, np.where(right, x1 - hw * e, x0 + hw)))
            ws.append(hw * w)
    t, wt = np.concatenate(xs), np.concatenate(ws)
    mu = np.maximum(_g_inside(t, delta, rho).imag, 0.0) / math.pi
    for arr in (half, t, wt, mu):
        arr.flags.writeable = False
    return half, t, wt, mu


def support(delta: float, rho: float) -> np.ndarray:
    """The support of the symmetrised singular-value density of ``Y``, intervals as rows
    ``[a, b]`` (symmetric about 0; an interval around 0 is one row).

    Parameters
    ----------
    delta : float
        Noise variance, ``> 0``.
    rho : float
        Width ratio ``r / d``, ``> 0``.
    """
    rho, delta = check_rho(rho), _check_delta(delta)
    if delta == 0.0:
        raise ValueError("delta must be > 0 for the support of the density of Y")
    half = _state(delta, rho)[0]  # the support on x >= 0
    rows = [[-b, -a] for a, b in half[::-1] if a > 0]
    rows += [[-b, b] for a, b in half if a == 0] + [[a, b] for a, b in half if a > 0]
    return np.array(rows, dtype=np.float64).reshape(-1, 2)


def stieltjes(x, delta: float, rho: float) -> np.ndarray:
    """``g(x - i0) = int mu(t) / (x - i0 - t) dt`` at real points (the physical root; outside the
    support the real root nearest the quadrature of that integral)."""
    rho, delta = check_rho(rho), _check_delta(delta)
    xs = np.atleast_1d(np.asarray(x, dtype=np.float64)).ravel()
    roots = _roots(xs, delta, rho)
    im = np.where(np.isnan(roots), -np.inf, roots.imag)
    g = roots[np.arange(xs.shape[0]), np.argmax(im, axis=1)]
    sup = support(delta, rho)
    inside = np.zeros(xs.shape, dtype=bool)
    for a, b in sup:
        inside |= (xs > a) & (xs < b)
    out = g.astype(np.complex128)
    out_pts = ~(inside & (g.imag > 0))
    if np.any(out_pts):
        _, t, w, mu = _state(delta, rho)
        xo = xs[out_pts][:, None]
        with np.errstate(divide="ignore", invalid="ignore"):  # a node on x is left out
            kern = np.where(xo != t, 1.0 / (xo - t), 0.0) + np.where(xo != -t, 1.0 / (xo + t), 0.0)
            est = np.sum(w * mu * kern, axis=1)
        roots = roots[out_pts]
        dist = np.where(np.isnan(roots), np.inf, np.abs(roots - est[:, None]))
        out[out_pts] = roots[np.arange(roots.shape[0]), np.argmin(dist, axis=1)].real
    return out.reshape(np.shape(x))


def density(x, delta: float, rho: float) -> np.ndarray:
    """The symmetrised singular-value density ``mu(x) = Im g(x - i0) / pi`` of ``Y``: ``mu(x) dx``
    is half the fraction of singular values in ``|x|, |x| + dx``."""
    return np.maximum(stieltjes(x, delta, rho).imag, 0.0) / math.pi


def mmse_large_delta(delta, rho: float):
    """The large-noise series of ``1 - mmse`` (docs/theory.md §15.1):
    ``Delta (1 - mmse) = 1 - 1/Delta + (1 + kappa_4^2) / Delta^2 + O(Delta^-3)`` with
    ``kappa_4 = 1/rho`` the fourth free cumulant of the symmetrised singular values of ``S*``."""
    rho = check_rho(rho)
    d = np.asarray(delta, dtype=np.float64)
    with np.errstate(divide="ignore"):
        x = 1.0 / d
    out = x * (1.0 - x + (1.0 + 1.0 / rho**2) * x * x)
    return float(out) if out.ndim == 0 else out


def _mmse_quadrature(delta: float, rho: float) -> float:
    if delta == 0.0:
        return 0.0
    _, _, w, mu = _state(delta, rho)
    cube = 2.0 * float(np.sum(w * mu**3))  # the density is even
    return delta - 4.0 * math.pi**2 / 3.0 * delta * delta * cube


def mmse(delta, rho: float):
    """``lim (1/d) E||E[S*|Y] - S*||_F^2`` for the untied prior at noise variance(s) ``delta``.

    Parameters
    ----------
    delta : float or array_like
        Noise variance(s) ``>= 0``; ``inf`` gives the prior's variance 1.
    rho : float
        Width ratio ``r / d``, ``> 0``.

    Returns
    -------
    float or numpy.ndarray
        The MMSE (docs/theory.md §15.1), a float for scalar input.
    """
    rho = check_rho(rho)
    d = np.asarray(delta, dtype=np.float64)
    if np.any(np.isnan(d)) or np.any(d < 0):
        raise ValueError(f"delta must be >= 0, got delta={delta!r}")
    flat = d.ravel()
    big = flat >= LARGE_DELTA * max(1.0, 1.0 / rho)
    out = np.array([_mmse_quadrature(float(v), rho) if not b else 0.0
                    for v, b in zip(flat, big, strict=True)])
    if np.any(big):
        out[big] = 1.0 - mmse_large_delta(flat[big], rho)
    out = np.clip(out, 0.0, 1.0)
    return float(out[0]) if d.ndim == 0 else out.reshape(d.shape)


def shrink(sigma, delta: float, rho: float) -> np.ndarray:
    """The optimal shrinkage ``xi(sigma) = sigma - 2 Delta Re g(sigma)`` of singular values
    (odd in ``sigma``).  Outside the asymptotic support (finite-``d`` fluctuations of the extreme
    singular values) it continues as ``xi(e) + (sigma - e)`` from the nearest edge ``e``, as the
    tied prior's shrinkage does."""
    s = np.asarray(sigma, dtype=np.float64)
    if delta == 0.0:
        return s.copy()
    sup = support(delta, rho)
    c = np.clip(s, sup[0, 0], sup[-1, 1])
    for k in range(sup.shape[0] - 1):
        a, b = sup[k, 1], sup[k + 1, 0]
        gap = (c > a) & (c < b)
        c = np.where(gap, np.where(c - a < b - c, a, b), c)
    return c - 2.0 * delta * stieltjes(c, delta, rho).real + (s - c)


def denoise(Y: np.ndarray, delta: float, rho: float) -> np.ndarray:
    """``sum_i xi(sigma_i) u_i v_i^T`` for ``Y = sum_i sigma_i u_i v_i^T``: the Bayes-optimal
    estimate of ``S*`` as ``d -> inf`` (one SVD)."""
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[0] != Y.shape[1]:
        raise ValueError(f"Y must be a square matrix, got shape {Y.shape}")
    U, s, Vt = np.linalg.svd(Y)
    return (U * shrink(s, delta, rho)) @ Vt


def divergence(sigma: np.ndarray, xi: np.ndarray, dxi: np.ndarray) -> float:
    """``sum_ij d F_ij / d Y_ij`` of the spectral function ``F(Y) = sum_i xi(sigma_i) u_i v_i^T``
    of a square matrix with singular values ``sigma`` (docs/theory.md §15.1):
    ``sum_i xi'(sigma_i) + sum_{i != j} (sigma_i xi_i - sigma_j xi_j) / (sigma_i^2 - sigma_j^2)``.
    """
    s = np.asarray(sigma, dtype=np.float64)
    num = (s * xi)[:, None] - (s * xi)[None, :]
    den = (s * s)[:, None] - (s * s)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(np.abs(den) > 1e-14 * (1.0 + np.max(s) ** 2), num / den, 0.0)
    np.fill_diagonal(q, 0.0)
    return float(np.sum(dxi) + np.sum(q))


class Untied(ModulePrior):
    """``S* = K Q^T / sqrt(r d)``, ``K, Q`` independent ``d x r`` standard Gaussian matrices:
    untied keys and queries (docs/theory.md §15).  Not symmetric: its denoising problem is the
    rectangular one, in i.i.d. noise, solved by shrinking singular values."""

    name: ClassVar[str] = "untied"
    label: ClassVar[str] = "untied keys and queries, S* = K Q^T / sqrt(r d)"
    SYMMETRIC: ClassVar[bool] = False
    NUMERICS: ClassVar[object] = sys.modules[__name__]

    @property
    def second_moment(self) -> float:
        return 1.0

    @property
    def mean_overlap(self) -> float:
        return 0.0

    def mean(self, d: int) -> np.ndarray:
        return np.zeros((int(d), int(d)))

    def mmse_slope(self) -> float:
        return 2.0 * self.rho - self.rho**2 if self.rho <= 1.0 else 1.0

    def noise(self, d: int, rng: np.random.Generator) -> np.ndarray:
        return rng.standard_normal((int(d), int(d))) / math.sqrt(d)

    def sample(self, d: int, rng: np.random.Generator) -> np.ndarray:
        """``K`` and ``Q`` stacked, shape ``(2, d, r)``, drawn in that order."""
        return rng.standard_normal((2, int(d), self.width(d)))

    def matrix(self, factor: np.ndarray) -> np.ndarray:
        _, d, r = factor.shape
        return (factor[0] @ factor[1].T) / math.sqrt(r * d)
