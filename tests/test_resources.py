"""Resource requests of the jobs: scaling with d and n, the 12 GiB ceiling, retries."""

import math

import pytest
import yaml

from aimlib.algorithms import ALGORITHMS
from aimlib.algorithms import resources as res
from aimlib.model import sizes
from aimlib.pipeline import config as cfg
from aimlib.pipeline import cost


def test_amp_request_grows_with_size():
    small = res.amp(100, 5_000, 2, "hardmax")
    big = res.amp(1000, 400_000, 2, "hardmax", dtype="float32")
    assert small.threads == 1 and big.threads == 2
    assert small.mem_mb < big.mem_mb <= res.MAX_MEM_MB
    assert small.runtime < big.runtime
    # Memory follows the token array while it fits the budget: n T d * 4 bytes in float32.
    assert big.mem_mb * 1e6 > 400_000 * 2 * 1000 * 4


def test_amp_tokens_regenerated_above_budget():
    """Above the token budget only a chunk is held: memory stops growing with n * d."""
    n_fit = int(res.TOKEN_BUDGET / (2 * 1000 * 8)) - 1
    fits = res.amp(1000, n_fit, 2, "softmax")
    over = res.amp(1000, 2 * n_fit, 2, "softmax")
    assert over.mem_mb < fits.mem_mb
    assert over.runtime > fits.runtime  # regeneration costs time instead


def test_retry_attempt_scales_runtime_only():
    a1 = res.amp(200, 40_000, 2, "softmax", attempt=1)
    a2 = res.amp(200, 40_000, 2, "softmax", attempt=2)
    assert a2.runtime >= 2 * a1.runtime - 1 and a2.mem_mb == a1.mem_mb


def test_dtype_auto():
    assert res.amp_dtype("auto", 200) == "float64"
    assert res.amp_dtype("auto", 500) == "float32"
    assert res.amp_dtype("float64", 1000) == "float64"
    with pytest.raises(ValueError, match="dtype"):
        res.amp_dtype("float16", 100)


def test_gd_request_matches_measured_cost():
    """Adam at d = 200, alpha = 0.1, rho = 0.5, 1000 steps, float32 products, one BLAS thread
    (measured on the 2-core test machine): 13.1 s for K = 1, 322 s for K = 32.  The time model is
    within 50 % of both, and the requests cover them."""
    r, n = sizes(0.1, 0.5, 200)
    assert res.gd_seconds(200, n, 2, r, inits=1, steps=1000) == pytest.approx(13.1, rel=0.5)
    assert res.gd_seconds(200, n, 2, r, inits=32, steps=1000) == pytest.approx(322, rel=0.5)
    one = res.gd(200, n, 2, r, inits=1, steps=1000)
    many = res.gd(200, n, 2, r, inits=32, steps=1000)
    assert 13.1 / 60 < one.runtime < 30 and 322 / 60 < many.runtime < 60


def test_over_limit_is_an_error():
    with pytest.raises(ValueError, match="limit"):
        res.gd(1000, 10_000_000, 2, 200, inits=1, steps=1)


def test_every_paper_job_fits_12_gib(root):
    """Every data job of the paper preset, every algorithm, gets a request below MAX_MEM_MB (the
    issue's 12 GiB)."""
    conf = yaml.safe_load((root / "config" / "config.yaml").read_text())
    cfg.fill_defaults(conf)
    plan = cfg.plan(conf)
    worst = {}
    for stage in ALGORITHMS:
        for g in plan.groups(stage):
            opts = plan.group_options(g)
            for alpha in g.alphas:
                worst[stage] = max(worst.get(stage, 0),
                                   cost.data_job(g, alpha, opts).mem_mb)
    assert set(worst) == set(ALGORITHMS)
    assert all(0 < v <= res.MAX_MEM_MB for v in worst.values()), worst


def test_amp_memory_model_bounds_measured_peak():
    """The AMP memory model (without the interpreter baseline) bounds what tracemalloc sees."""
    import tracemalloc

    from aimlib import amp, model

    data = model.generate("hardmax", 2.0, 0.5, 2, 60, 0)
    tracemalloc.start()
    amp.run(data, max_iter=3, tol=1e-30, token_budget=res.TOKEN_BUDGET)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    model_bytes = res.amp_model(data.d, data.n, data.T, "hardmax", "float64", res.CHUNK)[0]
    # the model counts what a run holds: above the measured peak, and not by more than 2x
    assert peak < model_bytes < 2.0 * peak
    req = res.amp(data.d, data.n, data.T, "hardmax", max_iter=3)
    assert req.mem_mb == 100 * math.ceil((res.BASE_MB + 1.25 * model_bytes / 1e6) / 100)


def test_a_job_of_several_seeds_asks_for_their_time_not_more_memory():
    """A data job runs every seed of its point in series: time adds up, memory does not."""
    one = res.amp(100, 80_000, 2, "hardmax", max_iter=200)
    many = res.amp(100, 80_000, 2, "hardmax", max_iter=200, runs=16)
    assert many.mem_mb == one.mem_mb
    floor = 5
    assert (many.runtime - floor) == pytest.approx(16 * (one.runtime - floor), rel=0.02, abs=16)
    g1 = res.gd(200, 12_000, 6, 100, inits=32, steps=1000)
    g16 = res.gd(200, 12_000, 6, 100, inits=32, steps=1000, runs=16)
    assert g16.mem_mb == g1.mem_mb
    assert (g16.runtime - floor) == pytest.approx(16 * (g1.runtime - floor), rel=0.02, abs=16)


def test_cost_estimate_adds_up_the_per_run_models():
    """estimate(): per figure, seeds x the per-run model of each point plus start-up per job."""
    conf = {"seed": 1, "se": {"tol": 1e-10}, "experiments": {"e": {
        "channel": "hardmax", "T": 2, "rho": [0.5],
        "se": {"alpha": {"values": [0.1, 0.2, 0.3]}},
        "amp": {"d": 50, "seeds": 3, "damping": 0.0, "max_iter": 80,
                "alpha": {"values": [0.5, 1.0]}}}}}
    est = cost.estimate(conf)
    # jobs: one SE curve, two AMP points, one aggregate, the figure
    assert est.jobs == {"e": 5}
    its = res.expected_amp_iterations("hardmax", 80)  # the model's iterations, capped by max_iter
    amp_s = sum(3 * res.amp_seconds(50, sizes(a, 0.5, 50)[1], 2, "hardmax", iterations=its)
                for a in (0.5, 1.0))
    assert est.by_stage["e"]["AMP"] == pytest.approx(amp_s / 3600)
    assert est.by_stage["e"]["start-up"] == pytest.approx(5 * cost.JOB_STARTUP_SECONDS / 3600)
    assert est.by_stage["e"]["SE"] == pytest.approx(2 * 3 * cost.SE_POINT_SECONDS / 3600)
    assert est.wall_hours(2) == pytest.approx(est.cpu_hours["e"] / 2)
    assert "e " in est.summary(2) and "wall time at 2 cores" in est.summary(2)
