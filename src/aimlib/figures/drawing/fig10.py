"""fig10, beyond the paper: tokens that are not Gaussian (docs/theory.md §13): Softmax and hardmax,
T = 2. What it shows in full, and the corrections it carries, are its entry of
:data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from aimlib.figures.layers import add_legend, amp_markers, apply_axes, fmt_rho, off_axis, se_plot
from aimlib.figures.style import Inputs, inputs_of, resolve_style, styled
from aimlib.tokens import TOKEN_LAWS, readable

#: Colours of the token laws in fig10 (by registry name).
TOKEN_COLORS = {"gaussian": "black", "rademacher": "tab:blue", "uniform": "tab:green",
                "student_t": "tab:red", "correlated": "tab:purple"}


def _law(ds: xr.Dataset) -> str:
    """The token law of a cached result (``"gaussian"`` for results without the attribute)."""
    return str(ds.attrs.get("tokens", "gaussian"))


def _law_label(tag: str) -> str:
    """``rademacher``, ``student_t ($\\nu=10$)``, ``correlated ($c=0.3$)`` from a file tag."""
    for name, cls in TOKEN_LAWS.items():
        if tag.startswith(name) and cls.PARAM and tag != name:
            sym = r"\nu" if cls.PARAM == "nu" else cls.PARAM
            return rf"{name} (${sym}={readable(float(tag[len(name):]))}$)"
    return tag


def _law_color(tag: str):
    for name, color in TOKEN_COLORS.items():
        if tag.startswith(name):
            return color
    return "gray"


@styled
def fig10(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Token laws (docs/theory.md §13): per channel, error against alpha under each law (top)
    and its difference from the Gaussian-token SE (bottom).  One colour per law; the line
    style and the marker say what was computed (legend of kinds in grey)."""
    # matplotlib only when drawing (importing it costs ~0.3 s)
    from matplotlib.ticker import NullFormatter

    curves, amp, agd = inputs_of(inputs, "se", "amp", "agd")
    s = resolve_style(style)
    chans = [c for c in ("softmax", "hardmax", "gaussian")
             if any(d.attrs.get("channel") == c for d in (*curves, *amp, *agd))]
    fig, axs = plt.subplots(2, len(chans), figsize=(s["width"] * len(chans), s["height"] * 1.45),
                            layout="constrained", squeeze=False,
                            gridspec_kw={"height_ratios": [2.0, 1.0]})
    laws_all = sorted({_law(d) for d in (*curves, *amp, *agd)},
                      key=lambda t: (t != "gaussian", t))
    n_laws = max(len(laws_all), 1)
    for j, ch in enumerate(chans):
        ax, dx = axs[0, j], axs[1, j]
        mine = [c for c in curves if c.attrs.get("channel") == ch]
        gauss = next((c for c in mine if _law(c) == "gaussian"), None)
        universal, kinds, shown = [], {}, set()
        for ds in sorted(mine, key=lambda c: laws_all.index(_law(c))):
            law = _law(ds)
            color = _law_color(law)
            if gauss is not None and law != "gaussian":
                diff = ds["error"].values - np.interp(ds["alpha"].values, gauss["alpha"].values,
                                                      gauss["error"].values)
                if np.nanmax(np.abs(diff)) < 1e-6:
                    universal.append(law)
                    continue
                dx.plot(ds["alpha"].values, diff, color=color, lw=s["line_width"], ls="--")
                kinds["se_law"] = (dict(color="0.35", ls="--"), "SE of the law")
            se_plot(ax, ds["alpha"].values, ds, color=color, lw=s["line_width"],
                     ls="-" if law == "gaussian" else "--")
            shown.add(law)
        kinds = {"se": (dict(color="black", ls="-"), "SE, Gaussian tokens"
                        + (" (= SE of every law)" if universal and len(universal) == len(mine) - 1
                           else "")), **kinds}
        dx.axhline(0.0, color="black", lw=s["line_width"])
        for kind, sets, marker in (("AMP", amp, "o"), ("AGD", agd, "x")):
            for agg in sorted((a for a in sets if a.attrs.get("channel") == ch),
                              key=lambda a: laws_all.index(_law(a))):
                law = _law(agg)
                shown.add(law)
                i = laws_all.index(law)
                xs = agg["alpha"].values * (1.0 + 0.035 * (i - (n_laws - 1) / 2))  # offset
                m = agg["mean"].values
                conv = agg["n_converged"].values
                color = _law_color(law)
                kinds[kind] = (dict(color="0.35", marker=marker, ls="none",
                                    mfc="0.35" if kind == "AMP" else None),
                               f"{kind} ($d={agg.attrs['d']}$)")
                if kind == "AMP":
                    amp_markers(ax, [agg.assign_coords(alpha=xs)], "alpha", s,
                                 color_of=lambda a, c=color: c, marker=marker, filled=True)
                else:
                    ax.plot(xs, m, marker, color=color, ms=s["marker_size"] + 2, ls="none")
                if gauss is not None:
                    ref = np.interp(agg["alpha"].values, gauss["alpha"].values,
                                    gauss["error"].values)
                    sem = np.where(conv >= 2, agg["std"].values / np.sqrt(np.maximum(conv, 1)),
                                   np.nan)
                    dx.errorbar(xs, m - ref, yerr=sem, fmt=marker, color=color,
                                ms=s["marker_size"] + (0 if kind == "AMP" else 2), mfc=color,
                                elinewidth=0.8, capsize=1.5, ls="none")
        apply_axes(ax, axes.get(ch) if isinstance(axes, Mapping) and ch in axes else axes)
        off_axis(ax, [a for a in (*amp, *agd) if a.attrs.get("channel") == ch], "alpha", s,
                  color_of=lambda a: _law_color(_law(a)))
        dx.set_xscale(ax.get_xscale())
        dx.set_xlim(ax.get_xlim())
        dx.grid(True, which="major", alpha=0.25)
        for a in (ax, dx):
            a.xaxis.set_minor_formatter(NullFormatter())
        rho = float(mine[0].attrs["rho"]) if mine else float("nan")
        ax.set_title(rf"{ch}, $T=2$, $\rho={fmt_rho(rho)}$")
        ax.set_ylabel("estimation error")
        dx.set_xlabel(r"$\alpha = n/d^2$")
        dx.set_ylabel("minus Gaussian-token SE")
        for law in laws_all:
            if law in shown or law in universal:
                ax.plot([], [], color=_law_color(law), lw=4, label=_law_label(law))
        for props, text in kinds.values():
            ax.plot([], [], label=text, **{k: v for k, v in props.items() if v is not None})
        add_legend(ax, loc="lower left", frameon=False, fontsize=s["font_size"] - 3)
    return fig
