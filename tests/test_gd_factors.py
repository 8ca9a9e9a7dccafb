"""GD on the models beyond the paper's (aimlib.algorithms.gd_factors, docs/theory.md §15.5): the
gradient of the factor students against central differences of the loss, in every cell and for
both GD channels; the loss against the model's own indices; the NumPy and array-API paths step
alike; GD and AGD run through gd.run, reproducibly."""

import math

import numpy as np
import pytest

from aimlib.algorithms import gd
from aimlib.algorithms.gd_factors import NUMPY, FactorSteps, estimate
from aimlib.core import backend as backends
from aimlib.model import generate

CELLS = [("cross", "untied"), ("cross", "tied"), ("self", "untied")]


def _data(channel, attention, prior, d=12, alpha=0.3):
    params = {"delta": 0.1} if channel == "gaussian" else {}
    return generate(channel, alpha, 0.5, 2, d, 0, prior=prior, attention=attention, **params)


def _steps(data, be=NUMPY):
    return FactorSteps(be, data.tokens(), data.outputs(), data.ch, 0.1, "float64",
                       T_q=data.T_q, cross=data.attention == "cross",
                       untied=not data.prior.SYMMETRIC)


def _students(data, K, rng):
    r = data.r
    shape = (K, 2, data.d, r) if not data.prior.SYMMETRIC else (K, data.d, r)
    return rng.standard_normal(shape)


@pytest.mark.parametrize("channel", ["softmax", "gaussian"])
@pytest.mark.parametrize("attention, prior", CELLS)
def test_gradient_against_central_differences(channel, attention, prior):
    data = _data(channel, attention, prior)
    st = _steps(data)
    P = _students(data, 2, np.random.default_rng(1))
    loss, grad = st.loss_and_grad(P)
    rng = np.random.default_rng(2)
    for _ in range(6):
        idx = tuple(int(rng.integers(s)) for s in P.shape)
        E = np.zeros_like(P)
        E[idx] = 1e-6
        fd = (st.loss_and_grad(P + E, grad=False)[0] - st.loss_and_grad(P - E, grad=False)[0])
        assert grad[idx] == pytest.approx(fd[idx[0]] / 2e-6, rel=1e-5, abs=1e-9)


@pytest.mark.parametrize("attention, prior", CELLS)
def test_loss_is_that_of_the_model_indices(attention, prior):
    """The students' loss is (1/d) sum ||y(h(S_k)) - y||^2 with the model's own indices of
    S_k = L R^T / sqrt(r d): the factored forward pass is the model's."""
    data = _data("softmax", attention, prior)
    st = _steps(data)
    P = _students(data, 2, np.random.default_rng(3))
    loss, _ = st.loss_and_grad(P)
    X, y = data.tokens(), data.outputs()
    for k in range(2):
        S = estimate(P[k], data.d)
        y_hat = data.ch.predict(data.indices(X, S))
        assert loss[k] == pytest.approx(np.sum((y_hat - y) ** 2) / data.d, rel=1e-10)


def test_array_api_path_steps_alike():
    """Ten Adam steps on NumPy and on array_api_strict agree to rounding."""
    pytest.importorskip("array_api_strict")
    data = _data("softmax", "cross", "untied")
    P = _students(data, 2, np.random.default_rng(4))
    out = []
    for be in (NUMPY, backends.get("array_api_strict")):
        st = _steps(data, be)
        st.start(P)
        for t in range(1, 11):
            st.step(t)
        out.append(st.weights())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("attention, prior", CELLS)
def test_gd_and_agd_run_and_learn(attention, prior):
    """Through gd.run: a run is reproducible, GD's first initialisation is one of AGD's, and
    well above the softmax's perfect-recovery threshold of the cell, 300 steps take the error
    from the random start (about 2, twice the prior's variance) to below a tenth of it."""
    data = _data("softmax", attention, prior, d=20, alpha=1.5)
    a = gd.run(data, inits=2, steps=300, stop="steps")
    b = gd.run(data, inits=2, steps=300, stop="steps")
    np.testing.assert_array_equal(a.errors, b.errors)
    assert a.errors.shape == (2,) and math.isfinite(a.error)
    assert np.all(a.errors < 0.2), a.errors
