"""The four cells of {tied, untied} x {self, cross} attention as one interface
(aimlib.theory.cells) and as config keys of the workflow (prior:, attention:)."""

import copy
import re

import numpy as np
import pytest
import yaml

from aimlib.algorithms import ALGORITHMS
from aimlib.channels import make_channel
from aimlib.pipeline import config as cfg
from aimlib.pipeline import paths
from aimlib.prior import make_prior
from aimlib.theory import cells, state_evolution

RHO = 0.5
F = make_prior("tied", RHO).mmse_slope()  # 2 rho - rho^2 = 0.75, the same for both priors


# ---------------------------------------------------------------------------------------------
# the library
# ---------------------------------------------------------------------------------------------
def test_paper_cell_is_the_paper_state_evolution_bit_for_bit():
    alphas = [0.05, 0.1, 0.2]
    ch = make_channel("softmax", T=2)
    a = cells.curve(ch, alphas, RHO)
    b = state_evolution.curve(ch, alphas, RHO)
    assert a.identical(b)


@pytest.mark.parametrize("T", [2, 3])
@pytest.mark.parametrize("prior", ["tied", "untied"])
def test_softmax_cross_attention_error_vanishes_at_alpha_bar_f(T, prior):
    """alpha_bar is alpha over counting, times f: the fixed points (not the threshold formula)
    reach zero error between alpha_bar = 0.98 f and 1.02 f in both cross-attention cells."""
    ch = make_channel("softmax", T=T)
    factor = cells.alpha_bar_factor(ch, RHO, prior=prior, attention="cross")
    assert factor == pytest.approx((2 if prior == "tied" else 1) * T * (T - 1), rel=1e-12)
    ds = cells.curve(ch, [0.98 * F / factor, 1.02 * F / factor], RHO, prior=prior,
                     attention="cross")
    assert ds["alpha_bar"].values == pytest.approx([0.98 * F, 1.02 * F], rel=1e-12)
    assert ds["error"].values[0] > 1e-3 and ds["error"].values[1] < 1e-9  # the SE tolerance
    assert ds.attrs["perfect_recovery_alpha"] * factor == pytest.approx(F, rel=1e-12)
    assert ds.attrs["counting_alpha"] == pytest.approx(ds.attrs["perfect_recovery_alpha"])
    assert (ds.attrs["prior"], ds.attrs["attention"], ds.attrs["T_q"]) == (prior, "cross", T)


@pytest.mark.parametrize("T", [2, 3])
def test_untied_self_attention_curve_is_its_two_bounds(T):
    """No ``error`` (a bound is never taken for the Bayes error); each bound vanishes at its
    own threshold f T/(T+1) and f T/(T-1) in alpha_bar (f/(T^2-1), f/(T-1)^2 in alpha), found
    by the fixed points; counting sits at alpha_bar = f between them."""
    ch = make_channel("softmax", T=T)
    factor = cells.alpha_bar_factor(ch, RHO, prior="untied", attention="self")
    assert factor == T * (T - 1)
    lo, hi = F / (T * T - 1), F / (T - 1) ** 2
    ds = cells.curve(ch, [0.98 * lo, 1.02 * lo, 0.98 * hi, 1.02 * hi], RHO, prior="untied")
    assert "error" not in ds and ds.attrs["bounds"] == 1
    assert ds.attrs["noise_ratio"] == pytest.approx((T + 1) / (T - 1))
    low, up = ds["error_lower"].values, ds["error_upper"].values
    assert low[0] > 1e-3 and low[1] < 1e-9 and up[2] > 1e-3 and up[3] < 1e-9
    assert np.all(low <= up + 1e-9)  # the SE tolerance
    assert (ds.attrs["perfect_recovery_alpha_lower"], ds.attrs["perfect_recovery_alpha_upper"],
            ds.attrs["counting_alpha"] * factor) == pytest.approx((lo, hi, F))
    assert state_evolution.usable(ds).all() and state_evolution.unconverged_points(ds) == []
    bad = ds.copy()
    bad["converged_upper"].values[1] = 0
    assert not state_evolution.usable(bad)[1]
    assert re.match(r"alpha=\S+ \(upper bound start: ", state_evolution.unconverged_points(bad)[0])


