"""The hardmax channel (row-wise argmax), the registry's entry: its output function, SE update and
test error for ``T = 2`` (exact, :mod:`aimlib.channels.hardmax.pair`) and ``T = 3, 4`` (Genz's
integrator, :mod:`aimlib.channels.hardmax.orthant`; the SE moment from a table,
:mod:`aimlib.channels.hardmax.moment_table`), docs/theory.md §3.4, §14.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

import numpy as np

from aimlib.channels.base import Channel, TestError
from aimlib.channels.hardmax import cross_row
from aimlib.channels.hardmax.orthant import TMAX_GENERAL
from aimlib.channels.hardmax.pair import (
    comparison_second_moment,
    hardmax_div_kernel,
    hardmax_gout_general,
    hardmax_second_moment,
    pair_column,
    pair_gout,
)
from aimlib.channels.hardmax.prediction import (
    comparison_geometry,
    comparison_matrix,
    row_error_rqmc,
)


def hardmax_output(h: np.ndarray) -> np.ndarray:
    """Row-wise argmax of ``h`` as an integer array of shape ``h.shape[:-1]``."""
    return np.argmax(h, axis=-1).astype(np.int8)


def one_hot(index: np.ndarray, T: int) -> np.ndarray:
    """One-hot rows ``y_ab = 1[b = index_a]`` from argmax indices."""
    return (index[..., None] == np.arange(T)).astype(np.float64)


@dataclass(frozen=True)
class Hardmax(Channel):
    """Hardmax output (row-wise argmax), ``T = 2`` with the exact ``g_out``.

    ``variant="density"`` reproduces the error of the paper's public code (docs/theory.md §7),
    which puts the bivariate normal *density* in place of ``d Phi_2 / d kappa``; it is kept only
    to show that error.
    """

    T: int = 2
    variant: str = "exact"

    name: ClassVar[str] = "hardmax"
    label: ClassVar[str] = "hardmax"
    T_MIN: ClassVar[int] = 2
    T_MAX: ClassVar[int] = TMAX_GENERAL
    VARIANTS: ClassVar[tuple[str, ...]] = ("exact", "density")
    #: measured 0.6 us a sample at T = 2 (benchmarks/README.md, "The output function's cost")
    G_OUT_SECONDS: ClassVar[float] = 1.0e-6
    OMEGA_FREE: ClassVar[bool] = False
    SUPPORTS_CORRELATED: ClassVar[bool] = True
    #: The row-wise argmax of ``lambda h`` is that of ``h`` (docs/theory.md §4.2).
    SCALE_INVARIANT: ClassVar[bool] = True
    LABEL_DTYPE: ClassVar[type] = np.int8
    PREDICTORS: ClassVar[tuple[str, ...]] = ("bayes", "plugin", "argmax")

    @property
    def density(self) -> bool:
        return self.variant == "density"

    def __post_init__(self):
        super().__post_init__()
        if self.T > 2 and self.variant != "exact":
            raise ValueError(f"variant must be 'exact' for hardmax at T={self.T}: the published "
                             "density variant is the paper's T = 2 formula")

    def alpha_bar_factor(self, rho: float) -> float:
        """``alpha_bar = c_T alpha / rho`` (the small-width scale, docs/theory.md §3.5, §14.4):
        ``c_T`` is the information of one sample's labels at no knowledge,
        ``E[sum w g^2]`` at ``q = 0, V = 1``, relative to ``T = 2`` (``c_2 = 1``), so that every
        ``T`` starts to learn at the same ``alpha_bar`` in the small-width limit."""
        if self.T == 2:
            return 1.0 / rho
        return uninformed_information(self.T) / uninformed_information(2) / rho

    def label_shape(self, n: int) -> tuple[int, ...]:
        """Argmax indices, ``(n, T)``."""
        return (n, self.T)

    def labels(self, h: np.ndarray, rng=None) -> np.ndarray:
        return hardmax_output(h)

    def outputs(self, labels: np.ndarray) -> np.ndarray:
        """One-hot rows ``(n, T, T)``."""
        return one_hot(labels, self.T)

    def predict(self, h: np.ndarray) -> np.ndarray:
        return one_hot(hardmax_output(h), self.T)

    def second_moment(self, q: float, V: float) -> float:
        """``E[sum_{a<=b} w_ab g_ab^2]``: the 2-D quadrature at ``T = 2``; at ``T >= 3``
        ``K_T(q / V) / V`` from the tabulated one-variable function of
        :mod:`aimlib.channels.hardmax.moment_table` (labels are blind to the scale of the indices,
        docs/theory.md §14.6; the table's points are randomised QMC over ``omega`` with Genz's
        ``Z_out``, :func:`aimlib.channels.hardmax.se_moments.second_moment`, relative accuracy about
        2e-3), or that RQMC directly where no table exists."""
        if self.T == 2:
            return hardmax_second_moment(q, V, density=self.density)
        # the T >= 3 integrator and tables only when T >= 3 (numba, tables)
        from aimlib.channels.hardmax import moment_table

        if moment_table.has_table(self.T):
            return moment_table.second_moment(self.T, q, V)
        # the T >= 3 integrator and tables only when T >= 3 (numba, tables)
        from aimlib.channels.hardmax import se_moments

        return se_moments.second_moment(self.T, q, V).value

    def q_hat(self, alpha: float, q: float, V: float) -> float:
        """``q_hat = 2 alpha E[sum_{a<=b} w_ab g_ab^2]``."""
        return 2.0 * alpha * self.second_moment(q, V)

    # -------------------------------------------------------------- cross-attention rows
    def row_information(self, q: float, V: float, T_k: int) -> float:
        """``K_{T_k}(q / V) / V`` (:mod:`aimlib.channels.hardmax.cross_row`, exact output
        function only)."""
        self._rows_exact()
        return cross_row.row_information(q, V, T_k)

    def row_labels(self, h: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """The argmax index of each row."""
        return np.argmax(np.asarray(h), axis=-1)

    def row_g_out(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """``y``: the argmax index of each row."""
        self._rows_exact()
        return cross_row.row_g_out(y, omega, V)

    def row_log_z(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        self._rows_exact()
        return cross_row.row_log_z(y, omega, V)

    def _rows_exact(self) -> None:
        if self.density:
            raise ValueError("variant: cross-attention rows have the exact output function "
                             "only, not the published density")

    # -------------------------------------------------------------- token laws (§13)
    def q_hat_tokens(self, alpha: float, q: float, V: float, index) -> float:
        """``q_hat`` under the index law ``index``: the comparisons
        ``D = (h_11 - h_12, h_22 - h_12)`` keep their noise covariance (up to scale, correlation
        ``r``) and their means gain ``diag_extra`` on ``Var omega_aa``
        (:func:`comparison_second_moment`, docs/theory.md §13)."""
        if index.gaussian:
            return self.q_hat(alpha, q, V)
        self._tokens_need_t2()
        _, r, s2 = comparison_geometry(index.corr)
        return 2.0 * alpha * comparison_second_moment(q, V, r, index.diag_extra / s2,
                                                      density=self.density)

    @classmethod
    def g_out_seconds(cls, T: int) -> float:
        """Measured (one thread, ``benchmarks/README.md``): the bivariate-normal kernel at
        ``T = 2``; Genz's rule at ``T >= 3``, 1.2e-4 s per sample at ``T = 3`` and 2.5e-4 at
        ``T = 4``."""
        return GENZ_SECONDS.get(int(T), cls.G_OUT_SECONDS * T * T / 4)

    def se_point_seconds(self) -> float | None:
        """One SE fixed point at ``T >= 3``: milliseconds where ``K_T`` is tabulated (the
        default), else about 15 evaluations of the RQMC second moment (0.8-2 s each at
        ``T = 3``, 12-28 s at ``T = 4``, one thread)."""
        # the T >= 3 integrator and tables only when T >= 3 (numba, tables)
        from aimlib.channels.hardmax import moment_table

        if self.T == 2 or moment_table.has_table(self.T):
            return None
        return SE_FIXED_POINT_SECONDS.get(self.T)

    def _tokens_need_t2(self) -> None:
        if self.T > 2:
            raise ValueError(f"tokens: token laws other than gaussian are implemented for "
                             f"hardmax at T = 2 only, got T={self.T}")

    def check_tokens(self, law) -> None:
        super().check_tokens(law)
        if not law.is_gaussian:
            self._tokens_need_t2()

    def g_out_whitened(self, y: np.ndarray, omega: np.ndarray, V: float,
                       L: np.ndarray) -> np.ndarray:
        """:meth:`g_out` in the whitened index of correlated tokens: the comparisons are
        ``D = A p`` in the pair coordinates ``p = (h~_11, h~_12, h~_22)``, Gaussian given
        ``omega`` with covariance ``V A W A^T`` (``W = diag(2, 1, 2)``), and
        ``g = A^T d log Phi_2 / d D`` (docs/theory.md §13.3)."""
        A = comparison_matrix(L)
        S = A @ np.diag([2.0, 1.0, 2.0]) @ A.T
        p = np.stack([omega[:, 0, 0], omega[:, 0, 1], omega[:, 1, 1]], axis=1)
        m = p @ A.T
        sd1, sd2 = math.sqrt(V * S[0, 0]), math.sqrt(V * S[1, 1])
        r = S[0, 1] / math.sqrt(S[0, 0] * S[1, 1])
        s1 = np.where(y[:, 0, 0] > 0.5, 1.0, -1.0)
        s2 = np.where(y[:, 1, 1] > 0.5, 1.0, -1.0)
        a, b, _ = hardmax_gout_general(s1, s2, np.ascontiguousarray(m[:, 0]),
                                        np.ascontiguousarray(m[:, 1]), sd1, sd2, r,
                                        self.density)
        gp = np.stack([a, b], axis=1) @ A  # (n, 3): g~_11, g~_12, g~_22
        g = np.empty((y.shape[0], 2, 2))
        g[:, 0, 0] = gp[:, 0]
        g[:, 1, 1] = gp[:, 2]
        g[:, 0, 1] = gp[:, 1]
        g[:, 1, 0] = gp[:, 1]
        return g

    def g_out(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """Output function on samples.

        Parameters
        ----------
        y : numpy.ndarray
            Hardmax outputs, shape ``(n, 2, 2)`` (rows one-hot).
        omega : numpy.ndarray
            Means of the indices, shape ``(n, 2, 2)`` symmetric.
        V : float
            Variance parameter.

        Returns
        -------
        numpy.ndarray
            ``g`` of shape ``(n, 2, 2)``, symmetric, with ``g_ab = d log Z / d omega_ab`` in pair
            coordinates (the off-diagonal entry holds ``g_12``).
        """
        if self.T > 2:
            # the T >= 3 integrator and tables only when T >= 3 (numba, tables)
            from aimlib.channels.hardmax import orthant

            return orthant.genz_gout(_argmax(y), omega, V, **AMP_QMC)[0]
        g11, g12, g22, _ = pair_gout(y, omega, V, self.density)
        g = np.empty((y.shape[0], 2, 2))
        g[:, 0, 0] = g11
        g[:, 1, 1] = g22
        g[:, 0, 1] = g12
        g[:, 1, 0] = g12
        return g

    def neg_divergence(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """``sum_{a<=b} w_ab (-d g_ab / d omega_ab)`` per sample (equal to ``sum w g^2`` on
        average for the exact, Bayes-optimal variant: the Nishimori identity); ``T = 2``."""
        if self.T > 2:
            raise ValueError("the hardmax divergence is implemented for T = 2 only (the "
                             "mismatched AMP of the density variant)")
        return hardmax_div_kernel(pair_column(y, 0, 0), pair_column(y, 1, 1),
                                  pair_column(omega, 0, 0), pair_column(omega, 0, 1),
                                  pair_column(omega, 1, 1), float(V), self.density)

    def log_z_out(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """``log Z_out(y | omega, V) = log P(y | omega)`` on samples."""
        if self.T > 2:
            # the T >= 3 integrator and tables only when T >= 3 (numba, tables)
            from aimlib.channels.hardmax import orthant

            return orthant.genz_gout(_argmax(y), omega, V, **AMP_QMC)[1]
        return pair_gout(y, omega, V, False)[3]

    # -------------------------------------------------------------- test error (§10)
    def plugin_test_error(self, m: float, Q: float, Q0: float, predictor: str = "plugin"):
        """Closed form: a row's argmax differs with probability ``arccos(c) / pi``,
        ``c = m / sqrt(Q Q0)``, and a differing one-hot row counts 2."""
        if predictor not in ("plugin", "argmax"):
            raise ValueError(f"predictor={predictor!r} is not a plug-in hardmax predictor")
        if self.T > 2:
            return row_error_rqmc(m, Q, Q0, self.T, predictor)
        c = max(-1.0, min(1.0, m / math.sqrt(Q * Q0)))
        p = math.acos(c) / math.pi  # P(sign u != sign u_hat)
        return TestError(p if predictor == "argmax" else 2.0 * self.T * p, 1e-15, "closed form")

    def bayes_test_error(self, q: float, Q0: float):
        """P(row selects itself | u_hat) = Phi(u_hat / sqrt(3V)); a one-hot row's error is
        ``2 p (1 - p)``."""
        from scipy import special  # scipy only when this runs (its import costs ~0.2 s)

        # the T >= 3 integrator and tables only when T >= 3 (numba, tables)
        from aimlib.channels.base import TestError, normal_rule

        V = max(Q0 - q, 0.0)
        if self.T > 2:
            return row_error_rqmc(q, q, Q0, self.T, "bayes")
        if V == 0.0:
            return TestError(0.0, 1e-15, "closed form")
        x, w = normal_rule()
        p = special.ndtr(math.sqrt(3.0 * q) * x / math.sqrt(3.0 * V))
        return TestError(self.T * 2.0 * float(np.sum(w * p * (1.0 - p))), 1e-10,
                         "quadrature")


#: Seconds per sample of the output function at T >= 3 (Genz, :data:`AMP_QMC`), and of one SE
#: fixed point, measured on one thread (benchmarks/README.md).
GENZ_SECONDS = {3: 1.2e-4, 4: 2.5e-4}


SE_FIXED_POINT_SECONDS = {3: 25.0, 4: 250.0}


#: Genz rule of AMP's output function at T >= 3 (Sobol points per scrambling, scramblings):
#: the relative error of g is about 5e-3 per sample (tests/test_orthant.py), noise that the
#: sum over samples averages out.
AMP_QMC = {"n_points": 64, "n_shifts": 4}


def _argmax(y: np.ndarray) -> np.ndarray:
    return np.argmax(y, axis=-1).astype(np.int8)


@lru_cache(maxsize=8)
def uninformed_information(T: int) -> float:
    """``E[sum_{a<=b} w_ab g_ab^2]`` at ``q = 0``, ``V = 1``: the labels' information per sample
    with nothing known (``omega = 0``; exact 2-D quadrature at ``T = 2``, a fine Genz rule summed
    over the patterns at ``T >= 3``, relative accuracy about 1e-5)."""
    if T == 2:
        return hardmax_second_moment(0.0, 1.0)
    # the T >= 3 integrator and tables only when T >= 3 (numba, tables)
    from aimlib.channels.hardmax import se_moments

    return se_moments.second_moment(T, 0.0, 1.0, inner=se_moments.UNINFORMED_INNER).value
