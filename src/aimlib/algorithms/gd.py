"""Gradient-descent baselines (docs/theory.md §5): full-batch Adam on the squared loss.

The student has the teacher's width, ``S_W = W W^T / sqrt(r d)``, and predicts the channel's
noiseless output ``y(X; S_W)`` (the softmax with the teacher's beta; for the Gaussian channel the
index ``h`` itself); the loss is ``(1/d) sum_mu ||y_hat_mu - y_mu||_F^2``.
``S_W`` is never formed in the loop: with ``Z = X W`` (``n T x r``),
``h_ab = (z_a . z_b - delta_ab ||W||_F^2) / (sqrt(r d) sqrt(d))``, and the gradient is

    dL/dW = (1 / (sqrt(r d) sqrt(d))) [X^T ((G + G^T) Z) - 2 (sum_mu Tr G_mu) W],

with ``G = dL/dh`` from the channel's backward pass (``Channel.gd_layer``), so a step costs
``O(n T d r)`` and memory is ``O(n T (d + r))``.  ``K`` initialisations on the same data are
batched into one matrix product.
GD is one run; AGD averages the estimates ``S_W`` of the ``K`` runs (docs/theory.md §5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from aimlib.channels import CHANNELS, Channel, Softmax, channel_class
from aimlib.core.options import GDOptions
from aimlib.core.progress import open_bar
from aimlib.model import TeacherData, estimation_error, generate

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
    spread : float
        ``(1/K) sum_k (1/d) ||S_k - S_avg||^2``, what averaging gains:
        ``error = mean(errors) - spread`` (the bias-variance identity).
    """

    error: float
    errors: np.ndarray
    loss: np.ndarray = field(repr=False)
    steps: int = 0
    S_avg: np.ndarray = field(default=None, repr=False)
    S_first: np.ndarray = field(default=None, repr=False)
    spread: float = float("nan")

    @property
    def converged(self) -> bool:
        """GD runs a fixed number of Adam steps; there is no convergence test to fail, so a run
        counts when its error is finite."""
        return bool(np.isfinite(self.error))

    @property
    def stop_reason(self) -> str:
        """``"steps"``: the step budget was run (``"nan"`` for a non-finite error)."""
        return "steps" if self.converged else "nan"

    def to_dataset(self, loss_points: int = 200):
        """The run as an ``xarray.Dataset``: ``error_agd`` (the averaged estimate),
        ``error_gd`` (the first initialisation), ``errors`` on ``init`` and the training loss on
        ``(step, init)``, every ``steps // loss_points``-th step.  There is no ``converged``:
        GD runs a fixed number of Adam steps, there is no convergence test to fail."""
        import xarray as xr

        every = max(1, self.steps // loss_points)
        return xr.Dataset(
            {
                "error_agd": ((), self.error),
                "error_gd": ((), float(self.errors[0])),
                "errors": ("init", self.errors),
                "loss": (("step", "init"), self.loss[::every]),
            },
            coords={"init": np.arange(len(self.errors)),
                    "step": np.arange(1, self.steps + 1)[::every]},
        )


def loss_and_grad(W: np.ndarray, X: np.ndarray, y: np.ndarray, channel: Channel | float, *,
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
    channel : Channel or float
        The channel (one with ``SUPPORTS_GD``); a float is a softmax inverse temperature.
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
    ch = channel if isinstance(channel, Channel) else Softmax(T=T, beta=channel)
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
    ch.gd_layer(Z, y, c, trace, r, d, GZ, loss, gdiag)
    # backward GEMM: (d, nT) @ (nT, K r)
    grad = (Xf.T @ GZ).reshape(d, K, r).transpose(1, 0, 2) - 2.0 * gdiag[:, None, None] * W
    return loss, grad / c


#: Bytes for the batched per-initialisation products (:func:`memory_per_init` each).
MEMORY_BUDGET = 2e9
#: Precisions of the tokens and of the matrix products that :func:`run` accepts.
PRECISIONS = ("float64", "float32")


def memory_per_init(n: int, T: int, r: int, dtype: str = "float64") -> int:
    """Bytes per initialisation of :func:`run`'s scratch space: ``X W`` and ``(G + G^T) X W``."""
    return 2 * n * T * r * np.dtype(dtype).itemsize


def run(
    data: TeacherData,
    inits: int = GDOptions.inits,
    steps: int = GDOptions.steps,
    lr: float = GDOptions.lr,
    rng: np.random.Generator | None = None,
    *,
    batch: int | None = None,
    memory_budget: float = MEMORY_BUDGET,
    dtype: str = GDOptions.dtype,
    progress=None,
) -> GDResult:
    """Full-batch Adam from ``inits`` Gaussian initialisations on the same data.

    Parameters
    ----------
    data : TeacherData
        Teacher data of a channel that GD can fit (``SUPPORTS_GD``: softmax, Gaussian).
    inits : int
        Number ``K`` of initialisations (1: plain GD; the default, 32, is the paper's AGD; the
        first initialisation of an AGD run is a plain GD run).
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
    ch = data.ch
    if not ch.SUPPORTS_GD:
        gd_channels = [k for k, c in CHANNELS.items() if c.SUPPORTS_GD]
        raise ValueError(f"GD is defined for the channels {gd_channels}, got "
                         f"channel={data.channel!r}")
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
    y = np.ascontiguousarray(data.outputs(), dtype=np.float64)
    if batch is None:
        batch = max(1, min(K, int(memory_budget // memory_per_init(n, T, r, dtype))))
    work = np.empty(2 * n * T * batch * r, dtype=dtype)
    losses = np.empty((int(steps), K))
    S_sum = np.zeros((d, d))
    norm2 = 0.0
    errors = np.empty(K)
    bar = open_bar(progress, int(steps) * -(-K // batch),
                   f"Adam d={d} K={K} alpha={data.alpha:.4g}", "step")
    try:
        for lo in range(0, K, batch):
            hi = min(K, lo + batch)
            W = _adam(W0[lo:hi].copy(), X, y, ch, lr, int(steps), work,
                      losses[:, lo:hi], progress if bar is None else None, bar)
            for k in range(hi - lo):
                S = (W[k] @ W[k].T) / math.sqrt(r * d)
                errors[lo + k] = estimation_error(S, data.S)
                S_sum += S
                norm2 += float(np.sum(S * S))
                if lo + k == 0:
                    S_first = S
    finally:
        if bar is not None:
            bar.close()
    S_avg = S_sum / K
    spread = (norm2 / K - float(np.sum(S_avg * S_avg))) / d
    return GDResult(estimation_error(S_avg, data.S), errors, losses, int(steps), S_avg, S_first,
                    spread)


def _adam(W, X, y, ch, lr, steps, work, losses, progress, bar):
    """``steps`` full-batch Adam steps on a batch of students ``W`` (updated in place)."""
    m = np.zeros_like(W)
    v = np.zeros_like(W)
    for t in range(1, steps + 1):
        loss, g = loss_and_grad(W, X, y, ch, work=work)
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


def run_point(alpha: float, rho: float, T: int, d: int, seed: int, inits: int = GDOptions.inits,
              beta: float = 1.0, *, base_seed: int = 0, channel: str = "softmax",
              **opts) -> GDResult:
    """Draw teacher data of ``channel`` from a seed and run GD / AGD on it (the channel's own
    parameter, ``delta`` for the Gaussian channel, goes to the data)."""
    cparams, opts = channel_class(channel).split_params(opts)
    data = generate(channel, alpha, rho, T, d, seed, beta=beta, base_seed=base_seed, **cparams)
    return run(data, inits=inits, **opts)
