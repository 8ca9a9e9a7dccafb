"""aimlib: Bayes-optimal learning of attention-indexed models.

The package is layered along its import graph; a module imports only from its own layer or the
ones above it in this list (``tests/test_packaging.py`` checks it, lazy imports included, and
that the graph has no cycle):

1. ``aimlib.core`` -- foundations: ``validation`` (parameter checks), ``options`` (algorithm
   options and every default), ``kernels`` (shared numba loops), ``normal`` (normal and
   bivariate-normal functions in log space), ``progress`` (progress bars);
2. building blocks -- ``prior`` (the prior channel: spectral density, MMSE, rotation-invariant
   denoiser) and ``channels`` (one module per output channel -- softmax, hardmax, gaussian --
   behind the registry ``channels.CHANNELS``);
3. ``model`` (teacher, tokens, indices, labels) and ``aimlib.theory`` -- ``state_evolution``
   (with ``small_width``), ``mismatched`` (SE of AMP with a non-Bayes output function),
   ``asymptotics`` (how the error vanishes), ``generalisation`` (test error);
4. ``aimlib.algorithms`` -- the registry ``ALGORITHMS`` (one entry per algorithm: options, run,
   resources, aggregates, job, CLI) and the numerics ``amp``, ``gd``, ``spectral``, with the
   per-job resource models ``resources``;
5. ``aimlib.pipeline`` -- workflow support: ``config`` (``grids``, ``checks``, ``plan``),
   ``cost`` (the cost estimate), ``io`` (netCDF caches, code versions), ``jobs``, ``aggregate``,
   ``finite_size``; and ``aimlib.figures`` -- the figure ``registry`` and the drawing code;
6. front ends -- ``cli`` (and ``python -m aimlib``).

The modules that moved into the subpackages keep their old import paths as aliases of the same
module object (``from aimlib import amp`` is ``aimlib.algorithms.amp``; see :data:`MOVED`).

The theory the code computes is ``docs/theory.md``.
"""

import importlib
import importlib.abc
import importlib.util
import sys

__version__ = "0.1.0"

#: Old flat module names -> their home in the layered package.  ``import aimlib.<old>`` and
#: ``from aimlib import <old>`` give the module itself (one object, so monkeypatching either
#: name patches both).
MOVED = {
    "validation": "core.validation", "options": "core.options", "kernels": "core.kernels",
    "normal": "core.normal", "progress": "core.progress",
    "state_evolution": "theory.state_evolution", "mismatched": "theory.mismatched",
    "asymptotics": "theory.asymptotics", "generalisation": "theory.generalisation",
    "amp": "algorithms.amp", "gd": "algorithms.gd", "spectral": "algorithms.spectral",
    "resources": "algorithms.resources",
    "config": "pipeline.config", "cost": "pipeline.cost", "io": "pipeline.io",
    "jobs": "pipeline.jobs", "aggregate": "pipeline.aggregate",
    "finite_size": "pipeline.finite_size", "captions": "figures.registry",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolve ``aimlib.<old name>`` to the moved module (the same object)."""

    def find_spec(self, fullname, path=None, target=None):
        prefix, _, name = fullname.partition(".")
        if prefix == __name__ and name in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def __init__(self):
        self._own = {}

    def create_module(self, spec):
        module = importlib.import_module(f"{__name__}.{MOVED[spec.name.partition('.')[2]]}")
        self._own[module.__name__] = (module.__spec__, module.__loader__)
        return module

    def exec_module(self, module):
        # the import system wrote the alias's spec into the module: give it back its own
        module.__spec__, module.__loader__ = self._own[module.__name__]


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())
