"""Snakemake job: the hardmax small-width limit curve."""

import os
import signal

# Ctrl-C while importing: exit quietly (nothing is written before job_log, which takes over)
signal.signal(signal.SIGINT, lambda *_: os._exit(130))

from aimlib.pipeline.io import write_netcdf
from aimlib.pipeline.jobs import JobFailure, end_job, job_log, resolved_config
from aimlib.theory import state_evolution

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads, output=sm.output[0]) as log:
    p = sm.params.se
    ds = state_evolution.small_width_curve(p["alpha_bars"], variant=sm.wildcards.variant,
                                           tol=p["tol"])
    log.info("small-width limit on %d points, threshold %.6f", ds.sizes["alpha_bar"],
             ds.attrs["threshold"])
    bad = state_evolution.unconverged_points(ds)
    if bad and not p["allow_unconverged"]:
        raise JobFailure(f"small-width limit ({sm.wildcards.experiment}): {len(bad)} point(s) "
                         f"did not converge: {'; '.join(bad)}. Set experiments."
                         f"{sm.wildcards.experiment}.se.allow_unconverged: true to cache them")
    write_netcdf(ds, sm.output[0], config=resolved_config(sm.config), version=sm.params.version)

end_job()  # skip the interpreter's teardown (aimlib.pipeline.jobs.end_job)
