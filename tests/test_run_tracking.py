"""A run's cost and progress from the jobs it will execute, the pause before a long local run,
and the cache check that leaves no silent holes (aimlib.pipeline.cost, .tracking, .integrity).
"""

import io
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from aimlib.pipeline import cost, integrity, tracking
from aimlib.pipeline.config import fill_defaults
from aimlib.pipeline.io import write_netcdf


@pytest.fixture()
def mini(root):
    conf = yaml.safe_load((root / "tests" / "data" / "mini.yaml").read_text())
    return fill_defaults(conf)


def test_planned_jobs_match_the_estimate_and_name_their_inputs(mini):
    jobs = cost.planned_jobs(mini)
    est = cost.estimate(mini)
    assert len(jobs) == est.total_jobs
    assert len({j.output for j in jobs}) == len(jobs)  # one output each
    by_out = {j.output: j for j in jobs}
    agg = by_out["data/agg/fig2b/agd_softmax_exact_T2_beta1.0_rho0.5_d16.nc"]
    assert agg.inputs == ("data/gd/fig2b/softmax_exact/T2_beta1.0_rho0.5_d16_alpha0.1.nc",)
    fig = by_out["figures/fig3.pdf"]
    assert "data/agg/fig3/finite_size_amp.nc" in fig.inputs
    assert fig.extra_outputs == ("figures/fig3.png",)
    # the costs add up: the estimate over every output is the estimate
    sub = cost.estimate(mini, [j.output for j in jobs])
    assert sub.cpu_hours == pytest.approx(est.cpu_hours)


def test_cost_of_the_jobs_a_run_lists(mini):
    """The dry run's cost (:func:`aimlib.pipeline.cost.run_cost`, given the outputs of
    Snakemake's job list) counts those jobs only, per figure, and says when there are none."""
    jobs = cost.planned_jobs(mini)
    present = [j for j in jobs if j.experiment == "fig1a"]
    listed = [j.output for j in jobs if j not in present]
    text = cost.run_cost(mini, listed, 2)
    assert f"of this run: the {len(listed)} jobs Snakemake will run" in text
    assert "fig1a" not in text  # none of fig1a's jobs is listed: its line is left out
    est = cost.estimate(mini, listed)
    assert re.search(rf"^\s+total\s+{est.total_jobs} jobs", text, re.M)
    assert cost.run_cost(mini, [], 2) == "aimlib: nothing to run (every output is up to date)"


@pytest.mark.parametrize("argv,mode", [
    (["snakemake", "-n", "--cores", "2"], "dry-run"),
    (["snakemake", "--cores", "2", "--dry-run"], "dry-run"),
    (["snakemake", "-np"], "dry-run"),
    (["snakemake", "--cores", "2", "--configfile", "config/quick.yaml"], "run"),
    (["snakemake", "--report", "r.html"], "report"),
    (["snakemake", "--lint"], "lint"),
    (["snakemake", "--dag"], "other"),
    (["snakemake", "--cores", "all", "--profile", "profiles/slurm"], "run"),
])
def test_snakemake_mode(argv, mode):
    assert cost.snakemake_mode(argv) == mode


def _fake_run(tmp_path, mini, outputs, *, cores=2, local=True, pause=True):
    slept = []
    out = io.StringIO()
    logfile = tmp_path / "snakemake.log"
    logfile.write_text("")
    est = tracking.start_run(mini, outputs, cores, [str(logfile)], local=local, pause=pause,
                             out=out, sleep=slept.append, run_dir=tmp_path / "run")
    return est, out.getvalue(), slept, logfile


def test_start_run_counts_only_the_dags_jobs(mini, tmp_path):
    jobs = cost.planned_jobs(mini)
    outputs = [j.output for j in jobs if j.experiment == "fig2b"] + ["figures/fig2b.png"]
    est, text, slept, _ = _fake_run(tmp_path, mini, outputs)
    n = sum(j.experiment == "fig2b" for j in jobs)
    assert est.total_jobs == n and est.jobs["fig2b"] == n and est.jobs["fig1a"] == 0
    assert f"of this run: the {n} jobs Snakemake will run" in text and "fig1a" not in text
    assert slept == []  # seconds of work: no pause
    (rec,) = (tmp_path / "run").glob("run-*.json")
    record = json.loads(rec.read_text())
    assert set(record["jobs"]) == {j.output for j in jobs if j.experiment == "fig2b"}


