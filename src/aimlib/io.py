"""netCDF caches: atomic writes, provenance attributes, teacher-data files, code versions."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import __version__

if TYPE_CHECKING:
    import xarray as xr

    from .model import TeacherData

# xarray and the model are imported where they are used: the workflow imports this module (for
# code_version) in every job's start-up, which should not pay for netCDF and numba.

__all__ = ["CacheError", "read_cache", "code_version", "write_netcdf", "read_netcdf",
           "atomic_write", "atomic_write_text", "teacher_to_dataset", "teacher_from_dataset",
           "save_teacher", "load_teacher"]

_PKG = Path(__file__).resolve().parent


def _imports(name: str) -> set[str]:
    """The aimlib modules that module ``name`` imports (``from .x import``, ``from . import x``,
    ``import aimlib.x``), read from its source with :mod:`ast` (imports inside functions too)."""
    import ast

    tree = ast.parse((_PKG / f"{name}.py").read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                out.add(node.module.split(".")[0])
            elif node.level == 1:
                out.update(a.name for a in node.names)
            elif node.module and node.module.startswith("aimlib"):
                parts = node.module.split(".")
                if len(parts) > 1:
                    out.add(parts[1])
                else:
                    out.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[1] for a in node.names
                       if a.name.startswith("aimlib."))
    return {m for m in out if (_PKG / f"{m}.py").is_file()}


def module_closure(*modules: str) -> list[str]:
    """The named modules and every aimlib module they import, transitively, sorted."""
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if not (_PKG / f"{name}.py").is_file():
            raise ValueError(f"aimlib has no module {name!r}")
        seen.add(name)
        todo.extend(_imports(name) - seen)
    return sorted(seen)


def code_version(*modules: str) -> str:
    """Version string of the package plus a hash of the named modules' source files and of every
    aimlib module they import (transitively, :func:`module_closure`).

    ``code_version("amp")`` changes when ``amp.py`` or anything it imports changes, so a Snakemake
    rule that passes it as a ``params:`` entry re-runs exactly when the code its results depend on
    changes; a workflow script names the modules it imports itself.  With no names, every module
    of the package is hashed.
    """
    names = module_closure(*modules) if modules else sorted(p.stem for p in _PKG.glob("*.py"))
    h = hashlib.sha256()
    for name in names:
        h.update(name.encode())
        h.update((_PKG / f"{name}.py").read_bytes())
    return f"{__version__}+{h.hexdigest()[:12]}"


def _encoding(ds: xr.Dataset, compress_above: int = 4096) -> dict:
    enc = {}
    for name, var in ds.variables.items():
        if var.dtype.kind in "fiu" and var.size > compress_above:
            enc[name] = {"zlib": True, "complevel": 4, "shuffle": True}
    return enc


def write_netcdf(ds: xr.Dataset, path: str | os.PathLike, *, config: dict | None = None,
                 version: str | None = None) -> None:
    """Write ``ds`` to ``path`` atomically (temporary file in the same folder, then ``os.replace``).

    ``config`` (the resolved configuration) is stored as a JSON attribute and ``version`` as
    ``code_version``; large numeric arrays are compressed.  An interrupted or failed write leaves no
    file at ``path``.
    """
    ds = ds.copy()
    if config is not None:
        ds.attrs["config"] = json.dumps(config, sort_keys=True)
    if version is not None:
        ds.attrs["code_version"] = version
    atomic_write(path, lambda tmp: ds.to_netcdf(tmp, engine="netcdf4", format="NETCDF4",
                                                encoding=_encoding(ds)), suffix=".tmp")


def atomic_write(path: str | os.PathLike, write, *, suffix: str | None = None) -> None:
    """Call ``write(tmp)`` on a temporary file next to ``path``, then ``os.replace`` it there.

    The file gets the permissions of a normally created one; if ``write`` fails or is
    interrupted, the temporary file is removed and ``path`` is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix if suffix is None
                               else suffix, dir=path.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (:func:`atomic_write`)."""
    atomic_write(path, lambda tmp: Path(tmp).write_text(text))


def read_netcdf(path: str | os.PathLike) -> xr.Dataset:
    """Read a cache file fully into memory (the file is closed on return)."""
    import xarray as xr

    with xr.open_dataset(path, engine="netcdf4") as ds:
        return ds.load()


class CacheError(RuntimeError):
    """A cache file that cannot be used; the message names it and says what to do."""


#: Suffix a corrupt cache is renamed with, so that the workflow remakes it on the next run.
CORRUPT_SUFFIX = ".corrupt"


def read_cache(path: str | os.PathLike, *, quarantine: bool = True) -> xr.Dataset:
    """Read a workflow cache, checking that it opens and carries its provenance.

    A file that does not open (truncated, not netCDF) or lacks the ``config`` and
    ``code_version`` attributes every workflow cache is written with raises :class:`CacheError`
    with one line naming it; with ``quarantine`` (the default) it is first renamed to
    ``<path>.corrupt`` and the message says how to remake it and everything downstream
    (Snakemake's ``--forcerun <path>``: a missing intermediate file alone is not remade while the
    figures that use it are present).
    """
    path = Path(path)
    try:
        ds = read_netcdf(path)
        problem = None if {"config", "code_version"} <= set(ds.attrs) else \
            "it lacks the provenance attributes (config, code_version)"
    except Exception as e:  # netCDF4/HDF5 raise OSError, KeyError, ValueError, RuntimeError
        ds, problem = None, f"it does not open ({type(e).__name__}: {str(e).splitlines()[0]})"
    if problem is None:
        return ds
    if quarantine and path.exists():
        moved = path.with_name(path.name + CORRUPT_SUFFIX)
        os.replace(path, moved)
        raise CacheError(f"corrupt cache {path}: {problem}; moved aside to {moved.name}; remake "
                         f"it and what uses it: add `--forcerun {path}` to your command (before "
                         "--configfile)")
    raise CacheError(f"corrupt cache {path}: {problem}; remake it and what uses it with "
                     f"`--forcerun {path}`")


def teacher_to_dataset(data: TeacherData) -> xr.Dataset:
    """Teacher data as a Dataset: ``W``, ``labels`` and the token seed (tokens are regenerated)."""
    import xarray as xr

    label_dims = ("sample", "a") if data.channel == "hardmax" else ("sample", "a", "b")
    ds = xr.Dataset(
        {
            "W": (("i", "k"), data.W),
            "labels": (label_dims, data.labels),
        }
    )
    ds.attrs.update(channel=data.channel, T=data.T, beta=data.beta, rho=data.rho,
                    alpha=data.alpha, d=data.d, seed=data.seed, n=data.n, r=data.r,
                    token_entropy=json.dumps([str(e) for e in data.token_entropy]))
    ds["labels"].attrs["description"] = (
        "hardmax: argmax index of each row" if data.channel == "hardmax"
        else "softmax outputs y_ab")
    return ds


def teacher_from_dataset(ds: xr.Dataset) -> TeacherData:
    """Inverse of :func:`teacher_to_dataset`."""
    from .model import TeacherData

    a = ds.attrs
    return TeacherData(
        channel=str(a["channel"]), T=int(a["T"]), beta=float(a["beta"]), rho=float(a["rho"]),
        alpha=float(a["alpha"]), d=int(a["d"]), seed=int(a["seed"]),
        W=np.asarray(ds["W"].values, dtype=np.float64),
        labels=np.asarray(ds["labels"].values),
        token_entropy=tuple(int(e) for e in json.loads(a["token_entropy"])),
    )


def save_teacher(data: TeacherData, path, **kw) -> None:
    """Write teacher data to netCDF (see :func:`write_netcdf` for the keywords)."""
    write_netcdf(teacher_to_dataset(data), path, **kw)


def load_teacher(path) -> TeacherData:
    """Read teacher data written by :func:`save_teacher`."""
    return teacher_from_dataset(read_netcdf(path))
