"""An experiment of one's own with aimlib: hardmax at a width the paper did not run.

    python examples/new_rho.py [--rho 0.3] [--d 40 80] [--seeds 3] [--out new_rho.png]

For width ratio rho (default 0.3, between the paper's 0.2 and 0.5) it computes the
Bayes-optimal error from state evolution on a fine alpha grid, runs AMP at two dimensions on
data drawn from the model (a few seeds per point, only converged runs averaged), prints a table
of AMP against SE, and saves a figure.  Everything comes from the public API:
``state_evolution.curve``, ``model.generate``, ``amp.run`` and ``figures``' colour helpers.
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from aimlib import amp, model  # noqa: E402
from aimlib import state_evolution as se  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
ap.add_argument("--rho", type=float, default=0.3)
ap.add_argument("--d", type=int, nargs="+", default=[40, 80])
ap.add_argument("--seeds", type=int, default=3)
ap.add_argument("--alpha", type=float, nargs="+", default=[0.2, 0.5, 1.0])
ap.add_argument("--out", default="new_rho.png")
args = ap.parse_args()

# State evolution: the d -> infinity prediction, 64 points in about a second.
grid = np.geomspace(0.03, 10.0, 64)
curve = se.curve("hardmax", grid, args.rho)

# AMP at each d, alpha and seed; each seed draws its own teacher and data reproducibly.
print("d,alpha,se,amp_mean,amp_std,converged")
fig, ax = plt.subplots(figsize=(4.8, 3.6), layout="constrained")
ax.plot(grid, curve["error"], color="black", label=rf"SE, $\rho={args.rho:g}$")
for d, marker in zip(args.d, "os^D", strict=False):
    means, stds = [], []
    for alpha in args.alpha:
        runs = [amp.run(model.generate("hardmax", alpha, args.rho, 2, d, seed), damping=0.0)
                for seed in range(args.seeds)]
        ok = [r.error for r in runs if r.converged]  # unconverged runs are not averaged in
        m = float(np.mean(ok)) if ok else float("nan")
        sd = float(np.std(ok)) if ok else float("nan")
        means.append(m)
        stds.append(sd)
        ref = se.solve("hardmax", alpha, args.rho).error
        print(f"{d},{alpha:g},{ref:.6f},{m:.6f},{sd:.6f},{len(ok)}/{len(runs)}")
    ax.errorbar(args.alpha, means, yerr=stds, fmt=marker, mfc="white", capsize=1.5,
                label=f"AMP, d = {d}")
ax.set(xscale="log", yscale="log", xlabel=r"$\alpha = n/d^2$", ylabel="estimation error",
       title=rf"hardmax, $T=2$, $\rho={args.rho:g}$")
ax.legend(frameon=False)
fig.savefig(args.out, dpi=120)
print(f"saved {args.out}")
