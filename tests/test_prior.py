"""Prior channel: spectral density, support, MMSE and RIE against independent checks."""

import math

import numpy as np
import pytest
from scipy.integrate import quad

from aimlib import prior
from aimlib.model import teacher
from aimlib.prior import wishart


def _moments_quad(delta, rho):
    """Moments of mu_Delta by adaptive quadrature (independent of the module's own rule)."""
    out = np.zeros(3)
    for a, b in prior.support(delta, rho):
        for p in range(3):
            out[p] += quad(lambda x, p=p: float(prior.density(x, delta, rho)) * x**p, a, b,
                           limit=400, epsabs=1e-13, epsrel=1e-12)[0]
    return out


@pytest.mark.parametrize(
    "rho,delta",
    [(0.5, 1.0), (0.5, 0.01), (0.05, 0.01), (0.2, 0.1), (0.1, 1e-4), (1.0, 0.3), (2.0, 0.05),
     (5.0, 3.0), (0.05, 10.0)],
)
def test_density_moments(rho, delta):
    mass, mean, second = _moments_quad(delta, rho)
    assert mass == pytest.approx(1.0, abs=1e-8)
    assert mean == pytest.approx(math.sqrt(rho), abs=1e-8)
    assert second == pytest.approx(1.0 + rho + delta, rel=1e-8)


@pytest.mark.parametrize("rho,delta,m", [(0.05, 0.01, 2), (0.2, 0.1, 2), (0.1, 1e-4, 2),
                                         (0.5, 1.0, 1), (2.0, 0.05, 1), (0.05, 10.0, 1)])
def test_support_intervals(rho, delta, m):
    edges = prior.support(delta, rho)
    assert edges.shape == (m, 2)
    assert np.all(np.diff(edges.ravel()) > 0)
    # Zero density outside, positive inside.
    lo, hi = edges[0, 0], edges[-1, 1]
    w = hi - lo
    assert np.all(prior.density(np.array([lo - 0.01 * w, hi + 0.01 * w]), delta, rho) == 0)
    mids = edges.mean(axis=1)
    assert np.all(prior.density(mids, delta, rho) > 0)
    if m == 2:
        gap = 0.5 * (edges[0, 1] + edges[1, 0])
        assert prior.density(gap, delta, rho) == 0


@pytest.mark.parametrize("rho,delta", [(0.2, 0.05), (0.5, 0.5), (2.0, 0.2)])
def test_density_matches_sampled_spectrum(rho, delta):
    """Eigenvalues of sampled Y = S* + sqrt(Delta) Z against the CDF of mu_Delta (KS distance)."""
    rng = np.random.default_rng(1)
    d = 1200
    _, S = teacher(d, round(rho * d), rng)
    G = rng.standard_normal((d, d))
    Y = S + math.sqrt(delta) * (G + G.T) / math.sqrt(2 * d)
    ev = np.sort(np.linalg.eigvalsh(Y))
    xs = np.quantile(ev, np.linspace(0.02, 0.98, 25))
    cdf = np.array([sum(quad(lambda x: float(prior.density(x, delta, rho)), a, min(b, x0),
                             limit=200)[0] for a, b in prior.support(delta, rho) if a < x0)
                    for x0 in xs])
    emp = np.searchsorted(ev, xs) / d
    assert np.max(np.abs(cdf - emp)) < 0.02


@pytest.mark.parametrize("rho", [0.05, 0.2, 0.5, 1.0, 2.0, 5.0])
def test_mmse_small_and_large_noise(rho):
    frac = 2 * rho - rho * rho if rho <= 1 else 1.0
    # The approach to the free-parameter fraction is O(sqrt(Delta)) at rho = 1 (hard edge).
    tol = 2e-3 if rho == 1.0 else 1e-5
    assert prior.mmse(1e-8, rho) / 1e-8 == pytest.approx(frac, rel=tol)
    assert prior.mmse(math.inf, rho) == 1.0
    assert prior.mmse(0.0, rho) == 0.0
    assert prior.mmse_large_delta(math.inf, rho) == 0.0


