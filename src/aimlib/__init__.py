"""aimlib: Bayes-optimal learning of attention-indexed models.

The package is layered; a module imports only from its own layer or the ones above it in this
list (``tests/test_packaging.py`` checks it on the import graph):

1. foundations -- ``validation`` (parameter checks), ``options`` (algorithm defaults),
   ``kernels`` (shared numba loops), ``normal`` (normal and bivariate-normal functions in log
   space), ``progress`` (progress bars);
2. building blocks -- ``prior`` (the prior channel: spectral density, MMSE, rotation-invariant
   denoiser) and ``channels`` (one module per output channel -- softmax, hardmax, gaussian --
   behind the registry ``channels.CHANNELS``);
3. theory -- ``model`` (teacher, tokens, indices, labels), ``state_evolution``, ``mismatched``
   (SE of AMP with a non-Bayes output function), ``asymptotics`` (how the error vanishes),
   ``generalisation`` (test error);
4. algorithms -- ``amp``, ``gd``;
5. workflow support -- ``config`` (validation and the job plan), ``resources``, ``io`` (netCDF
   caches, code versions), ``jobs``, ``aggregate``, ``finite_size``, ``captions`` (the figure
   registry);
6. front ends -- ``figures``, ``cli``.

The theory the code computes is ``docs/theory.md``.
"""

__version__ = "0.1.0"
