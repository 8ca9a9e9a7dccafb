"""Test error on fresh samples, from the overlaps of an estimate (docs/theory.md §10).

For a fresh sample the teacher's pair indices ``h_ab`` and those of an estimate ``S_hat``,
``h_hat_ab``, are jointly Gaussian as ``d -> infinity``, independent across pairs ``a <= b``,
with ``Var h = w Q0``, ``Var h_hat = w Q`` and ``Cov(h, h_hat) = w m`` (``w_aa = 2``,
``w_ab = 1``; ``m = (1/d) Tr(S_hat S*)``, ``Q = (1/d) ||S_hat||_F^2``).  The test error is the
label-space error ``E ||y(X; S*) - prediction||_F^2`` per sample:

* ``"plugin"``: the prediction is ``y(X; S_hat)``;
* ``"bayes"``: the prediction is ``E[y(X; S*) | data]``.  At the Bayes-optimal fixed point
  ``m = Q = q`` and, given ``h_hat``, ``h`` is Gaussian with mean ``h_hat`` and variance
  ``w V`` (``V = Q0 - q``), so the error is ``E ||y(h)||^2 - E ||E[y(h) | h_hat]||^2``;
* ``"argmax"`` (hardmax): the probability that a row's predicted argmax differs from the
  teacher's.

At ``T = 2`` each row depends on one difference ``u = h_aa - h_ab`` (variance ``3 Q0``; the
estimate's ``u_hat`` has variance ``3 Q`` and covariance ``3 m``), so everything is a one- or
two-dimensional Gaussian integral, done by a trapezoid rule on the real line (hardmax: closed
forms).
For softmax and hardmax at ``T > 2`` rows are ``T``-dimensional: randomised quasi-Monte Carlo
(scrambled Sobol points with fixed seeds), with the spread over scramblings as the error
estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aimlib.channels import Channel, make_channel
from aimlib.channels.base import NORMAL_RANGE, NORMAL_STEP, TestError, normal_rule
from aimlib.core.validation import check_rho

__all__ = ["TestError", "Evaluation", "from_overlaps", "bayes", "evaluate", "normal_rule",
           "PREDICTORS", "NORMAL_STEP", "NORMAL_RANGE"]

#: Every predictor some channel has (``Channel.PREDICTORS`` says which ones each has).
PREDICTORS = ("bayes", "plugin", "argmax")
#: (The trapezoid rule for Gaussian integrals, :func:`normal_rule`, and :class:`TestError` live in
#: :mod:`aimlib.channels.base`, next to the channels whose test errors use them.)


def _channel(channel: str | Channel, T: int | None, predictor: str, **params) -> Channel:
    """The channel object, with the predictor checked against the ones it has."""
    ch = make_channel(channel, T=T, **params)
    if predictor not in ch.PREDICTORS:
        raise ValueError(f"predictor must be one of {ch.PREDICTORS} for the {ch.name} channel, "
                         f"got predictor={predictor!r}")
    return ch


def _check_overlaps(m: float, Q: float, rho: float, Q0: float | None = None) -> float:
    Q0 = 1.0 + check_rho(rho) if Q0 is None else float(Q0)
    if not Q > 0:
        raise ValueError(f"Q must be > 0, got Q={Q!r}")
    if not m * m <= Q * Q0 * (1 + 1e-12):
        raise ValueError(f"overlaps need m^2 <= Q Q0, got m={m!r}, Q={Q!r}, Q0={Q0!r}")
    return Q0


def from_overlaps(channel: str | Channel, m: float, Q: float, rho: float,
                  T: int | None = None, *, predictor: str = "plugin", Q0: float | None = None,
                  **params) -> TestError:
    """Test error of the plug-in predictor ``y(X; S_hat)`` of any estimate with overlaps
    ``m = (1/d) Tr(S_hat S*)`` and ``Q = (1/d) ||S_hat||^2`` (``predictor="plugin"``), or, for
    hardmax, the probability that a row's argmax differs (``predictor="argmax"``).  ``Q0`` is
    the teacher's ``(1/d) ||S*||^2``, by default its large-d value ``1 + rho`` (pass the
    measured one for a given teacher at finite d).  The integral is the channel's
    (:meth:`aimlib.channels.Channel.plugin_test_error`)."""
    if predictor == "bayes":
        raise ValueError("predictor='bayes' needs the posterior: use generalisation.bayes")
    ch = _channel(channel, T, predictor, **params)
    Q0 = _check_overlaps(m, Q, rho, Q0)
    return ch.plugin_test_error(m, Q, Q0, predictor)


def bayes(channel: str | Channel, q: float, rho: float, T: int | None = None, *,
          predictor: str = "bayes", **params) -> TestError:
    """Test error of the Bayes-optimal estimator whose overlap is ``q`` (``m = Q = q``):
    ``predictor="bayes"`` (posterior-mean prediction), ``"plugin"`` (``y(X; S_hat)`` with
    ``S_hat`` the posterior mean) or, hardmax, ``"argmax"``."""
    ch = _channel(channel, T, predictor, **params)
    Q0 = _check_overlaps(q, q, rho)
    if predictor != "bayes":
        return ch.plugin_test_error(q, q, Q0, predictor)
    return ch.bayes_test_error(q, Q0)


#: Fresh samples on which :func:`evaluate` measures a test error.
N_TEST = 10_000


@dataclass(frozen=True)
class Evaluation:
    """An estimate measured on fresh samples, next to the Gaussian prediction from its overlaps.

    Attributes
    ----------
    m, Q, Q0 : float
        Overlaps of the estimate with the teacher, its squared norm, the teacher's.
    measured, measured_sem : float
        Mean plug-in test error over the fresh samples and its standard error.
    predicted : float
        :func:`from_overlaps` at ``(m, Q)`` with the teacher's own ``Q0``.
    """

    m: float
    Q: float
    Q0: float
    measured: float
    measured_sem: float
    predicted: float


def evaluate(data, S_hat: np.ndarray, n_test: int = N_TEST,
             rng: np.random.Generator | None = None) -> Evaluation:
    """Measure the plug-in test error of ``S_hat`` on ``n_test`` fresh samples of ``data``'s
    teacher (by default drawn from the data's own seed, spawn key 3, so runs are reproducible),
    and predict it from the estimate's overlaps."""
    if rng is None:
        rng = np.random.default_rng(np.random.SeedSequence(list(data.token_entropy),
                                                           spawn_key=(3,)))
    m, Q, Q0 = data.overlaps(S_hat)
    ch = data.ch
    errs = data.test_errors(S_hat, int(n_test), rng)
    pred = TestError(math.nan, math.nan, "")
    # the prediction is the Gaussian-token one (docs/theory.md §10); other token laws change the
    # law of the diagonal indices (§13); hardmax beyond T = 2 is a randomised QMC (§14.5); it
    # is derived for the paper's tied self-attention only (NaN in the cells of §15)
    if m * m <= Q * Q0 and Q > 0 and data.token_law.is_gaussian and data.tied_self:
        try:
            pred = ch.plugin_test_error(m, min(Q, 1e12), Q0, "plugin")
        except NotImplementedError:
            pass
    return Evaluation(m, Q, Q0, float(errs.mean()), float(errs.std(ddof=1) / math.sqrt(len(errs))),
                      pred.value)
