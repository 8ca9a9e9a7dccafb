"""GD's student width, initialisation scale and optimiser (issue 36; docs/theory.md §16):
the plain gradient-descent step against the numpy update, the driver's step scale against one
explicit step, NumPy against array_api_strict, the defaults bit for bit the paper's, and bad
input named."""

import math

import numpy as np
import pytest

from aimlib import model
from aimlib.algorithms import gd
from aimlib.algorithms.gd_steps import NumbaSteps, loss_and_grad
from aimlib.channels import make_channel


@pytest.mark.parametrize("dtype,centre", [("float64", 1.0), ("float32", 1.0), ("float64", 0.7)])
def test_gd_step_kernel_is_bitwise_the_numpy_update(dtype, centre):
    """The CPU path's plain step (:func:`aimlib.core.kernels.gd_step` on the backward product)
    gives bit for bit ``W - eta grad`` with the gradient of :func:`loss_and_grad`, over 20
    steps."""
    rng = np.random.default_rng(4)
    K, d, r, n, T, eta = 3, 12, 5, 40, 3, 0.05
    data = model.generate("softmax", n / d**2, r / d, T, d, 0)
    X, y = data.tokens().astype(dtype), data.labels
    ch = make_channel("softmax", T=T)
    W0 = rng.standard_normal((K, d, r))
    steps = NumbaSteps(X, y, ch, 0.1, dtype, centre=centre, eta=eta)
    steps.start(W0.copy())
    W = W0.copy()
    work = np.empty(2 * n * T * K * r, dtype=dtype)
    for t in range(1, 21):
        loss, g = loss_and_grad(W, X, y, ch, work=work, centre=centre)
        W = W - eta * g
        np.testing.assert_array_equal(steps.step(t), loss)
    np.testing.assert_allclose(steps.W, W, rtol=0, atol=1e-14)
    assert np.abs(W - W0).max() > 1e-3  # the students moved


def _data(T=1, d=24, alpha=0.6, rho=0.25):
    return model.generate("gaussian", alpha, rho, T, d, 0, delta=0.0)


def test_the_driver_takes_one_step_of_step_size_in_flow_time():
    """``optimizer="gd"``: one step is ``W - step_size (d^2 / n) grad(loss)`` from the
    initialisation ``init_scale N(0, 1)`` drawn from the run's generator, at the chosen
    width."""
    data = _data()
    d, n = data.d, data.n
    width, scale, step = 0.5, 0.3, 0.4
    r = round(width * d)
    W0 = scale * np.random.default_rng(11).standard_normal((1, d, r))
    _, g = loss_and_grad(W0, data.tokens(), data.outputs(), data.ch)
    W1 = W0 - step * d * d / n * g
    S1 = W1[0] @ W1[0].T / math.sqrt(r * d)
    res = gd.run(data, inits=1, steps=1, rng=np.random.default_rng(11), optimizer="gd",
                 step_size=step, width=width, init_scale=scale, dtype="float64")
    np.testing.assert_allclose(res.S_first, S1, rtol=0, atol=1e-12)
    assert res.error == pytest.approx(np.sum((S1 - data.S) ** 2) / d, rel=1e-12)


def test_defaults_are_the_papers_bit_for_bit():
    """``width=None`` (the teacher's), ``init_scale=1`` and ``optimizer="adam"`` are the run
    before these options existed: the explicit teacher's width and scale give the same bits."""
    data = _data()
    a = gd.run(data, inits=3, steps=30)
    b = gd.run(data, inits=3, steps=30, width=data.r / data.d, init_scale=1.0, optimizer="adam")
    np.testing.assert_array_equal(a.errors, b.errors)
    np.testing.assert_array_equal(a.S_avg, b.S_avg)


def test_a_small_initialisation_starts_at_zero():
    """With ``init_scale`` 1e-4 and a step too small to move, the estimate is ``S0 ~ 1e-8`` and
    the error the teacher's norm ``(1/d) ||S*||^2``."""
    data = _data()
    res = gd.run(data, inits=2, steps=1, optimizer="gd", step_size=1e-12, init_scale=1e-4)
    assert res.errors == pytest.approx(np.full(2, np.sum(data.S ** 2) / data.d), rel=1e-6)


@pytest.mark.parametrize("cell", [("tied", "self"), ("untied", "cross")])
def test_numpy_and_array_api_agree_for_a_wide_student_with_plain_gd(cell):
    pytest.importorskip("array_api_strict")
    prior, attention = cell
    data = model.generate("softmax", 0.3, 0.25, 2, 16, 0, prior=prior, attention=attention)
    kw = dict(inits=2, steps=15, optimizer="gd", step_size=0.3, width=0.5, dtype="float64")
    a = gd.run(data, **kw)
    b = gd.run(data, backend="array_api_strict", **kw)
    np.testing.assert_allclose(a.errors, b.errors, rtol=1e-10)
    assert a.S_avg.shape == (16, 16)


