"""fig3, figure 3 of the paper (finite-size study): AMP and averaged GD against alpha at each d
with the SE curve, the gap to SE against 1/d at fixed alpha with a fitted power law, and the
extrapolation d -> infinity against SE. What it shows in full, and the corrections it carries,
are its entry of :data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np

from aimlib.figures.layers import (
    add_legend,
    amp_markers,
    apply_axes,
    estimate_text,
    fmt_rho,
    off_axis,
    se_plot,
    supported_fit,
)
from aimlib.figures.style import Inputs, inputs_of, rank_colors, resolve_style, styled


@styled
def fig3(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Finite size: (a, b) error against alpha per d with SE, softmax (AMP and AGD) and hardmax
    (AMP); (c) the gap |mean - SE| against 1/d at fixed alphas, log-log, with the fitted power law;
    (d) the mean error against 1/d with its extrapolation to d -> infinity and the SE value.

    Markers are means over converged runs; where no run of a point converged, the mean of the
    final iterates is drawn as a small open diamond so that the point is not silently dropped.
    ``axes`` may set each channel's panel (``axes.softmax``, ``axes.hardmax``).
    """
    curves, amp, agd, finite_size = inputs_of(inputs, "se", "amp", "agd", "finite_size")
    s = resolve_style(style)
    fig, axs = plt.subplots(2, 2, figsize=(2 * s["width"], 2 * s["height"]), layout="constrained")
    dc = rank_colors([int(a.attrs["d"]) for a in (*amp, *agd)])
    for ax, channel, tag in ((axs[0, 0], "softmax", "(a)"), (axs[0, 1], "hardmax", "(b)")):
        _fig3_alpha_panel(ax, channel, tag, curves, amp, agd, s, lambda a: dc[int(a.attrs["d"])])
        apply_axes(ax, (axes or {}).get(channel))
    _fig3_gap_panels(axs[1, 0], axs[1, 1], finite_size, s)
    return fig


def _fig3_alpha_panel(ax, channel, tag, curves, amp, agd, s, dcol) -> None:
    """Panels (a, b): one channel's error against alpha for each d, with its SE curve."""
    rho = float(curves[0].attrs["rho"]) if curves else float("nan")
    for ds in curves:
        if ds.attrs["channel"] == channel:
            se_plot(ax, ds["alpha"].values, ds, color="black",
                     lw=s["line_width"], label=r"SE ($d\to\infty$)", zorder=5)
    mine = sorted((a for a in amp if a.attrs["channel"] == channel),
                  key=lambda a: int(a.attrs["d"]))
    amp_markers(ax, mine, "alpha", s, color_of=dcol, label=lambda a: rf"AMP $d={a.attrs['d']}$")
    for g in sorted((a for a in agd if a.attrs["channel"] == channel),
                    key=lambda a: int(a.attrs["d"])):
        ax.plot(g["alpha"].values, g["mean"].values, "x", color=dcol(g),
                ms=s["marker_size"] + 2, ls="none", label=rf"AGD $d={g.attrs['d']}$")
    ax.set_yscale("log")
    ax.set_ylim(1e-3, 1.3)
    ax.grid(True, which="major", alpha=0.25)
    off_axis(ax, mine, "alpha", s, color_of=dcol)
    ax.set_xlabel(r"$\alpha = n/d^2$")
    ax.set_ylabel("estimation error")
    ax.set_title(rf"{tag} {channel}, $T=2$, $\rho={fmt_rho(rho)}$")
    add_legend(ax, loc="lower left", frameon=False, ncol=2, fontsize=s["font_size"] - 3)


#: Horizontal spacing of the d -> infinity values of fig3 (d), left of 1/d = 0.
EXT_STEP = 0.0012


