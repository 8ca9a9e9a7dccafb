"""The SE second moment of hardmax at ``T >= 3`` (docs/theory.md §14.2, §14.3):
``E[sum w g^2]`` at ``(q, V)`` by an outer QMC over ``omega`` and Genz's inner integral, with
the large-``alpha`` strip sum as a control variate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aimlib.channels.hardmax.orthant import (
    genz_gout_kernel,
    pair_index,
    pair_w,
    pattern_orbits,
    pattern_table,
    qmc_points,
)


@dataclass(frozen=True)
class SecondMoment:
    """``E[sum_{a<=b} w_ab g_ab^2]`` of the hardmax channel with its error estimate.

    Attributes
    ----------
    value : float
    stderr : float
        Standard error over the scramblings of the outer rule.
    mass : float
        ``E[sum_y Z_y]``, which is 1 exactly: a check of the rule.
    """

    value: float
    stderr: float
    mass: float


#: Outer (omega) and inner (Genz) rules of the SE at T >= 3: points per scrambling and
#: scramblings.  The outer rule doubles its points each time ``V`` falls by 4 below
#: :data:`SE_OUTER_V` (the integrand lives on strips of width ``sqrt(V)``), up to
#: :data:`SE_OUTER_MAX` points per scrambling.  The tests measure the error against finer rules.
SE_OUTER = (64, 4)


SE_INNER = (128, 2)


SE_OUTER_V = 0.3


SE_OUTER_MAX = 2048


#: Patterns whose probability is bounded by ``exp(SE_SKIP_LOG)`` (the least likely of its
#: constraints alone) are left out of the SE's sum over labels: their ``Z g^2`` is below
#: ``1e-15`` of the total (``g`` grows only like the log of ``1 / Z``).
SE_SKIP_LOG = -40.0


#: The control variate is used from ``q / V`` = this value: below it the strip approximation is
#: far from the integrand and the 2-D quadrature of its mean (:func:`_strip_mean`, a grid in
#: ``k`` of step 0.02) does not resolve densities of width ``sqrt(q / V)`` in ``k``, so the
#: corrected estimate was biased (``q / V = 1e-3``: 2.92 against 2.851 at ``q = 0``; 1e-4:
#: 7.85), while the plain rule is accurate there (the integrand is smooth on the scale of
#: ``omega``).
CONTROL_FROM = 1.0


#: The inner rule of the information at ``q = 0`` (``omega = 0``, one outer point, where the
#: inner rule's error is not averaged over outer points: 0.45 % at 2 x 256 points), about 1e-5.
UNINFORMED_INNER = (8192, 4)


def outer_points(V: float) -> int:
    """Points per scrambling of the SE's outer rule at variance ``V`` (a power of 2)."""
    n = SE_OUTER[0]
    v = SE_OUTER_V
    while V < v and n < SE_OUTER_MAX:
        n *= 2
        v /= 4.0
    return n


def _psi(k: np.ndarray) -> np.ndarray:
    """``phi(k)^2 / (Phi(k) Phi(-k))``: a probit's Fisher information in its own units."""
    from scipy.special import log_ndtr  # scipy only when this runs (its import costs ~0.2 s)

    return np.exp(-k * k - math.log(2.0 * math.pi) - log_ndtr(k) - log_ndtr(-k))


def _strip_terms(T: int, omega_p: np.ndarray, V: float) -> np.ndarray:
    """The strip approximation of ``sum_y Z_y sum w g^2`` at each ``omega`` (rows of
    ``omega_p``): ``sum_a psi(kappa_a) / V`` with ``kappa_a`` the gap between the two largest
    entries of row ``a`` over its noise scale ``sqrt(V (w_b + w_c))`` (docs/theory.md §14.2)."""
    idx = pair_index(T)
    out = np.zeros(omega_p.shape[0])
    for a in range(T):
        row = omega_p[:, idx[a]]  # (n, T): the entries of row a
        w = np.where(np.arange(T) == a, 2.0, 1.0)
        order = np.argsort(-row, axis=1)
        b, c = order[:, 0], order[:, 1]
        top = np.take_along_axis(row, b[:, None], 1)[:, 0]
        second = np.take_along_axis(row, c[:, None], 1)[:, 0]
        out += _psi((top - second) / np.sqrt(V * (w[b] + w[c]))) / V
    return out


def _strip_mean(T: int, q: float, V: float) -> float:
    """``E_omega`` of :func:`_strip_terms` for ``omega ~ N(0, q diag(w))``, by the trapezoid
    rule: every row alike and the entries of a row independent, so for each ordered top pair
    ``(b, c)`` of row 0 it is ``int dy f_c(y) prod_e F_e(y) int_0^inf dk s f_b(y + s k) psi(k)
    / V`` (``s = sqrt(V (w_b + w_c))``)."""
    from scipy.special import ndtr  # scipy only when this runs (its import costs ~0.2 s)

    w = np.where(np.arange(T) == 0, 2.0, 1.0)
    sd = np.sqrt(q * w)
    span = round(12 * math.sqrt(2.0) / 0.02)
    hy = 0.02 * math.sqrt(q)
    y = hy * np.arange(-span, span + 1)
    hk = 0.02
    k = hk * np.arange(0, 701)
    wk = np.full(k.size, hk)
    wk[0] = hk / 2
    pk = _psi(k) * wk
    total = 0.0
    for b in range(T):
        for c in range(T):
            if b == c:
                continue
            s = math.sqrt(V * (w[b] + w[c]))
            fc = np.exp(-0.5 * (y / sd[c]) ** 2) / (math.sqrt(2 * math.pi) * sd[c])
            for e in range(T):
                if e not in (b, c):
                    fc = fc * ndtr(y / sd[e])
            x = y[:, None] + s * k[None, :]
            fb = np.exp(-0.5 * (x / sd[b]) ** 2) / (math.sqrt(2 * math.pi) * sd[b])
            total += hy * float(fc @ (fb @ pk)) * s / V
    return T * total


