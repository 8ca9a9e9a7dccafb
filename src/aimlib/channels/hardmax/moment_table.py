"""The hardmax channel's information per sample at ``T >= 3`` as one tabulated function
(docs/theory.md §14.6).

Hardmax labels are row-wise argmaxes, unchanged when every index is multiplied by ``lambda > 0``.
So ``Z_y(lambda omega, lambda^2 V) = Z_y(omega, V)`` and ``g(lambda omega, lambda^2 V) =
g(omega, V) / lambda``, and the state evolution's second moment
``I(q, V) = E_{omega ~ N(0, q w)}[sum_y Z_y sum_{a<=b} w_ab g_ab^2]`` obeys

    V I(q, V) = K_T(q / V),

one function of ``s = q / V`` for each ``T`` (tested at ``T = 2`` on the exact quadrature, to
1e-13).  At ``T >= 3``, where each ``I`` is a randomised-QMC integral of Genz integrals
(:func:`aimlib.channels.hardmax.se_moments.second_moment`, seconds each), ``K_T`` is computed
once on the grid :data:`GRID` with rules finer than the default (:func:`build`), stored in
:mod:`aimlib.channels.hardmax.hardmax_moments`, and interpolated by a cubic spline in
``(log s, log K)``;
beyond the grid it follows its large-``s`` law ``K_T(s) = c_T / sqrt(s)`` (the strip law of
§14.3, which the table reaches from about ``s = 1e3``), and below it it is linear between
``K_T(0)`` and the first point.  A state-evolution fixed point then costs microseconds instead of
tens of seconds, and the SE map is a smooth function of ``q`` (the RQMC rule it replaces changed
its points where ``V`` crossed a power of 4).

``python -m aimlib.channels.hardmax.moment_table T [T ...]`` recomputes the tables and
rewrites :mod:`aimlib.channels.hardmax.hardmax_moments` (the table's standard errors are stored
with it).  The shipped tables: ``3`` (15 minutes on one thread, with other jobs running) and ``4
--outer-factor 1`` (13 minutes on two threads, nothing else running).
"""

from __future__ import annotations

import argparse
import math
import textwrap
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

from aimlib.channels.hardmax import hardmax_moments, se_moments

__all__ = ["GRID", "build", "K", "second_moment", "has_table", "interpolant"]

#: ``s = q / V`` of the tabulated points: 0 and 49 points from 1e-3 to 1e5, six per decade (on
#: the exact ``T = 2`` function this grid interpolates to 4e-6 and extrapolates to 1.4e-4,
#: below the table's own QMC error; ``tests/test_orthant.py``).
GRID = np.concatenate([[0.0], np.logspace(-3, 5, 49)])


def build(T: int, s: np.ndarray = GRID, *, outer_factor: int = 2, inner=(256, 2),
          progress=None) -> tuple[np.ndarray, np.ndarray]:
    """``K_T(s)`` and its standard error at the points ``s``, from
    :func:`aimlib.channels.hardmax.se_moments.second_moment` at ``q = s / (1 + s)``,
    ``V = 1 / (1 + s)`` with ``outer_factor`` times the default outer rule and the inner rule
    ``inner``, twice the default's points (its bias, about ``0.6 / points`` relative, is then
    half the default's).
    ``s = 0`` uses :data:`aimlib.channels.hardmax.se_moments.UNINFORMED_INNER` (the rule of
    :func:`aimlib.channels.hardmax.uninformed_information`)."""
    vals, errs = [], []
    for x in s:
        q, V = x / (1.0 + x), 1.0 / (1.0 + x)
        if x == 0.0:
            r = se_moments.second_moment(T, q, V, inner=se_moments.UNINFORMED_INNER)
        else:
            r = se_moments.second_moment(T, q, V, outer=(outer_factor * se_moments.outer_points(V),
                                                      se_moments.SE_OUTER[1]), inner=inner)
        vals.append(V * r.value)
        errs.append(V * r.stderr if math.isfinite(r.stderr) else 0.0)
        if progress is not None:
            progress(x, vals[-1], errs[-1])
    return np.array(vals), np.array(errs)


def has_table(T: int) -> bool:
    """Whether ``K_T`` is tabulated."""
    return int(T) in hardmax_moments.TABLES


