"""Glue for workflow jobs: logging into the job's log file and the provenance of its outputs."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

__all__ = ["job_log", "resolved_config"]


@contextlib.contextmanager
def job_log(path: str | None, name: str = "aimlib") -> Iterator[logging.Logger]:
    """Send stdout, stderr and a logger to the job's log file; log a failure's traceback.

    Parameters
    ----------
    path : str or None
        The log file (``snakemake.log[0]``); ``None`` logs to stderr.
    name : str
        Logger name.
    """
    log = logging.getLogger(name)
    log.setLevel(logging.INFO)
    if path is None:
        handler = logging.StreamHandler(sys.stderr)
        log.addHandler(handler)
        try:
            yield log
        finally:
            log.removeHandler(handler)
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", buffering=1) as fh:
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        log.addHandler(handler)
        old_out, old_err = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = fh
        t0 = time.perf_counter()
        try:
            yield log
            log.info("done in %.2f s", time.perf_counter() - t0)
        except BaseException:
            fh.write(traceback.format_exc())
            raise
        finally:
            sys.stdout, sys.stderr = old_out, old_err
            log.removeHandler(handler)


def resolved_config(config) -> dict:
    """The workflow config as a plain JSON-able dict (stored as an attribute of every cache)."""
    return json.loads(json.dumps(dict(config)))
