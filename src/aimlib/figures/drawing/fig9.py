"""fig9, beyond the paper: a third output channel (docs/theory.md §11): Gaussian output channel y =
h + sqrt(Delta) z, rho = 0.5. What it shows in full, and the corrections it carries, are its
entry of :data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt

from aimlib.figures.layers import add_legend, amp_markers, apply_axes, fmt_rho, off_axis, se_plot
from aimlib.figures.style import Inputs, T_color, inputs_of, resolve_style, styled


@styled
def fig9(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """The Gaussian output channel (docs/theory.md §11): one panel per noise level Delta, SE
    error against alpha for each T (lines; the noiseless threshold ``alpha T (T + 1) =
    2 rho - rho^2`` dotted), AMP (filled circles) and AGD (crosses), one colour per T.  With
    noise, whether GD still reaches the Bayes-optimal error shows as the gap between the
    crosses and the line."""
    curves, amp, agd = inputs_of(inputs, "se", "amp", "agd")
    s = resolve_style(style)
    deltas = sorted({float(c.attrs["delta"]) for c in (*curves, *amp, *agd)})
    fig, axs = plt.subplots(1, len(deltas), figsize=(s["width"] * len(deltas), s["height"]),
                            layout="constrained", squeeze=False, sharey=True)

    def tcol(a):
        return T_color(int(a.attrs["T"]))

    for ax, delta in zip(axs[0], deltas, strict=True):
        def mine(sets, delta=delta):
            return sorted((c for c in sets if float(c.attrs["delta"]) == delta),
                          key=lambda c: int(c.attrs["T"]))

        for ds in mine(curves):
            T, rho = int(ds.attrs["T"]), float(ds.attrs["rho"])
            se_plot(ax, ds["alpha"].values, ds, color=tcol(ds), lw=s["line_width"],
                     label=rf"SE $T={T}$")
            thr = ds.attrs.get("perfect_recovery_alpha")
            if thr is not None:
                ax.axvline(float(thr), color=tcol(ds), ls=":", lw=0.9)
        amp_markers(ax, mine(amp), "alpha", s, color_of=tcol, filled=True,
                     label=lambda a: rf"AMP $T={a.attrs['T']}$ ($d={a.attrs['d']}$)")
        for g in mine(agd):
            ax.plot(g["alpha"].values, g["mean"].values, "x", color=tcol(g),
                    ms=s["marker_size"] + 2, ls="none",
                    label=rf"AGD $T={g.attrs['T']}$ ($d={g.attrs['d']}$)")
        apply_axes(ax, axes)
        off_axis(ax, [*mine(amp), *mine(agd)], "alpha", s, color_of=tcol)
        rho = float(curves[0].attrs["rho"]) if curves else float("nan")
        ax.set_xlabel(r"$\alpha = n/d^2$")
        ax.set_title(rf"Gaussian channel, $\rho={fmt_rho(rho)}$, $\Delta={delta:g}$")
    # one legend for the panels: every marker kind any panel shows (a triangle off the axis
    # in the last panel too)
    axs[0, 0].aimlib_kinds = list(dict.fromkeys(
        k for a in axs.flat for k in getattr(a, "aimlib_kinds", [])))
    add_legend(axs[0, 0], loc="lower left", frameon=False, fontsize=s["font_size"] - 3, ncol=1)
    axs[0, 0].set_ylabel("estimation error")
    return fig
