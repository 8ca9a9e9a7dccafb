"""The identities every output channel must satisfy, callable by the author of a new one.

A channel (:class:`aimlib.channels.Channel`) is right when, on samples drawn from the channel
itself (``omega ~ N(0, w q)``, ``h = omega + N(0, w V)`` per pair ``a <= b``, labels from ``h``):

1. **SE is the Monte Carlo of g_out**: ``q_hat(1, q, V) / 2 = E[sum_{a<=b} w g_ab^2]`` with ``g``
   the AMP output function (docs/theory.md §3);
2. **Nishimori**: ``E[sum w g^2] = E[sum w (-d g_ab / d omega_ab)]``, the derivative by central
   differences of ``g_out`` (the published hardmax density misses it by 14 % at q = 0.2,
   V = 1, and its SE update, the exact channel's, by a factor of two);
3. **g_out is the gradient of log Z_out** (for a channel with a finite ``log Z_out``; softmax's
   likelihood is a point mass on a line), by central differences.

Each check returns a :class:`Check` (the two sides, the tolerance the sampling allows, whether
they agree); :func:`check_channel` runs all of them and raises :class:`AssertionError` naming
the first that fails.  ``tests/test_channel_registry.py`` runs them on every registered channel.

The same three identities hold for the channel applied over the keys of one cross-attention
row (docs/theory.md §15.2: ``T_k`` independent indices ``h_b ~ N(omega_b, V)``,
``omega_b ~ N(0, q)``, no pair weights): :func:`check_rows`.
"""

from __future__ import annotations

import math

import numpy as np

from aimlib.channels.base import Channel, pair_weights
from aimlib.core.identity import Check

__all__ = ["Check", "draw", "check_se_update", "check_nishimori", "check_log_z_gradient",
           "check_channel", "has_log_z", "is_integrated", "draw_rows", "check_rows"]


def draw(channel: Channel, rng: np.random.Generator, n: int, q: float, V: float):
    """``n`` samples from the channel: ``omega ~ N(0, w q)`` and ``h = omega + N(0, w V)`` per
    pair ``a <= b`` (symmetric ``T x T``), and the AMP outputs of labels drawn from ``h``.
    Returns ``(omega, y)``."""
    T = channel.T
    iu = np.triu_indices(T)
    w = pair_weights(T)[iu]

    def sym(v):
        out = np.zeros((n, T, T))
        out[:, iu[0], iu[1]] = v
        return out + np.triu(out, 1).swapaxes(1, 2)

    om = sym(rng.standard_normal((n, iu[0].size)) * np.sqrt(w * q))
    h = om + sym(rng.standard_normal((n, iu[0].size)) * np.sqrt(w * V))
    return om, channel.outputs(channel.labels(h, rng))


def _weighted_square(channel, g):
    iu = np.triu_indices(channel.T)
    return (g[:, iu[0], iu[1]] ** 2) @ pair_weights(channel.T)[iu]


def check_se_update(channel: Channel, rng: np.random.Generator, *, q: float = 0.9,
                    V: float = 0.4, n: int = 200_000) -> Check:
    """Identity 1: the channel's SE update against the Monte Carlo of its ``g_out``."""
    om, y = draw(channel, rng, n, q, V)
    s = _weighted_square(channel, channel.g_out(y, om, V))
    return Check("q_hat / 2 = E[sum w g^2]", float(channel.q_hat(1.0, q, V) / 2), float(s.mean()),
                 5 * float(s.std()) / math.sqrt(n) + 1e-12)


def check_nishimori(channel: Channel, rng: np.random.Generator, *, q: float = 0.9,
                    V: float = 0.4, n: int = 200_000, eps: float = 1e-5) -> Check:
    """Identity 2: ``E[sum w g^2] = E[sum w (-dg/domega)]`` on the same samples (``T (T + 1)``
    more calls of ``g_out`` for the central differences)."""
    T = channel.T
    om, y = draw(channel, rng, n, q, V)
    s = _weighted_square(channel, channel.g_out(y, om, V))
    iu = np.triu_indices(T)
    w = pair_weights(T)[iu]
    div = np.zeros(n)
    for k, (a, b) in enumerate(zip(*iu, strict=True)):
        e = np.zeros((1, T, T))
        e[0, a, b] = e[0, b, a] = eps
        dg = (channel.g_out(y, om + e, V) - channel.g_out(y, om - e, V))[:, a, b] / (2 * eps)
        div -= w[k] * dg
    tol = 5 * (float(s.std()) + float(div.std())) / math.sqrt(n)
    return Check("E[sum w g^2] = E[sum w (-dg/domega)]", float(s.mean()), float(div.mean()), tol)


