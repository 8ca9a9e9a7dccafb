"""Writing figures: :func:`save` (PDF and PNG atomically, with what made them in their metadata,
:func:`provenance`) and :func:`draw` (a registered figure by name).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt

from aimlib import __version__
from aimlib.core.files import atomic_write
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


def draw(name: str, inputs: Inputs, *, axes: Mapping | None = None,
         style: Mapping | None = None):
    """Draw registered figure ``name`` from its inputs."""
    if name not in DRAW:
        raise ValueError(f"no figure {name!r}; the registry has {', '.join(DRAW)}")
    return DRAW[name](inputs, axes=axes, style=style)
