"""The layers several figures share: SE lines, AMP and spectral markers, points off the axis, the
paper's published curves, legends with their marker kinds, axes from the config, the softmax
panel, and the power-law fits with their support test.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import xarray as xr

from aimlib.figures.legend import beside
from aimlib.figures.style import rho_color
from aimlib.theory.state_evolution import usable


def off_axis(ax, aggs: Sequence[xr.Dataset], x: str, style: dict, color_of=None):
    """Means outside the y limits as triangles on the axis: below it (e.g. perfect recovery on a
    log axis) pointing down at the bottom, above it pointing up at the top, so that no run
    disappears from the figure.  Only points within the x limits: a point right of the axis
    is off the figure like any other (a grid cut at the x-range, ``alpha_bar_max``, draws the
    same figure as the whole grid)."""
    lo, hi = ax.get_ylim()
    x_lo, x_hi = sorted(ax.get_xlim())
    log = ax.get_yscale() == "log"
    y_lo = lo * 1.25 if log else lo + 0.02 * (hi - lo)
    y_hi = hi / 1.25 if log else hi - 0.02 * (hi - lo)
    for agg in aggs:
        color = color_of(agg) if color_of else rho_color(float(agg.attrs["rho"]), style)
        xs = agg[x].values
        m = agg["mean"].values
        shown = np.isfinite(m) & (xs >= x_lo) & (xs <= x_hi)
        for sel, y, shape in ((shown & (m < lo), y_lo, "v"), (shown & (m > hi), y_hi, "^")):
            if sel.any():
                ax.plot(xs[sel], np.full(sel.sum(), y), shape, color=color,
                        ms=style["marker_size"] + 1, ls="none", clip_on=False)
                _mark(ax, "below" if shape == "v" else "above")


#: Legend entries of the marker kinds a figure may draw besides its data series: drawn in
#: grey, added by :func:`add_legend` for the kinds an axis shows.
MARKER_KINDS = {
    "below": (dict(marker="v", ls="none", color="0.35"), "mean below the axis"),
    "above": (dict(marker="^", ls="none", color="0.35"), "mean above the axis"),
    "none_converged": (dict(marker="D", ls="none", color="0.35", mfc="white", ms=4),
                       "no seed converged (final iterates)"),
    "counts": (dict(marker="$k/n$", ls="none", color="0.35", ms=14),
               "k of n seeds converged"),
    "one_seed": (dict(marker="o", ls="none", color="0.35", mfc="white"),
                 "one seed (no error bar)"),
    "one_seed_filled": (dict(marker="o", ls="none", color="0.35"), "one seed (no error bar)"),
}


#: A legend with more entries than this goes beside the axes (the figure widens to keep the
#: axes' size), so that it covers no data.
LEGEND_INSIDE_MAX = 7


def _mark(ax, kind: str) -> None:
    """Note that ``ax`` shows a marker kind of :data:`MARKER_KINDS` (for its legend)."""
    if not hasattr(ax, "aimlib_kinds"):
        ax.aimlib_kinds = []
    if kind not in ax.aimlib_kinds:
        ax.aimlib_kinds.append(kind)


def add_legend(ax, **kw):
    """``ax.legend`` with an entry for every marker kind the axis shows (:func:`_mark`)."""
    from matplotlib.lines import Line2D  # matplotlib only when drawing (importing it costs ~0.3 s)

    handles, labels = ax.get_legend_handles_labels()
    for kind in getattr(ax, "aimlib_kinds", []):
        props, text = MARKER_KINDS[kind]
        handles.append(Line2D([], [], **props))
        labels.append(text)
    if not handles:
        return None
    if len(handles) > LEGEND_INSIDE_MAX and len(ax.figure.axes) == 1:
        kw.update(ncol=1)
        return beside(ax.legend(handles, labels, **kw))
    return ax.legend(handles, labels, **kw)


def apply_axes(ax, axes: Mapping | None):
    axes = dict(axes or {})
    if axes.get("xscale"):
        ax.set_xscale(axes["xscale"])
    if axes.get("yscale"):
        ax.set_yscale(axes["yscale"])
    if axes.get("xlim"):
        ax.set_xlim(*axes["xlim"])
    if axes.get("ylim"):
        ax.set_ylim(*axes["ylim"])
    ax.grid(True, which="major", alpha=0.25)


def fmt_rho(rho: float) -> str:
    return f"{rho:g}"


def se_plot(ax, xs, ds: xr.Dataset, y=None, **kw):
    """An SE curve as a line through its usable points
    (:func:`aimlib.theory.state_evolution.usable`: converged, finite) and a hollow circle at each
    point that did not converge, so that no such point passes for a result.  ``y`` defaults to
    ``ds["error"]``; returns the line."""
    y = np.asarray(ds["error"].values if y is None else y, dtype=float)
    xs = np.asarray(xs, dtype=float)
    ok = usable(ds)
    (line,) = ax.plot(xs, np.where(ok, y, np.nan), **kw)
    bad = ~ok & np.isfinite(y)
    if bad.any():
        ax.plot(xs[bad], y[bad], "o", mfc="white", mec=line.get_color(), ms=4.0, ls="none",
                zorder=6, label="SE not converged" if kw.get("label") else None)
    return line


def se_lines(ax, curves: Sequence[xr.Dataset], x: str, style: dict, label_fmt=None,
              color_of=None):
    """Draw SE curves; where the informed start disagrees, draw its branch dashed."""
    for ds in sorted(curves, key=lambda c: c.attrs["rho"]):
        rho = float(ds.attrs["rho"])
        color = color_of(ds) if color_of else rho_color(rho, style)
        xs = ds[x].values if x in ds.coords or x in ds else ds["alpha"].values
        label = label_fmt(ds) if label_fmt else rf"$\rho={fmt_rho(rho)}$"
        se_plot(ax, xs, ds, color=color, lw=style["line_width"], label=label)
        dis = ds["disagree"].values.astype(bool)
        if dis.any():
            ax.plot(np.where(dis, xs, np.nan), np.where(dis, ds["error_informed"].values, np.nan),
                    color=color, lw=0.8 * style["line_width"], ls="--")


def amp_markers(ax, aggs: Sequence[xr.Dataset], x: str, style: dict, color_of=None,
                 marker="o", label=None, filled=False):
    """Mean +- std over converged seeds; ``label`` may be a string or a function of the dataset.

    Every figure treats unconverged runs the same way: ``k/n`` is written next to a point where
    only ``k`` of its ``n`` seeds converged (the mean is over those ``k``); a point from one
    seed has no error bar (a spread of one value is not zero); a point where no seed converged
    is a small open diamond at the mean of its final iterates.  Each kind gets a legend entry
    (:func:`add_legend`)."""
    for agg in aggs:
        rho = float(agg.attrs["rho"])
        color = color_of(agg) if color_of else rho_color(rho, style)
        xs = agg[x].values
        lab = label(agg) if callable(label) else label
        conv = agg["n_converged"].values
        runs = agg["n_runs"].values if "n_runs" in agg else conv  # older aggregates
        yerr = np.where(conv >= 2, agg["std"].values, np.nan)
        ax.errorbar(xs, agg["mean"].values, yerr=yerr, fmt=marker, color=color,
                    ms=style["marker_size"], mfc=color if filled else "white",
                    mew=1.0, elinewidth=0.8, capsize=1.5, ls="none", label=lab)
        if not callable(label):
            label = None
        if ((conv == 1) & (runs >= 1)).any():
            _mark(ax, "one_seed_filled" if filled else "one_seed")
        mean_all = agg["mean_all"].values if "mean_all" in agg else agg["mean"].values
        for xv, m, ma, k, n in zip(xs, agg["mean"].values, mean_all, conv, runs, strict=True):
            y = m if k > 0 else ma
            if k < n and np.isfinite(y):
                ax.annotate(f"{k}/{n}", xy=(xv, y), xytext=(3, 3), textcoords="offset points",
                            fontsize=style["font_size"] - 2, color=color)
                _mark(ax, "counts")
        none = (conv == 0) & np.isfinite(mean_all)
        if none.any():
            ax.plot(xs[none], mean_all[none], "D", color=color, ms=0.8 * style["marker_size"],
                    mfc="white", mew=0.7, ls="none")
            _mark(ax, "none_converged")


def theory_of(theory: Sequence[xr.Dataset], line: str, like) -> xr.Dataset | None:
    """The theory-line dataset (:mod:`aimlib.theory.lines`) that has ``line`` for the curve
    ``like`` (a dataset, or its attributes): same channel, T, rho and variant; None if the
    figure's inputs hold none."""
    attrs = getattr(like, "attrs", like)
    key = (str(attrs["channel"]), int(attrs["T"]), float(attrs["rho"]),
           str(attrs.get("variant", "exact")))
    for ds in theory:
        if line in ds and (str(ds.attrs["channel"]), int(ds.attrs["T"]), float(ds.attrs["rho"]),
                           str(ds.attrs.get("variant", "exact"))) == key:
            return ds
    return None


