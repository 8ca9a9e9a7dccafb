"""AMP for the attention-indexed model: GAMP with the RIE prior denoiser (docs/theory.md §4).

Matrix form, never forming the ``n x T x T x d x d`` sensing tensor: memory is ``O(n T^2 + d^2)``
plus one chunk of tokens (or all of them, ``O(n T d)``, when they fit ``token_budget``). Each
iteration, with ``w_aa = 2`` and ``w_ab = 1``:

1. ``V = C``; ``omega_mu = h_mu(S_hat) - (w * g_mu) V`` (Onsager term, ``g`` of the previous step);
2. ``g_mu = g_out(y_mu, omega_mu, V)``; ``q_hat = (2 alpha / n) sum_mu sum_{a<=b} w_ab g_ab^2``;
3. ``B = sum_mu (X_mu^T G_mu X_mu - Tr(G_mu) I)`` with ``G_aa = g_aa``, ``G_ab = g_ab / 2``;
4. ``R = S_hat + 2 B / (d^{3/2} q_hat)``; ``S_hat = RIE(R, 1/q_hat)``; ``C = mmse(1/q_hat)``;
   for a channel whose labels do not see the scale of ``S`` (hardmax), ``S_hat`` is then
   rescaled to the trace ``sqrt(r d)`` that the posterior mean has exactly (``scale="prior"``,
   docs/theory.md §4.2): the data hold no information along that one direction, and left free
   the iteration drifts along it (damped runs at large alpha stalled at errors of 0.2-0.44
   with the estimate's direction right and its norm about 1.5 times too large).

The output side is damped: ``omega <- damping * omega_old + (1 - damping) * omega_new`` and the same
for ``V`` (damping ``S_hat`` instead breaks the Onsager correction: the run then crawls far above
the SE error at large alpha).  Undamped runs are fastest where they are stable (hardmax); the
noiseless softmax channel needs damping.  A run stops when
``(1/d) ||S_hat_new - S_hat||_F^2 < tol`` (``stop_reason="converged"``).  An attempt also stops
early, and is recorded with why:

- ``"nan"``: a non-finite ``q_hat``, ``B`` or estimate;
- ``"diverged"``: the step grew for ``DIVERGENCE_WINDOW`` iterations in a row (after NaN or
  divergence the attempt's estimate is its calmest iterate, the one with the smallest step);
- ``"stalled"``: at the geometric rate at which the running minimum of its step fell over the
  last ``STALL_WINDOW`` iterations, the attempt would not reach ``tol`` within its remaining
  budget: it wanders, or creeps along a marginal direction, and running on would only spend
  the budget;
- ``"max_iter"``: the iteration budget is spent;
- ``"inconsistent"``: ``tol`` was met but the fixed point fails the Nishimori consistency check
  ``(1/d)||S_hat||^2 = Q0 - V`` (a spurious fixed point); for a non-Bayes output function
  (``onsager="general"``), which has no such identity, its norm exceeds
  ``GENERAL_NORM_BOUND * Q0``.

An attempt that failed for any reason but ``"stalled"`` is restarted from the start with another
damping (0.5 if it was below, else undamped; then 0.75, 0.875; up to ``max_restarts`` times); a
stalled run is not (stronger damping does not settle it, and at d = 100, rho = 0.1 it finds
spurious, Nishimori-inconsistent points instead).  All attempts of a run share one
budget of ``max_iter`` iterations, so a hopeless run costs at most what one long converging run
costs.  The first converged attempt is returned; if none converges, the finite attempt closest to
Nishimori consistency, with ``converged=False``, its ``stop_reason``, and the mean and spread of
its error over its last ``STALL_WINDOW`` iterations (``error_mean``, ``error_std``), so a run
that never settles is reported as wandering, not as a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aimlib.algorithms.amp_ops import (
    ArrayOps,
    CrossOps,
    NumpyOps,
    Tokens,
    output_pass,  # noqa: F401  (re-exported)
    raise_out_of_memory,
)
from aimlib.algorithms.amp_options import AMP_MIN_D_PER_T, AMPOptions, amp_dtype
from aimlib.algorithms.amp_result import (
    STOP_REASONS,  # noqa: F401  (re-exported)
    AMPResult,
)
from aimlib.channels import Channel, channel_class
from aimlib.core import backend as backends
from aimlib.core.options import CHUNK, TOKEN_BUDGET, validate
from aimlib.core.progress import close_bar, open_bar
from aimlib.model import TeacherData, generate
from aimlib.prior import Prior

__all__ = ["AMPResult", "STOP_REASONS", "Tokens", "output_pass", "run", "run_point",
           "consistency_tolerance"]

#: Consecutive growing steps that count as divergence (then: restart with stronger damping).
DIVERGENCE_WINDOW = 25
#: Stall test: the geometric rate of the running minimum of the step over the last
#: ``STALL_WINDOW`` iterations must bring it below ``tol`` within the remaining budget.
STALL_WINDOW = 50
#: AMP's smallest ``d`` per token (declared with its options, :mod:`aimlib.algorithms.amp_options`).
MIN_D_PER_T = AMP_MIN_D_PER_T


@dataclass
class _Attempt:
    S_hat: np.ndarray | None
    hist: dict
    iterations: int
    reason: str
    q_hat: float
    damping: float

    @property
    def converged(self) -> bool:
        return self.reason == "converged"


def _stalled(steps: list[float], tol: float, remaining: int) -> bool:
    """Whether an attempt cannot reach ``tol`` in its ``remaining`` iterations (module docs).

    Progress is measured on the running minimum of the step, which is monotone and ignores the
    transient bumps of a converging run: its geometric rate over the last ``STALL_WINDOW``
    iterations, extrapolated, must reach ``tol`` within the remaining budget.
    """
    if len(steps) <= STALL_WINDOW:
        return False
    best = np.minimum.accumulate(np.asarray(steps, dtype=np.float64))
    now, then = best[-1], best[-1 - STALL_WINDOW]
    if not now < then:
        return True
    rate = math.log(now / then) / STALL_WINDOW
    return math.log(tol / now) / rate > remaining


def _attempt(data, ops, damping, tol, max_iter, progress,
             general=False, trace: float | None = None) -> _Attempt:
    d, n = data.d, data.n
    pr = data.prior
    alpha = n / d**2
    S_hat = pr.mean(d)
    C = pr.variance
    ops.reset()
    V_prev = C
    hist = {"error": [], "q_hat": [], "step": [], "V": []}
    growing = 0
    # The iterate with the smallest step, reported if the attempt fails.
    S_calm, calm, q_calm = None, math.inf, math.nan
    reason = "max_iter"
    q_hat = math.nan
    it = 0
    for it in range(1, max_iter + 1):
        # Output-side damping of (omega, V); the first iteration is undamped.
        th = damping if it > 1 else 0.0
        V = th * V_prev + (1.0 - th) * C
        V_prev = V
        B = ops.output_pass(S_hat, V, th)
        # The precision of the effective observation: 2 alpha <sum w g^2> for a Bayes-optimal
        # g_out (Nishimori), 2 alpha <sum w (-dg/domega)> for any other (GAMP's 1 / tau_r).
        q_hat = 2.0 * alpha * ops.mean_negdiv() if general else ops.q_hat(alpha, V)
        if not (math.isfinite(q_hat) and q_hat > 0 and np.all(np.isfinite(B))):
            return _Attempt(S_calm, hist, it, "nan", q_calm, damping)
        delta = 1.0 / q_hat
        R = S_hat + ops.direction(B, q_hat)
        S_new, C = (ops.rie_divergence if general else ops.rie)(R, delta, pr)
        if trace is not None:
            tr = float(np.trace(S_new))
            if tr > 0.0:
                S_new = S_new * (trace / tr)
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
            return _Attempt(S_calm, hist, it, "nan", q_calm, damping)
        if step < calm:
            S_calm, calm, q_calm = S_hat, step, q_hat
        if step < tol:
            reason = "converged"
            break
        growing = growing + 1 if len(hist["step"]) > 1 and step > hist["step"][-2] else 0
        if growing >= DIVERGENCE_WINDOW:
            return _Attempt(S_calm, hist, it, "diverged", q_calm, damping)
        if _stalled(hist["step"], tol, max_iter - it):
            reason = "stalled"
            break
    if reason == "converged" and (_implausible(S_hat, pr) if general
                                  else _inconsistent(S_hat, C, pr)):
        reason = "inconsistent"
    return _Attempt(S_hat, hist, it, reason, q_hat, damping)


#: Nishimori consistency tolerance.  At a genuine fixed point ``(1/d)||S_hat||^2 = Q0 - V``
#: holds as d -> infinity; at finite size the relative residual fluctuates with the rank.
#: Measured over the 45 converged runs of fig1a's grid at d = 100 (all five rhos, exact g_out;
#: ``benchmarks/bench_amp_grid.py``), ``residual * sqrt(min(r, d))`` has root mean square
#: ``CONSISTENCY_SIGMA`` (largest 0.57).  A fixed point is accepted within
#: ``CONSISTENCY_SIGMAS`` of these: 0.27 at d = 100, rho = 0.1; 0.086 at d = 100, rho >= 1.
CONSISTENCY_SIGMA = 0.21


CONSISTENCY_SIGMAS = 4.0


def consistency_tolerance(d: int, rho: float) -> float:
    """Largest Nishimori residual accepted at a fixed point of size ``d`` and rank ``rho d``."""
    k = min(max(round(rho * d), 1), d)
    return CONSISTENCY_SIGMAS * CONSISTENCY_SIGMA / math.sqrt(k)


def _consistency_residual(S_hat: np.ndarray, q_hat: float, pr: Prior) -> float:
    """``|(1/d)||S_hat||^2 - (Q0 - mmse(1/q_hat))| / Q0`` (inf if q_hat is not usable)."""
    if not (math.isfinite(q_hat) and q_hat > 0):
        return math.inf
    d = S_hat.shape[0]
    Q0 = pr.second_moment
    V = pr.mmse(1.0 / q_hat)
    return abs(float(np.sum(S_hat * S_hat)) / d - (Q0 - V)) / Q0


#: Without the Nishimori identity (``onsager="general"``) a fixed point is rejected only when the
#: estimate's norm ``(1/d)||S_hat||^2`` exceeds this multiple of the prior's ``Q0``: the RIE
#: shrinks towards the prior, so such a point is a degenerate one (seen at d = 40: errors 1e4).
GENERAL_NORM_BOUND = 4.0


def _implausible(S_hat: np.ndarray, pr: Prior) -> bool:
    d = S_hat.shape[0]
    return not float(np.sum(S_hat * S_hat)) / d <= GENERAL_NORM_BOUND * pr.second_moment


def _inconsistent(S_hat: np.ndarray, V: float, pr: Prior) -> bool:
    """Nishimori consistency of a fixed point, without the ground truth.

    At a Bayes-optimal fixed point the estimate's norm equals its overlap with the teacher,
    ``(1/d) ||S_hat||^2 = q = Q0 - V``.  A spurious fixed point (seen with damping at large
    alpha) violates it grossly; such an attempt counts as not converged and is restarted.
    """
    d = S_hat.shape[0]
    Q0 = pr.second_moment
    tol = consistency_tolerance(d, pr.rho)
    return abs(float(np.sum(S_hat * S_hat)) / d - (Q0 - V)) > tol * Q0


def run(
    data: TeacherData,
    damping: float = AMPOptions.damping,
    tol: float = AMPOptions.tol,
    max_iter: int = AMPOptions.max_iter,
    *,
    variant: str = "exact",
    onsager: str = "auto",
    max_restarts: int = 3,
    chunk: int = CHUNK,
    token_budget: float = TOKEN_BUDGET,
    dtype=AMPOptions.dtype,
    backend: str = AMPOptions.backend,
    scale: str = AMPOptions.scale,
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
        Iteration budget of the run, shared by all its attempts.
    variant : {"exact", "density"}
        Hardmax output function; ``"density"`` is the published error of docs/theory.md §7.
    onsager : {"auto", "nishimori", "general"}
        ``"nishimori"``: the Bayes-optimal AMP (precision ``2 alpha <sum w g^2>``,
        ``V = mmse(1/q_hat)``).  ``"general"``: GAMP for an output function that is not the
        Bayes-optimal one (precision ``2 alpha <sum w (-dg/domega)>``, ``V`` from the RIE's
        divergence at the observed spectrum, no Nishimori check), whose large-d behaviour is
        :mod:`aimlib.theory.mismatched`.  ``"auto"``: general for ``variant="density"``.
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
    backend : str
        ``"numpy"``: the CPU path with its numba kernels; any other name of
        :data:`aimlib.core.backend.BACKENDS` runs the output pass and the RIE's
        eigendecomposition there (:class:`ArrayOps`; a GPU for ``"cupy"``/``"torch"``).  The
        iterates agree with the CPU path to rounding (``tests/test_backend.py``).
    scale : {"prior", "free"}
        ``"prior"``: for a channel with ``SCALE_INVARIANT`` labels (hardmax), keep the estimate's
        trace at ``sqrt(r d)``, the exact trace of the posterior mean
        (:func:`aimlib.prior.scale_posterior_trace`, docs/theory.md §4.2); the Bayes-optimal
        AMP only (not ``onsager="general"``, which reproduces another algorithm).  ``"free"``:
        the plain iteration.  Other channels ignore it.
    progress : bool or callable, optional
        ``True``: a progress bar on stderr (tqdm: iterations against the budget ``max_iter``,
        rate, and the time the budget would take; a converging run stops earlier).  A callable
        is called as ``progress(iteration, error, step, q_hat)`` after every iteration.
    """
    if data.attention == "self":
        data.require_tied_self("AMP")
    elif backend != "numpy":
        raise ValueError(f"backend={backend!r}: cross-attention AMP runs on numpy only")
    if dtype != "auto":
        dtype = np.dtype(dtype).name
    validate(AMPOptions, dict(damping=damping, tol=tol, max_iter=max_iter, dtype=dtype,
                              scale=scale, backend=backend))
    dtype = amp_dtype(dtype, data.d)
    if data.d < MIN_D_PER_T * data.T:
        raise ValueError(f"d={data.d} is too small for AMP at T={data.T}: it needs "
                         f"d >= {MIN_D_PER_T} T")
    if data.n * data.T < data.d:
        raise ValueError(f"n T = {data.n * data.T} < d = {data.d}: too few samples for AMP "
                         "(alpha must be at least 1 / (T d))")
    ch = data.ch.with_variant(variant)
    ch.check_tokens(data.token_law)
    ch = data.algorithm_channel(ch)
    if onsager not in ("auto", "nishimori", "general"):
        raise ValueError(f"onsager must be 'auto', 'nishimori' or 'general', got {onsager!r}")
    general = onsager == "general" or (onsager == "auto" and variant == "density")
    trace = (data.prior.posterior_trace(data.d)
             if scale == "prior" and not general and ch.SCALE_INVARIANT else None)
    if general and not hasattr(ch, "neg_divergence"):
        raise ValueError(f"onsager='general' needs dg/domega, not available for {ch.name}")
    backends.check(backend)
    tokens = Tokens(data, int(chunk), token_budget, dtype)
    try:
        if data.attention == "cross":
            ops = CrossOps(data, ch, tokens, general)
        else:
            ops = (NumpyOps(data, ch, tokens, general) if backend == "numpy"
                   else ArrayOps(backends.get(backend), data, ch, tokens, general))
    except Exception as exc:
        raise_out_of_memory(backend, data, tokens, exc)
        raise
    damp = float(damping)
    budget = int(max_iter)
    bar = open_bar(progress, budget, f"AMP {data.channel} d={data.d} alpha={data.alpha:.4g}",
                   "it")
    if bar is not None:

        def progress(it, err, step, q_hat):
            bar.update(1)
            bar.set_postfix(error=f"{err:.4g}", step=f"{step:.2g}", refresh=False)

    reason = None
    try:
        res = _run(data, ops, damp, float(damping), tol, budget, max_restarts, progress,
                   general, trace)
        reason = res.stop_reason
        return res
    except Exception as exc:
        raise_out_of_memory(backend, data, tokens, exc)
        raise
    finally:
        close_bar(bar, reason)


