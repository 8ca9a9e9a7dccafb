"""The theory lines a figure draws (aimlib.theory.lines): each computed from the SE curve's own
record (channel, variant, prior), checked against what does not depend on that plumbing: the
SE errors the large-alpha laws approach, perfect recovery's zero test error, NaN kept."""

import math

import numpy as np
import pytest

from aimlib.channels import make_channel
from aimlib.figures.registry import FIGURES, THEORY_LINES
from aimlib.theory import generalisation
from aimlib.theory import state_evolution as se
from aimlib.theory.lines import LINES, theory_curve


def test_the_registry_names_exactly_the_lines_there_are():
    assert tuple(LINES) == THEORY_LINES
    assert {f for f, spec in FIGURES.items() if spec.theory} == {"fig1a", "fig2b", "fig7",
                                                                   "fig8", "fig11"}
    for spec in FIGURES.values():
        assert ("theory" in spec.inputs) == bool(spec.theory)


@pytest.mark.parametrize("variant,alphas,rel", [("exact", [2.0, 10.0, 50.0, 200.0], 2e-4),
                                                ("density", [50.0, 200.0, 1000.0], 0.01)])
def test_large_alpha_line_is_the_law_the_se_curve_approaches(variant, alphas, rel):
    """From the curve's attributes alone the line takes the right law: at the largest alpha it
    is within ``rel`` of the curve (exact: alpha^-2 to 2e-4 at 200; the published density:
    alpha^-1 to 1 % at 1000); the other variant's law is far off there."""
    ds = se.curve("hardmax", alphas, 0.5, tol=1e-14, variant=variant)
    th = theory_curve(ds, ["large_alpha", "one_step"])
    assert th.attrs["lines"] == "large_alpha one_step"
    assert th["large_alpha"].values[-1] == pytest.approx(ds["error"].values[-1], rel=rel)
    other = theory_curve(se.curve("hardmax", alphas[-1:], 0.5,
                                  variant="density" if variant == "exact" else "exact"),
                         ["large_alpha"])
    assert abs(other["large_alpha"].values[0] / ds["error"].values[-1] - 1) > 0.5
    ch = make_channel("hardmax", variant=variant)
    np.testing.assert_array_equal(th["one_step"].values,
                                  [se.one_step(ch, a, 0.5) for a in alphas])
    np.testing.assert_array_equal(th["alpha"].values, ds["alpha"].values)
    np.testing.assert_array_equal(th["alpha_bar"].values, ds["alpha_bar"].values)


def test_test_error_lines_vanish_at_perfect_recovery_and_keep_nan():
    """Softmax, rho = 0.5: above alpha_bar_c = 0.75 both test errors are 0 (the SE overlap is
    Q0); below they are the predictors' test errors at the curve's q, Bayes below plug-in; a
    NaN overlap gives NaN, never a number."""
    T, rho = 2, 0.5
    alphas = np.array([0.2, 0.4, 0.6, 0.8]) / 4  # alpha_bar = 4 alpha
    ds = se.curve("softmax", alphas, rho, T=T, beta=2.0)
    ds["q"].values[1] = math.nan
    th = theory_curve(ds, ["test_error_bayes", "test_error_plugin", "large_alpha"])
    assert "large_alpha" not in th and th.attrs["lines"] == "test_error_bayes test_error_plugin"
    b, p = th["test_error_bayes"].values, th["test_error_plugin"].values
    assert math.isnan(b[1]) and math.isnan(p[1])
    assert b[-1] == pytest.approx(0, abs=1e-9) and p[-1] == pytest.approx(0, abs=1e-9)
    ch = make_channel("softmax", T=T, beta=2.0)  # beta read back from the curve: it matters here
    for i in (0, 2):
        q = min(float(ds["q"].values[i]), 1 + rho)
        assert b[i] == generalisation.bayes(ch, q, rho).value
        assert p[i] == generalisation.bayes(ch, q, rho, predictor="plugin").value
        assert 0 < b[i] < p[i]
    assert b[0] != generalisation.bayes("softmax", float(ds["q"].values[0]), rho, T).value


def test_lines_that_do_not_apply_are_left_out_and_unknown_ones_named():
    ds = se.curve("hardmax", [0.5, 1.0], 0.5, tokens="rademacher")
    th = theory_curve(ds, ["one_step", "large_alpha"], tokens="rademacher")
    assert "one_step" not in th and "large_alpha" in th
    assert th.attrs["tokens"] == "rademacher"
    with pytest.raises(ValueError, match="unknown theory lines \\['best'\\]"):
        theory_curve(ds, ["best"])
