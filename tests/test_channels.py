"""Output channels: hardmax g_out against finite differences, Nishimori, Monte Carlo."""

import math

import numpy as np
import pytest

from aimlib import channels
from aimlib.channels import Hardmax, Softmax, hardmax_second_moment, make_channel
from aimlib.model import hardmax_output, one_hot


def _random_omega(rng, n, q):
    """omega_ab ~ N(0, w_ab q) as symmetric (n, 2, 2) arrays."""
    om = np.empty((n, 2, 2))
    om[:, 0, 0] = rng.normal(size=n) * math.sqrt(2 * q)
    om[:, 1, 1] = rng.normal(size=n) * math.sqrt(2 * q)
    om[:, 0, 1] = om[:, 1, 0] = rng.normal(size=n) * math.sqrt(q)
    return om


def _sample_y(rng, om, V):
    n = om.shape[0]
    h = om.copy()
    h[:, 0, 0] += rng.normal(size=n) * math.sqrt(2 * V)
    h[:, 1, 1] += rng.normal(size=n) * math.sqrt(2 * V)
    off = rng.normal(size=n) * math.sqrt(V)
    h[:, 0, 1] += off
    h[:, 1, 0] += off
    return one_hot(hardmax_output(h), 2)


@pytest.mark.parametrize("V", [1.0, 0.05, 1e-3])
def test_hardmax_gout_is_gradient_of_log_z(V):
    rng = np.random.default_rng(3)
    ch = Hardmax()
    om = _random_omega(rng, 200, 1.0)
    y = _sample_y(rng, om, V)
    g = ch.g_out(y, om, V)
    eps = 1e-5 * math.sqrt(V)
    for a, b in [(0, 0), (0, 1), (1, 1)]:
        d = np.zeros((1, 2, 2))
        d[0, a, b] = d[0, b, a] = eps  # one pair variable omega_ab
        fd = (ch.log_z_out(y, om + d, V) - ch.log_z_out(y, om - d, V)) / (2 * eps)
        np.testing.assert_allclose(g[:, a, b], fd, rtol=1e-6, atol=1e-6 / math.sqrt(V))


def test_hardmax_gout_sum_rule():
    rng = np.random.default_rng(4)
    om = _random_omega(rng, 50, 0.7)
    g = Hardmax().g_out(_sample_y(rng, om, 0.3), om, 0.3)
    np.testing.assert_allclose(g[:, 0, 1], -(g[:, 0, 0] + g[:, 1, 1]), rtol=1e-14)


@pytest.mark.parametrize("q,V", [(0.5, 1.0), (1.2, 0.3), (1.45, 0.05)])
def test_nishimori_and_quadrature_by_monte_carlo(q, V):
    """E[g_ab^2] = -E[d g_ab / d omega_ab] (Nishimori), and E[sum w g^2] matches the quadrature."""
    rng = np.random.default_rng(11)
    n = 400_000
    ch = Hardmax()
    om = _random_omega(rng, n, q)
    y = _sample_y(rng, om, V)
    g = ch.g_out(y, om, V)
    eps = 1e-5 * math.sqrt(V)
    for a, b in [(0, 0), (0, 1), (1, 1)]:
        d = np.zeros((1, 2, 2))
        d[0, a, b] = d[0, b, a] = eps
        dg = (ch.g_out(y, om + d, V)[:, a, b] - ch.g_out(y, om - d, V)[:, a, b]) / (2 * eps)
        lhs, rhs = g[:, a, b] ** 2, -dg
        se = math.sqrt((np.var(lhs) + np.var(rhs)) / n)
        assert abs(lhs.mean() - rhs.mean()) < 5 * se
    total = 2 * g[:, 0, 0] ** 2 + g[:, 0, 1] ** 2 + 2 * g[:, 1, 1] ** 2
    se = total.std() / math.sqrt(n)
    assert abs(total.mean() - hardmax_second_moment(q, V)) < 5 * se


@pytest.mark.parametrize("q,V", [(0.3, 1.0), (1.2, 0.3), (1.4999, 1e-4), (0.05, 1.0),
                                 (0.002, 0.99), (1e-4, 1.0)])
def test_hardmax_quadrature_step_halving(q, V):
    coarse = hardmax_second_moment(q, V)
    fine = hardmax_second_moment(q, V, step=channels.HARDMAX_STEP / 2)
    assert coarse == pytest.approx(fine, rel=1e-10)


def test_hardmax_second_moment_at_q0():
    """At q = 0 every kappa is 0: closed form from Phi_2(0, 0; +-1/3)."""
    n1 = 0.5 / math.sqrt(2 * math.pi)
    p_same = 0.25 + math.asin(1 / 3) / (2 * math.pi)
    p_diff = 0.25 - math.asin(1 / 3) / (2 * math.pi)
    closed = (2 * 8 * n1**2 / p_same + 2 * 4 * n1**2 / p_diff) / 3
    assert hardmax_second_moment(0.0, 1.0) == pytest.approx(closed, rel=1e-13)
    # continuity in q at q -> 0
    assert hardmax_second_moment(1e-9, 1.0) == pytest.approx(closed, rel=1e-6)


def test_softmax_q_hat_beta_free():
    a = Softmax(T=3, beta=0.5).q_hat(0.1, 0.7, 0.4)
    b = Softmax(T=3, beta=4.0).q_hat(0.1, 0.7, 0.4)
    assert a == b == pytest.approx(0.1 * 10 / 0.4)


@pytest.mark.parametrize("kw,match", [
    (dict(channel="hardmax", T=5), r"T must be an integer in \[2, 4\]"),
    (dict(channel="softmax", T=1), "T"),
    (dict(channel="softmax", T=2.5), "T"),
    (dict(channel="relu"), "channel"),
    (dict(channel="softmax", beta=0.0), "beta"),
    (dict(channel="hardmax", variant="wrong"), "variant"),
])
def test_bad_channels_rejected(kw, match):
    with pytest.raises(ValueError, match=match):
        make_channel(**kw)
