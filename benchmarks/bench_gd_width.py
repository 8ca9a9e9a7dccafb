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
from aimlib.channels import channel_class
from aimlib.model import generate
from aimlib.prior import make_prior
from aimlib.theory import gradient_flow
from aimlib.theory.cells import alpha_bar_factor

EPS = 1e-3
#: per channel: (T, kappa* = rho, the widths)
SETTINGS = {"gaussian": (1, 0.2, (0.2, 0.3, 0.5, 0.75, 1.0)),
            "softmax": (2, 0.5, (0.5, 0.75, 1.0))}
#: 19 % steps from just below the Gaussian Bayes threshold (0.18) to 0.79 (the d = 60 table's
#: grid ran from 0.14 to 0.56 on the same steps)
ALPHAS = tuple(round(a, 4) for a in 0.14 * 4 ** (np.arange(1, 11) / 8))
RUNS = {  # name: (options, steps, the budgets reported)
    "GD (plain)": (dict(optimizer="gd", step_size=0.1, inits=1), 4096, (1024, 4096)),
    "Adam": (dict(optimizer="adam", lr=0.1, inits=4), 2048, (512, 2048)),
}


LABELS = {("GD (plain)", "GD"): "plain GD", ("Adam", "GD"): "Adam", ("Adam", "AGD"): "AGD"}


def plain_label() -> str:
    """plain GD's label with its step size."""
    return f"plain GD, step {RUNS['GD (plain)'][0]['step_size']:g}"


def threshold(errors: dict[float, float]) -> float:
    """Smallest grid alpha from which every larger one is below EPS (inf if none)."""
    out = np.inf
    for a in sorted(errors, reverse=True):
        if not errors[a] < EPS:
            break
        out = a
    return out


def measure(channel: str, d: int, seeds: int, runs: list[str]) -> dict:
    """Per (run, kind, width, budget): one threshold per seed, from a scan of the grid from the
    top down that stops below the first point where every reported series has failed (the
    points below it cannot change a threshold)."""
    T, kappa_star, widths = SETTINGS[channel]
    params = {"delta": 0.0} if channel == "gaussian" else {}
    out: dict = {}
    for name in runs:
        opts, steps, budgets = RUNS[name]
        kinds = ("GD",) if opts["inits"] == 1 else ("GD", "AGD")
        for kappa in widths:
            for seed in range(seeds):
                errs = {(b, k): {} for b in budgets for k in kinds}
                for alpha in sorted(ALPHAS, reverse=True):
                    data = generate(channel, alpha, kappa_star, T, d, seed, **params)
                    # checkpoints at the powers of 2 up to the steps: the budgets among them
                    res = gd.run(data, steps=steps, stop="steps", width=kappa,
                                 checkpoints=steps.bit_length(), **opts)
                    marks = list(res.checkpoint_steps)
                    for b in budgets:
                        c = marks.index(b)
                        errs[b, "GD"][alpha] = float(res.checkpoint_errors[c, 0])
                        if "AGD" in kinds:
                            errs[b, "AGD"][alpha] = float(res.checkpoint_agd[c])
                    if all(any(not e < EPS for e in series.values())
                           for series in errs.values()):
                        break
                for (b, kind), series in errs.items():
                    out.setdefault(f"{name}|{kind}|{kappa}|{b}", []).append(
                        {"seed": seed, "threshold": threshold(series), "errors": series})
                print(channel, d, name, kappa, seed,
                      {b: threshold(errs[b, "GD"]) for b in budgets}, flush=True)
    return out


