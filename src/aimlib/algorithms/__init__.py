"""The algorithm registry: name -> algorithm (:class:`~aimlib.algorithms.protocol.Algorithm`).

Each entry owns its options, its run, its resource model, its smallest d, what its aggregates
hold, its workflow job and its command-line subcommand; the schema's stage blocks and defaults,
the job plan, the workflow's rules, paths, wildcards and resource requests, the aggregates, the
cost estimate and the CLI derive from this dictionary.  Adding an algorithm: a module with its
class here and one line in :data:`ALGORITHMS` (README, "Adding an algorithm").
"""

from __future__ import annotations

from aimlib.algorithms.amp_entry import AMP
from aimlib.algorithms.gd_entry import GD
from aimlib.algorithms.protocol import OUTCOME_EXTRAS, Algorithm
from aimlib.algorithms.spectral_entry import Spectral

__all__ = ["ALGORITHMS", "Algorithm", "AMP", "GD", "Spectral", "algorithm", "aggregate_kinds",
           "algorithm_of_kind", "OUTCOME_EXTRAS"]

#: Every algorithm, in the order of the workflow's stages.
ALGORITHMS: dict[str, type[Algorithm]] = {"amp": AMP, "gd": GD, "spectral": Spectral}


def algorithm(name: str) -> type[Algorithm]:
    """The registered algorithm ``name``, or a ``ValueError`` listing the known ones."""
    try:
        return ALGORITHMS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown algorithm {name!r} (known: {', '.join(ALGORITHMS)})") \
            from None


def aggregate_kinds() -> dict[str, str]:
    """``{aggregate kind: algorithm name}`` over the registry (``amp``, ``gd``, ``agd``, ...)."""
    return {kind: name for name, alg in ALGORITHMS.items() for kind in alg.AGGREGATES}


def algorithm_of_kind(kind: str) -> type[Algorithm]:
    """The algorithm whose aggregate ``kind`` is."""
    kinds = aggregate_kinds()
    if kind not in kinds:
        raise ValueError(f"unknown aggregate kind {kind!r} (known: {', '.join(kinds)})")
    return ALGORITHMS[kinds[kind]]
