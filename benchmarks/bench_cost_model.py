"""The cost model against measured jobs: per stage, the model's CPU-seconds (what `snakemake -n`
prints, :func:`aimlib.pipeline.cost.planned_jobs`) and the CPU-seconds the jobs took.

    python benchmarks/bench_cost_model.py --workdir RUN --configfile CONFIG [--records FILE ...]
        [--fit] [--section NAME]

``RUN`` is a folder where Snakemake ran ``CONFIG``.  The measured CPU time of each job is what
the job itself recorded when it finished (``.snakemake/aimlib/run-*.log``: output, CPU-seconds
of the process and its children, start-up included; copies of those records can be passed with
``--records``, since a later run in the same folder removes them).  Jobs found in no record fall
back to the wall time in their log (``done in ... s``) plus the start-up
(:data:`aimlib.pipeline.cost.JOB_STARTUP_SECONDS`), which is the CPU time of a one-thread job.

``--g-out`` times each channel's output function per sample against the model's
``g_out_seconds``.  ``--fit`` fits the GD time model's three coefficients (GEMM rate,
per-sample and per-parameter costs, :mod:`aimlib.algorithms.resources`) to the measured GD
jobs by least squares on the relative error.  ``--section`` writes the table into
``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import re
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np
import yaml
from _util import machine, write_section

from aimlib.pipeline import cost
from aimlib.pipeline.checks import fill_defaults

DONE = re.compile(r"done in ([0-9.]+) s")


def measured(workdir: Path, records: list[Path]) -> dict[str, float]:
    """CPU-seconds per output file: the run records, else the job's log."""
    out: dict[str, float] = {}
    files = list(records) + sorted((workdir / ".snakemake" / "aimlib").glob("run-*.log"))
    for f in files:
        for line in Path(f).read_text().splitlines():
            parts = line.split("\t")
            if len(parts) >= 2:
                out[parts[0]] = float(parts[1])
    return out


def log_seconds(workdir: Path, output: str) -> float | None:
    """Wall seconds of a data job from its log (``data/<alg>/...nc`` -> ``logs/<alg>/...log``)."""
    log = workdir / ("logs/" + output.removeprefix("data/").removesuffix(".nc") + ".log")
    if not log.is_file():
        return None
    m = DONE.findall(log.read_text())
    return float(m[-1]) + cost.JOB_STARTUP_SECONDS if m else None


def compare(workdir: Path, config: dict, records: list[Path]):
    """Rows ``(experiment, stage, jobs, model CPU-s, measured CPU-s, per-job ratios)`` over
    the jobs of ``config`` that ran in ``workdir``, and the GD jobs with their sizes."""
    from aimlib.model import sizes
    from aimlib.pipeline import config as cfg

    meas = measured(workdir, records)
    plan = cfg.plan(config)
    groups = {}
    for stage in ("gd", "amp"):
        for g in plan.groups(stage):
            for a in g.alphas:
                path = f"data/{stage}/{g.experiment}/{g.channel}_{g.variant}/T{g.T}_{g.cpar}_" \
                       f"rho{cfg.ffmt(g.rho)}_d{g.d}_alpha{cfg.ffmt(a)}.nc"
                r, n = sizes(a, g.rho, g.d)
                groups[path] = (g, n, r, plan.options(stage, g.experiment, g.d))
    acc = defaultdict(lambda: [0, 0.0, 0.0, []])
    gd_jobs, amp_jobs = [], []
    for job in cost.planned_jobs(config):
        if job.experiment is None or job.gpu:
            continue
        t = meas.get(job.output)
        if t is None and job.output.startswith("data/"):
            t = log_seconds(workdir, job.output)
        if t is None:
            continue
        model = job.seconds + cost.JOB_STARTUP_SECONDS
        row = acc[(job.experiment, job.stage)]
        row[0] += 1
        row[1] += model
        row[2] += t
        row[3].append(model / t)
        if job.output in groups:
            (gd_jobs if job.output.startswith("data/gd/") else amp_jobs).append(
                (*groups[job.output], t, workdir / job.output))
    return acc, gd_jobs, amp_jobs


