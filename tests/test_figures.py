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
    from aimlib.figures import registry, style
    from aimlib.pipeline import config as cfg

    spec = registry.FigureSpec("fig_new", ("se",), paper="Beyond the paper", shows="a test",
                               corrections="None.")
    monkeypatch.setitem(registry.FIGURES, "fig_new", spec)
    monkeypatch.setitem(style.DRAW, "fig_new", None)  # removed again after the test

    @style.styled
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
    from aimlib.figures.drawing.fig_steps import step_rate

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
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    for text in ("no seed converged (final iterates)", "k of n seeds converged",
                 "one seed (no error bar)"):
        assert text in legend, legend
    # an error bar at the point of two seeds, none at the point of one (std 0 is no spread)
    (bars,) = [c for c in ax.collections if c.__class__.__name__ == "LineCollection"]
    segs = [seg for seg in bars.get_segments() if len(seg)]
    assert len(segs) == 1 and np.allclose([p[0] for p in segs[0]], 0.1)


def _agg(alphas, mean, n_conv, n_runs=2, **attrs):
    import xarray as xr

    mean = np.asarray(mean, dtype=float)
    return xr.Dataset(
        {"mean": ("alpha", np.where(np.asarray(n_conv) > 0, mean, np.nan)),
         "std": ("alpha", 0.01 * np.ones_like(mean)), "mean_all": ("alpha", mean),
         "std_all": ("alpha", 0.02 * np.ones_like(mean)),
         "n_converged": ("alpha", np.asarray(n_conv)),
         "n_runs": ("alpha", np.full(len(mean), n_runs))},
        coords={"alpha": alphas}, attrs={"T": 2, "d": 100, "beta": 1.0, **attrs})


@pytest.mark.parametrize("fig,attrs", [
    ("fig1a", dict(rho=0.5, channel="hardmax", variant="exact")),
    ("fig6", dict(rho=0.5, channel="hardmax", variant="density")),
    ("fig3", dict(rho=0.2, channel="hardmax", variant="exact")),
])
def test_unconverged_points_are_drawn_alike_in_every_figure(fig, attrs):
    """fig1a, fig3 and fig6 treat unconverged AMP points the same way: k/n next to a point of
    k < n converged seeds, an open diamond (with its legend entry) where none converged."""
    from aimlib.figures import draw

    agg = _agg([0.1, 0.2, 0.3], [0.5, 0.4, 0.3], [2, 1, 0], **attrs)
    fig_ = draw(fig, {"amp": [agg]})
    ax = fig_.axes[1] if fig == "fig3" else fig_.axes[0]
    assert sorted(t.get_text() for t in ax.texts) == ["0/2", "1/2"]
    (diamond,) = [ln for ln in ax.get_lines() if ln.get_marker() == "D"]
    assert diamond.get_xdata().tolist() == [0.3]
    assert "no seed converged (final iterates)" in [
        t.get_text() for t in ax.get_legend().get_texts()]


def test_fig11_draws_unconverged_points_alike_in_both_panels():
    """fig11 (filled AMP markers): k/n and the open diamond in panel (a) and, at alpha_bar^2
    times the same values, in panel (b); the one-seed legend marker is filled like the points."""
    from aimlib.figures import draw

    agg = _agg([0.1, 0.2, 0.3], [0.5, 0.4, 0.3], [2, 1, 0], rho=0.5, channel="hardmax",
               variant="exact").assign_coords(alpha_bar=("alpha", [1.0, 2.0, 10.0]))
    fig = draw("fig11", {"amp": [agg]})
    ax, bx = fig.axes
    for panel, scale in ((ax, 1.0), (bx, 100.0)):
        assert sorted(t.get_text() for t in panel.texts) == ["0/2", "1/2"]
        (diamond,) = [ln for ln in panel.get_lines() if ln.get_marker() == "D"]
        assert diamond.get_xdata().tolist() == [10.0]
        assert diamond.get_ydata().tolist() == pytest.approx([0.3 * scale])
    legend = ax.get_legend()
    texts = [t.get_text() for t in legend.get_texts()]
    i = texts.index("one seed (no error bar)")
    handle = legend.legend_handles[i]
    assert handle.get_markerfacecolor() == handle.get_markeredgecolor()