@pytest.mark.parametrize("args,message", [
    (("untied", "self", 1), r"^T=1: untied self-attention at T = 1 sees only the symmetric"),
    (("tied", "cross", 1), r"^T=1: cross-attention needs T >= 2"),
    (("untied", "cross", 4, "hardmax"), r"^T=4: hardmax cross-attention rows"),
    (("untied", "cross", 2, "softmax", "rademacher"), r"^tokens='rademacher'"),
    (("diagonal", "self", 2), r"^prior='diagonal': not a prior"),
    (("tied", "causal", 2), r"^attention='causal': not an attention"),
])
def test_impossible_cells_are_named(args, message):
    with pytest.raises(ValueError, match=message):
        cells.check_cell(*args)


def test_run_point_takes_the_cell_and_refuses_the_ones_an_algorithm_cannot_run():
    res = ALGORITHMS["gd"].run_point("softmax", 0.8, RHO, 2, 16, 0, prior="untied",
                                     attention="cross", inits=2, steps=300)
    assert res.error < 0.1  # twice the untied cross-attention threshold (0.375): recovered
    with pytest.raises(ValueError, match=r"^prior: AMP does not run in untied self-attention"):
        ALGORITHMS["amp"].run_point("softmax", 0.8, RHO, 2, 16, 0, prior="untied")
    with pytest.raises(ValueError, match=r"^prior: spectral does not run in untied "
                                         r"self-attention"):
        ALGORITHMS["spectral"].run_point("softmax", 0.8, RHO, 2, 16, 0, prior="untied")


# ---------------------------------------------------------------------------------------------
# the workflow
# ---------------------------------------------------------------------------------------------
@pytest.fixture()
def fig12(root):
    conf = yaml.safe_load((root / "config" / "quick.yaml").read_text())
    return {"seed": 1, "se": {}, "experiments": {"fig12": conf["experiments"]["fig12"]}}


def _jobs(conf):
    return cfg.plan(cfg.fill_defaults(conf))


def test_fig12_plan_names_each_cell_and_keeps_the_paper_file_names(fig12):
    plan = _jobs(fig12)
    se = paths.se_files(plan, "fig12")
    assert sorted(se) == sorted(f"data/se/fig12/softmax_T{T}_beta1.0{c}_rho0.5_exact.nc"
                                for T in (2, 3) for c in ("", "-cross", "-untied",
                                                          "-untied-cross"))
    amp = {(g.cell, g.T) for g in plan.groups("amp", "fig12")}
    gd = {(g.cell, g.T) for g in plan.groups("gd", "fig12")}
    # AMP has no Bayes-optimal denoiser for untied self-attention: three cells; GD all four
    assert amp == {(c, T) for c in ALGORITHMS["amp"].CELLS for T in (2, 3)} and len(amp) == 6
    assert gd == {(c, T) for c in ALGORITHMS["gd"].CELLS for T in (2, 3)} and len(gd) == 8
    # the same alpha_bar in every cell is a different alpha: counting at alpha_bar = f
    g = {(g.cell, g.T): g.alphas for g in plan.groups("gd", "fig12")}
    assert g[(("untied", "cross"), 2)] == pytest.approx(np.array(g[(("tied", "cross"), 2)]) * 2)
    assert g[(("untied", "self"), 3)] == pytest.approx([0.4 / 6, 1.2 / 6], rel=1e-5)
    # the paper's cell's jobs carry no model keys (their params, hence their caches, unchanged)
    (paper,) = [g for g in plan.groups("gd", "fig12") if g.cell == ("tied", "self") and g.T == 2]
    assert "prior" not in paper.jobs()[0] and paper.model_params == {}
    # no theory lines for fig12, and never for a cell beyond the paper's
    assert paths.theory_files(plan, "fig12") == []


def test_cpar_wildcard_matches_every_cell(root, fig12):
    """The {cpar} constraint of workflow/rules/common.smk matches every name the plan makes."""
    text = (root / "workflow" / "rules" / "common.smk").read_text()
    assert '"|".join(p for p in PRIORS if p != DEFAULT_PRIOR)' in text
    from aimlib.channels import CHANNELS
    from aimlib.model import ATTENTIONS
    from aimlib.prior import PRIORS
    from aimlib.tokens import TOKEN_LAWS

    flt = r"[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?"
    cpar = ("((_(" + "|".join(sorted({c.PARAM for c in CHANNELS.values() if c.PARAM})) + ")"
            + flt + ")?(-(" + "|".join(p for p in PRIORS if p != "tied") + "))?(-("
            + "|".join(a for a in ATTENTIONS if a != "self") + "))?(-("
            + "|".join(TOKEN_LAWS) + ")(" + flt + ")?)?)")
    for job in _jobs(fig12).se_for("fig12"):
        assert re.fullmatch(cpar, job.cpar), job.cpar
    assert cfg.cpar("softmax", 1.0, None, "untied", "cross") == "_beta1.0-untied-cross"