def table(results: dict, channel: str, d: int, seeds: int) -> str:
    T, kappa_star, widths = SETTINGS[channel]
    factor = alpha_bar_factor(channel_class(channel)(T=T), kappa_star)
    bayes = channel_class(channel)(T=T).perfect_recovery_threshold(
        make_prior(None, kappa_star))
    grid = ", ".join(f"{a:g}" for a in ALPHAS)
    noise = ", Delta = 0" if channel == "gaussian" else ", beta = 1"
    series = [(name, kind, b) for name in RUNS if any(k.startswith(f"{name}|") for k in results)
              for kind in (("GD",) if RUNS[name][0]["inits"] == 1 else ("GD", "AGD"))
              for b in RUNS[name][2]]
    conj = channel == "gaussian" and T == 1
    lines = [f"Measured on {machine()}; {channel} channel, T = {T}{noise}, kappa* = rho = "
             f"{kappa_star}, d = {d}, {seeds} seed(s) (one value per seed); alpha grid {grid} "
             f"(alpha_bar = {factor:g} alpha), scanned from the top; recovered = error < "
             f"{EPS:g} at every larger grid point after the budget; '< min': every point of "
             f"the grid. Bayes threshold alpha = {bayes:.4g} (alpha_bar {bayes * factor:.3g}).",
             "", "| kappa | " + ("conjecture | " if conj else "")
             + " | ".join(f"{plain_label() if name == 'GD (plain)' else LABELS[name, kind]} "
                          f"({b} steps)" for name, kind, b in series) + " |",
             "|---|" + ("---|" if conj else "") + "---|" * len(series)]

    def fmt(t):
        return "> max" if np.isinf(t) else ("< min" if t == min(ALPHAS) else f"{t:.3g}")

    for kappa in widths:
        cells = [" / ".join(fmt(r["threshold"]) for r in results[f"{name}|{kind}|{kappa}|{b}"])
                 for name, kind, b in series]
        lines.append(f"| {kappa} | " + (f"{gradient_flow.threshold(kappa_star, kappa):.3f} | "
                                         if conj else "") + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--channel", choices=sorted(SETTINGS), default="gaussian")
    p.add_argument("--d", type=int, default=60)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--runs", nargs="+", choices=list(RUNS), default=list(RUNS))
    p.add_argument("--gd-steps", type=int, default=None,
                   help="plain GD's steps (a power of 2; its budgets: a quarter of it and it)")
    p.add_argument("--step-size", type=float, default=None, help="plain GD's step size")
    p.add_argument("--adam-steps", type=int, default=None,
                   help="Adam's steps (a power of 2; its budgets: a quarter of it and it)")
    p.add_argument("--alphas", type=float, nargs="+", default=None,
                   help="the alpha grid (default: 19 %% steps from 0.1665 to 0.792)")
    p.add_argument("--widths", type=float, nargs="+", default=None,
                   help="the student widths (default: the channel's)")
    p.add_argument("--tag", default="", help="appended to the table's section name")
    p.add_argument("--out", default=None, help="also write the raw results (JSON)")
    p.add_argument("--table-from", default=None, help="only write the table of a JSON of "
                   "raw results (--out of an earlier run)")
    args = p.parse_args()
    opts, steps, budgets = RUNS["GD (plain)"]
    if args.step_size is not None:
        opts = {**opts, "step_size": args.step_size}
    if args.gd_steps is not None:
        steps, budgets = args.gd_steps, (args.gd_steps // 4, args.gd_steps)
    RUNS["GD (plain)"] = (opts, steps, budgets)
    if args.adam_steps is not None:
        RUNS["Adam"] = (RUNS["Adam"][0], args.adam_steps,
                        (args.adam_steps // 4, args.adam_steps))
    global ALPHAS
    if args.alphas:
        ALPHAS = tuple(sorted(args.alphas))
    if args.widths:
        T, ks, _ = SETTINGS[args.channel]
        SETTINGS[args.channel] = (T, ks, tuple(args.widths))
    if args.table_from:
        with open(args.table_from) as f:
            results = json.load(f)
        for runs in results.values():
            for r in runs:
                r["threshold"] = float(r["threshold"])
    else:
        results = measure(args.channel, args.d, args.seeds, args.runs)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, default=float)
    text = table(results, args.channel, args.d, args.seeds)
    print(text)
    write_section(f"gd_width_{args.channel}_d{args.d}{args.tag}", text)


if __name__ == "__main__":
    main()
