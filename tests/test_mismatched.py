"""State evolution of AMP with a non-Bayes output function (aimlib.theory.mismatched), and the GAMP
that it describes (amp.run with onsager="general")."""

import numpy as np
import pytest

from aimlib import amp, channels, model, prior, state_evolution
from aimlib.theory import mismatched

RHO = 0.5
Q0 = 1.0 + RHO


@pytest.mark.parametrize("q", [0.3, 0.9, 1.4])
def test_output_side_reduces_to_bayes_se_for_the_exact_g_out(q):
    """At m = Q = q, V = Q0 - q with the exact g_out: a_hat = q_hat = m_hat = the Bayes SE update
    (the Nishimori identity E[g^2] = -E[dg/domega] holds through the slopes' own formulas)."""
    alpha = 0.7
    ref = 2 * alpha * channels.hardmax_second_moment(q, Q0 - q)
    a, qh, mh = mismatched.output_update(alpha, q, q, Q0 - q, RHO, variant="exact")
    assert a == pytest.approx(ref, rel=1e-9)
    assert qh == pytest.approx(ref, rel=1e-9)
    assert mh == pytest.approx(ref, rel=1e-9)


def test_output_side_density_matches_published_second_moment_and_breaks_nishimori():
    m, Q, V, alpha = 0.9, 0.77, 0.41, 0.45
    # at m = Q and V = Q0 - Q, q_hat is the published (density) SE update
    _, qh, _ = mismatched.output_update(alpha, Q, Q, Q0 - Q, RHO, variant="density")
    assert qh == pytest.approx(2 * alpha * channels.hardmax_second_moment(Q, Q0 - Q,
                                                                          density=True), rel=1e-9)
    a, qh, mh = mismatched.output_update(alpha, m, Q, V, RHO, variant="density")
    assert abs(a / qh - 1) > 0.05 and abs(mh / qh - 1) > 0.05  # no Nishimori identity


def test_output_quadrature_converges_on_halving_the_step():
    args = (2.27, 1.09, 0.876, 0.118, RHO)
    coarse = mismatched.output_update(*args)
    fine = mismatched.output_update(*args, step=mismatched.STEP / 2)
    np.testing.assert_allclose(coarse, fine, rtol=1e-8)


@pytest.mark.parametrize("q_hat", [0.8, 5.0, 40.0])
def test_input_side_reduces_to_prior_mmse_when_matched(q_hat):
    """a_hat = q_hat = m_hat: m = Q (Nishimori) and V = Q0 - m = mmse(1/q_hat), the latter from
    the independent mu^3 formula of aimlib.prior."""
    m, Q, V = mismatched.input_update(q_hat, q_hat, q_hat, RHO)
    mmse = prior.mmse(1.0 / q_hat, RHO)
    assert m == pytest.approx(Q, rel=1e-9)
    assert Q0 - m == pytest.approx(mmse, rel=1e-7, abs=1e-10)
    assert V == pytest.approx(mmse, rel=5e-6, abs=1e-10)


@pytest.mark.parametrize("alpha", [0.4583, 2.0])
def test_mismatched_se_with_exact_g_out_is_bayes_se(alpha):
    r = mismatched.solve(alpha, RHO, variant="exact")
    assert r.converged
    assert r.error == pytest.approx(state_evolution.solve("hardmax", alpha, RHO).error, rel=1e-5)
    assert r.m == pytest.approx(r.Q, rel=1e-6)


def test_mismatched_se_of_the_density_g_out():
    """AMP with the published g_out reaches neither the Bayes error nor the published curve."""
    alpha = 0.44768968993243946
    r = mismatched.solve(alpha, RHO)
    assert r.converged
    exact = state_evolution.solve("hardmax", alpha, RHO).error
    published = state_evolution.solve("hardmax", alpha, RHO, variant="density").error
    assert exact < r.error < published
    assert r.error == pytest.approx(0.46861, abs=2e-4)  # this module, recorded
    assert r.error == pytest.approx(Q0 - 2 * r.m + r.Q)


