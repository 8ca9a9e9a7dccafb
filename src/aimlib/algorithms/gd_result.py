"""What a GD run returns (:class:`GDResult`) and why each initialisation stopped
(:data:`STOP_REASONS`, documented in :mod:`aimlib.algorithms.gd`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from aimlib.algorithms.result import Result

__all__ = ["GDResult", "STOP_REASONS"]

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
        import xarray as xr  # xarray only when a dataset is built (the workflow parses without it)

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
