"""Hardmax at any T (docs/theory.md §14): Genz's polytope probabilities against the exact
T = 2 path, Monte Carlo, finite differences, the sum rule over labels and the Nishimori
identity; the SE at T = 3, the small-width threshold and the large-alpha law."""

import math

import numpy as np
import pytest

from aimlib.channels import hardmax_second_moment, make_channel
from aimlib.channels.hardmax import orthant as o
from aimlib.channels.hardmax import se_moments as sm
from aimlib.channels.hardmax import uninformed_information
from aimlib.theory import asymptotics


def _model_samples(T, n, q, V, seed):
    """``omega ~ N(0, q w)`` and labels drawn from ``h = omega + N(0, V w)`` (pair weights)."""
    rng = np.random.default_rng(seed)

    def sym(scale):
        a = rng.standard_normal((n, T, T))
        s = (a + np.swapaxes(a, 1, 2)) / math.sqrt(2.0)  # off-diagonal var 1, diagonal var 2
        return math.sqrt(scale) * s

    omega = sym(q)
    h = omega + sym(V)
    return omega, np.argmax(h, axis=-1).astype(np.int8)


def test_t2_general_path_matches_the_exact_one():
    """The general (Genz) path at T = 2 against the bivariate-normal path, to 1e-6."""
    omega, labels = _model_samples(2, 6, 0.7, 0.5, 1)
    ch = make_channel("hardmax")
    y = ch.outputs(labels)
    g, logz, err = o.genz_gout(labels, omega, 0.5, n_points=2**18, n_shifts=4)
    np.testing.assert_allclose(g, ch.g_out(y, omega, 0.5), atol=1e-6, rtol=0)
    np.testing.assert_allclose(logz, ch.log_z_out(y, omega, 0.5), atol=1e-6, rtol=0)
    assert np.all(err < 1e-6)


def test_probabilities_by_monte_carlo_and_sum_rule():
    """At T = 3: Z_out of every pattern against the frequency of that pattern among draws of
    ``h`` (independent of the integrator), and the patterns' Z summing to 1."""
    T, V = 3, 0.6
    rng = np.random.default_rng(4)
    a = rng.standard_normal((T, T))
    omega = 0.6 * (a + a.T)
    labels = np.array(list(np.ndindex(*(T,) * T)), dtype=np.int8)  # all 27 patterns
    om = np.repeat(omega[None], labels.shape[0], axis=0)
    _, logz, err = o.genz_gout(labels, om, V, n_points=4096, n_shifts=4)
    Z = np.exp(logz)
    assert Z.sum() == pytest.approx(1.0, abs=1e-4)
    n = 400_000
    z = rng.standard_normal((n, T, T))
    h = omega + math.sqrt(V) * (z + np.swapaxes(z, 1, 2)) / math.sqrt(2.0)
    pat = o.pattern_of(np.argmax(h, axis=-1), T)
    freq = np.bincount(pat, minlength=T**T) / n
    idx = o.pattern_of(labels, T)
    sd = np.sqrt(Z * (1 - Z) / n)
    assert np.all(np.abs(freq[idx] - Z) < 5 * sd + 1e-4)


def test_g_is_the_gradient_of_log_z():
    """g = d log Z / d omega (pair coordinates), by central differences of log Z computed
    with the same fixed rule (a smooth function of omega)."""
    T, V = 3, 0.5
    omega, labels = _model_samples(T, 5, 0.8, V, 2)
    g, _, _ = o.genz_gout(labels, omega, V, n_points=8192, n_shifts=2)
    iu = np.triu_indices(T)
    eps = 1e-4
    for a, b in zip(*iu, strict=True):
        E = np.zeros((T, T))
        E[a, b] = E[b, a] = eps
        up = o.genz_gout(labels, omega + E, V, n_points=8192, n_shifts=2)[1]
        dn = o.genz_gout(labels, omega - E, V, n_points=8192, n_shifts=2)[1]
        np.testing.assert_allclose(g[:, a, b], (up - dn) / (2 * eps), rtol=2e-3, atol=2e-3)


