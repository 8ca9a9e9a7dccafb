"""fig5, beyond the paper: Softmax SE for T = 2. What it shows in full, and the corrections it
carries, are its entry of :data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

from aimlib.channels.softmax import perfect_recovery_alpha_bar
from aimlib.figures.layers import add_legend, apply_axes, fmt_rho, se_plot
from aimlib.figures.style import Inputs, T_color, inputs_of, new_figure, resolve_style, styled


@styled
def fig5(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Softmax SE for several T against alpha_bar = alpha (T^2 + T - 2): one curve for all T."""
    (curves,) = inputs_of(inputs, "se")
    s = resolve_style(style)
    fig, ax = new_figure(s)
    styles = ["-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1))]
    for i, ds in enumerate(sorted(curves, key=lambda c: int(c.attrs["T"]))):
        T = int(ds.attrs["T"])
        se_plot(ax, ds["alpha_bar"].values, ds, color=T_color(T),
                 ls=styles[i % len(styles)], lw=s["line_width"], label=rf"$T={T}$")
    rho = float(curves[0].attrs["rho"])
    thr = perfect_recovery_alpha_bar(rho)
    ax.axvline(thr, color="gray", ls=":", lw=1.0)
    ax.annotate(rf"$\bar\alpha_c = {thr:g}$", xy=(thr, 0.05), xytext=(4, 0),
                textcoords="offset points", fontsize=s["font_size"] - 1, color="gray")
    apply_axes(ax, axes)
    ax.set_xlabel(r"$\bar\alpha = \alpha\,(T^2+T-2)$")
    ax.set_ylabel("estimation error (SE)")
    ax.set_title(rf"softmax, $\rho={fmt_rho(rho)}$: all $T$ collapse in $\bar\alpha$")
    add_legend(ax, loc="upper right", frameon=False)
    return fig