def check_log_z_gradient(channel: Channel, rng: np.random.Generator, *, q: float = 1.0,
                         V: float = 0.3, n: int = 300, eps: float = 1e-6) -> Check:
    """Identity 3: ``g_out`` against central differences of ``log_z_out`` (the largest
    difference over the samples and pairs, against ``1e-6`` relative)."""
    T = channel.T
    om, y = draw(channel, rng, n, q, V)
    g = channel.g_out(y, om, V)
    worst = 0.0
    for a, b in zip(*np.triu_indices(T), strict=True):
        e = np.zeros((1, T, T))
        e[0, a, b] = e[0, b, a] = eps
        fd = (channel.log_z_out(y, om + e, V) - channel.log_z_out(y, om - e, V)) / (2 * eps)
        worst = max(worst, float(np.max(np.abs(g[:, a, b] - fd) - 1e-6 * np.abs(fd))))
    # the excess of |g - fd| over 1e-6 |fd| (numpy's assert_allclose with rtol = atol = 1e-6)
    return Check("g_out = d log Z_out / d omega", max(worst, 0.0), 0.0, 1e-6)


def has_log_z(channel: Channel) -> bool:
    """Whether the channel has a finite ``log Z_out`` of its own (softmax's likelihood is a
    point mass on a line)."""
    return type(channel).log_z_out is not Channel.log_z_out


def is_integrated(channel: Channel) -> bool:
    """Whether the channel's ``g_out`` is a numerical integral (hardmax at T >= 3: Genz's
    rule, about 1e-4 s a sample), whose noise central differences of ``log Z_out`` would see."""
    return channel.g_out_seconds(channel.T) > 1e-5


def check_channel(channel: Channel, rng: np.random.Generator | None = None) -> list[Check]:
    """Every identity that applies to ``channel``, at sample sizes its ``g_out``'s cost allows
    (200,000 samples; 60,000, and a fifth of them for the derivative, where ``g_out`` is an
    integral); raises :class:`AssertionError` naming the first that fails, else returns them."""
    rng = np.random.default_rng(0) if rng is None else rng
    n = 60_000 if is_integrated(channel) else 200_000
    checks = [check_se_update(channel, rng, n=n),
              check_nishimori(channel, rng, n=n // 5 if is_integrated(channel) else n)]
    if has_log_z(channel) and not is_integrated(channel):
        checks.append(check_log_z_gradient(channel, rng))
    for c in checks:
        if not c.ok:
            raise AssertionError(f"{type(channel).__name__}(T={channel.T}): {c}")
    return checks


# ------------------------------------------------------------------------ cross-attention rows


def draw_rows(channel: Channel, rng: np.random.Generator, n: int, q: float, V: float,
              T_k: int):
    """``n`` cross-attention rows: ``omega ~ N(0, q I)``, ``h = omega + N(0, V I)`` over ``T_k``
    keys, and the row labels of ``h``.  Returns ``(omega, y)``."""
    omega = math.sqrt(q) * rng.standard_normal((n, T_k))
    h = omega + math.sqrt(V) * rng.standard_normal((n, T_k))
    return omega, channel.row_labels(h, rng)


def check_rows(channel: Channel, T_k: int, rng: np.random.Generator | None = None, *,
               q: float = 0.8, V: float = 0.6, n: int = 40000, eps: float = 1e-5) -> list[Check]:
    """The three identities for cross-attention rows of ``T_k`` keys: ``row_information`` is the
    Monte Carlo mean of ``sum_b g_b^2``; Nishimori, ``E[sum g^2] = E[-sum_b dg_b/domega_b]``
    (central differences); ``row_g_out`` is the gradient of ``row_log_z`` (central differences,
    relative 1e-5).  ``AssertionError`` naming the first that fails, else the checks."""
    rng = np.random.default_rng(0) if rng is None else rng
    omega, y = draw_rows(channel, rng, n, q, V, T_k)
    g = channel.row_g_out(y, omega, V)
    sq = np.sum(g * g, axis=1)
    div = np.zeros(n)
    for b in range(T_k):
        e = np.zeros_like(omega)
        e[:, b] = eps
        div -= (channel.row_g_out(y, omega + e, V)[:, b]
                - channel.row_g_out(y, omega - e, V)[:, b]) / (2 * eps)
    se_sq = float(np.std(sq, ddof=1) / math.sqrt(n))
    se_diff = float(np.std(sq - div, ddof=1) / math.sqrt(n))
    checks = [Check(f"row_information = E[sum g^2], T_k = {T_k}", float(np.mean(sq)),
                    float(channel.row_information(q, V, T_k)), 5 * se_sq),
              Check(f"Nishimori on rows, T_k = {T_k}", float(np.mean(sq)), float(np.mean(div)),
                    5 * se_diff + 1e-6)]
    m = min(n, 500)
    fd = np.empty((m, T_k))
    for b in range(T_k):
        e = np.zeros((m, T_k))
        e[:, b] = eps
        fd[:, b] = (channel.row_log_z(y[:m], omega[:m] + e, V)
                    - channel.row_log_z(y[:m], omega[:m] - e, V)) / (2 * eps)
    gap = float(np.max(np.abs(fd - g[:m]) / (1.0 + np.abs(g[:m]))))
    checks.append(Check(f"row g_out = grad log Z, T_k = {T_k}", gap, 0.0, 1e-5))
    for c in checks:
        if not c.ok:
            raise AssertionError(f"{channel.name}: {c}")
    return checks
