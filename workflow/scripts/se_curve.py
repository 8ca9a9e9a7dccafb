"""Snakemake job: one state-evolution curve."""

from aimlib import state_evolution
from aimlib.io import write_netcdf
from aimlib.jobs import job_log, resolved_config

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads) as log:
    w = sm.wildcards
    p = sm.params.se
    log.info("SE %s T=%s rho=%s variant=%s on %d alphas", w.channel, w.T, w.rho, w.variant,
             len(p["alphas"]))
    ds = state_evolution.curve(w.channel, p["alphas"], float(w.rho), T=int(w.T),
                               variant=w.variant, tol=p["tol"])
    ds.attrs["experiment"] = w.experiment
    n_bad = int((ds.converged == 0).sum())
    log.info("converged %d/%d, first-order (starts disagree) at %d points, %d SE evaluations",
             ds.sizes["alpha"] - n_bad, ds.sizes["alpha"], int(ds.disagree.sum()),
             int(ds.iterations.sum()))
    write_netcdf(ds, sm.output[0], config=resolved_config(sm.config), version=sm.params.version)
