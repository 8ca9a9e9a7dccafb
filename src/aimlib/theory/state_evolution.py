"""State evolution of the Bayes-optimal estimator (replica-symmetric, docs/theory.md §3).

The overlap ``q`` in ``[rho, Q0]`` (``Q0 = 1 + rho``) solves

    q = Q0 - mmse(1 / q_hat),      q_hat = channel.q_hat(alpha, q, V = Q0 - q),

and the Bayes-optimal estimation error is ``Q0 - q``.  Each fixed point is found by monotone
iteration from a start point, accelerated by Aitken extrapolation and finished by a bracketing
root finder once a sign change of ``F(q) - q`` is found; it is solved from the uninformed start
``q = rho`` (the point AMP reaches) and from an informed start near ``Q0``, and a disagreement of
the two (a first-order transition) is reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from aimlib.channels import Channel, make_channel
from aimlib.channels.softmax import perfect_recovery_alpha_bar
from aimlib.core.validation import check_alpha, check_rho
from aimlib.prior import DEFAULT as DEFAULT_PRIOR
from aimlib.prior import Prior, self_attention_prior
from aimlib.theory import generalisation
from aimlib.theory.fixed_point import (  # noqa: F401  (re-exported)
    SE_STOP_REASONS,
    TOL,
    FixedPointResult,
    fixed_point,
)
from aimlib.theory.small_width import (  # noqa: F401  (re-exported)
    SmallWidthResult,
    small_width_curve,
    small_width_solve,
    small_width_threshold,
)
from aimlib.tokens import IndexLaw, make_tokens

__all__ = [
    "SE_STOP_REASONS",
    "unconverged_points",
    "usable",
    "one_step",
    "FixedPointResult",
    "SEResult",
    "fixed_point",
    "test_error",
    "solve",
    "curve",
    "alpha_bar",
    "softmax_perfect_recovery_threshold",
    "perfect_recovery_threshold",
    "small_width_threshold",
    "small_width_solve",
    "small_width_curve",
    "SmallWidthResult",
    "TOL",
]

#: Relative distance of the informed start from perfect recovery: ``V0 = INFORMED_V * Q0``.
INFORMED_V = 1e-6
#: Two starts disagreeing by more than this (in error) signal a first-order transition.
DISAGREE = 1e-6


@dataclass(frozen=True)
class SEResult:
    """State-evolution fixed point at one ``(channel, alpha, rho, T)``.

    Attributes
    ----------
    error : float
        Bayes-optimal error ``Q0 - q`` from the uninformed start (the point AMP reaches).
    q, q_hat : float
        Order parameters at that fixed point.
    param : float
        The channel's parameter (``beta``, ``delta``; 1.0 for hardmax).
    iterations : int
        Evaluations of the SE map (uninformed start).
    converged : bool
        Whether ``|F(q) - q| < tol``.
    error_informed, q_informed, iterations_informed, converged_informed
        The same from the informed start near ``Q0``.
    stop_reason, stop_reason_informed : str
        Why each solve stopped (:data:`SE_STOP_REASONS`); after ``"nan"`` the error is NaN,
        never a number.
    """

    channel: str
    alpha: float
    rho: float
    T: int
    param: float
    error: float
    q: float
    q_hat: float
    iterations: int
    converged: bool
    error_informed: float
    q_informed: float
    iterations_informed: int
    converged_informed: bool
    stop_reason: str = "converged"
    stop_reason_informed: str = "converged"

    @property
    def disagree(self) -> bool:
        """Whether the two starts reach different fixed points (first-order transition)."""
        return abs(self.error - self.error_informed) > DISAGREE




def alpha_bar(channel: str, alpha, rho: float, T: int | None = None, **params):
    """Rescaled sample ratio ``alpha * channel.alpha_bar_factor(rho)``: ``alpha (T^2 + T - 2)``
    for softmax, ``alpha / rho`` for hardmax, ``alpha T (T + 1)`` for the Gaussian channel."""
    ch = make_channel(channel, T=T, **params)
    return np.asarray(alpha) * ch.alpha_bar_factor(rho)


def _q_hat(ch, alpha: float, q: float, V: float, index: IndexLaw | None) -> float:
    """The channel's output update under the token law's index law (docs/theory.md §13)."""
    if index is None or index.gaussian:
        return ch.q_hat(alpha, q, V)
    return ch.q_hat_tokens(alpha, q, V, index)


def _index_law(ch, tokens, pr: Prior) -> IndexLaw | None:
    """The index law of a token law (None for Gaussian tokens), checked against the channel
    and the prior."""
    law = make_tokens(tokens)
    ch.check_tokens(law)
    if law.is_gaussian:
        return None
    if not pr.TOKEN_LAWS:
        raise ValueError(f"tokens: {law.tag} tokens are not implemented for the {pr.name} "
                         "prior (Gaussian tokens only)")
    return law.index_law(pr.rho)


def _se_map(ch, alpha: float, pr: Prior, index: IndexLaw | None = None
            ) -> Callable[[float], float]:
    Q0, q0 = pr.second_moment, pr.mean_overlap

    def F(q: float) -> float:
        V = Q0 - q
        if V <= 0.0:
            return Q0
        qh = _q_hat(ch, alpha, q, V, index)
        if qh == 0.0:  # no information: the prior's mean
            return q0
        if not qh > 0:  # NaN or negative: the channel failed; the solve reports "nan"
            return math.nan
        return Q0 - pr.mmse(1.0 / qh)

    return F


def _solve_channel(ch, alpha: float, pr: Prior, q_start: float, tol: float,
                   index: IndexLaw | None = None) -> FixedPointResult:
    return fixed_point(_se_map(ch, alpha, pr, index), q_start, pr.mean_overlap,
                       pr.second_moment, tol=tol)


def _result(ch, alpha, pr: Prior, unf: FixedPointResult, inf: FixedPointResult,
            index: IndexLaw | None = None) -> SEResult:
    Q0 = pr.second_moment

    def qh(q):
        V = Q0 - q
        if math.isnan(q):
            return math.nan
        return math.inf if V <= 0 else _q_hat(ch, alpha, q, V, index)

    return SEResult(
        channel=ch.name, alpha=alpha, rho=pr.rho, T=ch.T, param=ch.param_value,
        error=_error(Q0, unf.q), q=unf.q, q_hat=qh(unf.q),
        iterations=unf.iterations, converged=unf.converged,
        error_informed=_error(Q0, inf.q), q_informed=inf.q,
        iterations_informed=inf.iterations, converged_informed=inf.converged,
        stop_reason=unf.stop_reason, stop_reason_informed=inf.stop_reason,
    )


def _error(Q0: float, q: float) -> float:
    """``Q0 - q``, clipped at 0 (rounding at perfect recovery); NaN stays NaN."""
    return math.nan if math.isnan(q) else max(Q0 - q, 0.0)


def _informed_start(pr: Prior) -> float:
    return pr.second_moment * (1.0 - INFORMED_V)


def solve(
    channel: str | Channel,
    alpha: float,
    rho: float,
    T: int | None = None,
    *,
    tol: float = TOL,
    tokens=None,
    prior: str | Prior | None = None,
    **params,
) -> SEResult:
    """State-evolution fixed point for one parameter point.

    Parameters
    ----------
    channel : str or Channel
        Output channel: an object (:func:`aimlib.channels.make_channel`) or a name in
        :data:`aimlib.channels.CHANNELS` with its parameters in ``params``.
    alpha : float
        Sample ratio ``n / d^2``, ``> 0``.
    rho : float
        Width ratio ``r / d``, ``> 0``.
    T : int, optional
        Tokens per sequence (default: an object's own, or a name's smallest: 2 or, Gaussian, 1).
    tol : float
        Fixed-point tolerance on ``|F(q) - q|``.
    tokens : str, dict or TokenLaw, optional
        The token law (:func:`aimlib.tokens.make_tokens`; default Gaussian, the paper's): the
        SE of docs/theory.md §13 (i.i.d. tokens change ``Var omega_aa`` to ``2 q + kappa rho``,
        correlated tokens compose the channel with ``C^(1/2)``).
    prior : str or Prior, optional
        The teacher's prior (:data:`aimlib.prior.PRIORS`; default the paper's, ``"tied"``): its
        MMSE, ``Q0`` and the uninformed start ``q0``.
    **params
        With a channel name, its own parameters: ``beta`` (softmax inverse temperature; SE does
        not depend on it), ``variant`` (hardmax: ``"exact"`` or ``"density"``, the published
        error of docs/theory.md §7), ``delta`` (Gaussian noise variance, ``>= 0``).

    Returns
    -------
    SEResult
    """
    alpha = check_alpha(alpha)
    pr = self_attention_prior(prior, check_rho(rho))
    ch = make_channel(channel, T=T, **params)
    index = _index_law(ch, tokens, pr)
    unf = _solve_channel(ch, alpha, pr, pr.mean_overlap, tol, index)
    inf = _solve_channel(ch, alpha, pr, _informed_start(pr), tol, index)
    return _result(ch, alpha, pr, unf, inf, index)


def curve(
    channel: str | Channel,
    alphas: Sequence[float] | np.ndarray,
    rho: float,
    T: int | None = None,
    *,
    tol: float = TOL,
    tokens=None,
    prior: str | Prior | None = None,
    **params,
) -> xr.Dataset:
    """State-evolution curve over a grid of ``alpha``.

    The uninformed branch is followed upward in ``alpha`` and the informed branch downward, each
    fixed point starting from its neighbour's (exact, because the SE map is increasing in both
    ``q`` and ``alpha``, so the branches are monotone in ``alpha``).  ``tokens`` and ``prior``
    as in :func:`solve`.

    Returns
    -------
    xarray.Dataset
        Variables ``error``, ``q``, ``q_hat``, ``iterations``, ``converged``, ``error_informed``,
        ``converged_informed``, ``disagree`` on coordinate ``alpha`` (with ``alpha_bar`` as a
        second coordinate); parameters as attributes.
    """
    a = np.asarray(alphas, dtype=np.float64).ravel()
    if a.size == 0:
        raise ValueError("alphas must not be empty")
    for v in a:
        check_alpha(v)
    pr = self_attention_prior(prior, check_rho(rho))
    ch = make_channel(channel, T=T, **params)
    index = _index_law(ch, tokens, pr)
    Q0, q0 = pr.second_moment, pr.mean_overlap
    order = np.argsort(a, kind="stable")
    unf: dict[int, FixedPointResult] = {}
    q_prev = q0
    for i in order:
        res = _solve_channel(ch, float(a[i]), pr, q_prev, tol, index)
        unf[i] = res
        q_prev = max(q0, min(res.q, Q0))
    inf: dict[int, FixedPointResult] = {}
    q_prev = _informed_start(pr)
    for i in order[::-1]:
        res = _solve_channel(ch, float(a[i]), pr, q_prev, tol, index)
        inf[i] = res
        q_prev = max(q0, min(res.q, _informed_start(pr)))
    results = [_result(ch, float(a[i]), pr, unf[i], inf[i], index) for i in range(a.size)]
    ds = _results_dataset(results, a, ch, pr, tol)
    ds.attrs.update(make_tokens(tokens).attrs)
    return ds


def _results_dataset(results, a, ch, pr: Prior, tol) -> xr.Dataset:
    rho = pr.rho

    def col(name, dtype=np.float64):
        return ("alpha", np.array([getattr(r, name) for r in results], dtype=dtype))

    ds = xr.Dataset(
        {
            "error": col("error"),
            "q": col("q"),
            "q_hat": col("q_hat"),
            "iterations": col("iterations", np.int64),
            "converged": col("converged", np.int8),
            "error_informed": col("error_informed"),
            "converged_informed": col("converged_informed", np.int8),
            "disagree": ("alpha", np.array([r.disagree for r in results], dtype=np.int8)),
            "stop_reason": ("alpha", np.array([SE_STOP_REASONS.index(r.stop_reason)
                                               for r in results], dtype=np.int8)),
        },
        coords={"alpha": a, "alpha_bar": ("alpha", a * ch.alpha_bar_factor(rho))},
    )
    ds.attrs.update(
        channel=ch.name, rho=float(rho), T=int(ch.T),
        variant=getattr(ch, "variant", "exact"), param=ch.param_value,
        Q0=float(pr.second_moment), tol=float(tol), stop_reasons=" ".join(SE_STOP_REASONS),
    )
    if pr.name != DEFAULT_PRIOR:  # the paper's prior's caches stay as they were
        ds.attrs["prior"] = pr.name
    if ch.PARAM:
        ds.attrs[ch.PARAM] = ch.param_value
    threshold = ch.perfect_recovery_threshold(pr)
    if threshold is not None:
        ds.attrs["perfect_recovery_alpha"] = float(threshold)
    ds["error"].attrs["long_name"] = "Bayes-optimal estimation error Q0 - q (uninformed start)"
    ds["error_informed"].attrs["long_name"] = "error of the fixed point reached from near Q0"
    return ds


def usable(ds: xr.Dataset) -> np.ndarray:
    """Points of an SE curve (any kind: Bayes, mismatched, small width) that figures and fits may
    use: converged with a finite error (both bounds, for untied self-attention's curve,
    :mod:`aimlib.theory.cells`).  The rest are drawn hollow and left out of fits."""
    ok = np.ones(ds.sizes[next(iter(ds.dims))], dtype=bool)
    for name in ("error", "error_lower", "error_upper"):
        if name in ds:
            ok &= np.isfinite(ds[name].values)
    for name in ("converged", "converged_lower", "converged_upper"):
        if name in ds:
            ok &= ds[name].values.astype(bool)
    return ok


def unconverged_points(ds: xr.Dataset) -> list[str]:
    """One line per point of an SE curve whose solve did not converge from either start, with
    the stop reasons (empty when every point converged)."""
    coord = "alpha" if "alpha" in ds.dims else "alpha_bar"
    names = ds.attrs.get("stop_reasons", " ".join(SE_STOP_REASONS)).split()
    bad: dict[int, list[str]] = {}
    for start, conv, why in (("uninformed", "converged", "stop_reason"),
                             ("informed", "converged_informed", None),
                             ("lower bound", "converged_lower", "stop_reason_lower"),
                             ("upper bound", "converged_upper", "stop_reason_upper")):
        if conv not in ds:
            continue
        for i in np.flatnonzero(ds[conv].values == 0):
            reason = names[int(ds[why].values[i])] if why and why in ds else "not converged"
            bad.setdefault(int(i), []).append(f"{start} start: {reason}")
    return [f"{coord}={float(ds[coord].values[i]):.6g} ({'; '.join(bad[i])})"
            for i in sorted(bad)]


def one_step(channel: str | Channel, alpha: float, rho: float, T: int | None = None, *,
             prior: str | Prior | None = None, **params) -> float:
    """Error of the spectral estimator predicted by one SE step from the prior's mean
    (docs/theory.md §4.1): at ``q = q0``, ``V = Q0 - q0`` (tied prior: ``q = rho``, ``V = 1``) the
    effective observation has precision ``q_hat = channel.q_hat(alpha, q0, V)`` and the RIE's
    error is ``mmse(1 / q_hat)``."""
    alpha = check_alpha(alpha)
    pr = self_attention_prior(prior, check_rho(rho))
    ch = make_channel(channel, T=T, **params)
    qh = ch.q_hat(alpha, pr.mean_overlap, pr.variance)
    if not qh >= 0:
        return math.nan
    return float(pr.mmse(math.inf if qh == 0 else 1.0 / qh))


# --------------------------------------------------------------------------------------------
# closed forms and limits
# --------------------------------------------------------------------------------------------


def softmax_perfect_recovery_threshold(rho: float) -> float:
    """``alpha_bar_c = 2 rho - rho^2`` for ``rho <= 1`` and 1 for ``rho >= 1`` (the same
    ``alpha_bar_c`` for the noiseless Gaussian channel)."""
    return perfect_recovery_alpha_bar(check_rho(rho))


def perfect_recovery_threshold(channel: str | Channel, rho: float, T: int | None = None,
                               prior: str | Prior | None = None, **params) -> float | None:
    """``alpha`` at which the Bayes-optimal error of ``channel`` reaches 0 (``None`` if it
    never does: hardmax, or the Gaussian channel with noise)."""
    return make_channel(channel, T=T, **params).perfect_recovery_threshold(
        self_attention_prior(prior, check_rho(rho)))




# --------------------------------------------------------------------------------------------


def test_error(channel: str | Channel, alpha: float, rho: float, T: int | None = None, *,
               predictor: str = "bayes", **params) -> float:
    """Bayes-optimal test error on a fresh sample at the SE fixed point (docs/theory.md §10).

    Parameters
    ----------
    channel : str or Channel
    alpha, rho, T, **params
        As in :func:`solve`; the test error of softmax depends on ``beta`` (SE does not).
    predictor : {"bayes", "plugin", "argmax"}
        ``"bayes"``: ``E ||y(X; S*) - E[y(X; S*) | data]||_F^2``; ``"plugin"``:
        ``E ||y(X; S*) - y(X; S_hat)||_F^2`` with ``S_hat`` the Bayes-optimal estimate;
        ``"argmax"`` (hardmax): the probability that a row's predicted argmax differs.

    Returns
    -------
    float
        See :mod:`aimlib.theory.generalisation` for the integrals and their error estimates.
    """
    ch = make_channel(channel, T=T, **params)
    res = solve(ch, alpha, rho)
    return generalisation.bayes(ch, min(res.q, 1.0 + rho), rho, predictor=predictor).value
