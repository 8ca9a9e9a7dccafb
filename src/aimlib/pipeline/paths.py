"""Where the workflow writes each result: one file-name template per kind of job.

The rules (``workflow/rules/common.smk``) fill these templates with Snakemake's wildcards; the
cost estimate and the progress report (:mod:`aimlib.pipeline.cost`,
:mod:`aimlib.pipeline.tracking`) fill them with the job plan's, so that a job of the DAG and a
job of the plan are matched by their output file.
"""

from __future__ import annotations

__all__ = ["SE_PATH", "SMALL_WIDTH_PATH", "THEORY_PATH", "DATA_PATH", "AGG_PATH",
           "FINITE_SIZE_PATH", "RECOVERY_PATH", "FIGURE_PATH", "CONFIG_RECORD_PATH", "data_path",
           "sweep_pattern", "recovery_files"]

#: One state-evolution curve of an experiment.
SE_PATH = "data/se/{experiment}/{channel}_T{T}{cpar}_rho{rho}_{variant}.nc"
#: The theory lines of one SE curve (:mod:`aimlib.theory.lines`) that its figure draws.
THEORY_PATH = "data/theory/{experiment}/{channel}_T{T}{cpar}_rho{rho}_{variant}.nc"
#: The hardmax rho -> 0 limit of an experiment.
SMALL_WIDTH_PATH = "data/se/{experiment}/small_width_{variant}.nc"
#: One data job: an algorithm at one point, every seed.
DATA_PATH = ("data/{algorithm}/{experiment}/{channel}_{variant}/"
             "T{T}{cpar}_rho{rho}_d{d}_alpha{alpha}.nc")
#: One aggregate over seeds (``kind``: ``amp``, ``gd``, ``agd``, ``spectral``).
AGG_PATH = "data/agg/{experiment}/{kind}_{channel}_{variant}_T{T}{cpar}_rho{rho}_d{d}.nc"
#: The finite-size fit of one aggregate kind.
FINITE_SIZE_PATH = "data/agg/{experiment}/finite_size_{method}.nc"
#: The measured perfect-recovery thresholds of one GD aggregate kind (``gd``, ``agd``).
RECOVERY_PATH = "data/agg/{experiment}/recovery_{kind}.nc"
#: A figure (``ext``: ``pdf`` or ``png``; the cost and progress count its ``pdf``).
FIGURE_PATH = "figures/{fig}.{ext}"
#: The resolved configuration next to the figures.
CONFIG_RECORD_PATH = "figures/config.yaml"


def sweep_pattern(number: str) -> str:
    """The regular expression of the swept options' part of a data group's ``{cpar}``
    (``-width0.5-optimizergd``): each option that an algorithm of the registry lets a block
    sweep, in declaration order, ``number`` for a numeric one and its choices for the others."""
    # not at the top: every job script imports paths; the registries load when needed
    from aimlib.algorithms import ALGORITHMS
    from aimlib.core.options import specs

    parts = []
    for alg in ALGORITHMS.values():
        for name, (_, spec) in specs(alg.OPTIONS).items():
            if spec.sweep:
                allowed = spec.allowed()
                value = "(" + "|".join(allowed) + ")" if allowed is not None else number
                parts.append(f"(-{name}{value})?")
    return "".join(parts)


def data_path(algorithm: str) -> str:
    """The data files of an algorithm (its name fixed, the point's wildcards left)."""
    return DATA_PATH.replace("{algorithm}", algorithm)


# ---------------------------------------------------------------------------------------------
# what each job reads: the rules' input functions and the cache check share these
# ---------------------------------------------------------------------------------------------
def se_files(plan, experiment: str) -> list[str]:
    """The SE curves of an experiment."""
    return [SE_PATH.format(**j.wildcards) for j in plan.se_for(experiment)]


def theory_jobs(plan, experiment: str, figures=None) -> list:
    """The SE curves of an experiment that get theory lines: those of the paper's cell (but the
    mismatched ones) when its figure's registry entry names lines, else none."""
    # not at the top: every job script imports paths; the registries load when needed
    from aimlib.theory.cells import DEFAULT_CELL

    if figures is None:
        from aimlib.figures.registry import FIGURES as figures
    spec = figures.get(experiment)
    if spec is None or not spec.theory:
        return []
    return [j for j in plan.se_for(experiment)
            if j.variant != "mismatched" and j.cell == DEFAULT_CELL]


def theory_files(plan, experiment: str, figures=None) -> list[str]:
    """The theory-line files of an experiment, one per SE curve of :func:`theory_jobs`."""
    return [THEORY_PATH.format(**j.wildcards) for j in theory_jobs(plan, experiment, figures)]


def agg_files(plan, experiment: str, kind: str) -> list[str]:
    """The aggregates of one kind (``amp``, ``gd``, ``agd``, ``spectral``) of an experiment."""
    # not at the top: every job script imports paths; the registries load when needed
    from aimlib.algorithms import algorithm_of_kind

    stage = algorithm_of_kind(kind).name
    return [AGG_PATH.format(kind=kind, **g.wildcards) for g in plan.groups(stage, experiment)]


def group_data_files(group) -> list[str]:
    """The data files of a group (one per alpha): the inputs of its aggregates."""
    # not at the top: every job script imports paths; the registries load when needed
    from aimlib.pipeline.grids import ffmt

    return [data_path(group.stage).format(alpha=ffmt(a), **group.wildcards)
            for a in group.alphas]


def finite_size_inputs(plan, experiment: str, method: str) -> dict[str, list[str]]:
    """The inputs of a finite-size fit: the experiment's SE curves and the method's
    aggregates."""
    return {"se": se_files(plan, experiment), "agg": agg_files(plan, experiment, method)}


def recovery_groups(plan, experiment: str) -> list[list[str]]:
    """The data files of each group of an experiment's GD stage: what its recovery thresholds
    are measured from (the job aggregates each group over its seeds in memory, so that no
    aggregate file is made for a figure that draws only thresholds)."""
    # not at the top: every job script imports paths; the registries load when needed
    from aimlib.pipeline.plan import RECOVERY_STAGE

    return [group_data_files(g) for g in plan.groups(RECOVERY_STAGE, experiment)]


def recovery_files(plan, experiment: str) -> list[str]:
    """The measured recovery thresholds of an experiment, one per GD aggregate kind."""
    return [RECOVERY_PATH.format(experiment=experiment, kind=k)
            for k in plan.recovery_kinds(experiment)]


def figure_inputs(plan, fig: str, figures=None) -> dict[str, list[str]]:
    """The named inputs of a figure: the cached results its registry entry asks for."""
    # not at the top: every job script imports paths; the registries load when needed
    from aimlib.algorithms import aggregate_kinds

    if figures is None:
        # not at the top: every job script imports paths; the registries load when needed
        from aimlib.figures.registry import FIGURES as figures
    small = plan.small_width(fig)
    available = {
        "se": lambda: se_files(plan, fig),
        **{kind: (lambda kind=kind: agg_files(plan, fig, kind)) for kind in aggregate_kinds()},
        "finite_size": lambda: [FINITE_SIZE_PATH.format(experiment=fig, method=m)
                                for m in plan.finite_size_methods(fig)],
        "small_width": lambda: ([SMALL_WIDTH_PATH.format(experiment=fig,
                                                         variant=small["variant"])]
                                if small else []),
        "theory": lambda: theory_files(plan, fig, figures),
        "recovery": lambda: recovery_files(plan, fig),
    }
    return {k: available[k]() for k in figures[fig].inputs}
