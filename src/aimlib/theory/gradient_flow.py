"""The conjectured perfect-recovery threshold of gradient flow with a student wider than the
teacher (docs/theory.md §16).

For the noiseless quadratic network (the Gaussian channel at ``T = 1``, ``Delta = 0``,
``alpha = n / d^2``), a teacher of width ratio ``kappa* = r / d`` and a student of width ratio
``kappa >= kappa*`` trained by gradient flow from an ``O(1)`` initialisation, Martin, Biroli and
Bach (arXiv 2601.10483) conjecture exact recovery above

    alpha_PR(kappa*, kappa) = min{ kappa - kappa^2 / 2, a_inter(kappa*, kappa) },
    a_inter = kappa* - kappa*^2 / 2 + ((1 - kappa*)^2 / 2) int_{max(0, w)}^2 x^2 dsigma(x),

``sigma`` the semicircle law on ``[-2, 2]`` and ``w`` its quantile with
``sigma([w, 2]) = (kappa - kappa*) / (1 - kappa*)``.  With ``x = 2 sin(theta)`` both integrals
are closed forms (§16.1):

    sigma([w, 2])            = (pi - 2 theta - sin(2 theta)) / (2 pi),
    int_w^2 x^2 dsigma(x)    = (pi - 2 theta + sin(4 theta) / 2) / (2 pi),  theta = asin(w / 2).

The first term of the minimum is the student's own dimension (a rank-``kappa d`` symmetric
matrix has ``d^2 (kappa - kappa^2 / 2)`` parameters); the second saturates, once
``kappa - kappa* >= (1 - kappa*) / 2``, at the threshold of the nuclear-norm (convex) relaxation.
At ``kappa = kappa*`` both are the Bayes-optimal threshold ``kappa* - kappa*^2 / 2``.

For ``T >= 2`` tokens each sample gives ``T (T + 1) / 2`` measurements of ``S`` (the pairs
``a <= b``), and the Bayes-optimal threshold is ``(kappa* - kappa*^2 / 2) / (T (T + 1) / 2)``
(docs/theory.md §11).  :func:`threshold_tokens` states the same rescaling of the gradient-flow
threshold as a conjecture (§16.2): the landscape of the square loss depends on the sensing
ensemble through the number of measurements per unit of ``d^2``.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq

__all__ = ["semicircle_tail", "semicircle_tail_second_moment", "semicircle_quantile",
           "intermediate", "threshold", "threshold_tokens", "bayes_threshold", "applies"]


def _check_kappas(kappa_star: float, kappa: float) -> tuple[float, float]:
    ks, k = float(kappa_star), float(kappa)
    if not 0.0 < ks <= 1.0:
        raise ValueError(f"kappa_star must be in (0, 1], got kappa_star={kappa_star!r}")
    if not ks <= k <= 1.0:
        raise ValueError(f"kappa must be in [kappa_star, 1] = [{ks:g}, 1] (a student narrower "
                         f"than the teacher cannot represent it; one wider than d is no wider "
                         f"than d), got kappa={kappa!r}")
    return ks, k


def semicircle_tail(w: float) -> float:
    """``sigma([w, 2])``, the semicircle law's mass above ``w`` (closed form, module docs)."""
    t = math.asin(min(max(w / 2.0, -1.0), 1.0))
    return (math.pi - 2.0 * t - math.sin(2.0 * t)) / (2.0 * math.pi)


def semicircle_tail_second_moment(w: float) -> float:
    """``int_w^2 x^2 dsigma(x)`` (closed form, module docs); 1 at ``w = -2``, 1/2 at 0."""
    t = math.asin(min(max(w / 2.0, -1.0), 1.0))
    return (math.pi - 2.0 * t + 0.5 * math.sin(4.0 * t)) / (2.0 * math.pi)


def semicircle_quantile(mass: float) -> float:
    """``w`` with ``sigma([w, 2]) = mass`` (``mass`` in ``[0, 1]``)."""
    if not 0.0 <= mass <= 1.0:
        raise ValueError(f"mass must be in [0, 1], got {mass!r}")
    if mass == 0.0:
        return 2.0
    if mass == 1.0:
        return -2.0
    return brentq(lambda w: semicircle_tail(w) - mass, -2.0, 2.0, xtol=1e-15, rtol=1e-15)


def bayes_threshold(kappa_star: float, T: int = 1) -> float:
    """The Bayes-optimal perfect-recovery threshold of the noiseless Gaussian channel,
    ``(kappa* - kappa*^2 / 2) / (T (T + 1) / 2)`` (docs/theory.md §11)."""
    ks = float(kappa_star)
    return (ks - ks * ks / 2.0) * 2.0 / (int(T) * (int(T) + 1))


def intermediate(kappa_star: float, kappa: float) -> float:
    """``a_inter(kappa*, kappa)`` (module docs)."""
    ks, k = _check_kappas(kappa_star, kappa)
    if ks == 1.0:
        return 0.5
    w = semicircle_quantile((k - ks) / (1.0 - ks))
    return ks - ks * ks / 2.0 + (1.0 - ks) ** 2 / 2.0 * semicircle_tail_second_moment(max(0.0, w))


def threshold(kappa_star: float, kappa: float) -> float:
    """The conjectured perfect-recovery threshold of gradient flow (``T = 1``),
    ``alpha_PR = min{kappa - kappa^2 / 2, a_inter}`` (module docs; docs/theory.md §16).

    Parameters
    ----------
    kappa_star : float
        The teacher's width ratio ``r / d``, in ``(0, 1]``.
    kappa : float
        The student's, in ``[kappa_star, 1]``.
    """
    ks, k = _check_kappas(kappa_star, kappa)
    return min(k - k * k / 2.0, intermediate(ks, k))


def threshold_tokens(kappa_star: float, kappa: float, T: int) -> float:
    """The conjectured counterpart at ``T`` tokens (docs/theory.md §16.2): ``alpha_PR`` over
    ``T (T + 1) / 2``, the measurements each sample gives."""
    if isinstance(T, bool) or int(T) != T or int(T) < 1:
        raise ValueError(f"T must be an integer >= 1, got T={T!r}")
    return threshold(kappa_star, kappa) * 2.0 / (int(T) * (int(T) + 1))


def applies(channel) -> bool:
    """Whether the conjecture speaks of a channel (an :class:`aimlib.channels.base.Channel`):
    the noiseless Gaussian channel (at ``T = 1`` the conjecture itself, at ``T >= 2`` its
    counterpart :func:`threshold_tokens`).  Softmax and hardmax attention have no such theory,
    and with noise there is no perfect recovery."""
    return channel.name == "gaussian" and float(getattr(channel, "delta", 1.0)) == 0.0