def amp_iterations(amp_jobs) -> str:
    """AMP: iterations per run (all attempts) against the model's assumption, and the time
    per iteration against the model's, per experiment."""
    import xarray as xr

    from aimlib.algorithms import resources as res

    per = defaultdict(lambda: [[], 0.0, 0.0])  # iterations per run, measured s, model s
    for g, n, _r, opts, t, path in amp_jobs:
        with xr.open_dataset(path) as ds:
            its = ds["total_iterations"].values if "total_iterations" in ds \
                else ds["iterations"].values
        _, threads, per_iter, setup = res.amp_model(g.d, n, g.T, g.channel, opts["dtype"],
                                                    res.CHUNK, opts["backend"])
        row = per[(g.experiment, g.channel)]
        row[0].extend(int(i) for i in its)
        row[1] += t - cost.JOB_STARTUP_SECONDS - len(its) * threads * setup
        row[2] += threads * per_iter * float(its.sum())
    from aimlib.channels import CHANNELS

    lines = ["| figure | channel | runs | iterations per run: median, mean | the model's "
             "iterations | time of those iterations: model / measured |",
             "|---|---|---|---|---|---|"]
    for (exp, ch), (its, meas, model) in sorted(per.items()):
        lines.append(f"| {exp} | {ch} | {len(its)} | {statistics.median(its):.0f}, "
                     f"{statistics.mean(its):.0f} | {CHANNELS[ch].AMP_ITERATIONS} | "
                     f"{model / meas:.2f} |")
    return "\n".join(lines)


def g_out_table(n: int = 20_000) -> str:
    """Seconds per sample of each channel's output function (one thread, median of 5, samples
    drawn from the model at ``q = 0.5, V = 0.5``) against the resource model's
    ``g_out_seconds(T)`` (:mod:`aimlib.algorithms.resources`)."""
    import numba
    from _util import median_time
    from threadpoolctl import threadpool_limits

    from aimlib import model
    from aimlib.channels import CHANNELS

    numba.set_num_threads(1)
    rng = np.random.default_rng(0)
    lines = ["| channel | T | samples | measured per sample | model | model / measured |",
             "|---|---|---|---|---|---|"]
    cases = [(name, T) for name, cls in CHANNELS.items()
             for T in (2, 3, 4) if T <= (cls.T_MAX or 9)]
    with threadpool_limits(1):
        for name, T in cases:
            m = n if CHANNELS[name].g_out_seconds(T) < 1e-5 else n // 20  # Genz: 1e-4 s each
            ch = model.generate(name, 0.5, 0.5, T, 12, 0).ch
            a = rng.standard_normal((m, T, T))
            omega = 0.5 * (a + a.transpose(0, 2, 1))
            b = rng.standard_normal((m, T, T))
            h = omega + 0.5 * (b + b.transpose(0, 2, 1))
            y = ch.outputs(ch.labels(h, rng))
            t, _ = median_time(lambda ch=ch, y=y, omega=omega: ch.g_out(y, omega, 0.5))
            model_s = ch.g_out_seconds(T)
            lines.append(f"| {name} | {T} | {m:,} | {t / m * 1e6:.3f} us | "
                         f"{model_s * 1e6:.3f} us | {model_s * m / t:.2f} |")
    return (f"Output function per sample, one thread, median of 5 (measured on {machine()})"
            "\n\n" + "\n".join(lines))


def fit_gd(gd_jobs) -> dict:
    """Least squares on the relative error of ``seconds = steps * K * (flop / rate + a n T^2 r
    + b d r) + teacher + start-up`` over the measured GD jobs (one seed each or more)."""
    from aimlib.algorithms import resources as res

    rows, ys, ws = [], [], []
    for g, n, r, opts, t, _ in gd_jobs:
        S, K, d, T = int(opts["steps"]), int(opts["inits"]), g.d, g.T
        runs = len(g.seeds)
        fixed = runs * res.teacher_seconds(d, n, T) + cost.JOB_STARTUP_SECONDS
        flop = 4.0 * n * T * d * r
        rows.append([runs * S * K * flop, runs * S * K * n * T * T * r, runs * S * K * d * r])
        if opts["dtype"] != "float32":
            raise ValueError("the fit is of the float32 products (GD's default)")
        ys.append(t - fixed)
        ws.append(1.0 / t)
    A = np.array(rows) * np.array(ws)[:, None]
    y = np.array(ys) * np.array(ws)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    return {"seconds_per_flop": coef[0], "per_sample_pair_rank": coef[1],
            "per_parameter": coef[2], "gflops": 1e-9 / coef[0] if coef[0] > 0 else float("inf")}


