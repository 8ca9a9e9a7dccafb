"""The algorithm registry (aimlib.algorithms): every entry's protocol, bad input, a new
algorithm through the registry alone, and the spectral estimator against its one-step SE."""

import argparse
import logging
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from aimlib import cli, model, prior
from aimlib import state_evolution as se
from aimlib.algorithms import ALGORITHMS, Algorithm, aggregate_kinds, algorithm, resources
from aimlib.algorithms.protocol import outcome
from aimlib.algorithms.result import Result
from aimlib.channels import CHANNELS
from aimlib.core.options import defaults, option
from aimlib.figures.registry import FIGURES, INPUT_KINDS
from aimlib.pipeline import config as cfg
from aimlib.pipeline import cost

LOG = logging.getLogger("test")


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_registry_entry_protocol(name):
    """run_point returns a result with error, converged, stop_reason and to_dataset(); the
    job's dataset holds what the aggregates average; the resource model is positive and grows
    with n; the options' defaults are the schema's."""
    alg = ALGORITHMS[name]
    assert alg.name == name and alg.label and alg.AGGREGATES
    ch = next(c for c, k in CHANNELS.items() if alg.supports(k))
    opts = alg.options({}, 30)
    if name == "gd":
        opts.update(inits=2, steps=30, checkpoints=4)  # every extra, the checkpoints included
    res = alg.run_point(ch, 0.3, 0.5, 2, 30, 0, **opts)
    assert math.isfinite(res.error) and isinstance(res.converged, bool)
    assert isinstance(res, Result) and res.stop_reason in res.STOP_REASONS
    assert res.success == res.converged and res.iterations >= 1
    assert res.message.startswith(res.ALGORITHM) and f"{res.error:.6g}" in res.message
    assert f"{res.iterations} {res.UNIT}" in res.message
    assert set(res.REASON_TEXT) == set(res.STOP_REASONS)
    codes = res.to_dataset()["stop_reason"].values
    assert res.STOP_REASONS[int(np.ravel(codes)[0])] in res.STOP_REASONS
    assert "error" in res.to_dataset() or "error_agd" in res.to_dataset()
    data = model.generate(ch, 0.3, 0.5, 2, 30, 0)
    ds = alg.job(data, "exact", opts, LOG)
    for kind, var in alg.AGGREGATES.items():
        assert var in ds and np.isfinite(float(ds[var]))
        assert set(alg.aggregate_extras(kind).values()) <= set(ds.data_vars)
    small = alg.resources(30, 1000, 2, 15, ch, opts)
    big = alg.resources(100, 100_000, 2, 50, ch, opts)
    assert 0 < small.mem_mb <= big.mem_mb and 0 < small.runtime <= big.runtime
    assert 0 < alg.seconds(30, 1000, 2, 15, ch, opts) < alg.seconds(100, 100_000, 2, 50, ch,
                                                                     opts)
    sch = cfg.schema("config/schema.yaml")["$defs"][f"{name}_block"]["properties"]
    assert {k: sch[k]["default"] for k in defaults(alg.OPTIONS)} == defaults(alg.OPTIONS)


def test_aggregate_kinds_and_figure_inputs_come_from_the_registry():
    assert aggregate_kinds() == {"amp": "amp", "gd": "gd", "agd": "gd", "spectral": "spectral"}
    assert set(aggregate_kinds()) <= set(INPUT_KINDS)
    stages = cfg.schema("config/schema.yaml")["$defs"]["experiment"]["properties"]
    assert set(ALGORITHMS) <= set(stages)


def test_unknown_algorithm_and_unsupported_point_are_rejected():
    with pytest.raises(ValueError, match="unknown algorithm 'sgd' .known: amp, gd, spectral"):
        algorithm("sgd")
    with pytest.raises(ValueError, match="GD does not run on the hardmax channel"):
        ALGORITHMS["gd"].run_point("hardmax", 0.3, 0.5, 2, 30, 0)
    with pytest.raises(ValueError, match="d=8 is too small for spectral at T=2 .* d >= 10"):
        ALGORITHMS["spectral"].run_point("hardmax", 0.3, 0.5, 2, 8, 0)


def _config(stage, block, channel="hardmax"):
    return {"seed": 0, "se": {"tol": 1e-10}, "experiments": {"e": {
        "channel": channel, "T": 2, "rho": 0.5, stage: block}}}


