"""fig6, beyond the paper: the correction itself: Hardmax, T = 2. What it shows in full, and the
corrections it carries, are its entry of :data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

from aimlib.figures.layers import add_legend, amp_markers, apply_axes, fmt_rho, off_axis, se_plot
from aimlib.figures.style import Inputs, inputs_of, new_figure, resolve_style, styled


@styled
def fig6(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """The hardmax correction: SE with the exact g_out, SE as the paper computes it with the
    density g_out (assuming the Nishimori identities), the state evolution of AMP actually run
    with the density g_out (mismatched), and AMP with each g_out.

    AMP markers are means over converged seeds (filled circles: exact g_out; open squares:
    density g_out); unconverged runs are drawn as in every figure (:func:`amp_markers`).
    """
    curves, amp = inputs_of(inputs, "se", "amp")
    s = resolve_style(style)
    fig, ax = new_figure(s)
    col = {"exact": "tab:blue", "density": "tab:red", "mismatched": "darkred"}
    ls = {"exact": "-", "density": "--", "mismatched": ":"}
    name = {"exact": r"exact $\partial_\kappa \Phi_2$", "density": r"published density $\phi_2$"}
    se_name = {"exact": f"SE, {name['exact']}", "density": f"SE, {name['density']} (paper)",
               "mismatched": r"SE of AMP with $\phi_2$ (mismatched)"}
    order = ("exact", "density", "mismatched")
    for ds in sorted(curves, key=lambda c: order.index(c.attrs["variant"])):
        v = ds.attrs["variant"]
        se_plot(ax, ds["alpha"].values, ds, color=col[v], lw=s["line_width"],
                 ls=ls[v], label=se_name[v])
    for agg in sorted(amp, key=lambda c: c.attrs["variant"] != "exact"):
        v = agg.attrs["variant"]
        amp_markers(ax, [agg], "alpha", s, color_of=lambda a, v=v: col[v],
                     marker="o" if v == "exact" else "s", filled=(v == "exact"),
                     label=rf"AMP ($d={agg.attrs['d']}$), {name[v]}")
    apply_axes(ax, axes)
    off_axis(ax, amp, "alpha", s, color_of=lambda a: col[a.attrs["variant"]])
    rho = float(curves[0].attrs["rho"]) if curves else float("nan")
    ax.set_xlabel(r"$\alpha = n/d^2$")
    ax.set_ylabel("estimation error")
    ax.set_title(rf"hardmax, $T=2$, $\rho={fmt_rho(rho)}$: exact vs published $g_{{out}}$")
    add_legend(ax, loc="lower left", frameon=False, fontsize=s["font_size"] - 2)
    return fig
