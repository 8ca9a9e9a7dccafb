"""Snakemake job: GD / AGD at one point (T, beta, rho, d, alpha), every seed.

Each seed's teacher data are drawn here from the base seed and the point (bit for bit the same
as :func:`aimlib.model.generate` gives anywhere), so the point needs no teacher files.
"""

import sys

import numpy as np
import xarray as xr

from aimlib import gd, generalisation, model
from aimlib.aggregate import stack_seeds
from aimlib.io import write_netcdf
from aimlib.jobs import job_log, progress_bar, resolved_config

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads) as log:
    w = sm.wildcards
    opts = dict(sm.params.gd)
    seeds = [int(s) for s in sm.params.seeds]
    runs = []
    for seed in seeds:
        data = model.generate(w.channel, float(w.alpha), float(w.rho), int(w.T), int(w.d), seed,
                              beta=float(w.beta), base_seed=int(sm.params.base_seed))
        log.info("GD T=%d beta=%g rho=%g d=%d alpha=%g seed=%d n=%d, options %s", data.T,
                 data.beta, data.rho, data.d, data.alpha, seed, data.n, opts)
        with progress_bar(sys.stderr, int(opts["steps"]), f"Adam steps, seed {seed}") as bar:

            def progress(t, loss, bar=bar):
                log.info("step %5d  mean loss %.6e", t, loss)
                bar.n = t
                bar.set_postfix(loss=f"{loss:.3e}", refresh=False)
                bar.refresh()

            res = gd.run(data, progress=progress, **opts)
        log.info("seed %d: GD error %.6f, AGD error %.6f over %d initialisations", seed,
                 res.errors[0], res.error, len(res.errors))
        every = max(1, res.steps // 200)
        # each estimate on fresh samples, next to the prediction from its overlaps (fig8)
        ev = {k: generalisation.evaluate(data, S) for k, S in (("gd", res.S_first),
                                                                ("agd", res.S_avg))}
        for k, e in ev.items():
            log.info("seed %d: %s test error %.5f +- %.5f (Gaussian prediction from m = %.4f, "
                     "Q = %.4f: %.5f)", seed, k.upper(), e.measured, e.measured_sem, e.m, e.Q,
                     e.predicted)
        extra = {f"{name}_{k}": ((), float(getattr(e, attr))) for k, e in ev.items()
                 for name, attr in (("m", "m"), ("Q", "Q"), ("test_error", "measured"),
                                    ("test_error_sem", "measured_sem"),
                                    ("test_error_pred", "predicted"))}
        extra["Q0"] = ((), ev["gd"].Q0)
        runs.append(xr.Dataset(
            {
                "error_agd": ((), res.error),
                "error_gd": ((), float(res.errors[0])),
                "errors": ("init", res.errors),
                # GD runs a fixed number of Adam steps: there is no convergence test to fail.
                "converged": ((), np.int8(1)),
                "loss": (("step", "init"), res.loss[::every]),
                **extra,
            },
            coords={"init": np.arange(len(res.errors)),
                    "step": np.arange(1, res.steps + 1)[::every]},
        ))
    ds = stack_seeds(runs, seeds)
    ds.attrs.update(channel=w.channel, variant="exact", T=int(w.T), beta=float(w.beta),
                    rho=float(w.rho), d=int(w.d), alpha=float(w.alpha), n=data.n,
                    **{f"gd_{k}": v for k, v in opts.items()})
    write_netcdf(ds, sm.output[0], config=resolved_config(sm.config), version=sm.params.version)
