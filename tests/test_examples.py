"""The example under examples/ runs as a user would run it (smaller sizes)."""

import csv
import io
import subprocess
import sys

import numpy as np
import pytest

from aimlib import state_evolution as se


@pytest.mark.slow
def test_new_rho_example(root, tmp_path):
    out = tmp_path / "fig.png"
    res = subprocess.run([sys.executable, str(root / "examples" / "new_rho.py"), "--rho", "0.3",
                          "--d", "30", "50", "--seeds", "2", "--alpha", "0.3", "0.6",
                          "--out", str(out)], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    rows = list(csv.DictReader(io.StringIO(res.stdout.split("saved")[0])))
    assert [(r["d"], r["alpha"]) for r in rows] == [("30", "0.3"), ("30", "0.6"),
                                                    ("50", "0.3"), ("50", "0.6")]
    for r in rows:
        assert float(r["se"]) == pytest.approx(se.solve("hardmax", float(r["alpha"]), 0.3).error,
                                               rel=1e-5)
        n_ok = int(r["converged"].split("/")[0])
        assert np.isfinite(float(r["amp_mean"])) == (n_ok > 0)
    assert out.is_file() and out.stat().st_size > 10_000