@pytest.mark.parametrize("stage,block,channel,match", [
    ("spectral", {"d": 8, "seeds": 1, "alpha": {"values": [0.5]}}, "hardmax",
     r"experiments.e.spectral.d\[0\]: d=8 is too small for spectral at T=2 \(it needs "
     r"d >= 10\)"),
    ("gd", {"d": 20, "seeds": 1, "alpha": {"values": [0.5]}}, "hardmax",
     "experiments.e.gd.channel: GD does not run on the hardmax channel"),
])
def test_config_rejects_bad_stage_blocks(stage, block, channel, match):
    conf = _config(stage, block, channel)
    cfg.check_schema(conf, "config/schema.yaml")
    with pytest.raises(cfg.ConfigError, match=match):
        cfg.check(conf)


def test_config_rejects_an_unknown_stage_and_option():
    conf = _config("sgd", {"d": 20, "seeds": 1, "alpha": {"values": [0.5]}})
    with pytest.raises(cfg.ConfigError, match="sgd"):
        cfg.check_schema(conf, "config/schema.yaml")
    conf = _config("spectral", {"d": 20, "seeds": 1, "alpha": {"values": [0.5]},
                                "damping": 0.5})
    with pytest.raises(cfg.ConfigError, match="damping"):
        cfg.check_schema(conf, "config/schema.yaml")


# ------------------------------------------------------------------ a new algorithm, one line
@dataclass(frozen=True)
class PriorMeanOptions:
    scale: float = option(1.0, "multiple of the prior's mean", gt=0)


class PriorMean(Algorithm):
    """The estimate sqrt(rho) I, the prior's mean: its error is (1/d) ||S* - sqrt(rho) I||^2,
    which tends to 1 (the prior's variance)."""

    name: ClassVar[str] = "prior_mean"
    label: ClassVar[str] = "prior mean"
    OPTIONS: ClassVar[type] = PriorMeanOptions
    AGGREGATES: ClassVar[dict] = {"prior_mean": "error"}
    CLI_HELP = CLI_DESCRIPTION = "the prior's mean"
    CLI_EXAMPLE = "aimlib prior_mean softmax --rho 0.5 --alpha 0.1 --d 40"

    @dataclass
    class Result:
        error: float
        S_hat: np.ndarray
        converged: bool = True
        stop_reason: str = "closed_form"

        def to_dataset(self):
            import xarray as xr

            return xr.Dataset({"error": ((), self.error), "converged": ((), np.int8(1))})

    @classmethod
    def run(cls, data, *, variant="exact", progress=None, scale=1.0):
        S = scale * math.sqrt(data.rho) * np.eye(data.d)
        return cls.Result(data.estimation_error(S), S)

    @classmethod
    def resources(cls, d, n, T, r, channel, opts, *, runs=1, attempt=1):
        return resources.request(8 * d * d, runs * 1e-3, 1, attempt)

    @classmethod
    def seconds(cls, d, n, T, r, channel, opts):
        return 1e-3 + 1e-9 * d * d

    @classmethod
    def job(cls, data, variant, opts, log, progress=None):
        res = cls.run(data, **opts)
        return res.to_dataset().assign(**outcome(data, res.S_hat, log, cls.label))


def test_a_new_algorithm_through_the_registry_alone(monkeypatch, capsys):
    """One registry line: the schema has its block with its defaults, the config check and the
    plan take it, the cost estimate counts it, the CLI has its subcommand, and its run gives
    the closed-form error."""
    monkeypatch.setitem(ALGORITHMS, "prior_mean", PriorMean)
    conf = _config("prior_mean", {"d": 40, "seeds": 2, "alpha": {"values": [0.1, 0.2]}},
                   "softmax")
    cfg.check_schema(conf, "config/schema.yaml")
    cfg.fill_defaults(conf)
    assert conf["experiments"]["e"]["prior_mean"]["scale"] == 1.0
    cfg.check(conf)
    plan = cfg.plan(conf)
    (g,) = plan.groups("prior_mean")
    assert g.alphas == (0.1, 0.2) and g.seeds == (0, 1)
    assert plan.options("prior_mean", "e") == {"scale": 1.0}
    est = cost.estimate(conf)
    assert est.jobs["e"] == 1 + 2 + 1  # figure, two data jobs, one aggregate
    assert cost.data_job(g, 0.1, {"scale": 1.0}).mem_mb > 0
    monkeypatch.setattr(cli, "build_parser", cli.build_parser)
    status = cli.main(["prior_mean", "softmax", "--rho", "0.5", "--alpha", "0.1", "--d", "60",
                       "--format", "csv"])
    out = capsys.readouterr().out
    assert status == 0
    err = float(out.splitlines()[1].split(",")[4])
    data = model.generate("softmax", 0.1, 0.5, 2, 60, 0)
    assert err == pytest.approx(data.estimation_error(math.sqrt(0.5) * np.eye(60)), rel=1e-5)
    assert isinstance(cli.build_parser(), argparse.ArgumentParser)