def test_long_local_run_pauses_first(mini, tmp_path, monkeypatch):
    monkeypatch.setattr(tracking, "LONG_RUN_HOURS", 0.0)  # every run is "long"
    outputs = [j.output for j in cost.planned_jobs(mini)]
    _, text, slept, _ = _fake_run(tmp_path, mini, outputs)
    assert slept == [tracking.PAUSE_SECONDS]
    assert "press Ctrl-C now to stop with nothing started" in text
    assert "pause_long_runs=false" in text
    for kw in (dict(local=False), dict(pause=False)):  # a cluster, or the config's flag
        _, text, slept, _ = _fake_run(tmp_path, mini, outputs, **kw)
        assert slept == [] and "Ctrl-C" not in text


def test_progress_lines_are_cost_weighted(mini, tmp_path, monkeypatch):
    """Each finished job adds its model cost; a line is due at most every REPORT_SECONDS and
    after the last job; it names the job's figure and stage, the run's totals and the time
    left, and goes to the terminal and Snakemake's log file."""
    monkeypatch.setenv("AIMLIB_PROGRESS_SECONDS", "100")
    jobs = [j for j in cost.planned_jobs(mini) if j.experiment == "fig2b"]
    est, _, _, logfile = _fake_run(tmp_path, mini, [j.output for j in jobs], cores=2)
    (rec,) = (tmp_path / "run").glob("run-*.json")
    run = json.loads(rec.read_text())
    t0 = run["started"]
    lines = []
    for i, j in enumerate(jobs):
        out = io.StringIO()
        line = tracking.job_done(j.output, 3.0, out=out, run_dir=tmp_path / "run",
                                 now=t0 + 60 * (i + 1))
        assert (line is None) == (out.getvalue() == "")
        if line:
            lines.append((i, line))
    # 60 s apart with a 100 s interval: every second job reports, and the last one always
    assert [i for i, _ in lines][-1] == len(jobs) - 1
    assert len(lines) == len(jobs) // 2 + (len(jobs) % 2)
    i, last = lines[-1]
    assert f"all {len(jobs)}/{len(jobs)} jobs" in last and "about 0 s left" in last
    assert last.startswith(f"aimlib progress: fig2b {jobs[-1].stage} ")
    # part-way: the time left is the remaining model cost at the pace so far (model cost done
    # per wall second)
    cost_s = {j.output: run["jobs"][j.output][2] for j in jobs}
    done = {j.output: 3.0 for j in jobs[:2]}
    mid = tracking.progress_line(run, done, jobs[1].output, now=t0 + 600)
    rem = sum(cost_s[j.output] for j in jobs[2:])
    left_min = rem * 600 / sum(cost_s[j.output] for j in jobs[:2]) / 60
    assert f"about {left_min:.0f} min left at 2 cores (at the pace so far)" in mid
    # before a hundredth of the cost is done: the model over the cores, scaled by the measured
    # CPU time of the finished jobs
    cheap = min(jobs, key=lambda j: cost_s[j.output])
    if cost_s[cheap.output] < 0.01 * sum(cost_s.values()):
        early = tracking.progress_line(run, {cheap.output: 1.0}, cheap.output, now=t0 + 5)
        assert f"model x {1.0 / cost_s[cheap.output]:.2f}" in early
    assert logfile.read_text().count("aimlib progress:") == len(lines)
    # a job outside the run (or with no run recorded) prints nothing
    assert tracking.job_done("data/elsewhere.nc", 1.0, run_dir=tmp_path / "run") is None
    assert tracking.job_done(jobs[0].output, 1.0, run_dir=tmp_path / "none") is None


def _cache(path, n=2000):
    write_netcdf(xr.Dataset({"x": ("a", np.arange(float(n)))}), path, config={"k": 1},
                 version="v")


@pytest.mark.parametrize("keep", [0.02, 0.5, 0.99])
def test_truncated_netcdf4_is_found_without_opening_it(tmp_path, keep):
    good = tmp_path / "good.nc"
    _cache(good)
    assert integrity.cache_problem(good) is None
    bad = tmp_path / "bad.nc"
    data = good.read_bytes()
    bad.write_bytes(data[:max(16, int(keep * len(data)))])
    assert integrity.cache_problem(bad).startswith("truncated (")
    bad.write_bytes(b"junk" + data[4:])
    assert "not a netCDF file" in integrity.cache_problem(bad)
    assert integrity.cache_problem(tmp_path / "absent.nc") is None


