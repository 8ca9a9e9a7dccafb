"""The attention-indexed model (docs/theory.md §1): teacher, tokens, attention indices, outputs.

Sizes: ``r = round(rho d)``, ``n = round(alpha d^2)``.  The teacher is
``S* = W* W*^T / sqrt(r d)``; each sample is a ``T x d`` block of i.i.d. N(0, 1) tokens; the
attention index is the symmetric ``T x T`` matrix ``h_ab = (x_a^T S x_b - delta_ab Tr S) / sqrt(d)``
and the output is made from it by an output channel (:mod:`aimlib.channels`: softmax, hardmax,
Gaussian noise), which also says how labels are stored.

Memory is ``O(n T d)`` at most and ``O(chunk T d + d^2)`` when the tokens are regenerated chunk
by chunk: tokens are drawn in fixed chunks of :data:`CHUNK` samples, each from its own
``SeedSequence`` child, so any chunk is reproducible bit for bit from the seed alone and a data
file need not store them.  Nothing of size ``n d^2`` is ever formed.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from aimlib.channels import (
    Channel,
    channel_class,
    hardmax_output,
    make_channel,
    one_hot,
    softmax_output,
)
from aimlib.channels.base import Whitened
from aimlib.core.kernels import mix_tokens, pair_dots
from aimlib.core.options import CHUNK
from aimlib.core.validation import check_alpha, check_d, check_rho, check_seed
from aimlib.prior import DEFAULT as DEFAULT_PRIOR
from aimlib.prior import Prior, make_prior
from aimlib.tokens import GAUSSIAN, TokenLaw, make_tokens, sqrt_corr

__all__ = [
    "ATTENTIONS",
    "CHUNK",
    "TeacherData",
    "sizes",
    "seed_sequence",
    "teacher",
    "attention_indices",
    "softmax_output",
    "hardmax_output",
    "generate",
    "estimation_error",
    "mix_tokens",
    "one_hot",
]



#: The attention models: ``"self"`` (one token sequence, the paper's) and ``"cross"`` (queries
#: and keys from two sequences, docs/theory.md §15.2).
ATTENTIONS = ("self", "cross")


def cross_indices(X: np.ndarray, S: np.ndarray, T_q: int) -> np.ndarray:
    """``h_ab = x_a^T S z_b / sqrt(d)`` for a block of cross-attention samples: ``X`` holds the
    ``T_q`` queries then the keys, ``(m, T_q + T_k, d)``; returns ``(m, T_q, T_k)``."""
    m, _, d = X.shape
    Xq = np.ascontiguousarray(X[:, :T_q])
    XS = (Xq.reshape(m * T_q, d) @ S).reshape(m, T_q, d)  # one GEMM
    H = np.empty((m, T_q, X.shape[1] - T_q))
    pair_dots(XS, X[:, T_q:], H)
    H /= math.sqrt(d)
    return H


def sizes(alpha: float, rho: float, d: int) -> tuple[int, int]:
    """``(r, n) = (round(rho d), round(alpha d^2))``, each at least 1."""
    alpha, rho, d = check_alpha(alpha), check_rho(rho), check_d(d)
    return max(1, int(round(rho * d))), max(1, int(round(alpha * d * d)))


def seed_sequence(seed: int, *key) -> np.random.SeedSequence:
    """A ``SeedSequence`` from an integer seed and a key of parameters (stable across runs).

    The key (e.g. channel, T, rho, d, alpha, beta) is hashed with SHA-256, so that every parameter
    point gets independent randomness while a given point is reproducible bit for bit.
    """
    check_seed(seed)
    text = "|".join(repr(k) for k in key).encode()
    digest = int.from_bytes(hashlib.sha256(text).digest()[:16], "little")
    return np.random.SeedSequence([int(seed), digest])


def teacher(d: int, r: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Teacher ``W*`` (``d x r``, N(0, 1)) and ``S* = W* W*^T / sqrt(r d)``."""
    W = rng.standard_normal((d, r))
    return W, (W @ W.T) / math.sqrt(r * d)


