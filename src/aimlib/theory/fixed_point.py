"""The fixed-point driver of every state evolution (docs/theory.md §3.6): monotone iteration
from a start, Aitken extrapolation, and Brent's method once the fixed point is bracketed; a
solve that does not converge says why (:data:`SE_STOP_REASONS`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from aimlib.core.options import SE_TOL

__all__ = ["TOL", "SE_STOP_REASONS", "FixedPointResult", "fixed_point"]

#: Tolerance on ``|F(q) - q|`` for every fixed point.
TOL = SE_TOL

#: Why a fixed-point solve stopped (``FixedPointResult.stop_reason``; the ``stop_reason`` codes
#: of an SE curve index this tuple): the tolerance was met, the evaluation budget was spent, or
#: the map returned a non-finite value (a channel's ``q_hat`` or the prior's MMSE failed).
SE_STOP_REASONS = ("converged", "max_iter", "nan")


@dataclass(frozen=True)
class FixedPointResult:
    """Result of :func:`fixed_point`: the fixed point, work done, whether it converged, and why
    it stopped (one of :data:`SE_STOP_REASONS`; ``q`` is NaN after ``"nan"``)."""

    q: float
    iterations: int
    converged: bool
    residual: float
    stop_reason: str = "converged"


class _NonFinite(Exception):
    """The map returned a non-finite value."""


def fixed_point(
    F: Callable[[float], float],
    q0: float,
    lo: float,
    hi: float,
    tol: float = TOL,
    max_iter: int = 5000,
) -> FixedPointResult:
    """Solve ``q = F(q)`` for a monotone increasing map ``F`` of ``[lo, hi]`` into itself.

    From ``q0`` the iteration ``q <- F(q)`` moves monotonically to the nearest fixed point in the
    direction of ``F(q0) - q0``.  Every two steps an Aitken extrapolation ``z`` is tried: if the
    residual changes sign at ``z``, the fixed point is bracketed and finished with Brent's method;
    otherwise the iteration continues from ``z``.  A step counts as converged when
    ``|F(q) - q| < tol`` *and* the residuals contract (ratio ``lam < 1``) with an extrapolated
    distance ``|F(q) - q| lam / (1 - lam)`` below ``tol``: near a marginally stable point the steps
    are tiny without the iterate being close, and the first criterion alone stops there.
    ``iterations`` counts evaluations of ``F``.

    Parameters
    ----------
    F : callable
        The map; must be increasing on ``[lo, hi]``.
    q0 : float
        Start point.
    lo, hi : float
        Bounds of the domain.
    tol : float
        Convergence criterion.
    max_iter : int
        Maximum number of evaluations of ``F``.
    """
    evals = 0

    def resid(x: float) -> float:
        nonlocal evals
        evals += 1
        r = F(x) - x
        if not math.isfinite(r):
            raise _NonFinite
        return r

    try:
        return _iterate(resid, lambda: evals, q0, lo, hi, tol, max_iter)
    except _NonFinite:
        return FixedPointResult(math.nan, evals, False, math.nan, "nan")


def _iterate(resid, evaluations, q0, lo, hi, tol, max_iter) -> FixedPointResult:
    """The iteration of :func:`fixed_point` on the residual ``F(q) - q``."""

    def bracket(a: float, b: float) -> FixedPointResult:
        a, b = min(a, b), max(a, b)
        if b - a < tol:
            return FixedPointResult(0.5 * (a + b), evaluations(), True, b - a)
        root, info = brentq(resid, a, b, xtol=0.01 * tol, rtol=4 * np.finfo(float).eps,
                            maxiter=max(10, max_iter - evaluations()), full_output=True, disp=False)
        res = abs(resid(root))
        ok = bool(info.converged and res < 10 * tol)
        return FixedPointResult(float(root), evaluations(), ok, res,
                                "converged" if ok else "max_iter")

    x = min(max(float(q0), lo), hi)
    r = resid(x)
    r_prev = math.nan
    hist: list[float] = [x]
    while evaluations() < max_iter:
        if r == 0.0:
            return FixedPointResult(x, evaluations(), True, 0.0)
        lam = r / r_prev if r_prev == r_prev and r_prev != 0.0 else math.nan
        if abs(r) < tol and 0.0 <= lam < 1.0 and abs(r) * lam / (1.0 - lam) < tol:
            return FixedPointResult(x + r, evaluations(), True, abs(r))
        sgn = 1.0 if r > 0 else -1.0
        y = min(max(x + r, lo), hi)
        hist.append(y)
        ry = resid(y)
        if ry == 0.0:
            return FixedPointResult(y, evaluations(), True, 0.0)
        if math.copysign(1.0, ry) != sgn:
            return bracket(x, y)  # the fixed point lies between x and y
        x, r_prev, r = y, r, ry
        if len(hist) >= 3:
            a, b, c = hist[-3], hist[-2], hist[-1]
            denom = c - 2.0 * b + a
            if denom != 0.0 and (c - b) * (b - a) > 0:
                z = c - (c - b) ** 2 / denom
                if (z - c) * sgn > 0:
                    z = min(max(z, lo), hi)
                    rz = resid(z)
                    if rz == 0.0:
                        return FixedPointResult(z, evaluations(), True, 0.0)
                    if math.copysign(1.0, rz) != sgn:
                        return bracket(x, z)
                    x, r_prev, r = z, math.nan, rz
                    hist = [z]
    return FixedPointResult(x + r, evaluations(), False, abs(r), "max_iter")
