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

The short public API: ``from aimlib import amp, gd, model, prior, state_evolution`` (``amp``,
``gd`` and ``state_evolution`` are attributes naming ``aimlib.algorithms.amp``,
``aimlib.algorithms.gd`` and ``aimlib.theory.state_evolution``, imported when first used);
everything else by its own path.

The theory the code computes is ``docs/theory.md``.
"""

import importlib

__version__ = "0.1.0"

#: The public names that live in a subpackage: ``aimlib.<name>`` is that module, imported on
#: first use (PEP 562), so that ``import aimlib`` stays light.
PUBLIC = {"amp": "algorithms.amp", "gd": "algorithms.gd",
          "state_evolution": "theory.state_evolution"}

__all__ = ["amp", "gd", "model", "prior", "state_evolution", "PUBLIC", "__version__"]


def __getattr__(name: str):
    if name in PUBLIC:
        module = importlib.import_module(f"{__name__}.{PUBLIC[name]}")
        globals()[name] = module
        return module
    if name in ("model", "prior"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
