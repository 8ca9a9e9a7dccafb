"""AMP: kernels against numpy references, AMP against SE, the published-g_out gap, robustness."""

import math
import tracemalloc

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from aimlib import amp, model, prior
from aimlib import state_evolution as se
from aimlib.channels import Hardmax, Softmax
from aimlib.prior import make_prior, wishart
from aimlib.theory import mismatched


def _sym(rng, n, T, scale):
    A = rng.normal(size=(n, T, T)) * scale
    U = np.triu(A)
    return U + np.swapaxes(np.triu(U, 1), 1, 2)


# ------------------------------------------------------------------------------ kernels


def test_hardmax_gout_kernel_vs_numpy_reference():
    """The numba kernel against Phi_2 from scipy and the closed-form derivative."""
    rng = np.random.default_rng(0)
    n, V = 30, 0.7
    om = _sym(rng, n, 2, 1.0)
    y = model.one_hot(rng.integers(0, 2, size=(n, 2)).astype(np.int8), 2)
    g = Hardmax().g_out(y, om, V)
    sd = math.sqrt(3 * V)
    for m in range(n):
        s1 = 1.0 if y[m, 0, 0] else -1.0
        s2 = 1.0 if y[m, 1, 1] else -1.0
        k1 = s1 * (om[m, 0, 0] - om[m, 0, 1]) / sd
        k2 = s2 * (om[m, 1, 1] - om[m, 0, 1]) / sd
        c = s1 * s2 / 3
        Z = multivariate_normal(mean=[0, 0], cov=[[1, c], [c, 1]]).cdf([k1, k2])
        from scipy.stats import norm

        D1 = norm.pdf(k1) * norm.cdf((k2 - c * k1) / math.sqrt(1 - c * c)) / Z
        D2 = norm.pdf(k2) * norm.cdf((k1 - c * k2) / math.sqrt(1 - c * c)) / Z
        assert g[m, 0, 0] == pytest.approx(s1 * D1 / sd, rel=1e-5)
        assert g[m, 1, 1] == pytest.approx(s2 * D2 / sd, rel=1e-5)
        assert g[m, 0, 1] == pytest.approx(-(s1 * D1 + s2 * D2) / sd, rel=1e-5, abs=1e-9)


def test_softmax_gout_vs_least_squares_reference():
    """The vectorised posterior line against a per-sample constrained least-squares solve."""
    rng = np.random.default_rng(1)
    T, n, V, beta = 3, 20, 0.4, 1.7
    iu, ju = np.triu_indices(T)
    w = np.where(iu == ju, 2.0, 1.0)
    om = _sym(rng, n, T, 1.0)
    h = _sym(rng, n, T, 1.3)
    y = model.softmax_output(h, beta)
    g = Softmax(T=T, beta=beta).g_out(y, om, V)
    for m in range(n):
        # minimise sum_{a<=b} (h_ab - omega_ab)^2 / (w V) subject to the observed row differences
        rows, rhs = [], []
        for a in range(T):
            for b in range(T - 1):
                row = np.zeros(len(iu))
                row[np.flatnonzero(((iu == a) & (ju == b)) | ((iu == b) & (ju == a)))] += 1
                row[np.flatnonzero(((iu == a) & (ju == T - 1)) | ((iu == T - 1) & (ju == a)))] -= 1
                rows.append(row)
                rhs.append(math.log(y[m, a, b] / y[m, a, T - 1]) / beta)
        A, r = np.array(rows), np.array(rhs)
        x0 = np.linalg.lstsq(A, r, rcond=None)[0]
        null = np.ones(len(iu))  # the constraints fix h up to a constant on every pair
        omp = om[m][iu, ju]
        c = np.sum((omp - x0) / w) / np.sum(null / w)
        ref = (x0 + c * null - omp) / (w * V)
        np.testing.assert_allclose(g[m][iu, ju], ref, rtol=1e-8, atol=1e-10)


