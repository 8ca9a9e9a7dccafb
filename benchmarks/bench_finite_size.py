"""Finite-size study (fig3) benchmarks: AMP at d = 1000 and the cost of the whole figure.

    python benchmarks/bench_finite_size.py

1. AMP at d = 1000 for both channels at the largest alpha of the paper preset's fig3 block, with
   the precision and threads the workflow requests (``aimlib.algorithms.resources``): time of the
   teacher data, per-iteration time (median of iterations 2..5), peak RSS of a fresh process, and
   the request the workflow would make.
2. The cost of fig3 in CPU-hours: per-iteration time measured at every d of the preset (at one
   alpha, scaled linearly in n, which the products dominate), times the iterations AMP takes
   (all attempts, measured on full runs at d = 100 over the preset's alphas, one seed), times the
   jobs; AGD from 20 measured Adam steps per d, scaled to the preset's steps and inits.
"""

from __future__ import annotations

import json
import subprocess
import sys

import yaml
from _util import README, machine, write_section

CHILD = r"""
import json, resource, sys, time
import numpy as np
from threadpoolctl import threadpool_limits
from aimlib import amp, model
from aimlib.algorithms import resources
ch, alpha, d, threads, dtype, iters = (sys.argv[1], float(sys.argv[2]), int(sys.argv[3]),
                                       int(sys.argv[4]), sys.argv[5], int(sys.argv[6]))
with threadpool_limits(threads):
    t = time.perf_counter()
    data = model.generate(ch, alpha, 0.2, 2, d, 0)
    t_gen = time.perf_counter() - t
    stamps = []
    t0 = time.perf_counter()
    amp.run(data, damping=0.5, max_iter=iters, tol=1e-300, max_restarts=0,
            dtype=np.dtype(dtype), token_budget=resources.TOKEN_BUDGET,
            progress=lambda *a: stamps.append(time.perf_counter()))
    per = np.diff([t0] + stamps)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(dict(gen=t_gen, per_iter=float(np.median(per[1:])) if len(per) > 1 else per[0],
                      peak=peak, n=data.n)))
"""

ITER_CHILD = r"""
import json, sys
from threadpoolctl import threadpool_limits
from aimlib import amp, model
ch, d, seeds, alphas = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
out = []
with threadpool_limits(1):
    for a in alphas:
        for s in range(seeds):
            count = []
            r = amp.run(model.generate(ch, a, 0.2, 2, d, s), progress=lambda *x: count.append(1))
            out.append(dict(alpha=a, seed=s, iterations=len(count), converged=r.converged))
print(json.dumps(out))
"""

GD_CHILD = r"""
import json, sys, time
import numpy as np
from threadpoolctl import threadpool_limits
from aimlib import gd, model
alpha, d, inits = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
with threadpool_limits(1):
    data = model.generate("softmax", alpha, 0.2, 2, d, 0)
    gd.run(data, inits=inits, steps=2)
    t = time.perf_counter(); gd.run(data, inits=inits, steps=20)
print(json.dumps(dict(per_step=(time.perf_counter() - t) / 20, n=data.n)))
"""


def _run(code, *args):
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    from aimlib.algorithms import resources as res
    from aimlib.model import sizes
    from aimlib.pipeline import config as cfg

    conf = yaml.safe_load((README.parents[1] / "config" / "config.yaml").read_text())
    exp = conf["experiments"]["fig3"]
    amp_block = exp["amp"]
    rows = []
    per_iter = {}
    for ch in ("softmax", "hardmax"):
        alphas = cfg.channel_grid(amp_block["alpha"], ch)
        top = max(alphas)
        for d in amp_block["d"]:
            opts = cfg.plan(conf).options("amp", "fig3", d)
            r, n = sizes(top, 0.2, d)
            req = res.amp(d, n, 2, ch, dtype=opts["dtype"], max_iter=opts["max_iter"])
            m = _run(CHILD, ch, top, d, req.threads, opts["dtype"], 5 if d >= 500 else 10)
            per_iter[(ch, d)] = (m["per_iter"] / m["n"], req.threads)
            if d == 1000:
                rows.append(f"| {ch}, d = 1000, alpha = {top:g} | {m['n']} | {opts['dtype']}, "
                            f"{req.threads} threads | {m['gen']:.1f} s | {m['per_iter']:.2f} s | "
                            f"{m['peak'] / 1024:.2f} GiB | {req.mem_mb / 1024:.1f} GiB, "
                            f"{req.runtime} min |")
    # Iterations per AMP job (all attempts), measured on full runs at d = 100.
    iters = {}
    conv = {}
    for ch in ("softmax", "hardmax"):
        runs = _run(ITER_CHILD, ch, 100, 1, json.dumps(cfg.channel_grid(amp_block["alpha"], ch)))
        iters[ch] = sum(x["iterations"] for x in runs) / len(runs)
        conv[ch] = sum(x["converged"] for x in runs) / len(runs)
    amp_h = {}
    for key in cfg.stage_points(conf, "fig3", "amp"):
        r, n = sizes(key.alpha, key.rho, key.d)
        per_sample, threads = per_iter[(key.channel, key.d)]
        amp_h[key.d] = amp_h.get(key.d, 0.0) + threads * per_sample * n * iters[key.channel] / 3600
    gd_opts = cfg.plan(conf).options("gd", "fig3")
    gd_h = {}
    for d in exp["gd"]["d"]:
        m = _run(GD_CHILD, 0.08, d, gd_opts["inits"])
        per_sample_step = m["per_step"] / m["n"]
        for key in (k for k in cfg.stage_points(conf, "fig3", "gd") if k.d == d):
            r, n = sizes(key.alpha, key.rho, key.d)
            gd_h[d] = gd_h.get(d, 0.0) + per_sample_step * n * gd_opts["steps"] / 3600
    def cell(h, d):
        return f"{h[d]:.2f}" if d in h else "-"

    cost_rows = [f"| {d} | {cell(amp_h, d)} | {cell(gd_h, d)} |"
                 for d in sorted(set(amp_h) | set(gd_h))]
    total = sum(amp_h.values()) + sum(gd_h.values())
    n_jobs = 2 * (len(cfg.stage_points(conf, "fig3", "amp")) + len(cfg.stage_points(conf, "fig3",
                                                                                      "gd")))
    lines = [
        f"Measured on {machine()}. AMP with the precision and threads the workflow requests "
        "(`aimlib.algorithms.resources`: float32 and 2 threads from d = 500); per-iteration time "
        "is the "
        "median of iterations 2-5 (the first includes the token draw), peak RSS of a fresh "
        "process.",
        "",
        "| case | n | precision | teacher data | per iteration | peak RSS | request |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"fig3 cost (paper preset), CPU-hours: AMP iterations per job (all attempts) measured at "
        f"d = 100 over the preset's alphas, seed 0: softmax {iters['softmax']:.0f} "
        f"({100 * conv['softmax']:.0f} % converged), hardmax {iters['hardmax']:.0f} "
        f"({100 * conv['hardmax']:.0f} % converged); per-iteration time measured at every d at "
        "the largest alpha and scaled linearly in n; AGD from 20 timed Adam steps with all "
        f"{gd_opts['inits']} initialisations.",
        "",
        "| d | AMP (both channels) | AGD (softmax) |",
        "|---|---|---|",
        *cost_rows,
        f"| **total** | | **{total:.1f}** (plus about 2 s of start-up per job: {n_jobs:,} jobs, "
        f"{n_jobs * 2 / 3600:.1f} CPU-hours) |",
    ]
    write_section("finite_size", "\n".join(lines))


if __name__ == "__main__":
    main()
