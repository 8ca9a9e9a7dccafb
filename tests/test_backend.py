"""The array-API backends (aimlib.core.backend) against the numba path, and GD's stopping rule.

The GPU code path is the array-API one; here it runs on NumPy (through array-api-compat) and on
array-api-strict, which rejects every call outside the standard, and must agree with the numba
path in float64 on the same data and seeds.
"""

import importlib.util

import numpy as np
import pytest

from aimlib.algorithms import amp, gd
from aimlib.algorithms import resources as res
from aimlib.channels import make_channel, pair_weights
from aimlib.core import backend as backends
from aimlib.model import generate

pytest.importorskip("array_api_strict")
XP_BACKENDS = ("array_api", "array_api_strict")


# --------------------------------------------------------------------------- GD
@pytest.mark.parametrize("backend", XP_BACKENDS)
@pytest.mark.parametrize("channel,kw", [("softmax", {"beta": 2.0}), ("gaussian", {"delta": 0.1})])
def test_gd_loss_and_grad_match_the_numba_kernel(backend, channel, kw):
    data = generate(channel, 0.1, 0.5, 3, 20, 0, **kw)
    rng = np.random.default_rng(1)
    W = rng.standard_normal((3, data.d, data.r))
    X, y = data.tokens(), np.ascontiguousarray(data.outputs())
    loss, grad = gd.loss_and_grad(W, X, y, data.ch)
    steps = gd.ArraySteps(backends.get(backend), X, y, data.ch, 0.1, "float64")
    be = backends.get(backend)
    loss_x, grad_x = steps.loss_and_grad(be.asarray(W))
    np.testing.assert_allclose(be.to_host(loss_x), loss, rtol=1e-12)
    np.testing.assert_allclose(be.to_host(grad_x), grad, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("backend", XP_BACKENDS)
@pytest.mark.parametrize("stop", ["steps", "holdout"])
def test_gd_runs_agree_with_the_numba_path(backend, stop):
    data = generate("softmax", 0.05, 0.5, 2, 40, 0)
    kw = dict(inits=3, steps=300, stop=stop, stop_window=50, dtype="float64", checkpoints=5)
    ref = gd.run(data, **kw)
    got = gd.run(data, backend=backend, **kw)
    np.testing.assert_array_equal(got.steps_taken, ref.steps_taken)
    np.testing.assert_allclose(got.errors, ref.errors, rtol=0, atol=1e-6)
    assert abs(got.error - ref.error) < 1e-6
    np.testing.assert_allclose(got.checkpoint_errors, ref.checkpoint_errors, atol=1e-6)
    np.testing.assert_allclose(got.S_avg, ref.S_avg, atol=1e-6)


# --------------------------------------------------------------------------- AMP
@pytest.mark.parametrize("channel,kw", [("softmax", {"beta": 0.5}), ("gaussian", {"delta": 0.1})])
def test_output_functions_in_array_api_calls(channel, kw):
    import array_api_strict as xs

    for T in (2, 3):
        data = generate(channel, 0.3, 0.5, T, 15, 0, **kw)
        y = data.outputs()
        om = np.random.default_rng(T).standard_normal(y.shape)
        om = om + np.swapaxes(om, 1, 2)
        ref = data.ch.g_out(y, om, 0.7)
        got = data.ch.g_out_xp(xs, xs.asarray(y), xs.asarray(om), 0.7,
                               xs.asarray(pair_weights(T)))
        np.testing.assert_allclose(np.from_dlpack(got), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", XP_BACKENDS)
@pytest.mark.parametrize("channel,alpha,kw", [("softmax", 0.08, {}),
                                              ("gaussian", 0.3, {"delta": 0.1})])
def test_amp_runs_agree_with_the_numba_path(backend, channel, alpha, kw):
    data = generate(channel, alpha, 0.5, 2, 40, 1, **kw)
    ref = amp.run(data, max_iter=80)
    got = amp.run(data, max_iter=80, backend=backend)
    assert (got.iterations, got.stop_reason) == (ref.iterations, ref.stop_reason)
    assert abs(got.error - ref.error) < 1e-6
    np.testing.assert_allclose(got.S_hat, ref.S_hat, atol=1e-6)


@pytest.mark.parametrize("variant", ["exact", "density"])
def test_amp_hardmax_host_output_function_agrees_over_ten_iterations(variant):
    """Hardmax's output function stays on the host (numba).  Its runs amplify rounding: the
    numba path itself, with another token chunk, moves by 1e-10 in 5 iterations and by 2e-4
    once the run reaches its fixed point, so the paths are compared over 10 iterations."""
    data = generate("hardmax", 0.5, 0.5, 2, 40, 1)
    kw = dict(max_iter=10, tol=1e-30, variant=variant)
    ref = amp.run(data, **kw)
    got = amp.run(data, backend="array_api_strict", **kw)
    np.testing.assert_allclose(got.S_hat, ref.S_hat, atol=1e-6)
    np.testing.assert_allclose(got.history["error"], ref.history["error"], atol=1e-6)


def test_amp_regenerated_tokens_on_a_backend():
    data = generate("softmax", 0.08, 0.5, 2, 40, 2)
    ref = amp.run(data, max_iter=40, chunk=50)
    got = amp.run(data, max_iter=40, chunk=50, token_budget=0, backend="array_api")
    assert abs(got.error - ref.error) < 1e-6


# --------------------------------------------------------------------------- bad input
def test_unknown_backend_named():
    data = generate("softmax", 0.05, 0.5, 2, 20, 0)
    names = r"'numpy', 'array_api', 'array_api_strict', 'cupy', 'torch', got backend='gpu'"
    with pytest.raises(ValueError, match=f"^backend must be one of {names}$"):
        gd.run(data, inits=1, steps=2, backend="gpu")
    with pytest.raises(ValueError, match=f"^backend must be one of {names}$"):
        amp.run(data, backend="gpu")


def test_missing_gpu_package_named_with_the_install_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "cupy" else real(name, *a))
    with pytest.raises(ValueError, match=r"^gd.backend: cupy needs the package 'cupy', which is "
                                         r"not installed \(pip install -e '\.\[gpu\]'\)$"):
        backends.check("cupy", "gd.backend")


def test_config_with_a_missing_gpu_package_fails_before_any_job(monkeypatch, root):
    import jsonschema
    import yaml

    from aimlib.pipeline import config as cfg

    c = yaml.safe_load((root / "config" / "quick.yaml").read_text())
    c["experiments"]["fig4"]["gd"]["backend"] = "torch"
    jsonschema.validate(c, cfg.schema(root / "config" / "schema.yaml"))  # a valid name
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(cfg.ConfigError, match=r"experiments\.fig4\.gd\.backend: torch needs the "
                                              r"package 'torch'"):
        cfg.check(c)


def test_gpu_jobs_request_a_gpu():
    cpu = res.gd(200, 12_000, 6, 100, inits=32, steps=1000)
    gpu = res.gd(200, 12_000, 6, 100, inits=32, steps=1000, backend="cupy")
    assert (cpu.gpu, gpu.gpu) == (0, 1)
    assert res.amp(1000, 100_000, 2, "softmax", backend="torch").gpu == 1
    # the GPU model: the GEMM term of fig2b's largest point at the assumed rate
    flop = 4.0 * 12_000 * 6 * 200 * 100 * 32
    step = res.gd_step_gpu_seconds(200, 12_000, 6, 100, 32, "float32")
    assert step == pytest.approx(flop / res.GPU_GEMM_RATE["float32"]
                                 + (6.0 * 12_000 * 6 * 100 * 32 * 4 + 8.0 * 12_000 * 32 * 36 * 8)
                                 / res.GPU_BANDWIDTH + res.GPU_STEP_OVERHEAD)


# --------------------------------------------------------------------------- stopping rule
def test_stalled():
    assert gd.stalled(1.0, 0.995, 1e-2)
    assert not gd.stalled(1.0, 0.98, 1e-2)
    assert not gd.stalled(np.inf, 0.5, 1e-2)  # the first window has nothing to compare with
    assert gd.stalled(1.0, 1.0, 1e-2)  # a held-out loss that got worse


def test_holdout_run_is_the_fixed_run_stopped_early():
    """Stopping changes when a run ends, not its steps: each initialisation's error equals the
    error of the fixed protocol run to the step it stopped at."""
    data = generate("softmax", 0.05, 0.5, 2, 40, 0)
    got = gd.run(data, inits=3, steps=400, stop="holdout", stop_window=50, dtype="float64")
    assert np.all(got.steps_taken < 400) and got.stop_reason == "holdout"
    for k, s in enumerate(got.steps_taken):
        ref = gd.run(data, inits=3, steps=int(s), stop="steps", dtype="float64")
        assert got.errors[k] == pytest.approx(ref.errors[k], abs=1e-9)


def test_holdout_never_stops_a_run_still_improving():
    """Above the threshold the held-out loss keeps falling as a power of the steps: every
    initialisation runs to the cap; the same rule, window and cap stop every initialisation
    early below the threshold, where the held-out loss levels off (so the rule is live, not
    one that never fires)."""
    data = generate("softmax", 0.9 / 4, 0.5, 2, 30, 0)
    got = gd.run(data, inits=3, steps=600, stop="holdout", stop_window=100)
    assert np.all(got.steps_taken == 600) and got.stop_reason == "steps"
    assert np.all(got.capped)
    below = gd.run(generate("softmax", 0.05, 0.5, 2, 30, 0), inits=3, steps=600,
                   stop="holdout", stop_window=100)
    assert np.all(below.steps_taken < 600) and below.stop_reason == "holdout"
    assert not np.any(below.capped)


def test_checkpoints_end_at_the_final_errors():
    data = generate("softmax", 0.05, 0.5, 2, 30, 0)
    got = gd.run(data, inits=3, steps=200, stop="holdout", stop_window=50, checkpoints=6)
    assert got.checkpoint_steps[0] == 1 and got.checkpoint_steps[-1] == 200
    np.testing.assert_allclose(got.checkpoint_errors[-1], got.errors, rtol=1e-12)
    assert got.checkpoint_agd[-1] == pytest.approx(got.error, rel=1e-12)
    ds = got.to_dataset()
    assert ds["checkpoint"].values.tolist() == got.checkpoint_steps.tolist()
    assert ds["steps_taken"].values.tolist() == got.steps_taken.tolist()


def test_expected_steps_model_describes_the_stopping_rule():
    """The cost model's steps under ``stop: holdout`` are what the rule does: below the
    threshold the measured mean steps per initialisation (d = 30, 40; alpha_bar 0.1-0.3; the
    model's window 100 and tolerance 1e-2) within a factor of two of the model's, above it the
    cap; under ``stop: steps`` the cap."""
    opts = {"steps": 2000, "stop": "holdout", "stop_window": 100, "stop_tol": 1e-2}
    taken = []
    for ab in (0.1, 0.2, 0.3):
        assert res.gd_expected_steps(opts, "softmax", 2, ab / 4, 0.5) == res.HOLDOUT_STEPS_BELOW
        for d in (30, 40):
            run = gd.run(generate("softmax", ab / 4, 0.5, 2, d, 0), inits=4, steps=2000,
                         stop="holdout", stop_window=100, stop_tol=1e-2)
            taken += run.steps_taken.tolist()
    # measured: 200-600 steps, mean 292 (the model: 400, from benchmarks/bench_gd_stop.py)
    assert 0.5 < np.mean(taken) / res.HOLDOUT_STEPS_BELOW < 2.0
    assert res.gd_expected_steps(opts, "softmax", 2, 0.9 / 4, 0.5) == 2000.0
    above = gd.run(generate("softmax", 0.9 / 4, 0.5, 2, 30, 0), inits=3, steps=600,
                   stop="holdout", stop_window=100)
    assert np.all(above.steps_taken == 600)
    assert res.gd_expected_steps({"steps": 1000, "stop": "steps"}, "softmax", 2, 0.01, 0.5) \
        == 1000.0


def test_channel_without_gd_layer_xp_is_not_a_gd_channel():
    assert not make_channel("hardmax").SUPPORTS_GD
    assert all(hasattr(make_channel(c), "gd_layer_xp") for c in ("softmax", "gaussian"))


def test_a_gpu_job_asks_the_slurm_plugin_for_one_gpu():
    """A data job of a GPU backend requests gpu=1 (the rule's ``gpu`` resource), which the
    SLURM executor plugin turns into ``--gpus=1``; a CPU job's gpu=0 adds nothing."""
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    from aimlib.pipeline import config as cfg
    from aimlib.pipeline import cost

    class _Res(dict):
        __getattr__ = dict.get

    class _Job:
        def __init__(self, gpu):
            self.resources = _Res(gpu=gpu)

    conf = {"seed": 1, "experiments": {"e": {
        "channel": "softmax", "T": 2, "rho": 0.5,
        "gd": {"d": 20, "seeds": 2, "inits": 2, "steps": 10, "alpha": {"values": [0.1]}}}}}
    cfg.fill_defaults(conf)
    plan = cfg.plan(conf)
    (g,) = plan.groups("gd", "e")
    opts = plan.options("gd", "e", g.d)
    cpu = cost.data_job(g, 0.1, opts)
    gpu = cost.data_job(g, 0.1, {**opts, "backend": "cupy"})
    assert (cpu.gpu, gpu.gpu) == (0, 1)
    assert set_gres_string(_Job(gpu.gpu)).strip() == "--gpus=1"
    assert set_gres_string(_Job(cpu.gpu)) == ""
