"""GPU backends of GD and AMP against their own GEMMs and the CPU path (docs/theory.md §12).

One unattended run, at most about 5 minutes on a machine with a CUDA GPU:

    .venv/bin/python benchmarks/bench_gpu.py            # every GPU backend that imports
    .venv/bin/python benchmarks/bench_gpu.py --backend cupy --json out.json

For each backend (``cupy``, ``torch``; ``--backend array_api --quick`` runs the same script on
the CPU, to test the script itself):

1. an Adam step of fig2b's largest GD point (softmax, K = 32, d = 200, T = 6, n = 12,000,
   r = 100) in float32 and float64, median of repeated steps, against the two GEMMs of the same
   shapes on the same device (``(n T, d) @ (d, K r)`` and ``(d, n T) @ (n T, K r)``);
2. an AMP iteration at d = 1000 (softmax, T = 2, alpha = 0.1, n = 100,000, float32 tokens),
   against its two GEMMs (``(n T, d) @ (d, d)`` and ``(d, n T) @ (n T, d)``) and its
   eigendecomposition; ``torch.linalg.eigh`` and CuPy's are timed side by side where both
   import (reported 30-100x apart for batches of small matrices; here it is one d x d matrix);
3. the results against the CPU path (numba) on the same data and seeds, in float64: GD's errors
   after 20 steps of K = 4 students and AMP's estimate after 3 iterations at d = 300, to 1e-6
   (estimates, not eigenvectors: their signs differ between devices);
4. fig2b's GD/AGD stage in GPU-hours: the GPU time model (``aimlib.algorithms.resources``)
   rescaled by the step time measured in 1, over every point of ``config/config.yaml``.

TF32 stays off (``aimlib.core.backend``); JAX is not used (it computes in float32 unless x64 is
enabled and lowers matmul precision on GPUs).
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time

import numpy as np

from aimlib.algorithms import amp, gd
from aimlib.algorithms import resources as res
from aimlib.core import backend as backends
from aimlib.model import generate

#: Wall-clock budget of the whole script (seconds); parts that would exceed it are skipped.
BUDGET = 300.0


def _timed(be, fn, repeats: int, warmup: int = 2) -> float:
    """Median seconds of ``fn()`` on backend ``be`` (synchronised around each call)."""
    for _ in range(warmup):
        fn()
    be.synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        be.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def gd_step(be, scale: float, dtype: str) -> dict:
    """1: an Adam step of fig2b's largest point against its two GEMMs."""
    d = max(12, int(200 * scale))
    T, K = 6, 32
    data = generate("softmax", 0.3, 0.5, T, d, 0)
    n, r = data.n, data.r
    W = np.random.default_rng(0).standard_normal((K, d, r))
    steps = gd.ArraySteps(be, data.tokens(), np.ascontiguousarray(data.outputs()), data.ch,
                           0.1, dtype)
    steps.start(W)
    counter = iter(range(1, 10**6))
    t_step = _timed(be, lambda: steps.step(next(counter)), repeats=10)
    xp = be.xp
    Wc = be.asarray(np.random.default_rng(1).standard_normal((d, K * r)), dtype)
    Z = be.asarray(np.random.default_rng(2).standard_normal((n * T, K * r)), dtype)
    X2 = steps.train[0]
    t_fwd = _timed(be, lambda: X2 @ Wc, repeats=10)
    t_bwd = _timed(be, lambda: xp.matrix_transpose(X2) @ Z, repeats=10)
    model = res.gd_step_gpu_seconds(d, n, T, r, K, dtype)
    return {"d": d, "n": n, "T": T, "K": K, "dtype": dtype, "step_s": t_step,
            "gemms_s": t_fwd + t_bwd, "ratio": t_step / (t_fwd + t_bwd), "model_s": model}


def amp_iteration(be, scale: float) -> dict:
    """2: an AMP iteration at d = 1000 against its GEMMs and its eigendecomposition."""
    d = max(20, int(1000 * scale))
    data = generate("softmax", 0.1, 0.5, 2, d, 0)
    tokens = amp.Tokens(data, amp.CHUNK, amp.TOKEN_BUDGET, "float32")
    ch = data.ch
    ops = amp.ArrayOps(be, data, ch, tokens, False)
    ops.reset()
    S = np.sqrt(0.5) * np.eye(d)
    t_pass = _timed(be, lambda: ops.output_pass(S, 1.0, 0.5), repeats=3, warmup=1)
    R = S + 0.01 * np.random.default_rng(3).standard_normal((d, d))
    R = 0.5 * (R + R.T)
    t_rie = _timed(be, lambda: ops.rie(R, 0.1, 0.5), repeats=3, warmup=1)
    xp = be.xp
    n, T = data.n, data.T
    X2 = be.asarray(np.random.default_rng(4).standard_normal((n * T, d)), "float32")
    Sd = be.asarray(S, "float32")
    t_g1 = _timed(be, lambda: X2 @ Sd, repeats=3, warmup=1)
    t_g2 = _timed(be, lambda: xp.matrix_transpose(X2) @ X2, repeats=3, warmup=1)
    Rd = be.asarray(R)
    eig = {be.name: _timed(be, lambda: xp.linalg.eigh(Rd), repeats=3, warmup=1)}
    for other in ("cupy", "torch"):
        if other != be.name and other in available():
            ob = backends.get(other)
            Ro = ob.asarray(R)
            eig[other] = _timed(ob, lambda ob=ob, Ro=Ro: ob.xp.linalg.eigh(Ro), repeats=3,
                                warmup=1)
    it = t_pass + t_rie
    return {"d": d, "n": n, "iteration_s": it, "output_pass_s": t_pass, "rie_s": t_rie,
            "gemms_s": t_g1 + t_g2, "ratio": it / (t_g1 + t_g2), "eigh_s": eig}


