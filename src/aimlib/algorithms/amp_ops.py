"""AMP's operations on one backend (docs/theory.md §4, §12): the tokens (kept, or regenerated in
chunks), the output pass ``B = sum_mu (X_mu^T G_mu X_mu - Tr(G_mu) I)`` with ``g_out``, and the
prior's denoiser with its divergence, on the CPU (:class:`NumpyOps`, numba kernels) or on an
array-API backend (:class:`ArrayOps`, a GPU); a device out of memory becomes a ``MemoryError``
that says how much the run needs.  The driver, :mod:`aimlib.algorithms.amp`, is the same for both.
"""

from __future__ import annotations

import math

import numpy as np

from aimlib.channels import pair_weights
from aimlib.core import backend as backends
from aimlib.core.kernels import pair_dots
from aimlib.model import TeacherData, attention_indices, mix_tokens
from aimlib.prior import Prior, divided_differences

__all__ = ["Tokens", "output_pass", "NumpyOps", "CrossOps", "ArrayOps", "raise_out_of_memory"]


class Tokens:
    """All tokens in memory when they fit the budget, otherwise regenerated chunk by chunk;
    whitened for correlated tokens (:meth:`aimlib.model.TeacherData.white_tokens`)."""

    def __init__(self, data: TeacherData, chunk: int, budget_bytes: float, dtype):
        self.data = data
        self.chunk = chunk
        self.dtype = dtype
        size = data.n * data.n_tokens * data.d * np.dtype(dtype).itemsize
        self.all = data.white_tokens(dtype=dtype) if size <= budget_bytes else None

    def __iter__(self):
        n = self.data.n
        for lo in range(0, n, self.chunk):
            hi = min(n, lo + self.chunk)
            X = (self.all[lo:hi] if self.all is not None
                 else self.data.white_tokens(lo, hi, self.dtype))
            yield lo, hi, X


def _rie_divergence(R: np.ndarray, delta: float, pr: Prior) -> tuple[np.ndarray, float]:
    """RIE of ``R`` and GAMP's variance ``(2 delta / d^2) div``, the denoiser's divergence at
    ``R`` over the symmetric matrices: ``sum_k xi'(l_k) + sum_{k<l} (xi_k - xi_l)/(l_k - l_l)``."""
    d = R.shape[0]
    lam, U = np.linalg.eigh(0.5 * (R + R.T))
    xi, dxi = pr.shrink_slopes(lam, delta)
    quot = divided_differences(lam, xi, dxi)
    div = float(dxi.sum()) + 0.5 * float(quot.sum() - np.trace(quot))
    return (U * xi) @ U.T, 2.0 * delta * div / d**2


def output_pass(tokens, S_hat: np.ndarray, ch, y: np.ndarray, g: np.ndarray,
                omega_all: np.ndarray, V: float, damping: float = 0.0,
                negdiv: np.ndarray | None = None) -> np.ndarray:
    """One pass over the data, the output side of an AMP iteration (docs/theory.md §4, steps
    1-3): ``omega = h(S_hat) - (w * g) V`` (damped against ``omega_all``), the new ``g`` (written
    into ``g``, and ``-dg/domega`` into ``negdiv`` when given), and the returned
    ``B = sum_mu (X_mu^T G_mu X_mu - Tr(G_mu) I)``, with one GEMM per token chunk.
    """
    d = S_hat.shape[0]
    T = g.shape[1]
    w = pair_weights(T)
    half = np.where(np.eye(T, dtype=bool), 1.0, 0.5)
    B = np.zeros((d, d))
    trace_g = 0.0
    for lo, hi, X in tokens:
        Sx = S_hat.astype(X.dtype, copy=False)
        omega = attention_indices(X, Sx).astype(np.float64, copy=False)
        omega -= w * g[lo:hi] * V
        if damping > 0.0:
            omega = damping * omega_all[lo:hi] + (1.0 - damping) * omega
        omega_all[lo:hi] = omega
        gc = ch.g_out(y[lo:hi], omega, V)
        g[lo:hi] = gc
        if negdiv is not None:
            negdiv[lo:hi] = ch.neg_divergence(y[lo:hi], omega, V)
        G = gc * half
        trace_g += float(np.trace(G, axis1=1, axis2=2).sum())
        GX = np.empty_like(X)
        mix_tokens(G.astype(X.dtype, copy=False), X, GX)  # G_mu X_mu
        B += X.reshape(-1, d).T @ GX.reshape(-1, d)  # sum_mu X_mu^T G_mu X_mu, one GEMM
    B[np.diag_indices(d)] -= trace_g
    return B


