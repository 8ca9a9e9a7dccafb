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


# ------------------------------------------------------------------ channel objects passed down
def test_a_channel_object_passes_through_and_disagreement_is_named():
    ch = make_channel("softmax", T=3, beta=2.0)
    assert make_channel(ch) is ch and make_channel(ch, T=3, beta=2.0) is ch
    # another channel's parameter at its default is accepted and ignored, as for a name
    assert make_channel(make_channel("hardmax"), beta=1.0) == Hardmax(T=2)
    with pytest.raises(ValueError, match=r"T=4 disagrees with the softmax channel given \(T=3\)"):
        make_channel(ch, T=4)
    with pytest.raises(ValueError, match=r"beta=1.0 disagrees .*\(beta=2.0\)"):
        make_channel(ch, beta=1.0)
    assert channels.channel_class(ch) is Softmax


def test_library_calls_take_the_object_and_give_what_the_name_gives():
    """generate, solve, one_step and the test error with a channel object: bitwise what the
    name and its parameters give."""
    from aimlib import model
    from aimlib.theory import state_evolution as se

    ch = make_channel("softmax", T=3, beta=2.0)
    a = model.generate(ch, 0.2, 0.5, None, 20, 1)
    b = model.generate("softmax", 0.2, 0.5, 3, 20, 1, beta=2.0)
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.W, b.W)
    assert (a.T, a.param) == (3, 2.0)
    assert se.solve(ch, 0.05, 0.5) == se.solve("softmax", 0.05, 0.5, T=3, beta=2.0)
    hm = make_channel("hardmax", variant="density")
    assert se.one_step(hm, 0.4, 0.5) == se.one_step("hardmax", 0.4, 0.5, variant="density")
    two = make_channel("softmax", T=2, beta=2.0)
    assert se.test_error(two, 0.1, 0.5) == se.test_error("softmax", 0.1, 0.5, 2, beta=2.0)


@pytest.mark.parametrize("kw", [dict(channel="softmax", T=3, beta=2.0),
                                dict(channel="hardmax", T=2, variant="density"),
                                dict(channel="gaussian", T=1, delta=0.1)])
def test_channel_from_a_results_attributes(kw):
    """An SE curve's attributes name its channel exactly (hardmax: no beta among them)."""
    from aimlib.theory import state_evolution as se

    ch = make_channel(**kw)
    ds = se.curve(ch, [0.1, 0.2], 0.5)
    assert channels.channel_from_attrs(ds.attrs) == ch
    assert ("beta" in ds.attrs) == (kw["channel"] == "softmax")


def test_file_names_carry_only_the_parameters_a_channel_has():
    from aimlib.pipeline import config as cfg
    from aimlib.pipeline.paths import SE_PATH

    conf = {"seed": 0, "experiments": {"x": {
        "channel": ["softmax", "hardmax"], "rho": 0.5, "T": 2,
        "se": {"alpha": {"values": [0.1]}}},
        "y": {"channel": "hardmax", "rho": 0.5, "T": 2, "tokens": "rademacher",
              "se": {"alpha": {"values": [0.1]}}}}}
    names = sorted(SE_PATH.format(**j.wildcards) for j in cfg.plan(conf).se_jobs)
    assert names == ["data/se/x/hardmax_T2_rho0.5_exact.nc",
                     "data/se/x/softmax_T2_beta1.0_rho0.5_exact.nc",
                     "data/se/y/hardmax_T2-rademacher_rho0.5_exact.nc"]
