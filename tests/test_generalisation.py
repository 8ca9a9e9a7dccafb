"""Test error from overlaps (aimlib.theory.generalisation) against Monte Carlo simulations of
the model and of its Gaussian limit, the alpha -> 0 and perfect-recovery limits, and
quadrature checks."""

import math

import numpy as np
import pytest
from scipy import special

from aimlib import model
from aimlib import state_evolution as se
from aimlib.channels import make_channel
from aimlib.channels.softmax import _rqmc
from aimlib.theory import generalisation as gen


@pytest.fixture(scope="module")
def estimate():
    """A teacher at d = 200 and an estimate a S* + b G with known (measured) overlaps."""
    d, rho = 200, 0.5
    rng = np.random.default_rng(0)
    _, S = model.teacher(d, round(rho * d), rng)
    G = rng.standard_normal((d, d))
    G = (G + G.T) / math.sqrt(2 * d)
    Sh = 0.8 * S + 0.5 * G
    return dict(d=d, rho=rho, S=S, Sh=Sh, m=np.sum(Sh * S) / d, Q=np.sum(Sh * Sh) / d,
                Q0=np.sum(S * S) / d, rng=rng)


@pytest.mark.parametrize("channel,T,beta,predictor", [
    ("softmax", 2, 1.0, "plugin"), ("softmax", 2, 3.0, "plugin"), ("softmax", 3, 1.0, "plugin"),
    ("hardmax", 2, 1.0, "plugin"), ("hardmax", 2, 1.0, "argmax")])
def test_plugin_error_against_the_model_at_d200(estimate, channel, T, beta, predictor):
    """Fresh samples of the model at d = 200 (30,000) on an estimate with measured overlaps:
    within 4 Monte Carlo standard errors (plus the QMC error) of the Gaussian prediction."""
    e = estimate
    n, d = 30_000, e["d"]
    X = e["rng"].standard_normal((n, T, d))
    h, hh = model.attention_indices(X, e["S"]), model.attention_indices(X, e["Sh"])
    if channel == "softmax":
        err = np.sum((model.softmax_output(h, beta) - model.softmax_output(hh, beta)) ** 2,
                     axis=(1, 2))
    elif predictor == "argmax":
        err = (model.hardmax_output(h) != model.hardmax_output(hh)).mean(axis=1)
    else:
        err = np.sum((model.one_hot(model.hardmax_output(h), T)
                      - model.one_hot(model.hardmax_output(hh), T)) ** 2, axis=(1, 2))
    pred = gen.from_overlaps(channel, e["m"], e["Q"], e["rho"], T, predictor=predictor, Q0=e["Q0"],
                             beta=beta)
    tol = 4 * err.std() / math.sqrt(n) + 4 * pred.abserr
    assert err.mean() == pytest.approx(pred.value, abs=tol)


@pytest.mark.parametrize("q", [0.7, 1.2, 1.45])
def test_bayes_hardmax_against_monte_carlo_of_the_gaussian_limit(q):
    """E ||y - E[y | h_hat]||^2 by sampling (u, u_hat) with Cov 3q, Var u = 3 Q0."""
    rho, Q0 = 0.5, 1.5
    rng = np.random.default_rng(1)
    n = 400_000
    uh = math.sqrt(3 * q) * rng.standard_normal(n)
    u = uh + math.sqrt(3 * (Q0 - q)) * rng.standard_normal(n)
    p = special.ndtr(uh / math.sqrt(3 * (Q0 - q)))
    err = 2 * 2 * ((u > 0) - p) ** 2  # two rows, 2 (y_11 - p)^2 each
    val = gen.bayes("hardmax", q, rho).value
    assert val == pytest.approx(err.mean(), abs=4 * err.std() / math.sqrt(n))


@pytest.mark.parametrize("predictor", ["plugin", "bayes"])
@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_qmc_path_agrees_with_quadrature_at_T2(predictor, beta):
    """The randomised-QMC code used for T > 2, run at T = 2, against the quadrature."""
    q, Q0 = 1.1, 1.5
    rq = _rqmc(q, q, Q0, 2, beta, bayes=(predictor == "bayes"))
    gh = gen.bayes("softmax", q, 0.5, 2, beta=beta, predictor=predictor)
    assert rq.value == pytest.approx(gh.value, abs=5 * rq.abserr + 2e-4)


@pytest.mark.parametrize("channel,beta", [("softmax", 1.0), ("softmax", 4.0), ("hardmax", 1.0)])
def test_quadrature_converged(channel, beta, monkeypatch):
    vals = []
    from aimlib.channels import base

    for step in (base.NORMAL_STEP, 0.5 * base.NORMAL_STEP):
        monkeypatch.setattr(base, "NORMAL_STEP", step)
        vals.append([gen.bayes(channel, 1.2, 0.5, 2, beta=beta, predictor=p).value
                     for p in ("bayes", "plugin")])
    np.testing.assert_allclose(vals[0], vals[1], rtol=1e-9, atol=1e-12)


