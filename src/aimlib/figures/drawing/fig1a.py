"""fig1a, figure 1 (left) of the paper: Hardmax, T = 2. What it shows in full, and the corrections
it carries, are its entry of :data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

from aimlib.figures.layers import (
    add_legend,
    amp_markers,
    apply_axes,
    off_axis,
    paper_curves,
    se_lines,
    spectral_markers,
)
from aimlib.figures.style import Inputs, inputs_of, new_figure, resolve_style, styled


@styled
def fig1a(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Hardmax, T = 2: error against alpha for each rho; SE lines and AMP markers (mean +- std),
    and, thin and dashed, the curves as the paper computed them (density g_out)."""
    curves, amp, spectral, theory = inputs_of(inputs, "se", "amp", "spectral", "theory")
    s = resolve_style(style)
    fig, ax = new_figure(s)
    curves = paper_curves(ax, curves, "alpha", s)
    se_lines(ax, curves, "alpha", s)
    if amp:
        amp_markers(ax, amp, "alpha", s, label="AMP")
    spectral_markers(ax, spectral, theory, "alpha", s)
    apply_axes(ax, axes)
    off_axis(ax, [*amp, *spectral], "alpha", s)
    ax.set_xlabel(r"$\alpha = n/d^2$")
    ax.set_ylabel(r"estimation error $\frac{1}{d}\|\hat S - S^*\|_F^2$")
    ax.set_title(r"hardmax, $T=2$: Bayes-optimal error (SE)" + (" and AMP" if amp else ""))
    add_legend(ax, loc="lower left", frameon=False)
    return fig
