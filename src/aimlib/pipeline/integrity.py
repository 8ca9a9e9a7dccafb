"""The caches a run will read, checked before Snakemake builds its DAG: no silent holes.

Snakemake does not remake a missing file while the files made from it are present (a missing
intermediate file is taken as deleted on purpose).  So a cache that was found corrupt and moved
aside (:func:`aimlib.pipeline.io.read_cache`), or deleted by hand, would stay missing, and the
aggregates and figures made from it would go on showing the old result.  :func:`repair`, called
by the Snakefile before the DAG is built, closes that hole:

1. every cache of the configuration that exists is checked (:func:`cache_problem`: the netCDF
   signature and, for netCDF-4/HDF5, that the file is as long as its superblock says, which
   catches a truncated file without opening it); a corrupt one is moved aside to
   ``<name>.corrupt``;
2. every file that was made from a cache that is now missing (an aggregate from its data
   files, a fit from its aggregates, a figure from its inputs: the inputs Snakemake recorded
   for it in ``.snakemake/metadata``), transitively, is removed, so that the run remakes the
   missing cache and everything downstream.  These are the cheap jobs; a data job or an SE
   curve reads no cache and is never removed here.  A file made under another configuration
   (an aggregate over other alphas) is left alone: its recorded inputs are all present.  Where
   Snakemake recorded nothing, a file is removed only if one of its inputs was moved aside as
   corrupt.

The same command then repairs the workflow: one line per corrupt cache, no traceback.
"""

from __future__ import annotations

import base64
import json
import os
import struct
from pathlib import Path

from aimlib.pipeline.io import CORRUPT_SUFFIX, NETCDF_MAGIC

__all__ = ["cache_problem", "repair", "Repair"]

_HDF5 = b"\x89HDF\r\n\x1a\n"


def cache_problem(path: str | os.PathLike) -> str | None:
    """Why a netCDF cache is corrupt, or ``None`` if it looks whole.

    Checks the signature and, for a netCDF-4 (HDF5) file, that its size reaches the end-of-file
    address of its superblock (versions 0-3), as a truncated file does not.  It reads at most
    the first 128 bytes, so a workflow can check every cache it will read at each start.
    A read error other than a missing file is reported as such, not as corruption.
    """
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(128)
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"unreadable ({type(e).__name__}: {e})"
    if not any(head.startswith(m) for m in NETCDF_MAGIC):
        return f"it is not a netCDF file (starts with {head[:4]!r})"
    if not head.startswith(_HDF5):
        return None
    eof = _hdf5_eof(head)
    if eof is None:
        return "its HDF5 superblock is cut short or unknown"
    if size < eof:
        return f"truncated ({size} bytes of the {eof} its superblock records)"
    return None


def _recorded_inputs(root: Path, output: str) -> list[str] | None:
    """The inputs Snakemake recorded for ``output`` when it made it (its file-based metadata,
    ``.snakemake/metadata/<urlsafe base64 of the path>``), or ``None`` without a record."""
    b64 = base64.urlsafe_b64encode(output.encode()).decode()
    parts = [b64[i:i + 254] for i in range(0, len(b64), 254)]
    parts = ["@" + p for p in parts[:-1]] + [parts[-1]]
    path = root.joinpath(".snakemake", "metadata", *parts)
    try:
        return list(json.loads(path.read_text()).get("input") or [])
    except (OSError, ValueError):
        return None


def _hdf5_eof(head: bytes) -> int | None:
    """The end-of-file address of an HDF5 superblock at offset 0 (base address added)."""
    if len(head) < 9:
        return None
    version = head[8]
    if version in (0, 1):
        if len(head) < 16:
            return None
        off = head[13]  # size of offsets
        pos = 24 + (4 if version == 1 else 0)  # base address follows the fixed fields
    elif version in (2, 3):
        off = head[9]
        pos = 12
    else:
        return None
    fmt = {4: "<I", 8: "<Q"}.get(off)
    if fmt is None or len(head) < pos + 3 * off:
        return None
    base = struct.unpack_from(fmt, head, pos)[0]
    # v0/1: base, free-space info, end of file; v2/3: base, superblock extension, end of file
    eof = struct.unpack_from(fmt, head, pos + 2 * off)[0]
    return base + eof


class Repair(list):
    """The lines :func:`repair` prints (a list of str), with ``missing``: the outputs missing
    once it is done (or would be, in a dry run), which a run will make."""

    missing: set


def repair(jobs, root: str | os.PathLike = ".", *, dry_run: bool = False) -> Repair:
    """Move corrupt caches aside and remove what was made from missing ones.

    Parameters
    ----------
    jobs : list of :class:`aimlib.pipeline.cost.PlannedJob`
        Every job of the configuration (:func:`aimlib.pipeline.cost.planned_jobs`), with the
        files each reads.
    root : path
        The workflow's working directory.
    dry_run : bool
        Only say what would be done.

    Returns
    -------
    Repair
        One line per corrupt cache and one for the removed dependants (empty if all is well),
        and the set ``missing`` of the outputs a run will make.
    """
    root = Path(root)
    lines = Repair()
    missing = set()
    for j in jobs:
        p = root / j.output
        if not p.exists():
            missing.add(j.output)
            continue
        if not j.output.endswith(".nc"):
            continue
        problem = cache_problem(p)
        if problem is None or problem.startswith("unreadable"):
            continue
        moved = p.with_name(p.name + CORRUPT_SUFFIX)
        if not dry_run:
            os.replace(p, moved)
        lines.append(f"aimlib: corrupt cache {j.output}: {problem}; "
                     f"{'would be ' if dry_run else ''}moved aside to {moved.name} and remade")
        missing.add(j.output)
    # remove, transitively, every present output made from a file that is now missing
    corrupt = {j.output for j in jobs
               if (root / (j.output + CORRUPT_SUFFIX)).exists() and j.output in missing}
    recorded = {j.output: _recorded_inputs(root, j.output) for j in jobs if j.inputs}
    stale = []
    changed = True
    while changed:
        changed = False
        for j in jobs:
            if j.output in missing or not j.inputs or not (root / j.output).exists():
                continue
            made_from = recorded[j.output]
            if made_from is None:  # no record: only a quarantined input makes it stale
                hit = any(i in corrupt for i in j.inputs)
            else:
                hit = any(i in missing or not (root / i).exists() for i in made_from)
            if hit:
                missing.add(j.output)
                stale.append(j)
                changed = True
    if stale:
        if not dry_run:
            for j in stale:
                for out in (j.output, *j.extra_outputs):
                    (root / out).unlink(missing_ok=True)
        names = ", ".join(j.output for j in stale[:3]) + (" ..." if len(stale) > 3 else "")
        lines.append(f"aimlib: {len(stale)} result(s) made from missing caches "
                     f"{'would be ' if dry_run else ''}removed so that this run remakes them "
                     f"with their inputs: {names}")
    lines.missing = missing
    return lines
