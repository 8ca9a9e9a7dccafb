"""Options declared once: a dataclass field made by :func:`option` carries its meaning, type,
default and range or choices, and everything else is derived from it: the library's defaults,
its checks (:func:`validate`), the configuration schema's block (:func:`json_schema`, with
``default:`` entries), the command-line flags (:func:`add_arguments`) and, through the schema,
the documentation's configuration reference.

Each algorithm declares its option class in its own registry module
(:mod:`aimlib.algorithms.amp_entry` and its neighbours); this module knows none of them.  It also
holds the numerical constants shared by several layers.  It imports nothing heavy, so that the
workflow can read the options while it parses itself.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["CHUNK", "TOKEN_BUDGET", "SE_TOL", "Option", "option", "specs", "resolve",
           "defaults", "validate", "json_schema", "add_arguments", "flag", "sweeps"]

#: Tolerance on ``|F(q) - q|`` of every state-evolution fixed point.
SE_TOL = 1e-10

#: Samples per token chunk (a fixed constant: changing it changes every regenerated token).
CHUNK = 4096
#: Bytes of AMP tokens kept in memory; above it they are regenerated from the seed each
#: iteration (chunk by chunk).
TOKEN_BUDGET = 4.0 * 2**30

_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}


@dataclass(frozen=True)
class Option:
    """What an option is: its meaning (``help``), its Python type, its range (``ge``/``gt``
    below, ``le``/``lt`` above) or its ``choices`` (a sequence, or a callable giving one, for
    choices that come from a registry), and whether it is a command-line flag (``cli``, with
    an optional shorter ``cli_help``)."""

    help: str
    type: type
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    choices: Sequence | Callable[[], Sequence] | None = None
    cli: bool = True
    cli_help: str | None = None
    #: Why the range is what it is, added to the error message.
    why: str | None = None
    #: Whether ``None`` is allowed (an option whose default is decided at run time, such as
    #: GD's student width: the teacher's); set by :func:`option` for a ``None`` default.
    optional: bool = False
    #: Whether a config block may give a list of values, each a group of jobs of its own (GD's
    #: student width: one aggregate per width), :func:`sweeps`.
    sweep: bool = False

    def allowed(self) -> tuple | None:
        """The choices (a registry's, read now), or ``None`` for a ranged option."""
        if self.choices is None:
            return None
        return tuple(self.choices() if callable(self.choices) else self.choices)

    def range_text(self) -> str:
        """``"in [0, 1)"``, ``">= 1"``, ``"> 0"``, ``"one of 'a', 'b'"`` or ``""``."""
        allowed = self.allowed()
        if allowed is not None:
            return "one of " + ", ".join(map(repr, allowed))
        lo = self.ge if self.ge is not None else self.gt
        hi = self.le if self.le is not None else self.lt
        if lo is not None and hi is not None:
            return (f"in {'[' if self.ge is not None else '('}{_num(lo)}, {_num(hi)}"
                    f"{']' if self.le is not None else ')'}")
        if lo is not None:
            return f"{'>=' if self.ge is not None else '>'} {_num(lo)}"
        if hi is not None:
            return f"{'<=' if self.le is not None else '<'} {_num(hi)}"
        return ""

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not allowed (``"must be ..."``), or ``None``."""
        if value is None and self.optional:
            return None
        allowed = self.allowed()
        if allowed is not None:
            return None if value in allowed else f"must be {self.range_text()}"
        if self.type is bool:
            return None if isinstance(value, bool) else "must be true or false"
        if self.type in (int, float):
            try:
                v = float(value)
            except (TypeError, ValueError):
                v = None
            if isinstance(value, (bool, str)) or v is None or not math.isfinite(v) or (
                    self.type is int and not v.is_integer()):
                return f"must be {'an integer' if self.type is int else 'a finite number'}"
            if (self.ge is not None and not v >= self.ge) \
                    or (self.gt is not None and not v > self.gt) \
                    or (self.le is not None and not v <= self.le) \
                    or (self.lt is not None and not v < self.lt):
                return f"must be {self.range_text()}"
            return None
        return None if isinstance(value, self.type) else f"must be a {self.type.__name__}"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def option(default: Any, help: str, *, type: type | None = None, **spec) -> Any:
    """A dataclass field holding an option: ``default``, its meaning and the
    :class:`Option` keywords (``ge``, ``gt``, ``le``, ``lt``, ``choices``, ``cli``,
    ``cli_help``); the type defaults to the default's.  A ``None`` default (decided at run
    time, as ``help`` says) needs ``type`` and makes the option ``optional``."""
    if default is None:
        if type is None:
            raise TypeError("an option with a None default needs its type")
        spec["optional"] = True
    return dataclasses.field(default=default, metadata={
        "option": Option(help=help, type=type or _type_of(default), **spec)})


def _type_of(value) -> type:
    for t in (bool, int, float, str):
        if isinstance(value, t):
            return t
    raise TypeError(f"an option's default must be a bool, int, float or str, got {value!r}")


def specs(cls) -> dict[str, tuple[Any, Option]]:
    """``{name: (default, Option)}`` of an option class, in declaration order."""
    out = {}
    for f in fields(cls):
        spec = f.metadata.get("option")
        if spec is None:
            raise TypeError(f"{cls.__name__}.{f.name} is not declared with aimlib.core.options"
                            ".option")
        out[f.name] = (f.default, spec)
    return out


def resolve(cls, block: dict | None) -> dict:
    """The options of ``cls`` with a config block's values over the defaults (other keys of the
    block are ignored)."""
    block = block or {}
    return {f.name: block.get(f.name, f.default) for f in fields(cls)}


def defaults(cls) -> dict:
    """``{name: default}`` of an option class."""
    return asdict(cls())


def flag(name: str) -> str:
    """The command-line flag of option ``name`` (``max_iter`` -> ``--max-iter``)."""
    return "--" + name.replace("_", "-")


def validate(cls, values: dict, *, where: str = "", name: Callable[[str], str] | None = None
             ) -> dict:
    """Check ``values`` (some or all options of ``cls``) and return them; ``ValueError``
    naming the first bad key as ``where + name(key)`` (e.g. ``experiments.fig1a.amp.damping``
    or ``--damping``) with what it must be and what it got."""
    sp = specs(cls)
    name = name or (lambda k: k)
    for k, v in values.items():
        if k not in sp:
            raise ValueError(f"{where}{name(k)}: unknown option of {cls.__name__} (its options: "
                             f"{', '.join(sp)})")
        spec = sp[k][1]
        problem = spec.problem(v)  # a list (a config's sweep) is the schema's, not a run's
        if problem:
            because = f" ({spec.why})" if spec.why else ""
            raise ValueError(f"{where}{name(k)} {problem}{because}, got "
                             f"{name(k).lstrip('-')}={v!r}")
    return values


def json_schema(cls, names: Sequence[str] | None = None) -> dict:
    """The JSON-schema ``properties`` of an option class (type, range or enum, description
    and default of each option); a swept option may also be a mapping from ``names`` (the
    channels, which this module does not know) to its values."""
    out = {}
    for k, (default, spec) in specs(cls).items():
        node: dict = {"description": spec.help}
        allowed = spec.allowed()
        if allowed is not None:
            node["enum"] = list(allowed)
        else:
            node["type"] = [_TYPES[spec.type], "null"] if spec.optional else _TYPES[spec.type]
            for key, js in (("ge", "minimum"), ("gt", "exclusiveMinimum"), ("le", "maximum"),
                            ("lt", "exclusiveMaximum")):
                bound = getattr(spec, key)
                if bound is not None:
                    node[js] = int(bound) if spec.type is int else bound
        if spec.sweep:  # a value, or a list of them (one group each), or either per name
            item = {key: v for key, v in node.items() if key != "description"}
            one = [item, {"type": "array", "minItems": 1, "items": item}]
            node = {"description": node["description"] + " (a list sweeps it; a mapping gives "
                    "it per channel)",
                    "oneOf": [*one, {"type": "object", "minProperties": 1,
                                     "additionalProperties": {"oneOf": one},
                                     **({"propertyNames": {"enum": list(names)}}
                                        if names is not None else {})}]}
        node["default"] = default
        out[k] = node
    return out


def sweeps(cls, block: dict | None) -> list[dict]:
    """The groups a config block's swept options make: one dict of overrides per combination
    of the list values of its ``sweep`` options (``[{}]`` when it lists none), in the block's
    order."""
    block = block or {}
    out = [{}]
    for k, (_, spec) in specs(cls).items():
        v = block.get(k)
        if spec.sweep and isinstance(v, list):
            out = [{**o, k: item} for o in out for item in v]
    return out

def add_arguments(parser, cls, skip: Iterable[str] = ()) -> None:
    """Every command-line option of ``cls`` as a flag of ``parser`` (``--max-iter``), its type,
    choices and default from the declaration; a bad range is reported by :func:`validate`."""
    for k, (default, spec) in specs(cls).items():
        if not spec.cli or k in skip:
            continue
        allowed = spec.allowed()
        help_ = spec.cli_help or spec.help
        rng = spec.range_text()
        if rng and allowed is None:
            help_ = f"{help_} ({rng})"
        if spec.type is bool:
            parser.add_argument(flag(k), action=argparse.BooleanOptionalAction,
                                default=default, help=help_)
        else:
            parser.add_argument(flag(k), type=spec.type, default=default, help=help_,
                                **({"choices": allowed} if allowed is not None else {}))