def attention_indices(X: np.ndarray, S: np.ndarray, corr: float = 0.0) -> np.ndarray:
    """``h_ab = (x_a^T S x_b - C_ab Tr S) / sqrt(d)`` for a block of samples.

    ``C_ab = E[x_a . x_b] / d`` is the token covariance: ``delta_ab`` for i.i.d. tokens (the
    paper's model), ``delta_ab + c (1 - delta_ab)`` for correlated tokens, so that the index is
    centred under every token law (docs/theory.md §13).

    Parameters
    ----------
    X : numpy.ndarray
        Tokens, shape ``(m, T, d)``.
    S : numpy.ndarray
        Symmetric ``d x d`` matrix.
    corr : float
        Token correlation ``c`` (0: i.i.d. tokens).

    Returns
    -------
    numpy.ndarray
        Shape ``(m, T, T)``.
    """
    m, T, d = X.shape
    X = np.ascontiguousarray(X)
    XS = (X.reshape(m * T, d) @ S).reshape(m, T, d)  # one GEMM, not m small ones
    H = np.empty((m, T, T))
    pair_dots(XS, X, H)
    idx = np.arange(T)
    trace = np.trace(S)
    if corr:
        H -= corr * trace
        H[..., idx, idx] -= (1.0 - corr) * trace
    else:
        H[..., idx, idx] -= trace
    H /= math.sqrt(d)
    return H


def estimation_error(S_hat: np.ndarray, S_star: np.ndarray) -> float:
    """``E = (1/d) ||S_hat - S*||_F^2``."""
    d = S_star.shape[0]
    return float(np.sum((S_hat - S_star) ** 2) / d)


