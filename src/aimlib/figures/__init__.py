"""The figures: the registry (:mod:`aimlib.figures.registry`: per figure its inputs, what it
shows, the paper figure and the corrections; the report captions), one module per figure
(:mod:`aimlib.figures.drawing`: ``figN(inputs, *, axes, style)``), the style and colours they
share (:mod:`aimlib.figures.style`), their shared layers (:mod:`aimlib.figures.layers`), legend
placement (:mod:`aimlib.figures.legend`) and writing (:mod:`aimlib.figures.output`).

The names below are the API (``aimlib.figures.fig1a``, ``draw``, ``save``, ...).  Only the
registry is imported with the package: the drawing code (matplotlib, xarray) is imported on
first use of a name (PEP 562), so that the workflow, which reads the registry while it parses,
does not load it.
"""

import importlib

from aimlib.figures.registry import FIGURES, INPUT_KINDS, FigureSpec, caption

#: Where each drawing name lives, imported on first use.
_LAZY = {
    **{name: f"aimlib.figures.drawing.{name}" for name in FIGURES},
    **dict.fromkeys(("draw", "save", "provenance", "load_all"), "aimlib.figures.output"),
    **dict.fromkeys(("DEFAULT_STYLE", "DRAW", "T_color", "beta_color", "rho_color"),
                    "aimlib.figures.style"),
}

__all__ = ["FIGURES", "INPUT_KINDS", "FigureSpec", "caption", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
