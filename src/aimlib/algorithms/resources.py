"""Resource requests of the workflow's jobs (threads, memory, wall time) from their sizes.

Every data job knows its ``d``, ``T`` and ``n = round(alpha d^2)`` from its file name, so the local
scheduler and SLURM get requests that follow the job instead of one constant per rule.  The models
are deliberately simple and conservative: memory is the sum of the arrays a job holds (plus the
interpreter and imported libraries), time is floating-point work divided by a per-core rate
measured on the development machine (``benchmarks/README.md``), with margin.  No job is sized
above :data:`MAX_MEM_MB`: the AMP tokens are kept in memory only below :data:`TOKEN_BUDGET` and
otherwise regenerated from the seed chunk by chunk each iteration.

All functions return a :class:`Resources`; ``runtime`` is in minutes and ``mem_mb`` in MB (as
Snakemake and the SLURM executor expect them).  ``attempt`` (Snakemake's retry counter, from 1)
scales the time request so that a job killed at its limit is resubmitted with more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from numpy import dtype as np_dtype

from aimlib.algorithms.amp_options import FLOAT32_FROM_D, AMPOptions, amp_dtype
from aimlib.algorithms.gd_options import GDOptions
from aimlib.channels import CHANNELS
from aimlib.core.backend import is_gpu
from aimlib.core.options import CHUNK, TOKEN_BUDGET

__all__ = [
    "Resources",
    "request",
    "MAX_MEM_MB",
    "TOKEN_BUDGET",
    "amp_dtype",
    "amp_model",
    "amp",
    "teacher_seconds",
    "gd",
    "se",
    "light",
    "amp_seconds",
    "gd_seconds",
    "gd_expected_steps",
    "gd_step_seconds",
    "expected_amp_iterations",
]

#: No job of the paper preset may ask for more (MB).
MAX_MEM_MB = 12 * 1024
#: Interpreter + numpy, scipy, numba, xarray and netCDF imports (measured about 200 MB), rounded up.
BASE_MB = 400
#: Sustained GEMM rates per core (flop/s) of AMP's products. float64 (d = 100-300): the
#: measured hardmax iterations at d = 100 (20.2 ms at n = 5,000, 300 ms at n = 80,000) are
#: these products at 30 Gflop/s plus the output function; float32 (d >= 500, two threads): the
#: d = 1000 iteration measured 98 Gflop/s per core, and GD's products fit 90
#: (``benchmarks/README.md``).
GEMM_RATE = {"float64": 30e9, "float32": 90e9}
#: Seconds per AMP iteration besides the products and the output function: a constant and a
#: term in ``d^2`` (the eigendecomposition, the RIE and the driver's ``d x d`` work). Fitted to
#: fig2b's 32 AMP jobs at d = 150 (two jobs at a time, n = 63-5,625: 13 ms per iteration
#: beside the products at small n; ``benchmarks/README.md``).
AMP_ITERATION_OVERHEAD = 1e-3
AMP_D2_SECONDS = 5e-7
#: Seconds per regenerated standard normal (numpy's ziggurat plus the copy).
NORMAL_SECONDS = 6e-9


#: Sustained rates assumed for one H100/H200-class GPU, about 60 % of the H200's datasheet
#: (67 Tflop/s float64 tensor-core and float32, 4.8 TB/s): assumed, not measured here;
#: ``benchmarks/bench_gpu.py`` measures them on the machine it runs on.
GPU_GEMM_RATE = {"float64": 40e12, "float32": 40e12}
GPU_BANDWIDTH = 2.8e12
#: Kernel launches per Adam step or AMP chunk (seconds; about 30 launches, no host round trip:
#: the losses are read every 50 steps).
GPU_STEP_OVERHEAD = 3e-4


@dataclass(frozen=True)
class Resources:
    """A job's request: ``threads``, ``mem_mb`` (MB, host memory), ``runtime`` (minutes) and
    ``gpu`` (GPUs: 1 for a job on a GPU backend, the SLURM plugin's ``gpu`` resource)."""

    threads: int
    mem_mb: int
    runtime: int
    gpu: int = 0


def _mb(nbytes: float) -> float:
    return nbytes / 1e6


def request(mem_bytes: float, seconds: float, threads: int, attempt: int,
             floor_minutes: int = 5, gpu: int = 0) -> Resources:
    mem_mb = int(math.ceil((BASE_MB + 1.25 * _mb(mem_bytes)) / 100.0) * 100)
    if mem_mb > MAX_MEM_MB:
        raise ValueError(f"job needs about {mem_mb} MB, above the {MAX_MEM_MB} MB limit")
    minutes = floor_minutes + 2.0 * seconds / 60.0
    return Resources(int(threads), mem_mb, int(math.ceil(minutes * max(1, int(attempt)))),
                     int(gpu))


def _amp_threads(d: int) -> int:
    return 2 if d >= FLOAT32_FROM_D else 1


#: Host-device copies (PCIe, bytes/s) and a GPU eigendecomposition (seconds per d^3).
PCIE_BANDWIDTH = 20e9
GPU_EIGH_SECONDS = 3e-11


def amp_model(d: int, n: int, T: int, channel: str, dtype: str, chunk: int,
              backend: str = AMPOptions.backend):
    """Bytes held, threads, seconds per iteration and set-up seconds of one AMP run (on a GPU
    backend: host bytes, and GPU-seconds for the products and the eigendecomposition, with the
    output function on the host where the channel has no array-API one)."""
    dt = amp_dtype(dtype, d)
    item = 4 if dt == "float32" else 8
    tokens = n * T * d * item
    in_memory = tokens <= TOKEN_BUDGET
    m = min(n, chunk)
    mem = (tokens if in_memory else 0) + 3 * m * T * d * 8 + 12 * n * T * T * 8 + 12 * d * d * 8
    threads = _amp_threads(d)
    rate = GEMM_RATE[dt] * (0.9 * threads if threads > 1 else 1.0)
    ch = CHANNELS[channel]
    # the output function's cost per sample is the channel's (hardmax: bivariate CDFs at T = 2,
    # Genz's rule beyond)
    g_out = ch.g_out_seconds(T) * n
    regen = 0.0 if in_memory else NORMAL_SECONDS * n * T * d
    setup = NORMAL_SECONDS * n * T * d + 2.0 * n * T * d * d / rate + teacher_seconds(d, n, T)
    if is_gpu(backend):
        host_g = not hasattr(ch, "g_out_xp")
        moved = 4 * d * d * 8 + (2 * n * T * T * 8 if host_g else 0) \
            + (0 if in_memory else tokens)
        per_iter = (4.0 * n * T * d * d / GPU_GEMM_RATE[dt] + GPU_EIGH_SECONDS * d**3
                    + moved / PCIE_BANDWIDTH + (g_out if host_g else 0.0) + regen
                    + GPU_STEP_OVERHEAD * (-(-n // m)))
        return mem, 1, per_iter, setup
    per_iter = (4.0 * n * T * d * d / rate + g_out + regen + 5e-10 * d**3
                + AMP_D2_SECONDS * d * d + AMP_ITERATION_OVERHEAD)
    return mem, threads, per_iter, setup


def amp(d: int, n: int, T: int, channel: str, *, dtype: str = AMPOptions.dtype,
        max_iter: int = AMPOptions.max_iter, chunk: int = CHUNK,
        backend: str = AMPOptions.backend, runs: int = 1, attempt: int = 1) -> Resources:
    """Request of ``runs`` AMP runs in series (:func:`aimlib.algorithms.amp.run`; a job runs every
    seed).

    Memory: tokens (``n T d``, or one chunk when they are regenerated), three chunk-sized
    temporaries of the products, about a dozen ``(n, T, T)`` arrays (labels, ``g``, ``omega`` and
    the output function's temporaries) and a dozen ``d x d`` ones (estimate, ``B``, RIE).  Time per
    iteration: the two products ``X S`` and ``X^T G X`` (``4 n T d^2`` flop), the output function,
    regeneration when the tokens do not fit, and one eigendecomposition; the request covers the
    ``max_iter`` budget of each run (shared by its attempts) twice over, plus drawing its teacher.
    """
    mem, threads, per_iter, setup = amp_model(d, n, T, channel, dtype, chunk, backend)
    return request(mem, int(runs) * (setup + int(max_iter) * per_iter), threads, attempt,
                   gpu=int(is_gpu(backend)))


def amp_seconds(d: int, n: int, T: int, channel: str, *, dtype: str = AMPOptions.dtype,
                iterations: float = 0.0, chunk: int = CHUNK,
                backend: str = AMPOptions.backend) -> float:
    """Expected CPU-seconds of one AMP run of ``iterations`` iterations (threads included;
    on a GPU backend: GPU-seconds, the set-up on the host counted in)."""
    _, threads, per_iter, setup = amp_model(d, n, T, channel, dtype, chunk, backend)
    return threads * (setup + iterations * per_iter)


def teacher_seconds(d: int, n: int, T: int) -> float:
    """Time to draw one seed's teacher data: tokens chunk by chunk, one ``X S*`` per chunk."""
    return NORMAL_SECONDS * n * T * d + 2.0 * n * T * d * d / GEMM_RATE["float64"]


def gd_step_gpu_seconds(d: int, n: int, T: int, r: int, inits: int, dtype: str) -> float:
    """Seconds of one Adam step of ``inits`` students on a GPU: the two GEMMs at
    :data:`GPU_GEMM_RATE`, the per-sample passes (``Z``'s layout, ``h``, ``G``: about six reads
    and writes of ``n T K r`` and of ``n K T^2``) at :data:`GPU_BANDWIDTH`, and the launches."""
    item = np_dtype(dtype).itemsize
    flop = 4.0 * n * T * d * r * inits
    moved = 6.0 * n * T * r * inits * item + 8.0 * n * inits * T * T * 8
    return flop / GPU_GEMM_RATE[dtype] + moved / GPU_BANDWIDTH + GPU_STEP_OVERHEAD


def _gd_model(d: int, n: int, T: int, r: int, inits: int, steps: float,
              batch_budget: float | None, dtype: str = GDOptions.dtype,
              backend: str = GDOptions.backend, checkpoints: int = 0):
    """Host bytes, seconds (CPU-seconds on the CPU, GPU-seconds on a GPU) of one GD run of
    ``steps`` steps per initialisation (``checkpoints`` sums of ``d x d`` estimates held)."""
    # the numerics' module (numba kernels) only when a GD run is sized, not when a workflow
    # reads the registry
    from aimlib.algorithms.gd import MEMORY_BUDGET, memory_per_init
    marks = int(checkpoints) * d * d * 8
    if is_gpu(backend):
        # on the host: the tokens while they are drawn and moved, the outputs, the students
        mem = n * T * d * 8 + n * T * T * 8 + inits * 4 * d * r * 8 + marks
        seconds = steps * gd_step_gpu_seconds(d, n, T, r, inits, dtype)
        return mem, seconds + teacher_seconds(d, n, T)
    batch_budget = MEMORY_BUDGET if batch_budget is None else batch_budget
    per_init = memory_per_init(n, T, r, dtype)
    mem = (n * T * d * 8 + min(inits * per_init, max(per_init, batch_budget))
           + inits * 3 * d * r * 8 + marks)
    seconds = steps * inits * gd_step_seconds(d, n, T, r, dtype) + teacher_seconds(d, n, T)
    return mem, seconds


#: The CPU time model of an Adam step, per initialisation (:func:`gd_step_seconds`): the two
#: GEMMs at ``GD_GEMM_RATE``, the channel's per-sample pass (``n T^2 r`` pair-rank terms) and
#: the update of the ``d r`` parameters.  The first two are fitted to 71 jobs of fig2b's GD
#: stage at the paper's sizes (d = 200, K = 32, T = 2..6, n = 48 to 12,000;
#: ``benchmarks/bench_cost_model.py --fit``, table in ``benchmarks/README.md``: 90.2 Gflop/s,
#: 3.63e-10 s); the last was 2.67e-8 s in that fit and is 1.05e-8 s with the fused Adam step
#: (measured on three small jobs, where it is most of the step).  float64 products at half the
#: rate.
GD_GEMM_RATE = {"float32": 90e9, "float64": 45e9}
GD_SAMPLE_SECONDS = 3.6e-10
GD_PARAM_SECONDS = 1.05e-8


def gd_step_seconds(d: int, n: int, T: int, r: int, dtype: str = GDOptions.dtype) -> float:
    """CPU-seconds of one Adam step of one initialisation on the CPU path: ``4 n T d r`` flop
    of GEMMs at :data:`GD_GEMM_RATE`, ``n T^2 r`` at :data:`GD_SAMPLE_SECONDS` and ``d r`` at
    :data:`GD_PARAM_SECONDS`."""
    return (4.0 * n * T * d * r / GD_GEMM_RATE[dtype] + GD_SAMPLE_SECONDS * n * T * T * r
            + GD_PARAM_SECONDS * d * r)


#: Under ``stop: holdout``: the mean steps per initialisation below the threshold, measured
#: at stop_window 100, stop_tol 1e-2 (``benchmarks/bench_gd_stop.py``), and the fraction of
#: the perfect-recovery threshold from which runs are assumed to run to the cap.
HOLDOUT_STEPS_BELOW = 400
HOLDOUT_CAPPED_FROM = 0.6


def gd_expected_steps(opts: dict, channel: str, T: int, alpha: float, rho: float) -> float:
    """Expected Adam steps per initialisation of a GD run with options ``opts`` at a point:
    the cap under ``stop: steps``; under ``stop: holdout`` the cap from
    :data:`HOLDOUT_CAPPED_FROM` of the perfect-recovery threshold (a run still improving is
    never stopped) and :data:`HOLDOUT_STEPS_BELOW` below it."""
    steps = int(opts["steps"])
    if opts.get("stop", "steps") == "steps":
        return float(steps)
    ch = CHANNELS[channel](T=int(T))
    threshold = ch.perfect_recovery_threshold(rho)  # an alpha
    if threshold is None or alpha >= HOLDOUT_CAPPED_FROM * threshold:
        return float(steps)
    return float(min(steps, HOLDOUT_STEPS_BELOW))


def gd(d: int, n: int, T: int, r: int, *, inits: int, steps: float,
       dtype: str = GDOptions.dtype, backend: str = GDOptions.backend, checkpoints: int = 0,
       batch_budget: float | None = None, runs: int = 1, attempt: int = 1) -> Resources:
    """Request of ``runs`` GD/AGD runs in series (:func:`aimlib.algorithms.gd.run`), ``inits`` each,
    of at most ``steps`` steps (the cap: a request covers the longest run).

    Memory: all tokens (``n T d`` float64) plus the batched per-initialisation arrays, capped by
    ``batch_budget`` as in :func:`aimlib.algorithms.gd.run` (on a GPU backend they are on the
    device). Time: per step and initialisation the forward ``X W`` and backward ``X^T (G Z)``
    products, ``4 n T d r`` flop, and the softmax pass; on a GPU :func:`gd_step_gpu_seconds`.
    """
    mem, seconds = _gd_model(d, n, T, r, inits, steps, batch_budget, dtype, backend, checkpoints)
    return request(mem, int(runs) * seconds, 1, attempt, gpu=int(is_gpu(backend)))


def gd_seconds(d: int, n: int, T: int, r: int, *, inits: int, steps: float,
               dtype: str = GDOptions.dtype, backend: str = GDOptions.backend) -> float:
    """Expected seconds of one GD/AGD run of ``steps`` steps per initialisation (CPU-seconds;
    GPU-seconds on a GPU backend)."""
    return _gd_model(d, n, T, r, inits, steps, None, dtype, backend)[1]


def se(points: int, *, attempt: int = 1) -> Resources:
    """Request of one SE curve (milliseconds per point; the floor dominates)."""
    return request(50e6, 0.05 * points, 1, attempt)


def light(*, attempt: int = 1) -> Resources:
    """Request of an aggregation or figure job."""
    return request(200e6, 60.0, 1, attempt)


def expected_amp_iterations(channel: str, max_iter: int) -> int:
    """AMP iterations per run assumed by the cost estimate: the channel's measured mean
    (:attr:`aimlib.channels.Channel.AMP_ITERATIONS`), capped by the run's budget."""
    return min(int(CHANNELS[channel].AMP_ITERATIONS), int(max_iter))
