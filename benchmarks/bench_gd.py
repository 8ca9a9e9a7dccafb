"""GD benchmarks (issue: GD/AGD).

    python benchmarks/bench_gd.py

1000 full-batch Adam steps at d = 200, alpha = 0.1, T = 2 (n = 4000), K = 1, in a fresh process:
wall time and peak RSS, against the public code's torch CPU run measured here (34 s, 370 MiB).
Also K = 4 batched, to show what batching the initialisations buys.
"""

from __future__ import annotations

import json
import subprocess
import sys

from _util import machine, write_section

CHILD = r"""
import json, resource, sys, time
from aimlib import gd, model
K, steps = int(sys.argv[1]), int(sys.argv[2])
data = model.generate("softmax", 0.1, 0.5, 2, 200, 0)
gd.run(data, inits=1, steps=2)
t = time.perf_counter(); r = gd.run(data, inits=K, steps=steps); dt = time.perf_counter() - t
print(json.dumps(dict(time=dt, peak=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      gd=float(r.errors[0]), agd=r.error, n=data.n)))
"""


def child(K, steps):
    out = subprocess.run([sys.executable, "-c", CHILD, str(K), str(steps)], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    rows = []
    for K in (1, 4):
        runs = [child(K, 1000) for _ in range(3 if K == 1 else 1)]
        t = sorted(r["time"] for r in runs)[len(runs) // 2]
        r = runs[0]
        rows.append(f"| K = {K} | {t:.1f} s ({t / K:.1f} s per initialisation) | "
                    f"{r['peak']:.0f} MiB | 34 s, 370 MiB (K = 1) | {t / K / 34:.2f}x | "
                    f"GD {r['gd']:.4f}, AGD {r['agd']:.4f} |")
    table = "\n".join([
        f"Measured on {machine()}; 1000 steps at d = 200, alpha = 0.1, T = 2 (n = {r['n']}), "
        "median of 3 fresh processes for K = 1.",
        "",
        "| initialisations | time | peak RSS | public code (torch CPU) | time ratio | errors |",
        "|---|---|---|---|---|---|",
        *rows,
    ])
    write_section("gd", table)


if __name__ == "__main__":
    main()