class NumpyOps:
    """The two backend-dependent parts of an iteration on the CPU: the output pass and the
    RIE.  An attempt's output-side state (``g``, ``omega``, ``-dg/domega``) lives here."""

    def __init__(self, data, ch, tokens, general):
        self.data, self.ch, self.tokens, self.general = data, ch, tokens, general
        self.y = data.outputs()

    def reset(self):
        n, T = self.data.n, self.data.T
        self.g = np.zeros((n, T, T))
        self.omega = np.zeros((n, T, T))
        self.negdiv = np.zeros(n) if self.general else None

    def output_pass(self, S_hat, V, damping):
        return output_pass(self.tokens, S_hat, self.ch, self.y, self.g, self.omega, V, damping,
                           self.negdiv)

    def mean_negdiv(self) -> float:
        return float(np.mean(self.negdiv))

    def q_hat(self, alpha: float, V: float) -> float:
        """The precision of the effective observation (the channel's AMP form)."""
        return self.ch.amp_q_hat(alpha, self.g, V)

    def direction(self, B: np.ndarray, q_hat: float) -> np.ndarray:
        """``R - S_hat``: ``2 sym(B) / (d^{3/2} q_hat)`` (docs/theory.md §4, step 4)."""
        d = B.shape[0]
        return 2.0 * (0.5 * (B + B.T)) / (d**1.5 * q_hat)

    def rie(self, R, delta, pr):
        return pr.denoise(R, delta), pr.mmse(delta)

    def rie_divergence(self, R, delta, pr):
        return _rie_divergence(R, delta, pr)


