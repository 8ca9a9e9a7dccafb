"""Gradient-descent baselines (docs/theory.md §5): full-batch Adam on the softmax outputs.

The student has the teacher's width, ``S_W = W W^T / sqrt(r d)``, and predicts
``y(X; S_W)`` with the teacher's beta; the loss is ``(1/d) sum_mu ||y_hat_mu - y_mu||_F^2``.
``S_W`` is never formed in the loop: with ``Z = X W`` (``n T x r``),
``h_ab = (z_a . z_b - delta_ab ||W||_F^2) / (sqrt(r d) sqrt(d))``, and the gradient is

    dL/dW = (1 / (sqrt(r d) sqrt(d))) [X^T ((G + G^T) Z) - 2 (sum_mu Tr G_mu) W],

with ``G = dL/dh`` from the softmax backward pass, so a step costs ``O(n T d r)`` and memory is
``O(n T (d + r))``.  ``K`` initialisations on the same data are batched into one matrix product.
GD is one run; AGD averages the estimates ``S_W`` of the ``K`` runs (docs/theory.md §5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .model import TeacherData, estimation_error, generate
from .progress import open_bar

__all__ = ["GDResult", "loss_and_grad", "run", "run_point"]

#: PyTorch's Adam defaults.
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8


@dataclass
class GDResult:
    """Outcome of GD over ``K`` initialisations.

    Attributes
    ----------
    error : float
        Error of the averaged estimate ``(1/K) sum_k S_{W_k}`` (plain GD for ``K = 1``).
    errors : numpy.ndarray
        Error of each initialisation, shape ``(K,)``; ``errors[0]`` is a plain GD run.
    loss : numpy.ndarray
        Training loss per step and initialisation, shape ``(steps, K)``.
    steps : int
        Adam steps taken.
    S_avg : numpy.ndarray
        The averaged estimate (AGD).
    S_first : numpy.ndarray
        The estimate of the first initialisation (plain GD).
    """

    error: float
    errors: np.ndarray
    loss: np.ndarray = field(repr=False)
    steps: int = 0
    S_avg: np.ndarray = field(default=None, repr=False)
    S_first: np.ndarray = field(default=None, repr=False)


# ``reassoc`` only: it lets LLVM vectorise the length-r dot products by summing them in another
# order (as BLAS does); no other fast-math flag (no NaN/Inf assumptions, no approximate exp or
# reciprocals), and the kernel matches the numpy reference to 1e-12 (tests/test_gd.py).
@njit(cache=True, fastmath={"reassoc"})
def _softmax_layer(Z, y, beta, c, trace, r, d, GZ, loss, gdiag):  # pragma: no cover - numba
    """Forward and backward pass through the indices and the softmax, per sample and student.

    ``Z = X [W_1 .. W_K]`` has shape ``(n T, K r)`` (row ``mu T + a`` is token ``a`` of sample
    ``mu``, columns ``k r .. (k + 1) r`` student ``k``).  Adds each student's loss to ``loss``
    and ``sum_mu Tr G_mu`` to ``gdiag``, and writes ``(G + G^T) Z`` into ``GZ`` in ``Z``'s
    layout, ready for the backward product ``X^T GZ``.  Serial; contiguous slices so that the
    inner loops vectorise.  The two loops over ``r`` run in
    ``Z``'s precision (float32 with float32 products, like the GEMMs around them); the softmax,
    loss and ``G`` are float64.
    """
    nT, Kr = Z.shape
    T = y.shape[1]
    n = nT // T
    K = Kr // r
    h = np.empty((T, T))
    G = np.empty((T, T))
    Gs = np.empty((T, T), dtype=Z.dtype)  # G + G^T in Z's precision, for the mixing loop
    zero = Z[0, 0] - Z[0, 0]  # 0 in Z's precision: float32 products accumulate in float32
    for i in range(n):
        row = i * T
        for k in range(K):
            base = k * r
            for a in range(T):
                za = Z[row + a, base:base + r]
                for b in range(a, T):
                    zb = Z[row + b, base:base + r]
                    s = zero
                    for j in range(r):
                        s += za[j] * zb[j]
                    h[a, b] = s
                    h[b, a] = s
            lk = 0.0
            for a in range(T):
                h[a, a] -= trace[k]
                m = -np.inf
                for b in range(T):
                    h[a, b] = beta * h[a, b] / c
                    m = max(m, h[a, b])
                tot = 0.0
                for b in range(T):
                    h[a, b] = math.exp(h[a, b] - m)
                    tot += h[a, b]
                dot = 0.0
                for b in range(T):
                    h[a, b] /= tot  # y_hat
                    diff = h[a, b] - y[i, a, b]
                    lk += diff * diff
                    G[a, b] = 2.0 * diff / d  # dL/dy_hat
                    dot += h[a, b] * G[a, b]
                for b in range(T):
                    G[a, b] = beta * h[a, b] * (G[a, b] - dot)  # dL/dh
                gdiag[k] += G[a, a]
            loss[k] += lk / d
            for a in range(T):
                for b in range(T):
                    Gs[a, b] = G[a, b] + G[b, a]
            for a in range(T):
                out = GZ[row + a, base:base + r]
                out[:] = zero
                for b in range(T):
                    g = Gs[a, b]
                    zb = Z[row + b, base:base + r]
                    for j in range(r):
                        out[j] += g * zb[j]


def loss_and_grad(W: np.ndarray, X: np.ndarray, y: np.ndarray, beta: float, *,
                  work: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Loss and its gradient for a batch of students.

    Parameters
    ----------
    W : numpy.ndarray
        Students, shape ``(K, d, r)``.
    X : numpy.ndarray
        Tokens, shape ``(n, T, d)``.
    y : numpy.ndarray
        Teacher outputs, shape ``(n, T, T)``.
    beta : float
        Inverse temperature.
    work : numpy.ndarray, optional
        Scratch space of at least ``2 n T K r`` elements for the products ``X W`` and
        ``(G + G^T) X W``, reused across steps (a fresh one costs page faults on every call).
        Its dtype is the precision of the two GEMMs (``X`` must have the same dtype);
        default: float64, allocated here.

    Returns
    -------
    loss : numpy.ndarray
        Shape ``(K,)``.
    grad : numpy.ndarray
        Shape ``(K, d, r)``.
    """
    K, d, r = W.shape
    n, T, _ = X.shape
    c = math.sqrt(r * d) * math.sqrt(d)
    size = n * T * K * r
    if work is None:
        work = np.empty(2 * size)
    Xf = X.reshape(n * T, d)
    Z = work[:size].reshape(n * T, K * r)
    GZ = work[size:2 * size].reshape(n * T, K * r)
    # Z = X [W_1 .. W_K] with one GEMM: (nT, d) @ (d, K r)
    np.matmul(Xf, W.transpose(1, 0, 2).reshape(d, K * r).astype(work.dtype), out=Z)
    trace = np.einsum("kdr,kdr->k", W, W)  # ||W_k||^2 = sqrt(r d) Tr S_k
    loss = np.zeros(K)
    gdiag = np.zeros(K)
    _softmax_layer(Z, y, float(beta), c, trace, r, d, GZ, loss, gdiag)
    # backward GEMM: (d, nT) @ (nT, K r)
    grad = (Xf.T @ GZ).reshape(d, K, r).transpose(1, 0, 2) - 2.0 * gdiag[:, None, None] * W
    return loss, grad / c


