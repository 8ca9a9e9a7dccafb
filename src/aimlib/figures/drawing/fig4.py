"""fig4, beyond the paper: Softmax, T = 2 at several inverse temperatures beta. What it shows in
full, and the corrections it carries, are its entry of :data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

from aimlib.figures.layers import add_legend, apply_axes, fmt_rho, off_axis, softmax_panel
from aimlib.figures.style import Inputs, beta_color, inputs_of, new_figure, resolve_style, styled


@styled
def fig4(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Softmax at several beta: the single (beta-free) SE curve, AMP, GD and AGD at each beta."""
    curves, amp, gd, agd = inputs_of(inputs, "se", "amp", "gd", "agd")
    s = resolve_style(style)
    fig, ax = new_figure(s)

    def bcol(a):
        return beta_color(float(a.attrs["beta"]))

    softmax_panel(ax, curves, amp, gd, agd, s, "beta", bcol,
                   lambda a: rf"$\beta={a.attrs['beta']:g}$", r"SE (every $\beta$)")
    apply_axes(ax, axes)
    off_axis(ax, [*amp, *gd, *agd], "alpha_bar", s, color_of=bcol)
    rho = float(curves[0].attrs["rho"]) if curves else float("nan")
    T = int(curves[0].attrs["T"]) if curves else 2
    ax.set_xlabel(r"$\bar\alpha = \alpha\,(T^2+T-2)$")
    ax.set_ylabel("estimation error")
    ax.set_title(rf"softmax, $T={T}$, $\rho={fmt_rho(rho)}$: SE is $\beta$-free")
    add_legend(ax, loc="lower left", frameon=False, ncol=2 if gd else 1,
              fontsize=s["font_size"] - 2)
    return fig
