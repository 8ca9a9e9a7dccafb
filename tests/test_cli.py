"""The ``aimlib`` command line: each subcommand against the library call it wraps."""

import csv
import io
import re
import subprocess
import sys

import numpy as np
import pytest

from aimlib import amp, cli, gd, prior
from aimlib import state_evolution as se
from aimlib.pipeline.io import read_cache
from aimlib.theory import mismatched


def run(capsys, *argv):
    status = cli.main(list(argv))
    out = capsys.readouterr().out
    return status, out


def rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def test_se_point_is_the_library_value(capsys):
    status, out = run(capsys, "se", "hardmax", "--rho", "0.5", "--alpha", "0.4583",
                      "--format", "csv")
    assert status == 0
    (r,) = rows(out)
    ref = se.solve("hardmax", 0.4583, 0.5)
    assert float(r["error"]) == pytest.approx(ref.error, rel=1e-5)
    assert float(r["alpha_bar"]) == pytest.approx(0.4583 / 0.5, rel=1e-5)
    assert r["converged"] == "yes"


def test_se_alpha_bar_and_grid(capsys):
    _, out = run(capsys, "se", "softmax", "--rho", "0.5", "--T", "3", "--alpha-bar", "0.2",
                 "0.5", "--format", "csv")
    got = [float(r["alpha"]) for r in rows(out)]
    np.testing.assert_allclose(got, [0.02, 0.05])  # alpha_bar = 10 alpha at T = 3
    _, out = run(capsys, "se", "hardmax", "--rho", "0.5", "--grid", "0.1", "2", "5", "--log",
                 "--format", "csv")
    r = rows(out)
    np.testing.assert_allclose([float(x["alpha"]) for x in r], np.geomspace(0.1, 2, 5),
                               rtol=1e-5)
    ref = se.curve("hardmax", np.geomspace(0.1, 2, 5), 0.5)
    np.testing.assert_allclose([float(x["error"]) for x in r], ref["error"].values, rtol=1e-5)


def test_se_netcdf_and_mismatched(capsys, tmp_path):
    path = tmp_path / "curve.nc"
    status, _ = run(capsys, "se", "hardmax", "--rho", "0.5", "--alpha", "0.45", "2",
                    "--variant", "mismatched", "--format", "netcdf", "-o", str(path))
    assert status == 0
    ds = read_cache(path)
    np.testing.assert_allclose(ds["error"].values,
                               [mismatched.solve(a, 0.5).error for a in (0.45, 2.0)], rtol=1e-9)
    assert "aimlib se hardmax --rho 0.5" in ds.attrs["config"]


def test_thresholds_and_mmse(capsys):
    _, out = run(capsys, "thresholds", "--rho", "0.5", "2", "--format", "csv")
    vals = [float(r["value"]) for r in rows(out)]
    assert vals[:2] == [pytest.approx(0.75), pytest.approx(1.0)]  # 2 rho - rho^2; 1 above
    assert vals[2] == pytest.approx(se.small_width_threshold("exact"), rel=1e-9)
    assert vals[3] == pytest.approx(se.small_width_threshold("density"), rel=1e-9)
    _, out = run(capsys, "mmse", "--rho", "0.5", "--delta", "0.1", "1", "--format", "csv")
    got = [float(r["mmse"]) for r in rows(out)]
    np.testing.assert_allclose(got, [prior.mmse(0.1, 0.5), prior.mmse(1.0, 0.5)], rtol=1e-9)


def test_amp_and_gd_runs_are_the_library_runs(capsys):
    status, out = run(capsys, "amp", "hardmax", "--rho", "0.5", "--alpha", "0.5", "--d", "30",
                      "--seed", "2", "--format", "csv")
    (r,) = rows(out)
    ref = amp.run_point("hardmax", 0.5, 0.5, 2, 30, 2)
    assert float(r["error"]) == pytest.approx(ref.error, rel=1e-5)
    assert r["stop_reason"] == ref.stop_reason
    assert status == (0 if ref.converged else 3)
    _, out = run(capsys, "gd", "--rho", "0.5", "--alpha-bar", "0.5", "--d", "20", "--seed",
                 "1", "--inits", "3", "--steps", "50", "--format", "csv")
    (r,) = rows(out)
    ref = gd.run_point(0.125, 0.5, 2, 20, 1, inits=3, steps=50)
    assert float(r["error_agd"]) == pytest.approx(ref.error, rel=1e-5)
    assert float(r["error_gd"]) == pytest.approx(ref.errors[0], rel=1e-5)


