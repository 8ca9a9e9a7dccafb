"""fig12, beyond the paper: the 2 x 2 table of {tied, untied} x {self, cross} attention
(docs/theory.md §15). What it shows in full is its entry of
:data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np

from aimlib.figures.layers import add_legend, amp_markers, apply_axes, fmt_rho, off_axis, se_plot
from aimlib.figures.style import Inputs, T_color, inputs_of, resolve_style, styled
from aimlib.theory.state_evolution import usable

#: The panels, row by row: (prior, attention) and the panel's title.
PANELS = ((("tied", "self"), "tied self-attention (the paper's)"),
          (("untied", "self"), "untied self-attention: bounds"),
          (("tied", "cross"), "tied cross-attention"),
          (("untied", "cross"), "untied cross-attention"))
#: Line styles of the thresholds: perfect recovery and counting.
THRESHOLD_LS = {"perfect_recovery": (0, (1, 1.5)), "counting": (0, (5, 2, 1, 2))}


def cell_of(ds) -> tuple[str, str]:
    """A dataset's ``(prior, attention)`` (the paper's files carry neither attribute)."""
    return str(ds.attrs.get("prior", "tied")), str(ds.attrs.get("attention", "self"))


def _by_T(datasets):
    return sorted(datasets, key=lambda d: int(d.attrs["T"]))


def _thresholds(ax, ds, color, lw) -> set[str]:
    """The curve's thresholds as vertical lines; returns the kinds drawn."""
    drawn = set()
    for key, value in ds.attrs.items():
        if not key.endswith("_alpha") and not key.startswith("perfect_recovery_alpha"):
            continue
        kind = "counting" if key.startswith("counting") else "perfect_recovery"
        if kind == "counting" and "error" in ds:  # equal to perfect recovery where exact
            continue
        ax.axvline(float(value), color=color, lw=lw, ls=THRESHOLD_LS[kind], zorder=1)
        drawn.add(kind)
    return drawn


def _panel(ax, curves, amp, agd, s) -> None:
    lw = s["line_width"]
    kinds: set[str] = set()
    for ds in _by_T(curves):
        T = int(ds.attrs["T"])
        color = T_color(T)
        a = ds["alpha"].values
        if "error" in ds:
            se_plot(ax, a, ds, color=color, lw=lw, label=rf"SE $T={T}$")
        else:  # untied self-attention: the band between the bounds
            ok = usable(ds)
            lo, hi = ds["error_lower"].values, ds["error_upper"].values
            ax.fill_between(a, np.where(ok, lo, np.nan), np.where(ok, hi, np.nan), color=color,
                            alpha=0.25, lw=0, label=rf"SE bounds $T={T}$")
            for y in (lo, hi):
                se_plot(ax, a, ds, y, color=color, lw=0.6 * lw)
        kinds |= _thresholds(ax, ds, color, 0.8)
    for agg in _by_T(amp):
        T = int(agg.attrs["T"])
        amp_markers(ax, [agg], "alpha", s, color_of=lambda _, T=T: T_color(T), filled=True,
                    label=rf"AMP $T={T}$ ($d={agg.attrs['d']}$)")
    for agg in _by_T(agd):
        T = int(agg.attrs["T"])
        amp_markers(ax, [agg], "alpha", s, color_of=lambda _, T=T: T_color(T), marker="s",
                    label=rf"AGD $T={T}$ ($d={agg.attrs['d']}$)")
    for kind in ("perfect_recovery", "counting"):
        if kind in kinds:
            ax.plot([], [], color="0.4", lw=0.8, ls=THRESHOLD_LS[kind],
                    label="perfect recovery" if kind == "perfect_recovery" else "counting")


@styled
def fig12(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """The four cells of {tied, untied} x {self, cross} attention: SE (the band between the
    bounds in untied self-attention), AMP (filled circles) and AGD (open squares) against
    ``alpha`` for each T, with the thresholds (docs/theory.md §15)."""
    curves, amp, agd = inputs_of(inputs, "se", "amp", "agd")
    s = resolve_style(style)
    fig, grid = plt.subplots(2, 2, figsize=(2 * s["width"], 2 * s["height"]),
                             layout="constrained", sharex=True, sharey=True)
    rho = float(curves[0].attrs["rho"]) if curves else float("nan")
    channel = str(curves[0].attrs["channel"]) if curves else ""
    for ax, (cell, title) in zip(grid.flat, PANELS, strict=True):
        mine = [[d for d in group if cell_of(d) == cell] for group in (curves, amp, agd)]
        _panel(ax, *mine, s)
        if cell == ("untied", "self") and not mine[1]:
            title += "\n(no AMP: no Bayes-optimal denoiser)"
        apply_axes(ax, axes)
        off_axis(ax, [*mine[1], *mine[2]], "alpha", s,
                 color_of=lambda a: T_color(int(a.attrs["T"])))
        ax.set_title(title, fontsize=s["font_size"])
        add_legend(ax, loc="lower left", frameon=False, fontsize=s["font_size"] - 3)
    for ax in grid[1]:
        ax.set_xlabel(r"$\alpha = n/d^2$")
    for ax in grid[:, 0]:
        ax.set_ylabel("estimation error")
    fig.suptitle(rf"{channel}, $\rho={fmt_rho(rho)}$: tied and untied keys and queries, "
                 "self- and cross-attention")
    return fig
