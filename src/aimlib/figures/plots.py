"""The paper's figures and those beyond it, drawn from cached datasets (docs/theory.md §6).

Every figure has one signature, ``figN(inputs, *, axes=None, style=None)``: ``inputs`` maps the
kinds of cached input its registry entry (:data:`aimlib.figures.registry.FIGURES`) names (``"se"``,
``"amp"``, ``"gd"``, ``"agd"``, ``"finite_size"``, ``"small_width"``) to lists of loaded
:class:`xarray.Dataset` objects; ``axes`` holds limits and scales from the config (per channel
for a panel per channel); ``style`` overrides :data:`DEFAULT_STYLE`.  It returns a
:class:`matplotlib.figure.Figure`; :func:`draw` looks a figure up by name and :func:`save` writes
it as PDF and PNG atomically.
Colours are a fixed function of ``rho`` (:func:`rho_color`), so a given width has the same colour
in every figure.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from aimlib.figures.legend import beside, tidy
from aimlib.figures.registry import FIGURES
from aimlib.channels.softmax import perfect_recovery_alpha_bar

__all__ = ["DEFAULT_STYLE", "DRAW", "draw", "rho_color", "T_color", "beta_color", "fig1a",
           "fig1b", "fig2a", "fig2b", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "fig9",
           "fig_steps", "save"]

#: ``{"se": [Dataset, ...], "amp": [...], ...}``: what a figure is drawn from.
Inputs = Mapping[str, Sequence[xr.Dataset]]

DEFAULT_STYLE: dict = {
    "width": 4.8,
    "height": 3.6,
    "dpi": 150,
    "font_size": 10,
    "line_width": 1.6,
    "marker_size": 4.0,
    "cmap": "viridis",
    "rho_range": [0.05, 5.0],
}


def _style(style: Mapping | None) -> dict:
    s = dict(DEFAULT_STYLE)
    if style:
        s.update(style)
    return s


def rho_color(rho: float, style: Mapping | None = None):
    """Colour of width ``rho``.

    Inside a figure, the widths it draws are spread evenly over the colormap in their sorted
    order (:func:`rho_palette`, set by the figure's wrapper), so that neighbouring values
    (0.2 and 0.3) get clearly different colours.  Outside one, the position of ``log rho`` in
    ``style['rho_range']``.  ``rho = inf`` (the infinite-width line) is black.
    """
    s = _style(style)
    if math.isinf(rho):
        return "black"
    palette = s.get("rho_palette") or {}
    key = round(float(rho), 9)
    if key in palette:
        return palette[key]
    lo, hi = (math.log(v) for v in s["rho_range"])
    t = (math.log(rho) - lo) / (hi - lo)
    return with_contrast(plt.get_cmap(s["cmap"])(0.05 + 0.85 * min(max(t, 0.0), 1.0)))


#: Least contrast ratio of a data colour against the white background (WCAG 2's ratio of
#: relative luminances; 3 is its minimum for graphics).
MIN_CONTRAST = 3.0


def _luminance(rgb) -> float:
    """WCAG 2 relative luminance of an sRGB colour."""
    c = np.asarray(rgb[:3], dtype=float)
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(lin @ [0.2126, 0.7152, 0.0722])


def contrast_on_white(rgb) -> float:
    """WCAG 2 contrast ratio of a colour against white."""
    return 1.05 / (_luminance(rgb) + 0.05)


def with_contrast(rgba, ratio: float = MIN_CONTRAST):
    """The colour, darkened (same hue, linear RGB scaled) just enough to reach ``ratio``
    against white: the light end of a colormap (viridis' yellow) stays readable."""
    from matplotlib.colors import to_rgba

    rgba = to_rgba(rgba)
    if contrast_on_white(rgba) >= ratio:
        return rgba
    c = np.asarray(rgba[:3], dtype=float)
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    lin *= (1.05 / ratio - 0.05) / _luminance(rgba) * (1 - 1e-9)
    srgb = np.where(lin <= 0.0031308, 12.92 * lin, 1.055 * lin ** (1 / 2.4) - 0.055)
    return (*np.clip(srgb, 0.0, 1.0), rgba[3])


def rho_palette(rhos, cmap: str = "viridis") -> dict:
    """One colour per distinct finite width, evenly spaced over ``cmap`` in sorted order (from
    0.0 to 0.9 of the map), each darkened where needed to a contrast of :data:`MIN_CONTRAST`
    on white (:func:`with_contrast`)."""
    vals = sorted({round(float(r), 9) for r in rhos if np.isfinite(float(r))})
    cm = plt.get_cmap(cmap)
    return {v: with_contrast(cm(0.9 * i / max(len(vals) - 1, 1))) for i, v in enumerate(vals)}


def _figure_rhos(inputs) -> list[float]:
    """Every width the inputs of a figure carry (their ``rho`` attribute)."""
    out = []
    for sets in (inputs or {}).values():
        for ds in sets:
            if "rho" in getattr(ds, "attrs", {}):
                out.append(float(ds.attrs["rho"]))
    return out


#: Distinct colours for T = 1, 2, ..., 6 (matplotlib's tab10: brown, blue, orange, green, red,
#: purple).
T_COLORS = ("tab:brown", "tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")


def T_color(T: int):
    """Colour of sequence length ``T`` (for the figures that vary T at fixed rho): adjacent T
    get clearly different colours."""
    return with_contrast(T_COLORS[(int(T) - 1) % len(T_COLORS)])


def beta_color(beta: float):
    """Colour of an inverse temperature ``beta`` (log scale between 0.25 and 8)."""
    t = (math.log(beta) - math.log(0.25)) / (math.log(8.0) - math.log(0.25))
    return with_contrast(plt.get_cmap("cividis")(0.1 + 0.8 * min(max(t, 0.0), 1.0)))


def _inputs(inputs: Inputs, *kinds: str) -> list[list[xr.Dataset]]:
    """The lists of datasets of the given kinds (empty for a kind the inputs do not have)."""
    return [list(inputs.get(k, ())) for k in kinds]


def _rc(style: dict) -> dict:
    """The matplotlib settings of a figure, applied with ``rc_context`` (no global state)."""
    return {"font.size": style["font_size"], "axes.labelsize": style["font_size"] + 1,
            "legend.fontsize": style["font_size"] - 1, "text.usetex": False,
            "mathtext.fontset": "cm"}


#: The drawing function of each figure of the registry (:data:`aimlib.figures.FIGURES`),
#: filled by :func:`_styled` as the functions below are defined.
DRAW: dict = {}


def _styled(draw_fn):
    """Register a figure's drawing function under its name (:data:`DRAW`) and draw it inside
    ``matplotlib.rc_context`` with its style's settings, so that drawing one figure never
    changes the next (or a user's own plots)."""
    import functools

    if draw_fn.__name__ not in FIGURES:
        raise ValueError(f"{draw_fn.__name__} is not in the figure registry")

    @functools.wraps(draw_fn)
    def wrapper(inputs, *, axes=None, style=None):
        rc = _rc(_style(style))
        # the figure's own widths, spread over the colormap (rho_color)
        style = {**(style or {}),
                 "rho_palette": rho_palette(_figure_rhos(inputs), _style(style)["cmap"])}
        with plt.rc_context(rc):
            fig = draw_fn(inputs, axes=axes, style=style)
            tidy(fig)  # no label over a label, no legend over data (aimlib.figures.legend)
        fig.aimlib_rc = rc  # save() renders under the same settings (mathtext is drawn late)
        return fig

    DRAW[draw_fn.__name__] = wrapper
    return wrapper


def _new(style: dict):
    fig, ax = plt.subplots(figsize=(style["width"], style["height"]), layout="constrained")
    return fig, ax


def _off_axis(ax, aggs: Sequence[xr.Dataset], x: str, style: dict, color_of=None):
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
#: grey, added by :func:`_legend` for the kinds an axis shows.
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


def _legend(ax, **kw):
    """``ax.legend`` with an entry for every marker kind the axis shows (:func:`_mark`)."""
    from matplotlib.lines import Line2D

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


def _axes(ax, axes: Mapping | None):
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


def _fmt_rho(rho: float) -> str:
    return f"{rho:g}"


def _se_plot(ax, xs, ds: xr.Dataset, y=None, **kw):
    """An SE curve as a line through its usable points (:func:`aimlib.theory.state_evolution.usable`:
    converged, finite) and a hollow circle at each point that did not converge, so that no such
    point passes for a result.  ``y`` defaults to ``ds["error"]``; returns the line."""
    from aimlib.theory.state_evolution import usable

    y = np.asarray(ds["error"].values if y is None else y, dtype=float)
    xs = np.asarray(xs, dtype=float)
    ok = usable(ds)
    (line,) = ax.plot(xs, np.where(ok, y, np.nan), **kw)
    bad = ~ok & np.isfinite(y)
    if bad.any():
        ax.plot(xs[bad], y[bad], "o", mfc="white", mec=line.get_color(), ms=4.0, ls="none",
                zorder=6, label="SE not converged" if kw.get("label") else None)
    return line


def _se_lines(ax, curves: Sequence[xr.Dataset], x: str, style: dict, label_fmt=None,
              color_of=None):
    """Draw SE curves; where the informed start disagrees, draw its branch dashed."""
    for ds in sorted(curves, key=lambda c: c.attrs["rho"]):
        rho = float(ds.attrs["rho"])
        color = color_of(ds) if color_of else rho_color(rho, style)
        xs = ds[x].values if x in ds.coords or x in ds else ds["alpha"].values
        label = label_fmt(ds) if label_fmt else rf"$\rho={_fmt_rho(rho)}$"
        _se_plot(ax, xs, ds, color=color, lw=style["line_width"], label=label)
        dis = ds["disagree"].values.astype(bool)
        if dis.any():
            ax.plot(np.where(dis, xs, np.nan), np.where(dis, ds["error_informed"].values, np.nan),
                    color=color, lw=0.8 * style["line_width"], ls="--")


def _amp_markers(ax, aggs: Sequence[xr.Dataset], x: str, style: dict, color_of=None,
                 marker="o", label=None, filled=False):
    """Mean +- std over converged seeds; ``label`` may be a string or a function of the dataset.

    Every figure treats unconverged runs the same way: ``k/n`` is written next to a point where
    only ``k`` of its ``n`` seeds converged (the mean is over those ``k``); a point from one
    seed has no error bar (a spread of one value is not zero); a point where no seed converged
    is a small open diamond at the mean of its final iterates.  Each kind gets a legend entry
    (:func:`_legend`)."""
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


def _spectral(ax, aggs: Sequence[xr.Dataset], curves: Sequence[xr.Dataset], x: str,
              style: dict, color_of=None):
    """The spectral baseline (docs/theory.md §4.1): stars at the mean +- std over its seeds, and
    its one-step SE prediction as a thin dotted line on the alpha grid of the SE curve of the
    same width (or of the aggregate)."""
    from aimlib.theory.state_evolution import one_step

    labelled = False
    for agg in sorted(aggs, key=lambda a: float(a.attrs["rho"])):
        rho, T = float(agg.attrs["rho"]), int(agg.attrs["T"])
        ch = str(agg.attrs["channel"])
        color = color_of(agg) if color_of else rho_color(rho, style)
        ax.errorbar(agg[x].values, agg["mean"].values, yerr=agg["std"].values, fmt="*",
                    color=color, ms=style["marker_size"] + 3, mfc=color, mec="black", mew=0.4,
                    elinewidth=0.8, capsize=1.5, ls="none",
                    label=None if labelled else rf"spectral ($d={agg.attrs['d']}$)")
        grid = next((c for c in curves if float(c.attrs["rho"]) == rho
                     and c.attrs.get("channel") == ch), agg)
        alphas = grid["alpha"].values
        params = {"variant": agg.attrs["variant"]} if agg.attrs.get("variant", "exact") \
            != "exact" else {}
        pred = np.array([one_step(ch, float(a), rho, T, **params) for a in alphas])
        xs = alphas * (agg["alpha_bar"].values[0] / agg["alpha"].values[0]) \
            if x == "alpha_bar" else alphas
        ax.plot(xs, pred, color=color, lw=0.7, ls=":",
                label=None if labelled else "spectral, one-step SE")
        labelled = True


def _paper_curves(ax, curves: Sequence[xr.Dataset], x: str, style: dict):
    """Split off the density-variant SE curves and draw them thin and dashed in their rho's
    colour (the curves as the paper computed them); return the exact ones."""
    paper = [c for c in curves if c.attrs.get("variant", "exact") == "density"]
    for ds in paper:
        xs = ds[x].values if x in ds.coords or x in ds else ds["alpha"].values
        _se_plot(ax, xs, ds, color=rho_color(float(ds.attrs["rho"]), style),
                 lw=0.6 * style["line_width"], ls=(0, (3, 2)), alpha=0.9)
    if paper:
        ax.plot([], [], color="0.4", lw=0.6 * style["line_width"], ls=(0, (3, 2)),
                label=r"as published (density $g_{out}$)")
    return [c for c in curves if c.attrs.get("variant", "exact") != "density"]


@_styled
def fig1a(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Hardmax, T = 2: error against alpha for each rho; SE lines and AMP markers (mean +- std),
    and, thin and dashed, the curves as the paper computed them (density g_out)."""
    curves, amp, spectral = _inputs(inputs, "se", "amp", "spectral")
    s = _style(style)
    fig, ax = _new(s)
    curves = _paper_curves(ax, curves, "alpha", s)
    _se_lines(ax, curves, "alpha", s)
    if amp:
        _amp_markers(ax, amp, "alpha", s, label="AMP")
    _spectral(ax, spectral, curves, "alpha", s)
    _axes(ax, axes)
    _off_axis(ax, [*amp, *spectral], "alpha", s)
    ax.set_xlabel(r"$\alpha = n/d^2$")
    ax.set_ylabel(r"estimation error $\frac{1}{d}\|\hat S - S^*\|_F^2$")
    ax.set_title(r"hardmax, $T=2$: Bayes-optimal error (SE)" + (" and AMP" if amp else ""))
    _legend(ax, loc="lower left", frameon=False)
    return fig


@_styled
def fig1b(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Hardmax, T = 2: SE error against alpha_bar = alpha / rho, with the rho -> 0 limit, and,
    thin and dashed, the curves as the paper computed them (density g_out)."""
    curves, (limit,) = _inputs(inputs, "se", "small_width")
    s = _style(style)
    fig, ax = _new(s)
    curves = _paper_curves(ax, curves, "alpha_bar", s)
    _se_lines(ax, curves, "alpha_bar", s)
    _se_plot(ax, limit["alpha_bar"].values, limit, color="black", ls="--",
             lw=s["line_width"], label=r"$\rho \to 0$")
    thr = float(limit.attrs["threshold"])
    ax.axvline(thr, color="gray", ls=":", lw=1.0)
    ax.annotate(rf"$\bar\alpha_c \approx {thr:.4f}$", xy=(thr, 0.05), xytext=(4, 0),
                textcoords="offset points", fontsize=s["font_size"] - 1, color="gray")
    _axes(ax, axes)
    ax.set_xlabel(r"$\bar\alpha = \alpha/\rho$")
    ax.set_ylabel("estimation error (SE)")
    ax.set_title(r"hardmax, $T=2$: SE against $\bar\alpha$, and $\rho \to 0$")
    _legend(ax, loc="upper right", frameon=False, ncol=2)
    return fig


@_styled
def fig2a(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Softmax, T = 2: SE error against alpha for each rho, plus the rho = infinity line."""
    (curves,) = _inputs(inputs, "se")
    s = _style(style)
    fig, ax = _new(s)
    _se_lines(ax, curves, "alpha", s)
    T = int(curves[0].attrs["T"])
    k = float(curves[0]["alpha_bar"].values[0] / curves[0]["alpha"].values[0])  # T^2 + T - 2
    xmax = (axes or {}).get("xlim", [0, 1.0 / k * 1.12])[1]
    xs = np.linspace(0.0, xmax, 400)
    ax.plot(xs, np.clip(1.0 - k * xs, 0.0, None), color="black", ls="--", lw=s["line_width"],
            label=r"$\rho=\infty$")
    _axes(ax, axes)
    ax.set_xlabel(r"$\alpha = n/d^2$")
    ax.set_ylabel("estimation error (SE)")
    ax.set_title(rf"softmax, $T={T}$: Bayes-optimal error")
    _legend(ax, loc="upper right", frameon=False)
    return fig


@_styled
def fig5(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Softmax SE for several T against alpha_bar = alpha (T^2 + T - 2): one curve for all T."""
    (curves,) = _inputs(inputs, "se")
    s = _style(style)
    fig, ax = _new(s)
    styles = ["-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1))]
    for i, ds in enumerate(sorted(curves, key=lambda c: int(c.attrs["T"]))):
        T = int(ds.attrs["T"])
        _se_plot(ax, ds["alpha_bar"].values, ds, color=T_color(T),
                 ls=styles[i % len(styles)], lw=s["line_width"], label=rf"$T={T}$")
    rho = float(curves[0].attrs["rho"])
    thr = perfect_recovery_alpha_bar(rho)
    ax.axvline(thr, color="gray", ls=":", lw=1.0)
    ax.annotate(rf"$\bar\alpha_c = {thr:g}$", xy=(thr, 0.05), xytext=(4, 0),
                textcoords="offset points", fontsize=s["font_size"] - 1, color="gray")
    _axes(ax, axes)
    ax.set_xlabel(r"$\bar\alpha = \alpha\,(T^2+T-2)$")
    ax.set_ylabel("estimation error (SE)")
    ax.set_title(rf"softmax, $\rho={_fmt_rho(rho)}$: all $T$ collapse in $\bar\alpha$")
    _legend(ax, loc="upper right", frameon=False)
    return fig


def _softmax_panel(ax, curves, amp, gd, agd, s, key, color_of, tag, se_label):
    """SE line (beta- and T-free), AMP markers, GD (+) and AGD (x), one colour per ``key``."""
    for ds in curves:
        _se_plot(ax, ds["alpha_bar"].values, ds, color="black", lw=s["line_width"],
                 label=se_label)
    shapes = "osD^v<>"
    for i, agg in enumerate(sorted(amp, key=lambda a: a.attrs[key])):
        _amp_markers(ax, [agg], "alpha_bar", s, color_of=color_of,
                     marker=shapes[i % len(shapes)] if key == "beta" else "o",
                     label=lambda a: f"AMP {tag(a)}")
    for sets, marker, name in ((gd, "+", "GD"), (agd, "x", "AGD")):
        for g in sorted(sets, key=lambda a: a.attrs[key]):
            ax.plot(g["alpha_bar"].values, g["mean"].values, marker, color=color_of(g),
                    ms=s["marker_size"] + 2, ls="none", label=f"{name} {tag(g)}")


@_styled
def fig2b(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Softmax: error against alpha_bar; SE line, AMP dots per T, GD (+) and AGD (x) per T."""
    curves, amp, gd, agd, spectral = _inputs(inputs, "se", "amp", "gd", "agd", "spectral")
    s = _style(style)
    fig, ax = _new(s)

    def tcol(a):
        return T_color(int(a.attrs["T"]))

    _softmax_panel(ax, curves, amp, gd, agd, s, "T", tcol, lambda a: rf"$T={a.attrs['T']}$",
                   "SE (all $T$)")
    _spectral(ax, spectral, curves, "alpha_bar", s, color_of=tcol)
    _axes(ax, axes)
    _off_axis(ax, [*amp, *gd, *agd, *spectral], "alpha_bar", s, color_of=tcol)
    rho = float(curves[0].attrs["rho"]) if curves else float("nan")
    ax.set_xlabel(r"$\bar\alpha = \alpha\,(T^2+T-2)$")
    ax.set_ylabel("estimation error")
    ax.set_title(rf"softmax, $\rho={_fmt_rho(rho)}$: SE, AMP" + (", GD, AGD" if gd else ""))
    _legend(ax, loc="lower left", frameon=False, ncol=2, fontsize=s["font_size"] - 2)
    return fig


@_styled
def fig4(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Softmax at several beta: the single (beta-free) SE curve, AMP, GD and AGD at each beta."""
    curves, amp, gd, agd = _inputs(inputs, "se", "amp", "gd", "agd")
    s = _style(style)
    fig, ax = _new(s)

    def bcol(a):
        return beta_color(float(a.attrs["beta"]))

    _softmax_panel(ax, curves, amp, gd, agd, s, "beta", bcol,
                   lambda a: rf"$\beta={a.attrs['beta']:g}$", r"SE (every $\beta$)")
    _axes(ax, axes)
    _off_axis(ax, [*amp, *gd, *agd], "alpha_bar", s, color_of=bcol)
    rho = float(curves[0].attrs["rho"]) if curves else float("nan")
    T = int(curves[0].attrs["T"]) if curves else 2
    ax.set_xlabel(r"$\bar\alpha = \alpha\,(T^2+T-2)$")
    ax.set_ylabel("estimation error")
    ax.set_title(rf"softmax, $T={T}$, $\rho={_fmt_rho(rho)}$: SE is $\beta$-free")
    _legend(ax, loc="lower left", frameon=False, ncol=2 if gd else 1,
              fontsize=s["font_size"] - 2)
    return fig


@_styled
def fig6(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """The hardmax correction: SE with the exact g_out, SE as the paper computes it with the
    density g_out (assuming the Nishimori identities), the state evolution of AMP actually run
    with the density g_out (mismatched), and AMP with each g_out.

    AMP markers are means over converged seeds (filled circles: exact g_out; open squares:
    density g_out); unconverged runs are drawn as in every figure (:func:`_amp_markers`).
    """
    curves, amp = _inputs(inputs, "se", "amp")
    s = _style(style)
    fig, ax = _new(s)
    col = {"exact": "tab:blue", "density": "tab:red", "mismatched": "darkred"}
    ls = {"exact": "-", "density": "--", "mismatched": ":"}
    name = {"exact": r"exact $\partial_\kappa \Phi_2$", "density": r"published density $\phi_2$"}
    se_name = {"exact": f"SE, {name['exact']}", "density": f"SE, {name['density']} (paper)",
               "mismatched": r"SE of AMP with $\phi_2$ (mismatched)"}
    order = ("exact", "density", "mismatched")
    for ds in sorted(curves, key=lambda c: order.index(c.attrs["variant"])):
        v = ds.attrs["variant"]
        _se_plot(ax, ds["alpha"].values, ds, color=col[v], lw=s["line_width"],
                 ls=ls[v], label=se_name[v])
    for agg in sorted(amp, key=lambda c: c.attrs["variant"] != "exact"):
        v = agg.attrs["variant"]
        _amp_markers(ax, [agg], "alpha", s, color_of=lambda a, v=v: col[v],
                     marker="o" if v == "exact" else "s", filled=(v == "exact"),
                     label=rf"AMP ($d={agg.attrs['d']}$), {name[v]}")
    _axes(ax, axes)
    _off_axis(ax, amp, "alpha", s, color_of=lambda a: col[a.attrs["variant"]])
    rho = float(curves[0].attrs["rho"]) if curves else float("nan")
    ax.set_xlabel(r"$\alpha = n/d^2$")
    ax.set_ylabel("estimation error")
    ax.set_title(rf"hardmax, $T=2$, $\rho={_fmt_rho(rho)}$: exact vs published $g_{{out}}$")
    _legend(ax, loc="lower left", frameon=False, fontsize=s["font_size"] - 2)
    return fig


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


def _slope_fit(alpha: np.ndarray, mean: np.ndarray, sem: np.ndarray):
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


@_styled
def fig7(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """How the hardmax error vanishes (docs/theory.md §9): (a) SE with the exact g_out (solid)
    and with the published density (dashed) against alpha, the two asymptotic laws (thin dashed
    grey: ``alpha^-2`` and ``alpha^-1``), and AMP at large alpha with the slope fitted on its
    means; (b) ``alpha^2 E`` against alpha, where the exact curves flatten to their prefactor
    and the density curves keep growing."""
    curves, amp = _inputs(inputs, "se", "amp")
    from aimlib.theory.asymptotics import large_alpha

    s = _style(style)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(2 * s["width"], s["height"]),
                                 layout="constrained")
    ls = {"exact": "-", "density": "--"}
    for ds in sorted(curves, key=lambda c: (c.attrs["rho"], c.attrs["variant"] != "exact")):
        rho, v = float(ds.attrs["rho"]), ds.attrs["variant"]
        a, e = ds["alpha"].values, ds["error"].values
        color = rho_color(rho, s)
        lab = rf"SE $\rho={_fmt_rho(rho)}$" + ("" if v == "exact" else r", density (paper)")
        _se_plot(ax, a, ds, color=color, lw=s["line_width"], ls=ls[v], label=lab)
        _se_plot(bx, a, ds, a * a * e, color=color, lw=s["line_width"], ls=ls[v])
        law = large_alpha("hardmax", rho, variant=v)
        big = a >= 1.0
        ax.plot(a[big], law.error(a[big]), color="0.45", lw=0.8, ls=(0, (4, 3)), zorder=1)
        bx.plot(a[big], a[big] ** 2 * law.error(a[big]), color="0.45", lw=0.8, ls=(0, (4, 3)),
                zorder=1)
    ax.plot([], [], color="0.45", lw=0.8, ls=(0, (4, 3)),
            label=r"laws $c_2\alpha^{-2}$ (exact), $c_1\alpha^{-1}$ (density)")
    for agg in sorted(amp, key=lambda c: c.attrs["rho"]):
        rho = float(agg.attrs["rho"])
        n = np.maximum(agg["n_converged"].values, 1)
        fit = _slope_fit(agg["alpha"].values, agg["mean"].values, agg["std"].values / np.sqrt(n))
        fit_text = rf": slope ${estimate_text(*fit)}$" if fit else ""
        _amp_markers(ax, [agg], "alpha", s, filled=True,
                     label=rf"AMP $d={agg.attrs['d']}$, $\rho={_fmt_rho(rho)}$" + fit_text)
        a = agg["alpha"].values
        bx.errorbar(a, a * a * agg["mean"].values, yerr=a * a * agg["std"].values, fmt="o",
                    color=rho_color(rho, s), ms=s["marker_size"], capsize=1.5, elinewidth=0.8,
                    ls="none")
    _axes(ax, axes)
    _off_axis(ax, amp, "alpha", s)
    ax.set_xlabel(r"$\alpha = n/d^2$")
    ax.set_ylabel("estimation error")
    ax.set_title(r"(a) hardmax, $T=2$: error against $\alpha$")
    _legend(ax, loc="lower left", frameon=False, fontsize=s["font_size"] - 3)
    _scaled_panel(bx, axes, r"$\alpha$", r"$\alpha^2\,E$",
                  r"(b) $\alpha^2 E$: flat for $\alpha^{-2}$, rising for $\alpha^{-1}$")
    return fig


@_styled
def fig8(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Test error on fresh samples (docs/theory.md §10), one panel per channel: the Bayes-optimal
    test error from SE with the Bayes predictor (solid) and the plug-in predictor (dashed),
    and for AMP, GD and AGD estimates the test error measured on fresh samples (filled markers,
    mean +- std over converged seeds) next to the Gaussian prediction from each estimate's own
    overlaps ``(m, Q)`` (open markers)."""
    curves, amp, gd, agd = _inputs(inputs, "se", "amp", "gd", "agd")
    from aimlib.theory.generalisation import bayes

    s = _style(style)
    chans = [c for c in ("softmax", "hardmax") if any(d.attrs["channel"] == c for d in curves)]
    fig, axs = plt.subplots(1, len(chans), figsize=(s["width"] * len(chans), s["height"]),
                            layout="constrained", squeeze=False)
    marks = {"amp": ("o", "AMP", "tab:blue"), "gd": ("P", "GD", "tab:orange"),
             "agd": ("X", "AGD", "tab:green")}
    for ax, ch in zip(axs[0], chans, strict=True):
        for ds in (c for c in curves if c.attrs["channel"] == ch):
            rho, T = float(ds.attrs["rho"]), int(ds.attrs["T"])
            beta = float(ds.attrs.get("beta", 1.0))
            a, q = ds["alpha"].values, np.minimum(ds["q"].values, 1.0 + rho)
            for pred, ls, lab in (("bayes", "-", "SE, Bayes predictor"),
                                  ("plugin", "--", "SE, plug-in predictor")):
                te = [bayes(ch, float(qi), rho, T, beta, pred).value if np.isfinite(qi)
                      else np.nan for qi in q]
                _se_plot(ax, a, ds, te, color="black", ls=ls, lw=s["line_width"], label=lab)
        for kind, aggs in (("amp", amp), ("gd", gd), ("agd", agd)):
            for agg in (g for g in aggs if g.attrs["channel"] == ch):
                if "test_error_mean" not in agg:
                    continue
                mk, name, col = marks[kind]
                a = agg["alpha"].values
                ax.errorbar(a, agg["test_error_mean"].values, yerr=agg["test_error_std"].values,
                            fmt=mk, color=col, ms=s["marker_size"] + 1, capsize=1.5,
                            elinewidth=0.8, ls="none",
                            label=rf"{name} ($d={agg.attrs['d']}$), measured")
                ax.plot(a, agg["test_error_pred_mean"].values, mk, color=col, mfc="white",
                        ms=s["marker_size"] + 3, mew=1.0, ls="none",
                        label=rf"{name}: Gaussian prediction from its $(m, Q)$")
        _axes(ax, (axes or {}).get(ch, axes))
        ax.set_xlabel(r"$\alpha = n/d^2$")
        ax.set_ylabel(r"test error $\mathbb{E}\|y(X;S^*) - \hat y\|_F^2$")
        ax.set_title(rf"{ch}, $T=2$: test error on fresh samples")
        _legend(ax, loc="lower left", frameon=False, fontsize=s["font_size"] - 3)
    return fig


def _rank_colors(values, cmap: str = "viridis"):
    """Evenly spaced colours for sorted distinct values (so that any set of d is told apart)."""
    vals = sorted(set(values))
    cm = plt.get_cmap(cmap)
    return {v: with_contrast(cm(0.05 + 0.85 * i / max(len(vals) - 1, 1)))
            for i, v in enumerate(vals)}


@_styled
def fig3(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Finite size: (a, b) error against alpha per d with SE, softmax (AMP and AGD) and hardmax
    (AMP); (c) the gap |mean - SE| against 1/d at fixed alphas, log-log, with the fitted power law;
    (d) the mean error against 1/d with its extrapolation to d -> infinity and the SE value.

    Markers are means over converged runs; where no run of a point converged, the mean of the
    final iterates is drawn as a small open diamond so that the point is not silently dropped.
    ``axes`` may set each channel's panel (``axes.softmax``, ``axes.hardmax``).
    """
    curves, amp, agd, finite_size = _inputs(inputs, "se", "amp", "agd", "finite_size")
    s = _style(style)
    fig, axs = plt.subplots(2, 2, figsize=(2 * s["width"], 2 * s["height"]), layout="constrained")
    dc = _rank_colors([int(a.attrs["d"]) for a in (*amp, *agd)])
    for ax, channel, tag in ((axs[0, 0], "softmax", "(a)"), (axs[0, 1], "hardmax", "(b)")):
        _fig3_alpha_panel(ax, channel, tag, curves, amp, agd, s, lambda a: dc[int(a.attrs["d"])])
        _axes(ax, (axes or {}).get(channel))
    _fig3_gap_panels(axs[1, 0], axs[1, 1], finite_size, s)
    return fig


def _fig3_alpha_panel(ax, channel, tag, curves, amp, agd, s, dcol) -> None:
    """Panels (a, b): one channel's error against alpha for each d, with its SE curve."""
    rho = float(curves[0].attrs["rho"]) if curves else float("nan")
    for ds in curves:
        if ds.attrs["channel"] == channel:
            _se_plot(ax, ds["alpha"].values, ds, color="black",
                     lw=s["line_width"], label=r"SE ($d\to\infty$)", zorder=5)
    mine = sorted((a for a in amp if a.attrs["channel"] == channel),
                  key=lambda a: int(a.attrs["d"]))
    _amp_markers(ax, mine, "alpha", s, color_of=dcol, label=lambda a: rf"AMP $d={a.attrs['d']}$")
    for g in sorted((a for a in agd if a.attrs["channel"] == channel),
                    key=lambda a: int(a.attrs["d"])):
        ax.plot(g["alpha"].values, g["mean"].values, "x", color=dcol(g),
                ms=s["marker_size"] + 2, ls="none", label=rf"AGD $d={g.attrs['d']}$")
    ax.set_yscale("log")
    ax.set_ylim(1e-3, 1.3)
    ax.grid(True, which="major", alpha=0.25)
    _off_axis(ax, mine, "alpha", s, color_of=dcol)
    ax.set_xlabel(r"$\alpha = n/d^2$")
    ax.set_ylabel("estimation error")
    ax.set_title(rf"{tag} {channel}, $T=2$, $\rho={_fmt_rho(rho)}$")
    _legend(ax, loc="lower left", frameon=False, ncol=2, fontsize=s["font_size"] - 3)


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
            # a fit only where the d's support one (aimlib.figures.plots.supported_fit)
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
    _legend(ax_gap, loc="best", frameon=False, fontsize=s["font_size"] - 3)
    ax_ext.set_xlim(left=-EXT_STEP * (k + 1))
    ax_ext.set_ylim(0.0, 1.1)
    ax_ext.grid(True, which="major", alpha=0.25)
    ax_ext.axvline(0.0, color="0.6", lw=0.6)
    ax_ext.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(5))
    from matplotlib.lines import Line2D

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


@_styled
def fig9(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """The Gaussian output channel (docs/theory.md §11): one panel per noise level Delta, SE
    error against alpha for each T (lines; the noiseless threshold ``alpha T (T + 1) =
    2 rho - rho^2`` dotted), AMP (filled circles) and AGD (crosses), one colour per T.  With
    noise, whether GD still reaches the Bayes-optimal error shows as the gap between the
    crosses and the line."""
    curves, amp, agd = _inputs(inputs, "se", "amp", "agd")
    s = _style(style)
    deltas = sorted({float(c.attrs["delta"]) for c in (*curves, *amp, *agd)})
    fig, axs = plt.subplots(1, len(deltas), figsize=(s["width"] * len(deltas), s["height"]),
                            layout="constrained", squeeze=False, sharey=True)

    def tcol(a):
        return T_color(int(a.attrs["T"]))

    for ax, delta in zip(axs[0], deltas, strict=True):
        def mine(sets, delta=delta):
            return sorted((c for c in sets if float(c.attrs["delta"]) == delta),
                          key=lambda c: int(c.attrs["T"]))

        for ds in mine(curves):
            T, rho = int(ds.attrs["T"]), float(ds.attrs["rho"])
            _se_plot(ax, ds["alpha"].values, ds, color=tcol(ds), lw=s["line_width"],
                     label=rf"SE $T={T}$")
            thr = ds.attrs.get("perfect_recovery_alpha")
            if thr is not None:
                ax.axvline(float(thr), color=tcol(ds), ls=":", lw=0.9)
        _amp_markers(ax, mine(amp), "alpha", s, color_of=tcol, filled=True,
                     label=lambda a: rf"AMP $T={a.attrs['T']}$ ($d={a.attrs['d']}$)")
        for g in mine(agd):
            ax.plot(g["alpha"].values, g["mean"].values, "x", color=tcol(g),
                    ms=s["marker_size"] + 2, ls="none",
                    label=rf"AGD $T={g.attrs['T']}$ ($d={g.attrs['d']}$)")
        _axes(ax, axes)
        _off_axis(ax, [*mine(amp), *mine(agd)], "alpha", s, color_of=tcol)
        rho = float(curves[0].attrs["rho"]) if curves else float("nan")
        ax.set_xlabel(r"$\alpha = n/d^2$")
        ax.set_title(rf"Gaussian channel, $\rho={_fmt_rho(rho)}$, $\Delta={delta:g}$")
    # one legend for the panels: every marker kind any panel shows (a triangle off the axis
    # in the last panel too)
    axs[0, 0].aimlib_kinds = list(dict.fromkeys(
        k for a in axs.flat for k in getattr(a, "aimlib_kinds", [])))
    _legend(axs[0, 0], loc="lower left", frameon=False, fontsize=s["font_size"] - 3, ncol=1)
    axs[0, 0].set_ylabel("estimation error")
    return fig


@_styled
def fig11(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Hardmax beyond two tokens (docs/theory.md §14): (a) SE error against the information-
    rescaled ``alpha_bar = c_T alpha / rho`` for each T (lines), AMP (filled circles) and each
    T's large-alpha law ``C_T alpha^-2`` (thin dashed); (b) ``alpha_bar^2 E`` against
    ``alpha_bar``, which flattens to each law's prefactor."""
    curves, amp = _inputs(inputs, "se", "amp")
    from aimlib.theory.asymptotics import large_alpha

    s = _style(style)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(2 * s["width"], s["height"]),
                                 layout="constrained")
    for ds in sorted(curves, key=lambda c: int(c.attrs["T"])):
        T, rho = int(ds.attrs["T"]), float(ds.attrs["rho"])
        color = T_color(T)
        ab, a, e = ds["alpha_bar"].values, ds["alpha"].values, ds["error"].values
        _se_plot(ax, ab, ds, color=color, lw=s["line_width"], label=rf"SE $T={T}$")
        _se_plot(bx, ab, ds, ab * ab * e, color=color, lw=s["line_width"])
        law = large_alpha("hardmax", rho, T=T)
        big = ab >= 1.0
        ax.plot(ab[big], law.error(a[big]), color=color, lw=0.8, ls=(0, (4, 3)), zorder=1)
        bx.plot(ab[big], ab[big] ** 2 * law.error(a[big]), color=color, lw=0.8,
                ls=(0, (4, 3)), zorder=1)
    ax.plot([], [], color="0.45", lw=0.8, ls=(0, (4, 3)),
            label=r"large-$\alpha$ laws $C_T\,\alpha^{-2}$")
    for agg in sorted(amp, key=lambda c: int(c.attrs["T"])):
        T = int(agg.attrs["T"])
        _amp_markers(ax, [agg], "alpha_bar", s, color_of=lambda a, T=T: T_color(T), filled=True,
                     label=rf"AMP $T={T}$ ($d={agg.attrs['d']}$)")
        # panel (b) draws the same markers (counts, diamonds) on alpha_bar^2 times the values
        ab2 = agg["alpha_bar"] ** 2
        scaled = agg.assign({k: agg[k] * ab2 for k in ("mean", "std", "mean_all") if k in agg})
        _amp_markers(bx, [scaled], "alpha_bar", s, color_of=lambda a, T=T: T_color(T),
                     filled=True)
    _axes(ax, axes)
    _off_axis(ax, amp, "alpha_bar", s, color_of=lambda a: T_color(int(a.attrs["T"])))
    rho = float(curves[0].attrs["rho"]) if curves else float("nan")
    ax.set_xlabel(r"$\bar\alpha = c_T\,\alpha/\rho$")
    ax.set_ylabel("estimation error")
    ax.set_title(rf"(a) hardmax, $\rho={_fmt_rho(rho)}$: $T$ tokens")
    _legend(ax, loc="lower left", frameon=False, fontsize=s["font_size"] - 3)
    _scaled_panel(bx, axes, r"$\bar\alpha$", r"$\bar\alpha^2\,E$",
                  r"(b) $\bar\alpha^2 E$ flattens to each law's prefactor")
    return fig


def _scaled_panel(bx, axes: Mapping | None, xlabel: str, ylabel: str, title: str) -> None:
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


#: Colours of the token laws in fig10 (by registry name).
TOKEN_COLORS = {"gaussian": "black", "rademacher": "tab:blue", "uniform": "tab:green",
                "student_t": "tab:red", "correlated": "tab:purple"}


def _law(ds: xr.Dataset) -> str:
    """The token law of a cached result (``"gaussian"`` for results without the attribute)."""
    return str(ds.attrs.get("tokens", "gaussian"))


def _law_label(tag: str) -> str:
    """``rademacher``, ``student_t ($\\nu=10$)``, ``correlated ($c=0.3$)`` from a file tag."""
    from aimlib.tokens import TOKEN_LAWS

    for name, cls in TOKEN_LAWS.items():
        if tag.startswith(name) and cls.PARAM and tag != name:
            from aimlib.tokens import readable

            sym = r"\nu" if cls.PARAM == "nu" else cls.PARAM
            return rf"{name} (${sym}={readable(float(tag[len(name):]))}$)"
    return tag


def _law_color(tag: str):
    for name, color in TOKEN_COLORS.items():
        if tag.startswith(name):
            return color
    return "gray"


@_styled
def fig10(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Token laws (docs/theory.md §13): per channel, error against alpha under each law (top)
    and its difference from the Gaussian-token SE (bottom).  One colour per law; the line
    style and the marker say what was computed (legend of kinds in grey)."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullFormatter

    curves, amp, agd = _inputs(inputs, "se", "amp", "agd")
    s = _style(style)
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
            _se_plot(ax, ds["alpha"].values, ds, color=color, lw=s["line_width"],
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
                    _amp_markers(ax, [agg.assign_coords(alpha=xs)], "alpha", s,
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
        _axes(ax, axes.get(ch) if isinstance(axes, Mapping) and ch in axes else axes)
        _off_axis(ax, [a for a in (*amp, *agd) if a.attrs.get("channel") == ch], "alpha", s,
                  color_of=lambda a: _law_color(_law(a)))
        dx.set_xscale(ax.get_xscale())
        dx.set_xlim(ax.get_xlim())
        dx.grid(True, which="major", alpha=0.25)
        for a in (ax, dx):
            a.xaxis.set_minor_formatter(NullFormatter())
        rho = float(mine[0].attrs["rho"]) if mine else float("nan")
        ax.set_title(rf"{ch}, $T=2$, $\rho={_fmt_rho(rho)}$")
        ax.set_ylabel("estimation error")
        dx.set_xlabel(r"$\alpha = n/d^2$")
        dx.set_ylabel("minus Gaussian-token SE")
        for law in laws_all:
            if law in shown or law in universal:
                ax.plot([], [], color=_law_color(law), lw=4, label=_law_label(law))
        for props, text in kinds.values():
            ax.plot([], [], label=text, **{k: v for k, v in props.items() if v is not None})
        _legend(ax, loc="lower left", frameon=False, fontsize=s["font_size"] - 3)
    return fig


#: The steps over which fig_steps fits AGD's rate (the paper's budget is the upper end).
RATE_WINDOW = (100, 1000)


def step_rate(steps: np.ndarray, mean: np.ndarray, window=RATE_WINDOW):
    """``p`` of ``error ~ steps^-p`` by least squares on ``log`` both, over the checkpoints in
    ``window`` with a finite positive mean; ``None`` below three such points."""
    ok = (steps >= window[0]) & (steps <= window[1]) & np.isfinite(mean) & (mean > 0)
    if ok.sum() < 3:
        return None
    return -float(np.polyfit(np.log(steps[ok]), np.log(mean[ok]), 1)[0])


@_styled
def fig_steps(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """GD and AGD error against Adam steps per T and alpha_bar (docs/theory.md §5.2)."""
    curves, gd, agd = _inputs(inputs, "se", "gd", "agd")
    s = _style(style)
    Ts = sorted({int(a.attrs["T"]) for a in (*gd, *agd)}) or [2]
    fig, axs = plt.subplots(1, len(Ts), figsize=(s["width"] * len(Ts), s["height"]),
                            layout="constrained", squeeze=False)
    bars = sorted({float(round(v, 6)) for a in (*gd, *agd) for v in a["alpha_bar"].values})
    palette = ("tab:blue", "tab:green", "tab:orange", "tab:red", "tab:purple", "tab:brown")
    colors = {b: palette[i % len(palette)] for i, b in enumerate(bars)}
    for ax, T in zip(axs[0], Ts, strict=True):
        for sets, ls, marker, name in ((gd, "--", "+", "GD"), (agd, "-", "x", "AGD")):
            for agg in (a for a in sets if int(a.attrs["T"]) == T):
                if "checkpoint_mean" not in agg:
                    continue
                steps = agg["checkpoint"].values.astype(float)
                for i, ab in enumerate(agg["alpha_bar"].values):
                    m = agg["checkpoint_mean"].values[i]
                    sd = agg["checkpoint_std"].values[i]
                    c = colors[float(round(ab, 6))]
                    p = step_rate(steps, m) if name == "AGD" else None
                    lab = (rf"{name} $\bar\alpha={ab:.3g}$"
                           + (rf", $p={p:.2f}$" if p is not None else ""))
                    ax.plot(steps, m, ls=ls, marker=marker, color=c, lw=s["line_width"] * 0.8,
                            ms=s["marker_size"] + 1, label=lab)
                    if name == "AGD":  # mean +- its standard error over the seeds
                        sem = sd / np.sqrt(max(int(agg["n_converged"].values[i]), 1))
                        ok = np.isfinite(sem) & (sem > 0) & (m - sem > 0)
                        ax.fill_between(steps[ok], (m - sem)[ok], (m + sem)[ok], color=c,
                                        alpha=0.2, lw=0)
        for ds in (c for c in curves if int(c.attrs.get("T", T)) == T or len(Ts) == 1):
            from aimlib.theory.state_evolution import usable

            ok = usable(ds)
            for ab, e in zip(ds["alpha_bar"].values[ok], ds["error"].values[ok], strict=True):
                key = min(bars, key=lambda b, ab=ab: abs(b - ab)) if bars else None
                # perfect recovery (SE error 0 to rounding, above the threshold): no line
                if key is not None and abs(key - ab) < 1e-3 * max(ab, 1e-9) and e > 1e-12:
                    ax.axhline(e, color=colors[key], lw=0.8, ls=(0, (1, 2)))
        ax.axvline(1000, color="gray", lw=0.8, ls=":")
        ax.annotate("paper: 1000 steps", xy=(1000, 1), xycoords=("data", "axes fraction"),
                    xytext=(3, -12), textcoords="offset points", fontsize=s["font_size"] - 2,
                    color="gray")
        ax.set_xscale("log")
        ax.set_yscale("log")
        _axes(ax, axes)
        ax.set_xlabel("Adam steps")
        ax.set_ylabel("estimation error")
        rho = float((gd or agd)[0].attrs["rho"]) if (gd or agd) else float("nan")
        ax.set_title(rf"softmax, $T={T}$, $\rho={_fmt_rho(rho)}$: error against steps")
        _legend(ax, loc="lower left", frameon=False, fontsize=s["font_size"] - 3, ncol=2)
    return fig


def save(fig, paths: Sequence[str | os.PathLike], dpi: int | None = None, *,
         provenance: str | None = None) -> None:
    """Save ``fig`` to each path (format from the suffix), atomically, then close it.

    ``provenance`` (what made the figure: the commit and the config, :func:`provenance`) is
    written into the files' metadata: the PNG's ``Source`` text chunk, the PDF's ``Subject``.
    """
    with plt.rc_context(getattr(fig, "aimlib_rc", {})):
        _save(fig, paths, dpi, provenance)
    plt.close(fig)


def provenance(figure: str, configfiles=(), commit: str | None = None) -> str:
    """One line saying what made a figure: aimlib's version, the commit of the checkout (with
    ``+changes`` where its tracked files differ from it), the config file(s) and the figure."""
    from aimlib import __version__

    cf = ", ".join(str(c) for c in configfiles) or "config/config.yaml"
    return (f"aimlib {__version__}, commit {commit or 'unknown'}, configfile {cf}, "
            f"figure {figure}")


def _save(fig, paths, dpi, source=None) -> None:
    from aimlib.core.files import atomic_write

    for p in paths:
        p = Path(p)
        fmt = p.suffix[1:]
        meta = {"CreationDate": None} if fmt == "pdf" else {"Software": None}
        if source:
            meta["Subject" if fmt == "pdf" else "Source"] = source
        atomic_write(p, lambda tmp, fmt=fmt, meta=meta: fig.savefig(tmp, dpi=dpi, format=fmt,
                                                                      metadata=meta))


if set(DRAW) != set(FIGURES):  # pragma: no cover - a registry entry without its function
    raise RuntimeError(f"figures without a drawing function: {sorted(set(FIGURES) - set(DRAW))}")


def draw(name: str, inputs: Inputs, *, axes: Mapping | None = None,
         style: Mapping | None = None):
    """Draw registered figure ``name`` from its inputs."""
    if name not in DRAW:
        raise ValueError(f"no figure {name!r}; the registry has {', '.join(DRAW)}")
    return DRAW[name](inputs, axes=axes, style=style)