def test_missing_gpu_package_is_one_line_before_any_run(capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "cupy" else real(name, *a))
    with pytest.raises(SystemExit) as exc:
        cli.main(["gd", "--rho", "0.5", "--alpha", "0.1", "--d", "20", "--backend", "cupy"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "--backend: cupy needs the package 'cupy'" in err and ".[gpu]" in err


def test_gd_stop_rule_and_backend_on_the_command_line(capsys):
    pytest.importorskip("array_api_strict")
    argv = ["gd", "--rho", "0.5", "--alpha-bar", "0.3", "--d", "30", "--inits", "3", "--steps",
            "400", "--stop", "holdout", "--stop-window", "50", "--dtype", "float64",
            "--format", "csv"]
    _, out = run(capsys, *argv)
    (r,) = rows(out)
    ref = gd.run_point(0.075, 0.5, 2, 30, 0, inits=3, steps=400, stop="holdout",
                       stop_window=50, dtype="float64")
    assert int(r["steps_taken"]) == int(ref.steps_taken.max()) < 400
    assert r["stop_reason"] == ref.stop_reason == "holdout"
    _, out = run(capsys, *argv, "--backend", "array_api_strict")
    (x,) = rows(out)
    assert float(x["error_agd"]) == pytest.approx(float(r["error_agd"]), abs=1e-6)


@pytest.mark.parametrize("argv,match", [
    (["se", "hardmax", "--rho", "0.5", "--grid", "1", "0.5", "3"], "--grid"),
    (["se", "hardmax", "--rho", "-1", "--alpha", "0.5"], "rho"),
    (["se", "softmax", "--rho", "0.5", "--alpha", "0.5", "--variant", "mismatched"],
     "mismatched"),
    (["se", "hardmax", "--rho", "0.5", "--alpha", "0.5", "--format", "netcdf"], "--output"),
    (["amp", "hardmax", "--rho", "0.5", "--alpha", "0.5", "--d", "4"], "d=4"),
])
def test_bad_input_is_one_line(capsys, argv, match):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv,said", [
    # a misspelt option is named before the required option it hides
    (["se", "softmax", "--alpah", "0.1"], "unrecognized option --alpah; did you mean --alpha?"),
    (["se", "softmax", "--rho", "0.5", "--alpha=0.1", "--delat=1"],
     "unrecognized option --delat; did you mean --delta?"),
    (["amp", "hardmax", "--rho", "0.5", "--alpha", "0.1", "--d", "20", "--max-iters", "5"],
     "unrecognized option --max-iters; did you mean --max-iter?"),
    (["se", "softmx", "--rho", "0.5", "--alpha", "0.1"], "did you mean softmax?"),
    (["sr", "softmax"], "invalid choice: 'sr'"),
    # nothing close: no suggestion
    (["se", "softmax", "--rho", "0.5", "--alpha", "0.1", "--zzzzzz", "1"],
     "unrecognized option --zzzzzz\n"),
])
def test_typos_are_answered_with_the_closest_name(capsys, argv, said):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


def test_prefixes_and_values_are_not_typos(capsys):
    """argparse's unique prefixes still work."""
    _, out = run(capsys, "se", "softmax", "--rh", "0.5", "--alpha", "0.1")
    assert "0.392196" in out


@pytest.mark.parametrize("sub", ["", "se", "thresholds", "mmse", "amp", "gd"])
def test_help(capsys, sub):
    with pytest.raises(SystemExit) as exc:
        cli.main(([sub] if sub else []) + ["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "usage: aimlib" in out and re.search(r"examples:\n +aimlib ", out)
    # each default stated once, none for required arguments, flags or None
    assert "(default: None)" not in out and "(default: False)" not in out
    assert not re.search(r"\(default:[^)]*\)\s*\(default:", " ".join(out.split()))


def test_help_names_only_the_channels_a_subcommand_takes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["gd", "--help"])
    gd_help = " ".join(capsys.readouterr().out.split())
    T_help = gd_help.split("--T T tokens", 1)[1].split("--", 1)[0]
    assert "softmax 2" in T_help and "gaussian 1" in T_help and "hardmax" not in T_help
    with pytest.raises(SystemExit):
        cli.main(["thresholds", "--help"])
    capsys.readouterr()
    cli.main(["thresholds", "--rho", "0.5"])
    out = capsys.readouterr().out
    assert "(2 rho - rho^2 for rho <= 1, else 1)" in out and "(1 above)" not in out


def test_se_plot_draws_the_curve_it_prints(capsys, tmp_path, monkeypatch):
    """`aimlib se ... --plot FILE` saves the figure whose line is the SE curve: the figure the
    command drew (caught as it is made) holds the library's own SE errors on the grid, and the
    file is that figure, pixel for pixel."""
    import matplotlib.image as mpimg
    import matplotlib.pyplot as plt

    drawn = []
    real = cli.se_figure

    def spy(rows, label):
        drawn.append(real(rows, label))
        return drawn[-1]

    monkeypatch.setattr(cli, "se_figure", spy)
    monkeypatch.setattr(plt, "close", lambda fig=None: None)  # keep the figure to look at
    out_png = tmp_path / "se.png"
    cli.main(["se", "softmax", "--rho", "0.5", "--grid", "0.05", "1.2", "12", "--grid-in",
              "alpha_bar", "--format", "csv", "--plot", str(out_png)])
    (fig,) = drawn
    (line,) = [ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("SE softmax")]
    bars = np.linspace(0.05, 1.2, 12)
    ref = [se.solve("softmax", b / 4, 0.5, T=2) for b in bars]  # alpha_bar = 4 alpha at T = 2
    ok = [r.converged for r in ref]
    np.testing.assert_allclose(line.get_xdata(), bars[ok], rtol=1e-12)
    np.testing.assert_allclose(line.get_ydata(), [r.error for r in ref if r.converged],
                               rtol=1e-5, atol=1e-9)
    again = tmp_path / "again.png"
    fig.savefig(again, dpi=150)
    np.testing.assert_array_equal(mpimg.imread(out_png), mpimg.imread(again))


def test_progress_bar_closes_with_the_stop_reason(capsys):
    cli.main(["amp", "hardmax", "--rho", "0.5", "--alpha", "0.4583", "--d", "40", "--progress"])
    err = capsys.readouterr().err
    last = err.replace("\r", "\n").strip().splitlines()[-1]
    m = re.search(r"(\d+)/(\d+) \[", last)
    assert m and m.group(1) == m.group(2), last  # the bar ends where the run did
    assert "stopped: converged" in last or "stopped: " in last


def test_module_and_console_script():
    out = subprocess.run([sys.executable, "-m", "aimlib", "se", "hardmax", "--rho", "0.5",
                          "--alpha", "0.4583"], capture_output=True, text=True, check=True).stdout
    assert "0.237" in out
