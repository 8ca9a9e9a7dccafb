"""Snakemake job: gaps to SE against d, their power-law fit and the d -> infinity extrapolation."""

import os
import signal

# Ctrl-C while importing: exit quietly (nothing is written before job_log, which takes over)
signal.signal(signal.SIGINT, lambda *_: os._exit(130))

from aimlib.pipeline.finite_size import gap_dataset
from aimlib.pipeline.io import read_cache, write_netcdf
from aimlib.pipeline.jobs import end_job, job_log, resolved_config

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads, output=sm.output[0]) as log:
    curves = [read_cache(p) for p in sm.input.se]
    aggs = [read_cache(p) for p in sm.input.agg]
    ds = gap_dataset(curves, aggs, sm.params.gap, kind=sm.wildcards.method)
    for i in range(ds.sizes["point"]):
        p = ds.isel(point=i)
        log.info("%s %s alpha=%g: SE %.5f, slope %.3f +- %.3f (chi2/dof %.2f), E_inf %.5f +- %.5f",
                 sm.wildcards.method, str(p["channel"].values), float(p["alpha"]),
                 float(p["se_error"]), float(p["slope"]), float(p["slope_err"]),
                 float(p["chi2_red"]), float(p["e_inf"]), float(p["e_inf_err"]))
    write_netcdf(ds, sm.output[0], config=resolved_config(sm.config), version=sm.params.version)

end_job()  # skip the interpreter's teardown (aimlib.pipeline.jobs.end_job)
