"""Shared helpers of the benchmarks: timing, peak memory, and the README table."""

from __future__ import annotations

import platform
import re
import resource
import statistics
import sys
import time
from pathlib import Path

README = Path(__file__).resolve().parent / "README.md"


def _no_arguments() -> None:
    """A benchmark without an argument parser of its own runs as typed, with no arguments:
    ``-h``/``--help`` prints its docstring and anything else is refused, before it measures
    anything or rewrites its table in README.md."""
    import __main__

    args = sys.argv[1:]
    if not args or "argparse" in vars(__main__):  # the script parses its own arguments
        return
    if args[0] in ("-h", "--help"):
        print((__main__.__doc__ or "").strip())
        raise SystemExit(0)
    raise SystemExit(f"{Path(sys.argv[0]).name}: takes no arguments (got {' '.join(args)}); "
                     "see --help")


_no_arguments()


def median_time(fn, repeat: int = 5, warmup: int = 1) -> tuple[float, list[float]]:
    """Median wall time of ``fn()`` over ``repeat`` runs after ``warmup`` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def machine() -> str:
    import numpy as np

    return (f"{platform.machine()}, {platform.python_version()}, numpy {np.__version__}, "
            f"{time.strftime('%Y-%m-%d')}")


def write_section(name: str, table: str) -> None:
    """Replace the README section between ``<!-- bench:name -->`` markers with ``table``."""
    text = README.read_text()
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n{table.rstrip()}\n{end}"
    if start in text:
        text = re.sub(re.escape(start) + r".*?" + re.escape(end), lambda _: block, text,
                      flags=re.S)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    README.write_text(text)
    print(table)