# ------------------------------------------------------------------ the spectral estimator
def test_one_step_prediction_is_the_mmse_at_the_prior_means_q_hat():
    """Closed forms of the one-step SE from the prior's mean (q = rho, V = 1): softmax
    q_hat = alpha_bar / 1; hardmax q_hat = 2 alpha E[sum w g^2](rho, 1); and the numbers
    issue 34 derived by hand, 0.404 (hardmax, alpha = 0.4583) and 0.634 (softmax, alpha = 0.1),
    each above the Bayes error."""
    from aimlib.channels import hardmax_second_moment

    rho = 0.5
    assert se.one_step("softmax", 0.1, rho, T=2) == pytest.approx(
        prior.mmse(1 / 0.4, rho), rel=1e-12)
    qh = 2 * 0.7 * hardmax_second_moment(rho, 1.0)
    assert se.one_step("hardmax", 0.7, rho) == pytest.approx(prior.mmse(1 / qh, rho), rel=1e-12)
    assert se.one_step("hardmax", 0.4583, rho) == pytest.approx(0.4043, abs=5e-5)
    assert se.one_step("softmax", 0.1, rho, T=2) == pytest.approx(0.6337, abs=5e-5)
    assert se.solve("hardmax", 0.4583, rho).error < 0.4043


@pytest.mark.parametrize("channel,alpha,T", [("hardmax", 0.7, 2), ("softmax", 0.1, 2),
                                             ("softmax", 0.05, 3)])
def test_spectral_is_amps_first_iteration(channel, alpha, T):
    """The estimator is AMP's first step from the prior's mean (undamped, the trace left
    free): the same matrix to rounding."""
    data = model.generate(channel, alpha, 0.5, T, 40, 3)
    S_spec = ALGORITHMS["spectral"].run(data).S_hat
    from aimlib.algorithms import amp

    res = amp.run(data, max_iter=1, scale="free")
    np.testing.assert_allclose(S_spec, res.S_hat, rtol=0, atol=1e-11)


@pytest.mark.parametrize("alpha", [0.5, 1.0, 3.0])
def test_spectral_hardmax_matches_its_one_step_se(alpha):
    """Hardmax, rho = 0.5, d = 100, 6 seeds: the mean error is the one-step SE prediction
    within 3 standard errors of the seed mean."""
    errs = np.array([ALGORITHMS["spectral"].run_point("hardmax", alpha, 0.5, 2, 100, s).error
                     for s in range(6)])
    sem = errs.std(ddof=1) / math.sqrt(errs.size)
    assert abs(errs.mean() - se.one_step("hardmax", alpha, 0.5)) < 3 * sem


@pytest.mark.parametrize("alpha", [0.2, 0.3, 0.5])
def test_spectral_softmax_against_its_one_step_se(alpha):
    """Softmax, rho = 0.5, d = 200, 4 seeds: the errors lie above the one-step SE by the
    finite-size excess that an effective noise 8 % above 1 / q_hat predicts (docs/theory.md
    §4.1, measured on R - S* directly), within 3 standard errors plus 0.005."""
    errs = np.array([ALGORITHMS["spectral"].run_point("softmax", alpha, 0.5, 2, 200, s).error
                     for s in range(4)])
    sem = errs.std(ddof=1) / math.sqrt(errs.size)
    q_hat = 4 * alpha  # alpha_bar / V0, V0 = 1
    excess = prior.mmse(1.08 / q_hat, 0.5) - prior.mmse(1 / q_hat, 0.5)
    gap = errs.mean() - se.one_step("softmax", alpha, 0.5, T=2)
    assert abs(gap - excess) < 3 * sem + 0.005


def test_spectral_float32_and_regenerated_tokens_agree():
    data = model.generate("hardmax", 1.0, 0.5, 2, 60, 0)
    from aimlib.algorithms import spectral

    ref = spectral.run(data)
    assert spectral.run(data, token_budget=0).error == ref.error  # regenerated, bit for bit
    assert spectral.run(data, dtype="float32").error == pytest.approx(ref.error, rel=1e-4)
    assert "spectral" in FIGURES["fig1a"].inputs
