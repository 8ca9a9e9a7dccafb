"""GD's operations on one backend (docs/theory.md §5, §12): the loss and its gradient for a batch
of students ``W`` (two GEMMs and the channel's layer per step), Adam's update, the memory a student
needs, on the CPU (:class:`NumbaSteps`, numba kernels) or on an array-API backend
(:class:`ArraySteps`, a GPU).  The driver, :mod:`aimlib.algorithms.gd`, is the same for both.
"""

from __future__ import annotations

import math

import numpy as np

from aimlib.channels import Channel, Softmax
from aimlib.core.kernels import adam_step, gd_step, pack_students

__all__ = ["BETA1", "BETA2", "EPS", "loss_and_grad", "memory_per_init", "NumbaSteps", "ArrayAdam",
           "ArraySteps"]

#: PyTorch's Adam defaults.
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8


def loss_and_grad(W: np.ndarray, X: np.ndarray, y: np.ndarray, channel: Channel | float, *,
                  work: np.ndarray | None = None,
                  centre: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
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
    centre : float
        The diagonal indices are centred by ``centre Tr S``: 1 for i.i.d. tokens, ``1 - c`` for
        correlated tokens (:func:`centring`).

    Returns
    -------
    loss : numpy.ndarray
        Shape ``(K,)``.
    grad : numpy.ndarray
        Shape ``(K, d, r)``.
    """
    K, d, r = W.shape
    loss, P, gdiag, c = backward_product(W, X, y, channel, work, centre)
    grad = P.reshape(d, K, r).transpose(1, 0, 2) - (2.0 * centre) * gdiag[:, None, None] * W
    return loss, grad / c


def backward_product(W, X, y, channel, work, centre, packed=None, P=None):
    """The two GEMMs and the channel's layer of :func:`loss_and_grad`: each student's loss, the
    backward product ``P = X^T (G + G^T) X W`` (shape ``(d, K r)``), the diagonal term
    ``gdiag`` and the scale ``c``, from which the gradient is ``(P_k - 2 centre gdiag_k W_k) /
    c`` (assembled by :func:`loss_and_grad`, or inside the Adam step,
    :func:`aimlib.core.kernels.adam_step`).  ``packed`` (``(d, K r)``) and ``P``, in the
    products' precision, are reused across steps when given."""
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
    if packed is None:
        packed = np.empty((d, K * r), dtype=work.dtype)
    pack_students(W, packed)
    np.matmul(Xf, packed, out=Z)
    trace = np.einsum("kdr,kdr->k", W, W)  # ||W_k||^2 = sqrt(r d) Tr S_k
    if centre != 1.0:
        trace *= centre
    loss = np.zeros(K)
    gdiag = np.zeros(K)
    ch.gd_layer(Z, y, c, trace, r, d, GZ, loss, gdiag)
    # backward GEMM: (d, nT) @ (nT, K r)
    if P is None:
        P = np.empty((d, K * r), dtype=work.dtype)
    np.matmul(Xf.T, GZ, out=P)
    return loss, P, gdiag, c


def memory_per_init(n: int, T: int, r: int, dtype: str = "float64", *,
                    backend: str = "numpy") -> int:
    """Bytes per initialisation of :func:`run`'s scratch space: ``X W`` and ``(G + G^T) X W``
    (numba path); the array-API path also holds their per-sample layout, ``h`` and ``G``."""
    item = np.dtype(dtype).itemsize
    if backend == "numpy":
        return 2 * n * T * r * item
    return 4 * n * T * r * item + 2 * n * T * r * 8 + 4 * n * T * T * 8


#: Steps between two reads of the losses (and the non-finite test) from the device.
FETCH_EVERY = 50


class NumbaSteps:
    """Adam (or plain gradient-descent) steps on the CPU: :func:`loss_and_grad` with the
    channel's numba kernel.  ``eta``: plain gradient descent's step on the summed loss (None:
    Adam with learning rate ``lr``)."""

    def __init__(self, X, y, ch, lr, dtype, held=None, centre: float = 1.0,
                 eta: float | None = None):
        self.X, self.y, self.ch, self.lr, self.eta = X, y, ch, lr, eta
        self.centre = centre
        self.work = np.empty(0, dtype=dtype)
        self.dtype = dtype
        self.held = None if held is None else (held[0].astype(dtype), held[1])

    def start(self, W):
        n, T, _ = self.X.shape
        size = 2 * n * T * W.shape[0] * W.shape[2]
        if self.work.size < size:
            self.work = np.empty(size, dtype=self.dtype)
        self.W = W
        self.m = np.zeros_like(W)
        self.v = np.zeros_like(W)
        self._buffers()

    def _buffers(self):
        """The packed students and the backward product, reused by every step."""
        K, d, r = self.W.shape
        self.packed = np.empty((d, K * r), dtype=self.dtype)
        self.P = np.empty((d, K * r), dtype=self.dtype)

    def step(self, t):
        # the gradient's assembly and the Adam update in one pass (bitwise the numpy update:
        # tests/test_gd.py), instead of a dozen temporaries of the students' size
        loss, P, gdiag, c = backward_product(self.W, self.X, self.y, self.ch, self.work,
                                              self.centre, self.packed, self.P)
        if self.eta is not None:
            gd_step(self.W, P, gdiag, 2.0 * self.centre, c, self.eta)
            return loss
        adam_step(self.W, self.m, self.v, P, gdiag, 2.0 * self.centre, c, self.lr, BETA1,
                  BETA2, EPS, 1.0 - BETA1**t, 1.0 - BETA2**t)
        return loss

    def weights(self):
        return self.W.copy()

    def fetch(self, pending) -> np.ndarray:
        """The losses of the steps since the last fetch, shape ``(steps, students)``."""
        return np.stack(pending)

    def holdout_loss(self) -> np.ndarray:
        """Each student's loss per sample on the held-out samples (forward pass only)."""
        Xh, yh = self.held
        return loss_and_grad(self.W, Xh, yh, self.ch, work=self.work,
                             centre=self.centre)[0] / Xh.shape[0]

    def keep(self, mask):
        self.W, self.m, self.v = (np.ascontiguousarray(a[mask]) for a in (self.W, self.m, self.v))
        self._buffers()


class ArrayAdam:
    """Adam and the driver's interface in array-API calls, for a stepper that has ``be``,
    ``lr``, ``held`` (its last item the held-out outputs) and ``loss_and_grad(W, data=None,
    grad=True)``: :class:`ArraySteps` and :class:`aimlib.algorithms.gd_factors.FactorSteps`;
    with ``eta`` set, plain gradient descent instead."""

    def holdout_loss(self) -> np.ndarray:
        loss = self.loss_and_grad(self.W, self.held, grad=False)[0]
        return self.be.to_host(loss) / self.held[-1].shape[0]

    #: Plain gradient descent's step on the summed loss (None: Adam), set by the driver.
    eta: float | None = None

    def start(self, W):
        xp = self.be.xp
        self.W = self.be.asarray(W)
        self.m = xp.zeros_like(self.W)
        self.v = xp.zeros_like(self.W)

    def step(self, t):
        xp = self.be.xp
        loss, g = self.loss_and_grad(self.W)
        if self.eta is not None:
            self.W = self.W - self.eta * g
            return loss
        self.m = BETA1 * self.m + (1.0 - BETA1) * g
        self.v = BETA2 * self.v + (1.0 - BETA2) * g * g
        mhat = self.m / (1.0 - BETA1**t)
        vhat = self.v / (1.0 - BETA2**t)
        self.W = self.W - self.lr * mhat / (xp.sqrt(vhat) + EPS)
        return loss

    def fetch(self, pending) -> np.ndarray:
        return self.be.to_host(self.be.xp.stack(pending))

    def weights(self):
        return self.be.to_host(self.W).copy()

    def keep(self, mask):
        idx = self.be.asarray(np.flatnonzero(mask), "int64")
        xp = self.be.xp
        self.W, self.m, self.v = (xp.take(a, idx, axis=0) for a in (self.W, self.m, self.v))


class ArraySteps(ArrayAdam):
    """The same Adam steps in array-API calls (:mod:`aimlib.core.backend`): the tokens move to
    the device once, a step moves only the ``K`` losses back."""

    def __init__(self, be, X, y, ch, lr, dtype, held=None, centre: float = 1.0):
        n, T, d = X.shape
        self.be, self.ch, self.lr, self.T, self.d = be, ch, lr, T, d
        self.centre = centre
        self.wdt = be.dtype(dtype)
        self.f64 = be.dtype("float64")
        self.eye = be.asarray(np.eye(T))
        self.train = self._put(X, y, dtype)
        self.held = None if held is None else self._put(*held, dtype)

    def _put(self, X, y, dtype):
        """Tokens as ``(n T, d)`` and outputs as ``(n, 1, T, T)`` on the device."""
        n, T, d = X.shape
        return (self.be.asarray(X.reshape(n * T, d), dtype),
                self.be.xp.reshape(self.be.asarray(y), (n, 1, T, T)))

    def loss_and_grad(self, W, data=None, grad: bool = True):
        """:func:`loss_and_grad` on the device, for ``W`` of shape ``(K, d, r)`` (on the
        training samples unless ``data`` is given; ``grad=False``: the loss only)."""
        xp, T, d = self.be.xp, self.T, self.d
        X2, y4 = self.train if data is None else data
        n = y4.shape[0]
        K, _, r = W.shape
        c = math.sqrt(r * d) * math.sqrt(d)
        Wc = xp.reshape(xp.permute_dims(W, (1, 0, 2)), (d, K * r))
        Z = X2 @ xp.astype(Wc, self.wdt)  # (nT, K r): one GEMM
        Zs = xp.permute_dims(xp.reshape(Z, (n, T, K, r)), (0, 2, 1, 3))  # (n, K, T, r)
        trace = self.centre * xp.sum(W * W, axis=(1, 2))
        h = xp.astype(Zs @ xp.matrix_transpose(Zs), self.f64)
        h = (h - self.eye * trace[:, None, None]) / c
        G, loss = self.ch.gd_layer_xp(xp, h, y4, d)
        if not grad:
            return loss, None
        gdiag = xp.sum(G * self.eye, axis=(0, 2, 3))
        GZ = xp.astype(G + xp.matrix_transpose(G), self.wdt) @ Zs  # (n, K, T, r)
        GZ = xp.reshape(xp.permute_dims(GZ, (0, 2, 1, 3)), (n * T, K * r))
        back = xp.astype(xp.matrix_transpose(X2) @ GZ, self.f64)  # (d, K r): one GEMM
        g = xp.permute_dims(xp.reshape(back, (d, K, r)), (1, 0, 2))
        return loss, (g - (2.0 * self.centre) * gdiag[:, None, None] * W) / c

