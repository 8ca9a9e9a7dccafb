"""The attention-indexed model (docs/theory.md §1): teacher, tokens, attention indices, outputs.

Sizes: ``r = round(rho d)``, ``n = round(alpha d^2)``.  The teacher is
``S* = W* W*^T / sqrt(r d)``; each sample is a ``T x d`` block of i.i.d. N(0, 1) tokens; the
attention index is the symmetric ``T x T`` matrix ``h_ab = (x_a^T S x_b - delta_ab Tr S) / sqrt(d)``
and the output is its row-wise softmax at inverse temperature ``beta`` or its row-wise hardmax.

Memory is ``O(n T d)`` at most and ``O(chunk T d + d^2)`` when the tokens are regenerated chunk
by chunk: tokens are drawn in fixed chunks of :data:`CHUNK` samples, each from its own
``SeedSequence`` child, so any chunk is reproducible bit for bit from the seed alone and a data
file need not store them.  Nothing of size ``n d^2`` is ever formed.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .channels import make_channel
from .prior import _check_rho

__all__ = [
    "CHUNK",
    "TeacherData",
    "sizes",
    "seed_sequence",
    "teacher",
    "attention_indices",
    "softmax_output",
    "hardmax_output",
    "generate",
    "estimation_error",
]

#: Samples per token chunk (a fixed constant: changing it changes every regenerated token).
CHUNK = 4096


def sizes(alpha: float, rho: float, d: int) -> tuple[int, int]:
    """``(r, n) = (round(rho d), round(alpha d^2))``, each at least 1."""
    if not (alpha > 0 and math.isfinite(alpha)):
        raise ValueError(f"alpha must be a positive finite number, got alpha={alpha!r}")
    _check_rho(rho)
    if int(d) != d or d < 2:
        raise ValueError(f"d must be an integer >= 2, got d={d!r}")
    d = int(d)
    return max(1, int(round(rho * d))), max(1, int(round(alpha * d * d)))


def seed_sequence(seed: int, *key) -> np.random.SeedSequence:
    """A ``SeedSequence`` from an integer seed and a key of parameters (stable across runs).

    The key (e.g. channel, T, rho, d, alpha, beta) is hashed with SHA-256, so that every parameter
    point gets independent randomness while a given point is reproducible bit for bit.
    """
    if int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got seed={seed!r}")
    text = "|".join(repr(k) for k in key).encode()
    digest = int.from_bytes(hashlib.sha256(text).digest()[:16], "little")
    return np.random.SeedSequence([int(seed), digest])


def teacher(d: int, r: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Teacher ``W*`` (``d x r``, N(0, 1)) and ``S* = W* W*^T / sqrt(r d)``."""
    W = rng.standard_normal((d, r))
    return W, (W @ W.T) / math.sqrt(r * d)


@njit(cache=True)
def _pair_dots(A, B, out):  # pragma: no cover - numba
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


def attention_indices(X: np.ndarray, S: np.ndarray) -> np.ndarray:
    """``h_ab = (x_a^T S x_b - delta_ab Tr S) / sqrt(d)`` for a block of samples.

    Parameters
    ----------
    X : numpy.ndarray
        Tokens, shape ``(m, T, d)``.
    S : numpy.ndarray
        Symmetric ``d x d`` matrix.

    Returns
    -------
    numpy.ndarray
        Shape ``(m, T, T)``.
    """
    m, T, d = X.shape
    X = np.ascontiguousarray(X)
    XS = (X.reshape(m * T, d) @ S).reshape(m, T, d)  # one GEMM, not m small ones
    H = np.empty((m, T, T))
    _pair_dots(XS, X, H)
    idx = np.arange(T)
    H[..., idx, idx] -= np.trace(S)
    H /= math.sqrt(d)
    return H


def softmax_output(h: np.ndarray, beta: float = 1.0) -> np.ndarray:
    """Row-wise softmax of ``beta h`` over the last axis."""
    z = beta * h
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def hardmax_output(h: np.ndarray) -> np.ndarray:
    """Row-wise argmax of ``h`` as an integer array of shape ``h.shape[:-1]``."""
    return np.argmax(h, axis=-1).astype(np.int8)


def one_hot(index: np.ndarray, T: int) -> np.ndarray:
    """One-hot rows ``y_ab = 1[b = index_a]`` from argmax indices."""
    return (index[..., None] == np.arange(T)).astype(np.float64)


def estimation_error(S_hat: np.ndarray, S_star: np.ndarray) -> float:
    """``E = (1/d) ||S_hat - S*||_F^2``."""
    d = S_star.shape[0]
    return float(np.sum((S_hat - S_star) ** 2) / d)


