"""Configuration: schema, semantic checks, grids and the jobs they imply."""

import copy

import jsonschema
import pytest
import yaml

from aimlib.algorithms import ALGORITHMS
from aimlib.pipeline import config as cfg


@pytest.fixture(scope="module")
def schema(root):
    return cfg.schema(root / "config" / "schema.yaml")


@pytest.fixture(scope="module", params=["config.yaml", "quick.yaml"])
def conf(request, root):
    return yaml.safe_load((root / "config" / request.param).read_text())


def _errors(schema, conf):
    v = jsonschema.Draft202012Validator(schema)
    return sorted(v.iter_errors(conf), key=lambda e: e.json_path)


def test_shipped_configs_valid(schema, conf):
    assert _errors(schema, conf) == []
    cfg.check(conf)


def test_T_below_the_channels_smallest_is_named_by_its_rule(schema, conf):
    """T = 0 passes the schema (it has no minimum of its own) and the channel's rule names the
    key and the smallest T at once, not a generic minimum first."""
    bad = copy.deepcopy(conf)
    bad["experiments"]["fig2a"]["T"] = 0
    assert _errors(schema, bad) == []
    with pytest.raises(cfg.ConfigError, match=r"^experiments\.fig2a\.T\[0\]: T must be an "
                                              r"integer >= 2 for the softmax channel, got T=0$"):
        cfg.check(bad)


@pytest.mark.parametrize("path,value,key", [
    (("experiments", "fig1a", "rho"), [0.2, -0.5], "experiments.fig1a.rho"),
    (("experiments", "fig2a", "rho"), 0.0, "experiments.fig2a.rho"),
    (("experiments", "fig1a", "channel"), "relu", "experiments.fig1a.channel"),
    (("experiments", "fig1a", "se", "alpha"), {"geomspace": [0.0, 1.0, 4]},
     "experiments.fig1a.se.alpha"),
    (("experiments", "fig1a", "amp", "seeds"), 0, "experiments.fig1a.amp.seeds"),
    (("seed",), -3, "seed"),
])
def test_schema_errors_name_the_key(schema, conf, path, value, key):
    bad = copy.deepcopy(conf)
    node = bad
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    errs = _errors(schema, bad)
    assert errs, "the schema accepted an impossible value"
    assert any(e.json_path.lstrip("$.").startswith(key) for e in errs), [e.json_path for e in errs]


def test_semantic_check_hardmax_T(conf):
    bad = copy.deepcopy(conf)
    bad["experiments"]["fig1a"]["T"] = 5
    with pytest.raises(cfg.ConfigError, match=r"experiments\.fig1a\.T.*hardmax"):
        cfg.check(bad)


def test_semantic_check_alpha_grid(conf):
    bad = copy.deepcopy(conf)
    bad["experiments"]["fig2a"]["se"]["alpha"] = {"linspace": [0.0, 0.2, 5]}
    with pytest.raises(cfg.ConfigError, match=r"experiments\.fig2a\.se\.alpha"):
        cfg.check(bad)


def test_grids_rounded_once():
    g = cfg.grid({"geomspace": [0.03, 8.0, 32]})
    assert len(g) == 32 and g[0] == 0.03 and g[-1] == 8.0
    assert all(cfg.fnum(x) == x for x in g)
    assert cfg.grid({"values": [0.3, 0.1, 0.1]}) == [0.1, 0.3]
    assert cfg.ffmt(1.0) == "1.0" and cfg.ffmt(0.0379468) == "0.0379468"
    assert cfg.ffmt(1e-5) == "1e-05"
    with pytest.raises(cfg.ConfigError, match="num"):
        cfg.grid({"linspace": [0, 1, 0]}, "x")


def test_alpha_bar_grids():
    conf = {"experiments": {
        "s": {"channel": "softmax", "rho": 0.5, "T": [2, 3],
              "se": {"alpha_bar": {"values": [1.0]}}},
        "h": {"channel": "hardmax", "rho": 0.2, "T": 2,
              "se": {"alpha_bar": {"values": [1.0]}}},
    }}
    assert cfg.se_alphas(conf, "s", 0.5, 2) == [0.25]
    assert cfg.se_alphas(conf, "s", 0.5, 3) == [0.1]
    assert cfg.se_alphas(conf, "h", 0.2, 2) == [0.2]


