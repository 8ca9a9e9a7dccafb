"""State evolution: closed-form thresholds, published reference values, limits, the driver."""

import math

import numpy as np
import pytest

from aimlib import state_evolution as se


def test_softmax_reference_value():
    """The softmax curve of the paper (theory §7), rho = 0.5, T = 2, alpha = 0.0919: 0.4434."""
    r = se.solve("softmax", 0.0919, 0.5, T=2)
    assert r.error == pytest.approx(0.4434, abs=1e-4)
    assert r.converged and not r.disagree
    assert r.q == pytest.approx(1.5 - r.error, abs=1e-14)
    assert r.q_hat == pytest.approx(0.0919 * 4 / r.error, rel=1e-9)


@pytest.mark.parametrize("rho", [0.1, 0.2, 0.5, 0.8, 1.0, 2.0, 5.0])
def test_softmax_perfect_recovery_threshold(rho):
    abar_c = se.softmax_perfect_recovery_threshold(rho)
    assert abar_c == pytest.approx(2 * rho - rho**2 if rho <= 1 else 1.0)
    below = se.solve("softmax", 0.97 * abar_c / 4, rho, T=2)
    above = se.solve("softmax", 1.03 * abar_c / 4, rho, T=2)
    assert below.error > 1e-3
    assert above.error < 1e-9


def test_softmax_collapse_in_alpha_bar():
    for abar in (0.1, 0.4, 0.7):
        errs = [se.solve("softmax", abar / (T * T + T - 2), 0.5, T=T).error for T in range(2, 7)]
        assert np.ptp(errs) < 1e-9


def test_softmax_beta_free():
    a = se.solve("softmax", 0.05, 0.5, T=2, beta=0.5).error
    b = se.solve("softmax", 0.05, 0.5, T=2, beta=4.0).error
    assert a == b


def test_softmax_infinite_width_limit():
    """As rho -> infinity the softmax error tends to 1 - alpha_bar."""
    for abar in (0.2, 0.5, 0.8):
        err = se.solve("softmax", abar / 4, 400.0).error
        assert err == pytest.approx(1 - abar, abs=0.01)


@pytest.mark.parametrize("alpha,exact,published", [(0.4583, 0.237, 0.512), (4.80, 0.0044, 0.090)])
def test_hardmax_correction_regression(alpha, exact, published):
    """theory §7: the density g_out reproduces the published curve, the exact one does not."""
    r_exact = se.solve("hardmax", alpha, 0.5)
    r_dens = se.solve("hardmax", alpha, 0.5, variant="density")
    assert r_exact.error == pytest.approx(exact, rel=0.01)
    assert r_dens.error == pytest.approx(published, rel=0.01)
    assert r_exact.converged and r_dens.converged


def test_small_width_thresholds():
    assert se.small_width_threshold() == pytest.approx(0.4034, abs=1e-4)
    assert se.small_width_threshold("density") == pytest.approx(0.5633, abs=1e-4)
    # below the threshold the limit gives error 1, above it less
    assert se.small_width_solve(0.39).error == 1.0
    assert se.small_width_solve(0.42).error < 1.0


def test_small_width_limit_approached_by_finite_rho():
    """Finite-rho hardmax SE at fixed alpha_bar approaches the rho -> 0 limit as rho decreases."""
    for abar in (0.8, 2.0, 5.0):
        lim = se.small_width_solve(abar).error
        gaps = [abs(se.solve("hardmax", abar * rho, rho).error - lim)
                for rho in (0.05, 0.02, 0.01)]
        assert gaps[0] > gaps[1] > gaps[2]
        assert gaps[2] < 0.5 * gaps[0]
        assert gaps[2] < 0.05


def test_prior_small_width_map():
    """The prior part of the limit: Q0 - mmse(t / rho) -> (1 - t)^2 as rho -> 0."""
    from aimlib import prior

    for t in (0.3, 0.7):
        vals = [1 + rho - prior.mmse(t / rho, rho) for rho in (1e-2, 1e-3, 1e-4)]
        errs = [abs(v - (1 - t) ** 2) for v in vals]
        assert errs[0] > errs[1] > errs[2] and errs[2] < 5e-3


def test_curve_dataset_and_continuation():
    alphas = np.geomspace(0.05, 5.0, 9)
    ds = se.curve("hardmax", alphas, 0.5)
    assert set(ds.coords) >= {"alpha", "alpha_bar"}
    assert ds["error"].dims == ("alpha",)
    assert ds["error"].dtype == np.float64
    np.testing.assert_allclose(ds["alpha_bar"], alphas / 0.5)
    for i in (0, 4, 8):
        single = se.solve("hardmax", float(alphas[i]), 0.5).error
        assert ds["error"].values[i] == pytest.approx(single, abs=1e-8)
    assert np.all(np.diff(ds["error"].values) < 0)
    assert ds.attrs["channel"] == "hardmax" and ds.attrs["rho"] == 0.5
    assert bool(ds["converged"].all())