@dataclass
class TeacherData:
    """A teacher and its labelled samples for one ``(channel, T, param, rho, d, alpha, seed)``.

    Tokens are not stored: :meth:`tokens` regenerates any range of samples from
    ``token_entropy`` bit for bit.  ``labels`` are in the channel's storage layout
    (:meth:`aimlib.channels.Channel.label_shape`: softmax and Gaussian outputs ``(n, T, T)``,
    hardmax argmax indices ``(n, T)``); ``param`` is the channel's parameter (``beta``,
    ``delta``; 1.0 for hardmax); ``token_law`` draws the tokens (:mod:`aimlib.tokens`).
    """

    channel: str
    T: int
    param: float
    rho: float
    alpha: float
    d: int
    seed: int
    W: np.ndarray
    labels: np.ndarray
    token_entropy: tuple[int, ...]
    token_law: TokenLaw = GAUSSIAN
    #: The teacher's prior (:data:`aimlib.prior.PRIORS`; ``None``: the tied prior at ``rho``).
    prior: Prior | None = None
    #: :data:`ATTENTIONS`: ``"self"`` (``T`` tokens per sample) or ``"cross"`` (``T_q`` queries,
    #: then ``T`` keys; the channel acts over the keys of each query row).
    attention: str = "self"
    #: Query tokens per sample (cross-attention; ``None``: ``T``).
    T_q: int | None = None
    S: np.ndarray = field(init=False, repr=False)
    ch: Channel = field(init=False, repr=False)

    def __post_init__(self):
        cls = channel_class(self.channel)
        self.ch = cls(T=self.T, **cls.param_kwargs(self.param))  # made once, validated
        self.prior = make_prior(self.prior, self.rho)
        if self.attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}, got "
                             f"attention={self.attention!r}")
        self.T_q = self.T if self.T_q is None else int(self.T_q)
        r, n = sizes(self.alpha, self.rho, self.d)
        if self.prior.FACTORISED and self.W.shape != (self.d, r):
            raise ValueError(f"W has shape {self.W.shape}, expected {(self.d, r)}")
        if self.labels.shape[0] != n:
            raise ValueError(f"labels have {self.labels.shape[0]} samples, expected n={n}")
        self.S = self.prior.matrix(self.W)

    @property
    def r(self) -> int:
        """Rank of the teacher's factor (the tied prior's ``rho d``)."""
        return self.W.shape[1] if self.prior.FACTORISED else self.prior.width(self.d)

    @property
    def n(self) -> int:
        return self.labels.shape[0]

    @property
    def tied_self(self) -> bool:
        """The paper's model: self-attention with a symmetric ``S*``."""
        return self.attention == "self" and self.prior.SYMMETRIC

    @property
    def n_tokens(self) -> int:
        """Tokens per sample: ``T``, or ``T_q + T`` in cross-attention."""
        return self.T + (self.T_q if self.attention == "cross" else 0)

    def require_tied_self(self, what: str) -> None:
        """``ValueError`` naming the key where ``what`` needs the paper's model."""
        if self.attention != "self":
            raise ValueError(f"attention={self.attention!r}: {what} runs on self-attention only "
                             "(cross-attention has its state evolution, "
                             "aimlib.theory.cross_attention)")
        if not self.prior.SYMMETRIC:
            raise ValueError(f"prior={self.prior.name!r}: {what} needs a symmetric S* "
                             "(prior='tied')")

    def row_or_pair_labels(self, h: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """Labels of indices ``h``: the channel's own for the paper's model; over the keys of
        each row (:meth:`aimlib.channels.Channel.row_labels`) where ``h`` is not symmetric."""
        if self.tied_self:
            return self.ch.labels(h, rng)
        return self.ch.row_labels(h, rng)

    def _chunk_rng(self, k: int) -> np.random.Generator:
        ss = np.random.SeedSequence(list(self.token_entropy), spawn_key=(1, k))
        return np.random.default_rng(ss)

    def tokens(self, start: int = 0, stop: int | None = None,
               dtype: type = np.float64) -> np.ndarray:
        """Tokens of samples ``start:stop``, shape ``(stop - start, n_tokens, d)`` (queries
        first in cross-attention), regenerated."""
        stop = self.n if stop is None else min(stop, self.n)
        if not 0 <= start <= stop:
            raise ValueError(f"bad sample range {start}:{stop}")
        out = np.empty((stop - start, self.n_tokens, self.d), dtype=dtype)
        k0, k1 = start // CHUNK, (stop - 1) // CHUNK if stop > start else start // CHUNK - 1
        for k in range(k0, k1 + 1):
            lo = k * CHUNK
            m = min(CHUNK, self.n - lo)
            block = self.token_law.draw(self._chunk_rng(k), (m, self.n_tokens, self.d))
            a, b = max(start, lo), min(stop, lo + m)
            out[a - start : b - start] = block[a - lo : b - lo]
        return out

    def white_tokens(self, start: int = 0, stop: int | None = None,
                     dtype: type = np.float64) -> np.ndarray:
        """:meth:`tokens` whitened, ``C^(-1/2) X_mu`` (the tokens themselves for i.i.d. laws):
        what AMP and the spectral estimator read (docs/theory.md §13.3)."""
        X = self.tokens(start, stop, dtype)
        white = self.token_law.whitener(self.T)
        if white is None:
            return X
        return np.einsum("ab,mbd->mad", white.astype(X.dtype), X)

    def algorithm_channel(self, ch: Channel | None = None):
        """The channel as AMP and the spectral estimator see it on :meth:`white_tokens`: ``ch``
        (default :attr:`ch`) itself for i.i.d. tokens, composed with ``h = C^(1/2) h~ C^(1/2)``
        for correlated ones (:class:`aimlib.channels.base.Whitened`)."""
        ch = self.ch if ch is None else ch
        if not self.token_law.corr:
            return ch
        return Whitened(ch, sqrt_corr(self.T, self.token_law.corr))

    def indices(self, X: np.ndarray, S: np.ndarray) -> np.ndarray:
        """The attention indices of tokens ``X`` under ``S``, centred for this token law:
        ``(m, T, T)`` in self-attention, ``(m, T_q, T)`` in cross-attention."""
        if self.attention == "cross":
            return cross_indices(X, S, self.T_q)
        return attention_indices(X, S, self.token_law.corr)

    def chunks(self, size: int = CHUNK) -> Iterator[tuple[int, int, np.ndarray]]:
        """Iterate ``(start, stop, tokens)`` over the samples."""
        for lo in range(0, self.n, size):
            hi = min(self.n, lo + size)
            yield lo, hi, self.tokens(lo, hi)

    def outputs(self) -> np.ndarray:
        """Outputs ``y`` of shape ``(n, T, T)`` (one-hot rows for hardmax)."""
        return self.ch.outputs(self.labels)

    def estimation_error(self, S_hat: np.ndarray) -> float:
        """``(1/d) ||S_hat - S*||_F^2``."""
        return estimation_error(S_hat, self.S)

    def overlaps(self, S_hat: np.ndarray) -> tuple[float, float, float]:
        """``(m, Q, Q0)``: ``(1/d) Tr(S_hat S*)``, ``(1/d) ||S_hat||^2`` and ``(1/d) ||S*||^2``."""
        d = self.d
        return (float(np.sum(S_hat * self.S)) / d, float(np.sum(S_hat * S_hat)) / d,
                float(np.sum(self.S * self.S)) / d)

    def test_errors(self, S_hat: np.ndarray, n_test: int, rng: np.random.Generator,
                    chunk: int = CHUNK) -> np.ndarray:
        """``||y(X; S_hat) - y(X; S*)||_F^2`` on each of ``n_test`` fresh samples drawn from
        ``rng``, ``chunk`` at a time (the same draws as one call: memory O(chunk T d))."""
        ch = self.ch
        out = np.empty(int(n_test))
        for lo in range(0, int(n_test), chunk):
            hi = min(int(n_test), lo + chunk)
            X = self.token_law.draw(rng, (hi - lo, self.n_tokens, self.d))
            y_hat = ch.predict(self.indices(X, S_hat))
            y = ch.predict(self.indices(X, self.S))
            out[lo:hi] = np.sum((y_hat - y) ** 2, axis=(-2, -1))
        return out

    def fresh(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``n`` fresh labelled samples of the teacher, drawn from ``rng``: tokens
        ``(n, n_tokens, d)`` and outputs ``(n, T_q, T)`` (with the channel's label noise)."""
        X = self.token_law.draw(rng, (int(n), self.n_tokens, self.d))
        return X, self.ch.outputs(self.row_or_pair_labels(self.indices(X, self.S), rng))

    def test_error(self, S_hat: np.ndarray, n_test: int, rng: np.random.Generator) -> float:
        """Mean of :meth:`test_errors`: the plug-in test error of ``S_hat`` on fresh samples."""
        return float(np.mean(self.test_errors(S_hat, n_test, rng)))


def generate(
    channel: str | Channel,
    alpha: float,
    rho: float,
    T: int | None,
    d: int,
    seed: int,
    *,
    base_seed: int = 0,
    tokens: str | dict | TokenLaw | None = None,
    prior: str | Prior | None = None,
    attention: str = "self",
    T_q: int | None = None,
    **params,
) -> TeacherData:
    """Draw a teacher and ``n = round(alpha d^2)`` labelled samples, reproducibly from ``seed``.

    Parameters
    ----------
    channel : str or Channel
        A channel object (:func:`aimlib.channels.make_channel`) or a name in
        :data:`aimlib.channels.CHANNELS` with its parameters in ``params``.
    alpha, rho : float
        Sample and width ratios, both ``> 0``.
    T : int or None
        Tokens per sample (hardmax: 2; Gaussian: from 1); None: the channel's (an object's own,
        or a name's smallest).
    d : int
        Embedding dimension.
    seed : int
        Seed index (0, 1, ...); with ``base_seed`` and the parameters it determines every draw.
    base_seed : int
        The configuration's seed.
    tokens : str, dict or TokenLaw, optional
        The token law (:func:`aimlib.tokens.make_tokens`): ``"gaussian"`` (default, the
        paper's), ``"rademacher"``, ``"uniform"``, ``{"law": "student_t", "nu": 6}``,
        ``{"law": "correlated", "c": 0.3}``.  The teacher and the token generator depend only
        on the seed and the point, not on the law, so that the laws can be compared on the same
        teachers.
    prior : str or Prior, optional
        The teacher's prior (:func:`aimlib.prior.make_prior`; default the paper's, ``"tied"``).
        A prior other than the tied one draws its teacher from a seed key that also holds its
        name.  The untied prior (``S* = K Q^T / sqrt(r d)``) in self-attention gives indices
        that are not symmetric, labelled row by row; it needs ``T >= 2`` (at ``T = 1`` the
        index sees only the symmetric part of ``S*``).
    attention : {"self", "cross"}
        ``"cross"``: each sample is ``T_q`` queries and ``T`` keys, ``h_ab = x_a^T S z_b /
        sqrt(d)`` (``T_q x T``), the channel applied over the keys of each query row
        (docs/theory.md §15.2).  Other than ``"self"``, it and ``T_q`` join the seed key.
    T_q : int, optional
        Query tokens per sample in cross-attention (default ``T``).
    **params
        With a channel name, its own parameter (``beta`` for the softmax, ``delta`` for the
        Gaussian channel).

    Notes
    -----
    The teacher comes from spawn key 0 of the point's seed sequence, token chunk ``k`` from
    ``(1, k)`` and the label noise of a noisy channel's chunk ``k`` from ``(4, k)`` (GD's
    initialisations use 2, fresh test samples 3 and GD's held-out samples 5), so any chunk is
    reproducible on its own.
    """
    ch = make_channel(channel, T=T, **params)
    channel, T = ch.name, ch.T
    law = make_tokens(tokens)
    ch.check_tokens(law)
    r, n = sizes(alpha, rho, d)
    pr = make_prior(prior, rho)
    T_q = _check_attention(attention, pr, T, T_q, law)
    if not (law.is_gaussian or pr.TOKEN_LAWS):
        raise ValueError(f"tokens: {law.tag} tokens are not implemented for the {pr.name} prior "
                         "(Gaussian tokens only)")
    check_seed(seed)
    key = (channel, int(T), float(rho), int(d), float(alpha), ch.param_value)
    if pr.name != DEFAULT_PRIOR:
        key += (pr.name,)
    if attention != "self":
        key += (attention, T_q)
    ss = seed_sequence(base_seed, int(seed), *key)
    rng_teacher = np.random.default_rng(np.random.SeedSequence(ss.entropy, spawn_key=(0,)))
    W = pr.sample(d, rng_teacher)
    entropy = tuple(int(e) for e in np.atleast_1d(ss.entropy))
    shape = ch.label_shape(n)
    labels = np.empty((n, T_q) + shape[2:] if attention == "cross" else shape,
                      dtype=ch.LABEL_DTYPE)
    data = TeacherData(channel, int(T), ch.param_value, float(rho), float(alpha), int(d),
                       int(seed), W, labels, entropy, law, pr, attention, T_q)
    for lo, hi, X in data.chunks():
        noise = (np.random.default_rng(np.random.SeedSequence(list(entropy),
                                                              spawn_key=(4, lo // CHUNK)))
                 if ch.NOISY else None)
        labels[lo:hi] = data.row_or_pair_labels(data.indices(X, data.S), noise)
    return data


def _check_attention(attention, pr: Prior, T: int, T_q, law: TokenLaw) -> int:
    """The query tokens per sample, after the checks of :func:`generate` (each names its key)."""
    if attention not in ATTENTIONS:
        raise ValueError(f"attention must be one of {ATTENTIONS}, got attention={attention!r}")
    if attention == "self":
        if T_q is not None and int(T_q) != T:
            raise ValueError(f"T_q={T_q!r}: self-attention has one sequence of T={T} tokens")
        if not pr.SYMMETRIC and T < 2:
            raise ValueError(f"T={T}: untied self-attention at T = 1 sees only the symmetric "
                             "part of S* (its one index is x^T S x); use T >= 2")
        return T
    if not law.is_gaussian:
        raise ValueError(f"tokens: cross-attention takes Gaussian tokens only, got {law.tag}")
    T_q = T if T_q is None else T_q
    if isinstance(T_q, bool) or not float(T_q).is_integer() or int(T_q) < 1:
        raise ValueError(f"T_q must be an integer >= 1, got T_q={T_q!r}")
    return int(T_q)
