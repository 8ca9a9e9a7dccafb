"""Does GD reach the Bayes threshold with a wider student? (docs/theory.md §16; issue 36.)

The measured perfect-recovery threshold of plain gradient descent (``optimizer: gd``, step 0.1),
of Adam (lr 0.1, the paper's; GD is its first initialisation) and of AGD (Adam averaged over
K = 4 initialisations) against the student's width ``kappa``, at the noiseless Gaussian channel,
T = 1, ``kappa* = rho = 0.2``, against the conjecture ``alpha_PR(kappa*, kappa)`` and the Bayes
threshold 0.18.  The measured threshold at a budget is the smallest ``alpha`` of the grid from
which every larger grid point has its error below ``EPS`` after that many steps (the grid's
spacing is the resolution; a width that never gets there reads ``> max``); it is reported at two
budgets (plain GD: 1024 and 4096 steps of 0.1, flow times 102 and 410; Adam: 512 and 2048
steps), so that the budget's effect shows, per seed.

    python benchmarks/bench_gd_width.py [--d 60] [--seeds 2] [--out results.json]
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from _util import machine, write_section

from aimlib.algorithms import gd
from aimlib.model import generate
from aimlib.theory import gradient_flow

KAPPA_STAR, EPS = 0.2, 1e-3
WIDTHS = (0.2, 0.3, 0.5, 0.75, 1.0)
ALPHAS = tuple(round(a, 4) for a in np.geomspace(0.14, 0.56, 9))
RUNS = {  # name: (options, steps, the budgets reported)
    "GD (plain)": (dict(optimizer="gd", step_size=0.1, inits=1), 4096, (1024, 4096)),
    "Adam": (dict(optimizer="adam", lr=0.1, inits=4), 2048, (512, 2048)),
}


LABELS = {("GD (plain)", "GD"): "plain GD", ("Adam", "GD"): "Adam", ("Adam", "AGD"): "AGD"}


def threshold(errors: dict[float, float]) -> float:
    """Smallest grid alpha from which every larger one is below EPS (inf if none)."""
    out = np.inf
    for a in sorted(errors, reverse=True):
        if not errors[a] < EPS:
            break
        out = a
    return out


def measure(d: int, seeds: int) -> dict:
    out: dict = {}
    for name, (opts, steps, budgets) in RUNS.items():
        for kappa in WIDTHS:
            for seed in range(seeds):
                errs = {b: {"GD": {}, "AGD": {}} for b in budgets}
                for alpha in ALPHAS:
                    data = generate("gaussian", alpha, KAPPA_STAR, 1, d, seed, delta=0.0)
                    # checkpoints at the powers of 2 up to the steps: the budgets among them
                    res = gd.run(data, steps=steps, stop="steps", width=kappa,
                                 checkpoints=steps.bit_length(), **opts)
                    marks = list(res.checkpoint_steps)
                    for b in budgets:
                        c = marks.index(b)
                        errs[b]["GD"][alpha] = float(res.checkpoint_errors[c, 0])
                        errs[b]["AGD"][alpha] = float(res.checkpoint_agd[c])
                for b in budgets:
                    kinds = ("GD",) if opts["inits"] == 1 else ("GD", "AGD")
                    for kind in kinds:
                        key = f"{name}|{kind}|{kappa}|{b}"
                        out.setdefault(key, []).append(
                            {"seed": seed, "threshold": threshold(errs[b][kind]),
                             "errors": errs[b][kind]})
                print(name, kappa, seed, {b: threshold(errs[b]["GD"]) for b in budgets},
                      flush=True)
    return out


def table(results: dict, d: int, seeds: int) -> str:
    grid = ", ".join(f"{a:g}" for a in ALPHAS)
    lines = [f"Measured on {machine()}; Gaussian channel, T = 1, Delta = 0, kappa* = "
             f"{KAPPA_STAR}, d = {d}, {seeds} seeds (one value per seed); alpha grid {grid}; "
             f"recovered = error < {EPS:g} at every larger grid point after the budget. Bayes "
             f"threshold {gradient_flow.bayes_threshold(KAPPA_STAR):.3f}.", "",
             "| kappa | conjecture | " + " | ".join(
                 f"{LABELS[name, kind]} ({b} steps)" for name, (o, _, bs) in RUNS.items()
                 for kind in (("GD",) if o["inits"] == 1 else ("GD", "AGD")) for b in bs) + " |",
             "|---|---|" + "---|" * sum(len(bs) * (1 if o["inits"] == 1 else 2)
                                        for o, _, bs in RUNS.values())]
    for kappa in WIDTHS:
        cells = []
        for name, (o, _, bs) in RUNS.items():
            for kind in (("GD",) if o["inits"] == 1 else ("GD", "AGD")):
                for b in bs:
                    ths = [r["threshold"] for r in results[f"{name}|{kind}|{kappa}|{b}"]]
                    cells.append(" / ".join("> max" if np.isinf(t) else f"{t:.3g}"
                                            for t in ths))
        lines.append(f"| {kappa} | {gradient_flow.threshold(KAPPA_STAR, kappa):.3f} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--d", type=int, default=60)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--out", default=None, help="also write the raw results (JSON)")
    p.add_argument("--table-from", default=None, help="only write the table of a JSON of "
                   "raw results (--out of an earlier run)")
    args = p.parse_args()
    if args.table_from:
        with open(args.table_from) as f:
            results = json.load(f)
        for runs in results.values():
            for r in runs:
                r["threshold"] = float(r["threshold"])
    else:
        results = measure(args.d, args.seeds)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, default=float)
    text = table(results, args.d, args.seeds)
    print(text)
    write_section(f"gd_width_d{args.d}", text)


if __name__ == "__main__":
    main()
