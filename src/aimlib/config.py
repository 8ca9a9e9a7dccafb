"""The workflow's configuration: grids, validation, and the plan of the jobs it implies.

The Snakefile validates ``config/*.yaml`` against ``config/schema.yaml`` completed from the channel
registry (:func:`schema`: channel names, their parameters, per-channel grids) and then calls
:func:`check` for what a JSON schema cannot say (hardmax needs ``T = 2``, a grid must be positive,
...).  :func:`plan` then builds, once, every job's parameters keyed by its file-name wildcards,
so that a rule looks its job up instead of re-enumerating the sweep; the same objects serve the
workflow, the resource estimate and the tests.

Grids are written ``{geomspace: [start, stop, num]}``, ``{linspace: [start, stop, num]}`` or
``{values: [...]}``.  Every float that appears in a file name is rounded once by :func:`fnum`
(six significant digits), and the rounded value is the one computed with.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .algorithms import ALGORITHMS
from .channels import CHANNELS, channel_class, check_T
from .options import SE_TOL
from .validation import check_positive

__all__ = [
    "fnum",
    "ffmt",
    "grid",
    "as_list",
    "channel_grid",
    "channel_param_values",
    "cpar",
    "ConfigError",
    "check",
    "check_schema",
    "fill_defaults",
    "schema",
    "Plan",
    "plan",
    "SEJob",
    "Group",
    "TeacherKey",
    "variants",
    "se_alphas",
    "channels",
    "stage_jobs",
    "stage_points",
    "STAGES",
]

#: Data stages that consume teacher data: one per algorithm of the registry
#: (:data:`aimlib.algorithms.ALGORITHMS`), in its order.
STAGES = tuple(ALGORITHMS)


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


def as_list(v) -> list:
    """A scalar or a list, as a list."""
    return list(v) if isinstance(v, list | tuple) else [v]


def _positive(v, key: str) -> None:
    """:func:`aimlib.validation.check_positive` with the error as a :class:`ConfigError`."""
    try:
        check_positive(v, key)
    except ValueError as e:
        raise ConfigError(str(e)) from None


def channels(exp: dict, block: dict | None = None) -> list[str]:
    """Output channels of an experiment, or of one of its blocks (which may narrow them)."""
    if block is not None and "channel" in block:
        return as_list(block["channel"])
    return as_list(exp["channel"])


def _check_T(Ts, chans, key: str) -> None:
    for i, T in enumerate(as_list(Ts)):
        if not isinstance(T, int) or isinstance(T, bool):
            raise ConfigError(f"{key}[{i}] must be an integer, got {T!r}")
        for c in chans:
            cls = CHANNELS[c]
            try:
                check_T(T, c, cls.T_MIN, cls.T_MAX)
            except ValueError as e:
                raise ConfigError(f"{key}[{i}]: {e}") from None


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


def cpar(channel: str, value: float) -> str:
    """The channel-parameter part of a file name: ``beta1.0``, ``delta0.1`` (hardmax, which has
    no parameter, writes ``beta1.0`` as it always has)."""
    return f"{CHANNELS[channel].PARAM or 'beta'}{ffmt(value)}"


def _key_path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _check_params(exp: dict, block: dict | None, chans: list[str], base: str) -> None:
    """Each channel parameter given applies to one of the channels, with valid values."""
    src = exp if block is None else block
    for cls in {CHANNELS[c] for c in CHANNELS}:
        key = cls.PARAM
        if key is None or key not in src:
            continue
        owners = [c for c in chans if CHANNELS[c].PARAM == key]
        if not owners:
            raise ConfigError(f"{base}.{key} applies to the "
                              f"{' and '.join(c for c, v in CHANNELS.items() if v.PARAM == key)} "
                              f"channel only, not to {', '.join(chans)}")
        for i, v in enumerate(as_list(src[key])):
            try:
                CHANNELS[owners[0]].check_param(v)
            except ValueError as e:
                raise ConfigError(f"{base}.{key}[{i}]: {e}") from None


def check(config: dict) -> None:
    """Semantic checks that the JSON schema cannot express; raise :class:`ConfigError`."""
    if not config.get("experiments"):
        raise ConfigError("experiments: empty; a config needs at least one experiment (see "
                          "config/quick.yaml)")
    for name, exp in config["experiments"].items():
        base = f"experiments.{name}"
        chans = channels(exp)
        for i, c in enumerate(chans):
            if c not in CHANNELS:
                raise ConfigError(f"{base}.channel[{i}] = {c!r}: not a channel (known: "
                                  f"{', '.join(CHANNELS)})")
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
            if stage in STAGES:
                alg = ALGORITHMS[stage]
                for c in channels(exp, block):
                    if not alg.supports(CHANNELS[c]):
                        fit = [k for k, v in CHANNELS.items() if alg.supports(v)]
                        raise ConfigError(
                            f"{base}.{stage}.channel: {alg.label} does not run on the {c} "
                            f"channel (it runs on {', '.join(fit)}); set {stage}.channel")
            for gk in ("alpha", "alpha_bar"):
                if gk in block:
                    for c in channels(exp, block):
                        for x in channel_grid(block[gk], c, f"{base}.{stage}.{gk}"):
                            _positive(x, f"{base}.{stage}.{gk}")
            if "T" in block:
                _check_T(block["T"], channels(exp, block), f"{base}.{stage}.T")
            _check_params(exp, block, channels(exp, block), f"{base}.{stage}")
            if stage in STAGES:
                seeds, ds = block["seeds"], as_list(block["d"])
                alg = ALGORITHMS[stage]
                for i, d in enumerate(ds):
                    for T in as_list(block.get("T", exp["T"])):
                        if int(d) < alg.min_d(int(T)):
                            raise ConfigError(
                                f"{base}.{stage}.d[{i}]: d={d} is too small for T={T} "
                                f"({alg.label} needs d >= {alg.min_d(int(T))})")
                if isinstance(seeds, list) and len(seeds) != len(ds):
                    raise ConfigError(f"{base}.{stage}.seeds: a list of seeds needs one entry per "
                                      f"d ({len(ds)}), got {len(seeds)}")
        _check_params(exp, None, chans, base)
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
        per = 1.0 / channel_class(channel)(T=T).alpha_bar_factor(rho)
        bars = channel_grid(block["alpha_bar"], channel, f"{key}.alpha_bar")
        return sorted({fnum(x * per) for x in bars})
    raise ConfigError(f"{key}: needs an alpha or an alpha_bar grid")


def variants(exp: dict, stage: str, channel: str) -> list[str]:
    """Output-function variants of a stage (``se``, ``amp``, ...) for a channel: the block's
    ``variant`` list for a channel that has several (hardmax), else the channel's only one."""
    cls = CHANNELS[channel]
    if len(cls.VARIANTS) == 1 or (stage in ALGORITHMS and not ALGORITHMS[stage].HAS_VARIANTS):
        return [cls.VARIANTS[0]]
    return as_list(exp[stage].get("variant", cls.VARIANTS[0]))