def test_plain_gd_recovers_above_the_threshold_with_a_wide_student():
    """Noiseless Gaussian channel, T = 1, kappa* = 0.25, kappa = 0.5: alpha = 0.6 is above the
    conjectured threshold (0.382) and plain gradient descent reaches the teacher; the student's
    rank is recorded by the job."""
    from aimlib.algorithms import ALGORITHMS
    from aimlib.theory import gradient_flow

    assert gradient_flow.threshold(0.25, 0.5) < 0.6
    data = _data()
    res = gd.run(data, inits=1, steps=3000, optimizer="gd", width=0.5)
    assert res.error < 1e-3  # from 1.3 at the start; the flow's tail is a power law
    assert ALGORITHMS["gd"].student_rank(data, {"width": 0.5}) == 12


def test_a_narrow_student_reaches_the_best_approximation_it_can_represent():
    """kappa = 0.125 < kappa* = 0.25 at alpha = 3: the population loss is ||S - S*||_F^2
    (T = 1), so GD's error is the Eckart-Young floor of the rank-3 PSD truncation of S*, to the
    finite-sample deviation (10 %)."""
    data = _data(alpha=3.0)
    lam = np.sort(np.linalg.eigvalsh(data.S))[::-1]
    floor = np.sum(lam[3:] ** 2) / data.d
    res = gd.run(data, inits=1, steps=2000, width=0.125)
    assert res.error == pytest.approx(floor, rel=0.1)


@pytest.mark.parametrize("opts,key", [({"width": 0.0}, "width"), ({"width": -1.0}, "width"),
                                      ({"optimizer": "sgd"}, "optimizer"),
                                      ({"step_size": 0.0}, "step_size"),
                                      ({"init_scale": -0.1}, "init_scale"),
                                      ({"width": [0.2, 0.5]}, "width")])
def test_bad_options_are_named(opts, key):
    with pytest.raises(ValueError, match=rf"^{key} must be"):
        gd.run(_data(), inits=1, steps=1, **opts)


# ---------------------------------------------------------------------------------------------
# the config: swept options (a list of widths or optimisers is one group each)
# ---------------------------------------------------------------------------------------------
def _sweep_config(**gd_block):
    block = {"d": 40, "seeds": 2, "inits": 2, "steps": 100, "alpha": {"values": [0.15, 0.3]},
             **gd_block}
    return {"seed": 1, "se": {}, "experiments": {"w": {
        "channel": "gaussian", "T": 1, "rho": 0.2, "delta": 0.0, "gd": block}}}


def test_a_list_of_widths_and_optimisers_is_one_group_each(root, monkeypatch):
    import re

    from aimlib.pipeline import config as cfg
    from aimlib.pipeline import paths

    monkeypatch.chdir(root)
    conf = cfg.validate(_sweep_config(optimizer=["adam", "gd"], width=[0.2, 1.0]),
                        "config/schema.yaml")
    plan = cfg.plan(conf)
    groups = plan.groups("gd", "w")
    assert sorted((plan.group_options(g)["optimizer"], plan.group_options(g)["width"])
                  for g in groups) == [("adam", 0.2), ("adam", 1.0), ("gd", 0.2), ("gd", 1.0)]
    names = sorted(paths.agg_files(plan, "w", "agd"))
    assert names[0] == ("data/agg/w/agd_gaussian_exact_T1_delta0.0-optimizeradam-width0.2_"
                        "rho0.2_d40.nc")
    # the {cpar} wildcard of workflow/rules/common.smk accepts every name the plan makes
    flt = r"[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?"
    pattern = r"(_delta" + flt + ")?" + paths.sweep_pattern(flt)
    assert all(re.fullmatch(pattern, g.cpar) for g in groups)
    # a scalar stays one group, with the file names it always had
    plain = cfg.plan(cfg.validate(_sweep_config(width=0.5), "config/schema.yaml"))
    (g,) = plain.groups("gd", "w")
    assert g.cpar == "_delta0.0" and plain.group_options(g)["width"] == 0.5


@pytest.mark.parametrize("block,message", [
    ({"width": [0.2, -1.0]}, r"experiments\.w\.gd\.width\[1\]"),
    ({"width": 0.0}, r"experiments\.w\.gd\.width"),
    ({"optimizer": ["adam", "sgd"]}, r"experiments\.w\.gd\.optimizer\[1\]"),
    ({"step_size": -0.1}, r"experiments\.w\.gd\.step_size"),
    ({"lr": [0.1, 0.2]}, r"experiments\.w\.gd\.lr"),  # not a swept option
])
def test_bad_swept_options_are_named_before_any_job(root, monkeypatch, block, message):
    from aimlib.pipeline import config as cfg

    monkeypatch.chdir(root)
    with pytest.raises(cfg.ConfigError, match=message):
        cfg.validate(_sweep_config(**block), "config/schema.yaml")
