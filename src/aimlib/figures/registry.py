"""The figure registry: per figure, the cached inputs it is drawn from, the theory lines it
needs, what it shows, the paper figure it reproduces and the corrections it carries; and the
report captions built from it and the config.

Each figure's entry is a small YAML file beside its drawing module
(``aimlib/figures/drawing/fig1a.yaml`` next to ``fig1a.py``), read here; no matplotlib here, so
the workflow can import the registry cheaply while it parses: the rule's figure list, the
wildcard constraint, the figure script (:func:`aimlib.figures.draw`) and the tests all take the
figures from :data:`FIGURES`.  Adding a figure is its module and its YAML file in
``figures/drawing/``, its name in :data:`ORDER` and an experiment of that name in a config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

import yaml

from aimlib.algorithms import ALGORITHMS, aggregate_kinds

__all__ = ["FigureSpec", "FIGURES", "ORDER", "INPUT_KINDS", "THEORY_LINES", "caption",
           "load_spec"]

#: The kinds of cached input a figure can be drawn from: SE curves, every aggregate kind of
#: the algorithm registry (``amp``, ``gd``, ``agd``, ``spectral``), the finite-size fits, the
#: small-width limit, the theory lines computed for the SE curves and GD's measured
#: perfect-recovery thresholds (:mod:`aimlib.pipeline.recovery`).
INPUT_KINDS = ("se", *aggregate_kinds(), "finite_size", "small_width", "theory", "recovery")
#: The theory lines a figure may ask for (:data:`aimlib.theory.lines.LINES`, whose module
#: needs xarray and the theory; a test checks that the two agree).
THEORY_LINES = ("one_step", "large_alpha", "test_error_bayes", "test_error_plugin")
#: The registered figures, in the order of the paper, then the ones beyond it.
ORDER = ("fig1a", "fig1b", "fig2a", "fig2b", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8",
         "fig9", "fig10", "fig11", "fig12", "fig13", "fig_steps")


@dataclass(frozen=True)
class FigureSpec:
    """A registered figure: its name, input kinds, theory lines and notes (``paper``,
    ``shows``, ``corrections``).  ``"theory"`` is among the inputs exactly when ``theory``
    names lines."""

    name: str
    inputs: tuple[str, ...]
    paper: str
    shows: str
    corrections: str
    theory: tuple[str, ...] = ()

    def __post_init__(self):
        bad = set(self.inputs) - set(INPUT_KINDS)
        if bad:
            raise ValueError(f"figure {self.name}: unknown input kinds {sorted(bad)}")
        bad = set(self.theory) - set(THEORY_LINES)
        if bad:
            raise ValueError(f"figure {self.name}: unknown theory lines {sorted(bad)}")
        if self.theory and "theory" not in self.inputs:
            object.__setattr__(self, "inputs", (*self.inputs, "theory"))


def load_spec(name: str, text: str | None = None) -> FigureSpec:
    """Figure ``name``'s entry from its YAML file (``figures/drawing/<name>.yaml``), or from
    ``text``; a missing or unknown key is a ``ValueError`` naming the file."""
    where = f"aimlib/figures/drawing/{name}.yaml"
    if text is None:
        text = resources.files("aimlib.figures.drawing").joinpath(f"{name}.yaml").read_text(
            encoding="utf-8")
    entry = yaml.safe_load(text) or {}
    keys = {"inputs", "theory", "paper", "shows", "corrections"}
    if not isinstance(entry, dict) or set(entry) - keys or \
            not {"inputs", "paper", "shows", "corrections"} <= set(entry):
        raise ValueError(f"{where}: expected the keys {sorted(keys)} (theory optional), got "
                         f"{sorted(entry) if isinstance(entry, dict) else entry!r}")
    return FigureSpec(name, tuple(entry["inputs"]), paper=str(entry["paper"]),
                      shows=str(entry["shows"]), corrections=str(entry["corrections"]),
                      theory=tuple(entry.get("theory", ())))


#: The registry, in :data:`ORDER`: per figure its inputs, the paper figure it reproduces (or
#: "beyond the paper"), what it shows and the corrections it carries (:func:`caption` adds the
#: parameters from the config).
FIGURES: dict[str, FigureSpec] = {name: load_spec(name) for name in ORDER}



def _spec_text(spec) -> str:
    """A grid spec of the config as text: ``geomspace(0.03, 8, 32)``, a list, or per channel."""
    if isinstance(spec, Mapping):
        if len(spec) == 1 and next(iter(spec)) in ("geomspace", "linspace", "values"):
            (kind, args), = spec.items()
            return f"{kind}({', '.join(str(a) for a in args)})"
        return "; ".join(f"{k}: {_spec_text(v)}" for k, v in spec.items())
    return str(spec)


def _grid_text(block: Mapping) -> str:
    for key in ("alpha", "alpha_bar"):
        if key in block:
            cut = (f" up to alpha_bar {block['alpha_bar_max']:g}"
                   if block.get("alpha_bar_max") is not None else "")
            return f"{key} {_spec_text(block[key])}{cut}"
    return ""


def caption(name: str, experiment: Mapping) -> str:
    """A reStructuredText caption for figure ``name`` of an experiment block of the config:
    what it shows, its parameters, the paper figure it reproduces and the corrections it
    carries (used by the workflow's Snakemake report)."""
    spec = FIGURES.get(name)
    notes = {"shows": spec.shows, "paper": spec.paper, "corrections": spec.corrections} \
        if spec else {}
    lines = [f"**{name}**: {experiment.get('description', '')}", "",
             notes.get("shows", ""), "", "Parameters:", ""]
    for key in ("channel", "T", "rho", "beta", "delta", "tokens"):
        if key in experiment:
            lines.append(f"- {key}: {experiment[key]}")
    for stage in ("se", "small_width", *ALGORITHMS):
        block = experiment.get(stage)
        if not block:
            continue
        extra = ", ".join(f"{k} {block[k]}" for k in ("variant", "d", "d_rho", "seeds", "inits",
                                                      "steps", "damping") if k in block)
        lines.append(f"- {stage}: {_grid_text(block)}" + (f"; {extra}" if extra else ""))
    lines += ["", f"Reproduces: {notes.get('paper', 'a figure of this configuration')}.", "",
              f"Corrections: {notes.get('corrections', 'none')}"]
    return "\n".join(lines) + "\n"