def test_limits():
    """alpha -> 0: the estimate is the prior mean, q = rho: the hardmax argmax disagreement is
    arccos(sqrt(rho / Q0)) / pi; perfect recovery: every error vanishes."""
    rho, Q0 = 0.5, 1.5
    assert gen.bayes("hardmax", rho, rho, predictor="argmax").value == pytest.approx(
        math.acos(math.sqrt(rho / Q0)) / math.pi, rel=1e-12)
    small = se.test_error("hardmax", 1e-4, rho, predictor="argmax")
    assert small == pytest.approx(math.acos(math.sqrt(rho / Q0)) / math.pi, rel=1e-3)
    for p in ("bayes", "plugin", "argmax"):
        assert gen.bayes("hardmax", Q0, rho, predictor=p).value == pytest.approx(0, abs=1e-12)
    for p in ("bayes", "plugin"):
        assert se.test_error("softmax", 0.8 / 4, rho, predictor=p) == pytest.approx(0, abs=1e-9)
    # the Bayes predictor is never worse than the plug-in one, and strictly better before
    # perfect recovery
    for a in (0.05, 0.5, 2.0):
        b, pl = (se.test_error("hardmax", a, rho, predictor=p) for p in ("bayes", "plugin"))
        assert 0 < b < pl


@pytest.mark.parametrize("kw,match", [
    (dict(channel="hardmax", q=1.0, rho=0.5, T=5), "T"),
    (dict(channel="softmax", q=1.0, rho=0.5, predictor="argmax"), "argmax"),
    (dict(channel="softmax", q=1.0, rho=0.5, predictor="best"), "predictor"),
    (dict(channel="softmax", q=2.0, rho=0.5), "m\\^2 <= Q Q0"),
    (dict(channel="relu", q=1.0, rho=0.5), "channel"),
])
def test_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        gen.bayes(**kw)
    with pytest.raises(ValueError, match="alpha"):
        se.test_error("softmax", -1.0, 0.5)



@pytest.mark.parametrize("q", [0.3, 1.0, 1.4])
def test_hardmax_row_rqmc_at_t2_matches_the_closed_forms(q):
    """The T >= 3 path (theory §14.5), run at T = 2, against §10's closed forms."""
    from aimlib.channels.hardmax.prediction import row_error_rqmc

    ch = make_channel("hardmax", T=2)
    b = row_error_rqmc(q, q, 1.5, 2, "bayes")
    assert b.value == pytest.approx(ch.bayes_test_error(q, 1.5).value, abs=5 * b.abserr + 1e-6)
    for pred in ("plugin", "argmax"):
        p = row_error_rqmc(0.8 * q, q, 1.5, 2, pred)
        ref = ch.plugin_test_error(0.8 * q, q, 1.5, pred).value
        assert p.value == pytest.approx(ref, abs=5 * p.abserr)


def _symmetric(rng, n, T, scale):
    """``n`` symmetric T x T matrices with ``Var h_aa = 2 scale``, ``Var h_ab = scale``."""
    g = rng.standard_normal((n, T, T))
    return math.sqrt(scale) * (g + g.transpose(0, 2, 1)) / math.sqrt(2.0)


def test_hardmax_test_errors_at_t3_by_monte_carlo():
    """T = 3, against Monte Carlo on whole symmetric matrices (every row at once, no use of the
    row factorisation): the plug-in disagreement from correlated draws of ``h`` and ``h_hat``,
    and the Bayes error from posterior draws ``h = h_hat + sqrt(V) xi`` with the unbiased
    estimate ``(sum_b k_b^2 - K) / (K (K - 1))`` of ``sum_b P_b^2`` from ``K`` draws."""
    T, Q0, q, m = 3, 1.5, 1.0, 0.9
    ch = make_channel("hardmax", T=T)
    rng = np.random.default_rng(11)
    n = 40_000
    hh = _symmetric(rng, n, T, q)
    h = (m / q) * hh + _symmetric(rng, n, T, Q0 - m * m / q)
    diff = np.argmax(h, axis=2) != np.argmax(hh, axis=2)  # (n, T rows)
    mc = 2.0 * diff.sum(axis=1)
    ref = ch.plugin_test_error(m, q, Q0)
    assert ref.value == pytest.approx(mc.mean(), abs=4 * mc.std() / math.sqrt(n) + 4 * ref.abserr)
    # Bayes: K posterior draws per h_hat
    n, K = 4000, 64
    hh = _symmetric(rng, n, T, q)
    post = hh[:, None] + _symmetric(rng, n * K, T, Q0 - q).reshape(n, K, T, T)
    counts = np.stack([(np.argmax(post, axis=3) == b).sum(axis=1) for b in range(T)], -1)
    sum_p2 = ((counts.astype(float) ** 2).sum(axis=2) - K) / (K * (K - 1))  # (n, rows)
    mc = T - sum_p2.sum(axis=1)
    ref = gen.bayes("hardmax", q, 0.5, T=T)
    assert ref.value == pytest.approx(mc.mean(), abs=4 * mc.std() / math.sqrt(n) + 4 * ref.abserr)