def test_nishimori_at_t3():
    """On labels drawn from the model: ``E[g] = 0`` and ``E[sum w g^2] = E[sum w (-dg/domega)]``
    (the derivative by central differences), within their Monte Carlo standard errors."""
    T, V, q = 3, 0.5, 0.7
    omega, labels = _model_samples(T, 300, q, V, 3)
    kw = {"n_points": 1024, "n_shifts": 2}
    g, _, _ = o.genz_gout(labels, omega, V, **kw)
    iu = np.triu_indices(T)
    w = np.where(iu[0] == iu[1], 2.0, 1.0)
    gp = g[:, iu[0], iu[1]]
    sq = (gp * gp) @ w
    eps = 1e-4
    div = np.zeros(len(labels))
    for p, (a, b) in enumerate(zip(*iu, strict=True)):
        E = np.zeros((T, T))
        E[a, b] = E[b, a] = eps
        up = o.genz_gout(labels, omega + E, V, **kw)[0][:, a, b]
        dn = o.genz_gout(labels, omega - E, V, **kw)[0][:, a, b]
        div -= w[p] * (up - dn) / (2 * eps)
    n = len(labels)
    assert np.all(np.abs(gp.mean(axis=0)) < 4 * gp.std(axis=0) / math.sqrt(n))
    diff = sq - div
    assert abs(diff.mean()) < 4 * diff.std() / math.sqrt(n)
    assert sq.mean() == pytest.approx(div.mean(), rel=0.1)


def test_orbits():
    reps, sizes = o.pattern_orbits(3)
    assert sizes.sum() == 27 and len(reps) == 7
    assert o.pattern_orbits(4)[1].sum() == 256 and len(o.pattern_orbits(4)[0]) == 19


@pytest.mark.parametrize("q,V", [(0.0, 1.0), (0.5, 1.0), (1.2, 0.3)])
def test_second_moment_at_t2_against_the_quadrature(q, V):
    """The general SE integral at T = 2 against the 2-D quadrature, within five of its
    standard errors plus the inner rule's bias (measured below 1e-3 relative)."""
    r = sm.second_moment(2, q, V, outer=(512, 4), inner=(512, 2))
    ref = hardmax_second_moment(q, V)
    tol = (5 * r.stderr if math.isfinite(r.stderr) else 0.0) + 1e-3 * ref
    assert r.value == pytest.approx(ref, abs=tol)
    assert r.mass == pytest.approx(1.0, abs=1e-3)


def test_uninformed_information_and_small_width_threshold():
    assert uninformed_information(2) == hardmax_second_moment(0.0, 1.0)
    from aimlib.theory.small_width import small_width_threshold

    assert small_width_threshold(T=2) == pytest.approx(0.40341, abs=1e-5)
    e3 = uninformed_information(3)
    assert small_width_threshold(T=3) == pytest.approx(1.0 / (2.0 * e3), rel=1e-12)
    # the T = 3 constant from a rule four times finer, against the cached one
    fine = sm.second_moment(3, 0.0, 1.0, inner=(32768, 4)).value
    assert e3 == pytest.approx(fine, rel=3e-4)


def test_large_alpha_law_general_t():
    """The strip sum reproduces the T = 2 law, and the T = 3 law is of the same form."""
    law2 = asymptotics.large_alpha("hardmax", 0.5, T=2)
    J = asymptotics.strip_constant()
    assert asymptotics.strip_sum(2) == pytest.approx(J * math.sqrt(2 / math.pi), rel=1e-12)
    f, Q0 = asymptotics.mmse_slope(0.5), 1.5
    k2 = asymptotics.strip_sum(2)
    assert f * f * Q0 / (4 * k2 * k2) == pytest.approx(law2.prefactor, rel=1e-12)
    law3 = asymptotics.large_alpha("hardmax", 0.5, T=3)
    assert law3.exponent == 2.0 and 0 < law3.prefactor < law2.prefactor


def test_t_beyond_the_integrator_is_rejected():
    with pytest.raises(ValueError, match=r"T must be an integer in \[2, 4\] for the hardmax"):
        make_channel("hardmax", T=5)
    with pytest.raises(ValueError, match="variant must be 'exact' for hardmax at T=3"):
        make_channel("hardmax", T=3, variant="density")


