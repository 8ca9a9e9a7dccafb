"""Snakemake job: teacher data for one (channel, T, beta, rho, d, alpha, seed)."""

from aimlib import model
from aimlib.io import save_teacher
from aimlib.jobs import job_log, resolved_config

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads) as log:
    w = sm.wildcards
    data = model.generate(w.channel, float(w.alpha), float(w.rho), int(w.T), int(w.d),
                          int(w.seed), beta=float(w.beta), base_seed=int(sm.params.base_seed))
    log.info("teacher %s T=%d d=%d r=%d n=%d", data.channel, data.T, data.d, data.r, data.n)
    save_teacher(data, sm.output[0], config=resolved_config(sm.config),
                 version=sm.params.version)
