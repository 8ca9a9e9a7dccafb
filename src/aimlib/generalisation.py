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
two-dimensional Gaussian integral, done by Gauss-Hermite quadrature (hardmax: closed forms).
For softmax at ``T > 2`` rows are ``T``-dimensional: randomised quasi-Monte Carlo (scrambled
Sobol points with fixed seeds), with the spread over scramblings as the error estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from . import prior

__all__ = ["TestError", "Evaluation", "from_overlaps", "bayes", "evaluate", "PREDICTORS"]

PREDICTORS = ("bayes", "plugin", "argmax")
#: Gauss-Hermite nodes per dimension (doubling them changes the T = 2 results by < 1e-10 at
#: beta <= 4; tests/test_generalisation.py).
GH_NODES = 120
#: Randomised QMC for T > 2: scramblings and points per scrambling.
QMC_REPEATS = 8
QMC_POINTS = 2**13
QMC_INNER = 2**7


@dataclass(frozen=True)
class TestError:
    """A test error and how it was computed.

    Attributes
    ----------
    value : float
        Mean over fresh samples of the label-space error (or the argmax disagreement).
    abserr : float
        Error estimate: quadrature (about 1e-10) or the QMC standard error.
    method : str
        ``"closed form"``, ``"gauss-hermite"`` or ``"rqmc"``.
    """

    __test__ = False  # not a pytest class
    value: float
    abserr: float
    method: str


def _gh(n: int = GH_NODES):
    x, w = np.polynomial.hermite_e.hermegauss(n)
    return x, w / math.sqrt(2.0 * math.pi)


def _sigmoid(x):
    return special.expit(x)


def _check(channel: str, T: int, beta: float, predictor: str) -> None:
    if channel not in ("softmax", "hardmax"):
        raise ValueError(f"channel must be 'softmax' or 'hardmax', got channel={channel!r}")
    if predictor not in PREDICTORS:
        raise ValueError(f"predictor must be one of {PREDICTORS}, got predictor={predictor!r}")
    if int(T) != T or T < 2:
        raise ValueError(f"T must be an integer >= 2, got T={T!r}")
    if channel == "hardmax" and T != 2:
        raise ValueError(f"hardmax is implemented for T = 2 only, got T={T!r}")
    if channel == "softmax" and predictor == "argmax":
        raise ValueError("predictor='argmax' is the hardmax channel's")
    if not (beta > 0 and math.isfinite(beta)):
        raise ValueError(f"beta must be a positive finite number, got beta={beta!r}")


def _check_overlaps(m: float, Q: float, rho: float, Q0: float | None = None) -> float:
    Q0 = 1.0 + prior._check_rho(rho) if Q0 is None else float(Q0)
    if not Q > 0:
        raise ValueError(f"Q must be > 0, got Q={Q!r}")
    if not m * m <= Q * Q0 * (1 + 1e-12):
        raise ValueError(f"overlaps need m^2 <= Q Q0, got m={m!r}, Q={Q!r}, Q0={Q0!r}")
    return Q0


def from_overlaps(channel: str, m: float, Q: float, rho: float, T: int = 2, beta: float = 1.0,
                  predictor: str = "plugin", *, Q0: float | None = None) -> TestError:
    """Test error of the plug-in predictor ``y(X; S_hat)`` of any estimate with overlaps
    ``m = (1/d) Tr(S_hat S*)`` and ``Q = (1/d) ||S_hat||^2`` (``predictor="plugin"``), or, for
    hardmax, the probability that a row's argmax differs (``predictor="argmax"``).  ``Q0`` is
    the teacher's ``(1/d) ||S*||^2``, by default its large-d value ``1 + rho`` (pass the
    measured one for a given teacher at finite d)."""
    _check(channel, T, beta, predictor)
    if predictor == "bayes":
        raise ValueError("predictor='bayes' needs the posterior: use generalisation.bayes")
    Q0 = _check_overlaps(m, Q, rho, Q0)
    c = max(-1.0, min(1.0, m / math.sqrt(Q * Q0)))
    if channel == "hardmax":
        p = math.acos(c) / math.pi  # P(sign u != sign u_hat)
        if predictor == "argmax":
            return TestError(p, 1e-15, "closed form")
        return TestError(2.0 * T * p, 1e-15, "closed form")  # 2 per row that differs
    if T == 2:
        # u_hat = sqrt(3Q) z1, u = (m/Q) u_hat + sqrt(3 (Q0 - m^2/Q)) z2
        x, w = _gh()
        uh = math.sqrt(3.0 * Q) * x[:, None]
        u = (m / Q) * uh + math.sqrt(max(3.0 * (Q0 - m * m / Q), 0.0)) * x[None, :]
        row = 2.0 * np.sum(w[:, None] * w[None, :] * (_sigmoid(beta * u) - _sigmoid(beta * uh))
                           ** 2)
        return TestError(T * float(row), 1e-10, "gauss-hermite")
    return _softmax_rqmc(m, Q, Q0, T, beta, bayes=False)


