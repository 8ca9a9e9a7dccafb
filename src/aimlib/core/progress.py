"""Progress bars for the library's long calls (:func:`aimlib.algorithms.amp.run`,
:func:`aimlib.algorithms.gd.run`).

Both take ``progress``: ``None``/``False`` (silent, the default), ``True`` (a tqdm bar on
stderr, with the rate and the time remaining) or a callable that receives every update (what
the workflow's jobs use to write their logs).
"""

from __future__ import annotations

from collections.abc import Callable


def open_bar(progress: bool | Callable | None, total: int, desc: str, unit: str):
    """A tqdm bar of ``total`` steps if ``progress is True``, else ``None``.

    Raises
    ------
    TypeError
        If ``progress`` is neither a bool, ``None`` nor callable.
    """
    if progress is None or progress is False:
        return None
    if progress is True:
        from tqdm.auto import tqdm  # tqdm only when a bar is drawn

        return tqdm(total=int(total), desc=desc, unit=unit, dynamic_ncols=True)
    if callable(progress):
        return None
    raise TypeError(f"progress must be None, a bool or a callable, got {progress!r}")


def close_bar(bar, reason: str | None = None) -> None:
    """Close a bar at the step the run ended on, not at its budget: the total becomes the
    steps done (a run that converged after 37 of 500 iterations reads ``37/37``) and the
    postfix says why it stopped."""
    if bar is None:
        return
    if reason is not None:
        bar.total = bar.n
        bar.set_postfix_str(f"stopped: {reason}", refresh=False)
        bar.refresh()
    bar.close()
