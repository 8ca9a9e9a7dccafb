"""fig13, beyond the paper: does gradient descent reach the Bayes threshold with a wider student?
The measured perfect-recovery threshold against the student's width (docs/theory.md §16).
What it shows in full is its entry of :data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from aimlib.figures.layers import add_legend, apply_axes, fmt_rho
from aimlib.figures.style import Inputs, inputs_of, resolve_style, styled

#: One series per (optimiser, kind): label, marker and colour.
SERIES = {("adam", "gd"): ("GD (Adam)", "o", "C0"),
          ("adam", "agd"): ("AGD (Adam)", "s", "C1"),
          ("gd", "gd"): ("plain GD", "^", "C2"),
          ("gd", "agd"): ("AGD (plain GD)", "D", "C4")}
#: The horizontal offset of each series at one width, as a fraction of the widths' range.
DODGE = 0.018


def _model_key(ds: xr.Dataset, g: int) -> tuple:
    return (str(ds["channel"].values[g]), int(ds["T"].values[g]), float(ds["rho"].values[g]),
            int(ds["d"].values[g]))


def _models(recs: list[xr.Dataset]) -> list[tuple]:
    """The channel points drawn, one panel each, in the order of the data."""
    out: list[tuple] = []
    for ds in recs:
        for g in range(ds.sizes["group"]):
            key = _model_key(ds, g)
            if key not in out:
                out.append(key)
    return out


def _early(steps: np.ndarray) -> int:
    """The checkpoint drawn as the shorter budget: the last at or below a quarter of the
    steps (none when the runs kept one checkpoint)."""
    if steps.size < 2:
        return -1
    return int(np.flatnonzero(steps <= steps[-1] / 4)[-1]) if steps[0] <= steps[-1] / 4 else -1


def _panel(ax, recs: list[xr.Dataset], model: tuple, s: dict) -> float:
    """One channel point; returns the top of the drawn data (for the off-axis marks)."""
    lw, ms = s["line_width"], s["marker_size"]
    tops, kappas_all = [], []
    theory_done = False
    for ds in recs:
        for g in range(ds.sizes["group"]):
            if _model_key(ds, g) != model:
                continue
            kappas_all.append(float(ds["kappa"].values[g]))
            tops += [float(ds["grid_max"].values[g])]
            if not theory_done:
                _theory(ax, ds.isel(group=g), lw)
                theory_done = True
    span = (max(kappas_all) - min(kappas_all)) or 1.0
    top = max(tops) * 1.08
    n_series = 0
    for ds in recs:
        kind = str(ds.attrs["kind"])
        steps = ds["checkpoint"].values
        early = _early(steps)
        for (opt, k), (label, marker, color) in SERIES.items():
            if k != kind:
                continue
            groups = [g for g in range(ds.sizes["group"]) if _model_key(ds, g) == model
                      and str(ds["optimizer"].values[g]) == opt]
            if not groups:
                continue
            shift = (n_series - 1.5) * DODGE * span
            n_series += 1
            for i, g in enumerate(sorted(groups, key=lambda g: ds["kappa"].values[g])):
                x = float(ds["kappa"].values[g]) + shift
                final = ds["threshold"].values[g, -1]
                final = final[~np.isnan(final)]  # the seeds that ran
                if not final.size:
                    continue
                med = float(np.median(final))
                lo, hi = float(np.min(final)), float(np.max(final))
                y = min(med, top)
                kw = dict(color=color, ms=ms + 1, mew=1.0)
                if np.isinf(med):  # not recovered on the grid: a mark on the top edge
                    ax.plot([x], [top], marker="^", mfc="white", ls="none", clip_on=False,
                            **kw)
                else:
                    ax.errorbar([x], [y], yerr=[[y - lo], [min(hi, top) - y]], marker=marker,
                                ls="none", capsize=2, elinewidth=0.8,
                                label=label if i == 0 else None, **kw)
                    if np.isinf(hi):
                        ax.plot([x], [top], marker="^", mfc="white", ls="none",
                                clip_on=False, **kw)
                if early >= 0:
                    e = ds["threshold"].values[g, early]
                    e = e[~np.isnan(e)]
                    ye = min(float(np.median(e)), top)
                    ax.plot([x, x], [y, ye], color=color, lw=0.6, alpha=0.7, zorder=1)
                    ax.plot([x], [ye], marker=marker, mfc="white", color=color, ms=ms - 0.5,
                            ls="none", mew=0.8, alpha=0.9, clip_on=False)
    return top


def _theory(ax, p: xr.Dataset, lw: float) -> None:
    """The Bayes threshold, the conjectured curve and the teacher's width of one group."""
    kappa_star = float(p["theory_kappas"].values[0])  # the teacher's rank ratio (its data's)
    ax.axvspan(0, kappa_star, color="0.92", zorder=0, lw=0)
    ax.axvline(kappa_star, color="0.5", lw=0.8, ls=(0, (1, 1.5)), zorder=1,
               label=r"teacher's width $\kappa^*$")
    if np.isfinite(float(p["bayes_alpha"])):
        ax.axhline(float(p["bayes_alpha"]), color="black", lw=0.9 * lw, ls="--", zorder=1,
                   label="Bayes-optimal (SE)")
    curve = p["conjecture_curve"].values
    if np.isfinite(curve).any():
        T = int(p["T"])
        ax.plot(p["theory_kappas"].values, curve, color="black", lw=lw, zorder=1,
                label="gradient-flow conjecture" + (r" $/\,(T(T+1)/2)$" if T > 1 else ""))


@styled
def fig13(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """The measured perfect-recovery threshold of GD, AGD and plain GD against the student's
    width ``kappa``, one panel per channel point, with the Bayes-optimal threshold and, where
    it applies, the gradient-flow conjecture (docs/theory.md §16)."""
    recs, = inputs_of(inputs, "recovery")
    s = resolve_style(style)
    models = _models(recs)
    fig, axs = plt.subplots(1, max(1, len(models)),
                            figsize=(s["width"] * max(1, len(models)), s["height"] * 1.1),
                            layout="constrained", squeeze=False)
    eps = float(recs[0].attrs["eps"]) if recs else float("nan")
    steps = recs[0]["checkpoint"].values if recs else np.array([0])
    early = _early(steps)
    for ax, model in zip(axs.flat, models, strict=True):
        channel, T, rho, d = model
        top = _panel(ax, recs, model, s)
        ax.set_xlim(0.0, 1.05)
        ax.set_ylim(0.0, top)
        apply_axes(ax, (axes or {}).get(channel, axes))
        ax.set_title(rf"{channel}, $T={T}$, $\kappa^*=\rho={fmt_rho(rho)}$, $d={d}$",
                     fontsize=s["font_size"])
        ax.set_xlabel(r"student width $\kappa = r_s/d$")
        ax.set_ylabel(r"perfect-recovery threshold $\alpha$")
        add_legend(ax, loc="upper left", frameon=False, fontsize=s["font_size"] - 3)
    budget = (f"; open: after {int(steps[early])}" if early >= 0 else "")
    fig.suptitle("Does GD reach the Bayes threshold?\n" + rf"recovered: error $<{eps:g}$ at every "
                 rf"larger $\alpha$ after {int(steps[-1])} steps{budget} (median and range over "
                 r"seeds; $\triangle$ on top: not recovered on the grid)",
                 fontsize=s["font_size"] - 1)
    return fig