class CrossOps(NumpyOps):
    """AMP's operations for cross-attention (docs/theory.md §15.3), on the CPU: the indices
    ``omega = X_q S_hat X_k^T / sqrt(d) - V g`` (every index of weight 1), ``g`` from the
    channel's row output function over the keys of each query row, and
    ``B = sum_mu X_q,mu^T G_mu X_k,mu`` (one GEMM per token chunk); the update
    ``q_hat = w alpha <sum_ab g_ab^2>`` (the softmax's exact ``w alpha T_q (T_k - 1) / V``) and
    the step ``w B / (d^{3/2} q_hat)``, symmetrised for a symmetric prior (``w = 2``) and left
    as it is for the untied one (``w = 1``, denoised through its singular values)."""

    def __init__(self, data, ch, tokens, general):
        if general:
            raise ValueError("onsager: cross-attention AMP has the Bayes-optimal (Nishimori) "
                             "update only")
        super().__init__(data, ch, tokens, general)
        self.y = data.labels
        self.T_q, self.T_k = data.T_q, data.T
        self.w = 2.0 if data.prior.SYMMETRIC else 1.0
        # Tokens held in memory are split once into contiguous queries and keys (the GEMMs then
        # read them in place), and the joint array is let go.
        self.split = None
        if tokens.all is not None:
            Tq = self.T_q
            self.split = (np.ascontiguousarray(tokens.all[:, :Tq]),
                          np.ascontiguousarray(tokens.all[:, Tq:]))
            tokens.all = None

    def _chunks(self):
        if self.split is None:
            for lo, hi, X in self.tokens:
                yield lo, hi, np.ascontiguousarray(X[:, :self.T_q]), X[:, self.T_q:]
            return
        Xq, Xk = self.split
        n, step = Xq.shape[0], self.tokens.chunk
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            yield lo, hi, Xq[lo:hi], Xk[lo:hi]

    def reset(self):
        shape = (self.data.n, self.T_q, self.T_k)
        self.g = np.zeros(shape)
        self.omega = np.zeros(shape)
        self.negdiv = None

    def output_pass(self, S_hat, V, damping):
        d = S_hat.shape[0]
        Tq, Tk = self.T_q, self.T_k
        B = np.zeros((d, d))
        for lo, hi, Xq, Xk in self._chunks():
            m = hi - lo
            XS = (Xq.reshape(m * Tq, d) @ S_hat.astype(Xq.dtype, copy=False)).reshape(m, Tq, d)
            omega = np.empty((m, Tq, Tk))
            pair_dots(XS, Xk, omega)
            omega /= math.sqrt(d)
            omega -= self.g[lo:hi] * V
            if damping > 0.0:
                omega = damping * self.omega[lo:hi] + (1.0 - damping) * omega
            self.omega[lo:hi] = omega
            y = self.y[lo:hi]
            gc = self.ch.row_g_out(y.reshape((m * Tq,) + y.shape[2:]), omega.reshape(m * Tq, Tk),
                                   V).reshape(m, Tq, Tk)
            self.g[lo:hi] = gc
            GXk = np.empty((m, Tq, d), dtype=Xq.dtype)
            mix_tokens(gc.astype(Xq.dtype, copy=False), Xk, GXk)  # G_mu X_k,mu
            B += Xq.reshape(m * Tq, d).T @ GXk.reshape(m * Tq, d)  # one GEMM
        return B

    def q_hat(self, alpha: float, V: float) -> float:
        if self.ch.name == "softmax":  # the derivative form, exact for the softmax's line
            return self.w * alpha * self.T_q * self.ch.row_information(0.0, V, self.T_k)
        return self.w * alpha * float(np.mean(np.sum(self.g * self.g, axis=(1, 2))))

    def direction(self, B: np.ndarray, q_hat: float) -> np.ndarray:
        d = B.shape[0]
        if self.w == 2.0:
            return 2.0 * (0.5 * (B + B.T)) / (d**1.5 * q_hat)
        return B / (d**1.5 * q_hat)


