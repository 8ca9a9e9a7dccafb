"""Grids and the values in file names: ``{geomspace: [start, stop, num]}``, ``{linspace: ...}``,
``{values: [...]}``, per channel if needed, rounded once (:func:`fnum`, six significant digits;
the rounded value is the one computed with); the stages (one per algorithm); and the small
helpers that read an experiment block (its channels, the channel parameter, the variants).
"""

from __future__ import annotations

import numpy as np

from aimlib.algorithms import ALGORITHMS
from aimlib.channels import CHANNELS, channel_class
from aimlib.prior import DEFAULT as DEFAULT_PRIOR
from aimlib.theory.cells import DEFAULT_CELL, alpha_bar_factor
from aimlib.tokens import make_tokens

__all__ = ["ConfigError", "ffmt", "fnum", "grid", "channel_grid", "as_list", "channels",
           "channel_param_values", "cpar", "cells", "token_laws", "alphas_for", "variants",
           "per_channel", "for_channel", "rhos", "Ts", "channel_block"]



class ConfigError(ValueError):
    """A configuration value is impossible; the message names the key."""


def ffmt(x: float) -> str:
    """The one float format used in file names (six significant digits, ``repr``-free)."""
    s = f"{float(x):.6g}"
    if "e" in s or "." in s:
        return s
    return s + ".0" if "inf" not in s and "nan" not in s else s


def fnum(x: float) -> float:
    """``float(ffmt(x))``: the value a file name stands for."""
    return float(ffmt(x))


def grid(spec: dict, key: str = "grid") -> list[float]:
    """Resolve a grid specification to a list of rounded floats.

    Parameters
    ----------
    spec : dict
        One of ``{"geomspace": [a, b, n]}``, ``{"linspace": [a, b, n]}``, ``{"values": [...]}``.
    key : str
        Name of the config key, for error messages.
    """
    if not isinstance(spec, dict) or len(spec) != 1:
        raise ConfigError(f"{key}: a grid is one of geomspace/linspace/values, got {spec!r}")
    (kind, val), = spec.items()
    if kind in ("geomspace", "linspace"):
        if len(val) != 3:
            raise ConfigError(f"{key}.{kind}: expected [start, stop, num], got {val!r}")
        a, b, n = float(val[0]), float(val[1]), int(val[2])
        if n < 1:
            raise ConfigError(f"{key}.{kind}: num must be >= 1, got {n}")
        if kind == "geomspace":
            if a <= 0 or b <= 0:
                raise ConfigError(f"{key}.geomspace: start and stop must be > 0, got {val!r}")
            xs = np.geomspace(a, b, n)
        else:
            xs = np.linspace(a, b, n)
    elif kind == "values":
        xs = np.asarray(val, dtype=float)
    else:
        raise ConfigError(f"{key}: unknown grid kind {kind!r} (geomspace, linspace or values)")
    out = sorted({fnum(x) for x in xs})
    return out


def channel_grid(spec: dict, channel: str, key: str = "grid") -> list[float]:
    """A grid that may be given per channel: ``{softmax: <grid>, hardmax: <grid>, ...}``."""
    if isinstance(spec, dict) and spec and set(spec) <= set(CHANNELS):
        if channel not in spec:
            raise ConfigError(f"{key}: no grid for channel {channel!r}")
        return grid(spec[channel], f"{key}.{channel}")
    return grid(spec, key)


def per_channel(value) -> bool:
    """Whether a config value is given per channel: a non-empty mapping whose keys are all
    channel names (``T: {gaussian: 1, softmax: 2}``)."""
    return isinstance(value, dict) and bool(value) and set(value) <= set(CHANNELS)


def for_channel(value, channel: str, key: str):
    """A config value that may be given per channel (:func:`per_channel`): the channel's entry,
    else the value itself; a mapping without the channel is a :class:`ConfigError` naming
    ``key``."""
    if not per_channel(value):
        return value
    if channel not in value:
        raise ConfigError(f"{key}: no value for channel {channel!r} (it gives "
                          f"{', '.join(value)})")
    return value[channel]


def _model_values(exp: dict, block: dict | None, channel: str, name: str, base: str,
                  stage: str | None) -> list:
    in_block = block is not None and name in block
    src = block if in_block else exp
    key = f"{base}.{stage}.{name}" if in_block and stage else f"{base}.{name}"
    return as_list(for_channel(src[name], channel, key))


def rhos(exp: dict, block: dict | None, channel: str, base: str = "experiment",
         stage: str | None = None) -> list:
    """The widths ``rho`` of a stage block (which may narrow them) or its experiment, for one
    channel; either may give them per channel (``{gaussian: 0.2, softmax: 0.5}``).  ``base``
    and ``stage`` name the key in an error (``experiments.fig13``, ``gd``)."""
    return _model_values(exp, block, channel, "rho", base, stage)


def Ts(exp: dict, block: dict | None, channel: str, base: str = "experiment",
       stage: str | None = None) -> list:
    """The token counts ``T`` of a stage block or its experiment, for one channel; either may
    give them per channel (``{gaussian: 1, softmax: 2}``)."""
    return _model_values(exp, block, channel, "T", base, stage)


def channel_block(block: dict, channel: str, keys, where: str) -> dict:
    """A stage block with the values of ``keys`` (its swept options) given per channel
    replaced by ``channel``'s (``width: {gaussian: [0.2, 1.0], softmax: [0.5, 1.0]}``)."""
    return {k: (for_channel(v, channel, f"{where}.{k}") if k in keys else v)
            for k, v in block.items()}


def as_list(v) -> list:
    """A scalar or a list, as a list."""
    return list(v) if isinstance(v, list | tuple) else [v]


