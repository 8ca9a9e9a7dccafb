"""Finite-size analysis: power-law fit and extrapolation against synthetic data with known
answers, and the gap table from aggregates."""

import numpy as np
import pytest
import xarray as xr

from aimlib import figures
from aimlib.pipeline.finite_size import extrapolate, fit_power_law, gap_dataset

D = np.array([30, 50, 100, 200, 500, 1000], dtype=float)


@pytest.mark.parametrize("k,A", [(1.0, 2.0), (0.5, -0.3), (2.0, 40.0)])
def test_power_law_recovers_exponent(k, A):
    rng = np.random.default_rng(1)
    gap = A * D ** (-k)
    sem = 0.02 * np.abs(gap)
    noisy = gap + sem * rng.standard_normal(D.size)
    fit = fit_power_law(D, noisy, sem)
    assert fit.success
    assert abs(fit.slope - k) < 4 * fit.slope_err + 1e-9
    assert fit.slope_err < 0.05
    assert fit.amplitude == pytest.approx(A, rel=0.2)


@pytest.mark.parametrize("seed", range(8))
def test_power_law_flags_noise(seed):
    """Pure noise (sd 1e-3) has no exponent: the fit is flagged, or its exponent's error bar
    spans more than the unit range of the exponents it could tell apart, and the fitted gaps at
    the data are zero within the noise (3 sd)."""
    rng = np.random.default_rng(seed)
    fit = fit_power_law(D, 1e-3 * rng.standard_normal(D.size), np.full(D.size, 1e-3))
    if fit.success:
        assert fit.slope_err > 1.0
        assert np.max(np.abs(fit.amplitude * D ** (-fit.slope))) < 3e-3


def test_too_few_points():
    fit = fit_power_law([30.0, np.nan], [0.1, np.nan], [0.01, np.nan])
    assert not fit.success and np.isnan(fit.slope)


def test_extrapolation_recovers_limit():
    e_inf, c, k = 0.187, 3.0, 1.0
    mean = e_inf + c * D ** (-k)
    est, err, c_fit = extrapolate(D, mean, np.full(D.size, 1e-4), k)
    assert est == pytest.approx(e_inf, abs=1e-9) and c_fit == pytest.approx(c, rel=1e-6)
    assert err < 1e-3


def _agg(channel, d, alphas, means, sems):
    ds = xr.Dataset({"mean": ("alpha", means), "sem": ("alpha", sems),
                     "std": ("alpha", sems), "n_converged": ("alpha", np.full(len(alphas), 4)),
                     "mean_all": ("alpha", means)},
                    coords={"alpha": np.array(alphas)})
    ds.attrs.update(channel=channel, d=d, T=2, rho=0.2, beta=1.0)
    return ds


def _se(channel, alphas, errors):
    ds = xr.Dataset({"error": ("alpha", np.array(errors)),
                     "disagree": ("alpha", np.zeros(len(alphas), dtype=np.int8)),
                     "error_informed": ("alpha", np.array(errors))},
                    coords={"alpha": np.array(alphas)})
    ds.attrs.update(channel=channel, variant="exact", T=2, rho=0.2)
    return ds


def test_gap_dataset_and_figure(tmp_path):
    alphas = [0.04, 0.07]
    se = {0.04: 0.678, 0.07: 0.317}
    aggs = [_agg("softmax", int(d), alphas, [se[a] + 2.0 / d for a in alphas], [1e-4, 1e-4])
            for d in D]
    curves = [_se("softmax", [0.02, 0.04, 0.07, 0.1], [0.9, 0.678, 0.317, 0.0])]
    ds = gap_dataset(curves, aggs, {"softmax": alphas})
    assert list(ds["alpha"].values) == alphas
    np.testing.assert_allclose(ds["gap"].values, 2.0 / D[None, :].repeat(2, 0), rtol=1e-9)
    np.testing.assert_allclose(ds["slope"].values, 1.0, atol=1e-3)
    np.testing.assert_allclose(ds["e_inf"].values, [0.678, 0.317], atol=1e-4)
    fig = figures.fig3({"se": curves, "amp": aggs, "finite_size": [ds]})
    figures.save(fig, [tmp_path / "fig3.png"])
    assert (tmp_path / "fig3.png").stat().st_size > 10_000


def test_one_seed_points_get_the_measured_spread_scaled_as_one_over_d():
    """A point with a single converged seed has no spread of its own: its standard error is the
    std at the largest d with two or more seeds times d_ref / d, and it is flagged; without
    that, its zero standard error would outweigh every other point in the fit."""
    import xarray as xr

    alphas = [0.06]
    aggs = []
    for d, n, std in ((50, 8, 0.04), (100, 4, 0.02), (500, 1, 0.0), (1000, 1, 0.0)):
        g = _agg("softmax", d, alphas, [0.44 + 2.0 / d], [std / np.sqrt(n) if n > 1 else 0.0])
        g["std"] = ("alpha", [std])
        g["n_converged"] = ("alpha", [n])
        aggs.append(g)
    curves = [_se("softmax", [0.02, 0.06, 0.1], [0.9, 0.44, 0.0])]
    ds = gap_dataset(curves, aggs, {"softmax": alphas})
    sem = ds["sem"].values[0]
    np.testing.assert_allclose(sem, [0.04 / np.sqrt(8), 0.02 / 2, 0.02 * 100 / 500,
                                     0.02 * 100 / 1000])
    assert ds["sem_estimated"].values[0].tolist() == [0, 0, 1, 1]
    np.testing.assert_allclose(ds["slope"].values, 1.0, atol=1e-3)  # exact data: exact fit
    assert isinstance(ds, xr.Dataset)
