"""Options of the two algorithms, defined once: the library's defaults, the configuration's
defaults, the resource model and the schema's ``default:`` entries all come from here
(``tests/test_config.py`` checks the schema against them).

This module imports nothing heavy, so that the workflow can read it while it parses itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

__all__ = ["CHUNK", "TOKEN_BUDGET", "SE_TOL", "AMP_MIN_D_PER_T", "AMP_SCALES", "AMPOptions",
           "GDOptions", "SpectralOptions", "resolve", "defaults"]

#: AMP's smallest ``d`` per token (its RIE and Onsager terms are large-d approximations; at
#: d = 2 it reports nonsense as converged); the spectral estimator, AMP's first step, shares it.
AMP_MIN_D_PER_T = 5

#: AMP's ``scale`` options (docs/theory.md §4.2): keep a scale-blind channel's trace at the
#: posterior mean's, or leave it free.
AMP_SCALES = ("prior", "free")

#: Tolerance on ``|F(q) - q|`` of every state-evolution fixed point.
SE_TOL = 1e-10

#: Samples per token chunk (a fixed constant: changing it changes every regenerated token).
CHUNK = 4096
#: Bytes of AMP tokens kept in memory; above it they are regenerated from the seed each
#: iteration (chunk by chunk).
TOKEN_BUDGET = 4.0 * 2**30


@dataclass(frozen=True)
class AMPOptions:
    """Options of :func:`aimlib.algorithms.amp.run` that an experiment's ``amp`` block may set.

    ``damping``: output-side damping in ``[0, 1)``; ``tol``: stop when the step
    ``(1/d) ||S_hat_new - S_hat||^2`` is below it; ``max_iter``: iteration budget shared by the
    restarts; ``dtype``: precision of the tokens and the two large products (``"auto"`` in a
    config: float32 from ``d = 500``); ``scale``: ``"prior"`` keeps the estimate's trace at the
    posterior mean's exact value ``sqrt(r d)`` when the labels do not see the scale of ``S``
    (hardmax), ``"free"`` leaves it to the iteration (docs/theory.md §4.2).
    """

    damping: float = 0.5
    tol: float = 1e-7
    max_iter: int = 500
    dtype: str = "float64"
    scale: str = "prior"
    #: Where the iterations run (:mod:`aimlib.core.backend`): ``"numpy"`` (CPU, numba) or an
    #: array-API backend (``"cupy"``, ``"torch"`` on a GPU).
    backend: str = "numpy"


@dataclass(frozen=True)
class GDOptions:
    """Options of :func:`aimlib.algorithms.gd.run` that an experiment's ``gd`` block may set
    (docs/theory.md §5: Adam, lr 0.1, 1000 steps, K = 32 initialisations for AGD)."""

    inits: int = 32
    steps: int = 1000
    lr: float = 0.1
    dtype: str = "float32"
    #: ``"steps"``: every initialisation runs ``steps`` Adam steps (the paper's protocol, and
    #: the default: the held-out rule fails its validation below the threshold, where GD's
    #: error still drifts by about a seed spread between steps 500 and 1000,
    #: docs/theory.md §5.1); ``"holdout"``: an initialisation stops when its loss on
    #: ``holdout`` n held-out samples fell by less than ``stop_tol`` of itself over
    #: ``stop_window`` steps.  ``steps`` caps both.
    stop: str = "steps"
    stop_window: int = 100
    stop_tol: float = 1e-2
    holdout: float = 0.25
    #: Steps at which the errors are recorded (``checkpoints`` log-spaced ones, 0: none).
    checkpoints: int = 0
    backend: str = "numpy"


@dataclass(frozen=True)
class SpectralOptions:
    """Options of :func:`aimlib.algorithms.spectral.run` that an experiment's ``spectral`` block may
    set: ``dtype``, the precision of the tokens and of the two products of its one pass."""

    dtype: str = "float64"


def resolve(cls, block: dict | None) -> dict:
    """The options of ``cls`` with a config block's values over the defaults (other keys of the
    block are ignored)."""
    block = block or {}
    return {f.name: block.get(f.name, f.default) for f in fields(cls)}


def defaults(cls) -> dict:
    """``{name: default}`` of an options class."""
    return asdict(cls())
