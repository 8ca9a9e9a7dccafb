"""The Snakemake workflow: dry runs of both presets, config errors, the quick preset end to end."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import xarray as xr
import yaml
from conftest import copy_workflow

from aimlib.figures.registry import FIGURES
from aimlib.pipeline import config as cfg
from aimlib.pipeline import cost, paths

FIGS = list(FIGURES)


def _snakemake(cwd, *args, timeout=1800):
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture()
def workdir(root, tmp_path):
    """A copy of the workflow (not of data/ or figures/) in a temporary folder."""
    return copy_workflow(tmp_path)


@pytest.mark.parametrize("configfile", [None, "config/quick.yaml"])
def test_dry_run(workdir, configfile):
    args = ["-n", "--cores", "2"] + (["--configfile", configfile] if configfile else [])
    res = _snakemake(workdir, *args)
    assert res.returncode == 0, res.stdout + res.stderr
    for f in FIGS:
        assert f"figures/{f}.png" in res.stdout
    # The cost is printed before any job: jobs and CPU-hours per figure, the wall time at the
    # given cores; its job count is the DAG's (every job but `all`).
    m = re.search(r"^\s+total\s+(\d+) jobs\s+([0-9.]+) (CPU-h|CPU-min)$", res.stderr, re.M)
    assert m, res.stderr[:3000]
    planned = re.search(r"^total\s+(\d+)$", res.stdout, re.M)
    assert planned and int(m.group(1)) == int(planned.group(1)) - 1
    assert "wall time at 2 cores" in res.stderr
    assert all(re.search(rf"^\s+{f}\s+\d+ jobs", res.stderr, re.M) for f in FIGS)
    # the total is the library's estimate of the whole configuration (an empty cache)
    conf = cfg.validate(yaml.safe_load((workdir / (configfile or "config/config.yaml"))
                                       .read_text()), workdir / "config" / "schema.yaml")
    hours = sum(cost.estimate(conf).cpu_hours.values())
    shown = float(m.group(2)) / (1.0 if m.group(3) == "CPU-h" else 60.0)
    assert shown == pytest.approx(hours, abs=0.006 if m.group(3) == "CPU-h" else 0.0002)
    assert (m.group(3) == "CPU-h") == (hours >= 1)
    if configfile is None:  # the paper preset: a tenth of the one-job-per-run layout
        assert int(m.group(1)) <= 2500


def test_bad_config_names_key(workdir):
    text = (workdir / "config" / "quick.yaml").read_text()
    (workdir / "config" / "bad.yaml").write_text(text.replace("rho: [0.2, 0.5, 1.0]",
                                                              "rho: [0.2, -0.5, 1.0]"))
    res = _snakemake(workdir, "-n", "--cores", "1", "--configfile", "config/bad.yaml")
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "experiments.fig1a.rho[1] = -0.5: -0.5 is less than or equal to the minimum of 0" \
        in out
    assert "Failed validating" not in out and "$defs" not in out  # no schema dump
    assert "Traceback" not in out and 'File "' not in out  # no traceback lines either


def test_every_config_error_at_once(workdir):
    """Mistakes in several experiments, of the schema and of the semantic checks, are reported
    together, one line each in the config's order, without traceback lines."""
    conf = yaml.safe_load((workdir / "config" / "quick.yaml").read_text())
    exps = conf["experiments"]
    exps["fig1a"]["amp"]["d"] = -60
    exps["fig3"]["amp"]["d"] = -60
    exps["fig2b"]["gd"]["alpha_bar_max"] = 1e-4
    (workdir / "config" / "bad.yaml").write_text(yaml.safe_dump(conf, sort_keys=False))
    res = _snakemake(workdir, "-n", "--cores", "1", "--configfile", "config/bad.yaml")
    assert res.returncode == 1
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("experiments.")]
    assert lines == [
        "experiments.fig1a.amp.d = -60: -60 is less than the minimum of 2",
        "experiments.fig2b.gd.alpha_bar_max: 0.0001 is below the grid's smallest point "
        "(alpha_bar = 0.04 at T = 2, rho = 0.5, softmax); raise it or remove it",
        "experiments.fig3.amp.d = -60: -60 is less than the minimum of 2"], res.stderr
    assert "aimlib: the configuration is not valid:" in res.stderr
    assert "Traceback" not in res.stderr and 'File "' not in res.stderr