@dataclass
class TeacherData:
    """A teacher and its labelled samples for one ``(channel, T, rho, d, alpha, seed)``.

    Tokens are not stored: :meth:`tokens` regenerates any range of samples from
    ``token_seed`` bit for bit.  ``labels`` holds the softmax outputs ``(n, T, T)`` or the hardmax
    argmax indices ``(n, T)``.
    """

    channel: str
    T: int
    beta: float
    rho: float
    alpha: float
    d: int
    seed: int
    W: np.ndarray
    labels: np.ndarray
    token_entropy: tuple[int, ...]
    S: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        make_channel(self.channel, T=self.T, beta=self.beta)
        r, n = sizes(self.alpha, self.rho, self.d)
        if self.W.shape != (self.d, r):
            raise ValueError(f"W has shape {self.W.shape}, expected {(self.d, r)}")
        if self.labels.shape[0] != n:
            raise ValueError(f"labels have {self.labels.shape[0]} samples, expected n={n}")
        self.S = (self.W @ self.W.T) / math.sqrt(r * self.d)

    @property
    def r(self) -> int:
        return self.W.shape[1]

    @property
    def n(self) -> int:
        return self.labels.shape[0]

    def _chunk_rng(self, k: int) -> np.random.Generator:
        ss = np.random.SeedSequence(list(self.token_entropy), spawn_key=(1, k))
        return np.random.default_rng(ss)

    def tokens(self, start: int = 0, stop: int | None = None,
               dtype: type = np.float64) -> np.ndarray:
        """Tokens of samples ``start:stop``, shape ``(stop - start, T, d)``, regenerated."""
        stop = self.n if stop is None else min(stop, self.n)
        if not 0 <= start <= stop:
            raise ValueError(f"bad sample range {start}:{stop}")
        out = np.empty((stop - start, self.T, self.d), dtype=dtype)
        k0, k1 = start // CHUNK, (stop - 1) // CHUNK if stop > start else start // CHUNK - 1
        for k in range(k0, k1 + 1):
            lo = k * CHUNK
            m = min(CHUNK, self.n - lo)
            block = self._chunk_rng(k).standard_normal((m, self.T, self.d))
            a, b = max(start, lo), min(stop, lo + m)
            out[a - start : b - start] = block[a - lo : b - lo]
        return out

    def chunks(self, size: int = CHUNK) -> Iterator[tuple[int, int, np.ndarray]]:
        """Iterate ``(start, stop, tokens)`` over the samples."""
        for lo in range(0, self.n, size):
            hi = min(self.n, lo + size)
            yield lo, hi, self.tokens(lo, hi)

    def outputs(self) -> np.ndarray:
        """Outputs ``y`` of shape ``(n, T, T)`` (one-hot rows for hardmax)."""
        if self.channel == "hardmax":
            return one_hot(self.labels, self.T)
        return self.labels

    def estimation_error(self, S_hat: np.ndarray) -> float:
        """``(1/d) ||S_hat - S*||_F^2``."""
        return estimation_error(S_hat, self.S)

    def overlaps(self, S_hat: np.ndarray) -> tuple[float, float, float]:
        """``(m, Q, Q0)``: ``(1/d) Tr(S_hat S*)``, ``(1/d) ||S_hat||^2`` and ``(1/d) ||S*||^2``."""
        d = self.d
        return (float(np.sum(S_hat * self.S)) / d, float(np.sum(S_hat * S_hat)) / d,
                float(np.sum(self.S * self.S)) / d)

    def test_error(self, S_hat: np.ndarray, n_test: int, rng: np.random.Generator) -> float:
        """Mean over ``n_test`` fresh samples of ``||y(X; S_hat) - y(X; S*)||_F^2``."""
        X = rng.standard_normal((n_test, self.T, self.d))
        y_hat = _outputs(self.channel, attention_indices(X, S_hat), self.beta, self.T)
        y = _outputs(self.channel, attention_indices(X, self.S), self.beta, self.T)
        return float(np.mean(np.sum((y_hat - y) ** 2, axis=(-2, -1))))


def _outputs(channel: str, h: np.ndarray, beta: float, T: int) -> np.ndarray:
    if channel == "hardmax":
        return one_hot(hardmax_output(h), T)
    return softmax_output(h, beta)


def generate(
    channel: str,
    alpha: float,
    rho: float,
    T: int,
    d: int,
    seed: int,
    beta: float = 1.0,
    base_seed: int = 0,
) -> TeacherData:
    """Draw a teacher and ``n = round(alpha d^2)`` labelled samples, reproducibly from ``seed``.

    Parameters
    ----------
    channel : {"softmax", "hardmax"}
    alpha, rho : float
        Sample and width ratios, both ``> 0``.
    T : int
        Tokens per sample (hardmax: 2).
    d : int
        Embedding dimension.
    seed : int
        Seed index (0, 1, ...); with ``base_seed`` and the parameters it determines every draw.
    beta : float
        Softmax inverse temperature.
    base_seed : int
        The configuration's seed.
    """
    make_channel(channel, T=T, beta=beta)
    r, n = sizes(alpha, rho, d)
    beta = float(beta) if channel == "softmax" else 1.0
    if int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got seed={seed!r}")
    ss = seed_sequence(base_seed, int(seed), channel, int(T), float(rho), int(d), float(alpha),
                       beta)
    rng_teacher = np.random.default_rng(np.random.SeedSequence(ss.entropy, spawn_key=(0,)))
    W, _ = teacher(d, r, rng_teacher)
    entropy = tuple(int(e) for e in np.atleast_1d(ss.entropy))
    if channel == "hardmax":
        labels = np.empty((n, T), dtype=np.int8)
    else:
        labels = np.empty((n, T, T), dtype=np.float64)
    data = TeacherData(channel, int(T), beta, float(rho), float(alpha), int(d), int(seed), W,
                       labels, entropy)
    for lo, hi, X in data.chunks():
        h = attention_indices(X, data.S)
        labels[lo:hi] = hardmax_output(h) if channel == "hardmax" else softmax_output(h, beta)
    return data
