"""The spectral entry of the algorithm registry: one AMP output pass from ``S_hat = 0``,
denoised by the RIE (:mod:`aimlib.spectral`, docs/theory.md §4.1)."""

from __future__ import annotations

from typing import ClassVar

from aimlib.algorithms.protocol import Algorithm, outcome
from aimlib.core.options import SpectralOptions

__all__ = ["Spectral"]


class Spectral(Algorithm):
    name: ClassVar[str] = "spectral"
    label: ClassVar[str] = "spectral"
    OPTIONS: ClassVar[type] = SpectralOptions
    OPTION_SCHEMA: ClassVar[dict] = {
        "dtype": {"description": "precision of the tokens and of the two products of its one "
                                 "pass over the data", "enum": ["float64", "float32"]},
    }
    CLI_HELP: ClassVar[str] = (
        "the spectral estimator (one AMP output pass, RIE-denoised) next to its one-step SE")
    CLI_DESCRIPTION: ClassVar[str] = (
        "Draws a teacher and n = alpha d^2 samples from --seed, computes the label-weighted matrix"
        " of AMP's output function at S_hat = 0, denoises it with the RIE and prints its error "
        "next to the one-step SE prediction and the Bayes-optimal error.")
    CLI_EXAMPLE: ClassVar[str] = "aimlib spectral hardmax --rho 0.5 --alpha 1 --d 300 --seed 0"
    NUMERICS: ClassVar[str] = "aimlib.algorithms.spectral"
    AGGREGATES: ClassVar[dict[str, str]] = {"spectral": "error"}
    MIN_D_PER_T: ClassVar[int] = 5

    @classmethod
    def run(cls, data, *, variant="exact", progress=None, **opts):
        from aimlib.algorithms import spectral

        return spectral.run(data, variant=variant, **opts)

    @classmethod
    def _model(cls, d, n, T, opts):
        from aimlib.algorithms import resources as res

        item = 4 if opts["dtype"] == "float32" else 8
        tokens = n * T * d * item
        m = min(n, res.CHUNK)
        in_memory = tokens <= res.TOKEN_BUDGET
        mem = (tokens if in_memory else 0) + 3 * m * T * d * 8 + 6 * n * T * T * 8 \
            + 8 * d * d * 8
        seconds = (2.0 * n * T * d * d / res.GEMM_RATE[opts["dtype"]] + 5e-10 * d**3
                   + res.teacher_seconds(d, n, T))
        return mem, seconds

    @classmethod
    def resources(cls, d, n, T, r, channel, opts, *, runs=1, attempt=1):
        from aimlib.algorithms import resources as res
        from aimlib.channels import CHANNELS

        mem, seconds = cls._model(d, n, T, opts)
        return res.request(mem, runs * (seconds + CHANNELS[channel].G_OUT_SECONDS * n),
                           1, attempt)

    @classmethod
    def seconds(cls, d, n, T, r, channel, opts) -> float:
        from aimlib.channels import CHANNELS

        return cls._model(d, n, T, opts)[1] + CHANNELS[channel].G_OUT_SECONDS * n

    @classmethod
    def job(cls, data, variant, opts, log, progress=None):
        from aimlib.theory.state_evolution import one_step

        res = cls.run(data, variant=variant, **opts)
        params = {k: v for k, v in data.ch.params.items() if k != "T"}
        if variant != "exact":
            params["variant"] = variant
        pred = one_step(data.channel, data.alpha, data.rho, data.T, **params)
        log.info("seed %d: spectral error %.6f (one-step SE %.6f), q_hat %.5g", data.seed,
                 res.error, pred, res.q_hat)
        return res.to_dataset().assign(error_pred=pred, **outcome(data, res.S_hat, log,
                                                                 "spectral"))

    @classmethod
    def add_cli_args(cls, p) -> None:
        p.add_argument("--dtype", choices=("float64", "float32"), default=SpectralOptions.dtype,
                       help="precision of the tokens and of the two products")

    @classmethod
    def reference(cls, channel, alpha, rho, T, variant, cparams) -> dict:
        from aimlib.theory.state_evolution import one_step

        kw = dict(cparams, **({"variant": variant} if variant != "exact" else {}))
        return {"one_step_SE": one_step(channel, alpha, rho, T, **kw),
                **super().reference(channel, alpha, rho, T, variant, cparams)}

    @classmethod
    def cli_row(cls, res) -> dict:
        return {"error": res.error, "converged": res.converged, "q_hat": res.q_hat}
