"""What a prior of the registry provides (:data:`aimlib.prior.PRIORS`).

A prior is the law of the teacher matrix ``S*`` (``d x d``; symmetric unless ``SYMMETRIC`` is
false, as for the untied prior).  Everything the theory
and the algorithms need of it goes through one object, made once for a width ratio ``rho`` and
passed down (docs/theory.md §2):

- its moments: ``second_moment`` ``Q0 = lim (1/d) E Tr S*^2`` and ``mean_overlap``
  ``q0 = lim (1/d) ||E S*||^2`` (the overlap SE and AMP start from), the mean itself
  (:meth:`Prior.mean`);
- the denoising problem ``Y = S* + sqrt(Delta) Z`` (:meth:`Prior.noise`: ``Z`` GOE, off-diagonal
  variance ``1/d``, or i.i.d. ``N(0, 1/d)`` for a prior that is not symmetric):
  the spectral density of ``Y`` (:meth:`Prior.support`, :meth:`Prior.density`,
  :meth:`Prior.stieltjes`), the MMSE (:meth:`Prior.mmse`) and its noiseless slope, and the
  optimal rotation-invariant denoiser, a shrinkage of the eigenvalues (:meth:`Prior.shrink`), with
  its slope, from which the denoiser's divergence is built (:func:`divided_differences`);
- the posterior mean's trace for labels blind to the scale of ``S*``, where it is exact
  (:meth:`Prior.posterior_trace`);
- sampling: :meth:`Prior.sample` draws the teacher's factor from a generator and
  :meth:`Prior.matrix` makes ``S*`` from it.

A new prior is one subclass and one registry line; ``tests/test_prior_registry.py`` runs one
(a Gaussian, GOE, prior) through SE, AMP and the command line.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from aimlib.core.validation import check_rho

__all__ = ["Prior", "ModulePrior", "divided_differences"]


def divided_differences(x: np.ndarray, f: np.ndarray, df: np.ndarray) -> np.ndarray:
    """``(f_k - f_l) / (x_k - x_l)``, with ``(df_k + df_l) / 2`` where ``x_k = x_l``: the kernel of
    the divergence of a spectral function ``F(Y) = sum_k f(l_k) u_k u_k^T`` over the symmetric
    matrices, ``sum_k f'(l_k) + sum_{k<l} (f_k - f_l) / (l_k - l_l)`` (docs/theory.md §4, §8)."""
    dx = x[:, None] - x[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.abs(dx) > 1e-12, (f[:, None] - f[None, :]) / dx,
                        0.5 * (df[:, None] + df[None, :]))