def test_prior_kernels_vs_numpy_roots():
    """The cubic solvers (Cardano in h = 1/g, and the real-arithmetic Im g) against np.roots."""
    for rho, delta in [(0.5, 1.0), (0.2, 1e-3), (2.0, 0.3), (0.05, 10.0)]:
        s = 1 / math.sqrt(rho)
        e = prior.support(delta, rho)
        for x in np.linspace(e[0, 0] - 0.2, e[-1, 1] + 0.2, 57):
            ref = np.roots([s * delta, -(s * x + delta), x + s - 1 / s, -1.0])
            got = wishart._cubic_roots(x, delta, s)
            for r in ref:  # every reference root has a match
                assert np.min(np.abs(got - r)) < 1e-7 * max(1.0, abs(r))
            assert wishart._im_g(x, delta, s) == pytest.approx(max(ref.imag.max(), 0.0),
                                                             rel=1e-7, abs=1e-9)


def test_rie_clamp_is_continuous_outside_the_support():
    rho, delta = 0.5, 1.0
    (a, b), = prior.support(delta, rho)
    x = np.linspace(b - 0.05, b + 0.05, 41)
    xi = prior.rie_eigenvalues(x, delta, rho)
    assert np.all(np.diff(xi) > 0)
    assert np.max(np.diff(xi)) < 0.05  # no jump at the edge
    far = prior.rie_eigenvalues(np.array([b + 1.0]), delta, rho)
    assert far[0] == pytest.approx(prior.rie_eigenvalues(np.array([b]), delta, rho)[0] + 1.0)


# ------------------------------------------------------------------------------ AMP vs SE

CASES = [
    ("hardmax", 2, 0.2, 100), ("hardmax", 2, 0.4583, 100), ("hardmax", 2, 0.8, 100),
    ("softmax", 2, 0.05, 120), ("softmax", 2, 0.1, 120), ("softmax", 3, 0.03, 100),
]


@pytest.mark.parametrize("channel,T,alpha,d", CASES)
def test_amp_tracks_state_evolution(channel, T, alpha, d):
    """Mean over seeds within 4 standard errors of SE, plus a 6% allowance for O(1/d) effects."""
    errs = []
    for seed in range(4):
        res = amp.run_point(channel, alpha, 0.5, T, d, seed)
        assert res.converged
        errs.append(res.error)
    errs = np.array(errs)
    sem = errs.std(ddof=1) / math.sqrt(len(errs))
    target = se.solve(channel, alpha, 0.5, T=T).error
    assert abs(errs.mean() - target) < 4 * sem + 0.06 * target


def test_amp_perfect_recovery_softmax():
    res = amp.run_point("softmax", 0.1, 0.5, 3, 80, 0)  # alpha_bar = 1 > 0.75
    assert res.converged and res.error < 1e-5


def test_hardmax_correction_amp():
    """AMP with the exact g_out reaches the exact SE (0.237 at alpha = 0.4583, rho = 0.5): the mean
    of two seeds at d = 100 within 0.01, four standard deviations of a two-seed mean (the seed
    spread measured over four seeds is 0.0032), far below the published density curve (0.49).
    With the density g_out AMP follows its own, mismatched, state evolution: a converged run at
    d = 200, alpha = 0.1 is within 0.03 of it (seed spread there about 0.02); the early-iteration
    comparison at alpha = 0.45, where the curves differ, is in tests/test_mismatched.py."""
    alpha = 0.4583
    exact = [amp.run_point("hardmax", alpha, 0.5, 2, 100, s) for s in range(2)]
    assert all(r.converged for r in exact)
    assert np.mean([r.error for r in exact]) == pytest.approx(
        se.solve("hardmax", alpha, 0.5).error, abs=0.01)
    assert se.solve("hardmax", alpha, 0.5, variant="density").error > 0.45
    res = amp.run_point("hardmax", 0.1, 0.5, 2, 200, 1, variant="density")
    assert res.converged
    assert res.error == pytest.approx(mismatched.solve(0.1, 0.5).error, abs=0.03)