def test_semantic_config_error_names_key(workdir):
    text = (workdir / "config" / "quick.yaml").read_text()
    bad = text.replace("channel: hardmax\n    T: 2\n    rho: [0.2, 0.5, 1.0]",
                       "channel: hardmax\n    T: 5\n    rho: [0.2, 0.5, 1.0]")
    assert bad != text
    (workdir / "config" / "bad.yaml").write_text(bad)
    res = _snakemake(workdir, "-n", "--cores", "1", "--configfile", "config/bad.yaml")
    assert res.returncode != 0
    msg = "experiments.fig1a.T[0]: T must be an integer in [2, 4] for the hardmax channel, got T=5"
    assert msg in res.stdout + res.stderr
    # T = 3 is valid, but not with the published density output (a T = 2 formula)
    (workdir / "config" / "bad.yaml").write_text(
        bad.replace("T: 5\n", "T: 3\n", 1))
    res = _snakemake(workdir, "-n", "--cores", "1", "--configfile", "config/bad.yaml")
    assert res.returncode != 0
    assert ("experiments.fig1a.se.variant: variant must be 'exact' for hardmax at T=3"
            in res.stdout + res.stderr)


def test_lint(workdir):
    """`snakemake --lint` finds nothing (every rule: log, params, a software environment)."""
    res = _snakemake(workdir, "--lint")
    out = res.stdout + res.stderr
    lints = [line.strip() for line in out.splitlines() if line.startswith("    * ")]
    assert res.returncode == 0 and not lints, out
    assert "Congratulations, your workflow is in a good condition!" in out


