"""Finite-size analysis: the gap between experiments at dimension ``d`` and the ``d -> infinity``
state evolution, its power law in ``1/d``, and an extrapolation of the error to ``d -> infinity``.

For each channel and each chosen ``alpha`` the aggregates over seeds give a mean error ``m(d)``
with standard error ``s(d)``.  The signed gap ``g(d) = m(d) - E_SE`` is fitted by weighted least
squares to ``A d^{-k}`` (weights ``1 / s``), which gives the exponent ``k`` and its standard error
from the covariance of the fit (scaled by the reduced chi-square, so that a misfit widens it).  The
extrapolation fits ``m(d) = E_inf + c d^{-k}`` at that exponent, a linear weighted least-squares
problem, whose intercept ``E_inf`` (with its standard error) should agree with ``E_SE`` if the
finite-size corrections are what the fit says.

A point from a single converged seed (the largest d of a study, where one run costs hours) has
no measured spread, and a standard error of zero would make it outweigh every other point.  Its
standard error is estimated instead from the seed-to-seed spread measured at the largest d with
at least two converged seeds, scaled as ``1/d`` (the spread of the error shrinks like ``1/d``):
``s(d) = std(d_ref) d_ref / d``.  Such points are flagged (``sem_estimated``) and figures draw
their bars as estimates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy.optimize import curve_fit

__all__ = ["PowerLawFit", "fit_power_law", "extrapolate", "gap_dataset"]

#: Floor of the standard error, relative to the largest |gap| of a series (one-seed points).
SEM_FLOOR = 1e-3
#: Range of the fitted exponent: finite-size corrections between O(1) and O(d^-4).
SLOPE_BOUNDS = (0.0, 4.0)


@dataclass
class PowerLawFit:
    """``gap ~ amplitude * d^(-slope)``; ``slope_err`` is one standard error (nan if unknown)."""

    slope: float
    slope_err: float
    amplitude: float
    points: int
    chi2_red: float
    success: bool


def _one_seed_sem(d, mean, sem, std, n_ok):
    """Standard errors with those of one-seed points estimated (module docstring): the spread
    at the largest d with >= 2 converged seeds, times ``d_ref / d``.  Returns the standard
    errors and a 0/1 flag per point (left as they are where no d has two seeds)."""
    sem = np.array(sem, dtype=float)
    flag = np.zeros(len(sem), dtype=np.int8)
    ref = [i for i in range(len(d)) if n_ok[i] >= 2 and np.isfinite(std[i]) and std[i] > 0]
    if not ref:
        return sem, flag
    r = max(ref, key=lambda i: d[i])
    for i in range(len(d)):
        if n_ok[i] == 1 and np.isfinite(mean[i]):
            sem[i] = std[r] * d[r] / d[i]
            flag[i] = 1
    return sem, flag


def _sigma(gap: np.ndarray, sem: np.ndarray) -> np.ndarray:
    floor = SEM_FLOOR * max(float(np.nanmax(np.abs(gap))), 1e-12)
    return np.maximum(np.nan_to_num(sem, nan=floor), floor)


def fit_power_law(d: Sequence[float], gap: Sequence[float], sem: Sequence[float]) -> PowerLawFit:
    """Weighted fit of a signed gap to ``A d^{-k}``.

    Parameters
    ----------
    d : sequence of float
        Dimensions.
    gap : sequence of float
        Signed gaps ``mean - E_SE`` at each ``d``.
    sem : sequence of float
        Standard errors of the means.

    Returns
    -------
    PowerLawFit
        With ``success = False`` (and nan slope) if fewer than two finite points.
    """
    d, gap, sem = (np.asarray(v, dtype=float) for v in (d, gap, sem))
    ok = np.isfinite(gap) & np.isfinite(d) & (d > 0)
    d, gap, sem = d[ok], gap[ok], sem[ok]
    if d.size < 2:
        return PowerLawFit(math.nan, math.nan, math.nan, int(d.size), math.nan, False)
    sigma = _sigma(gap, sem)
    # Starting point: ordinary least squares of log|gap| on log d.
    big = np.abs(gap) > 0
    if big.sum() >= 2:
        k0, logA0 = np.polyfit(-np.log(d[big]), np.log(np.abs(gap[big])), 1)
    else:
        k0, logA0 = 1.0, math.log(max(np.abs(gap).max(), 1e-12))
    A0 = math.copysign(math.exp(logA0), float(np.sum(gap)) or 1.0)

    def model(x, A, k):
        return A * x ** (-k)

    lo, hi = SLOPE_BOUNDS
    k0 = min(max(float(k0), lo + 0.05), hi - 0.05)
    try:
        (A, k), cov = curve_fit(model, d, gap, p0=(A0, k0), sigma=sigma,
                                absolute_sigma=d.size == 2, bounds=([-np.inf, lo], [np.inf, hi]),
                                maxfev=20000)
    except (RuntimeError, ValueError):
        return PowerLawFit(math.nan, math.nan, math.nan, int(d.size), math.nan, False)
    resid = (gap - model(d, A, k)) / sigma
    dof = d.size - 2
    chi2 = float(np.sum(resid**2) / dof) if dof > 0 else math.nan
    err = math.sqrt(cov[1, 1]) if np.all(np.isfinite(cov)) else math.nan
    # An exponent pinned at a bound is not a measurement.
    at_bound = min(k - lo, hi - k) < 1e-6
    return PowerLawFit(float(k), err, float(A), int(d.size), chi2, not at_bound)


def extrapolate(d: Sequence[float], mean: Sequence[float], sem: Sequence[float],
                slope: float) -> tuple[float, float, float]:
    """``(E_inf, its standard error, c)`` from ``mean = E_inf + c d^{-slope}`` (weighted).

    Returns nans with fewer than two finite points or a non-finite slope.
    """
    d, mean, sem = (np.asarray(v, dtype=float) for v in (d, mean, sem))
    ok = np.isfinite(mean) & np.isfinite(d)
    d, mean, sem = d[ok], mean[ok], sem[ok]
    if d.size < 2 or not math.isfinite(slope):
        return math.nan, math.nan, math.nan
    w = 1.0 / _sigma(mean - mean.mean(), sem)
    A = np.column_stack([np.ones_like(d), d ** (-slope)]) * w[:, None]
    coef, *_ = np.linalg.lstsq(A, mean * w, rcond=None)
    cov = np.linalg.inv(A.T @ A)
    dof = d.size - 2
    if dof > 0:
        chi2 = float(np.sum((A @ coef - mean * w) ** 2) / dof)
        cov = cov * max(chi2, 1.0)
    return float(coef[0]), float(math.sqrt(cov[0, 0])), float(coef[1])


def _se_at(curves: Sequence[xr.Dataset], channel: str, alpha: float) -> float:
    """SE error of ``channel`` at ``alpha`` (interpolated between usable points); NaN where the
    SE point did not converge, so that no fit uses it."""
    # not at the top: the SE module (numba kernels) only when a fit reads SE curves
    from aimlib.theory.state_evolution import usable

    for c in curves:
        if c.attrs["channel"] == channel and c.attrs.get("variant", "exact") == "exact":
            a = c["alpha"].values
            err = np.where(usable(c), c["error"].values, np.nan)
            i = int(np.argmin(np.abs(a - alpha)))
            if abs(a[i] - alpha) <= 1e-9 * max(alpha, 1.0):
                return float(err[i])
            ok = np.isfinite(err)
            return float(np.interp(alpha, a[ok], err[ok])) if ok.sum() >= 2 else math.nan
    raise ValueError(f"no SE curve for channel {channel!r}")


def gap_dataset(curves: Sequence[xr.Dataset], aggs: Sequence[xr.Dataset],
                gap_alphas: Mapping[str, Sequence[float]], kind: str = "amp") -> xr.Dataset:
    """Gaps to SE on ``(channel, alpha, d)``, with the power-law fit and the extrapolation.

    Parameters
    ----------
    curves : sequence of xarray.Dataset
        SE curves (one per channel; an alpha of ``gap_alphas`` should be on the grid, otherwise
        the curve is interpolated).
    aggs : sequence of xarray.Dataset
        Aggregates over seeds (``mean``, ``sem`` on ``alpha``), one per ``(channel, d)``.
    gap_alphas : mapping
        ``{channel: [alpha, ...]}``.
    kind : str
        Name of the method (attribute of the result).
    """
    rows = []
    for channel, alphas in gap_alphas.items():
        groups = sorted((g for g in aggs if g.attrs["channel"] == channel),
                        key=lambda g: int(g.attrs["d"]))
        if not groups:
            continue
        ds_ = np.array([int(g.attrs["d"]) for g in groups], dtype=float)
        for alpha in alphas:
            mean = np.full(ds_.size, np.nan)
            sem = np.full(ds_.size, np.nan)
            std = np.full(ds_.size, np.nan)
            n_ok = np.zeros(ds_.size, dtype=int)
            for i, g in enumerate(groups):
                a = g["alpha"].values
                j = np.flatnonzero(np.isclose(a, alpha, rtol=1e-9, atol=0.0))
                if j.size:
                    mean[i] = float(g["mean"].values[j[0]])
                    sem[i] = float(g["sem"].values[j[0]])
                    std[i] = float(g["std"].values[j[0]]) if "std" in g else math.nan
                    n_ok[i] = int(g["n_converged"].values[j[0]]) if "n_converged" in g else 2
            sem, estimated = _one_seed_sem(ds_, mean, sem, std, n_ok)
            se_err = _se_at(curves, channel, float(alpha))
            fit = fit_power_law(ds_, mean - se_err, sem)
            e_inf, e_inf_err, c = extrapolate(ds_, mean, sem,
                                              fit.slope if fit.success else math.nan)
            rows.append(dict(channel=channel, alpha=float(alpha), d=ds_, mean=mean, sem=sem,
                             se=se_err, fit=fit, e_inf=e_inf, e_inf_err=e_inf_err, c=c,
                             estimated=estimated))
    if not rows:
        raise ValueError("no aggregates for the requested channels")
    all_d = np.array(sorted({float(x) for r in rows for x in r["d"]}))
    n = len(rows)
    mean = np.full((n, all_d.size), np.nan)
    sem = np.full((n, all_d.size), np.nan)
    estimated = np.zeros((n, all_d.size), dtype=np.int8)
    for i, r in enumerate(rows):
        idx = np.searchsorted(all_d, r["d"])
        mean[i, idx] = r["mean"]
        sem[i, idx] = r["sem"]
        estimated[i, idx] = r["estimated"]
    se = np.array([r["se"] for r in rows])
    out = xr.Dataset(
        {
            "mean": (("point", "d"), mean),
            "sem": (("point", "d"), sem),
            "sem_estimated": (("point", "d"), estimated),
            "gap": (("point", "d"), mean - se[:, None]),
            "se_error": ("point", se),
            "slope": ("point", [r["fit"].slope for r in rows]),
            "slope_err": ("point", [r["fit"].slope_err for r in rows]),
            "amplitude": ("point", [r["fit"].amplitude for r in rows]),
            "chi2_red": ("point", [r["fit"].chi2_red for r in rows]),
            "e_inf": ("point", [r["e_inf"] for r in rows]),
            "e_inf_err": ("point", [r["e_inf_err"] for r in rows]),
            "e_inf_c": ("point", [r["c"] for r in rows]),
            "fit_success": ("point", np.array([r["fit"].success for r in rows], dtype=np.int8)),
        },
        coords={"d": all_d.astype(np.int64),
                "channel": ("point", [r["channel"] for r in rows]),
                "alpha": ("point", [r["alpha"] for r in rows])},
    )
    out.attrs.update(kind=kind)
    return out
