"""fig11, beyond the paper: hardmax beyond two tokens (docs/theory.md §14): Hardmax at T = 2, 3
(4). What it shows in full, and the corrections it carries, are its entry of
:data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt

from aimlib.figures.layers import (
    add_legend,
    amp_markers,
    apply_axes,
    fmt_rho,
    off_axis,
    scaled_panel,
    se_plot,
    theory_of,
)
from aimlib.figures.style import Inputs, T_color, inputs_of, resolve_style, styled


@styled
def fig11(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Hardmax beyond two tokens (docs/theory.md §14): (a) SE error against the information-
    rescaled ``alpha_bar = c_T alpha / rho`` for each T (lines), AMP (filled circles) and each
    T's large-alpha law ``C_T alpha^-2`` (thin dashed); (b) ``alpha_bar^2 E`` against
    ``alpha_bar``, which flattens to each law's prefactor."""
    curves, amp, theory = inputs_of(inputs, "se", "amp", "theory")
    s = resolve_style(style)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(2 * s["width"], s["height"]),
                                 layout="constrained")
    for ds in sorted(curves, key=lambda c: int(c.attrs["T"])):
        T = int(ds.attrs["T"])
        color = T_color(T)
        ab, e = ds["alpha_bar"].values, ds["error"].values
        se_plot(ax, ab, ds, color=color, lw=s["line_width"], label=rf"SE $T={T}$")
        se_plot(bx, ab, ds, ab * ab * e, color=color, lw=s["line_width"])
        th = theory_of(theory, "large_alpha", ds)
        if th is not None:
            big = ab >= 1.0
            law = th["large_alpha"].values[big]
            ax.plot(ab[big], law, color=color, lw=0.8, ls=(0, (4, 3)), zorder=1)
            bx.plot(ab[big], ab[big] ** 2 * law, color=color, lw=0.8, ls=(0, (4, 3)),
                    zorder=1)
    ax.plot([], [], color="0.45", lw=0.8, ls=(0, (4, 3)),
            label=r"large-$\alpha$ laws $C_T\,\alpha^{-2}$")
    for agg in sorted(amp, key=lambda c: int(c.attrs["T"])):
        T = int(agg.attrs["T"])
        amp_markers(ax, [agg], "alpha_bar", s, color_of=lambda a, T=T: T_color(T), filled=True,
                     label=rf"AMP $T={T}$ ($d={agg.attrs['d']}$)")
        # panel (b) draws the same markers (counts, diamonds) on alpha_bar^2 times the values
        ab2 = agg["alpha_bar"] ** 2
        scaled = agg.assign({k: agg[k] * ab2 for k in ("mean", "std", "mean_all") if k in agg})
        amp_markers(bx, [scaled], "alpha_bar", s, color_of=lambda a, T=T: T_color(T),
                     filled=True)
    apply_axes(ax, axes)
    off_axis(ax, amp, "alpha_bar", s, color_of=lambda a: T_color(int(a.attrs["T"])))
    rho = float(curves[0].attrs["rho"]) if curves else float("nan")
    ax.set_xlabel(r"$\bar\alpha = c_T\,\alpha/\rho$")
    ax.set_ylabel("estimation error")
    ax.set_title(rf"(a) hardmax, $\rho={fmt_rho(rho)}$: $T$ tokens")
    add_legend(ax, loc="lower left", frameon=False, fontsize=s["font_size"] - 3)
    scaled_panel(bx, axes, r"$\bar\alpha$", r"$\bar\alpha^2\,E$",
                  r"(b) $\bar\alpha^2 E$ flattens to each law's prefactor")
    return fig