def test_hardmax_large_alpha_keeps_the_posterior_trace():
    """Hardmax labels do not see the scale of S (docs/theory.md §4.2).  Left free, the damped
    iteration at alpha_bar = 10 learns the direction and loses the norm: it stalls near 0.35
    although rescaling its estimate along itself would bring the error to the SE's order.
    With the trace kept at the posterior mean's sqrt(r d) (the default) every seed converges:
    the mean of four seeds at d = 60 is within 4 standard errors of SE, plus the 6% allowance
    of the other AMP tests and the exact finite-d scale floor (0.0017 here, SE 0.0040)."""
    d, alpha, rho = 60, 5.0, 0.5
    target = se.solve("hardmax", alpha, rho).error
    errs = []
    for seed in range(4):
        data = model.generate("hardmax", alpha, rho, 2, d, seed)
        res = amp.run(data)
        assert res.converged and res.damping == 0.5
        assert np.trace(res.S_hat) == pytest.approx(math.sqrt(data.r * d), rel=1e-12)
        errs.append(res.error)
    errs = np.array(errs)
    sem = errs.std(ddof=1) / math.sqrt(len(errs))
    floor = prior.scale_floor(d, round(rho * d))
    assert abs(errs.mean() - target) < 4 * sem + 0.06 * target + floor
    data = model.generate("hardmax", alpha, rho, 2, d, 0)
    free = amp.run(data, scale="free", max_restarts=0, max_iter=60)
    assert not free.converged and free.error > 0.1
    m, Q, Q0 = data.overlaps(free.S_hat)
    assert Q0 - m * m / Q < 3 * target  # the direction is right, the norm is not


# ------------------------------------------------------------------------------ robustness


def test_undamped_run_reported_not_converged():
    """Undamped noiseless softmax AMP diverges: stopped after DIVERGENCE_WINDOW growing steps,
    reported as diverged, with the calmest iterate's error (not the exploded last one)."""
    res = amp.run_point("softmax", 0.1, 0.5, 2, 60, 0, damping=0.0, max_restarts=0,
                        max_iter=200)
    assert not res.converged and res.stop_reason == "diverged" and res.restarts == 0
    steps = np.asarray(res.history["step"])
    assert res.iterations == len(steps) and res.iterations < 200
    assert np.all(np.diff(steps[-amp.DIVERGENCE_WINDOW - 1:]) > 0)
    assert res.error == pytest.approx(res.history["error"][int(np.argmin(steps))], rel=1e-12)


def test_restart_with_stronger_damping_recorded():
    res = amp.run_point("softmax", 0.1, 0.5, 2, 60, 0, damping=0.0, max_restarts=3,
                        max_iter=300)
    assert res.restarts >= 1 and res.damping >= 0.5
    assert len(res.history["error"]) == res.iterations


def test_same_seed_same_result():
    a = amp.run_point("hardmax", 0.3, 0.5, 2, 50, 3)
    b = amp.run_point("hardmax", 0.3, 0.5, 2, 50, 3)
    assert a.error == b.error and np.array_equal(a.S_hat, b.S_hat)
    assert np.array_equal(a.history["q_hat"], b.history["q_hat"])


def test_regenerated_tokens_and_float32_agree():
    data = model.generate("hardmax", 1.0, 0.5, 2, 60, 0)
    ref = amp.run(data)
    regen = amp.run(data, token_budget=0)  # tokens regenerated every iteration: bit for bit
    assert regen.error == ref.error
    # Other chunkings and float32 tokens change the rounding only.
    chunked = amp.run(data, token_budget=0, chunk=1000)
    f32 = amp.run(data, dtype=np.float32)
    assert chunked.error == pytest.approx(ref.error, rel=5e-3)
    assert f32.error == pytest.approx(ref.error, rel=5e-3)


