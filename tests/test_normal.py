"""Log-space Gaussian functions against scipy and an independent 1-D quadrature."""

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import log_ndtr as scipy_log_ndtr
from scipy.stats import multivariate_normal

from aimlib.core.normal import bvn_cdf, log_bvn_cdf, log_ndtr


def test_log_ndtr_matches_scipy():
    x = np.concatenate([np.linspace(-80, 40, 4001), [-37.0, -36.999, 0.0, 5.0]])
    ref = scipy_log_ndtr(x)
    assert np.allclose(log_ndtr(x), ref, rtol=5e-13, atol=1e-290)


def _log_bvn_ref(h, k, r):
    """log Phi_2 by integrating phi(x) Phi((k - r x)/s) over x < min(h, k) in log space."""
    if h > k:
        h, k = k, h
    s = np.sqrt(1 - r * r)

    def f(x):
        return -0.5 * x * x - 0.5 * np.log(2 * np.pi) + scipy_log_ndtr((k - r * x) / s)

    xs = np.linspace(min(h, -40.0) - 5, h, 20001)
    fx = f(xs)
    m, xm = fx.max(), xs[np.argmax(fx)]
    val = sum(quad(lambda x: np.exp(f(x) - m), lo, hi, limit=500, epsabs=0, epsrel=1e-13)[0]
              for lo, hi in ((-np.inf, xm), (xm, h)))
    return m + np.log(val)


@pytest.mark.parametrize("r", [1 / 3, -1 / 3, 0.7, -0.7])
def test_log_bvn_tails(r):
    vals = [-200.0, -25.0, -6.0, -1.0, -1e-3, 0.0, 0.7, 4.0, 30.0]
    for h in vals:
        for k in vals:
            ref = _log_bvn_ref(h, k, r)
            got = log_bvn_cdf(h, k, r)
            # relative error of Phi_2 itself (the log is large in the tails)
            assert abs(np.expm1(got - ref)) < 1e-10 + 1e-15 * abs(ref), (h, k, r, got, ref)


def test_bvn_matches_scipy_bulk():
    rng = np.random.default_rng(0)
    hk = rng.normal(size=(40, 2)) * 1.5
    for r in (1 / 3, -1 / 3, 0.5):
        mvn = multivariate_normal(mean=[0, 0], cov=[[1, r], [r, 1]])
        ref = np.array([mvn.cdf(p) for p in hk])
        assert np.allclose(bvn_cdf(hk[:, 0], hk[:, 1], r), ref, atol=2e-7)


def test_bvn_symmetric_and_closed_forms():
    assert bvn_cdf(0.0, 0.0, 1 / 3) == pytest.approx(0.25 + np.arcsin(1 / 3) / (2 * np.pi),
                                                     rel=1e-14)
    assert bvn_cdf(0.0, 0.0, -1 / 3) == pytest.approx(0.25 - np.arcsin(1 / 3) / (2 * np.pi),
                                                      rel=1e-14)
    assert log_bvn_cdf(-3.0, 2.0, 0.4) == log_bvn_cdf(2.0, -3.0, 0.4)
    # r = 0 factorises
    assert log_bvn_cdf(-2.0, 1.0, 0.0) == pytest.approx(log_ndtr(-2.0) + log_ndtr(1.0))
