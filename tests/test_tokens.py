"""Token laws beyond the Gaussian (docs/theory.md §13): draws, index moments, the SE under each
law, the whitened output functions and GD's centring, each against a reference that does not
use the code it checks."""

import math

import numpy as np
import pytest
from scipy import stats

from aimlib import model, tokens
from aimlib.algorithms import amp, gd
from aimlib.channels import make_channel
from aimlib.channels.hardmax import pair as hm
from aimlib.channels.hardmax.prediction import comparison_geometry, comparison_matrix
from aimlib.theory import state_evolution as se

LAWS = ["gaussian", "rademacher", "uniform", {"law": "student_t", "nu": 10},
        {"law": "correlated", "c": 0.3}]


def test_gaussian_default_is_bit_identical():
    """The default draws exactly what the generator's standard normals give (as before)."""
    a = model.generate("softmax", 0.2, 0.5, 3, 30, seed=4)
    b = model.generate("softmax", 0.2, 0.5, 3, 30, seed=4, tokens="gaussian")
    assert np.array_equal(a.labels, b.labels)
    ss = np.random.SeedSequence(list(a.token_entropy), spawn_key=(1, 0))
    ref = np.random.default_rng(ss).standard_normal((a.n, 3, 30))
    assert np.array_equal(a.tokens(), ref)


@pytest.mark.parametrize("spec", LAWS[1:], ids=str)
def test_laws_share_the_teacher_and_are_reproducible(spec):
    g = model.generate("hardmax", 0.3, 0.5, 2, 30, seed=2)
    a = model.generate("hardmax", 0.3, 0.5, 2, 30, seed=2, tokens=spec)
    b = model.generate("hardmax", 0.3, 0.5, 2, 30, seed=2, tokens=spec)
    assert np.array_equal(a.W, g.W)
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.tokens(), b.tokens())
    assert not np.array_equal(a.labels, g.labels)
    assert np.array_equal(a.tokens(5, 17), a.tokens()[5:17])


@pytest.mark.parametrize("spec,kappa", [("gaussian", 0.0), ("rademacher", -2.0),
                                        ("uniform", -1.2), ({"law": "student_t", "nu": 10}, 1.0)],
                         ids=str)
def test_entry_moments(spec, kappa):
    """Unit variance and the stated excess kurtosis (sample moments against their standard
    errors)."""
    law = tokens.make_tokens(spec)
    assert law.kappa == kappa
    x = law.draw(np.random.default_rng(0), (4000, 2, 100)).ravel()
    m2, m4 = np.mean(x**2), np.mean(x**4)
    se2 = np.std(x**2) / math.sqrt(x.size)
    assert m2 == pytest.approx(1.0, abs=5 * se2)
    se4 = np.std(x**4) / math.sqrt(x.size)
    assert m4 - 3.0 == pytest.approx(kappa, abs=max(5 * se4, 1e-12))