def channels(exp: dict, block: dict | None = None) -> list[str]:
    """Output channels of an experiment, or of one of its blocks (which may narrow them)."""
    if block is not None and "channel" in block:
        return as_list(block["channel"])
    return as_list(exp["channel"])


def channel_param_values(exp: dict, block: dict | None, channel: str) -> list[float]:
    """Values of the channel's parameter (``beta``, ``delta``) in a stage block or its
    experiment; the channel's default, or ``[PARAM_DEFAULT]`` for a channel without one."""
    cls = CHANNELS[channel]
    if cls.PARAM is None:
        return [cls.PARAM_DEFAULT]
    for src in (block or {}, exp):
        if cls.PARAM in src:
            return [float(v) for v in as_list(src[cls.PARAM])]
    return [cls.PARAM_DEFAULT]


def cpar(channel: str, value: float, tokens=None, prior: str = DEFAULT_PRIOR,
         attention: str = "self") -> str:
    """The model-parameter part of a file name, joined to the ``T`` before it: the channel's
    own parameter (``_beta1.0``, ``_delta0.1``; nothing for hardmax, which has none), then
    ``-<prior>`` and ``-<attention>`` beyond the paper's tied self-attention (``_beta1.0-untied``,
    ``_beta1.0-untied-cross``, ``-cross``), then ``-<law>`` for tokens that are not Gaussian
    (``_beta1.0-rademacher``, ``-student_t10``): the paper's files keep their names."""
    param = CHANNELS[channel].PARAM
    out = f"_{param}{ffmt(value)}" if param else ""
    if prior != DEFAULT_PRIOR:
        out += f"-{prior}"
    if attention != "self":
        out += f"-{attention}"
    if tokens is not None and not tokens.is_gaussian:
        out += f"-{tokens.tag}"
    return out


def cells(exp: dict, block: dict | None = None) -> list[tuple[str, str]]:
    """The ``(prior, attention)`` cells of a stage block or its experiment: every pair of its
    ``prior`` and ``attention`` lists (a block's own keys narrow the experiment's; default the
    paper's, tied self-attention), in config order."""
    def values(key, default):
        for src in (block or {}, exp):
            if key in src:
                return as_list(src[key])
        return [default]

    return [(p, a) for p in values("prior", DEFAULT_PRIOR) for a in values("attention", "self")]


def token_laws(exp: dict, block: dict | None, key: str = "tokens") -> list:
    """The token laws (:class:`aimlib.tokens.TokenLaw`) of a stage block or its experiment
    (default: Gaussian); a bad law is a ``ValueError`` naming ``key``."""
    for src in (block or {}, exp):
        if "tokens" in src:
            specs = src["tokens"]
            specs = specs if isinstance(specs, list) else [specs]
            out = []
            for i, spec in enumerate(specs):
                try:
                    out.append(make_tokens(spec))
                except ValueError as exc:
                    where = key if len(specs) == 1 else f"{key}[{i}]"
                    raise ValueError(f"{where}: {exc}") from None
            return out
    return [make_tokens("gaussian")]


def alphas_for(block: dict, rho: float, T: int, channel: str, key: str,
               cell: tuple[str, str] = DEFAULT_CELL) -> list[float]:
    """The alphas of a block's grid at ``(rho, T, channel)`` in a ``(prior, attention)`` cell:
    its ``alpha`` grid, or its ``alpha_bar`` grid divided by the cell's rescaling
    (:func:`aimlib.theory.cells.alpha_bar_factor`); with ``alpha_bar_max`` (a data stage's key),
    only the points whose ``alpha_bar`` is at most that value.

    The cut is how fig2b's GD grid (the paper's ``alpha`` grid for every T) keeps the points its
    axis shows: at T = 6, ``alpha_bar = 40 alpha`` and the paper's grid reaches 12, while the
    axis stops at 1.  A cut that leaves no point is a :class:`ConfigError` naming the key.
    """
    # alpha_bar = factor alpha
    factor = alpha_bar_factor(channel_class(channel)(T=T), rho, prior=cell[0], attention=cell[1])
    if "alpha" in block:
        alphas = channel_grid(block["alpha"], channel, f"{key}.alpha")
    elif "alpha_bar" in block:
        bars = channel_grid(block["alpha_bar"], channel, f"{key}.alpha_bar")
        alphas = sorted({fnum(x / factor) for x in bars})
    else:
        raise ConfigError(f"{key}: needs an alpha or an alpha_bar grid")
    if block.get("alpha_bar_max") is None:
        return alphas
    top = float(block["alpha_bar_max"])
    # the grid's points are rounded to six digits: a point on the cut stays in
    kept = [a for a in alphas if a * factor <= top * (1 + 1e-9)]
    if not kept:
        raise ConfigError(f"{key}.alpha_bar_max: {top:g} is below the grid's smallest point "
                          f"(alpha_bar = {alphas[0] * factor:.6g} at T = {T}, rho = {rho:g}, "
                          f"{channel}); raise it or remove it")
    return kept


def variants(exp: dict, stage: str, channel: str,
             cell: tuple[str, str] = DEFAULT_CELL) -> list[str]:
    """Output-function variants of a stage (``se``, ``amp``, ...) for a channel: the block's
    ``variant`` list for a channel that has several (hardmax), else the channel's only one; the
    exact one alone beyond the paper's cell (the published density and the mismatched SE are
    the paper's tied self-attention's)."""
    cls = CHANNELS[channel]
    if len(cls.VARIANTS) == 1 or (stage in ALGORITHMS and not ALGORITHMS[stage].HAS_VARIANTS) \
            or cell != DEFAULT_CELL:
        return [cls.VARIANTS[0]]
    return as_list(exp[stage].get("variant", cls.VARIANTS[0]))

