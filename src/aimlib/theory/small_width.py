"""The small-width limit of the hardmax equations (docs/theory.md §3.5): ``rho -> 0`` at fixed
``alpha_bar = alpha / rho``, with ``Q0 = 1``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr

from aimlib.channels import Hardmax, hardmax_second_moment
from aimlib.channels.hardmax import uninformed_information
from aimlib.theory.fixed_point import TOL, fixed_point

__all__ = ["small_width_threshold", "SmallWidthResult", "small_width_solve",
           "small_width_curve"]


def small_width_threshold(variant: str = "exact", T: int = 2) -> float:
    """Weak-recovery threshold of the hardmax small-width limit, ``1 / (2 E[sum w g^2])`` at
    ``q = 0, V = 1`` (about 0.4034; 0.5633 with the published density ``g_out``; 0.1754 at
    ``T = 3``, in ``alpha / rho``)."""
    Hardmax(T=T, variant=variant)  # validates T and the variant
    if T == 2:
        return 1.0 / (2.0 * hardmax_second_moment(0.0, 1.0, density=(variant == "density")))
    return 1.0 / (2.0 * uninformed_information(T))


@dataclass(frozen=True)
class SmallWidthResult:
    """Fixed point of the rho -> 0 hardmax equations at one ``alpha_bar``."""

    alpha_bar: float
    error: float
    q: float
    iterations: int
    converged: bool


def small_width_solve(abar: float, variant: str = "exact", tol: float = TOL,
                      T: int = 2) -> SmallWidthResult:
    """Hardmax small-width limit at ``alpha_bar = alpha / rho``: ``Q0 = 1``,
    ``q = (1 - t)^2`` for ``t < 1`` (else 0), ``t = 1 / (2 alpha_bar E[sum w g^2](q, 1 - q))``."""
    abar = float(abar)
    if not (abar > 0 and math.isfinite(abar)):
        raise ValueError(f"alpha_bar must be a positive finite number, got alpha_bar={abar!r}")
    ch = Hardmax(T=T, variant=variant)

    def F(q: float) -> float:
        V = 1.0 - q
        if V <= 0:
            return 1.0
        t = 1.0 / (2.0 * abar * ch.second_moment(q, V))
        return (1.0 - t) ** 2 if t < 1.0 else 0.0

    res = fixed_point(F, 0.0, 0.0, 1.0, tol=tol)
    return SmallWidthResult(abar, 1.0 - res.q, res.q, res.iterations, res.converged)


def small_width_curve(alpha_bars, variant: str = "exact", tol: float = TOL) -> xr.Dataset:
    """:func:`small_width_solve` over a grid, as a Dataset on coordinate ``alpha_bar``."""
    ab = np.asarray(alpha_bars, dtype=np.float64).ravel()
    res = [small_width_solve(v, variant, tol) for v in ab]
    ds = xr.Dataset(
        {
            "error": ("alpha_bar", np.array([r.error for r in res])),
            "q": ("alpha_bar", np.array([r.q for r in res])),
            "iterations": ("alpha_bar", np.array([r.iterations for r in res], dtype=np.int64)),
            "converged": ("alpha_bar", np.array([r.converged for r in res], dtype=np.int8)),
        },
        coords={"alpha_bar": ab},
    )
    ds.attrs.update(channel="hardmax", rho=0.0, T=2, variant=variant, tol=float(tol),
                    threshold=small_width_threshold(variant))
    return ds
