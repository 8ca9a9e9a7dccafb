"""State evolution of AMP run with an output function that is not the Bayes-optimal one.

AMP with the published hardmax output function (the bivariate normal *density* where the
derivative of its CDF belongs, ``variant="density"``; README, "A correction") on data from the
true model is a GAMP with a mismatched ``g_out``.  Its state evolution cannot assume the
Nishimori identities, so it tracks the overlaps separately:

* ``m = (1/d) Tr(S_hat S*)`` and ``Q = (1/d) ||S_hat||^2`` (the error is ``Q0 - 2 m + Q``), and the
  variance ``V`` the algorithm uses in its Onsager term and output function;
* output side, per pair ``a <= b`` with ``h ~ N(0, w Q0)``, ``omega ~ N(0, w Q)``,
  ``Cov(h, omega) = w m`` and ``y = hardmax(h)``:

  - ``a_hat = 2 alpha E[sum w (-d g / d omega)]``, the precision the algorithm assigns to its
    effective observation (GAMP's ``1 / tau_r``);
  - ``q_hat = 2 alpha E[sum w g^2]``, the noise power of that observation;
  - ``m_hat = 2 alpha E[sum w g g_true]``, its signal gain, where ``g_true`` is the Bayes output
    function of the true conditional law of ``h`` given ``omega`` (mean ``(m/Q) omega``, variance
    ``w (Q0 - m^2/Q)``): by Stein's lemma ``E[g (h - E[h|omega])] = w Vt E[g g_true]``;

* input side: the effective observation is ``R = mu S* + sqrt(Delta_eff) Z`` with
  ``mu = m_hat / a_hat`` and ``Delta_eff = q_hat / a_hat^2``, i.e. ``R / mu = S* + sqrt(Delta') Z``
  with ``Delta' = q_hat / m_hat^2``; AMP applies the RIE built for noise ``1 / a_hat``,
  ``F(R) = xi_alg(R)``, so with ``mu_{Delta'}`` the spectral density of ``R / mu`` and
  ``xi*(l) = l - 2 Delta' Re g(l)`` the overlap of an eigenvector with ``S*``:

  - ``Q = int xi_alg(mu l)^2 dmu_{Delta'}(l)``, ``m = int xi_alg(mu l) xi*(l) dmu_{Delta'}(l)``;
  - ``V = (1/a_hat) int int (xi_alg(mu l) - xi_alg(mu l')) / (mu l - mu l') dmu dmu``, the
    denoiser's divergence (GAMP's ``tau_x``).

With the exact ``g_out`` the three output quantities coincide and ``m = Q``, ``V = Q0 - Q``:
the Bayes-optimal state evolution (``aimlib.theory.state_evolution``), which the tests check.  The
AMP that this state evolution describes uses ``a_hat`` (not ``q_hat``) in its input step and
the denoiser's divergence for ``V`` (:func:`aimlib.algorithms.amp.run` with ``onsager="general"``,
the
default for ``variant="density"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from aimlib import prior
from aimlib.channels.hardmax import PAIR_CORRELATION, hardmax_slopes
from aimlib.core.kernels import GAUSS_CUTOFF, gauss_sum_2d
from aimlib.core.validation import check_rho

__all__ = ["MismatchedResult", "output_update", "input_update", "solve", "curve"]

#: Trapezoid step in the sinh-mapped variable of the output quadrature (halving it changes the
#: result by about 1e-10 relative at the tested points).
STEP = 0.2
#: Vector Aitken acceleration of the slow linear convergence at large alpha: from iteration
#: ACCEL_AFTER on, every ACCEL_EVERY iterations.
ACCEL_AFTER = 20
ACCEL_EVERY = 5
#: Quadrature nodes per support interval of the input integrals (Chebyshev map): 2000 for the
#: overlaps (relative error below 1e-9 where the density nearly closes a gap, at q_hat = 40 and
#: rho = 0.5), a quarter of that for the divergence's double integral (below 1e-7).
INPUT_NODES = 2000


@njit(cache=True)
def _pattern_sums(u1, u2, sigma, r, sigma_t, density):
    """Sum over the four label patterns at ``u = (omega_11 - omega_12, omega_22 - omega_12)``.

    Returns ``(P sum w g^2, P sum w g g_true, P sum w (-dg/domega))`` summed over patterns,
    where ``P`` is the true probability of the pattern given ``omega``.
    """
    acc_gg = 0.0
    acc_gt = 0.0
    acc_dv = 0.0
    for i1 in range(2):
        s1 = 1.0 if i1 == 0 else -1.0
        for i2 in range(2):
            s2 = 1.0 if i2 == 0 else -1.0
            c = s1 * s2 * PAIR_CORRELATION
            # true law of the pattern given omega
            lzt, e1, e2, _, _, _, _ = hardmax_slopes(s1 * r * u1 / sigma_t,
                                                      s2 * r * u2 / sigma_t, c, False)
            P = math.exp(lzt)
            if P == 0.0:
                continue
            gt11 = s1 * e1 / sigma_t
            gt22 = s2 * e2 / sigma_t
            gt12 = -(gt11 + gt22)
            # the algorithm's output function
            _, D1, D2, d11, d12, d21, d22 = hardmax_slopes(s1 * u1 / sigma, s2 * u2 / sigma,
                                                             c, density)
            g11 = s1 * D1 / sigma
            g22 = s2 * D2 / sigma
            g12 = -(g11 + g22)
            acc_gg += P * (2.0 * g11 * g11 + g12 * g12 + 2.0 * g22 * g22)
            acc_gt += P * (2.0 * g11 * gt11 + g12 * gt12 + 2.0 * g22 * gt22)
            acc_dv -= P * (3.0 * (d11 + d22) + s1 * s2 * (d12 + d21)) / (sigma * sigma)
    return acc_gg, acc_gt, acc_dv


@njit(cache=True)
def _output_table(u, lam, sigma, r, sigma_t, density):
    """:func:`_pattern_sums` on the grid, shape ``(n, n, 3)``, where the Gaussian weight of
    :func:`aimlib.core.kernels.gauss_sum_2d` is not cut off (elsewhere 0: it is never read)."""
    n = u.shape[0]
    out = np.zeros((n, n, 3))
    for i in range(n):
        for j in range(n):
            e = lam * (3.0 * u[i] * u[i] - 2.0 * u[i] * u[j] + 3.0 * u[j] * u[j])
            if e < GAUSS_CUTOFF:
                a, b, c = _pattern_sums(u[i], u[j], sigma, r, sigma_t, density)
                out[i, j, 0] = a
                out[i, j, 1] = b
                out[i, j, 2] = c
    return out


def _output_grid(u, jac, Q, sigma, r, sigma_t, density):
    lam = 1.0 / (16.0 * Q)
    table = _output_table(u, lam, sigma, r, sigma_t, density)
    return gauss_sum_2d(u, jac, table, lam) / (2.0 * math.pi * Q * math.sqrt(8.0))


def output_update(alpha: float, m: float, Q: float, V: float, rho: float, *,
                  variant: str = "density", step: float = STEP) -> tuple[float, float, float]:
    """``(a_hat, q_hat, m_hat)`` of hardmax ``T = 2`` AMP with the ``variant`` output function.

    Parameters
    ----------
    alpha, rho : float
        Sample and width ratios.
    m, Q : float
        Overlap with the teacher and squared norm of the estimate (per ``d``), ``0 < m``,
        ``m^2 < Q Q0``.
    V : float
        The variance the algorithm uses, ``> 0``.
    variant : {"density", "exact"}
        The algorithm's output function.
    """
    if variant not in ("density", "exact"):
        raise ValueError(f"variant must be 'density' or 'exact', got variant={variant!r}")
    if not (V > 0 and Q > 0 and m > 0):
        raise ValueError(f"need V > 0, Q > 0, m > 0, got V={V!r}, Q={Q!r}, m={m!r}")
    Q0 = 1.0 + rho
    Vt = Q0 - m * m / Q
    if not Vt > 0:
        raise ValueError(f"m^2 / Q must be below Q0 = {Q0}, got m={m!r}, Q={Q!r}")
    sigma, sigma_t, r = math.sqrt(3.0 * V), math.sqrt(3.0 * Vt), m / Q
    a = 0.5 * min(sigma, sigma_t / r, math.sqrt(3.0 * Q))
    tmax = math.asinh(12.0 * math.sqrt(3.0 * Q) / a)
    t = step * np.arange(-math.ceil(tmax / step), math.ceil(tmax / step) + 1)
    u = a * np.sinh(t)
    jac = a * step * np.cosh(t)
    gg, gt, dv = _output_grid(u, jac, Q, sigma, r, sigma_t, variant == "density")
    return 2.0 * alpha * dv, 2.0 * alpha * gg, 2.0 * alpha * gt


def _nodes(delta: float, rho: float, n: int):
    """Nodes and weights of ``int . dmu_delta`` (density included), Chebyshev map per interval
    of the support (square-root edges become smooth)."""
    xs, ws = [], []
    theta = (np.arange(n) + 0.5) * math.pi / n
    for a, b in prior.support(delta, rho):
        x = a + 0.5 * (b - a) * (1.0 - np.cos(theta))
        dx = 0.5 * (b - a) * np.sin(theta) * math.pi / n
        xs.append(x)
        ws.append(dx * prior.density(x, delta, rho))
    x, w = np.concatenate(xs), np.concatenate(ws)
    return x, w / w.sum()  # the total mass is 1 to quadrature accuracy; normalise it exactly


def input_update(a_hat: float, q_hat: float, m_hat: float, rho: float, *,
                 nodes: int = INPUT_NODES) -> tuple[float, float, float]:
    """``(m, Q, V)`` after the RIE step of AMP with precision ``a_hat`` (module docs)."""
    if not (a_hat > 0 and q_hat > 0 and m_hat > 0):
        raise ValueError(f"need a_hat, q_hat, m_hat > 0, got {a_hat!r}, {q_hat!r}, {m_hat!r}")
    mu = m_hat / a_hat
    d_eff = q_hat / m_hat**2
    d_alg = 1.0 / a_hat
    x, w = _nodes(d_eff, rho, nodes)
    xi_star = prior.rie_eigenvalues(x, d_eff, rho)
    F = prior.rie_eigenvalues(mu * x, d_alg, rho)
    Q = float(np.sum(w * F * F))
    m = float(np.sum(w * F * xi_star))
    x2, w2 = _nodes(d_eff, rho, max(nodes // 4, 50))
    F2, dF = prior.rie_slopes(mu * x2, d_alg, rho)
    quot = prior.divided_differences(mu * x2, F2, dF)
    V = d_alg * float(w2 @ quot @ w2)
    return m, Q, V


@dataclass
class MismatchedResult:
    """Fixed point (or last iterate) of the mismatched state evolution.

    Attributes
    ----------
    error : float
        ``Q0 - 2 m + Q`` at the last iterate.
    m, Q, V : float
        Overlap, squared norm, the algorithm's variance.
    a_hat, q_hat, m_hat : float
        Output-side precision, noise power and gain.
    iterations : int
    converged : bool
        ``|m_{t+1} - m_t| + |Q_{t+1} - Q_t| < tol`` on an evaluated step: the returned
        ``(m, Q, V)`` is the map applied to the previous iterate, never an Aitken jump.
    history : dict
        ``error``, ``m``, ``Q``, ``V`` per iteration (after any jump), the evaluated step's
        ``change`` and whether the iteration ended with an Aitken jump (``jumped``).
    """

    error: float
    m: float
    Q: float
    V: float
    a_hat: float
    q_hat: float
    m_hat: float
    iterations: int
    converged: bool
    history: dict = field(repr=False)


def solve(alpha: float, rho: float, *, variant: str = "density", tol: float = 1e-9,
          max_iter: int = 300, damping: float = 0.0) -> MismatchedResult:
    """Iterate the mismatched state evolution of hardmax ``T = 2`` AMP from AMP's start.

    AMP starts at ``S_hat = sqrt(rho) I`` (``m = Q = rho``) with ``V = 1``; each of the first
    ``ACCEL_AFTER`` iterations is one AMP iteration in the large-d limit (the history to compare
    with AMP's); later ones are accelerated (vector Aitken) towards the same fixed point.
    ``damping`` mixes ``(m, Q, V)`` with the previous ones.
    """
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got alpha={alpha!r}")
    rho = check_rho(rho)
    Q0 = 1.0 + rho
    m, Q, V = rho, rho, 1.0
    hist = {"error": [], "m": [], "Q": [], "V": [], "change": [], "jumped": []}
    converged = False
    prev_step = prev2_step = None
    a = q = mh = math.nan
    it = 0
    for it in range(1, int(max_iter) + 1):  # noqa: B007  (it is reported)
        a, q, mh = output_update(alpha, m, Q, V, rho, variant=variant)
        m1, Q1, V1 = input_update(a, q, mh, rho)
        m1 = damping * m + (1 - damping) * m1
        Q1 = damping * Q + (1 - damping) * Q1
        V1 = damping * V + (1 - damping) * V1
        # the change of this evaluated step: the convergence test (a jump below is not one)
        change = abs(m1 - m) + abs(Q1 - Q)
        step = np.array([m1 - m, Q1 - Q, V1 - V])
        m, Q, V = m1, Q1, V1
        jumped = False
        # Slow linear convergence at large alpha: once the steps shrink by a steady ratio r
        # (the same over the last two steps, within 1 %), jump to the limit of the geometric
        # series (vector Aitken), every ACCEL_EVERY steps.
        if (it > ACCEL_AFTER and it % ACCEL_EVERY == 0 and prev_step is not None
                and prev2_step is not None):
            ratio = float(step @ prev_step) / float(prev_step @ prev_step)
            ratio2 = float(prev_step @ prev2_step) / float(prev2_step @ prev2_step)
            aligned = float(step @ prev_step) > 0.999 * np.linalg.norm(step) * np.linalg.norm(
                prev_step)
            if aligned and 0.3 < ratio < 0.995 and abs(ratio - ratio2) < 0.01 * (1 - ratio):
                jump = step * ratio / (1.0 - ratio)
                m2, Q2, V2 = m + jump[0], Q + jump[1], V + jump[2]
                if m2 > 0 and Q2 > 0 and V2 > 0 and m2 * m2 < Q2 * Q0:
                    m, Q, V = m2, Q2, V2
                    step = None  # the next ratio must not straddle the jump
                    jumped = True
        prev2_step = prev_step
        prev_step = step
        for k, v in (("error", Q0 - 2 * m + Q), ("m", m), ("Q", Q), ("V", V),
                     ("change", change), ("jumped", jumped)):
            hist[k].append(v)
        # A jumped-to point has not been evaluated: the next iteration tests it.
        if change < tol and not jumped:
            converged = True
            break
    hist = {k: np.asarray(v) for k, v in hist.items()}
    return MismatchedResult(Q0 - 2 * m + Q, m, Q, V, a, q, mh, it, converged, hist)


def curve(alphas, rho: float, *, variant: str = "density", **kw):
    """:func:`solve` on a grid of alphas, as an ``xarray.Dataset`` on ``alpha``."""
    import xarray as xr  # xarray only when a dataset is built (the workflow parses without it)

    res = [solve(float(a), rho, variant=variant, **kw) for a in alphas]
    data = {k: ("alpha", np.array([getattr(r, k) for r in res], dtype=np.float64))
            for k in ("error", "m", "Q", "V", "a_hat", "q_hat", "m_hat")}
    data["iterations"] = ("alpha", np.array([r.iterations for r in res], dtype=np.int64))
    data["converged"] = ("alpha", np.array([r.converged for r in res], dtype=np.int8))
    ds = xr.Dataset(data, coords={"alpha": np.asarray(alphas, dtype=np.float64)})
    ds.attrs.update(channel="hardmax", T=2, rho=float(rho), variant=variant, kind="mismatched")
    return ds
