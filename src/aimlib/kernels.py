"""Serial numba kernels shared by the model, AMP and the channels' GD layers.

Each is compared with a numpy reference in ``tests/test_model.py`` and ``tests/test_gd.py``.
They have no aimlib imports, so that every module (a channel's GD layer included) can use them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["pair_dots", "mix_tokens", "pair_block", "mix_block", "layer_scratch"]


@njit(cache=True)
def pair_dots(A, B, out):  # pragma: no cover - numba
    """``out[i, a, b] = A[i, a] . B[i, b]`` for blocks of ``T`` rows (serial, contiguous rows)."""
    m, T, d = A.shape
    for i in range(m):
        for a in range(T):
            xa = A[i, a]
            for b in range(T):
                xb = B[i, b]
                s = 0.0
                for j in range(d):
                    s += xa[j] * xb[j]
                out[i, a, b] = s


@njit(cache=True)
def mix_tokens(G, X, out):  # pragma: no cover - numba
    """``out[i, a] = sum_b G[i, a, b] X[i, b]``, i.e. ``G_mu X_mu`` per sample (serial)."""
    m, T, d = X.shape
    for i in range(m):
        for a in range(T):
            o = out[i, a]
            o[:] = 0.0
            for b in range(T):
                g = G[i, a, b]
                xb = X[i, b]
                for j in range(d):
                    o[j] += g * xb[j]


@njit(cache=True, fastmath={"reassoc"})
def pair_block(Z, row, base, r, T, h):  # pragma: no cover - numba
    """``h[a, b] = Z[row + a, base:base + r] . Z[row + b, base:base + r]`` (symmetric), summed in
    ``Z``'s precision (``reassoc`` lets LLVM vectorise the sum, as BLAS orders it)."""
    zero = Z[0, 0] - Z[0, 0]  # 0 in Z's precision: float32 products accumulate in float32
    for a in range(T):
        za = Z[row + a, base:base + r]
        for b in range(a, T):
            zb = Z[row + b, base:base + r]
            s = zero
            for j in range(r):
                s += za[j] * zb[j]
            h[a, b] = s
            h[b, a] = s


@njit(cache=True, fastmath={"reassoc"})
def mix_block(Z, row, base, r, T, G, Gs, GZ):  # pragma: no cover - numba
    """``GZ[row + a, base:base + r] = sum_b (G + G^T)_ab Z[row + b, base:base + r]``; ``Gs`` is
    ``T x T`` scratch in ``Z``'s precision."""
    for a in range(T):
        for b in range(T):
            Gs[a, b] = G[a, b] + G[b, a]
    zero = Z[0, 0] - Z[0, 0]
    for a in range(T):
        out = GZ[row + a, base:base + r]
        out[:] = zero
        for b in range(T):
            g = Gs[a, b]
            zb = Z[row + b, base:base + r]
            for j in range(r):
                out[j] += g * zb[j]


@njit(cache=True)
def layer_scratch(Z, y, r):  # pragma: no cover - numba
    """Sizes and scratch of a GD layer: ``(n, K, T, h, G, Gs)`` for ``Z`` of shape
    ``(n T, K r)`` and outputs ``y`` of shape ``(n, T, T)``; ``h`` and ``G`` are float64
    ``T x T``, ``Gs`` in ``Z``'s precision."""
    T = y.shape[1]
    n = Z.shape[0] // T
    K = Z.shape[1] // r
    return (n, K, T, np.empty((T, T)), np.empty((T, T)), np.empty((T, T), dtype=Z.dtype))