def spectral_markers(ax, aggs: Sequence[xr.Dataset], theory: Sequence[xr.Dataset], x: str,
                     style: dict, color_of=None):
    """The spectral baseline (docs/theory.md §4.1): stars at the mean +- std over its seeds, and
    its one-step SE prediction (the ``one_step`` theory line of the SE curve of the same
    channel, T, width and variant) as a thin dotted line."""
    labelled = False
    for agg in sorted(aggs, key=lambda a: float(a.attrs["rho"])):
        rho = float(agg.attrs["rho"])
        color = color_of(agg) if color_of else rho_color(rho, style)
        ax.errorbar(agg[x].values, agg["mean"].values, yerr=agg["std"].values, fmt="*",
                    color=color, ms=style["marker_size"] + 3, mfc=color, mec="black", mew=0.4,
                    elinewidth=0.8, capsize=1.5, ls="none",
                    label=None if labelled else rf"spectral ($d={agg.attrs['d']}$)")
        th = theory_of(theory, "one_step", agg)
        if th is not None:
            ax.plot(th[x].values, th["one_step"].values, color=color, lw=0.7, ls=":",
                    label=None if labelled else "spectral, one-step SE")
        labelled = True


def paper_curves(ax, curves: Sequence[xr.Dataset], x: str, style: dict):
    """Split off the density-variant SE curves and draw them thin and dashed in their rho's
    colour (the curves as the paper computed them); return the exact ones."""
    paper = [c for c in curves if c.attrs.get("variant", "exact") == "density"]
    for ds in paper:
        xs = ds[x].values if x in ds.coords or x in ds else ds["alpha"].values
        se_plot(ax, xs, ds, color=rho_color(float(ds.attrs["rho"]), style),
                 lw=0.6 * style["line_width"], ls=(0, (3, 2)), alpha=0.9)
    if paper:
        ax.plot([], [], color="0.4", lw=0.6 * style["line_width"], ls=(0, (3, 2)),
                label=r"as published (density $g_{out}$)")
    return [c for c in curves if c.attrs.get("variant", "exact") != "density"]


