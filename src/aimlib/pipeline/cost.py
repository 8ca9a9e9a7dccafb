"""What a configuration costs: jobs and CPU-hours per figure, and each data job's request,
from the job plan (:mod:`aimlib.pipeline.config`) and the algorithm registry's per-run models
(:mod:`aimlib.algorithms`, :mod:`aimlib.algorithms.resources`).

:func:`planned_jobs` lists every job of a configuration with its output file and its expected
seconds; :func:`estimate` adds them up, over every job or over the jobs of one run (those whose
outputs Snakemake's DAG will write: :func:`run_cost`).  The Snakefile prints it before the first
job, and a dry run after Snakemake's job list; the workflow's resource requests come from
:func:`data_job`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from aimlib.algorithms import ALGORITHMS
from aimlib.algorithms.resources import Resources
from aimlib.channels import CHANNELS
from aimlib.figures.registry import FIGURES
from aimlib.model import sizes
from aimlib.pipeline import config as cfg
from aimlib.pipeline import paths

__all__ = ["CostEstimate", "PlannedJob", "estimate", "planned_jobs",
           "run_cost", "print_run_cost", "dag_outputs", "run_scope", "format_hours",
           "snakemake_mode", "data_job",
           "JOB_STARTUP_SECONDS", "SE_POINT_SECONDS", "THEORY_POINT_SECONDS"]

#: CPU-seconds of start-up per job (interpreter, Snakemake's script header, imports, numba
#: cache loading): 0.66 measured over the quick preset's 288 jobs (benchmarks/README.md, "The
#: quick preset's CPU"), rounded up.
JOB_STARTUP_SECONDS = 0.8
#: Seconds of one theory line at one alpha (:mod:`aimlib.theory.lines`; the test errors' quadrature
#: is the costliest, about 0.02 s at T = 2).
THEORY_POINT_SECONDS = 0.02
#: Seconds of one SE fixed point (``benchmarks/README.md``: a 128-point curve in about 0.4 s).
SE_POINT_SECONDS = 0.004


def data_job(group, alpha: float, opts: dict, *, attempt: int = 1) -> Resources:
    """Request of one data job of the plan: ``group`` (:class:`aimlib.pipeline.config.Group`, whose
    ``stage`` names its algorithm) at ``alpha``, every seed, with the experiment's options."""
    r, n = sizes(alpha, group.rho, group.d)
    return ALGORITHMS[group.stage].resources(group.d, n, group.T, r, group.channel, opts,
                                             runs=len(group.seeds), attempt=attempt)


@dataclass(frozen=True)
class PlannedJob:
    """One job of the plan: the file it writes, the figure (experiment) it belongs to, the
    stage it is counted in (``SE``, an algorithm's label, ``figure`` ...), and its expected
    seconds besides start-up (GPU-seconds where ``gpu``)."""

    output: str
    experiment: str | None
    stage: str
    seconds: float = 0.0
    gpu: bool = False
    #: The files it reads (the rule's inputs): a data job and an SE curve read none.
    inputs: tuple[str, ...] = ()
    #: Its other outputs (a figure's PNG).
    extra_outputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class CostEstimate:
    """Estimated cost of the jobs of a configuration (all of them, or one run's), per
    experiment (figure).

    ``jobs[name]`` and ``cpu_hours[name]`` per experiment, with ``by_stage[name]`` the CPU-hours
    of its SE, AMP and GD stages (start-up included); ``shared_jobs`` counts the jobs that belong
    to no figure (the resolved-config record).
    """

    jobs: dict
    cpu_hours: dict
    by_stage: dict
    shared_jobs: int = 1
    #: GPU-hours per experiment: its runs on a GPU backend (drawing their data counted in).
    gpu_hours: dict | None = None
    #: What the jobs are: ``"from an empty cache"`` or which jobs of this run.
    scope: str = "from an empty cache"

    @property
    def total_jobs(self) -> int:
        return sum(self.jobs.values()) + self.shared_jobs

    def wall_hours(self, cores: int) -> float:
        """Wall time at ``cores`` cores, if every job kept one core busy (a lower bound)."""
        return sum(self.cpu_hours.values()) / max(1, int(cores))

    def summary(self, cores: int | None = None) -> str:
        """A few lines for the console: jobs and CPU time per figure, total, wall time (in
        CPU-minutes and minutes where the total is below an hour)."""
        total = sum(self.cpu_hours.values())
        unit, scale = ("CPU-h", 1.0) if total >= 1 else ("CPU-min", 60.0)
        lines = [f"aimlib: estimated cost {self.scope} (aimlib.pipeline.cost.estimate)"]
        gpu = self.gpu_hours or {}
        for name in self.jobs:
            if not self.jobs[name]:
                continue
            stages = ", ".join(f"{k} {v * scale:.2f}" for k, v in self.by_stage[name].items()
                               if v)
            g = f"  {gpu[name]:6.2f} GPU-h" if gpu.get(name) else ""
            lines.append(f"  {name:<9} {self.jobs[name]:>5} jobs  "
                         f"{self.cpu_hours[name] * scale:9.2f} {unit}{g}  ({stages})")
        g = f"  {sum(gpu.values()):6.2f} GPU-h" if any(gpu.values()) else ""
        lines.append(f"  {'total':<9} {self.total_jobs:>5} jobs  {total * scale:9.2f} {unit}{g}")
        if cores:
            lines.append(f"  wall time at {cores} cores: about "
                         f"{format_hours(self.wall_hours(cores))} (SE curves and figures first)")
        return "\n".join(lines)


