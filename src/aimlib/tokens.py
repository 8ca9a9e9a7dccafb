"""Token laws beyond the paper's Gaussian tokens (docs/theory.md §13).

A token law says how the ``T x d`` block of one sample is drawn.  The paper (and every
default of aimlib) uses i.i.d. N(0, 1) entries; the laws here keep unit variance and change
either the fourth moment of the entries (i.i.d. laws with excess kurtosis ``kappa``) or the
covariance between the tokens of one sequence (:class:`Correlated`).

What each law changes in the theory, derived in docs/theory.md §13:

* i.i.d. entries with excess kurtosis ``kappa``: only the law of the diagonal indices' part
  that the data already reveal, ``sqrt(rho) sum_i (x_ai^2 - 1) / sqrt(d)``; state evolution keeps
  its form with ``Var omega_aa = 2 q + kappa rho`` (:class:`IndexLaw`).  AMP, GD and the spectral
  estimator run unchanged.
* correlated tokens ``x_a = sqrt(1 - c) z_a + sqrt(c) z_0``: the index is centred by its mean
  ``C_ab Tr S`` (``C`` the token covariance) and equals ``C^(1/2) h~ C^(1/2)``, with ``h~`` the
  Gaussian-token index of the whitened tokens ``C^(-1/2) X``.  The model is the Gaussian one
  with the output channel composed with that map; AMP and the spectral estimator work on the
  whitened tokens with the composed channel (:meth:`aimlib.channels.Channel.whitened`).

Every law draws from the same chunk generator as the Gaussian tokens, so the same seed gives
the same teacher under every law, and Gaussian tokens are bit for bit what they always were.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np

from aimlib.core.options import option, validate

__all__ = ["readable", "TokenLaw", "Gaussian", "Rademacher", "Uniform", "StudentT", "Correlated",
           "IndexLaw", "TOKEN_LAWS", "make_tokens", "GAUSSIAN"]


@dataclass(frozen=True)
class IndexLaw:
    """How the law of the SE's ``omega`` differs from the Gaussian-token one (theory §13).

    Attributes
    ----------
    diag_extra : float
        ``kappa m0^2`` added to ``Var omega_aa`` (``m0 = Tr S* / d -> sqrt(rho)``): the revealed
        part of the diagonal indices.
    corr : float
        Token correlation ``c`` (0 for i.i.d. tokens).
    """

    diag_extra: float = 0.0
    corr: float = 0.0

    @property
    def gaussian(self) -> bool:
        """Whether this is the Gaussian-token law (the paper's SE)."""
        return self.diag_extra == 0.0 and self.corr == 0.0


class TokenLaw:
    """Base of the token laws (frozen dataclasses).

    Class attributes
    ----------------
    name : str
        Registry name, used in the config (``tokens:``) and in file names.
    KURTOSIS : float
        Excess kurtosis of the entries of i.i.d. laws (overridden by a property where it
        depends on a parameter).
    """

    name: ClassVar[str] = ""
    PARAM: ClassVar[str | None] = None

    @property
    def kappa(self) -> float:
        """Excess kurtosis ``E x^4 - 3`` of one entry (i.i.d. laws)."""
        return 0.0

    @property
    def corr(self) -> float:
        """Correlation between two tokens of one sequence."""
        return 0.0

    @property
    def is_gaussian(self) -> bool:
        return self.name == "gaussian"

    @property
    def tag(self) -> str:
        """File-name part: the name, with the parameter where the law has one."""
        if self.PARAM is None:
            return self.name
        return f"{self.name}{_fmt(getattr(self, self.PARAM))}"

    @property
    def label(self) -> str:
        """Label in figures and tables."""
        return self.tag if self.PARAM is None else \
            f"{self.name} ({self.PARAM} = {readable(getattr(self, self.PARAM))})"

    @property
    def spec(self) -> str | dict:
        """The config form of this law (``"rademacher"``, ``{"law": "student_t", "nu": 6}``)."""
        if self.PARAM is None:
            return self.name
        return {"law": self.name, self.PARAM: float(getattr(self, self.PARAM))}

    @property
    def attrs(self) -> dict:
        """netCDF attributes of results under this law (none for Gaussian tokens, whose files
        are those of the paper's model)."""
        if self.is_gaussian:
            return {}
        return {"tokens": self.tag, "tokens_kurtosis": float(self.kappa),
                "tokens_corr": float(self.corr)}

    def draw(self, rng: np.random.Generator, shape: tuple[int, int, int]) -> np.ndarray:
        """Tokens of shape ``(m, T, d)``, float64, unit variance per entry."""
        raise NotImplementedError

    def index_law(self, rho: float) -> IndexLaw:
        """The SE's :class:`IndexLaw` at width ``rho`` (``m0^2 = rho``)."""
        return IndexLaw(diag_extra=self.kappa * rho, corr=self.corr)

    def covariance(self, T: int) -> np.ndarray:
        """``C_ab = E[x_a . x_b] / d``: the identity for i.i.d. laws."""
        c = self.corr
        return np.where(np.eye(T, dtype=bool), 1.0, c)

    def whitener(self, T: int) -> np.ndarray | None:
        """``C^(-1/2)`` (``T x T``), or None where the tokens are already white."""
        if self.corr == 0.0:
            return None
        return _inv_sqrt_corr(T, self.corr)


def _fmt(x: float) -> str:
    return f"{float(x):g}"


def readable(x: float) -> str:
    """A parameter as a person writes it: a simple fraction where it is one (``1/3``, not
    ``0.333333``), else three significant digits."""
    if float(f"{float(x):.6g}") == float(f"{float(x):.3g}"):  # a short decimal: 0.3, 10, 2.5
        return f"{float(x):g}"
    f = Fraction(float(x)).limit_denominator(12)
    # within the six digits of a file tag (0.333333 is 1/3)
    if f.denominator > 1 and abs(float(f) - float(x)) < 1e-6 * max(1.0, abs(float(x))):
        return f"{f.numerator}/{f.denominator}"
    return f"{float(x):.3g}"


def _inv_sqrt_corr(T: int, c: float) -> np.ndarray:
    """``C^(-1/2)`` for ``C = (1 - c) I + c J``: eigenvalue ``1 + (T - 1) c`` on the all-ones
    vector, ``1 - c`` on its complement."""
    J = np.full((T, T), 1.0 / T)
    return (np.eye(T) - J) / math.sqrt(1.0 - c) + J / math.sqrt(1.0 + (T - 1) * c)


def sqrt_corr(T: int, c: float) -> np.ndarray:
    """``C^(1/2)`` for ``C = (1 - c) I + c J``."""
    J = np.full((T, T), 1.0 / T)
    return (np.eye(T) - J) * math.sqrt(1.0 - c) + J * math.sqrt(1.0 + (T - 1) * c)


@dataclass(frozen=True)
class Gaussian(TokenLaw):
    """i.i.d. N(0, 1) entries: the paper's tokens (``kappa = 0``)."""

    name: ClassVar[str] = "gaussian"

    def draw(self, rng, shape):
        return rng.standard_normal(shape)


@dataclass(frozen=True)
class Rademacher(TokenLaw):
    """i.i.d. random signs (``kappa = -2``): ``x_ai^2 = 1``, so the diagonal indices lose the
    revealed part entirely."""

    name: ClassVar[str] = "rademacher"

    @property
    def kappa(self) -> float:
        return -2.0

    def draw(self, rng, shape):
        return rng.integers(0, 2, size=shape).astype(np.float64) * 2.0 - 1.0


@dataclass(frozen=True)
class Uniform(TokenLaw):
    """i.i.d. uniform on ``[-sqrt(3), sqrt(3)]`` (unit variance, ``kappa = -6/5``)."""

    name: ClassVar[str] = "uniform"

    @property
    def kappa(self) -> float:
        return -1.2

    def draw(self, rng, shape):
        s = math.sqrt(3.0)
        return rng.uniform(-s, s, size=shape)


@dataclass(frozen=True)
class StudentT(TokenLaw):
    """i.i.d. Student t with ``nu > 4`` degrees of freedom, scaled to unit variance
    (``kappa = 6 / (nu - 4)``; the fourth moment is infinite for ``nu <= 4``)."""

    nu: float = option(6.0, "degrees of freedom (kurtosis 6 / (nu - 4))", gt=4,
                       why="the kurtosis 6 / (nu - 4) of student_t tokens is infinite otherwise")
    name: ClassVar[str] = "student_t"
    PARAM: ClassVar[str | None] = "nu"
    DESCRIPTION: ClassVar[str] = "Student t entries scaled to unit variance"

    def __post_init__(self):
        validate(type(self), {"nu": self.nu})
        object.__setattr__(self, "nu", float(self.nu))

    @property
    def kappa(self) -> float:
        return 6.0 / (self.nu - 4.0)

    def draw(self, rng, shape):
        return rng.standard_t(self.nu, size=shape) * math.sqrt((self.nu - 2.0) / self.nu)


@dataclass(frozen=True)
class Correlated(TokenLaw):
    """Gaussian tokens correlated along the sequence: ``x_a = sqrt(1 - c) z_a + sqrt(c) z_0``,
    ``z`` i.i.d. N(0, I_d), ``0 <= c < 1`` (``E x_a . x_b / d = c`` for ``a != b``)."""

    c: float = option(0.0, "correlation of two tokens of a sequence", ge=0, lt=1,
                      why="c = 1 makes every token of a correlated sequence the same")
    name: ClassVar[str] = "correlated"
    PARAM: ClassVar[str | None] = "c"
    DESCRIPTION: ClassVar[str] = "x_a = sqrt(1 - c) z_a + sqrt(c) z_0"

    def __post_init__(self):
        validate(type(self), {"c": self.c})
        object.__setattr__(self, "c", float(self.c))

    @property
    def corr(self) -> float:
        return self.c

    def draw(self, rng, shape):
        m, T, d = shape
        z = rng.standard_normal((m, T + 1, d))
        x = math.sqrt(1.0 - self.c) * z[:, 1:]
        x += math.sqrt(self.c) * z[:, :1]
        return x


#: The registry: name -> token law class.
TOKEN_LAWS: dict[str, type[TokenLaw]] = {
    "gaussian": Gaussian,
    "rademacher": Rademacher,
    "uniform": Uniform,
    "student_t": StudentT,
    "correlated": Correlated,
}

GAUSSIAN = Gaussian()


def make_tokens(spec=None, **params) -> TokenLaw:
    """A token law from its config form: ``None`` or ``"gaussian"`` (the default), a name
    (``"rademacher"``), a mapping ``{"law": "student_t", "nu": 6}``, or a :class:`TokenLaw`.

    Raises
    ------
    ValueError
        Naming the unknown law or the parameter out of range.
    """
    if isinstance(spec, TokenLaw):
        if params:
            raise ValueError("a TokenLaw object takes no further parameters")
        return spec
    if spec is None:
        spec = "gaussian"
    if isinstance(spec, dict):
        spec = dict(spec)
        if "law" not in spec:
            raise ValueError(f"tokens: a mapping needs the key 'law', got {spec!r}")
        name = spec.pop("law")
        params = {**spec, **params}
    else:
        name = spec
    cls = TOKEN_LAWS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"tokens must be one of {', '.join(map(repr, TOKEN_LAWS))}, "
                         f"got tokens={name!r}")
    allowed = {cls.PARAM} if cls.PARAM else set()
    extra = set(params) - allowed
    if extra:
        raise ValueError(f"{sorted(extra)[0]} does not apply to {name} tokens"
                         + (f" (it takes {cls.PARAM})" if cls.PARAM else ""))
    if cls.PARAM and cls.PARAM not in params:
        raise ValueError(f"{name} tokens need {cls.PARAM}")
    return cls(**params)
