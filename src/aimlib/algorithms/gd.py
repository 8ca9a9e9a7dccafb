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
from dataclasses import dataclass

import numpy as np

from aimlib.algorithms import gd_factors
from aimlib.algorithms.gd_options import GDOptions
from aimlib.algorithms.gd_result import STOP_REASONS, GDResult
from aimlib.algorithms.gd_steps import (  # noqa: F401  (re-exported)
    BETA1,
    BETA2,
    EPS,
    FETCH_EVERY,
    ArraySteps,
    NumbaSteps,
    loss_and_grad,
    memory_per_init,
)
from aimlib.channels import CHANNELS, Channel, channel_class
from aimlib.core import backend as backends
from aimlib.core.options import validate
from aimlib.core.progress import close_bar, open_bar
from aimlib.model import TeacherData, estimation_error, generate

__all__ = ["GDResult", "STOP_REASONS", "checkpoint_steps", "loss_and_grad", "memory_per_init",
           "run", "run_point", "stalled", "student_rank"]

#: Bytes for the batched per-initialisation products (:func:`memory_per_init` each).
MEMORY_BUDGET = 2e9


#: The same on a GPU backend (an H100/H200 has 80-141 GB; the rest is left to the tokens).
GPU_MEMORY_BUDGET = 32e9


def centring(data) -> float:
    """The factor of ``Tr S`` that centres the student's diagonal indices on ``data``'s tokens.

    The model centres ``h_ab`` by ``C_ab Tr S`` (docs/theory.md §13.3).  For correlated tokens
    the off-diagonal part ``c Tr S`` adds one constant to every entry of a row, to which the
    softmax (the one GD channel that takes correlated tokens) is blind, so the student only
    needs its diagonal centred by ``(1 - c) Tr S``: the GD kernels stay those of i.i.d. tokens.
    """
    c = data.token_law.corr
    if c and not data.ch.SUPPORTS_CORRELATED:
        raise ValueError(f"tokens: correlated tokens are not implemented for GD on the "
                         f"{data.channel} channel")
    return 1.0 - c


def checkpoint_steps(steps: int, count: int) -> np.ndarray:
    """``count`` log-spaced steps from 1 to ``steps`` (distinct, ``steps`` included)."""
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.geomspace(1, steps, int(count)).round().astype(np.int64))


def stalled(best_then: float, best_now: float, tol: float) -> bool:
    """The stopping test of one initialisation over one window (docs/theory.md §5.1):
    its best held-out loss, ``best_then`` at the window's start and ``best_now`` at its end,
    fell by less than ``tol`` of itself.  A run whose held-out loss still falls as a power of
    the steps loses about ``p window / t`` of it per window (``p >= 1`` above the threshold,
    ``benchmarks/bench_gd_stop.py``) and is not stopped."""
    if not (math.isfinite(best_then) and best_then > 0):
        return False
    return (best_then - best_now) / best_then < tol


