"""Aggregation of runs over seeds: one Dataset per group, on coordinate ``alpha``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

__all__ = ["aggregate_runs", "stack_seeds"]


def aggregate_runs(runs: Sequence[xr.Dataset], value: str = "error",
                   extras: dict[str, str] | None = None) -> xr.Dataset:
    """Mean and standard deviation over seeds of ``value``, per ``alpha``.

    Runs that did not converge are kept in ``errors`` (with ``converged = 0``) but left out of
    ``mean`` and ``std``: a non-converged run is reported, never averaged in.  A run without a
    ``converged`` variable has no convergence test (GD runs a fixed number of steps) and counts
    when its value is finite.

    Parameters
    ----------
    runs : sequence of xarray.Dataset
        One dataset per run, with scalar ``value`` and ``converged`` and attributes ``alpha`` and
        ``seed``, or one per point with a ``seed`` dimension (a workflow job's file: every seed of
        one alpha); every other attribute must agree across runs (it is copied to the result).
    value : str
        The variable to aggregate.
    extras : dict, optional
        Further per-run variables to average over the same converged runs, as
        ``{output name: run variable}``: each gives ``<name>_mean`` and ``<name>_std`` on
        ``alpha`` (skipped when a run lacks the variable, e.g. caches made before it existed);
        a variable with one dimension of its own (GD's ``checkpoint``) gives them on
        ``(alpha, <that dimension>)``, and every converged seed's values as ``<name>_seeds`` on
        ``(alpha, seed, <that dimension>)``.

    Returns
    -------
    xarray.Dataset
        On ``alpha`` (with ``alpha_bar``, the cell's rescaled ratio, as a second coordinate:
        the runs' own ``alpha_bar`` attribute, else computed when they carry ``channel``,
        ``T`` and ``rho``): ``mean``, ``std`` (over converged
        seeds, ``ddof=1``), ``sem``, ``n_converged``, ``n_runs``
        (finite runs), ``mean_all`` and ``std_all`` (over every finite run, converged or not: the
        final iterate) on ``alpha``; ``errors`` and ``converged`` on ``(alpha, seed)``.
    """
    runs = [one for r in runs for one in _per_seed(r)]
    if not runs:
        raise ValueError("no runs to aggregate")
    alphas = sorted({float(r.attrs["alpha"]) for r in runs})
    seeds = sorted({int(r.attrs["seed"]) for r in runs})
    ai = {a: i for i, a in enumerate(alphas)}
    si = {s: i for i, s in enumerate(seeds)}
    vals = np.full((len(alphas), len(seeds)), np.nan)
    conv = np.zeros((len(alphas), len(seeds)), dtype=np.int8)
    for r in runs:
        i, j = ai[float(r.attrs["alpha"])], si[int(r.attrs["seed"])]
        vals[i, j] = float(r[value])
        # a run without a convergence test (GD: a fixed number of Adam steps) counts if finite
        conv[i, j] = int(r["converged"]) if "converged" in r else int(np.isfinite(vals[i, j]))
    good = np.where(conv == 1, vals, np.nan)
    n_conv = conv.sum(axis=1)
    mean = _nanmean(good)
    std = _nanstd(good)
    n_fin = np.isfinite(vals).sum(axis=1)
    ds = xr.Dataset(
        {
            "mean": ("alpha", mean),
            "std": ("alpha", std),
            "sem": ("alpha", std / np.sqrt(np.maximum(n_conv, 1))),
            "n_converged": ("alpha", n_conv.astype(np.int64)),
            "n_runs": ("alpha", n_fin.astype(np.int64)),
            "mean_all": ("alpha", _nanmean(vals)),
            "std_all": ("alpha", _nanstd(vals)),
            "errors": (("alpha", "seed"), vals),
            "converged": (("alpha", "seed"), conv),
        },
        coords={"alpha": np.array(alphas), "seed": np.array(seeds)},
    )
    for name, var in (extras or {}).items():
        if not all(var in r for r in runs):
            continue
        if runs[0][var].ndim == 1:
            _profile(ds, name, var, runs, ai, si, conv)
            continue
        ev = np.full((len(alphas), len(seeds)), np.nan)
        for r in runs:
            ev[ai[float(r.attrs["alpha"])], si[int(r.attrs["seed"])]] = float(r[var])
        ev = np.where(conv == 1, ev, np.nan)
        ds[f"{name}_mean"] = ("alpha", _nanmean(ev))
        ds[f"{name}_std"] = ("alpha", _nanstd(ev))
    skip = {"alpha", "alpha_bar", "seed", "n", "config", "code_version"}
    for k, v in runs[0].attrs.items():
        if k not in skip:
            ds.attrs[k] = v
    bars = {float(r.attrs["alpha"]): float(r.attrs["alpha_bar"]) for r in runs
            if "alpha_bar" in r.attrs}
    if len(bars) == len(alphas):  # the data jobs' own (no channel to import: a light job)
        ds = ds.assign_coords(alpha_bar=("alpha", np.array([bars[a] for a in alphas])))
    elif {"channel", "T", "rho"} <= set(ds.attrs):
        # not at the top: aggregate jobs stay light (the channels load numba kernels)
        from aimlib.channels import channel_class
        from aimlib.theory.cells import alpha_bar_factor

        factor = alpha_bar_factor(channel_class(str(ds.attrs["channel"]))(T=int(ds.attrs["T"])),
                                  float(ds.attrs["rho"]), prior=ds.attrs.get("prior", "tied"),
                                  attention=ds.attrs.get("attention", "self"))
        ds = ds.assign_coords(alpha_bar=("alpha", ds["alpha"].values * factor))
    return ds


def _profile(ds: xr.Dataset, name: str, var: str, runs, ai, si, conv) -> None:
    """An extra with one dimension of its own (GD's errors at its checkpoints): mean and std
    over the converged seeds on ``(alpha, <its dimension>)``; runs whose coordinate differs
    from the first run's are left out (NaN), never interpolated."""
    dim = runs[0][var].dims[0]
    coord = runs[0][dim].values
    ev = np.full((len(ai), len(si), len(coord)), np.nan)
    for r in runs:
        if r[var].dims != (dim,) or not np.array_equal(r[dim].values, coord):
            continue
        i, j = ai[float(r.attrs["alpha"])], si[int(r.attrs["seed"])]
        if conv[i, j] == 1:
            ev[i, j] = r[var].values
    flat = np.moveaxis(ev, 1, 2).reshape(-1, len(si))  # (alpha * point, seed)
    shape = (len(ai), len(coord))
    ds.coords[dim] = coord
    ds[f"{name}_mean"] = (("alpha", dim), _nanmean(flat).reshape(shape))
    ds[f"{name}_std"] = (("alpha", dim), _nanstd(flat).reshape(shape))
    # every seed's, for what a mean hides (the measured recovery threshold, per seed)
    ds[f"{name}_seeds"] = (("alpha", "seed", dim), ev)


def stack_seeds(runs: Sequence[xr.Dataset], seeds: Sequence[int]) -> xr.Dataset:
    """Runs of one point (one per seed) as one dataset on a ``seed`` dimension.

    Histories of different lengths are padded with NaN along ``iteration`` (or ``step``).  The
    ``stop_reason`` codes index :data:`aimlib.algorithms.amp.STOP_REASONS`, stored as the attribute
    ``stop_reasons``.
    """
    out = xr.concat(list(runs), dim="seed", join="outer", fill_value=np.nan,
                    coords="minimal", compat="override")
    return out.assign_coords(seed=np.asarray(seeds, dtype=np.int64))


def _per_seed(ds: xr.Dataset) -> list[xr.Dataset]:
    """A point's file (``seed`` dimension) as one dataset per seed; a single run as itself."""
    if "seed" not in ds.dims:
        return [ds]
    out = []
    for s in ds["seed"].values:
        one = ds.sel(seed=s, drop=True)
        one.attrs = {**ds.attrs, "seed": int(s)}
        out.append(one)
    return out


def _nanmean(a: np.ndarray) -> np.ndarray:
    n = np.sum(np.isfinite(a), axis=1)
    s = np.nansum(a, axis=1)
    return np.where(n > 0, s / np.maximum(n, 1), np.nan)


def _nanstd(a: np.ndarray) -> np.ndarray:
    n = np.sum(np.isfinite(a), axis=1)
    m = _nanmean(a)
    dev = np.where(np.isfinite(a), a - m[:, None], 0.0)
    var = np.sum(dev * dev, axis=1) / np.maximum(n - 1, 1)
    return np.where(n > 1, np.sqrt(var), np.where(n == 1, 0.0, np.nan))
