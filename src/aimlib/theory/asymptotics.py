"""How the Bayes-optimal error vanishes: large-alpha laws (hardmax) and the approach to perfect
recovery (softmax), from the state evolution's small-V expansion (docs/theory.md §9).

At a fixed point ``V = Q0 - q = mmse(1 / q_hat)``, and for small noise the prior's MMSE is
linear, ``mmse(Delta) = f Delta - c2 Delta^2 + ...`` with ``f = 2 rho - rho^2`` (``rho <= 1``)
or 1 (``rho >= 1``), the fraction of free parameters, and ``c2`` in closed form
(:func:`mmse_curvature`).  What differs between channels is how ``q_hat = 2 alpha E[sum w g^2]``
grows as ``V -> 0``:

* **hardmax, exact g_out**: the expectation concentrates on the two strips of width
  ``sqrt(3V)`` around the argmax boundaries, ``E[sum w g^2] ~ K / sqrt(V)`` with
  ``K = J sqrt(2 / (pi q))`` and ``J = int phi(k)^2 / (Phi(k) Phi(-k)) dk = 1.80639...``.  Then
  ``V = f sqrt(V) / (2 alpha K)``, i.e.

      E ~ f^2 pi Q0 / (8 J^2) * alpha^-2;

* **hardmax, published density g_out**: the density puts weight only near the corner where both
  comparisons are ties, an area ``3V``, so ``E[sum w g^2] -> K_d(q) = I_d / q`` stays finite
  (``I_d`` a fixed 2-D integral), ``q_hat ~ 2 alpha K_d``, and

      E ~ f Q0 / (2 I_d) * alpha^-1,

  the ``O(1/alpha)`` the paper reports, which holds only for its incorrect curve;
* **softmax**: ``q_hat = alpha_bar / V`` exactly, so ``V = mmse(V / alpha_bar)`` and, writing
  ``Delta = V / alpha_bar``, ``alpha_bar = f - c2 Delta + ...``: the error vanishes linearly at
  ``alpha_bar_c = f``, ``E ~ (f / c2) (alpha_bar_c - alpha_bar)``; at ``rho = 1`` the prior's
  spectrum touches 0, ``mmse(Delta) = Delta - c Delta^(5/3)`` and
  ``E ~ (2/3) (1 - alpha_bar)^(3/2)``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from aimlib import prior
from aimlib.channels import Softmax
from aimlib.channels.hardmax import HARDMAX_STEP, HARDMAX_TMAX, hardmax_table
from aimlib.channels.hardmax.orthant import TMAX_GENERAL
from aimlib.core.kernels import gauss_sum_2d
from aimlib.core.validation import check_rho
from aimlib.tokens import make_tokens

__all__ = ["PowerLaw", "large_alpha", "near_perfect_recovery", "mmse_slope", "mmse_curvature",
           "strip_constant", "strip_sum", "hardmax_channel_limit"]


@dataclass(frozen=True)
class PowerLaw:
    """An asymptotic law of the Bayes-optimal error.

    Attributes
    ----------
    channel, variant : str
    rho : float
    T : int
    regime : {"large_alpha", "perfect_recovery"}
        ``"large_alpha"``: ``E ~ prefactor * alpha^-exponent`` as ``alpha -> infinity``;
        ``"perfect_recovery"``: ``E ~ prefactor * (alpha_bar_c - alpha_bar)^exponent`` as
        ``alpha_bar -> alpha_bar_c`` from below.
    exponent, prefactor : float
    alpha_bar_c : float
        Perfect-recovery threshold (``nan`` for the large-alpha regime).
    """

    channel: str
    variant: str
    rho: float
    T: int
    regime: str
    exponent: float
    prefactor: float
    alpha_bar_c: float = math.nan

    def error(self, alpha) -> np.ndarray:
        """The law at sample ratio(s) ``alpha`` (for softmax, through ``alpha_bar``; zero beyond
        the threshold)."""
        a = np.asarray(alpha, dtype=np.float64)
        if self.regime == "large_alpha":
            return self.prefactor * a ** (-self.exponent)
        gap = np.maximum(self.alpha_bar_c - a * Softmax(T=self.T).n_constraints, 0.0)
        return self.prefactor * gap**self.exponent


mmse_slope = prior.mmse_slope


def mmse_curvature(rho: float) -> float:
    """``c2 = lim (f Delta - mmse(Delta)) / Delta^2``: ``rho^2 (1 + rho) / (1 - rho)`` for
    ``rho < 1`` and ``rho / (rho - 1)`` for ``rho > 1`` (checked against :func:`aimlib.prior.mmse`
    to 1e-7 in the tests).  At ``rho = 1`` the expansion is not analytic (ValueError)."""
    rho = check_rho(rho)
    if rho == 1.0:
        raise ValueError("rho=1: mmse(Delta) = Delta - c Delta^(5/3), no Delta^2 term")
    return rho * rho * (1.0 + rho) / (1.0 - rho) if rho < 1.0 else rho / (rho - 1.0)


@lru_cache(maxsize=1)
@lru_cache(maxsize=8)
def strip_sum(T: int) -> float:
    """``k_T``: the hardmax strip sum at ``Q0 = 1`` (docs/theory.md §14.3), so that
    ``E[sum w g^2] ~ k_T / sqrt(Q0 V)`` as ``V -> 0``.

    Near a tie between the top two entries ``b, c`` of row ``a`` the labels are a probit in
    ``h_ab - h_ac`` (noise variance ``V (w_ab + w_ac)``) and certain elsewhere; crossing the
    strip contributes ``J sqrt(w_ab + w_ac) p_abc / sqrt(V)``, with ``p_abc`` the density of
    ``omega_ab - omega_ac`` at 0 jointly with both being above the rest of the row:

        p_abc = int f_ab(t) f_ac(t) prod_{e != b, c} F_ae(t) dt,

    ``f``, ``F`` the density and CDF of ``N(0, w)`` (the entries of one row of ``omega`` are
    independent).  At ``T = 2`` this is ``J sqrt(2 / pi)``.
    """
    from scipy import integrate, special  # scipy only when this runs (its import costs ~0.2 s)

    J = strip_constant()
    total = 0.0
    a = 0  # every row alike
    for b, c in itertools.combinations(range(T), 2):
        sb = math.sqrt(2.0 if b == a else 1.0)
        sc = math.sqrt(2.0 if c == a else 1.0)
        rest = [math.sqrt(2.0 if e == a else 1.0) for e in range(T) if e not in (b, c)]

        def f(t, sb=sb, sc=sc, rest=rest):
            out = math.exp(-0.5 * (t / sb) ** 2 - 0.5 * (t / sc) ** 2) / (2 * math.pi * sb * sc)
            for se in rest:
                out *= special.ndtr(t / se)
            return out

        val, err = integrate.quad(f, -np.inf, np.inf, epsabs=1e-14, epsrel=1e-12, limit=200)
        total += math.sqrt(sb * sb + sc * sc) * val
    return J * T * total


def strip_constant() -> float:
    """``J = int phi(k)^2 / (Phi(k) Phi(-k)) dk`` (1.806394571137...), the hardmax strip
    integral, by adaptive quadrature in log space (error estimate below 1e-13)."""
    from scipy import integrate, special  # scipy only when this runs (its import costs ~0.2 s)

    def f(k):
        return math.exp(-k * k - math.log(2.0 * math.pi) - special.log_ndtr(k)
                        - special.log_ndtr(-k))

    val, err = integrate.quad(f, -np.inf, np.inf, epsabs=1e-14, epsrel=1e-13, limit=200)
    assert err < 1e-11
    return float(val)


@lru_cache(maxsize=1)
def _density_corner_integral() -> float:
    """``I_d = q lim_{V -> 0} E[sum w g^2]`` for the density g_out: the channel's 2-D integral
    over ``kappa`` with no Gaussian weight (the omega-density at the tie corner factored out),
    on the hardmax SE grid (step halving changes it by less than 1e-10)."""
    kappa, jac, table = hardmax_table(True, 1.0, float(HARDMAX_STEP), float(HARDMAX_TMAX))
    return gauss_sum_2d(kappa, jac, table, 0.0)[0] / (math.pi * math.sqrt(8.0))


def hardmax_channel_limit(q: float, variant: str = "exact") -> float:
    """The small-V limit of the hardmax channel sum at overlap ``q``:
    ``lim sqrt(V) E[sum w g^2] = J sqrt(2 / (pi q))`` (exact g_out) or
    ``lim E[sum w g^2] = I_d / q`` (density g_out)."""
    if not q > 0:
        raise ValueError(f"q must be > 0, got q={q!r}")
    if variant == "exact":
        return strip_constant() * math.sqrt(2.0 / (math.pi * q))
    if variant == "density":
        return _density_corner_integral() / q
    raise ValueError(f"variant must be 'exact' or 'density', got variant={variant!r}")


def near_perfect_recovery(rho: float, T: int = 2) -> PowerLaw:
    """Softmax: ``E ~ prefactor (alpha_bar_c - alpha_bar)^exponent`` below the perfect-recovery
    threshold ``alpha_bar_c = f(rho)``: exponent 1 and prefactor ``f / c2`` for ``rho != 1``
    (``(2 - rho)(1 - rho) / (rho (1 + rho))`` below 1, ``(rho - 1) / rho`` above), exponent 3/2
    and prefactor 2/3 at ``rho = 1`` (identified numerically: the SE ratio tends to 2/3 within
    0.5 % at 1e-4 below the threshold; not derived in closed form)."""
    rho = check_rho(rho)
    if int(T) != T or T < 2:
        raise ValueError(f"T must be an integer >= 2, got T={T!r}")
    f = mmse_slope(rho)
    if rho == 1.0:
        exponent, pref = 1.5, 2.0 / 3.0
    else:
        exponent, pref = 1.0, f / mmse_curvature(rho)
    return PowerLaw("softmax", "exact", rho, int(T), "perfect_recovery", exponent, pref, f)


def large_alpha(channel: str, rho: float, T: int = 2, variant: str = "exact",
                tokens=None) -> PowerLaw:
    """The law by which the Bayes-optimal error vanishes (module docstring).

    Parameters
    ----------
    channel : {"hardmax", "softmax"}
        Hardmax: ``E ~ prefactor alpha^-exponent`` (exponent 2 with the exact g_out, 1 with the
        published density).  Softmax reaches zero error at a finite ``alpha_bar_c``: its law is
        that of :func:`near_perfect_recovery`.
    rho : float
        Width ratio, ``> 0``.
    T : int
        Tokens (hardmax: 2 only).
    variant : {"exact", "density"}
        Hardmax output function.
    tokens : str, dict or TokenLaw, optional
        The token law (docs/theory.md §13.4): i.i.d. tokens of excess kurtosis ``kappa`` widen
        the comparisons' means to ``Var(omega_11 - omega_12) = 3 q + kappa rho``, so the strips
        carry the density of ``N(0, 3 Q0 + kappa rho)`` at 0 and the prefactor takes
        ``Q0 + kappa rho / 3`` for ``Q0``; correlated tokens change only the scale and the
        correlation of the comparisons, to which the strip limit is blind (same law).

    Returns
    -------
    PowerLaw
    """
    rho = check_rho(rho)
    law = make_tokens(tokens)
    if not law.is_gaussian and not (channel == "hardmax" and variant == "exact"):
        raise ValueError(f"tokens: {law.tag} tokens have a large-alpha law for the exact "
                         "hardmax output only (softmax is universal: use the Gaussian one)")
    if channel == "softmax":
        if variant != "exact":
            raise ValueError(f"softmax has no variant {variant!r}: only 'exact'")
        return near_perfect_recovery(rho, T)
    if channel != "hardmax":
        raise ValueError(f"channel must be 'softmax' or 'hardmax', got channel={channel!r}")
    f, Q0 = mmse_slope(rho), 1.0 + rho
    if T != 2:
        if not 2 <= int(T) <= TMAX_GENERAL or variant != "exact" or not law.is_gaussian:
            raise ValueError(f"the hardmax large-alpha law at T={T!r} is implemented for the "
                             f"exact output and Gaussian tokens, T <= {TMAX_GENERAL}")
        k = strip_sum(int(T))  # E ~ f^2 Q0 / (4 k_T^2) alpha^-2, as f^2 pi Q0 / (8 J^2) at T=2
        return PowerLaw("hardmax", "exact", rho, int(T), "large_alpha", 2.0,
                        f * f * Q0 / (4.0 * k * k))
    if variant == "exact":
        J = strip_constant()
        spread = Q0 + law.kappa * rho / 3.0  # Var(omega_11 - omega_12) / 3 at q = Q0
        return PowerLaw("hardmax", "exact", rho, 2, "large_alpha", 2.0,
                        f * f * math.pi * spread / (8.0 * J * J))
    if variant == "density":
        return PowerLaw("hardmax", "density", rho, 2, "large_alpha", 1.0,
                        f * Q0 / (2.0 * _density_corner_integral()))
    raise ValueError(f"variant must be 'exact' or 'density', got variant={variant!r}")
