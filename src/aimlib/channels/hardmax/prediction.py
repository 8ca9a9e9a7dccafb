"""The hardmax test error on fresh samples at any ``T`` (docs/theory.md §10, §14.5): a randomised
QMC over the comparisons of one row, and the comparison geometry of correlated tokens.
"""

from __future__ import annotations

import math

import numpy as np

from aimlib.channels.base import TestError, normal_rule

#: Randomised QMC of the hardmax test error at ``T >= 3``: scramblings and points each.
TEST_QMC = (8, 2**12)


def row_error_rqmc(m: float, Q: float, Q0: float, T: int, predictor: str):
    """The hardmax test error at ``T >= 3`` (docs/theory.md §14.5).  The entries of one row,
    ``(h_a1 .. h_aT)``, are independent given the estimate's (``Var h_aa = 2 .``, ``Var h_ab =
    .``), and every row has the same law, so the error is ``T`` times one row's: plug-in, twice
    the probability that the argmaxes of ``h`` and ``h_hat`` differ (``"argmax"``: that
    probability); Bayes, ``1 - sum_b P_b^2`` with ``P_b = P(b wins | h_hat)`` a 1-D integral
    ``E_x prod_{c != b} Phi((h_hat_b + s_b x - h_hat_c) / s_c)``, ``s = sqrt(w V)``.  Outer
    integral by randomised QMC (:data:`TEST_QMC`; the spread over scramblings is ``abserr``)."""
    from scipy import special  # scipy only when this runs (its import costs ~0.2 s)
    from scipy.stats import qmc  # scipy only when this runs (its import costs ~0.2 s)

    n_rep, n_pts = TEST_QMC
    w = np.ones(T)
    w[0] = 2.0  # the row's diagonal entry first (the argmax does not care where it is)
    sw = np.sqrt(w)
    V = max(Q0 - Q, 0.0)
    if predictor == "bayes" and V == 0.0:
        return TestError(0.0, 1e-15, "closed form")
    x, wx = normal_rule()
    vals = []
    for rep in range(n_rep):
        z = special.ndtri(qmc.Sobol(2 * T, scramble=True, seed=7000 + rep).random(n_pts))
        z = np.clip(z, -8.5, 8.5)
        hh = math.sqrt(Q) * sw * z[:, :T]
        if predictor != "bayes":
            h = (m / Q) * hh + math.sqrt(max(Q0 - m * m / Q, 0.0)) * sw * z[:, T:]
            p = float(np.mean(np.argmax(h, axis=1) != np.argmax(hh, axis=1)))
            vals.append(p if predictor == "argmax" else 2.0 * T * p)
            continue
        s = math.sqrt(V) * sw
        top = hh[:, :, None] + s[None, :, None] * x[None, None, :]  # (N, b, x)
        logp = np.zeros_like(top)
        for c in range(T):
            lc = special.log_ndtr((top - hh[:, c, None, None]) / s[c])
            lc[:, c, :] = 0.0  # b = c: no constraint
            logp += lc
        P = np.exp(logp) @ wx  # (N, b)
        vals.append(T * (1.0 - float(np.mean(np.sum(P * P, axis=1)))))
    vals = np.asarray(vals)
    return TestError(float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(n_rep)), "rqmc")


def comparison_matrix(L: np.ndarray) -> np.ndarray:
    """``A`` (2 x 3) with ``(h_11 - h_12, h_22 - h_12) = A (h~_11, h~_12, h~_22)`` for
    ``h = L h~ L`` (``L`` symmetric 2 x 2; the identity for i.i.d. tokens)."""
    A = np.empty((2, 3))
    basis = (np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[0.0, 1.0], [1.0, 0.0]]),
             np.array([[0.0, 0.0], [0.0, 1.0]]))
    for j, E in enumerate(basis):
        h = L @ E @ L
        A[0, j] = h[0, 0] - h[0, 1]
        A[1, j] = h[1, 1] - h[0, 1]
    return A


def comparison_geometry(corr: float) -> tuple[np.ndarray, float, float]:
    """``(A, r, sigma^2)`` of the comparisons at token correlation ``corr``: their map from the
    whitened pair coordinates, their correlation ``r = (1 - 3c) / (3 - c)`` and their variance
    per unit overlap ``sigma^2 = (1 - c)(3 - c)`` (``1/3`` and 3 for i.i.d. tokens)."""
    from aimlib.tokens import sqrt_corr  # not at the top: channels load before the token laws

    A = comparison_matrix(sqrt_corr(2, corr))
    S = A @ np.diag([2.0, 1.0, 2.0]) @ A.T
    return A, float(S[0, 1] / S[0, 0]), float(S[0, 0])
