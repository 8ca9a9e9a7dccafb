"""fig2b, figure 2 (right) of the paper: Softmax. What it shows in full, and the corrections it
carries, are its entry of :data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

from aimlib.figures.layers import (
    add_legend,
    apply_axes,
    fmt_rho,
    off_axis,
    softmax_panel,
    spectral_markers,
)
from aimlib.figures.style import Inputs, T_color, inputs_of, new_figure, resolve_style, styled


@styled
def fig2b(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Softmax: error against alpha_bar; SE line, AMP dots per T, GD (+) and AGD (x) per T."""
    curves, amp, gd, agd, spectral, theory = inputs_of(inputs, "se", "amp", "gd", "agd",
                                                       "spectral", "theory")
    s = resolve_style(style)
    fig, ax = new_figure(s)

    def tcol(a):
        return T_color(int(a.attrs["T"]))

    softmax_panel(ax, curves, amp, gd, agd, s, "T", tcol, lambda a: rf"$T={a.attrs['T']}$",
                   "SE (all $T$)")
    spectral_markers(ax, spectral, theory, "alpha_bar", s, color_of=tcol)
    apply_axes(ax, axes)
    off_axis(ax, [*amp, *gd, *agd, *spectral], "alpha_bar", s, color_of=tcol)
    rho = float(curves[0].attrs["rho"]) if curves else float("nan")
    ax.set_xlabel(r"$\bar\alpha = \alpha\,(T^2+T-2)$")
    ax.set_ylabel("estimation error")
    ax.set_title(rf"softmax, $\rho={fmt_rho(rho)}$: SE, AMP" + (", GD, AGD" if gd else ""))
    add_legend(ax, loc="lower left", frameon=False, ncol=2, fontsize=s["font_size"] - 2)
    return fig
