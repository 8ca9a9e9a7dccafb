"""What every algorithm's result has, in the spirit of scipy's ``OptimizeResult``: ``error``,
``converged``, ``stop_reason`` (one of its class's ``STOP_REASONS``), ``iterations``, a
``message`` in words, and ``to_dataset()`` (the job's netCDF).  ``tests/test_algorithms.py``
checks the protocol on every entry of the registry."""

from __future__ import annotations

from typing import ClassVar

__all__ = ["Result"]


class Result:
    """Base of :class:`aimlib.algorithms.amp.AMPResult`, :class:`aimlib.algorithms.gd.GDResult`
    and :class:`aimlib.algorithms.spectral.SpectralResult`.  A subclass (a dataclass) provides
    ``error``, ``converged``, ``stop_reason`` and ``iterations`` (fields or properties),
    ``STOP_REASONS``, ``REASON_TEXT`` (``{reason: words}``), ``ALGORITHM`` and ``UNIT``."""

    ALGORITHM: ClassVar[str] = ""
    #: What ``iterations`` counts.
    UNIT: ClassVar[str] = "iterations"
    STOP_REASONS: ClassVar[tuple[str, ...]] = ()
    REASON_TEXT: ClassVar[dict[str, str]] = {}

    error: float
    converged: bool
    stop_reason: str
    iterations: int

    @property
    def success(self) -> bool:
        """``converged``, under scipy's name."""
        return bool(self.converged)

    @property
    def message(self) -> str:
        """The outcome in one sentence: ``"AMP converged after 34 iterations: error
        0.2156"``."""
        why = self.REASON_TEXT.get(self.stop_reason, self.stop_reason)
        return (f"{self.ALGORITHM} {why} after {self.iterations} {self.UNIT}: error "
                f"{self.error:.6g}")

    def to_dataset(self):
        raise NotImplementedError