# ------------------------------------------------------------------ K_T(s), the tabulated moment
def test_second_moment_depends_on_q_over_v_alone():
    """Hardmax labels are blind to the scale of the indices, so V I(q, V) is a function of
    q / V alone (docs/theory.md §14.6): exact at T = 2 (the quadrature), and within the RQMC
    error at T = 3."""
    for q, V in ((0.3, 0.2), (1.2, 0.05), (0.01, 1.3)):
        ref = V * hardmax_second_moment(q, V)
        for lam in (0.1, 2.5):
            assert lam * V * hardmax_second_moment(lam * q, lam * V) == pytest.approx(ref,
                                                                                     rel=1e-13)
    a = sm.second_moment(3, 0.4, 0.2)
    b = sm.second_moment(3, 0.2, 0.1)
    assert 0.2 * a.value == pytest.approx(0.1 * b.value,
                                          abs=5 * math.hypot(0.2 * a.stderr, 0.1 * b.stderr))


def test_the_grid_interpolates_the_exact_t2_function():
    """The table's grid and interpolant on the exact T = 2 function: 1e-5 inside the grid,
    3e-4 beyond it (the c / sqrt(s) law), 1e-7 below its first point; all below the T >= 3
    table's own QMC error (about 2e-3)."""
    from aimlib.channels.hardmax.moment_table import GRID, interpolant

    def k2(s):
        return hardmax_second_moment(s / (1 + s), 1 / (1 + s)) / (1 + s)

    K = interpolant(GRID, [k2(s) for s in GRID])
    rng = np.random.default_rng(0)
    inside = np.exp(rng.uniform(math.log(GRID[1]), math.log(GRID[-1]), 60))
    np.testing.assert_allclose(K(inside), [k2(s) for s in inside], rtol=1e-5)
    beyond = GRID[-1] * np.array([3.0, 100.0, 1e4])
    np.testing.assert_allclose(K(beyond), [k2(s) for s in beyond], rtol=3e-4)
    below = GRID[1] * np.array([0.0, 1e-3, 0.5])
    np.testing.assert_allclose(K(below), [k2(s) for s in below], rtol=1e-7)


@pytest.mark.parametrize("T,outer_factor,points", [(3, 2, (0.05, 2.7, 400.0)), (4, 1, (0.7,))])
def test_table_against_the_rqmc_it_tabulates(T, outer_factor, points):
    """K_T from the table against the RQMC integral at points between the grid's, with the
    table's rules (256 inner points; the outer rule doubled at T = 3, the default at T = 4),
    within five standard errors of the two and the spline's share of the table's noise (1e-3).
    (T = 4: one point, about 15 s.)"""
    from aimlib.channels.hardmax import moment_table as mt

    for s in points:
        q, V = s / (1 + s), 1 / (1 + s)
        r = sm.second_moment(T, q, V, outer=(outer_factor * sm.outer_points(V), sm.SE_OUTER[1]),
                            inner=(256, 2))
        got = float(mt.K(T, s))
        assert got == pytest.approx(V * r.value, abs=5 * V * r.stderr + 1e-3 * got)
        assert mt.second_moment(T, q, V) == pytest.approx(got / V, rel=1e-12)


def test_control_variate_is_left_out_where_its_mean_is_not_resolved():
    """At q / V = 1e-3 the default rule is within 0.5 % of the uninformed value (its inner
    rule's bias); with the strip control variate it was 2.4 % off, 175 % at 1e-4."""
    u = uninformed_information(3)
    for s in (1e-4, 1e-3):
        r = sm.second_moment(3, s / (1 + s), 1 / (1 + s))
        assert r.value / (1 + s) == pytest.approx(u, rel=5e-3)


@pytest.mark.parametrize("T", [3, 4])
def test_table_reaches_the_strip_law(T):
    """At its last point (s = 1e5) the table's ``K_T(s) sqrt(s)`` is the strip sum ``k_T`` of
    the large-alpha law (docs/theory.md §14.3), computed by quadrature independently of the
    Genz rule the table was built with, to 0.5 %."""
    from aimlib.channels.hardmax import moment_table as mt

    assert float(mt.K(T, 1e5)) * math.sqrt(1e5) == pytest.approx(asymptotics.strip_sum(T),
                                                                 rel=5e-3)
