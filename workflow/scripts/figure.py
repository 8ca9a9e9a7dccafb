"""Snakemake job: draw one figure of the registry from its cached data."""

import os
import signal

# Ctrl-C while importing: exit quietly (nothing is written before job_log, which takes over)
signal.signal(signal.SIGINT, lambda *_: os._exit(130))

from aimlib import figures
from aimlib.pipeline.io import read_cache
from aimlib.pipeline.jobs import end_job, job_log
from aimlib.pipeline.tracking import run_provenance

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads, output=sm.output[0]) as log:
    inputs = {kind: [read_cache(p) for p in sm.input[kind]] for kind in sm.input.keys()}
    fig = figures.draw(sm.wildcards.fig, inputs, axes=sm.params.axes, style=sm.params.style)
    # what made it, in the files' metadata: the commit and config files the run recorded at its
    # start (not a parameter, so that a checkout elsewhere does not re-draw every figure)
    run = run_provenance(sm.output[0])
    made_by = figures.provenance(sm.wildcards.fig, run.get("configfiles", []), run.get("commit"))
    figures.save(fig, [sm.output.pdf, sm.output.png],
                 dpi=sm.params.style.get("dpi", figures.DEFAULT_STYLE["dpi"]),
                 provenance=made_by)
    log.info("wrote %s and %s", sm.output.pdf, sm.output.png)

end_job()  # skip the interpreter's teardown (aimlib.pipeline.jobs.end_job)
