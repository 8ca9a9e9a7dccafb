# Helpers shared by the rules: file names and lookups in the job plan. The logic lives in
# aimlib.config (the plan: every job's parameters, keyed by its wildcards) so that the tests
# exercise the same objects; nothing here reads the config directly.
from aimlib import config as cfg
from aimlib import resources as res
from aimlib.captions import FIGURES, caption as figure_caption
from aimlib.channels import CHANNELS
from aimlib.io import code_version
from aimlib.jobs import resolved_config

cfg.check(config)
PLAN = cfg.plan(config)
FLOAT = r"[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?"
# The channel parameter in file names: beta1.0, delta0.1, ...
CPAR = "(" + "|".join(sorted({c.PARAM or "beta" for c in CHANNELS.values()})) + ")" + FLOAT


def script_version(name):
    """Code version of a workflow script: the aimlib modules it imports, closed over imports."""
    return code_version(script=workflow.source_path(f"../scripts/{name}.py"))


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
SE_PATH = "data/se/{experiment}/{channel}_T{T}_{cpar}_rho{rho}_{variant}.nc"
SMALL_WIDTH_PATH = "data/se/{experiment}/small_width_{variant}.nc"


def se_files(experiment):
    return [SE_PATH.format(**j.wildcards) for j in PLAN.se_for(experiment)]


def se_params(wildcards):
    """Everything an SE curve depends on: its own grid, channel parameter and the tolerance."""
    job = PLAN.se(wildcards)
    return dict(alphas=list(job.alphas), channel_params=job.channel_params, tol=PLAN.se_tol,
                allow_unconverged=PLAN.allow_unconverged(job.experiment))


def small_width_params(wildcards):
    return dict(alpha_bars=PLAN.small_width(wildcards.experiment)["alpha_bars"],
                tol=PLAN.se_tol, allow_unconverged=PLAN.allow_unconverged(wildcards.experiment))


# ---------------------------------------------------------------------------------------------
# AMP and GD / AGD: one data job per alpha of a group, one aggregate per group
# ---------------------------------------------------------------------------------------------
AMP_PATH = "data/amp/{experiment}/{channel}_{variant}/T{T}_{cpar}_rho{rho}_d{d}_alpha{alpha}.nc"
AMP_AGG_PATH = "data/agg/{experiment}/amp_{channel}_{variant}_T{T}_{cpar}_rho{rho}_d{d}.nc"
GD_PATH = "data/gd/{experiment}/{channel}_{variant}/T{T}_{cpar}_rho{rho}_d{d}_alpha{alpha}.nc"
GD_AGG_PATH = "data/agg/{experiment}/{kind}_{channel}_{variant}_T{T}_{cpar}_rho{rho}_d{d}.nc"
DATA_PATHS = {"amp": AMP_PATH, "gd": GD_PATH}


wildcard_constraints:
    kind="gd|agd",


def agg_files(experiment, stage, kind=None):
    path = AMP_AGG_PATH if stage == "amp" else GD_AGG_PATH
    return [path.format(kind=kind, **g.wildcards) for g in PLAN.groups(stage, experiment)]


def agg_inputs(stage):
    """Input function of an aggregate: the group's data files, one per alpha."""

    def get(wildcards):
        g = PLAN.group(stage, wildcards)
        return [DATA_PATHS[stage].format(alpha=cfg.ffmt(a), **g.wildcards) for a in g.alphas]

    return get


def group_params(stage):
    """Params of a data job: the algorithm's options, its seeds and the channel parameter."""

    def get(wildcards):
        g = PLAN.group(stage, wildcards)
        opts = (PLAN.amp_options(g.experiment, g.d) if stage == "amp"
                else PLAN.gd_options(g.experiment))
        return dict(options=opts, seeds=list(g.seeds), channel_params=g.channel_params)

    return get


# ---------------------------------------------------------------------------------------------
# finite size: gaps to SE against d, for AMP and AGD
# ---------------------------------------------------------------------------------------------
FINITE_SIZE_PATH = "data/agg/{experiment}/finite_size_{method}.nc"


wildcard_constraints:
    method="amp|agd",


def finite_size_inputs(wildcards):
    aggs = (agg_files(wildcards.experiment, "amp") if wildcards.method == "amp"
            else agg_files(wildcards.experiment, "gd", "agd"))
    return {"se": se_files(wildcards.experiment), "agg": aggs}


# ---------------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------------
def figure_targets():
    return expand("figures/{fig}.{ext}", fig=PLAN.figure_list(FIGURES), ext=["pdf", "png"]) + [
        "figures/config.yaml"
    ]


def figure_inputs(wildcards):
    """Named inputs of a figure: the cached inputs its registry entry asks for."""
    fig = wildcards.fig
    small = PLAN.small_width(fig)
    available = {
        "se": lambda: se_files(fig),
        "amp": lambda: agg_files(fig, "amp"),
        "gd": lambda: agg_files(fig, "gd", "gd"),
        "agd": lambda: agg_files(fig, "gd", "agd"),
        "finite_size": lambda: [FINITE_SIZE_PATH.format(experiment=fig, method=m)
                                for m in PLAN.finite_size_methods(fig)],
        "small_width": lambda: ([SMALL_WIDTH_PATH.format(experiment=fig, variant=small["variant"])]
                                if small else []),
    }
    return {k: available[k]() for k in FIGURES[fig].inputs}


# ---------------------------------------------------------------------------------------------
# resources: computed from each job's d, T and n (aimlib.resources), scaled by the retry attempt
# ---------------------------------------------------------------------------------------------
def _amp_request(wildcards, attempt):
    g = PLAN.group("amp", wildcards)
    return res.amp_job(g, float(wildcards.alpha), PLAN.amp_options(g.experiment, g.d),
                       attempt=attempt)


def _gd_request(wildcards, attempt):
    g = PLAN.group("gd", wildcards)
    return res.gd_job(g, float(wildcards.alpha), PLAN.gd_options(g.experiment), attempt=attempt)


def _se_request(wildcards, attempt):
    return res.se(len(PLAN.se(wildcards).alphas), attempt=attempt)


def _light_request(wildcards, attempt):
    return res.light(attempt=attempt)


REQUESTS = {"amp": _amp_request, "gd": _gd_request, "se": _se_request,
            "light": _light_request}


def request(kind, field):
    """A Snakemake resource callable: ``field`` of the ``kind`` request of a job."""

    def get(wildcards, attempt=1):
        return getattr(REQUESTS[kind](wildcards, attempt), field)

    return get
