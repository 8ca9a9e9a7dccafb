"""The conjectured gradient-flow threshold (aimlib.theory.gradient_flow) against its limits and
against a numerical integration of the semicircle law that shares none of its closed forms."""

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq

from aimlib.channels import make_channel
from aimlib.prior import make_prior
from aimlib.theory import gradient_flow as gf


def _density(x):
    return math.sqrt(max(4.0 - x * x, 0.0)) / (2.0 * math.pi)


def _quad_threshold(ks, k):
    """The statement of docs/theory.md §16 by quadrature (no closed form)."""
    def tail(w):
        return quad(_density, w, 2.0, epsabs=1e-13, epsrel=1e-13)[0]

    target = (k - ks) / (1.0 - ks)
    w = 2.0 if target == 0 else (-2.0 if target == 1 else
                                 brentq(lambda v: tail(v) - target, -2.0, 2.0, xtol=1e-14))
    second = quad(lambda x: x * x * _density(x), max(0.0, w), 2.0, epsabs=1e-13,
                  epsrel=1e-13)[0]
    return min(k - k * k / 2.0, ks - ks * ks / 2.0 + (1.0 - ks) ** 2 / 2.0 * second)


@pytest.mark.parametrize("w", [-2.0, -1.3, 0.0, 0.7, 1.9, 2.0])
def test_semicircle_closed_forms_against_quadrature(w):
    assert gf.semicircle_tail(w) == pytest.approx(quad(_density, w, 2.0)[0], abs=1e-12)
    assert gf.semicircle_tail_second_moment(w) == pytest.approx(
        quad(lambda x: x * x * _density(x), w, 2.0)[0], abs=1e-12)
    if -2.0 < w < 2.0:
        assert gf.semicircle_quantile(gf.semicircle_tail(w)) == pytest.approx(w, abs=1e-10)


@pytest.mark.parametrize("ks", [0.05, 0.2, 0.5, 0.8])
def test_limits(ks):
    bayes = ks - ks * ks / 2.0
    # the student as wide as the teacher: the Bayes-optimal threshold
    assert gf.threshold(ks, ks) == pytest.approx(bayes, abs=1e-15)
    # the full-width student: the nuclear-norm threshold, half the semicircle's second moment
    full = bayes + (1.0 - ks) ** 2 / 4.0
    assert gf.threshold(ks, 1.0) == pytest.approx(min(0.5, full), abs=1e-14)
    # saturation once (kappa - kappa*) / (1 - kappa*) >= 1/2: w <= 0
    k_sat = ks + (1.0 - ks) / 2.0
    assert gf.intermediate(ks, k_sat) == pytest.approx(full, abs=1e-12)
    assert gf.intermediate(ks, (k_sat + 1.0) / 2.0) == pytest.approx(full, abs=1e-14)


def test_the_bayes_threshold_is_the_gaussian_channels():
    """kappa* = rho: the SE's own noiseless Gaussian threshold f / (T (T + 1)) at T = 1, 2, 3,
    and the T-token conjecture's kappa = kappa* end is it."""
    for rho in (0.2, 0.5):
        for T in (1, 2, 3):
            ch = make_channel("gaussian", T=T, delta=0.0)
            assert gf.bayes_threshold(rho, T) == pytest.approx(
                ch.perfect_recovery_threshold(make_prior("tied", rho)), rel=1e-14)
            assert gf.threshold_tokens(rho, rho, T) == pytest.approx(gf.bayes_threshold(rho, T))


@pytest.mark.parametrize("ks,k", [(0.2, 0.2), (0.2, 0.3), (0.2, 0.5), (0.2, 0.75), (0.2, 1.0),
                                  (0.5, 0.6), (0.05, 0.1), (0.9, 0.95)])
def test_threshold_against_quadrature(ks, k):
    assert gf.threshold(ks, k) == pytest.approx(_quad_threshold(ks, k), abs=1e-10)
    assert gf.threshold_tokens(ks, k, 3) == pytest.approx(_quad_threshold(ks, k) / 6, abs=1e-10)


def test_threshold_grows_with_width_and_bad_input_is_named():
    ks = 0.2
    vals = [gf.threshold(ks, k) for k in np.linspace(ks, 1.0, 41)]
    assert np.all(np.diff(vals) >= -1e-15) and vals[-1] > vals[0]
    with pytest.raises(ValueError, match="kappa must be in"):
        gf.threshold(0.2, 0.1)
    with pytest.raises(ValueError, match="kappa_star must be in"):
        gf.threshold(0.0, 0.5)
    with pytest.raises(ValueError, match="T must be an integer"):
        gf.threshold_tokens(0.2, 0.5, 0)