def bayes(channel: str, q: float, rho: float, T: int = 2, beta: float = 1.0,
          predictor: str = "bayes") -> TestError:
    """Test error of the Bayes-optimal estimator whose overlap is ``q`` (``m = Q = q``):
    ``predictor="bayes"`` (posterior-mean prediction), ``"plugin"`` (``y(X; S_hat)`` with
    ``S_hat`` the posterior mean) or, hardmax, ``"argmax"``."""
    _check(channel, T, beta, predictor)
    Q0 = _check_overlaps(q, q, rho)
    if predictor != "bayes":
        return from_overlaps(channel, q, q, rho, T, beta, predictor)
    V = max(Q0 - q, 0.0)
    x, w = _gh()
    uh = math.sqrt(3.0 * q) * x
    if channel == "hardmax":
        # P(row selects itself | u_hat) = Phi(u_hat / sqrt(3V)); a one-hot row's error is 2 p (1-p)
        if V == 0.0:
            return TestError(0.0, 1e-15, "closed form")
        p = special.ndtr(uh / math.sqrt(3.0 * V))
        return TestError(T * 2.0 * float(np.sum(w * p * (1.0 - p))), 1e-10, "gauss-hermite")
    if T == 2:
        # E ||y||^2 - E ||E[y | u_hat]||^2 per row: 2 (E[s(u)^2] - E[s_bar(u_hat)^2])
        s_bar = np.sum(w[None, :] * _sigmoid(beta * (uh[:, None] + math.sqrt(3.0 * V)
                                                      * x[None, :])), axis=1)
        s2 = float(np.sum(w * _sigmoid(beta * math.sqrt(3.0 * Q0) * x) ** 2))
        val = max(T * 2.0 * (s2 - float(np.sum(w * s_bar**2))), 0.0)  # 0 at perfect recovery
        return TestError(val, 1e-10, "gauss-hermite")
    return _softmax_rqmc(q, q, Q0, T, beta, bayes=True)


def _row_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_rqmc(m: float, Q: float, Q0: float, T: int, beta: float, *, bayes: bool
                  ) -> TestError:
    """Row error by randomised QMC: one row ``(h_a1 .. h_aT)`` with ``Var h_aa = 2 .``,
    ``Var h_ab = .`` (the other entries of the row), times ``T`` rows."""
    from scipy.stats import qmc

    wvec = np.ones(T)
    wvec[0] = 2.0  # the row's diagonal entry first (the softmax does not care where it is)
    vals = []
    for rep in range(QMC_REPEATS):
        dim = 2 * T
        z = special.ndtri(qmc.Sobol(dim, scramble=True, seed=1000 + rep).random(QMC_POINTS))
        z = np.clip(z, -8.5, 8.5)
        hh = math.sqrt(Q) * np.sqrt(wvec) * z[:, :T]
        if not bayes:
            h = (m / Q) * hh + math.sqrt(max(Q0 - m * m / Q, 0.0)) * np.sqrt(wvec) * z[:, T:]
            d = _row_softmax(beta * h) - _row_softmax(beta * hh)
            vals.append(T * float(np.mean(np.sum(d * d, axis=1))))
            continue
        V = max(Q0 - Q, 0.0)
        h = math.sqrt(Q0) * np.sqrt(wvec) * z[:, :T]
        y2 = float(np.mean(np.sum(_row_softmax(beta * h) ** 2, axis=1)))
        zi = special.ndtri(qmc.Sobol(T, scramble=True, seed=5000 + rep).random(QMC_INNER))
        zi = np.clip(zi, -8.5, 8.5)
        post = hh[:, None, :] + math.sqrt(V) * np.sqrt(wvec) * zi[None, :, :]
        ybar = _row_softmax(beta * post).mean(axis=1)
        vals.append(T * (y2 - float(np.mean(np.sum(ybar * ybar, axis=1)))))
    vals = np.asarray(vals)
    return TestError(float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(len(vals))), "rqmc")


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
    from .model import _outputs, attention_indices

    if rng is None:
        rng = np.random.default_rng(np.random.SeedSequence(list(data.token_entropy),
                                                           spawn_key=(3,)))
    m, Q, Q0 = data.overlaps(S_hat)
    errs = np.empty(int(n_test))
    chunk = 4096
    for lo in range(0, int(n_test), chunk):
        hi = min(int(n_test), lo + chunk)
        X = rng.standard_normal((hi - lo, data.T, data.d))
        y_hat = _outputs(data.channel, attention_indices(X, S_hat), data.beta, data.T)
        y = _outputs(data.channel, attention_indices(X, data.S), data.beta, data.T)
        errs[lo:hi] = np.sum((y_hat - y) ** 2, axis=(-2, -1))
    pred = from_overlaps(data.channel, m, min(Q, 1e12), data.rho, data.T, data.beta, Q0=Q0) \
        if m * m <= Q * Q0 and Q > 0 else TestError(math.nan, math.nan, "")
    return Evaluation(m, Q, Q0, float(errs.mean()), float(errs.std(ddof=1) / math.sqrt(len(errs))),
                      pred.value)
