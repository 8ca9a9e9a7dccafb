"""The softmax channel: ``y_ab = exp(beta h_ab) / sum_c exp(beta h_ac)``, any ``T >= 2``.

The channel reveals ``h`` up to one constant added to every entry (docs/theory.md §3), so its
state-evolution update is ``q_hat = alpha (T^2 + T - 2) / V`` for every ``beta`` and all ``T``
collapse on ``alpha_bar = alpha (T^2 + T - 2)``.  The GD baseline of docs/theory.md §5 fits it
with the squared loss on the softmax outputs (:func:`softmax_layer`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numba import njit
from scipy import special

from aimlib.channels.base import Channel, TestError, normal_rule, pair_weights
from aimlib.core.kernels import layer_scratch, mix_block, pair_block
from aimlib.prior import Prior, mmse_slope

__all__ = ["Softmax", "softmax_output", "softmax_layer"]


def softmax_output(h: np.ndarray, beta: float = 1.0) -> np.ndarray:
    """Row-wise softmax of ``beta h`` over the last axis."""
    z = beta * h
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class Softmax(Channel):
    """Softmax output ``y_ab = exp(beta h_ab) / sum_c exp(beta h_ac)``, any ``T >= 2``."""

    T: int = 2
    beta: float = 1.0

    name: ClassVar[str] = "softmax"
    label: ClassVar[str] = "softmax"
    PARAM: ClassVar[str] = "beta"
    PARAM_DEFAULT: ClassVar[float] = 1.0
    SUPPORTS_GD: ClassVar[bool] = True
    SE_USES_PARAM: ClassVar[bool] = False
    #: measured 0.13, 0.40 and 0.75 us a sample at T = 2, 3, 4 (benchmarks/README.md, "The
    #: output function's cost"); the model scales T = 2 by T^2 / 4
    G_OUT_SECONDS: ClassVar[float] = 0.25e-6
    #: damped runs take longer: means of 88 (fig2b at d = 150, 128 runs) and 90-150 (the quick
    #: preset's fig2b, fig3, fig4, fig8)
    AMP_ITERATIONS: ClassVar[int] = 100
    SUPPORTS_CORRELATED: ClassVar[bool] = True

    @property
    def n_constraints(self) -> int:
        """``T^2 + T - 2``: pair coordinates revealed by the softmax (all but the row shifts)."""
        return self.T * self.T + self.T - 2

    def alpha_bar_factor(self, rho: float) -> float:
        """``alpha_bar = alpha (T^2 + T - 2)``."""
        return float(self.n_constraints)

    def perfect_recovery_threshold(self, prior) -> float:
        """``alpha_c = f / (T^2 + T - 2)``, ``f`` the prior's fraction of free parameters (its
        MMSE's noiseless slope; the tied prior: ``2 rho - rho^2`` for ``rho <= 1``, 1 above,
        docs/theory.md §3).  ``prior``: a :class:`aimlib.prior.Prior`, or ``rho`` of the tied
        prior."""
        return free_fraction(prior) / self.n_constraints

    def predict(self, h: np.ndarray) -> np.ndarray:
        return softmax_output(h, self.beta)

    def q_hat(self, alpha: float, q: float, V: float) -> float:
        """``q_hat = alpha (T^2 + T - 2) / V`` (independent of beta)."""
        if V <= 0:
            return math.inf
        return alpha * self.n_constraints / V

    def row_information(self, q: float, V: float, T_k: int) -> float:
        """``(T_k - 1) / V``: a row reveals its indices up to one constant (docs/theory.md
        §15.2)."""
        return math.inf if V <= 0 else (int(T_k) - 1) / V

    def row_labels(self, h: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        return special.softmax(self.beta * np.asarray(h, dtype=np.float64), axis=-1)

    def _row_residual(self, y: np.ndarray, omega: np.ndarray) -> np.ndarray:
        r = np.log(np.asarray(y, dtype=np.float64)) / self.beta - omega
        return r - r.mean(axis=1, keepdims=True)

    def row_g_out(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """``g = P (log(y) / beta - omega) / V``, ``P`` the projection off the all-ones row."""
        return self._row_residual(y, omega) / V

    def row_log_z(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """The Gaussian density of the row's ``T_k - 1`` revealed contrasts."""
        r = self._row_residual(y, omega)
        return -0.5 * np.sum(r * r, axis=1) / V - 0.5 * (r.shape[1] - 1) * math.log(
            2.0 * math.pi * V)

    def amp_q_hat(self, alpha: float, g: np.ndarray, V: float) -> float:
        """AMP's ``q_hat`` from the derivative form ``2 alpha <sum_{a<=b} w_ab (-dg_ab/dw_ab)>``.

        For the softmax posterior line the derivative is data-independent and equals
        ``(T^2 + T - 2) / (2V)`` exactly, so this is the SE value ``alpha (T^2 + T - 2) / V``.
        (The squared form ``<sum w g^2>`` agrees with it only where ``omega`` is calibrated; away
        from the fixed point it feeds the mismatch back and AMP runs away.)
        """
        return self.q_hat(alpha, math.nan, V)

    def g_out(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """Output function on samples, vectorised.

        The softmax reveals the row differences ``h_ab - h_aT = log(y_ab / y_aT) / beta``; with
        the symmetry of ``h`` this fixes ``h`` up to one constant added to every entry, so the
        posterior of ``h`` given ``y`` and ``omega`` is the line ``h0 + c J``.  With
        ``Sigma = diag(w_ab V)`` in pair coordinates, ``g = Sigma^-1 (h0 + c* J - omega)`` and
        ``c* = <J, Sigma^-1 (omega - h0)> / <J, Sigma^-1 J> = sum_ab (omega - h0)_ab / T^2``
        (full-matrix sums).

        Parameters
        ----------
        y : numpy.ndarray
            Softmax outputs, shape ``(n, T, T)``, rows summing to 1.
        omega : numpy.ndarray
            Symmetric means, shape ``(n, T, T)``.
        V : float
            Variance parameter.

        Returns
        -------
        numpy.ndarray
            ``g`` of shape ``(n, T, T)``, symmetric (the off-diagonal entries hold ``g_ab``).
        """
        return self._g_from_h0(self._h0(y), omega, V)

    def _h0(self, y: np.ndarray) -> np.ndarray:
        """A symmetric index with the observed row differences (the posterior line's base)."""
        logy = np.log(np.maximum(y, np.finfo(float).tiny)) / self.beta
        D = logy - logy[..., -1:]  # D_ab = h_ab - h_aT
        h0 = D[:, -1, :][:, :, None] + D  # h_ab = h_Ta + (h_ab - h_aT), with h_TT = 0
        return 0.5 * (h0 + np.swapaxes(h0, 1, 2))

    def _g_from_h0(self, h0: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        T = self.T
        c = (omega - h0).sum(axis=(1, 2)) / (T * T)
        return (h0 + c[:, None, None] - omega) / (pair_weights(T) * V)

    def g_out_whitened(self, y: np.ndarray, omega: np.ndarray, V: float,
                       L: np.ndarray) -> np.ndarray:
        """:meth:`g_out` for correlated tokens, in the whitened index ``h~ = L^-1 h L^-1``
        (``L = C^(1/2)``): the outputs fix ``h`` up to ``t J``, hence ``h~`` up to a multiple of
        ``L^-1 J L^-1``, which is proportional to ``J`` (the all-ones vector is an eigenvector of
        ``C``); the posterior line is ``L^-1 h0 L^-1 + t J`` and the Gaussian-token formula applies
        to it (docs/theory.md §13.3)."""
        Li = np.linalg.inv(L)
        return self._g_from_h0(Li @ self._h0(y) @ Li, omega, V)

    def g_out_xp(self, xp, y, omega, V: float, w):
        """:meth:`g_out` in array-API calls, on the backend's arrays (``w``: the pair weights
        there), so that AMP's output side stays on a GPU (:mod:`aimlib.core.backend`)."""
        T = self.T
        logy = xp.log(xp.clip(y, min=float(np.finfo(float).tiny))) / self.beta
        D = logy - logy[..., -1:]
        h0 = D[:, -1:, :] + D  # h_Tb + (h_ab - h_aT): the transpose of g_out's, same once
        h0 = 0.5 * (h0 + xp.matrix_transpose(h0))  # symmetrised
        c = xp.sum(omega - h0, axis=(1, 2)) / (T * T)
        return (h0 + c[:, None, None] - omega) / (w * V)

    # -------------------------------------------------------------- GD (docs/theory.md §5)
    def gd_layer(self, Z, y, c, trace, r, d, GZ, loss, gdiag) -> None:
        """Forward and backward pass of the squared loss on the softmax outputs
        (:func:`softmax_layer`)."""
        softmax_layer(Z, y, float(self.beta), c, trace, r, d, GZ, loss, gdiag)

    def gd_layer_xp(self, xp, h, y, d: int):
        """The same pass in array-API calls (the GPU backends, :mod:`aimlib.core.backend`):
        from the predicted indices ``h`` (shape ``(n, K, T, T)``) and the outputs ``y``
        (``(n, 1, T, T)``), returns ``G = dL/dh`` and each student's loss, shape ``(K,)``."""
        z = self.beta * h
        z = xp.exp(z - xp.max(z, axis=-1, keepdims=True))
        y_hat = z / xp.sum(z, axis=-1, keepdims=True)
        diff = y_hat - y
        loss = xp.sum(diff * diff, axis=(0, 2, 3)) / d
        g_y = (2.0 / d) * diff  # dL/dy_hat
        G = self.beta * y_hat * (g_y - xp.sum(y_hat * g_y, axis=-1, keepdims=True))
        return G, loss

    # -------------------------------------------------------------- test error (§10)
    def plugin_test_error(self, m: float, Q: float, Q0: float, predictor: str = "plugin"):
        if predictor != "plugin":
            raise ValueError(f"predictor={predictor!r} is not a softmax predictor")
        if self.T == 2:
            # u_hat = sqrt(3Q) z1, u = (m/Q) u_hat + sqrt(3 (Q0 - m^2/Q)) z2
            x, w = normal_rule()
            uh = math.sqrt(3.0 * Q) * x[:, None]
            u = (m / Q) * uh + math.sqrt(max(3.0 * (Q0 - m * m / Q), 0.0)) * x[None, :]
            diff = special.expit(self.beta * u) - special.expit(self.beta * uh)
            row = 2.0 * np.sum(w[:, None] * w[None, :] * diff**2)
            return TestError(self.T * float(row), 1e-10, "quadrature")
        return _rqmc(m, Q, Q0, self.T, self.beta, bayes=False)

    def bayes_test_error(self, q: float, Q0: float):
        V = max(Q0 - q, 0.0)
        if self.T == 2:
            # E ||y||^2 - E ||E[y | u_hat]||^2 per row: 2 (E[s(u)^2] - E[s_bar(u_hat)^2])
            x, w = normal_rule()
            uh = math.sqrt(3.0 * q) * x
            s_bar = np.sum(w[None, :] * special.expit(
                self.beta * (uh[:, None] + math.sqrt(3.0 * V) * x[None, :])), axis=1)
            s2 = float(np.sum(w * special.expit(self.beta * math.sqrt(3.0 * Q0) * x) ** 2))
            val = max(self.T * 2.0 * (s2 - float(np.sum(w * s_bar**2))), 0.0)
            return TestError(val, 1e-10, "quadrature")
        return _rqmc(q, q, Q0, self.T, self.beta, bayes=True)


#: ``alpha_bar_c = 2 rho - rho^2`` for ``rho <= 1`` and 1 for ``rho >= 1``: the fraction of
#: free parameters of a rank-``rho d`` symmetric matrix (docs/theory.md §3).
perfect_recovery_alpha_bar = mmse_slope


def free_fraction(prior) -> float:
    """The fraction of free parameters of a prior (:meth:`aimlib.prior.Prior.mmse_slope`), or
    of the tied prior at width ratio ``prior`` if it is a number."""
    return prior.mmse_slope() if isinstance(prior, Prior) else mmse_slope(prior)


#: Randomised QMC for the softmax test error at T > 2: scramblings, points per scrambling, inner
#: points of the posterior average.
QMC_REPEATS = 8
QMC_POINTS = 2**13
QMC_INNER = 2**7


def _rqmc(m: float, Q: float, Q0: float, T: int, beta: float, *, bayes: bool):
    """Row error by randomised QMC: one row ``(h_a1 .. h_aT)`` with ``Var h_aa = 2 .``,
    ``Var h_ab = .`` (the other entries of the row), times ``T`` rows."""
    from scipy.stats import qmc  # scipy only when this runs (its import costs ~0.2 s)

    wvec = np.ones(T)
    wvec[0] = 2.0  # the row's diagonal entry first (the softmax does not care where it is)
    vals = []
    for rep in range(QMC_REPEATS):
        z = special.ndtri(qmc.Sobol(2 * T, scramble=True, seed=1000 + rep).random(QMC_POINTS))
        z = np.clip(z, -8.5, 8.5)
        hh = math.sqrt(Q) * np.sqrt(wvec) * z[:, :T]
        if not bayes:
            h = (m / Q) * hh + math.sqrt(max(Q0 - m * m / Q, 0.0)) * np.sqrt(wvec) * z[:, T:]
            diff = softmax_output(h, beta) - softmax_output(hh, beta)
            vals.append(T * float(np.mean(np.sum(diff * diff, axis=1))))
            continue
        V = max(Q0 - Q, 0.0)
        h = math.sqrt(Q0) * np.sqrt(wvec) * z[:, :T]
        y2 = float(np.mean(np.sum(softmax_output(h, beta) ** 2, axis=1)))
        zi = special.ndtri(qmc.Sobol(T, scramble=True, seed=5000 + rep).random(QMC_INNER))
        zi = np.clip(zi, -8.5, 8.5)
        post = hh[:, None, :] + math.sqrt(V) * np.sqrt(wvec) * zi[None, :, :]
        ybar = softmax_output(post, beta).mean(axis=1)
        vals.append(T * (y2 - float(np.mean(np.sum(ybar * ybar, axis=1)))))
    vals = np.asarray(vals)
    return TestError(float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(len(vals))), "rqmc")


# ``reassoc`` only: it lets LLVM vectorise the length-r dot products by summing them in another
# order (as BLAS does); no other fast-math flag (no NaN/Inf assumptions, no approximate exp or
# reciprocals), and the kernel matches the numpy reference to 1e-12 (tests/test_gd.py).
@njit(cache=True, fastmath={"reassoc"})
def softmax_layer(Z, y, beta, c, trace, r, d, GZ, loss, gdiag):  # pragma: no cover - numba
    """Forward and backward pass through the indices and the softmax, per sample and student.

    ``Z = X [W_1 .. W_K]`` has shape ``(n T, K r)`` (row ``mu T + a`` is token ``a`` of sample
    ``mu``, columns ``k r .. (k + 1) r`` student ``k``).  Adds each student's loss
    ``(1/d) ||y_hat - y||_F^2`` to ``loss`` and ``sum_mu Tr G_mu`` to ``gdiag``, and writes
    ``(G + G^T) Z`` into ``GZ`` in ``Z``'s layout, ready for the backward product ``X^T GZ``
    (``G = dL/dh``).  The loops over ``r`` (:mod:`aimlib.core.kernels`) run in ``Z``'s precision;
    the softmax, loss and ``G`` are float64.
    """
    n, K, T, h, G, Gs = layer_scratch(Z, y, r)
    for i in range(n):
        for k in range(K):
            pair_block(Z, i * T, k * r, r, T, h)
            lk = _softmax_rows(h, y[i], trace[k], beta, c, d, G)
            loss[k] += lk
            for a in range(T):
                gdiag[k] += G[a, a]
            mix_block(Z, i * T, k * r, r, T, G, Gs, GZ)


@njit(cache=True)
def _softmax_rows(h, y, tr, beta, c, d, G):  # pragma: no cover - numba
    """One sample of one student: ``h`` (raw ``z_a . z_b``) becomes the softmax output, ``G``
    receives ``dL/dh``; returns the sample's loss ``(1/d) ||y_hat - y||_F^2``."""
    T = y.shape[0]
    lk = 0.0
    for a in range(T):
        h[a, a] -= tr
        mx = -np.inf
        for b in range(T):
            h[a, b] = beta * h[a, b] / c
            mx = max(mx, h[a, b])
        tot = 0.0
        for b in range(T):
            h[a, b] = math.exp(h[a, b] - mx)
            tot += h[a, b]
        dot = 0.0
        for b in range(T):
            h[a, b] /= tot  # y_hat
            diff = h[a, b] - y[a, b]
            lk += diff * diff
            G[a, b] = 2.0 * diff / d  # dL/dy_hat
            dot += h[a, b] * G[a, b]
        for b in range(T):
            G[a, b] = beta * h[a, b] * (G[a, b] - dot)  # dL/dh
    return lk / d
