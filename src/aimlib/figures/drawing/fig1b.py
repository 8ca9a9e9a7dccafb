"""fig1b, figure 1 (right) of the paper: Hardmax, T = 2. What it shows in full, and the corrections
it carries, are its entry of :data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

from aimlib.figures.layers import add_legend, apply_axes, paper_curves, se_lines, se_plot
from aimlib.figures.style import Inputs, inputs_of, new_figure, resolve_style, styled


@styled
def fig1b(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Hardmax, T = 2: SE error against alpha_bar = alpha / rho, with the rho -> 0 limit, and,
    thin and dashed, the curves as the paper computed them (density g_out)."""
    curves, (limit,) = inputs_of(inputs, "se", "small_width")
    s = resolve_style(style)
    fig, ax = new_figure(s)
    curves = paper_curves(ax, curves, "alpha_bar", s)
    se_lines(ax, curves, "alpha_bar", s)
    se_plot(ax, limit["alpha_bar"].values, limit, color="black", ls="--",
             lw=s["line_width"], label=r"$\rho \to 0$")
    thr = float(limit.attrs["threshold"])
    ax.axvline(thr, color="gray", ls=":", lw=1.0)
    ax.annotate(rf"$\bar\alpha_c \approx {thr:.4f}$", xy=(thr, 0.05), xytext=(4, 0),
                textcoords="offset points", fontsize=s["font_size"] - 1, color="gray")
    apply_axes(ax, axes)
    ax.set_xlabel(r"$\bar\alpha = \alpha/\rho$")
    ax.set_ylabel("estimation error (SE)")
    ax.set_title(r"hardmax, $T=2$: SE against $\bar\alpha$, and $\rho \to 0$")
    add_legend(ax, loc="upper right", frameon=False, ncol=2)
    return fig
