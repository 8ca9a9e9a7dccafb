"""What every output channel provides (docs/theory.md §3, §4, §11): the :class:`Channel` base.

A channel is the one home of everything that depends on how the labels are made from the
attention indices ``h``: drawing the labels and their storage layout, the output function
``g_out`` and ``log Z_out`` for AMP, the state-evolution output update ``q_hat``, the rescaled
sample ratio ``alpha_bar``, the values of ``T`` and of its parameter it accepts, its thresholds,
its label in figures, and the cost constant the resource model uses.  The rest of aimlib (model,
state evolution, AMP, GD, the configuration and the workflow) asks the channel and knows no
channel by name; a new channel is a module with a subclass and one line in
:data:`aimlib.channels.CHANNELS`.

Pair coordinates ``a <= b`` carry weights ``w_aa = 2`` and ``w_ab = 1`` (``Var h_aa = 2 Q0``,
``Var h_ab = Q0``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from aimlib.core.validation import check_positive

__all__ = ["Channel", "TestError", "normal_rule", "pair_weights", "check_T", "Whitened"]

#: Step and half-range of the trapezoid rule for Gaussian integrals.  The softmax integrands
#: ``sigmoid(beta u)`` have poles at ``|Im u| = pi / beta``, which made a 120-node Gauss-Hermite
#: rule converge slowly (0.7 % off at beta = 4); the trapezoid rule on the real line converges
#: like ``exp(-2 pi a / step)`` with ``a`` the distance to the nearest pole: halving the step
#: changes the T = 2 results by < 1e-10 up to beta = 4 (tests/test_generalisation.py).
NORMAL_STEP = 0.04
NORMAL_RANGE = 9.0


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
        ``"closed form"``, ``"quadrature"`` or ``"rqmc"``.
    """

    __test__ = False  # not a pytest class
    value: float
    abserr: float
    method: str


