"""The GD entry of the algorithm registry: full-batch Adam from K initialisations, plain GD
(the first) and averaged GD (their mean) (:mod:`aimlib.algorithms.gd`, docs/theory.md §5)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from aimlib.algorithms.gd_options import GDOptions
from aimlib.algorithms.protocol import OUTCOME_EXTRAS, Algorithm, outcome

__all__ = ["GD"]

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
    #: every cell: factor students, tied or untied (docs/theory.md §15.5)
    CELLS: ClassVar[tuple[tuple[str, str], ...]] = (("tied", "self"), ("tied", "cross"),
                                                    ("untied", "self"), ("untied", "cross"))
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
        # when a run is made: the workflow imports the registry while it parses
        from aimlib.algorithms import gd

        return gd.run(data, progress=progress, **opts)

    @classmethod
    def resources(cls, d, n, T, r, channel, opts, *, runs=1, attempt=1):
        # when a run is made: the workflow imports the registry while it parses
        from aimlib.algorithms import resources as res

        return res.gd(d, n, T, cls._rank(d, r, opts), inits=opts["inits"], steps=opts["steps"],
                      dtype=opts["dtype"],
                      backend=opts["backend"], checkpoints=opts["checkpoints"], runs=runs,
                      attempt=attempt)

    @staticmethod
    def _rank(d: int, r: int, opts: dict) -> int:
        """The student's rank for the cost: ``width d`` where set, else the teacher's."""
        width = opts.get("width")
        return r if width is None else max(1, round(float(width) * d))

    @classmethod
    def seconds(cls, d, n, T, r, channel, opts) -> float:
        # when a run is made: the workflow imports the registry while it parses
        from aimlib.algorithms import resources as res

        return res.gd_seconds(d, n, T, cls._rank(d, r, opts), inits=opts["inits"],
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
        ds = res.to_dataset().assign(**extra)
        ds.attrs["gd_student_rank"] = cls.student_rank(data, opts)  # the width it took
        return ds

    @staticmethod
    def student_rank(data, opts) -> int:
        """The student's rank a run with ``opts`` uses (``width``; the teacher's by default)."""
        # when a run is made: the workflow imports the registry while it parses
        from aimlib.algorithms.gd import student_rank

        return student_rank(data, opts.get("width"))

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