# --------------------------------------------------------------------------------------------
# the job plan
# --------------------------------------------------------------------------------------------
def _key(wildcards) -> tuple:
    """A lookup key from wildcards (a dict or Snakemake's ``Wildcards``): sorted string pairs."""
    items = wildcards.items() if hasattr(wildcards, "items") else dict(wildcards).items()
    return tuple(sorted((str(k), str(v)) for k, v in items))


class _ChannelPoint:
    """What a job knows of its channel: the file-name part and the keyword of its parameter."""

    channel: str
    param: float

    @property
    def cpar(self) -> str:
        return cpar(self.channel, self.param)

    @property
    def channel_params(self) -> dict:
        """Keywords of the library calls (``generate``, ``curve``) for the channel's parameter."""
        return CHANNELS[self.channel].param_kwargs(self.param)


@dataclass(frozen=True)
class SEJob(_ChannelPoint):
    """One state-evolution curve: a channel at ``(T, param, rho, variant)`` over ``alphas``."""

    experiment: str
    channel: str
    T: int
    param: float
    rho: float
    variant: str
    alphas: tuple[float, ...]

    @property
    def wildcards(self) -> dict:
        return dict(experiment=self.experiment, channel=self.channel, T=str(self.T),
                    cpar=self.cpar, rho=ffmt(self.rho), variant=self.variant)


@dataclass(frozen=True)
class Group(_ChannelPoint):
    """One aggregate of a data stage: its fixed parameters, its alpha grid and seeds.  A data
    job runs one alpha of a group, every seed."""

    experiment: str
    stage: str
    channel: str
    variant: str
    T: int
    param: float
    rho: float
    d: int
    alphas: tuple[float, ...]
    seeds: tuple[int, ...]

    @property
    def wildcards(self) -> dict:
        """The group's file-name wildcards (a data job adds ``alpha``)."""
        return dict(experiment=self.experiment, channel=self.channel, variant=self.variant,
                    T=str(self.T), cpar=self.cpar, rho=ffmt(self.rho), d=str(self.d))

    def jobs(self) -> list[dict]:
        """One dict per data job (alpha), with the group's fixed parameters and ``seeds``."""
        fixed = dict(channel=self.channel, variant=self.variant, T=self.T, param=self.param,
                     rho=self.rho, d=self.d, seeds=list(self.seeds))
        return [dict(fixed, alpha=a) for a in self.alphas]


