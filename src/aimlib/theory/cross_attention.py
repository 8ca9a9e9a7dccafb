"""State evolution of cross-attention, with a tied or an untied ``S`` (docs/theory.md §15.2).

Queries ``x_a`` (``a = 1..T_q``) and keys ``z_b`` (``b = 1..T_k``) come from two independent token
sequences and ``h_ab = x_a^T S z_b / sqrt(d)``.  Every index is a generic measurement of ``S`` and
the ``T_q T_k`` indices of a sample are independent given ``omega`` (variance ``Q0`` each under the
prior), so the output function factorises over query rows, each the channel applied over its
``T_k`` keys (:meth:`aimlib.channels.Channel.row_information`).  The fixed point is

    q = Q0 - mmse(1 / q_hat),   q_hat = w alpha T_q E[sum_b g_b^2](q, Q0 - q),

with the prior's own MMSE (the rectangular one for the untied prior, i.i.d. noise; the tied one,
GOE noise, for the tied prior) and ``w = 2`` for a symmetric ``S`` (each measurement informs the
``d (d + 1) / 2`` free entries of a symmetric matrix; the tied self-attention's off-diagonal
indices carry the same factor), ``w = 1`` for the untied one.
"""

from __future__ import annotations

import math

import numpy as np

from aimlib.channels import Channel, make_channel
from aimlib.core.validation import check_alpha, check_rho
from aimlib.prior import Prior, make_prior
from aimlib.theory.fixed_point import TOL, fixed_point
from aimlib.theory.state_evolution import INFORMED_V, SEResult

__all__ = ["weight", "q_hat", "solve", "curve", "one_step", "perfect_recovery_threshold",
           "counting_threshold"]


def _check_tokens(T_q, T_k) -> tuple[int, int]:
    out = []
    for name, v in (("T_q", T_q), ("T_k", T_k)):
        if isinstance(v, bool) or not float(v).is_integer() or int(v) < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {name}={v!r}")
        out.append(int(v))
    return out[0], out[1]


def weight(prior: Prior) -> float:
    """``w``: 2 for a symmetric ``S*``, 1 for one that is not (module docs)."""
    return 2.0 if prior.SYMMETRIC else 1.0


def q_hat(channel: Channel, alpha: float, q: float, V: float, prior: Prior, T_q: int) -> float:
    """The output update ``w alpha T_q E[sum_b g_b^2](q, V)`` over rows of ``channel.T`` keys."""
    return weight(prior) * alpha * T_q * channel.row_information(q, V, channel.T)


def _setup(channel, rho, T_q, T_k, prior, params):
    T_q, T_k = _check_tokens(T_q, T_k)
    if T_k < 2:
        raise ValueError(f"T_k must be >= 2 (one key reveals nothing), got T_k={T_k!r}")
    ch = make_channel(channel, T=T_k, **params)
    pr = make_prior(prior, check_rho(rho))
    return ch, pr, T_q


def _map(ch: Channel, alpha: float, pr: Prior, T_q: int):
    Q0, q0 = pr.second_moment, pr.mean_overlap

    def F(q: float) -> float:
        V = Q0 - q
        if V <= 0.0:
            return Q0
        qh = q_hat(ch, alpha, q, V, pr, T_q)
        if qh == 0.0:
            return q0
        if not qh > 0:
            return math.nan
        return Q0 - pr.mmse(1.0 / qh)

    return F