def _check(conf):
    cfg.validate(conf, "config/schema.yaml")


@pytest.mark.parametrize("edit,message", [
    (lambda e: e.update(T=[1, 2], channel="gaussian", attention="self"),
     r"^experiments\.fig12\.T \(in untied self-attention\): T=1: untied self-attention at "
     r"T = 1 sees only the symmetric part"),
    (lambda e: e.update(T=[1, 2], channel="gaussian"),
     r"^experiments\.fig12\.T \(in tied cross-attention\): T=1: cross-attention needs"),
    (lambda e: e.update(channel="hardmax", T=4, gd=None) or e.pop("gd"),
     r"^experiments\.fig12\.T \(in tied cross-attention\): T=4: hardmax cross-attention"),
    (lambda e: e.update(tokens="rademacher"),
     r"^experiments\.fig12\.tokens \(in tied cross-attention\): tokens='rademacher'"),
    (lambda e: e["amp"].update(prior="untied", attention="self"),
     r"^experiments\.fig12\.amp\.prior: AMP does not run in untied self-attention"),
    (lambda e: e.update(prior="untied", attention="self"),
     r"^experiments\.fig12\.amp: AMP runs in none of the experiment's cells"),
    (lambda e: e.update(gap={"softmax": [0.1]}),
     r"^experiments\.fig12\.gap: the finite-size study is the paper's"),
    (lambda e: e.update(prior=["tied", "diagonal"]), r"experiments\.fig12\.prior"),
    (lambda e: e["se"].update(attention="causal"), r"experiments\.fig12\.se\.attention"),
])
def test_impossible_cells_are_rejected_before_any_job_with_the_key(root, fig12, edit,
                                                                    message, monkeypatch):
    monkeypatch.chdir(root)
    bad = copy.deepcopy(fig12)
    edit(bad["experiments"]["fig12"])
    with pytest.raises(cfg.ConfigError, match=message):
        _check(bad)


def test_a_stage_may_narrow_the_cells(fig12):
    fig12["experiments"]["fig12"]["gd"]["prior"] = "untied"
    plan = _jobs(fig12)
    assert {g.cell for g in plan.groups("gd", "fig12")} == {("untied", "self"),
                                                            ("untied", "cross")}


def test_test_error_prediction_is_nan_beyond_the_paper_cell():
    """The plug-in prediction from the overlaps is derived for tied self-attention
    (docs/theory.md §10); elsewhere the measured test error stands alone, its prediction NaN
    (never the tied formula's number)."""
    from aimlib import model
    from aimlib.theory import generalisation

    for prior, attention in (("tied", "cross"), ("untied", "self"), ("untied", "cross")):
        data = model.generate("softmax", 0.2, RHO, 2, 20, 0, prior=prior, attention=attention)
        ev = generalisation.evaluate(data, 0.5 * data.S, n_test=200)
        assert np.isnan(ev.predicted) and ev.measured > 0, (prior, attention)
    data = model.generate("softmax", 0.2, RHO, 2, 20, 0)
    assert np.isfinite(generalisation.evaluate(data, 0.5 * data.S, n_test=200).predicted)