class ArrayOps(NumpyOps):
    """The same on an array-API backend (:mod:`aimlib.core.backend`): the tokens, ``g`` and
    ``omega`` stay on the device; the estimate moves there and ``B`` back once per iteration
    (``d x d`` each); the RIE's eigendecomposition runs there, its scalar function of the
    eigenvalues on the host.  A channel without ``g_out_xp`` (hardmax: numba kernels) computes
    its output function on the host, ``omega`` and ``g`` crossing once per iteration."""

    def __init__(self, be, data, ch, tokens, general):
        super().__init__(data, ch, tokens, general)
        self.be = be
        xp = be.xp
        T, d = data.T, data.d
        self.dtype = np.dtype(tokens.dtype).name
        self.w = be.asarray(pair_weights(T))
        self.half = be.asarray(np.where(np.eye(T, dtype=bool), 1.0, 0.5))
        self.eye_T = be.asarray(np.eye(T))
        self.eye_d = be.asarray(np.eye(d))
        self.y_dev = be.asarray(self.y)
        self.on_device = hasattr(ch, "g_out_xp") and not general
        self.all = be.asarray(tokens.all, self.dtype) if tokens.all is not None else None
        self.f64 = xp.float64

    def reset(self):
        xp, n, T = self.be.xp, self.data.n, self.data.T
        super().reset()
        self.g_dev = xp.zeros((n, T, T), dtype=self.f64, device=self.be.device)
        self.omega_dev = xp.zeros((n, T, T), dtype=self.f64, device=self.be.device)

    @property
    def g(self) -> np.ndarray:
        """``g`` on the host (a copy off the device where the output function runs there)."""
        return self.be.to_host(self.g_dev) if self.on_device else self._g_host

    @g.setter
    def g(self, value: np.ndarray) -> None:
        self._g_host = value

    def _chunks(self):
        for lo, hi, X in self.tokens:
            yield lo, hi, (self.all[lo:hi, ...] if self.all is not None
                           else self.be.asarray(X, self.dtype))

    def output_pass(self, S_hat, V, damping):
        be, xp = self.be, self.be.xp
        d, T = self.data.d, self.data.T
        S = be.asarray(S_hat, self.dtype)
        trace_S = float(np.trace(S_hat))
        B = xp.zeros((d, d), dtype=self.f64, device=be.device)
        trace_g = 0.0
        for lo, hi, X in self._chunks():
            m = hi - lo
            XS = xp.reshape(xp.reshape(X, (m * T, d)) @ S, (m, T, d))
            H = xp.astype(XS @ xp.matrix_transpose(X), self.f64)
            omega = (H - trace_S * self.eye_T) / math.sqrt(d) - self.w * self.g_dev[lo:hi, ...] * V
            if damping > 0.0:
                omega = damping * self.omega_dev[lo:hi, ...] + (1.0 - damping) * omega
            self.omega_dev[lo:hi, ...] = omega
            if self.on_device:
                gc = self.ch.g_out_xp(xp, self.y_dev[lo:hi, ...], omega, V, self.w)
            else:
                om = be.to_host(omega)
                gh = self.ch.g_out(self.y[lo:hi], om, V)
                self._g_host[lo:hi] = gh
                gc = be.asarray(gh)
                if self.negdiv is not None:
                    self.negdiv[lo:hi] = self.ch.neg_divergence(self.y[lo:hi], om, V)
            self.g_dev[lo:hi, ...] = gc
            G = gc * self.half
            trace_g += be.scalar(xp.sum(G * self.eye_T))
            GX = xp.astype(G, X.dtype) @ X  # G_mu X_mu
            B = B + xp.astype(xp.matrix_transpose(xp.reshape(X, (m * T, d)))
                              @ xp.reshape(GX, (m * T, d)), self.f64)
        return be.to_host(B - trace_g * self.eye_d)

    def _eigh(self, R):
        be, xp = self.be, self.be.xp
        lam, U = xp.linalg.eigh(be.asarray(0.5 * (R + R.T)))
        return be.to_host(lam), U

    def _rebuild(self, U, xi):
        be, xp = self.be, self.be.xp
        return be.to_host((U * be.asarray(xi)) @ xp.matrix_transpose(U))

    def rie(self, R, delta, pr):
        lam, U = self._eigh(R)
        return self._rebuild(U, pr.shrink(lam, delta)), pr.mmse(delta)

    def rie_divergence(self, R, delta, pr):
        d = R.shape[0]
        lam, U = self._eigh(R)
        xi, dxi = pr.shrink_slopes(lam, delta)
        quot = divided_differences(lam, xi, dxi)
        div = float(dxi.sum()) + 0.5 * float(quot.sum() - np.trace(quot))
        return self._rebuild(U, xi), 2.0 * delta * div / d**2


def raise_out_of_memory(backend: str, data, tokens, exc: BaseException) -> None:
    """A device out of memory as a ``MemoryError`` with the size the run needed."""
    if not backends.out_of_memory(backend, exc):
        return
    n, T, d = data.n, data.T, data.d
    item = np.dtype(tokens.dtype).itemsize
    need = (n * T * d * item if tokens.all is not None else min(n, tokens.chunk) * T * d * item) \
        + 6 * n * T * T * 8 + 6 * d * d * 8
    raise MemoryError(f"AMP backend {backend}: out of device memory; this run needs about "
                      f"{need / 2**30:.2f} GiB on the device (tokens {n} x {T} x {d}); a smaller "
                      "token_budget keeps only one chunk there") from exc
