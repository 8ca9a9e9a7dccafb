"""Hardmax over the keys of one query row of cross-attention (docs/theory.md §15.2).

In cross-attention the ``T_k`` indices of a query row are independent given ``omega``, each
``h_b = omega_b + sqrt(V) xi_b``, and the label is ``b* = argmax_b h_b``.  The output function is
the probability of that orthant,

    Z(b* | omega, V) = P(h_b* > h_b for all b != b*) = Phi_{T_k - 1}(k; 1/2),
    k_b = (omega_b* - omega_b) / sqrt(2 V),

a normal CDF of the ``T_k - 1`` comparisons with the row's best, all correlations ``1/2``: for
``T_k = 2`` the univariate ``Phi(k)``, for ``T_k = 3`` the bivariate ``Phi_2(k_1, k_2; 1/2)``.
``g_b = d log Z / d omega_b`` follows.  The SE needs ``E[sum_b g_b^2]``; the labels do not see
the scale of ``h``, so ``V E[sum_b g_b^2] = K_{T_k}(q / V)``, one function of ``s = q / V``:

- ``T_k = 2``: ``K_2(s) = 2 E_{kappa ~ N(0, s)}[phi(kappa)^2 / Phi(kappa)]``, one integral;
- ``T_k = 3``: ``K_3(s) = 3 E_{k ~ N(0, s C)}[(a^2 + b^2 + a b) / Phi_2(k; 1/2)]``,
  ``C = [[1, 1/2], [1/2, 1]]``, ``a = dPhi_2/dk_1``, ``b = dPhi_2/dk_2``, a double integral.

Both by trapezoid rules in sinh-mapped variables, whose scale follows the narrower of the
Gaussian (``sqrt(s)``) and the integrand (1), so that they converge double-exponentially at every
``s`` (the integrand concentrates on strips ``|k_b| < O(1)`` as ``s`` grows).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from aimlib.channels.hardmax.pair import hardmax_logs
from aimlib.core.normal import log_ndtr_scalar

__all__ = ["ROW_T", "row_log_z", "row_g_out", "row_information", "K"]

#: The row lengths ``T_k`` this module integrates exactly.
ROW_T = (2, 3)
#: Correlation of the comparisons with the row's best.
ROW_CORRELATION = 0.5
#: Trapezoid step in the sinh-mapped variable, and how far the rule reaches (in units of the
#: wider of the Gaussian's and the integrand's scales).
STEP = 0.1
REACH = 12.0

_LOG_2PI = math.log(2.0 * math.pi)


def _check_row(T_k: int) -> int:
    if int(T_k) not in ROW_T:
        raise ValueError(f"T_k must be one of {ROW_T} for hardmax cross-attention rows, got "
                         f"T_k={T_k!r}")
    return int(T_k)


def _comparisons(labels: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
    """``k_b = (omega_b* - omega_b) / sqrt(2 V)`` for the ``T_k - 1`` keys other than the label,
    in key order."""
    n, T_k = omega.shape
    best = omega[np.arange(n), labels]
    others = np.array([[b for b in range(T_k) if b != lab] for lab in range(T_k)])[labels]
    return (best[:, None] - np.take_along_axis(omega, others, axis=1)) / math.sqrt(2.0 * V), others


@njit(cache=True)
def _logs_rows(k):
    """``(log Z, log dZ/dk_1, log dZ/dk_2)`` per row of ``k`` (one or two comparisons)."""
    n, m = k.shape
    out = np.empty((n, 3))
    for i in range(n):
        if m == 1:
            out[i, 0] = log_ndtr_scalar(k[i, 0])
            out[i, 1] = -0.5 * k[i, 0] * k[i, 0] - 0.5 * _LOG_2PI
            out[i, 2] = -np.inf
        else:
            lz, l1, l2 = hardmax_logs(k[i, 0], k[i, 1], ROW_CORRELATION, False)
            out[i, 0] = lz
            out[i, 1] = l1
            out[i, 2] = l2
    return out


def row_log_z(labels: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
    """``log Z(b* | omega, V)`` per row: ``labels`` the argmax indices ``(n,)``, ``omega``
    ``(n, T_k)``."""
    omega = np.asarray(omega, dtype=np.float64)
    _check_row(omega.shape[1])
    k, _ = _comparisons(np.asarray(labels, dtype=np.int64), omega, V)
    return _logs_rows(np.ascontiguousarray(k))[:, 0]


def row_g_out(labels: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
    """``g_b = d log Z / d omega_b``, shape ``(n, T_k)``: ``+sum`` of the comparisons' slopes on
    the label, ``-slope`` on each other key."""
    omega = np.asarray(omega, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    n, T_k = omega.shape
    _check_row(T_k)
    k, others = _comparisons(labels, omega, V)
    logs = _logs_rows(np.ascontiguousarray(k))
    slopes = np.exp(logs[:, 1:T_k] - logs[:, :1]) / math.sqrt(2.0 * V)  # d log Z / d k_b
    g = np.zeros((n, T_k))
    np.put_along_axis(g, others, -slopes, axis=1)
    g[np.arange(n), labels] = slopes.sum(axis=1)
    return g


def _sinh_rule(s: float) -> tuple[np.ndarray, np.ndarray]:
    scale = min(1.0, math.sqrt(s))
    reach = REACH * max(1.0, math.sqrt(s))
    tmax = math.asinh(reach / scale)
    t = STEP * np.arange(-math.ceil(tmax / STEP), math.ceil(tmax / STEP) + 1)
    return scale * np.sinh(t), scale * STEP * np.cosh(t)


@njit(cache=True)
def _k3_sum(x, w, s):
    """``sum w_i w_j N(x_ij; 0, s C) (a^2 + b^2 + a b) / Phi_2`` over the product grid."""
    n = x.shape[0]
    c = ROW_CORRELATION
    det = 1.0 - c * c
    norm = 1.0 / (2.0 * math.pi * s * math.sqrt(det))
    total = 0.0
    for i in range(n):
        for j in range(n):
            k1 = x[i]
            k2 = x[j]
            quad = (k1 * k1 + k2 * k2 - 2.0 * c * k1 * k2) / (det * s)
            if quad > 1400.0:
                continue
            lz, l1, l2 = hardmax_logs(k1, k2, c, False)
            f = math.exp(2.0 * l1 - lz) + math.exp(2.0 * l2 - lz) + math.exp(l1 + l2 - lz)
            total += w[i] * w[j] * norm * math.exp(-0.5 * quad) * f
    return total


@njit(cache=True)
def _k2_sum(x, w, s):
    total = 0.0
    for i in range(x.shape[0]):
        k = x[i]
        e = k * k / s
        if e > 1400.0:
            continue
        f = math.exp(-k * k - _LOG_2PI - log_ndtr_scalar(k))  # phi^2 / Phi
        total += w[i] * math.exp(-0.5 * e) / math.sqrt(2.0 * math.pi * s) * f
    return total


def K(T_k: int, s: float) -> float:
    """``K_{T_k}(s) = V E[sum_b g_b^2]`` at ``s = q / V >= 0`` (module docs)."""
    T_k = _check_row(T_k)
    s = float(s)
    if not s >= 0:
        raise ValueError(f"s = q / V must be >= 0, got s={s!r}")
    if s == 0.0:  # omega = 0: every comparison at k = 0
        if T_k == 2:
            return 2.0 / math.pi  # 2 phi(0)^2 / Phi(0)
        return 27.0 / (8.0 * math.pi)  # 3 * 3 (phi(0) Phi(0))^2 / Phi_2(0, 0; 1/2), Phi_2 = 1/3
    x, w = _sinh_rule(s)
    if T_k == 2:
        return 2.0 * _k2_sum(x, w, s)
    return 3.0 * _k3_sum(x, w, s)


def row_information(q: float, V: float, T_k: int) -> float:
    """``E[sum_b g_b^2]`` of a hardmax row of ``T_k`` keys at overlap ``q`` and variance ``V``."""
    if V <= 0:
        return math.inf
    return K(T_k, max(q, 0.0) / V) / V
