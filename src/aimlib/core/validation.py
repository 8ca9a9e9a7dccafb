"""Checks of the model's parameters, each defined once: every library entry point and the
configuration layer call these, so a bad value gets the same one-line message (naming the
parameter) wherever it enters.  Channel-specific checks (``T`` range, ``beta``, ``delta``) are
the channel's own (:mod:`aimlib.channels.base`)."""

from __future__ import annotations

import math

__all__ = ["check_rho", "check_alpha", "check_d", "check_seed", "check_positive"]


def check_positive(value, name: str) -> float:
    """``value`` as a positive finite float, or a ``ValueError`` naming ``name``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive finite number, got {name}={value!r}") \
            from None
    if isinstance(value, bool) or not (v > 0 and math.isfinite(v)):
        raise ValueError(f"{name} must be a positive finite number, got {name}={value!r}")
    return v


def check_rho(rho) -> float:
    """Width ratio ``rho = r / d > 0``."""
    return check_positive(rho, "rho")


def check_alpha(alpha) -> float:
    """Sample ratio ``alpha = n / d^2 > 0``."""
    return check_positive(alpha, "alpha")


def check_d(d) -> int:
    """Embedding dimension, an integer ``>= 2``."""
    if isinstance(d, bool) or not isinstance(d, int | float) or int(d) != d or d < 2:
        raise ValueError(f"d must be an integer >= 2, got d={d!r}")
    return int(d)


def check_seed(seed) -> int:
    """A seed index, a non-negative integer."""
    if isinstance(seed, bool) or not isinstance(seed, int | float) or int(seed) != seed \
            or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got seed={seed!r}")
    return int(seed)