# ---------------------------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------------------------
def test_command_line_takes_the_cell(capsys):
    import csv
    import io

    from aimlib import cli

    assert cli.main(["se", "softmax", "--rho", "0.5", "--alpha", "0.2", "--prior", "untied",
                     "--format", "csv"]) == 0
    (row,) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    bounds = cells.curve("softmax", [0.2], RHO, 2, prior="untied")
    assert float(row["error_lower"]) == pytest.approx(float(bounds["error_lower"][0]), rel=1e-5)
    assert float(row["error_upper"]) == pytest.approx(float(bounds["error_upper"][0]), rel=1e-5)
    assert float(row["alpha_bar"]) == pytest.approx(0.4)  # T (T - 1) alpha
    assert cli.main(["gd", "--rho", "0.5", "--alpha-bar", "1.2", "--d", "16", "--inits", "2",
                     "--steps", "300", "--prior", "untied", "--attention", "cross",
                     "--format", "csv"]) == 0
    (row,) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert float(row["alpha"]) == pytest.approx(0.6)  # alpha_bar / (T (T - 1)), untied cross
    assert float(row["SE"]) < 1e-9 and float(row["error_agd"]) < 0.1
    for argv, match in ((["amp", "softmax", "--rho", "0.5", "--alpha", "0.2", "--d", "20",
                          "--prior", "untied"], "prior: AMP does not run in untied self"),
                        (["se", "gaussian", "--rho", "0.5", "--alpha", "0.2", "--T", "1",
                          "--prior", "untied"], "T=1: untied self-attention")):
        with pytest.raises(SystemExit) as exc:
            cli.main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and match in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("prior,attention", [("tied", "self"), ("untied", "cross"),
                                             ("untied", "self")])
def test_aggregate_alpha_bar_from_the_runs_equals_the_cells_scale(prior, attention):
    """An aggregate takes alpha_bar from its runs (so that it imports no channel) and gets the
    value the cell's scale gives when the runs do not carry it."""
    import xarray as xr

    from aimlib.pipeline.aggregate import aggregate_runs

    def runs(with_bar):
        out = []
        for alpha in (0.1, 0.3):
            attrs = dict(channel="softmax", T=3, rho=RHO, alpha=alpha, seed=0)
            if (prior, attention) != ("tied", "self"):
                attrs.update(prior=prior, attention=attention)
            if with_bar:
                attrs["alpha_bar"] = alpha * cells.alpha_bar_factor(
                    make_channel("softmax", T=3), RHO, prior=prior, attention=attention)
            out.append(xr.Dataset({"error": 0.5}, attrs=attrs))
        return out

    a, b = aggregate_runs(runs(True)), aggregate_runs(runs(False))
    assert a["alpha_bar"].values == pytest.approx(b["alpha_bar"].values, rel=1e-14)
    factor = {("tied", "self"): 10, ("untied", "cross"): 6, ("untied", "self"): 6}
    assert a["alpha_bar"].values == pytest.approx([0.1 * factor[prior, attention],
                                                   0.3 * factor[prior, attention]])


# ---------------------------------------------------------------------------------------------
# the spectral estimator in cross-attention
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("prior,channel,alpha", [("tied", "hardmax", 0.4),
                                                 ("untied", "softmax", 0.2),
                                                 ("untied", "hardmax", 0.4)])
def test_cross_spectral_is_cross_amps_first_iteration(prior, channel, alpha):
    """The estimator in cross-attention is cross-attention AMP's first step from the prior's
    mean (undamped, the trace left free): the same matrix to rounding."""
    from aimlib import model
    from aimlib.algorithms import amp

    data = model.generate(channel, alpha, RHO, 2, 40, 3, prior=prior, attention="cross")
    S_spec = ALGORITHMS["spectral"].run(data).S_hat
    res = amp.run(data, max_iter=1, scale="free", damping=0.0)
    np.testing.assert_allclose(S_spec, res.S_hat, rtol=0, atol=1e-11)


@pytest.mark.parametrize("prior", ["tied", "untied"])
def test_cross_spectral_hardmax_against_its_one_step_se(prior):
    """Hardmax, T = 2, alpha = 0.4, d = 150, 3 seeds: the error equals one cross-attention SE
    step from the prior's mean (0.4315 tied, 0.6189 untied) within 3 standard errors plus the
    finite-size excess of the self-attention estimator at d = 100 (0.011, docs/theory.md
    §4.1)."""
    from aimlib import model
    from aimlib.theory import cross_attention

    errs = np.array([ALGORITHMS["spectral"].run(model.generate(
        "hardmax", 0.4, RHO, 2, 150, s, prior=prior, attention="cross")).error
        for s in range(3)])
    pred = cross_attention.one_step("hardmax", 0.4, RHO, T_q=2, T_k=2, prior=prior)
    assert pred == pytest.approx({"tied": 0.4315, "untied": 0.6189}[prior], abs=5e-5)
    sem = errs.std(ddof=1) / np.sqrt(errs.size)
    assert abs(errs.mean() - pred) < 3 * sem + 0.011
