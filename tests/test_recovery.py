"""GD's measured perfect-recovery threshold (issue 36; docs/theory.md §16.4): the grid
threshold on hand-made errors, the recovery dataset of aggregates against its definition and
the theory it carries, the per-channel values of a config (T, rho and swept options) that
let one experiment hold the Gaussian and the softmax settings, and fig13 drawn from it."""

import numpy as np
import pytest
import xarray as xr
import yaml

from aimlib.pipeline.aggregate import aggregate_runs
from aimlib.pipeline.recovery import grid_threshold, recovery_dataset
from aimlib.theory import gradient_flow

GRID = [0.2, 0.3, 0.4, 0.5]


@pytest.mark.parametrize("errors,expected", [
    ([0.5, 0.1, 1e-5, 1e-6], 0.4),        # recovered from 0.4 up
    ([1e-4, 0.2, 1e-5, 1e-6], 0.4),       # a failure above a success: from above it
    ([1e-4, 1e-4, 1e-4, 1e-4], 0.2),      # every point: the grid's smallest
    ([1e-5, 1e-5, 1e-5, 0.3], np.inf),    # the largest fails: not on the grid
    ([0.5, 1e-5, np.nan, 1e-6], 0.5),     # a NaN run is not recovered
    ([0.5, 1e-5, 1e-3, 1e-6], 0.5),       # the level itself is not below it
])
def test_grid_threshold_is_the_smallest_point_above_the_last_failure(errors, expected):
    got = grid_threshold(GRID, np.array(errors)[:, None], 1e-3)
    assert got.shape == (1,) and got[0] == expected


def test_grid_threshold_per_column_and_bad_grids():
    e = np.array([[1.0, 1e-6], [1e-6, 1e-6], [1e-6, 1.0]])
    np.testing.assert_array_equal(grid_threshold([1, 2, 3], e, 1e-3), [2.0, np.inf])
    with pytest.raises(ValueError, match="increasing"):
        grid_threshold([2, 1, 3], e, 1e-3)
    with pytest.raises(ValueError, match="one row per grid point"):
        grid_threshold([1, 2], e, 1e-3)


def _runs(channel, T, rho, d, rank, optimizer, errs, attrs=None):
    """One GD data file per (alpha, seed) of hand-made checkpoint errors ``errs[alpha][seed]``
    (steps 1, 4, 16), as the data jobs write them."""
    steps = np.array([1, 4, 16])
    out = []
    for alpha, per_seed in errs.items():
        for seed, e in enumerate(per_seed):
            ds = xr.Dataset({"error_gd": e[-1], "checkpoint_gd": ("checkpoint", np.array(e))},
                            coords={"checkpoint": steps})
            ds.attrs = dict(alpha=alpha, seed=seed, channel=channel, T=T, rho=rho, d=d,
                            alpha_bar=3.0 * alpha, gd_student_rank=rank, gd_optimizer=optimizer,
                            gd_steps=16, **(attrs or {}))
            out.append(ds)
    return out


def _agg(*args, **kw):
    return aggregate_runs(_runs(*args, **kw), value="error_gd",
                          extras={"checkpoint": "checkpoint_gd"})


def test_aggregate_keeps_every_seeds_checkpoints():
    errs = {0.3: [[1.0, 0.5, 0.1], [0.9, 0.4, 0.2]], 0.5: [[1.0, 1e-4, 1e-6], [1.0, 0.1, 1e-5]]}
    agg = _agg("gaussian", 1, 0.2, 50, 25, "adam", errs, {"delta": 0.0})
    np.testing.assert_array_equal(agg["checkpoint_seeds"].sel(alpha=0.5).values,
                                  [[1.0, 1e-4, 1e-6], [1.0, 0.1, 1e-5]])
    np.testing.assert_allclose(agg["checkpoint_mean"].sel(alpha=0.3).values, [0.95, 0.45, 0.15])