class Prior:
    """A prior of the teacher matrix at width ratio ``rho`` (module docs).  Subclasses set
    ``name`` and ``label`` and implement the members that raise ``NotImplementedError``."""

    name: ClassVar[str] = ""
    #: Short description (the CLI's help, legends).
    label: ClassVar[str] = ""
    #: ``S* = W W^T / sqrt(r d)`` with a ``d x r`` factor that GD can fit.
    FACTORISED: ClassVar[bool] = False
    #: Whether it takes non-Gaussian tokens (their index law needs the prior's mean trace).
    TOKEN_LAWS: ClassVar[bool] = False
    #: ``S*`` symmetric, observed in GOE noise (the tied self-attention model); ``False``: a
    #: square matrix observed in i.i.d. noise, denoised through its singular values.
    SYMMETRIC: ClassVar[bool] = True

    def __init__(self, rho: float):
        self.rho = check_rho(rho)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rho={self.rho!r})"

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.rho == self.rho

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.rho))

    # ------------------------------------------------------------------ moments
    @property
    def second_moment(self) -> float:
        """``Q0 = lim (1/d) E Tr S*^2``."""
        raise NotImplementedError

    @property
    def mean_overlap(self) -> float:
        """``q0 = lim (1/d) ||E S*||_F^2``: the overlap of the prior's mean, SE's uninformed
        start."""
        raise NotImplementedError

    @property
    def variance(self) -> float:
        """``Q0 - q0``: what the prior's mean leaves unknown (the MMSE at infinite noise), the
        variance AMP and the spectral estimator start from."""
        return self.second_moment - self.mean_overlap

    def mean(self, d: int) -> np.ndarray:
        """``E S*`` at dimension ``d``: AMP's first estimate."""
        raise NotImplementedError

    def width(self, d: int) -> int:
        """Columns ``r`` of the teacher's factor at dimension ``d``."""
        return max(1, int(round(self.rho * int(d))))

    # ------------------------------------------------------------------ denoising
    def mmse(self, delta):
        """``lim (1/d) E||E[S*|Y] - S*||^2`` at noise variance(s) ``delta >= 0`` (``inf``: the
        prior's variance ``Q0 - q0``); a float for a scalar."""
        raise NotImplementedError

    def mmse_slope(self) -> float:
        """``lim mmse(Delta) / Delta`` as ``Delta -> 0``: the fraction of free parameters, and
        the noiseless perfect-recovery threshold of the linear channels (docs/theory.md §3)."""
        raise NotImplementedError

    def support(self, delta: float) -> np.ndarray:
        """The support of the spectral density of ``Y``, intervals as rows ``[a, b]``."""
        raise NotImplementedError

    def stieltjes(self, x, delta: float) -> np.ndarray:
        """The Stieltjes transform ``g(x - i0)`` of the density of ``Y`` on the real axis."""
        raise NotImplementedError

    def density(self, x, delta: float) -> np.ndarray:
        """The spectral density of ``Y``, ``Im g / pi``."""
        return np.imag(self.stieltjes(x, delta)) / np.pi

    def shrink(self, eigs: np.ndarray, delta: float) -> np.ndarray:
        """The optimal rotation-invariant shrinkage ``xi(l)`` of the eigenvalues of ``Y``."""
        raise NotImplementedError

    def shrink_slopes(self, eigs: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
        """``xi(l)`` and its slope ``xi'(l)`` (central difference, step
        ``1e-6 max(1, max |l|)``): what the denoiser's divergence is built from."""
        eigs = np.asarray(eigs, dtype=np.float64)
        xi = self.shrink(eigs, delta)
        h = 1e-6 * max(1.0, float(np.max(np.abs(eigs))))
        return xi, (self.shrink(eigs + h, delta) - self.shrink(eigs - h, delta)) / (2 * h)

    def denoise(self, Y: np.ndarray, delta: float) -> np.ndarray:
        """The optimal rotation-invariant estimate of ``S*`` from ``Y``:
        ``sum_i xi(l_i) u_i u_i^T``."""
        Y = np.asarray(Y, dtype=np.float64)
        if Y.ndim != 2 or Y.shape[0] != Y.shape[1]:
            raise ValueError(f"Y must be a square matrix, got shape {Y.shape}")
        lam, U = np.linalg.eigh(0.5 * (Y + Y.T))
        return (U * self.shrink(lam, delta)) @ U.T

    def noise(self, d: int, rng: np.random.Generator) -> np.ndarray:
        """A draw of the noise ``Z`` of the denoising problem at dimension ``d``: GOE
        (off-diagonal variance ``1/d``) for a symmetric prior."""
        A = rng.standard_normal((int(d), int(d)))
        return (A + A.T) / np.sqrt(2.0 * d)

    # ------------------------------------------------------------------ scale
    def posterior_trace(self, d: int) -> float | None:
        """The exact trace of the posterior mean when the labels do not see the scale of
        ``S*`` (hardmax), or ``None`` where the prior does not fix it."""
        return None

    # ------------------------------------------------------------------ sampling
    def sample(self, d: int, rng: np.random.Generator) -> np.ndarray:
        """The teacher's factor at dimension ``d``, drawn from ``rng``."""
        raise NotImplementedError

    def matrix(self, factor: np.ndarray) -> np.ndarray:
        """``S*`` from the factor :meth:`sample` drew."""
        raise NotImplementedError


class ModulePrior(Prior):
    """A prior whose denoising numerics are functions of a module, each taking the prior's
    ``rho`` last: ``mmse(delta, rho)``, ``support``, ``stieltjes``, ``density``,
    ``shrink(eigs, delta, rho)`` and ``denoise(Y, delta, rho)`` (the tied and the untied prior)."""

    #: The module holding the functions.
    NUMERICS: ClassVar[object]

    def mmse(self, delta):
        return self.NUMERICS.mmse(delta, self.rho)

    def support(self, delta: float) -> np.ndarray:
        return self.NUMERICS.support(delta, self.rho)

    def stieltjes(self, x, delta: float) -> np.ndarray:
        return self.NUMERICS.stieltjes(x, delta, self.rho)

    def density(self, x, delta: float) -> np.ndarray:
        return self.NUMERICS.density(x, delta, self.rho)

    def shrink(self, eigs: np.ndarray, delta: float) -> np.ndarray:
        return self.NUMERICS.shrink(eigs, delta, self.rho)

    def denoise(self, Y: np.ndarray, delta: float) -> np.ndarray:
        return self.NUMERICS.denoise(Y, delta, self.rho)
