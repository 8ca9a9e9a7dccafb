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


@pytest.mark.slow
def test_tutorial_notebook_runs(root):
    """examples/tutorial.ipynb, executed as a user runs it (nbclient, its own kernel): every
    cell runs, the numbers it prints are the library's, and the config change re-plans only
    the changed width's SE curve, the figure and the config record."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(root / "examples" / "tutorial.ipynb", as_version=4)
    NotebookClient(nb, timeout=240, kernel_name="python3",
                   resources={"metadata": {"path": str(root / "examples")}}).execute()
    texts = ["".join(o.get("text", "") for o in c.get("outputs", []) if o["output_type"] ==
                     "stream") for c in nb.cells if c.cell_type == "code"]
    assert not any(o["output_type"] == "error" for c in nb.cells if c.cell_type == "code"
                   for o in c.get("outputs", []))
    ref = se.solve("hardmax", 0.4583, 0.5, 2).error
    assert f"SE error {ref:.6f}" in texts[1]
    assert any(o["output_type"] == "display_data" and "image/png" in o["data"]
               for o in nb.cells[9].outputs)
    first = texts[5].split("figure:")[0].split()
    again = [line for line in texts[6].splitlines() if line.strip()]
    assert "data/se/fig2a/softmax_T2_beta1.0_rho0.5_exact.nc" in first
    assert sorted(again) == sorted(["data/se/fig2a/softmax_T2_beta1.0_rho0.7_exact.nc",
                                    "figures/config.yaml", "figures/fig2a.pdf, figures/fig2a.png"])
