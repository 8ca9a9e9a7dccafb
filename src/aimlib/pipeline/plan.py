"""The job plan: every job a configuration implies, built once and looked up by its file-name
wildcards (:func:`plan`), so that a rule looks its job up instead of re-enumerating the sweep;
the same objects serve the workflow, the cost estimate and the tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aimlib.algorithms import ALGORITHMS, algorithm_of_kind
from aimlib.channels import CHANNELS
from aimlib.core.options import SE_TOL, resolve, specs, sweeps
from aimlib.pipeline.grids import (
    ConfigError,
    Ts,
    alphas_for,
    as_list,
    cells,
    channel_block,
    channel_param_values,
    channels,
    cpar,
    ffmt,
    fnum,
    grid,
    rhos,
    token_laws,
    variants,
)
from aimlib.prior import DEFAULT as DEFAULT_PRIOR
from aimlib.theory.cells import DEFAULT_CELL
from aimlib.tokens import GAUSSIAN, TokenLaw

__all__ = ["Plan", "plan", "SEJob", "Group", "TeacherKey", "FINITE_SIZE_KINDS", "stage_points",
           "stage_jobs", "se_alphas", "stage_cells"]


# --------------------------------------------------------------------------------------------
# the job plan
# --------------------------------------------------------------------------------------------
def _key(wildcards) -> tuple:
    """A lookup key from wildcards (a dict or Snakemake's ``Wildcards``): sorted string pairs."""
    items = wildcards.items() if hasattr(wildcards, "items") else dict(wildcards).items()
    return tuple(sorted((str(k), str(v)) for k, v in items))


class _ChannelPoint:
    """What a job knows of its model: the channel, its parameter, the token law and the
    ``(prior, attention)`` cell; the file-name part and the keywords of the library calls."""

    channel: str
    param: float
    tokens: TokenLaw
    prior: str
    attention: str

    @property
    def cpar(self) -> str:
        return cpar(self.channel, self.param, self.tokens, self.prior, self.attention)

    @property
    def cell(self) -> tuple[str, str]:
        """``(prior, attention)``; ``("tied", "self")`` is the paper's."""
        return self.prior, self.attention

    @property
    def model_params(self) -> dict:
        """Keywords of :func:`aimlib.model.generate` and :func:`aimlib.theory.cells.curve` for
        the cell (T_q = T in cross-attention); empty in the paper's cell, so that its jobs'
        params are what they were."""
        if self.cell == DEFAULT_CELL:
            return {}
        return dict(prior=self.prior, attention=self.attention)

    @property
    def channel_params(self) -> dict:
        """Keywords of the library calls (``generate``, ``curve``) for the channel's parameter."""
        return CHANNELS[self.channel].param_kwargs(self.param)

    @property
    def token_spec(self):
        """The token law in its config form (``"gaussian"``, ``{"law": "student_t", ...}``)."""
        return self.tokens.spec


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
    tokens: TokenLaw = GAUSSIAN
    prior: str = DEFAULT_PRIOR
    attention: str = "self"

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
    tokens: TokenLaw = GAUSSIAN
    prior: str = DEFAULT_PRIOR
    attention: str = "self"
    #: The group's values of the options its block sweeps (``(("width", 0.5),)``), in the
    #: order the algorithm declares them (:func:`aimlib.core.options.sweeps`).
    sweep: tuple = ()

    @property
    def cpar(self) -> str:
        """The channel point's part of the file name, then ``-<option><value>`` for each swept
        option (``-width0.5-optimizergd``)."""
        return super().cpar + "".join(f"-{k}{ffmt(v) if isinstance(v, float | int) else v}"
                                      for k, v in self.sweep)

    @property
    def wildcards(self) -> dict:
        """The group's file-name wildcards (a data job adds ``alpha``)."""
        return dict(experiment=self.experiment, channel=self.channel, variant=self.variant,
                    T=str(self.T), cpar=self.cpar, rho=ffmt(self.rho), d=str(self.d))

    def jobs(self) -> list[dict]:
        """One dict per data job (alpha), with the group's fixed parameters and ``seeds``."""
        fixed = dict(channel=self.channel, variant=self.variant, T=self.T, param=self.param,
                     rho=self.rho, d=self.d, seeds=list(self.seeds))
        if not self.tokens.is_gaussian:
            fixed["tokens"] = self.tokens.spec
        fixed.update(self.model_params)
        fixed.update(self.sweep)
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
            for stage in ALGORITHMS:  # the registry as it is now
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
                                         g.variant, g.tokens.tag, g.prior, g.attention,
                                         repr(g.sweep)))

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
        with ``d``, size-dependent choices resolved (AMP's ``dtype: auto``).  A swept option
        keeps its list: a group's own value is :meth:`group_options`'."""
        return ALGORITHMS[stage].options(self.exp(experiment)[stage], d)

    def group_options(self, g: Group) -> dict:
        """The options a group's jobs run with: the stage's, with the group's values of the
        swept options (a swept option given per channel: its channel's value)."""
        opts = channel_block(self.options(g.stage, g.experiment, g.d), g.channel,
                             _swept(g.stage), f"experiments.{g.experiment}.{g.stage}")
        return {**opts, **dict(g.sweep)}

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

    def recovery_kinds(self, experiment: str) -> list[str]:
        """The GD aggregate kinds whose perfect-recovery thresholds an experiment measures (its
        ``recovery`` block, :mod:`aimlib.pipeline.recovery`): GD's and AGD's, where GD runs."""
        exp = self.exp(experiment)
        if "recovery" not in exp or RECOVERY_STAGE not in exp:
            return []
        return list(ALGORITHMS[RECOVERY_STAGE].AGGREGATES)

    def recovery(self, experiment: str) -> dict:
        """The options of an experiment's ``recovery`` block over their defaults."""
        from aimlib.pipeline.recovery import RecoveryOptions

        return resolve(RecoveryOptions, self.exp(experiment).get("recovery"))

    def axes(self, experiment: str) -> dict:
        return self.exp(experiment).get("axes", {})

    @property
    def style(self) -> dict:
        """The config's ``style`` block (the figures fill in the rest from their defaults)."""
        return dict(self.config.get("style", {}))


#: The aggregates the finite-size study fits (fig3), ``{kind: stage}``: AMP, and GD averaged
#: over its initialisations.
FINITE_SIZE_KINDS = {"amp": "amp", "agd": "gd"}
#: The algorithm whose recovery thresholds an experiment's ``recovery`` block measures.
RECOVERY_STAGE = "gd"


def plan(config: dict) -> Plan:
    """The :class:`Plan` of a configuration."""
    return Plan(config)


def _se_jobs(name: str, exp: dict) -> list[SEJob]:
    out = []
    block = exp["se"]
    for channel in channels(exp, block):
        params = (channel_param_values(exp, block, channel) if CHANNELS[channel].SE_USES_PARAM
                  else [CHANNELS[channel].PARAM_DEFAULT])
        for cell in cells(exp, block):
            for rho in rhos(exp, block, channel, f"experiments.{name}", "se"):
                for T in Ts(exp, block, channel, f"experiments.{name}", "se"):
                    for param in params:
                        for variant in variants(exp, "se", channel, cell):
                            alphas = set(alphas_for(block, rho, int(T), channel,
                                                     f"experiments.{name}.se", cell))
                            # the finite-size gap needs SE exactly at its alphas
                            alphas |= {fnum(a) for a in exp.get("gap", {}).get(channel, [])}
                            for law in token_laws(exp, block, f"experiments.{name}.se.tokens"):
                                out.append(SEJob(name, channel, int(T), fnum(param), fnum(rho),
                                                 variant, tuple(sorted(alphas)), law, *cell))
    return out


def d_and_seeds(entry, seeds: int) -> tuple[int, int]:
    """``(d, seeds)`` of a ``d_rho`` entry: ``d`` alone (the block's seeds) or ``{d, seeds}``."""
    if isinstance(entry, dict):
        return int(entry["d"]), int(entry.get("seeds", seeds))
    return int(entry), int(seeds)


def stage_cells(exp: dict, stage: str, key: str) -> list[tuple[str, str]]:
    """The ``(prior, attention)`` cells a data stage runs: its block's (every one must be a cell
    the algorithm runs in, :attr:`aimlib.algorithms.protocol.Algorithm.CELLS`), else those of
    the experiment's that it runs in (AMP has no Bayes-optimal denoiser for untied
    self-attention, so an experiment over the four cells runs it in three)."""
    alg = ALGORITHMS[stage]
    block = exp[stage]
    if "prior" in block or "attention" in block:
        for cell in cells(exp, block):
            if not alg.runs_in(cell):
                bad = "prior" if "prior" in block and cell[0] != DEFAULT_PRIOR else "attention"
                raise ConfigError(f"{key}.{bad}: {alg.label} does not run in {alg.cell_name(cell)}"
                                  f" (it runs in {', '.join(map(alg.cell_name, alg.CELLS))})")
        return cells(exp, block)
    out = [c for c in cells(exp) if alg.runs_in(c)]
    if not out:
        raise ConfigError(f"{key}: {alg.label} runs in none of the experiment's cells (it runs "
                          f"in {', '.join(map(alg.cell_name, alg.CELLS))})")
    return out


def _swept(stage: str) -> list[str]:
    """The options of an algorithm that a config block may sweep (:func:`sweeps`)."""
    return [k for k, (_, spec) in specs(ALGORITHMS[stage].OPTIONS).items() if spec.sweep]


def _groups(name: str, exp: dict, stage: str) -> list[Group]:
    block = exp[stage]
    key = f"experiments.{name}.{stage}"
    ds = as_list(block["d"])
    seeds = as_list(block["seeds"])
    seeds = seeds * len(ds) if len(seeds) == 1 else seeds
    d_rho = {fnum(float(r)): d_and_seeds(v, seeds[0])
             for r, v in (block.get("d_rho") or {}).items()}
    swept = _swept(stage)
    out = []
    for channel in channels(exp, block):
        own = channel_block(block, channel, swept, key)
        for cell in stage_cells(exp, stage, key):
            for rho in rhos(exp, block, channel, f"experiments.{name}", stage):
                for T in Ts(exp, block, channel, f"experiments.{name}", stage):
                    # d_rho replaces the block's d for its widths (a single seed count, checked)
                    pairs = [d_rho[fnum(rho)]] if fnum(rho) in d_rho \
                        else list(zip(ds, seeds, strict=True))
                    for d, n_seeds in pairs:
                        for param in channel_param_values(exp, block, channel):
                            alphas = tuple(alphas_for(block, rho, int(T), channel, key, cell))
                            for variant in variants(exp, stage, channel, cell):
                                for law in token_laws(exp, block, f"{key}.tokens"):
                                    for sweep in sweeps(ALGORITHMS[stage].OPTIONS, own):
                                        out.append(Group(
                                            name, stage, channel, variant, int(T), fnum(param),
                                            fnum(rho), int(d), alphas,
                                            tuple(range(int(n_seeds))), law, *cell,
                                            tuple(sweep.items())))
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
    tokens: str = "gaussian"
    prior: str = DEFAULT_PRIOR
    attention: str = "self"


def stage_points(config: dict, experiment: str, stage: str) -> list[TeacherKey]:
    """Teacher keys of one data stage (``amp`` or ``gd``) of an experiment (one per run)."""
    keys = {TeacherKey(g.channel, g.T, g.param, g.rho, g.d, a, s, g.tokens.tag, *g.cell)
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

