"""The workflow's configuration: grids, semantic validation, and the jobs it implies.

The Snakefile validates ``config/*.yaml`` against ``config/schema.yaml`` (types, ranges, required
keys) and then calls :func:`check` for what a JSON schema cannot say (hardmax needs ``T = 2``, a
grid must be increasing, ...).  Everything a rule needs to know about the sweep comes from here, so
the same functions serve the workflow and the tests.

Grids are written ``{geomspace: [start, stop, num]}``, ``{linspace: [start, stop, num]}`` or
``{values: [...]}``.  Every float that appears in a file name is rounded once by :func:`fnum`
(six significant digits), and the rounded value is the one computed with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "fnum",
    "ffmt",
    "grid",
    "as_list",
    "channel_grid",
    "ConfigError",
    "check",
    "check_schema",
    "TeacherKey",
    "se_alphas",
    "se_jobs",
    "channels",
    "stage_jobs",
    "STAGES",
]

#: Data stages that consume teacher data, in the order they appear in an experiment.
STAGES = ("amp", "gd")



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
    """A grid that may be given per channel: ``{softmax: <grid>, hardmax: <grid>}``."""
    if isinstance(spec, dict) and spec and set(spec) <= {"softmax", "hardmax"}:
        if channel not in spec:
            raise ConfigError(f"{key}: no grid for channel {channel!r}")
        return grid(spec[channel], f"{key}.{channel}")
    return grid(spec, key)


def as_list(v) -> list:
    """A scalar or a list, as a list."""
    return list(v) if isinstance(v, list | tuple) else [v]


def _positive(v, key: str) -> None:
    if not (isinstance(v, int | float) and not isinstance(v, bool) and v > 0
            and math.isfinite(v)):
        raise ConfigError(f"{key} must be a positive number, got {v!r}")


def channels(exp: dict, block: dict | None = None) -> list[str]:
    """Output channels of an experiment, or of one of its blocks (which may narrow them)."""
    if block is not None and "channel" in block:
        return as_list(block["channel"])
    return as_list(exp["channel"])


def _check_T(Ts, chans, key: str) -> None:
    for i, T in enumerate(as_list(Ts)):
        if not isinstance(T, int) or isinstance(T, bool) or T < 2:
            raise ConfigError(f"{key}[{i}] must be an integer >= 2, got {T!r}")
        if "hardmax" in chans and T != 2:
            raise ConfigError(f"{key}[{i}]: hardmax is implemented for T = 2 only, got T={T}")


def _key_path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def check_schema(config: dict, schema_path) -> None:
    """Validate ``config`` against the JSON schema at ``schema_path``; on failure raise
    :class:`ConfigError` with one line: the key, its value and the rule it breaks (the most
    specific of jsonschema's errors, not a dump of the schema)."""
    import jsonschema
    import yaml
    from jsonschema.exceptions import best_match

    with open(schema_path) as f:
        schema = yaml.safe_load(f)
    validator = jsonschema.Draft202012Validator(schema)
    err = best_match(validator.iter_errors(config))
    if err is None:
        return
    # For "oneOf"/"anyOf" the most relevant branch's own error names the offending element.
    while err.context:
        err = best_match(err.context)
    value = err.instance
    text = repr(value) if not isinstance(value, dict | list) or len(repr(value)) < 60 else \
        f"{type(value).__name__} of {len(value)}"
    raise ConfigError(f"{_key_path(err.absolute_path)} = {text}: {err.message}")


def check(config: dict) -> None:
    """Semantic checks that the JSON schema cannot express; raise :class:`ConfigError`."""
    if not config.get("experiments"):
        raise ConfigError("experiments: empty; a config needs at least one experiment (see "
                          "config/quick.yaml)")
    for name, exp in config["experiments"].items():
        base = f"experiments.{name}"
        chans = channels(exp)
        for i, rho in enumerate(as_list(exp["rho"])):
            _positive(rho, f"{base}.rho[{i}]")
        _check_T(exp["T"], chans, f"{base}.T")
        for stage in ("se", "small_width", *STAGES):
            if stage not in exp:
                continue
            block = exp[stage]
            for c in channels(exp, block):
                if c not in chans:
                    raise ConfigError(f"{base}.{stage}.channel: {c!r} is not a channel of the "
                                      f"experiment ({', '.join(chans)})")
            if stage == "gd" and "hardmax" in channels(exp, block):
                raise ConfigError(f"{base}.gd.channel: the GD baselines are softmax only "
                                  "(docs/theory.md §5); set gd.channel: softmax")
            for gk in ("alpha", "alpha_bar"):
                if gk in block:
                    for c in channels(exp, block):
                        for x in channel_grid(block[gk], c, f"{base}.{stage}.{gk}"):
                            _positive(x, f"{base}.{stage}.{gk}")
            if "T" in block:
                _check_T(block["T"], channels(exp, block), f"{base}.{stage}.T")
            if stage in STAGES:
                for i, b in enumerate(as_list(block.get("beta", exp.get("beta", 1.0)))):
                    _positive(b, f"{base}.{stage}.beta[{i}]")
                seeds, ds = block["seeds"], as_list(block["d"])
                if stage == "amp":
                    from .amp import MIN_D_PER_T

                    for i, d in enumerate(ds):
                        for T in as_list(block.get("T", exp["T"])):
                            if int(d) < MIN_D_PER_T * int(T):
                                raise ConfigError(
                                    f"{base}.amp.d[{i}]: d={d} is too small for T={T} (AMP "
                                    f"needs d >= {MIN_D_PER_T} T)")
                if isinstance(seeds, list) and len(seeds) != len(ds):
                    raise ConfigError(f"{base}.{stage}.seeds: a list of seeds needs one entry per "
                                      f"d ({len(ds)}), got {len(seeds)}")
        if chans == ["hardmax"] and "beta" in exp and as_list(exp["beta"]) != [1.0]:
            raise ConfigError(f"{base}.beta applies to softmax only")
        if "gap" in exp:
            for c, alphas in exp["gap"].items():
                if c not in chans:
                    raise ConfigError(f"{base}.gap.{c}: not a channel of the experiment")
                amp_alphas = ({fnum(a) for a in channel_grid(exp["amp"]["alpha"], c,
                                                             f"{base}.amp.alpha")}
                              if "amp" in exp and "alpha" in exp["amp"] else set())
                for a in alphas:
                    if fnum(a) not in amp_alphas:
                        raise ConfigError(f"{base}.gap.{c}: alpha={a} is not on the amp.alpha "
                                          "grid")


def _alphas_for(block: dict, rho: float, T: int, channel: str, key: str) -> list[float]:
    if "alpha" in block:
        return channel_grid(block["alpha"], channel, f"{key}.alpha")
    if "alpha_bar" in block:
        # alpha_bar = alpha (T^2 + T - 2) for softmax, alpha / rho for hardmax.
        per = 1.0 / (T * T + T - 2) if channel == "softmax" else rho
        bars = channel_grid(block["alpha_bar"], channel, f"{key}.alpha_bar")
        return sorted({fnum(x * per) for x in bars})
    raise ConfigError(f"{key}: needs an alpha or an alpha_bar grid")


def se_alphas(config: dict, experiment: str, rho: float, T: int,
              channel: str | None = None) -> list[float]:
    """The alpha grid of the SE curve of ``experiment`` at ``(rho, T)`` (and ``channel``)."""
    exp = config["experiments"][experiment]
    channel = channel or channels(exp, exp["se"])[0]
    alphas = _alphas_for(exp["se"], rho, T, channel, f"experiments.{experiment}.se")
    # The finite-size gap needs SE exactly at its alphas.
    extra = exp.get("gap", {}).get(channel, [])
    return sorted(set(alphas) | {fnum(a) for a in extra})


def se_variants(exp: dict, channel: str = "hardmax") -> list[str]:
    """Output-function variants of an experiment's SE (hardmax may add ``density``)."""
    if channel != "hardmax":
        return ["exact"]
    return as_list(exp["se"].get("variant", "exact"))


def se_jobs(config: dict) -> list[dict]:
    """One dict per SE curve file: experiment, channel, T, rho, variant."""
    jobs = []
    for name, exp in config["experiments"].items():
        if "se" not in exp:
            continue
        for channel in channels(exp, exp["se"]):
            for rho in as_list(exp["rho"]):
                for T in as_list(exp["se"].get("T", exp["T"])):
                    for variant in se_variants(exp, channel):
                        jobs.append(dict(experiment=name, channel=channel, T=int(T),
                                         rho=fnum(rho), variant=variant))
    return jobs


@dataclass(frozen=True, order=True)
class TeacherKey:
    """Parameters of one run's teacher data (a data job covers every seed of its point)."""

    channel: str
    T: int
    beta: float
    rho: float
    d: int
    alpha: float
    seed: int


def stage_points(config: dict, experiment: str, stage: str) -> list[TeacherKey]:
    """Teacher keys of one data stage (``amp`` or ``gd``) of an experiment."""
    exp = config["experiments"][experiment]
    block = exp[stage]
    key = f"experiments.{experiment}.{stage}"
    ds = as_list(block["d"])
    seeds = as_list(block["seeds"])
    seeds = seeds * len(ds) if len(seeds) == 1 else seeds
    out = []
    for channel in channels(exp, block):
        betas = (as_list(block.get("beta", exp.get("beta", 1.0))) if channel == "softmax"
                 else [1.0])
        for rho in as_list(block.get("rho", exp["rho"])):
            for T in as_list(block.get("T", exp["T"])):
                for d, n_seeds in zip(ds, seeds, strict=True):
                    for beta in betas:
                        for alpha in _alphas_for(block, rho, int(T), channel, key):
                            for seed in range(int(n_seeds)):
                                out.append(TeacherKey(channel, int(T), fnum(beta), fnum(rho),
                                                      int(d), alpha, seed))
    return out


#: Defaults of the AMP options of an experiment's ``amp`` block.
AMP_DEFAULTS = {"damping": 0.5, "tol": 1e-7, "max_iter": 500, "dtype": "float64"}


def amp_options(config: dict, experiment: str, d: int | None = None) -> dict:
    """AMP options (damping, tol, max_iter, dtype) of an experiment, with defaults filled in.

    With ``d``, ``dtype: auto`` is resolved to the precision used at that size.
    """
    from .resources import amp_dtype

    block = config["experiments"][experiment]["amp"]
    opts = {k: block.get(k, v) for k, v in AMP_DEFAULTS.items()}
    if d is not None:
        opts["dtype"] = amp_dtype(opts["dtype"], int(d))
    return opts


def stage_variants(config: dict, experiment: str, stage: str,
                   channel: str = "hardmax") -> list[str]:
    """Hardmax output-function variants of a stage (``["exact"]`` unless configured)."""
    if channel != "hardmax":
        return ["exact"]
    return as_list(config["experiments"][experiment][stage].get("variant", "exact"))


def stage_groups(config: dict, experiment: str, stage: str) -> list[dict]:
    """One dict per aggregate of a stage: the fixed parameters and the alpha grid and seeds.

    A group is ``(channel, T, beta, rho, d, variant)``; its runs are every alpha of the grid times
    every seed.
    """
    groups: dict[tuple, dict] = {}
    for key in stage_points(config, experiment, stage):
        for variant in stage_variants(config, experiment, stage, key.channel):
            g = (key.channel, key.T, key.beta, key.rho, key.d, variant)
            entry = groups.setdefault(g, dict(channel=key.channel, T=key.T, beta=key.beta,
                                              rho=key.rho, d=key.d, variant=variant,
                                              alphas=set(), seeds=set()))
            entry["alphas"].add(key.alpha)
            entry["seeds"].add(key.seed)
    out = []
    for g in sorted(groups):
        e = groups[g]
        e["alphas"] = sorted(e["alphas"])
        e["seeds"] = sorted(e["seeds"])
        out.append(e)
    return out


def stage_jobs(config: dict, experiment: str, stage: str) -> list[dict]:
    """One job per ``(channel, variant, T, beta, rho, d, alpha)`` of a data stage.

    A job runs every seed of its point (``seeds``), drawing each seed's teacher data itself, so
    that the workflow has one job per point rather than one per run (the job start-up, about 2 s
    of imports and numba cache loading, is paid once per point).
    """
    out = []
    for g in stage_groups(config, experiment, stage):
        fixed = {k: v for k, v in g.items() if k != "alphas"}
        out.extend(dict(fixed, alpha=a) for a in g["alphas"])
    return out


#: Defaults of the GD options of an experiment's ``gd`` block (docs/theory.md §5).
GD_DEFAULTS = {"inits": 32, "steps": 1000, "lr": 0.1, "dtype": "float32"}


def gd_options(config: dict, experiment: str) -> dict:
    """GD options (inits, steps, lr, dtype) of an experiment, with defaults filled in."""
    block = config["experiments"][experiment]["gd"]
    return {k: block.get(k, v) for k, v in GD_DEFAULTS.items()}