def _fig3_gap_panels(ax_gap, ax_ext, finite_size, s) -> None:
    """Panels (c, d): the gap to SE against 1/d with its power-law fit, and the mean error
    against 1/d with its extrapolation to d -> infinity next to SE."""
    colors = plt.get_cmap("tab10")
    k = 0
    d_seen: set[int] = set()
    for fs in finite_size:
        method = fs.attrs.get("kind", "amp").upper()
        filled = method == "AMP"
        for i in range(fs.sizes["point"]):
            p = fs.isel(point=i)
            channel, alpha = str(p["channel"].values), float(p["alpha"])
            color = colors(k % 10)
            k += 1
            marker = ("o" if channel == "softmax" else "s") if filled else "x"
            d = p["d"].values.astype(float)
            gap, sem, mean = p["gap"].values, p["sem"].values, p["mean"].values
            ok = np.isfinite(gap)
            if not ok.any():
                continue
            slope, err = float(p["slope"]), float(p["slope_err"])
            # a fit only where the d's support one (aimlib.figures.layers.supported_fit)
            fitted = bool(p["fit_success"]) and supported_fit(int(ok.sum()), slope, err)
            fit_text = rf"$k={estimate_text(slope, err)}$" if fitted else "k not determined"
            label = rf"{method} {channel} $\alpha={alpha:g}$: {fit_text}"
            mk = dict(fmt=marker, color=color, mfc=color if filled else "none",
                      ms=s["marker_size"], capsize=1.5, elinewidth=0.8, ls="none")
            d_seen.update(int(v) for v in d[ok])
            est = (p["sem_estimated"].values.astype(bool) if "sem_estimated" in p
                   else np.zeros(d.size, dtype=bool))
            meas = ok & ~est  # measured spread: solid bars; one-seed estimates: dotted
            ax_gap.errorbar(1.0 / d[ok], np.abs(gap[ok]), yerr=np.where(meas, sem, np.nan)[ok],
                            label=label, **mk)
            ax_ext.errorbar(1.0 / d[ok], mean[ok], yerr=np.where(meas, sem, np.nan)[ok], **mk)
            if (ok & est).any():
                for axx, y in ((ax_gap, np.abs(gap)), (ax_ext, mean)):
                    bars = axx.errorbar(1.0 / d[ok & est], y[ok & est], yerr=sem[ok & est],
                                        **{**mk, "fmt": "none"})
                    bars[2][0].set_linestyle(":")
            # each point's d -> infinity values sit just left of 1/d = 0, side by side, so that
            # points with close SE errors do not hide each other
            x0 = -EXT_STEP * k
            ax_ext.plot([x0], [float(p["se_error"])], "*", color=color, ms=10, mec="black",
                        mew=0.5, zorder=6)
            if not fitted:
                continue
            xd = np.geomspace(d[ok].min(), d[ok].max(), 50)
            ax_gap.plot(1.0 / xd, np.abs(float(p["amplitude"])) * xd ** (-slope), color=color,
                        lw=1.0)
            e_inf, e_err, c = float(p["e_inf"]), float(p["e_inf_err"]), float(p["e_inf_c"])
            if np.isfinite(e_inf):
                xd = np.geomspace(d[ok].min(), 1e7, 200)
                ax_ext.plot(1.0 / xd, e_inf + c * xd ** (-slope), color=color, lw=1.0, ls="--")
                ax_ext.plot([x0, 0.0], [e_inf, e_inf], color=color, lw=0.6, ls=":")
                ax_ext.errorbar([x0], [e_inf], yerr=[e_err], fmt="_", color=color, ms=12,
                                capsize=3, mew=1.5)
    ax_gap.set_xscale("log")
    ax_gap.set_yscale("log")
    # The d values span less than a decade of 1/d: label each one ("1/50") instead of decades.
    ticks = sorted(d_seen)
    ax_gap.xaxis.set_major_locator(matplotlib.ticker.FixedLocator([1.0 / v for v in ticks]))
    ax_gap.xaxis.set_major_formatter(matplotlib.ticker.FixedFormatter([f"1/{v}" for v in ticks]))
    ax_gap.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax_gap.grid(True, which="major", alpha=0.25)
    ax_gap.set_xlabel(r"$1/d$")
    ax_gap.set_ylabel(r"$|\,\overline{E}_d - E_{SE}\,|$")
    ax_gap.set_title(r"(c) gap to SE; fit $A\,d^{-k}$ ($k$ $\pm$ 1 s.e.)")
    add_legend(ax_gap, loc="best", frameon=False, fontsize=s["font_size"] - 3)
    ax_ext.set_xlim(left=-EXT_STEP * (k + 1))
    ax_ext.set_ylim(0.0, 1.1)
    ax_ext.grid(True, which="major", alpha=0.25)
    ax_ext.axvline(0.0, color="0.6", lw=0.6)
    ax_ext.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(5))
    from matplotlib.lines import Line2D  # matplotlib only when drawing (importing it costs ~0.3 s)

    ax_ext.legend([Line2D([], [], marker="o", ls="none", color="0.35"),
                   Line2D([], [], marker="*", ls="none", color="0.35", mec="black", ms=10),
                   Line2D([], [], color="0.35", ls="--"),
                   Line2D([], [], marker="_", ls="none", color="0.35", ms=12, mew=1.5)],
                  [r"mean error at $d$ (colours as in (c))", r"SE ($d\to\infty$)",
                   r"fit $E_\infty + c\,d^{-k}$", r"$E_\infty \pm$ 1 s.e."],
                  loc="upper right", frameon=False, fontsize=s["font_size"] - 3)
    ax_ext.set_xlabel(r"$1/d$ (left of 0: the $d\to\infty$ values of each point)")
    ax_ext.set_ylabel(r"mean error $\overline{E}_d$")
    ax_ext.set_title(r"(d) $E_\infty + c\,d^{-k}$ at $1/d=0$ (bar) vs SE ($\star$)")
