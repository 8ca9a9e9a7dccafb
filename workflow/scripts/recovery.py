"""Snakemake job: GD's or AGD's measured perfect-recovery thresholds (docs/theory.md §16.4),
from the data files of each group of the GD stage, aggregated over their seeds here."""

import os
import signal

# Ctrl-C while importing: exit quietly (nothing is written before job_log, which takes over)
signal.signal(signal.SIGINT, lambda *_: os._exit(130))

import numpy as np

from aimlib.algorithms import ALGORITHMS
from aimlib.pipeline.aggregate import aggregate_runs
from aimlib.pipeline.io import read_cache, write_netcdf
from aimlib.pipeline.jobs import end_job, job_log, resolved_config
from aimlib.pipeline.plan import RECOVERY_STAGE
from aimlib.pipeline.recovery import recovery_dataset

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads, output=sm.output[0]) as log:
    alg, kind = ALGORITHMS[RECOVERY_STAGE], sm.wildcards.kind
    aggs = [aggregate_runs([read_cache(p) for p in files], value=alg.AGGREGATES[kind],
                           extras=alg.aggregate_extras(kind)) for files in sm.params.groups]
    ds = recovery_dataset(aggs, sm.params.options["eps"], kind)
    for g in range(ds.sizes["group"]):
        p = ds.isel(group=g)
        final = p["threshold"].isel(checkpoint=-1).values
        log.info("%s %s T=%d rho=%g d=%d kappa=%.3g %s: threshold %s after %d steps "
                 "(Bayes %.4g, conjecture %.4g)%s", kind, str(p["channel"].values),
                 int(p["T"]), float(p["rho"]), int(p["d"]), float(p["kappa"]),
                 str(p["optimizer"].values), np.array2string(final, precision=4),
                 int(ds["checkpoint"][-1]), float(p["bayes_alpha"]),
                 float(p["conjecture_alpha"]),
                 f"; {int(p['nonfinite'])} runs not finite" if int(p["nonfinite"]) else "")
    write_netcdf(ds, sm.output[0], config=resolved_config(sm.config), version=sm.params.version)

end_job()  # skip the interpreter's teardown (aimlib.pipeline.jobs.end_job)
