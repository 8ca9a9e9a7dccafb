"""Snakemake job: one AMP run."""

import sys

import numpy as np
import xarray as xr

from aimlib import amp, resources
from aimlib.io import load_teacher, write_netcdf
from aimlib.jobs import job_log, progress_bar, resolved_config

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads) as log:
    w = sm.wildcards
    opts = dict(sm.params.amp)
    data = load_teacher(sm.input[0])
    log.info("AMP %s (%s) T=%d rho=%g d=%d alpha=%g seed=%d n=%d, options %s", data.channel,
             w.variant, data.T, data.rho, data.d, data.alpha, data.seed, data.n, opts)

    opts["dtype"] = np.dtype(opts["dtype"])
    with progress_bar(sys.stderr, int(opts["max_iter"]), "AMP iterations") as bar:

        def progress(it, err, step, q_hat):
            if it == 1:
                bar.reset()  # a restart begins a new attempt
            bar.update(1)
            bar.set_postfix(error=f"{err:.4f}", step=f"{step:.1e}", refresh=False)
            if it == 1 or it % 10 == 0:
                log.info("iteration %4d  error %.6f  step %.3e  q_hat %.5g", it, err, step,
                         q_hat)

        res = amp.run(data, variant=w.variant, progress=progress,
                      token_budget=resources.TOKEN_BUDGET, **opts)
    log.info("error %.6f after %d iterations, converged=%s, damping %.3f, restarts %d",
             res.error, res.iterations, res.converged, res.damping, res.restarts)
    h = res.history
    ds = xr.Dataset(
        {
            "error": ((), res.error),
            "converged": ((), np.int8(res.converged)),
            "iterations": ((), np.int64(res.iterations)),
            "q_hat": ((), res.q_hat),
            "damping_used": ((), res.damping),
            "restarts": ((), np.int64(res.restarts)),
            "error_history": ("iteration", h["error"]),
            "q_hat_history": ("iteration", h["q_hat"]),
            "step_history": ("iteration", h["step"]),
        },
        coords={"iteration": np.arange(1, len(h["error"]) + 1)},
    )
    ds.attrs.update(channel=data.channel, variant=w.variant, T=data.T, beta=data.beta,
                    rho=data.rho, d=data.d, alpha=data.alpha, seed=data.seed, n=data.n,
                    **{f"amp_{k}": str(v) if k == "dtype" else v for k, v in opts.items()})
    write_netcdf(ds, sm.output[0], config=resolved_config(sm.config), version=sm.params.version)