#: Precisions of the tokens and of the matrix products that :func:`run` accepts.
PRECISIONS = ("float64", "float32")


def memory_per_init(n: int, T: int, r: int, dtype: str = "float64") -> int:
    """Bytes per initialisation of :func:`run`'s scratch space: ``X W`` and ``(G + G^T) X W``."""
    return 2 * n * T * r * np.dtype(dtype).itemsize


def _s_of_w(W: np.ndarray) -> np.ndarray:
    d, r = W.shape
    return (W @ W.T) / math.sqrt(r * d)


def run(
    data: TeacherData,
    inits: int = 1,
    steps: int = 1000,
    lr: float = 0.1,
    rng: np.random.Generator | None = None,
    *,
    batch: int | None = None,
    memory_budget: float = 2e9,
    dtype: str = "float32",
    progress=None,
) -> GDResult:
    """Full-batch Adam from ``inits`` Gaussian initialisations on the same data.

    Parameters
    ----------
    data : TeacherData
        Softmax teacher data.
    inits : int
        Number ``K`` of initialisations (1: plain GD; 32: the paper's AGD).
    steps : int
        Adam steps.
    lr : float
        Learning rate.
    rng : numpy.random.Generator, optional
        Source of the initialisations; by default one derived from the data's seed, so that a
        run is reproducible.
    batch : int, optional
        Initialisations per matrix product (default: as many as fit ``memory_budget`` bytes,
        :func:`memory_per_init` each).
    memory_budget : float
        Bytes for the per-initialisation products.
    dtype : {"float64", "float32"}
        Precision of the tokens and of the two matrix products per step (about twice as fast in
        float32; the errors agree with float64 to about 1e-7, ``tests/test_gd.py``); parameters,
        Adam moments, indices, softmax and loss stay float64.
    progress : bool or callable, optional
        ``True``: a progress bar on stderr (tqdm: Adam steps over all initialisation batches,
        rate and time remaining).  A callable is called as ``progress(step, mean_loss)`` at the
        first and every 50th step of each batch.
    """
    if data.channel != "softmax":
        raise ValueError(f"GD is defined for the softmax channel, got channel={data.channel!r}")
    if int(inits) < 1:
        raise ValueError(f"inits must be >= 1, got inits={inits!r}")
    if int(steps) < 1:
        raise ValueError(f"steps must be >= 1, got steps={steps!r}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got lr={lr!r}")
    if dtype not in PRECISIONS:
        raise ValueError(f"dtype must be one of {PRECISIONS}, got dtype={dtype!r}")
    if rng is None:
        rng = np.random.default_rng(np.random.SeedSequence(list(data.token_entropy),
                                                           spawn_key=(2,)))
    K, d, r, n, T = int(inits), data.d, data.r, data.n, data.T
    W0 = rng.standard_normal((K, d, r))
    X = data.tokens().astype(dtype, copy=False)
    y = np.ascontiguousarray(data.labels, dtype=np.float64)
    if batch is None:
        batch = max(1, min(K, int(memory_budget // memory_per_init(n, T, r, dtype))))
    work = np.empty(2 * n * T * batch * r, dtype=dtype)
    losses = np.empty((int(steps), K))
    S_sum = np.zeros((d, d))
    errors = np.empty(K)
    bar = open_bar(progress, int(steps) * -(-K // batch),
                   f"Adam d={d} K={K} alpha={data.alpha:.4g}", "step")
    try:
        for lo in range(0, K, batch):
            hi = min(K, lo + batch)
            W = _adam(W0[lo:hi].copy(), X, y, data.beta, lr, int(steps), work,
                      losses[:, lo:hi], progress if bar is None else None, bar)
            for k in range(hi - lo):
                S = _s_of_w(W[k])
                errors[lo + k] = estimation_error(S, data.S)
                S_sum += S
                if lo + k == 0:
                    S_first = S
    finally:
        if bar is not None:
            bar.close()
    S_avg = S_sum / K
    return GDResult(estimation_error(S_avg, data.S), errors, losses, int(steps), S_avg, S_first)


def _adam(W, X, y, beta, lr, steps, work, losses, progress, bar):
    """``steps`` full-batch Adam steps on a batch of students ``W`` (updated in place)."""
    m = np.zeros_like(W)
    v = np.zeros_like(W)
    for t in range(1, steps + 1):
        loss, g = loss_and_grad(W, X, y, beta, work=work)
        losses[t - 1] = loss
        m = BETA1 * m + (1.0 - BETA1) * g
        v = BETA2 * v + (1.0 - BETA2) * g * g
        mhat = m / (1.0 - BETA1**t)
        vhat = v / (1.0 - BETA2**t)
        W -= lr * mhat / (np.sqrt(vhat) + EPS)
        if bar is not None:
            bar.update(1)
            if t % 50 == 0:
                bar.set_postfix(loss=f"{loss.mean():.3e}", refresh=False)
        elif progress is not None and (t % 50 == 0 or t == 1):
            progress(t, float(loss.mean()))
    return W


def run_point(alpha: float, rho: float, T: int, d: int, seed: int, inits: int = 1,
              beta: float = 1.0, *, base_seed: int = 0, **opts) -> GDResult:
    """Draw softmax teacher data from a seed and run GD / AGD on it."""
    data = generate("softmax", alpha, rho, T, d, seed, beta=beta, base_seed=base_seed)
    return run(data, inits=inits, **opts)