def test_stage_points_paper_preset(root):
    conf = yaml.safe_load((root / "config" / "config.yaml").read_text())
    keys = cfg.stage_points(conf, "fig3", "amp")
    assert len(keys) == len(set(keys))
    fig1a = cfg.stage_points(conf, "fig1a", "amp")
    # rho >= 0.5 at d = 100 with 16 seeds; rho = 0.1, 0.2 at d = 300 with 4 (d_rho); the 32
    # alphas cut at alpha_bar = alpha / rho <= 7 (18, 22, 27, 31, 32 of them)
    assert len(fig1a) == (27 + 31 + 32) * 16 + (18 + 22) * 4
    assert {(k.rho, k.d) for k in fig1a} == {(0.1, 300), (0.2, 300), (0.5, 100), (1.0, 100),
                                             (2.0, 100)}
    gd = cfg.stage_points(conf, "fig2b", "gd")
    # the paper's 32 alphas for every T, cut at alpha_bar = alpha (T^2 + T - 2) <= 1.2
    assert {k.T for k in gd} == {2, 3, 4, 5, 6} and len(gd) == (32 + 26 + 23 + 21 + 19) * 16


def test_alpha_bar_max_cuts_each_T_at_the_figures_range(root):
    """``alpha_bar_max`` keeps the points of the paper's alpha grid whose alpha_bar is at most
    the cut, per T; without it the whole grid runs (the full grid is one line away)."""
    import numpy as np

    conf = yaml.safe_load((root / "config" / "config.yaml").read_text())
    paper = [cfg.fnum(a) for a in np.geomspace(0.0012, 0.3, 32)]
    for g in cfg.plan(conf).groups("gd", "fig2b"):
        k = g.T * g.T + g.T - 2
        assert list(g.alphas) == [a for a in paper if a * k <= 1.2], g.T
    assert [len(g.alphas) for g in cfg.plan(conf).groups("gd", "fig2b")] == [32, 26, 23, 21, 19]
    del conf["experiments"]["fig2b"]["gd"]["alpha_bar_max"]
    assert all(g.alphas == tuple(paper) for g in cfg.plan(conf).groups("gd", "fig2b"))


def test_fig1a_amp_cut_drops_only_points_below_the_axis(root):
    """fig1a's AMP grid (the paper's 32 alphas) is cut at ``alpha_bar_max``: every dropped
    point has an SE error below 0.015, half the y-axis' lower limit 0.03, and every point on
    the axis runs; the cut saves most of the stage, whose cost grows with alpha."""
    import numpy as np

    from aimlib.theory import state_evolution as se

    conf = yaml.safe_load((root / "config" / "config.yaml").read_text())
    lo = conf["experiments"]["fig1a"]["axes"]["ylim"][0]
    paper = [cfg.fnum(a) for a in np.geomspace(0.03, 8.0, 32)]
    groups = list(cfg.plan(conf).groups("amp", "fig1a"))
    assert {g.rho for g in groups} == {0.1, 0.2, 0.5, 1.0, 2.0}
    for g in groups:
        kept = set(g.alphas)
        assert kept <= set(paper)
        err = {a: se.solve("hardmax", a, g.rho, 2).error for a in paper}
        assert all(err[a] < lo / 2 for a in paper if a not in kept), g.rho
        # the kept points are a prefix of the grid: every point on the axis (SE error >= lo / 2)
        # runs
        assert list(g.alphas) == paper[:len(g.alphas)]
        assert all(a in kept for a in paper if err[a] >= lo / 2), g.rho
    # the cut is where the cost is: the d = 300 widths keep 18 and 22 of 32 alphas
    assert sorted(len(g.alphas) for g in groups) == [18, 22, 27, 31, 32]


