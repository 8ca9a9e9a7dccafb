"""Gradient-descent baselines: analytic gradient, Adam, GD vs AGD, determinism."""

import math

import numpy as np
import pytest

from aimlib import gd, model
from aimlib import state_evolution as se


def test_gradient_matches_central_differences():
    data = model.generate("softmax", 0.4, 0.5, 3, 14, 0, beta=1.7)
    rng = np.random.default_rng(0)
    W = rng.normal(size=(2, data.d, data.r))
    X, y = data.tokens(), data.labels
    loss, grad = gd.loss_and_grad(W, X, y, data.beta)
    eps = 1e-6
    for _ in range(12):
        k, i, j = rng.integers(2), rng.integers(data.d), rng.integers(data.r)
        E = np.zeros_like(W)
        E[k, i, j] = eps
        lp, _ = gd.loss_and_grad(W + E, X, y, data.beta)
        lm, _ = gd.loss_and_grad(W - E, X, y, data.beta)
        assert grad[k, i, j] == pytest.approx((lp[k] - lm[k]) / (2 * eps), rel=1e-5, abs=1e-9)


def test_loss_matches_model_outputs():
    data = model.generate("softmax", 0.3, 0.5, 2, 20, 1, beta=2.0)
    W = np.random.default_rng(2).normal(size=(1, data.d, data.r))
    S = W[0] @ W[0].T / math.sqrt(data.r * data.d)
    y_hat = model.softmax_output(model.attention_indices(data.tokens(), S), 2.0)
    ref = np.sum((y_hat - data.labels) ** 2) / data.d
    loss, _ = gd.loss_and_grad(W, data.tokens(), data.labels, 2.0)
    assert loss[0] == pytest.approx(ref, rel=1e-12)


def test_batched_inits_equal_separate_runs():
    data = model.generate("softmax", 0.2, 0.5, 2, 16, 0)
    a = gd.run(data, inits=3, steps=30, rng=np.random.default_rng(5))
    b = gd.run(data, inits=3, steps=30, rng=np.random.default_rng(5), batch=1)
    np.testing.assert_allclose(a.errors, b.errors, rtol=1e-9)
    assert a.error == pytest.approx(b.error, rel=1e-9)


def test_agd_recovers_above_threshold():
    """alpha_bar = 1.6, well above alpha_bar_c = 0.75 (rho = 0.5): AGD error below 1e-3."""
    res = gd.run_point(0.4, 0.5, 2, 60, 0, inits=8, steps=1000)
    assert res.error < 1e-3
    assert np.all(res.loss[-1] < res.loss[0])


def test_agd_beats_gd_below_threshold():
    abar = 0.4
    res = gd.run_point(abar / 4, 0.5, 2, 60, 1, inits=8, steps=600)
    assert res.error < np.mean(res.errors)
    assert res.error < res.errors[0]
    assert res.error > se.solve("softmax", abar / 4, 0.5).error - 0.05  # not better than Bayes


def test_deterministic():
    a = gd.run_point(0.1, 0.5, 2, 20, 3, inits=2, steps=20)
    b = gd.run_point(0.1, 0.5, 2, 20, 3, inits=2, steps=20)
    assert np.array_equal(a.errors, b.errors) and np.array_equal(a.loss, b.loss)


def test_bad_input_rejected():
    data = model.generate("hardmax", 0.2, 0.5, 2, 10, 0)
    with pytest.raises(ValueError, match="softmax"):
        gd.run(data)
    soft = model.generate("softmax", 0.2, 0.5, 2, 10, 0)
    for kw, match in [(dict(inits=0), "inits"), (dict(steps=0), "steps"), (dict(lr=0.0), "lr")]:
        with pytest.raises(ValueError, match=match):
            gd.run(soft, **kw)
