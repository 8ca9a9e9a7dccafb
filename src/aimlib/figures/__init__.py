"""The figures: the registry (:mod:`aimlib.figures.registry`: per figure its inputs, what it
shows, the paper figure and the corrections; the report captions) and the drawing code
(:mod:`aimlib.figures.plots`: one function per figure, ``figN(inputs, *, axes, style)``, styled
inside ``matplotlib.rc_context``).  The names below are the API (``aimlib.figures.fig1a``, ``draw``, ``save``, ...)."""

from aimlib.figures.plots import (
    DEFAULT_STYLE,
    DRAW,
    T_color,
    beta_color,
    draw,
    fig1a,
    fig1b,
    fig2a,
    fig2b,
    fig3,
    fig4,
    fig5,
    fig6,
    fig7,
    fig8,
    fig9,
    provenance,
    rho_color,
    save,
)
from aimlib.figures.registry import FIGURES, INPUT_KINDS, FigureSpec, caption

__all__ = ["DEFAULT_STYLE", "DRAW", "FIGURES", "INPUT_KINDS", "FigureSpec", "T_color",
           "beta_color", "caption", "draw", "fig1a", "fig1b", "fig2a", "fig2b", "fig3", "fig4",
           "fig5", "fig6", "fig7", "fig8", "fig9", "provenance", "rho_color", "save"]
