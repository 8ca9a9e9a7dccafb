"""The untied prior S* = K Q^T / sqrt(r d) (aimlib.prior.rectangular, docs/theory.md §15.1),
checked against what does not depend on its quartic: sampled singular values at d = 1000, closed
moments from free probability, the oracle overlaps u_i^T S* v_i, finite differences of the
denoiser, a Monte Carlo of the shrinkage, and the limits of the MMSE."""

import functools
import math

import numpy as np
import pytest

from aimlib import prior
from aimlib.prior import rectangular as rect
from aimlib.prior.verification import check_prior

CASES = [(0.2, 0.05), (0.5, 0.5), (1.0, 0.01), (2.0, 1.0)]


def _draw(pr, d, delta, rng):
    S = pr.matrix(pr.sample(d, rng))
    return S, S + math.sqrt(delta) * pr.noise(d, rng)


@functools.cache
def _legendre(n):
    return np.polynomial.legendre.leggauss(n)


def _integral(pr, delta, f, n=800):
    """``int f mu`` by Gauss-Legendre in the angle over each support interval (not the module's
    tanh-sinh rule)."""
    t, w = _legendre(n)
    t, w = 0.5 * math.pi * (t + 1.0), 0.5 * math.pi * w
    total = 0.0
    for a, b in pr.support(delta):
        x = a + 0.5 * (b - a) * (1.0 - np.cos(t))
        total += float(np.sum(w * 0.5 * (b - a) * np.sin(t) * f(x) * pr.density(x, delta)))
    return total


@pytest.mark.parametrize("rho, delta", CASES)
def test_density_moments_are_the_free_ones(rho, delta):
    """Mass 1, second moment 1 + Delta and fourth moment 1/rho + 2 (1 + Delta)^2: free cumulants
    of the symmetrised singular values add, and kappa_4 of K Q^T / sqrt(r d) is 1/rho (from the
    product of two free Marchenko-Pastur laws)."""
    pr = prior.make_prior("untied", rho)
    m0, m2, m4 = (_integral(pr, delta, lambda x, k=k: x**k) for k in (0, 2, 4))
    assert m0 == pytest.approx(1.0, abs=1e-7)
    assert m2 == pytest.approx(1.0 + delta, rel=1e-7)
    assert m4 == pytest.approx(1.0 / rho + 2.0 * (1.0 + delta) ** 2, rel=1e-6)


@pytest.mark.parametrize("rho, delta", [(0.2, 0.05), (2.0, 1.0)])
def test_density_is_that_of_sampled_singular_values(rho, delta):
    """The moments and the fraction of singular values below the density's median against two
    sampled matrices at d = 1000 (a support in three pieces, and a full-rank teacher), within
    five standard errors of the samples plus O(1/d)."""
    pr = prior.make_prior("untied", rho)
    rng = np.random.default_rng(7)
    d = 1000
    svs = [np.linalg.svd(_draw(pr, d, delta, rng)[1], compute_uv=False) for _ in range(2)]
    for k in (2, 4):
        exact = _integral(pr, delta, lambda x, k=k: x**k)
        per = [float(np.mean(s**k)) for s in svs]
        # a sampled moment fluctuates by O(1/d) (a linear statistic of the spectrum)
        assert abs(np.mean(per) - exact) <= 5 * np.std(per) + 10 * exact / d, (k, per, exact)
    # the distribution itself: sigma_half, where the density's mass on [-sigma_half, sigma_half]
    # is one half, splits the sampled singular values in two halves
    lo, hi = 0.0, float(pr.support(delta)[-1, 1])
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        mass = _integral(pr, delta, lambda x, m=mid: (np.abs(x) <= m).astype(float))
        lo, hi = (mid, hi) if mass < 0.5 else (lo, mid)
    frac = [float(np.mean(s <= lo)) for s in svs]
    assert np.mean(frac) == pytest.approx(0.5, abs=5 * np.std(frac) + 5.0 / d)


@pytest.mark.parametrize("rho, delta", [(0.5, 0.5), (2.0, 0.2)])
def test_shrinkage_is_the_oracle_overlap_on_average(rho, delta):
    """The Bayes denoiser keeps the singular vectors of Y and puts xi(sigma_i) = E[u_i^T S* v_i]
    on each: binned by sigma over 400 singular values, the oracle overlaps average to xi within
    five standard errors (and a 0.02 allowance for the bin's finite width and O(1/d) terms)."""
    pr = prior.make_prior("untied", rho)
    rng = np.random.default_rng(3)
    S, Y = _draw(pr, 400, delta, rng)
    U, s, Vt = np.linalg.svd(Y)
    oracle = np.einsum("ij,ij->j", U, S @ Vt.T)
    xi = pr.shrink(s, delta)
    for idx in np.array_split(np.argsort(s), 10):
        gap = np.mean(oracle[idx]) - np.mean(xi[idx])
        se = np.std(oracle[idx] - xi[idx], ddof=1) / math.sqrt(len(idx))
        assert abs(gap) <= 5 * se + 0.02, (s[idx].mean(), gap, se)


