# aimlib: every figure of "Bayes optimal learning of attention-indexed models" from one command.
#   snakemake --cores all                                  # the paper preset
#   snakemake --cores all --configfile config/quick.yaml   # a few minutes on a laptop
from snakemake.utils import min_version

min_version("9.0")

# A config file given on the command line replaces the paper preset instead of being merged into it.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


# One line naming the key, the value and the rule it breaks (the schema completed from the channel
# registry); then the library's defaults for what the config leaves out.
from aimlib.pipeline.config import check_schema, fill_defaults

check_schema(config, workflow.source_path("config/schema.yaml"))
fill_defaults(config)


report: "workflow/report/workflow.rst"



include: "workflow/rules/common.smk"
include: "workflow/rules/se.smk"
include: "workflow/rules/algorithms.smk"
include: "workflow/rules/figures.smk"


if workflow.is_main_process:
    # What the run costs, before the first job (and in a dry run): jobs and CPU-hours per figure.
    import sys

    from aimlib.pipeline.cost import estimate

    try:
        _cores = workflow._cores
    except Exception:
        _cores = None
    print(estimate(config).summary(_cores), file=sys.stderr)


onstart:
    # Compile the numba kernels once, before jobs start together and race to write the cache.
    from aimlib.pipeline.jobs import warm_numba_cache

    print(f"numba cache warm ({warm_numba_cache():.1f} s)")


rule all:
    input:
        figure_targets(),
    default_target: True
