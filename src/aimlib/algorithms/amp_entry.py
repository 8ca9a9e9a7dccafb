"""The AMP entry of the algorithm registry: GAMP with the RIE denoiser
(:mod:`aimlib.algorithms.amp`, docs/theory.md §4)."""

from __future__ import annotations

from typing import ClassVar

from aimlib.algorithms.amp_options import AMP_MIN_D_PER_T, AMPOptions, amp_dtype
from aimlib.algorithms.protocol import Algorithm, outcome

__all__ = ["AMP"]

class AMP(Algorithm):
    name: ClassVar[str] = "amp"
    label: ClassVar[str] = "AMP"
    OPTIONS: ClassVar[type] = AMPOptions
    PROGRESS_UNIT: ClassVar[str] = "AMP iterations"
    CLI_HELP: ClassVar[str] = "AMP on teacher data drawn from a seed, next to its SE"
    CLI_DESCRIPTION: ClassVar[str] = (
        "Draws a teacher and n = alpha d^2 samples from --seed, runs AMP and prints its error next"
        " to the SE prediction. Exit status 3 if a run did not converge (its stop_reason says "
        "why).")
    CLI_EXAMPLE: ClassVar[str] = (
        "aimlib amp hardmax --rho 0.5 --alpha 0.4583 --d 100 --seed 0 --progress")
    NUMERICS: ClassVar[str] = "aimlib.algorithms.amp"
    #: cross-attention, tied or untied (the rectangular denoiser); untied self-attention has no
    #: Bayes-optimal denoiser (docs/theory.md §15.4)
    CELLS: ClassVar[tuple[tuple[str, str], ...]] = (("tied", "self"), ("tied", "cross"),
                                                    ("untied", "cross"))
    AGGREGATES: ClassVar[dict[str, str]] = {"amp": "error"}
    MIN_D_PER_T: ClassVar[int] = AMP_MIN_D_PER_T

    @classmethod
    def progress_total(cls, opts):
        return int(opts["max_iter"])

    @classmethod
    def progress(cls, bar, log):
        def report(it, err, step, q_hat):
            bar.update(1)
            bar.set_postfix(error=f"{err:.4f}", step=f"{step:.1e}", refresh=False)
            if it == 1 or it % 10 == 0:
                log.info("iteration %4d  error %.6f  step %.3e  q_hat %.5g", it, err, step,
                         q_hat)

        return report

    @classmethod
    def options(cls, block, d=None) -> dict:
        opts = super().options(block)
        if d is not None:
            opts["dtype"] = amp_dtype(opts["dtype"], int(d))
        return opts

    @classmethod
    def run(cls, data, *, variant="exact", progress=None, **opts):
        # when a run is made: the workflow imports the registry while it parses
        from aimlib.algorithms import amp

        return amp.run(data, variant=variant, progress=progress, **opts)

    @classmethod
    def resources(cls, d, n, T, r, channel, opts, *, runs=1, attempt=1):
        # when a run is made: the workflow imports the registry while it parses
        from aimlib.algorithms import resources as res

        return res.amp(d, n, T, channel, dtype=opts["dtype"], max_iter=opts["max_iter"],
                       backend=opts["backend"], runs=runs, attempt=attempt)

    @classmethod
    def seconds(cls, d, n, T, r, channel, opts) -> float:
        # when a run is made: the workflow imports the registry while it parses
        from aimlib.algorithms import resources as res

        return res.amp_seconds(d, n, T, channel, dtype=opts["dtype"], backend=opts["backend"],
                               iterations=res.expected_amp_iterations(channel, opts["max_iter"]))

    @classmethod
    def job(cls, data, variant, opts, log, progress=None):
        res = cls.run(data, variant=variant, progress=progress, **opts)
        log.info("seed %d: error %.6f after %d iterations (%d in all), %s, damping %.3f, "
                 "restarts %d", data.seed, res.error, res.iterations, res.total_iterations,
                 res.stop_reason, res.damping, res.restarts)
        return res.to_dataset().assign(**outcome(data, res.S_hat, log, "AMP"))

    @classmethod
    def cli_row(cls, res) -> dict:
        return {"error": res.error, "converged": res.converged, "stop_reason": res.stop_reason,
                "iterations": res.total_iterations}

