"""The SLURM profile against a real SLURM: the mini workflow's fig2b (every kind of job: an SE
curve, AMP, GD and AGD, their aggregates and the figure) submitted through
``--profile profiles/slurm``; every job's log must name its SLURM job id, and the grouped short
jobs share one.  One figure is enough to test the executor: the whole mini workflow took 212 s
here against 71 s, nearly all of it SLURM's per-job start-up.

Skips where no SLURM answers (``sinfo`` fails), unless ``AIMLIB_REQUIRE_SLURM=1`` (set by
``.ci/run``, which starts a single-node SLURM), in which case its absence is a failure.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest
import xarray as xr
from conftest import copy_workflow

pytestmark = pytest.mark.slow

REQUIRED = os.environ.get("AIMLIB_REQUIRE_SLURM") == "1"


def _slurm_available() -> str | None:
    """None if a SLURM controller answers with an idle or mixed node, else the reason."""
    if not shutil.which("sinfo") or not shutil.which("sbatch"):
        return "no SLURM client (sinfo/sbatch) on PATH"
    try:
        res = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True,
                             timeout=20)
    except subprocess.TimeoutExpired:
        return "sinfo timed out"
    if res.returncode != 0:
        return f"sinfo failed: {res.stderr.strip()}"
    if not re.search(r"idle|mix|alloc", res.stdout):
        return f"no usable node: {res.stdout.strip()!r}"
    return None


@pytest.fixture(scope="module")
def slurm():
    reason = _slurm_available()
    if reason:
        if REQUIRED:
            pytest.fail(f"AIMLIB_REQUIRE_SLURM=1 but SLURM is not usable: {reason}")
        pytest.skip(reason)


def test_mini_workflow_runs_under_slurm(slurm, root, tmp_path):
    copy_workflow(tmp_path, mini=True)
    cmd = [sys.executable, "-m", "snakemake", "figures/fig2b.png", "--profile", "profiles/slurm",
           "--configfile", "config/mini.yaml",
           # a single small node: two cores per submission, short polling for a quick test
           "--cores", "2", "--jobs", "8", "--resources", "mem_mb=6000",
           "--slurm-init-seconds-before-status-checks", "2",
           "--seconds-between-status-checks", "2", "--latency-wait", "10"]
    try:
        res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired as e:
        subprocess.run(["scancel", "--name", "*"], capture_output=True)
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail("the SLURM run did not finish within 15 minutes:\n" + out[-3000:])
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert "slurm" in out.lower()
    logs = sorted((tmp_path / "logs").rglob("*.log"))
    kinds = sorted(p.relative_to(tmp_path / "logs").parts[0] for p in logs)
    assert kinds == ["amp", "amp_aggregate", "figure", "gd", "gd_aggregate", "gd_aggregate",
                     "se_curve", "theory"], kinds
    job_ids = set()
    for p in logs:
        m = re.search(r"SLURM job (\d+)", p.read_text())
        assert m, f"{p} does not name a SLURM job"
        job_ids.add(m.group(1))
    # Short jobs were grouped: fewer submissions than jobs, and more than one submission.
    assert 1 < len(job_ids) < len(logs)
    for p in (tmp_path / "data").rglob("*.nc"):
        xr.load_dataset(p)
    assert (tmp_path / "figures" / "fig2b.png").stat().st_size > 5_000