def softmax_panel(ax, curves, amp, gd, agd, s, key, color_of, tag, se_label):
    """SE line (beta- and T-free), AMP markers, GD (+) and AGD (x), one colour per ``key``."""
    for ds in curves:
        se_plot(ax, ds["alpha_bar"].values, ds, color="black", lw=s["line_width"],
                 label=se_label)
    shapes = "osD^v<>"
    for i, agg in enumerate(sorted(amp, key=lambda a: a.attrs[key])):
        amp_markers(ax, [agg], "alpha_bar", s, color_of=color_of,
                     marker=shapes[i % len(shapes)] if key == "beta" else "o",
                     label=lambda a: f"AMP {tag(a)}")
    for sets, marker, name in ((gd, "+", "GD"), (agd, "x", "AGD")):
        for g in sorted(sets, key=lambda a: a.attrs[key]):
            ax.plot(g["alpha_bar"].values, g["mean"].values, marker, color=color_of(g),
                    ms=s["marker_size"] + 2, ls="none", label=f"{name} {tag(g)}")


#: A fitted exponent is drawn and printed only from at least this many points (one more than
#: the fit's two parameters: a line through two points says nothing about a power law) ...
FIT_MIN_POINTS = 3


#: ... and only where its standard error is at most this fraction of its size (otherwise the
#: data do not determine it, and the figure says nothing rather than a number).
FIT_MAX_REL_ERR = 0.5


def supported_fit(n_points: int, value: float, err: float) -> bool:
    """Whether a fitted exponent ``value +- err`` from ``n_points`` points means something
    (:data:`FIT_MIN_POINTS`, :data:`FIT_MAX_REL_ERR`)."""
    return (n_points >= FIT_MIN_POINTS and math.isfinite(value) and math.isfinite(err)
            and err <= FIT_MAX_REL_ERR * abs(value))


def estimate_text(value: float, err: float) -> str:
    """``value \\pm err`` (TeX) rounded to the error's first significant digit (two where it
    starts with 1): the digits the data determine and no more."""
    if not (math.isfinite(err) and err > 0):
        return f"{value:.3g}"
    lead = err / 10 ** math.floor(math.log10(err))
    digits = max(0, -math.floor(math.log10(err)) + (1 if lead < 2 else 0))
    return rf"{value:.{digits}f}\pm{err:.{digits}f}"


def slope_fit(alpha: np.ndarray, mean: np.ndarray, sem: np.ndarray):
    """Weighted least-squares slope of ``log mean`` against ``log alpha`` and its standard error
    (weights from the standard error of each mean); ``None`` where the data do not support a
    fit (:func:`supported_fit`: fewer than three points, or an error above half the slope)."""
    ok = np.isfinite(mean) & (mean > 0) & np.isfinite(sem)
    if ok.sum() < FIT_MIN_POINTS:
        return None
    x, y = np.log(alpha[ok]), np.log(mean[ok])
    sig = np.maximum(sem[ok] / mean[ok], 1e-3)  # relative error of each mean, floored
    coef, cov = np.polyfit(x, y, 1, w=1.0 / sig, cov="unscaled")
    slope, err = float(coef[0]), float(math.sqrt(cov[0, 0]))
    return (slope, err) if supported_fit(int(ok.sum()), slope, err) else None


def scaled_panel(bx, axes: Mapping | None, xlabel: str, ylabel: str, title: str) -> None:
    """Log-log axes of a panel of ``alpha^2 E`` (flat for an ``alpha^-2`` law), sharing the
    figure's x limits."""
    bx.set_xscale("log")
    bx.set_yscale("log")
    if axes and axes.get("xlim"):
        bx.set_xlim(*axes["xlim"])
    bx.grid(True, which="major", alpha=0.25)
    bx.set_xlabel(xlabel)
    bx.set_ylabel(ylabel)
    bx.set_title(title)