def test_repair_quarantines_and_removes_what_was_made_from_missing_caches(mini, tmp_path):
    jobs = cost.planned_jobs(mini)
    for j in jobs:  # a complete run: every output present and whole
        p = tmp_path / j.output
        p.parent.mkdir(parents=True, exist_ok=True)
        if j.output.endswith(".nc"):
            _cache(p, 50)
        else:
            p.write_text("figure")
        for extra in j.extra_outputs:
            (tmp_path / extra).write_text("figure")
    assert list(integrity.repair(jobs, tmp_path)) == []
    # what Snakemake records of each output it made: its inputs (.snakemake/metadata)
    import base64

    meta = tmp_path / ".snakemake" / "metadata"
    meta.mkdir(parents=True)
    for j in jobs:
        if j.inputs and j.output != "figures/fig3.pdf":  # fig3: made without a record
            name = base64.urlsafe_b64encode(j.output.encode()).decode()
            (meta / name).write_text(json.dumps({"rule": "x", "input": list(j.inputs)}))
    # an aggregate made under another config (other alphas, all present) is not stale
    other = "data/agg/fig1a/amp_hardmax_exact_T2_rho0.2_d20.nc"
    name = base64.urlsafe_b64encode(other.encode()).decode()
    (meta / name).write_text(json.dumps({"input": [jobs[0].output]}))
    (tmp_path / "data/amp/fig1a/hardmax_exact/T2_rho0.2_d20_alpha0.5.nc").unlink()
    gd = "data/gd/fig2b/softmax_exact/T2_beta1.0_rho0.5_d16_alpha0.1.nc"
    se = "data/se/fig1a/hardmax_T2_rho0.5_exact.nc"
    (tmp_path / gd).write_bytes((tmp_path / gd).read_bytes()[:300])
    (tmp_path / se).unlink()
    dry = integrity.repair(jobs, tmp_path, dry_run=True)
    assert (tmp_path / gd).exists() and (tmp_path / "figures/fig2b.pdf").exists()  # untouched
    rep = integrity.repair(jobs, tmp_path)
    assert dry.missing == rep.missing
    assert rep[0].startswith(f"aimlib: corrupt cache {gd}: truncated")
    assert (tmp_path / (gd + ".corrupt")).exists() and not (tmp_path / gd).exists()
    gone = {"data/agg/fig2b/gd_softmax_exact_T2_beta1.0_rho0.5_d16.nc",
            "data/agg/fig2b/agd_softmax_exact_T2_beta1.0_rho0.5_d16.nc",
            "figures/fig2b.pdf", "figures/fig2b.png", "figures/fig1a.pdf", "figures/fig1a.png",
            "data/theory/fig1a/hardmax_T2_rho0.5_exact.nc"}  # fig1a's theory lines, from se
    for f in gone:
        assert not (tmp_path / f).exists(), f
    assert rep.missing == {gd, se, "data/amp/fig1a/hardmax_exact/T2_rho0.2_d20_alpha0.5.nc"
                           } | (gone - {"figures/fig2b.png", "figures/fig1a.png"})
    # everything else is left alone: fig3's results (no record, no corrupt input), the
    # aggregate made from other inputs, the other aggregates, the data
    assert (tmp_path / "figures/fig3.pdf").exists() and (tmp_path / other).exists()
    assert (tmp_path / "data/agg/fig2b/amp_softmax_exact_T2_beta1.0_rho0.5_d20.nc").exists()
    assert "5 result(s) made from missing caches removed" in rep[-1]


@pytest.mark.parametrize("how", ["plain", "from a numba kernel"])
def test_ctrl_c_in_a_job_is_one_line_and_status_130(tmp_path, how):
    """Ctrl-C inside a job: exit status 130 and one line in its log, no traceback, whether the
    KeyboardInterrupt arrives in Python or, during a numba kernel, as the SystemError that
    CPython raises from it when the kernel returns (``returned a result with an exception
    set``, caused by the KeyboardInterrupt)."""
    from aimlib.pipeline.jobs import job_log

    def interrupt():
        if how == "plain":
            raise KeyboardInterrupt
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as e:
            raise SystemError("CPUDispatcher(<function k>) returned a result with an exception "
                              "set") from e

    log = tmp_path / "job.log"
    with pytest.raises(SystemExit) as exit_, job_log(str(log)):
        interrupt()
    assert exit_.value.code == 130
    text = log.read_text()
    assert "interrupted (Ctrl-C); nothing was written" in text and "Traceback" not in text


