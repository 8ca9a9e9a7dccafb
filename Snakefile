# aimlib: every figure of "Bayes optimal learning of attention-indexed models" from one command.
#   snakemake --cores all --configfile config/quick.yaml   # every figure in about six minutes
#   snakemake --cores all                                  # the paper preset: a cluster job
from snakemake.utils import min_version

min_version("9.0")

# A config file given on the command line replaces the paper preset instead of being merged into it.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


# One line naming the key, the value and the rule it breaks (the schema completed from the channel
# registry); then the library's defaults for what the config leaves out.
import atexit
import os
import sys
import time

_STARTED = time.time()

from aimlib.pipeline.config import ConfigError, validate
from aimlib.pipeline.cost import dag_outputs, planned_jobs, print_run_cost, snakemake_mode
from aimlib.pipeline.integrity import repair
from aimlib.pipeline.jobs import warm_numba_cache
from aimlib.pipeline.tracking import checkout_commit, cores_given, end_of_run, start_run

try:
    validate(config, workflow.source_path("config/schema.yaml"))
except ConfigError as _e:
    # every mistake of the config at once, one line each, without a traceback
    sys.exit(f"aimlib: the configuration is not valid:\n{_e}")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/se.smk"
include: "workflow/rules/algorithms.smk"
include: "workflow/rules/figures.smk"


if workflow.is_main_process:
    _MODE = snakemake_mode(sys.argv)
    # No silent holes: corrupt caches moved aside, and whatever was made from a missing cache
    # removed, before Snakemake builds its DAG (it does not remake a missing intermediate file
    # on its own). A dry run, a report or a lint only says what a run would do.
    _JOBS = planned_jobs(config)
    _REPAIR = repair(_JOBS, dry_run=_MODE != "run")
    for _line in _REPAIR:
        print(_line, file=sys.stderr)
    if _MODE == "dry-run":
        # A dry run has no onstart: the cost of Snakemake's own job list (re-runs for changed
        # parameters or code included) is printed when it has listed them, at exit.
        atexit.register(print_run_cost, config, workflow, cores_given(workflow), _JOBS)


onstart:
    # The cost of the jobs this run will execute (Snakemake's DAG), recorded for the progress
    # lines the jobs print as they finish; a long local run waits 10 s before its first job.
    start_run(
        config,
        [str(f) for j in workflow.dag.needrun_jobs() for f in j.output],
        cores_given(workflow),
        log,
        local=workflow.local_exec,
        pause=config.get("pause_long_runs", True),
        # what made the results, for the figures' metadata (workflow/scripts/figure.py)
        made_by={
            "commit": checkout_commit(workflow.basedir),
            "configfiles": [os.path.relpath(c) for c in workflow.overwrite_configfiles or ()],
        },
    )
    # Compile the numba kernels once, before jobs start together and race to write the cache.
    print(f"numba cache warm ({warm_numba_cache():.1f} s)")


onsuccess:
    # What the run made, where it is, and the report command.
    print(
        end_of_run(
            dag_outputs(workflow) or (),
            workflow.overwrite_configfiles or (),
            started=_STARTED,
        ),
        file=sys.stderr,
    )


onerror:
    print(
        "aimlib: the run stopped (a job failed, or Ctrl-C). Finished results are kept and no "
        "cache is half-written: the same command resumes where it stopped.",
        file=sys.stderr,
    )


rule all:
    default_target: True
    input:
        figure_targets(),