def second_moment(T: int, q: float, V: float, *, outer=None, inner=SE_INNER,
                  control: bool | None = None) -> SecondMoment:
    """``E_{omega, y}[sum_{a<=b} w_ab g_ab^2]`` for hardmax at ``T`` (any ``T`` the tables
    cover), at overlap ``q`` and variance ``V``, by randomised QMC.

    ``omega = sqrt(q) diag(sqrt w) xi`` with ``xi`` standard normal; the direction that adds a
    constant to every index changes neither ``Z_out`` nor ``g`` and is left out, so the outer
    rule runs over ``R = P - 1`` dimensions.  For each outer point the labels are summed over,
    each pattern with Genz's ``Z_out`` and ``g`` (at ``q = 0`` one pattern per orbit of
    :func:`pattern_orbits`, weighted by its size).  The strip approximation
    (:func:`_strip_terms`, whose mean :func:`_strip_mean` is a 2-D quadrature) is a control
    variate: it carries the ``1/sqrt(V)`` part that the outer rule resolves worst.  Patterns
    out of reach (:data:`SE_SKIP_LOG`) are skipped.  The rule is fixed (scrambled Sobol points
    from :data:`QMC_SEED`), so the SE map is a deterministic function of ``q``, smooth between
    the values of ``V`` at which the outer rule doubles (:func:`outer_points`).  Accuracy
    (docs/theory.md §14.2), measured at ``T = 3`` on a ``rho = 0.5`` curve: 2e-3 to 3e-3
    relative from the inner rule, 2e-3 to 8e-3 from the outer rule (``stderr``).
    """
    if not V > 0:
        raise ValueError(f"V must be > 0, got V={V!r}")
    if q < 0:
        raise ValueError(f"q must be >= 0, got q={q!r}")
    if inner[1] < 2:
        raise ValueError("the inner rule needs two scramblings or more")
    tab = pattern_table(T)
    if q == 0.0:  # one point, omega = 0: the orbits of the patterns suffice
        reps, sizes = pattern_orbits(T)
    else:  # every pattern, so that the sum is F(omega) itself and the control variate fits it
        reps, sizes = np.arange(T**T, dtype=np.int64), np.ones(T**T)
    sw = np.sqrt(pair_w(T))
    # basis of the pair space orthogonal (in whitened coordinates) to the constant direction
    ones = 1.0 / sw
    ones /= np.linalg.norm(ones)
    basis = np.linalg.svd(np.eye(tab.P) - np.outer(ones, ones))[0][:, :tab.R]
    n_out, s_out = outer if outer is not None else (outer_points(V), SE_OUTER[1])
    if q == 0.0:
        xi = np.zeros((1, 1, tab.R))
    else:
        from scipy.special import ndtri  # scipy only when this runs (its import costs ~0.2 s)

        xi = ndtri(qmc_points(tab.R, n_out, s_out))
    S, N, _ = xi.shape
    omega_p = math.sqrt(q) * (xi.reshape(S * N, tab.R) @ basis.T) * sw[None, :]
    n_pat = reps.size
    om = np.repeat(omega_p, n_pat, axis=0)
    pat = np.tile(reps, S * N)
    pts = qmc_points(tab.R, *inner)
    _, logz, _, gs = genz_gout_kernel(pat, tab.A, tab.C, tab.Bv, pair_w(T),
                                  np.ascontiguousarray(om), math.sqrt(V), pts, SE_SKIP_LOG)
    w = pair_w(T)
    Z = np.exp(logz).reshape(S, N, n_pat)
    # g^2 from two independent scramblings, g_1 g_2: free of the inner rule's variance, which
    # the square of one estimate carries as a bias of order 1 / (inner points)
    f = (gs[:, 0, :] * gs[:, 1, :]) @ w
    f = f.reshape(S, N, n_pat)
    F = np.einsum("snk,k->sn", Z * f, sizes)
    mass = float(np.einsum("snk,k->", Z, sizes) / (S * N))
    if control is None:
        control = q >= CONTROL_FROM * V
    if q > 0.0 and control:
        # control variate: the strip approximation, whose mean is known (a 2-D quadrature);
        # it carries the 1/sqrt(V) part that the outer rule resolves worst
        C = _strip_terms(T, omega_p, V).reshape(S, N)
        Cc = C - C.mean()
        var = float(np.mean(Cc * Cc))
        beta = float(np.mean(Cc * (F - F.mean())) / var) if var > 0 else 0.0
        F = F - beta * (C - _strip_mean(T, q, V))
    per_shift = F.mean(axis=1)
    err = float(np.std(per_shift, ddof=1) / math.sqrt(S)) if S > 1 else math.nan
    return SecondMoment(float(per_shift.mean()), err, mass)
