"""The attention-indexed model: normalisation, outputs, reproducibility, caches."""

import errno
import math
import os

import numpy as np
import pytest
import xarray as xr

from aimlib import model
from aimlib.model import CHUNK
from aimlib.pipeline import io


def test_teacher_normalisation():
    rng = np.random.default_rng(0)
    d, rho = 600, 0.5
    _, S = model.teacher(d, round(rho * d), rng)
    assert np.trace(S) / d == pytest.approx(math.sqrt(rho), rel=0.01)
    assert np.sum(S * S) / d == pytest.approx(1 + rho, rel=0.02)
    assert np.allclose(S, S.T)


def test_index_variances():
    """Under the prior, Var h_aa = 2 Q0 and Var h_ab = Q0."""
    data = model.generate("softmax", 6.0, 0.5, 3, 60, seed=0)
    h = np.concatenate([model.attention_indices(X, data.S) for _, _, X in data.chunks()])
    Q0 = np.sum(data.S**2) / data.d  # finite-d value of (1/d) Tr S^2
    diag = np.concatenate([h[:, a, a] for a in range(3)])
    off = np.concatenate([h[:, 0, 1], h[:, 0, 2], h[:, 1, 2]])
    assert np.var(diag) == pytest.approx(2 * Q0, rel=0.04)
    assert np.var(off) == pytest.approx(Q0, rel=0.04)
    assert np.mean(diag) == pytest.approx(0.0, abs=0.03)


def test_outputs():
    data = model.generate("softmax", 0.3, 0.5, 4, 30, seed=1, beta=2.0)
    y = data.outputs()
    assert y.shape == (data.n, 4, 4)
    np.testing.assert_allclose(y.sum(axis=-1), 1.0, rtol=1e-14)
    h = model.attention_indices(data.tokens(), data.S)
    np.testing.assert_allclose(y, model.softmax_output(h, 2.0), rtol=1e-13)
    hm = model.generate("hardmax", 0.3, 0.5, 2, 30, seed=1)
    hh = model.attention_indices(hm.tokens(), hm.S)
    assert np.array_equal(hm.labels, np.argmax(hh, axis=-1))
    assert hm.outputs().sum() == 2 * hm.n


def test_sizes_and_errors():
    r, n = model.sizes(0.5, 0.2, 50)
    assert (r, n) == (10, 1250)
    data = model.generate("hardmax", 0.5, 0.5, 2, 80, seed=2)
    assert data.estimation_error(math.sqrt(0.5) * np.eye(80)) == pytest.approx(1.0, abs=0.1)
    _, S2 = model.teacher(80, 40, np.random.default_rng(9))
    assert data.estimation_error(S2) == pytest.approx(2.0, abs=0.2)
    assert data.estimation_error(data.S) == 0.0
    rng = np.random.default_rng(0)
    assert data.test_error(data.S, 100, rng) == 0.0


def test_tokens_regenerate_bit_for_bit():
    data = model.generate("softmax", 4.0, 0.5, 2, 50, seed=3)
    assert data.n > 2 * CHUNK
    full = data.tokens()
    for a, b in [(0, 10), (CHUNK - 5, CHUNK + 7), (2 * CHUNK + 1, data.n)]:
        assert np.array_equal(data.tokens(a, b), full[a:b])
    parts = np.concatenate([X for _, _, X in data.chunks(size=1000)])
    assert np.array_equal(parts, full)


def test_reproducible_and_independent():
    a = model.generate("softmax", 0.2, 0.5, 2, 40, seed=5, base_seed=1)
    b = model.generate("softmax", 0.2, 0.5, 2, 40, seed=5, base_seed=1)
    c = model.generate("softmax", 0.2, 0.5, 2, 40, seed=6, base_seed=1)
    d = model.generate("softmax", 0.2, 0.5, 2, 40, seed=5, base_seed=2)
    e = model.generate("softmax", 0.25, 0.5, 2, 40, seed=5, base_seed=1)
    assert np.array_equal(a.W, b.W) and np.array_equal(a.labels, b.labels)
    for other in (c, d, e):
        assert not np.array_equal(a.W, other.W)


def _teacher_dataset(data):
    return xr.Dataset({"W": (("i", "k"), data.W),
                       "labels": (tuple(f"l{k}" for k in range(data.labels.ndim)), data.labels)})


def test_netcdf_roundtrip_and_provenance(tmp_path):
    data = model.generate("hardmax", 0.4, 0.5, 2, 40, seed=0)
    path = tmp_path / "t.nc"
    io.write_netcdf(_teacher_dataset(data), path, config={"seed": 1},
                    version=io.code_version("model"))
    ds = io.read_netcdf(path)
    assert np.array_equal(ds["W"].values, data.W)
    assert np.array_equal(ds["labels"].values, data.labels)
    assert ds.attrs["config"] == '{"seed": 1}'
    assert ds.attrs["code_version"].startswith("0.1.0+")