def test_a_failing_job_keeps_its_traceback(tmp_path):
    """Any other error is not mistaken for Ctrl-C: its traceback goes to the job's log."""
    from aimlib.pipeline.jobs import job_log

    log = tmp_path / "job.log"
    with pytest.raises(SystemError), job_log(str(log)):
        raise SystemError("something else")
    assert "Traceback" in log.read_text() and "interrupted" not in log.read_text()


@pytest.mark.parametrize("hours,text", [(0.0, "0 s"), (48 / 3600, "48 s"), (0.5, "30 min"),
                                        (59.4 / 60, "59 min"), (1.0, "1.0 h"), (52.13, "52.1 h"),
                                        (float("nan"), "unknown")])
def test_durations_read_in_their_unit(hours, text):
    """Wall times below an hour in minutes, below a minute in seconds (a 48 s run is not
    'about 0.00 h')."""
    assert cost.format_hours(hours) == text


def test_run_ends_with_its_figures_and_the_report_command(tmp_path, monkeypatch):
    from aimlib.pipeline.tracking import end_of_run

    monkeypatch.chdir(tmp_path)
    outs = ["data/se/fig2b/x.nc", "figures/fig11.png", "figures/fig11.pdf", "figures/fig2b.png",
            "figures/fig_steps.png", "figures/fig1a.png", "figures/config.yaml"]
    line = end_of_run(outs, [str(tmp_path / "config" / "quick.yaml")], started=None)
    assert line == ("aimlib: done. 4 figures written to figures/ (PNG and PDF): fig1a, fig2b, "
                    "fig11, fig_steps. The report: snakemake --report report.html "
                    "--configfile config/quick.yaml")
    assert end_of_run(["figures/config.yaml"]).endswith(
        "no figure needed remaking (figures/). The report: snakemake --report report.html")


SCRIPTS = sorted(p.stem for p in (Path(__file__).parent.parent / "workflow" / "scripts").glob(
    "*.py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_ctrl_c_while_a_job_script_imports_is_quiet(root, script):
    """Ctrl-C that arrives while a job script imports aimlib (the job's first second): the
    process exits with status 130 and prints nothing. The SIGINT is sent from an import hook at
    the script's first import of aimlib, so that it lands there every time."""
    prelude = (
        "import importlib.abc, os, signal, sys\n"
        "class Hook(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'aimlib':\n"
        "            sys.meta_path.remove(self)\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Hook())\n"
        "snakemake = None\n"
        f"src = open({str(root / 'workflow' / 'scripts' / (script + '.py'))!r}).read()\n"
        "exec(compile(src, 'job.py', 'exec'))\n")
    res = subprocess.run([sys.executable, "-c", prelude], capture_output=True, text=True,
                         timeout=120, preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                       signal.SIG_DFL))
    assert res.returncode == 130, res.stderr[-2000:]
    assert res.stdout == "" and res.stderr == ""


def test_ctrl_c_while_writing_keeps_the_previous_file(tmp_path):
    """An interrupted write leaves the previous file as it was and no temporary file."""
    from aimlib.pipeline.io import atomic_write

    path = tmp_path / "fig.png"
    path.write_bytes(b"previous")

    def write(tmp):
        Path(tmp).write_bytes(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, write)
    assert path.read_bytes() == b"previous" and [p.name for p in tmp_path.iterdir()] == [
        "fig.png"]


def test_a_run_records_what_made_it_for_its_jobs(mini, tmp_path):
    """The commit and config files the Snakefile passes at the start are what a job of that run
    reads back (the figures' metadata); a job of no recorded run reads nothing."""
    jobs = cost.planned_jobs(mini)
    fig = next(j.output for j in jobs if j.stage == "figure")
    made_by = {"commit": "0123456789ab+changes", "configfiles": ["config/mini.yaml"]}
    tracking.start_run(mini, [j.output for j in jobs], 2, [], out=io.StringIO(),
                       sleep=lambda s: None, run_dir=tmp_path / "run", made_by=made_by)
    assert tracking.run_provenance(fig, run_dir=tmp_path / "run") == made_by
    assert tracking.run_provenance("figures/nothing.pdf", run_dir=tmp_path / "run") == {}
    assert tracking.checkout_commit(tmp_path) == "unknown"  # not a git checkout
