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
from typing import ClassVar

import numpy as np

from aimlib.algorithms.gd_options import GDOptions
from aimlib.algorithms.result import Result
from aimlib.channels import CHANNELS, Channel, Softmax, channel_class
from aimlib.core import backend as backends
from aimlib.core.kernels import adam_step, pack_students
from aimlib.core.options import validate
from aimlib.core.progress import close_bar, open_bar
from aimlib.model import TeacherData, estimation_error, generate

__all__ = ["GDResult", "STOP_REASONS", "checkpoint_steps", "loss_and_grad", "run", "run_point",
           "stalled"]

#: PyTorch's Adam defaults.
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8


#: Why an initialisation stopped: the step cap, the held-out test, a non-finite loss.
STOP_REASONS = ("steps", "holdout", "nan")


@dataclass
class GDResult(Result):
    """Outcome of GD over ``K`` initialisations (:class:`aimlib.algorithms.result.Result`).

    Attributes
    ----------
    error : float
        Error of the averaged estimate ``(1/K) sum_k S_{W_k}`` (plain GD for ``K = 1``).
    errors : numpy.ndarray
        Error of each initialisation, shape ``(K,)``; ``errors[0]`` is a plain GD run.
    loss : numpy.ndarray
        Training loss per step and initialisation, shape ``(steps run, K)``; NaN after an
        initialisation stopped.
    steps : int
        The step cap.
    S_avg : numpy.ndarray
        The averaged estimate (AGD).
    S_first : numpy.ndarray
        The estimate of the first initialisation (plain GD).
    spread : float
        ``(1/K) sum_k (1/d) ||S_k - S_avg||^2``, what averaging gains:
        ``error = mean(errors) - spread`` (the bias-variance identity).
    steps_taken : numpy.ndarray
        Adam steps each initialisation ran, shape ``(K,)``.
    stop_codes : numpy.ndarray
        Why each stopped, indices into :data:`STOP_REASONS`, shape ``(K,)``.
    checkpoint_steps : numpy.ndarray
        Steps at which the errors were recorded (``checkpoints`` of :func:`run`).
    checkpoint_errors : numpy.ndarray
        Error of each initialisation there, shape ``(checkpoints, K)``.
    checkpoint_agd : numpy.ndarray
        Error of the averaged estimate there, shape ``(checkpoints,)``.
    """

    error: float
    errors: np.ndarray
    loss: np.ndarray = field(repr=False)
    steps: int = 0
    S_avg: np.ndarray = field(default=None, repr=False)
    S_first: np.ndarray = field(default=None, repr=False)
    spread: float = float("nan")
    steps_taken: np.ndarray = field(default=None, repr=False)
    stop_codes: np.ndarray = field(default=None, repr=False)
    checkpoint_steps: np.ndarray = field(default=None, repr=False)
    checkpoint_errors: np.ndarray = field(default=None, repr=False)
    checkpoint_agd: np.ndarray = field(default=None, repr=False)

    ALGORITHM: ClassVar[str] = "GD"
    UNIT: ClassVar[str] = "Adam steps"
    STOP_REASONS: ClassVar[tuple[str, ...]] = STOP_REASONS
    REASON_TEXT: ClassVar[dict[str, str]] = {
        "steps": "ran to its step cap", "holdout": "stopped on the held-out test",
        "nan": "hit a NaN"}

    @property
    def iterations(self) -> int:
        """The most Adam steps an initialisation ran."""
        return int(np.max(self.steps_taken)) if self.steps_taken is not None else 0

    @property
    def converged(self) -> bool:
        """A GD run counts when its error is finite: the error after at most ``steps`` Adam
        steps is what it measures (an initialisation still improving at the cap says so in
        :attr:`stop_reason`, and the figures draw it)."""
        return bool(np.isfinite(self.error))

    @property
    def stop_reason(self) -> str:
        """``"steps"`` if an initialisation ran to the cap, ``"holdout"`` if every one stopped
        on the held-out test, ``"nan"`` for a non-finite error."""
        if not self.converged:
            return "nan"
        return "steps" if np.any(self.steps_taken >= self.steps) else "holdout"

    @property
    def capped(self) -> np.ndarray:
        """Whether each initialisation ran to the step cap (was still moving there)."""
        return np.asarray(self.stop_codes) == STOP_REASONS.index("steps")

    def to_dataset(self, loss_points: int = 200):
        """The run as an ``xarray.Dataset``: ``error_agd`` (the averaged estimate),
        ``error_gd`` (the first initialisation), ``errors``, ``steps_taken`` and
        ``stop_reason`` (codes of :data:`STOP_REASONS`) on ``init``, ``capped_gd`` (the first
        initialisation ran to the cap) and ``capped_agd`` (the fraction of them that did), the
        training loss on ``(step, init)``, every ``steps // loss_points``-th step, and the
        checkpointed errors on ``checkpoint`` (when recorded)."""
        import xarray as xr

        every = max(1, self.steps // loss_points)
        ran = self.loss.shape[0]
        capped = self.capped
        ds = xr.Dataset(
            {
                "error_agd": ((), self.error),
                "error_gd": ((), float(self.errors[0])),
                "errors": ("init", self.errors),
                "steps_taken": ("init", np.asarray(self.steps_taken, dtype=np.int64)),
                "stop_reason": ("init", np.asarray(self.stop_codes, dtype=np.int8)),
                "capped_gd": ((), np.float64(capped[0])),
                "capped_agd": ((), np.float64(capped.mean())),
                "steps_taken_gd": ((), np.float64(self.steps_taken[0])),
                "steps_taken_agd": ((), np.float64(np.mean(self.steps_taken))),
                "loss": (("step", "init"), self.loss[::every]),
            },
            coords={"init": np.arange(len(self.errors)),
                    "step": np.arange(1, ran + 1)[::every]},
            attrs={"step_cap": int(self.steps)},
        )
        if self.checkpoint_steps is not None and len(self.checkpoint_steps):
            ds["checkpoint_errors"] = (("checkpoint", "init"), self.checkpoint_errors)
            ds["checkpoint_gd"] = ("checkpoint", self.checkpoint_errors[:, 0])
            ds["checkpoint_agd"] = ("checkpoint", self.checkpoint_agd)
            ds = ds.assign_coords(checkpoint=np.asarray(self.checkpoint_steps, dtype=np.int64))
        return ds


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
    loss, P, gdiag, c = _backward_product(W, X, y, channel, work, centre)
    grad = P.reshape(d, K, r).transpose(1, 0, 2) - (2.0 * centre) * gdiag[:, None, None] * W
    return loss, grad / c


def _backward_product(W, X, y, channel, work, centre, packed=None, P=None):
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


def memory_per_init(n: int, T: int, r: int, dtype: str = "float64", *,
                    backend: str = "numpy") -> int:
    """Bytes per initialisation of :func:`run`'s scratch space: ``X W`` and ``(G + G^T) X W``
    (numba path); the array-API path also holds their per-sample layout, ``h`` and ``G``."""
    item = np.dtype(dtype).itemsize
    if backend == "numpy":
        return 2 * n * T * r * item
    return 4 * n * T * r * item + 2 * n * T * r * 8 + 4 * n * T * T * 8


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
    progress : bool or callable, optional
        ``True``: a progress bar on stderr (tqdm: Adam steps over all initialisation batches,
        rate and time remaining).  A callable is called as ``progress(step, mean_loss)`` at the
        first and every 50th step of each batch.
    """
    ch = data.ch
    if not data.prior.FACTORISED:
        raise ValueError(f"prior: GD fits a factor, S = W W^T / sqrt(r d), and runs on a "
                         f"factorised prior only, got prior={data.prior.name!r}")
    if not ch.SUPPORTS_GD:
        gd_channels = [k for k, c in CHANNELS.items() if c.SUPPORTS_GD]
        raise ValueError(f"GD is defined for the channels {gd_channels}, got "
                         f"channel={data.channel!r}")
    validate(GDOptions, dict(inits=inits, steps=steps, lr=lr, dtype=dtype, stop=stop,
                             stop_window=stop_window, stop_tol=stop_tol, holdout=holdout,
                             checkpoints=checkpoints, backend=backend))
    backends.check(backend)
    if rng is None:
        rng = np.random.default_rng(np.random.SeedSequence(list(data.token_entropy),
                                                           spawn_key=(2,)))
    K, d, r, n, T = int(inits), data.d, data.r, data.n, data.T
    steps = int(steps)
    W0 = rng.standard_normal((K, d, r))
    X = data.tokens().astype(dtype, copy=False)
    y = np.ascontiguousarray(data.outputs(), dtype=np.float64)
    if memory_budget is None:
        memory_budget = GPU_MEMORY_BUDGET if backends.is_gpu(backend) else MEMORY_BUDGET
    per_init = memory_per_init(n, T, r, dtype, backend=backend)
    if batch is None:
        batch = max(1, min(K, int(memory_budget // per_init)))
    marks = checkpoint_steps(steps, checkpoints)
    state = _State(K, d, marks, data.S)
    rule = _Rule(stop, int(stop_window), float(stop_tol), steps)
    bar = open_bar(progress, steps * -(-K // batch),
                   f"Adam d={d} K={K} alpha={data.alpha:.4g}", "step")
    held = None
    if stop == "holdout":
        held = data.fresh(max(1, math.ceil(holdout * n)), np.random.default_rng(
            np.random.SeedSequence(list(data.token_entropy), spawn_key=(5,))))
    if backend == "numpy":
        stepper = _NumbaSteps(X, y, ch, lr, dtype, held, centring(data))
    else:
        stepper = _ArraySteps(backends.get(backend), X, y, ch, lr, dtype, held, centring(data))
    try:
        for lo in range(0, K, batch):
            hi = min(K, lo + batch)
            try:
                _adam(stepper, W0[lo:hi].copy(), lo, state, rule,
                      progress if bar is None else None, bar)
            except Exception as exc:
                if backend != "numpy" and backends.get(backend).out_of_memory(exc):
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


#: Steps between two reads of the losses (and the non-finite test) from the device.
FETCH_EVERY = 50


class _NumbaSteps:
    """Adam steps on the CPU: :func:`loss_and_grad` with the channel's numba kernel."""

    def __init__(self, X, y, ch, lr, dtype, held=None, centre: float = 1.0):
        self.X, self.y, self.ch, self.lr = X, y, ch, lr
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
        loss, P, gdiag, c = _backward_product(self.W, self.X, self.y, self.ch, self.work,
                                              self.centre, self.packed, self.P)
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


class _ArraySteps:
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

    def start(self, W):
        xp = self.be.xp
        self.W = self.be.asarray(W)
        self.m = xp.zeros_like(self.W)
        self.v = xp.zeros_like(self.W)

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

    def holdout_loss(self) -> np.ndarray:
        loss = self.loss_and_grad(self.W, self.held, grad=False)[0]
        return self.be.to_host(loss) / self.held[1].shape[0]

    def step(self, t):
        xp = self.be.xp
        loss, g = self.loss_and_grad(self.W)
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


def run_point(alpha: float, rho: float, T: int, d: int, seed: int, inits: int = GDOptions.inits,
              beta: float = 1.0, *, base_seed: int = 0, channel: str = "softmax",
              **opts) -> GDResult:
    """Draw teacher data of ``channel`` from a seed and run GD / AGD on it (the channel's own
    parameter, ``delta`` for the Gaussian channel, goes to the data)."""
    cparams, opts = channel_class(channel).split_params(opts)
    data = generate(channel, alpha, rho, T, d, seed, beta=beta, base_seed=base_seed, **cparams)
    return run(data, inits=inits, **opts)