def _series(delta, rho):
    """Delta (1 - mmse) to O(Delta^-2) (docs/theory.md §2.3), written out independently."""
    return 1 + (1 / rho - 1) / delta + (1 / rho**2 - 4 / rho + 1) / delta**2


@pytest.mark.parametrize("rho", [0.1, 0.5, 2.0])
@pytest.mark.parametrize("delta", [1e6, 1e8, 1e10, 1e12])
def test_mmse_large_noise_series(rho, delta):
    """Delta (1 - mmse) -> its series at every large Delta: within 1e-6, plus the float64
    rounding of mmse itself (Delta * 2^-53: 1.1e-4 at 1e12); 1 - mmse without that rounding
    from mmse_large_delta."""
    m = prior.mmse(delta, rho)
    assert abs(delta * (1.0 - m) - _series(delta, rho)) < 1e-6 + delta * 2.0**-53
    assert delta * prior.mmse_large_delta(delta, rho) == pytest.approx(_series(delta, rho),
                                                                       abs=1e-6)


@pytest.mark.parametrize("rho", [0.1, 0.5, 2.0])
def test_mmse_series_coefficients_match_quadrature(rho):
    """The two coefficients of the series against the cubic's quadrature at Delta = 1000, where
    it is accurate: the estimate of each is off by the next term only."""
    delta = 1000.0
    x = delta * (1.0 - prior.mmse(delta, rho))
    c1, c2 = 1 / rho - 1, 1 / rho**2 - 4 / rho + 1
    assert abs((x - 1) * delta - c1) < 2 * (abs(c2) + 1) / delta
    assert abs(((x - 1) * delta - c1) * delta - c2) < 0.05 * (abs(c2) + 1)


@pytest.mark.parametrize("rho", [0.1, 0.5, 2.0])
def test_mmse_continuous_at_series_switch(rho):
    switch = prior.LARGE_DELTA * max(1.0, 1.0 / rho)
    below, above = prior.mmse(switch * (1 - 1e-9), rho), prior.mmse(switch * (1 + 1e-9), rho)
    assert abs(below - above) < 2e-11
    assert prior.mmse(switch * 0.5, rho) < below and above < prior.mmse(switch * 2.0, rho)


def test_mmse_monotone_and_vectorised():
    deltas = np.geomspace(1e-6, 1e4, 60)
    m = prior.mmse(deltas, 0.3)
    assert np.all(np.diff(m) > 0)
    assert np.all(m <= deltas) and np.all(m <= 1.0)
    assert m[17] == prior.mmse(float(deltas[17]), 0.3)


@pytest.mark.parametrize("rho,delta", [(0.5, 0.3), (0.2, 0.05), (2.0, 1.0)])
def test_mmse_identity_with_rie(rho, delta):
    """Nishimori identity of the prior channel: mmse = Q0 - int xi(x)^2 mu(x) dx."""
    val = 0.0
    for a, b in prior.support(delta, rho):
        val += quad(lambda x: float(prior.rie_eigenvalues(np.array([x]), delta, rho)[0] ** 2
                                    * prior.density(x, delta, rho)), a, b, limit=400,
                    epsabs=1e-12)[0]
    assert prior.mmse(delta, rho) == pytest.approx(1 + rho - val, rel=1e-7)


@pytest.mark.parametrize("rho,delta", [(0.5, 0.5), (0.2, 0.1), (1.0, 2.0), (0.1, 0.01)])
def test_mmse_monte_carlo(rho, delta):
    """Sample S*, add GOE noise, apply the RIE, measure: matches mmse within 3% at d = 400."""
    rng = np.random.default_rng(12345)
    d = 400
    errs = []
    for _ in range(3):
        _, S = teacher(d, round(rho * d), rng)
        G = rng.standard_normal((d, d))
        Y = S + math.sqrt(delta) * (G + G.T) / math.sqrt(2 * d)
        S_hat = prior.rie(Y, delta, rho)
        errs.append(np.sum((S_hat - S) ** 2) / d)
    assert np.mean(errs) == pytest.approx(prior.mmse(delta, rho), rel=0.03)


