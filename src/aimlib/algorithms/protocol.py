"""What an algorithm of the registry provides (:data:`aimlib.algorithms.ALGORITHMS`).

An algorithm runs on teacher data drawn from a seed at one point ``(channel, T, parameter, rho,
d, alpha)``.  Its entry owns everything the library, the configuration, the workflow, the cost
estimate and the command line need to know of it, so that adding one is one module and one
registry line:

- ``OPTIONS``: the dataclass of the options an experiment's block may set, each declared once
  with :func:`aimlib.core.options.option` (meaning, type, default, range or choices), from which
  the library's defaults and checks, the schema's block and the command-line flags are derived;
- :meth:`run` and :meth:`run_point`: the numerics, whose result has one protocol (``error``,
  ``converged``, ``stop_reason``, ``to_dataset()``);
- :meth:`supports` (which channels), :meth:`min_d` (its smallest d);
- :meth:`resources` and :meth:`seconds`: threads, memory and time from d, T and n;
- ``AGGREGATES``: what its aggregates hold, ``{kind: run variable}`` (GD has two: the first
  initialisation and the average);
- :meth:`job`: one seed of a workflow job, the dataset written for it;
- :meth:`cli_row`: its ``aimlib <name>`` subcommand's columns (the flags come from ``OPTIONS``).
"""

from __future__ import annotations

import importlib
from dataclasses import fields
from typing import Any, ClassVar

import numpy as np

from aimlib.core import options as _options
from aimlib.core.backend import BACKENDS, DEFAULT, is_gpu

__all__ = ["Algorithm", "OUTCOME_EXTRAS", "outcome", "backend_option"]

#: Per-run variables every aggregate averages next to the error when a run has them (the test
#: error on fresh samples and the overlaps it is predicted from, docs/theory.md §10).
OUTCOME_EXTRAS = ("m", "Q", "test_error", "test_error_pred")


def outcome(data, S_hat, log, what: str, suffix: str = "") -> dict:
    """The estimate on fresh samples next to the prediction from its overlaps (fig8): ``m``,
    ``Q``, ``Q0``, ``test_error``, ``test_error_sem``, ``test_error_pred`` (with ``suffix``), NaN
    for an estimate that is not finite."""
    # when a run is made: the workflow imports the registry while it parses
    from aimlib.theory import generalisation

    vals = dict.fromkeys(("m", "Q", "Q0", "test_error", "test_error_sem", "test_error_pred"),
                         np.nan)
    if np.all(np.isfinite(S_hat)):
        ev = generalisation.evaluate(data, S_hat)
        log.info("seed %d: %s test error %.5f +- %.5f on %d fresh samples (Gaussian prediction "
                 "from m = %.4f, Q = %.4f: %.5f)", data.seed, what, ev.measured,
                 ev.measured_sem, generalisation.N_TEST, ev.m, ev.Q, ev.predicted)
        vals = dict(m=ev.m, Q=ev.Q, Q0=ev.Q0, test_error=ev.measured,
                    test_error_sem=ev.measured_sem, test_error_pred=ev.predicted)
    # Q0 is the teacher's, the same for every estimate of the seed: no suffix
    return {(k if k == "Q0" else f"{k}{suffix}"): float(v) for k, v in vals.items()}


def backend_option() -> Any:
    """The ``backend`` option of an algorithm that has one, its choices from
    :data:`aimlib.core.backend.BACKENDS`."""
    return _options.option(
        DEFAULT, "where the iterations run: numpy (CPU, numba kernels; the default), cupy or "
        "torch (one CUDA GPU, pip install -e '.[gpu]'), array_api / array_api_strict (the GPU "
        "code path on the CPU, for tests)", choices=lambda: tuple(BACKENDS),
        cli_help="where the iterations run: numpy (CPU), cupy or torch (a CUDA GPU, "
                 "pip install -e '.[gpu]')")


