"""aimlib: Bayes-optimal learning of attention-indexed models.

Modules
-------
model
    Teacher, tokens, attention indices, softmax and hardmax outputs, errors.
prior
    The prior channel: spectral density, support, MMSE and rotation-invariant denoiser.
channels
    Output channels (softmax, hardmax): SE output update and output functions ``g_out``.
state_evolution
    Fixed points of state evolution, curves, thresholds and the small-width limit.
io
    netCDF caches with atomic writes and provenance.
figures
    The paper's figures from cached data.
"""

__version__ = "0.1.0"
