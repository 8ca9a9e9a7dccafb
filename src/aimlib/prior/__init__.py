"""Priors of the teacher matrix ``S*`` and their denoising problem (docs/theory.md §2).

:data:`PRIORS` is the registry, ``{name: Prior subclass}``; :func:`make_prior` makes one prior
object for a width ratio, once, and the library passes it down (state evolution, AMP, the
spectral estimator, the teacher's sampling).  The paper's prior is ``"tied"``
(:class:`aimlib.prior.wishart.Tied`, ``S* = W W^T / sqrt(r d)``), the default everywhere.

The functions of this namespace take ``(delta, rho)`` and a ``prior`` name (default
``"tied"``): ``aimlib.prior.mmse(0.1, 0.5)`` is the tied prior's MMSE at ``Delta = 0.1``,
``aimlib.prior.mmse(0.1, 0.5, prior="untied")`` the untied one's
(:class:`aimlib.prior.rectangular.Untied`, ``S* = K Q^T / sqrt(r d)``, denoised through its
singular values).  The
tied prior's own numerics (its cubic, the large-noise series, the scale of a hardmax posterior)
are in :mod:`aimlib.prior.wishart`.
"""

from __future__ import annotations

import numpy as np

from aimlib.prior.interface import Prior, divided_differences
from aimlib.prior.rectangular import Untied
from aimlib.prior.wishart import (
    LARGE_DELTA,
    Tied,
    mmse_large_delta,
    mu3_integral,
    rie,
    rie_eigenvalues,
    rie_slopes,
    scale_floor,
    scale_posterior_trace,
)

__all__ = ["PRIORS", "DEFAULT", "Prior", "make_prior", "self_attention_prior", "mmse",
           "mmse_slope", "second_moment", "support", "density", "stieltjes", "denoise",
           "divided_differences", "LARGE_DELTA",
           "mmse_large_delta", "mu3_integral", "rie", "rie_eigenvalues", "rie_slopes",
           "scale_floor", "scale_posterior_trace"]

#: The registry: name -> prior class.
PRIORS: dict[str, type[Prior]] = {
    "tied": Tied,
    "untied": Untied,
}

#: The paper's prior.
DEFAULT = "tied"


def make_prior(prior: str | Prior | None = None, rho: float | None = None) -> Prior:
    """A prior object: ``prior`` itself if it is one (``rho``, if given, must be its own), else
    ``PRIORS[prior](rho)`` (``None``: the tied prior).  ``ValueError`` naming the known priors
    for an unknown name."""
    if isinstance(prior, Prior):
        if rho is not None and float(rho) != prior.rho:
            raise ValueError(f"rho={rho!r} differs from the prior's rho={prior.rho!r}")
        return prior
    name = DEFAULT if prior is None else prior
    cls = PRIORS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"prior must be one of {', '.join(map(repr, PRIORS))}, got "
                         f"prior={prior!r}")
    if rho is None:
        raise ValueError("a prior needs its width ratio rho")
    return cls(rho)


def self_attention_prior(prior: str | Prior | None = None, rho: float | None = None) -> Prior:
    """:func:`make_prior` for the tied self-attention model, which needs a symmetric ``S*``:
    ``ValueError`` naming the key ``prior`` for one that is not (the untied prior, whose
    attention models are not implemented yet; its denoising problem is, here)."""
    pr = make_prior(prior, rho)
    if not pr.SYMMETRIC:
        raise ValueError(f"prior={pr.name!r}: the attention models with this prior's S* are "
                         "not implemented yet (its denoising problem is: aimlib.prior.mmse("
                         f"delta, rho, prior={pr.name!r})); use prior='tied'")
    return pr


def mmse(delta, rho: float, prior: str | Prior = DEFAULT):
    """The prior's MMSE ``(1/d) E||E[S*|Y] - S*||_F^2`` at noise variance(s) ``delta >= 0``
    (a float for a scalar; ``inf`` gives the prior's variance)."""
    return make_prior(prior, rho).mmse(delta)


def mmse_slope(rho: float, prior: str | Prior = DEFAULT) -> float:
    """``lim mmse(Delta) / Delta`` as ``Delta -> 0`` (the tied prior: ``2 rho - rho^2`` for
    ``rho <= 1``, else 1)."""
    return make_prior(prior, rho).mmse_slope()


def second_moment(rho: float, prior: str | Prior = DEFAULT) -> float:
    """``Q0 = lim (1/d) E Tr S*^2`` (the tied prior: ``1 + rho``)."""
    return make_prior(prior, rho).second_moment


def support(delta: float, rho: float, prior: str | Prior = DEFAULT) -> np.ndarray:
    """The support of the spectral density of ``Y = S* + sqrt(delta) Z``, one row per interval."""
    return make_prior(prior, rho).support(delta)


def density(x, delta: float, rho: float, prior: str | Prior = DEFAULT) -> np.ndarray:
    """The spectral density of ``Y = S* + sqrt(delta) Z`` at ``x``."""
    return make_prior(prior, rho).density(x, delta)


def stieltjes(x, delta: float, rho: float, prior: str | Prior = DEFAULT) -> np.ndarray:
    """The Stieltjes transform of the density of ``Y`` on the real axis."""
    return make_prior(prior, rho).stieltjes(x, delta)


def denoise(Y: np.ndarray, delta: float, rho: float, prior: str | Prior = DEFAULT) -> np.ndarray:
    """The prior's optimal rotation-invariant estimate of ``S*`` from ``Y``."""
    return make_prior(prior, rho).denoise(Y, delta)
