"""Snakemake job: one state-evolution curve."""

import os
import signal

# Ctrl-C while importing: exit quietly (nothing is written before job_log, which takes over)
signal.signal(signal.SIGINT, lambda *_: os._exit(130))

from aimlib.channels import make_channel
from aimlib.pipeline.io import write_netcdf
from aimlib.pipeline.jobs import JobFailure, end_job, job_log, resolved_config
from aimlib.theory import cells, mismatched, state_evolution

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads, output=sm.output[0]) as log:
    w = sm.wildcards
    p = sm.params.se
    what = f"SE {w.channel} T={w.T}{w.cpar} rho={w.rho} {w.variant} ({w.experiment})"
    log.info("%s on %d alphas", what, len(p["alphas"]))
    if w.variant == "mismatched":  # the SE of AMP with the published (density) g_out
        ds = mismatched.curve(p["alphas"], float(w.rho), variant="density")
        ds.attrs["variant"] = "mismatched"
        ds = ds.assign_coords(alpha_bar=("alpha", ds["alpha"].values / float(w.rho)))
    else:  # any (prior, attention) cell; the paper's is state_evolution.curve
        ch = make_channel(w.channel, T=int(w.T), variant=w.variant, **p["channel_params"])
        ds = cells.curve(ch, p["alphas"], float(w.rho), tol=p["tol"], tokens=p["tokens"],
                         prior=p.get("prior", "tied"), attention=p.get("attention", "self"))
    ds.attrs["experiment"] = w.experiment
    bad = state_evolution.unconverged_points(ds)
    log.info("%d/%d points converged%s", ds.sizes["alpha"] - len(bad), ds.sizes["alpha"],
             f", {int(ds.iterations.sum())} SE evaluations" if "iterations" in ds else "")
    if bad and not p["allow_unconverged"]:
        raise JobFailure(
            f"{what}: {len(bad)} point(s) did not converge: {'; '.join(bad)}. Set "
            f"experiments.{w.experiment}.se.allow_unconverged: true to cache them anyway "
            "(figures draw them hollow, fits leave them out)")
    for line in bad:
        log.warning("not converged, kept as allowed: %s", line)
    write_netcdf(ds, sm.output[0], config=resolved_config(sm.config), version=sm.params.version)

end_job()  # skip the interpreter's teardown (aimlib.pipeline.jobs.end_job)
