"""GD and AGD in the cells beyond the paper (docs/theory.md §15.5), against the Bayes-optimal
error: untied and tied cross-attention (against their SE) and untied self-attention (against its
two bounds), softmax, T = 2, rho = 0.5, the paper's protocol (Adam, lr 0.1, 1000 steps, K = 8
initialisations for AGD), d = 60, one seed, at half, once and twice each cell's
perfect-recovery threshold (for untied self-attention, its counting threshold).

    python benchmarks/bench_gd_cells.py
"""

from __future__ import annotations

import numpy as np
from _util import machine, write_section

from aimlib.algorithms import gd
from aimlib.model import generate
from aimlib.theory import cross_attention as cross
from aimlib.theory import untied_self

RHO, T, D, SEEDS, INITS, STEPS = 0.5, 2, 60, 1, 8, 1000
CELLS = [("cross", "untied"), ("cross", "tied"), ("self", "untied")]
FACTORS = (0.5, 1.0, 2.0)


def theory(attention: str, prior: str, alpha: float) -> str:
    if attention == "cross":
        return f"{cross.solve('softmax', alpha, RHO, T_q=T, T_k=T, prior=prior).error:.4f}"
    b = untied_self.bounds("softmax", alpha, RHO, T)
    return f"[{b.error_lower:.4f}, {b.error_upper:.4f}]"


def threshold(attention: str, prior: str) -> float:
    if attention == "cross":
        return cross.perfect_recovery_threshold("softmax", RHO, T_q=T, T_k=T, prior=prior)
    return untied_self.counting_threshold(RHO, T)


def main() -> None:
    lines = [f"Measured on {machine()}; softmax, T = {T}, rho = {RHO}, d = {D}, {SEEDS} seeds "
             f"(mean over seeds), Adam lr 0.1, {STEPS} steps, AGD over K = {INITS}.", "",
             "| cell | alpha (x threshold) | Bayes-optimal error | GD | AGD |",
             "|---|---|---|---|---|"]
    for attention, prior in CELLS:
        th = threshold(attention, prior)
        for f in FACTORS:
            alpha = round(f * th, 6)
            g, a = [], []
            for seed in range(SEEDS):
                data = generate("softmax", alpha, RHO, T, D, seed, prior=prior,
                                attention=attention)
                res = gd.run(data, inits=INITS, steps=STEPS, stop="steps")
                g.append(res.errors[0])
                a.append(res.error)
            bayes = theory(attention, prior, alpha)
            lines.append(f"| {prior} {attention} | {alpha} ({f}) | {bayes} | "
                         f"{np.mean(g):.4f} | {np.mean(a):.4f} |")
            print(lines[-1], flush=True)
    write_section("gd_cells", "\n".join(lines))


if __name__ == "__main__":
    main()
