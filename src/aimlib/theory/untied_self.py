"""Untied self-attention: two exact bounds on the Bayes-optimal error (docs/theory.md §15.4).

With ``S = A + B`` (symmetric and antisymmetric parts, ``(1/d)||A||^2 = (1/d)||B||^2 = 1/2`` for
``S* = K Q^T / sqrt(r d)``), the index ``h_ab = (x_a^T S x_b - delta_ab Tr S) / sqrt(d)`` sees
``A`` through its diagonal and through ``h_ab + h_ba``, and ``B`` only through ``h_ab - h_ba``.
Per sample, the channel's information on the ``T^2`` indices, ``I = E[g g^T]``, splits between
the two parts as ``info_A = sum_e <e, I e>`` over an orthonormal basis of the symmetric
``T x T`` matrices and ``info_B`` over the antisymmetric ones.  Every channel here has ``I``
a multiple of the identity (Gaussian labels) or of the projection ``P`` off each row's constant
(softmax, hardmax: the labels do not see a constant added to a row), so

    info_A / info_B = (T + 1) / (T - 1),

and the prior channel is the rectangular one with noise ``Delta_A = 1 / q_hat_A`` on ``A`` and the
stronger ``Delta_B = 1 / q_hat_B`` on ``B``, ``q_hat_X = 2 alpha info_X``.  That problem is not
rotation invariant and its MMSE is open; the rectangular problems with ``Delta_B`` on both parts
(less information: an upper bound on the error) and with ``Delta_A`` on both (a lower bound) are
exact (§15.1).  In each, the posterior variance splits evenly between the parts, the indices are
independent of variance ``V`` and ``omega`` of variance ``q``: the output side is ``T``
cross-attention rows of ``T`` keys (§15.2), ``T E_row = info_A + info_B``.  Both maps are
increasing, so the bound on the map carries to the fixed points reached from the uninformed
start: ``error_lower <= error <= error_upper``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aimlib.channels import Channel, make_channel
from aimlib.core.validation import check_alpha, check_rho
from aimlib.prior import make_prior
from aimlib.theory.fixed_point import TOL, fixed_point

__all__ = ["UntiedSelfBounds", "information_split", "q_hats", "bounds",
           "perfect_recovery_thresholds", "counting_threshold"]


@dataclass(frozen=True)
class UntiedSelfBounds:
    """The two bounds at one ``(channel, alpha, rho, T)``: ``error_lower <= error_bayes <=
    error_upper`` (docs/theory.md §15.4), each a fixed point from the uninformed start, with its
    convergence and why it stopped; ``noise_ratio = Delta_B / Delta_A = (T + 1) / (T - 1)``."""

    channel: str
    alpha: float
    rho: float
    T: int
    error_lower: float
    error_upper: float
    converged_lower: bool
    converged_upper: bool
    stop_reason_lower: str
    stop_reason_upper: str
    noise_ratio: float

    @property
    def converged(self) -> bool:
        return self.converged_lower and self.converged_upper

    @property
    def width(self) -> float:
        """``error_upper - error_lower``."""
        return self.error_upper - self.error_lower


def information_split(T: int) -> tuple[float, float]:
    """``(info_A, info_B) / E_row``: the information on the symmetric and the antisymmetric part
    per unit of row information, ``((T + 1) / 2, (T - 1) / 2)``, for a channel whose rows do not
    see their constant (softmax, hardmax: ``I = E_row P / (T - 1)``).  A Gaussian channel
    (``I`` a multiple of the identity) splits ``T E_row`` as ``T (T + 1) / 2 : T (T - 1) / 2``:
    the same ratio (:func:`q_hats`)."""
    return (T + 1) / 2.0, (T - 1) / 2.0


def _check_T(T) -> int:
    if isinstance(T, bool) or not float(T).is_integer() or int(T) < 2:
        raise ValueError(f"T must be an integer >= 2 for untied self-attention (at T = 1 the "
                         f"index sees only the symmetric part of S), got T={T!r}")
    return int(T)


def q_hats(ch: Channel, alpha: float, q: float, V: float, T: int) -> tuple[float, float]:
    """``(q_hat_A, q_hat_B) = 2 alpha (info_A, info_B)`` at overlap ``q``, variance ``V``: the
    precisions of the rectangular prior channel on the symmetric and the antisymmetric part."""
    e_row = ch.row_information(q, V, T)
    if ch.name == "gaussian":  # I = identity / (V + Delta): T(T+1)/2 and T(T-1)/2 units
        unit = e_row / T
        return alpha * T * (T + 1) * unit, alpha * T * (T - 1) * unit
    a, b = information_split(T)
    return 2.0 * alpha * a * e_row, 2.0 * alpha * b * e_row


def bounds(channel: str | Channel, alpha: float, rho: float, T: int = 2, *, tol: float = TOL,
           **params) -> UntiedSelfBounds:
    """The lower and upper bound on the Bayes-optimal error of untied self-attention.

    Parameters
    ----------
    channel : str or Channel
        ``"softmax"``, ``"hardmax"`` (``T`` = 2 or 3) or ``"gaussian"``.
    alpha, rho : float
        ``n / d^2`` and ``r / d``.
    T : int
        Tokens per sample, ``>= 2``.
    **params
        The channel's parameter.
    """
    alpha = check_alpha(alpha)
    T = _check_T(T)
    ch = make_channel(channel, T=T, **params)
    pr = make_prior("untied", check_rho(rho))

    def make_map(which: int):
        def F(q: float) -> float:
            V = 1.0 - q
            if V <= 0.0:
                return 1.0
            qh = q_hats(ch, alpha, q, V, T)[which]
            if qh == 0.0:
                return 0.0
            if not qh > 0:
                return math.nan
            return 1.0 - pr.mmse(1.0 / qh)
        return F

    lower = fixed_point(make_map(0), 0.0, 0.0, 1.0, tol=tol)  # the weaker noise on both parts
    upper = fixed_point(make_map(1), 0.0, 0.0, 1.0, tol=tol)  # the stronger noise on both

    def err(q):
        return math.nan if math.isnan(q) else max(1.0 - q, 0.0)

    return UntiedSelfBounds(ch.name, alpha, pr.rho, T, err(lower.q), err(upper.q),
                            lower.converged, upper.converged, lower.stop_reason,
                            upper.stop_reason, (T + 1) / (T - 1))


def perfect_recovery_thresholds(rho: float, T: int) -> tuple[float, float]:
    """The softmax's perfect-recovery thresholds of the lower and the upper bound:
    ``f / (T^2 - 1)`` and ``f / (T - 1)^2``, ``f = 2 rho - rho^2`` (``rho <= 1``, else 1)."""
    T = _check_T(T)
    f = make_prior("untied", check_rho(rho)).mmse_slope()
    return f / (T * T - 1), f / (T - 1) ** 2


def counting_threshold(rho: float, T: int) -> float:
    """``f / (T (T - 1))``: ``T (T - 1)`` combinations per sample against ``2 d r - r^2``
    parameters; it lies between the two bounds' thresholds."""
    T = _check_T(T)
    return make_prior("untied", check_rho(rho)).mmse_slope() / (T * (T - 1))