def test_correlated_token_covariance():
    law = tokens.make_tokens({"law": "correlated", "c": 0.3})
    x = law.draw(np.random.default_rng(1), (20000, 3, 20))
    C = np.einsum("mad,mbd->ab", x, x) / (x.shape[0] * x.shape[2])
    np.testing.assert_allclose(C, law.covariance(3), atol=0.01)
    W = law.whitener(3)
    np.testing.assert_allclose(W @ law.covariance(3) @ W, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(tokens.sqrt_corr(3, 0.3) @ W, np.eye(3), atol=1e-12)


@pytest.mark.parametrize("spec", LAWS, ids=str)
def test_index_moments(spec):
    """``Var h_aa = (2 Tr S^2 + kappa sum_i S_ii^2) / d`` for i.i.d. laws and
    ``Cov h = Q (C C + C C)`` for correlated ones; every index has mean 0."""
    law = tokens.make_tokens(spec)
    data = model.generate("softmax", 4.0, 0.5, 2, 50, seed=3, tokens=law)
    h = np.concatenate([data.indices(X, data.S) for _, _, X in data.chunks()])
    d, S = data.d, data.S
    Q = np.sum(S * S) / d
    C = law.covariance(2)
    var_aa = 2 * Q * C[0, 0] ** 2 + law.kappa * np.sum(np.diag(S) ** 2) / d
    var_ab = Q * (C[0, 0] * C[1, 1] + C[0, 1] ** 2)
    n = h.shape[0]
    for a in range(2):
        assert np.var(h[:, a, a]) == pytest.approx(var_aa, abs=6 * var_aa * math.sqrt(
            (2 + max(law.kappa, 0)) / n))
        assert np.mean(h[:, a, a]) == pytest.approx(0.0, abs=6 * math.sqrt(var_aa / n))
    assert np.var(h[:, 0, 1]) == pytest.approx(var_ab, abs=6 * var_ab * math.sqrt(2 / n))
    assert np.mean(h[:, 0, 1]) == pytest.approx(0.0, abs=6 * math.sqrt(var_ab / n))


@pytest.mark.parametrize("spec,match", [
    ({"law": "student_t", "nu": 4}, r"nu must be > 4 \(the kurtosis .* infinite otherwise\), "
                                     "got nu=4"),
    ({"law": "student_t", "nu": 3.5}, "nu must be > 4"),
    ({"law": "student_t", "nu": float("inf")}, "nu must be a finite number"),
    ({"law": "correlated", "c": 1.0}, r"c must be in \[0, 1\)"),
    ({"law": "correlated", "c": -0.1}, r"c must be in \[0, 1\)"),
    ("laplace", "tokens must be one of"),
    ("student_t", "student_t tokens need nu"),
    ({"law": "rademacher", "nu": 5}, "nu does not apply to rademacher tokens"),
], ids=str)
def test_bad_laws_rejected(spec, match):
    with pytest.raises(ValueError, match=match):
        tokens.make_tokens(spec)


def test_channel_limits():
    with pytest.raises(ValueError, match="correlated tokens are not implemented for the gaussian"):
        model.generate("gaussian", 0.2, 0.5, 2, 20, 0, tokens={"law": "correlated", "c": 0.2})
    with pytest.raises(ValueError, match="need the exact output function"):
        se.solve("hardmax", 0.5, 0.5, variant="density", tokens="rademacher")


# --------------------------------------------------------------------------- state evolution
def test_comparison_moment_reduces_to_gaussian_tokens():
    for q, V in [(0.5, 1.0), (1.4, 0.1), (1e-4, 1.5), (1.5 - 1e-6, 1e-6)]:
        assert hm.comparison_second_moment(q, V) == pytest.approx(
            hm.hardmax_second_moment(q, V), rel=1e-12)


@pytest.mark.parametrize("q,V,r,extra", [(0.5, 1.0, 1 / 3, -0.2), (1.2, 0.3, -0.5, 0.0),
                                         (0.9, 0.6, 0.0, 0.3)])
def test_comparison_moment_both_rules_and_halved_step(monkeypatch, q, V, r, extra):
    """The strip-aligned grid and the principal-axis rule agree, and halving the step changes
    neither (both converge double-exponentially)."""
    a = hm.comparison_second_moment(q, V, r, extra)
    a2 = hm.comparison_second_moment(q, V, r, extra, step=hm.HARDMAX_STEP / 2)
    monkeypatch.setattr(hm, "ANISOTROPY", 1.0)
    b = hm.comparison_second_moment(q, V, r, extra)
    assert a == pytest.approx(b, rel=1e-10)
    assert a == pytest.approx(a2, rel=1e-10)


def _log_p(s1, s2, m, cov):
    """``log P(s_1 D_1 > 0, s_2 D_2 > 0)`` for ``D ~ N(m, cov)`` by scipy (no aimlib code)."""
    sgn = np.array([s1, s2])
    c = cov * np.outer(sgn, sgn)
    return math.log(stats.multivariate_normal(mean=np.zeros(2), cov=c).cdf(sgn * m))


@pytest.mark.parametrize("q,V,r,extra", [(0.6, 0.9, 1 / 3, -0.3), (0.9, 0.6, 0.1, 0.2)])
def test_comparison_moment_by_monte_carlo(q, V, r, extra):
    """Monte Carlo of ``E[grad^T R grad log P]`` on labels drawn from the model, the gradient by
    finite differences of scipy's bivariate normal CDF."""
    rng = np.random.default_rng(5)
    R = np.array([[1.0, r], [r, 1.0]])
    m = rng.multivariate_normal(np.zeros(2), q * R + extra * np.eye(2), size=400)
    D = m + rng.multivariate_normal(np.zeros(2), V * R, size=400)
    vals = []
    eps = 1e-5
    for mi, Di in zip(m, D, strict=True):
        s1, s2 = np.sign(Di)
        grad = np.array([(_log_p(s1, s2, mi + eps * e, V * R) - _log_p(s1, s2, mi - eps * e, V * R))
                         / (2 * eps) for e in np.eye(2)])
        vals.append(grad @ R @ grad)
    vals = np.array(vals)
    ref = hm.comparison_second_moment(q, V, r, extra)
    assert np.mean(vals) == pytest.approx(ref, abs=4 * np.std(vals) / math.sqrt(len(vals)))


def test_se_token_laws():
    """Softmax is universal; hardmax moves with the kurtosis and is even in the comparisons'
    correlation (c = 0.6 gives r = -1/3, the Gaussian-token SE again); kappa -> 0 is
    continuous."""
    g_soft = se.solve("softmax", 0.06, 0.5).error
    g_hard = se.solve("hardmax", 0.4583, 0.5).error
    for spec in LAWS[1:]:
        assert se.solve("softmax", 0.06, 0.5, tokens=spec).error == g_soft
    rad = se.solve("hardmax", 0.4583, 0.5, tokens="rademacher").error
    uni = se.solve("hardmax", 0.4583, 0.5, tokens="uniform").error
    stu = se.solve("hardmax", 0.4583, 0.5, tokens={"law": "student_t", "nu": 10}).error
    assert rad < uni < g_hard < stu
    big = se.solve("hardmax", 0.4583, 0.5, tokens={"law": "student_t", "nu": 4 + 6e5}).error
    assert big == pytest.approx(g_hard, abs=1e-5)
    mirror = se.solve("hardmax", 0.4583, 0.5, tokens={"law": "correlated", "c": 0.6}).error
    assert mirror == pytest.approx(g_hard, abs=1e-9)
    assert se.solve("hardmax", 0.4583, 0.5,
                    tokens={"law": "correlated", "c": 0.3}).error != pytest.approx(g_hard,
                                                                                   abs=1e-3)


def test_rademacher_starts_degenerate():
    """At q = rho the Rademacher diagonal means vanish: the SE map is finite there and
    continuous just above it."""
    ch = make_channel("hardmax")
    law = tokens.make_tokens("rademacher").index_law(0.5)
    at = ch.q_hat_tokens(1.0, 0.5, 1.0, law)
    above = ch.q_hat_tokens(1.0, 0.5 + 1e-9, 1.0 - 1e-9, law)
    assert math.isfinite(at) and at == pytest.approx(above, rel=1e-6)


# --------------------------------------------------------------------------- whitened channels
def test_whitened_softmax_g_vanishes_at_the_truth():
    """At ``omega = h~`` (the true whitened index) the posterior line passes through omega, so
    g = 0; the i.i.d. output function on the same point does not vanish."""
    rng = np.random.default_rng(2)
    T, c = 3, 0.4
    L = tokens.sqrt_corr(T, c)
    a = rng.standard_normal((50, T, T))
    ht = a + np.swapaxes(a, 1, 2)
    y = make_channel("softmax", T=T, beta=1.5).predict(L @ ht @ L)
    ch = make_channel("softmax", T=T, beta=1.5)
    assert np.max(np.abs(ch.g_out_whitened(y, ht, 0.7, L))) < 1e-10
    assert np.max(np.abs(ch.g_out(y, ht, 0.7))) > 0.1


def test_whitened_hardmax_g_is_gradient():
    """``g~ = d log P(y | omega~) / d omega~`` in pair coordinates, by finite differences of
    scipy's CDF of the comparisons ``A p``."""
    c, V = 0.3, 0.8
    L = tokens.sqrt_corr(2, c)
    A = comparison_matrix(L)
    cov = V * A @ np.diag([2.0, 1.0, 2.0]) @ A.T
    rng = np.random.default_rng(3)
    ch = make_channel("hardmax")
    for _ in range(6):
        p = rng.standard_normal(3)
        omega = np.array([[[p[0], p[1]], [p[1], p[2]]]])
        for y1, y2 in [(0, 1), (1, 1), (0, 0), (1, 0)]:
            y = np.zeros((1, 2, 2))
            y[0, 0, y1] = 1.0
            y[0, 1, y2] = 1.0
            s1, s2 = (1.0 if y1 == 0 else -1.0), (1.0 if y2 == 1 else -1.0)
            g = ch.g_out_whitened(y, omega, V, L)[0]
            eps = 1e-5
            fd = [(_log_p(s1, s2, A @ (p + eps * e), cov) - _log_p(s1, s2, A @ (p - eps * e), cov))
                  / (2 * eps) for e in np.eye(3)]
            np.testing.assert_allclose([g[0, 0], g[0, 1], g[1, 1]], fd, rtol=1e-5, atol=1e-7)


def test_geometry_of_correlated_comparisons():
    for c in (0.0, 0.2, 0.5):
        _, r, s2 = comparison_geometry(c)
        assert r == pytest.approx((1 - 3 * c) / (3 - c), abs=1e-14)
        assert s2 == pytest.approx((1 - c) * (3 - c), abs=1e-14)


# --------------------------------------------------------------------------- GD centring
def test_gd_gradient_with_correlated_tokens():
    """The loss with the diagonal centred by ``(1 - c) Tr S`` is the model's loss (row shifts
    do not change a softmax), and its gradient matches finite differences of that loss computed
    from :func:`aimlib.model.attention_indices` with the full centring ``C_ab Tr S``."""
    c = 0.4
    data = model.generate("softmax", 0.3, 0.5, 3, 12, seed=1, beta=1.5,
                          tokens={"law": "correlated", "c": c})
    X, y = data.tokens(), data.outputs()
    K, d, r = 2, data.d, data.r
    W = np.random.default_rng(0).standard_normal((K, d, r))
    ch = data.ch

    def model_loss(Wk):
        S = Wk @ Wk.T / math.sqrt(r * d)
        yh = ch.predict(model.attention_indices(X, S, c))
        return np.sum((yh - y) ** 2) / d

    loss, grad = gd.loss_and_grad(W, X, y, ch, centre=gd.centring(data))
    for k in range(K):
        assert loss[k] == pytest.approx(model_loss(W[k]), rel=1e-12)
    eps = 1e-6
    for (i, j) in [(0, 0), (3, 1), (7, 2)]:
        E = np.zeros((d, r))
        E[i, j] = eps
        fd = (model_loss(W[1] + E) - model_loss(W[1] - E)) / (2 * eps)
        assert grad[1, i, j] == pytest.approx(fd, rel=1e-5, abs=1e-9)


# --------------------------------------------------------------------------- AMP against SE
@pytest.mark.parametrize("channel,alpha,spec", [
    ("hardmax", 0.4583, "rademacher"),
    ("hardmax", 0.4583, {"law": "correlated", "c": 1 / 3}),
    ("softmax", 0.1, {"law": "correlated", "c": 0.3}),
], ids=str)
def test_amp_follows_the_token_law_se(channel, alpha, spec):
    """AMP (d = 80, two seeds) lands on the SE of its token law.  Gaussian tokens at d = 80
    (measured, 8 and 6 seeds): hardmax mean 0.239 (SE 0.237), one-seed std 0.012; softmax at
    alpha = 0.1 mean 0.398 (SE 0.392), std 0.011.  The tolerance is the finite-size offset plus
    three standard deviations of a two-seed mean."""
    errs = []
    for seed in range(2):
        data = model.generate(channel, alpha, 0.5, 2, 80, seed, tokens=spec)
        res = amp.run(data)
        assert res.converged
        errs.append(res.error)
    ref = se.solve(channel, alpha, 0.5, tokens=spec).error
    tol = 0.025 if channel == "hardmax" else 0.03
    assert np.mean(errs) == pytest.approx(ref, abs=tol)
    if spec == "rademacher":  # and it is not the Gaussian-token SE: universality breaks
        assert abs(np.mean(errs) - se.solve(channel, alpha, 0.5).error) > 0.02


@pytest.mark.parametrize("spec", ["rademacher", "uniform", {"law": "student_t", "nu": 10},
                                  {"law": "correlated", "c": 1 / 3}], ids=str)
def test_large_alpha_law_per_token_law(spec):
    """The hardmax error still falls as alpha^-2; the prefactor takes ``Q0 + kappa rho / 3`` for
    ``Q0`` (correlated tokens: unchanged).  SE at alpha = 200 against the law, to the same
    2e-4 as the Gaussian-token law (docs/theory.md §9)."""
    from aimlib.theory import asymptotics

    law = asymptotics.large_alpha("hardmax", 0.5, tokens=spec)
    e = se.solve("hardmax", 200.0, 0.5, tokens=spec).error
    assert law.exponent == 2.0
    assert e == pytest.approx(law.prefactor * 200.0**-2, rel=2e-4)
    if spec == "rademacher":
        assert law.prefactor == pytest.approx(
            asymptotics.large_alpha("hardmax", 0.5).prefactor * (1.5 - 1 / 3) / 1.5, rel=1e-12)


@pytest.mark.parametrize("spec,label", [
    ({"law": "correlated", "c": 1 / 3}, "correlated (c = 1/3)"),
    ({"law": "correlated", "c": 0.3}, "correlated (c = 0.3)"),
    ({"law": "correlated", "c": 0.123456}, "correlated (c = 0.123)"),
    ({"law": "student_t", "nu": 10}, "student_t (nu = 10)"),
])
def test_labels_round_to_what_the_parameter_means(spec, label):
    """Figure labels say c = 1/3, not c = 0.333333 (file names keep six digits)."""
    t = tokens.make_tokens(spec)
    assert t.label == label
    assert t.tag == f"{t.name}{float(spec.get('c', spec.get('nu'))):g}"


def test_figure_legends_read_the_law_from_its_file_tag():
    """fig10's legend reads the law from the cache's six-digit tag: c = 1/3, not 0.333333."""
    from aimlib.figures.drawing.fig10 import _law_label

    assert _law_label("correlated0.333333") == "correlated ($c=1/3$)"
    assert _law_label("student_t10") == r"student_t ($\nu=10$)"
    assert _law_label("rademacher") == "rademacher"
