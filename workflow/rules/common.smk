# Helpers shared by the rules: config checks, file names, params. The logic lives in aimlib.config
# so that the tests exercise the same functions.
from aimlib import config as cfg
from aimlib import resources as res
from aimlib.captions import caption as figure_caption
from aimlib.io import code_version
from aimlib.jobs import resolved_config

cfg.check(config)

EXP = config["experiments"]
FLOAT = r"[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?"

# Figures that have a figure rule, in the order of the paper.
FIGURES = ["fig1a", "fig1b", "fig2a", "fig2b", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8"]


wildcard_constraints:
    experiment=r"[A-Za-z0-9_]+",
    fig="|".join(FIGURES),
    channel="softmax|hardmax",
    variant="exact|density|mismatched",
    T=r"[0-9]+",
    d=r"[0-9]+",
    rho=FLOAT,
    alpha=FLOAT,
    beta=FLOAT,


# ---------------------------------------------------------------------------------------------
# state evolution
# ---------------------------------------------------------------------------------------------
SE_PATH = "data/se/{experiment}/{channel}_T{T}_rho{rho}_{variant}.nc"
SMALL_WIDTH_PATH = "data/se/{experiment}/small_width_{variant}.nc"


def se_file(job):
    return SE_PATH.format(experiment=job["experiment"], channel=job["channel"], T=job["T"],
                          rho=cfg.ffmt(job["rho"]), variant=job["variant"])


def se_files(experiment):
    return [se_file(j) for j in cfg.se_jobs(config) if j["experiment"] == experiment]


def se_params(wildcards):
    """Everything an SE curve depends on: its own grid and the tolerance (not other rhos)."""
    return dict(
        alphas=cfg.se_alphas(config, wildcards.experiment, float(wildcards.rho), int(wildcards.T),
                             wildcards.channel),
        tol=float(config["se"]["tol"]),
    )


def small_width_params(wildcards):
    block = EXP[wildcards.experiment]["small_width"]
    return dict(alpha_bars=cfg.grid(block["alpha_bar"],
                                    f"experiments.{wildcards.experiment}.small_width.alpha_bar"),
                tol=float(config["se"]["tol"]))


# ---------------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------------
def figure_list():
    wanted = config.get("figures", FIGURES)
    return [f for f in FIGURES if f in EXP and f in wanted]


def figure_targets():
    return expand("figures/{fig}.{ext}", fig=figure_list(), ext=["pdf", "png"]) + [
        "figures/config.yaml"
    ]


def figure_inputs(wildcards):
    """Named inputs of a figure: its SE curves, AMP aggregates, the small-width limit."""
    exp = EXP[wildcards.fig]
    inputs = {"se": se_files(wildcards.fig), "amp": amp_agg_files(wildcards.fig),
              "gd": gd_agg_files(wildcards.fig, "gd"), "agd": gd_agg_files(wildcards.fig, "agd")}
    if "gap" in exp:
        inputs["finite_size"] = [FINITE_SIZE_PATH.format(experiment=wildcards.fig, method=m)
                                 for m in finite_size_methods(wildcards.fig)]
    if "small_width" in exp:
        inputs["small_width"] = SMALL_WIDTH_PATH.format(
            experiment=wildcards.fig, variant=exp["small_width"].get("variant", "exact"))
    return inputs


# ---------------------------------------------------------------------------------------------
# AMP
# ---------------------------------------------------------------------------------------------
AMP_PATH = "data/amp/{experiment}/{channel}_{variant}/T{T}_beta{beta}_rho{rho}_d{d}_alpha{alpha}.nc"
AMP_AGG_PATH = "data/agg/{experiment}/amp_{channel}_{variant}_T{T}_beta{beta}_rho{rho}_d{d}.nc"


def _group_wildcards(g):
    return dict(channel=g["channel"], variant=g["variant"], T=g["T"], beta=cfg.ffmt(g["beta"]),
                rho=cfg.ffmt(g["rho"]), d=g["d"])


def amp_agg_files(experiment):
    if "amp" not in EXP[experiment]:
        return []
    return [AMP_AGG_PATH.format(experiment=experiment, **_group_wildcards(g))
            for g in cfg.stage_groups(config, experiment, "amp")]


def _find_group(wildcards, stage):
    for g in cfg.stage_groups(config, wildcards.experiment, stage):
        if _group_wildcards(g) == dict(channel=wildcards.channel, variant=wildcards.variant,
                                       T=int(wildcards.T), beta=wildcards.beta,
                                       rho=wildcards.rho, d=int(wildcards.d)):
            return g
    raise ValueError(f"no {stage} group of {wildcards.experiment} matches {dict(wildcards)}")


def amp_agg_inputs(wildcards):
    g = _find_group(wildcards, "amp")
    return [AMP_PATH.format(experiment=wildcards.experiment, alpha=cfg.ffmt(a),
                            **_group_wildcards(g))
            for a in g["alphas"]]


def amp_params(wildcards):
    return cfg.amp_options(config, wildcards.experiment, int(wildcards.d))


def stage_seeds(stage):
    """Params callable: the seeds a data job runs (every seed of its point)."""

    def get(wildcards):
        return _find_group(wildcards, stage)["seeds"]

    return get


# ---------------------------------------------------------------------------------------------
# GD / AGD
# ---------------------------------------------------------------------------------------------
GD_PATH = "data/gd/{experiment}/{channel}_{variant}/T{T}_beta{beta}_rho{rho}_d{d}_alpha{alpha}.nc"
GD_AGG_PATH = "data/agg/{experiment}/{kind}_{channel}_{variant}_T{T}_beta{beta}_rho{rho}_d{d}.nc"


wildcard_constraints:
    kind="gd|agd",


def gd_agg_files(experiment, kind):
    if "gd" not in EXP[experiment]:
        return []
    return [GD_AGG_PATH.format(experiment=experiment, kind=kind, **_group_wildcards(g))
            for g in cfg.stage_groups(config, experiment, "gd")]


def gd_agg_inputs(wildcards):
    g = _find_group(wildcards, "gd")
    return [GD_PATH.format(experiment=wildcards.experiment, alpha=cfg.ffmt(a),
                           **_group_wildcards(g))
            for a in g["alphas"]]


def gd_params(wildcards):
    return cfg.gd_options(config, wildcards.experiment)


# ---------------------------------------------------------------------------------------------
# finite size: gaps to SE against d, for AMP and AGD
# ---------------------------------------------------------------------------------------------
FINITE_SIZE_PATH = "data/agg/{experiment}/finite_size_{method}.nc"


wildcard_constraints:
    method="amp|agd",


def finite_size_methods(experiment):
    exp = EXP[experiment]
    return [m for m, stage in (("amp", "amp"), ("agd", "gd")) if stage in exp]


def finite_size_inputs(wildcards):
    aggs = (amp_agg_files(wildcards.experiment) if wildcards.method == "amp"
            else gd_agg_files(wildcards.experiment, "agd"))
    return {"se": se_files(wildcards.experiment), "agg": aggs}


def finite_size_params(wildcards):
    gap = EXP[wildcards.experiment]["gap"]
    if wildcards.method == "agd":
        gd_channels = cfg.channels(EXP[wildcards.experiment], EXP[wildcards.experiment]["gd"])
        gap = {c: a for c, a in gap.items() if c in gd_channels}
    return {c: [cfg.fnum(a) for a in alphas] for c, alphas in gap.items()}


# ---------------------------------------------------------------------------------------------
# resources: computed from each job's d, T and n (aimlib.resources), scaled by the retry attempt
# ---------------------------------------------------------------------------------------------
def _dnT(wildcards):
    d, T = int(wildcards.d), int(wildcards.T)
    from aimlib.model import sizes

    r, n = sizes(float(wildcards.alpha), float(wildcards.rho), d)
    return d, n, T, r


def _amp_request(wildcards, attempt):
    d, n, T, _ = _dnT(wildcards)
    opts = cfg.amp_options(config, wildcards.experiment, d)
    return res.amp(d, n, T, wildcards.channel, dtype=opts["dtype"], max_iter=opts["max_iter"],
                   runs=len(_find_group(wildcards, "amp")["seeds"]), attempt=attempt)


def _gd_request(wildcards, attempt):
    d, n, T, r = _dnT(wildcards)
    opts = cfg.gd_options(config, wildcards.experiment)
    return res.gd(d, n, T, r, inits=opts["inits"], steps=opts["steps"], dtype=opts["dtype"],
                  runs=len(_find_group(wildcards, "gd")["seeds"]), attempt=attempt)


def _se_request(wildcards, attempt):
    return res.se(len(se_params(wildcards)["alphas"]), wildcards.channel, attempt=attempt)


def _light_request(wildcards, attempt):
    return res.light(attempt=attempt)


REQUESTS = {"amp": _amp_request, "gd": _gd_request, "se": _se_request,
            "light": _light_request}


def request(kind, field):
    """A Snakemake resource callable: ``field`` of the ``kind`` request of a job."""

    def get(wildcards, attempt=1):
        return getattr(REQUESTS[kind](wildcards, attempt), field)

    return get
