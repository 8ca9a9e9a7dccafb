"""Glue for workflow jobs: logging into the job's log file and the provenance of its outputs."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import resource
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

from aimlib.pipeline.io import CacheError

__all__ = ["JobFailure", "job_log", "end_job", "resolved_config", "warm_numba_cache",
           "progress_bar", "progress_callback"]


class JobFailure(RuntimeError):
    """A job's result is not fit to be cached (e.g. SE points that did not converge); the
    message says which and what to do, and is printed as one line, without a traceback."""


@contextlib.contextmanager
def job_log(path: str | None, name: str = "aimlib", threads: int | None = None,
            output: str | None = None) -> Iterator[logging.Logger]:
    """Send stdout, stderr and a logger to the job's log file; log a failure's traceback.

    The log starts with where the job runs (host, SLURM job id if any, threads), and the BLAS and
    OpenMP thread pools are limited to ``threads`` so that jobs sharing a node do not oversubscribe
    its cores.

    Parameters
    ----------
    path : str or None
        The log file (``snakemake.log[0]``); ``None`` logs to stderr.
    name : str
        Logger name.
    threads : int, optional
        The job's threads (``snakemake.threads``).
    output : str, optional
        The job's (first) output file: once the job succeeded, it is counted in the run's
        progress report (:func:`aimlib.pipeline.tracking.job_done`) with its CPU time.
    """
    with _ctrl_c_raises(), _thread_limit(threads), _job_log(path, name) as log:
        slurm = os.environ.get("SLURM_JOB_ID")
        log.info("host %s, %s, threads %s", platform.node(),
                 f"SLURM job {slurm}" if slurm else "not under SLURM", threads)
        yield log
    if output is not None:
        # not at the top: job scripts import this first, to limit threads before numpy loads
        from aimlib.pipeline.tracking import job_done

        try:
            job_done(str(output), _cpu_seconds())
        except OSError:  # the report is a courtesy: a read-only .snakemake fails no job
            pass


@contextlib.contextmanager
def _ctrl_c_raises():
    """Ctrl-C raises KeyboardInterrupt inside the block, so that a write in progress removes its
    temporary file (:func:`aimlib.pipeline.io.atomic_write`) and the job ends with one line.
    Before it, a job script's first lines make Ctrl-C a quiet exit (status 130) while it imports,
    when nothing is written yet; that handler is back once the job's outputs are in place."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


def end_job() -> NoReturn:
    """End a job script's process once its outputs are written and its log closed, without the
    interpreter's teardown.

    Finalising the modules a job imports (xarray and pandas, numba and llvmlite) takes 0.1-0.3
    CPU-seconds, as much as a short job's work and paid by each of the quick preset's 288 jobs
    (``benchmarks/README.md``, "The quick preset's CPU").  Every output is already closed and
    renamed into place by then (:func:`aimlib.pipeline.io.write_netcdf`), so nothing is lost:
    logging and the standard streams are flushed, and the process exits with status 0.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _cpu_seconds() -> float:
    """CPU time of this process (every thread) and its children so far."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


@contextlib.contextmanager
def _thread_limit(threads: int | None):
    if threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits  # only when the BLAS threads are limited

    with threadpool_limits(limits=int(threads)):
        yield


@contextlib.contextmanager
def _job_log(path: str | None, name: str) -> Iterator[logging.Logger]:
    log = logging.getLogger(name)
    log.setLevel(logging.INFO)
    if path is None:
        handler = logging.StreamHandler(sys.stderr)
        log.addHandler(handler)
        try:
            yield log
        finally:
            log.removeHandler(handler)
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", buffering=1) as fh:
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        log.addHandler(handler)
        old_out, old_err = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = fh
        t0 = time.perf_counter()
        try:
            yield log
            log.info("done in %.2f s", time.perf_counter() - t0)
        except (CacheError, JobFailure) as e:  # one line, no traceback: it says what to do
            log.error("%s", e)
            print(f"aimlib: {e}", file=old_err)
            raise SystemExit(1) from None
        except BaseException as e:
            if _interrupted(e):  # Ctrl-C: the job stops quietly (its output was not written)
                log.error("interrupted (Ctrl-C); nothing was written")
                raise SystemExit(130) from None
            fh.write(traceback.format_exc())
            raise
        finally:
            sys.stdout, sys.stderr = old_out, old_err
            log.removeHandler(handler)


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is Ctrl-C, or came from it: a SIGINT that arrives while a numba kernel runs
    surfaces when the kernel returns, as ``SystemError: CPUDispatcher(...) returned a result with
    an exception set`` caused by the ``KeyboardInterrupt``."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def resolved_config(config) -> dict:
    """The workflow config as a plain JSON-able dict (stored as an attribute of every cache)."""
    return json.loads(json.dumps(dict(config)))