@pytest.mark.parametrize("variant", ["exact", "density"])
def test_neg_divergence_is_minus_the_derivative_of_g_out(variant):
    """The analytic slopes against central finite differences of g_out in each pair coordinate."""
    ch = channels.make_channel("hardmax", variant=variant)
    data = model.generate("hardmax", 0.5, RHO, 2, 30, 0)
    y = data.outputs()[:200]
    rng = np.random.default_rng(1)
    om = rng.normal(size=(200, 2, 2))
    om[:, 1, 0] = om[:, 0, 1]
    V, h = 0.3, 1e-6
    fd = np.zeros(200)
    for (a, b), w in (((0, 0), 2.0), ((0, 1), 1.0), ((1, 1), 2.0)):
        up, dn = om.copy(), om.copy()
        up[:, a, b] += h
        dn[:, a, b] -= h
        if a != b:
            up[:, b, a] += h
            dn[:, b, a] -= h
        fd -= w * (ch.g_out(y, up, V)[:, a, b] - ch.g_out(y, dn, V)[:, a, b]) / (2 * h)
    np.testing.assert_allclose(ch.neg_divergence(y, om, V), fd, rtol=1e-6, atol=1e-8)


def test_general_amp_tracks_mismatched_se_early_at_d200():
    """GAMP with the density g_out (onsager="general") at d = 200 follows its state evolution
    over its first iterations: the mean of two seeds is within 0.02 (about the seed-to-seed
    spread at d = 200) of SE at iterations 1-4, far from both the Bayes SE (0.244) and the
    published curve (0.519). Later it drifts away from the SE fixed point, sooner at smaller d
    (README, "Mismatched AMP")."""
    alpha = 0.44768968993243946
    se = mismatched.solve(alpha, RHO, max_iter=8).history["error"]
    errs = np.array([amp.run_point("hardmax", alpha, RHO, 2, 200, s, variant="density",
                                   damping=0.0, max_iter=5, max_restarts=0).history["error"]
                     for s in range(2)])
    assert np.all(np.abs(errs.mean(axis=0)[:4] - se[:4]) < 0.02)


def test_general_onsager_rejects_channels_without_slopes():
    data = model.generate("softmax", 0.1, RHO, 2, 30, 0)
    with pytest.raises(ValueError, match="onsager"):
        amp.run(data, onsager="general")
    with pytest.raises(ValueError, match="onsager"):
        amp.run(data, onsager="bogus")


def test_solve_returns_an_evaluated_fixed_point(monkeypatch):
    """The returned (m, Q, V) is the map applied to the previous iterate, with the convergence
    test on that step, never an Aitken jump nobody evaluated.  The SE map is replaced by a linear
    contraction towards x* (rate 1/2), and the tolerance is first met on the iteration that
    jumps (the 25th: after ACCEL_AFTER = 20, every ACCEL_EVERY = 5)."""
    star, r = np.array([0.4, 0.5, 0.3]), 0.5
    monkeypatch.setattr(mismatched, "output_update",
                        lambda alpha, m, Q, V, rho, **kw: (m, Q, V))
    monkeypatch.setattr(mismatched, "input_update",
                        lambda a, q, mh, rho, **kw: tuple(star + r * (np.array([a, q, mh]) - star)))
    # |m_t - m_{t-1}| + |Q_t - Q_{t-1}| = 0.1 r^(t-1) (1 - r) from (m, Q, V) = (0.5, 0.5, 1)
    change = [0.1 * r ** (t - 1) * (1 - r) for t in range(1, 30)]
    tol = 1.5 * change[24]
    assert change[23] > tol
    res = mismatched.solve(3.0, 0.5, tol=tol)
    assert res.converged
    assert res.history["jumped"][24] and not res.history["jumped"][-1]
    h = res.history
    prev = np.array([h["m"][-2], h["Q"][-2], h["V"][-2]])
    np.testing.assert_allclose([res.m, res.Q, res.V], star + r * (prev - star), rtol=1e-14)
