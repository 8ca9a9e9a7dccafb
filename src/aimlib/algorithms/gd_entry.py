"""The GD entry of the algorithm registry: full-batch Adam from K initialisations, plain GD
(the first) and averaged GD (their mean) (:mod:`aimlib.gd`, docs/theory.md §5)."""

from __future__ import annotations

from typing import ClassVar

from aimlib.algorithms.protocol import OUTCOME_EXTRAS, Algorithm, outcome
from aimlib.core.options import GDOptions

__all__ = ["GD"]


class GD(Algorithm):
    name: ClassVar[str] = "gd"
    label: ClassVar[str] = "GD"
    OPTIONS: ClassVar[type] = GDOptions
    OPTION_SCHEMA: ClassVar[dict] = {
        "inits": {"type": "integer", "minimum": 1},
        "steps": {"type": "integer", "minimum": 1},
        "lr": {"$ref": "#/$defs/positive"},
        "dtype": {"description": "precision of the tokens and of the two matrix products per "
                                 "Adam step (float32 is about twice as fast; its errors agree "
                                 "with float64 to about 1e-7, far inside the seed spread); "
                                 "parameters, Adam moments and the softmax stay float64",
                  "enum": ["float64", "float32"]},
    }
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
                      runs=runs, attempt=attempt)

    @classmethod
    def seconds(cls, d, n, T, r, channel, opts) -> float:
        from aimlib.algorithms import resources as res

        return res.gd_seconds(d, n, T, r, inits=opts["inits"], steps=opts["steps"],
                              dtype=opts["dtype"])

    @classmethod
    def job(cls, data, variant, opts, log, progress=None):
        res = cls.run(data, progress=progress, **opts)
        log.info("seed %d: GD error %.6f, AGD error %.6f over %d initialisations", data.seed,
                 res.errors[0], res.error, len(res.errors))
        extra = {**outcome(data, res.S_first, log, "GD", "_gd"),
                 **outcome(data, res.S_avg, log, "AGD", "_agd")}
        return res.to_dataset().assign(**extra)

    @classmethod
    def aggregate_extras(cls, kind: str) -> dict[str, str]:
        return {k: f"{k}_{kind}" for k in OUTCOME_EXTRAS}

    @classmethod
    def add_cli_args(cls, p) -> None:
        p.add_argument("--inits", type=int, default=GDOptions.inits, help="initialisations K")
        p.add_argument("--steps", type=int, default=GDOptions.steps, help="Adam steps")
        p.add_argument("--lr", type=float, default=GDOptions.lr, help="learning rate")
        p.add_argument("--dtype", choices=("float32", "float64"), default=GDOptions.dtype,
                       help="precision of the tokens and matrix products")

    @classmethod
    def cli_row(cls, res) -> dict:
        return {"error_gd": float(res.errors[0]), "error_agd": res.error,
                "final_loss": float(res.loss[-1].mean())}
