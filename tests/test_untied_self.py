"""Untied self-attention's bounds (aimlib.theory.untied_self, docs/theory.md §15.4): the split of
the channel's information between the symmetric and antisymmetric parts of S, by linear algebra
and by Monte Carlo of the rows' output functions; the bounds' fixed points against the
cross-attention SE of the same information; their thresholds against counting."""

import math

import numpy as np
import pytest

from aimlib.channels import make_channel
from aimlib.theory import cross_attention as cross
from aimlib.theory import untied_self as us


def _bases(T):
    """Orthonormal bases (Frobenius) of the symmetric and antisymmetric T x T matrices."""
    sym, anti = [], []
    for a in range(T):
        E = np.zeros((T, T))
        E[a, a] = 1.0
        sym.append(E)
        for b in range(a + 1, T):
            E = np.zeros((T, T))
            E[a, b] = E[b, a] = 1 / math.sqrt(2)
            sym.append(E)
            E = np.zeros((T, T))
            E[a, b], E[b, a] = 1 / math.sqrt(2), -1 / math.sqrt(2)
            anti.append(E)
    return sym, anti


@pytest.mark.parametrize("T", [2, 3, 4, 5])
def test_information_split_by_linear_algebra(T):
    """With the row projection P(M) = M (I - J/T) as the information on the indices (unit row
    information per row: trace T - 1 over a row), sum_e <e, P e> over each basis, divided by
    the row information T - 1, is (T + 1)/2 and (T - 1)/2."""
    sym, anti = _bases(T)

    def P(M):
        return M - M.mean(axis=1, keepdims=True)

    info_a = sum(float(np.sum(e * P(e))) for e in sym) / (T - 1)
    info_b = sum(float(np.sum(e * P(e))) for e in anti) / (T - 1)
    assert (info_a, info_b) == pytest.approx(us.information_split(T), rel=1e-14)


@pytest.mark.parametrize("name", ["softmax", "hardmax", "gaussian"])
@pytest.mark.parametrize("T", [2, 3])
def test_information_split_by_monte_carlo(name, T):
    """Samples of T independent rows (each index ~ N(omega, V), omega ~ N(0, q)), g from the
    channel's row output function: E[sum_a g_aa^2 + sum_{a<b} (g_ab + g_ba)^2 / 2] and
    E[sum_{a<b} (g_ab - g_ba)^2 / 2] against the split the bounds use, within five standard
    errors."""
    params = {"delta": 0.2} if name == "gaussian" else {}
    ch = make_channel(name, T=T, **params)
    q, V, n = 0.6, 0.4, 30000
    rng = np.random.default_rng(5)
    omega = math.sqrt(q) * rng.standard_normal((n * T, T))
    y = ch.row_labels(omega + math.sqrt(V) * rng.standard_normal((n * T, T)), rng)
    g = ch.row_g_out(y, omega, V).reshape(n, T, T)
    iu = np.triu_indices(T, 1)
    gs = (g[:, iu[0], iu[1]] + g[:, iu[1], iu[0]]) ** 2 / 2
    ga = (g[:, iu[0], iu[1]] - g[:, iu[1], iu[0]]) ** 2 / 2
    info_a = np.sum(g[:, np.arange(T), np.arange(T)] ** 2, axis=1) + gs.sum(axis=1)
    info_b = ga.sum(axis=1)
    qa, qb = us.q_hats(ch, 0.5, q, V, T)  # 2 alpha info at alpha = 1/2
    for mc, want in ((info_a, qa), (info_b, qb)):
        assert np.mean(mc) == pytest.approx(want, abs=5 * np.std(mc) / math.sqrt(n))


@pytest.mark.parametrize("name, params", [("softmax", {}), ("gaussian", {"delta": 0.1}),
                                          ("hardmax", {})])
def test_bounds_are_the_cross_attention_se_of_the_same_information(name, params):
    """At T = 2, q_hat_A = 3 alpha E_row and q_hat_B = alpha E_row: the SE of untied
    cross-attention with T_q = 3 and 1 query rows of 2 keys, a different code path."""
    for alpha in (0.05, 0.2):
        b = us.bounds(name, alpha, 0.5, 2, **params)
        lo = cross.solve(name, alpha, 0.5, T_q=3, T_k=2, prior="untied", **params)
        up = cross.solve(name, alpha, 0.5, T_q=1, T_k=2, prior="untied", **params)
        assert b.error_lower == pytest.approx(lo.error, abs=1e-9)
        assert b.error_upper == pytest.approx(up.error, abs=1e-9)
        assert b.converged and b.error_lower < b.error_upper


@pytest.mark.parametrize("T", [2, 3])
def test_softmax_thresholds_bracket_counting(T):
    """The bounds reach 0 at f / (T^2 - 1) and f / (T - 1)^2, and counting, f / (T (T - 1)),
    lies between; each fixed point is 0 just above its threshold and positive just below."""
    lo, up = us.perfect_recovery_thresholds(0.5, T)
    f = 2 * 0.5 - 0.25
    assert (lo, up) == pytest.approx((f / (T * T - 1), f / (T - 1) ** 2), rel=1e-14)
    assert lo < us.counting_threshold(0.5, T) < up
    assert up / lo == pytest.approx((T + 1) / (T - 1), rel=1e-14)
    for th, attr in ((lo, "error_lower"), (up, "error_upper")):
        assert getattr(us.bounds("softmax", th * 1.02, 0.5, T), attr) == pytest.approx(
            0.0, abs=1e-9)
        assert getattr(us.bounds("softmax", th * 0.98, 0.5, T), attr) > 1e-3


def test_bad_input_names_the_key():
    with pytest.raises(ValueError, match="T="):
        us.bounds("softmax", 0.1, 0.5, 1)
    with pytest.raises(ValueError, match="T_k"):
        us.bounds("hardmax", 0.1, 0.5, 4)
    with pytest.raises(ValueError, match="rho"):
        us.bounds("softmax", 0.1, -1.0, 2)