def format_hours(hours: float) -> str:
    """A duration for a person: seconds below a minute, minutes below an hour, else hours."""
    if not hours >= 0:  # NaN or negative: say so rather than print a number
        return "unknown"
    if hours < 1 / 60:
        return f"{round(hours * 3600):d} s"
    if hours < 1:
        return f"{round(hours * 60):d} min"
    return f"{hours:.1f} h"


def planned_jobs(config: dict) -> list[PlannedJob]:
    """Every job a configuration implies, with its output file and expected seconds.

    SE: ``SE_POINT_SECONDS`` per fixed point (two starts); each algorithm's runs from its own
    model (:meth:`aimlib.algorithms.Algorithm.seconds`: AMP at its channel's ``AMP_ITERATIONS``
    iterations); aggregates, fits, figures and the config record: start-up only
    (``JOB_STARTUP_SECONDS`` per job is added by :func:`estimate`).  A figure counts once (its
    PDF), every experiment has one, as the figure rule writes it.
    """
    exps = config["experiments"]
    plan = cfg.plan(config)
    out = [PlannedJob(paths.CONFIG_RECORD_PATH, None, "config")]
    for j in plan.se_jobs:
        per = _se_point_seconds(j)
        out.append(PlannedJob(paths.SE_PATH.format(**j.wildcards), j.experiment, "SE",
                              2 * len(j.alphas) * per))
    for name in exps:
        for j in paths.theory_jobs(plan, name, FIGURES):
            se_file = paths.SE_PATH.format(**j.wildcards)
            out.append(PlannedJob(paths.THEORY_PATH.format(**j.wildcards), name, "SE",
                                  len(FIGURES[name].theory) * len(j.alphas)
                                  * THEORY_POINT_SECONDS, inputs=(se_file,)))
        fig_inputs = (tuple(f for fs in paths.figure_inputs(plan, name, FIGURES).values()
                            for f in fs) if name in FIGURES else ())
        out.append(PlannedJob(paths.FIGURE_PATH.format(fig=name, ext="pdf"), name, "figure",
                              inputs=fig_inputs,
                              extra_outputs=(paths.FIGURE_PATH.format(fig=name, ext="png"),)))
        small = plan.small_width(name)
        if small:
            out.append(PlannedJob(paths.SMALL_WIDTH_PATH.format(experiment=name,
                                                                variant=small["variant"]),
                                  name, "SE"))
        for m in plan.finite_size_methods(name):
            fs_inputs = paths.finite_size_inputs(plan, name, m)
            out.append(PlannedJob(paths.FINITE_SIZE_PATH.format(experiment=name, method=m),
                                  name, "fit", inputs=(*fs_inputs["se"], *fs_inputs["agg"])))
        for kind in plan.recovery_kinds(name):
            out.append(PlannedJob(paths.RECOVERY_PATH.format(experiment=name, kind=kind), name,
                                  "fit", inputs=tuple(f for g in paths.recovery_groups(plan, name)
                                                      for f in g)))
        for stage, alg in ALGORITHMS.items():
            for g in plan.groups(stage, name):
                data_files = tuple(paths.group_data_files(g))
                for kind in plan.aggregate_kinds(stage, name, FIGURES):
                    out.append(PlannedJob(paths.AGG_PATH.format(kind=kind, **g.wildcards), name,
                                          alg.label, inputs=data_files))
                opts = plan.group_options(g)
                on_gpu = alg.uses_gpu(opts)
                for alpha in g.alphas:
                    r, n = sizes(alpha, g.rho, g.d)
                    t = len(g.seeds) * alg.seconds(g.d, n, g.T, r, g.channel, opts)
                    out.append(PlannedJob(
                        paths.data_path(stage).format(alpha=cfg.ffmt(alpha), **g.wildcards),
                        name, alg.label, t, on_gpu))
    return out


def _se_point_seconds(job) -> float:
    """Seconds of one SE fixed point of an SE job: the channel's own figure where it has one
    (hardmax at T >= 3), else :data:`SE_POINT_SECONDS`."""
    if job.variant == "mismatched":
        return SE_POINT_SECONDS
    cls = CHANNELS[job.channel]
    ch = cls(T=job.T, **cls.param_kwargs(job.param))
    return ch.se_point_seconds() or SE_POINT_SECONDS