def test_fixed_point_picks_branch_by_start():
    """A map with three fixed points (0.2, 0.5, 0.8): the two starts find the outer ones."""
    def F(q):
        return q + 0.3 * (q - 0.2) * (q - 0.5) * (0.8 - q)

    lo = se.fixed_point(F, 0.0, 0.0, 1.0)
    hi = se.fixed_point(F, 1.0, 0.0, 1.0)
    assert lo.q == pytest.approx(0.2, abs=1e-9) and lo.converged
    assert hi.q == pytest.approx(0.8, abs=1e-9) and hi.converged


def test_fixed_point_not_fooled_by_marginal_slope():
    """Near a marginally unstable point the steps are tiny; the driver must not stop there."""
    lam = 1.0 + 1e-3

    def F(q):  # repelling fixed point at 0 with slope lam, attracting one at 0.5
        return min(lam * q, 0.5 + 0.5 * (q - 0.5))

    # At the start |F(q) - q| = 1e-11 < tol, yet the iterate is far from any fixed point.
    res = se.fixed_point(F, 1e-8, 0.0, 1.0, max_iter=100000)
    assert res.converged
    assert res.q == pytest.approx(0.5, abs=1e-8)


def test_fixed_point_reports_non_convergence():
    res = se.fixed_point(lambda q: 0.5 + 0.999999 * (q - 0.5) + 1e-9 * math.sin(1e6 * q), 0.0,
                         0.0, 1.0, max_iter=5)
    assert not res.converged


@pytest.mark.parametrize("kw,match", [
    (dict(channel="softmax", alpha=0.0, rho=0.5), "alpha"),
    (dict(channel="softmax", alpha=-1.0, rho=0.5), "alpha"),
    (dict(channel="softmax", alpha=0.1, rho=0.0), "rho"),
    (dict(channel="softmax", alpha=0.1, rho=-2.0), "rho"),
    (dict(channel="softmax", alpha=0.1, rho=0.5, T=1), "T"),
    (dict(channel="hardmax", alpha=0.1, rho=0.5, T=5), "T"),
    (dict(channel="tanh", alpha=0.1, rho=0.5), "channel"),
])
def test_bad_parameters_rejected(kw, match):
    with pytest.raises(ValueError, match=match):
        se.solve(**kw)


def test_bad_curve_input_rejected():
    with pytest.raises(ValueError, match="alpha"):
        se.curve("softmax", [0.1, 0.0], 0.5)


def test_non_finite_q_hat_is_not_a_converged_point(monkeypatch):
    """A channel whose q_hat is NaN ends the solve with converged=False, stop reason "nan" and
    a NaN error, never a number flagged converged (it used to be error 1.0, converged)."""
    from aimlib.channels import Softmax

    monkeypatch.setattr(Softmax, "q_hat", lambda self, alpha, q, V: math.nan)
    res = se.solve("softmax", 0.1, 0.5, T=2)
    assert not res.converged and res.stop_reason == "nan" and math.isnan(res.error)
    assert not res.converged_informed and res.stop_reason_informed == "nan"
    ds = se.curve("softmax", [0.05, 0.1], 0.5, T=2)
    assert ds["converged"].values.tolist() == [0, 0]
    assert np.isnan(ds["error"].values).all()
    assert not se.usable(ds).any()
    names = ds.attrs["stop_reasons"].split()
    assert [names[c] for c in ds["stop_reason"].values] == ["nan", "nan"]
    assert se.unconverged_points(ds)[0] == ("alpha=0.05 (uninformed start: nan; informed start: "
                                           "not converged)")


def test_fixed_point_reports_its_budget():
    """A map that creeps (marginal fixed point) stops at max_iter with that reason."""
    res = se.fixed_point(lambda q: q + 1e-3 * (1 - q) ** 2, 0.0, 0.0, 1.0,
                                      tol=1e-14, max_iter=50)
    assert not res.converged and res.stop_reason == "max_iter" and res.iterations >= 50


def test_threshold_point_is_named_unconverged():
    """At the softmax perfect-recovery threshold the SE fixed point is marginal: the point is
    flagged (the paper preset's fig5 grid has it and sets allow_unconverged)."""
    rho = 0.5
    alpha = se.softmax_perfect_recovery_threshold(rho) / 4.0  # T = 2
    ds = se.curve("softmax", [0.5 * alpha, alpha], rho, T=2)
    assert ds["converged"].values.tolist() == [1, 0]
    assert se.usable(ds).tolist() == [True, False]
    assert se.unconverged_points(ds)[0].startswith(f"alpha={alpha:.6g} (uninformed")
