"""Checks parametrised over the channel registry, and the Gaussian output channel
(docs/theory.md §11): g_out against log Z_out, SE q_hat against Monte Carlo of g_out, the
noiseless thresholds, AMP against SE, the GD layer against numpy, and a new channel that needs
no edit outside its module."""

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from aimlib import amp, channels, gd, model
from aimlib import state_evolution as se
from aimlib.channels import CHANNELS, Channel, identities, make_channel, pair_weights

ALL = sorted(CHANNELS)


def _some(name, T=None):
    """An instance of each registered channel away from its defaults."""
    cls = CHANNELS[name]
    T = cls.T_MIN if T is None else T
    kw = {cls.PARAM: 0.7} if cls.PARAM else {}
    if name == "gaussian":
        kw = {"delta": 0.3}
    return cls(T=T, **kw)


def _draw(ch, rng, n, q, V):
    return identities.draw(ch, rng, n, q, V)


@pytest.mark.parametrize("name", ALL)
def test_registry_entry_is_complete(name):
    cls = CHANNELS[name]
    assert cls.name == name and cls.label and issubclass(cls, Channel)
    ch = _some(name)
    assert make_channel(name, **ch.params) == ch
    assert ch.alpha_bar_factor(0.5) > 0 and ch.G_OUT_SECONDS > 0
    h = np.random.default_rng(0).standard_normal((5, ch.T, ch.T))
    h = h + h.swapaxes(1, 2)
    lab = ch.labels(h, np.random.default_rng(1))
    assert lab.shape == ch.label_shape(5) and ch.outputs(lab).shape == (5, ch.T, ch.T)


@pytest.mark.parametrize("name,T", [(n, T) for n in ALL for T in (1, 2, 3)
                                    if CHANNELS[n].T_MIN <= T <= (CHANNELS[n].T_MAX or 9)])
def test_every_channel_satisfies_its_identities(name, T):
    """The library's own checks (aimlib.channels.identities), as a new channel's author runs them:
    q_hat(alpha, q, V) = 2 alpha E[sum_{a<=b} w g^2] with g the AMP output function on samples
    drawn from the channel itself; the Nishimori identity E[sum w g^2] = E[sum w (-dg/domega)];
    g_out the gradient of log Z_out where the channel has one. Where g_out is a Genz integral
    (hardmax, T >= 3: about 1e-4 s a sample) 60,000 samples give q_hat's Monte Carlo a standard
    error of 0.36 % (the T = 3 table is 0.8 % off it; test_orthant.py checks the table against
    the rule it tabulates), and a fifth of them resolve the identity to about 1 %."""
    ch = _some(name, T)
    done = identities.check_channel(ch, np.random.default_rng(5))
    names = [c.name for c in done]
    assert names[:2] == ["q_hat / 2 = E[sum w g^2]", "E[sum w g^2] = E[sum w (-dg/domega)]"]
    assert (len(done) == 3) == (identities.has_log_z(ch) and not identities.is_integrated(ch))
    assert all(c.ok for c in done)


def test_the_checks_catch_a_wrong_output_function():
    """The published hardmax density g_out (docs/theory.md §7) fails the Nishimori identity and
    the gradient of the exact log Z_out: the checks are not tautologies."""
    exact = make_channel("hardmax", T=2)
    wrong = make_channel("hardmax", T=2, variant="density")

    class Published(type(exact)):
        def g_out(self, y, omega, V):
            return wrong.g_out(y, omega, V)

    pub = Published(T=2)
    rng = np.random.default_rng(3)
    # measured: 0.768 against 0.893 (14 %, tolerance 0.026) at q = 0.2, V = 1, 50,000 samples
    nish = identities.check_nishimori(pub, rng, q=0.2, V=1.0, n=50_000)
    assert not nish.ok and abs(nish.left - nish.right) > 0.1 * abs(nish.right)
    # its SE update is the exact channel's, about twice the Monte Carlo of its g_out
    se_ = identities.check_se_update(pub, rng, n=50_000)
    assert not se_.ok and se_.left > 1.5 * se_.right
    assert not identities.check_log_z_gradient(pub, rng).ok
    with pytest.raises(AssertionError, match="FAILS"):
        identities.check_channel(pub, rng)


