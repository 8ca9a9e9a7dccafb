"""The identities every prior must satisfy, callable by the author of a new one.

A prior (:class:`aimlib.prior.Prior`) is right when, at a noise variance ``Delta``:

1. **its density is one**: the spectral density of ``Y = S* + sqrt(Delta) Z`` has mass 1 and
   second moment ``Q0 + Delta`` (quadrature over :meth:`~aimlib.prior.Prior.support`);
2. **the MMSE is the density's**: ``mmse = Delta - (4 pi^2 / 3) Delta^2 int mu^3`` for a
   rotation-invariant prior in GOE noise (docs/theory.md §2);
3. **the shrinkage is Tweedie's**: ``xi(l) = l - 2 Delta Re g(l)`` inside the support;
4. **Monte Carlo**: on matrices drawn from :meth:`~aimlib.prior.Prior.sample` at size ``d``, the
   denoiser's error ``(1/d) ||denoise(Y) - S*||^2`` is the MMSE and ``(1/d) ||Y||_F^2`` is
   ``Q0 + Delta``, within five standard errors plus the ``O(1/d)`` finite-size terms.

:func:`check_prior` runs all four and raises :class:`AssertionError` naming the first that
fails; ``tests/test_prior_registry.py`` runs it on every registered prior and on a test prior.
"""

from __future__ import annotations

import math

import numpy as np

from aimlib.core.identity import Check
from aimlib.prior.interface import Prior

__all__ = ["Check", "check_density", "check_mmse_formula", "check_shrinkage",
           "check_monte_carlo", "check_prior"]


#: Gauss-Legendre nodes of :func:`_integral` (in the angle of ``x = a + (b - a)(1 - cos t)/2``,
#: which makes a square-root edge smooth).
QUAD_NODES = 400


def _integral(pr: Prior, delta: float, f) -> float:
    """``int f(x) mu(x)^p dx`` over the support, ``f`` given the density: Gauss-Legendre in
    the angle of each interval (independent of the prior's own quadrature)."""
    t, w = np.polynomial.legendre.leggauss(QUAD_NODES)
    t, w = 0.5 * math.pi * (t + 1.0), 0.5 * math.pi * w
    total = 0.0
    for a, b in pr.support(delta):
        x = a + 0.5 * (b - a) * (1.0 - np.cos(t))
        jac = 0.5 * (b - a) * np.sin(t)
        total += float(np.sum(w * jac * f(x, np.asarray(pr.density(x, delta)))))
    return total


def check_density(pr: Prior, delta: float) -> list[Check]:
    """Mass 1 and second moment ``Q0 + Delta`` of the density of ``Y``."""
    return [Check("density mass", _integral(pr, delta, lambda x, mu: mu), 1.0, 1e-6),
            Check("density second moment", _integral(pr, delta, lambda x, mu: x * x * mu),
                  pr.second_moment + delta, 1e-6 * (pr.second_moment + delta))]


def check_mmse_formula(pr: Prior, delta: float) -> Check:
    """``mmse(Delta) = Delta - (4 pi^2 / 3) Delta^2 int mu_Delta^3``."""
    cube = _integral(pr, delta, lambda x, mu: mu**3)
    return Check("mmse = Delta - (4 pi^2/3) Delta^2 int mu^3", float(pr.mmse(delta)),
                 delta - 4.0 * math.pi**2 / 3.0 * delta**2 * cube, 1e-6)


def check_shrinkage(pr: Prior, delta: float, points: int = 9) -> Check:
    """The largest gap between ``xi(l)`` and ``l - 2 Delta Re g(l)`` inside the support."""
    xs = np.concatenate([np.linspace(a, b, points + 2)[1:-1] for a, b in pr.support(delta)])
    gap = np.max(np.abs(pr.shrink(xs, delta) - (xs - 2.0 * delta * np.real(
        pr.stieltjes(xs, delta)))))
    return Check("xi(l) = l - 2 Delta Re g(l)", float(gap), 0.0, 1e-8 * (1.0 + np.max(np.abs(xs))))


def check_monte_carlo(pr: Prior, delta: float, d: int = 200, samples: int = 6,
                      rng: np.random.Generator | None = None) -> list[Check]:
    """The denoiser's error and ``(1/d) ||Y||_F^2`` on ``samples`` matrices of size ``d`` against
    the MMSE and ``Q0 + Delta``; tolerance five standard errors plus twice the expected value
    over ``d`` (the finite-size terms: ``(1/d) E ||Y||_F^2`` exceeds its limit by about
    ``(1 + Delta) / d``)."""
    rng = np.random.default_rng(0) if rng is None else rng
    errs, norms = [], []
    for _ in range(int(samples)):
        S = pr.matrix(pr.sample(d, rng))
        Y = S + math.sqrt(delta) * pr.noise(d, rng)
        errs.append(float(np.sum((pr.denoise(Y, delta) - S) ** 2)) / d)
        norms.append(float(np.sum(Y * Y)) / d)

    def sem(v):
        return float(np.std(v, ddof=1) / math.sqrt(len(v)))

    mmse = float(pr.mmse(delta))
    return [Check(f"denoiser error at d = {d}", float(np.mean(errs)), mmse,
                  5 * sem(errs) + 2 * mmse / d),
            Check(f"(1/d) ||Y||^2 at d = {d}", float(np.mean(norms)), pr.second_moment + delta,
                  5 * sem(norms) + 2 * (pr.second_moment + delta) / d)]


def check_prior(pr: Prior, deltas=(0.1, 1.0), **mc) -> list[Check]:
    """Every identity at each noise variance of ``deltas``; ``AssertionError`` naming the
    first that fails, else the checks."""
    out = []
    for delta in deltas:
        out += [*check_density(pr, delta), check_mmse_formula(pr, delta),
                check_shrinkage(pr, delta), *check_monte_carlo(pr, delta, **mc)]
    for c in out:
        if not c.ok:
            raise AssertionError(f"{pr!r}: {c}")
    return out
