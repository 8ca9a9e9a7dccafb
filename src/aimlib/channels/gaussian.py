"""The Gaussian output channel ``y_ab = h_ab + sqrt(Delta) z_ab``, ``a <= b`` (docs/theory.md §11).

``z_ab`` are i.i.d. standard normal and ``y`` is symmetric; any ``T >= 1`` and ``Delta >= 0``.
At ``T = 1`` only ``h_11 = (x^T S x - Tr S) / sqrt(d)`` is observed: this is the extensive-width
quadratic network of Maillard, Troiani, Martin, Krzakala and Zdeborova (NeurIPS 2024).

Each pair coordinate is a Gaussian observation of ``h_ab`` with variance ``Delta``, so
``Z_out(y | omega, V) = prod_{a<=b} N(y_ab; omega_ab, w_ab V + Delta)``,
``g_ab = (y_ab - omega_ab) / (w_ab V + Delta)`` and the state-evolution update is in closed form,

    q_hat = 2 alpha sum_{a<=b} w_ab / (w_ab V + Delta).

Noiseless (``Delta = 0``) it is ``alpha T (T + 1) / V``: with ``alpha_bar = alpha T (T + 1)`` every
``T`` follows the softmax curve in ``alpha_bar``, and perfect recovery sets in at
``alpha_bar_c = 2 rho - rho^2`` (``rho <= 1``; 1 above), i.e. ``alpha = rho - rho^2 / 2`` at
``T = 1``.  The GD baseline fits ``y`` with the squared loss on ``h`` itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numba import njit

from aimlib.channels.base import Channel, TestError, pair_weights
from aimlib.channels.softmax import free_fraction
from aimlib.core.kernels import layer_scratch, mix_block, pair_block

__all__ = ["Gaussian", "square_layer"]

_LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class Gaussian(Channel):
    """Gaussian output ``y_ab = h_ab + sqrt(delta) z_ab`` (``a <= b``), any ``T >= 1``."""

    T: int = 1
    delta: float = 0.0

    name: ClassVar[str] = "gaussian"
    label: ClassVar[str] = "Gaussian"
    T_MIN: ClassVar[int] = 1
    PARAM: ClassVar[str] = "delta"
    PARAM_DEFAULT: ClassVar[float] = 0.0
    NOISY: ClassVar[bool] = True
    SUPPORTS_GD: ClassVar[bool] = True
    #: measured 0.01-0.02 us a sample (benchmarks/README.md, "The output function's cost")
    G_OUT_SECONDS: ClassVar[float] = 0.03e-6

    @classmethod
    def check_param(cls, value) -> float:
        """``delta`` must be a finite number ``>= 0``."""
        if isinstance(value, bool) or not isinstance(value, int | float | np.floating) \
                or not (value >= 0 and math.isfinite(value)):
            raise ValueError(f"delta must be a finite number >= 0 for the gaussian channel, "
                             f"got delta={value!r}")
        return float(value)

    @property
    def n_pairs(self) -> int:
        """``T (T + 1) / 2`` observed pair coordinates."""
        return self.T * (self.T + 1) // 2

    def alpha_bar_factor(self, rho: float) -> float:
        """``alpha_bar = alpha T (T + 1)`` (twice the observed pair coordinates)."""
        return float(2 * self.n_pairs)

    def perfect_recovery_threshold(self, prior) -> float | None:
        """Noiseless: ``alpha_c = (2 rho - rho^2) / (T (T + 1))`` (``rho <= 1``),
        ``1 / (T (T + 1))`` above; ``None`` for ``delta > 0`` (the error then only decays)."""
        if self.delta > 0:
            return None
        return free_fraction(prior) / (2 * self.n_pairs)

    def labels(self, h: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """``y = h + sqrt(delta) z``, one ``z`` per pair ``a <= b`` (``y`` symmetric)."""
        y = np.array(h, dtype=np.float64)
        if self.delta > 0:
            iu = np.triu_indices(self.T)
            z = np.zeros_like(y)
            z[:, iu[0], iu[1]] = rng.standard_normal((y.shape[0], iu[0].size))
            z = z + np.triu(z, 1).swapaxes(1, 2)
            y += math.sqrt(self.delta) * z
        return y

    def predict(self, h: np.ndarray) -> np.ndarray:
        """The noiseless output is ``h`` itself."""
        return np.asarray(h, dtype=np.float64)

    def _var(self, V: float) -> np.ndarray:
        return pair_weights(self.T) * V + self.delta

    def g_out(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """``g_ab = (y_ab - omega_ab) / (w_ab V + delta)``."""
        return (y - omega) / self._var(V)

    def g_out_xp(self, xp, y, omega, V: float, w):
        """:meth:`g_out` in array-API calls (``w``: the pair weights on the backend)."""
        return (y - omega) / (w * V + self.delta)

    def log_z_out(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """``sum_{a<=b} log N(y_ab; omega_ab, w_ab V + delta)``."""
        iu = np.triu_indices(self.T)
        s = self._var(V)[iu]
        r = (y - omega)[:, iu[0], iu[1]]
        return -0.5 * np.sum(r * r / s + np.log(s) + _LOG_2PI, axis=1)

    def q_hat(self, alpha: float, q: float, V: float) -> float:
        """``q_hat = 2 alpha sum_{a<=b} w_ab / (w_ab V + delta)`` (closed form)."""
        if V <= 0 and self.delta == 0:
            return math.inf
        T = self.T
        return 2.0 * alpha * (T * 2.0 / (2.0 * V + self.delta)
                              + 0.5 * T * (T - 1) / (V + self.delta))

    def row_information(self, q: float, V: float, T_k: int) -> float:
        """``T_k / (V + delta)`` (docs/theory.md §15.2)."""
        if V <= 0 and self.delta == 0:
            return math.inf
        return int(T_k) / (V + self.delta)

    def row_labels(self, h: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        h = np.asarray(h, dtype=np.float64)
        if self.delta == 0:
            return h.copy()
        return h + math.sqrt(self.delta) * rng.standard_normal(h.shape)

    def row_g_out(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        return (np.asarray(y, dtype=np.float64) - omega) / (V + self.delta)

    def row_log_z(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        r = np.asarray(y, dtype=np.float64) - omega
        v = V + self.delta
        return -0.5 * np.sum(r * r, axis=1) / v - 0.5 * r.shape[1] * math.log(2.0 * math.pi * v)

    def amp_q_hat(self, alpha: float, g: np.ndarray, V: float) -> float:
        """The derivative form ``2 alpha sum_{a<=b} w_ab (-dg_ab/domega_ab)``, data-independent
        here and equal to the SE update (as for the softmax, this keeps AMP calibrated away from
        its fixed point)."""
        return self.q_hat(alpha, math.nan, V)

    def gd_layer(self, Z, y, c, trace, r, d, GZ, loss, gdiag) -> None:
        """Forward and backward pass of the squared loss on ``h`` (:func:`square_layer`)."""
        square_layer(Z, y, c, trace, r, d, GZ, loss, gdiag)

    def gd_layer_xp(self, xp, h, y, d: int):
        """The same pass in array-API calls (as :meth:`Softmax.gd_layer_xp
        <aimlib.channels.softmax.Softmax.gd_layer_xp>`): ``G = 2 (h - y) / d`` and the losses."""
        diff = h - y
        return (2.0 / d) * diff, xp.sum(diff * diff, axis=(0, 2, 3)) / d

    # -------------------------------------------------------------- test error (§10)
    def plugin_test_error(self, m: float, Q: float, Q0: float, predictor: str = "plugin"):
        """``E ||h - h_hat||_F^2 = T (T + 1) (Q0 - 2 m + Q)`` (against the noiseless output)."""
        if predictor != "plugin":
            raise ValueError(f"predictor={predictor!r} is not a gaussian-channel predictor")
        return TestError(2 * self.n_pairs * (Q0 - 2.0 * m + Q), 1e-15, "closed form")

    def bayes_test_error(self, q: float, Q0: float):
        """``E ||h - E[h | h_hat]||_F^2 = T (T + 1) (Q0 - q)``."""
        return TestError(2 * self.n_pairs * max(Q0 - q, 0.0), 1e-15, "closed form")


@njit(cache=True, fastmath={"reassoc"})
def square_layer(Z, y, c, trace, r, d, GZ, loss, gdiag):  # pragma: no cover - numba
    """Forward and backward pass of ``(1/d) ||h_hat - y||_F^2`` per sample and student.

    Same layout and outputs as :func:`aimlib.channels.softmax.softmax_layer`, with the prediction
    ``h_hat_ab = (z_a . z_b - delta_ab ||W||^2) / c`` itself, so ``G = dL/dh = 2 (h_hat - y) / d``.
    """
    n, K, T, h, G, Gs = layer_scratch(Z, y, r)
    for i in range(n):
        for k in range(K):
            pair_block(Z, i * T, k * r, r, T, h)
            loss[k] += _square_rows(h, y[i], trace[k], c, d, G)
            for a in range(T):
                gdiag[k] += G[a, a]
            mix_block(Z, i * T, k * r, r, T, G, Gs, GZ)


@njit(cache=True)
def _square_rows(h, y, tr, c, d, G):  # pragma: no cover - numba
    """One sample of one student: ``G = 2 (h_hat - y) / d``; returns the sample's loss."""
    T = y.shape[0]
    lk = 0.0
    for a in range(T):
        h[a, a] -= tr
        for b in range(T):
            diff = h[a, b] / c - y[a, b]
            lk += diff * diff
            G[a, b] = 2.0 * diff / d
    return lk / d
