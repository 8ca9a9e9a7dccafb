"""GD on the models beyond the paper's (docs/theory.md §15.5): students
``S = L R^T / sqrt(r d)`` with untied factors (``L = K``, ``R = Q``) or tied ones (``L = R = W``),
in cross-attention (``h_ab = x_a^T S z_b / sqrt(d)``) or self-attention with untied factors
(``h_ab = (x_a^T S x_b - delta_ab Tr S) / sqrt(d)``).

With ``Z_q = X_q L`` and ``Z_k = X_k R`` (``n T x r`` per student, one GEMM each),
``h = Z_q Z_k^T / c``, ``c = sqrt(r d) sqrt(d)``, the channel's backward pass gives
``G = dL/dh`` and

    dL/dL = (X_q^T (G Z_k) - [self] gdiag R) / c,   dL/dR = (X_k^T (G^T Z_q) - [self] gdiag L) / c,

(for tied factors their sum), two more GEMMs: a step costs ``O(n T d r)`` like the paper's GD,
never forming ``S``.  The same array-API calls run on NumPy (the CPU path: the work is in the
four GEMMs) and on the array-API backends (:mod:`aimlib.core.backend`).  Adam, the held-out
stopping rule and the driver are :mod:`aimlib.algorithms.gd`'s.
"""

from __future__ import annotations

import math

import numpy as np

from aimlib.algorithms.gd_steps import ArrayAdam
from aimlib.core.backend import Backend

__all__ = ["FactorSteps", "NUMPY", "memory_per_init", "estimate"]

#: NumPy as an array-API namespace (NumPy 2), the CPU path of :class:`FactorSteps`.
NUMPY = Backend("numpy", np)


def estimate(P: np.ndarray, d: int) -> np.ndarray:
    """``S = L R^T / sqrt(r d)`` of one student: ``P`` is ``(2, d, r)`` (untied) or ``(d, r)``."""
    L, R = (P[0], P[1]) if P.ndim == 3 else (P, P)
    return (L @ R.T) / math.sqrt(L.shape[1] * d)


def memory_per_init(n: int, T_q: int, T_k: int, r: int, dtype: str) -> float:
    """Bytes one student's products take: ``Z_q, Z_k`` and their backward products, and the
    indices and ``G`` (float64)."""
    item = np.dtype(dtype).itemsize
    return 2.0 * n * (T_q + T_k) * r * item + 4.0 * n * T_q * T_k * 8


class FactorSteps(ArrayAdam):
    """Adam steps for a batch of factor students (module docs); Adam and the driver's interface
    are :class:`aimlib.algorithms.gd_steps.ArrayAdam`'s."""

    def __init__(self, be: Backend, X, y, ch, lr: float, dtype: str, held=None, *,
                 T_q: int, cross: bool, untied: bool):
        self.be, self.ch, self.lr = be, ch, lr
        self.T_q, self.cross, self.untied = int(T_q), bool(cross), bool(untied)
        self.d = X.shape[2]
        self.wdt = be.dtype(dtype)
        self.f64 = be.dtype("float64")
        self.train = self._put(X, y, dtype)
        self.held = None if held is None else self._put(*held, dtype)
        Tk = y.shape[-1]
        self.eye = None if self.cross else be.asarray(np.eye(Tk))

    def _put(self, X, y, dtype):
        """Queries ``(n T_q, d)``, keys ``(n T_k, d)`` (the same tokens in self-attention) and
        the outputs ``(n, 1, T_q, T_k)`` on the device."""
        n, _, d = X.shape
        if self.cross:
            Xq = np.ascontiguousarray(X[:, :self.T_q]).reshape(-1, d)
            Xk = np.ascontiguousarray(X[:, self.T_q:]).reshape(-1, d)
        else:
            Xq = Xk = X.reshape(-1, d)
        Xq_d = self.be.asarray(Xq, dtype)
        Xk_d = Xq_d if Xk is Xq else self.be.asarray(Xk, dtype)
        return Xq_d, Xk_d, self.be.xp.reshape(self.be.asarray(y), (n, 1) + y.shape[1:])

    def _factors(self, P):
        if self.untied:
            return P[:, 0, ...], P[:, 1, ...]
        return P, P

    def loss_and_grad(self, P, data=None, grad: bool = True):
        """Each student's loss ``(K,)`` and its gradient, the shape of ``P``: ``(K, 2, d, r)``
        untied, ``(K, d, r)`` tied (on the training samples unless ``data`` is given)."""
        xp, d = self.be.xp, self.d
        Xq, Xk, y4 = self.train if data is None else data
        n, _, Tq, Tk = y4.shape
        L, R = self._factors(P)
        K, _, r = L.shape
        c = math.sqrt(r * d) * math.sqrt(d)

        def packed(F):  # (K, d, r) -> (d, K r)
            return xp.astype(xp.reshape(xp.permute_dims(F, (1, 0, 2)), (d, K * r)), self.wdt)

        def per_sample(Z, T):  # (n T, K r) -> (n, K, T, r)
            return xp.permute_dims(xp.reshape(Z, (n, T, K, r)), (0, 2, 1, 3))

        Zq = per_sample(Xq @ packed(L), Tq)
        Zk = per_sample(Xk @ packed(R), Tk)
        h = xp.astype(Zq @ xp.matrix_transpose(Zk), self.f64)
        if not self.cross:
            trace = xp.sum(L * R, axis=(1, 2))  # Tr(L R^T) per student
            h = h - self.eye * trace[:, None, None]
        h = h / c
        G, loss = self.ch.gd_layer_xp(xp, h, y4, d)
        if not grad:
            return loss, None
        Gw = xp.astype(G, self.wdt)

        def back(Xs, M, T):  # X^T M with M (n, K, T, r): (K, d, r), one GEMM
            M2 = xp.reshape(xp.permute_dims(M, (0, 2, 1, 3)), (n * T, K * r))
            out = xp.astype(xp.matrix_transpose(Xs) @ M2, self.f64)
            return xp.permute_dims(xp.reshape(out, (d, K, r)), (1, 0, 2))

        gL = back(Xq, Gw @ Zk, Tq)
        gR = back(Xk, xp.matrix_transpose(Gw) @ Zq, Tk)
        if not self.cross:
            gdiag = xp.sum(G * self.eye, axis=(0, 2, 3))
            gL = gL - gdiag[:, None, None] * R
            gR = gR - gdiag[:, None, None] * L
        if self.untied:
            return loss, xp.stack([gL, gR], axis=1) / c
        return loss, (gL + gR) / c
