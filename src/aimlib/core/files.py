"""Files written whole or not at all: a write goes to a temporary file next to its target and
is renamed into place, so that an interrupted or failed write leaves the previous file (or
none) and no half-written one.  Used by the caches (:mod:`aimlib.pipeline.io`) and the figures
(:mod:`aimlib.figures`)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_text"]


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
