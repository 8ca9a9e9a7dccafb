"""Writing figures: :func:`save` (PDF and PNG atomically, with what made them in their metadata,
:func:`provenance`) and :func:`draw` (a registered figure by name, its module imported on
first use).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt

from aimlib import __version__
from aimlib.core.files import atomic_write
from aimlib.figures.registry import FIGURES
from aimlib.figures.style import DRAW, Inputs


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
    cf = ", ".join(str(c) for c in configfiles) or "config/config.yaml"
    return (f"aimlib {__version__}, commit {commit or 'unknown'}, configfile {cf}, "
            f"figure {figure}")


def _save(fig, paths, dpi, source=None) -> None:
    for p in paths:
        p = Path(p)
        fmt = p.suffix[1:]
        meta = {"CreationDate": None} if fmt == "pdf" else {"Software": None}
        if source:
            meta["Subject" if fmt == "pdf" else "Source"] = source
        atomic_write(p, lambda tmp, fmt=fmt, meta=meta: fig.savefig(tmp, dpi=dpi, format=fmt,
                                                                      metadata=meta))


def _drawing(name: str):
    """The drawing function of figure ``name``: registered when its module
    (:mod:`aimlib.figures.drawing`) is imported, which happens here on first use."""
    if name not in DRAW and name in FIGURES:
        importlib.import_module(f"aimlib.figures.drawing.{name}")
    if name not in DRAW:
        raise ValueError(f"no figure {name!r}; the registry has {', '.join(FIGURES)}")
    return DRAW[name]


def load_all() -> dict:
    """Import every figure module of the registry and return :data:`DRAW`; ``RuntimeError``
    naming a registry entry that has no drawing function."""
    for name in FIGURES:
        try:
            _drawing(name)
        except (ValueError, ModuleNotFoundError):
            raise RuntimeError(f"figure {name} of the registry has no drawing function "
                               f"(aimlib/figures/drawing/{name}.py)") from None
    return DRAW


def draw(name: str, inputs: Inputs, *, axes: Mapping | None = None,
         style: Mapping | None = None):
    """Draw registered figure ``name`` from its inputs."""
    return _drawing(name)(inputs, axes=axes, style=style)
