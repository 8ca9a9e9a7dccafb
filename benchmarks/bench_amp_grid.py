"""AMP over fig1a's whole grid (issue: AMP at the paper's scale).

    python benchmarks/bench_amp_grid.py run  OUT.nc [--d 100] [--seeds 2] [--every 1] [--workers 1]
                                             [--rho 0.1 0.2] [--max-alpha 1.2]
    python benchmarks/bench_amp_grid.py table OUT.nc [OUT2.nc ...]   # README table

Runs AMP (hardmax, T = 2, damping 0, the paper preset's fig1a options) at every rho of fig1a and
every ``every``-th alpha of its 32-point grid, ``seeds`` seeds each, and records per run the error,
SE, whether it converged, why it stopped, its iterations (reported attempt and all attempts),
the Nishimori consistency residual and the AMP wall time (teacher generation excluded). ``table``
summarises by rho: fraction converged, median iterations and wall time of converged and of
unconverged runs, and the median relative distance to SE of converged runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import xarray as xr
from _util import machine, write_section

RHOS = (0.1, 0.2, 0.5, 1.0, 2.0)
ALPHAS = np.geomspace(0.03, 8.0, 32)


def _one(args):
    rho, alpha, seed, d, max_iter = args
    from threadpoolctl import threadpool_limits

    from aimlib import amp, model, state_evolution

    with threadpool_limits(1):
        data = model.generate("hardmax", float(alpha), rho, 2, d, seed)
        t0 = time.perf_counter()
        r = amp.run(data, damping=0.0, max_iter=max_iter)
        wall = time.perf_counter() - t0
    se = state_evolution.solve("hardmax", float(alpha), rho).error
    return dict(rho=rho, alpha=float(alpha), seed=seed, error=r.error, se=se,
                converged=int(r.converged), stop_reason=r.stop_reason, iterations=r.iterations,
                total_iterations=r.total_iterations, restarts=r.restarts,
                consistency=r.consistency, error_mean=r.error_mean, error_std=r.error_std,
                wall=wall)


def run(out: str, d: int, seeds: int, every: int, workers: int, max_iter: int,
        rhos=RHOS, max_alpha: float = np.inf) -> None:
    tasks = [(rho, a, s, d, max_iter) for rho in rhos for a in ALPHAS[::every]
             if a <= max_alpha for s in range(seeds)]
    rows = []
    with ProcessPoolExecutor(workers) as pool:
        for i, row in enumerate(pool.map(_one, tasks)):
            rows.append(row)
            print(f"{i + 1}/{len(tasks)} rho={row['rho']} alpha={row['alpha']:.4g} "
                  f"seed={row['seed']}: {row['error']:.4g} (SE {row['se']:.4g}) "
                  f"{row['stop_reason']} {row['total_iterations']} it {row['wall']:.1f} s",
                  flush=True)
    ds = xr.Dataset({k: ("run", np.array([r[k] for r in rows])) for k in rows[0]})
    ds.attrs.update(d=d, seeds=seeds, max_iter=max_iter, machine=machine(),
                    load=os.getloadavg()[0])
    ds.to_netcdf(out)


def table(paths: list[str]) -> str:
    lines = ["| d | rho | runs | converged | median iterations (conv / not) | median wall s "
             "(conv / not) | median \\|E - SE\\| / SE (conv) | stop reasons (not conv) |",
             "|---|---|---|---|---|---|---|---|"]
    for p in paths:
        ds = xr.load_dataset(p)
        for rho in RHOS:
            sel = ds.where(ds.rho == rho, drop=True)
            if sel.sizes.get("run", 0) == 0:
                continue
            conv = sel.converged.values.astype(bool)

            def med(x):
                return f"{np.median(x):.0f}" if x.size else "-"

            def medf(x):
                return f"{np.median(x):.1f}" if x.size else "-"

            rel = np.abs(sel.error.values[conv] - sel.se.values[conv]) / sel.se.values[conv]
            reasons = sel.stop_reason.values[~conv]
            counts = ", ".join(f"{r} {int(np.sum(reasons == r))}" for r in sorted(set(reasons)))
            lines.append(
                f"| {ds.attrs['d']} | {rho} | {conv.size} | {conv.mean():.0%} | "
                f"{med(sel.total_iterations.values[conv])} / "
                f"{med(sel.total_iterations.values[~conv])} | "
                f"{medf(sel.wall.values[conv])} / {medf(sel.wall.values[~conv])} | "
                f"{np.median(rel):.3f} | {counts or '-'} |" if conv.any() else
                f"| {ds.attrs['d']} | {rho} | {conv.size} | 0% | - / "
                f"{med(sel.total_iterations.values)} | - / {medf(sel.wall.values)} | - | "
                f"{counts} |")
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["run", "table"])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--max-iter", type=int, default=500)
    ap.add_argument("--rho", type=float, nargs="+", default=list(RHOS),
                    help="widths to run (default: fig1a's five)")
    ap.add_argument("--max-alpha", type=float, default=np.inf,
                    help="leave out the grid's alphas above this (the cost grows with n)")
    ap.add_argument("--write", action="store_true", help="write the table into README.md")
    a = ap.parse_args()
    if a.cmd == "run":
        run(a.paths[0], a.d, a.seeds, a.every, a.workers, a.max_iter, tuple(a.rho), a.max_alpha)
    else:
        t = table(a.paths)
        print(t)
        if a.write:
            write_section("amp_grid", t)
    sys.exit(0)
