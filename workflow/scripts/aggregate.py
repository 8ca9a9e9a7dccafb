"""Snakemake job: aggregate runs over seeds (mean, std, number converged per alpha)."""

import os
import signal

# Ctrl-C while importing: exit quietly (nothing is written before job_log, which takes over)
signal.signal(signal.SIGINT, lambda *_: os._exit(130))

from aimlib.algorithms import ALGORITHMS
from aimlib.pipeline.aggregate import aggregate_runs
from aimlib.pipeline.io import read_cache, write_netcdf
from aimlib.pipeline.jobs import end_job, job_log, resolved_config

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads, output=sm.output[0]) as log:
    alg = ALGORITHMS[sm.params.algorithm]
    kind = sm.wildcards.kind
    runs = [read_cache(p) for p in sm.input]
    agg = aggregate_runs(runs, value=alg.AGGREGATES[kind], extras=alg.aggregate_extras(kind))
    agg.attrs["kind"] = kind
    log.info("%s: %d runs on %d alphas; converged %d", kind, len(runs), agg.sizes["alpha"],
             int(agg["n_converged"].sum()))
    write_netcdf(agg, sm.output[0], config=resolved_config(sm.config), version=sm.params.version)

end_job()  # skip the interpreter's teardown (aimlib.pipeline.jobs.end_job)
