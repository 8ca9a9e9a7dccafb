"""The figures: the registry (:mod:`aimlib.figures.registry`: per figure its inputs, what it
shows, the paper figure and the corrections; the report captions), one module per figure
(``aimlib.figures.fig1a`` ... ``fig_steps``: ``figN(inputs, *, axes, style)``), the style and
colours they share (:mod:`aimlib.figures.style`), their shared layers
(:mod:`aimlib.figures.layers`), legend placement (:mod:`aimlib.figures.legend`) and writing
(:mod:`aimlib.figures.output`).  The names below are the API (``aimlib.figures.fig1a``,
``draw``, ``save``, ...)."""

import matplotlib

matplotlib.use("Agg")  # no display: every figure is written to files, before pyplot loads

from aimlib.figures.fig1a import fig1a  # noqa: E402
from aimlib.figures.fig1b import fig1b  # noqa: E402
from aimlib.figures.fig2a import fig2a  # noqa: E402
from aimlib.figures.fig2b import fig2b  # noqa: E402
from aimlib.figures.fig3 import fig3  # noqa: E402
from aimlib.figures.fig4 import fig4  # noqa: E402
from aimlib.figures.fig5 import fig5  # noqa: E402
from aimlib.figures.fig6 import fig6  # noqa: E402
from aimlib.figures.fig7 import fig7  # noqa: E402
from aimlib.figures.fig8 import fig8  # noqa: E402
from aimlib.figures.fig9 import fig9  # noqa: E402
from aimlib.figures.fig10 import fig10  # noqa: E402
from aimlib.figures.fig11 import fig11  # noqa: E402
from aimlib.figures.fig_steps import fig_steps  # noqa: E402
from aimlib.figures.output import draw, provenance, save  # noqa: E402
from aimlib.figures.registry import FIGURES, INPUT_KINDS, FigureSpec, caption  # noqa: E402
from aimlib.figures.style import DEFAULT_STYLE, DRAW, T_color, beta_color, rho_color  # noqa: E402

if set(DRAW) != set(FIGURES):  # pragma: no cover - a registry entry without its module
    raise RuntimeError(f"figures without a drawing function: {sorted(set(FIGURES) - set(DRAW))}")

__all__ = ["DEFAULT_STYLE", "DRAW", "FIGURES", "INPUT_KINDS", "FigureSpec", "T_color",
           "beta_color", "caption", "draw", "fig1a", "fig1b", "fig2a", "fig2b", "fig3", "fig4",
           "fig5", "fig6", "fig7", "fig8", "fig9", "fig10", "fig11", "fig_steps", "provenance",
           "rho_color", "save"]