def warm_numba_cache() -> float:
    """Compile (or load) every numba kernel once, so that jobs started together only read the
    on-disk cache instead of compiling and writing it concurrently.

    The workflow calls this in its ``onstart`` handler, before the first job starts; on a cluster
    the cache lives next to the sources on the shared file system (or in ``NUMBA_CACHE_DIR``).
    It runs the public entry points on tiny problems with the argument types the jobs use
    (every registered channel and variant, SE, the small-width limit, the prior, AMP and GD).
    Returns the seconds it took.
    """
    t0 = time.perf_counter()
    # not at the top: job scripts import this first, to limit threads before numpy loads
    import numpy as np

    # not at the top: job scripts import this first, to limit threads before numpy loads
    from aimlib import model, prior
    from aimlib.algorithms import amp, gd
    from aimlib.channels import CHANNELS
    from aimlib.theory import state_evolution

    for name, cls in CHANNELS.items():
        T = max(cls.T_MIN, 2)
        data = model.generate(name, 0.5, 0.5, T, 12, 0)
        for variant in cls.VARIANTS:
            state_evolution.solve(name, 0.3, 0.5, T, variant=variant)
            for dtype in (np.float64, np.float32):
                amp.run(data, variant=variant, max_iter=2, max_restarts=0, dtype=dtype)
        if cls.SUPPORTS_GD:
            for dtype in ("float64", "float32"):
                gd.run(data, inits=1, steps=2, dtype=dtype)
    state_evolution.small_width_solve(1.0)
    state_evolution.small_width_solve(1.0, variant="density")
    prior.mmse(0.5, 0.5)
    return time.perf_counter() - t0


class _LineWriter:
    """A file for tqdm that turns each refresh into one plain line (no carriage returns), so a
    log file reads top to bottom and ``tail -f`` shows the latest state."""

    def __init__(self, fh):
        self.fh = fh

    def write(self, s: str) -> None:
        s = s.replace("\r", "").strip("\n")
        if s.strip():
            self.fh.write(s + "\n")

    def flush(self) -> None:
        self.fh.flush()


def progress_bar(log_file, total: int, desc: str, *, mininterval: float = 30.0):
    """A tqdm bar written into a job's log, one line per refresh (at most every ``mininterval``
    seconds, plus the first and the last).

    Parameters
    ----------
    log_file : file object
        Where the bar goes (the job log: ``sys.stderr`` inside :func:`job_log`).
    total : int
        Expected number of steps (e.g. ``max_iter``).
    desc : str
        Label.
    """
    from tqdm import tqdm  # tqdm only when a bar is drawn

    return tqdm(total=total, desc=desc, file=_LineWriter(log_file), mininterval=mininterval,
                ascii=True, dynamic_ncols=False, ncols=100)


@contextlib.contextmanager
def progress_callback(alg, log_file, opts: dict, seed: int, log):
    """The progress callable of one run of algorithm ``alg`` in a job: a :func:`progress_bar`
    in the job's log over :meth:`~aimlib.algorithms.Algorithm.progress_total` steps (``None``
    for an algorithm without progress)."""
    total = alg.progress_total(opts)
    if total is None:
        yield None
        return
    with progress_bar(log_file, total, f"{alg.PROGRESS_UNIT}, seed {seed}") as bar:
        yield alg.progress(bar, log)
        bar.total = bar.n  # the bar ends where the run did (the next log line says why)
        bar.refresh()
