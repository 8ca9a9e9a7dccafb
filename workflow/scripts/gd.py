"""Snakemake job: GD / AGD on one teacher-data file."""

import sys

import numpy as np
import xarray as xr

from aimlib import gd
from aimlib.io import load_teacher, write_netcdf
from aimlib.jobs import job_log, progress_bar, resolved_config

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads) as log:
    opts = dict(sm.params.gd)
    data = load_teacher(sm.input[0])
    log.info("GD T=%d beta=%g rho=%g d=%d alpha=%g seed=%d n=%d, options %s", data.T,
             data.beta, data.rho, data.d, data.alpha, data.seed, data.n, opts)
    with progress_bar(sys.stderr, int(opts["steps"]), "Adam steps") as bar:

        def progress(t, loss):
            log.info("step %5d  mean loss %.6e", t, loss)
            bar.n = t
            bar.set_postfix(loss=f"{loss:.3e}", refresh=False)
            bar.refresh()

        res = gd.run(data, progress=progress, **opts)
    log.info("GD error %.6f, AGD error %.6f over %d initialisations", res.errors[0], res.error,
             len(res.errors))
    every = max(1, res.steps // 200)
    ds = xr.Dataset(
        {
            "error_agd": ((), res.error),
            "error_gd": ((), float(res.errors[0])),
            "errors": ("init", res.errors),
            "converged": ((), np.int8(1)),
            "loss": (("step", "init"), res.loss[::every]),
        },
        coords={"init": np.arange(len(res.errors)), "step": np.arange(1, res.steps + 1)[::every]},
    )
    ds.attrs.update(channel=data.channel, variant="exact", T=data.T, beta=data.beta,
                    rho=data.rho, d=data.d, alpha=data.alpha, seed=data.seed, n=data.n,
                    **{f"gd_{k}": v for k, v in opts.items()})
    write_netcdf(ds, sm.output[0], config=resolved_config(sm.config), version=sm.params.version)
