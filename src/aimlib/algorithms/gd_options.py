"""GD's options, each declared once (:mod:`aimlib.core.options`): the library's defaults and
checks (:func:`aimlib.algorithms.gd.run`), the config schema's ``gd`` block and ``aimlib gd``'s
flags come from here."""

from __future__ import annotations

from dataclasses import dataclass

from aimlib.algorithms.protocol import backend_option
from aimlib.core.options import option

__all__ = ["GDOptions", "STOP_RULES", "OPTIMIZERS"]

#: GD's stopping rules (docs/theory.md §5.1).
STOP_RULES = ("holdout", "steps")
#: GD's optimisers: the paper's Adam, and plain full-batch gradient descent (docs/theory.md §16).
OPTIMIZERS = ("adam", "gd")


@dataclass(frozen=True)
class GDOptions:
    """Options of :func:`aimlib.algorithms.gd.run` that an experiment's ``gd`` block and
    ``aimlib gd`` may set (docs/theory.md §5: Adam, lr 0.1, 1000 steps, K = 32 initialisations
    for AGD), each declared once (:mod:`aimlib.core.options`)."""

    inits: int = option(32, "initialisations K on the same data (AGD averages them)", ge=1,
                        cli_help="initialisations K")
    steps: int = option(1000, "optimiser steps (the cap under stop: holdout)", ge=1)
    lr: float = option(0.1, "Adam's learning rate", gt=0)
    optimizer: str = option(
        "adam", "adam: full-batch Adam (the paper's); gd: plain full-batch gradient descent "
        "with step `step_size`, the discretised gradient flow of the width conjecture "
        "(docs/theory.md §16)", choices=OPTIMIZERS, sweep=True)
    step_size: float = option(
        0.1, "plain gradient descent's step (optimizer: gd) in gradient-flow time: the step "
        "on the loss per unit of alpha, whose flow moves S by O(1) per unit time at any d "
        "(docs/theory.md §16.3; on the Gaussian channel stable to about 0.2 for a student as "
        "wide as the teacher; softmax's loss is flatter, 2 is stable there)", gt=0, sweep=True)
    width: float = option(
        None, "the student's rank ratio kappa = r_s / d (default: the teacher's, rho); wider "
        "than the teacher is the setting of the gradient-flow conjecture (docs/theory.md §16); "
        "narrower cannot represent the teacher, whose error then has a floor",
        type=float, gt=0, sweep=True)
    init_scale: float = option(
        1.0, "standard deviation of the students' initial entries (the paper's: 1; small "
        "values approach the small-initialisation limit)", gt=0, sweep=True)
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
