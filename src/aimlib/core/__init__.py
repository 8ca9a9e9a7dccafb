"""Foundations: parameter checks (``validation``), algorithm options and defaults (``options``),
the shared numba loops (``kernels``), normal and bivariate-normal functions in log space
(``normal``) and progress bars (``progress``).  Nothing here imports the rest of aimlib."""
