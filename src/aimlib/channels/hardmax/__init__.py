"""The hardmax channel (row-wise argmax), in one package (docs/theory.md §3.4, §7, §14):

- :mod:`~aimlib.channels.hardmax.channel`: the registry's entry, :class:`Hardmax`;
- :mod:`~aimlib.channels.hardmax.pair`: ``T = 2``, the exact pair kernels (and the published
  density variant) and their SE second moment;
- :mod:`~aimlib.channels.hardmax.orthant`: Genz's integrator of the ``T``-token orthant
  probabilities, AMP's output function at ``T >= 3``;
- :mod:`~aimlib.channels.hardmax.se_moments` and :mod:`~aimlib.channels.hardmax.moment_table`:
  the SE second moment at ``T >= 3`` and its table
  (:mod:`~aimlib.channels.hardmax.hardmax_moments`);
- :mod:`~aimlib.channels.hardmax.prediction`: the test error on fresh samples.
"""

from aimlib.channels.hardmax.channel import Hardmax, hardmax_output, one_hot, uninformed_information
from aimlib.channels.hardmax.pair import (
    HARDMAX_STEP,
    HARDMAX_TMAX,
    PAIR_CORRELATION,
    comparison_second_moment,
    hardmax_second_moment,
    hardmax_slopes,
    hardmax_table,
)
from aimlib.channels.hardmax.prediction import comparison_geometry, comparison_matrix

__all__ = ["Hardmax", "hardmax_second_moment", "comparison_second_moment", "comparison_matrix",
           "comparison_geometry", "hardmax_output", "one_hot", "hardmax_table",
           "hardmax_slopes", "uninformed_information", "PAIR_CORRELATION", "HARDMAX_STEP",
           "HARDMAX_TMAX"]
