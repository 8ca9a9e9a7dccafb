"""AMP benchmarks (issue: AMP).

    python benchmarks/bench_amp.py            # per-iteration time and memory, iterations
    python benchmarks/bench_amp.py --stage    # also times a sample of fig1a's AMP jobs

Each case runs in a fresh subprocess so that its peak RSS is its own. Targets (public code measured
here): hardmax d = 100, alpha = 0.5: <= 0.05 s and <= 100 MiB per iteration (5.6 s, 4.6 GiB);
softmax T = 3, d = 100, alpha = 0.1: <= 0.01 s (0.6 s, 2.15 GiB); hardmax d = 100, alpha = 8:
< 1 GiB (public code: about 74 GiB).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from _util import machine, write_section

CHILD = r"""
import json, resource, sys, time
import numpy as np
from aimlib import amp, model
ch, alpha, T, iters = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
data = model.generate(ch, alpha, 0.5, T, 100, 0)
amp.run(data, max_iter=2)                       # compile / load caches
times = []
for _ in range(3):
    t = time.perf_counter(); r = amp.run(data, max_iter=iters, tol=1e-300, max_restarts=0)
    times.append((time.perf_counter() - t) / r.iterations)
full = amp.run(data)                              # to convergence at tol 1e-7
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(dict(per_iter=sorted(times)[1], base=base, peak=peak, n=data.n,
                      iters=full.iterations, converged=full.converged, error=full.error)))
"""


def child(ch, alpha, T, iters=10):
    out = subprocess.run([sys.executable, "-c", CHILD, ch, str(alpha), str(T), str(iters)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    cases = [
        ("hardmax, T = 2, d = 100, alpha = 0.5", "hardmax", 0.5, 2, "<= 0.05 s, <= 100 MiB",
         "5.6 s, 4.6 GiB"),
        ("softmax, T = 3, d = 100, alpha = 0.1", "softmax", 0.1, 3, "<= 0.01 s", "0.6 s, 2.15 GiB"),
        ("hardmax, T = 2, d = 100, alpha = 8", "hardmax", 8.0, 2, "< 1 GiB", "about 74 GiB"),
    ]
    rows = []
    for label, ch, alpha, T, goal, public in cases:
        r = child(ch, alpha, T, iters=5 if alpha > 4 else 20)
        rows.append(f"| {label} | {r['n']} | {1e3 * r['per_iter']:.1f} ms | {r['peak']:.0f} MiB "
                    f"({r['peak'] - r['base']:.0f} MiB over the interpreter) | {goal} | {public} | "
                    f"{r['iters']} ({'converged' if r['converged'] else 'not converged'}), "
                    f"error {r['error']:.4f} |")
    lines = [
        f"Measured on {machine()}; per-iteration time is the median of 3 runs (10-20 iterations "
        "each), peak RSS of a fresh process (Python, numpy, scipy and numba alone take about "
        "150 MiB).",
        "",
        "| case | n | per iteration | peak RSS | goal | public code | iterations to tol 1e-7 |",
        "|---|---|---|---|---|---|---|",
        *rows,
    ]
    if "--stage" in sys.argv:
        lines += ["", stage_estimate()]
    write_section("amp", "\n".join(lines))


def stage_estimate() -> str:
    """Wall time of a sample of fig1a's paper-preset AMP jobs, extrapolated to the stage."""
    import numpy as np
    import yaml

    from aimlib import amp, model
    from aimlib.pipeline import config

    conf = yaml.safe_load(open("config/config.yaml"))
    pts = config.stage_points(conf, "fig1a", "amp")
    alphas = sorted({p.alpha for p in pts})
    rhos = sorted({p.rho for p in pts})
    sample = [(rho, a) for rho in rhos for a in alphas[::4]]
    t_rho = {}
    for rho, a in sample:
        data = model.generate("hardmax", a, rho, 2, 100, 0)
        t0 = time.perf_counter()
        amp.run(data)
        t_rho.setdefault(rho, []).append(time.perf_counter() - t0)
    # every 4th alpha sampled: the mean over the sample times the number of jobs
    per_job = np.mean([t for ts in t_rho.values() for t in ts])
    total = per_job * len(pts)
    return (f"fig1a AMP stage of the paper preset: {len(pts)} jobs; a sample of {len(sample)} "
            f"(every 4th alpha, each rho, seed 0) averages {per_job:.1f} s per run, so about "
            f"{total / 3600:.1f} CPU-hours, {total / 7200:.1f} h on 2 cores (plus about 2 s of "
            "start-up per job).")


if __name__ == "__main__":
    main()
