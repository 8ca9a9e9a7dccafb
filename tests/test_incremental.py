"""Incremental reruns, interrupts and reproducibility of the workflow, on a tiny config.

The mini config (tests/data/mini.yaml) has every stage; it is run once, then each test edits one
thing and asks ``snakemake -n`` which jobs it would run.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xarray as xr
import yaml
from conftest import copy_workflow

# one worker runs this module (pytest -n 2 --dist loadgroup), so the mini workflow of `done` is
# run once, not once per worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("mini_workflow")]

MINI = "config/mini.yaml"


def _snakemake(cwd, *args, env=None, timeout=900):
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _copy_workflow(root, dest: Path) -> Path:
    return copy_workflow(dest, mini=True)


def _run(wd, configfile=MINI, *extra):
    res = _snakemake(wd, "--cores", "2", "--configfile", configfile, *extra)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res


@pytest.fixture(scope="session")
def done(root, tmp_path_factory):
    """The mini workflow, run to completion once per session (session scope: the worker that
    runs this group may run other modules' tests in between, and pytest tears a module-scoped
    fixture down when it leaves the module)."""
    wd = _copy_workflow(root, tmp_path_factory.mktemp("mini"))
    _run(wd)
    return wd


def planned(wd, configfile=MINI, env=None, *, cost=False):
    """(rule, first output) of every job a dry run would execute; with ``cost``, also the
    dry run's stderr (aimlib's cost lines)."""
    res = _snakemake(wd, "-n", "--cores", "2", "--configfile", configfile, env=env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    jobs = _listed(res)
    return (jobs, res.stderr) if cost else jobs


def _listed(res) -> list[tuple[str, str]]:
    jobs, rule = [], None
    for line in res.stdout.splitlines():
        m = re.match(r"^(?:local)?rule (\w+):", line)
        if m:
            rule = m.group(1)
            if rule == "all":
                rule = None
            continue
        if rule and line.startswith("    output: "):
            # the first output, without Snakemake's flag annotation (" (update)")
            jobs.append((rule, line.split(": ", 1)[1].split(", ")[0].split(" (")[0]))
            rule = None
    return jobs


def _edited(wd, edit) -> str:
    conf = yaml.safe_load((wd / MINI).read_text())
    edit(conf)
    path = wd / "config" / "edited.yaml"
    path.write_text(yaml.safe_dump(conf, sort_keys=False))
    return "config/edited.yaml"


def _rules(jobs):
    """Rules of the planned jobs, without the resolved-config record (figures/config.yaml),
    which any config change re-writes by design."""
    return {r for r, _ in jobs if r != "config_record"}


def test_complete_run_has_nothing_left(done):
    assert planned(done) == []
    assert not list((done / "data").rglob(".*.nc*")), "temporary files left behind"
    # Every rule has a log; long jobs show progress (a tqdm line per refresh) in it.
    logs = list((done / "logs").rglob("*.log"))
    assert {p.relative_to(done / "logs").parts[0] for p in logs} >= {
        "se_curve", "theory", "amp", "amp_aggregate", "gd", "gd_aggregate", "finite_size",
        "figure"}
    amp_log = next((done / "logs" / "amp").rglob("*.log")).read_text()
    assert "AMP iterations, seed 0:" in amp_log and "\r" not in amp_log and "host " in amp_log
    assert "Adam steps, seed 0:" in next((done / "logs" / "gd").rglob("*.log")).read_text()


def test_changing_one_rho_reruns_only_that_rho(done):
    cf = _edited(done, lambda c: c["experiments"]["fig1a"].update(rho=[0.2, 0.6]))
    jobs = planned(done, cf)
    assert _rules(jobs) == {"se_curve", "theory", "amp", "amp_aggregate", "figure"}
    for rule, out in jobs:
        if rule not in ("figure", "config_record"):
            assert "rho0.6" in out, (rule, out)
    assert [o for r, o in jobs if r == "figure"] == ["figures/fig1a.pdf"]
    assert sum(r == "amp" for r, _ in jobs) == 2  # two alphas


def test_changing_amp_damping_reruns_amp_not_se(done):
    cf = _edited(done, lambda c: c["experiments"]["fig1a"]["amp"].update(damping=0.3))
    jobs = planned(done, cf)
    assert _rules(jobs) == {"amp", "amp_aggregate", "figure"}
    assert all("/fig1a/" in o for r, o in jobs if r.startswith("amp"))
    assert sum(r == "amp" for r, _ in jobs) == 4


def test_editing_amp_module_reruns_amp_jobs(done, root, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(root / "src" / "aimlib", src / "aimlib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(src / "aimlib" / "algorithms" / "amp.py", "a") as fh:
        fh.write("\n# an edit that changes the module's hash\n")
    env = dict(os.environ, PYTHONPATH=str(src))
    jobs = planned(done, env=env)
    rules = _rules(jobs)
    assert "amp" in rules and not rules & {"se_curve", "se_small_width", "gd", "spectral"}
    n_amp = sum(1 for _ in (done / "data" / "amp").rglob("*.nc"))
    assert sum(r == "amp" for r, _ in jobs) == n_amp
    assert planned(done) == []  # the unedited sources: still nothing to do


def test_changing_figure_style_reruns_only_figures(done):
    cf = _edited(done, lambda c: c["style"].update(dpi=72, line_width=2.0))
    jobs = planned(done, cf)
    assert {r for r, _ in jobs} == {"figure", "config_record"}
    assert sum(r == "figure" for r, _ in jobs) == 3


def test_adding_alphas_computes_only_new_points(done):
    cf = _edited(done, lambda c: c["experiments"]["fig1a"]["amp"].update(
        alpha={"values": [0.5, 1.0, 2.0]}))
    jobs = planned(done, cf)
    assert _rules(jobs) == {"amp", "amp_aggregate", "figure"}
    for rule, out in jobs:
        if rule == "amp":
            assert out.endswith("alpha2.0.nc"), out
    assert sum(r == "amp" for r, _ in jobs) == 2  # two rhos at the new alpha


def test_adding_seeds_reruns_the_points_of_that_group_only(done):
    """A job runs every seed of its point, so more seeds re-run that experiment's points (and
    nothing of the other experiments, nor SE)."""
    cf = _edited(done, lambda c: c["experiments"]["fig2b"]["amp"].update(seeds=2))
    jobs = planned(done, cf)
    assert _rules(jobs) == {"amp", "amp_aggregate", "figure"}
    assert all("/fig2b/" in o or o in ("figures/fig2b.pdf", "figures/config.yaml")
               for _, o in jobs), jobs
    assert sum(r == "amp" for r, _ in jobs) == 1


def test_dry_run_cost_counts_the_jobs_snakemake_will_run(done):
    """The dry run's cost counts Snakemake's own job list: outputs that exist but were made with
    other parameters (a changed seed count) are counted, per figure, and nothing else."""
    cf = _edited(done, lambda c: c["experiments"]["fig2b"]["amp"].update(seeds=2))
    jobs, err = planned(done, cf, cost=True)
    assert jobs and all((done / o).exists() for _, o in jobs if o.endswith(".nc"))
    m = re.search(r"the (\d+) jobs Snakemake will run", err)
    assert m, err[-2000:]
    assert int(m.group(1)) == len(jobs)
    lines = {ln.split()[0]: int(ln.split()[1]) for ln in err.splitlines()
             if re.match(r"^  fig\w+ +\d+ jobs", ln)}
    by_figure = {}
    for _, out in jobs:
        fig = re.search(r"(?:/|figures/)(fig\w+?)(?:/|\.pdf)", out)
        if fig:
            by_figure[fig.group(1)] = by_figure.get(fig.group(1), 0) + 1
    assert lines == by_figure, (lines, jobs)
    # the unedited config: nothing to run, and the dry run says so
    jobs, err = planned(done, cost=True)
    assert jobs == [] and "aimlib: nothing to run" in err


def test_same_config_twice_gives_identical_caches(done, root, tmp_path):
    """A second, independent run of the same config writes bit-identical netCDF caches and
    figures."""
    other = _copy_workflow(root, tmp_path)
    _run(other)
    files = sorted(p.relative_to(done) for p in (done / "data").rglob("*.nc"))
    assert len(files) > 20
    for rel in files + [Path("figures") / f"{f}.png" for f in ("fig1a", "fig2b", "fig3")]:
        assert (done / rel).read_bytes() == (other / rel).read_bytes(), rel


def test_interrupt_leaves_no_corrupt_cache(root, tmp_path):
    """SIGINT during a long AMP job, then a re-run: every cache opens, nothing half-written,
    and the files the interrupted run was remaking (the AMP point's cache, made before with
    fewer iterations, and the figure) are the previous ones, byte for byte."""
    import hashlib

    wd = _copy_workflow(root, tmp_path)
    short = _edited(wd, lambda c: c["experiments"]["fig1a"]["amp"].update(
        d=100, alpha={"values": [6.0]}, tol=1e-30, max_iter=2))
    res = _snakemake(wd, "figures/fig1a.png", "--cores", "2", "--configfile", short)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    kept = ["figures/fig1a.png", "figures/fig1a.pdf"] + [
        f"data/amp/fig1a/hardmax_exact/T2_rho{rho}_d100_alpha6.0.nc"
        for rho in (0.2, 0.5)]

    def digests():
        return [hashlib.sha256((wd / k).read_bytes()).hexdigest() for k in kept]

    before = digests()
    # d = 100, alpha = 6 (n = 60,000): about 0.25 s per iteration on a quiet machine; tol 1e-30
    # is out of reach, so the run uses its whole budget of 80 iterations (restarts included) and
    # is still going about 15 seconds after its 10th, when it is interrupted; the re-run that
    # resumes it costs the same 80 iterations
    slow = _edited(wd, lambda c: c["experiments"]["fig1a"]["amp"].update(
        d=100, alpha={"values": [6.0]}, tol=1e-30, max_iter=80))
    target = "figures/fig1a.png"
    # Targets go before --configfile, which takes every following word as a config file.
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", target, "--cores", "1",
                             "--configfile", slow],
                            cwd=wd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True,
                            # a pytest-xdist worker may have inherited SIGINT as ignored, which
                            # survives exec; a user's shell gives the default disposition
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    logs = wd / "logs" / "amp" / "fig1a"
    deadline = time.time() + 300
    while time.time() < deadline:
        running = [p for p in logs.rglob("*.log") if "iteration   10" in p.read_text()]
        if running:
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("the AMP job never started:\n" + proc.communicate()[0][-3000:])
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole foreground process group
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode != 0, out[-2000:]
    # the job stops quietly: status 130, one line in its log, no traceback anywhere
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out[-3000:]
    assert "non-zero exit status 130" in out
    assert "interrupted (Ctrl-C); nothing was written" in running[0].read_text()
    assert "the same command resumes where it stopped" in out
    interrupted = wd / "data" / "amp" / "fig1a" / "hardmax_exact" / running[0].name.replace(
        ".log", ".nc")
    assert interrupted.relative_to(wd).as_posix() in kept[2:]
    assert digests() == before  # nothing removed that the run did not replace
    assert not list((wd / "data").rglob(".*.nc*")), "temporary files left behind"
    for p in (wd / "data").rglob("*.nc"):
        xr.load_dataset(p)  # every remaining cache is complete
    res = _snakemake(wd, target, "--cores", "2", "--configfile", slow)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert xr.load_dataset(interrupted)["iterations"].max().item() > 2


#: One cache of each kind: SE, AMP data, GD data, an aggregate, the finite-size fit.
VICTIMS = ["data/se/fig1a/hardmax_T2_rho0.5_exact.nc",
           "data/amp/fig1a/hardmax_exact/T2_rho0.5_d20_alpha1.0.nc",
           "data/gd/fig2b/softmax_exact/T2_beta1.0_rho0.5_d16_alpha0.1.nc",
           "data/agg/fig2b/amp_softmax_exact_T2_beta1.0_rho0.5_d20.nc",
           "data/agg/fig3/finite_size_amp.nc"]


def _all_valid(wd):
    from aimlib.pipeline.io import read_cache

    for p in (wd / "data").rglob("*.nc"):
        read_cache(p, quarantine=False)  # opens, with its provenance


def test_truncated_caches_are_named_and_remade_by_the_same_command(done, tmp_path):
    """`truncate` on one cache of each kind: the same command names each in one line (no
    traceback), moves it aside and remakes it and everything made from it; a second run has
    nothing to do."""
    wd = tmp_path / "wd"
    shutil.copytree(done, wd, symlinks=True)
    for victim in VICTIMS:
        with open(wd / victim, "r+b") as fh:
            fh.truncate(100 if "agg" in victim else 3000)
    res = _snakemake(wd, "--cores", "2", "--configfile", MINI)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "Traceback" not in out
    for victim in VICTIMS:
        assert f"aimlib: corrupt cache {victim}: truncated" in out, out[-3000:]
        path = wd / victim
        assert path.with_name(path.name + ".corrupt").exists()
        assert path.exists()
    _all_valid(wd)
    assert planned(wd) == []


def test_cache_found_corrupt_by_a_job_is_remade_by_the_same_command(done, tmp_path):
    """A cache whose length is right but whose content is not (found only when a job opens
    it): that job fails with one line and moves it aside; the same command again remakes it
    and everything made from it."""
    wd = tmp_path / "wd"
    shutil.copytree(done, wd, symlinks=True)
    victim = VICTIMS[1]
    path = wd / victim
    size = path.stat().st_size
    with open(path, "r+b") as fh:  # zero everything past the superblock, keep the length
        fh.seek(128)
        fh.write(b"\0" * (size - 128))
    res = _snakemake(wd, "--cores", "2", "--configfile", MINI)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert f"aimlib: corrupt cache {victim}: it does not open" in out, out[-3000:]
    assert "the same command again remakes it" in out and "Traceback" not in out
    assert not path.exists() and path.with_name(path.name + ".corrupt").exists()
    res = _snakemake(wd, "--cores", "2", "--configfile", MINI)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "results made from missing caches" in res.stderr or "result(s) made from missing" \
        in res.stderr
    assert xr.load_dataset(path).attrs["code_version"]
    _all_valid(wd)
    assert planned(wd) == []
