"""Legends and labels that never cover data or each other: point labels (``k/n`` seeds
converged) that would overlap are stacked apart, and each axes' legend is moved to the first place
where no data point, curve or label lies under it, or beside the axes where there is none.

:func:`tidy` runs after every registered figure is drawn (:func:`aimlib.figures.draw`);
:func:`legend_overlaps` and :func:`label_overlaps` are its measures, and what the tests assert
on every figure.
"""

from __future__ import annotations

import numpy as np

__all__ = ["tidy", "beside", "legend_overlaps", "label_overlaps", "place_legends",
           "separate_labels", "INSIDE_LOCATIONS", "BESIDE_WIDEN"]

#: Where a legend may go inside its axes, tried in this order after the figure's own choice.
INSIDE_LOCATIONS = ("upper right", "upper left", "lower left", "lower right", "center right",
                    "center left", "upper center", "lower center")

#: Pixels between a legend's frame and the nearest data that still count as an overlap (the
#: legend's frame is invisible in most figures, so its text must keep this distance).
MARGIN_PX = 2.0

#: Spacing, in pixels, of the points sampled along a drawn line between its vertices.
STEP_PX = 2.0


def _line_points(line) -> np.ndarray:
    """Display coordinates of a Line2D's vertices and, where it is drawn as a line, of points
    sampled every :data:`STEP_PX` pixels along each segment between two finite vertices."""
    xy = np.asarray(line.get_xydata(), dtype=float)
    if xy.size == 0:
        return np.empty((0, 2))
    pts = line.get_transform().transform(xy)
    finite = np.all(np.isfinite(pts), axis=1)
    if line.get_linestyle() in ("None", "", " ") or len(pts) < 2:
        return pts[finite]
    a, b = pts[:-1], pts[1:]
    ok = finite[:-1] & finite[1:]
    a, b = a[ok], b[ok]
    out = [pts[finite]]
    n = np.minimum(np.maximum(1, np.ceil(np.hypot(*(b - a).T) / STEP_PX)), 2000).astype(int)
    for k in np.unique(n):
        sel = n == k
        t = np.linspace(0.0, 1.0, k + 1)[None, :, None]
        out.append((a[sel][:, None, :] + t * (b[sel] - a[sel])[:, None, :]).reshape(-1, 2))
    return np.concatenate(out)


def _data_points(ax, renderer) -> tuple[np.ndarray, list]:
    """Display coordinates of everything an axes shows as data (lines, markers, error bars,
    scatter points) clipped to the axes, and the window extents of its texts (labels such as
    k/n seeds converged)."""
    # matplotlib only when drawing (importing it costs ~0.3 s)
    from matplotlib.collections import LineCollection, PathCollection, PolyCollection
    from matplotlib.lines import Line2D  # matplotlib only when drawing (importing it costs ~0.3 s)

    box = ax.get_window_extent(renderer)
    chunks = [_line_points(ln) for ln in ax.lines if ln.get_visible()]
    for c in ax.collections:
        if not c.get_visible():
            continue
        if isinstance(c, LineCollection):
            for seg in c.get_segments():
                seg = np.asarray(seg, dtype=float)
                if len(seg) >= 2:
                    chunks.append(_line_points(Line2D(*seg.T, transform=c.get_transform())))
        elif isinstance(c, PathCollection):
            offs = np.asarray(c.get_offsets(), dtype=float)
            if offs.size:
                chunks.append(c.get_offset_transform().transform(offs))
        elif isinstance(c, PolyCollection):  # bands (fill_between)
            for path in c.get_paths():
                chunks.append(c.get_transform().transform(path.vertices))
    pts = np.concatenate(chunks) if chunks else np.empty((0, 2))
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    inside = ((pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1) & (pts[:, 1] >= box.y0)
              & (pts[:, 1] <= box.y1))
    texts = [t.get_window_extent(renderer) for t in ax.texts
             if t.get_visible() and t.get_text().strip()]
    return pts[inside], texts


def _overlap(legend, pts: np.ndarray, texts: list, renderer) -> int:
    """How many data points and texts lie under ``legend``."""
    bb = legend.get_window_extent(renderer).padded(MARGIN_PX)
    n = int(np.sum((pts[:, 0] >= bb.x0) & (pts[:, 0] <= bb.x1) & (pts[:, 1] >= bb.y0)
                   & (pts[:, 1] <= bb.y1))) if len(pts) else 0
    return n + sum(bool(bb.overlaps(t)) for t in texts)


