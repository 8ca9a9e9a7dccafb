"""Workflow support: the configuration (``grids``, ``checks``, the job ``plan``, and ``config``
which gathers them), the cost estimate (``cost``), netCDF caches and code versions (``io``),
job glue (``jobs``), aggregation over seeds (``aggregate``) and the finite-size fits
(``finite_size``).  Snakemake's rules call these; so do the tests."""
