"""What a configuration costs from an empty cache: jobs and CPU-hours per figure, and each data
job's request, from the job plan (:mod:`aimlib.config`) and the algorithm registry's per-run
models (:mod:`aimlib.algorithms`, :mod:`aimlib.resources`).  The Snakefile prints
:func:`estimate` before the first job and the workflow's resource requests come from
:func:`data_job`.
"""

from __future__ import annotations

from dataclasses import dataclass

from aimlib.algorithms.resources import Resources

__all__ = ["CostEstimate", "estimate", "data_job", "JOB_STARTUP_SECONDS", "SE_POINT_SECONDS"]

#: Seconds of start-up per job (interpreter, imports, numba cache loading), measured.
JOB_STARTUP_SECONDS = 2.0
#: Seconds of one SE fixed point (``benchmarks/README.md``: a 128-point curve in about 0.4 s).
SE_POINT_SECONDS = 0.004

def data_job(group, alpha: float, opts: dict, *, attempt: int = 1) -> Resources:
    """Request of one data job of the plan: ``group`` (:class:`aimlib.config.Group`, whose
    ``stage`` names its algorithm) at ``alpha``, every seed, with the experiment's options."""
    from aimlib.algorithms import ALGORITHMS
    from aimlib.model import sizes

    r, n = sizes(alpha, group.rho, group.d)
    return ALGORITHMS[group.stage].resources(group.d, n, group.T, r, group.channel, opts,
                                             runs=len(group.seeds), attempt=attempt)


@dataclass(frozen=True)
class CostEstimate:
    """Estimated cost of a configuration from scratch, per experiment (figure).

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

    def wall_hours(self, cores: int) -> float:
        """Wall time at ``cores`` cores, if every job kept one core busy (a lower bound)."""
        return sum(self.cpu_hours.values()) / max(1, int(cores))

    def summary(self, cores: int | None = None) -> str:
        """A few lines for the console: jobs and CPU-hours per figure, total, wall time."""
        lines = ["aimlib: estimated cost from an empty cache (aimlib.cost.estimate)"]
        gpu = self.gpu_hours or {}
        for name in self.jobs:
            stages = ", ".join(f"{k} {v:.2f}" for k, v in self.by_stage[name].items() if v)
            g = f"  {gpu[name]:6.2f} GPU-h" if gpu.get(name) else ""
            lines.append(f"  {name:<9} {self.jobs[name]:>5} jobs  {self.cpu_hours[name]:9.2f} "
                         f"CPU-h{g}  ({stages})")
        total = sum(self.cpu_hours.values())
        n_jobs = sum(self.jobs.values()) + self.shared_jobs
        g = f"  {sum(gpu.values()):6.2f} GPU-h" if any(gpu.values()) else ""
        lines.append(f"  {'total':<9} {n_jobs:>5} jobs  {total:9.2f} CPU-h{g}")
        if cores:
            lines.append(f"  wall time at {cores} cores: about {self.wall_hours(cores):.2f} h "
                         "(SE figures first: fig1b, fig2a, fig5 within minutes)")
        return "\n".join(lines)


def estimate(config: dict) -> CostEstimate:
    """Expected cost of every job a configuration implies, from an empty cache.

    SE: ``SE_POINT_SECONDS`` per fixed point (two starts); each algorithm's runs from its own
    model (:meth:`aimlib.algorithms.Algorithm.seconds`: AMP at ``EXPECTED_AMP_ITERATIONS``
    iterations), plus ``JOB_STARTUP_SECONDS`` per job and per aggregate its figure draws.
    """
    from aimlib.algorithms import ALGORITHMS
    from aimlib.figures.registry import FIGURES
    from aimlib.model import sizes
    from aimlib.pipeline import config as cfg

    exps = config["experiments"]
    plan = cfg.plan(config)
    jobs = {name: 1 for name in exps}  # the figure job
    sec = {name: {"SE": 0.0, **{a.label: 0.0 for a in ALGORITHMS.values()},
                  "start-up": JOB_STARTUP_SECONDS} for name in exps}
    gpu = dict.fromkeys(exps, 0.0)
    for j in plan.se_jobs:
        jobs[j.experiment] += 1
        sec[j.experiment]["SE"] += 2 * len(j.alphas) * SE_POINT_SECONDS
        sec[j.experiment]["start-up"] += JOB_STARTUP_SECONDS
    for name, exp in exps.items():
        extra = ("small_width" in exp) + len(plan.finite_size_methods(name))  # limit, fits
        jobs[name] += extra
        sec[name]["start-up"] += extra * JOB_STARTUP_SECONDS
        for stage, alg in ALGORITHMS.items():
            for g in plan.groups(stage, name):
                # the aggregates its figure draws (e.g. GD and/or AGD; AGD also for the fit)
                n_aggs = len(plan.aggregate_kinds(stage, name, FIGURES))
                jobs[name] += n_aggs
                sec[name]["start-up"] += n_aggs * JOB_STARTUP_SECONDS
                opts = plan.options(stage, name, g.d)
                on_gpu = alg.uses_gpu(opts)
                for alpha in g.alphas:
                    r, n = sizes(alpha, g.rho, g.d)
                    jobs[name] += 1
                    t = len(g.seeds) * alg.seconds(g.d, n, g.T, r, g.channel, opts)
                    if on_gpu:
                        gpu[name] += t / 3600.0
                    else:
                        sec[name][alg.label] += t
                    sec[name]["start-up"] += JOB_STARTUP_SECONDS
    by_stage = {k: {s: v / 3600.0 for s, v in d.items()} for k, d in sec.items()}
    return CostEstimate(jobs, {k: sum(v.values()) for k, v in by_stage.items()}, by_stage,
                        gpu_hours=gpu)
