"""Spectral estimator benchmark (issue: one home per algorithm).

    python benchmarks/bench_spectral.py

The spectral estimator (one AMP output pass from the prior's mean, RIE-denoised) up to d = 1000 on
hardmax and softmax, rho = 0.5, one seed each, in a fresh process: wall time of the run (teacher
data drawn beforehand), peak RSS, the error next to its one-step SE prediction, and the time of
the same pass's two GEMMs alone (``X^T (G X)`` and ``X S``: the machine's limit for it).
"""

from __future__ import annotations

import json
import subprocess
import sys

from _util import machine, write_section

CHILD = r"""
import json, resource, sys, time
import numpy as np
from aimlib import model, state_evolution as se
from aimlib.algorithms import spectral
ch, alpha, d = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
data = model.generate(ch, alpha, 0.5, 2, d, 0)
spectral.run(model.generate(ch, 0.5, 0.5, 2, 20, 0))  # numba warm-up
t = time.perf_counter(); r = spectral.run(data); dt = time.perf_counter() - t
X = data.tokens(0, min(data.n, 4096)).reshape(-1, d)
S = np.eye(d)
t0 = time.perf_counter()
for lo in range(0, data.n, 4096):
    m = min(4096, data.n - lo) * 2
    Y = X[:m] @ S
    B = X[:m].T @ Y
gemm = time.perf_counter() - t0
print(json.dumps(dict(time=dt, gemm=gemm, peak=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                      / 1024, error=r.error, pred=se.one_step(ch, alpha, 0.5, 2), n=data.n)))
"""


def child(ch, alpha, d):
    out = subprocess.run([sys.executable, "-c", CHILD, ch, str(alpha), str(d)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    rows = []
    for ch, alpha in (("hardmax", 0.5), ("softmax", 0.2)):
        for d in (100, 300, 1000):
            r = child(ch, alpha, d)
            rows.append(f"| {ch} | {alpha:g} | {d} | {r['n']:,} | {r['time']:.2f} s | "
                        f"{r['gemm']:.2f} s | {r['peak']:.0f} MiB | {r['error']:.4f} | "
                        f"{r['pred']:.4f} |")
    table = ("Spectral estimator, rho = 0.5, seed 0 (" + machine() + "): one run, the GEMMs of "
             "its pass timed alone, peak RSS, error and its one-step SE prediction.\n\n"
             "| channel | alpha | d | n | run | GEMMs alone | peak RSS | error | one-step SE |\n"
             "|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows))
    write_section("spectral", table)


if __name__ == "__main__":
    main()