def test_snakefmt_clean(root):
    """The Snakefile and the rule files are as snakefmt writes them (line length 100,
    pyproject.toml)."""
    snakefmt = Path(sys.executable).parent / "snakefmt"
    res = subprocess.run([str(snakefmt), "--check", "Snakefile", "workflow/rules"], cwd=root,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_catalog_metadata(root):
    """The Snakemake workflow catalog's file: usage with the presets and the report; the
    config README names every preset."""
    import yaml

    meta = yaml.safe_load((root / ".snakemake-workflow-catalog.yml").read_text())
    usage = meta["usage"]
    assert usage["mandatory-flags"]["flags"] and usage["software-stack-deployment"]["conda"]
    assert usage["report"] is True
    text = (root / "config" / "README.md").read_text()
    for preset in sorted((root / "config").glob("*.yaml")):
        if preset.name != "schema.yaml":
            assert f"`{preset.name}`" in text, preset.name


def test_every_rule_declares_log_and_resources(workdir):
    """Every rule but `all` has a log and threads/mem_mb/runtime computed for its jobs."""
    res = _snakemake(workdir, "-n", "--cores", "2", "--configfile", "config/quick.yaml")
    assert res.returncode == 0, res.stderr[-2000:]
    blocks = re.split(r"\n(?=(?:local)?rule \w+:)", res.stdout)
    seen = set()
    for b in blocks:
        m = re.match(r"(?:local)?rule (\w+):", b)
        if not m or m.group(1) == "all":
            continue
        seen.add(m.group(1))
        assert "    log: " in b, b[:400]
        assert re.search(r"resources: .*mem_mb=\d+.*runtime=\d+", b), b[:600]
    assert {"se_curve", "amp", "gd", "finite_size", "figure"} <= seen


def _figure_inputs(workdir, fig):
    """The caches a figure is drawn from, found by their paths (workflow/rules/common.smk)."""
    data = workdir / "data"
    from aimlib.algorithms import aggregate_kinds

    globs = {"se": [f"se/{fig}/*_T*.nc"], "small_width": [f"se/{fig}/small_width_*.nc"],
             "finite_size": [f"agg/{fig}/finite_size_*.nc"],
             "recovery": [f"agg/{fig}/recovery_*.nc"], "theory": [f"theory/{fig}/*.nc"],
             **{k: [f"agg/{fig}/{k}_*.nc"] for k in aggregate_kinds()}}
    return {k: [xr.load_dataset(p) for g in globs[k] for p in sorted(data.glob(g))]
            for k in FIGURES[fig].inputs}


def _drawn_y(figure):
    """The y data of every line the figure drew (errorbar data lines included)."""
    import numpy as np

    return [np.asarray(line.get_ydata(), dtype=float) for ax in figure.axes
            for line in ax.get_lines()]


def _drawn(ys, expected):
    import numpy as np

    expected = np.asarray(expected, dtype=float)
    return any(y.shape == expected.shape and np.allclose(y, expected, rtol=1e-12,
                                                         equal_nan=True) for y in ys)


def _check_drawn_data(workdir, fig):
    """Read the drawn data back from the matplotlib artists: every SE curve's usable errors
    (unconverged points NaN), every AMP / GD / AGD aggregate's means (fig8: the measured test
    errors) and every theory line the figure draws (the spectral estimator's one-step
    prediction where it has spectral markers, the large-alpha laws from alpha (fig11:
    alpha_bar) = 1 on, the SE test errors at the usable SE points), exactly as cached."""
    import matplotlib.pyplot as plt
    import numpy as np

    from aimlib import figures
    from aimlib.figures.legend import label_overlaps, legend_overlaps
    from aimlib.theory.state_evolution import usable

    inputs = _figure_inputs(workdir, fig)
    # as the figure job draws it (the config's axes and style): no legend over data, no label
    # over a label, and the data drawn are the caches' (axes limits do not change the artists')
    plan = cfg.plan(yaml.safe_load((workdir / "config" / "quick.yaml").read_text()))
    figure = figures.draw(fig, inputs, axes=plan.axes(fig), style=plan.style)
    assert legend_overlaps(figure) == [], fig
    assert label_overlaps(figure) == 0, fig
    ys = _drawn_y(figure)
    checked = 0
    if fig == "fig_steps":  # errors against steps: each alpha's checkpoint means, SE as levels
        for ds in inputs["se"]:
            for e in np.where(usable(ds), ds["error"].values, np.nan):
                assert (e <= 1e-12) == (not _drawn(ys, [e, e])), (fig, ds.attrs, e)
                checked += 1
        for kind in ("gd", "agd"):
            for agg in inputs[kind]:
                for row in agg["checkpoint_mean"].values:
                    assert _drawn(ys, row), (fig, kind, agg.attrs)
                    checked += 1
        plt.close(figure)
        assert checked > 0, fig
        return
    if fig == "fig13":  # thresholds against the width: the seeds' medians, Bayes, conjecture
        for rec in inputs["recovery"]:
            for g in range(rec.sizes["group"]):
                p = rec.isel(group=g)
                med = float(np.median(p["threshold"].isel(checkpoint=-1).values))
                if np.isfinite(med):  # inf: a mark on the top edge
                    assert _drawn(ys, [med]), (fig, rec.attrs, g)
                    checked += 1
                bayes = float(p["bayes_alpha"])
                assert np.isfinite(bayes) and _drawn(ys, [bayes, bayes]), (fig, g)
                curve = p["conjecture_curve"].values
                assert (str(p["channel"].values) == "gaussian") == bool(
                    np.isfinite(curve).all() and _drawn(ys, curve)), (fig, g)
                checked += 2
        plt.close(figure)
        assert checked > 0, fig
        return
    if fig != "fig8":  # fig8 draws SE test errors computed from q, not the error
        for ds in inputs.get("se", []) + inputs.get("small_width", []):
            # untied self-attention's curve is its two bounds (fig12)
            for var in [v for v in ("error", "error_lower", "error_upper") if v in ds]:
                assert _drawn(ys, np.where(usable(ds), ds[var].values, np.nan)), (fig, ds.attrs)
                checked += 1
    for kind in ("amp", "gd", "agd", "spectral"):
        for agg in inputs.get(kind, []):
            var = "test_error_mean" if fig == "fig8" else "mean"
            assert _drawn(ys, agg[var].values), (fig, kind, agg.attrs)
            checked += 1

    def key(ds):
        return (ds.attrs["channel"], int(ds.attrs["T"]), float(ds.attrs["rho"]),
                ds.attrs.get("variant", "exact"))

    spectral = {key(a) for a in inputs.get("spectral", [])}
    for th in inputs.get("theory", []):
        (se,) = [ds for ds in inputs["se"] if key(ds) == key(th)]
        for line in th.attrs["lines"].split():
            v = th[line].values
            if line == "one_step" and key(th) not in spectral:
                continue  # drawn only beside the spectral markers of the same curve
            if line == "large_alpha":
                v = v[th["alpha_bar" if fig == "fig11" else "alpha"].values >= 1.0]
            if line.startswith("test_error"):
                v = np.where(usable(se), v, np.nan)
            assert _drawn(ys, v), (fig, line, th.attrs)
            checked += 1
    plt.close(figure)
    assert checked > 0, fig


@pytest.mark.slow
def test_quick_preset_end_to_end(workdir):
    res = _snakemake(workdir, "--cores", "2", "--configfile", "config/quick.yaml")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    # the cost of this run's jobs before the first, and progress lines that end at all done,
    # in the terminal and in Snakemake's log
    out = res.stdout + res.stderr
    n = int(re.search(r"estimated cost of this run: the (\d+) jobs Snakemake will run",
                      out).group(1))
    assert f"all {n}/{n} jobs" in out
    (log,) = (workdir / ".snakemake" / "log").glob("*.snakemake.log")
    assert f"all {n}/{n} jobs" in log.read_text()
    assert "Shell command" not in out  # script rules only: no `Shell command: None` lines
    # the run ends with what it made, where, and the report command
    assert (f"{len(FIGS)} figures written to figures/ (PNG and PDF): fig1a, fig1b" in out
            and "The report: snakemake --report report.html --configfile config/quick.yaml"
            in out), out[-2000:]
    from PIL import Image

    for f in FIGS:
        for ext in ("pdf", "png"):
            p = workdir / "figures" / f"{f}.{ext}"
            assert p.is_file() and p.stat().st_size > 10_000, p
        # what made it: the checkout's commit (the copy is no git checkout) and the config
        assert Image.open(workdir / "figures" / f"{f}.png").text["Source"].endswith(
            f"commit unknown, configfile config/quick.yaml, figure {f}")
    se = sorted((workdir / "data" / "se").rglob("*.nc"))
    assert se
    with xr.open_dataset(se[0]) as ds:
        assert "config" in ds.attrs and "code_version" in ds.attrs
        assert "alpha" in ds.coords and bool(ds["converged"].all())
    assert not (workdir / "data" / "teacher").exists()  # teacher data are drawn in the jobs
    with xr.open_dataset(next((workdir / "data" / "amp").rglob("*.nc"))) as ds:
        assert ds.sizes["seed"] >= 2 and "stop_reason" in ds and "error_history" in ds
    aggs = sorted((workdir / "data" / "agg").rglob("amp_*.nc"))
    # fig1a 3, fig2b 2, fig4 2, fig6 2, fig7 3, fig8 2, fig3 2 x 3 d, fig9 3 T x 3 delta,
    # fig10 2 channels x 5 token laws, fig11 2 T, fig12 3 cells (AMP has no untied self) x 2 T
    assert len(aggs) == 29 + 10 + 2 + 6
    # GD and AGD aggregates where the figure draws both (fig2b 2 T, fig4 2 beta, fig8 1,
    # fig_steps 2 T: 14), AGD only where it draws only AGD (fig3 2 d, fig9 2 T x 3 delta: 8;
    # fig10: 3 token laws; fig12: 4 cells x 2 T); none for fig13, whose recovery jobs
    # aggregate its data files themselves (2 widths for each of the two channels)
    assert len(list((workdir / "data" / "agg").rglob("*gd_*.nc"))) == 14 + 8 + 3 + 8
    for kind in ("gd", "agd"):
        rec = xr.load_dataset(workdir / "data" / "agg" / "fig13" / f"recovery_{kind}.nc")
        assert rec.sizes["group"] == 4 and rec.attrs["eps"] == 1e-3
        assert list(rec["checkpoint"].values) == [2**k for k in range(12)]
    assert len(list((workdir / "data" / "agg").rglob("spectral_*.nc"))) == 3 + 1  # fig1a, fig2b
    # theory lines for every SE curve of the figures that draw them, and none elsewhere
    plan = cfg.plan(yaml.safe_load((workdir / "config" / "quick.yaml").read_text()))
    theory = sorted(p.relative_to(workdir).as_posix()
                    for p in (workdir / "data" / "theory").rglob("*.nc"))
    assert theory == sorted(f for fig in FIGS for f in paths.theory_files(plan, fig))
    assert {t.split("/")[2] for t in theory} == {"fig1a", "fig2b", "fig7", "fig8", "fig11"}
    fs = xr.load_dataset(workdir / "data" / "agg" / "fig3" / "finite_size_amp.nc")
    assert set(fs["channel"].values) == {"softmax", "hardmax"} and list(fs["d"]) == [30, 50, 80]
    assert {"gap", "slope", "slope_err", "e_inf", "e_inf_err"} <= set(fs.data_vars)
    with xr.open_dataset(aggs[0]) as ds:
        assert {"mean", "std", "n_converged", "errors"} <= set(ds.data_vars)
        assert int(ds["n_runs"].sum()) == ds.sizes["alpha"] * ds.sizes["seed"]
    assert not list((workdir / "data").rglob("*.tmp"))
    for f in FIGS:
        _check_drawn_data(workdir, f)
    # Nothing left to do: a second run is a no-op.
    res = _snakemake(workdir, "-n", "--cores", "2", "--configfile", "config/quick.yaml")
    assert "Nothing to be done" in res.stdout + res.stderr
    # Snakemake's report: every figure with its caption, and the resolved config.
    res = _snakemake(workdir, "--report", "report.html", "--configfile", "config/quick.yaml")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Warning" not in res.stdout + res.stderr, res.stderr[-3000:]  # a clean report
    html = (workdir / "report.html").read_text()
    for f in FIGS:
        assert f'"figures/{f}.png"' in html, f
    assert html.count("Reproduces: ") >= len(FIGS) and "Corrections: " in html
    assert "The configuration this run used" in html and "0.237 here, 0.512 published" in html


def test_code_versions_are_derived_from_each_rules_script(root):
    """Each rule with a script passes `script_version("<its script>")`: the code version closed
    over the aimlib modules that script imports (`aimlib.pipeline.io.script_modules`); an
    algorithm's
    rules pass `algorithm_version`, the closure of that algorithm's entry (lazy imports
    included), so that a change to one algorithm re-runs only its jobs."""
    from aimlib.pipeline.io import code_version, module_closure, script_modules

    checked = 0
    for smk in (root / "workflow" / "rules").glob("*.smk"):
        for block in re.split(r"(?m)^rule ", smk.read_text())[1:]:
            sm = re.search(r'script:\s*\n\s*"\.\./scripts/([a-z_]+)\.py"', block)
            if not sm or block.startswith("config_record"):
                continue
            assert f'version=script_version("{sm.group(1)}")' in block, block.split(":")[0]
            checked += 1
    assert checked >= 4
    algs = (root / "workflow" / "rules" / "algorithms.smk").read_text()
    assert 'version=algorithm_version(_name, "run")' in algs
    assert 'version=algorithm_version(_name, "aggregate")' in algs
    run = root / "workflow" / "scripts" / "run.py"
    assert {"pipeline.aggregate", "algorithms", "pipeline.io", "model"} <= set(
        script_modules(run))
    closure = module_closure("algorithms.amp_entry", skip=("algorithms.resources",))
    assert {"algorithms.amp", "channels.softmax", "channels.hardmax", "channels.gaussian",
            "core.options", "core.kernels", "theory.generalisation"} <= set(closure)
    assert not {"algorithms.gd", "algorithms.spectral", "algorithms.resources"} & set(closure)
    versions = {code_version(f"algorithms.{a}_entry", script=run, exclude=("algorithms",))
                for a in ("amp", "gd", "spectral")}
    assert len(versions) == 3


def test_slope_fit_of_a_power_law():
    """fig7's slope fit: exact on a power law, with the error propagated from the means' sems
    (weighted least squares, written out); none from two points, nor where the error is more
    than half the slope."""
    import numpy as np

    from aimlib.figures.layers import slope_fit

    a = np.array([2.0, 4.0, 8.0])
    rel = np.array([0.1, 0.2, 0.1])
    slope, err = slope_fit(a, 0.1 * a**-2.0, 0.1 * a**-2.0 * rel)
    assert slope == pytest.approx(-2.0, rel=1e-12)
    w, x = 1.0 / rel**2, np.log(a)
    assert err == pytest.approx((w @ x**2 - (w @ x) ** 2 / w.sum()) ** -0.5, rel=1e-12)
    assert slope_fit(a[:2], 0.1 * a[:2] ** -2.0, 0.01 * a[:2] ** -2.0) is None
    # a slope of -0.2 known to +-0.2: not printed
    assert slope_fit(a, a**-0.2, 0.3 * a**-0.2) is None


UNCONVERGED = """seed: 1
se: {tol: 1.0e-10}
experiments:
  fig5:
    channel: softmax
    T: 2
    rho: 0.5
    se: {alpha_bar: {values: [0.5, 0.75]}%s}
"""


def test_unconverged_se_point_fails_its_job_unless_allowed(workdir):
    """alpha_bar = 0.75 is the softmax threshold at rho = 0.5, a marginal SE fixed point: the
    job fails naming the point; with se.allow_unconverged the curve is cached, flagged."""
    (workdir / "config" / "u.yaml").write_text(UNCONVERGED % "")
    target = "data/se/fig5/softmax_T2_beta1.0_rho0.5_exact.nc"
    res = _snakemake(workdir, target, "--cores", "1", "--configfile", "config/u.yaml")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "1 point(s) did not converge: alpha=0.1875 (uninformed start: max_iter; " in out, \
        out[-3000:]
    assert "experiments.fig5.se.allow_unconverged: true" in out
    assert "Traceback" not in out
    assert not (workdir / target).exists()
    (workdir / "config" / "u.yaml").write_text(UNCONVERGED % ", allow_unconverged: true")
    res = _snakemake(workdir, target, "--cores", "1", "--configfile", "config/u.yaml")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    ds = xr.load_dataset(workdir / target)
    assert ds["converged"].values.tolist() == [1, 0]