@dataclass
class Plan:
    """Every job a configuration implies, built once and looked up by wildcards.

    Attributes
    ----------
    config : dict
        The (checked) configuration.
    se_jobs : list of SEJob
        Every SE curve, in config order.
    """

    config: dict
    se_jobs: list[SEJob] = field(default_factory=list)
    _se: dict = field(default_factory=dict, repr=False)
    _groups: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        exps = self.config["experiments"]
        for name, exp in exps.items():
            if "se" in exp:
                for job in _se_jobs(name, exp):
                    self.se_jobs.append(job)
                    self._se[_key(job.wildcards)] = job
            for stage in STAGES:
                table = self._groups.setdefault(stage, {})
                if stage in exp:
                    for g in _groups(name, exp, stage):
                        table[_key(g.wildcards)] = g

    # ---------------------------------------------------------------- lookups
    def se(self, wildcards) -> SEJob:
        """The SE job of a file's wildcards."""
        return self._lookup(self._se, wildcards, "se")

    def group(self, stage: str, wildcards) -> Group:
        """The group of a data or aggregate file's wildcards (``alpha``, ``kind`` ignored)."""
        w = {k: v for k, v in dict(wildcards.items()).items() if k not in ("alpha", "kind")}
        return self._lookup(self._groups[stage], w, stage)

    @staticmethod
    def _lookup(table, wildcards, what):
        try:
            return table[_key(wildcards)]
        except KeyError:
            raise ValueError(f"no {what} job of the configuration matches "
                             f"{dict(wildcards.items())}") from None

    def se_for(self, experiment: str) -> list[SEJob]:
        return [j for j in self.se_jobs if j.experiment == experiment]

    def groups(self, stage: str, experiment: str | None = None) -> list[Group]:
        """Groups of a stage (of one experiment), in a fixed order."""
        gs = [g for g in self._groups.get(stage, {}).values()
              if experiment is None or g.experiment == experiment]
        return sorted(gs, key=lambda g: (g.experiment, g.channel, g.T, g.param, g.rho, g.d,
                                         g.variant))

    # ---------------------------------------------------------------- options
    def exp(self, experiment: str) -> dict:
        return self.config["experiments"][experiment]

    @property
    def base_seed(self) -> int:
        """The configuration's seed (every random draw derives from it and the job's point)."""
        return int(self.config["seed"])

    def figure_list(self, registered) -> list[str]:
        """The registered figures this config draws: those with an experiment of their name,
        in the registry's order, restricted to ``figures:`` if the config has that key."""
        wanted = self.config.get("figures", list(registered))
        return [f for f in registered if f in self.config["experiments"] and f in wanted]

    @property
    def se_tol(self) -> float:
        return float(self.config.get("se", {}).get("tol", SE_TOL))

    def allow_unconverged(self, experiment: str) -> bool:
        """Whether an SE curve of ``experiment`` may be cached with unconverged points
        (``experiments.<name>.se.allow_unconverged``, else the top-level ``se`` block's; default
        false: the job fails and names them)."""
        top = bool(self.config.get("se", {}).get("allow_unconverged", False))
        return bool(self.exp(experiment).get("se", {}).get("allow_unconverged", top))

    def options(self, stage: str, experiment: str, d: int | None = None) -> dict:
        """The options of an algorithm stage of an experiment (its ``OPTIONS`` over the block);
        with ``d``, size-dependent choices resolved (AMP's ``dtype: auto``)."""
        return ALGORITHMS[stage].options(self.exp(experiment)[stage], d)

    def amp_options(self, experiment: str, d: int | None = None) -> dict:
        """``options("amp", ...)``."""
        return self.options("amp", experiment, d)

    def gd_options(self, experiment: str) -> dict:
        """``options("gd", ...)``."""
        return self.options("gd", experiment)

    def aggregate_kinds(self, stage: str, experiment: str, figures=None) -> list[str]:
        """The aggregates of an algorithm stage that an experiment needs: those its figure
        draws (``figures``: the figure registry) or fits (finite size); every kind of the
        algorithm for an experiment without a registered figure."""
        kinds = list(ALGORITHMS[stage].AGGREGATES)
        if figures is None or experiment not in figures:
            return kinds
        wanted = set(figures[experiment].inputs) | set(self.finite_size_methods(experiment))
        return [k for k in kinds if k in wanted]

    def small_width(self, experiment: str) -> dict | None:
        """``alpha_bars`` and ``variant`` of the small-width limit of an experiment, or None."""
        block = self.exp(experiment).get("small_width")
        if block is None:
            return None
        return dict(alpha_bars=grid(block["alpha_bar"],
                                    f"experiments.{experiment}.small_width.alpha_bar"),
                    variant=block.get("variant", "exact"))

    def gap(self, experiment: str, method: str) -> dict:
        """Alphas of the finite-size gap per channel (``method``: an aggregate kind, ``amp`` or
        ``agd``), restricted to the channels its algorithm's stage runs."""
        from .algorithms import algorithm_of_kind

        exp = self.exp(experiment)
        stage = exp[algorithm_of_kind(method).name]
        return {c: [fnum(a) for a in alphas] for c, alphas in exp.get("gap", {}).items()
                if c in channels(exp, stage)}

    def finite_size_methods(self, experiment: str) -> list[str]:
        """The aggregate kinds of the finite-size study: AMP's and AGD's, where run."""
        exp = self.exp(experiment)
        if "gap" not in exp:
            return []
        return [m for m, stage in FINITE_SIZE_KINDS.items() if stage in exp]

    def axes(self, experiment: str) -> dict:
        return self.exp(experiment).get("axes", {})

    @property
    def style(self) -> dict:
        """The config's ``style`` block (the figures fill in the rest from their defaults)."""
        return dict(self.config.get("style", {}))