def test_off_axis_triangles_have_a_legend_entry():
    from aimlib.figures import draw

    agg = _agg([0.1, 0.2], [1e-6, 0.4], [2, 2], rho=0.5, channel="hardmax", variant="exact")
    ax = draw("fig1a", {"amp": [agg]}, axes={"yscale": "log", "ylim": [0.03, 1.1]}).axes[0]
    assert [ln for ln in ax.get_lines() if ln.get_marker() == "v"]
    assert "mean below the axis" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_fig9_legend_names_a_triangle_of_any_panel():
    """fig9's one legend (first panel) has an entry for an above-the-axis triangle drawn in
    another panel."""
    from aimlib.figures import draw

    aggs = [_agg([0.1, 0.2], [0.4, 0.3], [2, 2], rho=0.5, channel="gaussian", delta=0.0, T=1),
            _agg([0.1, 0.2], [0.4, 5.0], [2, 2], rho=0.5, channel="gaussian", delta=0.1, T=1)]
    fig = draw("fig9", {"amp": aggs}, axes={"yscale": "log", "ylim": [1e-3, 1.1]})
    assert [ln for ln in fig.axes[1].get_lines() if ln.get_marker() == "^"]
    assert not [ln for ln in fig.axes[0].get_lines() if ln.get_marker() == "^"]
    assert "mean above the axis" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_neighbouring_rhos_get_distinct_colours():
    """The widths of a figure are spread over the colormap in their sorted order: 0.2 and 0.3
    in fig2a's list are as far apart as any two neighbours."""
    import matplotlib.colors as mcolors

    from aimlib.figures.style import rho_palette

    rhos = [0.1, 0.2, 0.3, 0.5, 1.0, 2.0]
    pal = rho_palette(rhos)
    rgb = [np.array(mcolors.to_rgb(pal[r])) for r in rhos]
    gaps = [np.linalg.norm(a - b) for a, b in zip(rgb, rgb[1:], strict=False)]
    assert min(gaps) > 0.15, gaps
    # and the drawn SE lines of fig2a use them
    import xarray as xr

    from aimlib.figures import draw

    curves = [xr.Dataset({"error": ("alpha", [0.9, 0.5]), "q": ("alpha", [0.1, 0.5]),
                          "converged": ("alpha", [1, 1]), "disagree": ("alpha", [0, 0]),
                          "error_informed": ("alpha", [0.9, 0.5])},
                         coords={"alpha": [0.05, 0.1], "alpha_bar": ("alpha", [0.2, 0.4])},
                         attrs={"rho": r, "T": 2, "channel": "softmax", "variant": "exact"})
              for r in rhos]
    ax = draw("fig2a", {"se": curves}).axes[0]
    drawn = {ln.get_label(): mcolors.to_rgb(ln.get_color()) for ln in ax.get_lines()}
    for r in rhos:
        assert np.allclose(drawn[f"$\\rho={r:g}$"], mcolors.to_rgb(pal[r]))


def test_fig3_extrapolation_panel_has_a_legend_and_separate_stars():
    import xarray as xr

    from aimlib.figures import draw

    ds = xr.Dataset(
        {"gap": (("point", "d"), [[0.1, 0.05], [0.08, 0.04]]),
         "sem": (("point", "d"), [[0.01, 0.01], [0.01, 0.01]]),
         "mean": (("point", "d"), [[0.5, 0.45], [0.52, 0.47]]),
         "se_error": ("point", [0.44, 0.441]), "fit_success": ("point", [True, True]),
         "slope": ("point", [1.0, 1.0]), "slope_err": ("point", [0.1, 0.1]),
         "amplitude": ("point", [3.0, 3.0]), "e_inf": ("point", [0.44, 0.442]),
         "e_inf_err": ("point", [0.01, 0.01]), "e_inf_c": ("point", [3.0, 3.0]),
         "channel": ("point", ["softmax", "hardmax"]), "alpha": ("point", [0.06, 0.1])},
        coords={"d": [30, 60]}, attrs={"kind": "amp"})
    fig = draw("fig3", {"finite_size": [ds]})
    ax_ext = fig.axes[3]
    assert ax_ext.get_legend() is not None
    stars = [ln for ln in ax_ext.get_lines() if ln.get_marker() == "*"]
    xs = sorted(float(ln.get_xdata()[0]) for ln in stars)
    assert len(xs) == 2 and xs[1] - xs[0] > 0 and max(xs) <= 0.0