def estimate(config: dict, outputs=None, *, scope: str | None = None,
             jobs: list[PlannedJob] | None = None) -> CostEstimate:
    """Expected cost of the jobs of a configuration (:func:`planned_jobs`).

    Parameters
    ----------
    config : dict
        The checked configuration.
    outputs : collection of str, optional
        Count only the jobs that write one of these files (the DAG's jobs of a run); every
        job if ``None`` (the cost from an empty cache).
    scope : str, optional
        How the summary names the jobs counted.
    jobs : list of PlannedJob, optional
        :func:`planned_jobs` of ``config``, if already at hand.
    """
    exps = config["experiments"]
    jobs = planned_jobs(config) if jobs is None else jobs
    if outputs is not None:
        outputs = set(outputs)
        jobs = [j for j in jobs if j.output in outputs]
    counts = dict.fromkeys(exps, 0)
    sec = {name: {"SE": 0.0, **{a.label: 0.0 for a in ALGORITHMS.values()}, "start-up": 0.0}
           for name in exps}
    gpu = dict.fromkeys(exps, 0.0)
    shared = 0
    for j in jobs:
        if j.experiment is None:
            shared += 1
            continue
        counts[j.experiment] += 1
        sec[j.experiment]["start-up"] += JOB_STARTUP_SECONDS
        if j.gpu:
            gpu[j.experiment] += j.seconds / 3600.0
        elif j.seconds:
            sec[j.experiment][j.stage] += j.seconds
    by_stage = {k: {s: v / 3600.0 for s, v in d.items()} for k, d in sec.items()}
    return CostEstimate(counts, {k: sum(v.values()) for k, v in by_stage.items()}, by_stage,
                        shared_jobs=shared, gpu_hours=gpu,
                        scope=scope or ("from an empty cache" if outputs is None
                                        else "of this run's jobs"))


def dag_outputs(workflow) -> list[str] | None:
    """The output files of every job Snakemake's DAG will run (missing outputs, and outputs it
    re-runs for changed parameters, code or inputs), or ``None`` where the workflow has no DAG
    (it stopped before building one)."""
    dag = getattr(workflow, "dag", None)
    if dag is None:
        return None
    return [str(f) for j in dag.needrun_jobs(exclude_finished=False) for f in j.output]


def run_cost(config: dict, outputs, cores: int | None = None, *,
             jobs: list[PlannedJob] | None = None) -> str:
    """The summary of :func:`estimate` over the jobs that write ``outputs`` (those of
    :func:`dag_outputs`: exactly Snakemake's job list, its target rule ``all`` aside)."""
    jobs = planned_jobs(config) if jobs is None else jobs
    outputs = set(outputs)
    counted = [j for j in jobs if j.output in outputs]
    if not counted:
        return "aimlib: nothing to run (every output is up to date)"
    return estimate(config, outputs, jobs=jobs, scope=run_scope(len(counted))).summary(cores)


def run_scope(n: int) -> str:
    """How a cost summary names the jobs of one run (Snakemake's DAG)."""
    jobs = "the 1 job" if n == 1 else f"the {n} jobs"
    return (f"of this run: {jobs} Snakemake will run (its target rule aside), re-runs for "
            "changed parameters or code included")


def print_run_cost(config: dict, workflow, cores: int | None = None, jobs=None,
                   out=None) -> None:
    """Print :func:`run_cost` of the jobs of a workflow's DAG (a dry run's lines, at exit);
    nothing where Snakemake stopped before building its DAG (its error says why)."""
    outputs = dag_outputs(workflow)
    if outputs is not None:
        print(run_cost(config, outputs, cores, jobs=jobs), file=out or sys.stderr)


def snakemake_mode(argv) -> str:
    """What a Snakemake command line asks for: ``"dry-run"`` (``-n``, ``--dry-run``,
    ``--dryrun``, or ``n`` among combined short flags such as ``-np``), ``"lint"``,
    ``"report"``, ``"other"`` (a listing, a summary, a DAG drawing: nothing runs) or ``"run"``.
    """
    args = list(argv)[1:]
    if "--lint" in args:
        return "lint"
    if any(a == "--report" or a.startswith("--report=") for a in args):
        return "report"
    for a in args:
        if a in ("--dry-run", "--dryrun", "-n"):
            return "dry-run"
        if a.startswith("-") and not a.startswith("--") and 2 < len(a) <= 5 and a[1:].isalpha() \
                and "n" in a[1:]:
            return "dry-run"
    nothing_runs = ("--dag", "--rulegraph", "--filegraph", "--summary", "--detailed-summary",
                    "--list-rules", "--list", "-l", "--list-target-rules", "--lt", "--unlock",
                    "--cleanup-metadata", "--list-changes", "--lc", "--delete-all-output",
                    "--delete-temp-output", "--archive", "--containerize", "--export-cwl",
                    "--print-compilation", "--d3dag", "--touch", "-t")
    if any(a in nothing_runs for a in args):
        return "other"
    return "run"
