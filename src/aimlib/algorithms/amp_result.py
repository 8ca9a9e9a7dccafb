"""What an AMP run returns (:class:`AMPResult`) and why it stopped
(:data:`STOP_REASONS`, documented in :mod:`aimlib.algorithms.amp`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import xarray as xr

from aimlib.algorithms.result import Result

__all__ = ["AMPResult", "STOP_REASONS"]

#: Reasons an attempt stops (``AMPResult.stop_reason``; :mod:`aimlib.algorithms.amp`).
STOP_REASONS = ("converged", "stalled", "diverged", "nan", "max_iter", "inconsistent")


@dataclass
class AMPResult(Result):
    """Outcome of an AMP run (:class:`aimlib.algorithms.result.Result`).

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
    stop_reason : str
        Why the reported attempt stopped, one of :data:`STOP_REASONS`.
    error_mean, error_std : float
        Mean and standard deviation of the error over the last ``STALL_WINDOW`` iterations of the
        reported attempt (for a run that never settles, its wandering band).
    consistency : float
        Ground-truth-free Nishimori residual ``|(1/d)||S_hat||^2 - (Q0 - V)| / Q0`` of the
        reported estimate.
    total_iterations : int
        Iterations over all attempts (the work spent).
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
    stop_reason: str
    error_mean: float
    error_std: float
    consistency: float
    total_iterations: int
    history: dict = field(repr=False)
    S_hat: np.ndarray = field(repr=False)

    ALGORITHM: ClassVar[str] = "AMP"
    STOP_REASONS: ClassVar[tuple[str, ...]] = STOP_REASONS
    REASON_TEXT: ClassVar[dict[str, str]] = {
        "converged": "converged", "stalled": "stalled (its step stopped falling)",
        "diverged": "diverged", "nan": "hit a NaN", "max_iter": "spent its iteration budget",
        "inconsistent": "reached a point that fails the Nishimori check"}

    def to_dataset(self) -> xr.Dataset:
        """The run as an ``xarray.Dataset``: scalars, and histories on ``iteration``."""
        h = self.history
        return xr.Dataset(
            {
                "error": ((), self.error),
                "converged": ((), np.int8(self.converged)),
                "stop_reason": ((), np.int8(STOP_REASONS.index(self.stop_reason))),
                "iterations": ((), np.int64(self.iterations)),
                "total_iterations": ((), np.int64(self.total_iterations)),
                "q_hat": ((), self.q_hat),
                "damping_used": ((), self.damping),
                "restarts": ((), np.int64(self.restarts)),
                "error_mean": ((), self.error_mean),
                "error_std": ((), self.error_std),
                "consistency": ((), self.consistency),
                "error_history": ("iteration", np.asarray(h["error"], dtype=np.float64)),
                "q_hat_history": ("iteration", np.asarray(h["q_hat"], dtype=np.float64)),
                "step_history": ("iteration", np.asarray(h["step"], dtype=np.float64)),
            },
            coords={"iteration": np.arange(1, len(h["error"]) + 1)},
        )
