"""The four cells of {tied, untied} x {self, cross} attention behind one interface
(docs/theory.md §15): a cell's check, its ``alpha_bar`` scale, its thresholds and its
state-evolution curve as one dataset, so that the workflow and the figures treat every cell
alike.  The workflow reads the checks and the scale while it parses: the state evolution (and
xarray) is imported when a curve or a threshold is computed.

The paper's cell (tied self-attention) is :func:`aimlib.theory.state_evolution.curve`; the two
cross-attention cells are :mod:`aimlib.theory.cross_attention` with ``T_q = T_k = T``; untied
self-attention has no exact state evolution and its curve holds the two bounds of
:mod:`aimlib.theory.untied_self` (``error_lower``, ``error_upper``, no ``error``: a reader cannot
take a bound for the Bayes error by mistake).

Beyond the paper's cell, ``alpha_bar`` is ``alpha`` over the counting threshold, times the
prior's fraction of free parameters ``f``: the label combinations a sample gives (``T_q (T_k - 1)``
per query row set in cross-attention, ``T (T - 1)`` in untied self-attention) weighed against the
teacher's parameters, so that counting sits at ``alpha_bar = f`` in every cell, as the softmax's
threshold does in the paper's cell and in both cross-attention cells.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from aimlib.channels import Channel, make_channel
from aimlib.core.validation import check_alpha, check_rho
from aimlib.model import ATTENTIONS
from aimlib.prior import DEFAULT as DEFAULT_PRIOR
from aimlib.prior import PRIORS, Prior, make_prior
from aimlib.theory.fixed_point import SE_STOP_REASONS, TOL
from aimlib.tokens import make_tokens

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["DEFAULT_CELL", "check_cell", "is_paper", "alpha_bar_factor", "thresholds", "curve"]

#: The paper's cell.
DEFAULT_CELL = (DEFAULT_PRIOR, "self")


def kind(prior: str, attention: str) -> tuple[str, str]:
    """The cell a ``(prior, attention)`` pair belongs to: ``("tied", attention)`` for a
    symmetric prior (the paper's and any registered symmetric one, such as a GOE test prior),
    ``("untied", attention)`` for one that is not."""
    if prior not in PRIORS:
        raise ValueError(f"prior={prior!r}: not a prior (known: {', '.join(PRIORS)})")
    return ("tied" if PRIORS[prior].SYMMETRIC else "untied"), attention


def is_paper(prior: str, attention: str) -> bool:
    """Whether ``(prior, attention)`` is in the paper's cell, self-attention with a symmetric
    prior, where the paper's equations (:mod:`aimlib.theory.state_evolution`) hold."""
    return kind(prior, attention) == DEFAULT_CELL


def check_cell(prior: str, attention: str, T: int, channel: str | None = None,
               tokens=None) -> None:
    """``ValueError`` naming the key when a cell cannot be computed at ``T``: an unknown prior or
    attention, untied self-attention at ``T = 1`` (its index sees only the symmetric part of
    ``S``), cross-attention with one key (nothing to compare), hardmax cross-attention rows
    beyond three keys (docs/theory.md §15.2), or tokens that are not Gaussian beyond the paper's
    cell (the index laws of §13 are derived for it only)."""
    kind(prior, attention)  # names an unknown prior
    if attention not in ATTENTIONS:
        raise ValueError(f"attention={attention!r}: not an attention (known: "
                         f"{', '.join(ATTENTIONS)})")
    if is_paper(prior, attention):
        return
    if int(T) < 2:
        what = ("untied self-attention at T = 1 sees only the symmetric part of S"
                if attention == "self" else "cross-attention needs T >= 2 keys per query row")
        raise ValueError(f"T={T}: {what}")
    if attention == "self" and prior != "untied":
        raise ValueError(f"prior={prior!r}: untied self-attention's bounds are the rectangular "
                         "prior's (prior untied) only")
    if channel == "hardmax" and attention == "cross" and int(T) > 3:
        raise ValueError(f"T={T}: hardmax cross-attention rows are computed for T = 2 and 3 "
                         "keys (docs/theory.md §15.2)")
    if tokens is not None and not make_tokens(tokens).is_gaussian:
        raise ValueError(f"tokens={make_tokens(tokens).tag!r}: the cells beyond tied "
                         "self-attention take Gaussian tokens only")


def _prior(prior: str | Prior, rho: float) -> Prior:
    return make_prior(prior, check_rho(rho))


def alpha_bar_factor(channel: Channel, rho: float, *, prior: str = DEFAULT_PRIOR,
                     attention: str = "self") -> float:
    """``alpha_bar / alpha`` in a cell: the channel's own scale in the paper's cell, else ``f``
    over the counting threshold (module docs): ``w T (T - 1)`` in cross-attention (``w = 2``
    tied, 1 untied), ``T (T - 1)`` in untied self-attention."""
    if is_paper(prior, attention):
        return channel.alpha_bar_factor(rho)
    return _prior(prior, rho).mmse_slope() / _counting(channel.T, rho, prior, attention)


def _counting(T: int, rho: float, prior: str, attention: str) -> float:
    # the state evolution (xarray) only when a threshold is computed, not while the workflow
    # parses
    from aimlib.theory import cross_attention, untied_self

    if attention == "cross":
        return cross_attention.counting_threshold(rho, T_q=T, T_k=T, prior=prior)
    return untied_self.counting_threshold(rho, T)


def thresholds(channel: Channel, rho: float, *, prior: str = DEFAULT_PRIOR,
               attention: str = "self") -> dict[str, float]:
    """The cell's alphas worth marking: ``perfect_recovery_alpha`` where the Bayes error reaches
    0 (none for hardmax or a noisy Gaussian channel), in untied self-attention the two bounds'
    (``perfect_recovery_alpha_lower``, ``perfect_recovery_alpha_upper``, softmax only), and
    ``counting_alpha`` beyond the paper's cell."""
    # (the state evolution only when a threshold is computed, module docs)
    from aimlib.theory import cross_attention, untied_self

    pr = _prior(prior, rho)
    T = channel.T
    if is_paper(prior, attention):
        t = channel.perfect_recovery_threshold(pr)
        return {} if t is None else {"perfect_recovery_alpha": float(t)}
    out = {"counting_alpha": _counting(T, rho, prior, attention)}
    if attention == "cross":
        t = cross_attention.perfect_recovery_threshold(channel, rho, T_q=T, T_k=T, prior=prior)
        if t is not None:
            out["perfect_recovery_alpha"] = float(t)
        return out
    if channel.name == "softmax":
        lo, hi = untied_self.perfect_recovery_thresholds(rho, T)
        out.update(perfect_recovery_alpha_lower=lo, perfect_recovery_alpha_upper=hi)
    return out


def curve(channel: str | Channel, alphas: Sequence[float] | np.ndarray, rho: float,
          T: int | None = None, *, prior: str = DEFAULT_PRIOR, attention: str = "self",
          tol: float = TOL, tokens=None, **params) -> xr.Dataset:
    """The state-evolution curve of a cell over ``alphas``.

    Parameters
    ----------
    channel : str or Channel
        The output channel (over the keys of each query row in cross-attention).
    alphas : sequence of float
        ``n / d^2``.
    rho : float
        ``r / d``.
    T : int, optional
        Tokens per sample (in cross-attention ``T_q = T_k = T``); None: the channel object's.
    prior, attention : str
        The cell (:data:`aimlib.prior.PRIORS`, :data:`aimlib.model.ATTENTIONS`).
    tol : float
        Tolerance of each fixed point.
    tokens
        The token law (the paper's cell only; Gaussian elsewhere).
    **params
        The channel's parameter.

    Returns
    -------
    xarray.Dataset
        The paper's cell: :func:`aimlib.theory.state_evolution.curve`.  Cross-attention: the same
        variables (``error``, ``q``, ``q_hat``, ``converged``, the informed start, ...).
        Untied self-attention: ``error_lower``, ``error_upper`` with their ``converged_*`` and
        ``stop_reason_*`` and ``noise_ratio`` as an attribute; no ``error``.  Every curve has
        ``alpha`` and ``alpha_bar`` coordinates and the cell's :func:`thresholds` as attributes.
    """
    # (the state evolution only when a curve is computed, module docs)
    from aimlib.theory import cross_attention, state_evolution, untied_self

    ch = make_channel(channel, T=T, **params)
    check_cell(prior, attention, ch.T, ch.name, tokens)
    if is_paper(prior, attention):
        return state_evolution.curve(ch, alphas, rho, tol=tol, tokens=tokens, prior=prior)
    a = np.asarray(alphas, dtype=np.float64).ravel()
    if a.size == 0:
        raise ValueError("alphas must not be empty")
    for v in a:
        check_alpha(v)
    pr = _prior(prior, rho)
    if attention == "cross":
        ds = _cross_dataset(cross_attention.curve(ch, a, rho, T_q=ch.T, T_k=ch.T, prior=pr,
                                                  tol=tol))
    else:
        ds = _bounds_dataset([untied_self.bounds(ch, float(x), rho, ch.T, tol=tol) for x in a])
    ds = ds.assign_coords(alpha=a, alpha_bar=("alpha", a * alpha_bar_factor(
        ch, rho, prior=pr.name, attention=attention)))
    ds.attrs.update(channel=ch.name, rho=float(pr.rho), T=int(ch.T), variant="exact",
                    param=ch.param_value, Q0=float(pr.second_moment), tol=float(tol),
                    stop_reasons=" ".join(SE_STOP_REASONS), prior=pr.name,
                    attention=attention, **thresholds(ch, rho, prior=pr.name,
                                                      attention=attention))
    if attention == "cross":
        ds.attrs["T_q"] = int(ch.T)
    if ch.PARAM:
        ds.attrs[ch.PARAM] = ch.param_value
    return ds


def _column(results, name, dtype=np.float64):
    return ("alpha", np.array([getattr(r, name) for r in results], dtype=dtype))


def _reason(name: str) -> int:
    return SE_STOP_REASONS.index(name)


def _cross_dataset(results) -> xr.Dataset:
    import xarray as xr  # with the state evolution (module docs)

    ds = xr.Dataset({
        "error": _column(results, "error"),
        "q": _column(results, "q"),
        "q_hat": _column(results, "q_hat"),
        "iterations": _column(results, "iterations", np.int64),
        "converged": _column(results, "converged", np.int8),
        "error_informed": _column(results, "error_informed"),
        "converged_informed": _column(results, "converged_informed", np.int8),
        "disagree": ("alpha", np.array([r.disagree for r in results], dtype=np.int8)),
        "stop_reason": ("alpha", np.array([_reason(r.stop_reason) for r in results],
                                          dtype=np.int8)),
    })
    ds["error"].attrs["long_name"] = "Bayes-optimal estimation error Q0 - q (uninformed start)"
    return ds


def _bounds_dataset(results) -> xr.Dataset:
    import xarray as xr  # with the state evolution (module docs)

    data = {}
    for side in ("lower", "upper"):
        data[f"error_{side}"] = _column(results, f"error_{side}")
        data[f"converged_{side}"] = _column(results, f"converged_{side}", np.int8)
        data[f"stop_reason_{side}"] = ("alpha", np.array(
            [_reason(getattr(r, f"stop_reason_{side}")) for r in results], dtype=np.int8))
    ds = xr.Dataset(data)
    ds["error_lower"].attrs["long_name"] = ("lower bound on the Bayes-optimal error (the "
                                            "symmetric part's noise on both parts)")
    ds["error_upper"].attrs["long_name"] = ("upper bound on the Bayes-optimal error (the "
                                            "antisymmetric part's noise on both parts)")
    ds.attrs["noise_ratio"] = float(results[0].noise_ratio) if results else math.nan
    ds.attrs["bounds"] = 1
    return ds
