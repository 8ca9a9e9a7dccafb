"""AMP for the attention-indexed model: GAMP with the rotation-invariant prior denoiser (SPEC 4).

Matrix form, never forming the ``n x T x T x d x d`` sensing tensor: memory is ``O(n T^2 + d^2)``
plus one chunk of tokens (or all of them, ``O(n T d)``, when they fit ``token_budget``). Each
iteration, with ``w_aa = 2`` and ``w_ab = 1``:

1. ``V = C``; ``omega_mu = h_mu(S_hat) - (w * g_mu) V`` (Onsager term, ``g`` of the previous step);
2. ``g_mu = g_out(y_mu, omega_mu, V)``; ``q_hat = (2 alpha / n) sum_mu sum_{a<=b} w_ab g_ab^2``;
3. ``B = sum_mu (X_mu^T G_mu X_mu - Tr(G_mu) I)`` with ``G_aa = g_aa``, ``G_ab = g_ab / 2``;
4. ``R = S_hat + 2 B / (d^{3/2} q_hat)``; ``S_hat = RIE(R, 1/q_hat)``; ``C = mmse(1/q_hat)``.

The output side is damped: ``omega <- damping * omega_old + (1 - damping) * omega_new`` and the same
for ``V`` (damping ``S_hat`` instead breaks the Onsager correction: the run then crawls far above
the SE error at large alpha).  Undamped runs are fastest where they are stable (hardmax); the
noiseless softmax channel needs damping.  A run stops when
``(1/d) ||S_hat_new - S_hat||_F^2 < tol``.  A run that produces NaN, whose step size grows for
many iterations in a row, that does not meet ``tol`` within ``max_iter``, or whose fixed point
fails the Nishimori consistency check ``(1/d)||S_hat||^2 = Q0 - V`` is restarted from the start
with another damping (0.5 if it was below, else undamped; then 0.75, 0.875; up to
``max_restarts`` times).  The first converged attempt is returned; if none converges, the
finite attempt closest to Nishimori consistency, with ``converged=False``.  Restarts and the
damping used are recorded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import prior
from .channels import make_channel, pair_weights
from .model import TeacherData, attention_indices, generate

__all__ = ["AMPResult", "run", "run_point"]

#: Consecutive growing steps that count as divergence (then: restart with stronger damping).
DIVERGENCE_WINDOW = 25


@dataclass
class AMPResult:
    """Outcome of an AMP run.

    Attributes
    ----------
    error : float
        Estimation error ``(1/d) ||S_hat - S*||_F^2`` of the final estimate.
    iterations : int
        Iterations of the reported attempt.
    converged : bool
        Whether ``(1/d) ||S_hat_new - S_hat||^2 < tol`` was reached.
    q_hat : float
        Final ``q_hat``.
    damping : float
        Damping of the reported attempt.
    restarts : int
        Number of restarts made (after NaN, divergence or no convergence).
    history : dict
        Per-iteration arrays of the reported attempt: ``error``, ``q_hat``, ``step`` (the change of
        ``S_hat``), ``V``.
    S_hat : numpy.ndarray
        Final estimate.
    """

    error: float
    iterations: int
    converged: bool
    q_hat: float
    damping: float
    restarts: int
    history: dict = field(repr=False)
    S_hat: np.ndarray = field(repr=False)


class _Tokens:
    """All tokens in memory when they fit the budget, otherwise regenerated chunk by chunk."""

    def __init__(self, data: TeacherData, chunk: int, budget_bytes: float, dtype):
        self.data = data
        self.chunk = chunk
        self.dtype = dtype
        size = data.n * data.T * data.d * np.dtype(dtype).itemsize
        self.all = data.tokens(dtype=dtype) if size <= budget_bytes else None

    def __iter__(self):
        n = self.data.n
        for lo in range(0, n, self.chunk):
            hi = min(n, lo + self.chunk)
            X = self.all[lo:hi] if self.all is not None else self.data.tokens(lo, hi, self.dtype)
            yield lo, hi, X


def _attempt(data, ch, tokens, damping, tol, max_iter, progress):
    d, T, n = data.d, data.T, data.n
    rho = data.rho
    alpha = n / d**2
    w = pair_weights(T)
    half = np.where(np.eye(T, dtype=bool), 1.0, 0.5)
    y = data.outputs()
    S_hat = math.sqrt(rho) * np.eye(d)
    C = 1.0
    g = np.zeros((n, T, T))
    omega_all = np.zeros((n, T, T))
    V_prev = C
    hist = {"error": [], "q_hat": [], "step": [], "V": []}
    growing = 0
    converged = False
    q_hat = math.nan
    it = 0
    for it in range(1, max_iter + 1):
        # Output-side damping of (omega, V); the first iteration is undamped.
        th = damping if it > 1 else 0.0
        V = th * V_prev + (1.0 - th) * C
        V_prev = V
        B = np.zeros((d, d))
        trace_g = 0.0
        for lo, hi, X in tokens:
            Sx = S_hat.astype(X.dtype, copy=False)
            omega = attention_indices(X, Sx).astype(np.float64, copy=False)
            omega -= w * g[lo:hi] * V
            if th > 0.0:
                omega = th * omega_all[lo:hi] + (1.0 - th) * omega
            omega_all[lo:hi] = omega
            gc = ch.g_out(y[lo:hi], omega, V)
            g[lo:hi] = gc
            G = gc * half
            trace_g += float(np.trace(G, axis1=1, axis2=2).sum())
            GX = np.einsum("mab,mbd->mad", G.astype(X.dtype, copy=False), X)
            B += X.reshape(-1, d).T @ GX.reshape(-1, d)  # sum_mu X_mu^T G_mu X_mu, one GEMM
        B[np.diag_indices(d)] -= trace_g
        q_hat = ch.amp_q_hat(alpha, g, V)
        if not (math.isfinite(q_hat) and q_hat > 0 and np.all(np.isfinite(B))):
            return None, hist, it, False, q_hat
        delta = 1.0 / q_hat
        R = S_hat + 2.0 * (0.5 * (B + B.T)) / (d**1.5 * q_hat)
        S_new = prior.rie(R, delta, rho)
        C = prior.mmse(delta, rho)
        step = float(np.sum((S_new - S_hat) ** 2) / d)
        S_hat = S_new
        err = data.estimation_error(S_hat)
        hist["error"].append(err)
        hist["q_hat"].append(q_hat)
        hist["step"].append(step)
        hist["V"].append(V)
        if progress is not None:
            progress(it, err, step, q_hat)
        if not math.isfinite(step) or not math.isfinite(err):
            return None, hist, it, False, q_hat
        if step < tol:
            converged = True
            break
        growing = growing + 1 if len(hist["step"]) > 1 and step > hist["step"][-2] else 0
        if growing >= DIVERGENCE_WINDOW:
            return None, hist, it, False, q_hat
    if converged and _inconsistent(S_hat, C, rho):
        return S_hat, hist, it, False, q_hat
    return S_hat, hist, it, converged, q_hat


#: Largest relative mismatch between (1/d) ||S_hat||^2 and Q0 - V accepted at a fixed point, as
#: ``CONSISTENCY + CONSISTENCY_FINITE_D / sqrt(d)``: the identity holds as d -> infinity, and at
#: small d and small rho (rank 6 at d = 30, rho = 0.2) genuine fixed points miss it by 10-15 %.
CONSISTENCY = 0.1
CONSISTENCY_FINITE_D = 1.5


def _consistency_residual(S_hat: np.ndarray, q_hat: float, rho: float) -> float:
    """``|(1/d)||S_hat||^2 - (Q0 - mmse(1/q_hat))| / Q0`` (inf if q_hat is not usable)."""
    if not (math.isfinite(q_hat) and q_hat > 0):
        return math.inf
    d = S_hat.shape[0]
    Q0 = 1.0 + rho
    V = prior.mmse(1.0 / q_hat, rho)
    return abs(float(np.sum(S_hat * S_hat)) / d - (Q0 - V)) / Q0


def _inconsistent(S_hat: np.ndarray, V: float, rho: float) -> bool:
    """Nishimori consistency of a fixed point, without the ground truth.

    At a Bayes-optimal fixed point the estimate's norm equals its overlap with the teacher,
    ``(1/d) ||S_hat||^2 = q = Q0 - V``.  A spurious fixed point (seen with damping at large
    alpha) violates it grossly; such an attempt counts as not converged and is restarted.
    """
    d = S_hat.shape[0]
    Q0 = 1.0 + rho
    tol = CONSISTENCY + CONSISTENCY_FINITE_D / math.sqrt(d)
    return abs(float(np.sum(S_hat * S_hat)) / d - (Q0 - V)) > tol * Q0


def run(
    data: TeacherData,
    damping: float = 0.5,
    tol: float = 1e-7,
    max_iter: int = 500,
    *,
    variant: str = "exact",
    max_restarts: int = 3,
    chunk: int = 4096,
    token_budget: float = 1.5e9,
    dtype=np.float64,
    progress=None,
) -> AMPResult:
    """Run AMP on teacher data.

    Parameters
    ----------
    data : TeacherData
        Teacher and labels (it knows channel, T, beta, rho).
    damping : float
        Output-side damping of ``(omega, V)``, in ``[0, 1)``; 0 is undamped.
    tol : float
        Stop when ``(1/d) ||S_hat_new - S_hat||_F^2 < tol``.
    max_iter : int
        Maximum iterations per attempt.
    variant : {"exact", "density"}
        Hardmax output function; ``"density"`` is the published error of SPEC section 7.
    max_restarts : int
        Restarts with stronger damping after NaN, divergence or no convergence.
    chunk : int
        Samples per block of the matrix products.
    token_budget : float
        Bytes of tokens kept in memory; above it they are regenerated from the seed each
        iteration.
    dtype : numpy dtype
        Precision of the tokens and of the products ``X S`` and ``X^T G X`` (float32 halves the
        memory; everything else stays float64).
    progress : callable, optional
        Called as ``progress(iteration, error, step, q_hat)``.
    """
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got damping={damping!r}")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got tol={tol!r}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got max_iter={max_iter!r}")
    ch = make_channel(data.channel, T=data.T, beta=data.beta,
                      variant=variant if data.channel == "hardmax" else "exact")
    tokens = _Tokens(data, int(chunk), token_budget, dtype)
    damp = float(damping)
    best = None  # (S_hat, hist, it, conv, q_hat, damping) of the attempt to report
    restarts = 0
    best_resid = math.inf
    for attempt in range(max_restarts + 1):
        restarts = attempt
        S_hat, hist, it, conv, q_hat = _attempt(data, ch, tokens, damp, tol, int(max_iter),
                                                progress)
        current = (S_hat, hist, it, conv, q_hat, damp)
        if conv:
            best = current
            break
        # No convergence: keep the finite attempt closest to Nishimori consistency (a
        # ground-truth-free measure; the last, most damped attempt is often the furthest).
        resid = _consistency_residual(S_hat, q_hat, data.rho) if S_hat is not None else math.inf
        if best is None or resid < best_resid:
            best, best_resid = current, resid
        if attempt == max_restarts:
            break
        damp = _next_damping(float(damping), attempt + 1)
    S_hat, hist, it, conv, q_hat, damp = best
    hist = {k: np.asarray(v) for k, v in hist.items()}
    if S_hat is None:
        return AMPResult(math.nan, it, False, q_hat, damp, restarts, hist,
                         np.full((data.d, data.d), np.nan))
    return AMPResult(data.estimation_error(S_hat), it, conv, q_hat, damp, restarts, hist, S_hat)


def _next_damping(first: float, attempt: int) -> float:
    """Damping of restart ``attempt``: the other of {0, 0.5} first, then 0.75, 0.875, ..."""
    if attempt == 1:
        return 0.0 if first >= 0.5 else 0.5
    return 1.0 - 0.5 ** attempt


def run_point(channel: str, alpha: float, rho: float, T: int, d: int, seed: int,
              beta: float = 1.0, *, base_seed: int = 0, **opts) -> AMPResult:
    """Draw teacher data from a seed (:func:`aimlib.model.generate`) and run AMP on it."""
    data = generate(channel, alpha, rho, T, d, seed, beta=beta, base_seed=base_seed)
    return run(data, **opts)
