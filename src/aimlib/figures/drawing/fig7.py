"""fig7, beyond the paper: the large-alpha rate (docs/theory.md §9): Hardmax, T = 2. What it shows
in full, and the corrections it carries, are its entry of
:data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np

from aimlib.figures.layers import (
    add_legend,
    amp_markers,
    apply_axes,
    estimate_text,
    fmt_rho,
    off_axis,
    scaled_panel,
    se_plot,
    slope_fit,
    theory_of,
)
from aimlib.figures.style import Inputs, inputs_of, resolve_style, rho_color, styled


@styled
def fig7(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """How the hardmax error vanishes (docs/theory.md §9): (a) SE with the exact g_out (solid)
    and with the published density (dashed) against alpha, the two asymptotic laws (thin dashed
    grey: ``alpha^-2`` and ``alpha^-1``), and AMP at large alpha with the slope fitted on its
    means; (b) ``alpha^2 E`` against alpha, where the exact curves flatten to their prefactor
    and the density curves keep growing."""
    curves, amp, theory = inputs_of(inputs, "se", "amp", "theory")
    s = resolve_style(style)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(2 * s["width"], s["height"]),
                                 layout="constrained")
    ls = {"exact": "-", "density": "--"}
    for ds in sorted(curves, key=lambda c: (c.attrs["rho"], c.attrs["variant"] != "exact")):
        rho, v = float(ds.attrs["rho"]), ds.attrs["variant"]
        a, e = ds["alpha"].values, ds["error"].values
        color = rho_color(rho, s)
        lab = rf"SE $\rho={fmt_rho(rho)}$" + ("" if v == "exact" else r", density (paper)")
        se_plot(ax, a, ds, color=color, lw=s["line_width"], ls=ls[v], label=lab)
        se_plot(bx, a, ds, a * a * e, color=color, lw=s["line_width"], ls=ls[v])
        th = theory_of(theory, "large_alpha", ds)
        if th is not None:
            big = a >= 1.0
            law = th["large_alpha"].values[big]
            ax.plot(a[big], law, color="0.45", lw=0.8, ls=(0, (4, 3)), zorder=1)
            bx.plot(a[big], a[big] ** 2 * law, color="0.45", lw=0.8, ls=(0, (4, 3)), zorder=1)
    ax.plot([], [], color="0.45", lw=0.8, ls=(0, (4, 3)),
            label=r"laws $c_2\alpha^{-2}$ (exact), $c_1\alpha^{-1}$ (density)")
    for agg in sorted(amp, key=lambda c: c.attrs["rho"]):
        rho = float(agg.attrs["rho"])
        n = np.maximum(agg["n_converged"].values, 1)
        fit = slope_fit(agg["alpha"].values, agg["mean"].values, agg["std"].values / np.sqrt(n))
        fit_text = rf": slope ${estimate_text(*fit)}$" if fit else ""
        amp_markers(ax, [agg], "alpha", s, filled=True,
                     label=rf"AMP $d={agg.attrs['d']}$, $\rho={fmt_rho(rho)}$" + fit_text)
        a = agg["alpha"].values
        bx.errorbar(a, a * a * agg["mean"].values, yerr=a * a * agg["std"].values, fmt="o",
                    color=rho_color(rho, s), ms=s["marker_size"], capsize=1.5, elinewidth=0.8,
                    ls="none")
    apply_axes(ax, axes)
    off_axis(ax, amp, "alpha", s)
    ax.set_xlabel(r"$\alpha = n/d^2$")
    ax.set_ylabel("estimation error")
    ax.set_title(r"(a) hardmax, $T=2$: error against $\alpha$")
    add_legend(ax, loc="lower left", frameon=False, fontsize=s["font_size"] - 3)
    scaled_panel(bx, axes, r"$\alpha$", r"$\alpha^2\,E$",
                  r"(b) $\alpha^2 E$: flat for $\alpha^{-2}$, rising for $\alpha^{-1}$")
    return fig