def test_stieltjes_outside_support_is_physical():
    """Outside the support g is real and matches int mu(t)/(x - t) dt."""
    rho, delta = 0.5, 0.4
    (a, b), = prior.support(delta, rho)
    for x in (a - 0.5, b + 0.3, b + 5.0):
        g = prior.stieltjes(x, delta, rho)
        ref = quad(lambda t, x=x: float(prior.density(t, delta, rho)) / (x - t), a, b,
                   limit=400)[0]
        assert g.imag == 0
        assert g.real == pytest.approx(ref, rel=1e-6)


def test_mu3_integral_consistent_with_mmse():
    rho, delta = 0.3, 0.7
    assert prior.mmse(delta, rho) == pytest.approx(
        delta - 4 * math.pi**2 / 3 * delta**2 * prior.mu3_integral(delta, rho), rel=1e-14)


def test_quadrature_converged():
    """Halving the tanh-sinh step changes the MMSE by less than 1e-10 (relative)."""
    theta, weights = wishart._THETA, wishart._THETA_W
    step = wishart.DE_STEP / 2
    K = int(math.ceil(wishart.DE_TMAX / step))
    tau = step * np.arange(-K, K + 1)
    u = 0.5 * math.pi * np.sinh(np.abs(tau))
    e = 2.0 * np.exp(-2.0 * u) / (1.0 + np.exp(-2.0 * u))
    w = step * 0.5 * math.pi * np.cosh(tau) / np.cosh(u) ** 2
    for rho, delta in [(0.5, 0.3), (0.05, 0.01), (2.0, 5.0), (0.2, 1e-4)]:
        s = 1 / math.sqrt(rho)
        coarse = wishart._mmse_kernel(delta, s, theta, weights)
        fine = wishart._mmse_kernel(delta, s, e, w)
        assert coarse == pytest.approx(fine, rel=1e-10)


@pytest.mark.parametrize("bad", [0.0, -0.5, float("nan")])
def test_bad_rho_rejected(bad):
    with pytest.raises(ValueError, match="rho"):
        prior.mmse(0.1, bad)


def test_bad_delta_rejected():
    with pytest.raises(ValueError, match="delta"):
        prior.mmse(-1.0, 0.5)


# ------------------------------------------------------------- labels blind to the scale of S


def test_posterior_mean_trace_of_scale_blind_labels_by_rejection_sampling():
    """Hardmax labels do not see the scale of S, so the posterior mean has the trace sqrt(r d)
    exactly (docs/theory.md §4.2).  Checked on a problem small enough to sample the posterior
    exactly: d = 3, r = 2, T = 2 and n = 4 samples, by rejection from the prior (a prior draw is
    kept iff its own row-wise argmaxes reproduce every observed label; the labels here are
    computed by hand, not by aimlib).  Within 4 standard errors of the accepted draws' mean, while
    the data do move the posterior: its mean differs from the prior mean sqrt(rho) I."""
    d, r, T, n, m = 3, 2, 2, 4, 400_000
    rng = np.random.default_rng(11)
    _, S_star = teacher(d, r, rng)
    X = rng.standard_normal((n, T, d))

    def labels(S):  # (..., d, d) -> (..., n, T): argmax_b of x_a^T S x_b - Tr(S) delta_ab
        h = np.einsum("mad,...de,mbe->...mab", X, S, X)
        h = h - np.trace(S, axis1=-2, axis2=-1)[..., None, None, None] * np.eye(T)
        return np.argmax(h, axis=-1)

    y = labels(S_star)
    W = rng.standard_normal((m, d, r))
    S = W @ np.swapaxes(W, 1, 2) / math.sqrt(r * d)
    keep = np.all(labels(S) == y, axis=(1, 2))
    post = S[keep]
    assert 1000 < len(post) < m // 2
    tr = np.trace(post, axis1=1, axis2=2)
    sem = tr.std(ddof=1) / math.sqrt(len(post))
    assert abs(tr.mean() - prior.scale_posterior_trace(d, r)) < 4 * sem
    assert prior.scale_posterior_trace(d, r) == pytest.approx(math.sqrt(6.0))
    # the labels are informative: some entry of the posterior mean is far from the prior mean
    mean = post.mean(axis=0)
    spread = post.std(axis=0, ddof=1) / math.sqrt(len(post))
    assert np.max(np.abs(mean - math.sqrt(r / d) * np.eye(d)) / spread) > 10
    # the check has power: a label that sees the scale, 1[h_12 > 0.3], moves the trace away
    h12 = np.einsum("md,kde,me->km", X[:, 0], S, X[:, 1])
    h12_star = np.einsum("md,de,me->m", X[:, 0], S_star, X[:, 1])
    seen = np.trace(S[np.all((h12 > 0.3) == (h12_star > 0.3), axis=1)], axis1=1, axis2=2)
    assert abs(seen.mean() - math.sqrt(r * d)) > 4 * seen.std(ddof=1) / math.sqrt(len(seen))


