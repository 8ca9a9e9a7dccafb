"""The figure registry: per figure, the cached inputs it is drawn from, what it shows, the paper
figure it reproduces and the corrections it carries; and the report captions built from it and
the config.  No matplotlib here, so the workflow can import it cheaply: the rule's figure list,
the wildcard constraint, the figure script (:func:`aimlib.figures.draw`) and the tests all take
the figures from :data:`FIGURES`.  Adding a figure is an entry here, a function of the same name
in :mod:`aimlib.figures` and an experiment of that name in a config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aimlib.algorithms import ALGORITHMS, aggregate_kinds

__all__ = ["FigureSpec", "FIGURES", "INPUT_KINDS", "caption"]

#: The kinds of cached input a figure can be drawn from: SE curves, every aggregate kind of
#: the algorithm registry (``amp``, ``gd``, ``agd``, ``spectral``), the finite-size fits and
#: the small-width limit.
INPUT_KINDS = ("se", *aggregate_kinds(), "finite_size", "small_width")


@dataclass(frozen=True)
class FigureSpec:
    """A registered figure: its name, input kinds and notes (``paper``, ``shows``,
    ``corrections``)."""

    name: str
    inputs: tuple[str, ...]
    paper: str
    shows: str
    corrections: str

    def __post_init__(self):
        bad = set(self.inputs) - set(INPUT_KINDS)
        if bad:
            raise ValueError(f"figure {self.name}: unknown input kinds {sorted(bad)}")


#: The registry, in the order of the paper: per figure its inputs, the paper figure it
#: reproduces (or "beyond the paper"), what it shows and the corrections it carries
#: (:func:`caption` adds the parameters from the config).
FIGURES: dict[str, FigureSpec] = {spec.name: spec for spec in (
    FigureSpec(
        "fig1a", ("se", "amp", "spectral"),
        paper="Figure 1 (left) of the paper",
        shows="Hardmax, T = 2: the Bayes-optimal estimation error from state evolution against "
              "alpha = n/d^2 for each width ratio rho (lines), and AMP run on data drawn from "
              "the model (markers: mean +- std over the converged seeds, with converged/runs "
              "written where not every seed converged; small open diamonds: no seed converged, "
              "at the mean of the final iterates; triangles on the axis: below it); the "
              "spectral estimator (one AMP output pass from the prior's mean sqrt(rho) I, "
              "RIE-denoised; stars) as a baseline next to its one-step SE prediction (thin "
              "dotted lines).",
        corrections="The SE and AMP use the exact hardmax output function. The paper's curves "
                    "come from code that used the bivariate normal density in its place, so "
                    "they lie above these (rho = 0.5, alpha = 0.4583: 0.237 here, 0.512 "
                    "published); they are drawn thin and dashed in the same colours."),
    FigureSpec(
        "fig1b", ("se", "small_width"),
        paper="Figure 1 (right) of the paper",
        shows="Hardmax, T = 2: SE error against alpha_bar = alpha/rho for each rho, with the "
              "small-width limit rho -> 0 (dashed) and its weak-recovery threshold (vertical "
              "line).",
        corrections="Exact hardmax output function (the paper's density curves thin and "
                    "dashed): the small-width threshold is "
                    "alpha_bar = 0.4034 (the published density gives 0.5633)."),
    FigureSpec(
        "fig2a", ("se",),
        paper="Figure 2 (left) of the paper",
        shows="Softmax, T = 2: SE error against alpha for each rho, with the rho -> infinity "
              "line; each curve reaches zero at the perfect-recovery threshold "
              "alpha_bar_c = 2 rho - rho^2 (1 for rho >= 1).",
        corrections="None: the softmax channel is unaffected by the hardmax error."),
    FigureSpec(
        "fig2b", ("se", "amp", "gd", "agd", "spectral"),
        paper="Figure 2 (right) of the paper",
        shows="Softmax: error against alpha_bar = alpha (T^2 + T - 2) for several T: SE line, "
              "AMP (dots), gradient descent from one initialisation (+) and the average of K "
              "runs (x), and the spectral estimator (stars) with its one-step SE prediction "
              "(thin dotted line). Points below the axis are drawn as triangles on it.",
        corrections="None."),
    FigureSpec(
        "fig3", ("se", "amp", "agd", "finite_size"),
        paper="Figure 3 of the paper (finite-size study)",
        shows="AMP and averaged GD against alpha at each d with the SE curve, the gap to SE "
              "against 1/d at fixed alpha with a fitted power law, and the extrapolation "
              "d -> infinity against SE. Points from one converged seed have no spread of "
              "their own: their standard error (dotted bars) is the spread at the largest d "
              "with two or more seeds, scaled as 1/d.",
        corrections="Hardmax panels use the exact output function."),
    FigureSpec(
        "fig4", ("se", "amp", "gd", "agd"),
        paper="Beyond the paper",
        shows="Softmax, T = 2 at several inverse temperatures beta: SE does not depend on beta "
              "(one curve); AMP, GD and AGD at each beta must agree with it.",
        corrections="None."),
    FigureSpec(
        "fig5", ("se",),
        paper="Beyond the paper",
        shows="Softmax SE for T = 2..6 against alpha_bar = alpha (T^2 + T - 2): the curves "
              "collapse.",
        corrections="None."),
    FigureSpec(
        "fig6", ("se", "amp"),
        paper="Beyond the paper: the correction itself",
        shows="Hardmax, T = 2: SE with the exact output function, SE with the published density "
              "as the paper computes it (dashed), the state evolution of AMP run with the "
              "density on data from the true model (mismatched, dotted), and AMP run with each "
              "output function (filled circles: exact g_out; open squares: the density g_out; "
              "both means over the converged seeds, with k/n written where only k of n seeds "
              "converged; small open diamonds: no seed converged, at the mean of the final "
              "iterates).",
        corrections="This figure is the correction: the paper's hardmax curves are the dashed "
                    "one; the Bayes-optimal error is the solid one."),
    FigureSpec(
        "fig7", ("se", "amp"),
        paper="Beyond the paper: the large-alpha rate (docs/theory.md §9)",
        shows="Hardmax, T = 2: (a) SE with the exact output function (solid) and with the "
              "published density (dashed) against alpha, the asymptotic laws of each (thin "
              "dashed grey: prefactor alpha^-2 for the exact one, alpha^-1 for the density), and "
              "AMP at large alpha with the slope fitted on its means (+- one standard error); "
              "(b) alpha^2 E, flat where the error falls as alpha^-2.",
        corrections="The paper reports a decay 'compatible with O(1/alpha)'; that is the rate of "
                    "its density curve. The Bayes-optimal error falls as alpha^-2 "
                    "(0.10154 alpha^-2 at rho = 0.5)."),
    FigureSpec(
        "fig8", ("se", "amp", "gd", "agd"),
        paper="Beyond the paper: the test error (docs/theory.md §10)",
        shows="Test error E||y(X; S*) - prediction||^2 on fresh samples against alpha, softmax "
              "and hardmax at T = 2: the Bayes-optimal test error from SE with the Bayes "
              "predictor (solid) and with the plug-in predictor y(X; S_hat) (dashed); AMP, GD "
              "and AGD estimates measured on 10,000 fresh samples per seed (filled markers) next "
              "to the Gaussian prediction from each estimate's own overlaps (m, Q) (open).",
        corrections="Hardmax curves use the exact output function."),
    FigureSpec(
        "fig9", ("se", "amp", "agd"),
        paper="Beyond the paper: a third output channel (docs/theory.md §11)",
        shows="Gaussian output channel y = h + sqrt(Delta) z, rho = 0.5: SE error against alpha "
              "for T = 1, 2, 3 (lines; dotted: the noiseless perfect-recovery threshold "
              "alpha T (T + 1) = 2 rho - rho^2, i.e. alpha = rho - rho^2/2 at T = 1, the "
              "extensive-width quadratic network), one panel per noise level, with AMP (dots) "
              "and AGD (crosses). With noise, GD's gap to the line shows whether it is still "
              "Bayes-optimal.",
        corrections="None: a new channel."),
    FigureSpec(
        "fig10", ("se", "amp", "agd"),
        paper="Beyond the paper: tokens that are not Gaussian (docs/theory.md §13)",
        shows="Softmax and hardmax, T = 2: (top) error against alpha under each token law "
              "(one colour per law): the SE of Gaussian tokens (black), the SE of each law "
              "where it differs (dashed), AMP (filled circles) and AGD (crosses, softmax), "
              "markers of different laws slightly offset in alpha; (bottom) each result minus "
              "the Gaussian-token SE at its alpha (AMP: mean +- standard error over the "
              "converged seeds). Softmax is universal: every law shares one SE. Hardmax is "
              "not: i.i.d. tokens change it through their kurtosis (Var omega_aa = 2 q + kappa "
              "rho), correlated tokens through the correlation of the two comparisons.",
        corrections="Hardmax uses the exact output function."),
    FigureSpec(
        "fig11", ("se", "amp"),
        paper="Beyond the paper: hardmax beyond two tokens (docs/theory.md §14)",
        shows="Hardmax at T = 2, 3 (4): (a) the Bayes-optimal error from SE against "
              "alpha_bar = c_T alpha / rho, where c_T is the information of one sample's labels "
              "with nothing known relative to T = 2 (1, 2.30, 3.84), so that every T starts to "
              "learn at the same alpha_bar in the small-width limit; AMP (filled circles, mean "
              "+- std over the converged seeds) and each T's large-alpha law C_T alpha^-2 "
              "(thin dashed, from the strip sum of docs/theory.md §14.3); (b) alpha_bar^2 E, "
              "which flattens to each law's prefactor.",
        corrections="Exact output function (the paper's density formula exists for T = 2 "
                    "only); the T >= 3 SE is computed by randomised QMC, relative accuracy "
                    "about 3e-3."),
    FigureSpec(
        "fig_steps", ("se", "gd", "agd"),
        paper="Beyond the paper: the step budget behind Figure 2 (right) (docs/theory.md §5.2)",
        shows="Softmax, rho = 0.5: GD (dashed, +) and AGD (solid, x) error against the number "
              "of Adam steps, one panel per T, one colour per alpha_bar below and above the "
              "perfect-recovery threshold (mean over seeds; AGD's band: +- its standard "
              "error); the legend gives the rate "
              "p of AGD's error ~ steps^-p fitted from 100 to 1000 steps; the dotted vertical "
              "line is the paper's budget of 1000 steps and the thin horizontal lines the "
              "Bayes-optimal (SE) error at each alpha_bar (none above the threshold, where it "
              "is 0).",
        corrections="None."),
)}



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
