"""The ``aimlib`` command line: each subcommand against the library call it wraps."""

import csv
import io
import re
import subprocess
import sys

import numpy as np
import pytest

from aimlib import amp, cli, gd, mismatched, prior
from aimlib import state_evolution as se
from aimlib.io import read_cache


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


@pytest.mark.parametrize("sub", ["", "se", "thresholds", "mmse", "amp", "gd"])
def test_help(capsys, sub):
    with pytest.raises(SystemExit) as exc:
        cli.main(([sub] if sub else []) + ["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "usage: aimlib" in out and re.search(r"examples:\n +aimlib ", out)


def test_module_and_console_script():
    out = subprocess.run([sys.executable, "-m", "aimlib", "se", "hardmax", "--rho", "0.5",
                          "--alpha", "0.4583"], capture_output=True, text=True, check=True).stdout
    assert "0.237" in out