def test_fig6_caption_names_its_markers():
    from aimlib.figures.registry import FIGURES

    shows = FIGURES["fig6"].shows
    assert "open squares: the density g_out" in shows
    assert "small open diamonds: no seed converged" in shows


def test_points_right_of_the_axis_leave_the_figure_unchanged():
    """fig2b's GD grid cut at the figure's x-range (``alpha_bar_max``) draws the same image as
    the whole grid: points right of the axis, on it or off it vertically, draw nothing (no
    triangle outside the axes, no legend entry)."""
    import xarray as xr

    ds = se.curve("softmax", list(np.geomspace(0.0025, 0.3, 12)), 0.5, T=2)
    ds = ds.assign_coords(alpha_bar=("alpha", 4.0 * ds["alpha"].values))

    def agg(T, bars, means):
        return xr.Dataset({"mean": ("alpha_bar", np.asarray(means, float))},
                          coords={"alpha_bar": np.asarray(bars, float)},
                          attrs={"T": T, "rho": 0.5})

    on = {"gd": [agg(3, [0.05, 0.4, 0.9], [1.6, 1.2, 0.1])],
          "agd": [agg(3, [0.05, 0.4, 0.9], [0.9, 0.5, 3e-5])]}
    # the whole grid also has points at alpha_bar 2 and 12: below the y axis (perfect recovery)
    # and above it
    full = {"gd": [agg(3, [0.05, 0.4, 0.9, 2.0, 12.0], [1.6, 1.2, 0.1, 1e-6, 5.0])],
            "agd": [agg(3, [0.05, 0.4, 0.9, 2.0, 12.0], [0.9, 0.5, 3e-5, 1e-7, 1e-7])]}
    axes = {"xscale": "log", "yscale": "log", "xlim": [0.01, 1.0], "ylim": [1e-4, 2.2]}
    images = []
    for gd in (on, full):
        fig = figures.fig2b({"se": [ds], **gd}, axes=axes, style={"dpi": 60})
        fig.canvas.draw()
        images.append(np.asarray(fig.canvas.buffer_rgba()).copy())
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        plt.close(fig)
    assert images[0].shape == images[1].shape
    np.testing.assert_array_equal(images[0], images[1])
    assert "mean below the axis" in labels  # the on-axis AGD point at 3e-5 is still marked


def test_palette_colours_read_on_white():
    """Every data colour of the palettes has a WCAG contrast of at least 3 against white
    (viridis' yellow end, tab:orange darkened), and darkening keeps the hue."""
    import colorsys

    from matplotlib.colors import to_rgb

    from aimlib.figures import style as plots

    def ratio(c):  # WCAG 2, written out here
        lin = [x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4 for x in to_rgb(c)]
        return 1.05 / (0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] + 0.05)

    colours = list(plots.rho_palette([0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0]).values())
    colours += [plots.rho_color(r) for r in (0.01, 0.3, 1.0, 100.0)]
    colours += [plots.T_color(T) for T in range(1, 7)] + [plots.beta_color(b) for b in (0.25, 8)]
    assert min(ratio(c) for c in colours) >= 3.0 - 1e-6
    assert ratio(plots.with_contrast("tab:orange")) == pytest.approx(3.0, rel=1e-4)
    h0 = colorsys.rgb_to_hsv(*to_rgb("tab:orange"))[0]
    assert colorsys.rgb_to_hsv(*to_rgb(plots.with_contrast("tab:orange")))[0] == pytest.approx(
        h0, abs=0.01)
    assert plots.with_contrast("tab:blue") == pytest.approx(to_rgb("tab:blue") + (1.0,))