def test_memory_is_linear_in_n():
    """No n x T x T x d x d (nor n x d^2) tensor: peak allocations stay a few token arrays."""
    data = model.generate("hardmax", 8.0, 0.5, 2, 60, 0)
    tokens = data.n * data.T * data.d * 8
    tracemalloc.start()
    amp.run(data, max_iter=3, tol=1e-30)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 3 * tokens + 20 * data.n * 8 + 50e6
    assert peak < data.n * data.d**2 * 8 / 10


@pytest.mark.parametrize("kw,match", [
    (dict(damping=1.0), "damping"), (dict(damping=-0.1), "damping"), (dict(tol=0.0), "tol"),
    (dict(max_iter=0), "max_iter"), (dict(scale="fixed"), "scale"),
])
def test_bad_options_rejected(kw, match):
    data = model.generate("hardmax", 0.3, 0.5, 2, 20, 0)
    with pytest.raises(ValueError, match=match):
        amp.run(data, **kw)


def test_consistency_check_and_damping_schedule():
    """A fixed point violating (1/d)||S_hat||^2 = Q0 - V is rejected; restarts alternate damping."""
    d, rho = 40, 0.5
    S = model.teacher(d, 20, np.random.default_rng(0))[1]
    assert not amp._inconsistent(S, 0.0, make_prior("tied", rho))  # the teacher: norm Q0
    assert amp._inconsistent(3.0 * S, 0.0, make_prior("tied", rho))
    # the tolerance is 4 measured standard deviations of the residual at rank min(r, d)
    assert amp.consistency_tolerance(100, 0.1) == pytest.approx(4 * 0.21 / np.sqrt(10))
    assert amp.consistency_tolerance(100, 2.0) == pytest.approx(4 * 0.21 / 10)
    Q0, tol, norm = 1.0 + rho, amp.consistency_tolerance(d, rho), np.sum(S * S) / d
    for f, rejected in ((0.9, False), (1.1, True), (-0.9, False), (-1.1, True)):
        scale = np.sqrt((Q0 + f * tol * Q0) / norm)
        assert amp._inconsistent(scale * S, 0.0, make_prior("tied", rho)) is rejected
    assert [amp._next_damping(0.5, k) for k in (1, 2, 3)] == [0.0, 0.75, 0.875]
    assert amp._next_damping(0.0, 1) == 0.5


def test_float32_products_at_finite_size_parameters():
    """fig3 runs AMP's products in float32 from d = 500 (dtype: auto); at its rho = 0.2 the error
    moves by far less than the seed-to-seed spread (here at d = 200, where both are cheap)."""
    data = model.generate("softmax", 0.04, 0.2, 2, 200, 0)
    f64 = amp.run(data)
    f32 = amp.run(data, dtype=np.float32)
    assert f64.converged and f32.converged
    assert f32.error == pytest.approx(f64.error, rel=2e-3)


def test_non_converged_run_reports_most_consistent_attempt():
    """When no attempt converges, the reported one is the finite attempt closest to Nishimori
    consistency, not simply the last (most damped) one; the work of all attempts is capped."""
    S = model.teacher(40, 20, np.random.default_rng(0))[1]
    assert amp._consistency_residual(S, 1e12, make_prior("tied", 0.5)) < 0.05  # teacher
    assert amp._consistency_residual(3.0 * S, 1e12, make_prior("tied", 0.5)) > 1.0
    assert amp._consistency_residual(S, float("nan"), make_prior("tied", 0.5)) == float("inf")
    data = model.generate("softmax", 0.1, 0.5, 2, 60, 0)
    # undamped it diverges after 26 iterations; the restart (damping 0.5) would converge after
    # 45 more, but the shared budget of 60 stops it first
    res = amp.run(data, damping=0.0, max_iter=60, max_restarts=3)
    assert not res.converged and res.restarts == 1 and res.total_iterations == 60
    resid = amp._consistency_residual(res.S_hat, res.q_hat, make_prior("tied", 0.5))
    assert res.consistency == pytest.approx(resid)
    first = amp.run(data, damping=0.0, max_iter=60, max_restarts=0)
    second = amp.run(data, damping=0.5, max_iter=60 - first.iterations, max_restarts=0)
    best = min((first, second), key=lambda r: r.consistency)
    assert res.consistency == best.consistency and res.error == best.error


