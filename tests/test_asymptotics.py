"""Asymptotic laws of the Bayes-optimal error against the state evolution they come from, and
the derivation's intermediate limits checked on their own."""

import math

import numpy as np
import pytest

from aimlib import channels, prior
from aimlib import state_evolution as se
from aimlib.theory import asymptotics as asym

RHOS = (0.1, 0.5, 2.0)


def test_strip_constant_by_independent_quadrature():
    """J on a plain trapezoid grid (not scipy's adaptive rule): agree to 1e-10."""
    from scipy import special

    k = np.linspace(-40, 40, 800_001)
    f = np.exp(-k * k - np.log(2 * np.pi) - special.log_ndtr(k) - special.log_ndtr(-k))
    assert asym.strip_constant() == pytest.approx(np.trapezoid(f, k), rel=1e-10)


@pytest.mark.parametrize("rho", RHOS)
def test_channel_sum_times_sqrt_v_tends_to_the_strip_constant(rho):
    """sqrt(V) E[sum w g^2] at q = Q0 - V -> J sqrt(2 / (pi Q0)), with an O(sqrt V) approach:
    the distance shrinks by sqrt(10) per decade of V and is below 1e-6 at V = 1e-10 (this
    test found the SE quadrature's truncation at q/V > 1e8, now covered by a wider grid)."""
    Q0 = 1.0 + rho
    K = asym.hardmax_channel_limit(Q0)
    gaps = [abs(math.sqrt(V) * channels.hardmax_second_moment(Q0 - V, V) / K - 1)
            for V in (1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10)]
    assert gaps[-1] < 1e-6
    ratios = np.array(gaps[:-1]) / np.array(gaps[1:])
    np.testing.assert_allclose(ratios, math.sqrt(10), rtol=0.05)


@pytest.mark.parametrize("rho", RHOS)
def test_density_channel_sum_tends_to_a_constant(rho):
    Q0 = 1.0 + rho
    lim = asym.hardmax_channel_limit(Q0, "density")
    for V, tol in ((1e-4, 1e-4), (1e-6, 1e-6), (1e-8, 1e-8)):
        val = channels.hardmax_second_moment(Q0 - V, V, density=True)
        assert val == pytest.approx(lim, rel=tol)


@pytest.mark.parametrize("rho", [0.1, 0.3, 0.5, 0.7, 2.0, 3.0])
def test_mmse_slope_and_curvature(rho):
    """mmse(Delta)/Delta -> f(rho) and (f Delta - mmse)/Delta^2 -> c2(rho) (Richardson in
    Delta, whose next correction is O(Delta))."""
    f = asym.mmse_slope(rho)
    assert prior.mmse(1e-7, rho) / 1e-7 == pytest.approx(f, rel=1e-5)
    c = [(f - prior.mmse(d, rho) / d) / d for d in (1e-4, 1e-5)]
    assert c[1] + (c[1] - c[0]) / 9 == pytest.approx(asym.mmse_curvature(rho), rel=1e-5)


@pytest.mark.parametrize("rho", RHOS)
def test_hardmax_exact_se_follows_alpha_minus_two(rho):
    """SE (tol 1e-14) against E ~ prefactor alpha^-2: the relative difference falls with alpha
    (0.2 % to 20 % at alpha = 2 depending on rho) to below 2e-4 at alpha = 200, and the fitted
    log-log slope over alpha = 50..200 is -2 to 1e-3."""
    law = asym.large_alpha("hardmax", rho)
    alphas = np.array([2.0, 10.0, 50.0, 200.0])
    errs = np.array([se.solve("hardmax", a, rho, tol=1e-14).error for a in alphas])
    rel = np.abs(errs / law.error(alphas) - 1)
    assert rel[-1] < 2e-4 and rel[-1] < rel[0] / 10
    slope = np.polyfit(np.log(alphas[2:]), np.log(errs[2:]), 1)[0]
    assert slope == pytest.approx(-2.0, abs=1e-3)


@pytest.mark.parametrize("rho", RHOS)
def test_hardmax_density_se_follows_one_over_alpha(rho):
    """The published density curve decays as 1/alpha: relative difference O(1/alpha), falling
    by about 2 per doubling, below 1 % at alpha = 1000."""
    law = asym.large_alpha("hardmax", rho, variant="density")
    alphas = np.array([50.0, 100.0, 200.0, 1000.0])
    errs = np.array([se.solve("hardmax", a, rho, variant="density", tol=1e-14).error
                     for a in alphas])
    rel = np.abs(errs / law.error(alphas) - 1)
    assert np.all(np.diff(rel) < 0) and rel[-1] < 0.01
    slope = np.polyfit(np.log(alphas[-2:]), np.log(errs[-2:]), 1)[0]
    assert slope == pytest.approx(-1.0, abs=0.01)


@pytest.mark.parametrize("rho", [0.3, 0.5, 1.0, 2.0])
def test_softmax_approach_to_perfect_recovery(rho):
    """SE just below alpha_bar_c against the law: relative difference falls with the distance
    and is below 1 % at 1e-4 below the threshold (rho = 1: exponent 3/2, prefactor 2/3)."""
    law = asym.near_perfect_recovery(rho)
    eps = np.array([1e-2, 1e-3, 1e-4])
    alphas = (law.alpha_bar_c - eps) / 4.0
    errs = np.array([se.solve("softmax", a, rho, tol=1e-14).error for a in alphas])
    rel = np.abs(errs / law.error(alphas) - 1)
    assert np.all(np.diff(rel) < 0) and rel[-1] < 0.01
    assert law.error(law.alpha_bar_c / 4.0 * 1.1) == 0.0


@pytest.mark.parametrize("kw,match", [
    (dict(channel="hardmax", rho=0.5, T=5), "T"),
    (dict(channel="hardmax", rho=0.5, variant="bogus"), "variant"),
    (dict(channel="softmax", rho=0.5, variant="density"), "variant"),
    (dict(channel="relu", rho=0.5), "channel"),
    (dict(channel="hardmax", rho=-1.0), "rho"),
])
def test_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        asym.large_alpha(**kw)