@pytest.mark.parametrize("edit,message", [
    (lambda e: e["fig2b"]["gd"].update(alpha_bar_max=0.004),
     "experiments.fig2b.gd.alpha_bar_max: 0.004 is below the grid's smallest point "
     "(alpha_bar = 0.0048 at T = 2, rho = 0.5, softmax)"),
    (lambda e: e["fig2b"]["gd"].update(alpha_bar_max=0.0),
     "experiments.fig2b.gd.alpha_bar_max = 0.0: 0.0 is less than or equal to the minimum of 0"),
    # an experiment without GD: the key belongs to a stage block, not to the experiment or SE
    (lambda e: e["fig2a"].update(alpha_bar_max=1.2),
     "experiments.fig2a.alpha_bar_max: unknown key"),
    (lambda e: e["fig2a"]["se"].update(alpha_bar_max=1.2),
     "experiments.fig2a.se.alpha_bar_max: unknown key"),
])
def test_bad_alpha_bar_max_is_named_before_any_job(root, edit, message):
    conf = yaml.safe_load((root / "config" / "config.yaml").read_text())
    edit(conf["experiments"])
    with pytest.raises(cfg.ConfigError) as exc:
        cfg.check_schema(conf, root / "config" / "schema.yaml")
        cfg.check(conf)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_paper_preset_has_one_data_job_per_point(root):
    """AMP and GD jobs run every seed of a point: a tenth of the per-run jobs, at most 2,500."""
    conf = yaml.safe_load((root / "config" / "config.yaml").read_text())
    n_runs = n_jobs = 0
    for name, exp in conf["experiments"].items():
        for stage in ALGORITHMS:
            if stage in exp:
                jobs = cfg.stage_jobs(conf, name, stage)
                n_jobs += len(jobs)
                n_runs += sum(len(j["seeds"]) for j in jobs)
                assert len({tuple(sorted((k, str(v)) for k, v in j.items())) for j in jobs}) \
                    == len(jobs)
    fig1a = cfg.stage_jobs(conf, "fig1a", "amp")
    assert len(fig1a) == 18 + 22 + 27 + 31 + 32  # the 32 alphas cut at alpha_bar_max 7
    assert all(j["seeds"] == list(range(4 if j["rho"] < 0.5 else 16)) for j in fig1a)
    assert n_jobs * 8 < n_runs and n_jobs < 2500


def test_channel_lists_and_seeds_per_d(root):
    """fig3: two channels in one experiment, per-channel grids, one seed count per d, GD on
    softmax only, and SE evaluated exactly at the gap alphas."""
    conf = yaml.safe_load((root / "config" / "config.yaml").read_text())
    exp = conf["experiments"]["fig3"]
    pts = cfg.stage_points(conf, "fig3", "amp")
    assert {k.channel for k in pts} == {"softmax", "hardmax"}
    seeds = dict(zip(exp["amp"]["d"], exp["amp"]["seeds"], strict=True))
    for d, n in seeds.items():
        sm = [k for k in pts if k.d == d and k.channel == "softmax"]
        assert len(sm) == n * len(exp["amp"]["alpha"]["softmax"]["values"])
    assert {k.channel for k in cfg.stage_points(conf, "fig3", "gd")} == {"softmax"}
    assert max(k.d for k in cfg.stage_points(conf, "fig3", "gd")) == 200
    for c, alphas in exp["gap"].items():
        grid = cfg.se_alphas(conf, "fig3", 0.2, 2, c)
        assert set(alphas) <= set(grid)
    jobs = cfg.plan(conf).se_for("fig3")
    assert sorted(j.channel for j in jobs) == ["hardmax", "softmax"]
    assert cfg.plan(conf).options("amp", "fig3", 1000)["dtype"] == "float32"
    assert cfg.plan(conf).options("amp", "fig3", 100)["dtype"] == "float64"


@pytest.mark.parametrize("edit,msg", [
    (lambda e: e["amp"].update(seeds=[2, 2]), "experiments.fig3.amp.seeds"),
    (lambda e: e["gd"].update(channel="hardmax"), "experiments.fig3.gd.channel"),
    (lambda e: e.update(gap={"softmax": [0.05]}), "experiments.fig3.gap.softmax"),
    (lambda e: e.update(T=5), "experiments.fig3.T[0]: T must be an integer in [2, 4]"),
])
def test_fig3_semantic_errors(root, edit, msg):
    conf = yaml.safe_load((root / "config" / "config.yaml").read_text())
    conf = copy.deepcopy(conf)
    edit(conf["experiments"]["fig3"])
    with pytest.raises(cfg.ConfigError, match=msg.replace("[", r"\[").replace(".", r"\.")):
        cfg.check(conf)


def test_finite_size_preset_valid(schema, root):
    """config/finite_size.yaml (fig3 at laptop scale) is valid and a subset of the paper's fig3."""
    small = yaml.safe_load((root / "config" / "finite_size.yaml").read_text())
    assert _errors(schema, small) == []
    cfg.check(small)
    paper = yaml.safe_load((root / "config" / "config.yaml").read_text())
    assert small["experiments"]["fig3"]["gap"] == paper["experiments"]["fig3"]["gap"]
    assert max(small["experiments"]["fig3"]["amp"]["d"]) == 500


def test_empty_experiments_and_tiny_amp_d_are_config_errors():
    with pytest.raises(cfg.ConfigError, match="experiments: empty"):
        cfg.check({"experiments": {}})
    conf = {"experiments": {"e": {"channel": "softmax", "T": 4, "rho": 0.5,
                                  "amp": {"d": 12, "seeds": 1, "alpha": {"values": [0.1]}}}}}
    with pytest.raises(cfg.ConfigError, match=r"experiments\.e\.amp\.d\[0\]: d=12 is too small"):
        cfg.check(conf)