def test_recovery_dataset_per_seed_and_budget_with_its_theory():
    # Gaussian, T = 1, rho = 0.2 at d = 50 (teacher rank 10), a student of rank 25
    errs = {0.2: [[1.0, 0.5, 0.1], [1.0, 0.5, 0.2]],
            0.3: [[1.0, 0.1, 1e-4], [1.0, 0.2, 0.01]],
            0.4: [[1.0, 1e-4, 1e-6], [1.0, 0.1, 1e-5]]}
    g = _agg("gaussian", 1, 0.2, 50, 25, "gd", errs, {"delta": 0.0})
    s = _agg("softmax", 2, 0.5, 50, 50, "adam", errs, {"beta": 1.0})
    ds = recovery_dataset([g, s], 1e-3, "gd")
    assert ds.sizes == {"group": 2, "checkpoint": 3, "seed": 2, "theory_kappa": 65}
    th = ds["threshold"].sel(group=0)
    np.testing.assert_array_equal(th.sel(checkpoint=16).values, [0.3, 0.4])
    np.testing.assert_array_equal(th.sel(checkpoint=4).values, [0.4, np.inf])
    np.testing.assert_array_equal(th.sel(checkpoint=1).values, [np.inf, np.inf])
    np.testing.assert_allclose(ds["threshold_bar"].values, 3.0 * ds["threshold"].values)
    assert not ds["below_grid"].any() and int(ds["nonfinite"].sum()) == 0
    assert ds["resolution"].values[0] == pytest.approx(1.5)
    assert list(ds["optimizer"].values) == ["gd", "adam"]
    np.testing.assert_allclose(ds["kappa"].values, [0.5, 1.0])
    # the Bayes thresholds: rho - rho^2 / 2 (Gaussian, T = 1) and 0.1875 (softmax, rho = 0.5)
    np.testing.assert_allclose(ds["bayes_alpha"].values, [0.18, 0.1875], rtol=1e-12)
    # the conjecture at the student's width, and its curve from the teacher's width on
    assert float(ds["conjecture_alpha"][0]) == pytest.approx(gradient_flow.threshold(0.2, 0.5))
    kap = ds["theory_kappas"].values[0]
    assert kap[0] == pytest.approx(0.2) and kap[-1] == 1.0
    np.testing.assert_allclose(ds["conjecture_curve"].values[0],
                               [gradient_flow.threshold(0.2, k) for k in kap])
    # no theory for softmax: NaN, never a value
    assert np.isnan(ds["conjecture_alpha"][1]) and np.isnan(ds["conjecture_curve"][1]).all()


def test_recovery_refuses_aggregates_with_different_budgets():
    a = _agg("gaussian", 1, 0.2, 50, 10, "adam", {0.3: [[1.0, 1e-4, 1e-6]]}, {"delta": 0.0})
    b = a.assign_coords(checkpoint=[1, 8, 16])
    with pytest.raises(ValueError, match="share their checkpoints"):
        recovery_dataset([a, b], 1e-3, "gd")


# ---------------------------------------------------------------------------------------------
# the config: one experiment, two channel points (T, rho and swept options per channel)
# ---------------------------------------------------------------------------------------------
def _config(**exp):
    block = {"channel": ["gaussian", "softmax"], "T": {"gaussian": 1, "softmax": 2},
             "rho": {"gaussian": 0.2, "softmax": 0.5}, "delta": 0.0,
             "gd": {"d": 20, "seeds": 1, "inits": 1, "steps": 16, "checkpoints": 5,
                    "optimizer": ["adam", "gd"], "step_size": {"gaussian": 0.1, "softmax": 1.0},
                    "width": {"gaussian": [0.2, 1.0], "softmax": [0.5]},
                    "alpha": {"values": [0.2, 0.4]}},
             "recovery": {}}
    block.update(exp)
    return {"seed": 1, "se": {}, "experiments": {"w": block}}


