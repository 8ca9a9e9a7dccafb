"""AMP's options, each declared once (:mod:`aimlib.core.options`): the library's defaults and
checks (:func:`aimlib.algorithms.amp.run`), the config schema's ``amp`` block and ``aimlib amp``'s
flags come from here.  Light, so that the workflow can read it while it parses itself."""

from __future__ import annotations

from dataclasses import dataclass

from aimlib.algorithms.protocol import backend_option
from aimlib.core.options import option, validate

__all__ = ["AMPOptions", "AMP_MIN_D_PER_T", "AMP_SCALES", "FLOAT32_FROM_D", "amp_dtype"]

#: AMP's smallest ``d`` per token (its RIE and Onsager terms are large-d approximations; at
#: d = 2 it reports nonsense as converged); the spectral estimator, AMP's first step, shares it.
AMP_MIN_D_PER_T = 5

#: AMP's ``scale`` options (docs/theory.md §4.2): keep a scale-blind channel's trace at the
#: posterior mean's, or leave it free.
AMP_SCALES = ("prior", "free")

#: ``d`` from which ``dtype: auto`` runs AMP's large products in float32.
FLOAT32_FROM_D = 500


def amp_dtype(dtype: str, d: int) -> str:
    """Resolve the ``dtype`` option (``auto``: float32 from ``d =`` :data:`FLOAT32_FROM_D`)."""
    if dtype == "auto":
        return "float32" if d >= FLOAT32_FROM_D else "float64"
    validate(AMPOptions, {"dtype": dtype})  # the choices declared below, once
    return dtype


@dataclass(frozen=True)
class AMPOptions:
    """Options of :func:`aimlib.algorithms.amp.run` that an experiment's ``amp`` block and
    ``aimlib amp`` may set: each declared once, with its meaning and range
    (:mod:`aimlib.core.options`)."""

    damping: float = option(
        0.5, "output-side damping of the first attempt (restarts damp more)", ge=0, lt=1)
    tol: float = option(1e-7, "convergence: (1/d) ||S_new - S||^2 below it", gt=0)
    max_iter: int = option(500, "iteration budget of a run, restarts included", ge=1)
    dtype: str = option(
        "float64", "precision of the tokens and of the two large products (float32 halves "
        "memory and time; everything else stays float64); \"auto\" uses float32 from d >= 500",
        choices=("float64", "float32", "auto"))
    scale: str = option(
        "prior", "hardmax: keep the estimate's trace at the posterior mean's exact sqrt(r d) "
        "(\"prior\", docs/theory.md §4.2) or leave it free", choices=AMP_SCALES)
    backend: str = backend_option()
