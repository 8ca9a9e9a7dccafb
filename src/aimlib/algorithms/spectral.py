"""The spectral estimator: AMP's output step from the prior's mean, denoised once
(docs/theory.md §4.1).

From the prior's mean ``S0 = E S*`` (``sqrt(rho) I`` for the tied prior) the indices
``omega = h(S0)`` are the part of ``h`` the prior already knows, and the rest has variance
``V0 = Q0 - q0`` (1 for the tied prior).  One pass over the data gives the label-weighted matrix

    B = sum_mu (X_mu^T G_mu X_mu - Tr(G_mu) I),   G_aa = g_aa, G_ab = g_ab / 2,
    g_mu = g_out(y_mu, h_mu(S0), V0),

and ``R = S0 + 2 B / (d^{3/2} q_hat)`` is, as ``d -> infinity``, the teacher seen through
Gaussian (GOE) noise of variance ``1 / q_hat`` with ``q_hat = channel.q_hat(alpha, q0, V0)``.
The prior's denoiser (the RIE) denoises it: ``S_hat = RIE(R, 1 / q_hat)``, whose error the state
evolution predicts in one step, ``mmse(1 / q_hat(alpha, q0, V0))``
(:func:`aimlib.theory.state_evolution.one_step`).  This is AMP's first iteration.  It costs one
pass over the data (two GEMMs per token chunk) and one eigendecomposition, nothing Bayes-optimal
beyond the output function, so it reaches d = 1000 on a laptop; it is the baseline that any
iterative algorithm should beat.

In cross-attention (docs/theory.md §15.3) the pass is cross-attention AMP's
(:class:`aimlib.algorithms.amp_ops.CrossOps`: ``B = sum_mu X_q^T G_mu X_k``, every index of
weight 1), the step ``w B / (d^{3/2} q_hat)`` (symmetrised for the tied prior) and the denoiser
the prior's (one SVD for the untied one); the prediction is one cross-attention SE step,
:func:`aimlib.theory.cross_attention.one_step`.  Untied self-attention has no Bayes-optimal
denoiser to take the step with, and is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from aimlib.algorithms.amp import Tokens, output_pass
from aimlib.algorithms.amp_ops import CrossOps
from aimlib.algorithms.result import Result
from aimlib.algorithms.spectral_options import SpectralOptions
from aimlib.channels import make_channel
from aimlib.core.options import CHUNK, TOKEN_BUDGET, validate
from aimlib.model import TeacherData

__all__ = ["SpectralResult", "STOP_REASONS", "run"]

#: Why a spectral run stopped: it always takes its one step; ``"nan"`` if ``q_hat`` or ``B`` is
#: not finite.
STOP_REASONS = ("one_step", "nan")


@dataclass
class SpectralResult(Result):
    """Outcome of the spectral estimator (:class:`aimlib.algorithms.result.Result`).

    Attributes
    ----------
    error : float
        ``(1/d) ||S_hat - S*||_F^2``.
    converged : bool
        Whether the step was finite (a one-step estimator has no iteration to converge).
    stop_reason : str
        One of :data:`STOP_REASONS`.
    q_hat : float
        The precision of the effective observation, from the samples.
    S_hat : numpy.ndarray
        The estimate.
    """

    error: float
    converged: bool
    stop_reason: str
    q_hat: float
    S_hat: np.ndarray = field(repr=False)

    ALGORITHM: ClassVar[str] = "the spectral estimator"
    UNIT: ClassVar[str] = "pass over the data"
    STOP_REASONS: ClassVar[tuple[str, ...]] = STOP_REASONS
    REASON_TEXT: ClassVar[dict[str, str]] = {"one_step": "took its step",
                                             "nan": "hit a NaN"}

    @property
    def iterations(self) -> int:
        """One pass."""
        return 1

    def to_dataset(self):
        """The run as an ``xarray.Dataset`` of scalars."""
        import xarray as xr  # xarray only when a dataset is built (the workflow parses without it)

        return xr.Dataset({
            "error": ((), self.error),
            "converged": ((), np.int8(self.converged)),
            "stop_reason": ((), np.int8(STOP_REASONS.index(self.stop_reason))),
            "q_hat": ((), self.q_hat),
        })


def run(data: TeacherData, *, variant: str = "exact", chunk: int = CHUNK,
        token_budget: float = TOKEN_BUDGET, dtype: str = SpectralOptions.dtype,
        progress=None) -> SpectralResult:
    """The spectral estimator on teacher data (module docs).

    Parameters
    ----------
    data : TeacherData
        Teacher and labels.
    variant : str
        Output function of the channel (hardmax: ``"exact"`` or the published ``"density"``).
    chunk, token_budget, dtype
        As in :func:`aimlib.algorithms.amp.run`: samples per block, bytes of tokens kept in memory,
        the precision of the tokens and the two products.
    progress : None
        Accepted for the common signature of the algorithms; a one-step run has no progress.
    """
    if data.attention == "self":
        data.require_tied_self("the spectral estimator")
    validate(SpectralOptions, {"dtype": dtype})
    d, T, n = data.d, data.T, data.n
    ch = make_channel(data.channel, **{**data.ch.params, "variant": variant})
    ch.check_tokens(data.token_law)
    ch = data.algorithm_channel(ch)
    pr = data.prior
    S0, V0 = pr.mean(d), pr.variance
    tokens = Tokens(data, int(chunk), token_budget, dtype)
    if data.attention == "cross":
        ops = CrossOps(data, ch, tokens, general=False)
        ops.reset()
        B = ops.output_pass(S0, V0, 0.0)
        q_hat = ops.q_hat(n / d**2, V0)
        if not (math.isfinite(q_hat) and q_hat > 0 and np.all(np.isfinite(B))):
            return SpectralResult(math.nan, False, "nan", q_hat, np.full((d, d), np.nan))
        S_hat = pr.denoise(S0 + ops.direction(B, q_hat), 1.0 / q_hat)
        return SpectralResult(data.estimation_error(S_hat), True, "one_step", q_hat, S_hat)
    g = np.zeros((n, T, T))
    B = output_pass(tokens, S0, ch, data.outputs(), g, np.zeros((n, T, T)), V0)
    q_hat = ch.amp_q_hat(n / d**2, g, V0)
    if not (math.isfinite(q_hat) and q_hat > 0 and np.all(np.isfinite(B))):
        return SpectralResult(math.nan, False, "nan", q_hat, np.full((d, d), np.nan))
    R = S0 + 2.0 * (0.5 * (B + B.T)) / (d**1.5 * q_hat)
    S_hat = pr.denoise(R, 1.0 / q_hat)
    return SpectralResult(data.estimation_error(S_hat), True, "one_step", q_hat, S_hat)