#: The aggregates the finite-size study fits (fig3), ``{kind: stage}``: AMP, and GD averaged
#: over its initialisations.
FINITE_SIZE_KINDS = {"amp": "amp", "agd": "gd"}


def plan(config: dict) -> Plan:
    """The :class:`Plan` of a configuration."""
    return Plan(config)


def _se_jobs(name: str, exp: dict) -> list[SEJob]:
    out = []
    block = exp["se"]
    for channel in channels(exp, block):
        params = (channel_param_values(exp, block, channel) if CHANNELS[channel].SE_USES_PARAM
                  else [CHANNELS[channel].PARAM_DEFAULT])
        for rho in as_list(block.get("rho", exp["rho"])):
            for T in as_list(block.get("T", exp["T"])):
                for param in params:
                    for variant in variants(exp, "se", channel):
                        alphas = set(_alphas_for(block, rho, int(T), channel,
                                                 f"experiments.{name}.se"))
                        # the finite-size gap needs SE exactly at its alphas
                        alphas |= {fnum(a) for a in exp.get("gap", {}).get(channel, [])}
                        out.append(SEJob(name, channel, int(T), fnum(param), fnum(rho), variant,
                                         tuple(sorted(alphas))))
    return out


def _groups(name: str, exp: dict, stage: str) -> list[Group]:
    block = exp[stage]
    key = f"experiments.{name}.{stage}"
    ds = as_list(block["d"])
    seeds = as_list(block["seeds"])
    seeds = seeds * len(ds) if len(seeds) == 1 else seeds
    out = []
    for channel in channels(exp, block):
        for rho in as_list(block.get("rho", exp["rho"])):
            for T in as_list(block.get("T", exp["T"])):
                for d, n_seeds in zip(ds, seeds, strict=True):
                    for param in channel_param_values(exp, block, channel):
                        alphas = tuple(_alphas_for(block, rho, int(T), channel, key))
                        for variant in variants(exp, stage, channel):
                            out.append(Group(name, stage, channel, variant, int(T), fnum(param),
                                             fnum(rho), int(d), alphas,
                                             tuple(range(int(n_seeds)))))
    return out


# --------------------------------------------------------------------------------------------
# convenience views of the plan (tests, benchmarks, the resource estimate)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, order=True)
class TeacherKey:
    """Parameters of one run's teacher data (a data job covers every seed of its point)."""

    channel: str
    T: int
    param: float
    rho: float
    d: int
    alpha: float
    seed: int


def stage_points(config: dict, experiment: str, stage: str) -> list[TeacherKey]:
    """Teacher keys of one data stage (``amp`` or ``gd``) of an experiment (one per run)."""
    keys = {TeacherKey(g.channel, g.T, g.param, g.rho, g.d, a, s)
            for g in plan(config).groups(stage, experiment) for a in g.alphas for s in g.seeds}
    return sorted(keys)