@pytest.mark.parametrize("d,r", [(6, 2), (10, 5), (8, 16)])
def test_scale_floor_by_monte_carlo(d, r):
    """The error that no scale-blind estimate removes, (1/d) E||S - E[S | direction]||^2 with
    E[S | direction] = sqrt(r d) S / Tr S, by Monte Carlo over the prior against the closed
    form 2 (d + r + 1) / (d (r d + 2)), within 4 standard errors."""
    rng = np.random.default_rng(d * 100 + r)
    m = 100_000
    W = rng.standard_normal((m, d, r))
    S = W @ np.swapaxes(W, 1, 2) / math.sqrt(r * d)
    tr = np.trace(S, axis1=1, axis2=2)
    resid = S * (1.0 - math.sqrt(r * d) / tr)[:, None, None]
    e = np.sum(resid**2, axis=(1, 2)) / d
    sem = e.std(ddof=1) / math.sqrt(m)
    assert abs(e.mean() - prior.scale_floor(d, r)) < 4 * sem
    # about 2 (1 + rho) / (rho d^2) at large d
    assert prior.scale_floor(400, 200) == pytest.approx(2 * 1.5 / (0.5 * 400**2), rel=0.01)


def test_scale_helpers_reject_bad_sizes():
    for f in (prior.scale_posterior_trace, prior.scale_floor):
        with pytest.raises(ValueError, match="r must be"):
            f(10, 0)


def test_rie_is_continuous_in_delta_outside_the_support():
    """Eigenvalues outside the support are shrunk from the nearest edge, where the cubic has a
    double root.  The shrinkage must move by O(dDelta) when Delta does: an unguarded Newton
    polish of that double root once threw it 1e-2 away, and the RIE jumped (by up to 0.25 over
    this grid; by 6e-3 at Delta = 0.3653427421737381, rho = 0.5, where AMP's numba and
    array-API paths parted after seven iterations)."""
    worst = 0.0
    for rho in (0.2, 0.5, 2.0):
        for delta in np.r_[np.geomspace(0.05, 5.0, 200), 0.3653427421737381]:
            e = prior.support(delta, rho)
            lam = np.array([e[0, 0] - 0.08, e[-1, 1] + 0.08])
            a = prior.rie_eigenvalues(lam, delta, rho)
            b = prior.rie_eigenvalues(lam, delta * (1 + 1e-9), rho)
            worst = max(worst, float(np.abs(a - b).max()))
    assert worst < 1e-6
    # the edge value is the limit from inside the support
    delta, rho = 0.3653427421737381, 0.5
    edge = prior.support(delta, rho)[-1, 1]
    g = prior.stieltjes(np.array([edge, edge - 1e-6]), delta, rho).real
    assert g[0] == pytest.approx(g[1], abs=1e-6)
