"""Figures draw what they are given: SE points that did not converge are hollow, not part of
the line, and the line's data are the cache's (the quick preset's end-to-end test reads every
figure's artists back against its caches)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from aimlib import figures  # noqa: E402
from aimlib import state_evolution as se  # noqa: E402


def test_unconverged_se_point_is_hollow_and_out_of_the_line():
    rho = 0.5
    thr = se.softmax_perfect_recovery_threshold(rho) / 4.0  # alpha at the threshold, T = 2
    alphas = [0.2 * thr, 0.5 * thr, thr, 1.5 * thr]
    ds = se.curve("softmax", alphas, rho, T=2)
    assert ds["converged"].values.tolist() == [1, 1, 0, 1]
    fig = figures.fig2a({"se": [ds]})
    ax = fig.axes[0]
    line = next(ln for ln in ax.get_lines() if ln.get_label() == r"$\rho=0.5$")
    y = np.asarray(line.get_ydata(), dtype=float)
    np.testing.assert_array_equal(np.isnan(y), [False, False, True, False])
    np.testing.assert_allclose(y[[0, 1, 3]], ds["error"].values[[0, 1, 3]], rtol=1e-15)
    hollow = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
    assert len(hollow) == 1 and hollow[0].get_markerfacecolor() == "white"
    np.testing.assert_allclose(hollow[0].get_xdata(), [alphas[2]])
    np.testing.assert_allclose(hollow[0].get_ydata(), [ds["error"].values[2]])
    assert "SE not converged" in [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(fig)


def test_drawing_leaves_global_matplotlib_settings_alone(tmp_path):
    """Figures are styled inside rc_context: the global rcParams are the same after drawing
    and saving, and the figure's own text got the style's font size."""
    before = dict(plt.rcParams)
    ds = se.curve("softmax", [0.02, 0.05], 0.5, T=2)
    fig = figures.fig2a({"se": [ds]}, style={"font_size": 13})
    assert fig.axes[0].xaxis.label.get_fontsize() == 14  # axes.labelsize: font_size + 1
    figures.save(fig, [tmp_path / "f.png"], dpi=50)
    assert (tmp_path / "f.png").stat().st_size > 1000
    after = dict(plt.rcParams)
    assert {k for k in before if before[k] != after[k]} == set()


def test_a_new_figure_through_the_registry_alone(monkeypatch):
    """One registry entry and one decorated function: draw() finds it, its caption is built,
    and a config with an experiment of its name draws it."""
    from aimlib import config as cfg
    from aimlib.figures import plots, registry

    spec = registry.FigureSpec("fig_new", ("se",), paper="Beyond the paper", shows="a test",
                               corrections="None.")
    monkeypatch.setitem(registry.FIGURES, "fig_new", spec)
    monkeypatch.setattr(plots, "DRAW", dict(plots.DRAW))

    @plots._styled
    def fig_new(inputs, *, axes=None, style=None):
        fig, ax = plt.subplots()
        for ds in inputs["se"]:
            ax.plot(ds["alpha"].values, ds["error"].values)
        return fig

    ds = se.curve("softmax", [0.02, 0.05], 0.5, T=2)
    fig = figures.draw("fig_new", {"se": [ds]})
    np.testing.assert_allclose(fig.axes[0].get_lines()[0].get_ydata(), ds["error"].values)
    plt.close(fig)
    assert "a test" in registry.caption("fig_new", {"description": "d"})
    conf = {"seed": 0, "se": {"tol": 1e-10}, "experiments": {"fig_new": {
        "channel": "softmax", "T": 2, "rho": 0.5, "se": {"alpha": {"values": [0.05]}}}}}
    assert cfg.plan(conf).figure_list(registry.FIGURES) == ["fig_new"]


def test_step_rate_recovers_a_power_law():
    from aimlib.figures.plots import step_rate

    steps = np.unique(np.geomspace(1, 10_000, 24).round())
    assert step_rate(steps, 3.0 * steps**-1.25) == pytest.approx(1.25, rel=1e-12)
    assert step_rate(steps[:5], steps[:5] ** -1.0) is None  # no checkpoint in [100, 1000]


def test_fig_steps_draws_every_checkpointed_aggregate():
    import xarray as xr

    from aimlib.figures import draw

    steps = np.array([1, 10, 100, 300, 1000, 3000])

    def agg(T, kind):
        mean = np.vstack([np.full(6, 0.7), 2.0 * steps**-1.0])
        return xr.Dataset(
            {"mean": ("alpha", mean[:, -1]), "n_converged": ("alpha", [2, 2]),
             "checkpoint_mean": (("alpha", "checkpoint"), mean),
             "checkpoint_std": (("alpha", "checkpoint"), 0.1 * mean)},
            coords={"alpha": [0.3 / 4, 0.9 / 4], "alpha_bar": ("alpha", [0.3, 0.9]),
                    "checkpoint": steps},
            attrs={"T": T, "rho": 0.5, "kind": kind})

    fig = draw("fig_steps", {"gd": [agg(2, "gd"), agg(6, "gd")],
                             "agd": [agg(2, "agd"), agg(6, "agd")]})
    assert len(fig.axes) == 2
    for ax in fig.axes:
        labels = [ln.get_label() for ln in ax.get_lines() if not ln.get_label().startswith("_")]
        assert len(labels) == 4  # GD and AGD at two alpha_bar
        assert any("p=1.00" in lab for lab in labels)  # AGD's fitted rate, error ~ steps^-1


def test_fig1a_shows_how_many_seeds_converged():
    import xarray as xr

    from aimlib.figures import draw

    agg = xr.Dataset(
        {"mean": ("alpha", [0.5, 0.3, np.nan]), "std": ("alpha", [0.01, 0.0, np.nan]),
         "mean_all": ("alpha", [0.5, 0.35, 0.2]), "n_converged": ("alpha", [2, 1, 0]),
         "n_runs": ("alpha", [2, 2, 2])},
        coords={"alpha": [0.1, 0.3, 1.0]}, attrs={"rho": 0.5, "T": 2, "d": 100})
    fig = draw("fig1a", {"amp": [agg]})
    ax = fig.axes[0]
    assert sorted(t.get_text() for t in ax.texts) == ["0/2", "1/2"]
    (diamond,) = [ln for ln in ax.get_lines() if ln.get_marker() == "D"]
    assert diamond.get_xdata().tolist() == [1.0] and diamond.get_ydata().tolist() == [0.2]
    assert "no seed converged" in diamond.get_label()
