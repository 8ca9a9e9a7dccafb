"""One identity checked on numbers: what :mod:`aimlib.channels.identities` and
:mod:`aimlib.prior.verification` return."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Check"]


@dataclass(frozen=True)
class Check:
    """One identity: ``left`` against ``right``, equal within ``tolerance`` (five standard
    errors of Monte Carlo sides, or a quadrature's or finite difference's error)."""

    name: str
    left: float
    right: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return bool(abs(self.left - self.right) <= self.tolerance)

    def __str__(self) -> str:
        return (f"{self.name}: {self.left:.6g} against {self.right:.6g} (tolerance "
                f"{self.tolerance:.2g}): {'ok' if self.ok else 'FAILS'}")