def test_wandering_run_is_stopped_early_and_reported_as_such():
    """A run that never settles (softmax at rho = 0.2 near its transition, d = 50) stops once its
    step has made no progress for STALL_WINDOW iterations, is not retried, and reports the mean
    and spread of its error over its last iterations."""
    data = model.generate("softmax", 0.08, 0.2, 2, 50, 0, base_seed=7)
    res = amp.run(data, max_iter=500, max_restarts=3)
    assert res.stop_reason == "stalled" and not res.converged and res.restarts == 0
    assert res.total_iterations < 500
    tail = res.history["error"][-amp.STALL_WINDOW:]
    assert res.error_mean == pytest.approx(np.mean(tail))
    assert res.error_std == pytest.approx(np.std(tail))
    assert res.error_std > 1e-3  # it wanders: the band is wide


def test_unreachable_tolerance_is_not_pursued():
    """At a tolerance no run can reach, the run is stopped long before its budget (stalled, or
    diverged once its step stops falling), and reports its calmest iterate, which is the fixed
    point a reachable tolerance finds."""
    data = model.generate("hardmax", 1.0, 0.5, 2, 60, 0)
    res = amp.run(data, damping=0.0, tol=1e-30, max_iter=2000)
    assert res.stop_reason in ("stalled", "diverged") and res.total_iterations < 500
    ok = amp.run(data, damping=0.0)
    assert ok.converged and ok.stop_reason == "converged"
    assert res.error == pytest.approx(ok.error, rel=0.05)


@pytest.mark.parametrize("kw,reason", [(dict(max_iter=3, max_restarts=0), "max_iter"),
                                       (dict(), "converged")])
def test_stop_reasons_round_trip_through_the_dataset(kw, reason):
    """Runs that really stop for different reasons store the code of their own reason."""
    data = model.generate("hardmax", 1.0, 0.5, 2, 30, 0)
    res = amp.run(data, **kw)
    assert res.stop_reason == reason
    ds = res.to_dataset()
    assert amp.STOP_REASONS[int(ds["stop_reason"])] == reason
    assert int(ds["converged"]) == (reason == "converged")
    assert ds.sizes["iteration"] == res.iterations


@pytest.mark.parametrize("d,alpha,match", [(2, 0.5, "d=2 is too small"),
                                          (30, 0.001, "too few samples")])
def test_sizes_too_small_for_amp_are_rejected(d, alpha, match):
    with pytest.raises(ValueError, match=match):
        amp.run_point("hardmax", alpha, 0.5, 2, d, 0)


def test_progress_bar_and_bad_progress(capsys):
    """progress=True draws a tqdm bar on stderr counting iterations against the budget, and
    closes it at the iteration the run ended on with the reason (``core.progress.close_bar``;
    whether an intermediate ``k/40`` is drawn depends on tqdm's refresh interval)."""
    res = amp.run_point("hardmax", 0.3, 0.5, 2, 30, 0, max_iter=40, progress=True)
    err = capsys.readouterr().err
    n = res.total_iterations
    assert "AMP hardmax d=30" in err and " 0/40 " in err
    assert f" {n}/{n} " in err.splitlines()[-1] and f"stopped: {res.stop_reason}" in err
    with pytest.raises(TypeError, match="progress"):
        amp.run_point("hardmax", 0.3, 0.5, 2, 30, 0, progress="yes")
