"""netCDF caches: atomic writes, provenance attributes, teacher-data files, code versions."""

from __future__ import annotations

import ast
import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from aimlib import PUBLIC, __version__
from aimlib.core.files import atomic_write, atomic_write_text

if TYPE_CHECKING:
    import xarray as xr


# xarray and the model are imported where they are used: the workflow imports this module (for
# code_version) in every job's start-up, which should not pay for netCDF and numba.

__all__ = ["CacheError", "read_cache", "code_version", "write_netcdf", "read_netcdf",
           "atomic_write", "atomic_write_text"]

_PKG = Path(__file__).resolve().parent.parent


def real_name(name: str) -> str:
    """A module's own dotted name below aimlib: a public short name (``"amp"``) is resolved to
    the module it names (``"algorithms.amp"``, :data:`aimlib.PUBLIC`)."""
    top, _, rest = name.partition(".")
    if top in PUBLIC and not rest:
        return PUBLIC[top]
    return name


def _file(name: str) -> Path:
    """Source file of module ``name`` (dotted, relative to aimlib: ``"algorithms.amp"``,
    ``"channels.softmax"``, or a public short name; a package is its ``__init__.py``)."""
    base = _PKG.joinpath(*real_name(name).split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _exists(name: str) -> bool:
    return _file(name).is_file()


def _imports(name: str) -> set[str]:
    """The aimlib modules that module ``name`` imports (relative imports of any level,
    ``import aimlib.x``, ``from aimlib import x``), read from its source with :mod:`ast`
    (imports inside functions too), by their own names (:func:`real_name`)."""
    name = real_name(name)
    path = _file(name)
    tree = ast.parse(path.read_text())
    # the package a relative import of level 1 starts from
    pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[: len(pkg) - (node.level - 1)]
            elif (node.module or "").split(".")[0] == "aimlib":
                base, node_module = [], ".".join((node.module or "").split(".")[1:])
                mod = node_module.split(".") if node_module else []
                out.update(_candidates(base + mod, node.names))
                continue
            else:
                continue
            mod = node.module.split(".") if node.module else []
            out.update(_candidates(base + mod, node.names))
        elif isinstance(node, ast.Import):
            out.update(".".join(a.name.split(".")[1:]) for a in node.names
                       if a.name.startswith("aimlib."))
    return {real_name(m) for m in out if m and _exists(m)}


def _candidates(parts: list[str], names) -> set[str]:
    """``from <parts> import <names>``: the names that are submodules, and the module itself
    when some name is not one (a package whose submodules alone are imported is not counted:
    its ``__init__`` re-exports do not make a dependency)."""
    subs = {".".join([*parts, a.name]) for a in names}
    found = {m for m in subs if _exists(m)}
    out = set(found)
    if parts and len(found) < len(subs):
        out.add(".".join(parts))
    return out


def script_modules(path: str | os.PathLike) -> list[str]:
    """The aimlib modules a workflow script imports, except the job plumbing (``jobs``: logging
    and progress; ``resources``: the token budget), which cannot change a result."""
    tree = ast.parse(Path(path).read_text())
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "aimlib":
            used |= _candidates(node.module.split(".")[1:], node.names)
    return sorted({real_name(m) for m in used if m and _exists(m)} - set(PLUMBING))


#: Modules that cannot change a result (job logging and progress; the resource models: a
#: request, not a computation); code versions neither hash them nor follow their imports.
PLUMBING = ("pipeline.jobs", "algorithms.resources")


def module_closure(*modules: str, skip: tuple[str, ...] = ()) -> list[str]:
    """The named modules and every aimlib module they import, transitively, sorted; the
    ``skip`` modules are neither included nor followed."""
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if not _exists(name):
            raise ValueError(f"aimlib has no module {name!r}")
        name = real_name(name)
        if name in skip:
            continue
        seen.add(name)
        todo.extend(_imports(name) - seen)
    return sorted(seen)


def code_version(*modules: str, script: str | os.PathLike | None = None,
                 exclude: tuple[str, ...] = ()) -> str:
    """Version string of the package plus a hash of the named modules' source files and of every
    aimlib module they import (transitively, :func:`module_closure`).

    ``code_version("amp")`` changes when ``amp.py`` or anything it imports changes, so a Snakemake
    rule that passes it as a ``params:`` entry re-runs exactly when the code its results depend on
    changes.  ``script=`` adds the modules a workflow script imports (:func:`script_modules`), so
    a rule's list is derived from its script; ``exclude`` drops some of the script's imports
    (the algorithm registry, for a rule that runs one algorithm: it passes that algorithm's entry
    module instead).  With no names, every module of the package is hashed.
    """
    from_script = script_modules(script) if script is not None else []
    names = list(modules) + [m for m in from_script if m not in {real_name(e) for e in exclude}]
    names = module_closure(*names, skip=PLUMBING) if names else sorted(
        ".".join(p.relative_to(_PKG).with_suffix("").parts).removesuffix(".__init__")
        for p in _PKG.rglob("*.py"))
    h = hashlib.sha256()
    for name in names:
        h.update(name.encode())
        h.update(_file(name).read_bytes())
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


def read_netcdf(path: str | os.PathLike) -> xr.Dataset:
    """Read a cache file fully into memory (the file is closed on return)."""
    import xarray as xr  # xarray only when a dataset is built (the workflow parses without it)

    with xr.open_dataset(path, engine="netcdf4") as ds:
        return ds.load()


class CacheError(RuntimeError):
    """A cache file that cannot be used; the message names it and says what to do."""


#: Suffix a corrupt cache is renamed with, so that the workflow remakes it on the next run.
CORRUPT_SUFFIX = ".corrupt"


#: The first bytes of a netCDF file: classic (CDF 1, 2, 5) or netCDF-4 (HDF5).
NETCDF_MAGIC = (b"CDF\x01", b"CDF\x02", b"CDF\x05", b"\x89HDF\r\n\x1a\n")


def _io_error(path: Path, e: OSError) -> CacheError:
    """A system I/O error reading a cache: the file is left where it is."""
    return CacheError(f"could not read cache {path}: {type(e).__name__}: {e}; the file is left "
                      "in place (an I/O problem, not a corrupt file as far as aimlib can tell): "
                      "fix the cause and run again")


def read_cache(path: str | os.PathLike, *, quarantine: bool = True) -> xr.Dataset:
    """Read a workflow cache, checking that it opens and carries its provenance.

    Only corruption quarantines a file: one that does not start like a netCDF file, that the
    netCDF library cannot parse, that lacks the ``config`` and ``code_version`` attributes every
    workflow cache is written with.  It raises :class:`CacheError` with one line naming it; with
    ``quarantine`` (the default) it is first renamed to ``<path>.corrupt``; the workflow's next
    run remakes it and everything made from it (:func:`aimlib.pipeline.integrity.repair`: a
    missing intermediate file alone is not remade by Snakemake while the figures that use it
    are present).

    A system error (an ``OSError`` with a positive ``errno``: EIO, ENOSPC, EACCES, a network
    file system's hiccup; netCDF's own parse errors carry negative codes) is no verdict on the
    file: it raises :class:`CacheError` with the system's message and leaves the file in place.
    """
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError as e:
        raise _io_error(path, e) from None
    problem = None
    ds = None
    if not any(head.startswith(m) for m in NETCDF_MAGIC):
        problem = f"it is not a netCDF file (starts with {head[:4]!r})"
    else:
        try:
            ds = read_netcdf(path)
        except OSError as e:
            if e.errno is not None and e.errno > 0:
                raise _io_error(path, e) from None
            problem = f"it does not open ({type(e).__name__}: {str(e).splitlines()[0]})"
        except (KeyError, ValueError, RuntimeError, IndexError, TypeError) as e:
            problem = f"it does not open ({type(e).__name__}: {str(e).splitlines()[0]})"
        if ds is not None and not {"config", "code_version"} <= set(ds.attrs):
            problem = "it lacks the provenance attributes (config, code_version)"
    if problem is None:
        return ds
    if quarantine and path.exists():
        moved = path.with_name(path.name + CORRUPT_SUFFIX)
        os.replace(path, moved)
        raise CacheError(f"corrupt cache {path}: {problem}; moved aside to {moved.name}; the "
                         "same command again remakes it and what uses it")
    raise CacheError(f"corrupt cache {path}: {problem}; delete it and run the workflow again "
                     "(it remakes the file and what uses it)")