@pytest.mark.parametrize("rho", [0.3, 1.0, 2.0])
def test_mmse_is_the_monte_carlo_of_the_shrinkage(rho):
    """The library's four identities (density, MMSE formula, Tweedie's shrinkage, Monte Carlo of
    the denoiser at d = 200) at a small and a large noise."""
    for c in check_prior(prior.make_prior("untied", rho), deltas=(0.05, 2.0), samples=4):
        assert c.ok, c


@pytest.mark.parametrize("rho", [0.3, 0.7, 1.0, 2.5])
def test_mmse_limits(rho):
    """MMSE / Delta -> 2 rho - rho^2 (rho <= 1) or 1 as Delta -> 0 (the free parameters of a
    rank-r d x d matrix); MMSE -> 1 as Delta -> inf, with Delta (1 - mmse) =
    1 - 1/Delta + (1 + 1/rho^2)/Delta^2 + O(Delta^-3), the quadrature agreeing with the series
    to the O(Delta^-3) term (whose coefficient stays below 60 here) below the switch."""
    pr = prior.make_prior("untied", rho)
    slope = 2 * rho - rho**2 if rho <= 1 else 1.0
    assert pr.mmse_slope() == slope
    assert pr.mmse(1e-6) / 1e-6 == pytest.approx(slope, rel=2e-4)
    assert pr.mmse(0.0) == 0.0 and pr.mmse(math.inf) == 1.0
    for delta in (100.0, 300.0, 1000.0):
        x = 1.0 / delta
        quad = delta * (1.0 - rect._mmse_quadrature(delta, rho))
        assert quad == pytest.approx(1 - x + (1 + rho**-2) * x * x, abs=60 * x**3)
    big = rect.LARGE_DELTA * max(1.0, 1.0 / rho)
    # quadrature and series meet at the switch (the quadrature's cancellation, Delta^2 times
    # its relative error of about 1e-13, and the series' O(Delta^-4) are both below 1e-9 there)
    assert rect._mmse_quadrature(big, rho) == pytest.approx(pr.mmse(big), abs=2e-9)
    ms = pr.mmse(np.geomspace(1e-3, 1e6, 40))
    assert np.all(np.diff(ms) > 0)


def test_wide_teacher_tends_to_the_gaussian_matrix():
    """As rho -> inf, K Q^T / sqrt(r d) tends to a matrix of i.i.d. N(0, 1/d) entries, whose
    MMSE in Gaussian noise is Delta / (1 + Delta); the difference is O(1/rho)."""
    pr = prior.make_prior("untied", 400.0)
    for delta in (0.1, 1.0, 5.0):
        assert pr.mmse(delta) == pytest.approx(delta / (1 + delta), abs=2.0 / 400)


def test_divergence_is_the_denoisers():
    """sum_ij dF_ij/dY_ij of F = denoise, by central differences over all d^2 entries at d = 10,
    against the singular-value formula (with xi' from the prior's slopes)."""
    pr = prior.make_prior("untied", 0.5)
    delta, d = 0.7, 10
    _, Y = _draw(pr, d, delta, np.random.default_rng(1))
    eps, fd = 1e-6, 0.0
    for i in range(d):
        for j in range(d):
            E = np.zeros((d, d))
            E[i, j] = eps
            fd += (pr.denoise(Y + E, delta)[i, j] - pr.denoise(Y - E, delta)[i, j]) / (2 * eps)
    s = np.linalg.svd(Y, compute_uv=False)
    xi, dxi = pr.shrink_slopes(s, delta)
    assert rect.divergence(s, xi, dxi) == pytest.approx(fd, rel=1e-5)


def test_untied_prior_api_and_bad_input():
    """Reachable by name from aimlib.prior; its teacher has (1/d)||S*||^2 near 1 and mean 0; the
    self-attention SE refuses it with the key named (untied self-attention has bounds, not an
    SE), and rho <= 0 or Delta < 0 are refused."""
    assert prior.mmse(0.3, 0.5, prior="untied") == rect.mmse(0.3, 0.5)
    assert prior.mmse(0.3, 0.5, prior="untied") != prior.mmse(0.3, 0.5)
    pr = prior.make_prior("untied", 0.5)
    S = pr.matrix(pr.sample(400, np.random.default_rng(0)))
    assert np.sum(S * S) / 400 == pytest.approx(1.0, abs=0.05)
    assert pr.second_moment == 1.0 and pr.mean_overlap == 0.0 and not pr.SYMMETRIC
    with pytest.raises(ValueError, match="rho"):
        prior.make_prior("untied", 0.0)
    with pytest.raises(ValueError, match="delta"):
        pr.mmse(-1.0)
    from aimlib import state_evolution
    with pytest.raises(ValueError, match="prior='untied'"):
        state_evolution.solve("softmax", 0.1, 0.5, T=2, prior="untied", beta=1.0)
