"""Serial numba kernels shared by the model, AMP and the channels' GD layers.

Each is compared with a numpy reference in ``tests/test_model.py`` and ``tests/test_gd.py``.
They have no aimlib imports, so that every module (a channel's GD layer included) can use them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["gd_step", "pair_dots", "mix_tokens", "pair_block", "mix_block", "layer_scratch",
           "GAUSS_CUTOFF", "gauss_sum_2d", "adam_step", "pack_students"]

#: Exponents beyond which a Gaussian weight ``exp(-e)`` is dropped: ``exp(-708)`` is about the
#: smallest normal float64 (2.2e-308), so every dropped term is subnormal or zero and cannot
#: change a sum of order one or more; it also keeps the loops off the slow subnormal path.
GAUSS_CUTOFF = 708.0


@njit(cache=True)
def gauss_sum_2d(kappa, jac, table, lam, A=3.0, B=1.0):  # pragma: no cover - numba
    """``sum_ij jac_i jac_j exp(-lam (A k_i^2 - 2 B k_i k_j + A k_j^2)) table[i, j, :]``.

    The 2-D Gaussian sum of the hardmax ``T = 2`` integrals (docs/theory.md §3.4, §8, §13): for
    Gaussian tokens the pair differences ``u = (omega_11 - omega_12, omega_22 - omega_12)`` have
    covariance ``q [[3, 1], [1, 3]]``, whose quadratic form is
    ``(3 u_1^2 - 2 u_1 u_2 + 3 u_2^2) / (8 q)`` (``A = 3``, ``B = 1``, the defaults); other token
    laws give other ``A > |B|``.  Terms with exponent above :data:`GAUSS_CUTOFF` are skipped; a
    whole row ``i`` is skipped when even its smallest exponent, ``(A - B^2 / A) lam k_i^2``, is
    above it.  Returns the ``k`` sums of a table of shape ``(n, n, k)``.
    """
    n = kappa.shape[0]
    k = table.shape[2]
    acc = np.zeros(k)
    keep = 1.0 - (B * B) / (A * A)
    for i in range(n):
        ki = kappa[i]
        ei = A * lam * ki * ki
        if ei * keep > GAUSS_CUTOFF:
            continue
        for j in range(n):
            kj = kappa[j]
            e = ei + lam * (A * kj * kj - 2.0 * B * ki * kj)
            if e < GAUSS_CUTOFF:
                w = jac[i] * jac[j] * math.exp(-e)
                for c in range(k):
                    acc[c] += w * table[i, j, c]
    return acc


@njit(cache=True)
def pair_dots(A, B, out):  # pragma: no cover - numba
    """``out[i, a, b] = A[i, a] . B[i, b]`` for blocks of rows, ``A`` ``(m, Ta, d)`` and ``B``
    ``(m, Tb, d)``: the self-attention indices (``Ta = Tb = T``) or the cross-attention ones
    (queries against keys); serial."""
    m, Ta, d = A.shape
    Tb = B.shape[1]
    for i in range(m):
        for a in range(Ta):
            xa = A[i, a]
            for b in range(Tb):
                xb = B[i, b]
                s = 0.0
                for j in range(d):
                    s += xa[j] * xb[j]
                out[i, a, b] = s


@njit(cache=True)
def mix_tokens(G, X, out):  # pragma: no cover - numba
    """``out[i, a] = sum_b G[i, a, b] X[i, b]``, i.e. ``G_mu X_mu`` per sample: ``G``
    ``(m, Ta, Tb)``, ``X`` ``(m, Tb, d)``, ``out`` ``(m, Ta, d)`` (serial)."""
    m, Ta, Tb = G.shape
    d = X.shape[2]
    for i in range(m):
        for a in range(Ta):
            o = out[i, a]
            o[:] = 0.0
            for b in range(Tb):
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


@njit(cache=True)
def adam_step(W, m, v, P, gdiag, centre2, c, lr, beta1, beta2, eps, bias1, bias2
              ):  # pragma: no cover - numba
    """One Adam step of a batch of students, in place, from GD's backward product.

    The gradient of student ``k`` is ``(P[:, k r : (k + 1) r] - centre2 gdiag[k] W[k]) / c``
    (``P = X^T (G + G^T) X W``, shape ``(d, K r)``, in the products' precision), and the update
    is Adam's: ``m = beta1 m + (1 - beta1) g``, ``v = beta2 v + (1 - beta2) g^2``,
    ``W -= lr (m / bias1) / (sqrt(v / bias2) + eps)`` with ``bias1 = 1 - beta1^t`` and
    ``bias2 = 1 - beta2^t`` computed by the caller.  Every operation is the numpy reference's,
    in its order and precision (no fused multiply-add), so the result is bitwise the same
    (``tests/test_gd.py``); it saves the dozen ``K d r`` temporaries of that reference.
    """
    K, d, r = W.shape
    for k in range(K):
        s = centre2 * gdiag[k]
        for i in range(d):
            for j in range(r):
                g = (P[i, k * r + j] - s * W[k, i, j]) / c
                mk = beta1 * m[k, i, j] + (1.0 - beta1) * g
                vk = beta2 * v[k, i, j] + (1.0 - beta2) * g * g
                m[k, i, j] = mk
                v[k, i, j] = vk
                W[k, i, j] -= lr * (mk / bias1) / (math.sqrt(vk / bias2) + eps)


@njit(cache=True)
def gd_step(W, P, gdiag, centre2, c, eta):  # pragma: no cover - numba
    """One plain gradient-descent step of a batch of students, in place, from GD's backward
    product (as :func:`adam_step`): ``W_k -= eta (P[:, k r : (k + 1) r] - centre2 gdiag[k]
    W_k) / c``, each operation the numpy reference's in its order (``tests/test_gd_width.py``
    compares them bitwise)."""
    K, d, r = W.shape
    for k in range(K):
        s = centre2 * gdiag[k]
        for i in range(d):
            for j in range(r):
                g = (P[i, k * r + j] - s * W[k, i, j]) / c
                W[k, i, j] -= eta * g


@njit(cache=True)
def pack_students(W, out):  # pragma: no cover - numba
    """``out[i, k r + j] = W[k, i, j]`` in ``out``'s precision: the students side by side,
    the right operand of GD's forward GEMM ``X [W_1 .. W_K]`` (one pass instead of numpy's
    transposed copy and then its cast)."""
    K, d, r = W.shape
    for i in range(d):
        for k in range(K):
            for j in range(r):
                out[i, k * r + j] = W[k, i, j]
