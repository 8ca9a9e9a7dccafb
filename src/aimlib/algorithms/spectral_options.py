"""The spectral estimator's options, each declared once (:mod:`aimlib.core.options`)."""

from __future__ import annotations

from dataclasses import dataclass

from aimlib.core.options import option

__all__ = ["SpectralOptions"]


@dataclass(frozen=True)
class SpectralOptions:
    """Options of :func:`aimlib.algorithms.spectral.run` that an experiment's ``spectral``
    block and ``aimlib spectral`` may set (:mod:`aimlib.core.options`)."""

    dtype: str = option(
        "float64", "precision of the tokens and of the two products of its one pass over the "
        "data", choices=("float64", "float32"))