def normal_rule(step: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of ``E f(z)``, ``z ~ N(0, 1)``: the trapezoid rule with step
    :data:`NORMAL_STEP` on ``[-NORMAL_RANGE, NORMAL_RANGE]`` (weights sum to 1 - 2e-19)."""
    h = NORMAL_STEP if step is None else step
    k = round(NORMAL_RANGE / h)
    x = h * np.arange(-k, k + 1)
    return x, h * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def pair_weights(T: int) -> np.ndarray:
    """``w_ab`` as a ``T x T`` matrix: 2 on the diagonal (``Var h_aa = 2 Q0``), 1 off it."""
    return np.where(np.eye(T, dtype=bool), 2.0, 1.0)


def check_T(T, name: str, t_min: int, t_max: int | None) -> int:
    """``T`` as an int in ``[t_min, t_max]``, or a ``ValueError`` naming ``T`` and the channel."""
    if t_max == t_min:
        text = f"T must be {t_min}: the {name} channel is implemented for T = {t_min} only"
    else:
        text = (f"T must be an integer >= {t_min}" if t_max is None
                else f"T must be an integer in [{t_min}, {t_max}]") + f" for the {name} channel"
    if isinstance(T, bool) or not isinstance(T, int | float | np.integer) \
            or not float(T).is_integer():
        raise ValueError(f"{text}, got T={T!r}")
    T = int(T)
    if T < t_min or (t_max is not None and T > t_max):
        raise ValueError(f"{text}, got T={T}")
    return T


class Channel:
    """Base class of the output channels (subclasses are frozen dataclasses).

    Class attributes
    ----------------
    name : str
        Registry name (``aimlib.channels.CHANNELS``), used in file names and the config.
    label : str
        LaTeX label for figures.
    T_MIN, T_MAX : int, int or None
        Tokens per sample the channel supports.
    PARAM : str or None
        Name of the channel's scalar parameter (``"beta"``, ``"delta"``), also the keyword of
        :func:`aimlib.theory.state_evolution.solve`, :func:`aimlib.model.generate` and the
        config key.
    PARAM_DEFAULT : float
        Its default; for a channel without a parameter, the value recorded in file names
        and seed keys (1.0, as the first two channels always had).
    VARIANTS : tuple of str
        Output functions AMP and SE can use; the first is the Bayes-optimal one.
    NOISY : bool
        Whether drawing labels consumes randomness (beyond the tokens).
    SUPPORTS_GD : bool
        Whether :mod:`aimlib.algorithms.gd` can fit it (the channel then has :meth:`gd_layer`, and
        ``gd_layer_xp`` for the array-API backends).
    SE_USES_PARAM : bool
        Whether state evolution depends on the parameter (not for the softmax's beta).
    G_OUT_SECONDS : float
        Seconds per sample per iteration of :meth:`g_out` at ``T = 2`` (the resource model
        scales it by ``T^2 / 4``).
    AMP_ITERATIONS : int
        Iterations of an AMP run (all attempts) that the cost estimate assumes, the mean
        measured over the workflow's runs (``benchmarks/README.md``, "The cost model against
        measured jobs").
    LABEL_DTYPE : numpy dtype
        Storage type of the labels.
    OMEGA_FREE : bool
        Whether the SE output update depends on ``omega``'s law not at all (only on the law of
        ``h - omega``), so that i.i.d. tokens of any kurtosis leave it unchanged
        (docs/theory.md §13).
    SUPPORTS_CORRELATED : bool
        Whether the channel has :meth:`g_out_whitened` and an SE for correlated tokens.
    SCALE_INVARIANT : bool
        Whether the labels' law is unchanged by ``S -> lambda S`` for every ``lambda > 0``
        (hardmax): then the posterior mean's trace is known exactly and AMP keeps to it
        (docs/theory.md §4.2).
    """

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    T_MIN: ClassVar[int] = 2
    T_MAX: ClassVar[int | None] = None
    PARAM: ClassVar[str | None] = None
    PARAM_DEFAULT: ClassVar[float] = 1.0
    VARIANTS: ClassVar[tuple[str, ...]] = ("exact",)
    NOISY: ClassVar[bool] = False
    SUPPORTS_GD: ClassVar[bool] = False
    SE_USES_PARAM: ClassVar[bool] = True
    G_OUT_SECONDS: ClassVar[float] = 2e-6
    #: hardmax runs: means of 28-91 iterations per figure of the quick preset, medians 20-71
    #: over fig1a's grid at d = 100-300 (converged), 20-60 for fig7 at d = 200
    AMP_ITERATIONS: ClassVar[int] = 60
    LABEL_DTYPE: ClassVar[type] = np.float64
    OMEGA_FREE: ClassVar[bool] = True
    SUPPORTS_CORRELATED: ClassVar[bool] = False
    SCALE_INVARIANT: ClassVar[bool] = False

    T: int = 2

    # ------------------------------------------------------------------ parameters
    def __post_init__(self):
        object.__setattr__(self, "T", check_T(self.T, self.name, self.T_MIN, self.T_MAX))
        variant = getattr(self, "variant", "exact")
        if variant not in self.VARIANTS:
            raise ValueError(f"variant must be one of {self.VARIANTS} for the {self.name} "
                             f"channel, got variant={variant!r}")
        if self.PARAM is not None:
            self.check_param(getattr(self, self.PARAM))

    @classmethod
    def check_param(cls, value) -> float:
        """Validate the channel's parameter (positive and finite unless overridden)."""
        return check_positive(value, cls.PARAM)

    @classmethod
    def param_kwargs(cls, value: float) -> dict:
        """``{PARAM: value}``: the keyword that sets the channel's parameter (empty for a
        channel without one)."""
        return {cls.PARAM: value} if cls.PARAM else {}

    @classmethod
    def split_params(cls, kwargs: dict) -> tuple[dict, dict]:
        """Split keyword arguments into the channel's parameter and the rest."""
        mine = {k: v for k, v in kwargs.items() if k == cls.PARAM}
        return mine, {k: v for k, v in kwargs.items() if k not in mine}

    def with_variant(self, variant: str) -> Channel:
        """This channel with output function ``variant`` (one of :attr:`VARIANTS`)."""
        if variant not in self.VARIANTS:
            raise ValueError(f"variant must be one of {self.VARIANTS} for the {self.name} "
                             f"channel, got variant={variant!r}")
        if getattr(self, "variant", "exact") == variant:
            return self
        return dataclasses.replace(self, variant=variant)

    @property
    def param_value(self) -> float:
        """The parameter's value (``PARAM_DEFAULT`` for a channel without one)."""
        return float(getattr(self, self.PARAM)) if self.PARAM else float(self.PARAM_DEFAULT)

    @property
    def params(self) -> dict:
        """Keyword arguments that rebuild this channel with :func:`make_channel`."""
        out = {"T": self.T}
        if self.PARAM:
            out[self.PARAM] = self.param_value
        if len(self.VARIANTS) > 1:
            out["variant"] = getattr(self, "variant", "exact")
        return out

    # ------------------------------------------------------------------ cost model
    @classmethod
    def g_out_seconds(cls, T: int) -> float:
        """Seconds per sample and AMP iteration of :meth:`g_out` at ``T`` (the resource model):
        ``G_OUT_SECONDS`` scaled by ``T^2 / 4``."""
        return cls.G_OUT_SECONDS * T * T / 4

    def se_point_seconds(self) -> float | None:
        """Seconds of one SE fixed point where it differs from the default of
        :data:`aimlib.pipeline.cost.SE_POINT_SECONDS` (None: the default)."""
        return None

    # ------------------------------------------------------------------ sample ratios
    def alpha_bar_factor(self, rho: float) -> float:
        """``alpha_bar / alpha``: the scale on which curves of different T (or rho) collapse."""
        raise NotImplementedError

    def perfect_recovery_threshold(self, prior) -> float | None:
        """``alpha`` at which the Bayes-optimal error reaches 0 (``None``: never, or unknown),
        for a :class:`aimlib.prior.Prior` (a number: ``rho`` of the tied prior)."""
        return None

    # ------------------------------------------------------------------ data
    def label_shape(self, n: int) -> tuple[int, ...]:
        """Shape of the stored labels of ``n`` samples (default: the outputs, ``(n, T, T)``)."""
        return (n, self.T, self.T)

    def labels(self, h: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """Stored labels of a block of indices ``h`` (``(m, T, T)``); ``rng`` if ``NOISY``."""
        return self.predict(h)

    def outputs(self, labels: np.ndarray) -> np.ndarray:
        """The outputs ``y`` of shape ``(n, T, T)`` from stored labels."""
        return labels

    def predict(self, h: np.ndarray) -> np.ndarray:
        """The noiseless output ``y(h)``, shape ``(m, T, T)`` (what a predictor outputs)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ AMP and SE
    def g_out(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """``g_ab = d log Z_out / d omega_ab`` on samples, ``(n, T, T)`` symmetric."""
        raise NotImplementedError

    def log_z_out(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """``log Z_out(y | omega, V)`` per sample."""
        raise NotImplementedError

    def q_hat(self, alpha: float, q: float, V: float) -> float:
        """SE output update ``2 alpha E[sum_{a<=b} w_ab g_ab^2]`` at overlap q and variance V."""
        raise NotImplementedError

    # ------------------------------------------------------------------ cross-attention rows
    def row_information(self, q: float, V: float, T_k: int) -> float:
        """``E[sum_b g_b^2]`` over one query row of cross-attention, ``T_k`` independent indices
        ``h_b ~ N(omega_b, V)``, ``omega_b ~ N(0, q)``, the channel applied over the keys
        (docs/theory.md §15.2)."""
        raise NotImplementedError(f"the {self.name} channel has no cross-attention rows")

    def row_labels(self, h: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """The labels of cross-attention rows of indices ``h`` ``(n, T_k)``: the channel applied
        over the keys (``rng`` for a noisy channel)."""
        raise NotImplementedError(f"the {self.name} channel has no cross-attention rows")

    def row_g_out(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """``g_b = d log Z / d omega_b`` of cross-attention rows, ``(n, T_k)``."""
        raise NotImplementedError(f"the {self.name} channel has no cross-attention rows")

    def row_log_z(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        """``log Z(y | omega, V)`` of cross-attention rows, ``(n,)``."""
        raise NotImplementedError(f"the {self.name} channel has no cross-attention rows")

    def amp_q_hat(self, alpha: float, g: np.ndarray, V: float) -> float:
        """AMP's ``q_hat`` from the samples ``g`` (default: ``2 alpha <sum_{a<=b} w g^2>``)."""
        T = self.T
        iu = np.triu_indices(T)
        w = pair_weights(T)[iu]
        return 2.0 * alpha * float(np.mean((g[:, iu[0], iu[1]] ** 2) @ w))

    # ------------------------------------------------------------------ token laws (§13)
    def check_tokens(self, law) -> None:
        """``ValueError`` where this channel's theory and AMP do not cover the token law
        ``law`` (:mod:`aimlib.tokens`)."""
        if law.is_gaussian:
            return
        variant = getattr(self, "variant", "exact")
        if variant != "exact":
            raise ValueError(f"tokens: {law.tag} tokens need the exact output function, got "
                             f"variant={variant!r} (the published density variant is kept for "
                             "the paper's Gaussian tokens only)")
        if law.corr and not self.SUPPORTS_CORRELATED:
            raise ValueError(f"tokens: correlated tokens are not implemented for the "
                             f"{self.name} channel at T={self.T}")

    def q_hat_tokens(self, alpha: float, q: float, V: float, index) -> float:
        """SE output update under the index law ``index`` (:class:`aimlib.tokens.IndexLaw`).

        The default serves channels whose update depends only on the law of ``h - omega``
        (``OMEGA_FREE``): for i.i.d. tokens that law is the Gaussian-token one, so the update
        is :meth:`q_hat` (docs/theory.md §13.2)."""
        if index.gaussian:
            return self.q_hat(alpha, q, V)
        if index.corr and not self.SUPPORTS_CORRELATED:
            raise ValueError(f"tokens: correlated tokens are not implemented for the "
                             f"{self.name} channel")
        if not self.OMEGA_FREE:
            raise NotImplementedError(f"no state evolution for non-Gaussian tokens in the "
                                      f"{self.name} channel")
        return self.q_hat(alpha, q, V)

    def g_out_whitened(self, y: np.ndarray, omega: np.ndarray, V: float,
                       L: np.ndarray) -> np.ndarray:
        """``g_out`` in the whitened index ``h~ = L^-1 h L^-1`` of correlated tokens
        (``L = C^(1/2)``, docs/theory.md §13.3)."""
        raise ValueError(f"tokens: correlated tokens are not implemented for the {self.name} "
                         "channel")

    # ------------------------------------------------------------------ test error
    def plugin_test_error(self, m: float, Q: float, Q0: float, predictor: str):
        """Test error of ``y(h_hat)`` for an estimate with overlaps ``(m, Q)`` (docs/theory.md
        §10); returns a :class:`TestError`."""
        raise NotImplementedError(f"no test error for the {self.name} channel")

    def bayes_test_error(self, q: float, Q0: float):
        """Test error of the Bayes predictor ``E[y(h) | h_hat]`` at overlap ``q``."""
        raise NotImplementedError(f"no test error for the {self.name} channel")

    PREDICTORS: ClassVar[tuple[str, ...]] = ("bayes", "plugin")


class Whitened:
    """A channel seen from the whitened tokens ``C^(-1/2) X`` of correlated tokens: AMP and the
    spectral estimator call it as a channel of the Gaussian-token model whose output is the
    channel composed with ``h = L h~ L`` (``L = C^(1/2)``, docs/theory.md §13.3).  It forwards
    everything but the output function to ``base``, and has no array-API ``g_out_xp`` (its
    output function runs on the host)."""

    def __init__(self, base: Channel, L: np.ndarray):
        self.base = base
        self.L = np.asarray(L, dtype=np.float64)

    def g_out(self, y: np.ndarray, omega: np.ndarray, V: float) -> np.ndarray:
        return self.base.g_out_whitened(y, omega, V, self.L)

    def neg_divergence(self, *args, **kwargs):
        raise ValueError("tokens: correlated tokens need the Bayes-optimal AMP "
                         "(onsager='nishimori')")

    def __getattr__(self, name):
        if name in ("g_out_xp", "base", "L"):
            raise AttributeError(name)
        return getattr(self.base, name)
