"""Cost of the paper preset per figure, in CPU-hours (issue: GD/AGD, README).

    python benchmarks/bench_cost.py

Per-job times are measured on samples of each stage's jobs and multiplied by the job counts of
`config/config.yaml`:
- SE: every curve of the preset is computed (exact).
- teacher data: generation timed at the same sample points.
- AMP: per-iteration time measured (5 iterations) at the smallest, middle and largest alpha of
  each group, times ITERS iterations per run (the median iteration count of the converged runs
  of `bench_amp.py --stage` and the test suite is 60-200; 200 is used, so this is an upper estimate
  for runs that converge, and restarts after a non-converged attempt can double it).
- GD: time per Adam step per initialisation measured (20 steps, K = 1) at the smallest, middle
  and largest alpha of each T, times steps x inits.
Each job also pays about 2 s of process start-up under Snakemake, counted once per job.
"""

from __future__ import annotations

import time

import numpy as np
import yaml
from _util import machine, write_section

from aimlib import amp, gd, model
from aimlib import state_evolution as se
from aimlib.pipeline import config as cfg

ITERS = 200
STARTUP = 2.0


def _interp(points, alphas):
    """Piecewise-linear interpolation of (alpha, seconds) samples over a grid."""
    xs, ys = zip(*sorted(points), strict=True)
    return np.interp(alphas, xs, ys)


def main() -> None:
    conf = yaml.safe_load(open("config/config.yaml"))
    rows = []
    # SE: all curves
    plan = cfg.plan(conf)
    se_t: dict[str, float] = {}
    for job in plan.se_jobs:
        variant = {"variant": job.variant} if job.variant != "exact" else {}
        t0 = time.perf_counter()
        se.curve(job.channel, job.alphas, job.rho, T=job.T, **variant, **job.channel_params)
        se_t[job.experiment] = se_t.get(job.experiment, 0.0) + time.perf_counter() - t0
    for name, exp in conf["experiments"].items():
        cost = {"SE": se_t.get(name, 0.0) + STARTUP * len(plan.se_for(name))}
        teach = 0.0
        for stage in ("amp", "gd"):
            if stage not in exp:
                continue
            total = 0.0
            for g in plan.groups(stage, name):
                a = list(g.alphas)
                sample = [a[0], a[len(a) // 2], a[-1]]
                pts, tpts = [], []
                for alpha in sample:
                    t0 = time.perf_counter()
                    data = model.generate(g.channel, alpha, g.rho, g.T, g.d, 0,
                                          **g.channel_params)
                    tpts.append((alpha, time.perf_counter() - t0))
                    if stage == "amp":
                        t0 = time.perf_counter()
                        amp.run(data, max_iter=5, tol=1e-300, variant=g.variant, max_restarts=0,
                                damping=plan.options("amp", name)["damping"])
                        per = (time.perf_counter() - t0) / 5 * ITERS
                    else:
                        opts = plan.options("gd", name)
                        t0 = time.perf_counter()
                        gd.run(data, inits=1, steps=20)
                        per = (time.perf_counter() - t0) / 20 * opts["steps"] * opts["inits"]
                    pts.append((alpha, per))
                total += float(np.sum(_interp(pts, a))) * len(g.seeds)
                total += STARTUP * len(a) * len(g.seeds)
                if g.variant == "exact":  # teacher files are shared by the variants
                    teach += (float(np.sum(_interp(tpts, a))) + STARTUP * len(a)) * len(g.seeds)
            cost[stage.upper()] = total
        cost["teacher"] = teach
        tot = sum(cost.values())
        parts = ", ".join(f"{k} {v / 3600:.2f}" for k, v in cost.items() if v > 0)
        rows.append(f"| {name} | {tot / 3600:.1f} | {parts} |")
    table = "\n".join([
        f"Measured on {machine()} (one core per job); CPU-hours per figure of the paper preset, "
        f"AMP at an assumed {ITERS} iterations per run, GD extrapolated from 20 steps.",
        "",
        "| figure | CPU-hours | by stage (CPU-hours) |",
        "|---|---|---|",
        *rows,
    ])
    write_section("cost", table)


if __name__ == "__main__":
    main()
