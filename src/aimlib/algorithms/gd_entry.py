"""The GD entry of the algorithm registry: full-batch Adam from K initialisations, plain GD
(the first) and averaged GD (their mean) (:mod:`aimlib.algorithms.gd`, docs/theory.md §5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from aimlib.algorithms.protocol import OUTCOME_EXTRAS, Algorithm, backend_option, outcome
from aimlib.core.options import option

__all__ = ["GD", "GDOptions", "STOP_RULES"]

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


class GD(Algorithm):
    name: ClassVar[str] = "gd"
    label: ClassVar[str] = "GD"
    OPTIONS: ClassVar[type] = GDOptions
    HAS_VARIANTS: ClassVar[bool] = False
    PROGRESS_UNIT: ClassVar[str] = "Adam steps"
    CLI_HELP: ClassVar[str] = "GD / averaged GD (Adam) on data drawn from a seed"
    CLI_DESCRIPTION: ClassVar[str] = (
        "Full-batch Adam from --inits initialisations on the same data (softmax, or --channel "
        "gaussian); prints the error of the first run (GD) and of the averaged estimate (AGD) next"
        " to SE.")
    CLI_EXAMPLE: ClassVar[str] = (
        "aimlib gd --rho 0.5 --T 2 --alpha-bar 0.5 --d 60 --inits 32 --progress")
    NUMERICS: ClassVar[str] = "aimlib.algorithms.gd"
    AGGREGATES: ClassVar[dict[str, str]] = {"gd": "error_gd", "agd": "error_agd"}

    @classmethod
    def supports(cls, channel_cls) -> bool:
        return bool(channel_cls.SUPPORTS_GD)

    @classmethod
    def progress_total(cls, opts):
        return int(opts["steps"])

    @classmethod
    def progress(cls, bar, log):
        def report(t, loss):
            log.info("step %5d  mean loss %.6e", t, loss)
            bar.n = t
            bar.set_postfix(loss=f"{loss:.3e}", refresh=False)
            bar.refresh()

        return report

    @classmethod
    def run(cls, data, *, variant="exact", progress=None, **opts):
        from aimlib.algorithms import gd

        return gd.run(data, progress=progress, **opts)

    @classmethod
    def resources(cls, d, n, T, r, channel, opts, *, runs=1, attempt=1):
        from aimlib.algorithms import resources as res

        return res.gd(d, n, T, r, inits=opts["inits"], steps=opts["steps"], dtype=opts["dtype"],
                      backend=opts["backend"], checkpoints=opts["checkpoints"], runs=runs,
                      attempt=attempt)

    @classmethod
    def seconds(cls, d, n, T, r, channel, opts) -> float:
        from aimlib.algorithms import resources as res

        return res.gd_seconds(d, n, T, r, inits=opts["inits"],
                              steps=res.gd_expected_steps(opts, channel, T, n / d**2, r / d),
                              dtype=opts["dtype"], backend=opts["backend"])

    @classmethod
    def job(cls, data, variant, opts, log, progress=None):
        res = cls.run(data, progress=progress, **opts)
        log.info("seed %d: GD error %.6f, AGD error %.6f over %d initialisations; steps taken "
                 "%d (GD), %.0f on average, %d of %d ran to the cap of %d", data.seed,
                 res.errors[0], res.error, len(res.errors), res.steps_taken[0],
                 float(np.mean(res.steps_taken)), int(res.capped.sum()), len(res.errors),
                 res.steps)
        extra = {**outcome(data, res.S_first, log, "GD", "_gd"),
                 **outcome(data, res.S_avg, log, "AGD", "_agd")}
        return res.to_dataset().assign(**extra)

    #: Per-run variables of each kind averaged next to the error: the test error and
    #: overlaps, the fraction of runs that ran to the step cap, the steps taken and the errors
    #: at the checkpoints (the step-budget figure).
    EXTRAS: ClassVar[tuple[str, ...]] = (*OUTCOME_EXTRAS, "capped", "steps_taken", "checkpoint")

    @classmethod
    def aggregate_extras(cls, kind: str) -> dict[str, str]:
        return {k: f"{k}_{kind}" for k in cls.EXTRAS}

    @classmethod
    def cli_row(cls, res) -> dict:
        return {"error_gd": float(res.errors[0]), "error_agd": res.error,
                "final_loss": float(np.nanmean(res.loss[res.steps_taken - 1,
                                                        np.arange(len(res.errors))])),
                "steps_taken": int(np.max(res.steps_taken)), "stop_reason": res.stop_reason}
