"""fig8, beyond the paper: the test error (docs/theory.md §10): Test error E||y(X; S*) -
prediction||^2 on fresh samples against alpha, softmax and hardmax at T = 2: the Bayes-optimal
test error from SE with the Bayes predictor (solid) and with the plug-in predictor y(X; S_hat)
(dashed); AMP, GD and AGD estimates measured on 10,000 fresh samples per seed (filled markers)
next to the Gaussian prediction from each estimate's own overlaps (m, Q) (open). What it shows
in full, and the corrections it carries, are its entry of
:data:`aimlib.figures.registry.FIGURES`.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt

from aimlib.figures.layers import add_legend, apply_axes, se_plot, theory_of
from aimlib.figures.style import Inputs, inputs_of, resolve_style, styled


@styled
def fig8(inputs: Inputs, *, axes: Mapping | None = None, style: Mapping | None = None):
    """Test error on fresh samples (docs/theory.md §10), one panel per channel: the Bayes-optimal
    test error from SE with the Bayes predictor (solid) and the plug-in predictor (dashed),
    and for AMP, GD and AGD estimates the test error measured on fresh samples (filled markers,
    mean +- std over converged seeds) next to the Gaussian prediction from each estimate's own
    overlaps ``(m, Q)`` (open markers)."""
    curves, amp, gd, agd, theory = inputs_of(inputs, "se", "amp", "gd", "agd", "theory")
    s = resolve_style(style)
    chans = [c for c in ("softmax", "hardmax") if any(d.attrs["channel"] == c for d in curves)]
    fig, axs = plt.subplots(1, len(chans), figsize=(s["width"] * len(chans), s["height"]),
                            layout="constrained", squeeze=False)
    marks = {"amp": ("o", "AMP", "tab:blue"), "gd": ("P", "GD", "tab:orange"),
             "agd": ("X", "AGD", "tab:green")}
    for ax, ch in zip(axs[0], chans, strict=True):
        for ds in (c for c in curves if c.attrs["channel"] == ch):
            for pred, ls, lab in (("bayes", "-", "SE, Bayes predictor"),
                                  ("plugin", "--", "SE, plug-in predictor")):
                th = theory_of(theory, f"test_error_{pred}", ds)
                if th is not None:
                    se_plot(ax, ds["alpha"].values, ds, th[f"test_error_{pred}"].values,
                            color="black", ls=ls, lw=s["line_width"], label=lab)
        for kind, aggs in (("amp", amp), ("gd", gd), ("agd", agd)):
            for agg in (g for g in aggs if g.attrs["channel"] == ch):
                if "test_error_mean" not in agg:
                    continue
                mk, name, col = marks[kind]
                a = agg["alpha"].values
                ax.errorbar(a, agg["test_error_mean"].values, yerr=agg["test_error_std"].values,
                            fmt=mk, color=col, ms=s["marker_size"] + 1, capsize=1.5,
                            elinewidth=0.8, ls="none",
                            label=rf"{name} ($d={agg.attrs['d']}$), measured")
                ax.plot(a, agg["test_error_pred_mean"].values, mk, color=col, mfc="white",
                        ms=s["marker_size"] + 3, mew=1.0, ls="none",
                        label=rf"{name}: Gaussian prediction from its $(m, Q)$")
        apply_axes(ax, (axes or {}).get(ch, axes))
        ax.set_xlabel(r"$\alpha = n/d^2$")
        ax.set_ylabel(r"test error $\mathbb{E}\|y(X;S^*) - \hat y\|_F^2$")
        ax.set_title(rf"{ch}, $T=2$: test error on fresh samples")
        add_legend(ax, loc="lower left", frameon=False, fontsize=s["font_size"] - 3)
    return fig
