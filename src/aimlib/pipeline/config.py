"""The workflow's configuration, in one namespace: grids (:mod:`aimlib.pipeline.grids`),
checks and the schema (:mod:`aimlib.pipeline.checks`), and the job plan
(:mod:`aimlib.pipeline.plan`).

The Snakefile validates ``config/*.yaml`` against ``config/schema.yaml`` completed from the channel
registry (:func:`schema`: channel names, their parameters, per-channel grids) and then calls
:func:`check` for what a JSON schema cannot say (hardmax needs ``T = 2``, a grid must be positive,
...).  :func:`plan` then builds, once, every job's parameters keyed by its file-name wildcards,
so that a rule looks its job up instead of re-enumerating the sweep; the same objects serve the
workflow, the resource estimate and the tests.

Grids are written ``{geomspace: [start, stop, num]}``, ``{linspace: [start, stop, num]}`` or
``{values: [...]}``.  Every float that appears in a file name is rounded once by :func:`fnum`
(six significant digits), and the rounded value is the one computed with.
"""

from aimlib.pipeline.checks import check, check_schema, fill_defaults, schema, validate
from aimlib.pipeline.grids import (
    ConfigError,
    alphas_for,
    as_list,
    channel_grid,
    channel_param_values,
    channels,
    cpar,
    ffmt,
    fnum,
    grid,
    variants,
)
from aimlib.pipeline.plan import (
    FINITE_SIZE_KINDS,
    Group,
    Plan,
    SEJob,
    TeacherKey,
    plan,
    se_alphas,
    stage_jobs,
    stage_points,
)

__all__ = ["fnum", "ffmt", "grid", "as_list", "channel_grid", "channel_param_values", "cpar",
           "ConfigError", "check", "check_schema", "validate", "fill_defaults", "schema", "Plan",
           "plan",
           "SEJob", "Group", "TeacherKey", "variants", "se_alphas", "channels", "stage_jobs",
           "stage_points", "FINITE_SIZE_KINDS", "alphas_for"]