def agreement(be, scale: float) -> dict:
    """3: GD and AMP against the CPU path in float64 on the same data and seeds."""
    d = max(20, int(200 * scale))
    data = generate("softmax", 0.3, 0.5, 6, d, 1)
    kw = dict(inits=4, steps=20, dtype="float64")
    ref, got = gd.run(data, **kw), gd.run(data, backend=be.name, **kw)
    d_amp = max(20, int(300 * scale))
    data = generate("softmax", 0.1, 0.5, 2, d_amp, 1)
    a_ref = amp.run(data, max_iter=3, tol=1e-30)
    a_got = amp.run(data, max_iter=3, tol=1e-30, backend=be.name)
    out = {"gd_errors_max_diff": float(np.max(np.abs(ref.errors - got.errors))),
           "amp_S_hat_max_diff": float(np.max(np.abs(a_ref.S_hat - a_got.S_hat)))}
    out["pass"] = bool(out["gd_errors_max_diff"] < 1e-6 and out["amp_S_hat_max_diff"] < 1e-6)
    return out


def fig2b_gpu_hours(step: dict, config: str = "config/config.yaml") -> dict:
    """4: fig2b's GD/AGD stage on one GPU, the time model rescaled by the measured step."""
    import yaml

    from aimlib.model import sizes
    from aimlib.pipeline import config as cfg

    conf = yaml.safe_load(open(config))
    plan = cfg.plan(conf)
    scale = step["step_s"] / step["model_s"]
    seconds = 0.0
    runs = 0
    for g in plan.groups("gd", "fig2b"):
        opts = plan.options("gd", "fig2b", g.d)
        for alpha in g.alphas:
            r, n = sizes(alpha, g.rho, g.d)
            s = res.gd_step_gpu_seconds(g.d, n, g.T, r, opts["inits"], opts["dtype"])
            seconds += len(g.seeds) * opts["steps"] * s * scale
            runs += len(g.seeds)
    return {"runs": runs, "gpu_hours": seconds / 3600.0, "model_scale": scale}


@functools.cache
def available() -> tuple[str, ...]:
    out = []
    for name in backends.GPU_BACKENDS:
        try:
            backends.check(name)
            out.append(name)
        except ValueError as e:
            print(f"# {name}: {e}", file=sys.stderr)
    return tuple(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", action="append",
                    help="backend(s) to measure (default: every GPU backend that imports)")
    ap.add_argument("--quick", action="store_true", help="sizes / 5 (a test of the script)")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    names = a.backend or available()
    if not names:
        print("no GPU backend available here (cupy or torch with a CUDA GPU); nothing measured")
        return 2
    scale = 0.2 if a.quick else 1.0
    t0 = time.perf_counter()
    results = {}
    for name in names:
        backends.check(name)
        be = backends.get(name)
        out = results[name] = {}
        for key, fn in (("gd_float32", lambda be=be: gd_step(be, scale, "float32")),
                        ("gd_float64", lambda be=be: gd_step(be, scale, "float64")),
                        ("amp", lambda be=be: amp_iteration(be, scale)),
                        ("agreement", lambda be=be: agreement(be, scale))):
            if time.perf_counter() - t0 > BUDGET:
                out[key] = "skipped: over the time budget"
                continue
            out[key] = fn()
            print(f"{name} {key}: {json.dumps(out[key])}", flush=True)
        if isinstance(out.get("gd_float32"), dict) and not a.quick:
            out["fig2b"] = fig2b_gpu_hours(out["gd_float32"])
            print(f"{name} fig2b GD/AGD stage: {out['fig2b']['gpu_hours']:.3f} GPU-hours over "
                  f"{out['fig2b']['runs']} runs", flush=True)
    print("\n| backend | GD step (f32) / GEMMs | GD step (f64) / GEMMs | AMP iteration / GEMMs | "
          "agrees with CPU | fig2b GD GPU-h |")
    print("|---|---|---|---|---|---|")
    for name, out in results.items():
        def cell(key, field="ratio", out=out):
            v = out.get(key)
            if not isinstance(v, dict):
                return "-"
            return f"{v['step_s' if key.startswith('gd') else 'iteration_s'] * 1e3:.2f} ms / " \
                   f"{v['gemms_s'] * 1e3:.2f} ms = {v[field]:.2f}x"

        agree = out.get("agreement")
        fig = out.get("fig2b")
        agree_s = str(agree["pass"]) if isinstance(agree, dict) else "-"
        fig_s = f"{fig['gpu_hours']:.3f}" if isinstance(fig, dict) else "-"
        print(f"| {name} | {cell('gd_float32')} | {cell('gd_float64')} | {cell('amp')} | "
              f"{agree_s} | {fig_s} |")
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    ok = all(isinstance(o.get("agreement"), dict) and o["agreement"]["pass"]
             for o in results.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