def test_a_saved_figure_records_what_made_it(tmp_path):
    """The PNG's Source text chunk and the PDF's Subject say which commit and config made the
    figure; a figure saved without it carries no such entry."""
    from PIL import Image

    from aimlib import figures

    agg = _agg([0.1, 0.2], [0.4, 0.3], [2, 2], rho=0.5, channel="hardmax", variant="exact")
    made = figures.provenance("fig1a", ["config/quick.yaml"], "0123456789ab")
    assert made.endswith("commit 0123456789ab, configfile config/quick.yaml, figure fig1a")
    figures.save(figures.draw("fig1a", {"amp": [agg]}), [tmp_path / "a.png", tmp_path / "a.pdf"],
                 dpi=40, provenance=made)
    assert Image.open(tmp_path / "a.png").text["Source"] == made
    assert b"commit 0123456789ab" in (tmp_path / "a.pdf").read_bytes()
    figures.save(figures.draw("fig1a", {"amp": [agg]}), [tmp_path / "b.png"], dpi=40)
    assert "Source" not in Image.open(tmp_path / "b.png").text


def test_every_published_image_says_what_made_it(root):
    """Each image of figures/readme/ is listed with its figure, an existing config file and a
    commit; where the PNG records what made it, the two agree."""
    import re

    import yaml
    from PIL import Image

    from aimlib.figures.registry import FIGURES

    listed = yaml.safe_load((root / "figures" / "readme" / "provenance.yaml").read_text())
    images = sorted(p.name for p in (root / "figures" / "readme").glob("*.png"))
    assert sorted(listed) == images
    for name, entry in listed.items():
        assert entry["figure"] in FIGURES and (root / entry["config"]).is_file(), name
        assert re.fullmatch(r"[0-9a-f]{7,12}(\+changes)?", str(entry["commit"])), name
        source = Image.open(root / "figures" / "readme" / name).text.get("Source")
        if source:
            assert source.endswith(f"commit {entry['commit']}, configfile {entry['config']}, "
                                   f"figure {entry['figure']}"), (name, source)


def test_every_registered_figure_has_its_module_and_the_registry_loads_no_matplotlib():
    """load_all() finds a drawing function for every registry entry; importing the registry
    (what the workflow does while it parses) loads neither matplotlib nor xarray, and drawing
    one figure imports only its own module."""
    import subprocess
    import sys

    from aimlib.figures import FIGURES, load_all

    assert set(load_all()) >= set(FIGURES)
    code = ("import sys; import aimlib.figures.registry, aimlib.pipeline.cost; "
            "print(sorted(m for m in ('matplotlib', 'xarray') if m in sys.modules)); "
            "from aimlib import figures; figures.fig2a; "
            "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules "
            "if m.startswith('aimlib.figures.drawing.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == ["[]", "['fig2a']"]


def test_each_figure_has_its_entry_beside_its_module():
    """Every registered figure has ``<name>.py`` and ``<name>.yaml`` side by side in
    ``figures/drawing/``; a file with a wrong key is named in the error."""
    from importlib import resources

    from aimlib.figures.registry import FIGURES, ORDER, load_spec

    here = resources.files("aimlib.figures.drawing")
    assert tuple(FIGURES) == ORDER
    for name in ORDER:
        assert here.joinpath(f"{name}.py").is_file() and here.joinpath(f"{name}.yaml").is_file()
    assert sorted(p.name[:-5] for p in here.iterdir() if p.name.endswith(".yaml")) == \
        sorted(ORDER)
    with pytest.raises(ValueError, match=r"aimlib/figures/drawing/figx.yaml: expected the keys"):
        load_spec("figx", "inputs: [se]\npaper: x\nshows: y\ncaption: z\n")
    with pytest.raises(ValueError, match="figure figx: unknown theory lines"):
        load_spec("figx", "inputs: [se]\ntheory: [best]\npaper: x\nshows: y\ncorrections: z\n")
