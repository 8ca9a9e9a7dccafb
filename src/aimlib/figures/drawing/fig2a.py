"""fig2a, figure 2 (left) of the paper: Softmax, T = 2. What it shows in full, and the corrections
it carries, are its entry of :data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from aimlib.figures.layers import add_legend, apply_axes, se_lines
from aimlib.figures.style import Inputs, inputs_of, new_figure, resolve_style, styled


@styled
def fig2a(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Softmax, T = 2: SE error against alpha for each rho, plus the rho = infinity line."""
    (curves,) = inputs_of(inputs, "se")
    s = resolve_style(style)
    fig, ax = new_figure(s)
    se_lines(ax, curves, "alpha", s)
    T = int(curves[0].attrs["T"])
    k = float(curves[0]["alpha_bar"].values[0] / curves[0]["alpha"].values[0])  # T^2 + T - 2
    xmax = (axes or {}).get("xlim", [0, 1.0 / k * 1.12])[1]
    xs = np.linspace(0.0, xmax, 400)
    ax.plot(xs, np.clip(1.0 - k * xs, 0.0, None), color="black", ls="--", lw=s["line_width"],
            label=r"$\rho=\infty$")
    apply_axes(ax, axes)
    ax.set_xlabel(r"$\alpha = n/d^2$")
    ax.set_ylabel("estimation error (SE)")
    ax.set_title(rf"softmax, $T={T}$: Bayes-optimal error")
    add_legend(ax, loc="upper right", frameon=False)
    return fig
