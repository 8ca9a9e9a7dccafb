"""Snakemake job: one algorithm of the registry at one point (channel, variant, T, parameter,
prior, attention, rho, d, alpha), every seed.

Each seed's teacher data are drawn here from the base seed and the point (bit for bit the same
as :func:`aimlib.model.generate` gives anywhere), so the point needs no teacher files.
"""

import os
import signal

# Ctrl-C while importing: exit quietly (nothing is written before job_log, which takes over)
signal.signal(signal.SIGINT, lambda *_: os._exit(130))

import sys

from aimlib import model
from aimlib.algorithms import ALGORITHMS
from aimlib.channels import make_channel
from aimlib.pipeline.aggregate import stack_seeds
from aimlib.pipeline.io import write_netcdf
from aimlib.pipeline.jobs import end_job, job_log, progress_callback, resolved_config
from aimlib.theory.cells import alpha_bar_factor

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads, output=sm.output[0]) as log:
    w = sm.wildcards
    alg = ALGORITHMS[sm.params.algorithm]
    job = sm.params.job
    opts = dict(job["options"])
    channel = make_channel(w.channel, T=int(w.T), **job["channel_params"])
    runs = []
    for seed in job["seeds"]:
        data = model.generate(channel, float(w.alpha), float(w.rho), None, int(w.d), seed,
                              base_seed=int(sm.params.base_seed), tokens=job["tokens"],
                              prior=job.get("prior", "tied"),
                              attention=job.get("attention", "self"))
        log.info("%s %s (%s) T=%d%s rho=%g d=%d alpha=%g seed=%d n=%d, options %s",
                 alg.label, data.channel, w.variant, data.T, w.cpar, data.rho, data.d,
                 data.alpha, seed, data.n, opts)
        with progress_callback(alg, sys.stderr, opts, seed, log) as progress:
            runs.append(alg.job(data, w.variant, opts, log, progress=progress))
    ds = stack_seeds(runs, job["seeds"])
    factor = alpha_bar_factor(channel, float(w.rho), prior=data.prior.name,
                              attention=data.attention)
    ds.attrs.update(channel=w.channel, variant=w.variant, T=int(w.T), rho=float(w.rho),
                    d=int(w.d), alpha=float(w.alpha), alpha_bar=float(w.alpha) * factor,
                    n=data.n, algorithm=alg.name,
                    **job["channel_params"],
                    **({"prior": data.prior.name, "attention": data.attention, "T_q": data.T_q}
                       if not data.tied_self else {}),
                    **data.token_law.attrs,
                    **alg.dataset_attrs(opts))
    write_netcdf(ds, sm.output[0], config=resolved_config(sm.config), version=sm.params.version)

end_job()  # skip the interpreter's teardown (aimlib.pipeline.jobs.end_job)