def interpolant(s: np.ndarray, k: np.ndarray):
    """The function ``K(s)`` of tabulated points (``s[0] = 0``, increasing): a cubic spline in
    ``(log s, log K)`` on the grid, linear from ``K(0)`` below its first positive point, and
    ``c / sqrt(s)`` beyond its last (``c`` from the last point)."""
    from scipy.interpolate import CubicSpline  # scipy only when this runs (its import costs ~0.2 s)

    s, k = np.asarray(s, dtype=np.float64), np.asarray(k, dtype=np.float64)
    if s[0] != 0.0 or np.any(np.diff(s) <= 0) or np.any(~(k > 0)):
        raise ValueError("a table of K is s = 0, then increasing s, and positive values")
    spline = CubicSpline(np.log(s[1:]), np.log(k[1:]))
    s_lo, s_hi, k0, k_lo = float(s[1]), float(s[-1]), float(k[0]), float(k[1])
    c = float(k[-1]) * math.sqrt(s_hi)

    def K(x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if np.any(~(x >= 0)):
            raise ValueError("s = q / V must be >= 0")
        inner = np.exp(spline(np.log(np.clip(x, s_lo, s_hi))))
        out = np.where(x < s_lo, k0 + (k_lo - k0) * x / s_lo, inner)
        return np.where(x > s_hi, c / np.sqrt(np.maximum(x, s_hi)), out)

    return K


@lru_cache(maxsize=8)
def _table(T: int):
    if int(T) not in hardmax_moments.TABLES:
        raise ValueError(f"no table of K_T at T={T} (tabulated: {sorted(hardmax_moments.TABLES)})")
    s, k, _ = hardmax_moments.TABLES[int(T)]
    return interpolant(s, k)


def K(T: int, s) -> np.ndarray:
    """``K_T(s) = V I(q, V)`` at ``s = q / V >= 0`` (interpolated; see the module's text)."""
    return _table(int(T))(s)


def second_moment(T: int, q: float, V: float) -> float:
    """``I(q, V) = E[sum_{a<=b} w_ab g_ab^2] = K_T(q / V) / V`` from the table."""
    if not V > 0:
        raise ValueError(f"V must be > 0, got V={V!r}")
    if q < 0:
        raise ValueError(f"q must be >= 0, got q={q!r}")
    return float(K(T, q / V)) / V


def _write(tables: dict) -> None:
    """Rewrite :mod:`aimlib.channels.hardmax.hardmax_moments` with ``{T: (s, K, stderr)}``."""
    old = dict(hardmax_moments.TABLES)
    old.update(tables)
    lines = ['"""The tabulated ``K_T(s) = V I(q, V)``, ``s = q / V``, of the hardmax channel',
             "at T >= 3 (:mod:`aimlib.channels.hardmax.moment_table`): for each T the points",
             "``s`` (a grid written once however many T share it), the values and their standard",
             "errors.  Written by ``python -m aimlib.channels.hardmax.moment_table``; do not edit",
             "by hand.\"\"\"",
             ""]

    def tuple_lines(arr, indent):
        body = textwrap.wrap(", ".join(repr(float(x)) for x in arr), width=94 - len(indent),
                             break_on_hyphens=False)
        return [indent + "(" + body[0]] + [indent + " " + b for b in body[1:]]

    grids: list[tuple] = []
    for T in sorted(old):
        grid = tuple(float(x) for x in old[T][0])
        if grid not in grids:
            grids.append(grid)
            block = tuple_lines(grid, "")
            block[0] = f"GRID_{len(grids) - 1} = " + block[0]
            block[1:] = ["    " + b.lstrip() if b.startswith(" ") else b for b in block[1:]]
            block[-1] += ")"
            lines += block + [""]
    lines.append("TABLES = {")
    for T in sorted(old):
        _, k, e = old[T]
        lines.append(f"    {int(T)}: (")
        lines.append(f"        GRID_{grids.index(tuple(float(x) for x in old[T][0]))},")
        for arr in (k, e):
            lines.extend(tuple_lines(arr, "        "))
            lines[-1] += "),"
        lines.append("    ),")
    lines.append("}")
    path = Path(hardmax_moments.__file__)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Tabulate K_T(s) of the hardmax channel at T >= 3 "
                                             "and rewrite "
                                             "aimlib/channels/hardmax/hardmax_moments.py.")
    ap.add_argument("T", type=int, nargs="+")
    ap.add_argument("--outer-factor", type=int, default=2,
                    help="times the SE's default outer rule (default 2)")
    ap.add_argument("--inner", type=int, nargs=2, default=(256, 2), metavar=("POINTS", "SHIFTS"),
                    help="the inner (Genz) rule: Sobol points per scrambling, scramblings "
                         "(default 256 2: twice the SE's default points)")
    args = ap.parse_args(argv)
    for T in args.T:
        t0 = time.perf_counter()

        def show(x, k, e, T=T, t0=t0):
            print(f"T={T} s={x:.4g} K={k:.6g} +- {e:.2g} ({time.perf_counter() - t0:.0f} s)",
                  flush=True)

        k, e = build(T, outer_factor=args.outer_factor, inner=tuple(args.inner), progress=show)
        _write({T: (GRID, k, e)})


if __name__ == "__main__":
    main()
