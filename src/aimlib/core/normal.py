"""Gaussian special functions in log space, as numba kernels with numpy front ends.

``log_ndtr`` is ``log Phi(x)`` accurate in both tails.  ``log_bvn_cdf`` is the log of the
bivariate normal CDF ``Phi_2(h, k; r)`` with relative accuracy over the whole plane for
``|r| <= 0.9``: the Drezner-Wesolowsky / Genz angle integral

    Phi_2 = Phi(h) Phi(k)
            + (1 / 2 pi) int_0^{asin r} exp(-(h^2 + k^2 - 2 h k sin t) / (2 cos^2 t)) dt

is used where it is accurate (``min(h, k) >= -12`` and, for ``r < 0``, no cancellation beyond a
factor 2; always when both arguments are positive), and otherwise (``h = min(h, k) <= 0``) the
endpoint form

    Phi_2 = phi(h) Phi(A) int_0^inf exp(h t - t^2/2) Phi(A + b t) / Phi(A) dt
(``A = (k - r h)/sqrt(1 - r^2)``, ``b = r / sqrt(1 - r^2)``, ``h <= 0``) whose integrand is
log-concave and smooth, integrated by an exp-sinh rule scaled to its decay rate at ``t = 0``.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit, vectorize

__all__ = ["log_ndtr", "log_bvn_cdf", "bvn_cdf", "log_ndtr_scalar", "log_bvn_scalar"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT2 = math.sqrt(2.0)

# Gauss-Legendre rule on [0, 1] for the angle integral.
_GL_N = 24
_gx, _gw = np.polynomial.legendre.leggauss(_GL_N)
_ANG_X = 0.5 * (_gx + 1.0)
_ANG_W = 0.5 * _gw

# Below this the angle integral is too sharply peaked for the Gauss rule (and for r < 0 it cancels).
_ANGLE_MIN = -12.0

# exp-sinh rule on [0, inf): t = exp(pi/2 sinh(tau)), tau in [-4, 4].
_ES_H = 0.05
_es_tau = np.arange(-4.0, 4.0 + 1e-12, _ES_H)
_ES_T = np.exp(0.5 * math.pi * np.sinh(_es_tau))
_ES_W = _ES_H * 0.5 * math.pi * np.cosh(_es_tau) * _ES_T


@njit(cache=True)
def log_ndtr_scalar(x):
    if x > 0.0:
        return math.log1p(-0.5 * math.erfc(x / _SQRT2))
    if x > -37.0:
        return math.log(0.5 * math.erfc(-x / _SQRT2))
    # Asymptotic series of the Mills ratio.
    z = 1.0 / (x * x)
    series = 1.0 + z * (-1.0 + z * (3.0 + z * (-15.0 + z * (105.0 + z * (-945.0 + z * 10395.0)))))
    return -0.5 * x * x - _LOG_SQRT_2PI - math.log(-x) + math.log(series)


@njit(cache=True)
def _log_bvn_endpoint(h, k, r):
    """log Phi_2(h, k; r) for h <= min(0, k), by the endpoint integral."""
    s = math.sqrt(1.0 - r * r)
    A = (k - r * h) / s
    b = r / s
    logPhiA = log_ndtr_scalar(A)
    # Scale of the decay at t = 0: |h| + |b| * (inverse Mills ratio of A) + 1.
    mills = math.exp(-0.5 * A * A - _LOG_SQRT_2PI - logPhiA)
    scale = 1.0 / (-h + abs(b) * mills + 1.0)
    acc = 0.0
    for j in range(_ES_T.shape[0]):
        t = scale * _ES_T[j]
        e = h * t - 0.5 * t * t + log_ndtr_scalar(A + b * t) - logPhiA
        if e > -745.0:
            acc += _ES_W[j] * math.exp(e)
    acc *= scale
    return -0.5 * h * h - _LOG_SQRT_2PI + logPhiA + math.log(acc)


@njit(cache=True)
def _angle_ratio(h, k, r, L0):
    """``(Phi_2 - Phi(h) Phi(k)) / (Phi(h) Phi(k))`` by the angle integral (24-point Gauss)."""
    asr = math.asin(r)
    hk = h * k
    hs = 0.5 * (h * h + k * k)
    acc = 0.0
    for j in range(_ANG_X.shape[0]):
        sn = math.sin(asr * _ANG_X[j])
        e = (hk * sn - hs) / (1.0 - sn * sn) - L0
        if e > -745.0:
            acc += _ANG_W[j] * math.exp(e)
    return acc * asr / (2.0 * math.pi)


@njit(cache=True)
def log_bvn_scalar(h, k, r):
    """log of the bivariate normal CDF Phi_2(h, k; r), |r| <= 0.9."""
    if h > k:
        h, k = k, h
    L0 = log_ndtr_scalar(h) + log_ndtr_scalar(k)
    if r == 0.0:
        return L0
    if h > 0.0:
        # Both arguments positive: Phi_2 / (Phi(h) Phi(k)) >= 0.19, no cancellation.
        return L0 + math.log1p(_angle_ratio(h, k, r, L0))
    if h >= _ANGLE_MIN:
        ratio = _angle_ratio(h, k, r, L0)
        if r > 0.0 or ratio > -0.5:
            return L0 + math.log1p(ratio)
    return _log_bvn_endpoint(h, k, r)


# The numpy front ends are ufuncs built on first use: a ``vectorize`` with signatures loads its
# kernels when its module is imported (about 0.4 s per process), which every workflow job that
# imports the channels paid although only the library's callers use these two.
def _log_ndtr(x):
    return log_ndtr_scalar(x)


def _log_bvn(h, k, r):
    return log_bvn_scalar(h, k, r)


@functools.cache
def _ufuncs():
    return (vectorize(["float64(float64)"], cache=True)(_log_ndtr),
            vectorize(["float64(float64, float64, float64)"], cache=True)(_log_bvn))


def log_ndtr(x):
    """``log Phi(x)``, accurate in both tails (elementwise, a numpy ufunc built on first use)."""
    return _ufuncs()[0](x)


def log_bvn_cdf(h, k, r):
    """``log Phi_2(h, k; r)`` for ``|r| <= 0.9`` (elementwise, a numpy ufunc built on first use),
    accurate relative to ``Phi_2``."""
    return _ufuncs()[1](h, k, r)


def bvn_cdf(h, k, r):
    """Bivariate normal CDF ``Phi_2(h, k; r)`` (standard margins, correlation ``r``)."""
    return np.exp(log_bvn_cdf(h, k, r))
