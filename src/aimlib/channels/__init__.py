"""Output channels of the attention-indexed model, one module each, behind one registry.

:data:`CHANNELS` maps a name to its class (a :class:`~aimlib.channels.base.Channel`); the
model, state evolution, AMP, GD, the configuration schema, the workflow's wildcards and the
tests all take the list of channels from it.  Adding a channel is a module with a
:class:`Channel` subclass and one line here (README, "Adding a channel").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields

from aimlib.channels.base import Channel, check_T, pair_weights
from aimlib.channels.gaussian import Gaussian
from aimlib.channels.hardmax import (
    HARDMAX_STEP,
    HARDMAX_TMAX,
    Hardmax,
    hardmax_output,
    hardmax_second_moment,
    one_hot,
)
from aimlib.channels.softmax import Softmax, softmax_output

__all__ = [
    "CHANNELS",
    "Channel",
    "Softmax",
    "Hardmax",
    "Gaussian",
    "make_channel",
    "channel_from_attrs",
    "channel_class",
    "channel_params",
    "pair_weights",
    "check_T",
    "hardmax_second_moment",
    "hardmax_output",
    "softmax_output",
    "one_hot",
    "HARDMAX_STEP",
    "HARDMAX_TMAX",
]

#: The registry: name -> channel class.
CHANNELS: dict[str, type[Channel]] = {
    "softmax": Softmax,
    "hardmax": Hardmax,
    "gaussian": Gaussian,
}


def channel_class(name: str | Channel) -> type[Channel]:
    """The class registered as ``name`` (a channel object's own class), or a ``ValueError``
    listing the known channels."""
    if isinstance(name, Channel):
        return type(name)
    try:
        return CHANNELS[name]
    except (KeyError, TypeError):
        raise ValueError(f"channel must be one of {', '.join(map(repr, CHANNELS))}, got "
                         f"channel={name!r}") from None


def _defaults() -> dict:
    """Each registered channel's keyword defaults (T excluded), merged: a keyword that another
    channel takes is accepted at its default value and ignored."""
    out: dict = {}
    for cls in CHANNELS.values():
        for f in fields(cls):
            if f.name != "T":
                out.setdefault(f.name, set()).add(f.default)
    return out


def channel_params(name: str, **params) -> dict:
    """The keywords of ``params`` that channel ``name`` takes; a keyword it does not take is
    rejected (naming it) unless it has the default value that another channel gives it."""
    cls = channel_class(name)
    own = {f.name for f in fields(cls)}
    known = _defaults()
    out = {}
    for key, value in params.items():
        if key in own:
            out[key] = value
        elif key in known:
            if value not in known[key]:
                raise ValueError(f"{key} does not apply to the {name} channel, got {key}={value!r}")
        else:
            raise ValueError(f"unknown channel parameter {key!r} for the {name} channel")
    return out


def make_channel(channel: str | Channel, T: int | None = None, **params) -> Channel:
    """Channel object from its registry name, ``T`` and its own parameters (``beta`` for the
    softmax, ``variant`` for hardmax, ``delta`` for the Gaussian channel), or a channel object
    passed through unchanged.

    A parameter of another channel is accepted only at its default (so that ``beta=1.0`` can be
    passed along for any channel); otherwise the error names it.  With a channel object, ``T``
    and ``params`` may only repeat what the object already is (the error names the key that
    disagrees): the object is made once, where the user's input is read, and passed down.
    """
    if isinstance(channel, Channel):
        own = channel_params(channel.name, **params)
        if T is not None and int(T) != channel.T:
            raise ValueError(f"T={T!r} disagrees with the {channel.name} channel given "
                             f"(T={channel.T})")
        for key, value in own.items():
            if getattr(channel, key) != value:
                raise ValueError(f"{key}={value!r} disagrees with the {channel.name} channel "
                                 f"given ({key}={getattr(channel, key)!r})")
        return channel
    cls = channel_class(channel)
    kw = channel_params(channel, **params)
    if T is not None:
        kw["T"] = T
    return cls(**kw)


def channel_from_attrs(attrs: Mapping) -> Channel:
    """The channel a result was computed with, from its dataset's attributes (``channel``,
    ``T``, the channel's parameter when it has one, and ``variant`` when it is one of the
    channel's)."""
    cls = channel_class(attrs["channel"])
    kw: dict = {"T": int(attrs["T"])}
    if cls.PARAM and cls.PARAM in attrs:
        kw[cls.PARAM] = float(attrs[cls.PARAM])
    if len(cls.VARIANTS) > 1 and attrs.get("variant") in cls.VARIANTS:
        kw["variant"] = str(attrs["variant"])
    return cls(**kw)