def test_gaussian_labels_add_noise_of_variance_delta_per_pair():
    ch = channels.Gaussian(T=3, delta=0.25)
    h = np.zeros((100_000, 3, 3))
    y = ch.labels(h, np.random.default_rng(0))
    np.testing.assert_array_equal(y, y.swapaxes(1, 2))
    iu = np.triu_indices(3)
    v = y[:, iu[0], iu[1]]
    np.testing.assert_allclose(v.var(axis=0), 0.25, rtol=0.02)
    assert abs(np.corrcoef(v.T)[0, 1]) < 0.02


@pytest.mark.parametrize("rho", [0.2, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("T", [1, 2, 3])
def test_gaussian_noiseless_threshold(rho, T):
    """Perfect recovery at alpha T (T + 1) = 2 rho - rho^2 (rho <= 1; 1 above): at T = 1 the
    threshold alpha = rho - rho^2 / 2 of Maillard, Troiani, Martin, Krzakala, Zdeborova."""
    ac = se.perfect_recovery_threshold("gaussian", rho, T=T)
    expected = (2 * rho - rho**2 if rho <= 1 else 1.0) / (T * (T + 1))
    assert ac == pytest.approx(expected, rel=1e-15)
    if T == 1 and rho <= 1:
        assert ac == pytest.approx(rho - rho**2 / 2, rel=1e-15)
    assert se.solve("gaussian", ac * 1.01, rho, T=T).error < 1e-8
    assert se.solve("gaussian", ac * 0.97, rho, T=T).error > 1e-4
    # the noiseless Gaussian channel and the softmax share the curve in alpha_bar
    if T >= 2:
        abar = 0.7 * (2 * rho - rho**2 if rho <= 1 else 1.0)
        g = se.solve("gaussian", abar / (T * (T + 1)), rho, T=T).error
        s = se.solve("softmax", abar / (T * T + T - 2), rho, T=T).error
        assert g == pytest.approx(s, abs=1e-8)


def test_gaussian_noise_limits():
    """delta -> 0 is continuous; delta -> infinity leaves the prior: error -> 1; and in between
    the error grows with the noise."""
    a, rho = 0.2, 0.5
    e0 = se.solve("gaussian", a, rho, T=1).error
    assert se.solve("gaussian", a, rho, T=1, delta=1e-9).error == pytest.approx(e0, abs=1e-6)
    errs = [se.solve("gaussian", a, rho, T=1, delta=d).error for d in (0.1, 1.0, 10.0, 1e6)]
    assert errs == sorted(errs) and errs[0] > e0
    assert errs[-1] == pytest.approx(1.0, abs=1e-5)
    # large delta: q_hat = 2 alpha sum_{a<=b} w / delta = 4 alpha / delta at T = 1 to leading
    # order, and the error is 1 - q_hat (the prior channel's mmse(Delta) ~ 1 - 1/Delta)
    d = 1e4
    assert 1 - se.solve("gaussian", a, rho, T=1, delta=d).error == pytest.approx(
        4 * a / d, rel=1e-3)


@pytest.mark.parametrize("T,delta,alpha", [(1, 0.0, 0.25), (1, 0.5, 0.25), (2, 0.5, 0.05)])
def test_gaussian_amp_matches_se(T, delta, alpha):
    """8 seeds at d = 100: the mean error is within 4 standard errors of the seed mean plus 1/d
    (the finite-size gap) of SE; every run converges."""
    ref = se.solve("gaussian", alpha, 0.5, T=T, delta=delta).error
    runs = [amp.run_point("gaussian", alpha, 0.5, T, 100, s, delta=delta) for s in range(8)]
    assert all(r.converged for r in runs)
    e = np.array([r.error for r in runs])
    assert e.mean() == pytest.approx(ref, abs=4 * e.std(ddof=1) / math.sqrt(len(e)) + 1 / 100)


def _reference_square(W, X, y):
    K, d, r = W.shape
    c = math.sqrt(r * d) * math.sqrt(d)
    loss, grad = np.zeros(K), np.zeros_like(W)
    for k in range(K):
        S = W[k] @ W[k].T / c
        h = np.einsum("nai,ij,nbj->nab", X, S, X) - np.eye(X.shape[1]) * np.trace(S)
        E = h - y
        loss[k] = np.sum(E**2) / d
        G = 2 * E / d  # dL/dh, h = (X W W^T X^T - tr) / c
        Gs = G + G.swapaxes(1, 2)
        grad[k] = (np.einsum("nai,nab,nbj->ij", X, Gs, X) @ W[k]
                   - 2 * np.trace(G, axis1=1, axis2=2).sum() * W[k]) / c
    return loss, grad


@pytest.mark.parametrize("T", [1, 3])
def test_gaussian_gd_layer_matches_numpy_and_finite_differences(T):
    data = model.generate("gaussian", 0.6 / (T * (T + 1)), 0.5, T, 12, 0, delta=0.2)
    rng = np.random.default_rng(0)
    W = rng.standard_normal((2, data.d, data.r))
    X, y = data.tokens(), data.outputs()
    loss, grad = gd.loss_and_grad(W, X, y, data.ch)
    ref_loss, ref_grad = _reference_square(W, X, y)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-12)
    E = np.zeros_like(W)
    E[1, 3, 1] = 1e-6
    lp, _ = gd.loss_and_grad(W + E, X, y, data.ch)
    lm, _ = gd.loss_and_grad(W - E, X, y, data.ch)
    assert (lp[1] - lm[1]) / 2e-6 == pytest.approx(grad[1, 3, 1], rel=1e-6)


def test_gaussian_gd_noiseless_recovers_the_teacher():
    """Above the noiseless threshold GD on the squared loss finds the teacher (T = 1, rho = 0.5,
    alpha = 0.5 > 0.375), as reported for the quadratic network."""
    res = gd.run_point(0.5, 0.5, 1, 40, 0, inits=2, channel="gaussian", delta=0.0, steps=1000)
    np.testing.assert_allclose(res.errors, 0.0, atol=1e-4)


@pytest.mark.parametrize("kw,match", [
    (dict(channel="gaussian", delta=-0.1), "delta"),
    (dict(channel="gaussian", T=0), "T must be an integer >= 1"),
    (dict(channel="gaussian", delta=float("nan")), "delta"),
    (dict(channel="relu"), "softmax.*hardmax.*gaussian"),
    (dict(channel="softmax", delta=0.1), "delta does not apply"),
])
def test_bad_gaussian_input(kw, match):
    name = kw.pop("channel")
    with pytest.raises(ValueError, match=match):
        make_channel(name, **kw)
    with pytest.raises(ValueError, match=match):
        se.solve(name, 0.1, 0.5, **kw)
    with pytest.raises(ValueError, match=match):
        model.generate(name, 0.1, 0.5, kw.pop("T", 1 if name == "gaussian" else 2), 20, 0, **kw)


# ------------------------------------------------------------------------------------------
# a new channel needs its module and one registry line, nothing else
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scaled(Channel):
    """A test channel: ``y = 2 h + sqrt(s) z`` on the pairs (a rescaled Gaussian channel)."""

    T: int = 1
    s: float = 1.0

    name: ClassVar[str] = "scaled"
    label: ClassVar[str] = "scaled"
    T_MIN: ClassVar[int] = 1
    PARAM: ClassVar[str] = "s"
    NOISY: ClassVar[bool] = True

    def alpha_bar_factor(self, rho):
        return 1.0

    def labels(self, h, rng):
        iu = np.triu_indices(self.T)
        z = np.zeros_like(h)
        z[:, iu[0], iu[1]] = rng.standard_normal((h.shape[0], iu[0].size))
        return 2 * h + math.sqrt(self.s) * (z + np.triu(z, 1).swapaxes(1, 2))

    def predict(self, h):
        return 2 * h

    def g_out(self, y, omega, V):
        return 2 * (y - 2 * omega) / (4 * pair_weights(self.T) * V + self.s)

    def q_hat(self, alpha, q, V):
        w = pair_weights(self.T)[np.triu_indices(self.T)]
        return 2 * alpha * float(np.sum(4 * w / (4 * w * V + self.s)))


def test_new_channel_needs_only_a_registry_line(monkeypatch, root):
    """Registered, the test channel works through the model, SE, AMP, the config checks and the
    schema; it is the Gaussian channel with delta = s / 4, so SE must agree with it."""
    from aimlib.pipeline import config as cfg

    monkeypatch.setitem(CHANNELS, "scaled", Scaled)
    e = se.solve("scaled", 0.2, 0.5, T=1, s=0.4).error
    assert e == pytest.approx(se.solve("gaussian", 0.2, 0.5, T=1, delta=0.1).error, rel=1e-12)
    data = model.generate("scaled", 0.2, 0.5, 1, 40, 0, s=0.4)
    assert data.labels.shape == (data.n, 1, 1)
    res = amp.run_point("scaled", 0.2, 0.5, 1, 60, 0, s=0.4)
    assert res.converged and abs(res.error - e) < 0.1
    conf = {"seed": 0, "se": {"tol": 1e-10}, "experiments": {"figx": {
        "channel": "scaled", "rho": [0.5], "T": [1], "s": [0.4],
        "se": {"alpha": {"values": [0.1, 0.2]}},
        "amp": {"alpha": {"values": [0.2]}, "d": [40], "seeds": 1}}}}
    cfg.check_schema(conf, root / "config" / "schema.yaml")  # its name and its parameter key
    cfg.check(conf)
    plan = cfg.plan(conf)
    assert [j.channel for j in plan.se_jobs] == ["scaled"]
    assert [g.cpar for g in plan.groups("amp")] == ["_s0.4"]


def _gaussian_conf(**exp):
    base = {"channel": "gaussian", "rho": 0.5, "T": [1, 2], "delta": [0.0, 0.1],
            "se": {"alpha": {"values": [0.1, 0.2]}},
            "amp": {"alpha_bar": {"values": [0.5]}, "d": 40, "seeds": 1}}
    return {"seed": 0, "se": {"tol": 1e-10}, "experiments": {"g": {**base, **exp}}}


@pytest.mark.parametrize("exp,message", [
    (dict(delta=[0.1, -0.2]),
     r"experiments\.g\.delta\[1\]: delta must be a finite number >= 0 for the gaussian channel"),
    # the channel's own rule, on the first run (the schema has no minimum of its own)
    (dict(T=[0]), r"experiments\.g\.T\[0\]: T must be an integer >= 1 for the gaussian channel"),
    (dict(channel="relu"), r"experiments\.g\.channel = 'relu'.*'softmax', 'hardmax', 'gaussian'"),
    (dict(channel="softmax", T=2),
     r"experiments\.g\.delta applies to the gaussian channel only, not to softmax"),
])
def test_config_rejects_bad_gaussian_input(root, exp, message):
    from aimlib.pipeline import config as cfg

    conf = _gaussian_conf(**exp)
    with pytest.raises(cfg.ConfigError, match=message):
        cfg.check_schema(conf, root / "config" / "schema.yaml")
        cfg.check(conf)


def test_gaussian_plan_and_files():
    """One SE curve per (T, delta) (the SE depends on delta), groups keyed by delta, and
    alpha_bar = alpha T (T + 1)."""
    from aimlib.pipeline import config as cfg

    plan = cfg.plan(_gaussian_conf())
    assert sorted((j.T, j.param) for j in plan.se_jobs) == [(1, 0.0), (1, 0.1), (2, 0.0),
                                                          (2, 0.1)]
    groups = plan.groups("amp")
    assert sorted((g.T, g.cpar, g.alphas) for g in groups) == [
        (1, "_delta0.0", (0.25,)), (1, "_delta0.1", (0.25,)),
        (2, "_delta0.0", (0.0833333,)), (2, "_delta0.1", (0.0833333,))]
    g = groups[0]
    assert plan.group("amp", {**g.wildcards, "alpha": "0.25"}) is g
    assert g.channel_params == {"delta": g.param}


@pytest.mark.parametrize("q,V", [(0.5, 0.5), (0.9, 0.2)])
def test_density_variant_second_moment_is_monte_carlo(q, V):
    """The published (density) hardmax output function is not Bayes-optimal, so its second
    moment is no q_hat of the model; the SE quadrature of it (what the paper's curve uses) is
    still the expectation of sum w g^2 over labels drawn from the model, checked by Monte Carlo
    (it differs from the exact g_out's by far more than the Monte Carlo error)."""
    from aimlib.channels import hardmax_second_moment

    exact, dens = make_channel("hardmax"), make_channel("hardmax", variant="density")
    rng = np.random.default_rng(11)
    n = 200_000
    om, y = _draw(exact, rng, n, q, V)
    iu = np.triu_indices(2)
    w = pair_weights(2)[iu]
    for ch, flag in ((dens, True), (exact, False)):
        s = (ch.g_out(y, om, V)[:, iu[0], iu[1]] ** 2) @ w
        mc, sem = s.mean(), s.std() / math.sqrt(n)
        assert hardmax_second_moment(q, V, density=flag) == pytest.approx(mc, abs=5 * sem)
    gap = hardmax_second_moment(q, V, density=True) - hardmax_second_moment(q, V)
    assert abs(gap) > 20 * sem