def legend_overlaps(fig) -> list[tuple[int, int]]:
    """``(axes index, number of data points or texts under its legend)`` for every axes of
    ``fig`` whose legend covers data (an empty list: no legend covers anything)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for i, ax in enumerate(fig.axes):
        leg = ax.get_legend()
        if leg is None or not leg.get_visible():
            continue
        pts, texts = _data_points(ax, renderer)
        n = _overlap(leg, pts, texts, renderer)
        if n:
            out.append((i, n))
    return out


def place_legends(fig) -> None:
    """Move each axes' legend off the data: its own location if clear, else the first clear
    one of :data:`INSIDE_LOCATIONS`, else beside the axes (right of a lone axes, the figure
    widened to keep the axes' size; below one of several).  A legend moved beside its axes
    changes the layout, so the others are checked again on the new one."""
    if not any(ax.get_legend() is not None for ax in fig.axes):
        return
    below: list = []  # legends put under their axes: kept clear of the x label as it moves
    for _ in range(4):
        fig.canvas.draw()  # the layout settles here; legends inside the axes do not move it
        renderer = fig.canvas.get_renderer()
        moved = False
        for ax in below:
            y = _under(ax, renderer)
            if abs(y - ax.get_legend().get_bbox_to_anchor().transformed(
                    ax.transAxes.inverted()).y0) > 0.005:
                ax.get_legend().set_bbox_to_anchor((0.5, y), transform=ax.transAxes)
                moved = True
        outside = []
        for ax in fig.axes:
            leg = ax.get_legend()
            if leg is None or not leg.get_visible() or _anchored_outside(leg):
                continue
            pts, texts = _data_points(ax, renderer)
            if not _overlap(leg, pts, texts, renderer):
                continue
            for loc in INSIDE_LOCATIONS:
                leg.set_loc(loc)
                if not _overlap(leg, pts, texts, renderer):
                    break
            else:
                outside.append(ax)
        if not outside and not moved:
            return
        for ax in outside:
            leg = ax.get_legend()
            if len(fig.axes) == 1:
                beside(leg)
            else:  # below the axes, clear of its tick labels and x label, in rows
                leg = _in_columns(ax, leg, min(3, max(1, len(leg.get_texts()) // 3)))
                leg.set_loc("upper center")
                leg.set_bbox_to_anchor((0.5, _under(ax, renderer)), transform=ax.transAxes)
                below.append(ax)


#: How much wider a lone axes' figure gets when its legend goes beside it (the axes keep
#: their size).
BESIDE_WIDEN = 1.5


def beside(leg):
    """Put a lone axes' legend beside it, top-aligned right of the axes, the figure widened by
    :data:`BESIDE_WIDEN`; returns the legend."""
    leg.set_loc("upper left")
    leg.set_bbox_to_anchor((1.02, 1.0), transform=leg.axes.transAxes)
    leg.borderaxespad = 0.0
    fig = leg.axes.figure
    fig.set_figwidth(fig.get_figwidth() * BESIDE_WIDEN)
    return leg


def _in_columns(ax, leg, ncols: int):
    """The same legend (entries, font size, frame) laid out in ``ncols`` columns: each entry's
    own artist where the axes has it (an error bar keeps its bar), else the legend's proxy (the
    marker kinds of :func:`aimlib.figures.layers.add_legend`)."""
    own = dict(zip(*reversed(ax.get_legend_handles_labels()), strict=True))
    texts = leg.get_texts()
    labels = [t.get_text() for t in texts]
    handles = [own.get(lab, proxy) for lab, proxy in zip(labels, leg.legend_handles,
                                                         strict=True)]
    return ax.legend(handles, labels, ncols=ncols,
                     fontsize=texts[0].get_fontsize() if texts else None,
                     frameon=leg.get_frame_on())


def _under(ax, renderer) -> float:
    """The height, in axes coordinates, just under an axes' tick labels and x label."""
    box = ax.xaxis.get_tightbbox(renderer)
    return (box.y0 - ax.bbox.y0) / ax.bbox.height - 0.03 if box is not None else -0.2


def _anchored_outside(leg) -> bool:
    """Whether a legend was put beside its axes on purpose (anchored outside [0, 1]^2)."""
    box = leg.get_bbox_to_anchor()
    ax_box = leg.axes.bbox if leg.axes is not None else None
    if ax_box is None:
        return False
    return (box.x0 >= ax_box.x1 - 1 or box.x1 <= ax_box.x0 + 1 or box.y1 <= ax_box.y0 + 1
            or box.y0 >= ax_box.y1 - 1)


def _labels(ax):
    """The point labels an axes draws: annotations placed by an offset in points from a data
    point inside the axes (matplotlib does not draw one whose point is outside)."""
    # matplotlib only when drawing (importing it costs ~0.3 s)
    from matplotlib.text import Annotation

    box = ax.bbox
    out = []
    for t in ax.texts:
        if not (isinstance(t, Annotation) and t.get_visible() and t.get_text().strip()
                and getattr(t, "anncoords", None) == "offset points"):
            continue
        x, y = ax.transData.transform(np.asarray(t.xy, dtype=float))
        if np.isfinite(x) and np.isfinite(y) and box.x0 <= x <= box.x1 and box.y0 <= y <= box.y1:
            out.append(t)
    return out


def label_overlaps(fig) -> int:
    """How many pairs of point labels of ``fig`` overlap (0: every label reads on its own)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    n = 0
    for ax in fig.axes:
        boxes = [t.get_window_extent(renderer) for t in _labels(ax)]
        n += sum(bool(a.overlaps(b)) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    return n


def separate_labels(fig) -> None:
    """Move apart overlapping point labels: each label that overlaps one placed before it (in
    order of height) moves by whole label heights, up or down, whichever clear place inside
    its axes is nearest."""
    labels = [t for ax in fig.axes for t in _labels(ax)]
    if len(labels) < 2:
        return
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        placed = []
        inside = ax.get_window_extent(renderer)
        for t in sorted(_labels(ax), key=lambda t: t.get_window_extent(renderer).y0):
            box = t.get_window_extent(renderer)
            if any(box.overlaps(b) for b in placed):
                dx, dy = t.xyann
                step = box.height * 72.0 / fig.dpi + 1.0  # points
                for k in (1, -1, 2, -2, 3, -3, 4, -4):
                    t.xyann = (dx, dy + k * step)
                    box = t.get_window_extent(renderer)
                    if (not any(box.overlaps(b) for b in placed) and box.y0 >= inside.y0
                            and box.y1 <= inside.y1):
                        break
                else:
                    t.xyann = (dx, dy + step)
                    box = t.get_window_extent(renderer)
            placed.append(box)


def tidy(fig) -> None:
    """:func:`separate_labels`, then :func:`place_legends` (labels count as data)."""
    separate_labels(fig)
    place_legends(fig)