def test_one_experiment_holds_a_channel_point_each(root, monkeypatch):
    from aimlib.pipeline import config as cfg
    from aimlib.pipeline import paths

    monkeypatch.chdir(root)
    conf = cfg.validate(_config(), "config/schema.yaml")
    assert conf["experiments"]["w"]["recovery"] == {"eps": 1e-3}  # the default, filled in
    plan = cfg.plan(conf)
    got = sorted((g.channel, g.T, g.rho, plan.group_options(g)["optimizer"],
                  plan.group_options(g)["width"], plan.group_options(g)["step_size"])
                 for g in plan.groups("gd", "w"))
    assert got == [("gaussian", 1, 0.2, "adam", 0.2, 0.1), ("gaussian", 1, 0.2, "adam", 1.0, 0.1),
                   ("gaussian", 1, 0.2, "gd", 0.2, 0.1), ("gaussian", 1, 0.2, "gd", 1.0, 0.1),
                   ("softmax", 2, 0.5, "adam", 0.5, 1.0), ("softmax", 2, 0.5, "gd", 0.5, 1.0)]
    assert paths.recovery_files(plan, "w") == ["data/agg/w/recovery_gd.nc",
                                               "data/agg/w/recovery_agd.nc"]
    # the thresholds are measured from the data files: no aggregate file for fig13
    assert [len(fs) for fs in paths.recovery_groups(plan, "w")] == [2] * 6
    from aimlib.figures.registry import FIGURES
    quick = cfg.plan(cfg.validate(yaml.safe_load((root / "config" / "quick.yaml").read_text()),
                                  "config/schema.yaml"))
    assert quick.aggregate_kinds("gd", "fig13", FIGURES) == []


@pytest.mark.parametrize("change,message", [
    ({"T": {"gaussian": 1}}, r"experiments\.w\.T: no value for channel 'softmax'"),
    ({"rho": {"gaussian": 0.2, "softmax": 0.5, "hardmax": 1.0}},
     r"experiments\.w\.rho\.hardmax: not a channel of the experiment"),
    ({"rho": {"gaussian": 0.2, "softmax": -0.5}}, r"experiments\.w\.rho"),
    ({"T": {"gaussian": 1, "softmax": 1}}, r"experiments\.w\.T\.softmax"),
    ({"recovery": {"eps": 2.0}}, r"experiments\.w\.recovery\.eps"),
    ({"gd": None}, r"experiments\.w\.recovery: measures the thresholds of the gd stage"),
])
def test_bad_per_channel_values_are_named(root, monkeypatch, change, message):
    from aimlib.pipeline import config as cfg

    monkeypatch.chdir(root)
    conf = _config(**change)
    exp = conf["experiments"]["w"]
    if exp.get("gd", 0) is None:
        del exp["gd"]
    with pytest.raises(cfg.ConfigError, match=message):
        cfg.validate(conf, "config/schema.yaml")


def test_a_swept_option_without_the_stages_channel_is_named(root, monkeypatch):
    from aimlib.pipeline import config as cfg

    monkeypatch.chdir(root)
    conf = _config()
    conf["experiments"]["w"]["gd"]["width"] = {"gaussian": [0.2, 1.0]}
    with pytest.raises(cfg.ConfigError, match=r"experiments\.w\.gd\.width: no value for "
                                              r"channel 'softmax'"):
        cfg.validate(conf, "config/schema.yaml")


def test_fig13_draws_the_thresholds_and_the_theory():
    """fig13 from two recovery datasets: one panel per channel point, the Bayes line and the
    conjecture where it applies, and a not-recovered point on the top edge."""
    from aimlib.figures import draw

    errs = {0.2: [[1.0, 0.5, 0.1], [1.0, 0.5, 0.2]], 0.3: [[1.0, 0.1, 1e-4], [1.0, 0.2, 0.01]],
            0.4: [[1.0, 1e-4, 1e-6], [1.0, 0.1, 1e-5]]}
    never = {a: [[1.0, 1.0, 1.0]] * 2 for a in errs}
    aggs = [_agg("gaussian", 1, 0.2, 50, 25, "adam", errs, {"delta": 0.0}),
            _agg("gaussian", 1, 0.2, 50, 50, "gd", never, {"delta": 0.0}),
            _agg("softmax", 2, 0.5, 50, 50, "adam", errs, {"beta": 1.0})]
    recs = [recovery_dataset(aggs, 1e-3, k) for k in ("gd", "agd")]
    fig = draw("fig13", {"recovery": recs})
    assert len(fig.axes) == 2
    gauss, soft = fig.axes
    labels = {t.get_label() for t in gauss.get_lines()}
    assert "gradient-flow conjecture" in labels and "Bayes-optimal (SE)" in labels
    assert "gradient-flow conjecture" not in {t.get_label() for t in soft.get_lines()}
    # the plain-GD student that never recovers: a triangle on the top edge at kappa = 1
    tops = [ln for ln in gauss.get_lines() if ln.get_marker() == "^"]
    assert tops and all(ln.get_ydata()[0] == pytest.approx(gauss.get_ylim()[1]) for ln in tops)
