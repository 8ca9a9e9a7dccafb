"""Cross-attention state evolution (aimlib.theory.cross_attention, docs/theory.md §15.2): the row
output functions of every channel against Monte Carlo, Nishimori and finite differences; the
hardmax row integrals against an adaptive quadrature and their limits; the softmax and noiseless
Gaussian perfect-recovery thresholds against counting and the fixed point itself; bad input."""

import math

import numpy as np
import pytest
from scipy import integrate, special

from aimlib.channels import CHANNELS, make_channel
from aimlib.channels.hardmax import cross_row
from aimlib.channels.identities import check_rows
from aimlib.prior import make_prior
from aimlib.theory import cross_attention as cross


def _channel(name, T_k):
    params = {"delta": 0.3} if name == "gaussian" else {}
    return make_channel(name, T=T_k, **params)


@pytest.mark.parametrize("name", list(CHANNELS))
@pytest.mark.parametrize("T_k", [2, 3])
def test_row_identities_of_every_channel(name, T_k):
    """Monte Carlo of sum g^2 = row_information, Nishimori, g = grad log Z, at an informative
    and a nearly uninformative point."""
    ch = _channel(name, T_k)
    for q, V in ((0.8, 0.6), (0.05, 1.0)):
        for c in check_rows(ch, T_k, np.random.default_rng(T_k), q=q, V=V, n=20000):
            assert c.ok, c


@pytest.mark.parametrize("s", [1e-4, 0.3, 10.0, 1e4])
def test_hardmax_row_integral_against_adaptive_quadrature(s):
    """K_2(s) = 2 E_{N(0, s)}[phi^2 / Phi] by scipy's adaptive quadrature to 1e-12; K_3 by the
    same rule with half the step (the sinh-trapezoid converges double-exponentially)."""
    def f(k):
        return 2 * math.exp(-k * k - math.log(2 * math.pi) - special.log_ndtr(k)
                            - k * k / (2 * s)) / math.sqrt(2 * math.pi * s)
    ref = integrate.quad(f, -np.inf, np.inf, epsabs=1e-15, epsrel=1e-12, limit=500)[0]
    assert cross_row.K(2, s) == pytest.approx(ref, rel=1e-11)
    k3 = cross_row.K(3, s)
    old = cross_row.STEP
    try:
        cross_row.STEP = old / 2
        assert cross_row.K(3, s) == pytest.approx(k3, rel=1e-12)
    finally:
        cross_row.STEP = old


def test_hardmax_row_integral_limits():
    """At s = 0 every comparison sits at 0: K_2 = 2 phi(0)^2 / Phi(0) = 2/pi and
    K_3 = 9 (phi(0)/2)^2 / (1/3) = 27 / (8 pi); the rule tends to both as s -> 0; as s -> inf,
    K sqrt(s) tends to a constant (the strips' mass), equal at s = 1e4 and 1e5 to 1e-3."""
    assert cross_row.K(2, 0.0) == 2 / math.pi and cross_row.K(3, 0.0) == 27 / (8 * math.pi)
    assert cross_row.K(2, 1e-8) == pytest.approx(2 / math.pi, rel=1e-7)
    assert cross_row.K(3, 1e-8) == pytest.approx(27 / (8 * math.pi), rel=1e-7)
    for T_k in (2, 3):
        a, b = (cross_row.K(T_k, s) * math.sqrt(s) for s in (1e4, 1e5))
        assert a == pytest.approx(b, rel=1e-3)


