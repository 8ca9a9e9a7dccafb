"""fig_steps, beyond the paper: the step budget behind Figure 2 (right) (docs/theory.md §5.2):
Softmax, rho = 0.5. What it shows in full, and the corrections it carries, are its entry of
:data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np

from aimlib.figures.layers import add_legend, apply_axes, fmt_rho
from aimlib.figures.style import Inputs, inputs_of, resolve_style, styled
from aimlib.theory.state_evolution import usable

#: The steps over which fig_steps fits AGD's rate (the paper's budget is the upper end).
RATE_WINDOW = (100, 1000)


def step_rate(steps: np.ndarray, mean: np.ndarray, window=RATE_WINDOW):
    """``p`` of ``error ~ steps^-p`` by least squares on ``log`` both, over the checkpoints in
    ``window`` with a finite positive mean; ``None`` below three such points."""
    ok = (steps >= window[0]) & (steps <= window[1]) & np.isfinite(mean) & (mean > 0)
    if ok.sum() < 3:
        return None
    return -float(np.polyfit(np.log(steps[ok]), np.log(mean[ok]), 1)[0])


@styled
def fig_steps(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """GD and AGD error against Adam steps per T and alpha_bar (docs/theory.md §5.2)."""
    curves, gd, agd = inputs_of(inputs, "se", "gd", "agd")
    s = resolve_style(style)
    Ts = sorted({int(a.attrs["T"]) for a in (*gd, *agd)}) or [2]
    fig, axs = plt.subplots(1, len(Ts), figsize=(s["width"] * len(Ts), s["height"]),
                            layout="constrained", squeeze=False)
    bars = sorted({float(round(v, 6)) for a in (*gd, *agd) for v in a["alpha_bar"].values})
    palette = ("tab:blue", "tab:green", "tab:orange", "tab:red", "tab:purple", "tab:brown")
    colors = {b: palette[i % len(palette)] for i, b in enumerate(bars)}
    for ax, T in zip(axs[0], Ts, strict=True):
        for sets, ls, marker, name in ((gd, "--", "+", "GD"), (agd, "-", "x", "AGD")):
            for agg in (a for a in sets if int(a.attrs["T"]) == T):
                if "checkpoint_mean" not in agg:
                    continue
                steps = agg["checkpoint"].values.astype(float)
                for i, ab in enumerate(agg["alpha_bar"].values):
                    m = agg["checkpoint_mean"].values[i]
                    sd = agg["checkpoint_std"].values[i]
                    c = colors[float(round(ab, 6))]
                    p = step_rate(steps, m) if name == "AGD" else None
                    lab = (rf"{name} $\bar\alpha={ab:.3g}$"
                           + (rf", $p={p:.2f}$" if p is not None else ""))
                    ax.plot(steps, m, ls=ls, marker=marker, color=c, lw=s["line_width"] * 0.8,
                            ms=s["marker_size"] + 1, label=lab)
                    if name == "AGD":  # mean +- its standard error over the seeds
                        sem = sd / np.sqrt(max(int(agg["n_converged"].values[i]), 1))
                        ok = np.isfinite(sem) & (sem > 0) & (m - sem > 0)
                        ax.fill_between(steps[ok], (m - sem)[ok], (m + sem)[ok], color=c,
                                        alpha=0.2, lw=0)
        for ds in (c for c in curves if int(c.attrs.get("T", T)) == T or len(Ts) == 1):
            ok = usable(ds)
            for ab, e in zip(ds["alpha_bar"].values[ok], ds["error"].values[ok], strict=True):
                key = min(bars, key=lambda b, ab=ab: abs(b - ab)) if bars else None
                # perfect recovery (SE error 0 to rounding, above the threshold): no line
                if key is not None and abs(key - ab) < 1e-3 * max(ab, 1e-9) and e > 1e-12:
                    ax.axhline(e, color=colors[key], lw=0.8, ls=(0, (1, 2)))
        ax.axvline(1000, color="gray", lw=0.8, ls=":")
        ax.annotate("paper: 1000 steps", xy=(1000, 1), xycoords=("data", "axes fraction"),
                    xytext=(3, -12), textcoords="offset points", fontsize=s["font_size"] - 2,
                    color="gray")
        ax.set_xscale("log")
        ax.set_yscale("log")
        apply_axes(ax, axes)
        ax.set_xlabel("Adam steps")
        ax.set_ylabel("estimation error")
        rho = float((gd or agd)[0].attrs["rho"]) if (gd or agd) else float("nan")
        ax.set_title(rf"softmax, $T={T}$, $\rho={fmt_rho(rho)}$: error against steps")
        add_legend(ax, loc="lower left", frameon=False, fontsize=s["font_size"] - 3, ncol=2)
    return fig
