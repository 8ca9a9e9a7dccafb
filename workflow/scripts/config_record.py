"""Snakemake job: write the resolved configuration as YAML (for the report)."""

import os
import signal

# Ctrl-C while importing: exit quietly (nothing is written before job_log, which takes over)
signal.signal(signal.SIGINT, lambda *_: os._exit(130))

import yaml

from aimlib.pipeline.io import atomic_write_text
from aimlib.pipeline.jobs import end_job, job_log

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads, output=sm.output[0]) as log:
    atomic_write_text(sm.output[0], yaml.safe_dump(dict(sm.params.config), sort_keys=False))
    log.info("wrote %s", sm.output[0])

end_job()  # skip the interpreter's teardown (aimlib.pipeline.jobs.end_job)
