"""The spectral entry of the algorithm registry: one AMP output pass from the prior's mean,
denoised by the RIE (:mod:`aimlib.algorithms.spectral`, docs/theory.md §4.1)."""

from __future__ import annotations

from typing import ClassVar

from aimlib.algorithms.amp_options import AMP_MIN_D_PER_T
from aimlib.algorithms.protocol import Algorithm, outcome
from aimlib.algorithms.spectral_options import SpectralOptions

__all__ = ["Spectral"]


#: Seconds per run of the one-step SE prediction: its first call in a job loads the SE's
#: kernels and tables, about 1.3 s of a 4-seed job beyond the model without it (fig2b's 10
#: spectral jobs at d = 300, two jobs at a time; ``benchmarks/README.md``).
ONE_STEP_SECONDS = 0.35


class Spectral(Algorithm):
    name: ClassVar[str] = "spectral"
    label: ClassVar[str] = "spectral"
    OPTIONS: ClassVar[type] = SpectralOptions
    CLI_HELP: ClassVar[str] = (
        "the spectral estimator (one AMP output pass, RIE-denoised) next to its one-step SE")
    CLI_DESCRIPTION: ClassVar[str] = (
        "Draws a teacher and n = alpha d^2 samples from --seed, computes the label-weighted matrix"
        " of AMP's output function at the prior's mean (sqrt(rho) I), denoises it with the RIE "
        "(AMP's first iteration) and prints its error next to the one-step SE prediction and "
        "the Bayes-optimal error.")
    CLI_EXAMPLE: ClassVar[str] = "aimlib spectral hardmax --rho 0.5 --alpha 1 --d 300 --seed 0"
    NUMERICS: ClassVar[str] = "aimlib.algorithms.spectral"
    #: the three exact cells (cross-attention: CrossOps' pass and the prior's denoiser)
    CELLS: ClassVar[tuple[tuple[str, str], ...]] = (("tied", "self"), ("tied", "cross"),
                                                    ("untied", "cross"))
    AGGREGATES: ClassVar[dict[str, str]] = {"spectral": "error"}
    MIN_D_PER_T: ClassVar[int] = AMP_MIN_D_PER_T

    @classmethod
    def run(cls, data, *, variant="exact", progress=None, **opts):
        # when a run is made: the workflow imports the registry while it parses
        from aimlib.algorithms import spectral

        return spectral.run(data, variant=variant, **opts)

    @classmethod
    def resources(cls, d, n, T, r, channel, opts, *, runs=1, attempt=1):
        # when a run is made: the workflow imports the registry while it parses
        from aimlib.algorithms import resources as res

        mem, threads, per_iter, setup = res.amp_model(d, n, T, channel, opts["dtype"], res.CHUNK)
        return res.request(mem, runs * (setup + per_iter), threads, attempt)

    @classmethod
    def seconds(cls, d, n, T, r, channel, opts) -> float:
        """AMP's set-up and one AMP iteration (:func:`aimlib.algorithms.resources.amp_model`):
        the pass is AMP's output step, and the eigendecomposition its RIE; and the one-step SE
        prediction (:data:`ONE_STEP_SECONDS`)."""
        # when a run is made: the workflow imports the registry while it parses
        from aimlib.algorithms import resources as res

        _, threads, per_iter, setup = res.amp_model(d, n, T, channel, opts["dtype"], res.CHUNK)
        return threads * (setup + per_iter) + ONE_STEP_SECONDS

    @classmethod
    def job(cls, data, variant, opts, log, progress=None):
        res = cls.run(data, variant=variant, **opts)
        pred = cls.prediction(data.ch.with_variant(variant), data.alpha, data.prior,
                              data.attention)
        log.info("seed %d: spectral error %.6f (one-step SE %.6f), q_hat %.5g", data.seed,
                 res.error, pred, res.q_hat)
        return res.to_dataset().assign(error_pred=pred, **outcome(data, res.S_hat, log,
                                                                 "spectral"))

    @classmethod
    def prediction(cls, channel, alpha: float, prior, attention: str = "self") -> float:
        """Its error predicted by one SE step from the prior's mean (docs/theory.md §4.1; in
        cross-attention §15.3)."""
        # when a run is made: the workflow imports the registry while it parses
        from aimlib.theory import cross_attention
        from aimlib.theory.state_evolution import one_step

        if attention == "cross":
            return cross_attention.one_step(channel, alpha, prior.rho, T_q=channel.T,
                                            T_k=channel.T, prior=prior)
        return one_step(channel, alpha, prior.rho, prior=prior)

    @classmethod
    def reference(cls, channel, alpha: float, prior, attention: str = "self") -> dict:
        return {"one_step_SE": cls.prediction(channel, alpha, prior, attention),
                **super().reference(channel, alpha, prior, attention)}

    @classmethod
    def cli_row(cls, res) -> dict:
        return {"error": res.error, "converged": res.converged, "q_hat": res.q_hat}