class Algorithm:
    """An algorithm of the registry (module docs); every member is a class attribute or a
    class method, the class itself is the registry's value."""

    name: ClassVar[str]
    #: Short description (figure legends, the CLI's help).
    label: ClassVar[str]
    OPTIONS: ClassVar[type]
    #: Whether its block may choose the channel's output-function ``variant``.
    HAS_VARIANTS: ClassVar[bool] = True
    #: ``{aggregate kind: the run variable it averages}``.
    AGGREGATES: ClassVar[dict[str, str]]
    #: Smallest ``d`` per token (its large-d approximations fail below).
    MIN_D_PER_T: ClassVar[int] = 2
    #: The ``(prior, attention)`` cells it runs in (docs/theory.md §15): the paper's, tied
    #: self-attention, unless it says more.
    CELLS: ClassVar[tuple[tuple[str, str], ...]] = (("tied", "self"),)

    @staticmethod
    def cell_name(cell: tuple[str, str]) -> str:
        """``"untied cross-attention"``: a cell in words, for messages."""
        return f"{cell[0]} {cell[1]}-attention"

    # ------------------------------------------------------------------ what it runs on
    @classmethod
    def supports(cls, channel_cls) -> bool:
        """Whether it runs on a channel (a class of :data:`aimlib.channels.CHANNELS`)."""
        return True

    @classmethod
    def min_d(cls, T: int) -> int:
        """Smallest embedding dimension at ``T`` tokens."""
        return max(2, cls.MIN_D_PER_T * int(T))

    @classmethod
    def check_channel(cls, channel: str) -> None:
        """``ValueError`` if it does not run on ``channel`` (naming those it runs on)."""
        # when a run is made: the workflow imports the registry while it parses
        from aimlib.channels import CHANNELS

        if not cls.supports(CHANNELS[channel]):
            fit = [k for k, c in CHANNELS.items() if cls.supports(c)]
            raise ValueError(f"{cls.label} does not run on the {channel} channel (it runs on "
                             f"{', '.join(fit)})")

    @classmethod
    def check_d(cls, d: int, T: int) -> None:
        """``ValueError`` if ``d`` is below its smallest d at ``T`` tokens."""
        if int(d) < cls.min_d(T):
            raise ValueError(f"d={d} is too small for {cls.name} at T={T} (it needs "
                             f"d >= {cls.min_d(T)})")

    @classmethod
    def check_point(cls, channel: str, d: int, T: int) -> None:
        """Both checks: the library's and the command line's (the config calls each with the
        key it checks)."""
        cls.check_channel(channel)
        cls.check_d(d, T)

    # ------------------------------------------------------------------ options
    @classmethod
    def backend(cls, opts: dict) -> str:
        """The backend a run with options ``opts`` uses (``"numpy"`` without the option)."""
        return str(opts.get("backend", DEFAULT))

    @classmethod
    def uses_gpu(cls, opts: dict) -> bool:
        """Whether a run with options ``opts`` runs on a GPU (its jobs request one)."""
        return is_gpu(cls.backend(opts))

    @classmethod
    def options(cls, block: dict | None, d: int | None = None) -> dict:
        """The options of a config block over the defaults (``d`` resolves size-dependent
        choices such as AMP's ``dtype: auto``)."""
        return _options.resolve(cls.OPTIONS, block)

    @classmethod
    def option_names(cls) -> list[str]:
        return [f.name for f in fields(cls.OPTIONS)]

    @classmethod
    def validate(cls, opts: dict, *, where: str = "", name=None) -> dict:
        """``opts`` checked against the declarations of ``OPTIONS``
        (:func:`aimlib.core.options.validate`: ``ValueError`` naming the key)."""
        return _options.validate(cls.OPTIONS, opts, where=where, name=name)

    # ------------------------------------------------------------------ numerics
    @classmethod
    def run(cls, data, *, variant: str = "exact", progress=None, **opts):
        raise NotImplementedError

    @classmethod
    def run_point(cls, channel, alpha: float, rho: float, T: int | None, d: int, seed: int,
                  *, base_seed: int = 0, variant: str = "exact", prior: str = "tied",
                  attention: str = "self", **kw):
        """Draw teacher data from a seed and run; ``channel`` is an object
        (:func:`aimlib.channels.make_channel`) or a name whose own parameter (``beta``,
        ``delta``) is taken from ``kw``; ``prior`` and ``attention`` choose the cell
        (cross-attention with ``T_q = T`` queries); the rest goes to :meth:`run`."""
        # when a run is made: the workflow imports the registry while it parses
        from aimlib.channels import channel_class, make_channel
        from aimlib.model import generate

        cparams, opts = channel_class(channel).split_params(kw)
        ch = make_channel(channel, T=T, **cparams)
        cls.check_point(ch.name, d, ch.T)
        cls.check_cell((prior, attention))
        data = generate(ch, alpha, rho, None, d, seed, base_seed=base_seed, prior=prior,
                        attention=attention)
        return cls.run(data, variant=variant, **opts)

    @classmethod
    def runs_in(cls, cell: tuple[str, str]) -> bool:
        """Whether it runs with ``(prior, attention)`` (a prior by its name: a symmetric one is
        in the tied cells, :func:`aimlib.theory.cells.kind`)."""
        # when a run is made: the workflow imports the registry while it parses
        from aimlib.theory.cells import kind

        return kind(*cell) in cls.CELLS

    @classmethod
    def check_cell(cls, cell: tuple[str, str]) -> None:
        """``ValueError`` naming the key if it does not run in ``(prior, attention)``."""
        if not cls.runs_in(cell):
            key = "attention" if cls.runs_in((cell[0], "self")) else "prior"
            raise ValueError(f"{key}: {cls.label} does not run in {cls.cell_name(cell)} (it "
                             f"runs in {', '.join(map(cls.cell_name, cls.CELLS))})")

    # ------------------------------------------------------------------ resources
    @classmethod
    def resources(cls, d: int, n: int, T: int, r: int, channel: str, opts: dict, *,
                  runs: int = 1, attempt: int = 1):
        """The :class:`aimlib.algorithms.resources.Resources` of ``runs`` runs in series."""
        raise NotImplementedError

    @classmethod
    def seconds(cls, d: int, n: int, T: int, r: int, channel: str, opts: dict) -> float:
        """Expected seconds of one run (the cost estimate): CPU-seconds, or GPU-seconds where
        :meth:`uses_gpu`."""
        raise NotImplementedError

    # ------------------------------------------------------------------ workflow
    @classmethod
    def job(cls, data, variant: str, opts: dict, log, progress=None):
        """One seed of a workflow job: run, log, and return the seed's dataset (the result's
        ``to_dataset()`` with the test error on fresh samples)."""
        raise NotImplementedError

    #: The module of its numerics (``"aimlib.algorithms.amp"``), imported when first needed;
    #: its ``STOP_REASONS``, if it has them, name the codes of a dataset's ``stop_reason``.
    NUMERICS: ClassVar[str | None] = None

    @classmethod
    def dataset_attrs(cls, opts: dict) -> dict:
        """Attributes of a job's dataset: its options (``<name>_<option>``) and the names of
        its ``stop_reason`` codes (``stop_reasons``), where its numerics define them.  An
        option left at ``None`` (decided at run time, such as GD's width) is recorded by the
        job with the value it took."""
        out = {f"{cls.name}_{k}": v for k, v in opts.items() if v is not None}
        reasons = getattr(importlib.import_module(cls.NUMERICS), "STOP_REASONS", None) \
            if cls.NUMERICS else None
        if reasons:
            out["stop_reasons"] = " ".join(reasons)
        return out

    #: What its progress bar counts (``"AMP iterations"``).
    PROGRESS_UNIT: ClassVar[str] = "steps"

    @classmethod
    def progress_total(cls, opts: dict) -> int | None:
        """Steps of a run's progress bar in a job log (``None``: no bar)."""
        return None

    @classmethod
    def progress(cls, bar, log):
        """The callable :meth:`run` reports progress to, drawing into a job log's ``bar``."""
        return None

    @classmethod
    def aggregate_extras(cls, kind: str) -> dict[str, str]:
        """``{aggregate variable: run variable}`` of the extras averaged with ``kind``."""
        return {k: k for k in OUTCOME_EXTRAS}

    # ------------------------------------------------------------------ command line
    @classmethod
    def add_cli_args(cls, parser) -> None:
        """Its options as command-line flags (:func:`aimlib.core.options.add_arguments`)."""
        _options.add_arguments(parser, cls.OPTIONS)

    #: The subcommand's one-line help, description and example.
    CLI_HELP: ClassVar[str] = ""
    CLI_DESCRIPTION: ClassVar[str] = ""
    CLI_EXAMPLE: ClassVar[str] = ""

    @classmethod
    def reference(cls, channel, alpha: float, prior, attention: str = "self") -> dict:
        """What a run is compared with on the command line: the Bayes-optimal error (SE) for
        ``channel`` (an object, with the run's variant), ``prior`` (an object) and
        ``attention``; in untied self-attention the two bounds (``SE_lower``, ``SE_upper``)."""
        # when a run is made: the workflow imports the registry while it parses
        from aimlib.theory import cells
        from aimlib.theory.state_evolution import solve

        if not cls.HAS_VARIANTS:
            channel = channel.with_variant(channel.VARIANTS[0])
        if cells.is_paper(prior.name, attention):
            return {"SE": solve(channel, alpha, prior.rho, prior=prior).error}
        ds = cells.curve(channel, [alpha], prior.rho, prior=prior.name, attention=attention)
        if "error" in ds:
            return {"SE": float(ds["error"].values[0])}
        return {"SE_lower": float(ds["error_lower"].values[0]),
                "SE_upper": float(ds["error_upper"].values[0])}

    @classmethod
    def cli_row(cls, res) -> dict:
        """The columns of its result in ``aimlib <name>``'s table."""
        return {"error": res.error, "converged": res.converged, "stop_reason": res.stop_reason}