@pytest.mark.parametrize("channel,kw", [("softmax", {}), ("gaussian", {"delta": 0.3})])
def test_netcdf_bitwise_reproducible(tmp_path, channel, kw):
    for name in ("a.nc", "b.nc"):
        data = model.generate(channel, 0.3, 0.5, 3, 40, seed=0, **kw)
        io.write_netcdf(_teacher_dataset(data), tmp_path / name, config={"x": 1})
    assert (tmp_path / "a.nc").read_bytes() == (tmp_path / "b.nc").read_bytes()


def test_failed_write_leaves_nothing(tmp_path):
    path = tmp_path / "bad.nc"
    ds = xr.Dataset({"x": ("i", np.array([object(), object()]))})
    with pytest.raises(Exception):  # noqa: B017  (any serialisation error)
        io.write_netcdf(ds, path)
    assert list(tmp_path.iterdir()) == []


def test_code_version_tracks_source():
    v1 = io.code_version("model")
    assert v1 == io.code_version("model")
    assert v1 != io.code_version("prior")
    with pytest.raises(ValueError, match="module"):
        io.code_version("nonexistent")


@pytest.mark.parametrize("kw,match", [
    (dict(alpha=0.0), "alpha"), (dict(alpha=-0.1), "alpha"), (dict(rho=0.0), "rho"),
    (dict(T=1), "T"), (dict(channel="hardmax", T=5), "T"), (dict(seed=-1), "seed"),
    (dict(d=1), "d"),
])
def test_generate_rejects_bad_input(kw, match):
    args = dict(channel="softmax", alpha=0.1, rho=0.5, T=2, d=20, seed=0)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        model.generate(**args)


def test_corrupt_cache_is_named_and_moved_aside(tmp_path):
    """A truncated cache raises one CacheError naming the file and is renamed, so that the
    workflow remakes it; a cache without provenance is refused the same way."""
    import xarray as xr

    from aimlib.pipeline.io import CORRUPT_SUFFIX, CacheError, read_cache, write_netcdf

    good = tmp_path / "good.nc"
    write_netcdf(xr.Dataset({"x": ("a", np.arange(3.0))}), good, config={"k": 1}, version="v")
    assert float(read_cache(good)["x"].sum()) == 3.0
    bad = tmp_path / "bad.nc"
    bad.write_bytes(good.read_bytes()[:100])
    with pytest.raises(CacheError, match=r"corrupt cache .*bad\.nc: it does not open") as e:
        read_cache(bad)
    assert "\n" not in str(e.value)
    assert not bad.exists() and (tmp_path / ("bad.nc" + CORRUPT_SUFFIX)).exists()
    bare = tmp_path / "bare.nc"
    xr.Dataset({"x": ("a", np.arange(3.0))}).to_netcdf(bare)
    with pytest.raises(CacheError, match="provenance"):
        read_cache(bare, quarantine=False)
    assert bare.exists()


@pytest.mark.parametrize("code", [errno.EIO, errno.ENOSPC, errno.EACCES])
def test_io_error_fails_without_quarantine(tmp_path, monkeypatch, code):
    """A system I/O error while reading a good cache is not corruption: CacheError with the
    system's message, and the file stays where it is; garbage is still quarantined."""
    import xarray as xr

    from aimlib.pipeline import io
    from aimlib.pipeline.io import CORRUPT_SUFFIX, CacheError, read_cache, write_netcdf

    good = tmp_path / "good.nc"
    write_netcdf(xr.Dataset({"x": ("a", np.arange(3.0))}), good, config={"k": 1}, version="v")

    def fail(path):
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(io, "read_netcdf", fail)
    with pytest.raises(CacheError, match=rf"could not read cache .*good\.nc: \w*Error: "
                                         rf"\[Errno {code}\] {os.strerror(code)}") as e:
        read_cache(good)
    assert "\n" not in str(e.value)
    assert good.exists() and not (tmp_path / ("good.nc" + CORRUPT_SUFFIX)).exists()
    monkeypatch.undo()
    assert float(read_cache(good)["x"].sum()) == 3.0
    junk = tmp_path / "junk.nc"
    junk.write_bytes(b"not a netCDF file at all")
    with pytest.raises(CacheError, match="it is not a netCDF file"):
        read_cache(junk)
    assert (tmp_path / ("junk.nc" + CORRUPT_SUFFIX)).exists()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_token_kernels_match_einsum(dtype):
    """The numba kernels behind attention_indices and AMP's G_mu X_mu against numpy's einsum."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((37, 3, 11)).astype(dtype)
    S = rng.standard_normal((11, 11))
    S = (S + S.T).astype(dtype)
    G = rng.standard_normal((37, 3, 3)).astype(dtype)
    XS = np.einsum("mad,de->mae", X, S)
    ref = (np.einsum("mad,mbd->mab", XS, X) - np.eye(3) * np.trace(S)) / np.sqrt(11)
    rtol = 1e-12 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(model.attention_indices(X, S), ref, rtol=rtol, atol=rtol)
    out = np.empty_like(X)
    model.mix_tokens(G, X, out)
    np.testing.assert_allclose(out, np.einsum("mab,mbd->mad", G, X), rtol=rtol, atol=rtol)