def _run(data, ops, damp, damping, tol, budget, max_restarts, progress, general, trace=None
         ) -> AMPResult:
    best: _Attempt | None = None  # the attempt to report
    best_resid = math.inf
    restarts = 0
    spent = 0
    for attempt in range(max_restarts + 1):
        restarts = attempt
        cur = _attempt(data, ops, damp, tol, budget - spent, progress, general, trace)
        spent += cur.iterations
        if cur.converged:
            best = cur
            break
        # No convergence: keep the finite attempt closest to Nishimori consistency (a
        # ground-truth-free measure; the last, most damped attempt is often the furthest).
        resid = (_consistency_residual(cur.S_hat, cur.q_hat, data.prior)
                 if cur.S_hat is not None else math.inf)
        if best is None or resid < best_resid:
            best, best_resid = cur, resid
        # A stalled attempt is reported as wandering, not retried: stronger damping does not
        # settle it (at d = 100, rho = 0.1 it finds spurious, Nishimori-inconsistent points).
        if cur.reason == "stalled" or attempt == max_restarts or spent >= budget:
            break
        damp = _next_damping(float(damping), attempt + 1)
    hist = {k: np.asarray(v) for k, v in best.hist.items()}
    tail = hist["error"][-STALL_WINDOW:]
    err_mean = float(np.mean(tail)) if tail.size else math.nan
    err_std = float(np.std(tail)) if tail.size else math.nan
    if best.S_hat is None:
        return AMPResult(math.nan, best.iterations, False, best.q_hat, best.damping, restarts,
                         best.reason, err_mean, err_std, math.inf, spent, hist,
                         np.full((data.d, data.d), np.nan))
    return AMPResult(data.estimation_error(best.S_hat), best.iterations, best.converged,
                     best.q_hat, best.damping, restarts, best.reason, err_mean, err_std,
                     _consistency_residual(best.S_hat, best.q_hat, data.prior), spent, hist,
                     best.S_hat)


def _next_damping(first: float, attempt: int) -> float:
    """Damping of restart ``attempt``: the other of {0, 0.5} first, then 0.75, 0.875, ..."""
    if attempt == 1:
        return 0.0 if first >= 0.5 else 0.5
    return 1.0 - 0.5 ** attempt


def run_point(channel: str | Channel, alpha: float, rho: float, T: int | None, d: int,
              seed: int, *, base_seed: int = 0, **opts) -> AMPResult:
    """Draw teacher data from a seed (:func:`aimlib.model.generate`) and run AMP on it.

    ``channel`` is an object or a name; with a name, its own parameter (``beta``, ``delta``)
    is passed to the data; every other keyword is an option of :func:`run`.
    """
    cparams, opts = channel_class(channel).split_params(opts)
    data = generate(channel, alpha, rho, T, d, seed, base_seed=base_seed, **cparams)
    return run(data, **opts)
