"""GD's options, each declared once (:mod:`aimlib.core.options`): the library's defaults and
checks (:func:`aimlib.algorithms.gd.run`), the config schema's ``gd`` block and ``aimlib gd``'s
flags come from here."""

from __future__ import annotations

from dataclasses import dataclass

from aimlib.algorithms.protocol import backend_option
from aimlib.core.options import option

__all__ = ["GDOptions", "STOP_RULES"]

#: GD's stopping rules (docs/theory.md §5.1).
STOP_RULES = ("holdout", "steps")


@dataclass(frozen=True)
class GDOptions:
    """Options of :func:`aimlib.algorithms.gd.run` that an experiment's ``gd`` block and
    ``aimlib gd`` may set (docs/theory.md §5: Adam, lr 0.1, 1000 steps, K = 32 initialisations
    for AGD), each declared once (:mod:`aimlib.core.options`)."""

    inits: int = option(32, "initialisations K on the same data (AGD averages them)", ge=1,
                        cli_help="initialisations K")
    steps: int = option(1000, "Adam steps (the cap under stop: holdout)", ge=1)
    lr: float = option(0.1, "Adam's learning rate", gt=0)
    dtype: str = option(
        "float32", "precision of the tokens and of the two matrix products per Adam step "
        "(float32 is about twice as fast; its errors agree with float64 to about 1e-7, far "
        "inside the seed spread); parameters, Adam moments and the softmax stay float64",
        choices=("float64", "float32"), cli_help="precision of the tokens and matrix products")
    #: the default is the paper's protocol: the held-out rule fails its validation below the
    #: threshold, where GD's error still drifts by about a seed spread between steps 500 and
    #: 1000 (docs/theory.md §5.1)
    stop: str = option(
        "steps", "holdout: each initialisation stops when its loss on held-out samples stopped "
        "falling (docs/theory.md §5.1), steps capping it; steps: every initialisation runs "
        "`steps` steps (the paper's protocol)", choices=STOP_RULES)
    stop_window: int = option(100, "steps between two held-out tests (stop: holdout)", ge=1)
    stop_tol: float = option(
        1e-2, "relative fall of the held-out loss over a window below which an initialisation "
        "stops (stop: holdout)", gt=0)
    holdout: float = option(
        0.25, "held-out samples of the stopping test, a fraction of n (fresh draws of the "
        "teacher, never trained on)", gt=0, le=1)
    checkpoints: int = option(
        0, "record the GD and AGD errors at this many log-spaced steps (the step-budget "
        "figure); 0: none", ge=0, cli=False)
    backend: str = backend_option()