@pytest.mark.parametrize("edit,message", [
    (lambda c: c["experiments"]["fig1a"].update(T="two"),
     "experiments.fig1a.T = 'two': 'two' is not of type 'integer'"),
    (lambda c: c.update(bogus=1), "bogus: unknown key. Valid keys here: experiments, figures"),
    # a misspelt key is named alone (not its valid neighbours) with the closest valid key
    (lambda c: c["experiments"]["fig1a"]["amp"].update(sedes=c["experiments"]["fig1a"]["amp"]
                                                        .pop("seeds")),
     "experiments.fig1a.amp.sedes: unknown key (did you mean 'seeds'?)"),
    (lambda c: c["experiments"]["fig2a"].update(T=0),
     "experiments.fig2a.T[0]: T must be an integer >= 2 for the softmax channel, got T=0"),
    (lambda c: c["experiments"]["fig1a"]["amp"].update(damping=1.5),
     "experiments.fig1a.amp.damping = 1.5: 1.5 is greater than or equal to the maximum of 1"),
])
def test_schema_errors_are_one_line(root, edit, message):
    conf = yaml.safe_load((root / "config" / "quick.yaml").read_text())
    cfg.check_schema(conf, root / "config" / "schema.yaml")  # the preset itself is valid
    edit(conf)
    with pytest.raises(cfg.ConfigError) as exc:
        cfg.check_schema(conf, root / "config" / "schema.yaml")
        cfg.check(conf)
    assert message in str(exc.value) and "\n" not in str(exc.value)
    assert str(exc.value).count("unknown key") <= 1  # valid neighbours are not blamed


def test_d_rho_gives_some_widths_their_own_d(schema, root):
    conf = yaml.safe_load((root / "config" / "quick.yaml").read_text())
    amp = conf["experiments"]["fig1a"]["amp"]
    amp["d_rho"] = {0.1: 80, 0.2: {"d": 90, "seeds": 1}}
    conf["experiments"]["fig1a"]["rho"] = [0.1, 0.2, 0.5]
    assert _errors(schema, conf) == []
    cfg.check(conf)
    got = {(g.rho, g.d, len(g.seeds)) for g in cfg.plan(conf).groups("amp", "fig1a")}
    assert got == {(0.1, 80, amp["seeds"]), (0.2, 90, 1), (0.5, amp["d"], amp["seeds"])}
    amp["d_rho"] = {0.1: {"d": 80, "seed": 1}}  # a misspelt key, named in one line
    with pytest.raises(cfg.ConfigError, match=r"experiments\.fig1a\.amp\.d_rho\.0\.1\.seed: "
                                              r"unknown key \(did you mean 'seeds'\?\)"):
        cfg.check_schema(conf, root / "config" / "schema.yaml")


@pytest.mark.parametrize("d_rho,seeds,match", [
    ({0.3: 80}, 2, r"experiments\.fig1a\.amp\.d_rho: rho=0\.3 is not a width of the block"),
    ({0.1: 4}, 2, r"experiments\.fig1a\.amp\.d_rho\.0\.1: d=4 is too small"),
    ({0.1: 80}, [2, 3], r"experiments\.fig1a\.amp\.d_rho: needs a single seed count"),
])
def test_bad_d_rho_named(root, d_rho, seeds, match):
    conf = yaml.safe_load((root / "config" / "quick.yaml").read_text())
    conf["experiments"]["fig1a"]["rho"] = [0.1, 0.5]
    conf["experiments"]["fig1a"]["amp"].update(d_rho=d_rho, seeds=seeds,
                                               d=[60, 80] if isinstance(seeds, list) else 60)
    with pytest.raises(cfg.ConfigError, match=match):
        cfg.check(conf)


def test_pause_flag_from_the_command_line(root):
    """`--config pause_long_runs=false` gives the string 'false': it reads as the flag; a word
    that is no boolean is named."""
    conf = yaml.safe_load((root / "config" / "quick.yaml").read_text())
    conf["pause_long_runs"] = "false"
    cfg.check_schema(conf, root / "config" / "schema.yaml")
    assert conf["pause_long_runs"] is False
    conf["pause_long_runs"] = "maybe"
    with pytest.raises(cfg.ConfigError, match="pause_long_runs = 'maybe'"):
        cfg.check_schema(conf, root / "config" / "schema.yaml")
