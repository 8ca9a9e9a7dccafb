# Helpers shared by the rules: file names and lookups in the job plan. The logic lives in
# aimlib.pipeline (the plan: every job's parameters, keyed by its wildcards) so that the tests
# exercise the same objects; nothing here reads the config directly.
# Every output is update(): Snakemake keeps a previous file until its job replaces it (the jobs
# write atomically) and puts it back if the job fails or is interrupted, so that a stopped run
# removes nothing it did not replace.
from aimlib.pipeline import config as cfg
from aimlib.pipeline import cost
from aimlib.algorithms import resources as res
from aimlib.algorithms import ALGORITHMS, aggregate_kinds, algorithm_of_kind
from aimlib.figures.registry import FIGURES, caption as figure_caption
from aimlib.channels import CHANNELS
from aimlib.tokens import TOKEN_LAWS
from aimlib.model import ATTENTIONS
from aimlib.prior import DEFAULT as DEFAULT_PRIOR, PRIORS
from aimlib.pipeline.io import code_version
from aimlib.pipeline.jobs import resolved_config
from aimlib.pipeline import paths
from aimlib.pipeline.paths import (
    AGG_PATH,
    FINITE_SIZE_PATH,
    RECOVERY_PATH,
    SE_PATH,
    SMALL_WIDTH_PATH,
    THEORY_PATH,
    data_path,
)

PLAN = cfg.plan(config)
FLOAT = r"[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?"
# The model part of a file name after T{T}: the channel's parameter where it has one (_beta1.0,
# _delta0.1; nothing for hardmax), the prior and the attention beyond the paper's (-untied,
# -cross), then the token law where it is not Gaussian (-rademacher, _beta1.0-student_t10,
# -correlated0.3), then a data group's swept options (-width0.5-optimizergd); empty for
# hardmax with Gaussian tokens in the paper's model
CPAR = (
    "((_("
    + "|".join(sorted({c.PARAM for c in CHANNELS.values() if c.PARAM}))
    + ")"
    + FLOAT
    + ")?(-("
    + "|".join(p for p in PRIORS if p != DEFAULT_PRIOR)
    + "))?(-("
    + "|".join(a for a in ATTENTIONS if a != "self")
    + "))?(-("
    + "|".join(TOKEN_LAWS)
    + ")("
    + FLOAT
    + ")?)?"
    + paths.sweep_pattern(FLOAT)
    + ")"
)


def script_version(name):
    """Code version of a workflow script: the aimlib modules it imports, closed over imports."""
    return code_version(script=workflow.source_path(f"../scripts/{name}.py"))


def algorithm_version(algorithm, script):
    """Code version of one algorithm's jobs, run through ``script``: the script's imports
    without the whole registry, plus that algorithm's entry module (closed over its imports,
    lazy ones included), so that changing one algorithm re-runs only its own jobs."""
    entry = ALGORITHMS[algorithm].__module__.removeprefix("aimlib.")
    return code_version(
        entry, script=workflow.source_path(f"../scripts/{script}.py"), exclude=("algorithms",)
    )


wildcard_constraints:
    experiment=r"[A-Za-z0-9_]+",
    fig="|".join(FIGURES),
    channel="|".join(CHANNELS),
    variant="|".join(sorted({v for c in CHANNELS.values() for v in c.VARIANTS} | {"mismatched"})),
    T=r"[0-9]+",
    d=r"[0-9]+",
    cpar=CPAR,
    rho=FLOAT,
    alpha=FLOAT,


# ---------------------------------------------------------------------------------------------
# state evolution
# ---------------------------------------------------------------------------------------------
# SE_PATH, SMALL_WIDTH_PATH and the other file names: aimlib.pipeline.paths


def se_files(experiment):
    return paths.se_files(PLAN, experiment)


def se_params(wildcards):
    """Everything an SE curve depends on: its own grid, channel parameter and the tolerance."""
    job = PLAN.se(wildcards)
    return dict(
        **job.model_params,
        alphas=list(job.alphas),
        channel_params=job.channel_params,
        tokens=job.token_spec,
        tol=PLAN.se_tol,
        allow_unconverged=PLAN.allow_unconverged(job.experiment),
    )