def solve(channel: str | Channel, alpha: float, rho: float, *, T_q: int = 2, T_k: int = 2,
          prior: str | Prior | None = "untied", tol: float = TOL, **params) -> SEResult:
    """The cross-attention SE fixed point at one ``alpha`` from the uninformed start (the prior's
    mean, ``q0``) and from an informed one near ``Q0``.

    Parameters
    ----------
    channel : str or Channel
        ``"softmax"``, ``"hardmax"`` (``T_k`` = 2 or 3) or ``"gaussian"``, applied over the keys of
        each query row; a channel object's ``T`` must be ``T_k``.
    alpha, rho : float
        ``n / d^2`` and ``r / d``.
    T_q, T_k : int
        Query and key tokens per sample (``T_q >= 1``, ``T_k >= 2``).
    prior : str or Prior
        ``"untied"`` (default) or ``"tied"``.
    **params
        The channel's parameter (``beta``, ``delta``).

    Returns
    -------
    SEResult
        Its ``T`` is ``T_k``.
    """
    alpha = check_alpha(alpha)
    ch, pr, T_q = _setup(channel, rho, T_q, T_k, prior, params)
    F = _map(ch, alpha, pr, T_q)
    Q0 = pr.second_moment
    unf = fixed_point(F, pr.mean_overlap, pr.mean_overlap, Q0, tol=tol)
    inf = fixed_point(F, Q0 * (1.0 - INFORMED_V), pr.mean_overlap, Q0, tol=tol)

    def err(q):
        return math.nan if math.isnan(q) else max(Q0 - q, 0.0)

    V = Q0 - unf.q
    qh = math.nan if math.isnan(unf.q) else (math.inf if V <= 0 else
                                              q_hat(ch, alpha, unf.q, V, pr, T_q))
    return SEResult(channel=ch.name, alpha=alpha, rho=pr.rho, T=ch.T, param=ch.param_value,
                    error=err(unf.q), q=unf.q, q_hat=qh, iterations=unf.iterations,
                    converged=unf.converged, error_informed=err(inf.q), q_informed=inf.q,
                    iterations_informed=inf.iterations, converged_informed=inf.converged,
                    stop_reason=unf.stop_reason, stop_reason_informed=inf.stop_reason)


def one_step(channel: str | Channel, alpha: float, rho: float, *, T_q: int = 2, T_k: int = 2,
             prior: str | Prior | None = "untied", **params) -> float:
    """The spectral estimator's error predicted by one SE step from the prior's mean
    (docs/theory.md §4.1, §15.3): ``mmse(1 / q_hat)`` at ``q = q0``, ``V = Q0 - q0``."""
    alpha = check_alpha(alpha)
    ch, pr, T_q = _setup(channel, rho, T_q, T_k, prior, params)
    qh = q_hat(ch, alpha, pr.mean_overlap, pr.variance, pr, T_q)
    if not qh >= 0:
        return math.nan
    return float(pr.mmse(math.inf if qh == 0 else 1.0 / qh))


def curve(channel: str | Channel, alphas, rho: float, **kwargs) -> list[SEResult]:
    """:func:`solve` at each of ``alphas``."""
    return [solve(channel, float(a), rho, **kwargs) for a in np.atleast_1d(alphas)]


def perfect_recovery_threshold(channel: str | Channel, rho: float, *, T_q: int = 2,
                               T_k: int = 2, prior: str | Prior | None = "untied",
                               **params) -> float | None:
    """``alpha`` from which the error is 0: ``mmse(Delta) / Delta`` decreases from its slope ``f``
    at 0, so ``V = 0`` is the only fixed point once ``w alpha T_q V E[sum g^2] >= f`` as
    ``V -> 0``.  Softmax: ``V E[sum g^2] = T_k - 1``; the noiseless Gaussian channel: ``T_k``;
    hardmax and a noisy Gaussian channel never reach 0 (``None``)."""
    ch, pr, T_q = _setup(channel, rho, T_q, T_k, prior, params)
    per_row = {"softmax": ch.T - 1}
    if ch.name == "gaussian" and ch.param_value == 0.0:
        per_row["gaussian"] = ch.T
    if ch.name not in per_row:
        return None
    return pr.mmse_slope() / (weight(pr) * T_q * per_row[ch.name])


def counting_threshold(rho: float, *, T_q: int = 2, T_k: int = 2,
                       prior: str | Prior | None = "untied") -> float:
    """``alpha`` at which the softmax labels' combinations equal the teacher's parameters:
    ``T_q (T_k - 1)`` per sample against ``2 d r - r^2`` (untied) or ``d r - r^2 / 2`` (tied)
    parameters, for ``rho <= 1`` (``d^2`` or ``d^2 / 2`` above)."""
    T_q, T_k = _check_tokens(T_q, T_k)
    rho = check_rho(rho)
    pr = make_prior(prior, rho)
    params = (2 * rho - rho * rho if rho <= 1 else 1.0) / (1.0 if not pr.SYMMETRIC else 2.0)
    return params / (T_q * (T_k - 1))