def table(acc, title: str) -> str:
    lines = [title, "",
             "| figure | stage | jobs | model CPU-s | measured CPU-s | model / measured | "
             "per job: min, median, max |", "|---|---|---|---|---|---|---|"]
    for (exp, stage), (n, model, meas, ratios) in sorted(acc.items()):
        lines.append(f"| {exp} | {stage} | {n} | {model:,.0f} | {meas:,.0f} | "
                     f"{model / meas:.2f} | {min(ratios):.2f}, {statistics.median(ratios):.2f}, "
                     f"{max(ratios):.2f} |")
    return "\n".join(lines)


def preset_table() -> str:
    """The model's CPU-hours per figure of the paper preset, alone and with the GPU overlay
    (``config/gpu.yaml``, merged key by key as Snakemake merges config files)."""
    from snakemake.utils import update_config

    paper = fill_defaults(yaml.safe_load(Path("config/config.yaml").read_text()))
    gpu = yaml.safe_load(Path("config/config.yaml").read_text())
    update_config(gpu, yaml.safe_load(Path("config/gpu.yaml").read_text()))
    gpu = fill_defaults(gpu)
    a, b = cost.estimate(paper), cost.estimate(gpu)
    lines = ["| figure | jobs | model, paper preset (CPU-h) | by stage | with `config/gpu.yaml` |",
             "|---|---|---|---|---|"]
    for name in a.jobs:
        stages = ", ".join(f"{k} {v:.2f}" for k, v in a.by_stage[name].items() if v >= 0.005)
        g = (b.gpu_hours or {}).get(name, 0.0)
        lines.append(f"| {name} | {a.jobs[name]} | {a.cpu_hours[name]:.2f} | {stages} | "
                     f"{b.cpu_hours[name]:.2f} CPU-h" + (f" + {g:.3f} GPU-h |" if g else " |"))
    lines.append(f"| total | {a.total_jobs} | {sum(a.cpu_hours.values()):.1f} | | "
                 f"{sum(b.cpu_hours.values()):.1f} CPU-h + {sum((b.gpu_hours or {}).values()):.2f}"
                 " GPU-h |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", action="store_true",
                    help="print the model's cost of the paper preset per figure and stop")
    ap.add_argument("--g-out", action="store_true",
                    help="time each channel's output function against the model and stop")
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--configfile", type=Path)
    ap.add_argument("--records", type=Path, nargs="*", default=[])
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--section", default=None)
    ap.add_argument("--title", default="")
    args = ap.parse_args()
    if args.presets:
        print(preset_table())
        return
    if args.g_out:
        text = g_out_table()
        if args.section:
            write_section(args.section, text)
        else:
            print(text)
        return
    if args.workdir is None or args.configfile is None:
        ap.error("--workdir and --configfile are needed (or --presets)")
    config = fill_defaults(yaml.safe_load(args.configfile.read_text()))
    acc, gd_jobs, amp_jobs = compare(args.workdir, config, args.records)
    text = table(acc, f"{args.title or args.configfile} (measured on {machine()}); model: "
                      "`aimlib.pipeline.cost.planned_jobs` plus the start-up per job")
    if args.fit and gd_jobs:
        f = fit_gd(gd_jobs)
        text += ("\n\nGD fit over {} jobs: GEMM rate {:.1f} Gflop/s, {:.3g} s per sample, pair "
                 "and rank, {:.3g} s per parameter (per initialisation and step)").format(
                     len(gd_jobs), f["gflops"], f["per_sample_pair_rank"], f["per_parameter"])
    if amp_jobs:
        text += "\n\n" + amp_iterations(amp_jobs)
    if args.section:
        write_section(args.section, text)
    else:
        print(text)


if __name__ == "__main__":
    main()
