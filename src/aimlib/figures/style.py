"""Figure style: the default sizes, the colours (a width rho has one colour in every figure, each
colour readable on white), the matplotlib settings applied per figure, and the registration of a
figure's drawing function (:data:`DRAW`, :func:`styled`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from aimlib.figures.legend import tidy
from aimlib.figures.registry import FIGURES

# no display: every figure is written to files (before the first figure; pyplot picks its
# backend lazily)
matplotlib.use("Agg")

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


def resolve_style(style: Mapping | None) -> dict:
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
    s = resolve_style(style)
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
    # matplotlib only when drawing (importing it costs ~0.3 s)
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


def inputs_of(inputs: Inputs, *kinds: str) -> list[list[xr.Dataset]]:
    """The lists of datasets of the given kinds (empty for a kind the inputs do not have)."""
    return [list(inputs.get(k, ())) for k in kinds]


def _rc(style: dict) -> dict:
    """The matplotlib settings of a figure, applied with ``rc_context`` (no global state)."""
    return {"font.size": style["font_size"], "axes.labelsize": style["font_size"] + 1,
            "legend.fontsize": style["font_size"] - 1, "text.usetex": False,
            "mathtext.fontset": "cm"}


#: The drawing function of each figure of the registry (:data:`aimlib.figures.FIGURES`),
#: filled by :func:`styled` as the functions below are defined.
DRAW: dict = {}


def styled(draw_fn):
    """Register a figure's drawing function under its name (:data:`DRAW`) and draw it inside
    ``matplotlib.rc_context`` with its style's settings, so that drawing one figure never
    changes the next (or a user's own plots)."""
    if draw_fn.__name__ not in FIGURES:
        raise ValueError(f"{draw_fn.__name__} is not in the figure registry")

    @functools.wraps(draw_fn)
    def wrapper(inputs, *, axes=None, style=None):
        rc = _rc(resolve_style(style))
        # the figure's own widths, spread over the colormap (rho_color)
        style = {**(style or {}),
                 "rho_palette": rho_palette(_figure_rhos(inputs), resolve_style(style)["cmap"])}
        with plt.rc_context(rc):
            fig = draw_fn(inputs, axes=axes, style=style)
            tidy(fig)  # no label over a label, no legend over data (aimlib.figures.legend)
        fig.aimlib_rc = rc  # save() renders under the same settings (mathtext is drawn late)
        return fig

    DRAW[draw_fn.__name__] = wrapper
    return wrapper


def new_figure(style: dict):
    fig, ax = plt.subplots(figsize=(style["width"], style["height"]), layout="constrained")
    return fig, ax


def rank_colors(values, cmap: str = "viridis"):
    """Evenly spaced colours for sorted distinct values (so that any set of d is told apart)."""
    vals = sorted(set(values))
    cm = plt.get_cmap(cmap)
    return {v: with_contrast(cm(0.05 + 0.85 * i / max(len(vals) - 1, 1)))
            for i, v in enumerate(vals)}