def theory_params(wildcards):
    """What a curve's theory lines depend on: the lines its figure draws and the token law
    (the channel, prior and grid come with the SE curve it reads)."""
    return dict(
        lines=list(FIGURES[wildcards.experiment].theory),
        tokens=PLAN.se(wildcards).token_spec,
    )


def small_width_params(wildcards):
    return dict(
        alpha_bars=PLAN.small_width(wildcards.experiment)["alpha_bars"],
        tol=PLAN.se_tol,
        allow_unconverged=PLAN.allow_unconverged(wildcards.experiment),
    )


# ---------------------------------------------------------------------------------------------
# algorithms (aimlib.algorithms.ALGORITHMS): one data job per alpha of a group, one aggregate
# per group and aggregate kind (GD has two: gd, agd)
# ---------------------------------------------------------------------------------------------
wildcard_constraints:
    kind="|".join(aggregate_kinds()),


def agg_path(algorithm):
    """The aggregate files of an algorithm: ``kind`` limited to its own kinds."""
    kinds = "|".join(ALGORITHMS[algorithm].AGGREGATES)
    return AGG_PATH.replace("{kind}", f"{{kind,{kinds}}}")


def agg_files(experiment, kind):
    """The aggregate files of one kind (``amp``, ``gd``, ``agd``, ``spectral``) of an
    experiment."""
    return paths.agg_files(PLAN, experiment, kind)


def agg_inputs(stage):
    """Input function of an aggregate: the group's data files, one per alpha."""

    def get(wildcards):
        return paths.group_data_files(PLAN.group(stage, wildcards))

    return get


def group_params(stage):
    """Params of a data job: the algorithm's options, its seeds and the channel parameter."""

    def get(wildcards):
        g = PLAN.group(stage, wildcards)
        return dict(
            options=PLAN.group_options(g),
            seeds=list(g.seeds),
            channel_params=g.channel_params,
            tokens=g.token_spec,
            **g.model_params,
        )

    return get


# ---------------------------------------------------------------------------------------------
# finite size: gaps to SE against d, for AMP and AGD
# ---------------------------------------------------------------------------------------------
wildcard_constraints:
    method="|".join(cfg.FINITE_SIZE_KINDS),


def finite_size_inputs(wildcards):
    return paths.finite_size_inputs(PLAN, wildcards.experiment, wildcards.method)


# ---------------------------------------------------------------------------------------------
# recovery: GD's and AGD's measured perfect-recovery thresholds
# ---------------------------------------------------------------------------------------------
def recovery_groups(wildcards):
    """The data files of each GD group of the experiment (the job aggregates them itself)."""
    return paths.recovery_groups(PLAN, wildcards.experiment)


def recovery_inputs(wildcards):
    return [f for g in recovery_groups(wildcards) for f in g]


# ---------------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------------
def figure_targets():
    return expand("figures/{fig}.{ext}", fig=PLAN.figure_list(FIGURES), ext=["pdf", "png"]) + [
        "figures/config.yaml"
    ]


def figure_inputs(wildcards):
    """Named inputs of a figure: the cached inputs its registry entry asks for."""
    return paths.figure_inputs(PLAN, wildcards.fig, FIGURES)


# ---------------------------------------------------------------------------------------------
# resources: computed from each job's d, T and n (aimlib.algorithms.resources), scaled by the retry attempt
# ---------------------------------------------------------------------------------------------
def _data_request(stage):
    def get(wildcards, attempt):
        g = PLAN.group(stage, wildcards)
        return cost.data_job(g, float(wildcards.alpha), PLAN.group_options(g), attempt=attempt)

    return get


def _se_request(wildcards, attempt):
    return res.se(len(PLAN.se(wildcards).alphas), attempt=attempt)


def _light_request(wildcards, attempt):
    return res.light(attempt=attempt)


REQUESTS = {
    **{name: _data_request(name) for name in ALGORITHMS},
    "se": _se_request,
    "light": _light_request,
}


def request(kind, field):
    """A Snakemake resource callable: ``field`` of the ``kind`` request of a job."""

    def get(wildcards, attempt=1):
        return getattr(REQUESTS[kind](wildcards, attempt), field)

    return get