def stage_jobs(config: dict, experiment: str, stage: str) -> list[dict]:
    """One job per ``(channel, variant, T, param, rho, d, alpha)`` of a data stage.

    A job runs every seed of its point (``seeds``), drawing each seed's teacher data itself, so
    that the workflow has one job per point rather than one per run (the job start-up, about 2 s
    of imports and numba cache loading, is paid once per point).
    """
    return [j for g in plan(config).groups(stage, experiment) for j in g.jobs()]


def se_alphas(config: dict, experiment: str, rho: float, T: int,
              channel: str | None = None) -> list[float]:
    """The alpha grid of the SE curve of ``experiment`` at ``(rho, T)`` (and ``channel``)."""
    jobs = [j for j in plan(config).se_for(experiment)
            if j.rho == fnum(rho) and j.T == int(T) and channel in (None, j.channel)]
    return list(jobs[0].alphas)


# --------------------------------------------------------------------------------------------
# the schema, completed from the channel registry
# --------------------------------------------------------------------------------------------
def schema(schema_path) -> dict:
    """``config/schema.yaml`` with the registry filled in: the channel names (``$defs.channel``),
    one grid, axes and gap entry per channel, each channel's parameter as an experiment and
    stage key, the smallest ``T`` any channel takes, and the algorithms' option defaults."""
    import yaml

    from .options import defaults

    with open(schema_path) as f:
        sch = yaml.safe_load(f)
    defs = sch["$defs"]
    names = list(CHANNELS)
    defs["channel"]["oneOf"][0]["enum"] = names
    defs["channel"]["oneOf"][1]["items"]["enum"] = names
    for sub, ref in (("channel_grid", "#/$defs/grid"), ("axes", "#/$defs/axes")):
        target = defs[sub]["oneOf"][1] if sub == "channel_grid" else defs[sub]
        for c in names:
            target["properties"].setdefault(c, {"$ref": ref})
    gap = defs["experiment"]["properties"]["gap"]
    for c in names:
        gap["properties"][c] = {"type": "array", "minItems": 1,
                                "items": {"$ref": "#/$defs/positive"}}
    t_min = min(cls.T_MIN for cls in CHANNELS.values())
    defs["T"]["oneOf"][0]["minimum"] = t_min
    defs["T"]["oneOf"][1]["items"]["minimum"] = t_min
    for cls in CHANNELS.values():
        if cls.PARAM:
            entry = {"$ref": "#/$defs/number_list",
                     "description": f"{cls.name} channel parameter (checked by the channel)"}
            for block in ("experiment", "se_block", "data_block"):
                defs[block]["properties"].setdefault(cls.PARAM, entry)
    # one stage block per algorithm: the data keys, its variant (if it has one) and its options
    # with their defaults
    variant = {"oneOf": [{"enum": []}, {"type": "array", "minItems": 1, "items": {"enum": []}}]}
    names_v = sorted({v for c in CHANNELS.values() for v in c.VARIANTS})
    variant["oneOf"][0]["enum"] = names_v
    variant["oneOf"][1]["items"]["enum"] = names_v
    for name, alg in ALGORITHMS.items():
        props = {k: dict(v) for k, v in alg.OPTION_SCHEMA.items()}
        for k, v in defaults(alg.OPTIONS).items():
            props[k]["default"] = v
        if alg.HAS_VARIANTS:
            props["variant"] = variant
        defs[f"{name}_block"] = {"allOf": [{"$ref": "#/$defs/data_block"}],
                                 "unevaluatedProperties": False, "properties": props,
                                 "description": f"the {alg.label} stage"}
        defs["experiment"]["properties"][name] = {"$ref": f"#/$defs/{name}_block"}
    sch["properties"]["se"]["properties"]["tol"]["default"] = SE_TOL
    return sch


def fill_defaults(config: dict) -> dict:
    from .options import resolve

    """Fill in, in place, the defaults a config may omit: ``se.tol`` and the AMP and GD options
    of every experiment (:mod:`aimlib.options`), so that the resolved config recorded with every
    result says what was run."""

    config.setdefault("se", {}).setdefault("tol", SE_TOL)
    for exp in config.get("experiments", {}).values():
        for stage, alg in ALGORITHMS.items():
            if stage in exp:
                for k, v in resolve(alg.OPTIONS, exp[stage]).items():
                    exp[stage].setdefault(k, v)
    return config


def check_schema(config: dict, schema_path) -> None:
    """Validate ``config`` against :func:`schema`; on failure raise :class:`ConfigError` with
    one line: the key, its value and the rule it breaks (the most specific of jsonschema's
    errors, not a dump of the schema)."""
    import jsonschema
    from jsonschema.exceptions import best_match

    validator = jsonschema.Draft202012Validator(schema(schema_path))
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
