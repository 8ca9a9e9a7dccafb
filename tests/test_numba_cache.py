"""numba's on-disk cache under a fan-out: after the workflow's warm-up (its `onstart` handler),
jobs that start together load every kernel from the cache and compile none."""

import os
import subprocess
import sys

CHILD = r"""
import sys
from numba.core.registry import CPUDispatcher
from aimlib import channels, prior
from aimlib.pipeline import jobs
from aimlib.core import kernels
from aimlib.core import normal
jobs.warm_numba_cache()
misses = sum(len(obj.stats.cache_misses) for mod in (channels, kernels, normal, prior)
             for obj in vars(mod).values() if isinstance(obj, CPUDispatcher))
hits = sum(len(obj.stats.cache_hits) for mod in (channels, kernels, normal, prior)
           for obj in vars(mod).values() if isinstance(obj, CPUDispatcher))
print(misses, hits)
"""


def test_warm_cache_then_fan_out(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    warm = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                          timeout=600)
    assert warm.returncode == 0, warm.stderr[-2000:]
    misses, _ = map(int, warm.stdout.split())
    assert misses > 0  # a cold cache: the warm-up compiled and wrote it
    procs = [subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-2000:]
        misses, hits = map(int, out.split())
        assert misses == 0 and hits > 0, (misses, hits)
