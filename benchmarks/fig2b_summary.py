"""fig2b's GD and AGD against SE, in numbers: one row per point of a run's GD data files.

    python benchmarks/fig2b_summary.py [WORKDIR]

For each T and alpha of ``WORKDIR/data/gd/fig2b`` (default: the current folder): alpha_bar, the
SE error at that alpha_bar (softmax SE is T-free in alpha_bar), GD (the first initialisation,
the paper's GD), the mean and spread of all K single-run errors, and AGD (the average of the K
estimates), each a mean over the file's seeds; then, per T, a summary below and above the
perfect-recovery threshold ``alpha_bar = 2 rho - rho^2``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import xarray as xr

from aimlib import state_evolution as se


def rows(workdir: Path):
    out = []
    for f in sorted((workdir / "data" / "gd" / "fig2b").rglob("*.nc")):
        ds = xr.load_dataset(f)
        T, rho, alpha = int(ds.attrs["T"]), float(ds.attrs["rho"]), float(ds.attrs["alpha"])
        k = T * T + T - 2
        bar = alpha * k
        ref = se.solve("softmax", bar / 4.0, rho, T=2).error
        errs = ds["errors"].values  # (seed, init)
        out.append(dict(T=T, alpha=alpha, alpha_bar=bar, se=ref, seeds=ds.sizes["seed"],
                        gd=float(ds["error_gd"].mean()), gd_all=float(errs.mean()),
                        gd_sd=float(errs.std()), agd=float(ds["error_agd"].mean()),
                        capped=float(ds["capped_gd"].mean()) if "capped_gd" in ds else np.nan))
    return out


def main() -> None:
    workdir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")
    rs = rows(workdir)
    print("| T | alpha | alpha_bar | SE | GD (init 0) | GD, all K: mean +- sd | AGD | AGD - SE |")
    print("|---|---|---|---|---|---|---|---|")
    for r in sorted(rs, key=lambda r: (r["T"], r["alpha"])):
        print(f"| {r['T']} | {r['alpha']:.4g} | {r['alpha_bar']:.3g} | {r['se']:.4f} | "
              f"{r['gd']:.4f} | {r['gd_all']:.3f} +- {r['gd_sd']:.3f} | {r['agd']:.4g} | "
              f"{r['agd'] - r['se']:+.4f} |")
    rho = 0.5
    thr = 2 * rho - rho * rho
    print(f"\nper T, below the threshold (alpha_bar < {thr:.2f}) and above it:")
    for T in sorted({r["T"] for r in rs}):
        below = [r for r in rs if r["T"] == T and r["alpha_bar"] < thr and r["alpha_bar"] <= 1.0]
        above = [r for r in rs if r["T"] == T and r["alpha_bar"] > thr]
        if below:
            d_agd = np.array([r["agd"] - r["se"] for r in below])
            d_gd = np.array([r["gd"] - r["se"] for r in below])
            print(f"T = {T}: {len(below)} points below; AGD - SE median {np.median(d_agd):+.3f} "
                  f"(range {d_agd.min():+.3f} .. {d_agd.max():+.3f}); GD - SE median "
                  f"{np.median(d_gd):+.3f} (range {d_gd.min():+.3f} .. {d_gd.max():+.3f})")
        for r in above:
            print(f"   above: alpha_bar {r['alpha_bar']:.3f}: GD {r['gd']:.3g}, AGD {r['agd']:.3g}")


if __name__ == "__main__":
    main()