def run(
    data: TeacherData,
    inits: int = GDOptions.inits,
    steps: int = GDOptions.steps,
    lr: float = GDOptions.lr,
    rng: np.random.Generator | None = None,
    *,
    stop: str = GDOptions.stop,
    stop_window: int = GDOptions.stop_window,
    stop_tol: float = GDOptions.stop_tol,
    holdout: float = GDOptions.holdout,
    checkpoints: int = GDOptions.checkpoints,
    backend: str = GDOptions.backend,
    batch: int | None = None,
    memory_budget: float | None = None,
    dtype: str = GDOptions.dtype,
    optimizer: str = GDOptions.optimizer,
    step_size: float = GDOptions.step_size,
    width: float | None = GDOptions.width,
    init_scale: float = GDOptions.init_scale,
    progress=None,
) -> GDResult:
    """Full-batch Adam (or plain gradient descent) from ``inits`` Gaussian initialisations on
    the same data.

    Parameters
    ----------
    data : TeacherData
        Teacher data of a channel that GD can fit (``SUPPORTS_GD``: softmax, Gaussian).  On the
        paper's model the student is ``W W^T / sqrt(r d)`` (numba kernels on the CPU); on the
        others (cross-attention, untied self-attention) it is ``L R^T / sqrt(r d)`` with untied
        factors for the untied prior (:mod:`aimlib.algorithms.gd_factors`, docs/theory.md
        §15.5; the same array-API steps on NumPy and on the other backends).
    inits : int
        Number ``K`` of initialisations (1: plain GD; the default, 32, is the paper's AGD; the
        first initialisation of an AGD run is a plain GD run).
    steps : int
        Adam steps: the cap of every initialisation (with ``stop="steps"``: the number run).
    lr : float
        Learning rate.
    rng : numpy.random.Generator, optional
        Source of the initialisations; by default one derived from the data's seed, so that a
        run is reproducible.
    stop : {"holdout", "steps"}
        ``"holdout"``: every ``stop_window`` steps each initialisation's loss is measured on
        ``holdout`` n fresh samples of the teacher (drawn from the data's seed, never trained
        on), and it stops at the end of the first window over which :func:`stalled` holds (its
        best held-out loss fell by less than ``stop_tol`` of itself), ``steps`` capping it;
        ``"steps"``: every initialisation runs ``steps`` steps (the paper's protocol).
    stop_window, stop_tol, holdout : int, float, float
        The held-out test's window, tolerance and sample fraction (docs/theory.md §5.1).
    checkpoints : int
        Record the GD and AGD errors at this many log-spaced steps (:func:`checkpoint_steps`;
        an initialisation that stopped keeps its final estimate).  0: none.
    backend : str
        ``"numpy"``: the CPU path with its numba kernels; any other name of
        :data:`aimlib.core.backend.BACKENDS` runs the array-API path there (a GPU for
        ``"cupy"``/``"torch"``).  Both give the same steps, to rounding.
    batch : int, optional
        Initialisations per matrix product (default: as many as fit ``memory_budget`` bytes,
        :func:`memory_per_init` each).
    memory_budget : float, optional
        Bytes for the per-initialisation products (default :data:`MEMORY_BUDGET`,
        :data:`GPU_MEMORY_BUDGET` on a GPU backend).
    dtype : {"float64", "float32"}
        Precision of the tokens and of the two matrix products per step (about twice as fast in
        float32; the errors agree with float64 to about 1e-7, ``tests/test_gd.py``); parameters,
        Adam moments, indices, softmax and loss stay float64.
    optimizer : {"adam", "gd"}
        ``"adam"``: the paper's Adam with learning rate ``lr``; ``"gd"``: plain full-batch
        gradient descent, ``W -= step_size (d^2 / n) grad(loss)``, the loss summed over the
        samples: a step of ``step_size`` in the time of the gradient flow of the loss per
        unit of ``alpha`` (docs/theory.md §16.3; stable to about 0.2 for a student as wide as the
        teacher, beyond it the loss stalls at the edge of stability).
    step_size : float
        Plain gradient descent's step (``optimizer="gd"``).
    width : float, optional
        The student's rank ratio ``kappa = r_s / d`` (``r_s = round(kappa d)``, at least 1);
        None: the teacher's.  A student narrower than the teacher cannot represent it: its
        error has a floor (the best rank-``r_s`` approximation's at best).
    init_scale : float
        Standard deviation of the initial entries (the paper's: 1).
    progress : bool or callable, optional
        ``True``: a progress bar on stderr (tqdm: Adam steps over all initialisation batches,
        rate and time remaining).  A callable is called as ``progress(step, mean_loss)`` at the
        first and every 50th step of each batch.
    """
    ch = data.ch
    untied = not data.prior.SYMMETRIC  # students K Q^T / sqrt(r d) (docs/theory.md §15.5)
    if not (untied or data.prior.FACTORISED):
        raise ValueError(f"prior: GD fits a factor, S = W W^T / sqrt(r d), and runs on a "
                         f"factorised prior only, got prior={data.prior.name!r}")
    if not ch.SUPPORTS_GD:
        gd_channels = [k for k, c in CHANNELS.items() if c.SUPPORTS_GD]
        raise ValueError(f"GD is defined for the channels {gd_channels}, got "
                         f"channel={data.channel!r}")
    validate(GDOptions, dict(inits=inits, steps=steps, lr=lr, dtype=dtype, stop=stop,
                             stop_window=stop_window, stop_tol=stop_tol, holdout=holdout,
                             checkpoints=checkpoints, backend=backend, optimizer=optimizer,
                             step_size=step_size, width=width, init_scale=init_scale))
    backends.check(backend)
    if rng is None:
        rng = np.random.default_rng(np.random.SeedSequence(list(data.token_entropy),
                                                           spawn_key=(2,)))
    K, d, n, T = int(inits), data.d, data.n, data.T
    r = student_rank(data, width)
    steps = int(steps)
    W0 = rng.standard_normal((K, 2, d, r) if untied else (K, d, r))
    if init_scale != 1.0:  # the paper's draws, bit for bit, at the default
        W0 *= float(init_scale)
    eta = float(step_size) * d * d / n if optimizer == "gd" else None
    X = data.tokens().astype(dtype, copy=False)
    y = np.ascontiguousarray(data.outputs(), dtype=np.float64)
    if memory_budget is None:
        memory_budget = GPU_MEMORY_BUDGET if backends.is_gpu(backend) else MEMORY_BUDGET
    per_init = (memory_per_init(n, T, r, dtype, backend=backend) if data.tied_self
                else gd_factors.memory_per_init(n, data.T_q, T, r, dtype))
    if batch is None:
        batch = max(1, min(K, int(memory_budget // per_init)))
    marks = checkpoint_steps(steps, checkpoints)
    state = _State(K, d, marks, data.S)
    rule = _Rule(stop, int(stop_window), float(stop_tol), steps)
    name = "Adam" if eta is None else "GD"
    bar = open_bar(progress, steps * -(-K // batch),
                   f"{name} d={d} K={K} alpha={data.alpha:.4g}", "step")
    held = None
    if stop == "holdout":
        held = data.fresh(max(1, math.ceil(holdout * n)), np.random.default_rng(
            np.random.SeedSequence(list(data.token_entropy), spawn_key=(5,))))
    if not data.tied_self:
        stepper = gd_factors.FactorSteps(
            gd_factors.NUMPY if backend == "numpy" else backends.get(backend), X, y, ch, lr,
            dtype, held, T_q=data.T_q, cross=data.attention == "cross", untied=untied)
        stepper.eta = eta
    elif backend == "numpy":
        stepper = NumbaSteps(X, y, ch, lr, dtype, held, centring(data), eta=eta)
    else:
        stepper = ArraySteps(backends.get(backend), X, y, ch, lr, dtype, held, centring(data))
        stepper.eta = eta
    try:
        for lo in range(0, K, batch):
            hi = min(K, lo + batch)
            try:
                _adam(stepper, W0[lo:hi].copy(), lo, state, rule,
                      progress if bar is None else None, bar)
            except Exception as exc:
                if backends.out_of_memory(backend, exc):
                    raise MemoryError(
                        f"GD backend {backend}: out of device memory for {hi - lo} "
                        f"initialisations, which need about {(hi - lo) * per_init / 2**30:.2f} "
                        f"GiB besides the tokens ({X.nbytes / 2**30:.2f} GiB); set a smaller "
                        f"memory_budget") from exc
                raise
    except BaseException:
        close_bar(bar)
        raise
    res = state.result(data, steps)
    close_bar(bar, res.stop_reason)
    return res


def student_rank(data: TeacherData, width: float | None) -> int:
    """The student's rank ``r_s = round(width d)`` (at least 1), the teacher's ``r`` for
    ``width=None``."""
    if width is None:
        return data.r
    return max(1, round(float(width) * data.d))


@dataclass
class _State:
    """What the batches of a run accumulate: estimates, errors, losses, stops, checkpoints."""

    K: int
    d: int
    marks: np.ndarray
    S_star: np.ndarray

    def __post_init__(self):
        K, C = self.K, len(self.marks)
        self.losses = np.full((0, K), np.nan)
        self.errors = np.empty(K)
        self.taken = np.zeros(K, dtype=np.int64)
        self.reasons = np.zeros(K, dtype=np.int8)
        self.S_sum = np.zeros((self.d, self.d))
        self.norm2 = 0.0
        self.S_first = None
        self.mark_errors = np.full((C, K), np.nan)
        self.mark_sum = np.zeros((C, self.d, self.d)) if C else None

    def record_losses(self, lo: int, losses: np.ndarray) -> None:
        """Per-step losses ``(steps, k)`` of initialisations ``lo ..``, NaN after each stop."""
        if losses.shape[0] > self.losses.shape[0]:
            pad = np.full((losses.shape[0] - self.losses.shape[0], self.K), np.nan)
            self.losses = np.concatenate([self.losses, pad])
        self.losses[:losses.shape[0], lo:lo + losses.shape[1]] = losses

    def estimate(self, W: np.ndarray) -> np.ndarray:
        if W.ndim == 3:  # untied factors (K, Q)
            return gd_factors.estimate(W, self.d)
        r = W.shape[-1]
        return (W @ W.T) / math.sqrt(r * self.d)

    def mark(self, c: int, k: int, W: np.ndarray) -> None:
        """Checkpoint ``c`` of initialisation ``k`` at estimate ``W`` (and every later one, for
        a stopped initialisation: call with each remaining ``c``)."""
        S = self.estimate(W)
        self.mark_errors[c, k] = estimation_error(S, self.S_star)
        self.mark_sum[c] += S

    def finish(self, k: int, W: np.ndarray, taken: int, reason: str) -> None:
        S = self.estimate(W)
        self.errors[k] = estimation_error(S, self.S_star)
        self.taken[k] = taken
        self.reasons[k] = STOP_REASONS.index(reason)
        self.S_sum += S
        self.norm2 += float(np.sum(S * S))
        if k == 0:
            self.S_first = S
        for c in np.flatnonzero(self.marks > taken):
            self.mark(int(c), k, W)

    def result(self, data, steps: int) -> GDResult:
        K = self.K
        S_avg = self.S_sum / K
        spread = (self.norm2 / K - float(np.sum(S_avg * S_avg))) / self.d
        agd_marks = np.array([estimation_error(m / K, self.S_star) for m in self.mark_sum]) \
            if len(self.marks) else np.zeros(0)
        return GDResult(estimation_error(S_avg, self.S_star), self.errors, self.losses, steps,
                        S_avg, self.S_first, spread, self.taken, self.reasons,
                        self.marks, self.mark_errors, agd_marks)


@dataclass(frozen=True)
class _Rule:
    stop: str
    window: int
    tol: float
    steps: int

    def checks(self, t: int) -> bool:
        return self.stop == "holdout" and t % self.window == 0 and t < self.steps


def _adam(stepper, W, lo, state, rule, progress, bar):
    """Adam on a batch of students ``W`` (initialisations ``lo ..``) until each stops."""
    k_all = np.arange(lo, lo + W.shape[0])
    alive = np.ones(W.shape[0], dtype=bool)
    best = np.full(W.shape[0], np.inf)  # best held-out loss
    best_then = best.copy()
    losses = np.full((rule.steps, W.shape[0]), np.nan)
    stepper.start(W)
    next_mark = 0
    t = 0
    pending = []  # the losses since the last fetch (device arrays on a GPU: no sync per step)
    for t in range(1, rule.steps + 1):
        pending.append(stepper.step(t))
        at_mark = next_mark < len(state.marks) and state.marks[next_mark] == t
        check = rule.checks(t)
        if not (check or at_mark or t % FETCH_EVERY == 0 or t == 1 or t == rule.steps):
            continue
        block = stepper.fetch(pending)  # (steps since the last fetch, alive)
        pending = []
        losses[t - block.shape[0]:t, alive] = block
        loss = block[-1]
        if bar is not None:
            bar.update(block.shape[0])
            bar.set_postfix(loss=f"{np.nanmean(loss):.3e}", refresh=False)
        elif progress is not None:
            progress(t, float(np.nanmean(loss)))
        bad = ~np.all(np.isfinite(block), axis=0)
        if not (check or at_mark or bad.any()):
            continue
        if at_mark:
            W_now = stepper.weights()
            for j, k in enumerate(np.flatnonzero(alive)):
                state.mark(next_mark, int(k_all[k]), W_now[j])
            next_mark += 1
        stop = bad.copy()
        if check:
            live = np.flatnonzero(alive)
            held = stepper.holdout_loss()
            best[live] = np.minimum(best[live], np.where(np.isfinite(held), held, np.inf))
            for j, k in enumerate(live):
                stop[j] |= stalled(best_then[k], best[k], rule.tol)
            best_then[live] = best[live]
        if stop.any():
            W_now = stepper.weights()
            for j, k in enumerate(np.flatnonzero(alive)):
                if stop[j]:
                    state.finish(int(k_all[k]), W_now[j], t, "nan" if bad[j] else "holdout")
            alive[np.flatnonzero(alive)[stop]] = False
            if not alive.any():
                break
            stepper.keep(~stop)
    if alive.any():
        W_now = stepper.weights()
        for j, k in enumerate(np.flatnonzero(alive)):
            state.finish(int(k_all[k]), W_now[j], t, "steps")
    state.record_losses(lo, losses[:t])


def run_point(alpha: float, rho: float, T: int | None, d: int, seed: int,
              inits: int = GDOptions.inits, *, base_seed: int = 0,
              channel: str | Channel = "softmax", **opts) -> GDResult:
    """Draw teacher data of ``channel`` (an object, or a name whose own parameter, ``beta`` or
    ``delta``, goes to the data) from a seed and run GD / AGD on it."""
    cparams, opts = channel_class(channel).split_params(opts)
    data = generate(channel, alpha, rho, T, d, seed, base_seed=base_seed, **cparams)
    return run(data, inits=inits, **opts)
