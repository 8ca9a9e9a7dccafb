"""Theory lines drawn next to a state-evolution curve: computed once per SE curve by the
workflow's ``theory`` jobs (an input kind of the figures, cached like any other), never at draw
time.

Each line is a function of the SE curve's channel, prior, token law and alpha grid (and, for the
test errors, of its overlap ``q``):

- ``one_step``: the spectral estimator's error predicted by one SE step from the prior's mean
  (docs/theory.md §4.1);
- ``large_alpha``: hardmax's large-alpha law ``C alpha^-2`` (exact output function) or
  ``c alpha^-1`` (the published density), docs/theory.md §9 and §14;
- ``test_error_bayes``, ``test_error_plugin``: the test error on a fresh sample of the
  Bayes-optimal predictor and of the plug-in one at the SE fixed point (docs/theory.md §10).

A line that does not apply to a curve (the large-alpha law of a softmax curve, the one-step
prediction for tokens that are not Gaussian) is left out of that curve's dataset, and the figure
draws none for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from aimlib.channels import Channel, channel_from_attrs
from aimlib.prior import Prior, make_prior
from aimlib.theory import generalisation
from aimlib.theory.asymptotics import large_alpha
from aimlib.theory.state_evolution import one_step
from aimlib.tokens import TokenLaw, make_tokens

__all__ = ["TheoryLine", "LINES", "theory_curve"]


@dataclass(frozen=True)
class TheoryLine:
    """One theory line: its name (the variable of the cached dataset), what it is, the function
    that computes it on an SE curve, and the curves it applies to."""

    name: str
    long_name: str
    compute: Callable[[Channel, Prior, TokenLaw, xr.Dataset], np.ndarray]
    applies: Callable[[Channel, Prior, TokenLaw], bool]


def _one_step(ch: Channel, pr: Prior, law: TokenLaw, se: xr.Dataset) -> np.ndarray:
    return np.array([one_step(ch, float(a), pr.rho, prior=pr) for a in se["alpha"].values])


def _large_alpha(ch: Channel, pr: Prior, law: TokenLaw, se: xr.Dataset) -> np.ndarray:
    law_ = large_alpha(ch.name, pr.rho, T=ch.T, variant=getattr(ch, "variant", "exact"),
                       tokens=law.spec)
    return np.asarray(law_.error(se["alpha"].values), dtype=np.float64)


def _test_error(predictor: str):
    def compute(ch: Channel, pr: Prior, law: TokenLaw, se: xr.Dataset) -> np.ndarray:
        Q0 = pr.second_moment
        return np.array([generalisation.bayes(ch, min(float(q), Q0), pr.rho,
                                              predictor=predictor).value
                         if math.isfinite(q) else math.nan for q in se["q"].values])
    return compute


def _gaussian_tied(ch: Channel, pr: Prior, law: TokenLaw) -> bool:
    return law.is_gaussian and pr.name == "tied"


#: The registry of theory lines, by the name a figure's spec asks for.
LINES: dict[str, TheoryLine] = {line.name: line for line in (
    TheoryLine("one_step", "spectral estimator: one SE step from the prior's mean",
               _one_step, lambda ch, pr, law: law.is_gaussian),
    TheoryLine("large_alpha", "large-alpha law of the Bayes-optimal error", _large_alpha,
               lambda ch, pr, law: ch.name == "hardmax" and pr.name == "tied"
               and (law.is_gaussian or getattr(ch, "variant", "exact") == "exact")),
    TheoryLine("test_error_bayes", "test error of the Bayes-optimal predictor",
               _test_error("bayes"), _gaussian_tied),
    TheoryLine("test_error_plugin", "test error of the plug-in predictor y(X; S_hat)",
               _test_error("plugin"), _gaussian_tied),
)}


def theory_curve(se: xr.Dataset, names: Sequence[str], *, tokens=None) -> xr.Dataset:
    """The theory lines ``names`` (:data:`LINES`) on the alpha grid of the SE curve ``se``.

    The channel and prior are those the curve records in its attributes
    (:func:`aimlib.channels.channel_from_attrs`; the prior's name, the tied one by default);
    ``tokens`` is its token law (default Gaussian).  Returns a dataset on the curve's ``alpha``
    (and ``alpha_bar``) with one variable per line that applies, the curve's attributes and
    ``lines``, the names computed.
    """
    unknown = [n for n in names if n not in LINES]
    if unknown:
        raise ValueError(f"unknown theory lines {unknown}: known are {', '.join(LINES)}")
    ch = channel_from_attrs(se.attrs)
    pr = make_prior(se.attrs.get("prior"), float(se.attrs["rho"]))
    law = make_tokens(tokens)
    coords = {"alpha": se["alpha"].values}
    if "alpha_bar" in se.coords:
        coords["alpha_bar"] = ("alpha", se["alpha_bar"].values)
    out = xr.Dataset(coords=coords)
    done = []
    for name in names:
        line = LINES[name]
        if not line.applies(ch, pr, law):
            continue
        out[name] = ("alpha", line.compute(ch, pr, law, se))
        out[name].attrs["long_name"] = line.long_name
        done.append(name)
    keep = ("channel", "T", "rho", "variant", "param", "prior", ch.PARAM or "")
    out.attrs.update({k: v for k, v in se.attrs.items() if k in keep})
    out.attrs.update(law.attrs)
    out.attrs["lines"] = " ".join(done)
    return out
