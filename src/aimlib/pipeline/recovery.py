"""The measured perfect-recovery threshold of GD and AGD (docs/theory.md §16.4): per group of
an experiment's GD stage (a channel point, a student width, an optimiser) and per seed, the
smallest point of the group's alpha grid from which every larger point has its error below
``eps`` after a given number of steps, at every checkpoint of the runs (the budget's effect).

The threshold is a grid point: the grid's spacing is its resolution.  It is ``inf`` where the
largest point of the grid is not recovered (the threshold lies above the grid, or there is
none: a student narrower than the teacher has an error floor), and it equals the grid's
smallest point where every point is recovered (``below_grid``: an upper bound only).  A run
whose error is not finite counts as not recovered, and is counted (``nonfinite``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from aimlib.core.options import option

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["RecoveryOptions", "grid_threshold", "recovery_dataset", "THEORY_KAPPAS"]


@dataclass(frozen=True)
class RecoveryOptions:
    """The ``recovery`` block of an experiment (docs/theory.md §16.4)."""

    eps: float = option(1e-3, "error below which a run counts as recovered (the measured "
                              "threshold's level)", gt=0, lt=1)


#: Student widths at which the conjectured curve is tabulated (from the teacher's to 1).
THEORY_KAPPAS = 65


def grid_threshold(alphas: Sequence[float], errors: np.ndarray, eps: float) -> np.ndarray:
    """The measured threshold of each column of ``errors``.

    Parameters
    ----------
    alphas : sequence of float
        The grid, increasing (``errors``' first axis).
    errors : numpy.ndarray
        ``(len(alphas), ...)``: the error of each run.
    eps : float
        The level below which a run counts as recovered.

    Returns
    -------
    numpy.ndarray
        ``errors.shape[1:]``: the smallest ``alpha`` from which every larger grid point is
        recovered; ``inf`` where the largest is not.
    """
    a = np.asarray(alphas, dtype=float)
    e = np.asarray(errors, dtype=float)
    if a.ndim != 1 or e.shape[0] != a.size or a.size == 0:
        raise ValueError(f"errors must have one row per grid point ({a.size}), got {e.shape}")
    if np.any(np.diff(a) <= 0):
        raise ValueError("the alpha grid must be increasing")
    ok = e < eps  # NaN compares False: not recovered
    # from the top: recovered at this point and at every larger one
    tail = np.flip(np.logical_and.accumulate(np.flip(ok, axis=0), axis=0), axis=0)
    first = np.argmax(tail, axis=0)  # the smallest such point, where there is one
    any_ = tail.any(axis=0)
    return np.where(any_, a[first], np.inf)


def _per_seed_budgets(agg: xr.Dataset, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, errors)``: the checkpoint steps and the errors on ``(alpha, seed, step)``;
    the final errors alone (one budget, the run's steps) where the runs kept no checkpoints."""
    if "checkpoint_seeds" in agg:
        e = agg["checkpoint_seeds"].transpose("alpha", "seed", "checkpoint").values
        return np.asarray(agg["checkpoint"].values, dtype=np.int64), e
    steps = int(agg.attrs.get("gd_steps", 0))
    return np.array([steps], dtype=np.int64), agg["errors"].values[:, :, None]


def recovery_dataset(aggs: Sequence[xr.Dataset], eps: float, kind: str) -> xr.Dataset:
    """The measured thresholds of an experiment's GD aggregates of one ``kind`` (``gd``: the
    first initialisation; ``agd``: the average over them).

    Returns
    -------
    xarray.Dataset
        On ``(group, checkpoint, seed)``: ``threshold`` (alpha), ``threshold_bar`` (alpha_bar)
        and ``below_grid``; on ``group``: ``nonfinite`` (runs whose error is not finite),
        ``grid_min``, ``grid_max``, ``resolution`` (the largest ratio of neighbouring grid
        points), ``bayes_alpha`` (the Bayes-optimal perfect-recovery threshold, NaN where the
        Bayes error never reaches 0) and ``conjecture_alpha`` (the gradient-flow conjecture at
        the group's width, NaN where it does not apply: docs/theory.md §16), and
        ``conjecture_curve`` on ``(group, theory_kappa)``; as coordinates of ``group`` the
        channel, ``T``, ``rho``, the channel parameter, ``d``, the student's width ``kappa``
        (rank / d) and the optimiser.  ``checkpoint`` is the number of steps (the budget).
    """
    if not aggs:
        raise ValueError("no aggregates to measure a threshold from")
    # not at the top: the plan reads RecoveryOptions while the workflow parses (no xarray)
    import xarray as xr

    from aimlib.channels import CHANNELS, make_channel
    from aimlib.prior import make_prior
    from aimlib.theory import gradient_flow

    steps0, _ = _per_seed_budgets(aggs[0], kind)
    seeds = sorted({int(s) for a in aggs for s in a["seed"].values})
    G, C, S = len(aggs), len(steps0), len(seeds)
    thr = np.full((G, C, S), np.nan)
    below = np.zeros((G, C, S), dtype=bool)
    nonfinite = np.zeros(G, dtype=np.int64)
    gmin, gmax, res = (np.full(G, np.nan) for _ in range(3))
    bayes, conj = np.full(G, np.nan), np.full(G, np.nan)
    kappas = np.full((G, THEORY_KAPPAS), np.nan)
    curve = np.full((G, THEORY_KAPPAS), np.nan)
    factor = np.full(G, np.nan)
    coords: dict[str, list] = {k: [] for k in ("channel", "T", "rho", "param", "d", "kappa",
                                                "optimizer")}
    for g, agg in enumerate(aggs):
        steps, e = _per_seed_budgets(agg, kind)
        if not np.array_equal(steps, steps0):
            raise ValueError(f"the {kind} aggregates of one experiment must share their "
                             f"checkpoints: {steps.tolist()} and {steps0.tolist()}")
        alphas = agg["alpha"].values.astype(float)
        attrs = agg.attrs
        channel, T, rho, d = (str(attrs["channel"]), int(attrs["T"]), float(attrs["rho"]),
                              int(attrs["d"]))
        cls = CHANNELS[channel]
        param = float(attrs.get(cls.PARAM, cls.PARAM_DEFAULT)) if cls.PARAM else float("nan")
        kappa = int(attrs["gd_student_rank"]) / d
        kappa_star = max(1, round(rho * d)) / d  # the teacher's rank ratio (model.sizes)
        cols = [seeds.index(int(s)) for s in agg["seed"].values]
        for c in range(C):
            t = grid_threshold(alphas, e[:, :, c], eps)
            thr[g, c, cols] = t
            below[g, c, cols] = t == alphas[0]
        nonfinite[g] = int((~np.isfinite(e[:, :, -1])).sum())
        gmin[g], gmax[g] = alphas[0], alphas[-1]
        res[g] = float(np.max(alphas[1:] / alphas[:-1])) if alphas.size > 1 else np.nan
        factor[g] = (float(agg["alpha_bar"].values[0] / alphas[0]) if "alpha_bar" in agg.coords
                     else np.nan)
        ch = make_channel(channel, T=T, **cls.param_kwargs(param))
        t_bayes = ch.perfect_recovery_threshold(make_prior(None, rho))
        bayes[g] = np.nan if t_bayes is None else float(t_bayes)
        kappas[g] = np.linspace(min(kappa_star, 1.0), 1.0, THEORY_KAPPAS)
        if gradient_flow.applies(ch):
            curve[g] = [gradient_flow.threshold_tokens(kappa_star, k, T) for k in kappas[g]]
            if kappa_star <= kappa <= 1.0:
                conj[g] = gradient_flow.threshold_tokens(kappa_star, kappa, T)
        for k, v in (("channel", channel), ("T", T), ("rho", rho), ("param", param), ("d", d),
                     ("kappa", kappa), ("optimizer", str(attrs.get("gd_optimizer", "adam")))):
            coords[k].append(v)
    ds = xr.Dataset(
        {
            "threshold": (("group", "checkpoint", "seed"), thr),
            "threshold_bar": (("group", "checkpoint", "seed"), thr * factor[:, None, None]),
            "below_grid": (("group", "checkpoint", "seed"), below),
            "nonfinite": ("group", nonfinite),
            "grid_min": ("group", gmin),
            "grid_max": ("group", gmax),
            "resolution": ("group", res),
            "bayes_alpha": ("group", bayes),
            "conjecture_alpha": ("group", conj),
            "theory_kappas": (("group", "theory_kappa"), kappas),
            "conjecture_curve": (("group", "theory_kappa"), curve),
        },
        coords={"checkpoint": steps0, "seed": np.array(seeds, dtype=np.int64),
                **{k: ("group", np.array(v)) for k, v in coords.items()}},
        attrs={"eps": float(eps), "kind": kind},
    )
    return ds