@pytest.mark.parametrize("prior", ["untied", "tied"])
@pytest.mark.parametrize("T_q, T_k", [(2, 2), (3, 3), (1, 4)])
def test_softmax_threshold_is_counting_and_the_fixed_points(prior, T_q, T_k):
    """The SE threshold (the prior's MMSE slope over w T_q (T_k - 1)) equals the count of the
    labels' combinations against the teacher's parameters, and the fixed point is 0 just above it
    and positive just below."""
    for rho in (0.3, 0.5, 1.5):
        th = cross.perfect_recovery_threshold("softmax", rho, T_q=T_q, T_k=T_k, prior=prior)
        assert th == pytest.approx(cross.counting_threshold(rho, T_q=T_q, T_k=T_k, prior=prior),
                                   rel=1e-14)
    th = cross.perfect_recovery_threshold("softmax", 0.5, T_q=T_q, T_k=T_k, prior=prior)
    above = cross.solve("softmax", th * 1.02, 0.5, T_q=T_q, T_k=T_k, prior=prior)
    below = cross.solve("softmax", th * 0.98, 0.5, T_q=T_q, T_k=T_k, prior=prior)
    # 0 to the solver's tolerance above, and well away from 0 below
    assert above.error == pytest.approx(0.0, abs=1e-9) and below.error > 1e-3 and below.converged
    # below, the fixed point of V = mmse(V / c), c = w alpha T_q (T_k - 1), of the prior's MMSE
    pr = make_prior(prior, 0.5)
    c = cross.weight(pr) * th * 0.98 * T_q * (T_k - 1)
    assert below.error == pytest.approx(pr.mmse(below.error / c), abs=1e-9)


def test_untied_needs_twice_the_samples_of_tied_in_cross_attention():
    """Every cell's softmax threshold: untied over tied is 2 in cross-attention (twice the free
    parameters, the same information per label)."""
    for T in (2, 3, 5):
        u = cross.perfect_recovery_threshold("softmax", 0.5, T_q=T, T_k=T, prior="untied")
        t = cross.perfect_recovery_threshold("softmax", 0.5, T_q=T, T_k=T, prior="tied")
        assert u / t == pytest.approx(2.0, rel=1e-14)


def test_gaussian_fixed_point_in_closed_form():
    """Untied prior, Gaussian labels: q_hat = alpha T_q T_k / (V + Delta), so at the fixed point
    V = mmse((V + Delta) / (alpha T_q T_k)) with the rectangular MMSE; the noiseless threshold
    is (2 rho - rho^2) / (T_q T_k)."""
    pr = make_prior("untied", 0.5)
    res = cross.solve("gaussian", 0.1, 0.5, T_q=2, T_k=3, prior="untied", delta=0.2)
    V = res.error
    assert V == pytest.approx(pr.mmse((V + 0.2) / (0.1 * 6)), abs=1e-9)
    assert cross.perfect_recovery_threshold("gaussian", 0.5, T_q=2, T_k=3, prior="untied",
                                            delta=0.0) == pytest.approx(0.75 / 6)
    assert cross.perfect_recovery_threshold("gaussian", 0.5, T_q=2, T_k=3, prior="untied",
                                            delta=0.2) is None


@pytest.mark.parametrize("prior", ["untied", "tied"])
def test_hardmax_error_decreases_and_the_two_starts_agree(prior):
    """Hardmax never reaches 0; its error falls with alpha, from the prior's variance, and the
    uninformed and informed starts meet (no first-order transition at T = 2 and 3)."""
    for T in (2, 3):
        errs = []
        for alpha in (0.05, 0.2, 0.8):
            r = cross.solve("hardmax", alpha, 0.5, T_q=T, T_k=T, prior=prior)
            assert r.converged and r.converged_informed
            assert r.error == pytest.approx(r.error_informed, abs=1e-7)
            errs.append(r.error)
        assert 1.0 > errs[0] > errs[1] > errs[2] > 0


def test_bad_input_names_the_key():
    with pytest.raises(ValueError, match="T_q"):
        cross.solve("softmax", 0.1, 0.5, T_q=0, T_k=2)
    with pytest.raises(ValueError, match="T_k"):
        cross.solve("softmax", 0.1, 0.5, T_q=2, T_k=1)
    with pytest.raises(ValueError, match="T_k"):
        cross.solve("hardmax", 0.1, 0.5, T_q=2, T_k=4)
    with pytest.raises(ValueError, match="rho"):
        cross.solve("softmax", 0.1, 0.0, T_q=2, T_k=2)
    with pytest.raises(ValueError, match="prior"):
        cross.solve("softmax", 0.1, 0.5, T_q=2, T_k=2, prior="wide")
    with pytest.raises(ValueError, match="variant"):
        cross.solve(make_channel("hardmax", T=2, variant="density"), 0.1, 0.5, T_q=2, T_k=2)
