"""What a workflow run costs and how far it has got, from the jobs Snakemake will actually run.

Before the first job (the Snakefile's ``onstart``), :func:`start_run` prints the cost of the
jobs in Snakemake's DAG, not of the whole configuration: a resumed or incremental run counts
only what is left.  It writes the run's jobs, with their expected seconds, to
``.snakemake/aimlib/run-<pid>.json`` (one record per Snakemake process: runs with disjoint
outputs may share a folder); if the run would take longer than ``LONG_RUN_HOURS`` at the
given cores on this machine (no cluster executor), it waits ``PAUSE_SECONDS`` first, so that a
user who did not mean to start it can press Ctrl-C with nothing started (config key
``pause_long_runs: false`` skips the wait).

Each job, as it finishes (:func:`job_done`, called by :func:`aimlib.pipeline.jobs.job_log`),
appends its output and CPU-seconds to its run's ``run-<pid>.log`` and, at most every
``REPORT_SECONDS`` (and after the last job), prints one line of cost-weighted progress to the
terminal and into Snakemake's log file (``.snakemake/log/*.snakemake.log``), e.g.::

    aimlib progress: fig2b AMP 3/8 jobs, 0.1 of 0.3 CPU-min | all 95/237 jobs,
    4.0 of 9.4 CPU-min, about 3 min left at 2 cores (at the pace so far)

The time left is the model's remaining cost at the pace of the run so far (the model cost
finished per wall second), so that the scheduler's overhead and idle cores count.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["start_run", "job_done", "progress_line", "cores_given", "RUN_DIR", "LONG_RUN_HOURS",
           "PAUSE_SECONDS", "REPORT_SECONDS"]

#: Where a run keeps its job list and the finished jobs (relative to the working directory).
RUN_DIR = Path(".snakemake") / "aimlib"
#: A local run estimated to take longer than this (wall hours) waits before its first job.
LONG_RUN_HOURS = 2.0
#: How long it waits.
PAUSE_SECONDS = 10.0
#: At most one progress line per this many seconds (``AIMLIB_PROGRESS_SECONDS`` overrides).
REPORT_SECONDS = 60.0


def cores_given(workflow) -> int | None:
    """The ``--cores`` of a Snakemake run (``None`` where it has none, e.g. a dry run without
    ``--cores``)."""
    try:
        return workflow._cores
    except Exception:
        return None


def _report_seconds() -> float:
    try:
        return float(os.environ.get("AIMLIB_PROGRESS_SECONDS", REPORT_SECONDS))
    except ValueError:
        return REPORT_SECONDS


def start_run(config: dict, outputs, cores: int | None, logfiles=(), *, local: bool = True,
              pause: bool = True, out=None, sleep=time.sleep, run_dir: Path | None = None,
              made_by: dict | None = None):
    """Print the cost of this run's jobs, record them for the progress report and, for a long
    local run, wait before the first job.

    Parameters
    ----------
    config : dict
        The checked configuration (defaults filled in).
    outputs : iterable of str
        The output files of the jobs Snakemake's DAG will run.
    cores : int or None
        The cores the run was given.
    logfiles : iterable of str
        Snakemake's log file(s) of this run: the progress lines go there too.
    local : bool
        Whether the jobs run on this machine (no cluster executor): only then does a long
        run wait.
    pause : bool
        The config's ``pause_long_runs``.
    out : file, optional
        Where to print (stderr).
    sleep : callable
        ``time.sleep`` (a test passes its own).
    made_by : dict, optional
        What made this run's results (``commit``, ``configfiles``): recorded for the jobs, which
        write it into the figures' metadata (:func:`run_provenance`).

    Returns
    -------
    CostEstimate
        The cost of this run's jobs.
    """
    # not at the top: job scripts load tracking (via jobs) before the heavy modules
    from aimlib.pipeline.cost import JOB_STARTUP_SECONDS, estimate, planned_jobs, run_scope

    out = sys.stderr if out is None else out
    run_dir = RUN_DIR if run_dir is None else Path(run_dir)
    outputs = {str(o) for o in outputs}
    jobs = [j for j in planned_jobs(config) if j.output in outputs]
    est = estimate(config, outputs, jobs=jobs, scope=run_scope(len(jobs)))
    print(est.summary(cores), file=out)
    run_dir.mkdir(parents=True, exist_ok=True)
    _forget_finished_runs(run_dir)
    record = {"started": time.time(), "cores": int(cores or 1), "pid": os.getpid(),
              "made_by": dict(made_by or {}),
              "logfiles": [str(f) for f in logfiles],
              "jobs": {j.output: [j.experiment or "config", j.stage,
                                  0.0 if j.gpu else j.seconds + JOB_STARTUP_SECONDS,
                                  j.seconds if j.gpu else 0.0] for j in jobs}}
    # one record per run (Snakemake lets runs with disjoint outputs share a folder)
    me = run_dir / f"run-{os.getpid()}"
    (me.with_suffix(".log")).write_text("")
    tmp = me.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, me.with_suffix(".json"))
    me.with_suffix(".stamp").unlink(missing_ok=True)
    wall = est.wall_hours(cores or 1)
    if local and pause and wall > LONG_RUN_HOURS:
        print(f"aimlib: this run is about {wall:.1f} h of wall time at {cores or 1} cores on "
              f"this machine (more than {LONG_RUN_HOURS:g} h). Starting in "
              f"{PAUSE_SECONDS:g} s: press Ctrl-C now to stop with nothing started. For a "
              "first look, run the quick preset (--configfile config/quick.yaml, about 4 "
              "minutes); at this size, use a cluster (--profile profiles/slurm). "
              "(--config pause_long_runs=false skips this wait.)", file=out, flush=True)
        sleep(PAUSE_SECONDS)
    return est


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _forget_finished_runs(run_dir: Path) -> None:
    """Remove the records of runs whose Snakemake process has ended."""
    for rec in run_dir.glob("run-*.json"):
        try:
            pid = int(rec.stem.removeprefix("run-"))
        except ValueError:
            continue
        if not _alive(pid):
            for suffix in (".json", ".log", ".stamp"):
                rec.with_suffix(suffix).unlink(missing_ok=True)


def _find_run(run_dir: Path, output: str) -> Path | None:
    """The record of the newest run whose jobs include ``output``."""
    recs = sorted(run_dir.glob("run-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for rec in recs:
        try:
            if output in json.loads(rec.read_text())["jobs"]:
                return rec
        except (OSError, ValueError, KeyError):
            continue
    return None


def run_provenance(output: str, run_dir: Path | None = None) -> dict:
    """What made the run that writes ``output`` (``commit``, ``configfiles``, as the Snakefile
    recorded them at its start); empty where no run record has the job."""
    rec = _find_run(RUN_DIR if run_dir is None else Path(run_dir), str(output))
    if rec is None:
        return {}
    try:
        return dict(json.loads(rec.read_text()).get("made_by") or {})
    except (OSError, ValueError):
        return {}


def _read_run(rec: Path):
    try:
        run = json.loads(rec.read_text())
        done_text = rec.with_suffix(".log").read_text()
    except (OSError, ValueError):
        return None, None
    done = {}
    for line in done_text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2:
            try:
                done[parts[0]] = float(parts[1])
            except ValueError:
                continue
    return run, done


def progress_line(run: dict, done: dict, output: str, now: float | None = None) -> str:
    """The progress line after ``output`` finished: its figure and stage, then the whole run.

    ``run`` is the run record's content, ``done`` maps the finished outputs to their measured
    CPU-seconds.  The time left is the remaining model cost at the pace of the run so far
    (model cost done per wall second, which counts the scheduler's overhead and idle cores)
    once a hundredth of the cost is done; before that, the remaining model cost over the
    cores, scaled by the finished jobs' measured CPU time against the model.
    """
    jobs = run["jobs"]
    exp, stage = jobs[output][0], jobs[output][1]
    group = [o for o, j in jobs.items() if j[0] == exp and j[1] == stage]
    g_done = [o for o in group if o in done]

    def hours(outs):
        return sum(jobs[o][2] for o in outs) / 3600.0

    def cpu(a, b):  # "a of b CPU-h", in CPU-minutes below one CPU-hour
        return (f"{a:.2f} of {b:.2f} CPU-h" if b >= 1 else
                f"{a * 60:.1f} of {b * 60:.1f} CPU-min")

    finished = [o for o in done if o in jobs]
    model_done = sum(jobs[o][2] for o in finished)
    model_total = sum(j[2] for j in jobs.values())
    measured = sum(done[o] for o in finished)
    remaining = max(0.0, model_total - model_done) / 3600.0
    elapsed = (time.time() if now is None else now) - float(run.get("started", 0.0))
    if model_total > 0 and model_done >= 0.01 * model_total and elapsed > 0:
        left = remaining * elapsed / model_done  # hours, at the pace so far
        how = "at the pace so far"
    else:
        # how the measured CPU time compares with the model (1 until a job has been measured)
        scale = measured / model_done if model_done > 0 and measured > 0 else 1.0
        left = remaining * scale / max(1, int(run.get("cores", 1)))
        how = f"model x {scale:.2f}"
    gpu_total = sum(j[3] for j in jobs.values()) / 3600.0
    gpu = (f", {sum(jobs[o][3] for o in finished) / 3600:.2f} of {gpu_total:.2f} GPU-h"
           if gpu_total else "")
    return (f"aimlib progress: {exp} {stage} {len(g_done)}/{len(group)} jobs, "
            f"{cpu(hours(g_done), hours(group))} | all {len(finished)}/{len(jobs)} jobs, "
            f"{cpu(hours(finished), hours(jobs))}{gpu}, about "
            f"{_format_hours(left)} left at {run.get('cores', 1)} cores ({how})")


def checkout_commit(path=".") -> str:
    """The git commit of the checkout at ``path``, with ``+changes`` where its tracked files
    differ from it; ``"unknown"`` outside a git checkout (an unpacked release)."""
    try:
        sha = subprocess.run(["git", "-C", str(path), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
        dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return sha.strip() + ("+changes" if dirty.strip() else "")


def end_of_run(outputs, configfiles=(), *, started: float | None = None) -> str:
    """The line a successful run ends with: the figures it wrote, where they are, and the
    command that makes the report of the same configuration.

    Parameters
    ----------
    outputs : iterable of str
        The output files of the jobs the run executed (:func:`aimlib.pipeline.cost.dag_outputs`).
    configfiles : iterable of str
        The run's ``--configfile`` arguments (none: the paper preset).
    started : float, optional
        The run's start (``time.time()``), for its wall time.
    """
    def order(name):  # fig1a, fig2b, ..., fig11, then fig_steps
        m = re.match(r"fig(\d+)", name)
        return (int(m.group(1)) if m else 10**6, name)

    figs = sorted({Path(o).stem for o in outputs
                   if Path(o).parent == Path("figures") and Path(o).suffix == ".png"},
                  key=order)
    def rel(c):  # as the user typed it, where it lies in the working directory
        r = os.path.relpath(c)
        return c if r.startswith("..") else r

    cf = " ".join(shlex.quote(rel(str(c))) for c in configfiles)
    report = "snakemake --report report.html" + (f" --configfile {cf}" if cf else "")
    took = (f" in {_format_hours((time.time() - started) / 3600.0)}"
            if started is not None else "")
    made = (f"{len(figs)} figure{'s' if len(figs) != 1 else ''} written to figures/ (PNG and "
            f"PDF): {', '.join(figs)}" if figs else "no figure needed remaking (figures/)")
    return f"aimlib: done{took}. {made}. The report: {report}"


def job_done(output: str, cpu_seconds: float, *, out=None, run_dir: Path | None = None,
             now: float | None = None) -> str | None:
    """Record a finished job and, if a report is due, print the progress line (returned).

    Nothing happens for a job that is not in the run's record (a run started before the
    record existed, or a job run outside Snakemake).
    """
    run_dir = RUN_DIR if run_dir is None else Path(run_dir)
    rec = _find_run(run_dir, output) if run_dir.is_dir() else None
    if rec is None:
        return None
    run, done = _read_run(rec)
    if run is None:
        return None
    now = time.time() if now is None else now
    with open(rec.with_suffix(".log"), "a") as f:  # one short append: atomic with O_APPEND
        f.write(f"{output}\t{cpu_seconds:.3f}\t{now:.1f}\n")
    done[output] = cpu_seconds
    stamp = rec.with_suffix(".stamp")
    last = stamp.stat().st_mtime if stamp.exists() else run["started"]
    all_done = all(o in done for o in run["jobs"])
    if not all_done and now - last < _report_seconds():
        return None
    stamp.touch()
    os.utime(stamp, (now, now))
    line = progress_line(run, done, output, now)
    print(line, file=sys.stderr if out is None else out, flush=True)
    stamp_text = time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(now))
    for logfile in run.get("logfiles", []):
        try:
            with open(logfile, "a") as f:
                f.write(f"[{stamp_text}]\n{line}\n")
        except OSError:
            pass
    return line


def _format_hours(hours: float) -> str:
    # imported here: a job's start-up (job_done) should not load the cost model's modules
    from aimlib.pipeline.cost import format_hours

    return format_hours(hours)
