"""Snakemake job: the theory lines a figure draws next to one SE curve."""

import os
import signal

# Ctrl-C while importing: exit quietly (nothing is written before job_log, which takes over)
signal.signal(signal.SIGINT, lambda *_: os._exit(130))

from aimlib.pipeline.io import read_cache, write_netcdf
from aimlib.pipeline.jobs import end_job, job_log, resolved_config
from aimlib.theory.lines import theory_curve

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads, output=sm.output[0]) as log:
    p = sm.params.theory
    se = read_cache(sm.input[0])
    ds = theory_curve(se, p["lines"], tokens=p["tokens"])
    ds.attrs["experiment"] = sm.wildcards.experiment
    log.info("theory lines %s on %d alphas of %s (%s left out: they do not apply)",
             ds.attrs["lines"] or "none", ds.sizes["alpha"], sm.input[0],
             " ".join(n for n in p["lines"] if n not in ds) or "none")
    write_netcdf(ds, sm.output[0], config=resolved_config(sm.config), version=sm.params.version)

end_job()  # skip the interpreter's teardown (aimlib.pipeline.jobs.end_job)
